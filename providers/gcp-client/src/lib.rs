//! The real GCP client: trellis' [`CloudRead`] / [`CloudWrite`] for GCE, speaking GCE's (and IAM's)
//! REST API over trellis' own HTTP client ([`trellis_http::client`]: rustls with ring, no
//! redirects), signed in with a service-account key through `google-cloud-auth`. Request and
//! answer bodies go through the official `google-cloud-compute-v1` / `google-cloud-iam-admin-v1`
//! model types, so Google's crates still define the shapes; only the transport is trellis'.
//!
//! Ids are GCE selfLink paths, relative (`projects/P/global/networks/N`,
//! `projects/P/regions/R/subnetworks/S`, …) or as full URLs; `…/routers/R/nats/N` is a Cloud NAT,
//! an entry of its router's `nats[]` (ARCHITECTURE.md's NAT sub-resource contract);
//! `projects/P/serviceAccounts/EMAIL` is an IAM service account (create answers the account, no
//! operation; update is IAM's PATCH with an update mask under the `etag`).
//!
//! | trellis | GCE |
//! |---|---|
//! | `get` | GET (404 = `None`); a NAT: GET the router, its `nats[]` entry |
//! | `list` | the collection's list, every page (`items` / IAM's `accounts`, `nextPageToken`, `maxResults`; `list_filtered` takes a GCE `filter`) |
//! | `create` | POST to the collection with a `requestId`, wait for the operation, look inside it for an error; a 409 is success only when the existing resource equals the body ("ours") |
//! | `update` | GET, then PATCH: a subnetwork's under its fingerprint (412 = [`CloudError::PreconditionFailed`]); a network's, router's or firewall's (no fingerprint in compute v1) only when the GET shows the content version of the precondition ([`GceIds::content_version`]); routes and addresses cannot be patched |
//! | `remove` | DELETE with a `requestId` (404 = done); under a precondition the fingerprint (or content version) is checked with a GET first |
//! | NAT writes | GET the router, check the entry's content version, replace / add / drop that one `nats[]` entry, PATCH the router with its whole `nats[]` |
//!
//! # Time bounds
//! - Every HTTP request (and getting its token) ends within [`GcpOptions::request_timeout`]
//!   (default 60 s; a TCP connection within [`trellis_http::CONNECT_TIMEOUT`]): a server that
//!   accepts and never answers is a [`CloudError::Timeout`].
//! - The client does **not** retry a request: a 429, a 5xx, a timeout or a refused connection is
//!   returned as its transient [`CloudError`], and the engine's `RetryPolicy` (around each call)
//!   decides, so retries never multiply. Writes are safe to repeat: a repeated insert meets a 409
//!   and the "ours" check.
//! - An operation is polled (GET `…/operations/NAME`) until `DONE`, at most
//!   [`GcpOptions::operation_timeout`] (default 10 min), waiting [`GcpOptions::poll_interval`]
//!   (default 1 s) before the first poll and twice as long before each next one, up to 10 s — never
//!   less than [`MIN_POLL_WAIT`], however fast the server answers. A poll that fails transiently is
//!   repeated (at most [`POLL_RETRIES`] in a row, within the same deadline): the write itself was
//!   accepted, and repeating it would not be the same (a PATCH's fingerprint has moved on).
//!
//! # The wire
//! - No redirects: a 3xx is a `Rejected { code: "Redirected" }` naming its `Location`.
//! - Answers are read up to [`GcpOptions::response_limit`] ([`trellis_http::MAX_RESPONSE_BYTES`]).
//! - An answer must be the resource asked for: its `selfLink` (IAM: its `name`) is the id's path;
//!   a list item's lies in the listed collection (`WrongResource` otherwise).
//! - Every error leaving the client (its trait methods and [`GcpClient::list_filtered`]) has been
//!   through [`trellis_http::redact`](fn@trellis_http::redact) with the bearer token last sent, the key's `private_key_id`
//!   and every line of its private key among the known secrets (and the PEM, `Bearer` and JWT
//!   patterns), so a server that echoes the request cannot put a credential into a message.

pub mod dns;

use async_trait::async_trait;
use google_cloud_auth::credentials::CacheableResource;
use google_cloud_compute_v1::model::{Address, Firewall, Network, Route, Router, Subnetwork};
use google_cloud_iam_admin_v1::model::ServiceAccount;
use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use trellis_http::{read_capped, redirect_error, snippet, transport_error, MAX_RESPONSE_BYTES};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, ListFilter, Precondition};
use trellis_planner::ids::{GceIds, IdScheme};

pub use url::Url;

/// The compute API's URL prefix of selfLinks.
pub const COMPUTE_URL: &str = "https://www.googleapis.com/compute/v1/";

/// Where compute requests go without `--endpoint`.
pub const DEFAULT_COMPUTE_ENDPOINT: &str = "https://compute.googleapis.com";

/// Where IAM requests go without `--endpoint` (with one, IAM's paths go to the same endpoint).
pub const DEFAULT_IAM_ENDPOINT: &str = "https://iam.googleapis.com";

/// The environment variable naming the service-account key file.
pub const CREDENTIALS_ENV: &str = "GOOGLE_APPLICATION_CREDENTIALS";

/// The shortest wait between two polls of an operation, whatever [`GcpOptions::poll_interval`]
/// says: a server that answers instantly is never polled in a busy loop.
pub const MIN_POLL_WAIT: Duration = Duration::from_millis(100);

/// The longest wait between two polls of an operation.
pub const MAX_POLL_WAIT: Duration = Duration::from_secs(10);

/// Transient poll failures in a row before waiting for an operation is given up.
pub const POLL_RETRIES: u32 = 3;

/// A guard against a `nextPageToken` that never ends.
const MAX_PAGES: usize = 10_000;

/// The flag a user changes when the endpoint misbehaves.
const ENDPOINT_SETTING: &str = "--endpoint";

/// How the client signs in.
#[derive(Clone, Debug)]
pub enum Credentials {
    /// The service-account key file named by `GOOGLE_APPLICATION_CREDENTIALS`.
    FromEnv,
    /// A service-account key file (the JSON a `gcloud iam service-accounts keys create` writes).
    KeyFile(PathBuf),
    /// No credentials (an emulator that does not check them).
    Anonymous,
}

