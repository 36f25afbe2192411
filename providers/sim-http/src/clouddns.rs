//! The simulated DNS ([`trellis_sim::DnsSim`], or any cloud speaking the neutral DNS ids) served
//! over Cloud DNS v1 REST, so the real Cloud DNS client (`trellis-gcp-client`'s `dns` module, on
//! google-cloud-dns-v1) is tested against the same store — and the same rules — the engine uses
//! in process. Every request is translated to the neutral `CloudRead` / [`CloudWrite`] calls of
//! the domains plan (`/dns` zones, `/dns/zones/{zone}/records/{fqdn}/{TYPE}` record sets).
//!
//! # Routes
//! | request | answer |
//! |---|---|
//! | `GET /dns/v1/projects/{p}/managedZones` | `managedZones.list`: the zones of project `p` (`dnsName` filter, `maxResults`, `pageToken`) |
//! | `GET …/managedZones/{z}` | the managed zone (`z`: its name or numeric id) |
//! | `GET …/managedZones/{z}/rrsets` | `resourceRecordSets.list` (`name`, `type` filters, paged) |
//! | `GET …/rrsets/{name}/{type}` | the record set; 404 `notFound` |
//! | `POST …/rrsets` | create: 409 `alreadyExists` when the set exists |
//! | `PATCH …/rrsets/{name}/{type}` | replace the set's TTL and data: 404 when it does not exist |
//! | `DELETE …/rrsets/{name}/{type}` | delete: 404 when it does not exist |
//! | `POST …/managedZones/{z}/changes` | `changes.create`: every deletion must match the set held exactly (404 `notFound` when absent, 412 `conditionNotMet` when it differs), every addition must be absent unless deleted by the same change (409 `alreadyExists`); then the change is applied and answered `pending` |
//! | `GET …/managedZones/{z}/changes/{id}` | the change: `pending` for [`CloudDnsOptions::pending_polls`] reads, then `done` |
//!
//! A zone is the neutral zone object: its managed zone is `gcp.managedZone` (else the DNS name
//! with `-` for `.`: `example-com`), served under `gcp.project` only when the zone names one, else
//! under every project. Its `id` is a number derived from the DNS name. A record set's name is
//! fully qualified (a trailing dot); a CNAME's data gets the trailing dot too and TXT data is
//! quoted, as Cloud DNS shows them; types other than A, AAAA, CNAME and TXT are refused (400
//! `invalid`: not modelled). A change is checked in full before anything is written, then applied
//! set by set, each under the version just checked (a deletion with an addition of the same name
//! and type is one replacement), so a concurrent write between the check and the write is refused
//! by the store rather than lost.
//!
//! Errors are Google's JSON `{"error": {"code", "message", "status", "errors": [{"reason",
//! "message", "domain"}]}}`; the store's refusals keep their status (404 `notFound`, 409
//! `alreadyExists`, 412 `conditionNotMet`, 400 `invalid`), its faults surface as 429
//! `rateLimitExceeded` with `Retry-After`, 5xx `backendError` or 504 `deadlineExceeded`. Requests
//! need `Authorization: Bearer …` (any non-empty token) unless [`CloudDnsOptions::accept_anonymous`];
//! a `Host` that is not a loopback name is 421.

use crate::gce::{gce_error, Js};
use crate::RequestRecord;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use trellis_planner::cloud::{CloudError, CloudWrite, Precondition};

/// The path prefix of Cloud DNS v1.
pub const PREFIX: &str = "/dns/v1/";

/// The record types served.
const TYPES: [&str; 4] = ["A", "AAAA", "CNAME", "TXT"];

/// The default (and largest) page of a list.
const MAX_PAGE: usize = 1000;

/// Whether a request path is Cloud DNS's.
pub fn is_clouddns_path(path: &str) -> bool {
    path.starts_with(PREFIX)
}

/// How the server behaves beyond the store's rules.
#[derive(Clone, Debug)]
pub struct CloudDnsOptions {
    /// Cap every list page at this many items (`nextPageToken` follows); `None`: `maxResults`.
    pub page_size: Option<usize>,
    /// Also answer requests without an `Authorization` header (a client without credentials).
    pub accept_anonymous: bool,
    /// How many reads of a new change answer `pending` before it is `done`.
    pub pending_polls: u32,
}

