//! The real Azure client: a hand-written ARM REST client implementing the engine's
//! [`CloudRead`] and [`CloudWrite`].
//!
//! The engine addresses resources by ARM id with generic JSON bodies, so a typed per-resource SDK is
//! a poor fit; and the generated `azure_mgmt_network` 0.21 is frozen and unofficial (see
//! `reference/rust-dependencies.md` §1). [`ArmClient`] speaks ARM REST directly over reqwest (rustls
//! with ring; no native TLS, no HTTP/2).
//!
//! # Calls
//! - `get(id)`: `GET {id}?api-version=…` — 200 → the body; 404 → `Ok(None)` (except
//!   `SubscriptionNotFound`, which is a wrong subscription, not a missing resource: `Rejected`).
//! - `list(parent, rtype)`: the direct children of that type — `{rg}/providers/{rtype}` under a
//!   resource group, `{resource}/{childType}` under a resource (`{vnet}/subnets`),
//!   `/subscriptions/{s}/resourcegroups` under a subscription — following `nextLink`.
//! - `create(id, body)`: `PUT` with `If-None-Match: *`; `update(id, body, pre)`: `PUT` with
//!   `If-Match: <etag>` when `pre` is `IfMatch` (none for `Precondition::None`). 200/201; when the
//!   answer carries `Azure-AsyncOperation` (or, on 201/202, `Location`) the operation is polled until
//!   it ends, and the resource is read back with a GET. Without one the response body is the resource
//!   (a GET when it is empty).
//! - `remove(id, pre)`: `DELETE` (with `If-Match` likewise): 200/204 done, 202 polled as above; 404 → `Ok`.
//! - A refused write — in the response or as its operation's failure — is classified by
//!   `CloudError::arm_refusal`: 412 on `If-None-Match` → `AlreadyExists`, 412 on `If-Match` →
//!   `PreconditionFailed`, 409 `AnotherOperationInProgress` → `Conflict` (transient: the engine retries
//!   it with backoff, where ARM's SDKs give up).
//!
//! # Long-running operations
//! Waits between polls come from `retry-after-ms`, `x-ms-retry-after-ms`, then `Retry-After`
//! (seconds or an HTTP date), 30 s when none is given (ARM's default), each at least 1 s and capped
//! at [`ArmClient::with_lro_poll_cap`] (default 10 s). An operation that is still running after
//! [`ArmClient::with_lro_timeout`] (default 30 min) is a `Timeout`. A poll that fails transiently
//! (429, 5xx, timeout) is retried up to 3 times in a row. `Failed` or `Canceled` becomes
//! `Rejected { status: 409, code, message }` with the operation's own error code and message (the
//! generated SDK drops them); a failure coded `InternalServerError`, `ServiceUnavailable` or
//! `RetryableError` is `Server { status: 500 }` instead, so the engine retries it. Polls carry the
//! bearer token only to the configured endpoint's origin; an operation URL elsewhere is refused.
//!
//! # Errors
//! 429 → `Throttled { retry_after }`; 408 and client-side timeouts → `Timeout`; 5xx →
//! `Server { message: "Code: message" }`; other 4xx → `Rejected { status, code, message }` from the
//! body `{"error": {"code", "message"}}` (or a top-level `{"code", "message"}`), else the
//! `x-ms-error-code` header. Transport failures (connection refused or reset) are `Unreachable`, an
//! unreadable answer `Server` with status 502: both transient, so the engine's retry policy applies.
//!
//! # Credentials on the wire
//! - **No redirects**: neither the credentials nor the ARM client follow one (a redirected request
//!   would carry the client secret, the federated token or the bearer token to wherever the answer
//!   points); a 3xx answer is a `Rejected` error `Redirected` naming its `Location`.
//! - **https only** ([`UrlRule`]): the authority and the ARM endpoint must be https, or plain http
//!   to a loopback address (127.0.0.0/8, ::1, `localhost`: test servers). Every URL the ARM client
//!   sends its token to (operation polls, `nextLink`) must be on the endpoint's own origin, so the
//!   same holds for them. Managed identity endpoints may also be plain http to a link-local address
//!   (IMDS at 169.254.169.254, App Service's `IDENTITY_ENDPOINT`), which never leaves the host.
//! - **Redaction** ([`redact`](fn@trellis_http::redact)): every error that leaves [`ArmClient`] or a credential has been
//!   redacted — `client_secret=`, `client_assertion=`, `access_token`/`refresh_token`/`id_token`
//!   (form or JSON), `Bearer …`, JWTs, passwords in URLs, and the literal secret, federated token,
//!   `IDENTITY_HEADER` or bearer token the request carried — so a server that echoes the request in
//!   its error cannot put a credential into a message, a log line or a file.
//!
//! # api-version
//! Per resource type: `Microsoft.Network/*` [`NETWORK_API_VERSION`], resource groups
//! [`RESOURCES_API_VERSION`], `Microsoft.ManagedIdentity/*` [`MANAGED_IDENTITY_API_VERSION`],
//! `Microsoft.Network/dnsZones/*` [`DNS_API_VERSION`], anything else [`DEFAULT_API_VERSION`];
//! [`ArmClient::with_api_version`] overrides any of them.
//!
//! # Azure DNS
//! [`dns::AzureDns`] puts Azure DNS's zones and record sets behind the engine's neutral DNS ids
//! (`/dns/zones/{zone}/records/{fqdn}/{TYPE}`) on top of an [`ArmClient`].
//!
//! # Crypto provider
//! reqwest 0.12's `rustls-tls` feature uses ring when no process-wide rustls provider is installed,
//! so nothing needs installing; a binary that also links a crate enabling aws-lc-rs still gets ring.

