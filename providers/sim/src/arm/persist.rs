//! ARM's store in a `sled::Tree`.
//!
//! Layout of the tree (all values JSON unless said otherwise):
//! - `<lowercased ARM id>` → `{"value": <resource as stored>, "origin": "world"|"api", "seq": n}`;
//! - `#subscription` → the subscription id the simulated cloud belongs to;
//! - `#clock` → the counter behind etags and creation order;
//! - `#addresses` → how many public IP addresses the simulated cloud has allocated;
//! - `#ref <target key>\0<referrer key>` → the referrer key (raw bytes): the reverse index of
//!   references, one key per reference (a resource's links and what its IP configurations use);
//! - `#refs` → the `#clock` value at the last write that kept the reverse index.
//!
//! Opening reads the metadata only; a resource is read when a call first asks for it
//! ([`Store::get`]), the referrers of a resource when a call first asks for them, so opening costs
//! the same whatever the cloud's size. A tree whose `#refs` is not its `#clock` — written before the
//! index existed, or since by a trellis that does not keep it (every write ticks the clock) — is read
//! whole at open, as every open did before, and its index is built in memory; the next write stores
//! it (an open writes nothing: a plan leaves the state dir as it was), so it is read whole only until
//! then.
//!
//! Every change is noted as dirty; [`Store::commit`] writes the dirty keys in one batch and flushes.
//! Cloud calls use [`Store::write`] instead: the batch is written under the core's lock, and the flush
//! that makes it durable runs after the lock is released, shared by every call that wrote meanwhile
//! ([`GroupFlush`]); each call still returns only after a flush that began after its write.
//!
//! A store that leaves its flushes to the database's owner ([`Store::leave_flushes_to_owner`]) does
//! not write a batch per call either: a write's changes go to [`DeferredWrites`], kept in memory, and
//! the owner writes them to the tree in one batch right before each of its flushes (trellis: one per
//! commit group instead of one per cloud write — sled writes its log buffer to the device around every
//! batch). Until then the store reads the tree through them ([`Backing`]): a read sees every write,
//! applied to the tree or not.

use crate::arm::store::{link_targets, Entry, Store, DEFAULT_SUBSCRIPTION};
use crate::arm::ArmId;
use crate::core::persist::GroupFlush;
use crate::core::Origin;
use crate::SimError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

const SUBSCRIPTION_KEY: &str = "#subscription";
const CLOCK_KEY: &str = "#clock";
const ADDRESSES_KEY: &str = "#addresses";
const REFS_KEY: &str = "#refs";
const REF_PREFIX: &str = "#ref ";

#[derive(Deserialize)]
struct Persisted {
    value: Value,
    origin: Origin,
    seq: u64,
}

/// [`Persisted`] as written, borrowing the entry's value.
#[derive(Serialize)]
struct PersistedRef<'a> {
    value: &'a Value,
    origin: Origin,
    seq: u64,
}

/// The key of one reference in the reverse index: `#ref <target>\0<referrer>`.
fn ref_key(target: &str, referrer: &str) -> Vec<u8> {
    let mut key = ref_prefix(target);
    key.extend_from_slice(referrer.as_bytes());
    key
}

fn ref_prefix(target: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(REF_PREFIX.len() + target.len() + 1);
    key.extend_from_slice(REF_PREFIX.as_bytes());
    key.extend_from_slice(target.as_bytes());
    key.push(0);
    key
}

/// The store's tree as its reads see it: the tree, overlaid with the writes not applied to it yet when
/// the store defers them ([`DeferredWrites`]).
#[derive(Clone)]
pub(crate) struct Backing {
    tree: sled::Tree,
    deferred: Option<Arc<DeferredWrites>>,
}

/// An item of a prefix scan.
type Item = sled::Result<(sled::IVec, sled::IVec)>;

impl Backing {
    fn new(tree: sled::Tree) -> Backing {
        Backing { tree, deferred: None }
    }

