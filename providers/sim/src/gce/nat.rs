//! The Cloud NAT sub-resource contract of the write model (ARCHITECTURE.md's invariant): a Cloud NAT
//! is addressed as `<router selfLink>/nats/<name>`; a GET answers the router's `nats[]` entry of
//! that name (with the router's `fingerprint`, the version its writes are made under); a create,
//! update or remove reads the router and PATCHes its `nats[]` — that entry added, merged with the
//! body (RFC 7386) or dropped, every other entry as it is — under the router's fingerprint. GCE's
//! REST surface has no such resource: every call here is a router GET or PATCH, audited as such.

use super::{operation_error, GcePath, GceSim};
use serde_json::{json, Value};
use trellis_planner::cloud::{CloudError, Precondition};
use trellis_planner::json::merge_patch;

/// A Cloud NAT's id split into its router's id and its name; `None` for any other id.
pub fn split_nat_id(id: &str) -> Option<(String, String)> {
    let (router, name) = id.trim_end_matches('/').rsplit_once("/nats/")?;
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let path = GcePath::parse(router).ok()?;
    (path.collection() == super::Collection::Routers).then(|| (router.to_string(), name.to_string()))
}

fn nats(router: &Value) -> Vec<Value> {
    router.get("nats").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn named<'a>(nats: &'a [Value], name: &str) -> Option<&'a Value> {
    nats.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(name))
}

/// The entry as a GET of the NAT answers it: the router's entry with the router's fingerprint.
fn entry_of(router: &Value, name: &str) -> Option<Value> {
    let mut entry = named(&nats(router), name)?.clone();
    if let (Some(obj), Some(fp)) = (entry.as_object_mut(), router.get("fingerprint")) {
        obj.insert("fingerprint".into(), fp.clone());
    }
    Some(entry)
}

/// The router's fingerprint, for the PATCH: the one the caller read (`pre`), else the current one.
fn fingerprint(router: &Value, pre: &Precondition) -> Value {
    match pre {
        Precondition::IfMatch(v) => json!(v),
        Precondition::None => router.get("fingerprint").cloned().unwrap_or(Value::Null),
    }
}

impl GceSim {
    /// GET of a NAT (`router`, `name`): `None` when the router or the entry is missing.
    pub(super) async fn get_nat(&self, router: &str, name: &str) -> Result<Option<Value>, CloudError> {
        Ok(self.get_audited(router).await?.and_then(|r| entry_of(&r, name)))
    }

    /// Creates (`create`: refused when the entry exists) or updates the entry `name` of `router`'s
    /// `nats[]` with `body` merged into it, then answers the entry as a GET does.
    pub(super) async fn write_nat(
        &self,
        id: &str,
        (router_id, name): (String, String),
        mut body: Value,
        pre: &Precondition,
        create: bool,
    ) -> Result<Value, CloudError> {
        let rejected = |status: u16, code: &str, message: String| CloudError::Rejected {
            target: id.to_string(),
            status,
            code: code.into(),
            message,
        };
        if !body.is_object() {
            return Err(rejected(400, "invalid", "the request body must be a JSON object".into()));
        }
        match body.get("name").and_then(Value::as_str) {
            Some(n) if n != name => {
                return Err(rejected(400, "invalid", format!("the body's name '{n}' is not the id's '{name}'")))
            }
            _ => body["name"] = json!(name),
        }
        body.as_object_mut().map(|b| b.remove("fingerprint"));
        let Some(router) = self.get_audited(&router_id).await? else {
            return Err(rejected(
                404,
                "notFound",
                format!("The resource '{router_id}' was not found (the Cloud NAT '{name}' lives in it)"),
            ));
        };
        let mut list = nats(&router);
        match list.iter().position(|n| n.get("name").and_then(Value::as_str) == Some(name.as_str())) {
            Some(_) if create => return Err(CloudError::AlreadyExists { target: id.to_string(), status: 409 }),
            Some(i) => merge_patch(&mut list[i], &body),
            None => {
                let mut entry = json!({});
                merge_patch(&mut entry, &body);
                list.push(entry);
            }
        }
        let answer = self
            .patch(&router_id, json!({"nats": list, "fingerprint": fingerprint(&router, pre)}))
            .await
            .map_err(|e| match e {
                CloudError::PreconditionFailed { expected, .. } => {
                    CloudError::PreconditionFailed { target: id.to_string(), expected }
                }
                other => other,
            })?;
        if let Some(e) = operation_error(id, &answer) {
            return Err(e);
        }
        self.get_nat(&router_id, &name).await?.ok_or_else(|| CloudError::Server {
            target: id.to_string(),
            status: 500,
            message: "the written Cloud NAT is gone from its router".into(),
        })
    }

    /// Removes the entry `name` of `router`'s `nats[]`; a missing router or entry is fine.
    pub(super) async fn remove_nat(
        &self,
        id: &str,
        (router_id, name): (String, String),
        pre: &Precondition,
    ) -> Result<(), CloudError> {
        let Some(router) = self.get_audited(&router_id).await? else { return Ok(()) };
        let mut list = nats(&router);
        let before = list.len();
        list.retain(|n| n.get("name").and_then(Value::as_str) != Some(name.as_str()));
        if list.len() == before {
            return Ok(());
        }
        let answer = self
            .patch(&router_id, json!({"nats": list, "fingerprint": fingerprint(&router, pre)}))
            .await
            .map_err(|e| match e {
                CloudError::PreconditionFailed { expected, .. } => {
                    CloudError::PreconditionFailed { target: id.to_string(), expected }
                }
                other => other,
            })?;
        operation_error(id, &answer).map_or(Ok(()), Err)
    }
}
