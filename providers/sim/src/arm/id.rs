//! ARM resource ids: parsing, parents, types and the resource kinds the simulator knows.
//!
//! An ARM id is `/subscriptions/{s}` (a subscription), `/subscriptions/{s}/resourceGroups/{rg}` (a
//! resource group) or `/subscriptions/{s}/resourceGroups/{rg}/providers/{Namespace}/{type}/{name}`
//! followed by any number of `/{childType}/{childName}` pairs. ARM compares ids case-insensitively;
//! an [`ArmId`] keeps the casing it was written with and offers a lowercased [`ArmId::key`] for lookups.

use std::fmt;

/// The resource kinds whose ARM rules the simulator enforces. Everything else is [`Kind::Other`]:
/// stored and returned as given, with containment still enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Subscription,
    ResourceGroup,
    VirtualNetwork,
    Subnet,
    RouteTable,
    Route,
    NetworkSecurityGroup,
    SecurityRule,
    /// One of the six rules Azure puts in every NSG (`…/defaultSecurityRules/{name}`): read-only,
    /// computed on GET, never stored.
    DefaultSecurityRule,
    NatGateway,
    PublicIpAddress,
    NetworkInterface,
    LoadBalancer,
    VirtualMachine,
    Other,
}

impl Kind {
    /// Top-level ("tracked") resources that ARM refuses to create without a `location`.
    pub fn requires_location(self) -> bool {
        matches!(
            self,
            Kind::ResourceGroup
                | Kind::VirtualNetwork
                | Kind::RouteTable
                | Kind::NetworkSecurityGroup
                | Kind::NatGateway
                | Kind::PublicIpAddress
        )
    }
}

/// REST types with their canonical casing (what `type` in a GET shows), and their kind.
const KNOWN_TYPES: &[(&str, Kind)] = &[
    ("Microsoft.Resources/resourceGroups", Kind::ResourceGroup),
    ("Microsoft.Network/virtualNetworks", Kind::VirtualNetwork),
    ("Microsoft.Network/virtualNetworks/subnets", Kind::Subnet),
    ("Microsoft.Network/routeTables", Kind::RouteTable),
    ("Microsoft.Network/routeTables/routes", Kind::Route),
    ("Microsoft.Network/networkSecurityGroups", Kind::NetworkSecurityGroup),
    ("Microsoft.Network/networkSecurityGroups/securityRules", Kind::SecurityRule),
    ("Microsoft.Network/networkSecurityGroups/defaultSecurityRules", Kind::DefaultSecurityRule),
    ("Microsoft.Network/natGateways", Kind::NatGateway),
    ("Microsoft.Network/publicIPAddresses", Kind::PublicIpAddress),
    ("Microsoft.Network/loadBalancers", Kind::LoadBalancer),
    ("Microsoft.Network/networkInterfaces", Kind::NetworkInterface),
    ("Microsoft.Compute/virtualMachines", Kind::VirtualMachine),
    ("Microsoft.Compute/disks", Kind::Other),
    ("Microsoft.ManagedIdentity/userAssignedIdentities", Kind::Other),
];

/// The canonical spelling of a REST type (`microsoft.network/publicipaddresses` →
/// `Microsoft.Network/publicIPAddresses`); unknown types are returned as given.
pub fn canonical_type(rtype: &str) -> String {
    KNOWN_TYPES
        .iter()
        .find(|(t, _)| t.eq_ignore_ascii_case(rtype))
        .map(|(t, _)| (*t).to_string())
        .unwrap_or_else(|| rtype.to_string())
}

fn kind_of_type(rtype: &str) -> Kind {
    KNOWN_TYPES.iter().find(|(t, _)| t.eq_ignore_ascii_case(rtype)).map(|(_, k)| *k).unwrap_or(Kind::Other)
}

/// A parsed ARM id: the workspace's one ARM id ([`trellis_planner::ids::ArmId`], whose navigation —
/// `as_str`, `key`, `subscription`, `resource_group`, `name`, `is_child`, `type_segment` — it derefs
/// to), plus what the simulator needs on top: the type in its canonical casing and its [`Kind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArmId(trellis_planner::ids::ArmId);

