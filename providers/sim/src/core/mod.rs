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
use faults::{Fault, FaultState, FaultWording};
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
            let applies = matches!(fault, None | Some(Fault::TimeoutAfterApply | Fault::Interrupted { .. }));
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
        // A damaged resource an unaudited view read is not this call's.
        let _ = st.store.take_damage();
        // The write's flush, run after the lock is let go (shared with the calls that wrote meanwhile).
        let mut pending = None;
        let (result, status) = match injected(fault.as_ref(), &target) {
            Some((err, status)) => (Err(err), status),
            None => {
                // `write` refuses (and forgets) what was decided on a damaged read.
                let applied = apply(&mut st.store);
                let applied = match applied {
                    Err(e) if st.store.damage.get_mut().is_none() => Err(e),
                    applied => write(&mut st.store).and_then(|flush| {
                        pending = flush;
                        applied
                    }),
                };
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
        st.store.trim();
        st.audit.push(Call { op, method: method.to_string(), target: target.clone(), status });
        drop(st);
        // Durable before the call returns, as every write is.
        if let Some(flush) = pending {
            flush.durable().map_err(|e| to_cloud_error(&target, persist_failed(e)))?;
        }
        result
    }
}

impl Shared {
    /// A long-running write: faults and the request's latency as in [`Shared::call`], then `accept`
    /// under the lock (its checks; `Started(n)` marks the operation begun, with `n` steps to go), then
    /// `step` under the lock until it is done, the write latency spread over the steps, the lock
    /// released between them — so other calls see the operation in progress. Each step is persisted.
    /// A failed step calls `abort` (the operation stops where it is) and is the call's answer.
    /// [`Fault::Interrupted`] stops waiting after its steps and leaves the operation half done.
    pub async fn call_lro(
        &self,
        method: &'static str,
        target: String,
        accept: impl FnOnce(&mut Store) -> Result<Accepted, ApiError>,
        mut step: impl FnMut(&mut Store) -> Result<Step, ApiError>,
        abort: impl FnOnce(&mut Store),
    ) -> Result<(), CloudError> {
        let op = Op::Write;
        let (fault, latency, write_latency) = {
            let mut st = self.lock();
            let fault = st.faults.decide(method, &target, op);
            let faults = st.faults.faults();
            (fault, faults.latency, faults.write_latency)
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let timed_out = |target: &str| CloudError::Timeout { target: target.to_string() };
        let finish = |st: &mut Core, status: u16, result: Result<(), CloudError>| {
            st.audit.push(Call { op, method: method.to_string(), target: target.clone(), status });
            result
        };
        let steps = {
            let mut st = self.lock();
            if let Some((err, status)) = injected(fault.as_ref(), &target) {
                return finish(&mut st, status, Err(err));
            }
            match accept(&mut st.store).and_then(|a| commit(&mut st.store).map(|()| a)) {
                Err(e) => {
                    let status = e.status;
                    let err = if fault.is_some() { timed_out(&target) } else { to_cloud_error(&target, e) };
                    return finish(&mut st, status, Err(err));
                }
                Ok(Accepted::Done(status)) => {
                    let result = if fault.is_some() { Err(timed_out(&target)) } else { Ok(()) };
                    return finish(&mut st, status, result);
                }
                Ok(Accepted::Started(steps)) => steps.max(1),
            }
        };
        let stop_after = match fault {
            Some(Fault::Interrupted { after_steps }) => Some(after_steps),
            _ => None,
        };
        let step_delay = write_latency / u32::try_from(steps).unwrap_or(u32::MAX);
        let mut done = 0;
        loop {
            if stop_after == Some(done) {
                return finish(&mut self.lock(), 408, Err(timed_out(&target)));
            }
            if !step_delay.is_zero() {
                tokio::time::sleep(step_delay).await;
            }
            let mut st = self.lock();
            match step(&mut st.store).and_then(|s| commit(&mut st.store).map(|()| s)) {
                Ok(Step::Progress) => done += 1,
                Ok(Step::Done(status)) => {
                    let result = if fault.is_some() { Err(timed_out(&target)) } else { Ok(()) };
                    return finish(&mut st, status, result);
                }
                Err(e) => {
                    abort(&mut st.store);
                    let status = match commit(&mut st.store) {
                        Ok(()) => e.status,
                        Err(_) => 500,
                    };
                    let err = if fault.is_some() { timed_out(&target) } else { to_cloud_error(&target, e) };
                    return finish(&mut st, status, Err(err));
                }
            }
        }
    }
}

/// What a long-running operation's acceptance found.
pub(crate) enum Accepted {
    /// Nothing to do (e.g. 204: deleting what does not exist).
    Done(u16),
    /// Begun, with about this many steps to go.
    Started(usize),
}

/// What one step of a long-running operation did.
pub(crate) enum Step {
    Progress,
    /// The operation is complete, with this status.
    Done(u16),
}

/// How this cloud words injected faults.
const ARM_FAULTS: FaultWording = FaultWording {
    server_status: 500,
    server_message: "InternalServerError: injected fault",
    forbidden_code: "AuthorizationFailed",
    forbidden_message: "the client does not have authorization to perform this action (injected fault)",
};

/// The answer of a fault that keeps the request from being applied, with its audit status.
fn injected(fault: Option<&Fault>, target: &str) -> Option<(CloudError, u16)> {
    fault?.refusal(target, &ARM_FAULTS)
}

/// Persists the store's changes; a failure is the cloud's 500.
fn commit(store: &mut Store) -> Result<(), ApiError> {
    store.commit().map_err(persist_failed)
}

/// Writes the store's changes, to be flushed after the lock is let go; a failure is the cloud's 500.
fn write(store: &mut Store) -> Result<Option<std::sync::Arc<persist::GroupFlush>>, ApiError> {
    store.write().map_err(persist_failed)
}

fn persist_failed(e: crate::SimError) -> ApiError {
    let message = match e {
        crate::SimError::Corrupt { .. } => format!("the simulated cloud cannot read what it stored: {e}"),
        e => format!("the simulated cloud could not persist the change: {e}"),
    };
    ApiError::new(500, "InternalServerError", message)
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
