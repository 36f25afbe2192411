//! The simulated GCE cloud ([`GceSim`]) served over GCE's REST API, so the real GCP client
//! (`trellis-gcp-client`, on google-cloud-compute-v1) is tested against the same simulator the
//! engine uses in-process.
//!
//! # Routes
//! | request | answer |
//! |---|---|
//! | `GET /compute/v1/projects/{p}/global/{networks,firewalls,routes}` | a list page (`filter`, `maxResults`, `pageToken`) |
//! | `GET /compute/v1/projects/{p}/regions/{r}/{subnetworks,routers,addresses}` | the same, regional |
//! | `POST` to one of those collections | insert: the Operation (see below) |
//! | `GET`/`PATCH`/`DELETE …/{collection}/{name}` | the resource / patch (a subnetwork's body carries its `fingerprint`) / delete: the Operation |
//! | `GET /compute/v1/projects/{p}/aggregated/subnetworks` | aggregatedList: `items` keyed `regions/{r}`, each `{subnetworks}` or a `NO_RESULTS_ON_PAGE` warning (paged as a list) |
//! | `GET …/global/operations/{op}`, `GET …/regions/{r}/operations/{op}` | the operation (always `DONE`) |
//! | `POST …/global/operations/{op}/wait`, `POST …/regions/{r}/operations/{op}/wait` | the operation once `DONE` (at once) |
//! | `GET`/`POST`/`PATCH`/`DELETE /v1/projects/{p}/serviceAccounts[/{email}]` | IAM service accounts (as the IAM API) |
//! | `POST /token` | a fake OAuth token endpoint (the service-account JWT-bearer flow, `token_uri`) |
//!
//! A write answers its Operation with `status: RUNNING` (the stored one is `DONE`), so a client
//! polls it as it would on GCE; a write that failed after acceptance (over quota) is a 200 whose
//! operation carries `error.errors[]` and `httpErrorStatusCode`. A write carrying `requestId` that
//! was seen before answers the first answer again without touching the simulator (GCE's
//! idempotency). Unknown query parameters (`$alt`, `$apiVersion`) are ignored; a missing or empty
//! `pageToken` is the first page. [`GceOptions::page_size`] caps `maxResults`.
//!
//! Every request but `POST /token` needs `Authorization: Bearer <token>` (any non-empty token, or
//! [`GceOptions::required_token`]): 401 `UNAUTHENTICATED` otherwise, unless
//! [`GceOptions::accept_anonymous`] lets requests without the header through. A request whose
//! `Host` is not a loopback name ([`crate::is_loopback_host`]) is 421 (DNS rebinding).
//!
//! Errors are GCE's JSON `{"error": {"code", "message", "status", "errors": [{"reason",
//! "message"}]}}`. Faults injected into the [`GceSim`] surface as HTTP: a throttle is 429
//! `RESOURCE_EXHAUSTED` with `Retry-After`, a server error 503 `UNAVAILABLE`, a timeout 504
//! `DEADLINE_EXCEEDED`. The simulator's audit log records the calls the server made to it (the
//! same as in process); [`GceServer::requests`] records every HTTP request.

use crate::RequestRecord;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use trellis_planner::cloud::{CloudError, CloudRead};
use trellis_sim::{GceSim, ListQuery};

/// How the GCE server behaves beyond the simulator's own rules.
#[derive(Clone, Debug, Default)]
pub struct GceOptions {
    /// Cap every list page at this many items (`nextPageToken` follows); `None`: the client's
    /// `maxResults` (default 500).
    pub page_size: Option<u32>,
    /// When set, every compute and IAM request must carry `Authorization: Bearer <this>`; otherwise
    /// any non-empty bearer token (as the ARM server). 401 `UNAUTHENTICATED` when it does not.
    pub required_token: Option<String>,
    /// Also answer compute and IAM requests that carry no `Authorization` header at all (tests of a
    /// client without credentials). Off by default: a token is required, as real GCE requires one.
    pub accept_anonymous: bool,
}

/// The access token the token endpoint hands out.
pub const ISSUED_TOKEN: &str = "sim-gce-access-token";

