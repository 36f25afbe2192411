//! The store in a `sled::Tree`.
//!
//! Layout of the tree (all values JSON):
//! - `<lowercased ARM id>` → `{"value": <resource as stored>, "origin": "world"|"api", "seq": n}`;
//! - `#subscription` → the subscription id the simulated cloud belongs to;
//! - `#clock` → the counter behind etags and creation order;
//! - `#addresses` → how many public IP addresses the simulated cloud has allocated.
//!
//! Every change is noted as dirty; [`Store::commit`] writes the dirty keys in one batch and flushes.
//! Cloud calls use [`Store::write`] instead: the batch is written under the core's lock, and the flush
//! that makes it durable runs after the lock is released, shared by every call that wrote meanwhile
//! ([`GroupFlush`]); each call still returns only after a flush that began after its write.

use crate::arm::ArmId;
use crate::core::store::{Entry, Origin, Store, DEFAULT_SUBSCRIPTION};
use crate::SimError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

const SUBSCRIPTION_KEY: &str = "#subscription";
const CLOCK_KEY: &str = "#clock";
const ADDRESSES_KEY: &str = "#addresses";

#[derive(Serialize, Deserialize)]
struct Persisted {
    value: Value,
    origin: Origin,
    seq: u64,
}

impl Store {
    /// Loads the store from `tree`. Keys that are neither ids nor metadata (an audit log kept in the
    /// same tree, say) are ignored.
    pub fn open(tree: sled::Tree, subscription: Option<String>) -> Result<Store, SimError> {
        let mut store = Store::in_memory(DEFAULT_SUBSCRIPTION);
        for item in tree.iter() {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            let corrupt = |detail: String| SimError::Corrupt { key: key.clone(), detail };
            if key == SUBSCRIPTION_KEY {
                store.subscription = serde_json::from_slice(&v).map_err(|e| corrupt(e.to_string()))?;
            } else if key == CLOCK_KEY {
                store.clock = serde_json::from_slice(&v).map_err(|e| corrupt(e.to_string()))?;
            } else if key == ADDRESSES_KEY {
                store.addresses = serde_json::from_slice(&v).map_err(|e| corrupt(e.to_string()))?;
            } else if key.starts_with('/') {
                let p: Persisted = serde_json::from_slice(&v).map_err(|e| corrupt(e.to_string()))?;
                let id_text = p.value.get("id").and_then(Value::as_str).unwrap_or(&key);
                let id = ArmId::parse(id_text).map_err(corrupt)?;
                if id.key() != key {
                    return Err(corrupt(format!("the stored resource has id {id}")));
                }
                store.index(&Entry::new(id, p.value, p.origin, p.seq));
            }
        }
        store.flusher = Some(Arc::new(GroupFlush::new(tree.clone())));
        store.tree = Some(tree);
        if let Some(sub) = subscription {
            store.set_subscription(&sub);
        }
        store.commit()?;
        Ok(store)
    }

    /// Writes every change since the last commit to the tree in one batch and flushes it.
    /// Without a tree (in-memory store) this only forgets the changes.
    pub fn commit(&mut self) -> Result<(), SimError> {
        match self.write()? {
            Some(flush) => flush.durable(),
            None => Ok(()),
        }
    }

    /// Flushes through `flush` from now on (see [`crate::ArmSim::share_flush`]); an in-memory store has
    /// nothing to flush.
    pub fn share_flush(&mut self, flush: crate::SharedFlush) {
        if let Some(flusher) = &self.flusher {
            let _ = flusher.shared.set(flush);
        }
    }

    /// Writes every change since the last commit to the tree in one batch, without flushing it: the
    /// caller must call [`GroupFlush::durable`] on the answer (after letting go of the core's lock, so
    /// that other calls can write meanwhile and share the flush). `None`: nothing to flush (no change,
    /// or an in-memory store, which only forgets the changes).
    pub fn write(&mut self) -> Result<Option<Arc<GroupFlush>>, SimError> {
        let Some(tree) = &self.tree else {
            self.dirty.clear();
            self.meta_dirty = false;
            return Ok(None);
        };
        if self.dirty.is_empty() && !self.meta_dirty {
            return Ok(None);
        }
        let mut batch = sled::Batch::default();
        for key in &self.dirty {
            match self.entries.get(key) {
                Some(e) => {
                    let p = Persisted { value: e.value.clone(), origin: e.origin, seq: e.seq };
                    batch.insert(key.as_bytes(), serde_json::to_vec(&p).expect("JSON values always serialise"));
                }
                None => batch.remove(key.as_bytes()),
            }
        }
        if self.meta_dirty {
            batch.insert(SUBSCRIPTION_KEY, serde_json::to_vec(&self.subscription).expect("a string serialises"));
            batch.insert(CLOCK_KEY, serde_json::to_vec(&self.clock).expect("a number serialises"));
            batch.insert(ADDRESSES_KEY, serde_json::to_vec(&self.addresses).expect("a number serialises"));
        }
        tree.apply_batch(batch)?;
        self.dirty.clear();
        self.meta_dirty = false;
        Ok(self.flusher.clone())
    }
}

/// Group flush of the store's tree: calls that wrote while a flush was running wait for it to end and
/// then share the next one, which the first of them runs (the same scheme as the state's group commit).
pub(crate) struct GroupFlush {
    tree: sled::Tree,
    /// The database owner's flush, used instead of flushing `tree` (see [`crate::ArmSim::share_flush`]).
    shared: std::sync::OnceLock<crate::SharedFlush>,
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

impl GroupFlush {
    fn new(tree: sled::Tree) -> GroupFlush {
        GroupFlush { tree, shared: std::sync::OnceLock::new(), state: Mutex::default(), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, FlushState> {
        // Every change to the state is a single step: a panic elsewhere leaves it consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns once everything written to the tree before the call is flushed.
    pub(crate) fn durable(&self) -> Result<(), SimError> {
        if let Some(shared) = self.shared.get() {
            return shared().map_err(SimError::Storage);
        }
        self.durable_with(|| self.tree.flush().map(drop).map_err(|e| e.to_string()))
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
