//! GCE's rules: what insert, patch, delete, get and list do to the store, and how they refuse.

use super::filter::Filter;
use super::path::{resolve, Collection, CollectionPath, GcePath, Scope, COMPUTE_URL};
use super::store::{etag, fingerprint, numeric_id, timestamp, Entry, GceStore};
use crate::core::ApiError;
use crate::core::Origin;
use ipnet::{IpNet, Ipv4Net};
use regex::Regex;
use serde_json::{json, Map, Value};
use std::net::Ipv4Addr;
use std::sync::LazyLock;
use trellis_planner::cloud::Precondition;
use trellis_planner::ids::{GceIds, IdScheme};

/// GCE's name rule (RFC 1035): a lowercase letter, then up to 62 lowercase letters, digits or
/// hyphens, not ending in a hyphen.
static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$").expect("name regex"));
/// IAM's service-account id rule.
static ACCOUNT_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z](?:[-a-z0-9]{4,28}[a-z0-9])$").expect("account id regex"));

/// Regions an auto-mode network gets a subnetwork in, with the ranges GCE gives them (a subset of
/// GCE's table, enough for the regions shoots use).
pub const AUTO_MODE_SUBNETS: [(&str, &str); 12] = [
    ("us-central1", "10.128.0.0/20"),
    ("europe-west1", "10.132.0.0/20"),
    ("us-west1", "10.138.0.0/20"),
    ("asia-east1", "10.140.0.0/20"),
    ("us-east1", "10.142.0.0/20"),
    ("asia-northeast1", "10.146.0.0/20"),
    ("asia-southeast1", "10.148.0.0/20"),
    ("us-east4", "10.150.0.0/20"),
    ("australia-southeast1", "10.152.0.0/20"),
    ("europe-west2", "10.154.0.0/20"),
    ("europe-west3", "10.156.0.0/20"),
    ("europe-west4", "10.164.0.0/20"),
];

/// Fields the server writes; a request's values for them are ignored.
const OUTPUT_ONLY: [&str; 18] = [
    "zone",
    "kind",
    "id",
    "selfLink",
    "selfLinkWithId",
    "creationTimestamp",
    "fingerprint",
    "etag",
    "region",
    "status",
    "users",
    "gatewayAddress",
    "externalIpv6Prefix",
    "internalIpv6Prefix",
    "subnetworks",
    "uniqueId",
    "oauth2ClientId",
    "routeType",
];

pub(crate) fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "invalid", message)
}

fn not_found(key: &str) -> ApiError {
    ApiError::new(404, "notFound", format!("The resource '{key}' was not found"))
}

fn in_use(key: &str, user: &str) -> ApiError {
    ApiError::new(
        400,
        "resourceInUseByAnotherResource",
        format!("The resource '{key}' is already being used by '{user}'"),
    )
}

/// Whether `name` is a valid GCE resource name; the refusal says the rule.
pub(crate) fn check_name(field: &str, name: &str) -> Result<(), ApiError> {
    if NAME.is_match(name) {
        Ok(())
    } else {
        Err(invalid(format!(
            "Invalid value for field '{field}': '{name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{{0,61}}[a-z0-9])?)' (RFC 1035: a lowercase letter, then up to 62 lowercase letters, digits or hyphens, not ending in a hyphen)"
        )))
    }
}

/// The field that holds a resource's version, for the kinds that have one: a subnetwork's and a VM's
/// `fingerprint`, a service account's `etag`. Compute v1 gives networks, routers, firewalls, routes
/// and addresses none (an address's `labelFingerprint` guards its labels only).
pub(crate) fn version_field(c: Collection) -> Option<&'static str> {
    match c {
        Collection::ServiceAccounts => Some("etag"),
        Collection::Subnetworks | Collection::Instances => Some("fingerprint"),
        _ => None,
    }
}

/// The current version of a stored resource as a write model's precondition names it: its
/// fingerprint (service accounts: etag), or for a kind without one what [`GceIds`]'s precondition of
/// it as a GET answers it is (its content version; a fingerprint a world file declared for it).
pub(crate) fn version_of(store: &GceStore, path: &GcePath) -> Option<String> {
    match version_field(path.collection()) {
        Some(field) => {
            let e = store.entries.get(&path.key())?;
            e.value.get(field).and_then(Value::as_str).map(str::to_string)
        }
        None => match render(store, path).map(|v| GceIds.precondition(&v)) {
            Some(Precondition::IfMatch(v)) => Some(v),
            _ => None,
        },
    }
}

// ---------------------------------------------------------------------------------------------
// insert, patch, delete
// ---------------------------------------------------------------------------------------------

/// What a write answers: an Operation (compute) or the resource (IAM), and the HTTP status.
pub(crate) type Answer = (Value, u16);

/// POST to a collection. Compute answers an Operation (a failed one, e.g. over quota, is a 200 whose
/// operation carries `error.errors[]`); IAM answers the created service account.
pub(crate) fn insert(
    store: &mut GceStore,
    coll: &CollectionPath,
    body: Value,
    origin: Origin,
) -> Result<Answer, ApiError> {
    let Value::Object(mut body) = body else {
        return Err(invalid("the request body must be a JSON object"));
    };
    if coll.collection == Collection::Operations {
        return Err(ApiError::new(405, "methodNotAllowed", "operations are created by the server, not inserted"));
    }
    let path = if coll.collection == Collection::ServiceAccounts {
        let account_id = body.get("accountId").and_then(Value::as_str).unwrap_or_default().to_string();
        if !ACCOUNT_ID.is_match(&account_id) {
            return Err(invalid(format!("Invalid value for field 'accountId': '{account_id}'. Must be 6 to 30 lowercase letters, digits or hyphens, starting with a letter and not ending in a hyphen")));
        }
        let inner = match body.remove("serviceAccount") {
            Some(Value::Object(m)) => m,
            None | Some(Value::Null) => Map::new(),
            Some(_) => return Err(invalid("field 'serviceAccount' must be an object")),
        };
        body = inner;
        coll.child(&format!("{account_id}@{}.iam.gserviceaccount.com", coll.project))
    } else {
        let name = body.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        check_name("resource.name", &name)?;
        coll.child(&name)
    };
    let key = path.key();
    if store.entries.contains_key(&key) {
        return Err(ApiError::new(409, "alreadyExists", format!("The resource '{key}' already exists")));
    }
    let value = build(store, &path, body, None)?;
    if let Some(exceeded) = over_quota(store, &path, &value) {
        return Ok((operation(store, "insert", &path, None, Some(exceeded)), 200));
    }
    let tick = store.tick();
    let value = stamp(value, &path, None, tick);
    let target_id = value.get("id").and_then(Value::as_str).map(str::to_string);
    store.put(key.clone(), Entry { value: value.clone(), origin, auto: false, declared: None });
    if path.collection() == Collection::Networks && value["autoCreateSubnetworks"] == json!(true) {
        if let Err(e) = auto_subnets(store, &path, origin) {
            store.take(&key);
            return Err(e);
        }
    }
    if path.collection() == Collection::ServiceAccounts {
        return Ok((value, 200));
    }
    Ok((operation(store, "insert", &path, target_id, None), 200))
}

/// An auto-mode network's subnetworks: one named after the network in each region of
/// [`AUTO_MODE_SUBNETS`] (a subnetwork of that name already there is kept as it is).
pub(crate) fn auto_subnets(store: &mut GceStore, network: &GcePath, origin: Origin) -> Result<(), ApiError> {
    for (region, cidr) in AUTO_MODE_SUBNETS {
        let coll = CollectionPath {
            project: network.project().to_string(),
            scope: Scope::Region(region.to_string()),
            collection: Collection::Subnetworks,
        };
        let path = coll.child(&network.name);
        if store.entries.contains_key(&path.key()) {
            continue;
        }
        let body = Map::from_iter([
            ("name".to_string(), json!(network.name)),
            ("network".to_string(), json!(network.url())),
            ("ipCidrRange".to_string(), json!(cidr)),
        ]);
        let value = build_subnetwork(store, &path, body, None)?;
        let tick = store.tick();
        let value = stamp(value, &path, None, tick);
        store.put(path.key(), Entry { value, origin, auto: true, declared: None });
    }
    Ok(())
}