/// The simulated GCE cloud behind an HTTP server. Clones share the simulator and the logs.
#[derive(Clone)]
pub struct GceServer {
    sim: GceSim,
    shared: Arc<Shared>,
}

struct Shared {
    opts: GceOptions,
    requests: Mutex<Vec<RequestRecord>>,
    /// The first answer to each `requestId` seen on a write.
    answered: Mutex<HashMap<String, (u16, Value)>>,
    tokens_issued: AtomicUsize,
    /// The `assertion`s the token endpoint received (JWTs; tests check what was signed).
    assertions: Mutex<Vec<String>>,
    /// The `Authorization` header of every request but the token endpoint's (empty when none was sent).
    authorizations: Mutex<Vec<String>>,
    /// The `requestId` of every write (`""` when absent).
    request_ids: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl GceServer {
    pub fn new(sim: GceSim) -> GceServer {
        GceServer::with_options(sim, GceOptions::default())
    }

    pub fn with_options(sim: GceSim, opts: GceOptions) -> GceServer {
        let shared = Shared {
            opts,
            requests: Mutex::new(Vec::new()),
            answered: Mutex::new(HashMap::new()),
            tokens_issued: AtomicUsize::new(0),
            assertions: Mutex::new(Vec::new()),
            authorizations: Mutex::new(Vec::new()),
            request_ids: Mutex::new(Vec::new()),
        };
        GceServer { sim, shared: Arc::new(shared) }
    }

    /// The simulator behind the server (its audit log shows the calls the server made).
    pub fn sim(&self) -> &GceSim {
        &self.sim
    }

    /// Every HTTP request answered so far, in order (`api_version` is GCE's `$apiVersion`).
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.requests).clone()
    }

    /// How many tokens the token endpoint has issued.
    pub fn tokens_issued(&self) -> usize {
        self.shared.tokens_issued.load(Ordering::SeqCst)
    }

    /// The JWT assertions the token endpoint received.
    pub fn assertions(&self) -> Vec<String> {
        lock(&self.shared.assertions).clone()
    }

    /// The `Authorization` header of every request but the token endpoint's, in order (`""` when
    /// absent): tests check what the client signed in with.
    pub fn authorizations(&self) -> Vec<String> {
        lock(&self.shared.authorizations).clone()
    }

    /// The `requestId` of every write (POST, PATCH, DELETE) in order, `""` when it had none.
    pub fn request_ids(&self) -> Vec<String> {
        lock(&self.shared.request_ids).clone()
    }

    /// The axum router: one fallback handler for everything.
    pub fn router(&self) -> Router {
        Router::new().fallback(handle).with_state(self.clone())
    }

    /// Binds 127.0.0.1 on an ephemeral port and serves in a background task until the returned
    /// handle is dropped.
    pub async fn spawn_local(self) -> std::io::Result<GceRunning> {
        let router = self.router();
        crate::spawn_local(self, router).await
    }
}

/// A GCE server running in the background (its `url()`: the compute endpoint, and the IAM one);
/// dropping it stops the server.
pub type GceRunning = crate::Running<GceServer>;

impl GceRunning {
    /// `http://127.0.0.1:PORT/token` — a service-account key's `token_uri`.
    pub fn token_uri(&self) -> String {
        format!("http://{}/token", self.addr)
    }
}

struct Req {
    method: Method,
    /// Decoded path segments.
    segs: Vec<String>,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
}

