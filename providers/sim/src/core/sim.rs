//! The call pipeline every simulated cloud shares: [`Sim`] over a [`SimCloud`].
//!
//! A cloud module (ARM, GCE, DNS) implements [`SimCloud`] — its store, where the store is written,
//! how its injected faults and refusals look — and keeps its ids, rules and REST surface to itself.
//! [`Sim`] does the rest once, for every call: the fault decision, the latency (and, for a write that
//! holds a serialisation scope, the refusal of a second write into it), the cloud's rule under the
//! lock, the write of the store's changes, the audit entry, and the flush that makes the write
//! durable before the call returns. Preconditions are checked by the cloud's rule, under the same
//! lock as the write, so a failed one changes nothing (ARM's with [`crate::core::precondition`]).
//!
//! # Storage failures
//! One policy for every cloud: a storage failure is never a panic and never a silent success. When
//! the store's changes cannot be written (a sled error, a damaged stored resource a read met, the
//! database owner's flush failing), the call answers the cloud's 500 ([`CloudError::Server`], status
//! 500, `<the cloud's server error code>: the simulated cloud could not persist the change: <why>` —
//! or `… cannot read what it stored: <why>` for a damaged resource, whose text names the key and
//! says how to rebuild), whatever the rule answered and whatever fault was injected: a caller told
//! "timeout" might think the write may have succeeded. A failure found under the lock is audited
//! with status 500; a failed flush (after the lock is let go) leaves the entry the rule's status.
//! What was not written stays noted as changed and is written with the next write.

use super::audit::{AuditFile, AuditLog};
use super::faults::{Fault, FaultState, FaultWording, Faults};
use super::latency::{self, InFlight};
use super::persist::GroupFlush;
use super::ApiError;
use crate::SimError;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use trellis_planner::cloud::{Call, CloudError, Op};

/// The API-specific part of a simulated cloud.
pub(crate) trait SimCloud: 'static {
    /// The cloud's resources and counters, which its rules read and change.
    type Store: Send + 'static;
    /// Where the store is written, if it is not the store's own business (ARM's store writes
    /// itself: `()`; GCE and DNS: the tree beside the store, `None` in memory).
    type Persist: Send + 'static;
    /// How the cloud words injected faults.
    const FAULTS: FaultWording;
    /// The error code of the cloud's 500 (a storage failure).
    const SERVER_ERROR_CODE: &'static str;

    /// Writes the store's changes (under the lock); the answer is the flush that makes them durable,
    /// run after the lock is let go. `None`: nothing to flush.
    fn write(store: &mut Self::Store, persist: &Self::Persist) -> Result<Option<Arc<GroupFlush>>, SimError>;

    /// The cloud's refusal as the caller's error; `sent` is the version a conditional write carried.
    fn refusal(target: &str, e: ApiError, sent: Option<&str>) -> CloudError;

    /// Reads what `persist` keeps into the store. Called once, under the lock, by the first use of
    /// the store ([`Sim::lock`]) of a cloud made with [`Sim::unread`]: not at open, so a command that
    /// never uses this cloud never reads it. A failure leaves the store unusable: every write (and so
    /// every call) answers it as a storage failure. Default: nothing to read.
    fn load(_store: &mut Self::Store, _persist: &Self::Persist) -> Result<(), SimError> {
        Ok(())
    }

    /// Called under the lock before the rule (ARM forgets a damaged read of an unaudited view).
    fn before_rule(_store: &mut Self::Store) {}

    /// Called under the lock at the end of every call (ARM trims its read cache).
    fn after_call(_store: &mut Self::Store) {}
}

/// A rule's answer: the value, the HTTP status, and calls to audit after the call's own entry (the
/// DNS controller's zone-record writes).
pub(crate) type Answer<T> = (T, u16, Vec<Call>);

/// A cloud's answer to a write into a scope another write holds: given the store, the scope and the
/// number of the operation holding it.
pub(crate) type Refusal<S> = fn(&<S as SimCloud>::Store, &str, u64) -> ApiError;