/// PATCH: the body's fields replace the stored ones (lists as a whole); the body must carry the
/// current fingerprint (service accounts: etag), else 412 `conditionNotMet`.
pub(crate) fn patch(store: &mut GceStore, path: &GcePath, body: Value) -> Result<Answer, ApiError> {
    let key = path.key();
    let Value::Object(body) = body else {
        return Err(invalid("the request body must be a JSON object"));
    };
    match path.collection() {
        Collection::Routes => {
            return Err(ApiError::new(
                405,
                "methodNotAllowed",
                format!("'{key}': routes cannot be patched; delete the route and insert it again"),
            ))
        }
        Collection::Operations => return Err(ApiError::new(405, "methodNotAllowed", "operations cannot be patched")),
        _ => {}
    }
    let Some(current) = store.entries.get(&key).cloned() else {
        return Err(not_found(&key));
    };
    // Only the kinds with a version check it (GCE: a subnetwork's PATCH without its fingerprint is
    // 400 `required`, with a stale one 412 `conditionNotMet`); a network, router or firewall has
    // none, and its PATCH is applied as it comes.
    if let Some(field) = version_field(path.collection()) {
        let have = current.value.get(field).and_then(Value::as_str).unwrap_or_default();
        match body.get(field).and_then(Value::as_str) {
            Some(sent) if sent == have => {}
            Some(_) => return Err(ApiError::new(412, "conditionNotMet", "Precondition check failed.")),
            None if path.collection() == Collection::ServiceAccounts => {}
            None => {
                return Err(ApiError::new(400, "required", format!("Required field 'resource.{field}' not specified")))
            }
        }
    }
    if let Some(name) = body.get("name").and_then(Value::as_str) {
        let own = if path.collection() == Collection::ServiceAccounts { key.as_str() } else { path.name.as_str() };
        if name != own {
            return Err(invalid(format!("'{key}': field 'name' cannot be changed (sent '{name}')")));
        }
    }
    let Value::Object(mut merged) = current.value.clone() else {
        return Err(ApiError::new(500, "internalError", format!("'{key}' is stored as a non-object")));
    };
    for (k, v) in body {
        if OUTPUT_ONLY.contains(&k.as_str())
            || (path.collection() == Collection::ServiceAccounts
                && !matches!(k.as_str(), "displayName" | "description"))
        {
            continue;
        }
        if v.is_null() {
            merged.remove(&k);
        } else {
            merged.insert(k, v);
        }
    }
    let value = build(store, path, merged, Some(&current.value))?;
    let tick = store.tick();
    let value = stamp(value, path, Some(&current.value), tick);
    let target_id = value.get("id").and_then(Value::as_str).map(str::to_string);
    store.put(key, Entry { value: value.clone(), ..current });
    if path.collection() == Collection::ServiceAccounts {
        return Ok((value, 200));
    }
    Ok((operation(store, "patch", path, target_id, None), 200))
}

/// DELETE: 404 when missing; refused while something uses the resource.
pub(crate) fn delete(store: &mut GceStore, path: &GcePath) -> Result<Answer, ApiError> {
    let key = path.key();
    if path.collection() == Collection::Operations {
        return Err(ApiError::new(405, "methodNotAllowed", "operations cannot be deleted here"));
    }
    let Some(entry) = store.entries.get(&key) else {
        return Err(not_found(&key));
    };
    let target_id = entry.value.get("id").and_then(Value::as_str).map(str::to_string);
    if let Some(user) = users(store, path).into_iter().next() {
        return Err(in_use(&key, &user));
    }
    if path.collection() == Collection::Routers {
        if let Some((nat, ips)) = nats_holding_addresses(&entry.value) {
            return Err(ApiError::new(
                400,
                "resourceInUseByAnotherResource",
                format!("The router '{key}' cannot be deleted while its NAT '{nat}' holds addresses ({ips}); PATCH the router without that NAT (or without its natIps) first"),
            ));
        }
    }
    if path.collection() == Collection::Networks {
        let url = path.url();
        let auto: Vec<String> = store
            .entries
            .iter()
            .filter(|(_, e)| e.auto && e.value.get("network").and_then(Value::as_str) == Some(url.as_str()))
            .map(|(k, _)| k.clone())
            .collect();
        // Its own subnets go with it, unless something uses one of them.
        for k in &auto {
            let Ok(sub) = GcePath::parse(k) else { continue };
            if let Some(user) = users(store, &sub).into_iter().next() {
                return Err(in_use(&key, &user));
            }
        }
        for k in auto {
            store.take(&k);
        }
    }
    store.take(&key);
    store.tick();
    if path.collection() == Collection::ServiceAccounts {
        return Ok((json!({}), 200));
    }
    Ok((operation(store, "delete", path, target_id, None), 200))
}

/// The selfLinks of resources that use `path` and keep it from being deleted.
fn users(store: &GceStore, path: &GcePath) -> Vec<String> {
    let url = path.url();
    // The candidates, in key order, by the collection their keys name (parsing every key made each
    // delete cost the store's size in parses): a network's subnetworks, rules and routes from the
    // store's indexes, its routers and instances from all keys; a subnetwork's and an address's users
    // from all keys (a shared VPC's users may be in other projects). Nothing refers to the rest.
    let candidates: Box<dyn Iterator<Item = (&String, &Entry)>> = match path.collection() {
        Collection::Networks => {
            let routers_and_instances = store
                .entries
                .keys()
                .filter(|k| matches!(Collection::of_key(k), Some(Collection::Routers | Collection::Instances)));
            let rules = store.rules_in(|n| n == url, Some(super::store::last_segment(&url)));
            let indexed = store.subnet_keys_of(&url).chain(rules);
            let keys: std::collections::BTreeSet<&String> = indexed.chain(routers_and_instances).collect();
            Box::new(keys.into_iter().filter_map(|k| Some((k, store.entries.get(k)?))))
        }
        Collection::Subnetworks | Collection::Addresses => Box::new(store.entries.iter()),
        _ => return Vec::new(),
    };
    let refers = |v: &Value, field: &str| v.get(field).and_then(Value::as_str) == Some(url.as_str());
    let mut found = Vec::new();
    for (k, e) in candidates {
        let Some(other) = Collection::of_key(k) else { continue };
        let uses = match (path.collection(), other) {
            (Collection::Networks, Collection::Subnetworks) => !e.auto && refers(&e.value, "network"),
            (Collection::Networks, Collection::Routes | Collection::Firewalls | Collection::Routers) => {
                refers(&e.value, "network")
            }
            (Collection::Subnetworks, Collection::Addresses) => refers(&e.value, "subnetwork"),
            (Collection::Subnetworks, Collection::Instances) => nics(&e.value).any(|n| refers(n, "subnetwork")),
            (Collection::Networks, Collection::Instances) => nics(&e.value).any(|n| refers(n, "network")),
            (Collection::Subnetworks, Collection::Routers) => nat_list(&e.value).any(|nat| {
                nat.get("subnetworks")
                    .and_then(Value::as_array)
                    .is_some_and(|s| s.iter().any(|s| s.get("name").and_then(Value::as_str) == Some(url.as_str())))
            }),
            (Collection::Addresses, Collection::Routers) => {
                nat_list(&e.value).any(|nat| nat_ips(nat).any(|ip| ip == url))
            }
            _ => false,
        };
        if uses {
            found.push(format!("{COMPUTE_URL}{k}"));
        }
    }
    found
}

fn nics(instance: &Value) -> impl Iterator<Item = &Value> {
    instance.get("networkInterfaces").and_then(Value::as_array).into_iter().flatten()
}

fn nat_list(router: &Value) -> impl Iterator<Item = &Value> {
    router.get("nats").and_then(Value::as_array).into_iter().flatten()
}