mod auth;
pub mod dns;

pub use auth::{
    ClientSecretCredential, EnvCredential, ManagedIdentityCredential, StaticToken, TokenSource,
    WorkloadIdentityCredential, ARM_SCOPE, DEFAULT_AUTHORITY, DEFAULT_IMDS_HOST, ENV_AUTHORITY_HOST,
    ENV_CLIENT_CERTIFICATE_PATH, ENV_CLIENT_ID, ENV_CLIENT_SECRET, ENV_FEDERATED_TOKEN_FILE, ENV_IDENTITY_ENDPOINT,
    ENV_IDENTITY_HEADER, ENV_IMDS_HOST, ENV_TENANT_ID, ENV_TOKEN_CREDENTIALS, JWT_BEARER,
};
pub use reqwest::Url;
use trellis_http::{read_capped, redirect_error, snippet, transport_error, MAX_RESPONSE_BYTES};
pub use trellis_http::{redact, retry_after, REDACTED};

use async_trait::async_trait;
use reqwest::header::{HeaderMap, ACCEPT, IF_MATCH, IF_NONE_MATCH, LOCATION};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition, Sent};
use trellis_planner::ids::ArmId;

/// The ARM endpoint of the public cloud.
pub const DEFAULT_ENDPOINT: &str = "https://management.azure.com";
/// `Microsoft.Network/*` (the version the reference's REST shapes were checked against).
pub const NETWORK_API_VERSION: &str = "2024-03-01";
/// Resource groups (`Microsoft.Resources/resourceGroups`).
pub const RESOURCES_API_VERSION: &str = "2021-04-01";
/// `Microsoft.ManagedIdentity/*`.
pub const MANAGED_IDENTITY_API_VERSION: &str = "2023-01-31";
/// Azure DNS (`Microsoft.Network/dnsZones` and its record sets): the version of Azure DNS's REST
/// reference (the DNS resource provider does not take the other Microsoft.Network versions).
pub const DNS_API_VERSION: &str = "2018-05-01";
/// Any other type: the generic Microsoft.Resources version; override it per type when a resource
/// provider does not offer it.
pub const DEFAULT_API_VERSION: &str = "2021-04-01";

/// ARM's wait between polls when the answer names none.
const DEFAULT_POLL_WAIT: Duration = Duration::from_secs(30);
/// The shortest wait between polls, whatever the answer asks for (`Retry-After: 0` polled ~22
/// times a second); lowered to the poll cap when that is smaller (tests).
const MIN_POLL_WAIT: Duration = Duration::from_secs(1);
/// Transient poll failures in a row before a long-running operation is given up.
const POLL_RETRIES: u32 = 3;
/// A guard against a `nextLink` that never ends.
const MAX_PAGES: usize = 10_000;

/// Setting up a client or credential failed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{what} needs {}: set {} to {}", missing_list(names), if names.len() == 1 { "it" } else { "them" }, describe(names))]
    MissingEnv { names: Vec<String>, what: &'static str },
    #[error(
        "no Azure credentials in the environment: set {ENV_TENANT_ID}, {ENV_CLIENT_ID} and {ENV_CLIENT_SECRET} \
         (a service principal), {ENV_TENANT_ID}, {ENV_CLIENT_ID} and {ENV_FEDERATED_TOKEN_FILE} (workload identity), \
         or {ENV_TOKEN_CREDENTIALS}=ManagedIdentityCredential (the managed identity of this VM)"
    )]
    NoCredentials,
    #[error("{name}: {reason}")]
    Unusable { name: String, reason: String },
    #[error("{name}: '{value}' is not a usable URL: {reason}")]
    InvalidUrl { name: String, value: String, reason: String },
    #[error("{name}: '{value}' is plain http to a host that is not {allowed}; trellis sends credentials over https only: use an https:// URL")]
    InsecureUrl { name: String, value: String, allowed: &'static str },
    #[error("cannot set up the HTTP client: {0}")]
    Http(String),
}

fn missing_list(names: &[String]) -> String {
    match names {
        [one] => format!("the environment variable {one}, which is not set"),
        _ => format!("the environment variables {}, which are not set", names.join(", ")),
    }
}

fn describe(names: &[String]) -> String {
    let what: Vec<&str> = names
        .iter()
        .map(|n| match n.as_str() {
            ENV_TENANT_ID => "the tenant id",
            ENV_CLIENT_ID => "the client (application) id",
            ENV_CLIENT_SECRET => "the client secret",
            ENV_FEDERATED_TOKEN_FILE => "the path of the federated token file",
            ENV_IDENTITY_HEADER => "the value App Service gives with IDENTITY_ENDPOINT",
            _ => "its value",
        })
        .collect();
    what.join(", ")
}

/// Which URLs may be plain http. Everything that carries a credential (the client secret, the
/// federated token, the bearer token) needs https, except to an address that never leaves the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlRule {
    /// The authority, the ARM endpoint (and so every URL the ARM client sends its token to, which
    /// must be on the endpoint's origin): https, or http to a loopback address (127.0.0.0/8, ::1,
    /// `localhost`).
    Credentials,
    /// Managed identity endpoints: also http to a link-local address (169.254.0.0/16, fe80::/10),
    /// where IMDS and App Service serve them on the host itself.
    ManagedIdentity,
}

