//! Access tokens for ARM: the [`TokenSource`] trait, a fixed [`StaticToken`] for tests, the three
//! credentials a deployment uses — [`ClientSecretCredential`] (a service principal),
//! [`WorkloadIdentityCredential`] (workload identity federation: a Kubernetes service account token
//! exchanged for an Entra ID token, how Gardener's Azure extension signs in) and
//! [`ManagedIdentityCredential`] (IMDS, or the App Service identity endpoint) — and
//! [`EnvCredential`], which picks one of them from the environment as the Azure SDKs do.
//!
//! Hand-written rather than the official `azure_identity` crate; ARCHITECTURE.md says why.
//!
//! Every credential caches its token and refreshes it shortly before it expires (5 minutes before,
//! or halfway through a lifetime shorter than 10 minutes); concurrent callers wait for one refresh.
//! Every error text built from an answer or a transport error is redacted (`crate::redact`), with
//! the credential's own secret among the known values.

use crate::{parse_url_as, status_error, ConfigError, UrlRule};
use async_trait::async_trait;
use reqwest::Url;
use serde_json::Value;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use trellis_http::{redact_error, redirect_error, transport_error};
use trellis_planner::cloud::CloudError;

/// The Entra ID authority of the public cloud.
pub const DEFAULT_AUTHORITY: &str = "https://login.microsoftonline.com";
/// The scope of an ARM token (public cloud).
pub const ARM_SCOPE: &str = "https://management.azure.com/.default";
/// The Azure Instance Metadata Service, where a VM's managed identity gets its tokens. Plain http
/// to a link-local address that never leaves the host: the one exception to https-only.
pub const DEFAULT_IMDS_HOST: &str = "http://169.254.169.254";
/// `client_assertion_type` of a federated token.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The environment variables [`EnvCredential`] reads (the Azure SDKs' names).
pub const ENV_TENANT_ID: &str = "AZURE_TENANT_ID";
pub const ENV_CLIENT_ID: &str = "AZURE_CLIENT_ID";
pub const ENV_CLIENT_SECRET: &str = "AZURE_CLIENT_SECRET";
/// Workload identity: the file holding the federated token (projected by Kubernetes).
pub const ENV_FEDERATED_TOKEN_FILE: &str = "AZURE_FEDERATED_TOKEN_FILE";
/// Optional: the authority (default [`DEFAULT_AUTHORITY`]).
pub const ENV_AUTHORITY_HOST: &str = "AZURE_AUTHORITY_HOST";
/// Optional: which credential to use (`prod`, `EnvironmentCredential`,
/// `WorkloadIdentityCredential`, `ManagedIdentityCredential`).
pub const ENV_TOKEN_CREDENTIALS: &str = "AZURE_TOKEN_CREDENTIALS";
/// Optional: another IMDS host (default [`DEFAULT_IMDS_HOST`]).
pub const ENV_IMDS_HOST: &str = "AZURE_POD_IDENTITY_AUTHORITY_HOST";
/// App Service managed identity: the endpoint and the secret header value the platform sets.
pub const ENV_IDENTITY_ENDPOINT: &str = "IDENTITY_ENDPOINT";
pub const ENV_IDENTITY_HEADER: &str = "IDENTITY_HEADER";
/// A client certificate (not supported; named in the error).
pub const ENV_CLIENT_CERTIFICATE_PATH: &str = "AZURE_CLIENT_CERTIFICATE_PATH";

const IMDS_PATH: &str = "/metadata/identity/oauth2/token";
const IMDS_API_VERSION: &str = "2018-02-01";
const APP_SERVICE_API_VERSION: &str = "2019-08-01";
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the ARM client gets its bearer token from.
#[async_trait]
pub trait TokenSource: Send + Sync {
    /// A valid access token (without the `Bearer ` prefix).
    async fn token(&self) -> Result<String, CloudError>;
}

/// A fixed token (tests, or a token obtained elsewhere, e.g. `az account get-access-token`).
#[derive(Clone)]
pub struct StaticToken(pub String);

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticToken(<redacted>)")
    }
}

#[async_trait]
impl TokenSource for StaticToken {
    async fn token(&self) -> Result<String, CloudError> {
        Ok(self.0.clone())
    }
}

/// A token and when to fetch the next one.
struct Cached {
    token: String,
    refresh_at: Instant,
}

