//! A plan file in Terraform's JSON plan representation (`trellis show PLAN --output terraform-json`),
//! the document `terraform show -json PLANFILE` prints (format_version "1.2", Terraform's
//! `internal/command/jsonplan`), so the readers of that format — HashiCorp's terraform-json types,
//! checkov, terraform-compliance, OPA/conftest, plan-summary tools — read trellis plans as Terraform's.
//!
//! How trellis maps onto it (docs/usage/reviewing-plans.md has the table):
//! - one module per shoot, `module.<technical id>` (a shoot's domains plan shares its module): every
//!   resource change has `module_address`, `planned_values` and `prior_state` have one child module per
//!   shoot, `configuration.root_module.module_calls` one call per shoot, so a fleet's
//!   `(module_address, mode, type, name, index)` is unique;
//! - `type` is the Terraform provider's resource type where the provider declares one for the kind
//!   ([`TerraformKinds`]: `azurerm_subnet`, `google_compute_firewall`, …), otherwise
//!   `<provider>_<kind>` under `trellis/<provider>`;
//! - `name` is the cloud name made a Terraform identifier ([`identifier`]), unique within the module and
//!   type (`_2`, `_3`, … on a collision); the cloud name stays in the values, trellis's own address is
//!   `trellis_address` on every resource (readers ignore fields they do not know);
//! - create → `["create"]`, update → `["update"]`, replace → `["delete","create"]` (trellis deletes
//!   first), delete → `["delete"]`, no-op → `["no-op"]`: `mode: "managed"`; verify (a user-owned
//!   resource checked, never written) and read → `mode: "data"` (`data.<type>.<name>`), `["read"]`;
//!   skip (gated out, never touched) → no entry, as for a resource with `count = 0`;
//! - `before` is the whole object as read (the node's `observed`), `after` the whole object the write
//!   leaves (an update: the object as read with the patch merged in, RFC 7386; a create or a replace:
//!   the body written), attributes the cloud sets unknown (`null` in `after`, `true` in
//!   `after_unknown`), `*_sensitive` shaped like the values with nothing sensitive. A node of a plan file
//!   written before nodes carried the object as read shows the attributes its changes name.
//! - `action_reason` comes from the node's reason code where Terraform has one that means the same
//!   ([`crate::ReasonCode::terraform_action_reason`]); a node without a code (an earlier plan file) gets
//!   it from its action.

use crate::merge::merged;
use crate::{Action, Change, Kind, Node, Plan, PlanSet, Provider};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Terraform's `jsonplan.FormatVersion`.
pub const FORMAT_VERSION: &str = "1.2";

/// Terraform's `jsonstate.FormatVersion` (`prior_state`).
pub const STATE_FORMAT_VERSION: &str = "1.0";

/// The Terraform version the document says wrote it: one that writes format "1.2" and that the
/// readers accept (terraform-compliance 1.16 refuses versions it does not list). trellis's own
/// version is `trellis_version`.
pub const TERRAFORM_VERSION: &str = "1.9.8";

/// A Terraform provider's resource type for the same resource as a trellis kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerraformType {
    /// The resource type: `azurerm_subnet`.
    pub name: &'static str,
    /// The provider's source address: `registry.terraform.io/hashicorp/azurerm`; its last part is the
    /// provider's local name, the type's prefix.
    pub source: &'static str,
}

/// What a provider tells Terraform's readers about one of its kinds: a provider fact, declared beside
/// its kinds. The default says nothing: `<provider>_<kind>`, nothing the cloud sets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TerraformKind {
    /// The Terraform provider's type for the same resource; `None`: `<provider>_<kind>`.
    pub resource_type: Option<TerraformType>,
    /// JSON pointers of the attributes the cloud sets when it creates the resource and trellis cannot
    /// know before (an etag, a numeric id, a new public IP's address): unknown after a create or replace.
    pub computed: &'static [&'static str],
    /// JSON pointers of the attributes the cloud changes on every write (an etag, a fingerprint):
    /// unknown after an update too.
    pub rewritten: &'static [&'static str],
    /// Attributes the cloud sets on a create whose values are known already (ARM's `id`, `name` and
    /// `type`, from the id): JSON pointer and value, written into a create's `after`.
    pub known_on_create: Vec<(&'static str, Value)>,
}

