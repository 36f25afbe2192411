//! The DNS store in a `sled::Tree` (the state dir's `sim/dns`, beside ARM's and GCE's).
//!
//! Layout (values JSON): `z <zone>` → the zone (`{"name", "azure"?, "gcp"?}` as declared),
//! `r <record key>` → the record set (`{"value", "origin", "etag"}`), `d <DNSRecord key>` → the object as a GET answers it, `s <seed>` → the seed as declared
//! (`{"name", "ingress"}`), `#meta` →
//! `{"clock"}`. Opening reads `#meta` only; the first use of the simulated DNS reads the rest, whole
//! (a DNS world is small; the core's [`crate::core::sim::SimCloud::load`]). Every call that changed the store
//! writes the changed keys in one batch under the simulator's lock; the flush that makes it durable
//! runs after the lock is released, shared with the calls that wrote meanwhile (the core's
//! [`GroupFlush`]), and the call returns only after it. A key that does not read back fails that first
//! use, and every call after it, naming the key.

use super::seeds::WorldSeed;
use super::store::{etag, Dirty, DnsStore, Record, Zone};
use crate::core::persist::GroupFlush;
use crate::SimError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

const ZONE_PREFIX: &str = "z ";
const RECORD_PREFIX: &str = "r ";
const OBJECT_PREFIX: &str = "d ";
const SEED_PREFIX: &str = "s ";
const META_KEY: &str = "#meta";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    clock: u64,
}

/// Where a persisted DNS simulator writes.
pub(crate) struct Persist {
    tree: sled::Tree,
    flusher: Arc<GroupFlush>,
}

fn corrupt(key: &str, detail: impl ToString) -> SimError {
    SimError::Corrupt { key: key.to_string(), detail: detail.to_string() }
}

/// Every `prefix` entry of `tree`, parsed.
fn read_all<T: serde::de::DeserializeOwned>(tree: &sled::Tree, prefix: &str) -> Result<Vec<(String, T)>, SimError> {
    let mut out = Vec::new();
    for item in tree.scan_prefix(prefix.as_bytes()) {
        let (k, v) = item?;
        let key = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
        let value: T = serde_json::from_slice(&v).map_err(|e| corrupt(&format!("{prefix}{key}"), e))?;
        out.push((key, value));
    }
    Ok(out)
}

impl Persist {
    /// Opens the store kept in `tree` (empty for a new tree): its clock only; the rest is read by
    /// [`Persist::load`] when the simulated DNS is first used.
    pub(crate) fn open(tree: sled::Tree) -> Result<(Persist, DnsStore), SimError> {
        let mut store = DnsStore::default();
        if let Some(v) = tree.get(META_KEY)? {
            let meta: Meta = serde_json::from_slice(&v).map_err(|e| corrupt(META_KEY, e))?;
            store.clock = meta.clock;
        }
        let flusher = Arc::new(GroupFlush::new(tree.clone()));
        Ok((Persist { tree, flusher }, store))
    }

    /// Reads the zones, record sets, `DNSRecord` objects and seeds into `store` (the whole tree).
    pub(crate) fn load(&self, store: &mut DnsStore) -> Result<(), SimError> {
        store.zones = read_all::<Zone>(&self.tree, ZONE_PREFIX)?.into_iter().collect();
        store.records = read_all::<Record>(&self.tree, RECORD_PREFIX)?.into_iter().collect();
        upgrade_records(store);
        store.objects = read_all::<Value>(&self.tree, OBJECT_PREFIX)?.into_iter().collect();
        store.seeds = read_all::<WorldSeed>(&self.tree, SEED_PREFIX)?.into_iter().collect();
        Ok(())
    }

    /// Flushes through `flush` (the database owner's) instead of the tree's own flush.
    pub(crate) fn share_flush(&self, flush: crate::SharedFlush) {
        self.flusher.share(flush);
    }

    /// Writes what changed in `store` since the last write, in one batch, without flushing: the
    /// caller makes it durable with [`GroupFlush::durable`] on the answer once the lock is released.
    /// `None`: nothing changed.
    pub(crate) fn write(&self, store: &mut DnsStore) -> Result<Option<Arc<GroupFlush>>, SimError> {
        if store.dirty.is_empty() && !store.meta_dirty {
            return Ok(None);
        }
        let mut batch = sled::Batch::default();
        for dirty in &store.dirty {
            let (k, v) = match dirty {
                Dirty::Zone(k) => (format!("{ZONE_PREFIX}{k}"), store.zones.get(k).map(json)),
                Dirty::Record(k) => (format!("{RECORD_PREFIX}{k}"), store.records.get(k).map(json)),
                Dirty::Object(k) => (format!("{OBJECT_PREFIX}{k}"), store.objects.get(k).map(json)),
                Dirty::Seed(k) => (format!("{SEED_PREFIX}{k}"), store.seeds.get(k).map(json)),
            };
            match v {
                Some(v) => batch.insert(k.as_bytes(), v),
                None => batch.remove(k.as_bytes()),
            }
        }
        let meta = Meta { clock: store.clock };
        batch.insert(META_KEY, serde_json::to_vec(&meta).expect("numbers serialise"));
        self.tree.apply_batch(batch)?;
        store.dirty.clear();
        store.meta_dirty = false;
        Ok(Some(Arc::clone(&self.flusher)))
    }
}

/// Brings records stored by earlier versions up to date in memory (written back with the next
/// write): the DNS controller's `owner` field goes (a record set belongs to whoever wrote it; trellis
/// keeps that in its state), and a record without an etag gets one.
fn upgrade_records(store: &mut DnsStore) {
    for (key, record) in store.records.iter_mut() {
        let had_owner = record.value.as_object_mut().and_then(|m| m.remove("owner")).is_some();
        if record.etag.is_empty() {
            store.clock += 1;
            record.etag = etag(store.clock);
            store.meta_dirty = true;
        } else if !had_owner {
            continue;
        }
        store.dirty.insert(Dirty::Record(key.clone()));
    }
}

fn json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("JSON values always serialise")
}
