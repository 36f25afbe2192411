//! The simulated cloud served over HTTP in ARM REST shapes, so the real Azure client
//! (`trellis-azure-client`) is tested against the same simulator the engine uses in-process.
//!
//! One axum fallback handler takes every request, because ARM paths are case-insensitive (an axum
//! `Router` is not): it splits the path itself, compares the keywords (`subscriptions`,
//! `resourceGroups`, `providers`) in lowercase and hands the [`ArmSim`] the id with the casing the
//! client sent (the simulator compares ids case-insensitively and keeps the creation casing).
//!
//! # Routes
//! | request | answer |
//! |---|---|
//! | `GET {id}` | 200 the resource (ids in ARM's canonical casing); 404 `ResourceNotFound` / `ResourceGroupNotFound` |
//! | `HEAD {id}` | 204 when it exists, else 404, no body (ResourceGroups_CheckExistence) |
//! | `GET /subscriptions/{s}/resourcegroups` | 200 `{"value": [...], "nextLink"?}` |
//! | `GET /subscriptions/{s}/providers/{Ns}/{type}` | 200 that type in every resource group (List All), paged |
//! | `GET /subscriptions/{s}/resources`, `…/resourceGroups/{rg}/resources` | 200 the generic resource list (id, name, type, location, tags, …), `$filter` on `resourceType` / `name` / `location`, paged |
//! | `GET …/resourceGroups/{rg}/providers/{Ns}/{type}` | 200 the resources of that type in the group, paged |
//! | `GET …/{type}/{name}/{childType}` | 200 the children (`…/virtualNetworks/v/subnets`, an NSG's `defaultSecurityRules`), paged |
//! | `PUT {id}` | resource group: 201 created / 200 updated, synchronous (as ARM); any other resource: 201/200 with `Azure-AsyncOperation` and `Retry-After: 0` |
//! | `PATCH {id}` | 200, synchronous: the body's `tags` replace the resource's (Update Tags) |
//! | `DELETE {id}` | 204 when absent; resource group: 202 with `Location` (as ARM); any other resource: 202 with `Azure-AsyncOperation` and `Location` |
//! | `GET /subscriptions/{s}/providers/{Ns}/locations/{l}/operations/{op}` | `{"status": "InProgress"}` [`ServerOptions::in_progress_polls`] times, then `Succeeded` (or `Failed` with `error`) |
//! | `GET /subscriptions/{s}/providers/{Ns}/locations/{l}/operationResults/{op}` | 202 while in progress, then 204 (or the ARM error) |
//! | `POST /{tenant}/oauth2/v2.0/token` | a fake Entra ID client-credentials token endpoint |
//!
//! Conditions, as ARM honours them: a PUT with `If-None-Match: *` of an existing resource, and a PUT,
//! PATCH or DELETE with `If-Match: <etag>` of a resource whose etag differs (a PUT also when it does not
//! exist), are 412 `PreconditionFailed`; a write refused because another one is running is 409
//! `AnotherOperationInProgress`. What each API answers and does not model: `docs/dev/simulator.md`.
//!
//! Every ARM request needs `?api-version=` (400 `MissingApiVersionParameter`, or
//! `InvalidApiVersionParameter` when it is not a `YYYY-MM-DD[-preview]` date) and an
//! `Authorization: Bearer …` header (401 `AuthenticationFailed`; with
//! [`ServerOptions::required_token`], any other token is 401 `InvalidAuthenticationToken`).
//! Errors are ARM JSON `{"error": {"code", "message"}}` with the code repeated in `x-ms-error-code`.
//! A list is paged after [`ServerOptions::page_size`] items ([`DEFAULT_PAGE_SIZE`] unless set;
//! `trellis sim serve --page-size`): `nextLink` is an absolute URL on this server (built from the
//! `Host` header) carrying `$skiptoken` (and the request's `$filter`); so are the operation URLs. Hence a
//! request is answered only when its `Host` names the loopback interface ([`is_loopback_host`]:
//! `localhost`, 127.0.0.0/8, `[::1]`, any port); any other is 421 `MisdirectedRequest` (DNS
//! rebinding), before anything else is looked at — the GCE server does the same.
//!
//! # Faults
//! Faults injected into the [`ArmSim`] surface as HTTP: a throttle is 429 with `Retry-After`
//! (seconds, rounded up) and `retry-after-ms` (exact); a server error is 500; a timeout holds the
//! request for [`ServerOptions::timeout_stall`] and then answers 504 `GatewayTimeout`, so a client
//! whose request timeout is shorter sees a timeout. With [`ServerOptions::async_errors`] a refused
//! PUT or DELETE (4xx) is accepted first and reported by its operation (`Failed` with the error), as
//! ARM does for failures found while it provisions.
//!
//! The simulator's audit log records the calls the server made to it (GET, LIST, PUT, DELETE — not
//! operation polls or token requests); [`SimServer::requests`] records every HTTP request.
//!
//! Why a crate of its own rather than a feature of `trellis-sim`: cargo unifies features per build,
//! so an `http` feature switched on by test dependencies would rebuild `trellis-sim` and every crate
//! above it (cli, tests) whenever `cargo build` and `cargo test` alternate; a separate crate leaves
//! the simulator identical in every build and compiles axum only where a test asks for it.

