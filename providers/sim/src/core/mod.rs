//! The simulator core: what every simulated cloud shares, whatever its API.
//!
//! - [`sim`]: the call pipeline, once — [`sim::Sim`] over a cloud's [`sim::SimCloud`] (fault
//!   decision, latency and write scopes, the cloud's rule under the lock, the write of its changes,
//!   the audit entry, the flush; long-running operations), and the one storage-failure policy;
//! - [`store`]: the resources, keyed by lowercased id, with a reverse index of references;
//! - [`persist`]: the store in a `sled::Tree`, flushed before a write returns;
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
pub(crate) mod store;
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
