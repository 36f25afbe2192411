//! Read-only discovery: what exists in the cloud right now.
//!
//! Providers discover in rounds (a BYO subnet first, then the route table and NSG it points at), each
//! round a batch of concurrent GETs and lists through [`Observed::fetch`]. Transient errors are retried
//! with the same policy as the executor.
//!
//! A snapshot answers three ways, never two: a resource is present, or it was looked up and is absent,
//! or it was never looked up ([`NotFetched`]). A question discovery never asked is a bug in the
//! provider's discovery, reported as such ([`FetchBug`]) — never taken for "absent", which would plan
//! a create for a resource that exists.

use crate::cloud::{CloudError, CloudRead, ListFilter};
use crate::ids::IdScheme;
use crate::retry::RetryPolicy;
use futures::future::join_all;
use serde_json::Value;
use std::collections::BTreeMap;

/// One list request: the children of `parent` of REST type `rtype`.
///
/// `covers` names children the provider wants to know about: the list answers for them (present if
/// listed, absent if not), so they need no GET of their own — one read per resource. A narrowed list
/// answers for those it lists only; the others are read by GET. When `parent` is
/// already known to be absent, the list is not run at all and every covered id is absent (nothing
/// exists under a resource that does not exist).
///
/// Some parents carry their children in their own body (an ARM virtual network's GET returns its
/// subnets, whole, under `properties.subnets`): with [`ListReq::embedded_at`], a parent fetched
/// before (an earlier round) answers the list from its body and the list is not run — the children
/// were read once already.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListReq {
    pub parent: String,
    pub rtype: String,
    pub covers: Vec<String>,
    /// JSON pointer to the array of these children in the parent's own body, when it has one.
    pub embedded: Option<&'static str>,
    /// Only the children that pass it are listed ([`CloudRead::list_where`]): what the shoot's plan
    /// reads of the list (GCE: the firewall rules of its network, not of the whole project).
    pub filter: Option<ListFilter>,
}

impl ListReq {
    /// A list whose result no GET stands in for (a scan for leftovers).
    pub fn new(parent: impl Into<String>, rtype: impl Into<String>) -> ListReq {
        ListReq { parent: parent.into(), rtype: rtype.into(), covers: Vec::new(), embedded: None, filter: None }
    }

    /// The list, narrowed to what passes `filter`. [`Observed::list`] answers it under its parent and
    /// type. It answers for the covered ids it lists; one it leaves out may exist outside the filter
    /// (a GCE firewall rule's name is the project's, whichever network holds it), so
    /// [`Observed::fetch`] reads it by GET — never "absent" for want of a look.
    pub fn narrowed(mut self, filter: ListFilter) -> ListReq {
        self.filter = Some(filter);
        self
    }

    /// The list, answered by the parent's body at `pointer` when the parent was fetched already.
    pub fn embedded_at(mut self, pointer: &'static str) -> ListReq {
        self.embedded = Some(pointer);
        self
    }

    /// The list, answering for these children too.
    pub fn covering(mut self, ids: impl IntoIterator<Item = String>) -> ListReq {
        self.covers.extend(ids);
        self
    }
}

/// A question about the cloud that discovery never asked: a bug in the provider, never "absent".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotFetched {
    /// A GET of this id was never made.
    #[error("{0} was never fetched")]
    Resource(String),
    /// This list request was never run (and its parent is not known to be absent).
    #[error("the list of {rtype} under {parent} was never run")]
    List { parent: String, rtype: String },
}

impl NotFetched {
    /// The bug report, naming the stage that asked.
    pub fn in_stage(self, stage: &'static str) -> FetchBug {
        FetchBug { stage, missing: self }
    }
}

/// A stage asked about something discovery never fetched: an internal error, with what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bug: {missing} before planning (stage: {stage}); please report")]
pub struct FetchBug {
    /// The stage that asked, e.g. `diff` or `azure preflight`.
    pub stage: &'static str,
    pub missing: NotFetched,
}

