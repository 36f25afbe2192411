"""Azure's official Python SDKs (azure-mgmt-network, azure-mgmt-resource) against `trellis sim serve`.

Usage: python arm_sdk.py URL SUBSCRIPTION

Drives the simulated ARM cloud through the SDK clients exactly as a user's script would, and prints one
JSON object: what the SDK saw (its deserialized models, its paging, its long-running-operation
results, the codes of the HttpResponseErrors it raised). The Rust test (cli/tests/it/outside/arm_sdk.rs)
asserts on it. Nothing here decides whether the simulator is right.

Auth: the SDK's own ARMChallengeAuthenticationPolicy with a credential handing out a fixed token;
azure-core refuses a bearer token over plain http unless the call says `enforce_https=False`, which
every call below passes (the supported per-call option; the LRO pollers and pagers carry it on).
"""

import json
import sys

from azure.core.credentials import AccessToken, AccessTokenInfo
from azure.core.exceptions import HttpResponseError
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.network.models import (
    AddressSpace,
    NatGateway,
    NatGatewaySku,
    NetworkSecurityGroup,
    PublicIPAddress,
    PublicIPAddressSku,
    Route,
    RouteTable,
    SecurityRule,
    Subnet,
    TagsObject,
    VirtualNetwork,
)
from azure.mgmt.resource.resources import ResourceManagementClient
from azure.mgmt.resource.resources.models import GenericResource

URL, SUB = sys.argv[1], sys.argv[2]
PLAIN_HTTP = {"enforce_https": False}


class StaticToken:
    """A TokenCredential (both protocols azure-core knows) with one fixed token."""

    def get_token(self, *scopes, **kwargs):
        return AccessToken("sdk-test-token", 4102444800)

    def get_token_info(self, *scopes, options=None):
        return AccessTokenInfo("sdk-test-token", 4102444800)


cred = StaticToken()
resources = ResourceManagementClient(cred, SUB, base_url=URL, polling_interval=0)
network = NetworkManagementClient(cred, SUB, base_url=URL, polling_interval=0)
report = {}


def refused(call):
    """The ARM error code of the HttpResponseError `call` raises, or None if it succeeds."""
    try:
        call()
    except HttpResponseError as e:
        return {"status": e.status_code, "code": e.error.code if e.error else None, "message": e.error.message if e.error else None}
    return None


# Bodies are the SDK's models (a plain dict would be sent as raw REST JSON).
VNET = lambda prefix: VirtualNetwork(location="westeurope", address_space=AddressSpace(address_prefixes=[prefix]))

# Resource groups: create, check existence (HEAD 204 / 404).
rg = resources.resource_groups.create_or_update("sdk-rg", {"location": "westeurope"}, **PLAIN_HTTP)
resources.resource_groups.create_or_update("sdk-other", {"location": "westeurope"}, **PLAIN_HTTP)
report["rg_id"] = rg.id
report["exists"] = resources.resource_groups.check_existence("sdk-rg", **PLAIN_HTTP)
report["exists_other_case"] = resources.resource_groups.check_existence("SDK-RG", **PLAIN_HTTP)
report["exists_missing"] = resources.resource_groups.check_existence("no-such-group", **PLAIN_HTTP)

# A VNet written through a lowercase path (the generic client sends the id as given): ARM answers
# the canonical id whatever the request's casing.
lower_id = f"/subscriptions/{SUB}/resourcegroups/sdk-rg/providers/microsoft.network/virtualnetworks/lowercase"
resources.resources.begin_create_or_update_by_id(
    lower_id,
    api_version="2024-05-01",
    parameters=GenericResource(location="westeurope", properties={"addressSpace": {"addressPrefixes": ["10.9.0.0/16"]}}),
    **PLAIN_HTTP,
).result()
report["lowercase_vnet_id"] = network.virtual_networks.get("sdk-rg", "lowercase", **PLAIN_HTTP).id
report["lowercase_generic_id"] = resources.resources.get_by_id(lower_id, api_version="2024-05-01", **PLAIN_HTTP).id

