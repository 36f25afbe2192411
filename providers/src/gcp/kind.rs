//! The resource kinds gcp plans name, as the plan JSON spells them (see [`trellis_plans::Kind`]).

use trellis_plans::Kind;

pub const SERVICE_ACCOUNT: Kind = Kind::new("service_account");
pub const NETWORK: Kind = Kind::new("network");
pub const SUBNETWORK: Kind = Kind::new("subnetwork");
pub const ROUTER: Kind = Kind::new("router");
pub const CLOUD_NAT: Kind = Kind::new("cloud_nat");
pub const ADDRESS: Kind = Kind::new("address");
pub const FIREWALL: Kind = Kind::new("firewall");
pub const ROUTE: Kind = Kind::new("route");