/// The cached token of one credential.
#[derive(Default)]
struct TokenCache(tokio::sync::Mutex<Option<Cached>>);

impl TokenCache {
    /// The cached token while it is fresh, else the one `fetch` returns (with its lifetime).
    async fn get<F>(&self, fetch: F) -> Result<String, CloudError>
    where
        F: Future<Output = Result<(String, Duration), CloudError>>,
    {
        let mut cache = self.0.lock().await;
        if let Some(c) = cache.as_ref() {
            if Instant::now() < c.refresh_at {
                return Ok(c.token.clone());
            }
        }
        let (token, lifetime) = fetch.await?;
        let margin = Duration::from_secs(300).min(lifetime / 2);
        *cache = Some(Cached { token: token.clone(), refresh_at: Instant::now() + lifetime - margin });
        Ok(token)
    }
}

/// Sends a token request and reads the answer: `access_token` with `expires_in` (a number, or a
/// string as IMDS answers) or `expires_on` (Unix seconds, as App Service answers). Redirects are
/// refused (the request carries a credential); `known` values are redacted from every error.
async fn request_token(
    req: reqwest::RequestBuilder,
    target: &str,
    setting: &str,
    known: &[&str],
) -> Result<(String, Duration), CloudError> {
    let answer = async {
        let resp = req.timeout(TOKEN_TIMEOUT).send().await.map_err(|e| transport_error(target, &e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        if resp.status().is_redirection() {
            return Err(redirect_error(target, status, &headers, setting));
        }
        let text = resp.text().await.map_err(|e| transport_error(target, &e))?;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            // Entra ID and IMDS: {"error": "invalid_client", "error_description": "AADSTS…"}.
            let code = body["error"].as_str().unwrap_or("TokenRequestFailed").to_string();
            let message = body["error_description"]
                .as_str()
                .or_else(|| body["message"].as_str())
                .map(str::to_string)
                .unwrap_or_else(|| trellis_http::snippet(&text, known));
            return Err(status_error(target, status, &headers, code, message));
        }
        let Some(token) = body["access_token"].as_str().filter(|t| !t.is_empty()) else {
            return Err(CloudError::Server {
                target: target.to_string(),
                status: 502,
                message: "the token endpoint answered without an access_token".to_string(),
            });
        };
        Ok((token.to_string(), lifetime(&body)))
    };
    answer.await.map_err(|e| redact_error(e, known))
}

/// How long a token answer says the token lives (5 minutes when it does not say).
fn lifetime(body: &Value) -> Duration {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    if let Some(secs) = number(&body["expires_in"]) {
        return Duration::from_secs(secs);
    }
    if let Some(at) = number(&body["expires_on"]) {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
        return Duration::from_secs(at.saturating_sub(now));
    }
    Duration::from_secs(300)
}

/// How a client proves who it is to Entra ID.
enum ClientAuth {
    /// `client_secret=…`
    Secret(String),
    /// `client_assertion=<the file's content>`, read again for every request (Kubernetes rotates
    /// the projected token).
    FederatedTokenFile(PathBuf),
}

/// The client-credentials grant: `POST {authority}/{tenant}/oauth2/v2.0/token`.
struct Entra {
    tenant: String,
    client_id: String,
    auth: ClientAuth,
    authority: Url,
    scope: String,
    http: reqwest::Client,
    cache: TokenCache,
}

impl Entra {
    fn new(tenant: &str, client_id: &str, auth: ClientAuth) -> Result<Entra, ConfigError> {
        Ok(Entra {
            tenant: tenant.to_string(),
            client_id: client_id.to_string(),
            auth,
            authority: Url::parse(DEFAULT_AUTHORITY).expect("the default authority is a URL"),
            scope: ARM_SCOPE.to_string(),
            http: trellis_http::client().map_err(ConfigError::Http)?,
            cache: TokenCache::default(),
        })
    }

    fn set_authority(&mut self, authority: Url) -> Result<(), ConfigError> {
        UrlRule::Credentials.check("the authority", &authority)?;
        self.authority = authority;
        Ok(())
    }

    fn token_url(&self) -> Url {
        let mut url = self.authority.clone();
        url.set_query(None);
        url.set_fragment(None);
        if let Ok(mut segs) = url.path_segments_mut() {
            segs.pop_if_empty().push(&self.tenant).extend(["oauth2", "v2.0", "token"]);
        }
        url
    }

    async fn token(&self) -> Result<String, CloudError> {
        self.cache.get(self.fetch()).await
    }

    async fn fetch(&self) -> Result<(String, Duration), CloudError> {
        let url = self.token_url();
        let target = format!("token endpoint {url}");
        let mut form = vec![
            ("grant_type", "client_credentials".to_string()),
            ("client_id", self.client_id.clone()),
            ("scope", self.scope.clone()),
        ];
        let secret = match &self.auth {
            ClientAuth::Secret(secret) => {
                form.push(("client_secret", secret.clone()));
                secret.clone()
            }
            ClientAuth::FederatedTokenFile(path) => {
                let assertion = read_token_file(path).map_err(|reason| CloudError::Rejected {
                    target: format!("{ENV_FEDERATED_TOKEN_FILE} {}", path.display()),
                    status: 401,
                    code: "FederatedTokenUnreadable".to_string(),
                    message: format!(
                        "{reason}; the workload identity's token file must hold the service account token"
                    ),
                })?;
                form.push(("client_assertion_type", JWT_BEARER.to_string()));
                form.push(("client_assertion", assertion.clone()));
                assertion
            }
        };
        let req = self.http.post(url).form(&form);
        request_token(req, &target, ENV_AUTHORITY_HOST, &[&secret]).await
    }
}

impl std::fmt::Debug for Entra {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Entra");
        d.field("tenant", &self.tenant).field("client_id", &self.client_id);
        match &self.auth {
            ClientAuth::Secret(_) => d.field("secret", &"<redacted>"),
            ClientAuth::FederatedTokenFile(path) => d.field("federated_token_file", path),
        };
        d.field("authority", &self.authority.as_str()).finish()
    }
}