impl Default for CloudDnsOptions {
    fn default() -> Self {
        CloudDnsOptions { page_size: None, accept_anonymous: false, pending_polls: 1 }
    }
}

/// A change as recorded: its answer and how many more reads answer `pending`.
struct Recorded {
    change: Value,
    pending: u32,
}

struct Shared {
    opts: CloudDnsOptions,
    requests: Mutex<Vec<RequestRecord>>,
    /// Changes by (project, managed zone, id).
    changes: Mutex<HashMap<(String, String, String), Recorded>>,
    next_change: AtomicU64,
}

/// The neutral DNS cloud behind a Cloud DNS v1 server. Clones share the cloud and the logs.
#[derive(Clone)]
pub struct CloudDnsServer {
    cloud: Arc<dyn CloudWrite>,
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CloudDnsServer {
    /// Serves `cloud` (the simulated DNS) with the default options.
    pub fn new(cloud: Arc<dyn CloudWrite>) -> CloudDnsServer {
        CloudDnsServer::with_options(cloud, CloudDnsOptions::default())
    }

    pub fn with_options(cloud: Arc<dyn CloudWrite>, opts: CloudDnsOptions) -> CloudDnsServer {
        let shared = Shared {
            opts,
            requests: Mutex::new(Vec::new()),
            changes: Mutex::new(HashMap::new()),
            next_change: AtomicU64::new(1),
        };
        CloudDnsServer { cloud, shared: Arc::new(shared) }
    }

    /// Every HTTP request answered so far, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.requests).clone()
    }

    /// The axum router: one fallback handler for everything.
    pub fn router(&self) -> Router {
        Router::new().fallback(handle).with_state(self.clone())
    }

    /// Binds 127.0.0.1 on an ephemeral port and serves until the returned handle is dropped.
    pub async fn spawn_local(self) -> std::io::Result<CloudDnsRunning> {
        let router = self.router();
        crate::spawn_local(self, router).await
    }
}

/// A Cloud DNS server running in the background (its `url()`: the Cloud DNS endpoint); dropping it
/// stops the server.
pub type CloudDnsRunning = crate::Running<CloudDnsServer>;

struct Req {
    method: Method,
    segs: Vec<String>,
    query: Vec<(String, String)>,
    body: Bytes,
}

impl Req {
    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
    }
}

async fn handle(
    State(srv): State<CloudDnsServer>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query: Vec<(String, String)> = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let record =
        |status: u16| RequestRecord { method: method.to_string(), path: path.clone(), api_version: None, status };
    if let Err(message) = crate::loopback_host(&headers, &uri) {
        let response = gce_error(421, "misdirectedRequest", message);
        lock(&srv.shared.requests).push(record(421));
        return response;
    }
    let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let token = auth.and_then(|a| a.strip_prefix("Bearer ").or_else(|| a.strip_prefix("bearer "))).map(str::trim);
    let allowed = match auth {
        None => srv.shared.opts.accept_anonymous,
        Some(_) => token.is_some_and(|t| !t.is_empty()),
    };
    if !allowed {
        lock(&srv.shared.requests).push(record(401));
        return gce_error(
            401,
            "required",
            "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
        );
    }
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let req = Req { method: method.clone(), segs, query, body };
    let response = route(&srv, &req).await;
    lock(&srv.shared.requests).push(record(response.status().as_u16()));
    response
}

fn not_allowed(req: &Req) -> Response {
    gce_error(405, "methodNotAllowed", format!("{} is not allowed on /{}", req.method, req.segs.join("/")))
}

fn not_found(what: impl Into<String>) -> Response {
    gce_error(404, "notFound", what)
}

fn invalid(message: impl Into<String>) -> Response {
    gce_error(400, "invalid", message)
}