impl UrlRule {
    fn allowed(self) -> &'static str {
        match self {
            UrlRule::Credentials => "a loopback address (127.0.0.0/8, ::1, localhost)",
            UrlRule::ManagedIdentity => {
                "a loopback or link-local address (127.0.0.0/8, ::1, localhost, 169.254.0.0/16)"
            }
        }
    }

    /// Whether credentials may be sent to `url` (`name` is the flag or variable it came from).
    pub fn check(self, name: &str, url: &Url) -> Result<(), ConfigError> {
        let host = url.host_str().unwrap_or("");
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        let local = host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| is_local(ip, self));
        match url.scheme() {
            "https" => Ok(()),
            "http" if local => Ok(()),
            _ => Err(ConfigError::InsecureUrl {
                name: name.to_string(),
                value: redact(url.as_str(), &[]),
                allowed: self.allowed(),
            }),
        }
    }
}

fn is_local(ip: IpAddr, rule: UrlRule) -> bool {
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    ip.is_loopback() || (rule == UrlRule::ManagedIdentity && link_local)
}

/// Parses the URL of a credential-carrying endpoint given as `name` (a flag or an environment
/// variable): http(s) with a host, and https unless the host is a loopback address.
pub fn parse_url(name: &str, value: &str) -> Result<Url, ConfigError> {
    parse_url_as(name, value, UrlRule::Credentials)
}

/// [`parse_url`] under another [`UrlRule`].
pub fn parse_url_as(name: &str, value: &str, rule: UrlRule) -> Result<Url, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidUrl {
        name: name.to_string(),
        value: redact(value, &[]),
        reason: redact(&reason, &[]),
    };
    let url = Url::parse(value.trim()).map_err(|e| invalid(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid("expected https://host[:port]".to_string()));
    }
    rule.check(name, &url)?;
    Ok(url)
}

/// The ARM REST client. Cheap to share behind an `Arc`; reqwest pools connections.
pub struct ArmClient {
    endpoint: Url,
    credential: Arc<dyn TokenSource>,
    http: reqwest::Client,
    lro_poll_cap: Duration,
    lro_timeout: Duration,
    request_timeout: Duration,
    /// (type or namespace, api-version), consulted before the built-in table.
    api_versions: Vec<(String, String)>,
    /// The bearer token last sent, redacted from errors even where it appears without `Bearer`.
    last_token: Mutex<String>,
    /// The largest response body read.
    response_limit: usize,
}

impl ArmClient {
    /// A client for `endpoint` (e.g. [`DEFAULT_ENDPOINT`]) authenticating with `credential`.
    /// The endpoint must be https, or http to a loopback address ([`UrlRule::Credentials`]).
    pub fn new(endpoint: Url, credential: Arc<dyn TokenSource>) -> Result<ArmClient, ConfigError> {
        UrlRule::Credentials.check("the ARM endpoint", &endpoint)?;
        Ok(ArmClient {
            endpoint,
            credential,
            http: trellis_http::client().map_err(ConfigError::Http)?,
            lro_poll_cap: Duration::from_secs(10),
            lro_timeout: Duration::from_secs(30 * 60),
            request_timeout: Duration::from_secs(60),
            api_versions: Vec::new(),
            last_token: Mutex::new(String::new()),
            response_limit: MAX_RESPONSE_BYTES,
        })
    }

    /// The largest response body read (default [`MAX_RESPONSE_BYTES`]); a longer one is refused.
    pub fn with_response_limit(mut self, bytes: usize) -> ArmClient {
        self.response_limit = bytes;
        self
    }

    /// The longest wait between two polls of a long-running operation.
    pub fn with_lro_poll_cap(mut self, cap: Duration) -> ArmClient {
        self.lro_poll_cap = cap;
        self
    }

    /// How long a long-running operation may take before the call is a `Timeout`.
    pub fn with_lro_timeout(mut self, timeout: Duration) -> ArmClient {
        self.lro_timeout = timeout;
        self
    }

    /// The timeout of each HTTP request (default 60 s).
    pub fn with_request_timeout(mut self, timeout: Duration) -> ArmClient {
        self.request_timeout = timeout;
        self
    }

    /// Uses `version` for a resource type (`Microsoft.Network/natGateways`) or a whole namespace
    /// (`Microsoft.Network`), compared case-insensitively; later calls take precedence.
    pub fn with_api_version(mut self, rtype_or_namespace: &str, version: &str) -> ArmClient {
        self.api_versions.insert(0, (rtype_or_namespace.to_string(), version.to_string()));
        self
    }

    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// The api-version used for a REST type such as `Microsoft.Network/virtualNetworks/subnets`.
    pub fn api_version(&self, rtype: &str) -> &str {
        let covers = |prefix: &str| {
            rtype.len() >= prefix.len()
                && rtype[..prefix.len()].eq_ignore_ascii_case(prefix)
                && (rtype.len() == prefix.len() || rtype.as_bytes()[prefix.len()] == b'/')
        };
        if let Some((_, v)) = self.api_versions.iter().find(|(p, _)| covers(p)) {
            return v;
        }
        if covers("Microsoft.Network/dnsZones") {
            DNS_API_VERSION
        } else if covers("Microsoft.Network") {
            NETWORK_API_VERSION
        } else if covers("Microsoft.ManagedIdentity") {
            MANAGED_IDENTITY_API_VERSION
        } else if covers("Microsoft.Resources") {
            RESOURCES_API_VERSION
        } else {
            DEFAULT_API_VERSION
        }
    }

