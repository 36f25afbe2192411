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

/// A region as ARM answers it: lowercase, without spaces (`West Europe` → `westeurope`). Managed
/// resources are written with this spelling, so a region configured in another spelling is not a
/// perpetual update of every resource's `location`.
pub fn arm_location(region: &str) -> String {
    region.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase()
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

/// `azure.<kind>.<scope>.<name>`: the stable, human-readable plan address, and the resource's key in
/// state. Scope and name are lowercased: ARM names are case-insensitive, and the same resource reaches
/// trellis spelled as the user configured it, as another resource's reference spells it, or as a
/// resource provider returns it (some upper-case resource groups). One resource has one address, whatever
/// the spelling; the node's `scope`, `name` and `id` keep the spelling shown to the user.
pub fn address(kind: Kind, scope: &str, name: &str) -> String {
    format!("azure.{}.{}.{}", kind.as_str(), scope.to_ascii_lowercase(), name.to_ascii_lowercase())
}

/// The id of a resource that another resource references (a subnet's NSG or route table), spelled
/// stably. A reference keeps whatever casing it was written with, so the referenced resource's own id
/// (`own_id`, from its GET) is taken when it was observed and names the same resource; then a resource
/// group that the configuration names (`configured_groups`) is spelled as configured. A reference
/// re-attached in another casing therefore renders the same id, status and `azure.json`.
pub fn canonical_reference(reference: &str, own_id: Option<&str>, configured_groups: &[&str]) -> String {
    let base = own_id.filter(|own| own.eq_ignore_ascii_case(reference)).unwrap_or(reference);
    let Ok(parsed) = trellis_planner::ids::ArmId::parse(base) else { return base.to_string() };
    match parsed.resource_group().and_then(|rg| configured_groups.iter().find(|c| c.eq_ignore_ascii_case(rg))) {
        Some(configured) => parsed.with_resource_group(configured).to_string(),
        None => base.to_string(),
    }
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

/// Parses `/subscriptions/{s}/resourceGroups/{rg}/providers/{ns}/{type}/{name}[/{child}/{name}]`
/// (with [`trellis_planner::ids::ArmId`], the workspace's one ARM id parser).
pub fn parse_id(id: &str) -> Option<ArmId> {
    let parsed = trellis_planner::ids::ArmId::parse(&format!("/{}", id.trim_matches('/'))).ok()?;
    let parent = match parsed.depth() {
        8 => None,
        10 => Some(parsed.parent()?.name().to_string()),
        _ => return None,
    };
    Some(ArmId {
        subscription: parsed.subscription().to_string(),
        resource_group: parsed.resource_group()?.to_string(),
        rtype: parsed.rtype(),
        name: parsed.name().to_string(),
        parent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::azure::kind;

    #[test]
    fn names_follow_upstream() {
        assert_eq!(nat_name("shoot--p--s", Some(2), false), "shoot--p--s-nat-gateway-z2");
        assert_eq!(nat_name("shoot--p--s", Some(2), true), "shoot--p--s-nat-gateway");
        assert_eq!(public_ip_name(&nat_name("t", Some(1), false)), "t-nat-gateway-z1-ip");
        assert_eq!(subnet_name("t", None, false), "t-nodes");
        assert_eq!(nsg_name("t"), "t-workers");
    }

    #[test]
    fn addresses_are_lowercase() {
        assert_eq!(address(kind::NETWORK_SECURITY_GROUP, "RG1", "TestNSG"), "azure.network_security_group.rg1.testnsg");
        assert_eq!(address(kind::SUBNET, "rg1", "V/S"), address(kind::SUBNET, "Rg1", "v/s"));
    }

    #[test]
    fn references_are_spelled_as_the_resource_and_the_configuration_spell_them() {
        let own = "/subscriptions/s/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/testnsg";
        let upper = "/subscriptions/s/resourceGroups/RG1/providers/Microsoft.Network/networkSecurityGroups/TESTNSG";
        assert_eq!(canonical_reference(upper, Some(own), &[]), own);
        assert_eq!(canonical_reference(own, Some(own), &[]), own);
        // Not observed: the reference as written, its resource group as configured.
        assert_eq!(
            canonical_reference(upper, None, &["Rg1"]),
            "/subscriptions/s/resourceGroups/Rg1/providers/Microsoft.Network/networkSecurityGroups/TESTNSG"
        );
        assert_eq!(
            canonical_reference(upper, Some(own), &["other", "RG1"]),
            "/subscriptions/s/resourceGroups/RG1/providers/Microsoft.Network/networkSecurityGroups/testnsg"
        );
        // A different resource's id is never taken.
        assert_eq!(canonical_reference(upper, Some("/subscriptions/s/resourceGroups/rg1"), &[]), upper);
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