fn nat_ips(nat: &Value) -> impl Iterator<Item = &str> {
    nat.get("natIps").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

/// The first NAT of a router that holds addresses, with them.
fn nats_holding_addresses(router: &Value) -> Option<(String, String)> {
    nat_list(router).find_map(|nat| {
        let ips: Vec<&str> = nat_ips(nat).collect();
        (!ips.is_empty())
            .then(|| (nat.get("name").and_then(Value::as_str).unwrap_or_default().to_string(), ips.join(", ")))
    })
}

/// The entries whose key starts with `prefix`: a range of the sorted map, not a scan of all of it.
fn under<'a>(store: &'a GceStore, prefix: &'a str) -> impl Iterator<Item = (&'a String, &'a Entry)> + 'a {
    let from = (std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded);
    store.entries.range::<str, _>(from).take_while(move |(k, _)| k.starts_with(prefix))
}

/// The quota an insert would exceed, as the failed operation's (status, code, message).
fn over_quota(store: &GceStore, path: &GcePath, value: &Map<String, Value>) -> Option<(u16, String, String)> {
    let project_prefix = format!("projects/{}/global/", path.project());
    match path.collection() {
        Collection::Routes => {
            let network = value.get("network").and_then(Value::as_str)?;
            let limit = store.quotas.routes_per_network;
            let used = under(store, &format!("{project_prefix}routes/"))
                .filter(|(_, e)| e.value.get("network").and_then(Value::as_str) == Some(network))
                .count();
            (used >= limit).then(|| (403, "QUOTA_EXCEEDED".to_string(), format!("Quota 'ROUTES' exceeded. Limit: {limit}.0 in network '{network}'; delete routes or request a higher quota")))
        }
        Collection::Firewalls => {
            let limit = store.quotas.firewalls_per_project;
            let used = under(store, &format!("{project_prefix}firewalls/")).count();
            (used >= limit).then(|| (403, "QUOTA_EXCEEDED".to_string(), format!("Quota 'FIREWALLS' exceeded. Limit: {limit}.0 globally in project '{}'; delete firewall rules or request a higher quota", path.project())))
        }
        _ => None,
    }
}

/// Records and returns a finished (status DONE) operation on `target`; `error` makes it a failed one.
fn operation(
    store: &mut GceStore,
    op_type: &str,
    target: &GcePath,
    target_id: Option<String>,
    error: Option<(u16, String, String)>,
) -> Value {
    let tick = store.tick();
    let scope = match &target.parent.scope {
        Scope::Region(_) | Scope::Zone(_) => target.parent.scope.clone(),
        _ => Scope::Global,
    };
    let coll = CollectionPath { project: target.project().to_string(), scope, collection: Collection::Operations };
    let name = format!("operation-{tick:013}-{}", &numeric_id(&target.key(), tick)[..8]);
    let path = coll.child(&name);
    let time = timestamp(tick);
    let mut op = json!({
        "kind": "compute#operation",
        "id": numeric_id(&path.key(), tick),
        "name": name,
        "operationType": op_type,
        "targetLink": target.url(),
        "status": "DONE",
        "user": "trellis-sim@example.iam.gserviceaccount.com",
        "progress": 100,
        "insertTime": time,
        "startTime": time,
        "endTime": time,
        "selfLink": path.url(),
    });
    if let Some(id) = target_id {
        op["targetId"] = json!(id);
    }
    match &target.parent.scope {
        Scope::Region(r) => op["region"] = json!(format!("{COMPUTE_URL}projects/{}/regions/{r}", target.project())),
        Scope::Zone(z) => op["zone"] = json!(format!("{COMPUTE_URL}projects/{}/zones/{z}", target.project())),
        _ => {}
    }
    if let Some((status, code, message)) = error {
        op["error"] = json!({"errors": [{"code": code, "message": message}]});
        op["httpErrorStatusCode"] = json!(status);
        op["httpErrorMessage"] = json!(http_reason(status));
    }
    store.put_operation(path.key(), op.clone());
    op
}

fn http_reason(status: u16) -> &'static str {
    match status {
        400 => "BAD REQUEST",
        403 => "FORBIDDEN",
        404 => "NOT FOUND",
        409 => "CONFLICT",
        412 => "PRECONDITION FAILED",
        _ => "ERROR",
    }
}

/// The identity and version fields every stored resource carries.
pub(crate) fn stamp(value: Map<String, Value>, path: &GcePath, old: Option<&Value>, tick: u64) -> Value {
    let key = path.key();
    let keep = |f: &str| old.and_then(|o| o.get(f)).cloned();
    let mut out = Map::new();
    if path.collection() == Collection::ServiceAccounts {
        let unique = keep("uniqueId").unwrap_or_else(|| json!(format!("1{}", numeric_id(&key, tick))));
        out.insert("name".into(), json!(key));
        out.insert("projectId".into(), json!(path.project()));
        out.insert("uniqueId".into(), unique.clone());
        out.insert("email".into(), json!(path.name));
        out.insert("oauth2ClientId".into(), unique);
        out.insert("etag".into(), json!(etag(&key, tick)));
        for (k, v) in value {
            out.entry(k).or_insert(v);
        }
        return Value::Object(out);
    }
    if let Some(kind) = path.collection().kind() {
        out.insert("kind".into(), json!(kind));
    }
    out.insert("id".into(), keep("id").unwrap_or_else(|| json!(numeric_id(&key, tick))));
    out.insert("creationTimestamp".into(), keep("creationTimestamp").unwrap_or_else(|| json!(timestamp(tick))));
    out.insert("name".into(), json!(path.name));
    for (k, v) in value {
        if k != "name" {
            out.insert(k, v);
        }
    }
    match &path.parent.scope {
        Scope::Region(r) => {
            out.insert("region".into(), json!(format!("{COMPUTE_URL}projects/{}/regions/{r}", path.project())));
        }
        Scope::Zone(z) => {
            out.insert("zone".into(), json!(format!("{COMPUTE_URL}projects/{}/zones/{z}", path.project())));
        }
        _ => {}
    }
    out.insert("selfLink".into(), json!(path.url()));
    if let Some(id) = out.get("id").and_then(Value::as_str) {
        let with_id = format!("{}/{id}", path.url().rsplit_once('/').map_or("", |(c, _)| c));
        out.insert("selfLinkWithId".into(), json!(with_id));
    }
    if version_field(path.collection()) == Some("fingerprint") {
        out.insert("fingerprint".into(), json!(fingerprint(&key, tick)));
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// per-collection checks and defaults
// ---------------------------------------------------------------------------------------------

/// Checks a resource's fields and fills GCE's defaults. `old` is the stored version on a PATCH.
pub(crate) fn build(
    store: &mut GceStore,
    path: &GcePath,
    mut body: Map<String, Value>,
    old: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    for f in OUTPUT_ONLY {
        body.remove(f);
    }
    match path.collection() {
        Collection::Networks => build_network(body, old),
        Collection::Subnetworks => build_subnetwork(store, path, body, old),
        Collection::Routers => build_router(store, path, body, old),
        Collection::Addresses => build_address(store, path, body, old),
        Collection::Firewalls => build_firewall(store, path, body, old),
        Collection::Routes => build_route(store, path, body),
        Collection::Instances => build_instance(store, path, body, old),
        Collection::ServiceAccounts => {
            body.retain(|k, _| matches!(k.as_str(), "displayName" | "description" | "disabled"));
            // IAM answers in proto3 JSON, which leaves a false `disabled` out (a disabled account
            // shows `"disabled": true`); Google's clients read it so.
            if body.get("disabled") == Some(&json!(false)) {
                body.remove("disabled");
            }
            Ok(body)
        }
        Collection::Operations => Err(ApiError::new(405, "methodNotAllowed", "operations are written by the server")),
    }
}

/// A resource as a world file declares it (as GCE answered a GET of it): built as an insert would
/// be — references resolved, defaults filled — except for what GCE makes itself and refuses to
/// insert: a route whose next hop is its network (a subnet route, `nextHopNetwork`) or a peering
/// (`nextHopPeering`) is taken as declared, its network resolved.
pub(crate) fn build_declared(
    store: &mut GceStore,
    path: &GcePath,
    mut body: Map<String, Value>,
) -> Result<Map<String, Value>, ApiError> {
    let system_route = path.collection() == Collection::Routes
        && ["nextHopNetwork", "nextHopPeering"].iter().any(|h| body.get(*h).is_some_and(Value::is_string));
    if !system_route {
        return build(store, path, body, None);
    }
    for f in OUTPUT_ONLY {
        body.remove(f);
    }
    reference(store, &mut body, "network", path, Collection::Networks)?;
    if body.contains_key("nextHopNetwork") {
        reference(store, &mut body, "nextHopNetwork", path, Collection::Networks)?;
    }
    Ok(body)
}

fn str_field<'a>(body: &'a Map<String, Value>, field: &str) -> Result<Option<&'a str>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid(format!("Invalid value for field 'resource.{field}': {other}. Must be a string"))),
    }
}

fn one_of(
    body: &mut Map<String, Value>,
    field: &str,
    allowed: &[&str],
    default: Option<&str>,
) -> Result<Option<String>, ApiError> {
    let v = match str_field(body, field)? {
        Some(v) => v.to_string(),
        None => match default {
            Some(d) => d.to_string(),
            None => return Ok(None),
        },
    };
    if !allowed.contains(&v.as_str()) {
        return Err(invalid(format!(
            "Invalid value for field 'resource.{field}': '{v}'. Must be one of {}",
            allowed.join(", ")
        )));
    }
    body.insert(field.to_string(), json!(v));
    Ok(Some(v))
}

fn int_field(
    body: &mut Map<String, Value>,
    field: &str,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, ApiError> {
    let v = match body.get(field) {
        None | Some(Value::Null) => default,
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .ok_or_else(|| invalid(format!("Invalid value for field 'resource.{field}': {v}. Must be an integer")))?,
    };
    if !range.contains(&v) {
        return Err(invalid(format!(
            "Invalid value for field 'resource.{field}': '{v}'. Must be between {} and {}",
            range.start(),
            range.end()
        )));
    }
    body.insert(field.to_string(), json!(v));
    Ok(v)
}

fn bool_field(body: &mut Map<String, Value>, field: &str, default: bool) -> Result<bool, ApiError> {
    let v = match body.get(field) {
        None | Some(Value::Null) => default,
        Some(Value::Bool(b)) => *b,
        Some(v) => return Err(invalid(format!("Invalid value for field 'resource.{field}': {v}. Must be a boolean"))),
    };
    body.insert(field.to_string(), json!(v));
    Ok(v)
}

fn string_list(body: &Map<String, Value>, field: &str) -> Result<Vec<String>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    invalid(format!("Invalid value for field 'resource.{field}': {v}. Must be a list of strings"))
                })
            })
            .collect(),
        Some(v) => Err(invalid(format!("Invalid value for field 'resource.{field}': {v}. Must be a list of strings"))),
    }
}