    /// `endpoint + path + ?api-version=…` (a base path of the endpoint is kept).
    fn url(&self, path: &str, api_version: &str) -> Url {
        let mut url = self.endpoint.clone();
        let base = url.path().trim_end_matches('/').to_string();
        url.set_path(&format!("{base}{path}"));
        url.set_query(None);
        url.set_fragment(None);
        url.query_pairs_mut().append_pair("api-version", api_version);
        url
    }

    fn resource_url(&self, id: &str) -> Result<Url, CloudError> {
        let id = normalize(id);
        let rtype = rtype_of(id).ok_or_else(|| invalid_id(id))?;
        Ok(self.url(id, self.api_version(&rtype)))
    }

    fn list_url(&self, parent: &str, rtype: &str) -> Result<Url, CloudError> {
        let parent = normalize(parent);
        let target = format!("{parent}/{rtype}");
        let bad = |why: &str| CloudError::Rejected {
            target: target.clone(),
            status: 400,
            code: "InvalidResourceType".to_string(),
            message: format!("cannot list '{rtype}' under '{parent}': {why}"),
        };
        let parsed = ArmId::parse(parent).map_err(|_| invalid_id(parent))?;
        let path = match parsed.depth() {
            2 => {
                if rtype.eq_ignore_ascii_case("Microsoft.Resources/resourceGroups") {
                    format!("{parent}/resourcegroups")
                } else if rtype.split('/').count() == 2 {
                    // List All: a top-level type in every resource group of the subscription.
                    format!("{parent}/providers/{rtype}")
                } else {
                    return Err(bad(
                        "a subscription lists Microsoft.Resources/resourceGroups and top-level types such as Microsoft.Network/dnsZones",
                    ));
                }
            }
            4 => {
                if rtype.split('/').count() != 2 {
                    return Err(bad("a resource group holds top-level types such as Microsoft.Network/natGateways"));
                }
                format!("{parent}/providers/{rtype}")
            }
            _ => {
                let own = parsed.rtype();
                let child = rtype.rsplit('/').next().unwrap_or(rtype);
                if !rtype.eq_ignore_ascii_case(&format!("{own}/{child}")) {
                    return Err(bad(&format!("the children of a {own} have types {own}/<child>")));
                }
                format!("{parent}/{child}")
            }
        };
        Ok(self.url(&path, self.api_version(rtype)))
    }

    fn same_origin(&self, url: &Url) -> bool {
        url.scheme() == self.endpoint.scheme()
            && url.host_str() == self.endpoint.host_str()
            && url.port_or_known_default() == self.endpoint.port_or_known_default()
    }

    /// One request with the bearer token and the condition `sent` (`If-None-Match: *`, `If-Match`);
    /// only transport failures are errors here.
    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
        target: &str,
        sent: &Sent,
    ) -> Result<reqwest::Response, CloudError> {
        if !self.same_origin(&url) {
            return Err(CloudError::Rejected {
                target: target.to_string(),
                status: 400,
                code: "UntrustedUrl".to_string(),
                message: format!(
                    "ARM answered with a URL on another host ({url}); the client sends its token to {} only",
                    self.endpoint
                ),
            });
        }
        let token = self.credential.token().await?;
        token.clone_into(&mut self.last_token.lock().unwrap_or_else(PoisonError::into_inner));
        let mut req = self
            .http
            .request(method, url)
            .bearer_auth(token)
            .header(ACCEPT, "application/json")
            .timeout(self.request_timeout);
        if let Some(body) = body {
            req = req.json(body);
        }
        match sent {
            Sent::Nothing => {}
            Sent::IfNoneMatch => req = req.header(IF_NONE_MATCH, "*"),
            Sent::IfMatch(etag) => req = req.header(IF_MATCH, etag.as_str()),
        }
        let resp = req.send().await.map_err(|e| transport_error(target, &e))?;
        if resp.status().is_redirection() {
            return Err(redirect_error(target, resp.status().as_u16(), resp.headers(), "--azure-endpoint"));
        }
        Ok(resp)
    }

    /// A non-success answer as a [`CloudError`], the token last sent redacted from a quoted body.
    fn response_error(&self, target: &str, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> CloudError {
        let token = self.last_token.lock().unwrap_or_else(PoisonError::into_inner).clone();
        response_error(target, status, headers, body, &[&token])
    }

    /// `e` without credentials: the redaction patterns plus the token last sent.
    fn redacted(&self, e: CloudError) -> CloudError {
        let token = self.last_token.lock().unwrap_or_else(PoisonError::into_inner).clone();
        trellis_http::redact_error(e, &[&token])
    }

    /// How long to wait before the next poll.
    fn poll_wait(&self, headers: &HeaderMap) -> Duration {
        let floor = MIN_POLL_WAIT.min(self.lro_poll_cap);
        retry_after(headers).unwrap_or(DEFAULT_POLL_WAIT).clamp(floor, self.lro_poll_cap)
    }

    /// Polls a long-running operation until it ends.
    async fn wait(&self, poll: Poll, first: &HeaderMap, target: &str) -> Result<(), CloudError> {
        let deadline = Instant::now() + self.lro_timeout;
        let mut wait = self.poll_wait(first);
        let mut failures = 0;
        loop {
            if Instant::now() + wait > deadline {
                return Err(CloudError::Timeout { target: target.to_string() });
            }
            tokio::time::sleep(wait).await;
            let url = match &poll {
                Poll::AsyncOperation(u) | Poll::Location(u) => u.clone(),
            };
            let answer = match self.send(Method::GET, url, None, target, &Sent::Nothing).await {
                Ok(resp) => read_capped(resp, target, self.response_limit).await,
                Err(e) => Err(e),
            };
            let failed = match answer {
                Ok((status, headers, body)) if status.is_success() => Ok((status, headers, body)),
                Ok((status, headers, body)) => Err(self.response_error(target, status, &headers, &body)),
                Err(e) => Err(e),
            };
            let (status, headers, body) = match failed {
                Ok(answer) => answer,
                Err(e) if e.is_transient() && failures < POLL_RETRIES => {
                    failures += 1;
                    wait = e
                        .retry_after()
                        .unwrap_or(MIN_POLL_WAIT)
                        .clamp(MIN_POLL_WAIT.min(self.lro_poll_cap), self.lro_poll_cap);
                    continue;
                }
                Err(e) => return Err(e),
            };
            failures = 0;
            match &poll {
                Poll::AsyncOperation(_) => {
                    let doc: Value = serde_json::from_slice(&body).map_err(|e| bad_answer(target, status, &e))?;
                    let state = doc["status"].as_str().unwrap_or("").to_ascii_lowercase();
                    match state.as_str() {
                        "succeeded" => return Ok(()),
                        "failed" | "canceled" | "cancelled" => return Err(operation_failed(target, &state, &doc)),
                        _ => wait = self.poll_wait(&headers),
                    }
                }
                Poll::Location(_) if status == StatusCode::ACCEPTED => wait = self.poll_wait(&headers),
                Poll::Location(_) => return Ok(()),
            }
        }
    }
}