pub mod arm_dns;
pub mod clouddns;
pub mod gce;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::net::TcpListener;
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};
use trellis_sim::ArmSim;

/// The page size of lists unless told otherwise: ARM's largest page of a resource or resource-group
/// list (its `$top` maximum); Microsoft.Network's lists page at their own sizes, which no client may
/// rely on — a client follows `nextLink` until there is none.
pub const DEFAULT_PAGE_SIZE: usize = 1000;

/// How the server behaves beyond the simulator's own rules.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Page lists after this many items (`nextLink`); `None`: one page. Default
    /// [`DEFAULT_PAGE_SIZE`]; `trellis sim serve --page-size` sets it.
    pub page_size: Option<usize>,
    /// How many polls of an operation answer `InProgress` before it is done.
    pub in_progress_polls: u32,
    /// Report a refused (4xx) PUT or DELETE through its operation instead of the response.
    pub async_errors: bool,
    /// When set, only this bearer token is accepted; otherwise any non-empty one.
    pub required_token: Option<String>,
    /// The access token the token endpoint hands out.
    pub issued_token: String,
    /// `expires_in` of issued tokens, in seconds.
    pub token_lifetime_secs: u64,
    /// When set, the token endpoint refuses any other client secret (401 `invalid_client`).
    pub client_secret: Option<String>,
    /// How long a request the simulator timed out is held before the 504 answer.
    pub timeout_stall: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            page_size: Some(DEFAULT_PAGE_SIZE),
            in_progress_polls: 1,
            async_errors: false,
            required_token: None,
            issued_token: "sim-access-token".to_string(),
            token_lifetime_secs: 3600,
            client_secret: None,
            timeout_stall: Duration::from_secs(30),
        }
    }
}

/// One HTTP request the server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    /// The path as sent (not decoded, not lowercased).
    pub path: String,
    /// The `api-version` query parameter, if any.
    pub api_version: Option<String>,
    pub status: u16,
}

/// The simulated cloud behind an HTTP server. Clones share the simulator, the operations and the
/// request log.
#[derive(Clone)]
pub struct SimServer {
    sim: ArmSim,
    shared: Arc<Shared>,
}

struct Shared {
    opts: ServerOptions,
    ops: Mutex<HashMap<u64, Operation>>,
    next_op: AtomicU64,
    requests: Mutex<Vec<RequestRecord>>,
    tokens_issued: AtomicUsize,
}

/// A long-running operation: how many more polls say "in progress", and how it ends.
struct Operation {
    remaining: u32,
    outcome: Result<(), ArmFailure>,
}

#[derive(Clone, Debug)]
struct ArmFailure {
    status: StatusCode,
    code: String,
    message: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SimServer {
    pub fn new(sim: ArmSim) -> SimServer {
        SimServer::with_options(sim, ServerOptions::default())
    }

    pub fn with_options(sim: ArmSim, opts: ServerOptions) -> SimServer {
        let shared = Shared {
            opts,
            ops: Mutex::new(HashMap::new()),
            next_op: AtomicU64::new(1),
            requests: Mutex::new(Vec::new()),
            tokens_issued: AtomicUsize::new(0),
        };
        SimServer { sim, shared: Arc::new(shared) }
    }

    /// The simulator behind the server (its audit log shows the calls the server made).
    pub fn sim(&self) -> &ArmSim {
        &self.sim
    }

    /// Every HTTP request answered so far, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.requests).clone()
    }

    /// How many tokens the token endpoint has issued.
    pub fn tokens_issued(&self) -> usize {
        self.shared.tokens_issued.load(Ordering::SeqCst)
    }

    /// The axum router: one fallback handler for everything.
    pub fn router(&self) -> Router {
        Router::new().fallback(handle).with_state(self.clone())
    }

    /// Serves until the listener fails.
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// Binds 127.0.0.1 on an ephemeral port and serves in a background task until the returned
    /// handle is dropped.
    pub async fn spawn_local(self) -> std::io::Result<Running> {
        let router = self.router();
        spawn_local(self, router).await
    }
}

/// Whether a request is GCE's (or its IAM's, or GCE's token endpoint): everything else is ARM's.
/// GCE and IAM paths are case-sensitive and start `/compute/v1/` or `/v1/projects/`; ARM's start with
/// `/subscriptions/` (or a tenant, for its token endpoint).
pub fn is_gce_path(path: &str) -> bool {
    path.starts_with("/compute/") || path.starts_with("/v1/projects/") || path == "/token"
}