/// What goes wrong building the client. Never contains key material.
#[derive(Debug, thiserror::Error)]
pub enum GcpClientError {
    #[error("{CREDENTIALS_ENV} is not set; point it at a service-account key JSON file")]
    NoCredentials,
    #[error("cannot read the service-account key '{path}': {message}")]
    KeyUnreadable { path: String, message: String },
    #[error("the service-account key '{path}' is not usable: {message}; create a JSON key with `gcloud iam service-accounts keys create`")]
    KeyInvalid { path: String, message: String },
    #[error("cannot build the GCE client for endpoint '{endpoint}': {message}")]
    Build { endpoint: String, message: String },
    #[error("the endpoint '{0}' would get the credentials over plain http; use https (plain http is for a loopback emulator only)")]
    PlainHttp(String),
    #[error("the project id '{0}' is not valid; use the GCP project id (lowercase letters, digits, hyphens)")]
    Project(String),
}

/// Tunables; the defaults suit real GCP.
#[derive(Clone, Debug)]
pub struct GcpOptions {
    /// The timeout of each HTTP request, from connecting to the last byte of the answer (and of
    /// getting its token).
    pub request_timeout: Duration,
    /// How long to wait for one operation to be DONE.
    pub operation_timeout: Duration,
    /// The wait before the first poll of an operation; it doubles per poll up to
    /// [`MAX_POLL_WAIT`] and is never below [`MIN_POLL_WAIT`].
    pub poll_interval: Duration,
    /// `maxResults` of list pages; `None`: the server's default (500).
    pub page_size: Option<u32>,
    /// The largest answer read, in bytes; a larger one is refused while it is read.
    pub response_limit: usize,
}

impl Default for GcpOptions {
    fn default() -> Self {
        GcpOptions {
            request_timeout: Duration::from_secs(60),
            operation_timeout: Duration::from_secs(600),
            poll_interval: Duration::from_secs(1),
            page_size: None,
            response_limit: MAX_RESPONSE_BYTES,
        }
    }
}

/// The real GCE client of one project.
#[derive(Clone)]
pub struct GcpClient {
    project: String,
    opts: GcpOptions,
    http: reqwest::Client,
    compute: Url,
    iam: Url,
    creds: google_cloud_auth::credentials::Credentials,
    /// The key's `private_key_id` and the lines of its private key: redacted from every error.
    secrets: Arc<Vec<String>>,
    /// The bearer token last sent, redacted from errors even where it appears without `Bearer`.
    last_token: Arc<Mutex<String>>,
}

impl std::fmt::Debug for GcpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcpClient")
            .field("project", &self.project)
            .field("compute", &self.compute.as_str())
            .field("iam", &self.iam.as_str())
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

/// A GCE resource kind this client writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Networks,
    Firewalls,
    Routes,
    Subnetworks,
    Routers,
    Addresses,
    /// IAM service accounts (`projects/P/serviceAccounts/EMAIL`), through the IAM API.
    ServiceAccounts,
}

impl Kind {
    fn of(segment: &str) -> Option<Kind> {
        Some(match segment {
            "networks" => Kind::Networks,
            "firewalls" => Kind::Firewalls,
            "routes" => Kind::Routes,
            "subnetworks" => Kind::Subnetworks,
            "routers" => Kind::Routers,
            "addresses" => Kind::Addresses,
            "serviceAccounts" => Kind::ServiceAccounts,
            _ => return None,
        })
    }

    fn regional(self) -> bool {
        matches!(self, Kind::Subnetworks | Kind::Routers | Kind::Addresses)
    }
}

/// A parsed resource id.
#[derive(Clone, Debug)]
struct Id {
    project: String,
    region: String,
    kind: Kind,
    name: String,
    /// `…/routers/R/nats/N`: the NAT's name.
    nat: Option<String>,
}

fn rejected(target: &str, status: u16, code: &str, message: impl Into<String>) -> CloudError {
    CloudError::Rejected { target: target.to_string(), status, code: code.to_string(), message: message.into() }
}

fn parse_id(id: &str) -> Result<Id, CloudError> {
    let path = id.strip_prefix(COMPUTE_URL).unwrap_or(id).trim_matches('/');
    let segs: Vec<&str> = path.split('/').collect();
    let parsed = match segs.as_slice() {
        ["projects", p, "global", c, n] => {
            Kind::of(c).filter(|k| !k.regional() && *k != Kind::ServiceAccounts).map(|k| (p, "", k, n, None))
        }
        ["projects", p, "serviceAccounts", n] => Some((p, "", Kind::ServiceAccounts, n, None)),
        ["projects", p, "regions", r, c, n] => Kind::of(c).filter(|k| k.regional()).map(|k| (p, *r, k, n, None)),
        ["projects", p, "regions", r, "routers", n, "nats", nat] => Some((p, *r, Kind::Routers, n, Some(*nat))),
        _ => None,
    };
    match parsed {
        Some((p, r, kind, n, nat)) if !p.is_empty() && !n.is_empty() && nat.is_none_or(|s| !s.is_empty()) => Ok(Id {
            project: p.to_string(),
            region: r.to_string(),
            kind,
            name: n.to_string(),
            nat: nat.map(str::to_string),
        }),
        _ => Err(rejected(
            id,
            400,
            "invalid",
            "not a GCE resource this client writes: expected projects/P/global/{networks,firewalls,routes}/N, \
             projects/P/regions/R/{subnetworks,routers,addresses}/N, projects/P/regions/R/routers/N/nats/NAT \
             or projects/P/serviceAccounts/EMAIL",
        )),
    }
}

/// Whether `url`'s host is the loopback interface (an emulator may be spoken to over plain http).
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

fn valid_project(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 63
        && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' || c == ':')
}

