//! ARM's resource store: lowercased id → resource, with a reverse index of references.
//!
//! Persistence in a `sled::Tree`: see [`crate::arm::persist`].

use crate::arm::{ArmId, Kind};
use crate::core::Origin;
use crate::SimError;
use elsa::FrozenBTreeMap;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::sync::Arc;

/// The subscription a simulated cloud belongs to when nobody said otherwise.
pub const DEFAULT_SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000000";

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

/// The resources of a simulated cloud.
///
/// Without a tree (an in-memory cloud) every resource is in `cache`. With one, the tree is the
/// record and `cache` holds what calls have read or written since the open: a resource is read from
/// the tree the first time a call asks for it ([`Store::get`]), so opening costs the same whatever
/// the cloud's size. Reads take `&self` (the rules hand `&Entry`s around while they look at others),
/// so the cache only grows through them (`elsa`'s frozen map: an entry, once in, stays where it is
/// until a `&mut` method replaces or removes it).
pub(crate) struct Store {
    pub(super) cache: FrozenBTreeMap<String, Box<Entry>>,
    /// Every key, for a store without a tree (with one, the tree and `dirty` list them).
    mem_keys: BTreeSet<String>,
    /// Reverse index of references (subnet → route table, NAT → public IP, …): target key → keys of
    /// the resources that refer to it. Back-references on GET and in-use checks on DELETE read it
    /// instead of scanning every resource. With a tree it is kept there too and loaded per target.
    pub(super) referrers: RefCell<BTreeMap<String, BTreeSet<String>>>,
    pub(super) subscription: String,
    pub(super) clock: u64,
    /// Public IP addresses allocated so far (see [`Store::allocate_address`]).
    pub(super) addresses: u64,
    /// The tree, read through the writes not applied to it yet (see [`crate::arm::persist`]).
    pub(super) tree: Option<crate::arm::persist::Backing>,
    /// Flushes `tree`, shared by the calls that wrote meanwhile (see [`crate::arm::persist`]).
    pub(super) flusher: Option<std::sync::Arc<crate::core::persist::GroupFlush>>,
    /// Keys changed since the last write: in `cache` (written or replaced) or not (removed).
    pub(super) dirty: BTreeSet<String>,
    /// Changes to the reverse index since the last write: (target, referrer) → added or removed.
    pub(super) referrers_dirty: BTreeMap<(String, String), bool>,
    pub(super) meta_dirty: bool,
    /// `referrers` holds every reference (an in-memory store, or a tree indexed at open): a target
    /// missing from it has no referrers, nothing is read from the tree.
    pub(super) referrers_complete: bool,
    /// The tree's index is not current: the next write replaces it with `referrers` (complete).
    pub(super) index_rewrite: bool,
    /// The first stored resource found damaged by a read since it was last taken (see
    /// [`Store::take_damage`]): a read of it answers "absent", and the call fails with this.
    pub(super) damage: RefCell<Option<SimError>>,
    /// The tree's prefix scans since the set of keys last changed: prefix → the keys under it, sorted
    /// ([`Store::keys_under`]). A plan lists the same resource group several times (route tables,
    /// NSGs, NAT gateways, public IPs, the VNet's subnets and each listed resource's children), and
    /// nothing changes in between: one scan answers them all. Emptied by every change of the key set
    /// ([`Store::keys_changed`]), so it never answers what a scan now would not.
    scans: RefCell<HashMap<String, Arc<[String]>>>,
    /// [`CACHE_LIMIT`], smaller in tests.
    pub(super) cache_limit: usize,
}

/// How many resources a store with a tree keeps read between calls at most ([`Store::trim`]).
pub(crate) const CACHE_LIMIT: usize = 4096;

/// Keys answered by [`Store::keys_under`]: `all[range]`, sorted.
struct Keys {
    all: Arc<[String]>,
    range: Range<usize>,
}

impl Keys {
    fn whole(all: Arc<[String]>) -> Keys {
        Keys { range: 0..all.len(), all }
    }
}