/// One router for both simulated clouds on one port (`trellis sim serve`): GCE REST, IAM and GCE's
/// token endpoint go to `gce`, everything else to `arm`.
pub fn both(arm: SimServer, gce: gce::GceServer) -> Router {
    use tower::ServiceExt as _;
    let (arm, gce) = (arm.router(), gce.router());
    Router::new().fallback(move |req: axum::extract::Request| {
        let router = if is_gce_path(req.uri().path()) { gce.clone() } else { arm.clone() };
        async move {
            match router.oneshot(req).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
    })
}

/// `router` (the served simulated clouds) with every request that may write — any method but GET
/// and HEAD — answered only after `flush` returned: for simulated clouds that leave their flushes
/// to the owner of their database ([`ArmSim::leave_flushes_to_owner`]; `trellis sim serve`), whose
/// answer is what acknowledges a write. Concurrent requests share `flush` as the owner groups it.
/// A failed flush answers 500 in the cloud's error shape instead of the router's answer: nothing
/// is acknowledged that is not durable.
pub fn flush_before_answer(router: Router, flush: trellis_sim::SharedFlush) -> Router {
    use tower::ServiceExt as _;
    Router::new().fallback(move |req: axum::extract::Request| {
        let (router, flush) = (router.clone(), flush.clone());
        async move {
            let writes = !matches!(*req.method(), Method::GET | Method::HEAD);
            let gce = is_gce_path(req.uri().path()) || clouddns::is_clouddns_path(req.uri().path());
            let response = match router.oneshot(req).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            if !writes {
                return response;
            }
            let flushed = match tokio::task::spawn_blocking(move || flush()).await {
                Ok(flushed) => flushed,
                Err(e) => Err(format!("the flush stopped unexpectedly ({e})")),
            };
            match flushed {
                Ok(()) => response,
                Err(e) => {
                    let message = format!(
                        "the simulated cloud could not make the write durable: {e}; nothing was acknowledged: check that the state dir is writable and retry"
                    );
                    if gce {
                        gce::gce_error(500, "backendError", message)
                    } else {
                        arm_error(StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError", message)
                    }
                }
            }
        }
    })
}

/// Serves `sim` over ARM REST on `listener` with the default [`ServerOptions`].
pub async fn serve(sim: ArmSim, listener: TcpListener) -> std::io::Result<()> {
    SimServer::new(sim).serve(listener).await
}

/// A server running in the background (ARM's by default; `GceRunning`, `CloudDnsRunning`); dropping it
/// stops the server.
pub struct Running<S = SimServer> {
    pub addr: SocketAddr,
    pub server: S,
    task: tokio::task::JoinHandle<()>,
}

/// Binds 127.0.0.1 on an ephemeral port and serves `router` in a background task until the returned
/// handle (holding `server`, for what the tests ask it) is dropped.
pub(crate) async fn spawn_local<S>(server: S, router: Router) -> std::io::Result<Running<S>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(Running { addr, server, task })
}

impl<S> Running<S> {
    /// `http://127.0.0.1:PORT`: the endpoint (ARM's also the authority of its token endpoint).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl<S> Drop for Running<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The request as the router sees it.
struct Req {
    method: Method,
    /// Decoded path segments, casing kept.
    segs: Vec<String>,
    /// The same, lowercased, for matching keywords.
    lower: Vec<String>,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
    /// `http://host:port`, from the `Host` header.
    base: String,
}

impl Req {
    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn is(&self, i: usize, word: &str) -> bool {
        self.lower.get(i).is_some_and(|s| s == word)
    }

    /// The ARM id made of the first `n` segments, with the casing the client sent.
    fn id(&self, n: usize) -> String {
        format!("/{}", self.segs[..n].join("/"))
    }
}

async fn handle(State(srv): State<SimServer>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_string();
    let (req, api_version) = parse_request(method, &uri, headers, body);
    let method = req.as_ref().map_or_else(|(m, _)| m.to_string(), |r| r.method.to_string());
    let response = match req {
        Ok(req) => route(&srv, req).await,
        Err((_, refused)) => refused,
    };
    lock(&srv.shared.requests).push(RequestRecord { method, path, api_version, status: response.status().as_u16() });
    response
}

/// A request as [`Req`] (and its `api-version`), or the 421 answer when its `Host` is not a
/// loopback name (with the request's method).
#[allow(clippy::result_large_err)]
fn parse_request(
    method: Method,
    uri: &Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (Result<Req, (Method, Response)>, Option<String>) {
    let query: Vec<(String, String)> = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let segs: Vec<String> = uri
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let lower = segs.iter().map(|s| s.to_ascii_lowercase()).collect();
    let api_version = query.iter().find(|(k, _)| k.eq_ignore_ascii_case("api-version")).map(|(_, v)| v.clone());
    let host = match loopback_host(&headers, uri) {
        Ok(host) => host,
        Err(message) => {
            let response = arm_error(StatusCode::MISDIRECTED_REQUEST, "MisdirectedRequest", message);
            return (Err((method, response)), api_version);
        }
    };
    (Ok(Req { method, segs, lower, query, headers, body, base: format!("http://{host}") }), api_version)
}

async fn route(srv: &SimServer, req: Req) -> Response {
    let n = req.segs.len();
    if n == 4 && req.is(1, "oauth2") && req.is(2, "v2.0") && req.is(3, "token") {
        return token(srv, &req);
    }
    if let Some(denied) = check_auth(srv, &req) {
        return denied;
    }
    if let Some(refused) = api_version_refusal(&req) {
        return refused;
    }
    if !req.is(0, "subscriptions") || n < 2 {
        return no_route(&req);
    }
    // Operations: /subscriptions/{s}/providers/{Ns}/locations/{l}/operations|operationResults/{op}
    if n == 8 && req.is(2, "providers") && req.is(4, "locations") {
        if req.method != Method::GET {
            return method_not_allowed(&req);
        }
        return match req.lower[6].as_str() {
            "operations" => operation(srv, &req, false),
            "operationresults" => operation(srv, &req, true),
            _ => no_route(&req),
        };
    }
    if n == 3 && req.is(2, "resources") {
        // The subscription's resources (generic list).
        return match req.method {
            Method::GET => generic_list(srv, &req, &req.id(2)).await,
            _ => method_not_allowed(&req),
        };
    }
    if n == 5 && req.is(2, "providers") {
        // List All: /subscriptions/{s}/providers/{Ns}/{type}, the type in every resource group.
        return match req.method {
            Method::GET => list(srv, &req, &req.id(2), &format!("{}/{}", req.segs[3], req.segs[4])).await,
            _ => method_not_allowed(&req),
        };
    }
    if n < 3 || !req.is(2, "resourcegroups") {
        return no_route(&req);
    }
    if n == 3 {
        // The subscription's resource groups.
        return match req.method {
            Method::GET => list(srv, &req, &req.id(2), "Microsoft.Resources/resourceGroups").await,
            _ => method_not_allowed(&req),
        };
    }
    if n == 4 {
        return resource(srv, &req).await;
    }
    if n == 5 && req.is(4, "resources") {
        // The resource group's resources (generic list).
        return match req.method {
            Method::GET => generic_list(srv, &req, &req.id(4)).await,
            _ => method_not_allowed(&req),
        };
    }
    if n < 7 || !req.is(4, "providers") {
        return no_route(&req);
    }
    if n % 2 == 1 {
        // A collection: …/providers/{Ns}/{type}[/{name}/{childType}]…
        if req.method != Method::GET {
            return method_not_allowed(&req);
        }
        let parent = if n == 7 { req.id(4) } else { req.id(n - 1) };
        let mut rtype = format!("{}/{}", req.segs[5], req.segs[6]);
        for i in (8..n).step_by(2) {
            rtype.push('/');
            rtype.push_str(&req.segs[i]);
        }
        return list(srv, &req, &parent, &rtype).await;
    }
    resource(srv, &req).await
}

/// Whether `host` (a `Host` header's value: a name or an address, and an optional port) names the
/// loopback interface: `localhost`, an address in 127.0.0.0/8, or `[::1]`. The servers answer no
/// other: a name of someone else's that resolves to 127.0.0.1 is how a web page reaches a loopback
/// server (DNS rebinding). A server listening on a loopback address (all `trellis sim serve`
/// listens on) is always named by one of these.
pub fn is_loopback_host(host: &str) -> bool {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !port.contains(']') => (name, Some(port)),
        _ => (host, None),
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok());
    let name_ok = match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok_and(|ip| ip.is_loopback()),
        None => {
            name.eq_ignore_ascii_case("localhost")
                || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
        }
    };
    port_ok && name_ok
}

/// The host a request is addressed to (its `Host` header, else its URI's authority, as HTTP/2
/// sends it) when [`is_loopback_host`]; otherwise the one-line message of the 421 answer.
pub(crate) fn loopback_host(headers: &HeaderMap, uri: &Uri) -> Result<String, String> {
    let sent = match headers.get(header::HOST) {
        Some(h) => Some(String::from_utf8_lossy(h.as_bytes()).into_owned()),
        None => uri.authority().map(|a| a.as_str().to_string()),
    };
    match sent {
        Some(host) if is_loopback_host(&host) => Ok(host),
        Some(host) => {
            let shown: String = host.chars().take(100).map(|c| if c.is_control() { '?' } else { c }).collect();
            Err(format!(
                "this emulator answers requests addressed to localhost, 127.0.0.0/8 or [::1] only, not to Host '{shown}' (a name that resolves to this machine is refused: DNS rebinding); send the request to the http://127.0.0.1:PORT address it printed"
            ))
        }
        None => Err(
            "the request names no host (no Host header); send it to the http://127.0.0.1:PORT address the emulator printed"
                .to_string(),
        ),
    }
}

/// ARM's 400 for a request without a usable `api-version`.
fn api_version_refusal(req: &Req) -> Option<Response> {
    match req.param("api-version") {
        None | Some("") => Some(arm_error(
            StatusCode::BAD_REQUEST,
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        )),
        Some(v) if !is_api_version(v) => Some(arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidApiVersionParameter",
            format!("The api-version '{v}' is invalid. The supported versions are dates: 'YYYY-MM-DD[-preview]'."),
        )),
        Some(_) => None,
    }
}