impl Req {
    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

async fn handle(State(srv): State<GceServer>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_string();
    let query: Vec<(String, String)> = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if let Err(message) = crate::loopback_host(&headers, &uri) {
        let response = gce_error(421, "misdirectedRequest", message);
        let api_version = query.iter().find(|(k, _)| k == "$apiVersion").map(|(_, v)| v.clone());
        let status = response.status().as_u16();
        lock(&srv.shared.requests).push(RequestRecord { method: method.to_string(), path, api_version, status });
        return response;
    }
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let req = Req { method, segs, query, headers, body };
    let api_version = req.param("$apiVersion").map(str::to_string);
    let method = req.method.to_string();
    let response = route(&srv, req).await;
    lock(&srv.shared.requests).push(RequestRecord { method, path, api_version, status: response.status().as_u16() });
    response
}

async fn route(srv: &GceServer, req: Req) -> Response {
    let segs: Vec<&str> = req.segs.iter().map(String::as_str).collect();
    if segs == ["token"] {
        return token(srv, &req);
    }
    // Every other request needs a token (the token endpoint is how a client gets one).
    let sent_auth = req.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default();
    lock(&srv.shared.authorizations).push(sent_auth.to_string());
    if let Some(denied) = check_auth(srv, sent_auth, req.headers.contains_key(header::AUTHORIZATION)) {
        return denied;
    }
    let rest = match segs.as_slice() {
        ["compute", "v1", rest @ ..] => rest,
        ["v1", rest @ ..] if rest.len() >= 3 && rest[2] == "serviceAccounts" => rest,
        _ => return gce_error(404, "notFound", format!("no GCE route for {} /{}", req.method, req.segs.join("/"))),
    };
    let path = rest.join("/");
    // `projects/P/aggregated/subnetworks`: every region's subnetworks (aggregatedList).
    if let ["projects", project, "aggregated", collection] = rest {
        return match req.method {
            Method::GET => aggregated(srv, &req, project, collection).await,
            _ => {
                gce_error(405, "methodNotAllowed", format!("{} is not allowed on /{}", req.method, req.segs.join("/")))
            }
        };
    }
    // `…/operations/OP/wait` (globalOperations.wait, regionOperations.wait): the operation once it is
    // DONE (the simulated cloud's operations are done when answered).
    if let [operation @ .., "wait"] = rest {
        let op_path = operation.join("/");
        let is_operation = trellis_sim::gce::GcePath::parse(&op_path)
            .is_ok_and(|p| p.collection() == trellis_sim::gce::Collection::Operations);
        if is_operation {
            if req.method != Method::POST {
                return gce_error(
                    405,
                    "methodNotAllowed",
                    format!("{} is not allowed on /{}", req.method, req.segs.join("/")),
                );
            }
            return match srv.sim.get(&op_path).await {
                Ok(Some(v)) => (StatusCode::OK, Js(v)).into_response(),
                Ok(None) => gce_error(404, "notFound", format!("The resource '{op_path}' was not found")),
                Err(e) => cloud_error(e),
            };
        }
    }
    let is_collection = trellis_sim::gce::CollectionPath::parse(&path).is_ok();
    let is_iam = rest.len() >= 3 && rest[2] == "serviceAccounts";
    match (&req.method, is_collection) {
        (&Method::GET, true) => list(srv, &req, &path, is_iam).await,
        (&Method::POST, true) => {
            let Some(body) = json_body(&req) else { return bad_json() };
            write(srv, &req, || srv.sim.insert(&path, body)).await
        }
        (&Method::GET, false) => match srv.sim.get(&path).await {
            Ok(Some(v)) => (StatusCode::OK, Js(v)).into_response(),
            Ok(None) => gce_error(404, "notFound", format!("The resource '{path}' was not found")),
            Err(e) => cloud_error(e),
        },
        (&Method::PATCH, false) => {
            let Some(body) = json_body(&req) else { return bad_json() };
            let body = if is_iam { iam_patch_body(body) } else { body };
            write(srv, &req, || srv.sim.patch(&path, body)).await
        }
        (&Method::DELETE, false) => write(srv, &req, || srv.sim.delete_resource(&path)).await,
        _ => gce_error(405, "methodNotAllowed", format!("{} is not allowed on /{}", req.method, req.segs.join("/"))),
    }
}

/// `None` when the request may go on: `Authorization: Bearer <token>` with a non-empty token (the
/// [`GceOptions::required_token`] when set), or no header at all with [`GceOptions::accept_anonymous`];
/// otherwise GCE's 401 `UNAUTHENTICATED`.
fn check_auth(srv: &GceServer, sent: &str, has_header: bool) -> Option<Response> {
    let opts = &srv.shared.opts;
    let token = sent.strip_prefix("Bearer ").or_else(|| sent.strip_prefix("bearer ")).map(str::trim).unwrap_or("");
    let (reason, message) = if token.is_empty() {
        if opts.accept_anonymous && !has_header {
            return None;
        }
        (
            "required",
            "Request is missing required authentication credential. Expected an OAuth 2 access token in Authorization: Bearer …; a service-account key's token_uri gets one from POST /token.",
        )
    } else if opts.required_token.as_deref().is_some_and(|t| t != token) {
        ("authError", "Request had invalid authentication credentials. Expected OAuth 2 access token.")
    } else {
        return None;
    };
    let mut response = gce_error(401, reason, message);
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"https://accounts.google.com/\""));
    Some(response)
}

