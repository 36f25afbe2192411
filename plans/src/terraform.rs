//! A plan file in Terraform's JSON plan representation (`trellis show PLAN --output terraform-json`),
//! the document `terraform show -json PLANFILE` prints (format_version "1.2", Terraform's
//! `internal/command/jsonplan`), so policy and review tools that read it (OPA/conftest, tf-summarize,
//! plan-comment actions) work on trellis plans unchanged.
//!
//! How trellis maps onto it (docs/usage/reviewing-plans.md has the table):
//! - every shoot of the file goes into the one document (addresses are unique across shoots);
//! - `address` is the trellis address, `type` is `<provider>_<kind>` (`azure_subnet`), `name` the
//!   resource's name, `provider_name` `trellis/<provider>`;
//! - create → `["create"]`, update → `["update"]`, replace → `["delete","create"]` (trellis deletes
//!   first), delete → `["delete"]`, no-op → `["no-op"]`: all `mode: "managed"`;
//! - verify (a user-owned resource checked, never written) and read → `mode: "data"`, `["read"]`, as
//!   Terraform shows a data source read during apply: `after` unknown;
//! - skip (gated out, never touched) → no entry: Terraform lists no change for an object its
//!   configuration does not declare (`count = 0`).
//! - `before`/`after` hold the changed attributes at their JSON pointer paths (create: the whole
//!   body trellis writes; no-op: the compared body), nothing is unknown or sensitive.
//! - `action_reason` comes from the node's reason code where Terraform has one that means the same
//!   ([`crate::ReasonCode::terraform_action_reason`]: force-new → `replace_because_cannot_update`,
//!   recorded-in-state and found-by-name deletes → `delete_because_no_resource_config`); otherwise it
//!   is left out, as Terraform leaves it out (a create, a destroy). A node without a code (a plan file
//!   of an earlier version) gets it from its action, as before.

use crate::{Action, Change, Node, Plan, PlanSet};
use serde_json::{json, Map, Value};

/// Terraform's `jsonplan.FormatVersion`.
pub const FORMAT_VERSION: &str = "1.2";

/// The plan file as one Terraform JSON plan document. `version` goes into `terraform_version` (the
/// version of the tool that made the plan: trellis's).
pub fn plan_json(set: &PlanSet, version: &str) -> Value {
    let mut changes = Vec::new();
    let mut planned = Vec::new();
    let mut providers = Map::new();
    for plan in &set.plans {
        let provider = provider_name(plan);
        providers.insert(
            plan.provider.as_str().to_string(),
            json!({ "name": plan.provider.as_str(), "full_name": provider }),
        );
        for node in &plan.nodes {
            let Some(change) = resource_change(plan, node) else { continue };
            if node.action() != Action::Delete {
                planned.push(json!({
                    "address": node.address,
                    "mode": change["mode"],
                    "type": change["type"],
                    "name": node.name,
                    "provider_name": provider,
                    "schema_version": 0,
                    "values": change["change"]["after"].as_object().map_or(json!({}), |o| Value::Object(o.clone())),
                    "sensitive_values": {},
                }));
            }
            changes.push(change);
        }
    }
    json!({
        "format_version": FORMAT_VERSION,
        "terraform_version": version,
        "planned_values": { "root_module": { "resources": planned } },
        "resource_changes": changes,
        "configuration": { "provider_config": providers, "root_module": {} },
        "applyable": set.plans.iter().any(Plan::has_changes),
        "complete": true,
        "errored": false,
    })
}

fn provider_name(plan: &Plan) -> String {
    format!("trellis/{}", plan.provider.as_str())
}

/// The node's entry of `resource_changes`; `None` for a skipped node.
fn resource_change(plan: &Plan, node: &Node) -> Option<Value> {
    let (mode, actions): (&str, &[&str]) = match node.action() {
        Action::Create => ("managed", &["create"]),
        Action::Update => ("managed", &["update"]),
        Action::Replace => ("managed", &["delete", "create"]),
        Action::Delete => ("managed", &["delete"]),
        Action::Noop => ("managed", &["no-op"]),
        Action::Verify | Action::Read => ("data", &["read"]),
        Action::Skip => return None,
    };
    let (before, after, after_unknown) = match node.action() {
        Action::Create => (Value::Null, node.patch().cloned().unwrap_or(json!({})), json!({})),
        Action::Update | Action::Replace => {
            (side(node.changes(), |c| &c.before), side(node.changes(), |c| &c.after), json!({}))
        }
        Action::Delete => (side(node.changes(), |c| &c.before), Value::Null, json!({})),
        Action::Noop => {
            let body = node.patch().cloned().unwrap_or(json!({}));
            (body.clone(), body, json!({}))
        }
        // Read during apply: nothing is known before it.
        _ => (Value::Null, Value::Null, Value::Bool(true)),
    };
    let mut change = json!({
        "address": node.address,
        "mode": mode,
        "type": format!("{}_{}", plan.provider.as_str(), node.kind.as_str()),
        "name": node.name,
        "provider_name": provider_name(plan),
        "change": {
            "actions": actions,
            "before": before,
            "after": after,
            "after_unknown": after_unknown,
            "before_sensitive": false,
            "after_sensitive": false,
        },
    });
    let reason = match node.reason.code() {
        Some(code) => code.terraform_action_reason(),
        // A plan file written before reasons had codes: by the action, as trellis did then.
        None => match node.action() {
            Action::Replace => Some("replace_because_cannot_update"),
            Action::Delete => Some("delete_because_no_resource_config"),
            _ => None,
        },
    };
    if let Some(reason) = reason {
        change["action_reason"] = json!(reason);
    }
    Some(change)
}

/// The object holding each change's value on one side (`before` or `after`) at its JSON pointer path;
/// `null` when no change has a value on that side.
fn side(changes: &[Change], pick: impl Fn(&Change) -> &Option<Value>) -> Value {
    let mut root = Value::Null;
    for c in changes {
        if let Some(v) = pick(c) {
            set_pointer(&mut root, &c.path, v.clone());
        }
    }
    root
}

/// Sets `value` at the JSON pointer `path` in `root`, creating objects on the way (a pointer into an
/// array element is kept as an object key: Terraform tools read the leaves, not the container type).
fn set_pointer(root: &mut Value, path: &str, value: Value) {
    let mut here = root;
    let tokens: Vec<String> = path.split('/').skip(1).map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
    if tokens.is_empty() {
        *here = value;
        return;
    }
    for (i, token) in tokens.iter().enumerate() {
        if !here.is_object() {
            *here = Value::Object(Map::new());
        }
        let Value::Object(map) = here else { return };
        if i + 1 == tokens.len() {
            map.insert(token.clone(), value);
            return;
        }
        here = map.entry(token.clone()).or_insert(Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_build_nested_objects() {
        let mut root = Value::Null;
        set_pointer(&mut root, "/properties/natGateway/id", json!("x"));
        set_pointer(&mut root, "/properties/a~1b", json!(1));
        set_pointer(&mut root, "/tags", json!({"k": "v"}));
        assert_eq!(root, json!({"properties": {"natGateway": {"id": "x"}, "a/b": 1}, "tags": {"k": "v"}}));
        let mut whole = Value::Null;
        set_pointer(&mut whole, "", json!(3));
        assert_eq!(whole, json!(3));
    }
}