/// Resolves a required reference field to an existing resource, written back as its full URL.
fn reference(
    store: &GceStore,
    body: &mut Map<String, Value>,
    field: &str,
    path: &GcePath,
    collection: Collection,
) -> Result<GcePath, ApiError> {
    let Some(r) = str_field(body, field)? else {
        return Err(invalid(format!("Invalid value for field 'resource.{field}': ''. The field is required")));
    };
    let target = resolve(r, path.project(), collection)
        .map_err(|e| invalid(format!("Invalid value for field 'resource.{field}': {e}")))?;
    if !store.entries.contains_key(&target.key()) {
        return Err(not_found(&target.key()));
    }
    body.insert(field.to_string(), json!(target.url()));
    Ok(target)
}

fn immutable(body: &Map<String, Value>, old: Option<&Value>, field: &str, key: &str) -> Result<(), ApiError> {
    if let Some(old) = old {
        if old.get(field) != body.get(field) {
            return Err(invalid(format!("'{key}': field '{field}' cannot be changed")));
        }
    }
    Ok(())
}

fn build_network(mut body: Map<String, Value>, old: Option<&Value>) -> Result<Map<String, Value>, ApiError> {
    let auto = bool_field(&mut body, "autoCreateSubnetworks", false)?;
    if auto && old.is_some_and(|o| o["autoCreateSubnetworks"] == json!(false)) {
        return Err(invalid("Invalid value for field 'resource.autoCreateSubnetworks': a custom-mode network cannot be switched to auto mode"));
    }
    int_field(&mut body, "mtu", 1460, 1300..=8896)?;
    let mut routing = match body.remove("routingConfig") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(v) => {
            return Err(invalid(format!("Invalid value for field 'resource.routingConfig': {v}. Must be an object")))
        }
    };
    one_of(&mut routing, "routingMode", &["REGIONAL", "GLOBAL"], Some("REGIONAL"))?;
    body.insert("routingConfig".into(), Value::Object(routing));
    one_of(
        &mut body,
        "networkFirewallPolicyEnforcementOrder",
        &["AFTER_CLASSIC_FIREWALL", "BEFORE_CLASSIC_FIREWALL"],
        Some("AFTER_CLASSIC_FIREWALL"),
    )?;
    Ok(body)
}

fn parse_v4(field: &str, s: &str) -> Result<Ipv4Net, ApiError> {
    let net: Ipv4Net = s.parse().map_err(|_| {
        invalid(format!("Invalid value for field '{field}': '{s}'. Must be an IPv4 CIDR range such as 10.0.0.0/24"))
    })?;
    if net.trunc() != net {
        return Err(invalid(format!(
            "Invalid value for field '{field}': '{s}'. The host bits must be zero (did you mean {}?)",
            net.trunc()
        )));
    }
    Ok(net)
}

fn overlaps(a: &Ipv4Net, b: &Ipv4Net) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

/// All IPv4 ranges of a subnetwork: (range name, or "" for the primary; CIDR).
fn subnet_ranges(v: &Value) -> Vec<(String, Ipv4Net)> {
    let mut out = Vec::new();
    if let Some(net) = v.get("ipCidrRange").and_then(Value::as_str).and_then(|s| s.parse().ok()) {
        out.push((String::new(), net));
    }
    for r in v.get("secondaryIpRanges").and_then(Value::as_array).into_iter().flatten() {
        if let (Some(n), Some(net)) = (
            r.get("rangeName").and_then(Value::as_str),
            r.get("ipCidrRange").and_then(Value::as_str).and_then(|s| s.parse().ok()),
        ) {
            out.push((n.to_string(), net));
        }
    }
    out
}

fn build_subnetwork(
    store: &mut GceStore,
    path: &GcePath,
    mut body: Map<String, Value>,
    old: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    let key = path.key();
    let network = reference(store, &mut body, "network", path, Collection::Networks)?;
    immutable(&body, old, "network", &key)?;
    let cidr = str_field(&body, "ipCidrRange")?
        .ok_or_else(|| invalid("Invalid value for field 'resource.ipCidrRange': ''. The field is required"))?
        .to_string();
    let primary = parse_v4("resource.ipCidrRange", &cidr)?;
    if !(8..=29).contains(&primary.prefix_len()) {
        return Err(invalid(format!(
            "Invalid value for field 'resource.ipCidrRange': '{cidr}'. The prefix length must be between /8 and /29"
        )));
    }
    if let Some(old_cidr) =
        old.and_then(|o| o.get("ipCidrRange")).and_then(Value::as_str).and_then(|s| s.parse::<Ipv4Net>().ok())
    {
        if !primary.contains(&old_cidr) {
            return Err(invalid(format!("'{key}': field 'ipCidrRange' can only be expanded, from {old_cidr} to a range containing it; {primary} does not")));
        }
    }
    body.insert("ipCidrRange".into(), json!(primary.to_string()));
    let mut seen: Vec<(String, Ipv4Net)> = vec![(String::new(), primary)];
    let secondaries = match body.get("secondaryIpRanges") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(v) => {
            return Err(invalid(format!("Invalid value for field 'resource.secondaryIpRanges': {v}. Must be a list")))
        }
    };
    let mut normalized = Vec::new();
    for (i, r) in secondaries.iter().enumerate() {
        let field = format!("resource.secondaryIpRanges[{i}]");
        let name = r.get("rangeName").and_then(Value::as_str).unwrap_or_default();
        check_name(&format!("{field}.rangeName"), name)?;
        let text = r.get("ipCidrRange").and_then(Value::as_str).unwrap_or_default();
        let net = parse_v4(&format!("{field}.ipCidrRange"), text)?;
        for (other, other_net) in &seen {
            if other == name {
                return Err(invalid(format!("Invalid value for field '{field}.rangeName': '{name}'. The range name is used twice in subnetwork '{}'", path.name)));
            }
            if overlaps(&net, other_net) {
                let what = if other.is_empty() {
                    format!("the primary range {other_net}")
                } else {
                    format!("secondary range '{other}' ({other_net})")
                };
                return Err(invalid(format!(
                    "Invalid value for field '{field}.ipCidrRange': '{net}'. It overlaps {what} of subnetwork '{}'",
                    path.name
                )));
            }
        }
        seen.push((name.to_string(), net));
        normalized.push(json!({"rangeName": name, "ipCidrRange": net.to_string()}));
    }
    if body.contains_key("secondaryIpRanges") {
        body.insert("secondaryIpRanges".into(), Value::Array(normalized));
    }
    // No range may overlap a range of another subnetwork of the same network.
    let url = network.url();
    for (k, e) in store.subnet_keys_of(&url).filter_map(|k| Some((k, store.entries.get(k)?))) {
        if *k == key {
            continue;
        }
        for (_, mine) in &seen {
            if let Some((_, theirs)) = subnet_ranges(&e.value).into_iter().find(|(_, t)| overlaps(mine, t)) {
                let other = GcePath::parse(k)
                    .map(|p| (p.name.clone(), p.region().unwrap_or_default().to_string()))
                    .unwrap_or_default();
                return Err(invalid(format!(
                    "Invalid IPCidrRange: {mine} conflicts with existing subnetwork '{}' in region '{}' ({theirs})",
                    other.0, other.1
                )));
            }
        }
    }
    let gateway = Ipv4Addr::from(u32::from(primary.network()) + 1);
    body.insert("gatewayAddress".into(), json!(gateway.to_string()));
    bool_field(&mut body, "privateIpGoogleAccess", false)?;
    let purposes = [
        "PRIVATE",
        "REGIONAL_MANAGED_PROXY",
        "GLOBAL_MANAGED_PROXY",
        "PRIVATE_SERVICE_CONNECT",
        "PRIVATE_NAT",
        "INTERNAL_HTTPS_LOAD_BALANCER",
    ];
    let purpose = one_of(&mut body, "purpose", &purposes, Some("PRIVATE"))?.unwrap_or_default();
    if purpose.ends_with("MANAGED_PROXY") {
        one_of(&mut body, "role", &["ACTIVE", "BACKUP"], Some("ACTIVE"))?;
    }
    match body.remove("logConfig") {
        None | Some(Value::Null) => {}
        Some(Value::Object(mut log)) => {
            let enable = bool_field(&mut log, "enable", false)?;
            if enable {
                one_of(
                    &mut log,
                    "aggregationInterval",
                    &[
                        "INTERVAL_5_SEC",
                        "INTERVAL_30_SEC",
                        "INTERVAL_1_MIN",
                        "INTERVAL_5_MIN",
                        "INTERVAL_10_MIN",
                        "INTERVAL_15_MIN",
                    ],
                    Some("INTERVAL_5_SEC"),
                )?;
                let sampling = log.get("flowSampling").cloned().unwrap_or(json!(0.5));
                if !sampling.as_f64().is_some_and(|f| (0.0..=1.0).contains(&f)) {
                    return Err(invalid(format!("Invalid value for field 'resource.logConfig.flowSampling': {sampling}. Must be between 0 and 1")));
                }
                log.insert("flowSampling".into(), sampling);
                one_of(
                    &mut log,
                    "metadata",
                    &["INCLUDE_ALL_METADATA", "EXCLUDE_ALL_METADATA", "CUSTOM_METADATA"],
                    Some("INCLUDE_ALL_METADATA"),
                )?;
            }
            body.insert("logConfig".into(), Value::Object(log));
        }
        Some(v) => {
            return Err(invalid(format!("Invalid value for field 'resource.logConfig': {v}. Must be an object")))
        }
    }
    // Allocated last: a refused insert hands out no prefix.
    let stack = one_of(&mut body, "stackType", &["IPV4_ONLY", "IPV4_IPV6"], Some("IPV4_ONLY"))?.unwrap_or_default();
    let access = one_of(&mut body, "ipv6AccessType", &["EXTERNAL", "INTERNAL"], None)?;
    body.remove("externalIpv6Prefix");
    body.remove("internalIpv6Prefix");
    match (stack.as_str(), access.as_deref()) {
        ("IPV4_ONLY", Some(a)) => {
            return Err(invalid(format!(
                "Invalid value for field 'resource.ipv6AccessType': '{a}'. It needs stackType IPV4_IPV6"
            )));
        }
        ("IPV4_IPV6", None) => {
            return Err(invalid("Invalid value for field 'resource.ipv6AccessType': ''. A subnetwork with stackType IPV4_IPV6 needs ipv6AccessType EXTERNAL or INTERNAL"));
        }
        ("IPV4_IPV6", Some(a)) => {
            let field = if a == "EXTERNAL" { "externalIpv6Prefix" } else { "internalIpv6Prefix" };
            let kept = old.and_then(|o| o.get(field)).cloned();
            let prefix = match kept {
                Some(p) => p,
                None => {
                    store.ipv6_prefixes += 1;
                    let n = store.ipv6_prefixes;
                    if a == "EXTERNAL" {
                        json!(format!("2600:1900:4000:{n:x}::/64"))
                    } else {
                        json!(format!("fd20:0:0:{n:x}::/64"))
                    }
                }
            };
            body.insert(field.into(), prefix);
        }
        _ => {}
    }
    Ok(body)
}