/// A refusal of the store in Cloud DNS's words: its status and message kept, the reason Google's
/// (`notFound`, `alreadyExists`, `conditionNotMet`, `invalid`); a CNAME beside another type is
/// Cloud DNS's 400 `cnameResourceRecordSetConflict`; faults are the GCE server's.
fn cloud_error(e: CloudError) -> Response {
    match e {
        CloudError::Rejected { status: 409, message, .. } if message.contains("CNAME") => {
            gce_error(400, "cnameResourceRecordSetConflict", message)
        }
        CloudError::Rejected { status, message, .. } => {
            let (status, reason) = match status {
                400 | 422 => (400, "invalid"),
                404 => (404, "notFound"),
                405 => (405, "methodNotAllowed"),
                409 => (409, "conflict"),
                403 => (403, "forbidden"),
                s => (s, "invalid"),
            };
            gce_error(status, reason, message)
        }
        e => crate::gce::cloud_error(e),
    }
}

/// A request refused before the store was asked: 400 with Google's `reason`.
#[derive(Debug)]
struct Refused(&'static str, String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        gce_error(400, self.0, self.1)
    }
}

fn refused(message: impl Into<String>) -> Refused {
    Refused("invalid", message.into())
}

async fn route(srv: &CloudDnsServer, req: &Req) -> Response {
    let segs: Vec<&str> = req.segs.iter().map(String::as_str).collect();
    let ["dns", "v1", "projects", project, "managedZones", rest @ ..] = segs.as_slice() else {
        return not_found(format!("no Cloud DNS route for {} /{}", req.method, req.segs.join("/")));
    };
    if rest.is_empty() {
        return match req.method {
            Method::GET => list_zones(srv, req, project).await,
            _ => not_allowed(req),
        };
    }
    let zone = match find_zone(srv, project, rest[0]).await {
        Ok(Some(zone)) => zone,
        Ok(None) => {
            return not_found(format!("The 'parameters.managedZone' resource named '{}' does not exist.", rest[0]))
        }
        Err(e) => return cloud_error(e),
    };
    match (&req.method, &rest[1..]) {
        (&Method::GET, []) => (StatusCode::OK, Js(managed_zone(project, &zone))).into_response(),
        (_, []) => not_allowed(req),
        (&Method::GET, ["rrsets"]) => list_sets(srv, req, &zone).await,
        (&Method::POST, ["rrsets"]) => create_set(srv, req, &zone).await,
        (_, ["rrsets"]) => not_allowed(req),
        (method, ["rrsets", name, rtype]) => one_set(srv, req, method, &zone, name, rtype).await,
        (&Method::POST, ["changes"]) => create_change(srv, req, project, &zone).await,
        (&Method::GET, ["changes", id]) => get_change(srv, project, &zone, id),
        (_, ["changes"] | ["changes", _]) => not_allowed(req),
        _ => not_found(format!("no Cloud DNS route for {} /{}", req.method, req.segs.join("/"))),
    }
}

/// A zone of the store as served.
#[derive(Clone, Debug)]
struct Zone {
    /// The DNS name, neutral.
    name: String,
    managed_zone: String,
    id: u64,
}

/// The numeric id of a managed zone: derived from its DNS name (FNV-1a), stable across restarts.
fn zone_number(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // Cloud DNS ids fit in 63 bits.
    h >> 1
}

/// The zones of the store served under `project`.
async fn zones(srv: &CloudDnsServer, project: &str) -> Result<Vec<Zone>, CloudError> {
    let listed = srv.cloud.list("/dns", "zones").await?;
    Ok(listed
        .iter()
        .filter_map(|z| {
            let name = z.get("name").and_then(Value::as_str)?.to_string();
            let gcp = z.get("gcp");
            let served = gcp.and_then(|g| g.get("project")).and_then(Value::as_str).is_none_or(|p| p == project);
            let managed_zone = gcp
                .and_then(|g| g.get("managedZone"))
                .and_then(Value::as_str)
                .map_or_else(|| name.replace('.', "-"), str::to_string);
            served.then(|| Zone { id: zone_number(&name), name, managed_zone })
        })
        .collect())
}

