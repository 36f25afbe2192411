//! Fleet-wide reads: one list of the cloud answering the reads of many shoots.
//!
//! A shoot's discovery reads what it owns one resource at a time, or one resource group's worth at a
//! time ([`crate::discover::Observed`]). A fleet's shoots mostly live in one account, and the cloud
//! lists a whole account's resources of a type in one paged call: ARM lists a subscription's
//! resource groups and, for each top-level type, its resources in every group (List All); GCE lists a
//! project's (or region's) collection. [`FleetReads`] sits between a fleet's discovery and the cloud
//! and, when the cloud's calls cost round trips ([`CloudRead::round_trips`]) and a wide list has been
//! asked for often enough ([`WIDE_AFTER`] requests it could answer), runs it once and answers from it:
//!
//! - a GET of a resource the list covers ([`IdScheme::listed_in`]): the item, or absent when the
//!   list does not hold it — the list is authoritative for its type in its scope;
//! - a narrower list ([`IdScheme::list_within`]: a resource group's NAT gateways): the wide list's
//!   items under that parent;
//! - the same list again (GCE's project-wide firewall list, asked by every shoot): its items.
//!
//! Each item is handed out once (a GET or the narrower list that includes it takes it, so memory
//! shrinks as the fleet is planned); asked again — a shared resource, a second shoot's GET of the
//! same user VNet — it is read on its own, as it would have been without this layer. A wide list
//! the cloud refuses (a credential scoped to some resource groups only, a transient error) is not
//! tried again: its requests go to the cloud as asked. What a plan reads is therefore the same
//! whether it came from a wide list or its own call; only the number of calls differs.

use crate::cloud::{CloudError, CloudRead, ListFilter};
use crate::ids::IdScheme;
use async_trait::async_trait;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::OnceCell;

/// How many requests a wide list could answer are sent as asked before it is run: a plan of one or
/// two shoots never lists the whole account, a fleet's pays the wide list once.
pub const WIDE_AFTER: usize = 3;

/// A [`CloudRead`] answering from wide lists where it can (see the module doc), the rest through
/// the cloud it wraps. One per fleet run: what it read is a snapshot of that run.
pub struct FleetReads {
    inner: Arc<dyn CloudRead>,
    ids: &'static dyn IdScheme,
    after: usize,
    slots: Mutex<HashMap<(String, String), Slot>>,
}

/// A wide list: still counting the requests it could answer, or run (or being run).
enum Slot {
    Counting(usize),
    Run(Arc<OnceCell<Option<Arc<Mutex<Wide>>>>>),
}