fn build_router(
    store: &mut GceStore,
    path: &GcePath,
    mut body: Map<String, Value>,
    old: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    let key = path.key();
    let network = reference(store, &mut body, "network", path, Collection::Networks)?;
    immutable(&body, old, "network", &key)?;
    let nats = match body.remove("nats") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a,
        Some(v) => return Err(invalid(format!("Invalid value for field 'resource.nats': {v}. Must be a list"))),
    };
    let mut names: Vec<String> = Vec::new();
    let mut used_here: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (i, nat) in nats.into_iter().enumerate() {
        let field = format!("resource.nats[{i}]");
        let Value::Object(mut nat) = nat else {
            return Err(invalid(format!("Invalid value for field '{field}'. Must be an object")));
        };
        let name = nat.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        check_name(&format!("{field}.name"), &name)?;
        if names.contains(&name) {
            return Err(invalid(format!(
                "Invalid value for field '{field}.name': '{name}'. Two NATs of router '{}' have this name",
                path.name
            )));
        }
        names.push(name.clone());
        let alloc = one_of(&mut nat, "natIpAllocateOption", &["AUTO_ONLY", "MANUAL_ONLY"], None)?
            .ok_or_else(|| invalid(format!("Invalid value for field '{field}.natIpAllocateOption': ''. The field is required (AUTO_ONLY or MANUAL_ONLY)")))?;
        let mut ips = Vec::new();
        for (j, ip) in
            string_list(&nat, "natIps").map_err(|e| invalid(format!("{field}: {}", e.message)))?.into_iter().enumerate()
        {
            let ip_field = format!("{field}.natIps[{j}]");
            let addr = resolve(&ip, path.project(), Collection::Addresses)
                .map_err(|e| invalid(format!("Invalid value for field '{ip_field}': {e}")))?;
            let Some(entry) = store.entries.get(&addr.key()) else {
                return Err(not_found(&addr.key()));
            };
            if addr.region() != path.region() {
                return Err(invalid(format!(
                    "Invalid value for field '{ip_field}': address '{}' is in region '{}', the router in '{}'",
                    addr.name,
                    addr.region().unwrap_or_default(),
                    path.region().unwrap_or_default()
                )));
            }
            if entry.value.get("addressType").and_then(Value::as_str) != Some("EXTERNAL") {
                return Err(invalid(format!(
                    "Invalid value for field '{ip_field}': address '{}' is not an EXTERNAL address",
                    addr.name
                )));
            }
            let url = addr.url();
            if used_here.contains(&url) {
                return Err(invalid(format!(
                    "Invalid value for field '{ip_field}': address '{}' is used twice in router '{}'",
                    addr.name, path.name
                )));
            }
            if let Some(user) = users(store, &addr).into_iter().find(|u| *u != path.url()) {
                return Err(in_use(&addr.key(), &user));
            }
            used_here.push(url.clone());
            ips.push(json!(url));
        }
        match (alloc.as_str(), ips.is_empty()) {
            ("MANUAL_ONLY", true) => return Err(invalid(format!("Invalid value for field '{field}.natIps': []. A NAT with natIpAllocateOption MANUAL_ONLY needs at least one address"))),
            ("AUTO_ONLY", false) => return Err(invalid(format!("Invalid value for field '{field}.natIps'. A NAT with natIpAllocateOption AUTO_ONLY takes no addresses; use MANUAL_ONLY"))),
            _ => {}
        }
        if nat.contains_key("natIps") || !ips.is_empty() {
            nat.insert("natIps".into(), Value::Array(ips));
        }
        let ranges = one_of(
            &mut nat,
            "sourceSubnetworkIpRangesToNat",
            &["ALL_SUBNETWORKS_ALL_IP_RANGES", "ALL_SUBNETWORKS_ALL_PRIMARY_IP_RANGES", "LIST_OF_SUBNETWORKS"],
            None,
        )?
        .ok_or_else(|| {
            invalid(format!(
                "Invalid value for field '{field}.sourceSubnetworkIpRangesToNat': ''. The field is required"
            ))
        })?;
        let subnets = match nat.remove("subnetworks") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a,
            Some(v) => {
                return Err(invalid(format!("Invalid value for field '{field}.subnetworks': {v}. Must be a list")))
            }
        };
        if ranges == "LIST_OF_SUBNETWORKS" && subnets.is_empty() {
            return Err(invalid(format!(
                "Invalid value for field '{field}.subnetworks': []. LIST_OF_SUBNETWORKS needs at least one subnetwork"
            )));
        }
        if ranges != "LIST_OF_SUBNETWORKS" && !subnets.is_empty() {
            return Err(invalid(format!("Invalid value for field '{field}.subnetworks'. Subnetworks are listed only with sourceSubnetworkIpRangesToNat LIST_OF_SUBNETWORKS")));
        }
        let mut subs = Vec::new();
        for (j, s) in subnets.into_iter().enumerate() {
            let s_field = format!("{field}.subnetworks[{j}]");
            let Value::Object(mut s) = s else {
                return Err(invalid(format!("Invalid value for field '{s_field}'. Must be an object")));
            };
            let sub = reference(store, &mut s, "name", path, Collection::Subnetworks)
                .map_err(|e| ApiError { message: format!("{s_field}: {}", e.message), ..e })?;
            let in_network = store.entries.get(&sub.key()).and_then(|e| e.value.get("network")).and_then(Value::as_str)
                == Some(network.url().as_str());
            if sub.region() != path.region() || !in_network {
                return Err(invalid(format!("Invalid value for field '{s_field}.name': subnetwork '{}' is not in the router's network and region", sub.name)));
            }
            if !s.contains_key("sourceIpRangesToNat") {
                s.insert("sourceIpRangesToNat".into(), json!(["ALL_IP_RANGES"]));
            }
            subs.push(Value::Object(s));
        }
        if !subs.is_empty() {
            nat.insert("subnetworks".into(), Value::Array(subs));
        }
        int_field(&mut nat, "minPortsPerVm", 64, 2..=65536)?;
        bool_field(&mut nat, "enableEndpointIndependentMapping", false)?;
        bool_field(&mut nat, "enableDynamicPortAllocation", false)?;
        int_field(&mut nat, "udpIdleTimeoutSec", 30, 1..=i64::from(u32::MAX))?;
        int_field(&mut nat, "icmpIdleTimeoutSec", 30, 1..=i64::from(u32::MAX))?;
        int_field(&mut nat, "tcpEstablishedIdleTimeoutSec", 1200, 1..=i64::from(u32::MAX))?;
        int_field(&mut nat, "tcpTransitoryIdleTimeoutSec", 30, 1..=i64::from(u32::MAX))?;
        int_field(&mut nat, "tcpTimeWaitTimeoutSec", 120, 1..=i64::from(u32::MAX))?;
        let mut log = match nat.remove("logConfig") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(v) => {
                return Err(invalid(format!("Invalid value for field '{field}.logConfig': {v}. Must be an object")))
            }
        };
        bool_field(&mut log, "enable", false)?;
        one_of(&mut log, "filter", &["ALL", "ERRORS_ONLY", "TRANSLATIONS_ONLY"], Some("ALL"))?;
        nat.insert("logConfig".into(), Value::Object(log));
        out.push(Value::Object(nat));
    }
    if !out.is_empty() {
        body.insert("nats".into(), Value::Array(out));
    }
    Ok(body)
}