/// The most bytes read of a token file: a projected service account token is a few KB; a path that
/// names something else (`/dev/zero`, a log) stops here instead of filling memory.
const MAX_TOKEN_FILE: u64 = 1 << 20;

/// The trimmed content of a token file; the reason when it is unreadable, empty or too large.
fn read_token_file(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    // Bytes first: a large binary file is the size's error, not UTF-8's.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TOKEN_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_TOKEN_FILE {
        return Err(format!(
            "{} is larger than 1 MiB, which no token file is; point it at the token file",
            path.display()
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{} is not text (not valid UTF-8); point it at the token file", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    Ok(token.to_string())
}

/// A service principal with a client secret (the OAuth2 client-credentials grant).
#[derive(Debug)]
pub struct ClientSecretCredential(Entra);

impl ClientSecretCredential {
    pub fn new(tenant: &str, client_id: &str, secret: &str) -> Result<ClientSecretCredential, ConfigError> {
        Ok(ClientSecretCredential(Entra::new(tenant, client_id, ClientAuth::Secret(secret.to_string()))?))
    }

    /// Another Entra ID authority (a sovereign cloud, or a test server): https, or plain http to a
    /// loopback address.
    pub fn with_authority(mut self, authority: Url) -> Result<ClientSecretCredential, ConfigError> {
        self.0.set_authority(authority)?;
        Ok(self)
    }

    /// Another scope (default [`ARM_SCOPE`]; sovereign clouds have their own).
    pub fn with_scope(mut self, scope: &str) -> ClientSecretCredential {
        self.0.scope = scope.to_string();
        self
    }

    /// `{authority}/{tenant}/oauth2/v2.0/token`.
    pub fn token_url(&self) -> Url {
        self.0.token_url()
    }
}

#[async_trait]
impl TokenSource for ClientSecretCredential {
    async fn token(&self) -> Result<String, CloudError> {
        self.0.token().await
    }
}

/// Workload identity federation: the federated token in `AZURE_FEDERATED_TOKEN_FILE` (a Kubernetes
/// service account token the Azure workload identity webhook, or Gardener, projects into the pod)
/// is exchanged for an ARM token — the client-credentials grant with
/// `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer`. The file is read
/// again for every token request, so a rotated token is picked up.
#[derive(Debug)]
pub struct WorkloadIdentityCredential(Entra);

impl WorkloadIdentityCredential {
    /// Refused when the token file cannot be read or is empty.
    pub fn new(tenant: &str, client_id: &str, token_file: &Path) -> Result<WorkloadIdentityCredential, ConfigError> {
        read_token_file(token_file)
            .map_err(|reason| ConfigError::Unusable { name: ENV_FEDERATED_TOKEN_FILE.to_string(), reason })?;
        let auth = ClientAuth::FederatedTokenFile(token_file.to_path_buf());
        Ok(WorkloadIdentityCredential(Entra::new(tenant, client_id, auth)?))
    }

    /// Another Entra ID authority: https, or plain http to a loopback address.
    pub fn with_authority(mut self, authority: Url) -> Result<WorkloadIdentityCredential, ConfigError> {
        self.0.set_authority(authority)?;
        Ok(self)
    }

    /// Another scope (default [`ARM_SCOPE`]).
    pub fn with_scope(mut self, scope: &str) -> WorkloadIdentityCredential {
        self.0.scope = scope.to_string();
        self
    }

    /// `{authority}/{tenant}/oauth2/v2.0/token`.
    pub fn token_url(&self) -> Url {
        self.0.token_url()
    }
}

#[async_trait]
impl TokenSource for WorkloadIdentityCredential {
    async fn token(&self) -> Result<String, CloudError> {
        self.0.token().await
    }
}

/// Where a managed identity gets its tokens.
enum ManagedEndpoint {
    /// `GET {host}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=…` with
    /// `Metadata: true`.
    Imds(Url),
    /// `GET {IDENTITY_ENDPOINT}?api-version=2019-08-01&resource=…` with `X-IDENTITY-HEADER`.
    AppService { url: Url, header: String },
}

/// The managed identity of the Azure resource trellis runs on: a VM or VM scale set (IMDS), or App
/// Service and Functions (`IDENTITY_ENDPOINT` + `IDENTITY_HEADER`). System-assigned, or the
/// user-assigned identity with the given client id.
pub struct ManagedIdentityCredential {
    endpoint: ManagedEndpoint,
    client_id: Option<String>,
    resource: String,
    http: reqwest::Client,
    cache: TokenCache,
}

impl std::fmt::Debug for ManagedIdentityCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("ManagedIdentityCredential");
        match &self.endpoint {
            ManagedEndpoint::Imds(url) => d.field("imds", &url.as_str()),
            ManagedEndpoint::AppService { url, .. } => {
                d.field("app_service", &url.as_str()).field("header", &"<redacted>")
            }
        };
        d.field("client_id", &self.client_id).finish()
    }
}

