//! Flushing a simulated cloud's sled tree: [`GroupFlush`], shared by the calls that wrote meanwhile,
//! or handed to the database's owner (trellis' state). Each cloud module writes its own tree layout
//! (ARM: `arm::persist`; GCE: `gce::persist`; DNS: `dns::persist`) and flushes through this.

use crate::SimError;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Group flush of the store's tree: calls that wrote while a flush was running wait for it to end and
/// then share the next one, which the first of them runs (the same scheme as the state's group commit).
pub(crate) struct GroupFlush {
    tree: sled::Tree,
    /// The database owner's flush, used instead of flushing `tree` (see [`crate::ArmSim::share_flush`]).
    shared: std::sync::OnceLock<Owner>,
    state: Mutex<FlushState>,
    changed: Condvar,
}

#[derive(Default)]
struct FlushState {
    /// Number of the group collecting writers now; groups below `done` are flushed (or failed).
    collecting: u64,
    done: u64,
    flushing: bool,
    /// The last group whose flush failed, with the error.
    failed: Option<(u64, String)>,
    /// Callers waiting for a flush.
    waiting: usize,
}

/// The owner of the database the tree lives in, once it takes over the flushes.
struct Owner {
    flush: crate::SharedFlush,
    /// Calls' writes wait for `flush` ([`GroupFlush::share`]), or the owner's own next flush makes
    /// them durable ([`GroupFlush::leave_to_owner`]).
    calls_wait: bool,
}

impl GroupFlush {
    pub(crate) fn new(tree: sled::Tree) -> GroupFlush {
        GroupFlush { tree, shared: std::sync::OnceLock::new(), state: Mutex::default(), changed: Condvar::new() }
    }

    /// Flushes through `flush` (the database owner's) from now on; the first owner given stays.
    pub(crate) fn share(&self, flush: crate::SharedFlush) {
        let _ = self.shared.set(Owner { flush, calls_wait: true });
    }

    /// Like [`GroupFlush::share`], but [`GroupFlush::durable`] (a call's write) returns at once: the
    /// owner flushes everything written to its database before it acknowledges anything that follows
    /// the call (trellis: the node's state commit). [`GroupFlush::flush`] still runs `flush`.
    pub(crate) fn leave_to_owner(&self, flush: crate::SharedFlush) {
        let _ = self.shared.set(Owner { flush, calls_wait: false });
    }

    /// Returns once everything written to the tree before the call is flushed: the owner's flush if
    /// there is one, else the tree's own, grouped ([`GroupFlush::durable_with`]). Blocks as
    /// [`GroupFlush::durable`] does.
    pub(crate) fn flush(&self) -> Result<(), SimError> {
        let wait = || match self.shared.get() {
            Some(owner) => (owner.flush)().map_err(SimError::Storage),
            None => self.durable_with(|| self.tree.flush().map(drop).map_err(|e| e.to_string())),
        };
        leave_worker_and(wait)
    }

    fn lock(&self) -> MutexGuard<'_, FlushState> {
        // Every change to the state is a single step: a panic elsewhere leaves it consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call's write: returns once everything written to the tree before the call is flushed
    /// ([`GroupFlush::flush`]) — or at once when the owner makes it durable with its own next flush
    /// ([`GroupFlush::leave_to_owner`]).
    ///
    /// The wait blocks its thread (a flush, or the flush of the group it joined). On a multi-threaded
    /// runtime (the binary's) the worker thread first hands its other tasks to another thread
    /// (`block_in_place`): otherwise every worker thread could sit in a flush wait — two on a 2-core
    /// machine —, no other call could write meanwhile, and groups would stay as small as the thread
    /// count. On a current-thread runtime, or outside one, it just waits.
    pub(crate) fn durable(&self) -> Result<(), SimError> {
        match self.shared.get() {
            Some(Owner { calls_wait: false, .. }) => Ok(()),
            _ => self.flush(),
        }
    }

    /// [`GroupFlush::durable`] with `flush` as the flush a leader runs.
    fn durable_with(&self, flush: impl Fn() -> Result<(), String>) -> Result<(), SimError> {
        let mut st = self.lock();
        let mine = st.collecting;
        loop {
            if st.done > mine {
                return match &st.failed {
                    Some((group, e)) if *group == mine => Err(SimError::Storage(e.clone())),
                    _ => Ok(()),
                };
            }
            if !st.flushing {
                // No flush runs, so `done == collecting == mine`: this caller flushes its own group.
                st.collecting += 1;
                st.flushing = true;
                drop(st);
                // A panic in the flush would leave `flushing` set and every later writer waiting.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&flush))
                    .unwrap_or_else(|_| Err("the flush failed unexpectedly".to_string()));
                st = self.lock();
                st.flushing = false;
                st.done = mine + 1;
                if let Err(e) = result {
                    st.failed = Some((mine, e));
                }
                self.changed.notify_all();
                continue;
            }
            st.waiting += 1;
            st = self.changed.wait(st).unwrap_or_else(PoisonError::into_inner);
            st.waiting -= 1;
        }
    }
}

/// Runs `wait` (which blocks on a flush); on a multi-threaded runtime the worker thread first hands
/// its other tasks to another thread (see [`GroupFlush::durable`]).
fn leave_worker_and<T>(wait: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn flusher() -> GroupFlush {
        let db = sled::Config::new().temporary(true).open().unwrap();
        GroupFlush::new(db.open_tree("t").unwrap())
    }

    /// Writers that arrive while a flush runs wait for it and then share one flush; each returns only
    /// after a flush that began after it arrived.
    #[test]
    fn regression_concurrent_writes_share_one_flush_of_the_simulated_cloud() {
        let group = flusher();
        let flushes = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let leader = s.spawn(|| {
                group.durable_with(|| {
                    flushes.fetch_add(1, Ordering::SeqCst);
                    while group.lock().waiting < 5 {
                        std::thread::yield_now();
                    }
                    Ok(())
                })
            });
            while !group.lock().flushing {
                std::thread::yield_now();
            }
            let members: Vec<_> = (0..5)
                .map(|_| {
                    let (group, flushes) = (&group, &flushes);
                    s.spawn(move || {
                        group.durable_with(|| {
                            flushes.fetch_add(1, Ordering::SeqCst);
                            Err("disk full".to_string())
                        })
                    })
                })
                .collect();
            assert!(leader.join().unwrap().is_ok());
            for member in members {
                let err = member.join().unwrap().unwrap_err().to_string();
                assert!(err.contains("disk full"), "{err}");
            }
        });
        assert_eq!(flushes.load(Ordering::SeqCst), 2, "one flush for the five that waited");
        // A later write gets a flush of its own, and a failed group's error is not its.
        assert!(group.durable().is_ok());
    }
}