/// IAM's PATCH body `{"serviceAccount": {...}, "updateMask": "displayName,description"}` as the
/// simulator's flat patch: the masked fields (all, without a mask) and the `etag`.
fn iam_patch_body(body: Value) -> Value {
    let Some(account) = body.get("serviceAccount").and_then(Value::as_object) else {
        return body;
    };
    let camel = |p: &str| {
        let mut out = String::new();
        let mut up = false;
        for c in p.trim().chars() {
            match (c, up) {
                ('_', _) => up = true,
                (c, true) => {
                    out.extend(c.to_uppercase());
                    up = false;
                }
                (c, false) => out.push(c),
            }
        }
        out
    };
    let mask: Option<Vec<String>> = body
        .get("updateMask")
        .and_then(Value::as_str)
        .map(|m| m.split(',').filter(|p| !p.trim().is_empty()).map(camel).collect());
    let flat: serde_json::Map<String, Value> = account
        .iter()
        .filter(|(k, _)| k.as_str() == "etag" || mask.as_ref().is_none_or(|m| m.contains(k)))
        .filter(|(k, _)| k.as_str() != "name")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(flat)
}

fn json_body(req: &Req) -> Option<Value> {
    serde_json::from_slice(&req.body).ok()
}

fn bad_json() -> Response {
    gce_error(400, "parseError", "The request body is not JSON")
}

/// A write: deduplicated by `requestId`; an Operation answer is shown as still `RUNNING`.
async fn write<F, Fut>(srv: &GceServer, req: &Req, call: F) -> Response
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Value, CloudError>>,
{
    let request_id = req.param("requestId").filter(|r| !r.is_empty()).map(str::to_string);
    lock(&srv.shared.request_ids).push(request_id.clone().unwrap_or_default());
    if let Some(id) = &request_id {
        if let Some((status, body)) = lock(&srv.shared.answered).get(id).cloned() {
            return (status_code(status), Js(body)).into_response();
        }
    }
    let (status, body) = match call().await {
        Ok(mut answer) => {
            if answer.get("kind").and_then(Value::as_str) == Some("compute#operation") {
                answer["status"] = json!("RUNNING");
            }
            (200, answer)
        }
        Err(e) => return cloud_error(e),
    };
    if let Some(id) = request_id {
        lock(&srv.shared.answered).insert(id, (status, body.clone()));
    }
    (status_code(status), Js(body)).into_response()
}

/// A list request's `filter`, page size (the client's, capped by [`GceOptions::page_size`]) and
/// `pageToken`.
fn list_query(srv: &GceServer, req: &Req, is_iam: bool) -> ListQuery {
    let asked = if is_iam { req.param("pageSize") } else { req.param("maxResults") };
    let asked = asked.and_then(|m| m.parse::<u32>().ok()).filter(|m| *m > 0);
    let max_results = match (asked, srv.shared.opts.page_size) {
        (Some(a), Some(cap)) => Some(a.min(cap)),
        (a, cap) => a.or(cap),
    };
    ListQuery {
        filter: req.param("filter").map(str::to_string),
        max_results,
        page_token: req.param("pageToken").filter(|t| !t.is_empty()).map(str::to_string),
    }
}

async fn list(srv: &GceServer, req: &Req, collection: &str, is_iam: bool) -> Response {
    match srv.sim.list_page(collection, &list_query(srv, req, is_iam)).await {
        Ok(page) => (StatusCode::OK, Js(page)).into_response(),
        Err(e) => cloud_error(e),
    }
}

