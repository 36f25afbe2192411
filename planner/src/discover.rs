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

use crate::cloud::{CloudError, CloudRead};
use crate::ids::{ArmIds, IdScheme};
use crate::retry::RetryPolicy;
use futures::future::join_all;
use serde_json::Value;
use std::collections::BTreeMap;

/// One list request: the children of `parent` of REST type `rtype`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListReq {
    pub parent: String,
    pub rtype: String,
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
    /// List results by request (parent as a key), as id keys.
    lists: BTreeMap<ListReq, Vec<String>>,
}

impl Default for Observed {
    /// A snapshot of an ARM cloud.
    fn default() -> Self {
        Observed::new(&ArmIds)
    }
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
    fn list_key(&self, req: &ListReq) -> ListReq {
        ListReq { parent: self.key(&req.parent), rtype: req.rtype.clone() }
    }

    /// GETs every id not looked up yet and runs every list not run yet, concurrently.
    pub async fn fetch(
        &mut self,
        cloud: &dyn CloudRead,
        retry: &RetryPolicy,
        ids: &[String],
        lists: &[ListReq],
    ) -> Result<(), CloudError> {
        let mut wanted: Vec<&String> = ids.iter().filter(|id| !self.resources.contains_key(&self.key(id))).collect();
        wanted.sort_by_key(|id| self.key(id));
        wanted.dedup_by_key(|id| self.key(id));
        let gets = join_all(wanted.iter().map(|id| retry.run(|| cloud.get(id)))).await;
        for (id, got) in wanted.into_iter().zip(gets) {
            self.resources.insert(self.key(id), got?);
        }
        let mut todo: Vec<&ListReq> = lists.iter().filter(|l| !self.lists.contains_key(&self.list_key(l))).collect();
        todo.sort();
        todo.dedup();
        let listed = join_all(todo.iter().map(|l| retry.run(|| cloud.list(&l.parent, &l.rtype)))).await;
        for (req, got) in todo.into_iter().zip(listed) {
            let mut ids = Vec::new();
            for item in got? {
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    ids.push(self.key(id));
                    self.resources.insert(self.key(id), Some(item));
                }
            }
            ids.sort();
            self.lists.insert(self.list_key(req), ids);
        }
        Ok(())
    }

    /// Records a resource directly, as a GET would have (`None`: looked up, does not exist).
    pub fn insert(&mut self, id: &str, value: Option<Value>) {
        self.resources.insert(self.key(id), value);
    }

    /// Records a list result directly, as running the request would have (tests).
    pub fn insert_list(&mut self, parent: &str, rtype: &str, items: Vec<Value>) {
        let mut ids = Vec::new();
        for item in items {
            if let Some(id) = item.get("id").and_then(Value::as_str) {
                ids.push(self.key(id));
                self.resources.insert(self.key(id), Some(item));
            }
        }
        ids.sort();
        self.lists.insert(self.list_key(&ListReq { parent: parent.to_string(), rtype: rtype.to_string() }), ids);
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
        let req = self.list_key(&ListReq { parent: parent.to_string(), rtype: rtype.to_string() });
        match self.lists.get(&req) {
            Some(ids) => Ok(ids.iter().filter_map(|id| self.resources.get(id).and_then(Option::as_ref)).collect()),
            None if matches!(self.resources.get(&self.key(parent)), Some(None)) => Ok(Vec::new()),
            None => Err(NotFetched::List { parent: parent.to_string(), rtype: rtype.to_string() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NAT: &str = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/natGateways/n";
    const RG: &str = "/subscriptions/s/resourceGroups/rg";
    const NATS: &str = "Microsoft.Network/natGateways";

    #[test]
    fn regression_observed_tells_never_fetched_from_absent() {
        let mut observed = Observed::default();
        assert_eq!(observed.get(NAT), Err(NotFetched::Resource(NAT.to_string())), "never looked up");
        observed.insert(NAT, None);
        assert_eq!(observed.get(NAT), Ok(None), "looked up, absent");
        observed.insert(&NAT.to_uppercase(), Some(json!({"id": NAT})));
        assert_eq!(observed.get(NAT), Ok(Some(&json!({"id": NAT}))), "present, ids compared case-insensitively");
    }

    #[test]
    fn regression_observed_list_never_run_is_not_empty() {
        let mut observed = Observed::default();
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

        let mut gone = Observed::default();
        gone.insert(RG, None);
        assert_eq!(gone.list(RG, NATS), Ok(vec![]), "nothing exists under an absent parent");
    }

    #[test]
    fn regression_observed_compares_ids_through_the_scheme() {
        let mut arm = Observed::default();
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

    #[test]
    fn fetch_bug_names_what_and_where() {
        let bug = NotFetched::Resource(NAT.to_string()).in_stage("diff");
        assert_eq!(
            bug.to_string(),
            format!("bug: {NAT} was never fetched before planning (stage: diff); please report")
        );
    }
}