    fn get(&self, key: impl AsRef<[u8]>) -> sled::Result<Option<sled::IVec>> {
        let Some(deferred) = &self.deferred else { return self.tree.get(key) };
        // Held while the tree is read: the owner's write of the deferred batch is not half seen.
        let writes = deferred.lock();
        match writes.get(key.as_ref()) {
            Some(written) => Ok(written.clone()),
            None => self.tree.get(key),
        }
    }

    /// The items whose key starts with `prefix`, in key order.
    pub(crate) fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> Box<dyn Iterator<Item = Item> + '_> {
        let prefix = prefix.as_ref();
        let Some(deferred) = &self.deferred else { return Box::new(self.tree.scan_prefix(prefix)) };
        let writes = deferred.lock();
        let mut merged = BTreeMap::new();
        let mut failed = Vec::new();
        for item in self.tree.scan_prefix(prefix) {
            match item {
                Ok((k, v)) => drop(merged.insert(k, v)),
                Err(e) => failed.push(Err(e)),
            }
        }
        let written = writes.range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded));
        for (k, v) in written.take_while(|(k, _)| k.starts_with(prefix)) {
            match v {
                Some(v) => drop(merged.insert(k.clone(), v.clone())),
                None => drop(merged.remove(k)),
            }
        }
        Box::new(failed.into_iter().chain(merged.into_iter().map(Ok)))
    }

    /// Writes `changes` (key → value, `None`: removed): to the deferred writes if the store defers
    /// them (the owner writes them to the tree before its next flush), else to the tree in one batch.
    fn apply(&self, changes: BTreeMap<sled::IVec, Option<sled::IVec>>) -> sled::Result<()> {
        match &self.deferred {
            Some(deferred) => {
                deferred.lock().extend(changes);
                Ok(())
            }
            None => self.tree.apply_batch(batch_of(&changes)),
        }
    }
}

fn batch_of(changes: &BTreeMap<sled::IVec, Option<sled::IVec>>) -> sled::Batch {
    let mut batch = sled::Batch::default();
    for (k, v) in changes {
        match v {
            Some(v) => batch.insert(k.clone(), v.clone()),
            None => batch.remove(k.clone()),
        }
    }
    batch
}

/// The writes of a simulated cloud that leaves its flushes to the database's owner, not written to
/// its tree yet (see the module docs). The owner calls [`DeferredWrites::write`] before each of its
/// flushes, so that the flush makes every write made before it durable.
pub struct DeferredWrites {
    /// `None` for a cloud that lives in memory only: nothing is deferred, nothing to write.
    tree: Option<sled::Tree>,
    writes: Mutex<BTreeMap<sled::IVec, Option<sled::IVec>>>,
}

impl DeferredWrites {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<sled::IVec, Option<sled::IVec>>> {
        // Every change to the map is a single step: a panic elsewhere leaves it consistent.
        self.writes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tree the writes go to; `None` for a cloud in memory (nothing is ever deferred).
    pub fn tree(&self) -> Option<&sled::Tree> {
        self.tree.as_ref()
    }

