//! The Cloud NAT sub-resource contract of the write model (ARCHITECTURE.md's invariant): a Cloud NAT
//! is addressed as `<router selfLink>/nats/<name>`; a GET answers the router's `nats[]` entry of
//! that name; a create, update or remove reads the router and PATCHes its whole `nats[]` — that
//! entry added, merged with the body (RFC 7386) or dropped, every other entry as read — as a real
//! client does. A router has no fingerprint in compute v1: under a precondition the entry as read
//! right before the PATCH must have the [`GceIds::content_version`] the caller read. GCE's REST
//! surface has no NAT resource: every call here is a router GET or PATCH, audited as such.

use super::{operation_error, GcePath, GceSim};
use serde_json::{json, Value};
use trellis_planner::cloud::{CloudError, Precondition};
use trellis_planner::ids::{GceIds, IdScheme};
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

/// The entry as a GET of the NAT answers it: the router's entry.
fn entry_of(router: &Value, name: &str) -> Option<Value> {
    named(&nats(router), name).cloned()
}

/// `pre` against the entry `name` as the router read right before the write shows it.
fn check(id: &str, router: &Value, name: &str, pre: &Precondition) -> Result<(), CloudError> {
    match pre {
        Precondition::IfMatch(v) if entry_of(router, name).map(|e| GceIds.precondition(&e)).as_ref() != Some(pre) => {
            Err(CloudError::PreconditionFailed { target: id.to_string(), expected: v.clone() })
        }
        _ => Ok(()),
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
        check(id, &router, &name, pre)?;
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
        let answer = self.patch(&router_id, json!({"nats": list})).await?;
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
        let Some(router) = self.get_audited(&router_id).await? else {
            return match pre {
                Precondition::IfMatch(v) => {
                    Err(CloudError::PreconditionFailed { target: id.to_string(), expected: v.clone() })
                }
                Precondition::None => Ok(()),
            };
        };
        let mut list = nats(&router);
        let before = list.len();
        list.retain(|n| n.get("name").and_then(Value::as_str) != Some(name.as_str()));
        if list.len() == before {
            return match pre {
                Precondition::IfMatch(v) => {
                    Err(CloudError::PreconditionFailed { target: id.to_string(), expected: v.clone() })
                }
                Precondition::None => Ok(()),
            };
        }
        check(id, &router, &name, pre)?;
        let answer = self.patch(&router_id, json!({"nats": list})).await?;
        operation_error(id, &answer).map_or(Ok(()), Err)
    }
}