/// `https://management.azure.com/.default` → `https://management.azure.com/` (managed identity
/// endpoints take a resource, not a scope).
fn resource_of(scope: &str) -> String {
    scope.strip_suffix(".default").unwrap_or(scope).to_string()
}

impl ManagedIdentityCredential {
    /// IMDS at [`DEFAULT_IMDS_HOST`]; `client_id` selects a user-assigned identity.
    pub fn imds(client_id: Option<&str>) -> Result<ManagedIdentityCredential, ConfigError> {
        let host = Url::parse(DEFAULT_IMDS_HOST).expect("the IMDS host is a URL");
        ManagedIdentityCredential::new(ManagedEndpoint::Imds(host), client_id)
    }

    /// App Service / Functions: the platform's `IDENTITY_ENDPOINT` and `IDENTITY_HEADER`.
    pub fn app_service(
        endpoint: Url,
        header: &str,
        client_id: Option<&str>,
    ) -> Result<ManagedIdentityCredential, ConfigError> {
        UrlRule::ManagedIdentity.check(ENV_IDENTITY_ENDPOINT, &endpoint)?;
        ManagedIdentityCredential::new(
            ManagedEndpoint::AppService { url: endpoint, header: header.to_string() },
            client_id,
        )
    }

    fn new(endpoint: ManagedEndpoint, client_id: Option<&str>) -> Result<ManagedIdentityCredential, ConfigError> {
        Ok(ManagedIdentityCredential {
            endpoint,
            client_id: client_id.map(str::to_string),
            resource: resource_of(ARM_SCOPE),
            http: trellis_http::client().map_err(ConfigError::Http)?,
            cache: TokenCache::default(),
        })
    }