/// `YYYY-MM-DD` with an optional `-suffix` (`-preview`).
fn is_api_version(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
        && (b.len() == 10 || (b[10] == b'-' && b.len() > 11))
}

fn check_auth(srv: &SimServer, req: &Req) -> Option<Response> {
    bearer_refusal(&srv.shared.opts, req)
}

/// ARM's 401 for a request without a bearer token (or, with [`ServerOptions::required_token`],
/// another one); `None` when the request may go on.
fn bearer_refusal(opts: &ServerOptions, req: &Req) -> Option<Response> {
    let value = req.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("");
    let token = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")).map(str::trim).unwrap_or("");
    let (code, message) = if token.is_empty() {
        (
            "AuthenticationFailed",
            "Authentication failed. The 'Authorization' header is missing or is not a Bearer token.",
        )
    } else if opts.required_token.as_deref().is_some_and(|t| t != token) {
        ("InvalidAuthenticationToken", "The access token is invalid.")
    } else {
        return None;
    };
    let mut resp = arm_error(StatusCode::UNAUTHORIZED, code, message);
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer authorization_uri=\"/common/oauth2/authorize\", error=\"invalid_token\""),
    );
    Some(resp)
}

/// The fake Entra ID token endpoint (client-credentials grant).
fn token(srv: &SimServer, req: &Req) -> Response {
    if req.method != Method::POST {
        return method_not_allowed(req);
    }
    let form: HashMap<String, String> = form_urlencoded::parse(&req.body).into_owned().collect();
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
    let opts = &srv.shared.opts;
    let refuse = |status: StatusCode, error: &str, description: &str| {
        let body = json!({ "error": error, "error_description": description, "error_codes": [] });
        (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
    };
    if field("grant_type") != "client_credentials" {
        return refuse(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "AADSTS70003: The app requested an unsupported grant type; only client_credentials is simulated.",
        );
    }
    if field("client_id").is_empty() {
        return refuse(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "AADSTS900144: The request body must contain the following parameter: 'client_id'.",
        );
    }
    if field("scope").is_empty() {
        return refuse(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            "AADSTS1002012: The provided value for scope is not valid.",
        );
    }
    let secret_ok = match &opts.client_secret {
        Some(expected) => field("client_secret") == expected,
        None => !field("client_secret").is_empty(),
    };
    if !secret_ok {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.",
        );
    }
    srv.shared.tokens_issued.fetch_add(1, Ordering::SeqCst);
    let body = json!({
        "token_type": "Bearer",
        "expires_in": opts.token_lifetime_secs,
        "ext_expires_in": opts.token_lifetime_secs,
        "access_token": opts.issued_token,
    });
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn operation(srv: &SimServer, req: &Req, results: bool) -> Response {
    let Some(op_id) = req.segs[7].parse::<u64>().ok() else { return operation_not_found(req) };
    let mut ops = lock(&srv.shared.ops);
    let Some(op) = ops.get_mut(&op_id) else { return operation_not_found(req) };
    let retry = [(header::RETRY_AFTER, "0".to_string())];
    if op.remaining > 0 {
        op.remaining -= 1;
        if results {
            let here =
                format!("{}/{}?api-version={}", req.base, req.segs.join("/"), req.param("api-version").unwrap_or(""));
            return with_headers(StatusCode::ACCEPTED, None, &[(header::LOCATION, here), retry[0].clone()]);
        }
        return with_headers(StatusCode::OK, Some(json!({ "status": "InProgress" })), &retry);
    }
    match (&op.outcome, results) {
        (Ok(()), false) => with_headers(StatusCode::OK, Some(json!({ "status": "Succeeded" })), &[]),
        (Ok(()), true) => with_headers(StatusCode::NO_CONTENT, None, &[]),
        (Err(f), false) => with_headers(
            StatusCode::OK,
            Some(json!({ "status": "Failed", "error": { "code": f.code, "message": f.message } })),
            &[],
        ),
        (Err(f), true) => arm_error(f.status, &f.code, f.message.clone()),
    }
}

fn operation_not_found(req: &Req) -> Response {
    arm_error(StatusCode::NOT_FOUND, "OperationNotFound", format!("The operation '{}' was not found.", req.segs[7]))
}

/// GET, PUT or DELETE of one resource (a resource group or anything below one).
async fn resource(srv: &SimServer, req: &Req) -> Response {
    let id = req.id(req.segs.len());
    let is_group = req.segs.len() == 4;
    match req.method {
        Method::GET => match srv.sim.get(&id).await {
            Ok(Some(v)) => with_headers(StatusCode::OK, Some(v), &[]),
            Ok(None) => not_found(srv, req),
            Err(e) => cloud_error(srv, e).await,
        },
        // Check existence: 204 or 404, no body.
        Method::HEAD => match srv.sim.get(&id).await {
            Ok(Some(_)) => with_headers(StatusCode::NO_CONTENT, None, &[]),
            Ok(None) => with_headers(StatusCode::NOT_FOUND, None, &[]),
            Err(e) => cloud_error(srv, e).await,
        },
        // Update Tags (a resource group's Update): synchronous, 200 with the resource.
        Method::PATCH => {
            let body = match json_object(req) {
                Ok(body) => body,
                Err(refused) => return refused.answer(),
            };
            let pre = match condition(req) {
                Condition::IfNoneMatch => Precondition::None,
                Condition::Other(pre) => pre,
            };
            match srv.sim.patch_tags(&id, body, &sim_condition(&pre)).await {
                Ok(v) => with_headers(StatusCode::OK, Some(v), &[]),
                Err(e) => cloud_error(srv, e).await,
            }
        }
        Method::PUT => {
            let body = match json_object(req) {
                Ok(body) => body,
                Err(refused) => return refused.answer(),
            };
            let existed = srv.sim.get_now(&id).is_some();
            let created = if existed { StatusCode::OK } else { StatusCode::CREATED };
            let written = match condition(req) {
                Condition::IfNoneMatch => srv.sim.create(&id, body.clone()).await,
                Condition::Other(pre) => srv.sim.update(&id, body.clone(), &pre).await,
            };
            match written {
                Ok(v) if is_group => with_headers(created, Some(v), &[]),
                Ok(v) => accepted(srv, req, created, Some(v), Ok(()), false),
                Err(CloudError::Rejected { status, code, message, .. })
                    if srv.shared.opts.async_errors && !is_group =>
                {
                    let failure = ArmFailure { status: status_code(status), code, message };
                    accepted(srv, req, created, Some(body), Err(failure), false)
                }
                Err(e) => cloud_error(srv, e).await,
            }
        }
        Method::DELETE => {
            let existed = srv.sim.get_now(&id).is_some();
            let pre = match condition(req) {
                Condition::IfNoneMatch => Precondition::None,
                Condition::Other(pre) => pre,
            };
            match srv.sim.remove(&id, &pre).await {
                Ok(()) if !existed => with_headers(StatusCode::NO_CONTENT, None, &[]),
                Ok(()) => accepted(srv, req, StatusCode::ACCEPTED, None, Ok(()), is_group),
                Err(CloudError::Rejected { status, code, message, .. }) if srv.shared.opts.async_errors => {
                    let failure = ArmFailure { status: status_code(status), code, message };
                    accepted(srv, req, StatusCode::ACCEPTED, None, Err(failure), is_group)
                }
                Err(e) => cloud_error(srv, e).await,
            }
        }
        _ => method_not_allowed(req),
    }
}

/// The request's body, a JSON object (else ARM's 400 `InvalidRequestContent`).
fn json_object(req: &Req) -> Result<Value, ArmFailure> {
    let refused = |message: String| ArmFailure {
        status: StatusCode::BAD_REQUEST,
        code: "InvalidRequestContent".to_string(),
        message,
    };
    match serde_json::from_slice(&req.body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(refused("The request content must be a JSON object.".to_string())),
        Err(e) => Err(refused(format!("The request content was invalid and could not be deserialized: {e}"))),
    }
}

/// The write model's precondition as the simulator's `If-Match`.
fn sim_condition(pre: &Precondition) -> trellis_sim::Precondition {
    match pre {
        Precondition::None => trellis_sim::Precondition::none(),
        Precondition::IfMatch(etag) => trellis_sim::Precondition::if_match(etag),
    }
}

/// The condition a PUT or DELETE carries: `If-None-Match: *` (create only), or `If-Match: <etag>`.
enum Condition {
    IfNoneMatch,
    Other(Precondition),
}

fn condition(req: &Req) -> Condition {
    let header = |name: header::HeaderName| req.headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if header(header::IF_NONE_MATCH) == Some("*") {
        return Condition::IfNoneMatch;
    }
    match header(header::IF_MATCH) {
        Some(etag) if !etag.is_empty() && etag != "*" => Condition::Other(Precondition::IfMatch(etag.to_string())),
        _ => Condition::Other(Precondition::None),
    }
}

/// Starts an operation and answers with its URLs: `Azure-AsyncOperation` (and `Location` for a
/// DELETE), or only `Location` when `location_only` (a resource group's DELETE, as ARM does).
fn accepted(
    srv: &SimServer,
    req: &Req,
    status: StatusCode,
    body: Option<Value>,
    outcome: Result<(), ArmFailure>,
    location_only: bool,
) -> Response {
    let op_id = srv.shared.next_op.fetch_add(1, Ordering::SeqCst);
    lock(&srv.shared.ops).insert(op_id, Operation { remaining: srv.shared.opts.in_progress_polls, outcome });
    let namespace = if req.segs.len() > 5 { req.segs[5].as_str() } else { "Microsoft.Resources" };
    let api = req.param("api-version").unwrap_or("");
    let op_url = |kind: &str| {
        format!(
            "{}/subscriptions/{}/providers/{namespace}/locations/simulated/{kind}/{op_id}?api-version={api}",
            req.base, req.segs[1]
        )
    };
    let mut headers = vec![(header::RETRY_AFTER, "0".to_string())];
    if !location_only {
        headers.push((HeaderName::from_static("azure-asyncoperation"), op_url("operations")));
    }
    if location_only || req.method == Method::DELETE {
        headers.push((header::LOCATION, op_url("operationResults")));
    }
    with_headers(status, body, &headers)
}

async fn list(srv: &SimServer, req: &Req, parent: &str, rtype: &str) -> Response {
    let skip = match skip_token(req) {
        Ok(skip) => skip,
        Err(refused) => return refused.answer(),
    };
    let items = match srv.sim.list(parent, rtype).await {
        Ok(items) => items,
        Err(e) => return cloud_error(srv, e).await,
    };
    page(srv, req, skip, &items)
}

/// `GET {scope}/resources`: the generic resource list of a subscription or resource group, with
/// `$filter` on `resourceType`, `name` and `location` (`eq`, joined by `and`), paged.
async fn generic_list(srv: &SimServer, req: &Req, scope: &str) -> Response {
    let skip = match skip_token(req) {
        Ok(skip) => skip,
        Err(refused) => return refused.answer(),
    };
    let filter = match req.param("$filter").filter(|f| !f.trim().is_empty()).map(parse_filter).transpose() {
        Ok(filter) => filter.unwrap_or_default(),
        Err(message) => return arm_error(StatusCode::BAD_REQUEST, "InvalidFilterInQueryString", message),
    };
    let items = match srv.sim.list_resources(scope).await {
        Ok(items) => items,
        Err(e) => return cloud_error(srv, e).await,
    };
    let matches = |item: &Value| {
        filter
            .iter()
            .all(|(field, want)| item.get(field).and_then(Value::as_str).is_some_and(|v| v.eq_ignore_ascii_case(want)))
    };
    let items: Vec<Value> = items.into_iter().filter(|i| matches(i)).collect();
    page(srv, req, skip, &items)
}

/// A `$filter` of `<field> eq '<value>'` clauses joined by `and`, the fields those a generic
/// resource list filters on; anything else is refused, never ignored.
fn parse_filter(filter: &str) -> Result<Vec<(&'static str, String)>, String> {
    let mut out = Vec::new();
    let lower = filter.to_ascii_lowercase();
    let mut rest = filter;
    let mut rest_lower = lower.as_str();
    loop {
        let (clause, next) = match rest_lower.find(" and ") {
            Some(at) => (&rest[..at], Some(at + 5)),
            None => (rest, None),
        };
        let parsed = clause.trim().split_once(' ').and_then(|(field, tail)| {
            let value = tail.trim_start().strip_prefix("eq ")?.trim().strip_prefix('\'')?.strip_suffix('\'')?;
            let field = ["resourceType", "name", "location"].into_iter().find(|f| f.eq_ignore_ascii_case(field))?;
            Some((if field == "resourceType" { "type" } else { field }, value.to_string()))
        });
        match parsed {
            Some(p) => out.push(p),
            None => {
                return Err(format!(
                    "The $filter '{filter}' is not supported by the simulated cloud: it filters resource lists by resourceType, name and location with eq '<value>' clauses joined by and."
                ))
            }
        }
        match next {
            Some(at) => {
                rest = &rest[at..];
                rest_lower = &rest_lower[at..];
            }
            None => return Ok(out),
        }
    }
}

/// `$skiptoken` (the offset of the page), else 0.
fn skip_token(req: &Req) -> Result<usize, ArmFailure> {
    match req.param("$skiptoken") {
        None | Some("") => Ok(0),
        Some(t) => t.parse::<usize>().map_err(|_| ArmFailure {
            status: StatusCode::BAD_REQUEST,
            code: "InvalidSkipToken".to_string(),
            message: format!("The skip token '{t}' is invalid."),
        }),
    }
}

impl ArmFailure {
    /// The failure as ARM answers it.
    fn answer(self) -> Response {
        arm_error(self.status, &self.code, self.message)
    }
}

/// One page of `items` from `skip` on, with `nextLink` (this URL with the next `$skiptoken`) while
/// more are left.
fn page(srv: &SimServer, req: &Req, skip: usize, items: &[Value]) -> Response {
    page_of(srv.shared.opts.page_size, req, skip, items)
}

/// [`page`] with pages of `page_size` items (`None`: one page).
fn page_of(page_size: Option<usize>, req: &Req, skip: usize, items: &[Value]) -> Response {
    let size = page_size.unwrap_or(usize::MAX).max(1);
    let page: Vec<Value> = items.iter().skip(skip).take(size).cloned().collect();
    let mut body = json!({ "value": page });
    let next = skip.saturating_add(size);
    if next < items.len() {
        let api = req.param("api-version").unwrap_or("");
        let mut link = format!("{}/{}?api-version={api}", req.base, req.segs.join("/"));
        if let Some(filter) = req.param("$filter") {
            link.push_str("&$filter=");
            link.extend(form_urlencoded::byte_serialize(filter.as_bytes()));
        }
        link.push_str(&format!("&$skiptoken={next}"));
        body["nextLink"] = Value::String(link);
    }
    with_headers(StatusCode::OK, Some(body), &[])
}

fn not_found(srv: &SimServer, req: &Req) -> Response {
    let group = &req.segs[3];
    if req.segs.len() == 4 || srv.sim.get_now(&req.id(4)).is_none() {
        return arm_error(
            StatusCode::NOT_FOUND,
            "ResourceGroupNotFound",
            format!("Resource group '{group}' could not be found."),
        );
    }
    let n = req.segs.len();
    let mut what = format!("{}/{}", req.segs[5], req.segs[6]);
    for i in (8..n).step_by(2) {
        what.push('/');
        what.push_str(&req.segs[i]);
    }
    let names: Vec<&str> = (7..n).step_by(2).map(|i| req.segs[i].as_str()).collect();
    arm_error(
        StatusCode::NOT_FOUND,
        "ResourceNotFound",
        format!("The Resource '{what}/{}' under resource group '{group}' was not found.", names.join("/")),
    )
}

/// A simulator error as ARM answers it.
async fn cloud_error(srv: &SimServer, e: CloudError) -> Response {
    cloud_error_stalling(srv.shared.opts.timeout_stall, e).await
}

/// [`cloud_error`], a timeout held for `stall` before its 504.
async fn cloud_error_stalling(stall: Duration, e: CloudError) -> Response {
    match e {
        CloudError::Throttled { retry_after, .. } => {
            let after = retry_after.unwrap_or(Duration::from_secs(1));
            let secs = after.as_millis().div_ceil(1000);
            let mut resp = arm_error(
                StatusCode::TOO_MANY_REQUESTS,
                "TooManyRequests",
                "The request is being throttled; retry after the time in the Retry-After header.",
            );
            let h = resp.headers_mut();
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs as u64));
            h.insert(HeaderName::from_static("retry-after-ms"), HeaderValue::from(after.as_millis() as u64));
            resp
        }
        CloudError::Server { status, message, .. } => {
            let (code, message) = split_code(&message);
            arm_error(status_code(status), &code, message)
        }
        CloudError::Timeout { .. } => {
            tokio::time::sleep(stall).await;
            arm_error(
                StatusCode::GATEWAY_TIMEOUT,
                "GatewayTimeout",
                "The gateway did not receive a response within the specified time period.",
            )
        }
        CloudError::Rejected { status, code, message, .. } => arm_error(status_code(status), &code, message),
        CloudError::PreconditionFailed { target, expected } => arm_error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            format!("The condition If-Match: {expected} was not met for '{target}'."),
        ),
        CloudError::AlreadyExists { target, .. } => arm_error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            format!("The resource '{target}' already exists; the condition If-None-Match: * was not met."),
        ),
        CloudError::Conflict { code, message, .. } => arm_error(StatusCode::CONFLICT, &code, message),
        // The in-process simulator always answers; should it not, say so as a gateway would.
        CloudError::Unreachable { message, .. } => arm_error(StatusCode::BAD_GATEWAY, "BadGateway", message),
    }
}