/// Where a long-running operation is polled.
enum Poll {
    /// `Azure-AsyncOperation`: an operation document `{"status": …}`.
    AsyncOperation(Url),
    /// `Location`: 202 while running, then the final answer.
    Location(Url),
}

impl Poll {
    fn of(status: StatusCode, headers: &HeaderMap, endpoint: &Url) -> Option<Poll> {
        let url = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .and_then(|v| endpoint.join(v).ok())
        };
        if let Some(u) = url("azure-asyncoperation") {
            return Some(Poll::AsyncOperation(u));
        }
        if matches!(status, StatusCode::CREATED | StatusCode::ACCEPTED) {
            return url(LOCATION.as_str()).map(Poll::Location);
        }
        None
    }
}

fn parse_json(target: &str, status: StatusCode, body: &[u8]) -> Result<Value, CloudError> {
    serde_json::from_slice(body).map_err(|e| bad_answer(target, status, &e))
}

fn bad_answer(target: &str, status: StatusCode, e: &serde_json::Error) -> CloudError {
    CloudError::Server {
        target: target.to_string(),
        status: 502,
        message: format!("ARM answered HTTP {} with a body that is not the expected JSON: {e}", status.as_u16()),
    }
}

// Every error leaves the client through these impls, redacted: the work is done by the inherent
// `*_unredacted` methods below.
#[async_trait]
impl CloudRead for ArmClient {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        self.get_unredacted(id).await.map_err(|e| self.redacted(e))
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.list_unredacted(parent, rtype).await.map_err(|e| self.redacted(e))
    }
}

#[async_trait]
impl CloudWrite for ArmClient {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let sent = Sent::IfNoneMatch;
        self.put_unredacted(id, body, &sent).await.map_err(|e| self.redacted(classify(e, sent)))
    }

    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        let sent = Sent::of(pre);
        self.put_unredacted(id, body, &sent).await.map_err(|e| self.redacted(classify(e, sent)))
    }

    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        let sent = Sent::of(pre);
        self.delete_unredacted(id, &sent).await.map_err(|e| self.redacted(classify(e, sent)))
    }
}

/// A refused write (in the response or by its operation) classified by the condition it was sent
/// with: 412 → `AlreadyExists` / `PreconditionFailed`, 409 `AnotherOperationInProgress` → `Conflict`.
fn classify(e: CloudError, sent: Sent) -> CloudError {
    match e {
        CloudError::Rejected { target, status, code, message } => {
            CloudError::arm_refusal(&target, status, code, message, sent)
        }
        other => other,
    }
}

impl ArmClient {
    async fn get_unredacted(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let url = self.resource_url(id)?;
        let resp = self.send(Method::GET, url, None, id, &Sent::Nothing).await?;
        let (status, headers, body) = read_capped(resp, id, self.response_limit).await?;
        match status {
            StatusCode::OK => {
                let doc = parse_json(id, status, &body)?;
                answered_for(id, &doc, |answered| answered.eq_ignore_ascii_case(normalize(id)))?;
                Ok(Some(doc))
            }
            StatusCode::NOT_FOUND => {
                // A wrong subscription is a configuration error, not a missing resource.
                let e = self.response_error(id, status, &headers, &body);
                match &e {
                    CloudError::Rejected { code, .. } if code == "SubscriptionNotFound" => Err(e),
                    _ => Ok(None),
                }
            }
            _ => Err(self.response_error(id, status, &headers, &body)),
        }
    }