    /// IMDS on another host (tests; `AZURE_POD_IDENTITY_AUTHORITY_HOST`): https, or plain http to
    /// a loopback or link-local address. No effect on an App Service identity.
    pub fn with_imds_host(mut self, host: Url) -> Result<ManagedIdentityCredential, ConfigError> {
        UrlRule::ManagedIdentity.check(ENV_IMDS_HOST, &host)?;
        if let ManagedEndpoint::Imds(url) = &mut self.endpoint {
            *url = host;
        }
        Ok(self)
    }

    /// Another scope (default [`ARM_SCOPE`]).
    pub fn with_scope(mut self, scope: &str) -> ManagedIdentityCredential {
        self.resource = resource_of(scope);
        self
    }

    /// The URL a token is requested from.
    pub fn token_url(&self) -> Url {
        let (mut url, api_version) = match &self.endpoint {
            ManagedEndpoint::Imds(host) => {
                let mut url = host.clone();
                let base = url.path().trim_end_matches('/').to_string();
                url.set_path(&format!("{base}{IMDS_PATH}"));
                url.set_query(None);
                (url, IMDS_API_VERSION)
            }
            ManagedEndpoint::AppService { url, .. } => (url.clone(), APP_SERVICE_API_VERSION),
        };
        url.set_fragment(None);
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("api-version", api_version).append_pair("resource", &self.resource);
            if let Some(id) = &self.client_id {
                q.append_pair("client_id", id);
            }
        }
        url
    }

    async fn fetch(&self) -> Result<(String, Duration), CloudError> {
        let url = self.token_url();
        let target = format!("managed identity endpoint {url}");
        match &self.endpoint {
            ManagedEndpoint::Imds(_) => {
                let req = self.http.get(url).header("Metadata", "true");
                request_token(req, &target, ENV_IMDS_HOST, &[]).await
            }
            ManagedEndpoint::AppService { header, .. } => {
                let req = self.http.get(url).header("X-IDENTITY-HEADER", header.as_str());
                request_token(req, &target, ENV_IDENTITY_ENDPOINT, &[header]).await
            }
        }
    }
}

#[async_trait]
impl TokenSource for ManagedIdentityCredential {
    async fn token(&self) -> Result<String, CloudError> {
        self.cache.get(self.fetch()).await
    }
}

/// The credential the environment selects, in the order of the Azure SDKs'
/// `DefaultAzureCredential` (without its developer sign-ins):
///
/// 1. `AZURE_CLIENT_SECRET` set: a service principal (`AZURE_TENANT_ID`, `AZURE_CLIENT_ID`).
/// 2. `AZURE_FEDERATED_TOKEN_FILE` set: workload identity (`AZURE_TENANT_ID`, `AZURE_CLIENT_ID`).
/// 3. A managed identity (`AZURE_CLIENT_ID`, when set, picks a user-assigned one): App Service when
///    `IDENTITY_ENDPOINT` is set; IMDS when `AZURE_POD_IDENTITY_AUTHORITY_HOST` is set or
///    `AZURE_TOKEN_CREDENTIALS` asks for it (`prod` or `ManagedIdentityCredential`). trellis does
///    not probe IMDS on its own: without any of these it says what to set.
///
/// `AZURE_TOKEN_CREDENTIALS` narrows the choice as in the SDKs: `EnvironmentCredential`,
/// `WorkloadIdentityCredential` or `ManagedIdentityCredential` use only that one; `prod` is the
/// whole order, IMDS last. `AZURE_AUTHORITY_HOST` applies to 1 and 2.
#[derive(Debug)]
pub enum EnvCredential {
    ClientSecret(ClientSecretCredential),
    WorkloadIdentity(WorkloadIdentityCredential),
    ManagedIdentity(ManagedIdentityCredential),
}

impl EnvCredential {
    /// From the process environment.
    pub fn from_env() -> Result<EnvCredential, ConfigError> {
        EnvCredential::from_vars(|name| std::env::var(name).ok())
    }