impl Store {
    pub fn in_memory(subscription: &str) -> Store {
        Store {
            cache: FrozenBTreeMap::new(),
            mem_keys: BTreeSet::new(),
            referrers: RefCell::new(BTreeMap::new()),
            subscription: subscription.to_string(),
            clock: 0,
            addresses: 0,
            tree: None,
            flusher: None,
            dirty: BTreeSet::new(),
            referrers_dirty: BTreeMap::new(),
            meta_dirty: false,
            referrers_complete: true,
            index_rewrite: false,
            damage: RefCell::new(None),
            scans: RefCell::new(HashMap::new()),
            cache_limit: CACHE_LIMIT,
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

    /// The resource with key `key`, read from the tree on first use.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        if let Some(e) = self.cache.get(key) {
            return Some(e);
        }
        // Not in the cache: absent without a tree, and removed since the last write if dirty.
        let tree = self.tree.as_ref().filter(|_| !self.dirty.contains(key))?;
        match crate::arm::persist::load(tree, key) {
            Ok(Some(entry)) => Some(self.cache.insert(key.to_string(), Box::new(entry))),
            Ok(None) => None,
            Err(e) => {
                self.damage.borrow_mut().get_or_insert(e);
                None
            }
        }
    }

    /// A stored resource that a read since the last call found damaged (it read as absent).
    pub fn take_damage(&mut self) -> Option<SimError> {
        self.damage.get_mut().take()
    }

