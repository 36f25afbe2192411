//! The resource kinds domains plans name, as the plan JSON spells them (see [`trellis_plans::Kind`]).

use trellis_plans::Kind;

pub const DNS_RECORD: Kind = Kind::new("dns_record");