/// The providers' Terraform facts, by provider (the registry implements it).
pub trait TerraformKinds {
    /// The facts of `kind` of `provider` for the node whose id is `id` (`None`: a skip has none) and
    /// whose object is `body` (what it writes, or what was read: a DNS record's type is in it);
    /// `related` are the objects of the nodes of the same plan it is linked to (those it depends on,
    /// then those that depend on it), where the type is a fact of another resource (a DNS record set's
    /// Terraform type follows the DNS provider its `DNSRecord` names).
    fn terraform_kind(
        &self,
        provider: Provider,
        kind: Kind,
        id: Option<&str>,
        body: Option<&Value>,
        related: &[&Value],
    ) -> TerraformKind;
}

/// No provider facts: every kind is `<provider>_<kind>`.
pub struct Unmapped;

impl TerraformKinds for Unmapped {
    fn terraform_kind(&self, _: Provider, _: Kind, _: Option<&str>, _: Option<&Value>, _: &[&Value]) -> TerraformKind {
        TerraformKind::default()
    }
}

/// The plan file as one Terraform JSON plan document. `trellis_version` goes into `trellis_version`;
/// `kinds` gives each kind its Terraform type and what its cloud sets.
pub fn plan_json(set: &PlanSet, trellis_version: &str, kinds: &dyn TerraformKinds) -> Value {
    let entries = entries(set, kinds);
    let mut changes = Vec::new();
    let mut planned: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let mut prior: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let mut configured: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let mut providers = Map::new();
    let mut sources: BTreeMap<&str, &str> = BTreeMap::new();
    for e in &entries {
        providers.entry(e.local_name()).or_insert_with(|| json!({ "name": e.local_name(), "full_name": e.source }));
        if let Some(file) = e.plan.source.as_ref().map(|s| s.file.as_str()) {
            sources.entry(e.module.as_str()).or_insert(file);
        }
        let declared = configured.entry(&e.module).or_default();
        if e.configured() {
            declared.push(e.config_resource());
        }
        if e.node.action() != Action::Delete {
            planned.entry(&e.module).or_default().push(e.state_resource(&e.sides.after));
        }
        if let Some(read) = e.sides.prior() {
            prior.entry(&e.module).or_default().push(e.state_resource(read));
        }
        changes.push(e.resource_change());
    }
    let module_calls: Map<String, Value> = configured
        .into_iter()
        .map(|(module, resources)| {
            let source = sources.get(module).map_or_else(|| format!("./{module}"), |file| file.to_string());
            (module.to_string(), json!({ "source": source, "module": { "resources": resources } }))
        })
        .collect();
    json!({
        "format_version": FORMAT_VERSION,
        "terraform_version": TERRAFORM_VERSION,
        "trellis_version": trellis_version,
        "planned_values": { "root_module": root_module(planned) },
        "resource_changes": changes,
        "prior_state": {
            "format_version": STATE_FORMAT_VERSION,
            "terraform_version": TERRAFORM_VERSION,
            "values": { "root_module": root_module(prior) },
        },
        "configuration": {
            "provider_config": providers,
            "root_module": { "module_calls": module_calls },
        },
        "applyable": set.plans.iter().any(Plan::has_changes),
        // Terraform's: a plan made with -target is not complete.
        "complete": !set.plans.iter().any(Plan::is_partial),
        "errored": false,
    })
}

/// A root module holding one child module per shoot (`{}` when no shoot has a resource there).
fn root_module(modules: BTreeMap<&str, Vec<Value>>) -> Value {
    if modules.is_empty() {
        return json!({});
    }
    let children: Vec<Value> = modules
        .into_iter()
        .map(|(module, resources)| json!({ "resources": resources, "address": format!("module.{module}") }))
        .collect();
    json!({ "child_modules": children })
}