    async fn list_unredacted(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        let target = format!("{}/{rtype}", normalize(parent));
        let mut url = self.list_url(parent, rtype)?;
        let mut out = Vec::new();
        for _ in 0..MAX_PAGES {
            let resp = self.send(Method::GET, url.clone(), None, &target, &Sent::Nothing).await?;
            let (status, headers, body) = read_capped(resp, &target, self.response_limit).await?;
            if status != StatusCode::OK {
                return Err(self.response_error(&target, status, &headers, &body));
            }
            let mut page = parse_json(&target, status, &body)?;
            match page.get_mut("value").map(Value::take) {
                Some(Value::Array(items)) => {
                    let under = format!("{}/", normalize(parent));
                    for item in &items {
                        answered_for(&target, item, |answered| {
                            answered.get(..under.len()).is_some_and(|p| p.eq_ignore_ascii_case(&under))
                        })?;
                    }
                    out.extend(items)
                }
                Some(Value::Null) | None => {}
                Some(_) => {
                    return Err(CloudError::Server {
                        target,
                        status: 502,
                        message: "ARM answered a list whose `value` is not an array".to_string(),
                    })
                }
            }
            match page["nextLink"].as_str().filter(|s| !s.is_empty()) {
                Some(next) => {
                    url = self.endpoint.join(next).map_err(|e| CloudError::Server {
                        target: target.clone(),
                        status: 502,
                        message: format!("ARM answered an unusable nextLink '{next}': {e}"),
                    })?
                }
                None => return Ok(out),
            }
        }
        Err(CloudError::Server {
            target,
            status: 502,
            message: format!("the list did not end after {MAX_PAGES} pages (nextLink loop?)"),
        })
    }

    async fn put_unredacted(&self, id: &str, body: Value, sent: &Sent) -> Result<Value, CloudError> {
        let url = self.resource_url(id)?;
        let resp = self.send(Method::PUT, url, Some(&body), id, sent).await?;
        let (status, headers, answer) = read_capped(resp, id, self.response_limit).await?;
        if !matches!(status, StatusCode::OK | StatusCode::CREATED | StatusCode::ACCEPTED) {
            return Err(self.response_error(id, status, &headers, &answer));
        }
        if let Some(poll) = Poll::of(status, &headers, &self.endpoint) {
            self.wait(poll, &headers, id).await?;
        } else if status != StatusCode::ACCEPTED && !answer.iter().all(u8::is_ascii_whitespace) {
            return parse_json(id, status, &answer);
        }
        self.get_unredacted(id).await?.ok_or_else(|| CloudError::Server {
            target: id.to_string(),
            status: 404,
            message: "ResourceNotFound: the PUT succeeded but the resource cannot be read back yet".to_string(),
        })
    }

    async fn delete_unredacted(&self, id: &str, sent: &Sent) -> Result<(), CloudError> {
        let url = self.resource_url(id)?;
        let resp = self.send(Method::DELETE, url, None, id, sent).await?;
        let (status, headers, body) = read_capped(resp, id, self.response_limit).await?;
        match status {
            StatusCode::NOT_FOUND => Ok(()),
            StatusCode::OK | StatusCode::ACCEPTED | StatusCode::NO_CONTENT => {
                match Poll::of(status, &headers, &self.endpoint) {
                    Some(poll) => self.wait(poll, &headers, id).await,
                    None => Ok(()),
                }
            }
            _ => Err(self.response_error(id, status, &headers, &body)),
        }
    }
}

/// Checks that an answer is the resource asked for: its `id` must pass `expected` (ARM ids compare
/// case-insensitively). A server (or a proxy) answering another resource would otherwise be taken
/// for the one the plan reads — a resource group for another, a subnet of another VNet.
fn answered_for(target: &str, doc: &Value, expected: impl Fn(&str) -> bool) -> Result<(), CloudError> {
    match doc.get("id").and_then(Value::as_str) {
        Some(answered) if expected(answered) => Ok(()),
        answered => Err(CloudError::Rejected {
            target: target.to_string(),
            status: 502,
            code: "WrongResource".to_string(),
            message: format!(
                "ARM answered {} instead; check that --azure-endpoint is ARM itself, not a proxy that rewrites answers",
                match answered {
                    Some(other) => format!("the resource '{}'", trellis_http::redact(other, &[])),
                    None => "an object without an `id`".to_string(),
                }
            ),
        }),
    }
}

/// The id without surrounding spaces and a trailing `/`.
fn normalize(id: &str) -> &str {
    let id = id.trim();
    id.strip_suffix('/').unwrap_or(id)
}

/// The REST type of an ARM id (`Microsoft.Resources/resourceGroups` for a resource group,
/// `Microsoft.Network/virtualNetworks/subnets` for a subnet), `None` when it is not one (or names a
/// subscription). Parsed by the workspace's one ARM id parser, [`ArmId`].
fn rtype_of(id: &str) -> Option<String> {
    let parsed = ArmId::parse(id).ok()?;
    parsed.resource_group().is_some().then(|| parsed.rtype())
}

fn invalid_id(id: &str) -> CloudError {
    CloudError::Rejected {
        target: id.to_string(),
        status: 400,
        code: "InvalidResourceId".to_string(),
        message: format!(
            "'{id}' is not an ARM resource id; expected /subscriptions/{{s}}/resourceGroups/{{rg}}[/providers/{{Namespace}}/{{type}}/{{name}}…]"
        ),
    }
}

/// A non-success ARM answer as a [`CloudError`].
/// A body that is not ARM's error JSON is quoted after the `known` secrets are redacted from it.
fn response_error(target: &str, status: StatusCode, headers: &HeaderMap, body: &[u8], known: &[&str]) -> CloudError {
    let doc: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    // ARM: {"error": {"code", "message"}}; a few resource providers answer the object at the top.
    let err = if doc["error"].is_object() { &doc["error"] } else { &doc };
    let code = err["code"]
        .as_str()
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .or_else(|| headers.get("x-ms-error-code").and_then(|v| v.to_str().ok()).map(str::to_string))
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("HttpError").replace(' ', ""));
    let message =
        err["message"].as_str().map(str::to_string).unwrap_or_else(|| snippet(&String::from_utf8_lossy(body), known));
    status_error(target, status.as_u16(), headers, code, message)
}