/// A wide list's answer, as handed out so far.
#[derive(Default)]
struct Wide {
    /// Id key → the item, not handed out yet.
    items: BTreeMap<String, Value>,
    /// Keys of the items handed out to a GET or a narrower list.
    taken: BTreeSet<String>,
    /// Keys of the parents whose narrower list was answered.
    answered: BTreeSet<String>,
    /// The list itself was answered (GCE): items are shared from then on, never taken.
    shared: bool,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FleetReads {
    /// Reads through `inner`, ids compared under `ids`, wide lists run after [`WIDE_AFTER`] requests.
    pub fn new(inner: Arc<dyn CloudRead>, ids: &'static dyn IdScheme) -> FleetReads {
        FleetReads::after(inner, ids, WIDE_AFTER)
    }

    /// [`FleetReads::new`], a wide list run once `after` requests it could answer were sent as asked
    /// (0: at the first; `usize::MAX`: never).
    pub fn after(inner: Arc<dyn CloudRead>, ids: &'static dyn IdScheme, after: usize) -> FleetReads {
        FleetReads { inner, ids, after, slots: Mutex::new(HashMap::new()) }
    }

    /// The wide list `parent/rtype`, run once enough requests asked for it; `None`: not (yet), or
    /// the cloud refused it.
    async fn wide(&self, parent: String, rtype: &str) -> Option<Arc<Mutex<Wide>>> {
        let cell = {
            let mut slots = locked(&self.slots);
            let slot = slots.entry((self.ids.key(&parent), rtype.to_ascii_lowercase())).or_insert(Slot::Counting(0));
            match slot {
                Slot::Counting(n) if *n < self.after => {
                    *n += 1;
                    return None;
                }
                Slot::Counting(_) => {
                    let cell = Arc::new(OnceCell::new());
                    *slot = Slot::Run(Arc::clone(&cell));
                    cell
                }
                Slot::Run(cell) => Arc::clone(cell),
            }
        };
        cell.get_or_init(|| async {
            let items = self.inner.list(&parent, rtype).await.ok()?;
            let mut wide = Wide::default();
            for item in items {
                // An item without an id could be any resource: the list cannot say what is absent.
                let key = self.ids.key(self.ids.item_id(&item)?);
                wide.items.entry(key).or_insert(item);
            }
            Some(Arc::new(Mutex::new(wide)))
        })
        .await
        .clone()
    }

    /// What the wide list answers for a GET of `id`; `None`: ask the cloud.
    async fn get_wide(&self, id: &str) -> Option<Option<Value>> {
        let (parent, rtype) = self.ids.listed_in(id)?;
        let wide = self.wide(parent, &rtype).await?;
        let key = self.ids.key(id);
        let mut w = locked(&wide);
        if w.shared {
            return Some(w.items.get(&key).cloned());
        }
        if w.taken.contains(&key) {
            return None;
        }
        let item = w.items.remove(&key);
        if item.is_some() {
            w.taken.insert(key);
        }
        Some(item)
    }

    /// What the wide list answers for `list(parent, rtype)`, the items `keep` passes; `None`: ask the cloud.
    async fn list_wide(&self, parent: &str, rtype: &str, keep: impl Fn(&Value) -> bool) -> Option<Vec<Value>> {
        let wide_parent = self.ids.list_within(parent, rtype)?;
        let same = self.ids.key(&wide_parent) == self.ids.key(parent);
        let wide = self.wide(wide_parent, rtype).await?;
        let mut w = locked(&wide);
        if same {
            if !w.taken.is_empty() {
                return None;
            }
            w.shared = true;
            return Some(w.items.values().filter(|item| keep(item)).cloned().collect());
        }
        let prefix = format!("{}/", self.ids.key(parent));
        let under = |set: &BTreeSet<String>| set.range(prefix.clone()..).next().is_some_and(|k| k.starts_with(&prefix));
        let keys: Vec<String> =
            w.items.range(prefix.clone()..).map(|(k, _)| k).take_while(|k| k.starts_with(&prefix)).cloned().collect();
        if w.shared {
            return Some(keys.iter().filter_map(|k| w.items.get(k)).filter(|item| keep(item)).cloned().collect());
        }
        if w.answered.contains(&prefix) || under(&w.taken) {
            return None;
        }
        let items = keys
            .into_iter()
            .filter_map(|k| {
                let item = w.items.remove(&k);
                w.taken.insert(k);
                item
            })
            .filter(|item| keep(item))
            .collect();
        w.answered.insert(prefix);
        Some(items)
    }
}

#[async_trait]
impl CloudRead for FleetReads {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        if !self.inner.round_trips() {
            return self.inner.get(id).await;
        }
        match self.get_wide(id).await {
            Some(answer) => Ok(answer),
            None => self.inner.get(id).await,
        }
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        if !self.inner.round_trips() {
            return self.inner.list(parent, rtype).await;
        }
        match self.list_wide(parent, rtype, |_| true).await {
            Some(items) => Ok(items),
            None => self.inner.list(parent, rtype).await,
        }
    }

    /// A narrowed list is answered by the wide list as the whole one is, narrowed here.
    async fn list_where(&self, parent: &str, rtype: &str, filter: &ListFilter) -> Result<Vec<Value>, CloudError> {
        if !self.inner.round_trips() {
            return self.inner.list_where(parent, rtype, filter).await;
        }
        match self.list_wide(parent, rtype, |item| filter.matches(item)).await {
            Some(items) => Ok(items),
            None => self.inner.list_where(parent, rtype, filter).await,
        }
    }

