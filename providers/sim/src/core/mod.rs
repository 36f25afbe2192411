//! The simulator core: what every simulated cloud shares, whatever its API.
//!
//! - [`store`]: the resources, keyed by lowercased id, with a reverse index of references;
//! - [`persist`]: the store in a `sled::Tree`, flushed before a write returns;
//! - [`audit`]: every call, failed and faulted ones included;
//! - [`faults`] and [`latency`]: injected faults and simulated time;
//! - [`precondition`]: `If-Match` / `If-None-Match: *` against a resource's etag;
//! - [`world`]: the world file, one section per cloud;
//! - [`Shared::call`]: one cloud call — fault decision, latency, the cloud module's rule applied to
//!   the store under the lock, persistence, the audit entry.
//!
//! A cloud module (today [`crate::arm`]) owns its ids, rules and world section, and reaches the
//! store only through [`Shared::call`] (or [`Shared::lock`] for calls that are not audited). The store
//! keys its entries by ARM ids today; a GCE or DNS module brings its own id type beside them.

pub(crate) mod audit;
pub mod faults;
pub(crate) mod latency;
pub(crate) mod persist;
pub mod precondition;
pub(crate) mod store;
pub mod world;

use audit::AuditLog;
use faults::{Fault, FaultState};
use latency::InFlight;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use store::Store;
use trellis_planner::cloud::{Call, CloudError, Op};

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

/// Everything a simulated cloud keeps, behind one lock.
pub(crate) struct Core {
    pub store: Store,
    pub audit: AuditLog,
    pub faults: FaultState,
    pub in_flight: InFlight,
}

/// A cloud module's answer to a write into a scope another write holds: given the store, the scope
/// and the number of the operation holding it.
pub(crate) type Refusal = fn(&Store, &str, u64) -> ApiError;

/// A handle on a [`Core`]; clones share it.
#[derive(Clone)]
pub(crate) struct Shared {
    inner: Arc<Mutex<Core>>,
}

impl Shared {
    pub fn new(store: Store) -> Shared {
        let core =
            Core { store, audit: AuditLog::default(), faults: FaultState::default(), in_flight: InFlight::default() };
        Shared { inner: Arc::new(Mutex::new(core)) }
    }

    pub fn lock(&self) -> MutexGuard<'_, Core> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One cloud call: fault decision and latency, then `apply` under the lock, then the audit entry.
    pub async fn call<T>(
        &self,
        method: &'static str,
        target: String,
        apply: impl FnOnce(&mut Store) -> Result<(T, u16), ApiError>,
    ) -> Result<T, CloudError> {
        self.call_in(method, target, None, apply).await
    }

    /// [`Shared::call`] for a write that holds `scope` while it is in flight (its latency): a write
    /// arriving meanwhile in the same scope is answered with the [`Refusal`] at once, not applied.
    pub async fn call_in<T>(
        &self,
        method: &'static str,
        target: String,
        scope: Option<(String, Refusal)>,
        apply: impl FnOnce(&mut Store) -> Result<(T, u16), ApiError>,
    ) -> Result<T, CloudError> {
        let op = if matches!(method, "GET" | "LIST") { Op::Read } else { Op::Write };
        let (fault, latency, _held) = {
            let mut st = self.lock();
            let fault = st.faults.decide(method, &target, op);
            let applies = matches!(fault, None | Some(Fault::TimeoutAfterApply));
            let mut held = None;
            if let Some((scope, refusal)) = scope.filter(|_| applies) {
                if let Some(holder) = st.in_flight.holder(&scope) {
                    let e = refusal(&st.store, &scope, holder);
                    let status = e.status;
                    st.audit.push(Call { op, method: method.to_string(), target: target.clone(), status });
                    return Err(to_cloud_error(&target, e));
                }
                st.in_flight.start(&scope);
                held = Some(Held { shared: self.clone(), scope });
            }
            (fault, latency::delay(st.faults.faults(), op), held)
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let mut st = self.lock();
        let (result, status) = match fault {
            Some(Fault::Throttle { retry_after }) => {
                (Err(CloudError::Throttled { target: target.clone(), retry_after: Some(retry_after) }), 429)
            }
            Some(Fault::ServerError) => (
                Err(CloudError::Server {
                    target: target.clone(),
                    status: 500,
                    message: "InternalServerError: injected fault".into(),
                }),
                500,
            ),
            Some(Fault::Forbidden) => (
                Err(CloudError::Rejected {
                    target: target.clone(),
                    status: 403,
                    code: "AuthorizationFailed".into(),
                    message: "the client does not have authorization to perform this action (injected fault)".into(),
                }),
                403,
            ),
            Some(Fault::Timeout) => (Err(CloudError::Timeout { target: target.clone() }), 408),
            None | Some(Fault::TimeoutAfterApply) => {
                let applied = apply(&mut st.store).and_then(|ok| match st.store.commit() {
                    Ok(()) => Ok(ok),
                    Err(e) => Err(ApiError::new(
                        500,
                        "InternalServerError",
                        format!("the simulated cloud could not persist the change: {e}"),
                    )),
                });
                match applied {
                    Ok((_, status)) if fault.is_some() => (Err(CloudError::Timeout { target: target.clone() }), status),
                    Ok((value, status)) => (Ok(value), status),
                    Err(e) => {
                        let status = e.status;
                        let err = if fault.is_some() {
                            CloudError::Timeout { target: target.clone() }
                        } else {
                            to_cloud_error(&target, e)
                        };
                        (Err(err), status)
                    }
                }
            }
        };
        st.audit.push(Call { op, method: method.to_string(), target, status });
        result
    }
}

/// A scope held by a write in flight; released when the write completes or its caller gives up.
struct Held {
    shared: Shared,
    scope: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.shared.lock().in_flight.finish(&self.scope);
    }
}

/// The error a caller sees for a refusal: 5xx are server errors, the rest rejections.
pub(crate) fn to_cloud_error(target: &str, e: ApiError) -> CloudError {
    if e.status >= 500 {
        CloudError::Server {
            target: target.to_string(),
            status: e.status,
            message: format!("{}: {}", e.code, e.message),
        }
    } else {
        CloudError::Rejected { target: target.to_string(), status: e.status, code: e.code, message: e.message }
    }
}
