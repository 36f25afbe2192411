//! The resource kinds azure plans name, as the plan JSON spells them (see [`trellis_plans::Kind`]).

use serde_json::Value;
use trellis_planner::ids::ArmId;
use trellis_plans::terraform::{TerraformKind, TerraformType};
use trellis_plans::Kind;

pub const RESOURCE_GROUP: Kind = Kind::new("resource_group");
pub const VIRTUAL_NETWORK: Kind = Kind::new("virtual_network");
pub const SUBNET: Kind = Kind::new("subnet");
pub const ROUTE_TABLE: Kind = Kind::new("route_table");
pub const NETWORK_SECURITY_GROUP: Kind = Kind::new("network_security_group");
pub const NAT_GATEWAY: Kind = Kind::new("nat_gateway");
pub const PUBLIC_IP_ADDRESS: Kind = Kind::new("public_ip_address");
pub const MANAGED_IDENTITY: Kind = Kind::new("managed_identity");
pub const LOAD_BALANCER: Kind = Kind::new("load_balancer");
pub const SECURITY_RULE: Kind = Kind::new("security_rule");
pub const ROUTE: Kind = Kind::new("route");

/// The Terraform provider whose types are the same Azure resources (`hashicorp/azurerm`).
pub const AZURERM: &str = "registry.terraform.io/hashicorp/azurerm";

/// Each kind's `azurerm` resource type (the same ARM resource), and what ARM sets on a create.
const TERRAFORM: [(Kind, &str, &[&str]); 11] = [
    (RESOURCE_GROUP, "azurerm_resource_group", &["/properties/provisioningState"]),
    (
        VIRTUAL_NETWORK,
        "azurerm_virtual_network",
        &["/etag", "/properties/provisioningState", "/properties/resourceGuid"],
    ),
    (SUBNET, "azurerm_subnet", &["/etag", "/properties/provisioningState"]),
    (ROUTE_TABLE, "azurerm_route_table", &["/etag", "/properties/provisioningState", "/properties/resourceGuid"]),
    (
        NETWORK_SECURITY_GROUP,
        "azurerm_network_security_group",
        &["/etag", "/properties/provisioningState", "/properties/resourceGuid", "/properties/defaultSecurityRules"],
    ),
    (NAT_GATEWAY, "azurerm_nat_gateway", &["/etag", "/properties/provisioningState", "/properties/resourceGuid"]),
    (
        PUBLIC_IP_ADDRESS,
        "azurerm_public_ip",
        &["/etag", "/properties/provisioningState", "/properties/resourceGuid", "/properties/ipAddress"],
    ),
    (
        MANAGED_IDENTITY,
        "azurerm_user_assigned_identity",
        &["/properties/principalId", "/properties/clientId", "/properties/tenantId"],
    ),
    (LOAD_BALANCER, "azurerm_lb", &["/etag", "/properties/provisioningState", "/properties/resourceGuid"]),
    (SECURITY_RULE, "azurerm_network_security_rule", &["/etag", "/properties/provisioningState"]),
    (ROUTE, "azurerm_route", &["/etag", "/properties/provisioningState"]),
];

/// What Terraform's readers are told about an Azure kind: its `azurerm` type; unknown after a create
/// what ARM assigns (etag, provisioning state, resource GUID, a public IP's address, an identity's
/// ids), unknown after any write the etag; known after a create the `id`, `name` and `type` ARM
/// derives from the id.
pub fn terraform_kind(kind: Kind, id: Option<&str>) -> TerraformKind {
    let Some((_, name, computed)) = TERRAFORM.iter().find(|(k, _, _)| *k == kind) else {
        return TerraformKind::default();
    };
    let has_etag = computed.contains(&"/etag");
    let known_on_create = match id.map(ArmId::parse) {
        Some(Ok(arm)) => vec![
            ("/id", Value::String(arm.as_str().to_string())),
            ("/name", Value::String(arm.name().to_string())),
            ("/type", Value::String(arm.rtype())),
        ],
        _ => Vec::new(),
    };
    TerraformKind {
        resource_type: Some(TerraformType { name, source: AZURERM }),
        computed,
        rewritten: if has_etag { &["/etag"] } else { &[] },
        known_on_create,
    }
}