    fn round_trips(&self) -> bool {
        self.inner.round_trips()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::{ListReq, Observed};
    use crate::ids::{ArmIds, GceIds};
    use crate::retry::RetryPolicy;
    use serde_json::json;

    const SUB: &str = "/subscriptions/s";
    const NATS: &str = "Microsoft.Network/natGateways";

    fn rg(n: usize) -> String {
        format!("{SUB}/resourceGroups/rg{n}")
    }
    fn nat(n: usize) -> String {
        format!("{}/providers/Microsoft.Network/natGateways/nat", rg(n))
    }

    /// Resource groups rg1…rgN, each with a NAT gateway, as ARM answers GETs and lists; every call
    /// counted, and the subscription-wide lists refused when `refuse_wide`.
    struct Arm {
        groups: usize,
        refuse_wide: bool,
        calls: Mutex<Vec<String>>,
    }

    impl Arm {
        fn new(groups: usize) -> Arc<Arm> {
            Arc::new(Arm { groups, refuse_wide: false, calls: Mutex::new(Vec::new()) })
        }
        fn calls(&self) -> Vec<String> {
            locked(&self.calls).clone()
        }
        fn all(&self) -> Vec<Value> {
            (1..=self.groups).flat_map(|n| [json!({"id": rg(n)}), json!({"id": nat(n), "n": n})]).collect()
        }
    }

    #[async_trait]
    impl CloudRead for Arm {
        async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
            locked(&self.calls).push(format!("GET {id}"));
            Ok(self.all().into_iter().find(|v| ArmIds.same(v["id"].as_str().unwrap_or_default(), id)))
        }
        async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
            locked(&self.calls).push(format!("LIST {parent}/{rtype}"));
            if parent == SUB && self.refuse_wide {
                return Err(CloudError::Rejected {
                    target: parent.into(),
                    status: 403,
                    code: "AuthorizationFailed".into(),
                    message: "scoped to resource groups".into(),
                });
            }
            let is_rg = rtype.ends_with("resourceGroups");
            Ok(self
                .all()
                .into_iter()
                .filter(|v| {
                    let id = v["id"].as_str().unwrap_or_default().to_ascii_lowercase();
                    let parent = parent.to_ascii_lowercase();
                    id.starts_with(&format!("{parent}/")) && (is_rg != id.contains("/providers/"))
                })
                .collect())
        }
    }

    /// One shoot's discovery: its resource group, then its NAT gateways as a list covering its own.
    async fn discover(cloud: &dyn CloudRead, n: usize) -> Observed {
        let mut observed = Observed::new(&ArmIds);
        let retry = RetryPolicy::immediate(1);
        observed.fetch(cloud, &retry, &[rg(n)], &[]).await.unwrap();
        let req = ListReq::new(rg(n), NATS).covering([nat(n)]);
        observed.fetch(cloud, &retry, &[], &[req]).await.unwrap();
        observed
    }

    #[tokio::test]
    async fn regression_a_fleet_reads_through_one_wide_list_per_type_after_a_few_shoots() {
        let arm = Arm::new(10);
        let reads = FleetReads::after(Arc::clone(&arm) as Arc<dyn CloudRead>, &ArmIds, 2);
        for n in 1..=10 {
            let observed = discover(&reads, n).await;
            let alone = discover(arm.as_ref(), n).await;
            assert_eq!(format!("{observed:?}"), format!("{alone:?}"), "shoot {n}: what its own reads give");
        }
        let calls = arm.calls();
        let wide: Vec<&String> = calls.iter().filter(|c| c.starts_with(&format!("LIST {SUB}/M"))).collect();
        assert_eq!(wide.len(), 2, "the subscription's resource groups and NAT gateways, once each: {calls:#?}");
        // Two shoots read on their own for each type (the threshold), then the wide lists answer
        // the other eight; the shoots' own reads (`alone`) are 2 a shoot.
        assert_eq!(calls.len(), 2 * 2 + 2 + 2 * 10, "{calls:#?}");
    }

    #[tokio::test]
    async fn regression_an_item_handed_out_once_is_read_again_on_its_own_never_taken_for_absent() {
        let arm = Arm::new(3);
        let reads = FleetReads::after(Arc::clone(&arm) as Arc<dyn CloudRead>, &ArmIds, 0);
        assert_eq!(reads.get(&nat(2)).await.unwrap().unwrap()["n"], 2);
        assert_eq!(arm.calls().len(), 1, "the wide list: {:?}", arm.calls());
        // Asked again (a resource two shoots read): the cloud answers, not "absent".
        assert_eq!(reads.get(&nat(2)).await.unwrap().unwrap()["n"], 2);
        assert_eq!(arm.calls().last().map(String::as_str), Some(format!("GET {}", nat(2)).as_str()));
        // The group's list after one of its items was handed out: run as asked.
        let listed = reads.list(&rg(2), NATS).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(arm.calls().last().map(String::as_str), Some(format!("LIST {}/{NATS}", rg(2)).as_str()));
        // Another group's list comes from the wide list, once; absent ids are absent.
        let before = arm.calls().len();
        assert_eq!(reads.list(&rg(3), NATS).await.unwrap().len(), 1);
        assert_eq!(reads.get(&format!("{}/providers/Microsoft.Network/natGateways/other", rg(1))).await.unwrap(), None);
        assert_eq!(arm.calls().len(), before, "answered by the wide list");
        reads.list(&rg(3), NATS).await.unwrap();
        assert_eq!(arm.calls().len(), before + 1, "a list answered once is run as asked the second time");
    }

    #[tokio::test]
    async fn regression_a_refused_wide_list_leaves_the_reads_as_they_were() {
        let arm = Arc::new(Arm { groups: 4, refuse_wide: true, calls: Mutex::new(Vec::new()) });
        let reads = FleetReads::after(Arc::clone(&arm) as Arc<dyn CloudRead>, &ArmIds, 0);
        for n in 1..=4 {
            assert_eq!(format!("{:?}", discover(&reads, n).await), format!("{:?}", discover(arm.as_ref(), n).await));
        }
        let wide = arm.calls().iter().filter(|c| c.starts_with(&format!("LIST {SUB}/M"))).count();
        assert_eq!(wide, 2, "each wide list tried once: {:?}", arm.calls());
    }

    /// A cloud in this process, answering at once.
    struct InProcess(Arc<Arm>);

    #[async_trait]
    impl CloudRead for InProcess {
        async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
            self.0.get(id).await
        }
        async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
            self.0.list(parent, rtype).await
        }
        fn round_trips(&self) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn a_cloud_without_round_trips_is_read_as_asked() {
        let arm = Arm::new(5);
        let reads = FleetReads::after(Arc::new(InProcess(Arc::clone(&arm))), &ArmIds, 0);
        for n in 1..=5 {
            discover(&reads, n).await;
        }
        assert_eq!(arm.calls().len(), 2 * 5, "each shoot's own reads: {:?}", arm.calls());
    }

    /// A GCE project's collections, listed whole; a router with its NATs.
    struct Gce(Mutex<Vec<String>>);

    const ROUTER: &str = "projects/p/regions/r/routers/rt";

    #[async_trait]
    impl CloudRead for Gce {
        async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
            locked(&self.0).push(format!("GET {id}"));
            let router = json!({"selfLink": format!("https://www.googleapis.com/compute/v1/{ROUTER}"),
                "nats": [{"name": "a", "x": 1}, {"name": "b", "x": 2}]});
            Ok(match id {
                ROUTER => Some(router),
                _ if id.starts_with(&format!("{ROUTER}/nats/")) => Some(json!({"name": "a", "x": 1})),
                _ => None,
            })
        }
        async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
            locked(&self.0).push(format!("LIST {parent}/{rtype}"));
            Ok(vec![
                json!({"selfLink": format!("https://www.googleapis.com/compute/v1/{parent}/{rtype}/fw"), "id": "7"}),
            ])
        }
    }

    #[tokio::test]
    async fn regression_a_gce_nat_is_read_with_its_router_in_one_call() {
        let gce = Gce(Mutex::new(Vec::new()));
        let mut observed = Observed::new(&GceIds);
        let ids = [ROUTER.to_string(), format!("{ROUTER}/nats/a"), format!("{ROUTER}/nats/c")];
        observed.fetch(&gce, &RetryPolicy::immediate(1), &ids, &[]).await.unwrap();
        assert_eq!(locked(&gce.0).clone(), [format!("GET {ROUTER}")], "the router only");
        assert_eq!(observed.get(&ids[1]).unwrap(), Some(&json!({"name": "a", "x": 1})), "the router's entry");
        assert_eq!(observed.get(&ids[2]).unwrap(), None, "no such entry: absent");
        // Without its router in the round, a NAT is read on its own.
        let mut alone = Observed::new(&GceIds);
        alone.fetch(&gce, &RetryPolicy::immediate(1), &ids[1..2], &[]).await.unwrap();
        assert!(alone.get(&ids[1]).unwrap().is_some());
    }

    #[tokio::test]
    async fn a_gce_collection_list_is_shared_by_the_shoots_and_answers_their_gets() {
        let gce = Arc::new(Gce(Mutex::new(Vec::new())));
        let reads = FleetReads::after(Arc::clone(&gce) as Arc<dyn CloudRead>, &GceIds, 0);
        for _ in 0..5 {
            assert_eq!(reads.list("projects/p/global", "firewalls").await.unwrap().len(), 1);
        }
        assert!(reads.get("projects/p/global/firewalls/fw").await.unwrap().is_some(), "shared, not taken");
        assert_eq!(reads.get("projects/p/global/firewalls/other").await.unwrap(), None);
        assert_eq!(locked(&gce.0).len(), 1, "one list for all: {:?}", locked(&gce.0));
    }

    /// Narrowed lists (each shoot's own VPC's rules) are answered by the one wide list too, each
    /// narrowed to what its filter passes.
    #[tokio::test]
    async fn narrowed_gce_lists_are_answered_by_the_wide_list_narrowed() {
        let gce = Arc::new(Gce(Mutex::new(Vec::new())));
        let reads = FleetReads::after(Arc::clone(&gce) as Arc<dyn CloudRead>, &GceIds, 0);
        let (fw, other) = (ListFilter::new("selfLink", "fw"), ListFilter::new("selfLink", "other"));
        for _ in 0..3 {
            assert_eq!(reads.list_where("projects/p/global", "firewalls", &fw).await.unwrap().len(), 1);
            assert!(reads.list_where("projects/p/global", "firewalls", &other).await.unwrap().is_empty());
        }
        assert_eq!(locked(&gce.0).clone(), ["LIST projects/p/global/firewalls"], "one wide list for all");
    }
}
