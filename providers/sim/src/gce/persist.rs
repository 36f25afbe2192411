//! The GCE store in a `sled::Tree` (the state dir's `sim/gce`, beside ARM's `sim/azure`).
//!
//! Layout (values JSON):
//! - `e <selfLink path>` → the entry: `{"value", "origin", "auto", "declared"}`;
//! - `o <operation path>` → the operation as GET answers it;
//! - `#meta` → `{"clock", "externalIps", "ipv6Prefixes", "quotas", "project"}` (`project`: the
//!   world file's `gcp.project`, when one named it).
//!
//! Opening reads `#meta` only; the first use of the cloud reads the resources, all of them (the
//! core's [`crate::core::sim::SimCloud::load`]): a command that never calls GCE never reads them (an
//! Azure plan against a state dir that also holds GCP shoots). The operations of earlier sessions
//! (they only grow, and plans never ask for them) are read by the first GET or list of operations.
//! A GCE world is bounded by its project's quotas; ARM's per-resource lazy reads are not needed yet.
//! Every call that changed the store writes the changed keys ([`GceStore::dirty`]) in one batch under the
//! simulator's lock; the flush that makes it durable runs after the lock is released, shared with
//! the calls that wrote meanwhile (the core's [`GroupFlush`]), and the call returns only after it —
//! as ARM's writes do. A key that does not read back fails that first use, and every call after it, naming the key.

use super::path::GcePath;
use super::store::{Entry, GceStore, Quotas};
use crate::core::persist::GroupFlush;
use crate::SimError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

const ENTRY_PREFIX: &str = "e ";
const OP_PREFIX: &str = "o ";
const META_KEY: &str = "#meta";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Meta {
    clock: u64,
    external_ips: u32,
    ipv6_prefixes: u32,
    quotas: Quotas,
    /// The world file's `gcp.project` (absent in trees written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    project: Option<String>,
}

/// Where a persisted simulator writes.
pub(crate) struct Persist {
    tree: sled::Tree,
    flusher: Arc<GroupFlush>,
}

fn corrupt(key: &str, detail: impl ToString) -> SimError {
    SimError::Corrupt { key: key.to_string(), detail: detail.to_string() }
}

impl Persist {
    /// Opens the store kept in `tree` (empty for a new tree): its counters, quotas and project only;
    /// the resources and operations are read by [`Persist::load`] when the cloud is first used.
    pub(crate) fn open(tree: sled::Tree) -> Result<(Persist, GceStore), SimError> {
        let mut store = GceStore::default();
        if let Some(v) = tree.get(META_KEY)? {
            let meta: Meta = serde_json::from_slice(&v).map_err(|e| corrupt(META_KEY, e))?;
            store.clock = meta.clock;
            store.external_ips = meta.external_ips;
            store.ipv6_prefixes = meta.ipv6_prefixes;
            store.quotas = meta.quotas;
            store.project = meta.project;
        }
        let flusher = Arc::new(GroupFlush::new(tree.clone()));
        Ok((Persist { tree, flusher }, store))
    }

    /// Reads the resources into `store` (all of them: GCE's store has no per-resource lazy reads,
    /// unlike ARM's). The operations of earlier sessions are left in the tree: they only grow (one a
    /// write), and only a GET or list of operations reads them ([`Persist::load_operations`]).
    pub(crate) fn load(&self, store: &mut GceStore) -> Result<(), SimError> {
        for item in self.tree.scan_prefix(ENTRY_PREFIX.as_bytes()) {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k[ENTRY_PREFIX.len()..]).into_owned();
            let entry: Entry = serde_json::from_slice(&v).map_err(|e| corrupt(&key, e))?;
            let path = GcePath::parse(&key).map_err(|e| corrupt(&key, e))?;
            if path.key() != key {
                return Err(corrupt(&key, format!("stored under a key that is not its path {}", path.key())));
            }
            store.load(key, entry);
        }
        store.operations_unread = true;
        Ok(())
    }

    /// Reads the operations of earlier sessions into `store` (beside this session's, which it keeps).
    /// A key that does not read back fails this read, and the next one tries again: the resources
    /// stay usable.
    pub(crate) fn load_operations(&self, store: &mut GceStore) -> Result<(), SimError> {
        let mut read = Vec::new();
        for item in self.tree.scan_prefix(OP_PREFIX.as_bytes()) {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k[OP_PREFIX.len()..]).into_owned();
            let op: Value = serde_json::from_slice(&v).map_err(|e| corrupt(&format!("{OP_PREFIX}{key}"), e))?;
            read.push((key, op));
        }
        for (key, op) in read {
            store.operations.entry(key).or_insert(op);
        }
        store.operations_unread = false;
        Ok(())
    }

    /// Flushes through `flush` (the database owner's) instead of the tree's own flush.
    pub(crate) fn share_flush(&self, flush: crate::SharedFlush) {
        self.flusher.share(flush);
    }

    /// Writes what changed in `store` since the last write, in one batch, without flushing: the
    /// caller makes it durable with [`GroupFlush::durable`] on the answer once the lock is released.
    /// `None`: nothing changed.
    pub(crate) fn write(&self, store: &mut GceStore) -> Result<Option<Arc<GroupFlush>>, SimError> {
        if store.dirty.is_empty() && store.ops_dirty.is_empty() && !store.meta_dirty {
            return Ok(None);
        }
        let mut batch = sled::Batch::default();
        for key in &store.dirty {
            let k = format!("{ENTRY_PREFIX}{key}");
            match store.entries.get(key) {
                Some(e) => batch.insert(k.as_bytes(), serde_json::to_vec(e).expect("JSON values always serialise")),
                None => batch.remove(k.as_bytes()),
            }
        }
        for key in &store.ops_dirty {
            if let Some(op) = store.operations.get(key) {
                let k = format!("{OP_PREFIX}{key}");
                batch.insert(k.as_bytes(), serde_json::to_vec(op).expect("JSON values always serialise"));
            }
        }
        let meta = Meta {
            clock: store.clock,
            external_ips: store.external_ips,
            ipv6_prefixes: store.ipv6_prefixes,
            quotas: store.quotas,
            project: store.project.clone(),
        };
        batch.insert(META_KEY, serde_json::to_vec(&meta).expect("numbers serialise"));
        self.tree.apply_batch(batch)?;
        store.dirty.clear();
        store.ops_dirty.clear();
        store.meta_dirty = false;
        Ok(Some(Arc::clone(&self.flusher)))
    }
}