    /// [`EnvCredential::from_env`] over any variable lookup (tests). Makes no network call.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<EnvCredential, ConfigError> {
        let get = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let choice = get(ENV_TOKEN_CREDENTIALS);
        match choice.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None => EnvCredential::chain(&get, false),
            Some("prod") => EnvCredential::chain(&get, true),
            Some("environmentcredential") => EnvCredential::client_secret(&get),
            Some("workloadidentitycredential") => EnvCredential::workload_identity(&get),
            Some("managedidentitycredential") => EnvCredential::managed_identity(&get),
            Some(_) => Err(ConfigError::Unusable {
                name: ENV_TOKEN_CREDENTIALS.to_string(),
                reason: format!(
                    "'{}' is not supported: use prod, EnvironmentCredential, WorkloadIdentityCredential or ManagedIdentityCredential (developer sign-ins such as the Azure CLI are not)",
                    choice.unwrap_or_default()
                ),
            }),
        }
    }

    fn chain(get: &dyn Fn(&str) -> Option<String>, imds: bool) -> Result<EnvCredential, ConfigError> {
        if get(ENV_CLIENT_SECRET).is_some() {
            return EnvCredential::client_secret(get);
        }
        if get(ENV_CLIENT_CERTIFICATE_PATH).is_some() {
            return Err(ConfigError::Unusable {
                name: ENV_CLIENT_CERTIFICATE_PATH.to_string(),
                reason: "client certificates are not supported: use a client secret (AZURE_CLIENT_SECRET), workload identity (AZURE_FEDERATED_TOKEN_FILE) or a managed identity".to_string(),
            });
        }
        if get(ENV_FEDERATED_TOKEN_FILE).is_some() {
            return EnvCredential::workload_identity(get);
        }
        if imds || get(ENV_IDENTITY_ENDPOINT).is_some() || get(ENV_IMDS_HOST).is_some() {
            return EnvCredential::managed_identity(get);
        }
        Err(ConfigError::NoCredentials)
    }

    /// The variables `names` (all needed by `what`), or an error naming the missing ones.
    fn require<const N: usize>(
        get: &dyn Fn(&str) -> Option<String>,
        names: [&str; N],
        what: &'static str,
    ) -> Result<[String; N], ConfigError> {
        let values = names.map(get);
        let missing: Vec<String> =
            names.iter().zip(&values).filter(|(_, v)| v.is_none()).map(|(n, _)| n.to_string()).collect();
        if !missing.is_empty() {
            return Err(ConfigError::MissingEnv { names: missing, what });
        }
        Ok(values.map(Option::unwrap_or_default))
    }

    fn authority(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<Url>, ConfigError> {
        get(ENV_AUTHORITY_HOST).map(|a| crate::parse_url(ENV_AUTHORITY_HOST, &a)).transpose()
    }

    fn client_secret(get: &dyn Fn(&str) -> Option<String>) -> Result<EnvCredential, ConfigError> {
        let [tenant, client, secret] =
            EnvCredential::require(get, [ENV_TENANT_ID, ENV_CLIENT_ID, ENV_CLIENT_SECRET], "a service principal")?;
        let mut cred = ClientSecretCredential::new(&tenant, &client, &secret)?;
        if let Some(authority) = EnvCredential::authority(get)? {
            cred = cred.with_authority(authority)?;
        }
        Ok(EnvCredential::ClientSecret(cred))
    }

    fn workload_identity(get: &dyn Fn(&str) -> Option<String>) -> Result<EnvCredential, ConfigError> {
        let [tenant, client, file] =
            EnvCredential::require(get, [ENV_TENANT_ID, ENV_CLIENT_ID, ENV_FEDERATED_TOKEN_FILE], "workload identity")?;
        let mut cred = WorkloadIdentityCredential::new(&tenant, &client, Path::new(&file))?;
        if let Some(authority) = EnvCredential::authority(get)? {
            cred = cred.with_authority(authority)?;
        }
        Ok(EnvCredential::WorkloadIdentity(cred))
    }

    fn managed_identity(get: &dyn Fn(&str) -> Option<String>) -> Result<EnvCredential, ConfigError> {
        let client_id = get(ENV_CLIENT_ID);
        let cred = match get(ENV_IDENTITY_ENDPOINT) {
            Some(endpoint) => {
                let [header] = EnvCredential::require(get, [ENV_IDENTITY_HEADER], "an App Service managed identity")?;
                let url = parse_url_as(ENV_IDENTITY_ENDPOINT, &endpoint, UrlRule::ManagedIdentity)?;
                ManagedIdentityCredential::app_service(url, &header, client_id.as_deref())?
            }
            None => {
                let cred = ManagedIdentityCredential::imds(client_id.as_deref())?;
                match get(ENV_IMDS_HOST) {
                    Some(host) => cred.with_imds_host(parse_url_as(ENV_IMDS_HOST, &host, UrlRule::ManagedIdentity)?)?,
                    None => cred,
                }
            }
        };
        Ok(EnvCredential::ManagedIdentity(cred))
    }
}

