//! The six rules Azure puts in every network security group (`properties.defaultSecurityRules`), as
//! the REST reference's example answers show them (`NetworkSecurityGroupGet.json`, and what `az
//! network nsg show` returns): read-only, computed on GET from the NSG, never stored, never written —
//! a PUT body that carries them (a client sending back what it read) has them ignored.

use crate::arm::ArmId;
use serde_json::{json, Value};

/// Name, priority, direction, access, source and destination prefix, description.
const RULES: [(&str, u32, &str, &str, &str, &str, &str); 6] = [
    (
        "AllowVnetInBound",
        65000,
        "Inbound",
        "Allow",
        "VirtualNetwork",
        "VirtualNetwork",
        "Allow inbound traffic from all VMs in VNET",
    ),
    (
        "AllowAzureLoadBalancerInBound",
        65001,
        "Inbound",
        "Allow",
        "AzureLoadBalancer",
        "*",
        "Allow inbound traffic from azure load balancer",
    ),
    ("DenyAllInBound", 65500, "Inbound", "Deny", "*", "*", "Deny all inbound traffic"),
    (
        "AllowVnetOutBound",
        65000,
        "Outbound",
        "Allow",
        "VirtualNetwork",
        "VirtualNetwork",
        "Allow outbound traffic from all VMs to all VMs in VNET",
    ),
    (
        "AllowInternetOutBound",
        65001,
        "Outbound",
        "Allow",
        "*",
        "Internet",
        "Allow outbound traffic from all VMs to Internet",
    ),
    ("DenyAllOutBound", 65500, "Outbound", "Deny", "*", "*", "Deny all outbound traffic"),
];

/// The id segment of the default rules below their NSG.
pub(crate) const SEGMENT: &str = "defaultSecurityRules";

/// Their REST type.
pub(crate) const TYPE: &str = "Microsoft.Network/networkSecurityGroups/defaultSecurityRules";

/// The default rules of the NSG `nsg` (its id) whose etag is `etag`, in Azure's order.
pub(crate) fn of(nsg: &ArmId, etag: Option<&Value>) -> Vec<Value> {
    RULES
        .iter()
        .map(|(name, priority, direction, access, source, destination, description)| {
            let mut rule = json!({
                "name": name,
                "id": nsg.child(SEGMENT, name).as_str(),
                "type": TYPE,
            });
            if let Some(etag) = etag {
                rule["etag"] = etag.clone();
            }
            rule["properties"] = json!({
                "provisioningState": "Succeeded",
                "description": description,
                "protocol": "*",
                "sourcePortRange": "*",
                "destinationPortRange": "*",
                "sourceAddressPrefix": source,
                "destinationAddressPrefix": destination,
                "access": access,
                "priority": priority,
                "direction": direction,
                "sourcePortRanges": [],
                "destinationPortRanges": [],
                "sourceAddressPrefixes": [],
                "destinationAddressPrefixes": [],
            });
            rule
        })
        .collect()
}
