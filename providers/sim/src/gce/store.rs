//! GCE's own in-memory store: resources by selfLink path (case-sensitive), operations, and the
//! counters that make ids, timestamps, fingerprints and allocated addresses deterministic.

use crate::core::Origin;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Per-project limits GCE enforces on inserts (403 `QUOTA_EXCEEDED` in a failed operation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Quotas {
    /// Custom routes per VPC network (the spec's default: 400).
    pub routes_per_network: usize,
    /// Firewall rules per project.
    pub firewalls_per_project: usize,
}

impl Default for Quotas {
    fn default() -> Quotas {
        Quotas { routes_per_network: 400, firewalls_per_project: 200 }
    }
}

/// One stored resource.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Entry {
    /// The resource as stored (computed fields such as an address's `users` are added on GET).
    pub value: Value,
    pub origin: Origin,
    /// Created by GCE itself with its network (an auto-mode network's subnets): deleted with it.
    pub auto: bool,
    /// For a world resource: the body as the world file declared it (to tell whether a re-sync
    /// changes it).
    pub declared: Option<Value>,
}

#[derive(Clone, Debug)]
pub(crate) struct GceStore {
    /// key: the selfLink path (`projects/p/global/networks/n`).
    pub entries: BTreeMap<String, Entry>,
    /// key: the operation's selfLink path. This session's, and once `operations_unread` is false,
    /// the earlier sessions' too.
    pub operations: BTreeMap<String, Value>,
    /// The tree holds operations of earlier sessions not read yet ([`super::persist::Persist::load_operations`]).
    pub operations_unread: bool,
    /// A logical clock: every write ticks it (ids, timestamps, fingerprints, operation names).
    pub clock: u64,
    /// External addresses handed out so far (never reused, like ARM's public IPs).
    pub external_ips: u32,
    /// IPv6 /64 prefixes handed out so far.
    pub ipv6_prefixes: u32,
    pub quotas: Quotas,
    /// The project the shoots live in, as the last world file that named one said (`gcp.project`).
    pub project: Option<String>,
    /// Keys of `entries` changed since the last write to the tree ([`super::persist`]).
    pub dirty: BTreeSet<String>,
    /// Keys of `operations` added since the last write to the tree.
    pub ops_dirty: BTreeSet<String>,
    /// The counters or quotas changed since the last write to the tree.
    pub meta_dirty: bool,
    /// The subnetworks of each network (by the network's URL, as subnetworks name it): a network's
    /// GET lists its subnetworks, and a subnetwork's insert checks its ranges against theirs, without
    /// a scan of the store.
    subnets_of: ByNetwork,
    /// The firewall rules and routes of each network (by their `network` field): a list narrowed to
    /// a network reads its rules, not the project's.
    rules_of: ByNetwork,
}

/// Keys of entries by the network their `network` field names, for the collections whose key holds
/// one of `segments`; kept by [`GceStore::put`], [`GceStore::take`] and [`GceStore::load`].
#[derive(Clone, Debug)]
struct ByNetwork {
    segments: &'static [&'static str],
    keys: BTreeMap<String, BTreeSet<String>>,
    /// The networks of `keys` by their last path segment (their name).
    named: BTreeMap<String, BTreeSet<String>>,
}

impl ByNetwork {
    fn of(segments: &'static [&'static str]) -> ByNetwork {
        ByNetwork { segments, keys: BTreeMap::new(), named: BTreeMap::new() }
    }

    /// The network `entry` (under `key`) is in, if it is of an indexed collection.
    fn network_of<'a>(&self, key: &str, entry: &'a Entry) -> Option<&'a str> {
        self.segments.iter().any(|s| key.contains(s)).then(|| entry.value.get("network")?.as_str()).flatten()
    }

    fn insert(&mut self, key: &str, entry: &Entry) {
        if let Some(network) = self.network_of(key, entry) {
            self.keys.entry(network.to_string()).or_default().insert(key.to_string());
            self.named.entry(last_segment(network).to_string()).or_default().insert(network.to_string());
        }
    }

    /// Drops `key` from `old`'s network, unless `now` (the entry stored under `key` now) is in it too.
    fn remove(&mut self, key: &str, old: &Entry, now: Option<&Entry>) {
        let Some(network) = self.network_of(key, old) else { return };
        if now.and_then(|now| self.network_of(key, now)) == Some(network) {
            return;
        }
        if let Some(keys) = self.keys.get_mut(network) {
            keys.remove(key);
            if keys.is_empty() {
                self.keys.remove(network);
                let name = last_segment(network);
                if let Some(networks) = self.named.get_mut(name) {
                    networks.remove(network);
                    if networks.is_empty() {
                        self.named.remove(name);
                    }
                }
            }
        }
    }

    /// The keys of the networks `network` accepts, in key order; with `named`, of the networks of that
    /// name only (looked up, not every network tried).
    fn keys_in(&self, network: impl Fn(&str) -> bool, named: Option<&str>) -> BTreeSet<&String> {
        let networks: Box<dyn Iterator<Item = &String>> = match named {
            Some(name) => Box::new(self.named.get(name).into_iter().flatten()),
            None => Box::new(self.keys.keys()),
        };
        networks.filter(|n| network(n)).filter_map(|n| self.keys.get(n)).flatten().collect()
    }
}