/// A snapshot of observed cloud state. Ids are compared through the provider's [`IdScheme`]
/// (ARM: case-insensitively, the default).
#[derive(Clone)]
pub struct Observed {
    ids: &'static dyn IdScheme,
    /// Id key ([`IdScheme::key`]) → the resource (`None`: looked up, does not exist).
    resources: BTreeMap<String, Option<Value>>,
    /// List results by (parent as a key, type), in the order listed.
    lists: BTreeMap<(String, String), Vec<Listed>>,
}

/// One item of a list result: an id key (its resource is in `resources`), or an item whose id an
/// earlier item of the same answer holds already, kept as listed.
#[derive(Clone, Debug)]
enum Listed {
    Id(String),
    Repeated(Value),
}

impl std::fmt::Debug for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observed").field("resources", &self.resources).field("lists", &self.lists).finish()
    }
}

impl Observed {
    /// An empty snapshot whose ids compare under `ids`.
    pub fn new(ids: &'static dyn IdScheme) -> Observed {
        Observed { ids, resources: BTreeMap::new(), lists: BTreeMap::new() }
    }

    /// The id scheme ids are compared under.
    pub fn ids(&self) -> &'static dyn IdScheme {
        self.ids
    }

    fn key(&self, id: &str) -> String {
        self.ids.key(id)
    }

    /// The map key of a list request: the parent compared as the scheme compares ids.
    fn list_key(&self, req: &ListReq) -> (String, String) {
        (self.key(&req.parent), req.rtype.clone())
    }

    /// GETs every id not looked up yet and runs every list not run yet, all concurrently. A list
    /// under a parent known to be absent is not run (see [`ListReq`]); an id a list covers is not
    /// fetched on its own.
    pub async fn fetch(
        &mut self,
        cloud: &dyn CloudRead,
        retry: &RetryPolicy,
        ids: &[String],
        lists: &[ListReq],
    ) -> Result<(), CloudError> {
        let mut todo: Vec<&ListReq> = Vec::new();
        let mut unlisted = Vec::new();
        for req in lists {
            if self.lists.contains_key(&self.list_key(req)) {
                continue;
            }
            match (req.embedded, self.resources.get(&self.key(&req.parent))) {
                (_, Some(None)) => {
                    for id in &req.covers {
                        let key = self.key(id);
                        self.resources.entry(key).or_insert(None);
                    }
                    continue;
                }
                (Some(pointer), Some(Some(parent))) => {
                    let items = parent.pointer(pointer).and_then(Value::as_array).cloned().unwrap_or_default();
                    unlisted.extend(self.answer(req, items));
                    continue;
                }
                _ => {}
            }
            todo.push(req);
        }
        todo.sort_by_key(|l| self.list_key(l));
        todo.dedup_by_key(|l| self.list_key(l));
        let covered: std::collections::BTreeSet<String> =
            todo.iter().flat_map(|l| l.covers.iter().map(|id| self.key(id))).collect();
        let mut wanted: Vec<&String> = ids
            .iter()
            .filter(|id| !self.resources.contains_key(&self.key(id)) && !covered.contains(&self.key(id)))
            .collect();
        wanted.sort_by_key(|id| self.key(id));
        wanted.dedup_by_key(|id| self.key(id));
        // An entry of another resource's body (a GCE Cloud NAT in its router's `nats[]`) whose
        // parent this round GETs, or an earlier one read, is taken from the parent: one read.
        let getting: std::collections::BTreeSet<String> = wanted.iter().map(|id| self.key(id)).collect();
        let mut entries: Vec<(String, String, &'static str, String)> = Vec::new();
        wanted.retain(|id| match self.ids.entry_of(id) {
            Some((parent, pointer, name)) => {
                let parent = self.key(&parent);
                let known = self.resources.contains_key(&parent) || getting.contains(&parent);
                if known {
                    entries.push((self.key(id), parent, pointer, name));
                }
                !known
            }
            None => true,
        });
        let (gets, listed) = futures::join!(
            join_all(wanted.iter().map(|id| retry.run(|| cloud.get(id)))),
            join_all(todo.iter().map(|&l| retry.run(move || async move {
                match &l.filter {
                    Some(filter) => cloud.list_where(&l.parent, &l.rtype, filter).await,
                    None => cloud.list(&l.parent, &l.rtype).await,
                }
            })))
        );
        for (id, got) in wanted.into_iter().zip(gets) {
            self.resources.insert(self.key(id), got?);
        }
        for (req, got) in todo.into_iter().zip(listed) {
            unlisted.extend(self.answer(req, got?));
        }
        // What a narrowed list left out of its covers is read by GET: absent in the list's network
        // is not absent (a rule of that name in another network is still the name's owner).
        unlisted.sort_by_key(|id| self.key(id));
        unlisted.dedup_by_key(|id| self.key(id));
        let gets = join_all(unlisted.iter().map(|id| retry.run(|| cloud.get(id)))).await;
        for (id, got) in unlisted.iter().zip(gets) {
            self.resources.insert(self.key(id), got?);
        }
        for (key, parent, pointer, name) in entries {
            let entry = self.resources.get(&parent).and_then(Option::as_ref).and_then(|p| {
                p.pointer(pointer)?
                    .as_array()?
                    .iter()
                    .find(|e| e.get("name").and_then(Value::as_str) == Some(name.as_str()))
                    .cloned()
            });
            self.resources.insert(key, entry);
        }
        Ok(())
    }

    /// Records a resource directly, as a GET would have (`None`: looked up, does not exist).
    pub fn insert(&mut self, id: &str, value: Option<Value>) {
        self.resources.insert(self.key(id), value);
    }

    /// Records a list result directly, as running the request would have. Items are kept in id
    /// order; two items of one answer with the same id (a neutral id naming two resources of one
    /// name, such as two DNS zones `example.com` in two resource groups) are both listed, and the
    /// first one answers a GET of the id.
    pub fn insert_list(&mut self, parent: &str, rtype: &str, items: Vec<Value>) {
        let mut keyed: Vec<(String, Value)> =
            items.into_iter().filter_map(|item| Some((self.key(self.ids.item_id(&item)?), item))).collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        let mut listed = Vec::with_capacity(keyed.len());
        let mut last: Option<String> = None;
        for (key, item) in keyed {
            if last.as_ref() == Some(&key) {
                listed.push(Listed::Repeated(item));
                continue;
            }
            self.resources.insert(key.clone(), Some(item));
            listed.push(Listed::Id(key.clone()));
            last = Some(key);
        }
        self.lists.insert(self.list_key(&ListReq::new(parent, rtype)), listed);
    }

    /// Records the answer to a list request: the items, and every covered id the items do not include
    /// as absent — unless the list was narrowed ([`ListReq::narrowed`]): those are returned, unknown,
    /// for a GET. [`Observed::fetch`] records what the cloud listed (or a parent's body held) so; tests
    /// of a provider's stages record answers without a cloud.
    #[must_use = "covered ids a narrowed list left out are still unknown: read them by GET"]
    pub fn answer(&mut self, req: &ListReq, items: Vec<Value>) -> Vec<String> {
        self.insert_list(&req.parent, &req.rtype, items);
        let mut unlisted = Vec::new();
        for id in &req.covers {
            let key = self.key(id);
            if self.resources.contains_key(&key) {
                continue;
            }
            if req.filter.is_some() {
                unlisted.push(id.clone());
            } else {
                self.resources.insert(key, None);
            }
        }
        unlisted
    }

    /// The resource: `Ok(Some)` present, `Ok(None)` looked up and absent, `Err` never looked up.
    pub fn get(&self, id: &str) -> Result<Option<&Value>, NotFetched> {
        match self.resources.get(&self.key(id)) {
            Some(found) => Ok(found.as_ref()),
            None => Err(NotFetched::Resource(id.to_string())),
        }
    }

    /// The resources a list request returned. A request that was never run is [`NotFetched`] —
    /// unless its parent was looked up and is absent: nothing exists under a resource that does not
    /// exist (ARM's containment), so discovery need not list it.
    pub fn list(&self, parent: &str, rtype: &str) -> Result<Vec<&Value>, NotFetched> {
        let req = self.list_key(&ListReq::new(parent, rtype));
        match self.lists.get(&req) {
            Some(items) => Ok(items
                .iter()
                .filter_map(|item| match item {
                    Listed::Id(key) => self.resources.get(key).and_then(Option::as_ref),
                    Listed::Repeated(value) => Some(value),
                })
                .collect()),
            None if matches!(self.resources.get(&self.key(parent)), Some(None)) => Ok(Vec::new()),
            None => Err(NotFetched::List { parent: parent.to_string(), rtype: rtype.to_string() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ArmIds;
    use serde_json::json;

    const NAT: &str = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/natGateways/n";
    const RG: &str = "/subscriptions/s/resourceGroups/rg";
    const NATS: &str = "Microsoft.Network/natGateways";

    #[test]
    fn regression_observed_tells_never_fetched_from_absent() {
        let mut observed = Observed::new(&ArmIds);
        assert_eq!(observed.get(NAT), Err(NotFetched::Resource(NAT.to_string())), "never looked up");
        observed.insert(NAT, None);
        assert_eq!(observed.get(NAT), Ok(None), "looked up, absent");
        observed.insert(&NAT.to_uppercase(), Some(json!({"id": NAT})));
        assert_eq!(observed.get(NAT), Ok(Some(&json!({"id": NAT}))), "present, ids compared case-insensitively");
    }

    #[test]
    fn regression_observed_list_never_run_is_not_empty() {
        let mut observed = Observed::new(&ArmIds);
        assert_eq!(
            observed.list(RG, NATS),
            Err(NotFetched::List { parent: RG.to_string(), rtype: NATS.to_string() }),
            "a list never run is not an empty list"
        );
        observed.insert(RG, Some(json!({"id": RG})));
        assert!(observed.list(RG, NATS).is_err(), "the parent exists: its children were never listed");
        observed.insert_list(&RG.to_uppercase(), NATS, vec![json!({"id": NAT, "name": "n"})]);
        assert_eq!(observed.list(RG, NATS).unwrap().len(), 1);
        assert_eq!(
            observed.get(NAT).unwrap().and_then(|n| n.get("name")),
            Some(&json!("n")),
            "listed items are fetched"
        );

        let mut gone = Observed::new(&ArmIds);
        gone.insert(RG, None);
        assert_eq!(gone.list(RG, NATS), Ok(vec![]), "nothing exists under an absent parent");
    }

    #[test]
    fn a_list_answer_with_two_items_of_one_id_lists_both_and_the_first_answers_a_get() {
        let mut observed = Observed::new(&crate::ids::DnsIds);
        let zone =
            |rg: &str| json!({"id": "/dns/zones/example.com", "name": "example.com", "azure": {"resourceGroup": rg}});
        observed.insert_list(
            "/dns",
            "zones",
            vec![zone("b"), json!({"id": "/dns/zones/a.org", "name": "a.org"}), zone("c")],
        );
        let listed = observed.list("/dns", "zones").unwrap();
        let groups: Vec<Option<&Value>> = listed.iter().map(|z| z.pointer("/azure/resourceGroup")).collect();
        assert_eq!(groups, [None, Some(&json!("b")), Some(&json!("c"))], "both zones listed, in id order");
        assert_eq!(observed.get("/dns/zones/example.com").unwrap().unwrap()["azure"]["resourceGroup"], "b");
    }

    #[test]
    fn regression_observed_compares_ids_through_the_scheme() {
        let mut arm = Observed::new(&ArmIds);
        arm.insert(NAT, Some(json!({"id": NAT})));
        assert!(arm.get(&NAT.to_uppercase()).unwrap().is_some(), "ARM: one resource whatever the case");

        let net = "https://www.googleapis.com/compute/v1/projects/p/global/networks/Net";
        let mut gce = Observed::new(&crate::ids::GceIds);
        gce.insert(net, Some(json!({"selfLink": net})));
        assert!(gce.get(net).unwrap().is_some());
        assert_eq!(
            gce.get(&net.to_lowercase()),
            Err(NotFetched::Resource(net.to_lowercase())),
            "GCE: another case is another resource"
        );
    }

    /// A cloud holding one RG with one NAT gateway, counting the calls it answers.
    struct OneNat(std::sync::Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl CloudRead for OneNat {
        async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
            self.0.lock().unwrap().push(format!("GET {id}"));
            Ok((id.eq_ignore_ascii_case(RG) || id.eq_ignore_ascii_case(NAT)).then(|| json!({"id": id})))
        }
        async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
            self.0.lock().unwrap().push(format!("LIST {parent}/{rtype}"));
            Ok(if parent.eq_ignore_ascii_case(RG) && rtype == NATS { vec![json!({"id": NAT})] } else { vec![] })
        }
    }

    #[tokio::test]
    async fn regression_a_list_answers_for_the_ids_it_covers_with_one_read() {
        let cloud = OneNat(Default::default());
        let retry = RetryPolicy::immediate(1);
        let other = format!("{RG}/providers/Microsoft.Network/natGateways/other");
        let mut observed = Observed::new(&ArmIds);
        observed.fetch(&cloud, &retry, &[RG.to_string()], &[]).await.unwrap();
        let req = ListReq::new(RG, NATS).covering([NAT.to_string(), other.clone()]);
        // The covered ids are asked for as GETs too: the list answers, no GET is made.
        observed.fetch(&cloud, &retry, &[NAT.to_string(), other.clone()], &[req]).await.unwrap();
        assert_eq!(observed.get(NAT), Ok(Some(&json!({"id": NAT}))), "listed: present");
        assert_eq!(observed.get(&other), Ok(None), "covered, not listed: absent");
        assert_eq!(cloud.0.lock().unwrap().len(), 2, "one GET of the RG, one LIST: {:?}", cloud.0.lock().unwrap());
    }

    #[tokio::test]
    async fn regression_a_list_under_an_absent_parent_is_not_run_and_its_ids_are_absent() {
        let cloud = OneNat(Default::default());
        let retry = RetryPolicy::immediate(1);
        let gone = "/subscriptions/s/resourceGroups/gone";
        let nat = format!("{gone}/providers/Microsoft.Network/natGateways/n");
        let mut observed = Observed::new(&ArmIds);
        observed.fetch(&cloud, &retry, &[gone.to_string()], &[]).await.unwrap();
        observed.fetch(&cloud, &retry, &[], &[ListReq::new(gone, NATS).covering([nat.clone()])]).await.unwrap();
        assert_eq!(observed.get(&nat), Ok(None));
        assert_eq!(observed.list(gone, NATS), Ok(vec![]));
        assert_eq!(*cloud.0.lock().unwrap(), vec![format!("GET {gone}")], "no list under an absent parent");
    }

    /// A VNet with one subnet, which its GET carries under `properties.subnets` as ARM's does.
    struct OneVnet(std::sync::Mutex<Vec<String>>);

    const VNET: &str = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v";
    const SUBNETS: &str = "Microsoft.Network/virtualNetworks/subnets";

    fn subnet(name: &str) -> String {
        format!("{VNET}/subnets/{name}")
    }

    #[async_trait::async_trait]
    impl CloudRead for OneVnet {
        async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
            self.0.lock().unwrap().push(format!("GET {id}"));
            let a = json!({"id": subnet("a"), "properties": {"addressPrefix": "10.0.0.0/24"}});
            Ok(id.eq_ignore_ascii_case(VNET).then(|| json!({"id": VNET, "properties": {"subnets": [a]}})))
        }
        async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
            self.0.lock().unwrap().push(format!("LIST {parent}/{rtype}"));
            Ok(vec![json!({"id": subnet("a"), "properties": {"addressPrefix": "10.0.0.0/24"}})])
        }
    }

    /// Issue #8: at most one read per resource. A VNet fetched in round one answers the list of its
    /// subnets from its body; without the parent fetched before, the list is run.
    #[tokio::test]
    async fn a_list_embedded_in_a_parent_fetched_before_is_answered_from_its_body() {
        let cloud = OneVnet(Default::default());
        let retry = RetryPolicy::immediate(1);
        let req = ListReq::new(VNET, SUBNETS).covering([subnet("a"), subnet("b")]).embedded_at("/properties/subnets");
        let mut observed = Observed::new(&ArmIds);
        observed.fetch(&cloud, &retry, &[VNET.to_string()], &[]).await.unwrap();
        observed.fetch(&cloud, &retry, &[], std::slice::from_ref(&req)).await.unwrap();
        assert_eq!(*cloud.0.lock().unwrap(), vec![format!("GET {VNET}")], "the VNet's GET answered the list");
        assert_eq!(observed.get(&subnet("a")).unwrap().unwrap()["properties"]["addressPrefix"], "10.0.0.0/24");
        assert_eq!(observed.get(&subnet("b")), Ok(None), "covered, not in the body: absent");
        assert_eq!(observed.list(VNET, SUBNETS).unwrap().len(), 1);

        // In the same round as its parent, the list cannot use the body yet: it runs.
        let cloud = OneVnet(Default::default());
        let mut observed = Observed::new(&ArmIds);
        observed.fetch(&cloud, &retry, &[VNET.to_string()], &[req]).await.unwrap();
        assert_eq!(cloud.0.lock().unwrap().len(), 2, "{:?}", cloud.0.lock().unwrap());
        assert!(observed.get(&subnet("a")).unwrap().is_some());
    }

    /// A GCE project with one firewall rule, as compute v1 lists it: `id` a number, `selfLink` the id.
    struct OneFirewall;

    const FW_URL: &str =
        "https://www.googleapis.com/compute/v1/projects/p/global/firewalls/shoot--p--n-allow-health-checks";

    #[async_trait::async_trait]
    impl CloudRead for OneFirewall {
        async fn get(&self, _id: &str) -> Result<Option<Value>, CloudError> {
            Ok(None)
        }
        async fn list(&self, _parent: &str, _rtype: &str) -> Result<Vec<Value>, CloudError> {
            Ok(vec![
                json!({"id": "5012345678901234567", "name": "shoot--p--n-allow-health-checks", "selfLink": FW_URL}),
            ])
        }
    }

    #[tokio::test]
    async fn regression_gce_list_items_are_keyed_by_self_link() {
        // A GCE list item's `id` is a number: keyed by it, a listed rule was "absent" under the id the
        // list covers, and every plan would create it again.
        let fw = "projects/p/global/firewalls/shoot--p--n-allow-health-checks";
        let req = ListReq::new("projects/p/global", "firewalls").covering([fw.to_string()]);
        let mut observed = Observed::new(&crate::ids::GceIds);
        observed.fetch(&OneFirewall, &RetryPolicy::default(), &[], std::slice::from_ref(&req)).await.unwrap();
        assert!(observed.get(fw).unwrap().is_some(), "the listed rule is present under its selfLink");
        assert_eq!(observed.list("projects/p/global", "firewalls").unwrap().len(), 1);
        let mut answered = Observed::new(&crate::ids::GceIds);
        assert!(answered.answer(&req, vec![json!({"id": "1", "selfLink": FW_URL})]).is_empty());
        assert!(answered.get(fw).unwrap().is_some(), "answer() keys items the same way");
    }

    /// A GCE project's firewall rules in three networks; every call recorded: a list with its filter,
    /// if any, a GET with its id.
    struct ThreeNetworks(std::sync::Mutex<Vec<String>>);

    impl ThreeNetworks {
        fn rules() -> Vec<Value> {
            let rule = |name: &str, vpc: &str| {
                json!({"name": name, "network": format!("https://www.googleapis.com/compute/v1/projects/p/global/networks/{vpc}"),
                    "selfLink": format!("https://www.googleapis.com/compute/v1/projects/p/global/firewalls/{name}")})
            };
            vec![rule("a-rule", "vpc-a"), rule("b-rule", "vpc-b"), rule("a2-rule", "vpc-a2")]
        }
    }

    #[async_trait::async_trait]
    impl CloudRead for ThreeNetworks {
        async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
            self.0.lock().unwrap().push(format!("GET {id}"));
            Ok(Self::rules().into_iter().find(|r| r["selfLink"].as_str().is_some_and(|l| l.ends_with(id))))
        }
        async fn list(&self, _parent: &str, _rtype: &str) -> Result<Vec<Value>, CloudError> {
            self.0.lock().unwrap().push("LIST".into());
            Ok(Self::rules())
        }
        async fn list_where(&self, parent: &str, rtype: &str, filter: &ListFilter) -> Result<Vec<Value>, CloudError> {
            let mut items = self.list(parent, rtype).await?;
            *self.0.lock().unwrap().last_mut().unwrap() = format!("LIST {}", filter.gce_expression());
            items.retain(|item| filter.matches(item));
            Ok(items)
        }
    }

    /// A narrowed list request asks the cloud for what passes its filter only (`list_where`) and is
    /// answered under its parent and type; a covered id it lists needs no GET.
    #[tokio::test]
    async fn a_narrowed_list_asks_the_cloud_for_its_filter_and_answers_for_what_it_lists() {
        let cloud = ThreeNetworks(std::sync::Mutex::new(Vec::new()));
        let in_a = ListFilter::new("network", "vpc-a");
        let a = "projects/p/global/firewalls/a-rule";
        let req = ListReq::new("projects/p/global", "firewalls").narrowed(in_a.clone()).covering([a.into()]);
        let mut observed = Observed::new(&crate::ids::GceIds);
        observed.fetch(&cloud, &RetryPolicy::default(), &[], &[req]).await.unwrap();
        assert_eq!(*cloud.0.lock().unwrap(), [format!("LIST {}", in_a.gce_expression())], "one list, with its filter");
        let names: Vec<&str> = observed
            .list("projects/p/global", "firewalls")
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert_eq!(names, ["a-rule"], "not vpc-b's, nor vpc-a2's (a name that only starts the same)");
        assert!(observed.get(a).unwrap().is_some());
    }

    /// A covered id a narrowed list leaves out is read by GET: a GCE firewall rule's name is the
    /// project's, so a rule of that name in another network exists (and is what the plan must show),
    /// and one in no network is absent. Taken as absent unread, the plan created a rule GCE refuses
    /// (409 alreadyExists) at apply.
    #[tokio::test]
    async fn regression_a_covered_id_a_narrowed_list_leaves_out_is_read_by_get() {
        let cloud = ThreeNetworks(std::sync::Mutex::new(Vec::new()));
        let in_a = ListFilter::new("network", "vpc-a");
        let (b, gone) = ("projects/p/global/firewalls/b-rule", "projects/p/global/firewalls/gone");
        let req =
            ListReq::new("projects/p/global", "firewalls").narrowed(in_a.clone()).covering([b.into(), gone.into()]);
        let mut observed = Observed::new(&crate::ids::GceIds);
        observed.fetch(&cloud, &RetryPolicy::default(), &[], std::slice::from_ref(&req)).await.unwrap();
        assert_eq!(
            *cloud.0.lock().unwrap(),
            [format!("LIST {}", in_a.gce_expression()), format!("GET {b}"), format!("GET {gone}")]
        );
        let found = observed.get(b).unwrap().expect("b-rule exists, in vpc-b");
        assert!(found["network"].as_str().unwrap().ends_with("/vpc-b"));
        assert_eq!(observed.get(gone).unwrap(), None, "read, and absent");
        assert_eq!(observed.list("projects/p/global", "firewalls").unwrap().len(), 1, "the list is still vpc-a's");

        let mut answered = Observed::new(&crate::ids::GceIds);
        assert_eq!(answered.answer(&req, vec![]), [b.to_string(), gone.to_string()], "left for a GET");
        assert_eq!(answered.get(b), Err(NotFetched::Resource(b.into())), "not taken for absent");
    }

    #[test]
    fn a_list_filter_is_gces_regular_expression_on_the_whole_value() {
        let f = ListFilter::new("network", "shoot--p--n.x");
        assert_eq!(f.gce_expression(), r#"network eq ".*/shoot\-\-p\-\-n\.x""#);
        assert!(f.matches(&json!({"network": "projects/p/global/networks/shoot--p--n.x"})));
        assert!(!f.matches(&json!({"network": "projects/p/global/networks/shoot--p--n.x2"})));
        assert!(!f.matches(&json!({"network": "shoot--p--n.x"})), "a reference: a path or URL");
        assert!(!f.matches(&json!({"name": "shoot--p--n.x"})));
    }

    #[test]
    fn fetch_bug_names_what_and_where() {
        let bug = NotFetched::Resource(NAT.to_string()).in_stage("diff");
        assert_eq!(
            bug.to_string(),
            format!("bug: {NAT} was never fetched before planning (stage: diff); please report")
        );
    }
}