/// Classifies an HTTP failure: 429 throttled, 408 timeout, 5xx server, other 4xx rejected.
pub(crate) fn status_error(
    target: &str,
    status: u16,
    headers: &HeaderMap,
    code: String,
    message: String,
) -> CloudError {
    let target = target.to_string();
    match status {
        429 => CloudError::Throttled { target, retry_after: retry_after(headers) },
        408 => CloudError::Timeout { target },
        500..=599 => CloudError::Server { target, status, message: format!("{code}: {message}") },
        _ => CloudError::Rejected { target, status, code, message },
    }
}

/// A long-running operation that ended `Failed` or `Canceled`, with the operation's own error.
fn operation_failed(target: &str, state: &str, doc: &Value) -> CloudError {
    let err = &doc["error"];
    let code = err["code"]
        .as_str()
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| if state == "failed" { "OperationFailed" } else { "OperationCanceled" }.to_string());
    let mut message = err["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("the long-running operation ended with status {}", doc["status"]));
    if let Some(details) = err["details"].as_array() {
        for d in details {
            if let (Some(c), Some(m)) = (d["code"].as_str(), d["message"].as_str()) {
                message.push_str(&format!("; {c}: {m}"));
            }
        }
    }
    let target = target.to_string();
    if matches!(code.as_str(), "InternalServerError" | "ServiceUnavailable" | "RetryableError") {
        CloudError::Server { target, status: 500, message: format!("{code}: {message}") }
    } else {
        CloudError::Rejected { target, status: 409, code, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn client() -> ArmClient {
        ArmClient::new(Url::parse(DEFAULT_ENDPOINT).unwrap(), Arc::new(StaticToken("t".into()))).unwrap()
    }

    const RG: &str = "/subscriptions/s/resourceGroups/rg";

    #[test]
    fn api_versions_follow_the_resource_type() {
        let c = client();
        let url = |id: &str| c.resource_url(id).unwrap().to_string();
        assert_eq!(url(RG), "https://management.azure.com/subscriptions/s/resourceGroups/rg?api-version=2021-04-01");
        assert!(url(&format!("{RG}/providers/Microsoft.Network/virtualNetworks/v/subnets/w"))
            .ends_with("?api-version=2024-03-01"));
        assert!(url(&format!("{RG}/providers/microsoft.managedidentity/userAssignedIdentities/i"))
            .ends_with("?api-version=2023-01-31"));
        assert!(url(&format!("{RG}/providers/Microsoft.Compute/disks/d")).ends_with("?api-version=2021-04-01"));
        assert!(url(&format!("{RG}/providers/Microsoft.Network/dnsZones/example.com/A/@"))
            .ends_with("/dnsZones/example.com/A/@?api-version=2018-05-01"));
        assert!(
            url(&format!("{RG}/providers/Microsoft.Network/dnszones/example.com")).ends_with("?api-version=2018-05-01")
        );
        let c = c.with_api_version("Microsoft.Network/natGateways", "2023-09-01");
        assert_eq!(c.api_version("Microsoft.Network/natGateways"), "2023-09-01");
        assert_eq!(c.api_version("Microsoft.Network/natGatewaysX"), NETWORK_API_VERSION);
        assert_eq!(c.api_version("Microsoft.Network/virtualNetworks"), NETWORK_API_VERSION);
    }

    #[test]
    fn list_urls_per_parent_kind() {
        let c = client();
        let url = |p: &str, t: &str| c.list_url(p, t).map(|u| u.path().to_string());
        assert_eq!(
            url("/subscriptions/s", "Microsoft.Resources/resourceGroups").unwrap(),
            "/subscriptions/s/resourcegroups"
        );
        assert_eq!(
            url(RG, "Microsoft.Network/natGateways").unwrap(),
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/natGateways"
        );
        let vnet = format!("{RG}/providers/Microsoft.Network/virtualNetworks/v");
        assert_eq!(url(&vnet, "Microsoft.Network/virtualNetworks/subnets").unwrap(), format!("{vnet}/subnets"));
        assert!(url(&vnet, "Microsoft.Network/routeTables/routes").is_err());
        assert_eq!(
            url("/subscriptions/s", "Microsoft.Network/dnsZones").unwrap(),
            "/subscriptions/s/providers/Microsoft.Network/dnsZones"
        );
        assert!(url("/subscriptions/s", "Microsoft.Network/dnsZones/A").is_err());
        assert!(url(RG, "Microsoft.Network/virtualNetworks/subnets").is_err());
        assert!(url("/nope", "x/y").is_err());
    }

    #[test]
    fn an_endpoint_base_path_is_kept() {
        let c =
            ArmClient::new(Url::parse("https://proxy:8080/arm/").unwrap(), Arc::new(StaticToken("t".into()))).unwrap();
        assert_eq!(
            c.resource_url(RG).unwrap().as_str(),
            "https://proxy:8080/arm/subscriptions/s/resourceGroups/rg?api-version=2021-04-01"
        );
    }

    #[test]
    fn regression_credentials_go_over_https_or_to_loopback_only() {
        let ok = |rule: UrlRule, url: &str| rule.check("X", &Url::parse(url).unwrap()).is_ok();
        for url in ["https://login.microsoftonline.com", "https://10.0.0.1:8443/x", "https://localhost"] {
            assert!(ok(UrlRule::Credentials, url), "{url}");
        }
        for url in
            ["http://127.0.0.1:8080", "http://127.5.6.7", "http://localhost:1/", "http://LOCALHOST", "http://[::1]:9"]
        {
            assert!(ok(UrlRule::Credentials, url) && ok(UrlRule::ManagedIdentity, url), "{url}");
        }
        for url in ["http://169.254.169.254", "http://169.254.129.5:8081/msi/token", "http://[fe80::1]/"] {
            assert!(!ok(UrlRule::Credentials, url) && ok(UrlRule::ManagedIdentity, url), "{url}");
        }
        for url in [
            "http://login.microsoftonline.com",
            "http://0.0.0.0:80",
            "http://10.0.0.1",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost.example.com",
            "ftp://127.0.0.1/",
        ] {
            assert!(!ok(UrlRule::Credentials, url) && !ok(UrlRule::ManagedIdentity, url), "{url}");
        }
        let err = parse_url("--azure-endpoint", "http://arm.example.com").unwrap_err().to_string();
        assert_eq!(
            err,
            "--azure-endpoint: 'http://arm.example.com/' is plain http to a host that is not a loopback address \
             (127.0.0.0/8, ::1, localhost); trellis sends credentials over https only: use an https:// URL"
        );
        let err = parse_url("AZURE_AUTHORITY_HOST", "http://user:pa55w0rd@[::1").unwrap_err().to_string();
        assert!(!err.contains("pa55w0rd"), "{err}");
    }

    #[test]
    fn regression_write_refusals_are_classified_by_the_condition_sent() {
        let h = HeaderMap::new();
        let busy =
            br#"{"error":{"code":"AnotherOperationInProgress","message":"Operation on subnet b is in progress"}}"#;
        let conflict = classify(response_error("s", StatusCode::CONFLICT, &h, busy, &[]), Sent::Nothing);
        assert!(matches!(&conflict, CloudError::Conflict { code, .. } if code == "AnotherOperationInProgress"));
        assert!(conflict.is_transient(), "the engine waits for the other operation and retries");
        // The same refusal reported by the write's long-running operation.
        let doc = json!({"status": "Failed", "error": {"code": "AnotherOperationInProgress", "message": "busy"}});
        let failed = classify(operation_failed("s", "failed", &doc), Sent::IfMatch("W/\"1\"".into()));
        assert!(matches!(failed, CloudError::Conflict { .. }));

        let pre = br#"{"error":{"code":"PreconditionFailed","message":"etag mismatch"}}"#;
        assert_eq!(
            classify(
                response_error("s", StatusCode::PRECONDITION_FAILED, &h, pre, &[]),
                Sent::IfMatch("W/\"1\"".into())
            ),
            CloudError::PreconditionFailed { target: "s".into(), expected: "W/\"1\"".into() }
        );
        assert_eq!(
            classify(response_error("s", StatusCode::PRECONDITION_FAILED, &h, pre, &[]), Sent::IfNoneMatch),
            CloudError::AlreadyExists { target: "s".into(), status: 412 }
        );
        let other = br#"{"error":{"code":"Conflict","message":"x"}}"#;
        assert!(matches!(
            classify(response_error("s", StatusCode::CONFLICT, &h, other, &[]), Sent::Nothing),
            CloudError::Rejected { status: 409, .. }
        ));
    }

    #[test]
    fn errors_are_classified_by_status_and_carry_the_arm_code() {
        let h = HeaderMap::new();
        let body = br#"{"error":{"code":"InUseSubnetCannotBeDeleted","message":"Subnet web is in use"}}"#;
        assert_eq!(
            response_error("x", StatusCode::BAD_REQUEST, &h, body, &[]),
            CloudError::Rejected {
                target: "x".into(),
                status: 400,
                code: "InUseSubnetCannotBeDeleted".into(),
                message: "Subnet web is in use".into()
            }
        );
        let mut h = HeaderMap::new();
        h.insert("x-ms-error-code", "Conflict".parse().unwrap());
        assert!(matches!(response_error("x", StatusCode::CONFLICT, &h, b"oops", &[]),
            CloudError::Rejected { code, message, .. } if code == "Conflict" && message == "oops"));
        assert!(matches!(response_error("x", StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"", &[]),
            CloudError::Server { status: 502, message, .. } if message == "BadGateway: (empty body)"));
        assert_eq!(
            response_error("x", StatusCode::REQUEST_TIMEOUT, &HeaderMap::new(), b"", &[]),
            CloudError::Timeout { target: "x".into() }
        );
    }

    #[test]
    fn failed_operations_keep_their_error() {
        let doc: Value = serde_json::json!({"status": "Failed", "error": {"code": "AnotherOperationInProgress",
            "message": "Another operation on this or dependent resource is in progress.",
            "details": [{"code": "Inner", "message": "subnet busy"}]}});
        assert!(
            matches!(operation_failed("x", "failed", &doc), CloudError::Rejected { status: 409, code, message, .. }
            if code == "AnotherOperationInProgress" && message.ends_with("; Inner: subnet busy"))
        );
        let doc = serde_json::json!({"status": "Canceled"});
        assert!(
            matches!(operation_failed("x", "canceled", &doc), CloudError::Rejected { code, .. } if code == "OperationCanceled")
        );
        let doc = serde_json::json!({"status": "Failed", "error": {"code": "InternalServerError", "message": "boom"}});
        assert!(operation_failed("x", "failed", &doc).is_transient());
    }
}