fn build_address(
    store: &mut GceStore,
    path: &GcePath,
    mut body: Map<String, Value>,
    old: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    let key = path.key();
    let kind = one_of(&mut body, "addressType", &["EXTERNAL", "INTERNAL"], Some("EXTERNAL"))?.unwrap_or_default();
    immutable(&body, old, "addressType", &key)?;
    one_of(&mut body, "ipVersion", &["IPV4"], Some("IPV4"))?;
    let requested = str_field(&body, "address")?.map(str::to_string);
    if kind == "EXTERNAL" {
        one_of(&mut body, "networkTier", &["PREMIUM", "STANDARD"], Some("PREMIUM"))?;
        let address = match old.and_then(|o| o.get("address")).and_then(Value::as_str) {
            Some(a) => a.to_string(),
            None => {
                // A new external address this simulated cloud never handed out before.
                store.external_ips += 1;
                Ipv4Addr::from(u32::from(Ipv4Addr::new(35, 190, 0, 0)) + store.external_ips).to_string()
            }
        };
        body.insert("address".into(), json!(address));
        return Ok(body);
    }
    let subnet = reference(store, &mut body, "subnetwork", path, Collection::Subnetworks)?;
    immutable(&body, old, "subnetwork", &key)?;
    if subnet.region() != path.region() {
        return Err(invalid(format!(
            "Invalid value for field 'resource.subnetwork': subnetwork '{}' is not in region '{}'",
            subnet.name,
            path.region().unwrap_or_default()
        )));
    }
    one_of(
        &mut body,
        "purpose",
        &["GCE_ENDPOINT", "SHARED_LOADBALANCER_VIP", "VPC_PEERING", "IPSEC_INTERCONNECT"],
        Some("GCE_ENDPOINT"),
    )?;
    let range: Ipv4Net =
        store.entries[&subnet.key()].value["ipCidrRange"].as_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
            ApiError::new(500, "internalError", format!("subnetwork '{}' has no ipCidrRange", subnet.key()))
        })?;
    let subnet_url = subnet.url();
    let taken = taken_in_subnet(store, &subnet_url, &key);
    // GCE reserves the network address, the gateway, the second-to-last address and the broadcast.
    let first = u32::from(range.network()) + 2;
    let last = u32::from(range.broadcast()) - 2;
    let address = match old.and_then(|o| o.get("address")).and_then(Value::as_str).map(str::to_string).or(requested) {
        Some(a) => {
            let ip: Ipv4Addr = a.parse().map_err(|_| {
                invalid(format!("Invalid value for field 'resource.address': '{a}'. Must be an IPv4 address"))
            })?;
            if !(first..=last).contains(&u32::from(ip)) {
                return Err(invalid(format!("Invalid value for field 'resource.address': '{a}'. It is not a usable address of subnetwork '{}' ({range})", subnet.name)));
            }
            if taken.contains(&a) {
                return Err(ApiError::new(
                    409,
                    "ipAddressInUse",
                    format!("IP '{a}' is already reserved in subnetwork '{}'", subnet.name),
                ));
            }
            a
        }
        None => {
            (first..=last).map(|n| Ipv4Addr::from(n).to_string()).find(|a| !taken.contains(a)).ok_or_else(|| {
                ApiError::new(
                    400,
                    "ipSpaceExhausted",
                    format!("subnetwork '{}' ({range}) has no free address left", subnet.name),
                )
            })?
        }
    };
    body.insert("address".into(), json!(address));
    Ok(body)
}

/// The internal IPs of a subnetwork taken by internal addresses and VM NICs (other than `except`'s).
fn taken_in_subnet(store: &GceStore, subnet_url: &str, except: &str) -> Vec<String> {
    let mut taken = Vec::new();
    for (k, e) in &store.entries {
        if k == except {
            continue;
        }
        if e.value.get("subnetwork").and_then(Value::as_str) == Some(subnet_url) {
            taken.extend(e.value.get("address").and_then(Value::as_str).map(str::to_string));
        }
        for nic in nics(&e.value) {
            if nic.get("subnetwork").and_then(Value::as_str) == Some(subnet_url) {
                taken.extend(nic.get("networkIP").and_then(Value::as_str).map(str::to_string));
            }
        }
    }
    taken
}

/// A VM: a machine type, NICs in existing subnetworks of its region (each gets a `networkIP` from
/// the subnet and, with an access config, an external `natIP`), tags; status RUNNING.
fn build_instance(
    store: &mut GceStore,
    path: &GcePath,
    mut body: Map<String, Value>,
    old: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    let key = path.key();
    let zone = path.parent.zone().unwrap_or_default().to_string();
    let machine = str_field(&body, "machineType")?
        .ok_or_else(|| invalid("Invalid value for field 'resource.machineType': ''. The field is required"))?
        .to_string();
    let machine = if machine.starts_with("https://") {
        machine
    } else if machine.starts_with("projects/") {
        format!("{COMPUTE_URL}{machine}")
    } else {
        format!(
            "{COMPUTE_URL}projects/{}/zones/{zone}/machineTypes/{}",
            path.project(),
            machine.rsplit('/').next().unwrap_or_default()
        )
    };
    body.insert("machineType".into(), json!(machine));
    let given =
        match body.remove("networkInterfaces") {
            Some(Value::Array(a)) if !a.is_empty() => a,
            _ => return Err(invalid(
                "Invalid value for field 'resource.networkInterfaces': []. A VM needs at least one network interface",
            )),
        };
    let old_nics: Vec<Value> = old.map(|o| nics(o).cloned().collect()).unwrap_or_default();
    let mut out = Vec::new();
    for (i, nic) in given.into_iter().enumerate() {
        let field = format!("resource.networkInterfaces[{i}]");
        let Value::Object(mut nic) = nic else {
            return Err(invalid(format!("Invalid value for field '{field}'. Must be an object")));
        };
        let sub = reference(store, &mut nic, "subnetwork", path, Collection::Subnetworks)
            .map_err(|e| ApiError { message: format!("{field}: {}", e.message), ..e })?;
        if sub.region() != path.region() {
            return Err(invalid(format!(
                "Invalid value for field '{field}.subnetwork': subnetwork '{}' is not in the VM's region",
                sub.name
            )));
        }
        let subnet = &store.entries[&sub.key()].value;
        nic.insert("network".into(), subnet["network"].clone());
        let range: Ipv4Net = subnet["ipCidrRange"].as_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
            ApiError::new(500, "internalError", format!("subnetwork '{}' has no ipCidrRange", sub.key()))
        })?;
        let ip = match old_nics.get(i).and_then(|n| n.get("networkIP")).and_then(Value::as_str) {
            Some(ip) => ip.to_string(),
            None => {
                let taken = taken_in_subnet(store, &sub.url(), &key);
                (u32::from(range.network()) + 2..=u32::from(range.broadcast()) - 2)
                    .map(|n| Ipv4Addr::from(n).to_string())
                    .find(|a| !taken.contains(a))
                    .ok_or_else(|| {
                        ApiError::new(
                            400,
                            "ipSpaceExhausted",
                            format!("subnetwork '{}' ({range}) has no free address left", sub.name),
                        )
                    })?
            }
        };
        nic.insert("networkIP".into(), json!(ip));
        nic.insert("name".into(), json!(format!("nic{i}")));
        nic.insert("kind".into(), json!("compute#networkInterface"));
        if let Some(Value::Array(configs)) = nic.remove("accessConfigs") {
            let mut done = Vec::new();
            for (j, c) in configs.into_iter().enumerate() {
                let Value::Object(mut c) = c else {
                    return Err(invalid(format!(
                        "Invalid value for field '{field}.accessConfigs[{j}]'. Must be an object"
                    )));
                };
                let kept =
                    old_nics.get(i).and_then(|n| n["accessConfigs"].get(j)).and_then(|c| c.get("natIP")).cloned();
                let nat_ip = match kept {
                    Some(ip) => ip,
                    None => {
                        store.external_ips += 1;
                        json!(Ipv4Addr::from(u32::from(Ipv4Addr::new(35, 190, 0, 0)) + store.external_ips).to_string())
                    }
                };
                c.insert("natIP".into(), nat_ip);
                c.entry("type").or_insert(json!("ONE_TO_ONE_NAT"));
                c.entry("name").or_insert(json!("External NAT"));
                c.entry("networkTier").or_insert(json!("PREMIUM"));
                c.insert("kind".into(), json!("compute#accessConfig"));
                done.push(Value::Object(c));
            }
            nic.insert("accessConfigs".into(), Value::Array(done));
        }
        out.push(Value::Object(nic));
    }
    body.insert("networkInterfaces".into(), Value::Array(out));
    if let Some(tags) = body.get("tags") {
        let items = tags.get("items").cloned().unwrap_or(json!([]));
        let list: Vec<String> = serde_json::from_value(items.clone())
            .map_err(|_| invalid("Invalid value for field 'resource.tags.items'. Must be a list of strings"))?;
        for (i, t) in list.iter().enumerate() {
            check_name(&format!("resource.tags.items[{i}]"), t)?;
        }
        body.insert("tags".into(), json!({"items": items}));
    }
    body.insert("status".into(), json!("RUNNING"));
    Ok(body)
}