#[async_trait]
impl TokenSource for EnvCredential {
    async fn token(&self) -> Result<String, CloudError> {
        match self {
            EnvCredential::ClientSecret(c) => c.token().await,
            EnvCredential::WorkloadIdentity(c) => c.token().await,
            EnvCredential::ManagedIdentity(c) => c.token().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    fn token_file(content: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), content).unwrap();
        file
    }

    #[test]
    fn a_service_principal_names_every_missing_variable() {
        let err = EnvCredential::from_vars(vars(&[(ENV_CLIENT_SECRET, "s")])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("AZURE_TENANT_ID, AZURE_CLIENT_ID"), "{text}");
        assert!(!text.contains("AZURE_CLIENT_SECRET"), "{text}");
    }

    #[test]
    fn token_url_appends_the_tenant_to_the_authority() {
        let cred = EnvCredential::from_vars(vars(&[
            (ENV_TENANT_ID, "my-tenant"),
            (ENV_CLIENT_ID, "c"),
            (ENV_CLIENT_SECRET, "s"),
            (ENV_AUTHORITY_HOST, "http://127.0.0.1:9/"),
        ]))
        .unwrap();
        let EnvCredential::ClientSecret(cred) = cred else { panic!("{cred:?}") };
        assert_eq!(cred.token_url().as_str(), "http://127.0.0.1:9/my-tenant/oauth2/v2.0/token");
        let default = ClientSecretCredential::new("t", "c", "s").unwrap();
        assert_eq!(default.token_url().as_str(), "https://login.microsoftonline.com/t/oauth2/v2.0/token");
        assert!(!format!("{cred:?}").contains("\"s\""));
    }

    #[test]
    fn regression_the_environment_selects_secret_then_workload_identity_then_managed_identity() {
        let file = token_file("eyJ.eyJ.sig\n");
        let path = file.path().to_str().unwrap();
        let base = [(ENV_TENANT_ID, "t"), (ENV_CLIENT_ID, "c")];
        let with = |extra: &[(&str, &str)]| {
            let mut all = base.to_vec();
            all.extend_from_slice(extra);
            EnvCredential::from_vars(vars(&all))
        };
        // Secret first, even with a token file.
        assert!(matches!(
            with(&[(ENV_CLIENT_SECRET, "s"), (ENV_FEDERATED_TOKEN_FILE, path)]),
            Ok(EnvCredential::ClientSecret(_))
        ));
        // Then workload identity, even with a managed identity endpoint.
        assert!(matches!(
            with(&[(ENV_FEDERATED_TOKEN_FILE, path), (ENV_IDENTITY_ENDPOINT, "http://127.0.0.1:1/msi/token")]),
            Ok(EnvCredential::WorkloadIdentity(_))
        ));
        // Then a managed identity: App Service when the platform set its endpoint…
        let cred = with(&[(ENV_IDENTITY_ENDPOINT, "http://169.254.129.5:8081/msi/token"), (ENV_IDENTITY_HEADER, "h")]);
        let Ok(EnvCredential::ManagedIdentity(mi)) = cred else { panic!("{cred:?}") };
        assert_eq!(
            mi.token_url().as_str(),
            "http://169.254.129.5:8081/msi/token?api-version=2019-08-01&resource=https%3A%2F%2Fmanagement.azure.com%2F&client_id=c"
        );
        // …IMDS when asked for.
        for choice in ["prod", "ManagedIdentityCredential", "managedidentitycredential"] {
            let cred = EnvCredential::from_vars(vars(&[(ENV_TOKEN_CREDENTIALS, choice)]));
            let Ok(EnvCredential::ManagedIdentity(mi)) = cred else { panic!("{choice}: {cred:?}") };
            assert_eq!(
                mi.token_url().as_str(),
                "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fmanagement.azure.com%2F"
            );
        }
        // AZURE_TOKEN_CREDENTIALS narrows the choice.
        assert!(matches!(
            with(&[
                (ENV_CLIENT_SECRET, "s"),
                (ENV_TOKEN_CREDENTIALS, "WorkloadIdentityCredential"),
                (ENV_FEDERATED_TOKEN_FILE, path)
            ]),
            Ok(EnvCredential::WorkloadIdentity(_))
        ));
        assert!(matches!(
            with(&[(ENV_CLIENT_SECRET, "s"), (ENV_TOKEN_CREDENTIALS, "ManagedIdentityCredential")]),
            Ok(EnvCredential::ManagedIdentity(_))
        ));
        let err = with(&[(ENV_TOKEN_CREDENTIALS, "EnvironmentCredential")]).unwrap_err().to_string();
        assert!(err.contains("AZURE_CLIENT_SECRET"), "{err}");
    }

