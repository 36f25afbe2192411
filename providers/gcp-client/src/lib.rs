//! The real GCP client: trellis' [`CloudRead`] / [`CloudWrite`] for GCE, through the official
//! `google-cloud-compute-v1` clients (and `google-cloud-iam-admin-v1` for service accounts; rustls
//! with ring, no aws-lc), signed in with a service-account key through `google-cloud-auth`.
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
//! | `list` | the collection's list, every page (`list_filtered` takes a GCE filter) |
//! | `create` | insert with a `requestId`, wait for the operation, look inside it for an error; a 409 is success only when the existing resource equals the body ("ours") |
//! | `update` | patch with the fingerprint (of the precondition, else the current one); 412 = [`CloudError::PreconditionFailed`]; routes and addresses cannot be patched |
//! | `remove` | delete with a `requestId` (404 = done); under a precondition the fingerprint is checked with a GET first |
//! | NAT writes | GET the router, replace / add / drop that one `nats[]` entry, patch the router under its fingerprint |
//!
//! Every call is retried on 429 and 5xx and on connection errors, with exponential backoff (gax
//! policies); writes are safe to retry because each carries a `requestId`. Errors keep their class
//! and never contain the key: the client only reports HTTP statuses and the server's messages.

use async_trait::async_trait;
use google_cloud_compute_v1::client::{Addresses, Firewalls, Networks, Routers, Routes, Subnetworks};
use google_cloud_compute_v1::model::{Address, Firewall, Network, Operation, Route, Router, Subnetwork};
use google_cloud_gax::error::Error as GaxError;
use google_cloud_gax::exponential_backoff::ExponentialBackoffBuilder;
use google_cloud_gax::paginator::ItemPaginator as _;
use google_cloud_gax::retry_policy::{RetryPolicy, RetryPolicyExt as _};
use google_cloud_gax::retry_result::RetryResult;
use google_cloud_gax::retry_state::RetryState;
use google_cloud_iam_admin_v1::model::ServiceAccount;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};

pub use url::Url;

/// The compute API's URL prefix of selfLinks.
pub const COMPUTE_URL: &str = "https://www.googleapis.com/compute/v1/";

/// The environment variable naming the service-account key file.
pub const CREDENTIALS_ENV: &str = "GOOGLE_APPLICATION_CREDENTIALS";

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
    /// First backoff delay between retries and between operation polls.
    pub backoff_initial: Duration,
    /// Largest backoff delay.
    pub backoff_max: Duration,
    /// Attempts per call (first one included) on 429 / 5xx / connection errors.
    pub attempts: u32,
    /// How long to wait for one operation to be DONE.
    pub operation_timeout: Duration,
    /// `maxResults` of list pages; `None`: the server's default (500).
    pub page_size: Option<u32>,
}

impl Default for GcpOptions {
    fn default() -> Self {
        GcpOptions {
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            attempts: 8,
            operation_timeout: Duration::from_secs(600),
            page_size: None,
        }
    }
}

/// Retries what GCE says may succeed later: 429, 5xx, timeouts and connection errors — for every
/// method, since writes carry a `requestId` (GCE deduplicates them). Everything else is final.
#[derive(Debug)]
struct Transient;

impl RetryPolicy for Transient {
    fn on_error(&self, _state: &RetryState, error: GaxError) -> RetryResult {
        let retry = error.is_transient_and_before_rpc()
            || error.is_io()
            || error.is_timeout()
            || error.http_status_code().is_some_and(|s| s == 429 || s >= 500);
        if retry {
            RetryResult::Continue(error)
        } else {
            RetryResult::Permanent(error)
        }
    }
}