fn check_range_list(body: &Map<String, Value>, field: &str) -> Result<Option<Vec<String>>, ApiError> {
    if !body.contains_key(field) {
        return Ok(None);
    }
    let list = string_list(body, field)?;
    for r in &list {
        if r.parse::<IpNet>().is_err() && r.parse::<std::net::IpAddr>().is_err() {
            return Err(invalid(format!(
                "Invalid value for field 'resource.{field}': '{r}'. Must be a CIDR range or an IP address"
            )));
        }
    }
    Ok(Some(list))
}

/// GCE refuses a firewall rule whose ranges mix IPv4 and IPv6 (source and destination ranges
/// alike): one rule is for one IP version, dual-stack needs two rules.
fn one_ip_family<'a>(ranges: impl Iterator<Item = (&'a str, &'a String)>) -> Result<(), ApiError> {
    let mut first: Option<(&str, &str, bool)> = None;
    for (field, r) in ranges {
        let v6 = r.contains(':');
        match first {
            None => first = Some((field, r, v6)),
            Some((_, seen, seen_v6)) if seen_v6 != v6 => {
                let (v4, v6) = if v6 { (seen, r.as_str()) } else { (r.as_str(), seen) };
                return Err(invalid(format!(
                    "Invalid value for field 'resource.{field}': '{r}'. IPv4 ({v4}) and IPv6 ({v6}) ranges cannot be mixed in one firewall rule"
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn check_tags(body: &Map<String, Value>, field: &str) -> Result<Vec<String>, ApiError> {
    let tags = string_list(body, field)?;
    for (i, t) in tags.iter().enumerate() {
        check_name(&format!("resource.{field}[{i}]"), t)?;
    }
    Ok(tags)
}

fn build_firewall(
    store: &mut GceStore,
    path: &GcePath,
    mut body: Map<String, Value>,
    old: Option<&Value>,
) -> Result<Map<String, Value>, ApiError> {
    let key = path.key();
    if !body.contains_key("network") {
        body.insert("network".into(), json!("global/networks/default"));
    }
    reference(store, &mut body, "network", path, Collection::Networks)?;
    immutable(&body, old, "network", &key)?;
    let direction = one_of(&mut body, "direction", &["INGRESS", "EGRESS"], Some("INGRESS"))?.unwrap_or_default();
    int_field(&mut body, "priority", 1000, 0..=65535)?;
    let rules = |field: &str| -> Result<usize, ApiError> {
        match body.get(field) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Array(a)) => {
                for (i, r) in a.iter().enumerate() {
                    if !r.get("IPProtocol").is_some_and(Value::is_string) {
                        return Err(invalid(format!("Invalid value for field 'resource.{field}[{i}].IPProtocol': ''. The field is required (tcp, udp, icmp, esp, ah, sctp, ipip, all or a protocol number)")));
                    }
                    if r.get("ports").is_some()
                        && !r["ports"].as_array().is_some_and(|p| p.iter().all(Value::is_string))
                    {
                        return Err(invalid(format!("Invalid value for field 'resource.{field}[{i}].ports': {}. Must be a list of port strings such as \"80\" or \"8000-9000\"", r["ports"])));
                    }
                }
                Ok(a.len())
            }
            Some(v) => Err(invalid(format!("Invalid value for field 'resource.{field}': {v}. Must be a list"))),
        }
    };
    match (rules("allowed")?, rules("denied")?) {
        (0, 0) => {
            return Err(invalid(
                "Invalid value for field 'resource.allowed': ''. A firewall rule needs 'allowed' or 'denied'",
            ))
        }
        (a, d) if a > 0 && d > 0 => {
            return Err(invalid(
                "Invalid value for field 'resource.denied'. A firewall rule has 'allowed' or 'denied', not both",
            ))
        }
        _ => {}
    }
    let sources = check_range_list(&body, "sourceRanges")?;
    let destinations = check_range_list(&body, "destinationRanges")?;
    one_ip_family(
        sources
            .iter()
            .flatten()
            .map(|r| ("sourceRanges", r))
            .chain(destinations.iter().flatten().map(|r| ("destinationRanges", r))),
    )?;
    let source_tags = check_tags(&body, "sourceTags")?;
    let target_tags = check_tags(&body, "targetTags")?;
    let source_sas = string_list(&body, "sourceServiceAccounts")?;
    let target_sas = string_list(&body, "targetServiceAccounts")?;
    if !target_tags.is_empty() && !target_sas.is_empty() {
        return Err(invalid("Invalid value for field 'resource.targetServiceAccounts'. A firewall rule targets tags or service accounts, not both"));
    }
    if direction == "INGRESS" {
        if sources.is_none() && source_tags.is_empty() && source_sas.is_empty() {
            body.insert("sourceRanges".into(), json!(["0.0.0.0/0"]));
        }
    } else {
        if !source_tags.is_empty() || !source_sas.is_empty() {
            return Err(invalid("Invalid value for field 'resource.sourceTags'. An EGRESS rule takes no source tags or service accounts"));
        }
        if !body.contains_key("destinationRanges") {
            body.insert("destinationRanges".into(), json!(["0.0.0.0/0"]));
        }
    }
    bool_field(&mut body, "disabled", false)?;
    let mut log = match body.remove("logConfig") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(v) => {
            return Err(invalid(format!("Invalid value for field 'resource.logConfig': {v}. Must be an object")))
        }
    };
    bool_field(&mut log, "enable", false)?;
    body.insert("logConfig".into(), Value::Object(log));
    Ok(body)
}

fn build_route(
    store: &mut GceStore,
    path: &GcePath,
    mut body: Map<String, Value>,
) -> Result<Map<String, Value>, ApiError> {
    reference(store, &mut body, "network", path, Collection::Networks)?;
    let dest = str_field(&body, "destRange")?
        .ok_or_else(|| invalid("Invalid value for field 'resource.destRange': ''. The field is required"))?;
    let net: IpNet = dest.parse().map_err(|_| {
        invalid(format!("Invalid value for field 'resource.destRange': '{dest}'. Must be a CIDR range"))
    })?;
    body.insert("destRange".into(), json!(net.trunc().to_string()));
    int_field(&mut body, "priority", 1000, 0..=65535)?;
    let hops = ["nextHopGateway", "nextHopInstance", "nextHopIp", "nextHopIlb", "nextHopVpnTunnel"];
    let given: Vec<&str> = hops.iter().copied().filter(|h| body.get(*h).is_some_and(|v| !v.is_null())).collect();
    if given.len() != 1 {
        return Err(invalid(format!(
            "Invalid value for field 'resource': a route needs exactly one next hop ({}), got {}",
            hops.join(", "),
            if given.is_empty() { "none".to_string() } else { given.join(", ") }
        )));
    }
    for hop in ["nextHopGateway", "nextHopInstance", "nextHopIlb", "nextHopVpnTunnel"] {
        if let Some(v) = str_field(&body, hop)?.map(str::to_string) {
            let url = if v.starts_with("https://") {
                v
            } else if v.starts_with("projects/") {
                format!("{COMPUTE_URL}{v}")
            } else {
                format!("{COMPUTE_URL}projects/{}/{}", path.project(), v.trim_start_matches('/'))
            };
            body.insert(hop.into(), json!(url));
        }
    }
    if let Some(ip) = str_field(&body, "nextHopIp")? {
        if ip.parse::<std::net::IpAddr>().is_err() {
            return Err(invalid(format!(
                "Invalid value for field 'resource.nextHopIp': '{ip}'. Must be an IP address"
            )));
        }
    }
    check_tags(&body, "tags")?;
    body.insert("routeType".into(), json!("STATIC"));
    Ok(body)
}

// ---------------------------------------------------------------------------------------------
// get and list
// ---------------------------------------------------------------------------------------------

/// A resource as GET returns it: stored fields plus the computed ones (a network's `subnetworks`, an
/// address's `status` and `users`; a list's filter, [`page_of`], relies on no other collection having any).
pub(crate) fn render(store: &GceStore, path: &GcePath) -> Option<Value> {
    if path.collection() == Collection::Operations {
        return store.operations.get(&path.key()).cloned();
    }
    let mut v = store.entries.get(&path.key())?.value.clone();
    match path.collection() {
        Collection::Networks => {
            let url = path.url();
            let subnets: Vec<Value> = store.subnets_of(&url).cloned().collect();
            if !subnets.is_empty() {
                v["subnetworks"] = Value::Array(subnets);
            }
        }
        Collection::Addresses => {
            let users = users(store, path);
            v["status"] = json!(if users.is_empty() { "RESERVED" } else { "IN_USE" });
            if !users.is_empty() {
                v["users"] = json!(users);
            }
        }
        _ => {}
    }
    Some(v)
}

/// One page of a list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// GCE's `filter` (see [`super::filter`]).
    pub filter: Option<String>,
    /// `maxResults`: 1 to 500 (default 500).
    pub max_results: Option<u32>,
    /// `pageToken` from the previous page; missing or empty is the first page.
    pub page_token: Option<String>,
}

/// A list page in GCE's shape (`{kind, id, items, nextPageToken, selfLink}`; IAM: `{accounts,
/// nextPageToken}`).
pub(crate) fn list(store: &GceStore, coll: &CollectionPath, q: &ListQuery) -> Result<Value, ApiError> {
    let prefix = format!("{}/", coll.path());
    // The keys under the collection's path: a range of the sorted maps, not a scan of all of them.
    let params = page_params(q)?;
    let on_network = params.filter.as_ref().and_then(|f| f.on("network"));
    let candidates: Vec<(&String, &Value)> = if coll.collection == Collection::Operations {
        let from = (std::ops::Bound::Included(prefix.as_str()), std::ops::Bound::Unbounded);
        store.operations.range::<str, _>(from).take_while(|(k, _)| k.starts_with(&prefix)).collect()
    } else if let Some(network) =
        on_network.filter(|_| matches!(coll.collection, Collection::Firewalls | Collection::Routes))
    {
        // A filter that holds for some networks only: the rules of those networks, from their index.
        let named = params.filter.as_ref().and_then(|f| f.last_segment_of("network"));
        let keys = store.rules_in(network, named.as_deref());
        keys.into_iter()
            .filter(|k| k.starts_with(&prefix))
            .filter_map(|k| Some((k, &store.entries.get(k)?.value)))
            .collect()
    } else {
        under(store, &prefix).filter(|(k, _)| !k[prefix.len()..].contains('/')).map(|(k, e)| (k, &e.value)).collect()
    };
    let (page, next) = page_of(store, coll.collection, candidates, &params);
    let page: Vec<Value> = page.into_iter().map(|(_, v)| v).collect();
    if coll.collection == Collection::ServiceAccounts {
        let mut out = Value::Object(Map::from_iter([("accounts".to_string(), Value::Array(page))]));
        if let Some(n) = next {
            out["nextPageToken"] = json!(n);
        }
        return Ok(out);
    }
    let kind = coll.collection.kind().map(|k| format!("{k}List")).unwrap_or_default();
    let mut out = list_body(kind, coll.path(), Value::Array(page));
    if let Some(n) = next {
        out["nextPageToken"] = json!(n);
    }
    Ok(out)
}

/// One page of an aggregated list (`projects/P/aggregated/{subnetworks,routers,addresses}`), as GCE
/// answers it: the project's resources of the regional collection across its regions, in region and
/// name order, paged as a list (`maxResults`, `pageToken`, `filter`); `items` keyed `regions/R`,
/// each with the region's resources of this page, or — for a region with none on it — a
/// `NO_RESULTS_ON_PAGE` warning. The regions are the auto-mode ones ([`AUTO_MODE_SUBNETS`]) and any
/// other holding a resource.
pub(crate) fn aggregated_list(
    store: &GceStore,
    project: &str,
    collection: &str,
    q: &ListQuery,
) -> Result<Value, ApiError> {
    let coll = match collection {
        "subnetworks" => Collection::Subnetworks,
        "routers" => Collection::Routers,
        "addresses" => Collection::Addresses,
        other => {
            return Err(ApiError::new(
                404,
                "notFound",
                format!("The resource 'projects/{project}/aggregated/{other}' was not found"),
            ))
        }
    };
    let prefix = format!("projects/{project}/regions/");
    let mut regions: std::collections::BTreeSet<String> =
        AUTO_MODE_SUBNETS.iter().map(|(r, _)| r.to_string()).collect();
    let mut found: Vec<(&String, &Value)> = Vec::new();
    for (k, e) in under(store, &prefix) {
        let Ok(path) = GcePath::parse(k) else { continue };
        let Some(region) = path.region() else { continue };
        regions.insert(region.to_string());
        if path.collection() == coll {
            found.push((k, &e.value));
        }
    }
    let mut page = page_of(store, coll, found, &page_params(q)?);
    let items: Vec<(&str, Value)> = page.0.iter().filter_map(|(p, v)| Some((p.region()?, v.clone()))).collect();
    let mut scoped = Map::new();
    for region in &regions {
        let scope = format!("regions/{region}");
        let here: Vec<Value> = items.iter().filter(|(r, _)| r == region).map(|(_, v)| v.clone()).collect();
        let entry = if here.is_empty() {
            json!({"warning": {
                "code": "NO_RESULTS_ON_PAGE",
                "message": format!("There are no results for scope '{scope}' on this page."),
                "data": [{"key": "scope", "value": scope}],
            }})
        } else {
            json!({ coll.segment(): here })
        };
        scoped.insert(scope, entry);
    }
    let kind = coll.kind().map(|k| format!("{k}AggregatedList")).unwrap_or_default();
    let path = format!("projects/{project}/aggregated/{}", coll.segment());
    let mut out = list_body(kind, path, Value::Object(scoped));
    if let Some(next) = page.1.take() {
        out["nextPageToken"] = json!(next);
    }
    Ok(out)
}

/// A list's body `{kind, id, items, selfLink}`, the items moved in (`json!` would copy them).
fn list_body(kind: String, path: String, items: Value) -> Value {
    let link = format!("{COMPUTE_URL}{path}");
    let fields = [
        ("kind", Value::String(kind)),
        ("id", Value::String(path)),
        ("items", items),
        ("selfLink", Value::String(link)),
    ];
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The page `params` ask for of `candidates` (key and stored value, in key order, all of `collection`)
/// that pass its filter, each with its path, and the next page's token. Only networks and addresses
/// get fields on a GET that are not stored (see [`render`]): the others are matched as stored, and
/// only the page is rendered — a page of a large collection costs its page, not a copy of it.
fn page_of(store: &GceStore, collection: Collection, candidates: Vec<(&String, &Value)>, params: &PageParams) -> Page {
    let &PageParams { ref filter, max, start } = params;
    let passes = |v: &Value| filter.as_ref().is_none_or(|f| f.matches(v));
    let computed = matches!(collection, Collection::Networks | Collection::Addresses);
    let matching: Vec<GcePath> = candidates
        .into_iter()
        .filter(|(_, stored)| computed || passes(stored))
        .filter_map(|(k, _)| GcePath::parse(k).ok())
        .filter(|p| !computed || render(store, p).is_some_and(|v| passes(&v)))
        .collect();
    let next = (start + max < matching.len()).then(|| format!("sim-page-{}", start + max));
    let page = matching.into_iter().skip(start).take(max).filter_map(|p| render(store, &p).map(|v| (p, v))).collect();
    (page, next)
}

type Page = (Vec<(GcePath, Value)>, Option<String>);

/// A list query's filter, parsed, its page size and the page's first item.
struct PageParams {
    filter: Option<Filter>,
    max: usize,
    start: usize,
}

/// A list's filter, page size and first item, from its query.
fn page_params(q: &ListQuery) -> Result<PageParams, ApiError> {
    let filter = match q.filter.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
        Some(f) => {
            Some(Filter::parse(f).map_err(|e| invalid(format!("Invalid value for field 'filter': '{f}'. {e}")))?)
        }
        None => None,
    };
    let max = match q.max_results {
        None | Some(0) => 500,
        Some(n) if n <= 500 => n as usize,
        Some(n) => {
            return Err(invalid(format!("Invalid value for field 'maxResults': '{n}'. Must be between 0 and 500")))
        }
    };
    let start = match q.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => 0,
        Some(t) => t.strip_prefix("sim-page-").and_then(|n| n.parse::<usize>().ok()).ok_or_else(|| {
            invalid(format!("Invalid value for field 'pageToken': '{t}'. Use the nextPageToken of the previous page"))
        })?,
    };
    Ok(PageParams { filter, max, start })
}