async fn aggregated(srv: &GceServer, req: &Req, project: &str, collection: &str) -> Response {
    match srv.sim.aggregated_list_page(project, collection, &list_query(srv, req, false)).await {
        Ok(page) => (StatusCode::OK, Js(page)).into_response(),
        Err(e) => cloud_error(e),
    }
}

/// The OAuth token endpoint: `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` with an
/// `assertion` (a JWT signed with the service account's key) gives an access token.
fn token(srv: &GceServer, req: &Req) -> Response {
    if req.method != Method::POST {
        return gce_error(405, "methodNotAllowed", "the token endpoint takes POST");
    }
    let form: HashMap<String, String> = form_urlencoded::parse(&req.body).into_owned().collect();
    let grant = form.get("grant_type").map(String::as_str);
    let assertion = form.get("assertion").filter(|a| a.split('.').count() == 3);
    match (grant, assertion) {
        (Some("urn:ietf:params:oauth:grant-type:jwt-bearer"), Some(assertion)) => {
            lock(&srv.shared.assertions).push(assertion.clone());
            srv.shared.tokens_issued.fetch_add(1, Ordering::SeqCst);
            let token = srv.shared.opts.required_token.clone().unwrap_or_else(|| ISSUED_TOKEN.to_string());
            Js(json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600})).into_response()
        }
        _ => (
            StatusCode::BAD_REQUEST,
            Js(json!({"error": "invalid_grant", "error_description": "expected a jwt-bearer grant with a signed assertion"})),
        )
            .into_response(),
    }
}

/// A simulator error as GCE's HTTP answer, in GCE's words: what the simulated cloud answers never
/// names a trellis command (the write model's texts of [`CloudError`] do).
pub(crate) fn cloud_error(e: CloudError) -> Response {
    let message = e.to_string();
    match e {
        CloudError::PreconditionFailed { .. } => gce_error(412, "conditionNotMet", "Precondition check failed."),
        CloudError::AlreadyExists { target, .. } => {
            gce_error(409, "alreadyExists", format!("The resource '{target}' already exists"))
        }
        CloudError::Throttled { retry_after, .. } => {
            let mut r = gce_error(429, "rateLimitExceeded", message);
            let secs = retry_after.map_or(1, |d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
            if let Ok(v) = secs.to_string().parse() {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
        CloudError::Server { status, .. } => gce_error(status, "backendError", message),
        CloudError::Timeout { .. } => gce_error(504, "deadlineExceeded", message),
        CloudError::Unreachable { .. } => gce_error(503, "backendError", message),
        CloudError::Rejected { status, code, message, .. } => gce_error(status, &code, message),
        CloudError::Conflict { code, message, .. } => gce_error(409, &code, message),
    }
}

/// The canonical status name Google APIs put beside the HTTP code.
fn status_name(status: u16, reason: &str) -> &'static str {
    match (status, reason) {
        (400, _) => "INVALID_ARGUMENT",
        (401, _) => "UNAUTHENTICATED",
        (403, _) => "PERMISSION_DENIED",
        (404, _) => "NOT_FOUND",
        (409, "alreadyExists") => "ALREADY_EXISTS",
        (409, _) => "ABORTED",
        (412, _) => "FAILED_PRECONDITION",
        (421, _) => "INVALID_ARGUMENT",
        (429, _) => "RESOURCE_EXHAUSTED",
        (501, _) => "UNIMPLEMENTED",
        (503, _) => "UNAVAILABLE",
        (504, _) => "DEADLINE_EXCEEDED",
        (s, _) if s >= 500 => "INTERNAL",
        _ => "UNKNOWN",
    }
}

pub(crate) fn gce_error(status: u16, reason: &str, message: impl Into<String>) -> Response {
    let message = message.into();
    let body = json!({"error": {
        "code": status,
        "message": message,
        "status": status_name(status, reason),
        "errors": [{"reason": reason, "message": message, "domain": "global"}],
    }});
    (status_code(status), Js(body)).into_response()
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// A JSON body (`application/json`).
pub(crate) struct Js(pub(crate) Value);

impl IntoResponse for Js {
    fn into_response(self) -> Response {
        ([(header::CONTENT_TYPE, "application/json")], self.0.to_string()).into_response()
    }
}