    /// The writes deferred now (key → value, `None`: removed). Reads go on seeing them until
    /// [`DeferredWrites::stored`] says they are in the tree.
    pub fn pending(&self) -> Vec<(sled::IVec, Option<sled::IVec>)> {
        self.lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// `writes` (an answer of [`DeferredWrites::pending`]) were written to the tree by its owner (in
    /// the owner's transaction): each still deferred with the same value is forgotten; one written
    /// again since stays deferred.
    pub fn stored(&self, writes: &[(sled::IVec, Option<sled::IVec>)]) {
        let mut deferred = self.lock();
        for (key, value) in writes {
            if deferred.get(key) == Some(value) {
                deferred.remove(key);
            }
        }
    }

    /// Writes every deferred write to the tree, in one batch (not flushed: the caller flushes next).
    /// Calls may run at any time, from any thread; a failure keeps the writes for the next call.
    pub fn write(&self) -> Result<(), SimError> {
        let Some(tree) = &self.tree else { return Ok(()) };
        let mut writes = self.lock();
        if writes.is_empty() {
            return Ok(());
        }
        tree.apply_batch(batch_of(&writes))?;
        writes.clear();
        Ok(())
    }
}

/// The stored resource with key `key`.
pub(crate) fn load(tree: &Backing, key: &str) -> Result<Option<Entry>, SimError> {
    let Some(v) = tree.get(key.as_bytes())? else { return Ok(None) };
    entry_of(key, &v).map(Some)
}

/// The stored resource `v` at key `key`.
pub(crate) fn entry_of(key: &str, v: &[u8]) -> Result<Entry, SimError> {
    let corrupt = |detail: String| SimError::Corrupt { key: key.to_string(), detail };
    let p: Persisted = serde_json::from_slice(v).map_err(|e| corrupt(e.to_string()))?;
    let id_text = p.value.get("id").and_then(Value::as_str).unwrap_or(key);
    let id = ArmId::parse(id_text).map_err(corrupt)?;
    if id.key() != key {
        return Err(corrupt(format!("the stored resource has id {id}")));
    }
    Ok(Entry::new(id, p.value, p.origin, p.seq))
}

/// The keys of the resources that refer to `target`, from the reverse index.
pub(crate) fn load_referrers(tree: &Backing, target: &str) -> Result<BTreeSet<String>, SimError> {
    let prefix = ref_prefix(target);
    let mut referrers = BTreeSet::new();
    for item in tree.scan_prefix(&prefix) {
        let (k, v) = item?;
        // The value is the referrer: a key of another target that merely starts with this one's bytes
        // (`<target>\0…` as a target) is not `prefix + value`.
        if k.len() == prefix.len() + v.len() && k.ends_with(&v) {
            referrers.insert(String::from_utf8_lossy(&v).into_owned());
        }
    }
    Ok(referrers)
}

fn meta<T: serde::de::DeserializeOwned>(tree: &sled::Tree, key: &str) -> Result<Option<T>, SimError> {
    match tree.get(key)? {
        Some(v) => serde_json::from_slice(&v)
            .map(Some)
            .map_err(|e| SimError::Corrupt { key: key.to_string(), detail: e.to_string() }),
        None => Ok(None),
    }
}

impl Store {
    /// Opens the store kept in `tree`: reads its metadata, not its resources (see the module docs).
    /// Keys that are neither ids, metadata nor the reverse index (an audit log kept in the same tree,
    /// say) are ignored.
    pub fn open(tree: sled::Tree, subscription: Option<String>) -> Result<Store, SimError> {
        let mut store = Store::in_memory(DEFAULT_SUBSCRIPTION);
        store.referrers_complete = false;
        if let Some(sub) = meta(&tree, SUBSCRIPTION_KEY)? {
            store.subscription = sub;
        }
        store.clock = meta(&tree, CLOCK_KEY)?.unwrap_or(0);
        store.addresses = meta(&tree, ADDRESSES_KEY)?.unwrap_or(0);
        if meta::<u64>(&tree, REFS_KEY)? != Some(store.clock) {
            // Not written here (a plan writes nothing): the next write stores it whole.
            store.index_all(&Backing::new(tree.clone()))?;
        }
        store.flusher = Some(Arc::new(GroupFlush::new(tree.clone())));
        store.tree = Some(Backing::new(tree));
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
            Some(flush) => flush.flush(),
            None => Ok(()),
        }
    }

    /// Flushes through `flush` from now on (see [`crate::ArmSim::share_flush`]); an in-memory store has
    /// nothing to flush.
    pub fn share_flush(&mut self, flush: crate::SharedFlush) {
        if let Some(flusher) = &self.flusher {
            flusher.share(flush);
        }
    }

    /// Like [`Store::share_flush`], and calls' writes no longer wait for a flush nor are written to the
    /// tree: the owner writes them (the answer, [`DeferredWrites::write`]) before each of its flushes,
    /// which makes them durable (see [`crate::ArmSim::leave_flushes_to_owner`]). Changes made before
    /// the call are written first.
    pub fn leave_flushes_to_owner(&mut self, flush: crate::SharedFlush) -> Result<Arc<DeferredWrites>, SimError> {
        self.write()?;
        if let Some(deferred) = self.tree.as_ref().and_then(|tree| tree.deferred.clone()) {
            return Ok(deferred);
        }
        let deferred = Arc::new(DeferredWrites {
            tree: self.tree.as_ref().map(|backing| backing.tree.clone()),
            writes: Mutex::default(),
        });
        if let Some(backing) = &mut self.tree {
            backing.deferred = Some(Arc::clone(&deferred));
        }
        if let Some(flusher) = &self.flusher {
            flusher.leave_to_owner(flush);
        }
        Ok(deferred)
    }

