//! Resource names, ARM id templates and plan addresses, as upstream's `infra_adapter.go` and
//! `provider_utils.go` define them (reference §2.1).

use trellis_plans::Kind;

pub const ROUTE_TABLE_NAME: &str = "worker_route_table";

/// ARM REST types, as upstream's kind constants.
pub mod rtype {
    pub const RESOURCE_GROUP: &str = "Microsoft.Resources/resourceGroups";
    pub const VNET: &str = "Microsoft.Network/virtualNetworks";
    pub const SUBNET: &str = "Microsoft.Network/virtualNetworks/subnets";
    pub const ROUTE_TABLE: &str = "Microsoft.Network/routeTables";
    pub const NSG: &str = "Microsoft.Network/networkSecurityGroups";
    pub const NAT_GATEWAY: &str = "Microsoft.Network/natGateways";
    pub const PUBLIC_IP: &str = "Microsoft.Network/publicIPAddresses";
    pub const LOAD_BALANCER: &str = "Microsoft.Network/loadBalancers";
    pub const IDENTITY: &str = "Microsoft.ManagedIdentity/userAssignedIdentities";
}

/// `<tn>-workers`, the managed NSG.
pub fn nsg_name(tn: &str) -> String {
    format!("{tn}-workers")
}

/// `<tn>-nat-gateway`, or `<tn>-nat-gateway-z<z>` per zone (a migrated zone keeps the unzoned name).
pub fn nat_name(tn: &str, zone: Option<i32>, migrated: bool) -> String {
    match zone {
        Some(z) if !migrated => format!("{tn}-nat-gateway-z{z}"),
        _ => format!("{tn}-nat-gateway"),
    }
}

/// `<natName>-ip`, the managed public IP of a NAT gateway.
pub fn public_ip_name(nat_name: &str) -> String {
    format!("{nat_name}-ip")
}

/// `<tn>-nodes`, or `<tn>-nodes-z<z>` per zone (a migrated zone keeps the unzoned name).
pub fn subnet_name(tn: &str, zone: Option<i32>, migrated: bool) -> String {
    match zone {
        Some(z) if !migrated => format!("{tn}-nodes-z{z}"),
        _ => format!("{tn}-nodes"),
    }
}

pub fn resource_group_id(sub: &str, rg: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/{rg}")
}

/// `/subscriptions/{sub}/resourceGroups/{rg}/providers/{rtype}/{name}` for top-level network resources.
pub fn resource_id(sub: &str, rg: &str, rtype: &str, name: &str) -> String {
    format!("/subscriptions/{sub}/resourceGroups/{rg}/providers/{rtype}/{name}")
}

pub fn subnet_id(sub: &str, rg: &str, vnet: &str, subnet: &str) -> String {
    format!("{}/subnets/{subnet}", resource_id(sub, rg, rtype::VNET, vnet))
}

/// `azure.<kind>.<scope>.<name>`: the stable, human-readable plan address.
pub fn address(kind: Kind, scope: &str, name: &str) -> String {
    format!("azure.{}.{scope}.{name}", kind.as_str())
}

/// A parsed ARM id of a top-level resource or a direct child (subnet, rule, route).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArmId {
    pub subscription: String,
    pub resource_group: String,
    /// e.g. `Microsoft.Network/routeTables` (children: `Microsoft.Network/virtualNetworks/subnets`).
    pub rtype: String,
    pub name: String,
    /// For children: the parent's name (the VNet of a subnet).
    pub parent: Option<String>,
}

/// Parses `/subscriptions/{s}/resourceGroups/{rg}/providers/{ns}/{type}/{name}[/{child}/{name}]`.
pub fn parse_id(id: &str) -> Option<ArmId> {
    let parts: Vec<&str> = id.trim_matches('/').split('/').collect();
    let at = |i: usize, want: &str| parts.get(i).is_some_and(|p| p.eq_ignore_ascii_case(want));
    if !(at(0, "subscriptions") && at(2, "resourceGroups") && at(4, "providers")) {
        return None;
    }
    let (subscription, resource_group) = (parts.get(1)?.to_string(), parts.get(3)?.to_string());
    let namespace = parts.get(5)?;
    match parts.len() {
        8 => Some(ArmId {
            subscription,
            resource_group,
            rtype: format!("{namespace}/{}", parts[6]),
            name: parts[7].to_string(),
            parent: None,
        }),
        10 => Some(ArmId {
            subscription,
            resource_group,
            rtype: format!("{namespace}/{}/{}", parts[6], parts[8]),
            name: parts[9].to_string(),
            parent: Some(parts[7].to_string()),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_upstream() {
        assert_eq!(nat_name("shoot--p--s", Some(2), false), "shoot--p--s-nat-gateway-z2");
        assert_eq!(nat_name("shoot--p--s", Some(2), true), "shoot--p--s-nat-gateway");
        assert_eq!(public_ip_name(&nat_name("t", Some(1), false)), "t-nat-gateway-z1-ip");
        assert_eq!(subnet_name("t", None, false), "t-nodes");
        assert_eq!(nsg_name("t"), "t-workers");
    }

    #[test]
    fn ids_round_trip() {
        let id = subnet_id("s", "hub", "vnet", "workers");
        let parsed = parse_id(&id).unwrap();
        assert_eq!(parsed.rtype, rtype::SUBNET);
        assert_eq!((parsed.parent.as_deref(), parsed.name.as_str()), (Some("vnet"), "workers"));
        let rt = parse_id("/subscriptions/x/resourcegroups/net-rg/providers/Microsoft.Network/routeTables/rt").unwrap();
        assert_eq!((rt.subscription.as_str(), rt.resource_group.as_str(), rt.name.as_str()), ("x", "net-rg", "rt"));
        assert!(parse_id("/subscriptions/x").is_none());
    }
}
