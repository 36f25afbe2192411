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

/// A parsed ARM id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArmId {
    /// The id as written, without a trailing `/`.
    raw: String,
    /// The `/`-separated segments of `raw` (without the leading empty one).
    segments: Vec<String>,
}

impl ArmId {
    /// Parses an ARM id with the workspace's one parser ([`trellis_planner::ids::ArmId`]); the error
    /// says what is wrong and what shape is expected.
    pub fn parse(id: &str) -> Result<ArmId, String> {
        let parsed = trellis_planner::ids::ArmId::parse(id)?;
        let raw = parsed.as_str().to_string();
        let segments = raw[1..].split('/').map(str::to_string).collect();
        Ok(ArmId { raw, segments })
    }

    /// The id as written (casing preserved).
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The lookup key: the id in lowercase.
    pub fn key(&self) -> String {
        self.raw.to_ascii_lowercase()
    }

    pub fn subscription(&self) -> &str {
        &self.segments[1]
    }

    /// The resource group name, unless this is a subscription id.
    pub fn resource_group(&self) -> Option<&str> {
        self.segments.get(3).map(String::as_str)
    }

    /// The id of the resource group this id lies in (itself for a resource group).
    pub fn resource_group_id(&self) -> Option<ArmId> {
        (self.segments.len() >= 4).then(|| self.prefix(4))
    }

    /// The last name in the id (the subscription id for a subscription).
    pub fn name(&self) -> &str {
        self.segments.last().expect("an ARM id has at least two segments")
    }

    /// The REST type in canonical casing, e.g. `Microsoft.Network/virtualNetworks/subnets`.
    pub fn rtype(&self) -> String {
        match self.segments.len() {
            2 => "Microsoft.Resources/subscriptions".to_string(),
            4 => "Microsoft.Resources/resourceGroups".to_string(),
            _ => {
                let mut t = self.segments[5].clone();
                for pair in self.segments[6..].chunks(2) {
                    t.push('/');
                    t.push_str(&pair[0]);
                }
                canonical_type(&t)
            }
        }
    }

    pub fn kind(&self) -> Kind {
        match self.segments.len() {
            2 => Kind::Subscription,
            4 => Kind::ResourceGroup,
            _ => kind_of_type(&self.rtype()),
        }
    }

    /// Whether this is a nested resource (a subnet, a rule, …) rather than a top-level one.
    pub fn is_child(&self) -> bool {
        self.segments.len() > 8
    }

    /// The containing resource: the parent resource for a child, the resource group for a
    /// top-level resource, the subscription for a resource group; `None` for a subscription.
    pub fn parent(&self) -> Option<ArmId> {
        match self.segments.len() {
            2 => None,
            4 => Some(self.prefix(2)),
            8 => Some(self.prefix(4)),
            n => Some(self.prefix(n - 2)),
        }
    }

    /// The type segment before the name: `subnets` in `…/virtualNetworks/v/subnets/web`.
    pub fn type_segment(&self) -> &str {
        &self.segments[self.segments.len() - 2]
    }

    /// The id of a child of this resource: `<self>/<segment>/<name>`.
    pub fn child(&self, segment: &str, name: &str) -> ArmId {
        let mut segments = self.segments.clone();
        if segments.len() == 4 {
            // Children of a resource group are resources; callers pass `Namespace/type` as segment.
            segments.push("providers".to_string());
        }
        segments.extend(segment.split('/').map(str::to_string));
        segments.push(name.to_string());
        ArmId { raw: format!("/{}", segments.join("/")), segments }
    }

    fn prefix(&self, n: usize) -> ArmId {
        let segments = self.segments[..n].to_vec();
        ArmId { raw: format!("/{}", segments.join("/")), segments }
    }
}

impl fmt::Display for ArmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
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