async fn find_zone(srv: &CloudDnsServer, project: &str, wanted: &str) -> Result<Option<Zone>, CloudError> {
    Ok(zones(srv, project).await?.into_iter().find(|z| z.managed_zone == wanted || z.id.to_string() == wanted))
}

fn managed_zone(project: &str, z: &Zone) -> Value {
    json!({
        "kind": "dns#managedZone",
        "name": z.managed_zone,
        "dnsName": format!("{}.", z.name),
        "id": z.id.to_string(),
        "description": format!("simulated zone {} of project {project}", z.name),
        "visibility": "public",
        "nameServers": ["ns-cloud-a1.googledomains.com.", "ns-cloud-a2.googledomains.com."],
    })
}

/// `maxResults` and `pageToken`: the page's offset and size.
fn paging(srv: &CloudDnsServer, req: &Req) -> Result<(usize, usize), Refused> {
    let skip = match req.param("pageToken") {
        None => 0,
        Some(t) => {
            t.parse::<usize>().map_err(|_| refused(format!("Invalid value for 'parameters.pageToken': '{t}'")))?
        }
    };
    let asked = match req.param("maxResults") {
        None => MAX_PAGE,
        Some(m) => match m.parse::<usize>() {
            Ok(n) if n > 0 => n.min(MAX_PAGE),
            _ => return Err(refused(format!("Invalid value for 'parameters.maxResults': '{m}'"))),
        },
    };
    Ok((skip, srv.shared.opts.page_size.map_or(asked, |p| p.min(asked))))
}

fn page(kind: &str, field: &str, items: Vec<Value>, skip: usize, size: usize) -> Response {
    let total = items.len();
    let shown: Vec<Value> = items.into_iter().skip(skip).take(size).collect();
    let mut body = json!({"kind": kind, field: shown});
    if skip + size < total {
        body["nextPageToken"] = json!((skip + size).to_string());
    }
    (StatusCode::OK, Js(body)).into_response()
}

async fn list_zones(srv: &CloudDnsServer, req: &Req, project: &str) -> Response {
    let (skip, size) = match paging(srv, req) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let wanted = req.param("dnsName").map(neutral);
    match zones(srv, project).await {
        Ok(zs) => {
            let items = zs
                .iter()
                .filter(|z| wanted.as_ref().is_none_or(|w| *w == z.name))
                .map(|z| managed_zone(project, z))
                .collect();
            page("dns#managedZonesListResponse", "managedZones", items, skip, size)
        }
        Err(e) => cloud_error(e),
    }
}

/// A DNS name in neutral form: lowercase, no trailing dot.
fn neutral(name: &str) -> String {
    let name = name.trim();
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// A neutral record set as Cloud DNS shows it.
fn rrset(set: &Value) -> Value {
    let rtype = set.get("type").and_then(Value::as_str).unwrap_or_default();
    let rrdatas: Vec<String> = set
        .get("values")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(Value::as_str)
                .map(|v| match rtype {
                    "CNAME" => format!("{}.", neutral(v)),
                    "TXT" if !(v.len() >= 2 && v.starts_with('"') && v.ends_with('"')) => format!("\"{v}\""),
                    _ => v.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "kind": "dns#resourceRecordSet",
        "name": format!("{}.", set.get("name").and_then(Value::as_str).map(neutral).unwrap_or_default()),
        "type": rtype,
        "ttl": set.get("ttl").cloned().unwrap_or(Value::Null),
        "rrdatas": rrdatas,
    })
}

/// A Cloud DNS record set (a request's) as a neutral id and body; `field` names it in errors
/// (`entity.change.additions[0]`).
fn from_rrset(zone: &Zone, field: &str, v: &Value) -> Result<(String, Value), Refused> {
    let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
    if name.is_empty() || !name.ends_with('.') {
        return Err(refused(format!(
            "Invalid value for '{field}.name': '{name}': a record set's name is fully qualified, ending with a dot"
        )));
    }
    let rtype = v.get("type").and_then(Value::as_str).unwrap_or_default();
    if !TYPES.contains(&rtype) {
        return Err(refused(format!(
            "Invalid value for '{field}.type': '{rtype}': the simulated Cloud DNS models {}",
            TYPES.join(", ")
        )));
    }
    let ttl = match v.get("ttl") {
        Some(t) if t.is_i64() || t.is_u64() => t.clone(),
        Some(Value::String(s)) => match s.parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) => return Err(refused(format!("Invalid value for '{field}.ttl': '{s}'"))),
        },
        Some(t) => return Err(refused(format!("Invalid value for '{field}.ttl': {t}"))),
        None => return Err(refused(format!("Required field '{field}.ttl' not specified"))),
    };
    let values: Vec<Value> = match v.get("rrdatas").and_then(Value::as_array) {
        Some(a) if !a.is_empty() && a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(Value::as_str)
            .map(|d| match rtype {
                "CNAME" => json!(neutral(d)),
                "TXT" => match d.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    Some(inner) if !inner.contains('"') => json!(inner),
                    _ => json!(d),
                },
                _ => json!(d),
            })
            .collect(),
        _ => return Err(refused(format!("Required field '{field}.rrdatas' not specified (a list of strings)"))),
    };
    let fqdn = neutral(name);
    let id = format!("/dns/zones/{}/records/{fqdn}/{rtype}", zone.name);
    Ok((id, json!({"name": fqdn, "type": rtype, "ttl": ttl, "values": values})))
}