# VNets and NSGs in two groups, through the LRO (Azure-AsyncOperation) path.
for group, name, prefix in [("sdk-rg", "v1", "10.1.0.0/16"), ("sdk-rg", "v2", "10.2.0.0/16"), ("sdk-other", "v3", "10.3.0.0/16"), ("sdk-other", "v4", "10.4.0.0/16")]:
    network.virtual_networks.begin_create_or_update(group, name, VNET(prefix), **PLAIN_HTTP).result()
subnet = network.subnets.begin_create_or_update("sdk-rg", "v1", "workers", Subnet(address_prefix="10.1.0.0/24"), **PLAIN_HTTP).result()
report["subnet_id"] = subnet.id
nsg = network.network_security_groups.begin_create_or_update("sdk-rg", "nsg", NetworkSecurityGroup(location="westeurope"), **PLAIN_HTTP).result()
network.network_security_groups.begin_create_or_update("sdk-other", "nsg2", NetworkSecurityGroup(location="westeurope"), **PLAIN_HTTP).result()
report["nsg_default_rules"] = [
    {"name": r.name, "priority": r.priority, "direction": r.direction, "access": r.access, "description": r.description, "id": r.id}
    for r in nsg.default_security_rules
]
report["nsg_security_rules"] = len(nsg.security_rules or [])
report["default_rules_listed"] = [r.name for r in network.default_security_rules.list("sdk-rg", "nsg", **PLAIN_HTTP)]
report["default_rule_get"] = network.default_security_rules.get("sdk-rg", "nsg", "DenyAllOutBound", **PLAIN_HTTP).priority

# A rule of the user's next to Azure's: the NSG read back, with a rule added, written as read.
nsg = network.network_security_groups.get("sdk-rg", "nsg", **PLAIN_HTTP)
nsg.security_rules = [
    SecurityRule(
        name="https", priority=200, direction="Inbound", access="Allow", protocol="Tcp", source_port_range="*",
        destination_port_range="443", source_address_prefix="Internet", destination_address_prefix="*",
    )
]
nsg = network.network_security_groups.begin_create_or_update("sdk-rg", "nsg", nsg, **PLAIN_HTTP).result()
report["nsg_after_rule"] = {"rules": [r.name for r in nsg.security_rules], "defaults": len(nsg.default_security_rules)}

# List All, paged (the server's page size is lowered by the test): every item, each page <= the size.
pages = list(network.virtual_networks.list_all(**PLAIN_HTTP).by_page())
report["vnet_pages"] = [[v.name for v in page] for page in pages]
report["nsgs_all"] = sorted(n.name for n in network.network_security_groups.list_all(**PLAIN_HTTP))
report["vnets_in_rg"] = sorted(v.name for v in network.virtual_networks.list("sdk-rg", **PLAIN_HTTP))
report["groups"] = sorted(g.name for g in resources.resource_groups.list(**PLAIN_HTTP))

# Update Tags on each kind: the body's tags replace the resource's.
network.route_tables.begin_create_or_update("sdk-rg", "rt", RouteTable(location="westeurope"), **PLAIN_HTTP).result()
network.public_ip_addresses.begin_create_or_update(
    "sdk-rg", "pip", PublicIPAddress(location="westeurope", sku=PublicIPAddressSku(name="Standard"), tags={"old": "gone"}), **PLAIN_HTTP
).result()
network.nat_gateways.begin_create_or_update(
    "sdk-rg", "nat", NatGateway(location="westeurope", sku=NatGatewaySku(name="Standard")), **PLAIN_HTTP
).result()
tags = TagsObject(tags={"team": "net", "env": "test"})
report["tags"] = {
    "vnet": network.virtual_networks.update_tags("sdk-rg", "v1", tags, **PLAIN_HTTP).tags,
    "nsg": network.network_security_groups.update_tags("sdk-rg", "nsg", tags, **PLAIN_HTTP).tags,
    "route_table": network.route_tables.update_tags("sdk-rg", "rt", tags, **PLAIN_HTTP).tags,
    "public_ip": network.public_ip_addresses.update_tags("sdk-rg", "pip", tags, **PLAIN_HTTP).tags,
    "nat_gateway": network.nat_gateways.update_tags("sdk-rg", "nat", tags, **PLAIN_HTTP).tags,
}
report["tags_read_back"] = network.public_ip_addresses.get("sdk-rg", "pip", **PLAIN_HTTP).tags
report["vnet_subnets_after_tags"] = [s.name for s in network.virtual_networks.get("sdk-rg", "v1", **PLAIN_HTTP).subnets]