/// Everything a simulated cloud keeps, behind one lock.
pub(crate) struct Core<S: SimCloud> {
    pub store: S::Store,
    pub persist: S::Persist,
    pub audit: AuditLog,
    pub faults: FaultState,
    pub in_flight: InFlight,
    /// The store is not read from `persist` yet ([`SimCloud::load`], by the first [`Sim::lock`]).
    unread: bool,
    /// Why reading the store failed: every write answers it.
    unreadable: Option<SimError>,
}

impl<S: SimCloud> Core<S> {
    /// Writes the store's changes (see [`SimCloud::write`]).
    pub fn write(&mut self) -> Result<Option<Arc<GroupFlush>>, SimError> {
        if let Some(e) = &self.unreadable {
            return Err(e.clone());
        }
        S::write(&mut self.store, &self.persist)
    }

    /// Writes the store's changes and flushes them, under the lock (a long-running operation's
    /// steps): the owner's flush when it took them over, whether or not calls wait for it.
    fn commit(&mut self) -> Result<(), SimError> {
        match self.write()? {
            Some(flush) => flush.flush(),
            None => Ok(()),
        }
    }
}

/// A simulated cloud: its [`Core`] behind a lock, and the call pipeline. Clones share the cloud.
pub(crate) struct Sim<S: SimCloud> {
    inner: Arc<Mutex<Core<S>>>,
}

impl<S: SimCloud> Clone for Sim<S> {
    fn clone(&self) -> Sim<S> {
        Sim { inner: Arc::clone(&self.inner) }
    }
}

impl<S: SimCloud> Sim<S> {
    /// A cloud whose store is all there.
    pub fn new(store: S::Store, persist: S::Persist) -> Sim<S> {
        Sim::with(store, persist, false)
    }

    /// A cloud whose store is read from `persist` when first used ([`SimCloud::load`]).
    pub fn unread(store: S::Store, persist: S::Persist) -> Sim<S> {
        Sim::with(store, persist, true)
    }

    fn with(store: S::Store, persist: S::Persist, unread: bool) -> Sim<S> {
        let core = Core {
            store,
            persist,
            audit: AuditLog::default(),
            faults: FaultState::default(),
            in_flight: InFlight::default(),
            unread,
            unreadable: None,
        };
        Sim { inner: Arc::new(Mutex::new(core)) }
    }