/// A name made a Terraform identifier: ASCII letters, digits, `_` and `-`, not starting with a digit or
/// `-`. Every other character becomes `_` (`vnet/subnet` → `vnet_subnet`); a name that would start
/// with a digit or `-`, or is empty, gets a leading `_`.
pub fn identifier(name: &str) -> String {
    let mut out: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out
}

/// `base`, or `base_2`, `base_3`, … : the first that `used` does not hold (then held).
fn unique(used: &mut BTreeSet<String>, base: String) -> String {
    let mut name = base.clone();
    let mut n = 1;
    while used.contains(&name) {
        n += 1;
        name = format!("{base}_{n}");
    }
    used.insert(name.clone());
    name
}

/// The object a node writes, or else the one it read.
fn object_of(node: &Node) -> Option<&Value> {
    node.patch().or(node.observed.as_ref())
}

/// One node as Terraform lists it.
struct Entry<'a> {
    plan: &'a Plan,
    node: &'a Node,
    /// The shoot's module name (the technical id, an identifier).
    module: String,
    data: bool,
    type_name: String,
    source: String,
    name: String,
    sides: Sides,
}

/// Every listed node (all but skips) of the set, with its module, type and a name unique within its
/// module and type (data sources included, so `type.name` never names two things of one module).
fn entries<'a>(set: &'a PlanSet, kinds: &dyn TerraformKinds) -> Vec<Entry<'a>> {
    let mut modules: BTreeMap<&str, String> = BTreeMap::new();
    let mut module_names = BTreeSet::new();
    let mut used: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for plan in &set.plans {
        let module = modules
            .entry(plan.shoot.as_str())
            .or_insert_with(|| unique(&mut module_names, identifier(&plan.shoot)))
            .clone();
        let bodies: BTreeMap<&str, &Value> =
            plan.nodes.iter().filter_map(|n| Some((n.address.as_str(), object_of(n)?))).collect();
        let mut dependents: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
        for n in &plan.nodes {
            for d in &n.depends_on {
                dependents.entry(d.as_str()).or_default().extend(object_of(n));
            }
        }
        for node in &plan.nodes {
            if node.action() == Action::Skip {
                continue;
            }
            let related: Vec<&Value> = node
                .depends_on
                .iter()
                .filter_map(|d| bodies.get(d.as_str()).copied())
                .chain(dependents.get(node.address.as_str()).into_iter().flatten().copied())
                .collect();
            let facts = kinds.terraform_kind(plan.provider, node.kind, node.id.as_deref(), object_of(node), &related);
            let (type_name, source) = match facts.resource_type {
                Some(t) => (t.name.to_string(), t.source.to_string()),
                None => (
                    format!("{}_{}", plan.provider.as_str(), node.kind.as_str()),
                    format!("trellis/{}", plan.provider.as_str()),
                ),
            };
            let names = used.entry((module.clone(), type_name.clone())).or_default();
            let name = unique(names, identifier(&node.name));
            out.push(Entry {
                plan,
                node,
                module: module.clone(),
                data: matches!(node.action(), Action::Verify | Action::Read),
                type_name,
                source,
                name,
                sides: Sides::of(node, &facts),
            });
        }
    }
    out
}