async fn list_sets(srv: &CloudDnsServer, req: &Req, zone: &Zone) -> Response {
    let (skip, size) = match paging(srv, req) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let name = req.param("name").map(neutral);
    let rtype = req.param("type");
    if rtype.is_some() && name.is_none() {
        return invalid("Invalid value for 'parameters.type': a type filter needs a name filter");
    }
    match srv.cloud.list(&format!("/dns/zones/{}", zone.name), "records").await {
        Ok(sets) => {
            let items = sets
                .iter()
                .filter(|s| {
                    name.as_ref().is_none_or(|n| s.get("name").and_then(Value::as_str).map(neutral) == Some(n.clone()))
                })
                .filter(|s| rtype.is_none_or(|t| s.get("type").and_then(Value::as_str) == Some(t)))
                .map(rrset)
                .collect();
            page("dns#resourceRecordSetsListResponse", "rrsets", items, skip, size)
        }
        Err(e) => cloud_error(e),
    }
}

fn set_not_found(name: &str, rtype: &str) -> Response {
    not_found(format!("The 'parameters.name' resource named '{name} ({rtype})' does not exist."))
}

async fn create_set(srv: &CloudDnsServer, req: &Req, zone: &Zone) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return gce_error(400, "parseError", "The request body is not JSON");
    };
    let (id, neutral_body) = match from_rrset(zone, "entity", &body) {
        Ok(x) => x,
        Err(r) => return r.into_response(),
    };
    match srv.cloud.create(&id, neutral_body).await {
        Ok(v) => (StatusCode::OK, Js(rrset(&v))).into_response(),
        Err(CloudError::AlreadyExists { .. }) => gce_error(
            409,
            "alreadyExists",
            format!(
                "The resource 'entity' named '{} ({})' already exists",
                body["name"].as_str().unwrap_or_default(),
                body["type"].as_str().unwrap_or_default()
            ),
        ),
        Err(e) => cloud_error(e),
    }
}