/// A reference's last path segment (a network's name).
pub(crate) fn last_segment(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

impl Default for GceStore {
    fn default() -> GceStore {
        GceStore {
            entries: BTreeMap::new(),
            operations: BTreeMap::new(),
            operations_unread: false,
            clock: 0,
            external_ips: 0,
            ipv6_prefixes: 0,
            quotas: Quotas::default(),
            project: None,
            dirty: BTreeSet::new(),
            ops_dirty: BTreeSet::new(),
            meta_dirty: false,
            subnets_of: ByNetwork::of(&["/subnetworks/"]),
            rules_of: ByNetwork::of(&["/firewalls/", "/routes/"]),
        }
    }
}

impl GceStore {
    pub fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.meta_dirty = true;
        self.clock
    }

    /// Stores `entry` under `key` (noted for the next write to the tree).
    pub fn put(&mut self, key: String, entry: Entry) {
        self.dirty.insert(key.clone());
        self.load(key, entry);
    }

    /// Stores `entry` under `key` as read from the tree (not noted for a write).
    pub fn load(&mut self, key: String, entry: Entry) {
        self.subnets_of.insert(&key, &entry);
        self.rules_of.insert(&key, &entry);
        if let Some(old) = self.entries.insert(key.clone(), entry) {
            self.unindex(&key, &old);
        }
    }

    /// Removes the entry under `key` (noted for the next write to the tree).
    pub fn take(&mut self, key: &str) -> Option<Entry> {
        self.dirty.insert(key.to_string());
        let old = self.entries.remove(key)?;
        self.unindex(key, &old);
        Some(old)
    }

    /// Drops `key` from the indexes of `old`'s network, unless the entry now stored under `key` is in
    /// that network too.
    fn unindex(&mut self, key: &str, old: &Entry) {
        let now = self.entries.get(key);
        self.subnets_of.remove(key, old, now);
        self.rules_of.remove(key, old, now);
    }

    /// The keys of the firewall rules and routes of the networks whose reference `network` accepts,
    /// in key order; with `named`, only networks of that name are tried ([`super::filter::Filter::last_segment_of`]).
    pub fn rules_in(&self, network: impl Fn(&str) -> bool, named: Option<&str>) -> BTreeSet<&String> {
        self.rules_of.keys_in(network, named)
    }

    /// The keys of the subnetworks of the network `url`, in key order.
    pub fn subnet_keys_of(&self, url: &str) -> impl Iterator<Item = &String> {
        self.subnets_of.keys.get(url).into_iter().flatten()
    }

    /// The selfLinks of the subnetworks of the network `url`, in key order.
    pub fn subnets_of(&self, url: &str) -> impl Iterator<Item = &Value> {
        self.subnet_keys_of(url).filter_map(|k| self.entries.get(k)?.value.get("selfLink"))
    }

    /// Stores an operation (noted for the next write to the tree).
    pub fn put_operation(&mut self, key: String, op: Value) {
        self.ops_dirty.insert(key.clone());
        self.operations.insert(key, op);
    }
}