impl Entry<'_> {
    fn mode(&self) -> &'static str {
        if self.data {
            "data"
        } else {
            "managed"
        }
    }

    /// The address within the module: `azurerm_subnet.x`, `data.azurerm_subnet.x`.
    fn local_address(&self) -> String {
        let data = if self.data { "data." } else { "" };
        format!("{data}{}.{}", self.type_name, self.name)
    }

    fn address(&self) -> String {
        format!("module.{}.{}", self.module, self.local_address())
    }

    fn local_name(&self) -> &str {
        self.source.rsplit('/').next().unwrap_or(&self.source)
    }

    /// Whether the configuration declares it: not a resource deleted because nothing configures it
    /// any more (Terraform's `delete_because_no_resource_config`).
    fn configured(&self) -> bool {
        self.action_reason() != Some("delete_because_no_resource_config")
    }

    fn action_reason(&self) -> Option<&'static str> {
        match self.node.reason.code() {
            Some(code) => code.terraform_action_reason(),
            // A plan file written before reasons had codes: by the action, as trellis did then.
            None => match self.node.action() {
                Action::Replace => Some("replace_because_cannot_update"),
                Action::Delete => Some("delete_because_no_resource_config"),
                _ => None,
            },
        }
    }

    fn resource_change(&self) -> Value {
        let actions: &[&str] = match self.node.action() {
            Action::Create => &["create"],
            Action::Update => &["update"],
            Action::Replace => &["delete", "create"],
            Action::Delete => &["delete"],
            Action::Noop => &["no-op"],
            Action::Verify | Action::Read | Action::Skip => &["read"],
        };
        let s = &self.sides;
        let mut change = json!({
            "address": self.address(),
            "module_address": format!("module.{}", self.module),
            "mode": self.mode(),
            "type": self.type_name,
            "name": self.name,
            "provider_name": self.source,
            "change": {
                "actions": actions,
                "before": s.before,
                "after": s.after,
                "after_unknown": s.after_unknown,
                "before_sensitive": sensitive(&s.before),
                "after_sensitive": sensitive(&s.after),
            },
        });
        if let Some(reason) = self.action_reason() {
            change["action_reason"] = json!(reason);
        }
        change["trellis_address"] = json!(self.node.address);
        change
    }

    /// The resource in `planned_values` or `prior_state` with `values`.
    fn state_resource(&self, values: &Value) -> Value {
        let values = if values.is_object() { values.clone() } else { json!({}) };
        let sensitive_values = shape(&values);
        json!({
            "address": self.address(),
            "mode": self.mode(),
            "type": self.type_name,
            "name": self.name,
            "provider_name": self.source,
            "schema_version": 0,
            "values": values,
            "sensitive_values": sensitive_values,
            "trellis_address": self.node.address,
        })
    }

    /// The resource in its module's configuration.
    fn config_resource(&self) -> Value {
        json!({
            "address": self.local_address(),
            "mode": self.mode(),
            "type": self.type_name,
            "name": self.name,
            "provider_config_key": self.local_name(),
            "expressions": {},
            "schema_version": 0,
        })
    }
}

/// The two sides of a change.
struct Sides {
    before: Value,
    after: Value,
    after_unknown: Value,
    /// The object as read of a data source (a verify or read: `before` is null, as Terraform writes a read).
    read: Option<Value>,
}

impl Sides {
    fn of(node: &Node, facts: &TerraformKind) -> Sides {
        let observed = node.observed.as_ref();
        // Plan files written before nodes carried the object as read: the attributes the changes name.
        let legacy = || match side(node.changes(), |c| &c.before) {
            Value::Null => json!({}),
            partial => partial,
        };
        let before = || observed.cloned().unwrap_or_else(legacy);
        let patch = node.patch().cloned().unwrap_or_else(|| json!({}));
        let new_object = || {
            let mut after = merged(None, &patch);
            for (pointer, value) in &facts.known_on_create {
                if after.pointer(pointer).is_none() {
                    set_pointer(&mut after, pointer, value.clone());
                }
            }
            let fresh = after.clone();
            let unknown = facts.computed.iter().copied().filter(|p| fresh.pointer(p).is_none());
            unknown_at(after, unknown)
        };
        let (before, (after, after_unknown), read) = match node.action() {
            Action::Create => (Value::Null, new_object(), None),
            Action::Replace => (before(), new_object(), None),
            Action::Update => {
                let before = before();
                let after = merged(Some(&before), &patch);
                let known = after.clone();
                let rewritten = facts.rewritten.iter().copied().filter(|p| known.pointer(p).is_some());
                (before, unknown_at(after, rewritten), None)
            }
            Action::Delete => (before(), (Value::Null, json!({})), None),
            Action::Noop => {
                let before = observed.cloned().unwrap_or_else(|| merged(None, &patch));
                (before.clone(), (before, json!({})), None)
            }
            Action::Verify | Action::Read | Action::Skip => match observed {
                Some(read) => (Value::Null, (read.clone(), json!({})), Some(read.clone())),
                // Nothing is known before the read at apply time.
                None => (Value::Null, (Value::Null, Value::Bool(true)), None),
            },
        };
        Sides { before, after, after_unknown, read }
    }

