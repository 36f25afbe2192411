"""Custom checkov policies on a NAT gateway's SKU, for trellis's Terraform JSON (ARM's shape: `sku.name`).

TRELLIS_NAT_1 passes on a Standard NAT gateway and TRELLIS_NAT_2 fails on one: together they show that
checkov sees the SKU of a NAT gateway whatever the plan does to it — also on an update that changes
only the idle timeout, where a document holding only the changed attributes had no SKU to judge.
"""

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


def sku_name(conf):
    sku = conf.get("sku")
    if not isinstance(sku, list) or not sku or not isinstance(sku[0], dict):
        return None
    name = sku[0].get("name")
    return name[0] if isinstance(name, list) and name else name


class NatGatewaySku(BaseResourceCheck):
    def __init__(self, check_id, wanted):
        self.wanted = wanted
        super().__init__(
            name=f"NAT gateway SKU is {wanted}",
            id=check_id,
            categories=[CheckCategories.NETWORKING],
            supported_resources=["azurerm_nat_gateway"],
        )

    def scan_resource_conf(self, conf):
        return CheckResult.PASSED if sku_name(conf) == self.wanted else CheckResult.FAILED


NatGatewaySku("TRELLIS_NAT_1", "Standard")
NatGatewaySku("TRELLIS_NAT_2", "Basic")