    /// Every resource, in key order (reads the whole tree: world sync, snapshots, subscription lists).
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries_under("/")
    }

    /// Every resource as a map (world sync works on a copy of the whole cloud).
    pub fn all(&self) -> BTreeMap<String, Entry> {
        self.entries().map(|e| (e.id.key(), e.clone())).collect()
    }

    /// The entries strictly below `key` (children, grandchildren, …), in key order.
    pub fn descendants<'a>(&'a self, key: &str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries_under(&format!("{key}/"))
    }

    /// The entries under `prefix` whose key `keep` accepts, in key order: the keys are told apart
    /// before any resource is read (a subscription's List All reads only the resources it lists).
    pub fn entries_keyed<'a>(
        &'a self,
        prefix: &str,
        keep: impl Fn(&str) -> bool + 'a,
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        let keys = self.scan(prefix, false);
        let all = Arc::clone(&keys.all);
        keys.range.filter(move |&i| keep(&all[i])).filter_map(move |i| self.get(&keys.all[i]))
    }

    fn entries_under<'a>(&'a self, prefix: &str) -> impl Iterator<Item = &'a Entry> + 'a {
        let keys = self.keys_under(prefix);
        keys.range.clone().filter_map(move |i| self.get(&keys.all[i]))
    }

    /// The keys starting with `prefix`, sorted: the tree's as changed since the last write, or all.
    /// With a tree, the resources scanned are read into the cache on the way, and a scan is kept
    /// until the key set changes and answers the scans of the prefixes inside it too (a VNet's
    /// subnets from its resource group's scan).
    fn keys_under(&self, prefix: &str) -> Keys {
        self.scan(prefix, true)
    }

    /// [`Store::keys_under`]; a scan that is not kept yet reads the resources it passes into the
    /// cache only when `read` (a caller that reads them all), else only their keys.
    fn scan(&self, prefix: &str, read: bool) -> Keys {
        let Some(tree) = &self.tree else {
            let keys: Vec<String> = in_memory(&self.mem_keys, prefix);
            return Keys::whole(keys.into());
        };
        if let Some(keys) = self.scanned(prefix) {
            return keys;
        }
        let mut keys: BTreeSet<String> = BTreeSet::new();
        let mut damaged = false;
        for item in tree.scan_prefix(prefix.as_bytes()) {
            match item {
                Ok((k, v)) => {
                    let key = String::from_utf8_lossy(&k).into_owned();
                    // Every caller reads what it scanned, and the scan has the value at hand: a
                    // resource not read yet is read here (a damaged one is left to `get`, which
                    // reports it), not looked up again key by key.
                    if read && self.cache.get(&key).is_none() && !self.dirty.contains(&key) {
                        if let Ok(entry) = crate::arm::persist::entry_of(&key, &v) {
                            self.cache.insert(key.clone(), Box::new(entry));
                        }
                    }
                    keys.insert(key);
                }
                Err(e) => {
                    damaged = true;
                    self.damage.borrow_mut().get_or_insert(SimError::from(e));
                }
            }
        }
        // What changed since the last write: written ones are in the cache, removed ones are not.
        for k in in_memory(&self.dirty, prefix) {
            if self.cache.get(&k).is_some() {
                keys.insert(k);
            } else {
                keys.remove(&k);
            }
        }
        let keys: Arc<[String]> = keys.into_iter().collect();
        // A scan that failed halfway is not kept: the next call scans (and fails) again.
        if !damaged {
            self.scans.borrow_mut().insert(prefix.to_string(), Arc::clone(&keys));
        }
        Keys::whole(keys)
    }

    /// The keys under `prefix` from a kept scan of `prefix` or of a prefix of it ending in `/`.
    fn scanned(&self, prefix: &str) -> Option<Keys> {
        let scans = self.scans.borrow();
        if let Some(all) = scans.get(prefix) {
            return Some(Keys::whole(Arc::clone(all)));
        }
        let outer = prefix.char_indices().filter(|&(_, c)| c == '/').map(|(i, _)| &prefix[..=i]);
        let all = outer.filter(|outer| outer.len() < prefix.len()).find_map(|outer| scans.get(outer))?;
        let start = all.partition_point(|k| k.as_str() < prefix);
        let len = all[start..].iter().take_while(|k| k.starts_with(prefix)).count();
        Some(Keys { all: Arc::clone(all), range: start..start + len })
    }

    /// Between calls: a store with a tree forgets what it has read once that is more than its limit
    /// (the tree has all of it; a later call reads again what it needs). A fleet's plan reads each
    /// shoot's resources once, so without this the cache grew with the fleet (every resource of a
    /// no-op re-plan, ~35 KiB per shoot) and with it the page faults of filling it. Nothing is
    /// forgotten while a change is not written yet, nor the reverse index when it is held whole
    /// (a tree indexed at open, whose index is not stored yet).
    pub fn trim(&mut self) {
        let clean = self.dirty.is_empty() && self.referrers_dirty.is_empty() && !self.index_rewrite;
        if self.tree.is_none() || !clean || self.cache.len() <= self.cache_limit {
            return;
        }
        self.cache.as_mut().clear();
        self.scans.get_mut().clear();
        if !self.referrers_complete {
            self.referrers.get_mut().clear();
        }
    }

    /// Forgets the kept scans: called by every change of the key set (a key written, removed or
    /// forgotten, the tree read whole or written).
    pub(super) fn keys_changed(&self) {
        self.scans.borrow_mut().clear();
    }

    /// Stores `entry` (replacing any entry with its key) and indexes its references.
    pub fn insert(&mut self, entry: Entry) {
        let key = entry.id.key();
        self.keys_changed();
        self.remove_cached(&key);
        for target in link_targets(&entry) {
            self.set_referrer(target, key.clone(), true);
        }
        self.dirty.insert(key.clone());
        if self.tree.is_none() {
            self.mem_keys.insert(key.clone());
        }
        self.cache.as_mut().insert(key, Box::new(entry));
    }

    pub fn remove(&mut self, key: &str) -> Option<Entry> {
        self.keys_changed();
        let removed = self.remove_cached(key)?;
        self.dirty.insert(key.to_string());
        self.mem_keys.remove(key);
        Some(removed)
    }

    /// Takes the entry with `key` out of the cache (reading it first) and out of the reverse index.
    fn remove_cached(&mut self, key: &str) -> Option<Entry> {
        self.get(key)?;
        let old = *self.cache.as_mut().remove(key)?;
        for target in link_targets(&old) {
            self.set_referrer(target, key.to_string(), false);
        }
        Some(old)
    }

    fn set_referrer(&mut self, target: String, referrer: String, present: bool) {
        self.load_referrers(&target);
        let referrers = self.referrers.get_mut();
        let set = referrers.entry(target.clone()).or_default();
        if present {
            set.insert(referrer.clone());
        } else {
            set.remove(&referrer);
        }
        if self.tree.is_some() {
            self.referrers_dirty.insert((target, referrer), present);
        } else if set.is_empty() {
            referrers.remove(&target);
        }
    }

    /// Reads the referrers of `target` from the tree into the index, the first time.
    fn load_referrers(&self, target: &str) {
        let Some(tree) = self.tree.as_ref().filter(|_| !self.referrers_complete) else { return };
        if self.referrers.borrow().contains_key(target) {
            return;
        }
        let loaded = crate::arm::persist::load_referrers(tree, target);
        let loaded = loaded.unwrap_or_else(|e| {
            self.damage.borrow_mut().get_or_insert(e);
            BTreeSet::new()
        });
        self.referrers.borrow_mut().insert(target.to_string(), loaded);
    }

    /// The resources that refer to the resource with key `target`, in key order.
    pub fn referrers<'a>(&'a self, target: &str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.load_referrers(target);
        let keys: Vec<String> = self.referrers.borrow().get(target).into_iter().flatten().cloned().collect();
        keys.into_iter().filter_map(|k| self.get(&k))
    }

    /// Forgets the changes since the last write (the tree keeps the version before them).
    pub fn discard_changes(&mut self) {
        self.keys_changed();
        let Some(tree) = self.tree.clone() else { return };
        let dirty = std::mem::take(&mut self.dirty);
        let targets = std::mem::take(&mut self.referrers_dirty).into_keys().map(|(target, _)| target);
        if self.index_rewrite {
            // Everything was read at open: read it again (a damaged resource fails that read, and
            // the cloud stays as the tree has it).
            if let Err(e) = self.index_all(&tree) {
                self.damage.get_mut().get_or_insert(e);
            }
            return;
        }
        for key in dirty {
            self.cache.as_mut().remove(&key);
        }
        // Read again from the tree when next asked for.
        let referrers = self.referrers.get_mut();
        for target in targets {
            referrers.remove(&target);
        }
    }

    /// The entries changed since the last write, for [`crate::arm::persist`]: `Some` written, `None` removed.
    pub(super) fn cached(&self, key: &str) -> Option<&Entry> {
        self.cache.get(key)
    }
}