/// The real GCE client of one project.
#[derive(Clone, Debug)]
pub struct GcpClient {
    project: String,
    opts: GcpOptions,
    networks: Networks,
    subnetworks: Subnetworks,
    routers: Routers,
    firewalls: Firewalls,
    routes: Routes,
    addresses: Addresses,
    iam: google_cloud_iam_admin_v1::client::Iam,
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

fn valid_project(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 63
        && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' || c == ':')
}

/// A gax error as trellis' class. `sent` is the fingerprint a conditional write carried.
fn classify(target: &str, e: &GaxError, sent: Option<&str>) -> CloudError {
    let target_s = target.to_string();
    let message = e.status().map(|s| s.message.clone()).filter(|m| !m.is_empty());
    if let Some(status) = e.http_status_code() {
        let code = e.status().map(|s| s.code.name().to_string()).unwrap_or_else(|| format!("HTTP{status}"));
        let message = message.unwrap_or_else(|| format!("HTTP {status}"));
        return match status {
            409 if code == "ALREADY_EXISTS" || message.contains("already exists") => {
                CloudError::AlreadyExists { target: target_s, status }
            }
            409 => CloudError::Conflict { target: target_s, code, message },
            412 => CloudError::PreconditionFailed { target: target_s, expected: sent.unwrap_or("none").to_string() },
            429 => CloudError::Throttled { target: target_s, retry_after: None },
            s if s >= 500 => CloudError::Server { target: target_s, status: s, message },
            s => CloudError::Rejected { target: target_s, status: s, code, message },
        };
    }
    if e.is_timeout() {
        return CloudError::Timeout { target: target_s };
    }
    if e.is_authentication() {
        return CloudError::Unreachable {
            target: target_s,
            message: "could not get an access token with the service-account key; check the key and its account".into(),
        };
    }
    if e.is_io() || e.is_connect() || e.is_transport() || e.is_exhausted() {
        return CloudError::Unreachable { target: target_s, message: "the GCE endpoint did not answer".into() };
    }
    if e.is_deserialization() {
        return CloudError::Server { target: target_s, status: 200, message: "the answer is not GCE JSON".into() };
    }
    CloudError::Unreachable { target: target_s, message: message.unwrap_or_else(|| "the call failed".into()) }
}

/// The error a finished operation reports, if it failed (DONE with `error.errors[]` or
/// `httpErrorStatusCode`): GCE answers such a write with 200.
fn operation_error(target: &str, op: &Operation) -> Option<CloudError> {
    let v = serde_json::to_value(op).ok()?;
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
        .unwrap_or("the operation failed");
    let target = target.to_string();
    Some(match status {
        409 if code == "RESOURCE_ALREADY_EXISTS" || code == "alreadyExists" => {
            CloudError::AlreadyExists { target, status }
        }
        412 => CloudError::PreconditionFailed { target, expected: "none".into() },
        429 => CloudError::Throttled { target, retry_after: None },
        s if s >= 500 => CloudError::Server { target, status: s, message: format!("{code}: {message}") },
        s => CloudError::Rejected { target, status: s, code: code.to_string(), message: message.to_string() },
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

fn to_model<T: serde::de::DeserializeOwned>(target: &str, body: Value) -> Result<T, CloudError> {
    serde_json::from_value(body)
        .map_err(|e| rejected(target, 400, "invalid", format!("the body is not a valid GCE resource: {e}")))
}

fn to_json<T: serde::Serialize>(target: &str, v: &T) -> Result<Value, CloudError> {
    serde_json::to_value(v).map_err(|e| CloudError::Server {
        target: target.to_string(),
        status: 200,
        message: format!("cannot read the answer: {e}"),
    })
}

fn request_id() -> String {
    uuid::Uuid::new_v4().to_string()
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
            let loopback = match url.host() {
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                Some(url::Host::Domain(d)) => d == "localhost",
                None => false,
            };
            let signed = !matches!(creds, Credentials::Anonymous);
            if url.scheme() != "https" && !(url.scheme() == "http" && loopback) && signed {
                return Err(GcpClientError::PlainHttp(url.to_string()));
            }
        }
        let credentials = credentials(&creds)?;
        let endpoint_s = endpoint.as_ref().map(|u| u.as_str().trim_end_matches('/').to_string());
        let shown = endpoint_s.clone().unwrap_or_else(|| "https://compute.googleapis.com".into());
        let build_err =
            |e: &dyn std::fmt::Display| GcpClientError::Build { endpoint: shown.clone(), message: e.to_string() };
        let backoff = || {
            ExponentialBackoffBuilder::new()
                .with_initial_delay(opts.backoff_initial)
                .with_maximum_delay(opts.backoff_max)
                .build()
        };
        macro_rules! client {
            ($t:ty) => {{
                let mut b = <$t>::builder()
                    .with_credentials(credentials.clone())
                    .with_retry_policy(Transient.with_attempt_limit(opts.attempts.max(1)))
                    .with_backoff_policy(backoff().map_err(|e| build_err(&e))?)
                    .with_polling_backoff_policy(backoff().map_err(|e| build_err(&e))?);
                if let Some(e) = &endpoint_s {
                    b = b.with_endpoint(e.clone());
                }
                b.build().await.map_err(|e| build_err(&e))?
            }};
        }
        Ok(GcpClient {
            project: project.to_string(),
            networks: client!(Networks),
            subnetworks: client!(Subnetworks),
            routers: client!(Routers),
            firewalls: client!(Firewalls),
            routes: client!(Routes),
            addresses: client!(Addresses),
            iam: client!(google_cloud_iam_admin_v1::client::Iam),
            opts,
        })
    }

    /// The project this client writes.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// Waits for a write's operation and turns a failed one into its error.
    async fn finish<P>(&self, target: &str, poller: P, sent: Option<&str>) -> Result<(), CloudError>
    where
        P: google_cloud_lro::Poller<Operation, Operation>,
    {
        let op = match tokio::time::timeout(self.opts.operation_timeout, poller.until_done()).await {
            Err(_) => return Err(CloudError::Timeout { target: target.to_string() }),
            Ok(Err(e)) => return Err(classify(target, &e, sent)),
            Ok(Ok(op)) => op,
        };
        match operation_error(target, &op) {
            Some(CloudError::PreconditionFailed { target, .. }) => {
                Err(CloudError::PreconditionFailed { target, expected: sent.unwrap_or("none").to_string() })
            }
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// GET of a whole resource (a NAT id reads its router).
    async fn get_resource(&self, target: &str, id: &Id) -> Result<Option<Value>, CloudError> {
        let (p, r, n) = (&id.project, &id.region, &id.name);
        let got = match id.kind {
            Kind::Networks => {
                self.networks.get().set_project(p).set_network(n).send().await.map(|v| to_json(target, &v))
            }
            Kind::Firewalls => {
                self.firewalls.get().set_project(p).set_firewall(n).send().await.map(|v| to_json(target, &v))
            }
            Kind::Routes => self.routes.get().set_project(p).set_route(n).send().await.map(|v| to_json(target, &v)),
            Kind::Subnetworks => self
                .subnetworks
                .get()
                .set_project(p)
                .set_region(r)
                .set_subnetwork(n)
                .send()
                .await
                .map(|v| to_json(target, &v)),
            Kind::Routers => {
                self.routers.get().set_project(p).set_region(r).set_router(n).send().await.map(|v| to_json(target, &v))
            }
            Kind::Addresses => self
                .addresses
                .get()
                .set_project(p)
                .set_region(r)
                .set_address(n)
                .send()
                .await
                .map(|v| to_json(target, &v)),
            Kind::ServiceAccounts => {
                self.iam.get_service_account().set_name(account_name(id)).send().await.map(|v| to_json(target, &v))
            }
        };
        match got {
            Ok(v) => v.map(Some),
            Err(e) if e.http_status_code() == Some(404) => Ok(None),
            Err(e) => Err(classify(target, &e, None)),
        }
    }

    async fn insert(&self, target: &str, id: &Id, body: Value) -> Result<(), CloudError> {
        let (p, r, rid) = (&id.project, &id.region, request_id());
        match id.kind {
            Kind::Networks => {
                let b: Network = to_model(target, body)?;
                self.finish(
                    target,
                    self.networks.insert().set_project(p).set_body(b).set_request_id(rid).poller(),
                    None,
                )
                .await
            }
            Kind::Firewalls => {
                let b: Firewall = to_model(target, body)?;
                self.finish(
                    target,
                    self.firewalls.insert().set_project(p).set_body(b).set_request_id(rid).poller(),
                    None,
                )
                .await
            }
            Kind::Routes => {
                let b: Route = to_model(target, body)?;
                self.finish(target, self.routes.insert().set_project(p).set_body(b).set_request_id(rid).poller(), None)
                    .await
            }
            Kind::Subnetworks => {
                let b: Subnetwork = to_model(target, body)?;
                let call = self.subnetworks.insert().set_project(p).set_region(r).set_body(b).set_request_id(rid);
                self.finish(target, call.poller(), None).await
            }
            Kind::Routers => {
                let b: Router = to_model(target, body)?;
                let call = self.routers.insert().set_project(p).set_region(r).set_body(b).set_request_id(rid);
                self.finish(target, call.poller(), None).await
            }
            Kind::Addresses => {
                let b: Address = to_model(target, body)?;
                let call = self.addresses.insert().set_project(p).set_region(r).set_body(b).set_request_id(rid);
                self.finish(target, call.poller(), None).await
            }
            Kind::ServiceAccounts => {
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
                let b: ServiceAccount = to_model(target, body)?;
                let call =
                    self.iam.create_service_account().set_name(format!("projects/{p}")).set_account_id(account_id);
                call.set_service_account(b).send().await.map(|_| ()).map_err(|e| classify(target, &e, None))
            }
        }
    }

    /// PATCH with `body` (which carries the fingerprint `sent`).
    async fn patch(&self, target: &str, id: &Id, body: Value, sent: &str) -> Result<(), CloudError> {
        let (p, r, n, rid) = (&id.project, &id.region, &id.name, request_id());
        let s = Some(sent);
        match id.kind {
            Kind::Networks => {
                let b: Network = to_model(target, body)?;
                let call = self.networks.patch().set_project(p).set_network(n).set_body(b).set_request_id(rid);
                self.finish(target, call.poller(), s).await
            }
            Kind::Firewalls => {
                let b: Firewall = to_model(target, body)?;
                let call = self.firewalls.patch().set_project(p).set_firewall(n).set_body(b).set_request_id(rid);
                self.finish(target, call.poller(), s).await
            }
            Kind::Subnetworks => {
                let b: Subnetwork = to_model(target, body)?;
                let call = self
                    .subnetworks
                    .patch()
                    .set_project(p)
                    .set_region(r)
                    .set_subnetwork(n)
                    .set_body(b)
                    .set_request_id(rid);
                self.finish(target, call.poller(), s).await
            }
            Kind::Routers => {
                let b: Router = to_model(target, body)?;
                let call =
                    self.routers.patch().set_project(p).set_region(r).set_router(n).set_body(b).set_request_id(rid);
                self.finish(target, call.poller(), s).await
            }
            Kind::ServiceAccounts => {
                // IAM's PATCH names the fields it changes; only these two can change.
                let mask: Vec<&str> = [("displayName", "display_name"), ("description", "description")]
                    .into_iter()
                    .filter(|(json, _)| body.get(*json).is_some())
                    .map(|(_, path)| path)
                    .collect();
                let mut body = body;
                if let Some(o) = body.as_object_mut() {
                    o.insert("name".into(), json!(account_name(id)));
                }
                let b: ServiceAccount = to_model(target, body)?;
                let mask = google_cloud_wkt::FieldMask::default().set_paths(mask);
                let call = self.iam.patch_service_account().set_service_account(b).set_update_mask(mask);
                call.send().await.map(|_| ()).map_err(|e| classify(target, &e, s))
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
        let (p, r, n, rid) = (&id.project, &id.region, &id.name, request_id());
        let done = match id.kind {
            Kind::Networks => {
                self.finish(
                    target,
                    self.networks.delete().set_project(p).set_network(n).set_request_id(rid).poller(),
                    None,
                )
                .await
            }
            Kind::Firewalls => {
                let call = self.firewalls.delete().set_project(p).set_firewall(n).set_request_id(rid);
                self.finish(target, call.poller(), None).await
            }
            Kind::Routes => {
                self.finish(target, self.routes.delete().set_project(p).set_route(n).set_request_id(rid).poller(), None)
                    .await
            }
            Kind::Subnetworks => {
                let call = self.subnetworks.delete().set_project(p).set_region(r).set_subnetwork(n).set_request_id(rid);
                self.finish(target, call.poller(), None).await
            }
            Kind::Routers => {
                let call = self.routers.delete().set_project(p).set_region(r).set_router(n).set_request_id(rid);
                self.finish(target, call.poller(), None).await
            }
            Kind::Addresses => {
                let call = self.addresses.delete().set_project(p).set_region(r).set_address(n).set_request_id(rid);
                self.finish(target, call.poller(), None).await
            }
            Kind::ServiceAccounts => match self.iam.delete_service_account().set_name(account_name(id)).send().await {
                Err(e) if e.http_status_code() == Some(404) => Ok(()),
                other => other.map(|_| ()).map_err(|e| classify(target, &e, None)),
            },
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
        let parent_path = parent.strip_prefix(COMPUTE_URL).unwrap_or(parent).trim_matches('/');
        let target = format!("{parent_path}/{rtype}");
        let segs: Vec<&str> = parent_path.split('/').collect();
        let (p, r) =
            match (segs.as_slice(), Kind::of(rtype)) {
                (["projects", p], Some(Kind::ServiceAccounts)) => (p.to_string(), String::new()),
                (["projects", p, "global"], Some(k)) if !k.regional() && k != Kind::ServiceAccounts => {
                    (p.to_string(), String::new())
                }
                (["projects", p, "regions", r], Some(k)) if k.regional() => (p.to_string(), r.to_string()),
                _ => return Err(rejected(
                    &target,
                    400,
                    "invalid",
                    "not a GCE collection this client lists: expected projects/P/global + networks|firewalls|routes, \
                     projects/P/regions/R + subnetworks|routers|addresses or projects/P + serviceAccounts",
                )),
            };
        let filter = filter.unwrap_or_default().to_string();
        let max = self.opts.page_size.unwrap_or(500);
        let t = target.as_str();
        if Kind::of(rtype) == Some(Kind::ServiceAccounts) {
            if !filter.is_empty() {
                return Err(rejected(t, 400, "invalid", "IAM's service account list takes no filter"));
            }
            let size = i32::try_from(max).unwrap_or(100);
            let mut items =
                self.iam.list_service_accounts().set_name(format!("projects/{p}")).set_page_size(size).by_item();
            let mut out = Vec::new();
            while let Some(item) = items.next().await {
                out.push(to_json(t, &item.map_err(|e| classify(t, &e, None))?)?);
            }
            return Ok(out);
        }
        macro_rules! drain {
            ($list:expr) => {{
                let mut items = $list.set_filter(filter.clone()).set_max_results(max).by_item();
                let mut out = Vec::new();
                while let Some(item) = items.next().await {
                    out.push(to_json(t, &item.map_err(|e| classify(t, &e, None))?)?);
                }
                out
            }};
        }
        Ok(match Kind::of(rtype) {
            Some(Kind::Networks) => drain!(self.networks.list().set_project(&p)),
            Some(Kind::Firewalls) => drain!(self.firewalls.list().set_project(&p)),
            Some(Kind::Routes) => drain!(self.routes.list().set_project(&p)),
            Some(Kind::Subnetworks) => drain!(self.subnetworks.list().set_project(&p).set_region(&r)),
            Some(Kind::Routers) => drain!(self.routers.list().set_project(&p).set_region(&r)),
            Some(Kind::Addresses) => drain!(self.addresses.list().set_project(&p).set_region(&r)),
            Some(Kind::ServiceAccounts) | None => Vec::new(),
        })
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
        // GCE's routers carry no `fingerprint` (the simulator's do): one is sent only when the
        // router shows one, after the precondition was checked against it.
        let current = router.get("fingerprint").and_then(Value::as_str).map(str::to_string);
        if let (Some(current), Some(expected)) = (&current, expected) {
            if current != expected {
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
        let mut body = json!({"name": id.name, "nats": nats});
        if let Some(current) = &current {
            body["fingerprint"] = json!(current);
        }
        let sent = expected.map(str::to_string).or(current).unwrap_or_else(|| "none".into());
        self.patch(target, &router_id, body, &sent).await
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

fn credentials(creds: &Credentials) -> Result<google_cloud_auth::credentials::Credentials, GcpClientError> {
    let path = match creds {
        Credentials::Anonymous => return Ok(google_cloud_auth::credentials::anonymous::Builder::new().build()),
        Credentials::KeyFile(p) => p.clone(),
        Credentials::FromEnv => match std::env::var_os(CREDENTIALS_ENV) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => return Err(GcpClientError::NoCredentials),
        },
    };
    let shown = path.display().to_string();
    let text = std::fs::read(&path)
        .map_err(|e| GcpClientError::KeyUnreadable { path: shown.clone(), message: e.kind().to_string() })?;
    let invalid = |m: &str| GcpClientError::KeyInvalid { path: shown.clone(), message: m.to_string() };
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
    google_cloud_auth::credentials::service_account::Builder::new(key)
        .build()
        .map_err(|_| invalid("the private key cannot be loaded (expected a PEM PKCS#8 RSA key)"))
}

#[async_trait]
impl CloudRead for GcpClient {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let parsed = parse_id(id)?;
        match &parsed.nat {
            Some(nat) => self.get_nat(id, &parsed, nat).await,
            None => self.get_resource(id, &parsed).await,
        }
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.list_filtered(parent, rtype, None).await
    }
}

#[async_trait]
impl CloudWrite for GcpClient {
    /// Insert with a `requestId`, wait for the operation, read back. A 409 is success only when
    /// what exists is what we asked for.
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
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
    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
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
        // the resource shows one, the precondition is checked here and again by GCE on the PATCH.
        let Some(have) = self.get_resource(id, &parsed).await? else {
            return match expected {
                Some(v) => Err(CloudError::PreconditionFailed { target: id.to_string(), expected: v.to_string() }),
                None => self.create(id, body).await,
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
            (None, v) => v.unwrap_or("none").to_string(),
        };
        self.patch(id, &parsed, body, &sent).await?;
        self.read_back(id, &parsed).await
    }

    /// Delete; a missing resource is fine without a precondition, 412 with one (GCE's delete takes
    /// no fingerprint: it is checked with a GET first).
    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
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
            if have.as_ref().and_then(|h| h.get(field)).and_then(Value::as_str) != Some(expected) {
                return Err(CloudError::PreconditionFailed { target: id.to_string(), expected: expected.to_string() });
            }
        }
        self.delete_resource(id, &parsed).await
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