impl Kind {
    /// The collection's path segment.
    fn collection(self) -> &'static str {
        match self {
            Kind::Networks => "networks",
            Kind::Firewalls => "firewalls",
            Kind::Routes => "routes",
            Kind::Subnetworks => "subnetworks",
            Kind::Routers => "routers",
            Kind::Addresses => "addresses",
            Kind::ServiceAccounts => "serviceAccounts",
        }
    }

    /// The body (ours or GCE's) through the crate's model type of this kind and back: a body the
    /// API would not take is refused before it is sent, an answer that is not the kind's shape is
    /// an error, and both look as the official clients would send and read them.
    fn through_model(self, body: Value) -> Result<Value, String> {
        fn round<T: serde::de::DeserializeOwned + serde::Serialize>(v: Value) -> Result<Value, String> {
            let model: T = serde_json::from_value(v).map_err(|e| e.to_string())?;
            serde_json::to_value(&model).map_err(|e| e.to_string())
        }
        match self {
            Kind::Networks => round::<Network>(body),
            Kind::Firewalls => round::<Firewall>(body),
            Kind::Routes => round::<Route>(body),
            Kind::Subnetworks => round::<Subnetwork>(body),
            Kind::Routers => round::<Router>(body),
            Kind::Addresses => round::<Address>(body),
            Kind::ServiceAccounts => round::<ServiceAccount>(body),
        }
    }
}

impl Id {
    /// `projects/P/global` or `projects/P/regions/R` (IAM: `projects/P`).
    fn scope_segments(&self) -> Vec<&str> {
        match self.kind {
            Kind::ServiceAccounts => vec!["projects", &self.project],
            k if k.regional() => vec!["projects", &self.project, "regions", &self.region],
            _ => vec!["projects", &self.project, "global"],
        }
    }

    /// The resource's path segments (a NAT: its router's).
    fn segments(&self) -> Vec<&str> {
        let mut s = self.scope_segments();
        s.push(self.kind.collection());
        s.push(&self.name);
        s
    }

    /// The selfLink path (IAM: the resource name) an answer for this resource carries.
    fn path(&self) -> String {
        self.segments().join("/")
    }
}

fn bad_answer(target: &str, status: StatusCode, what: &str) -> CloudError {
    CloudError::Server {
        target: target.to_string(),
        status: 502,
        message: format!(
            "GCE answered HTTP {} with {what}; check that {ENDPOINT_SETTING} is GCE itself",
            status.as_u16()
        ),
    }
}

/// An answer, its body read (capped).
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self, target: &str) -> Result<Value, CloudError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| bad_answer(target, self.status, &format!("a body that is not JSON ({e})")))
    }
}

/// A server's text on one line (errors are one line: line breaks and tabs become spaces).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The path of a selfLink: what follows `/compute/v1/` in a full URL, else the text itself.
fn link_path(link: &str) -> &str {
    let path = match link.find("/compute/v1/") {
        Some(i) => &link[i + "/compute/v1/".len()..],
        None => link,
    };
    path.trim_matches('/')
}

/// Checks that an answer is about what was asked: its `selfLink` (IAM, which has none: its
/// `name`) passes `expected`. A server or proxy answering another resource would otherwise be taken
/// for the one the plan reads.
fn answered_for(target: &str, kind: Kind, doc: &Value, expected: impl Fn(&str) -> bool) -> Result<(), CloudError> {
    let field = if kind == Kind::ServiceAccounts { "name" } else { "selfLink" };
    match doc.get(field).and_then(Value::as_str) {
        Some(link) if expected(link_path(link)) => Ok(()),
        answered => Err(rejected(
            target,
            502,
            "WrongResource",
            format!(
                "GCE answered {} instead; check that {ENDPOINT_SETTING} is GCE itself, not a proxy that rewrites answers",
                match answered {
                    Some(other) => format!("the resource '{}'", trellis_http::redact(other, &[])),
                    None => format!("an object without a `{field}`"),
                }
            ),
        )),
    }
}

/// A GCE error answer (`{"error": {"code", "message", "status", "errors": [{"reason"}]}}`) as
/// trellis' class; a body that is not that JSON is quoted redacted (with the `known` secrets), then
/// cut. `sent` is the fingerprint a conditional write carried.
fn response_error(target: &str, answer: &Answer, sent: Option<&str>, known: &[&str]) -> CloudError {
    let status = answer.status.as_u16();
    let doc: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    let err = &doc["error"];
    let code = err["status"]
        .as_str()
        .or_else(|| err["errors"][0]["reason"].as_str())
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("HTTP{status}"));
    let message = match err["message"].as_str().filter(|m| !m.is_empty()) {
        Some(m) => one_line(m),
        None => format!("HTTP {status}: {}", one_line(&snippet(&String::from_utf8_lossy(&answer.body), known))),
    };
    let target = target.to_string();
    match status {
        409 if code == "ALREADY_EXISTS" || message.contains("already exists") => {
            CloudError::AlreadyExists { target, status }
        }
        409 => CloudError::Conflict { target, code, message },
        412 => CloudError::PreconditionFailed { target, expected: sent.unwrap_or("none").to_string() },
        429 => CloudError::Throttled { target, retry_after: trellis_http::retry_after(&answer.headers) },
        408 => CloudError::Timeout { target },
        s if s >= 500 => CloudError::Server { target, status: s, message: format!("{code}: {message}") },
        s => CloudError::Rejected { target, status: s, code, message },
    }
}

/// The error a finished operation reports, if it failed (DONE with `error.errors[]` or
/// `httpErrorStatusCode`): GCE answers such a write with 200.
fn operation_error(target: &str, v: &Value) -> Option<CloudError> {
    let status = v.get("httpErrorStatusCode").and_then(Value::as_u64);
    let first = v.get("error").and_then(|e| e.get("errors")).and_then(Value::as_array).and_then(|a| a.first());
    if status.is_none() && first.is_none() {
        return None;
    }
    let status = status.and_then(|s| u16::try_from(s).ok()).unwrap_or(400);
    let code = first.and_then(|f| f.get("code")).and_then(Value::as_str).unwrap_or("OPERATION_FAILED");
    let message = first
        .and_then(|f| f.get("message"))
        .and_then(Value::as_str)
        .or_else(|| v.get("httpErrorMessage").and_then(Value::as_str))
        .map_or_else(|| "the operation failed".to_string(), one_line);
    let target = target.to_string();
    Some(match status {
        409 if code == "RESOURCE_ALREADY_EXISTS" || code == "alreadyExists" => {
            CloudError::AlreadyExists { target, status }
        }
        412 => CloudError::PreconditionFailed { target, expected: "none".into() },
        429 => CloudError::Throttled { target, retry_after: None },
        s if s >= 500 => CloudError::Server { target, status: s, message: format!("{code}: {message}") },
        s => CloudError::Rejected { target, status: s, code: code.to_string(), message },
    })
}