/// The keys of `set` starting with `prefix`, sorted.
fn in_memory(set: &BTreeSet<String>, prefix: &str) -> Vec<String> {
    set.range(prefix.to_string()..).take_while(|k| k.starts_with(prefix)).cloned().collect()
}

/// The keys of the resources `entry` refers to (its links, and what its IP configurations use).
pub(super) fn link_targets(entry: &Entry) -> Vec<String> {
    let links = crate::arm::rules::links(entry.kind, &entry.value).unwrap_or_default().into_iter().map(|l| l.target);
    let usages = crate::arm::rules::usages(entry.kind, &entry.value).into_iter().map(|u| u.target);
    links.chain(usages).filter_map(|target| ArmId::parse(&target).ok().map(|t| t.key())).collect()
}

/// The entries of `map` strictly below `key`, in key order.
pub(crate) fn descendants<'a>(map: &'a BTreeMap<String, Entry>, key: &str) -> impl Iterator<Item = &'a Entry> + 'a {
    let prefix = format!("{key}/");
    map.range(prefix.clone()..).take_while(move |(k, _)| k.starts_with(&prefix)).map(|(_, e)| e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    fn entry(id: &str, value: Value, seq: u64) -> Entry {
        let mut value = value;
        value["id"] = json!(id);
        Entry::new(ArmId::parse(id).unwrap(), value, Origin::Api, seq)
    }

    fn keys(store: &Store, key: &str) -> Vec<String> {
        store.descendants(key).map(|e| e.id.key()).collect()
    }

    /// A store with a tree forgets what it read once that passes its limit, never a change not
    /// written yet; what it forgot is read again from the tree, resources, scans and referrers alike,
    /// and a change made after a trim is seen.
    #[test]
    fn a_trimmed_store_answers_as_before_from_its_tree() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let mut store = Store::open(db.open_tree("sim").unwrap(), None).unwrap();
        store.cache_limit = 2;
        let net = format!("{RG}/providers/Microsoft.Network");
        let nsg = format!("{net}/networkSecurityGroups/nsg");
        let subnet = |name: &str| format!("{net}/virtualNetworks/v/subnets/{name}");
        store.insert(entry(RG, json!({"location": "westeurope"}), 1));
        store.insert(entry(&nsg, json!({"location": "westeurope"}), 2));
        store.insert(entry(&format!("{net}/virtualNetworks/v"), json!({"location": "westeurope"}), 3));
        let uses_nsg = json!({"properties": {"networkSecurityGroup": {"id": nsg}}});
        store.insert(entry(&subnet("a"), uses_nsg.clone(), 4));
        store.trim();
        assert_eq!(store.cache.len(), 4, "a change not written yet is never forgotten");

        store.commit().unwrap();
        let rg = ArmId::parse(RG).unwrap().key();
        let nsg_key = ArmId::parse(&nsg).unwrap().key();
        let before = keys(&store, &rg);
        let referrers: Vec<String> = store.referrers(&nsg_key).map(|e| e.id.key()).collect();
        assert_eq!(referrers, vec![ArmId::parse(&subnet("a")).unwrap().key()]);
        let value = store.get(&nsg_key).unwrap().value.clone();
        store.trim();
        assert_eq!(store.cache.len(), 0, "over its limit, the store forgets what it read");
        assert_eq!(keys(&store, &rg), before);
        assert_eq!(store.get(&nsg_key).unwrap().value, value);
        assert_eq!(store.referrers(&nsg_key).count(), 1);

        store.insert(entry(&subnet("b"), uses_nsg, 5));
        store.commit().unwrap();
        store.trim();
        assert_eq!(store.referrers(&nsg_key).count(), 2, "a reference written after a trim is seen");
        assert_eq!(keys(&store, &rg).len(), before.len() + 1);
        store.remove(&ArmId::parse(&subnet("a")).unwrap().key());
        store.commit().unwrap();
        store.trim();
        assert_eq!(keys(&store, &rg).len(), before.len());
        assert_eq!(store.referrers(&nsg_key).count(), 1);
    }

    /// A store whose writes wait for the owner's flush answers from them once it has forgotten what
    /// it read (resources, scans, referrers), removals included, before and after the owner writes them.
    #[test]
    fn regression_a_trimmed_store_reads_the_writes_its_owner_has_not_written_yet() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("sim").unwrap();
        let mut store = Store::open(tree.clone(), None).unwrap();
        store.insert(entry(RG, json!({"location": "westeurope"}), 1));
        store.commit().unwrap();
        // Reopened with its index current: referrers are read per target, from the tree.
        let mut store = Store::open(tree.clone(), None).unwrap();
        let deferred = store.leave_flushes_to_owner(std::sync::Arc::new(|| Ok(()))).unwrap();
        store.cache_limit = 0;
        let stored = tree.len();
        let net = format!("{RG}/providers/Microsoft.Network");
        let nsg = format!("{net}/networkSecurityGroups/nsg");
        let subnet = |name: &str| format!("{net}/virtualNetworks/v/subnets/{name}");
        let key = |id: &str| ArmId::parse(id).unwrap().key();
        let uses_nsg = json!({"properties": {"networkSecurityGroup": {"id": nsg}}});
        store.insert(entry(&nsg, json!({"location": "westeurope"}), 2));
        store.insert(entry(&format!("{net}/virtualNetworks/v"), json!({"location": "westeurope"}), 3));
        store.insert(entry(&subnet("a"), uses_nsg.clone(), 4));
        store.insert(entry(&subnet("b"), uses_nsg, 5));
        assert!(store.write().unwrap().is_some());
        assert_eq!(tree.len(), stored, "nothing is written to the tree before the owner writes");
        store.remove(&key(&subnet("b")));
        assert!(store.write().unwrap().is_some());
        for written_by_owner in [false, true] {
            if written_by_owner {
                deferred.write().unwrap();
                assert!(tree.len() > stored);
            }
            store.trim();
            assert_eq!(store.cache.len(), 0);
            assert_eq!(keys(&store, &key(RG)).len(), 3, "the scan sees the writes (and the removal)");
            store.trim();
            assert!(store.get(&key(&subnet("a"))).is_some());
            assert!(store.get(&key(&subnet("b"))).is_none(), "a removal not written yet is seen");
            store.trim();
            let referrers: Vec<String> = store.referrers(&key(&nsg)).map(|e| e.id.key()).collect();
            assert_eq!(referrers, vec![key(&subnet("a"))]);
        }
        let reopened = Store::open(tree, None).unwrap();
        assert!(reopened.get(&key(&subnet("a"))).is_some());
        assert!(reopened.get(&key(&subnet("b"))).is_none());
    }
}
