//! Ids and helpers shared by the simulator's integration tests (each test module uses some of them).
#![allow(dead_code)]

use trellis_planner::cloud::CloudError;

/// The resource group the tests build in, in subscription `sub-1`.
pub const RG: &str = "/subscriptions/sub-1/resourceGroups/rg";
/// Its `Microsoft.Network` provider path.
pub const NET: &str = "/subscriptions/sub-1/resourceGroups/rg/providers/Microsoft.Network";

/// `<NET>/<rest>`, e.g. `id("virtualNetworks/vnet")`.
pub fn id(rest: &str) -> String {
    format!("{NET}/{rest}")
}

/// A refusal's status, code and message; anything else fails the test.
pub fn rejected(e: CloudError) -> (u16, String, String) {
    match e {
        CloudError::Rejected { status, code, message, .. } => (status, code, message),
        other => panic!("expected a rejection, got {other:?}"),
    }
}