impl std::ops::Deref for ArmId {
    type Target = trellis_planner::ids::ArmId;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl ArmId {
    /// Parses an ARM id; the error says what is wrong and what shape is expected.
    pub fn parse(id: &str) -> Result<ArmId, String> {
        trellis_planner::ids::ArmId::parse(id).map(ArmId)
    }

    /// The REST type in canonical casing, e.g. `Microsoft.Network/virtualNetworks/subnets`.
    pub fn rtype(&self) -> String {
        canonical_type(&self.0.rtype())
    }

    pub fn kind(&self) -> Kind {
        match self.0.depth() {
            2 => Kind::Subscription,
            4 => Kind::ResourceGroup,
            _ => kind_of_type(&self.0.rtype()),
        }
    }

    /// The id of the resource group this id lies in (itself for a resource group).
    pub fn resource_group_id(&self) -> Option<ArmId> {
        self.0.resource_group_id().map(ArmId)
    }

    /// The containing resource: the parent resource for a child, the resource group for a
    /// top-level resource, the subscription for a resource group; `None` for a subscription.
    pub fn parent(&self) -> Option<ArmId> {
        self.0.parent().map(ArmId)
    }

    /// The id of a child of this resource: `<self>/<segment>/<name>`.
    pub fn child(&self, segment: &str, name: &str) -> ArmId {
        ArmId(self.0.child(segment, name))
    }

    /// The id as ARM answers it whatever casing a request used: the keywords `subscriptions`,
    /// `resourceGroups` and `providers`, the namespace and the type segments of a known type in their
    /// canonical casing (`Microsoft.Network/virtualNetworks/…/subnets/…`); the names as written.
    pub fn canonical(&self) -> ArmId {
        let mut segments: Vec<String> = self.as_str().trim_start_matches('/').split('/').map(str::to_string).collect();
        segments[0] = "subscriptions".to_string();
        if segments.len() >= 4 {
            segments[2] = "resourceGroups".to_string();
        }
        if segments.len() >= 8 {
            segments[4] = "providers".to_string();
            let rtype = self.rtype();
            let mut names = rtype.split('/');
            if let Some(namespace) = names.next() {
                segments[5] = namespace.to_string();
            }
            for (i, name) in names.enumerate() {
                if let Some(slot) = segments.get_mut(6 + 2 * i) {
                    *slot = name.to_string();
                }
            }
        }
        let canonical = format!("/{}", segments.join("/"));
        ArmId::parse(&canonical).unwrap_or_else(|_| self.clone())
    }
}

impl fmt::Display for ArmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VNET: &str = "/subscriptions/s/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/hub";

    #[test]
    fn parses_resource_group_resource_and_child() {
        let rg = ArmId::parse("/subscriptions/s/resourcegroups/RG/").unwrap();
        assert_eq!(rg.kind(), Kind::ResourceGroup);
        assert_eq!(rg.as_str(), "/subscriptions/s/resourcegroups/RG");
        assert_eq!(rg.parent().unwrap().kind(), Kind::Subscription);

        let vnet = ArmId::parse(VNET).unwrap();
        assert_eq!(vnet.kind(), Kind::VirtualNetwork);
        assert_eq!(vnet.parent().unwrap().as_str(), "/subscriptions/s/resourceGroups/RG");
        assert_eq!(vnet.resource_group(), Some("RG"));

        let subnet = ArmId::parse(&format!("{VNET}/subnets/web")).unwrap();
        assert_eq!(subnet.kind(), Kind::Subnet);
        assert_eq!(subnet.rtype(), "Microsoft.Network/virtualNetworks/subnets");
        assert_eq!(subnet.parent().unwrap(), vnet);
        assert_eq!(subnet.name(), "web");
        assert!(subnet.is_child());
        assert_eq!(vnet.child("subnets", "web"), subnet);
    }

    #[test]
    fn types_are_canonical_whatever_the_casing_of_the_id() {
        let pip = ArmId::parse("/subscriptions/s/resourcegroups/rg/providers/microsoft.network/publicipaddresses/ip")
            .unwrap();
        assert_eq!(pip.rtype(), "Microsoft.Network/publicIPAddresses");
        assert_eq!(pip.kind(), Kind::PublicIpAddress);
        assert_eq!(pip.key(), "/subscriptions/s/resourcegroups/rg/providers/microsoft.network/publicipaddresses/ip");
    }

    #[test]
    fn canonical_ids_have_arms_keywords_and_type_casing_and_keep_the_names() {
        let id = ArmId::parse(
            "/SUBSCRIPTIONS/s/resourcegroups/My-RG/PROVIDERS/microsoft.network/VIRTUALNETWORKS/Hub/SUBNETS/Web",
        )
        .unwrap();
        assert_eq!(
            id.canonical().as_str(),
            "/subscriptions/s/resourceGroups/My-RG/providers/Microsoft.Network/virtualNetworks/Hub/subnets/Web"
        );
        let rg = ArmId::parse("/subscriptions/s/RESOURCEGROUPS/rg").unwrap();
        assert_eq!(rg.canonical().as_str(), "/subscriptions/s/resourceGroups/rg");
        let unknown = ArmId::parse("/subscriptions/s/resourcegroups/rg/providers/Contoso.X/widgets/w").unwrap();
        assert_eq!(unknown.canonical().as_str(), "/subscriptions/s/resourceGroups/rg/providers/Contoso.X/widgets/w");
    }

    #[test]
    fn rejects_malformed_ids() {
        for bad in [
            "",
            "subscriptions/s",
            "/subscriptions",
            "/subscriptions/s/resourceGroups",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets",
            "/subscriptions/s//resourceGroups/rg",
            "/tenants/t/resourceGroups/rg",
        ] {
            assert!(ArmId::parse(bad).is_err(), "{bad} should not parse");
        }
    }
}