/// Whether every field we sent has the same value in what GCE holds (references may come back as
/// full URLs; GCE adds output fields). This is how a 409 on a retried create is told apart: ours
/// when equal, a stranger's otherwise.
fn ours(sent: &Value, have: &Value) -> bool {
    match (sent, have) {
        (Value::Object(s), Value::Object(h)) => s
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "fingerprint" | "etag" | "name"))
            .all(|(k, v)| h.get(k).is_some_and(|hv| ours(v, hv))),
        (Value::Array(s), Value::Array(h)) => s.len() == h.len() && s.iter().zip(h).all(|(a, b)| ours(a, b)),
        (Value::String(s), Value::String(h)) => {
            s == h || (s.contains('/') && (h.ends_with(&format!("/{s}")) || h.strip_prefix(COMPUTE_URL) == Some(s)))
        }
        (Value::Number(s), Value::String(h)) | (Value::String(h), Value::Number(s)) => s.to_string() == *h,
        (s, h) => s == h,
    }
}

fn request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A URL of `base` (a base path is kept) with `segments` appended, each percent-encoded.
fn join(base: &Url, segments: &[&str]) -> Result<Url, String> {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| format!("'{base}' cannot take a path; use http(s)://host[:port]"))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

impl GcpClient {
    /// A client of `project` at `endpoint` (`None`: GCE itself; an emulator's `http://host:port`
    /// otherwise) signed in with `creds`, with the default [`GcpOptions`].
    pub async fn new(project: &str, endpoint: Option<Url>, creds: Credentials) -> Result<GcpClient, GcpClientError> {
        GcpClient::with_options(project, endpoint, creds, GcpOptions::default()).await
    }

