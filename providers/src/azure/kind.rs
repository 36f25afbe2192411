//! The resource kinds azure plans name, as the plan JSON spells them (see [`trellis_plans::Kind`]).

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