async fn one_set(srv: &CloudDnsServer, req: &Req, method: &Method, zone: &Zone, name: &str, rtype: &str) -> Response {
    if !TYPES.contains(&rtype) {
        return invalid(format!("Invalid value for 'parameters.type': '{rtype}'"));
    }
    let fqdn = neutral(name);
    let id = format!("/dns/zones/{}/records/{fqdn}/{rtype}", zone.name);
    let have = match srv.cloud.get(&id).await {
        Ok(h) => h,
        Err(e) => return cloud_error(e),
    };
    match *method {
        Method::GET => match have {
            Some(v) => (StatusCode::OK, Js(rrset(&v))).into_response(),
            None => set_not_found(name, rtype),
        },
        Method::PATCH => {
            let Some(have) = have else { return set_not_found(name, rtype) };
            let Ok(mut body) = serde_json::from_slice::<Value>(&req.body) else {
                return gce_error(400, "parseError", "The request body is not JSON");
            };
            // A patch names the set by its path; fields it leaves out keep their value.
            let current = rrset(&have);
            if let Some(obj) = body.as_object_mut() {
                for k in ["name", "type", "ttl", "rrdatas"] {
                    if !obj.contains_key(k) {
                        obj.insert(k.to_string(), current[k].clone());
                    }
                }
            }
            if neutral(body["name"].as_str().unwrap_or_default()) != fqdn || body["type"].as_str() != Some(rtype) {
                return invalid(
                    "Invalid value for 'entity.name': a patch cannot rename a record set or change its type",
                );
            }
            let (id, neutral_body) = match from_rrset(zone, "entity", &body) {
                Ok(x) => x,
                Err(r) => return r.into_response(),
            };
            match srv.cloud.update(&id, neutral_body, &Precondition::of(&have)).await {
                Ok(v) => (StatusCode::OK, Js(rrset(&v))).into_response(),
                Err(e) => cloud_error(e),
            }
        }
        Method::DELETE => {
            let Some(have) = have else { return set_not_found(name, rtype) };
            match srv.cloud.remove(&id, &Precondition::of(&have)).await {
                Ok(()) => (StatusCode::OK, Js(json!({}))).into_response(),
                Err(e) => cloud_error(e),
            }
        }
        _ => not_allowed(req),
    }
}

/// Whether a deletion matches the set held exactly (TTL and data, as Cloud DNS compares them).
fn same_set(deletion: &Value, held: &Value) -> bool {
    deletion.get("ttl").and_then(Value::as_i64) == held.get("ttl").and_then(Value::as_i64)
        && deletion.get("values") == held.get("values")
}

async fn create_change(srv: &CloudDnsServer, req: &Req, project: &str, zone: &Zone) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        return gce_error(400, "parseError", "The request body is not JSON");
    };
    let parse_all = |key: &str| -> Result<Vec<(String, Value)>, Refused> {
        match body.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| from_rrset(zone, &format!("entity.change.{key}[{i}]"), v))
                .collect(),
            Some(_) => Err(refused(format!("Invalid value for 'entity.change.{key}': a list of record sets"))),
        }
    };
    let (additions, deletions) = match (parse_all("additions"), parse_all("deletions")) {
        (Ok(a), Ok(d)) => (a, d),
        (Err(r), _) | (_, Err(r)) => return r.into_response(),
    };
    if additions.is_empty() && deletions.is_empty() {
        return gce_error(400, "required", "The 'entity.change' parameter is required but was missing.");
    }
    for list in [&additions, &deletions] {
        for (i, (id, _)) in list.iter().enumerate() {
            if list[..i].iter().any(|(other, _)| other == id) {
                return invalid(format!("The change names the record set {id} twice in one list"));
            }
        }
    }
    // Check everything first: deletions must match what is held, additions must be new.
    let mut held: HashMap<String, Value> = HashMap::new();
    for (i, (id, want)) in deletions.iter().enumerate() {
        match srv.cloud.get(id).await {
            Ok(Some(have)) if same_set(want, &have) => {
                held.insert(id.clone(), have);
            }
            Ok(Some(_)) => {
                return gce_error(
                    412,
                    "conditionNotMet",
                    format!("Precondition not met for 'entity.change.deletions[{i}]'"),
                )
            }
            Ok(None) => {
                return not_found(format!(
                    "The 'entity.change.deletions[{i}]' resource named '{}. ({})' does not exist.",
                    want["name"].as_str().unwrap_or_default(),
                    want["type"].as_str().unwrap_or_default()
                ))
            }
            Err(e) => return cloud_error(e),
        }
    }
    for (i, (id, want)) in additions.iter().enumerate() {
        if held.contains_key(id) {
            continue;
        }
        match srv.cloud.get(id).await {
            Ok(Some(_)) => {
                return gce_error(
                    409,
                    "alreadyExists",
                    format!(
                        "The resource 'entity.change.additions[{i}]' named '{}. ({})' already exists",
                        want["name"].as_str().unwrap_or_default(),
                        want["type"].as_str().unwrap_or_default()
                    ),
                )
            }
            Ok(None) => {}
            Err(e) => return cloud_error(e),
        }
    }
    // Apply: a deletion with an addition of the same set is one replacement under the version read.
    for (id, want) in &additions {
        let result = match held.remove(id) {
            Some(have) => srv.cloud.update(id, want.clone(), &Precondition::of(&have)).await.map(|_| ()),
            None => srv.cloud.create(id, want.clone()).await.map(|_| ()),
        };
        if let Err(e) = result {
            return change_refused(e);
        }
    }
    for (id, _) in &deletions {
        if let Some(have) = held.remove(id) {
            if let Err(e) = srv.cloud.remove(id, &Precondition::of(&have)).await {
                return change_refused(e);
            }
        }
    }
    let number = srv.shared.next_change.fetch_add(1, Ordering::SeqCst).to_string();
    let pending = srv.shared.opts.pending_polls;
    let change = json!({
        "kind": "dns#change",
        "id": number,
        "startTime": jiff::Timestamp::now().to_string(),
        "status": if pending > 0 { "pending" } else { "done" },
        "additions": additions.iter().map(|(_, v)| rrset(v)).collect::<Vec<_>>(),
        "deletions": deletions.iter().map(|(_, v)| rrset(v)).collect::<Vec<_>>(),
    });
    lock(&srv.shared.changes)
        .insert((project.to_string(), zone.managed_zone.clone(), number), Recorded { change: change.clone(), pending });
    (StatusCode::OK, Js(change)).into_response()
}