# The generic resource list of a group (paged too), and filtered by type.
listed = resources.resources.list_by_resource_group("sdk-rg", **PLAIN_HTTP)
report["generic"] = sorted([r.name, r.type, r.location] for r in listed)
report["generic_vnets"] = sorted(
    r.name for r in resources.resources.list_by_resource_group("sdk-rg", filter="resourceType eq 'Microsoft.Network/virtualNetworks'", **PLAIN_HTTP)
)

# Refusals, as HttpResponseError with Azure's code.
rule = lambda priority, direction="Inbound", source="Internet": SecurityRule(
    priority=priority, direction=direction, access="Allow", protocol="Tcp", source_port_range="*",
    destination_port_range="22", source_address_prefix=source, destination_address_prefix="*",
)
report["refusals"] = {
    "priority_low": refused(lambda: network.security_rules.begin_create_or_update("sdk-rg", "nsg", "low", rule(99), **PLAIN_HTTP).result()),
    "priority_high": refused(lambda: network.security_rules.begin_create_or_update("sdk-rg", "nsg", "high", rule(4097), **PLAIN_HTTP).result()),
    "same_priority": refused(lambda: network.security_rules.begin_create_or_update("sdk-rg", "nsg", "clash", rule(200), **PLAIN_HTTP).result()),
    "other_direction_ok": refused(
        lambda: network.security_rules.begin_create_or_update("sdk-rg", "nsg", "out", rule(200, "Outbound"), **PLAIN_HTTP).result()
    ),
    "bad_prefix": refused(
        lambda: network.security_rules.begin_create_or_update("sdk-rg", "nsg", "bad", rule(300, source="any"), **PLAIN_HTTP).result()
    ),
    "vnet_prefix": refused(lambda: network.virtual_networks.begin_create_or_update("sdk-rg", "bad", VNET("10.5.0.0"), **PLAIN_HTTP).result()),
    "appliance_route": refused(
        lambda: network.routes.begin_create_or_update(
            "sdk-rg", "rt", "to-fw", Route(address_prefix="0.0.0.0/0", next_hop_type="VirtualAppliance"), **PLAIN_HTTP
        ).result()
    ),
    "appliance_route_with_hop": refused(
        lambda: network.routes.begin_create_or_update(
            "sdk-rg", "rt", "to-fw", Route(address_prefix="0.0.0.0/0", next_hop_type="VirtualAppliance", next_hop_ip_address="10.1.0.4"), **PLAIN_HTTP
        ).result()
    ),
}
report["rules_after_refusals"] = sorted(r.name for r in network.security_rules.list("sdk-rg", "nsg", **PLAIN_HTTP))

# Deletes through their long-running operations: a VNet (Azure-AsyncOperation), a group (Location).
network.virtual_networks.begin_delete("sdk-rg", "v2", **PLAIN_HTTP).result()
resources.resource_groups.begin_delete("sdk-other", **PLAIN_HTTP).result()
report["after_deletes"] = {
    "vnets": sorted(v.name for v in network.virtual_networks.list_all(**PLAIN_HTTP)),
    "other_group_exists": resources.resource_groups.check_existence("sdk-other", **PLAIN_HTTP),
}

print(json.dumps(report, indent=1, sort_keys=True))
