//! The simulator core: what every simulated cloud shares, whatever its API.
//!
//! - [`sim`]: the call pipeline, once — [`sim::Sim`] over a cloud's [`sim::SimCloud`] (fault
//!   decision, latency and write scopes, the cloud's rule under the lock, the write of its changes,
//!   the audit entry, the flush; long-running operations), and the one storage-failure policy;
//! - [`persist`]: the group flush of a cloud's sled tree (each cloud writes its own layout);
//! - [`audit`]: every call, failed and faulted ones included;
//! - [`faults`] and [`latency`]: injected faults and simulated time;
//! - [`precondition`]: `If-Match` / `If-None-Match: *` against a resource's etag;
//! - [`world`]: the world file, one section per cloud.
//!
//! A cloud module ([`crate::arm`], [`crate::gce`], [`crate::dns`]) owns its ids, store, rules and
//! world section, implements [`sim::SimCloud`], and reaches its store only through [`sim::Sim`]'s
//! calls (or [`sim::Sim::lock`] for views that are not audited).

pub(crate) mod audit;
pub mod faults;
pub(crate) mod latency;
pub(crate) mod persist;
pub mod precondition;
pub(crate) mod sim;
pub mod world;

/// A cloud's refusal: HTTP status, error code, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, code: &str, message: impl Into<String>) -> ApiError {
        ApiError { status, code: code.to_string(), message: message.into() }
    }
}

/// Who brought a resource into a simulated cloud.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Declared by a world file: it existed before trellis ran.
    World,
    /// Created through the API (`apply`, or a runtime writer such as the CCM).
    Api,
}