    /// [`GcpClient::new`] with explicit [`GcpOptions`].
    pub async fn with_options(
        project: &str,
        endpoint: Option<Url>,
        creds: Credentials,
        opts: GcpOptions,
    ) -> Result<GcpClient, GcpClientError> {
        if !valid_project(project) {
            return Err(GcpClientError::Project(project.to_string()));
        }
        // reqwest and the key signer use the process-wide rustls provider; this crate links ring
        // only. A second install (already done) is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        if let Some(url) = &endpoint {
            let loopback = is_loopback(url);
            let signed = !matches!(creds, Credentials::Anonymous);
            if url.scheme() != "https" && !(url.scheme() == "http" && loopback) && signed {
                return Err(GcpClientError::PlainHttp(trellis_http::redact(url.as_str(), &[])));
            }
        }
        let shown =
            endpoint.as_ref().map_or(DEFAULT_COMPUTE_ENDPOINT.to_string(), |u| trellis_http::redact(u.as_str(), &[]));
        let build_err = |message: String| GcpClientError::Build { endpoint: shown.clone(), message };
        let (compute, iam) = match endpoint {
            Some(url) => {
                if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                    return Err(build_err("expected http(s)://host[:port]".into()));
                }
                (url.clone(), url)
            }
            None => {
                let parse = |s: &str| Url::parse(s).map_err(|e| build_err(e.to_string()));
                (parse(DEFAULT_COMPUTE_ENDPOINT)?, parse(DEFAULT_IAM_ENDPOINT)?)
            }
        };
        let (creds, secrets) = credentials(&creds)?;
        let http = trellis_http::client().map_err(|e| build_err(trellis_http::redact(&e, &[])))?;
        Ok(GcpClient {
            project: project.to_string(),
            opts,
            http,
            compute,
            iam,
            creds,
            secrets: Arc::new(secrets),
            last_token: Arc::default(),
        })
    }

    /// The project this client writes.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// What is redacted literally from every error: the key's secrets and the token last sent.
    fn known_secrets(&self) -> Vec<String> {
        let token = self.last_token.lock().unwrap_or_else(PoisonError::into_inner).clone();
        self.secrets.iter().cloned().chain(std::iter::once(token)).collect()
    }

    /// `e` without credentials: the patterns and [`GcpClient::known_secrets`].
    fn redacted(&self, e: CloudError) -> CloudError {
        let known = self.known_secrets();
        trellis_http::redact_error(e, &known.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn response_error(&self, target: &str, answer: &Answer, sent: Option<&str>) -> CloudError {
        let known = self.known_secrets();
        response_error(target, answer, sent, &known.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn url(&self, id: &Id) -> Result<Url, CloudError> {
        self.url_of(id.kind, &id.segments(), id.nat.as_deref().unwrap_or(&id.name))
    }

    /// The compute (`/compute/v1/…`) or IAM (`/v1/…`) URL of a path.
    fn url_of(&self, kind: Kind, segments: &[&str], target: &str) -> Result<Url, CloudError> {
        let joined = if kind == Kind::ServiceAccounts {
            join(&self.iam, &[&["v1"], segments].concat())
        } else {
            join(&self.compute, &[&["compute", "v1"], segments].concat())
        };
        joined.map_err(|m| rejected(target, 400, "invalid", m))
    }

    /// The request's headers from the credentials (`Authorization: Bearer …`; none when anonymous).
    async fn auth_headers(&self, target: &str) -> Result<HeaderMap, CloudError> {
        let got = tokio::time::timeout(self.opts.request_timeout, self.creds.headers(Default::default()))
            .await
            .map_err(|_| CloudError::Timeout { target: target.to_string() })?;
        match got {
            Ok(CacheableResource::New { data, .. }) => {
                if let Some(token) = data.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) {
                    let token = token.strip_prefix("Bearer ").unwrap_or(token).to_string();
                    *self.last_token.lock().unwrap_or_else(PoisonError::into_inner) = token;
                }
                Ok(data)
            }
            Ok(CacheableResource::NotModified) => Err(CloudError::Unreachable {
                target: target.to_string(),
                message: "the credentials gave no request headers; try again".into(),
            }),
            Err(e) => {
                let message = format!(
                    "could not get an access token with the service-account key ({}); check the key and its account",
                    trellis_http::snippet(&e.to_string(), &[])
                );
                Err(if e.is_transient() {
                    CloudError::Unreachable { target: target.to_string(), message }
                } else {
                    rejected(target, 401, "UNAUTHENTICATED", message)
                })
            }
        }
    }

    /// One request, its answer read up to the limit; `timeout` bounds it from connecting to the
    /// last byte. Redirects are refused; no status is an error here.
    async fn call(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
        target: &str,
        timeout: Duration,
    ) -> Result<Answer, CloudError> {
        let headers = self.auth_headers(target).await?;
        let mut req =
            self.http.request(method, url).headers(headers).header(ACCEPT, "application/json").timeout(timeout);
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req.send().await.map_err(|e| transport_error(target, &e))?;
        if resp.status().is_redirection() {
            return Err(redirect_error(target, resp.status().as_u16(), resp.headers(), ENDPOINT_SETTING));
        }
        let (status, headers, body) = read_capped(resp, target, self.opts.response_limit).await?;
        Ok(Answer { status, headers, body })
    }

    async fn request(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
        target: &str,
    ) -> Result<Answer, CloudError> {
        self.call(method, url, body, target, self.opts.request_timeout).await
    }

    /// A compute write (POST / PATCH / DELETE with a `requestId`), then its operation.
    async fn write_op(
        &self,
        method: Method,
        mut url: Url,
        body: Option<&Value>,
        target: &str,
        id: &Id,
        sent: Option<&str>,
    ) -> Result<(), CloudError> {
        url.query_pairs_mut().append_pair("requestId", &request_id());
        let answer = self.request(method, url, body, target).await?;
        if !answer.status.is_success() {
            return Err(self.response_error(target, &answer, sent));
        }
        let op = answer.json(target)?;
        self.finish(target, id, op, sent).await
    }

    /// Polls an operation until it is DONE (within `operation_timeout`, never faster than
    /// [`MIN_POLL_WAIT`]) and turns a failed one into its error.
    async fn finish(&self, target: &str, id: &Id, mut op: Value, sent: Option<&str>) -> Result<(), CloudError> {
        let deadline = Instant::now() + self.opts.operation_timeout;
        let mut wait = self.opts.poll_interval.clamp(MIN_POLL_WAIT, MAX_POLL_WAIT);
        let mut failures = 0;
        while op.get("status").and_then(Value::as_str) != Some("DONE") {
            let Some(name) = op.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).map(str::to_string)
            else {
                return Err(bad_answer(target, StatusCode::OK, "an operation without a `name`"));
            };
            let now = Instant::now();
            if now + wait >= deadline {
                return Err(CloudError::Timeout { target: target.to_string() });
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_POLL_WAIT);
            let mut segments = id.scope_segments();
            segments.extend(["operations", name.as_str()]);
            let url = self.url_of(id.kind, &segments, target)?;
            let left = deadline.saturating_duration_since(Instant::now()).max(MIN_POLL_WAIT);
            let polled = match self.call(Method::GET, url, None, target, self.opts.request_timeout.min(left)).await {
                Ok(a) if a.status.is_success() => a.json(target),
                Ok(a) => Err(self.response_error(target, &a, None)),
                Err(e) => Err(e),
            };
            match polled {
                Ok(next) => {
                    if next.get("name").and_then(Value::as_str) != Some(name.as_str()) {
                        return Err(rejected(
                            target,
                            502,
                            "WrongResource",
                            format!("GCE answered the poll of operation '{name}' with another object; check that {ENDPOINT_SETTING} is GCE itself"),
                        ));
                    }
                    op = next;
                    failures = 0;
                }
                Err(e) if e.is_transient() && failures < POLL_RETRIES => failures += 1,
                Err(e) => return Err(e),
            }
        }
        match operation_error(target, &op) {
            Some(CloudError::PreconditionFailed { target, .. }) => {
                Err(CloudError::PreconditionFailed { target, expected: sent.unwrap_or("none").to_string() })
            }
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// GET of a whole resource (a NAT id reads its router), through the kind's model.
    async fn get_resource(&self, target: &str, id: &Id) -> Result<Option<Value>, CloudError> {
        let answer = self.request(Method::GET, self.url(id)?, None, target).await?;
        match answer.status {
            StatusCode::NOT_FOUND => Ok(None),
            s if s.is_success() => {
                let doc = answer.json(target)?;
                let path = id.path();
                answered_for(target, id.kind, &doc, |answered| answered == path)?;
                id.kind.through_model(doc).map(Some).map_err(|e| {
                    bad_answer(target, s, &format!("a body that is not a GCE {} ({e})", id.kind.collection()))
                })
            }
            _ => Err(self.response_error(target, &answer, None)),
        }
    }

    /// Our body as the API takes it (through the kind's model), or `Rejected`.
    fn wire_body(target: &str, kind: Kind, body: Value) -> Result<Value, CloudError> {
        kind.through_model(body)
            .map_err(|e| rejected(target, 400, "invalid", format!("the body is not a valid GCE resource: {e}")))
    }

    async fn insert(&self, target: &str, id: &Id, body: Value) -> Result<(), CloudError> {
        let p = &id.project;
        if id.kind == Kind::ServiceAccounts {
            // IAM answers the account itself (no operation); the account id is the email's
            // local part.
            let suffix = format!("@{p}.iam.gserviceaccount.com");
            let Some(account_id) = id.name.strip_suffix(&suffix) else {
                return Err(rejected(
                    target,
                    400,
                    "invalid",
                    format!("a service account of project '{p}' is named <id>{suffix}"),
                ));
            };
            let mut body = body;
            if let Some(o) = body.as_object_mut() {
                o.remove("name");
            }
            let account = Self::wire_body(target, id.kind, body)?;
            let request = json!({"accountId": account_id, "serviceAccount": account});
            let url = self.url_of(
                id.kind,
                &id.scope_segments().into_iter().chain(["serviceAccounts"]).collect::<Vec<_>>(),
                target,
            )?;
            let answer = self.request(Method::POST, url, Some(&request), target).await?;
            if !answer.status.is_success() {
                return Err(self.response_error(target, &answer, None));
            }
            let path = id.path();
            return answered_for(target, id.kind, &answer.json(target)?, |answered| answered == path);
        }
        let body = Self::wire_body(target, id.kind, body)?;
        let mut segments = id.scope_segments();
        segments.push(id.kind.collection());
        let url = self.url_of(id.kind, &segments, target)?;
        self.write_op(Method::POST, url, Some(&body), target, id, None).await
    }

    /// PATCH with `body` (which carries the fingerprint `sent`).
    async fn patch(&self, target: &str, id: &Id, body: Value, sent: &str) -> Result<(), CloudError> {
        let s = Some(sent);
        match id.kind {
            Kind::Networks | Kind::Firewalls | Kind::Subnetworks | Kind::Routers => {
                let body = Self::wire_body(target, id.kind, body)?;
                self.write_op(Method::PATCH, self.url(id)?, Some(&body), target, id, s).await
            }
            Kind::ServiceAccounts => {
                // IAM's PATCH names the fields it changes; only these two can change.
                let mask: Vec<&str> =
                    ["displayName", "description"].into_iter().filter(|f| body.get(*f).is_some()).collect();
                let mut body = body;
                if let Some(o) = body.as_object_mut() {
                    o.insert("name".into(), json!(account_name(id)));
                }
                let account = Self::wire_body(target, id.kind, body)?;
                let request = json!({"serviceAccount": account, "updateMask": mask.join(",")});
                let answer = self.request(Method::PATCH, self.url(id)?, Some(&request), target).await?;
                if !answer.status.is_success() {
                    return Err(self.response_error(target, &answer, s));
                }
                let path = id.path();
                answered_for(target, id.kind, &answer.json(target)?, |answered| answered == path)
            }
            Kind::Routes | Kind::Addresses => Err(rejected(
                target,
                400,
                "immutable",
                "routes and addresses cannot be changed in place; delete and re-create them",
            )),
        }
    }

    /// DELETE; 404 is done.
    async fn delete_resource(&self, target: &str, id: &Id) -> Result<(), CloudError> {
        let done = if id.kind == Kind::ServiceAccounts {
            let answer = self.request(Method::DELETE, self.url(id)?, None, target).await?;
            match answer.status {
                s if s.is_success() => Ok(()),
                _ => Err(self.response_error(target, &answer, None)),
            }
        } else {
            self.write_op(Method::DELETE, self.url(id)?, None, target, id, None).await
        };
        match done {
            Err(CloudError::Rejected { status: 404, .. }) => Ok(()),
            other => other,
        }
    }

    /// Every item of the collection `parent/rtype` (`projects/P/global` + `firewalls`, …) matching
    /// the GCE `filter` (`name eq "fw-.*"`, `network = "…"`): one list call per page.
    pub async fn list_filtered(
        &self,
        parent: &str,
        rtype: &str,
        filter: Option<&str>,
    ) -> Result<Vec<Value>, CloudError> {
        self.list_unredacted(parent, rtype, filter).await.map_err(|e| self.redacted(e))
    }

    async fn list_unredacted(&self, parent: &str, rtype: &str, filter: Option<&str>) -> Result<Vec<Value>, CloudError> {
        let parent_path = parent.strip_prefix(COMPUTE_URL).unwrap_or(parent).trim_matches('/');
        let target = format!("{parent_path}/{rtype}");
        let segs: Vec<&str> = parent_path.split('/').collect();
        let kind = match (segs.as_slice(), Kind::of(rtype)) {
            (["projects", p], Some(Kind::ServiceAccounts)) if !p.is_empty() => Kind::ServiceAccounts,
            (["projects", p, "global"], Some(k)) if !p.is_empty() && !k.regional() && k != Kind::ServiceAccounts => k,
            (["projects", p, "regions", r], Some(k)) if !p.is_empty() && !r.is_empty() && k.regional() => k,
            _ => {
                return Err(rejected(
                    &target,
                    400,
                    "invalid",
                    "not a GCE collection this client lists: expected projects/P/global + networks|firewalls|routes, \
                     projects/P/regions/R + subnetworks|routers|addresses or projects/P + serviceAccounts",
                ))
            }
        };
        let t = target.as_str();
        let filter = filter.unwrap_or_default();
        let iam = kind == Kind::ServiceAccounts;
        if iam && !filter.is_empty() {
            return Err(rejected(t, 400, "invalid", "IAM's service account list takes no filter"));
        }
        let mut segments = segs.clone();
        segments.push(kind.collection());
        let base = self.url_of(kind, &segments, t)?;
        let max = self.opts.page_size.unwrap_or(if iam { 100 } else { 500 }).to_string();
        let under = format!("{}/", segments.join("/"));
        let items_field = if iam { "accounts" } else { "items" };
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = base.clone();
            {
                let mut q = url.query_pairs_mut();
                q.append_pair(if iam { "pageSize" } else { "maxResults" }, &max);
                if !filter.is_empty() {
                    q.append_pair("filter", filter);
                }
                if let Some(token) = &token {
                    q.append_pair("pageToken", token);
                }
            }
            let answer = self.request(Method::GET, url, None, t).await?;
            if !answer.status.is_success() {
                return Err(self.response_error(t, &answer, None));
            }
            let mut page = answer.json(t)?;
            match page.get_mut(items_field).map(Value::take) {
                Some(Value::Array(items)) => {
                    for item in items {
                        answered_for(t, kind, &item, |answered| {
                            answered.strip_prefix(&under).is_some_and(|name| !name.is_empty() && !name.contains('/'))
                        })?;
                        out.push(kind.through_model(item).map_err(|e| {
                            bad_answer(t, answer.status, &format!("a list item that is not a GCE {rtype} ({e})"))
                        })?);
                    }
                }
                Some(Value::Null) | None => {}
                Some(_) => {
                    return Err(bad_answer(t, answer.status, &format!("a list whose `{items_field}` is not an array")))
                }
            }
            match page.get("nextPageToken").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                Some(next) if token.as_deref() == Some(next) => {
                    return Err(bad_answer(t, answer.status, "the same nextPageToken twice (a paging loop)"))
                }
                Some(next) => token = Some(next.to_string()),
                None => return Ok(out),
            }
        }
        Err(bad_answer(t, StatusCode::OK, &format!("a list that did not end after {MAX_PAGES} pages")))
    }

    /// Writes one NAT entry of a router (`entry: None` drops it) under the router's fingerprint
    /// (`expected`, else the current one), leaving the router's other NATs as they are.
    async fn write_nat(
        &self,
        target: &str,
        id: &Id,
        nat: &str,
        entry: Option<Value>,
        expected: Option<&str>,
    ) -> Result<(), CloudError> {
        let router_id = Id { nat: None, ..id.clone() };
        let Some(router) = self.get_resource(target, &router_id).await? else {
            if entry.is_none() && expected.is_none() {
                return Ok(());
            }
            return Err(rejected(
                target,
                404,
                "notFound",
                format!("the router '{}' of this NAT does not exist; create the router first", id.name),
            ));
        };
        // A router has no `fingerprint` in compute v1: under a precondition, the entry as read right
        // before the PATCH must be the version the caller read (its content version).
        if let Some(expected) = expected {
            let entry = router
                .get("nats")
                .and_then(Value::as_array)
                .and_then(|n| n.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(nat)));
            let pre = Precondition::IfMatch(expected.to_string());
            if entry.map(|e| GceIds.precondition(e)).as_ref() != Some(&pre) {
                return Err(CloudError::PreconditionFailed {
                    target: target.to_string(),
                    expected: expected.to_string(),
                });
            }
        }
        let mut nats: Vec<Value> = router.get("nats").and_then(Value::as_array).cloned().unwrap_or_default();
        let at = nats.iter().position(|n| n.get("name").and_then(Value::as_str) == Some(nat));
        match (at, entry) {
            (Some(i), Some(e)) => nats[i] = e,
            (None, Some(e)) => nats.push(e),
            (Some(i), None) => {
                nats.remove(i);
            }
            (None, None) => return Ok(()),
        }
        let body = json!({"name": id.name, "nats": nats});
        self.patch(target, &router_id, body, expected.unwrap_or("none")).await
    }

    async fn get_nat(&self, target: &str, id: &Id, nat: &str) -> Result<Option<Value>, CloudError> {
        let router = self.get_resource(target, &Id { nat: None, ..id.clone() }).await?;
        Ok(router.and_then(|r| {
            r.get("nats")?.as_array()?.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(nat)).cloned()
        }))
    }

    async fn read_back(&self, target: &str, id: &Id) -> Result<Value, CloudError> {
        let got = match &id.nat {
            Some(nat) => self.get_nat(target, id, nat).await?,
            None => self.get_resource(target, id).await?,
        };
        got.ok_or_else(|| CloudError::Server {
            target: target.to_string(),
            status: 500,
            message: "the written resource is gone right after the write".into(),
        })
    }
}