/// A write refused while a change was applied, in Cloud DNS's words.
fn change_refused(e: CloudError) -> Response {
    match e {
        CloudError::PreconditionFailed { .. } => {
            gce_error(412, "conditionNotMet", "Precondition not met for 'entity.change.deletions'")
        }
        CloudError::AlreadyExists { target, .. } => gce_error(
            409,
            "alreadyExists",
            format!("The resource 'entity.change.additions' named '{target}' already exists"),
        ),
        e => cloud_error(e),
    }
}

fn get_change(srv: &CloudDnsServer, project: &str, zone: &Zone, id: &str) -> Response {
    let mut changes = lock(&srv.shared.changes);
    match changes.get_mut(&(project.to_string(), zone.managed_zone.clone(), id.to_string())) {
        Some(rec) => {
            rec.pending = rec.pending.saturating_sub(1);
            let mut change = rec.change.clone();
            change["status"] = json!(if rec.pending > 0 { "pending" } else { "done" });
            (StatusCode::OK, Js(change)).into_response()
        }
        None => not_found(format!("The 'parameters.changeId' resource named '{id}' does not exist.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sets_translate_both_ways() {
        let zone = Zone { name: "example.com".into(), managed_zone: "example-com".into(), id: 1 };
        let (id, body) = from_rrset(
            &zone,
            "entity",
            &json!({"name": "WWW.example.com.", "type": "CNAME", "ttl": 60, "rrdatas": ["lb.example.net."]}),
        )
        .unwrap();
        assert_eq!(id, "/dns/zones/example.com/records/www.example.com/CNAME");
        assert_eq!(body, json!({"name": "www.example.com", "type": "CNAME", "ttl": 60, "values": ["lb.example.net"]}));
        assert_eq!(rrset(&body)["rrdatas"], json!(["lb.example.net."]));
        assert!(from_rrset(
            &zone,
            "entity",
            &json!({"name": "a.example.com", "type": "A", "ttl": 1, "rrdatas": ["192.0.2.1"]})
        )
        .is_err());
        assert!(from_rrset(
            &zone,
            "entity",
            &json!({"name": "a.example.com.", "type": "MX", "ttl": 1, "rrdatas": ["1 mx."]})
        )
        .is_err());
        assert!(from_rrset(&zone, "entity", &json!({"name": "a.example.com.", "type": "A", "rrdatas": ["192.0.2.1"]}))
            .is_err());
    }
}