/// `"Code: message"` (how the simulator words server errors) into its parts.
fn split_code(message: &str) -> (String, String) {
    match message.split_once(": ") {
        Some((code, rest)) if !code.is_empty() && code.chars().all(|c| c.is_ascii_alphanumeric()) => {
            (code.to_string(), rest.to_string())
        }
        _ => ("InternalServerError".to_string(), message.to_string()),
    }
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn no_route(req: &Req) -> Response {
    arm_error(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("No ARM route for '/{}' in the simulated cloud; expected /subscriptions/{{s}}/resourceGroups/{{rg}}[/providers/{{Namespace}}/{{type}}[/{{name}}…]].", req.segs.join("/")),
    )
}

fn method_not_allowed(req: &Req) -> Response {
    arm_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!("The simulated cloud does not support {} on '/{}'.", req.method, req.segs.join("/")),
    )
}

/// An ARM error answer: `{"error": {"code", "message"}}` and `x-ms-error-code`.
fn arm_error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = json!({ "error": { "code": code, "message": message.into() } });
    let mut resp = with_headers(status, Some(body), &[]);
    if let Ok(v) = HeaderValue::from_str(code) {
        resp.headers_mut().insert(HeaderName::from_static("x-ms-error-code"), v);
    }
    resp
}

fn with_headers(status: StatusCode, body: Option<Value>, headers: &[(HeaderName, String)]) -> Response {
    let mut resp = match body {
        Some(v) => (status, [(header::CONTENT_TYPE, "application/json; charset=utf-8")], v.to_string()).into_response(),
        None => status.into_response(),
    };
    for (name, value) in headers {
        if let Ok(v) = HeaderValue::from_str(value) {
            resp.headers_mut().insert(name.clone(), v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_are_dates() {
        assert!(is_api_version("2024-03-01"));
        assert!(is_api_version("2024-03-01-preview"));
        for bad in ["2024-3-1", "latest", "2024-03-01-", "2024_03_01", ""] {
            assert!(!is_api_version(bad), "{bad}");
        }
    }

    #[test]
    fn only_loopback_names_are_loopback_hosts() {
        for host in
            ["localhost", "LocalHost:8080", "127.0.0.1", "127.0.0.1:41235", "127.255.0.9:1", "[::1]", "[::1]:80"]
        {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "attacker.example",
            "attacker.example:41235",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "10.0.0.1",
            "0.0.0.0:80",
            "[::]:80",
            "::1",
            "[::1",
            "127.0.0.1:",
            "127.0.0.1:port",
            "127.0.0.1:99999",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn server_error_messages_split_into_code_and_message() {
        assert_eq!(
            split_code("InternalServerError: injected fault"),
            ("InternalServerError".into(), "injected fault".into())
        );
        assert_eq!(split_code("disk full: retry"), ("InternalServerError".into(), "disk full: retry".into()));
    }
}