/// A service account's resource name, `projects/P/serviceAccounts/EMAIL`.
fn account_name(id: &Id) -> String {
    format!("projects/{}/serviceAccounts/{}", id.project, id.name)
}

/// The field holding a resource's version: IAM's `etag`, compute's `fingerprint`.
fn version_field(id: &Id) -> &'static str {
    if id.kind == Kind::ServiceAccounts {
        "etag"
    } else {
        "fingerprint"
    }
}

/// The body with `name` set to the id's name (a different `name` in the body is refused).
fn named(target: &str, mut body: Value, name: &str) -> Result<Value, CloudError> {
    let Some(obj) = body.as_object_mut() else {
        return Err(rejected(target, 400, "invalid", "the request body must be a JSON object"));
    };
    match obj.get("name").and_then(Value::as_str) {
        Some(n) if n != name => {
            return Err(rejected(target, 400, "invalid", format!("the body's name '{n}' is not the id's '{name}'")))
        }
        _ => {
            obj.insert("name".into(), json!(name));
        }
    }
    Ok(body)
}

/// The most bytes read of a service-account key file (~2.3 KB): a path that names something else
/// (`/dev/zero`, a log) stops here instead of filling memory.
const MAX_KEY_FILE: u64 = 1 << 20;

/// The credentials, and the key's secrets to redact from errors (its `private_key_id` and every
/// line of its private key).
fn credentials(
    creds: &Credentials,
) -> Result<(google_cloud_auth::credentials::Credentials, Vec<String>), GcpClientError> {
    let path = match creds {
        Credentials::Anonymous => {
            return Ok((google_cloud_auth::credentials::anonymous::Builder::new().build(), Vec::new()))
        }
        Credentials::KeyFile(p) => p.clone(),
        Credentials::FromEnv => match std::env::var_os(CREDENTIALS_ENV) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => return Err(GcpClientError::NoCredentials),
        },
    };
    let shown = path.display().to_string();
    use std::io::Read as _;
    let mut text = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_KEY_FILE + 1).read_to_end(&mut text))
        .map_err(|e| GcpClientError::KeyUnreadable { path: shown.clone(), message: e.kind().to_string() })?;
    let invalid = |m: &str| GcpClientError::KeyInvalid { path: shown.clone(), message: m.to_string() };
    if text.len() as u64 > MAX_KEY_FILE {
        return Err(invalid("larger than 1 MiB, which no key file is"));
    }
    // serde_json's messages name a line and column, never the text.
    let key: Value = serde_json::from_slice(&text).map_err(|_| invalid("not JSON"))?;
    if key.get("type").and_then(Value::as_str) != Some("service_account") {
        return Err(invalid("its \"type\" is not \"service_account\""));
    }
    for field in ["client_email", "private_key"] {
        if key.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(invalid(&format!("field \"{field}\" is missing")));
        }
    }
    let mut secrets: Vec<String> = key
        .get("private_key")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----") && l.len() >= trellis_http::redact::MIN_LITERAL_LEN)
        .map(str::to_string)
        .collect();
    if let Some(id) = key.get("private_key_id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        secrets.push(id.to_string());
    }
    let built = google_cloud_auth::credentials::service_account::Builder::new(key)
        .build()
        .map_err(|_| invalid("the private key cannot be loaded (expected a PEM PKCS#8 RSA key)"))?;
    Ok((built, secrets))
}

