//! The provider-neutral helpers every provider's desired state uses to say what a plan shows about
//! a resource it does not write: a skip node (a task the configuration gates out) and a verify check.
//! Each provider passes its own plan address (`azure.…`, `gcp.…`).

use serde_json::Value;
use trellis_planner::model::{Desired, SkipSpec};
use trellis_plans::{Check, Kind, Ownership, Reason};

/// A skip node at `address` for a task the configuration gates out (or a resource of the user's a
/// destroy leaves alone), with the reason.
pub fn skipped_at(
    address: String,
    kind: Kind,
    scope: &str,
    name: &str,
    id: Option<String>,
    ownership: Ownership,
    why: Reason,
) -> Desired {
    Desired::Skip(SkipSpec { address, kind, name: name.to_string(), scope: scope.to_string(), id, ownership, why })
}

/// A verify check that an attribute (a JSON pointer into the live resource) equals a value.
pub fn check(path: &str, expect: Value, message: String) -> Check {
    Check { path: path.to_string(), expect, message }
}