    /// Writes every change since the last commit to the tree in one batch, without flushing it: the
    /// caller must call [`GroupFlush::durable`] on the answer (after letting go of the core's lock, so
    /// that other calls can write meanwhile and share the flush). `None`: nothing to flush (no change,
    /// or an in-memory store, which only forgets the changes).
    pub fn write(&mut self) -> Result<Option<Arc<GroupFlush>>, SimError> {
        if let Some(damage) = self.take_damage() {
            // What was decided on a damaged read is not written.
            self.discard_changes();
            return Err(damage);
        }
        let Some(tree) = &self.tree else {
            self.dirty.clear();
            self.referrers_dirty.clear();
            self.meta_dirty = false;
            return Ok(None);
        };
        if self.dirty.is_empty() && self.referrers_dirty.is_empty() && !self.meta_dirty {
            return Ok(None);
        }
        // Key → new value (`None`: removed): one batch.
        let mut batch: BTreeMap<sled::IVec, Option<sled::IVec>> = BTreeMap::new();
        let mut put = |key: &[u8], value: Option<Vec<u8>>| drop(batch.insert(key.into(), value.map(Into::into)));
        if self.index_rewrite {
            // The index was built in memory at open: it replaces whatever the tree held.
            for item in tree.scan_prefix(REF_PREFIX.as_bytes()) {
                put(&item?.0, None);
            }
            for (target, referrers) in self.referrers.get_mut().iter() {
                for referrer in referrers {
                    put(&ref_key(target, referrer), Some(referrer.as_bytes().to_vec()));
                }
            }
            self.referrers_dirty.clear();
            self.meta_dirty = true;
        }
        for key in &self.dirty {
            let value = self.cached(key).map(|e| {
                let p = PersistedRef { value: &e.value, origin: e.origin, seq: e.seq };
                serde_json::to_vec(&p).expect("JSON values always serialise")
            });
            put(key.as_bytes(), value);
        }
        for ((target, referrer), present) in &self.referrers_dirty {
            put(&ref_key(target, referrer), present.then(|| referrer.as_bytes().to_vec()));
        }
        if self.meta_dirty {
            put(
                SUBSCRIPTION_KEY.as_bytes(),
                Some(serde_json::to_vec(&self.subscription).expect("a string serialises")),
            );
            put(CLOCK_KEY.as_bytes(), Some(serde_json::to_vec(&self.clock).expect("a number serialises")));
            put(ADDRESSES_KEY.as_bytes(), Some(serde_json::to_vec(&self.addresses).expect("a number serialises")));
            // This write keeps the index: it is current as of this clock.
            put(REFS_KEY.as_bytes(), Some(serde_json::to_vec(&self.clock).expect("a number serialises")));
        }
        tree.apply(batch)?;
        self.keys_changed();
        self.dirty.clear();
        self.referrers_dirty.clear();
        self.meta_dirty = false;
        self.index_rewrite = false;
        Ok(self.flusher.clone())
    }
}

impl Store {
    /// Reads every resource of `tree` into the cache and builds the whole reverse index from them,
    /// for a tree without a current index (see the module docs): what every open did before the
    /// index was kept. The next write stores the index. A damaged resource stops the open.
    pub(super) fn index_all(&mut self, tree: &Backing) -> Result<(), SimError> {
        self.keys_changed();
        self.cache.as_mut().clear();
        self.referrers.get_mut().clear();
        for item in tree.scan_prefix(b"/") {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            let entry = entry_of(&key, &v)?;
            for target in link_targets(&entry) {
                self.referrers.get_mut().entry(target).or_default().insert(key.clone());
            }
            self.cache.as_mut().insert(key, Box::new(entry));
        }
        self.referrers_complete = true;
        self.index_rewrite = true;
        Ok(())
    }
}