impl GcpClient {
    async fn get_unredacted(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let parsed = parse_id(id)?;
        match &parsed.nat {
            Some(nat) => self.get_nat(id, &parsed, nat).await,
            None => self.get_resource(id, &parsed).await,
        }
    }

    /// Insert with a `requestId`, wait for the operation, read back. A 409 is success only when
    /// what exists is what we asked for.
    async fn create_unredacted(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let parsed = parse_id(id)?;
        if let Some(nat) = &parsed.nat {
            let body = named(id, body, nat)?;
            if let Some(have) = self.get_nat(id, &parsed, nat).await? {
                return if ours(&body, &have) {
                    Ok(have)
                } else {
                    Err(CloudError::AlreadyExists { target: id.to_string(), status: 409 })
                };
            }
            self.write_nat(id, &parsed, nat, Some(body), None).await?;
            return self.read_back(id, &parsed).await;
        }
        let body = named(id, body, &parsed.name)?;
        match self.insert(id, &parsed, body.clone()).await {
            Ok(()) => self.read_back(id, &parsed).await,
            Err(CloudError::AlreadyExists { target, status }) => match self.get_resource(id, &parsed).await? {
                Some(have) if ours(&body, &have) => Ok(have),
                _ => Err(CloudError::AlreadyExists { target, status }),
            },
            Err(e) => Err(e),
        }
    }