    #[test]
    fn regression_unusable_credential_settings_are_one_clear_line() {
        let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
            (vec![], "no Azure credentials in the environment"),
            (vec![(ENV_TOKEN_CREDENTIALS, "dev")], "AZURE_TOKEN_CREDENTIALS: 'dev' is not supported"),
            (vec![(ENV_CLIENT_CERTIFICATE_PATH, "/c.pem")], "client certificates are not supported"),
            (vec![(ENV_FEDERATED_TOKEN_FILE, "/nonexistent/token")], "AZURE_TENANT_ID, AZURE_CLIENT_ID"),
            (
                vec![(ENV_TENANT_ID, "t"), (ENV_CLIENT_ID, "c"), (ENV_FEDERATED_TOKEN_FILE, "/nonexistent/token")],
                "AZURE_FEDERATED_TOKEN_FILE: cannot read /nonexistent/token",
            ),
            (
                // A path that never ends is read up to its limit, not until memory runs out.
                vec![(ENV_TENANT_ID, "t"), (ENV_CLIENT_ID, "c"), (ENV_FEDERATED_TOKEN_FILE, "/dev/zero")],
                "AZURE_FEDERATED_TOKEN_FILE: /dev/zero is larger than 1 MiB, which no token file is",
            ),
            (vec![(ENV_IDENTITY_ENDPOINT, "http://127.0.0.1:1/msi")], "IDENTITY_HEADER"),
            (
                vec![(ENV_IMDS_HOST, "http://imds.example.com")],
                "AZURE_POD_IDENTITY_AUTHORITY_HOST: 'http://imds.example.com/' is plain http",
            ),
        ];
        for (pairs, says) in cases {
            let err = EnvCredential::from_vars(vars(&pairs)).unwrap_err().to_string();
            assert!(err.contains(says), "{pairs:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        let empty = token_file(" \n");
        let pairs =
            [(ENV_TENANT_ID, "t"), (ENV_CLIENT_ID, "c"), (ENV_FEDERATED_TOKEN_FILE, empty.path().to_str().unwrap())];
        let err = EnvCredential::from_vars(vars(&pairs)).unwrap_err().to_string();
        assert!(err.contains("is empty"), "{err}");
        // Binary content: over the limit it is the size's error (it was "stream did not contain valid
        // UTF-8"), under it, "not text".
        for (len, says) in
            [(2 << 20, "is larger than 1 MiB, which no token file is"), (64, "is not text (not valid UTF-8)")]
        {
            let binary = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(binary.path(), vec![0xff_u8; len]).unwrap();
            let pairs = [
                (ENV_TENANT_ID, "t"),
                (ENV_CLIENT_ID, "c"),
                (ENV_FEDERATED_TOKEN_FILE, binary.path().to_str().unwrap()),
            ];
            let err = EnvCredential::from_vars(vars(&pairs)).unwrap_err().to_string();
            assert!(err.contains(says), "{len} bytes: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }

    #[test]
    fn lifetimes_from_expires_in_or_expires_on() {
        assert_eq!(lifetime(&serde_json::json!({"expires_in": 3599})), Duration::from_secs(3599));
        assert_eq!(lifetime(&serde_json::json!({"expires_in": "86399"})), Duration::from_secs(86399));
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        let on = lifetime(&serde_json::json!({"expires_on": (now + 600).to_string()}));
        assert!(on <= Duration::from_secs(600) && on >= Duration::from_secs(590), "{on:?}");
        assert_eq!(lifetime(&serde_json::json!({})), Duration::from_secs(300));
    }
}