    /// What the resource is before the apply: `prior_state`'s values.
    fn prior(&self) -> Option<&Value> {
        self.read.as_ref().or(Some(&self.before).filter(|b| b.is_object()))
    }
}

/// `after` with the attributes at `unknown` unknown: `null` there (as Terraform writes an unknown
/// attribute of a known object), and `after_unknown` shaped like `after` with `true` there (`{}` when
/// nothing is unknown, as Terraform writes a wholly known value).
fn unknown_at<'p>(mut after: Value, unknown: impl Iterator<Item = &'p str>) -> (Value, Value) {
    let unknown: Vec<&str> = unknown.collect();
    if unknown.is_empty() {
        return (after, json!({}));
    }
    for pointer in &unknown {
        set_pointer(&mut after, pointer, Value::Null);
    }
    let mut mask = shape(&after);
    for pointer in &unknown {
        set_pointer(&mut mask, pointer, Value::Bool(true));
    }
    (after, mask)
}

/// A value's shape as Terraform writes `after_unknown`, `*_sensitive` and `sensitive_values` when
/// nothing in it is unknown or sensitive: an object keeps its members that are objects or arrays (its
/// scalars are `false`, left out), an array has one entry per element (`false` for a scalar), a
/// scalar or `null` is `false`.
pub fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| v.is_object() || v.is_array()).map(|(k, v)| (k.clone(), shape(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        _ => Value::Bool(false),
    }
}

/// `before_sensitive` / `after_sensitive`: nothing in a plan is secret.
fn sensitive(value: &Value) -> Value {
    shape(value)
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

    #[test]
    fn names_become_terraform_identifiers() {
        assert_eq!(
            identifier("shoot--dev--bravo/shoot--dev--bravo-nodes"),
            "shoot--dev--bravo_shoot--dev--bravo-nodes"
        );
        assert_eq!(identifier("worker_route_table"), "worker_route_table");
        assert_eq!(identifier("10-0-0-0"), "_10-0-0-0");
        assert_eq!(identifier("-x"), "_-x");
        assert_eq!(identifier(""), "_");
        assert_eq!(identifier("a.b c@d"), "a_b_c_d");
        assert_eq!(identifier("naïve"), "na_ve");
        let mut used = BTreeSet::new();
        let names: Vec<String> = ["a", "a", "a_2", "a"].iter().map(|n| unique(&mut used, n.to_string())).collect();
        assert_eq!(names, ["a", "a_2", "a_2_2", "a_3"]);
    }

    #[test]
    fn shapes_keep_containers_and_drop_scalars() {
        let v = json!({"a": 1, "b": {"c": "x", "d": [1, {"e": 2}]}, "f": [], "g": null});
        assert_eq!(shape(&v), json!({"b": {"d": [false, {}]}, "f": []}));
        assert_eq!(shape(&Value::Null), json!(false));
        let (after, mask) = unknown_at(json!({"properties": {"x": 1}}), ["/properties/ipAddress", "/etag"].into_iter());
        assert_eq!(after, json!({"properties": {"x": 1, "ipAddress": null}, "etag": null}));
        assert_eq!(mask, json!({"properties": {"ipAddress": true}, "etag": true}));
        assert_eq!(unknown_at(json!({"a": {}}), std::iter::empty()).1, json!({}));
    }
}
