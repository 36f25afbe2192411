//! The resource store: lowercased id → resource, with a reverse index of references.
//!
//! Persistence in a `sled::Tree`: see [`crate::core::persist`].

use crate::arm::{ArmId, Kind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The subscription a simulated cloud belongs to when nobody said otherwise.
pub const DEFAULT_SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000000";

/// Who brought a resource into the simulated cloud.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Declared by a world file: it existed before trellis ran.
    World,
    /// Created through the API (`apply`, or a runtime writer such as the CCM).
    Api,
}

/// One stored resource.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub id: ArmId,
    /// `id.kind()`, computed once.
    pub kind: Kind,
    /// The resource as stored: what a GET returns minus the computed back-references and child arrays.
    pub value: Value,
    pub origin: Origin,
    /// Creation order; child arrays (a VNet's subnets, an NSG's rules) are returned in this order.
    pub seq: u64,
}

impl Entry {
    pub fn new(id: ArmId, value: Value, origin: Origin, seq: u64) -> Entry {
        Entry { kind: id.kind(), id, value, origin, seq }
    }
}

pub(crate) struct Store {
    pub(super) entries: BTreeMap<String, Entry>,
    /// Reverse index of references (subnet → route table, NAT → public IP, …): target key → keys of
    /// the resources that refer to it. Back-references on GET and in-use checks on DELETE read it
    /// instead of scanning every resource.
    pub(super) referrers: BTreeMap<String, BTreeSet<String>>,
    pub(super) subscription: String,
    pub(super) clock: u64,
    /// Public IP addresses allocated so far (see [`Store::allocate_address`]).
    pub(super) addresses: u64,
    pub(super) tree: Option<sled::Tree>,
    /// Flushes `tree`, shared by the calls that wrote meanwhile (see [`crate::core::persist`]).
    pub(super) flusher: Option<std::sync::Arc<crate::core::persist::GroupFlush>>,
    pub(super) dirty: BTreeSet<String>,
    pub(super) meta_dirty: bool,
}

impl Store {
    pub fn in_memory(subscription: &str) -> Store {
        Store {
            entries: BTreeMap::new(),
            referrers: BTreeMap::new(),
            subscription: subscription.to_string(),
            clock: 0,
            addresses: 0,
            tree: None,
            flusher: None,
            dirty: BTreeSet::new(),
            meta_dirty: false,
        }
    }

    pub fn subscription(&self) -> &str {
        &self.subscription
    }

    pub fn set_subscription(&mut self, subscription: &str) {
        if self.subscription != subscription {
            self.subscription = subscription.to_string();
            self.meta_dirty = true;
        }
    }

    /// The next tick of the clock (etags and creation order).
    pub fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.meta_dirty = true;
        self.clock
    }

    /// A public IP address never handed out before by this simulated cloud, as ARM allocates one to a
    /// new public IP: `20.64.0.1`, `20.64.0.2`, … (the count is persisted with the store, so a
    /// re-created public IP gets a new address after a reopen too).
    pub fn allocate_address(&mut self) -> String {
        self.addresses += 1;
        self.meta_dirty = true;
        let n = self.addresses;
        format!("20.{}.{}.{}", 64 + (n >> 16) % 128, (n >> 8) & 0xff, n & 0xff)
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }

    pub fn map(&self) -> &BTreeMap<String, Entry> {
        &self.entries
    }

    /// The entries strictly below `key` (children, grandchildren, …), in key order.
    pub fn descendants<'a>(&'a self, key: &str) -> impl Iterator<Item = &'a Entry> + 'a {
        descendants(&self.entries, key)
    }

    pub fn insert(&mut self, entry: Entry) {
        self.dirty.insert(entry.id.key());
        self.index(&entry);
    }

    pub fn remove(&mut self, key: &str) -> Option<Entry> {
        let removed = self.entries.remove(key)?;
        self.unindex(&removed);
        self.dirty.insert(key.to_string());
        Some(removed)
    }

    /// The resources that refer to the resource with key `target`, in key order.
    pub fn referrers<'a>(&'a self, target: &str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.referrers.get(target).into_iter().flatten().filter_map(|k| self.entries.get(k))
    }

    /// Stores `entry` (replacing any entry with its key) and indexes its references.
    pub(super) fn index(&mut self, entry: &Entry) {
        let key = entry.id.key();
        if let Some(old) = self.entries.remove(&key) {
            self.unindex(&old);
        }
        for target in link_targets(entry) {
            self.referrers.entry(target).or_default().insert(key.clone());
        }
        self.entries.insert(key, entry.clone());
    }

    fn unindex(&mut self, entry: &Entry) {
        let key = entry.id.key();
        for target in link_targets(entry) {
            if let Some(set) = self.referrers.get_mut(&target) {
                set.remove(&key);
                if set.is_empty() {
                    self.referrers.remove(&target);
                }
            }
        }
    }
}

/// The keys of the resources `entry` refers to (its links, and what its IP configurations use).
fn link_targets(entry: &Entry) -> Vec<String> {
    let links = crate::arm::rules::links(entry.kind, &entry.value).unwrap_or_default().into_iter().map(|l| l.target);
    let usages = crate::arm::rules::usages(entry.kind, &entry.value).into_iter().map(|u| u.target);
    links.chain(usages).filter_map(|target| ArmId::parse(&target).ok().map(|t| t.key())).collect()
}

/// The entries of `map` strictly below `key`, in key order.
pub(crate) fn descendants<'a>(map: &'a BTreeMap<String, Entry>, key: &str) -> impl Iterator<Item = &'a Entry> + 'a {
    let prefix = format!("{key}/");
    map.range(prefix.clone()..).take_while(move |(k, _)| k.starts_with(&prefix)).map(|(_, e)| e)
}