    /// The cloud, its store read first if it was not yet ([`SimCloud::load`]).
    pub fn lock(&self) -> MutexGuard<'_, Core<S>> {
        let mut guard = self.lock_unread();
        if std::mem::take(&mut guard.unread) {
            let core = &mut *guard;
            if let Err(e) = S::load(&mut core.store, &core.persist) {
                core.unreadable = Some(e);
            }
        }
        guard
    }

    /// The cloud without reading its store: for what does not look at it (faults, the audit log,
    /// the flush, what the store read at open: GCE's project and quotas).
    pub fn lock_unread(&self) -> MutexGuard<'_, Core<S>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the store's changes outside a call (world sync, quotas) and waits until they are durable.
    pub fn commit(&self) -> Result<(), SimError> {
        let flush = self.lock().write()?;
        match flush {
            Some(flush) => flush.durable(),
            None => Ok(()),
        }
    }

    /// Installs `faults` (replacing the previous ones) and restarts their call counting.
    pub fn set_faults(&self, faults: Faults) {
        self.lock_unread().faults = FaultState::new(faults);
    }

    /// The faults installed now.
    pub fn faults(&self) -> Faults {
        self.lock_unread().faults.faults().clone()
    }

    /// How many faults were injected since the faults were installed.
    pub fn faults_fired(&self) -> usize {
        self.lock_unread().faults.fired()
    }

    /// Every call answered so far.
    pub fn calls(&self) -> Vec<Call> {
        self.lock_unread().audit.calls().to_vec()
    }

    /// The calls made after [`Sim::mark`] returned `mark`.
    pub fn calls_since(&self, mark: usize) -> Vec<Call> {
        self.lock_unread().audit.since(mark)
    }

    /// A position in the audit log.
    pub fn mark(&self) -> usize {
        self.lock_unread().audit.len()
    }

    /// Appends the calls not persisted yet to `file` and syncs it (see `AuditLog::persist`).
    pub fn persist_audit(&self, file: &AuditFile) -> Result<usize, SimError> {
        self.lock_unread().audit.persist(file)
    }

    /// Keeps the audit log in `file` as the calls are made (see `AuditLog::keep`).
    pub fn keep_audit(&self, file: AuditFile) -> Result<usize, SimError> {
        self.lock_unread().audit.keep(file)
    }

    /// One cloud call: fault decision and latency, then `apply` under the lock, the write of its
    /// changes, the audit entry, and the flush. `sent` is the version a conditional write carried.
    pub async fn call<T>(
        &self,
        method: &'static str,
        target: String,
        sent: Option<&str>,
        apply: impl FnOnce(&mut S::Store) -> Result<(T, u16), ApiError>,
    ) -> Result<T, CloudError> {
        self.call_followed(method, target, sent, None, |store| {
            apply(store).map(|(value, status)| (value, status, Vec::new()))
        })
        .await
    }

    /// [`Sim::call`] for a write that holds `scope` while it is in flight (its latency): a write
    /// arriving meanwhile in the same scope is answered with the [`Refusal`] at once, not applied.
    pub async fn call_in<T>(
        &self,
        method: &'static str,
        target: String,
        scope: Option<(String, Refusal<S>)>,
        apply: impl FnOnce(&mut S::Store) -> Result<(T, u16), ApiError>,
    ) -> Result<T, CloudError> {
        self.call_followed(method, target, None, scope, |store| {
            apply(store).map(|(value, status)| (value, status, Vec::new()))
        })
        .await
    }

    /// The pipeline itself: [`Sim::call_in`] whose rule also answers calls to audit after its own.
    pub async fn call_followed<T>(
        &self,
        method: &'static str,
        target: String,
        sent: Option<&str>,
        scope: Option<(String, Refusal<S>)>,
        apply: impl FnOnce(&mut S::Store) -> Result<Answer<T>, ApiError>,
    ) -> Result<T, CloudError> {
        let op = if matches!(method, "GET" | "LIST") { Op::Read } else { Op::Write };
        let (fault, delay, _held) = {
            let mut st = self.lock();
            let fault = st.faults.decide(method, &target, op);
            let applies = matches!(fault, None | Some(Fault::TimeoutAfterApply | Fault::Interrupted { .. }));
            let mut held = None;
            if let Some((scope, refusal)) = scope.filter(|_| applies) {
                if let Some(holder) = st.in_flight.holder(&scope) {
                    let e = refusal(&st.store, &scope, holder);
                    let status = e.status;
                    st.audit.push(Call { op, method: method.to_string(), target: target.clone(), status });
                    return Err(S::refusal(&target, e, sent));
                }
                st.in_flight.start(&scope);
                held = Some(Held { sim: self.clone(), scope });
            }
            (fault, latency::delay(st.faults.faults(), op), held)
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let mut guard = self.lock();
        let st = &mut *guard;
        S::before_rule(&mut st.store);
        // The write's flush, run after the lock is let go (shared with the calls that wrote meanwhile).
        let mut pending = None;
        let mut followers = Vec::new();
        let (result, status) = match fault.as_ref().and_then(|f| f.refusal(&target, &S::FAULTS)) {
            Some((err, status)) => (Err(err), status),
            None => {
                let applied = apply(&mut st.store);
                // Written whatever the rule answered (a refused rule changes nothing); a write that
                // fails is the call's answer (see the module docs).
                match st.write() {
                    Err(e) => {
                        if let Ok((_, _, calls)) = &applied {
                            followers.clone_from(calls);
                        }
                        (Err(storage_failure::<S>(&target, e)), 500)
                    }
                    Ok(flush) => {
                        pending = flush;
                        match applied {
                            Ok((value, status, calls)) => {
                                followers = calls;
                                match fault {
                                    Some(_) => (Err(CloudError::Timeout { target: target.clone() }), status),
                                    None => (Ok(value), status),
                                }
                            }
                            Err(e) => {
                                let status = e.status;
                                let err = match fault {
                                    Some(_) => CloudError::Timeout { target: target.clone() },
                                    None => S::refusal(&target, e, sent),
                                };
                                (Err(err), status)
                            }
                        }
                    }
                }
            }
        };
        S::after_call(&mut st.store);
        st.audit.push(Call { op, method: method.to_string(), target: target.clone(), status });
        for call in followers {
            st.audit.push(call);
        }
        // Durable before the call returns, as every write is.
        if let Some(flush) = pending {
            drop(guard);
            flush.durable().map_err(|e| storage_failure::<S>(&target, e))?;
        }
        result
    }

    /// A long-running write: faults and the request's latency as in [`Sim::call`], then `accept`
    /// under the lock (its checks; `Started(n)` marks the operation begun, with `n` steps to go), then
    /// `step` under the lock until it is done, the write latency spread over the steps, the lock
    /// released between them — so other calls see the operation in progress. Each step is persisted.
    /// A failed step calls `abort` (the operation stops where it is) and is the call's answer.
    /// [`Fault::Interrupted`] stops waiting after its steps and leaves the operation half done.
    pub async fn call_lro(
        &self,
        method: &'static str,
        target: String,
        accept: impl FnOnce(&mut S::Store) -> Result<Accepted, ApiError>,
        mut step: impl FnMut(&mut S::Store) -> Result<Step, ApiError>,
        abort: impl FnOnce(&mut S::Store),
    ) -> Result<(), CloudError> {
        let op = Op::Write;
        let (fault, delay, write_latency) = {
            let mut st = self.lock();
            let fault = st.faults.decide(method, &target, op);
            let faults = st.faults.faults();
            (fault, faults.latency, faults.write_latency)
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let timed_out = |target: &str| CloudError::Timeout { target: target.to_string() };
        let finish = |st: &mut Core<S>, status: u16, result: Result<(), CloudError>| {
            st.audit.push(Call { op, method: method.to_string(), target: target.clone(), status });
            result
        };
        let steps = {
            let mut st = self.lock();
            if let Some((err, status)) = fault.as_ref().and_then(|f| f.refusal(&target, &S::FAULTS)) {
                return finish(&mut st, status, Err(err));
            }
            let accepted = accept(&mut st.store);
            if let Err(e) = st.commit() {
                return finish(&mut st, 500, Err(storage_failure::<S>(&target, e)));
            }
            match accepted {
                Err(e) => {
                    let status = e.status;
                    let err = if fault.is_some() { timed_out(&target) } else { S::refusal(&target, e, None) };
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
            let failure = match (step(&mut st.store), st.commit()) {
                (Ok(Step::Progress), Ok(())) => {
                    done += 1;
                    continue;
                }
                (Ok(Step::Done(status)), Ok(())) => {
                    let result = if fault.is_some() { Err(timed_out(&target)) } else { Ok(()) };
                    return finish(&mut st, status, result);
                }
                (_, Err(e)) => Failure::Storage(e),
                (Err(e), Ok(())) => Failure::Refused(e),
            };
            // The operation stops where it is; a storage failure is the answer, else the step's refusal.
            abort(&mut st.store);
            let failure = match (failure, st.commit()) {
                (Failure::Refused(_), Err(e)) => Failure::Storage(e),
                (failure, _) => failure,
            };
            return match failure {
                Failure::Storage(e) => finish(&mut st, 500, Err(storage_failure::<S>(&target, e))),
                Failure::Refused(e) => {
                    let status = e.status;
                    let err = if fault.is_some() { timed_out(&target) } else { S::refusal(&target, e, None) };
                    finish(&mut st, status, Err(err))
                }
            };
        }
    }
}

/// Why a step of a long-running operation stopped it.
enum Failure {
    Refused(ApiError),
    Storage(SimError),
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

/// A storage failure as the call's answer: the cloud's 500 (see the module docs).
pub(crate) fn storage_failure<S: SimCloud>(target: &str, e: SimError) -> CloudError {
    let message = match e {
        SimError::Corrupt { .. } => format!("the simulated cloud cannot read what it stored: {e}"),
        e => format!("the simulated cloud could not persist the change: {e}"),
    };
    S::refusal(target, ApiError::new(500, S::SERVER_ERROR_CODE, message), None)
}

/// A scope held by a write in flight; released when the write completes or its caller gives up.
struct Held<S: SimCloud> {
    sim: Sim<S>,
    scope: String,
}

impl<S: SimCloud> Drop for Held<S> {
    fn drop(&mut self) {
        self.sim.lock_unread().in_flight.finish(&self.scope);
    }
}
