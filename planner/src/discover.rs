//! Read-only discovery: what exists in the cloud right now.
//!
//! Providers discover in rounds (a BYO subnet first, then the route table and NSG it points at), each
//! round a batch of concurrent GETs and lists through [`Observed::fetch`]. Transient errors are retried
//! with the same policy as the executor.

use crate::cloud::{CloudError, CloudRead};
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

/// A snapshot of observed cloud state. Ids are compared case-insensitively, as ARM does.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Lowercased id → the resource (`None`: looked up, does not exist).
    resources: BTreeMap<String, Option<Value>>,
    /// List results by request, as lowercased ids.
    lists: BTreeMap<ListReq, Vec<String>>,
}

impl Observed {
    /// GETs every id not looked up yet and runs every list not run yet, concurrently.
    pub async fn fetch(
        &mut self,
        cloud: &dyn CloudRead,
        retry: &RetryPolicy,
        ids: &[String],
        lists: &[ListReq],
    ) -> Result<(), CloudError> {
        let mut wanted: Vec<&String> = ids.iter().filter(|id| !self.resources.contains_key(&key(id))).collect();
        wanted.sort();
        wanted.dedup();
        let gets = join_all(wanted.iter().map(|id| retry.run(|| cloud.get(id)))).await;
        for (id, got) in wanted.into_iter().zip(gets) {
            self.resources.insert(key(id), got?);
        }
        let todo: Vec<&ListReq> = lists.iter().filter(|l| !self.lists.contains_key(l)).collect();
        let listed = join_all(todo.iter().map(|l| retry.run(|| cloud.list(&l.parent, &l.rtype)))).await;
        for (req, got) in todo.into_iter().zip(listed) {
            let mut ids = Vec::new();
            for item in got? {
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    ids.push(key(id));
                    self.resources.insert(key(id), Some(item));
                }
            }
            ids.sort();
            self.lists.insert(req.clone(), ids);
        }
        Ok(())
    }

    /// Records a resource directly (tests, and providers that learn a resource from a list).
    pub fn insert(&mut self, id: &str, value: Option<Value>) {
        self.resources.insert(key(id), value);
    }

    /// The resource, if it was looked up and exists.
    pub fn get(&self, id: &str) -> Option<&Value> {
        self.resources.get(&key(id)).and_then(Option::as_ref)
    }

    /// The resources a list request returned (empty if it was not run).
    pub fn list(&self, parent: &str, rtype: &str) -> Vec<&Value> {
        let req = ListReq { parent: parent.to_string(), rtype: rtype.to_string() };
        self.lists.get(&req).map(|ids| ids.iter().filter_map(|id| self.get(id)).collect()).unwrap_or_default()
    }
}

/// The map key of an id: ARM ids are case-insensitive.
pub fn key(id: &str) -> String {
    id.to_ascii_lowercase()
}