    /// PATCH under the fingerprint of `pre` (without one: the current one; a missing resource is
    /// then created), then read back.
    async fn update_unredacted(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        let parsed = parse_id(id)?;
        let expected = match pre {
            Precondition::IfMatch(v) => Some(v.as_str()),
            Precondition::None => None,
        };
        if let Some(nat) = &parsed.nat {
            let body = named(id, body, nat)?;
            self.write_nat(id, &parsed, nat, Some(body), expected).await?;
            return self.read_back(id, &parsed).await;
        }
        // Read first: on GCE only some kinds carry a `fingerprint` (subnetworks do; networks,
        // routers and firewalls do not), and a body must not carry a field its kind lacks. Where
        // the resource shows one, the precondition is checked here and again by GCE on the PATCH;
        // where it shows none, this read right before the PATCH must have the content version the
        // caller read (`GceIds::content_version`): GCE offers no conditional PATCH for those kinds,
        // so a change made between this GET and the PATCH is the one window left.
        let Some(have) = self.get_resource(id, &parsed).await? else {
            return match expected {
                Some(v) => Err(CloudError::PreconditionFailed { target: id.to_string(), expected: v.to_string() }),
                None => self.create_unredacted(id, body).await,
            };
        };
        let mut body = named(id, body, &parsed.name)?;
        let field = version_field(&parsed);
        let sent = match (have.get(field).and_then(Value::as_str), expected) {
            (Some(current), Some(v)) if current != v => {
                return Err(CloudError::PreconditionFailed { target: id.to_string(), expected: v.to_string() })
            }
            (Some(current), _) => {
                body[field] = json!(current);
                current.to_string()
            }
            (None, Some(v)) if GceIds.precondition(&have) != Precondition::IfMatch(v.to_string()) => {
                return Err(CloudError::PreconditionFailed { target: id.to_string(), expected: v.to_string() })
            }
            (None, v) => {
                if let Some(obj) = body.as_object_mut() {
                    obj.remove(field);
                }
                v.unwrap_or("none").to_string()
            }
        };
        self.patch(id, &parsed, body, &sent).await?;
        self.read_back(id, &parsed).await
    }

    /// Delete; a missing resource is fine without a precondition, 412 with one (GCE's delete takes
    /// no fingerprint: it is checked with a GET first).
    async fn remove_unredacted(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        let parsed = parse_id(id)?;
        let expected = match pre {
            Precondition::IfMatch(v) => Some(v.as_str()),
            Precondition::None => None,
        };
        if let Some(nat) = &parsed.nat {
            return self.write_nat(id, &parsed, nat, None, expected).await;
        }
        if let Some(expected) = expected {
            let have = self.get_resource(id, &parsed).await?;
            let field = version_field(&parsed);
            let version = have.as_ref().map(|h| match h.get(field).and_then(Value::as_str) {
                Some(v) => Precondition::IfMatch(v.to_string()),
                None => GceIds.precondition(h),
            });
            if version != Some(Precondition::IfMatch(expected.to_string())) {
                return Err(CloudError::PreconditionFailed { target: id.to_string(), expected: expected.to_string() });
            }
        }
        self.delete_resource(id, &parsed).await
    }
}

// Every error leaves the client through these impls (and `list_filtered`), redacted: the work is
// done by the inherent `*_unredacted` methods above.
#[async_trait]
impl CloudRead for GcpClient {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        self.get_unredacted(id).await.map_err(|e| self.redacted(e))
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.list_filtered(parent, rtype, None).await
    }

    /// GCE's list `filter` ([`ListFilter::gce_expression`]): only what passes is paged through.
    async fn list_where(&self, parent: &str, rtype: &str, filter: &ListFilter) -> Result<Vec<Value>, CloudError> {
        self.list_filtered(parent, rtype, Some(&filter.gce_expression())).await
    }
}

#[async_trait]
impl CloudWrite for GcpClient {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        self.create_unredacted(id, body).await.map_err(|e| self.redacted(e))
    }

    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        self.update_unredacted(id, body, pre).await.map_err(|e| self.redacted(e))
    }

    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        self.remove_unredacted(id, pre).await.map_err(|e| self.redacted(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_relative_and_full() {
        let id = parse_id("projects/p/regions/r1/routers/rt/nats/n1").unwrap();
        assert_eq!((id.kind, id.name.as_str(), id.nat.as_deref()), (Kind::Routers, "rt", Some("n1")));
        let id = parse_id(&format!("{COMPUTE_URL}projects/p/global/networks/vpc")).unwrap();
        assert_eq!((id.kind, id.region.as_str()), (Kind::Networks, ""));
        assert!(parse_id("projects/p/global/subnetworks/x").is_err());
        let id = parse_id("projects/p/serviceAccounts/a@p.iam.gserviceaccount.com").unwrap();
        assert_eq!((id.kind, id.name.as_str()), (Kind::ServiceAccounts, "a@p.iam.gserviceaccount.com"));
        assert!(parse_id("projects/p/global/serviceAccounts/a").is_err());
        assert!(parse_id("projects/p/zones/z/instances/i").is_err());
    }

    #[test]
    fn ours_accepts_full_url_references_and_refuses_other_values() {
        let sent = json!({"name": "s", "network": "projects/p/global/networks/v", "ipCidrRange": "10.0.0.0/24"});
        let have = json!({"name": "s", "network": format!("{COMPUTE_URL}projects/p/global/networks/v"),
            "ipCidrRange": "10.0.0.0/24", "id": "123"});
        assert!(ours(&sent, &have));
        let stranger = json!({"name": "s", "network": format!("{COMPUTE_URL}projects/p/global/networks/v"),
            "ipCidrRange": "10.9.0.0/24"});
        assert!(!ours(&sent, &stranger));
    }
}