/// A GCE numeric id (a u64, written as a decimal string), derived from the key and the clock.
pub(crate) fn numeric_id(key: &str, tick: u64) -> String {
    let d = Sha256::digest(format!("id/{key}/{tick}").as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    // GCE's ids are 19-digit numbers; keep the top bit clear so they stay below i64::MAX too.
    (u64::from_be_bytes(b) >> 1 | 1 << 60).to_string()
}

/// A fingerprint: 8 bytes, new on every write, in the URL-safe base64 alphabet with padding (GCE's
/// discovery format `byte`, e.g. `yfV4JOGc_sQ=`); google-cloud-compute-v1 refuses `+` and `/`.
pub(crate) fn fingerprint(key: &str, tick: u64) -> String {
    use base64::Engine as _;
    let d = Sha256::digest(format!("fingerprint/{key}/{tick}").as_bytes());
    base64::engine::general_purpose::URL_SAFE.encode(&d[..8])
}

/// An IAM service account's `etag`: 8 bytes, new on every write, in the standard base64 alphabet (IAM
/// is a protobuf API, whose JSON writes bytes as standard base64; google-cloud-iam-admin-v1 refuses the
/// URL-safe `-` and `_`).
pub(crate) fn etag(key: &str, tick: u64) -> String {
    use base64::Engine as _;
    let d = Sha256::digest(format!("fingerprint/{key}/{tick}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&d[..8])
}

/// The simulated time of tick `n`: 2026-01-01T00:00:00Z plus `n` seconds, RFC 3339 with
/// milliseconds as GCE writes it (by jiff; past its range, the year 9999, jiff's last instant).
pub(crate) fn timestamp(n: u64) -> String {
    const START: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z in seconds since the Unix epoch
    let ts = i64::try_from(n)
        .ok()
        .and_then(|n| n.checked_add(START))
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .unwrap_or(jiff::Timestamp::MAX);
    format!("{ts:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subnet(network: &str) -> Entry {
        Entry {
            value: serde_json::json!({"network": network, "selfLink": "x"}),
            origin: Origin::Api,
            auto: false,
            declared: None,
        }
    }

    #[test]
    fn the_subnetworks_of_a_network_follow_puts_moves_and_takes() {
        let (a, b) = ("https://x/projects/p/global/networks/a", "https://x/projects/p/global/networks/b");
        let (s1, s2) = ("projects/p/regions/r/subnetworks/s1", "projects/p/regions/r/subnetworks/s2");
        let mut store = GceStore::default();
        store.put(s1.into(), subnet(a));
        store.put(s2.into(), subnet(a));
        store.put(s2.into(), subnet(a));
        assert_eq!(store.subnets_of(a).count(), 2);
        store.put(s1.into(), subnet(b));
        assert_eq!(store.subnets_of(a).count(), 1);
        assert_eq!(store.subnets_of(b).count(), 1);
        store.take(s2);
        store.take(s1);
        assert_eq!(store.subnets_of(a).count() + store.subnets_of(b).count(), 0);
        store.put("projects/p/global/networks/a".into(), subnet(a));
        assert_eq!(store.subnets_of(a).count(), 0, "only subnetworks are listed");
    }

    /// The firewall rules and routes of a network follow puts, moves to another network and takes.
    #[test]
    fn the_rules_of_a_network_follow_puts_moves_and_takes() {
        let (a, b) = ("https://x/projects/p/global/networks/a", "https://x/projects/p/global/networks/b");
        let (fw, route) = ("projects/p/global/firewalls/fw", "projects/p/global/routes/r");
        let in_net = |n: &str| Entry {
            value: serde_json::json!({"network": n}),
            origin: Origin::Api,
            auto: false,
            declared: None,
        };
        let mut store = GceStore::default();
        store.put(fw.into(), in_net(a));
        store.put(route.into(), in_net(a));
        store.put("projects/p/regions/r/subnetworks/s".into(), in_net(a));
        let keys = |store: &GceStore, n: &str| {
            let by_name =
                store.rules_in(|x| x == n, Some(super::last_segment(n))).into_iter().cloned().collect::<Vec<_>>();
            let tried = store.rules_in(|x| x == n, None).into_iter().cloned().collect::<Vec<_>>();
            assert_eq!(by_name, tried, "looked up by name or every network tried: the same keys");
            by_name
        };
        assert_eq!(keys(&store, a), [fw, route], "firewall rules and routes, not subnetworks");
        store.put(fw.into(), in_net(b));
        assert_eq!((keys(&store, a), keys(&store, b)), (vec![route.to_string()], vec![fw.to_string()]));
        store.take(route);
        store.take(fw);
        assert!(keys(&store, a).is_empty() && keys(&store, b).is_empty());
    }

    #[test]
    fn timestamps_are_rfc3339_from_2026() {
        assert_eq!(timestamp(0), "2026-01-01T00:00:00.000Z");
        assert_eq!(timestamp(86_400 * 59 + 3_661), "2026-03-01T01:01:01.000Z");
        assert_eq!(timestamp(86_400 * 365), "2027-01-01T00:00:00.000Z");
        assert_eq!(timestamp(u64::MAX), "9999-12-30T22:00:00.999Z", "past jiff's range: its last instant");
    }

    #[test]
    fn ids_are_decimal_and_fingerprints_base64_of_8_bytes() {
        let id = numeric_id("projects/p/global/networks/n", 1);
        assert!(id.len() >= 18 && id.chars().all(|c| c.is_ascii_digit()), "{id}");
        let fp = fingerprint("projects/p/global/networks/n", 1);
        assert_eq!(fp.len(), 12, "{fp}");
        assert!(fp.ends_with('='));
    }

    /// The simulator wrote fingerprints in the standard base64 alphabet; GCE's are URL-safe (discovery
    /// format `byte`), and the real client (google-cloud-compute-v1) failed to read a resource whose
    /// fingerprint held a `+` or `/` ("the answer is not GCE JSON") when run against `trellis sim serve`.
    #[test]
    fn regression_fingerprints_use_gces_url_safe_base64_alphabet() {
        use base64::Engine as _;
        for tick in 0..200 {
            let fp = fingerprint("projects/p/regions/r/subnetworks/s", tick);
            assert!(!fp.contains(['+', '/']), "{fp}");
            assert_eq!(base64::engine::general_purpose::URL_SAFE.decode(&fp).map(|b| b.len()), Ok(8), "{fp}");
        }
    }
}
