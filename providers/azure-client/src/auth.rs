//! Access tokens for ARM: the [`TokenSource`] trait, a fixed [`StaticToken`] for tests, and
//! [`ClientSecretCredential`] (Entra ID OAuth2 client-credentials flow with caching).

use crate::{status_error, transport_error, ConfigError};
use async_trait::async_trait;
use reqwest::Url;
use serde_json::Value;
use std::time::{Duration, Instant};
use trellis_planner::cloud::CloudError;

/// The Entra ID authority of the public cloud.
pub const DEFAULT_AUTHORITY: &str = "https://login.microsoftonline.com";
/// The scope of an ARM token (public cloud).
pub const ARM_SCOPE: &str = "https://management.azure.com/.default";

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

/// A service principal with a client secret: `POST {authority}/{tenant}/oauth2/v2.0/token` with
/// `grant_type=client_credentials`. The token is cached and refreshed shortly before it expires
/// (5 minutes before, or halfway through a lifetime shorter than 10 minutes); concurrent callers
/// wait for one refresh.
pub struct ClientSecretCredential {
    tenant: String,
    client_id: String,
    secret: String,
    authority: Url,
    scope: String,
    http: reqwest::Client,
    cache: tokio::sync::Mutex<Option<Cached>>,
}

struct Cached {
    token: String,
    refresh_at: Instant,
}

impl std::fmt::Debug for ClientSecretCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSecretCredential")
            .field("tenant", &self.tenant)
            .field("client_id", &self.client_id)
            .field("secret", &"<redacted>")
            .field("authority", &self.authority.as_str())
            .finish()
    }
}

/// The environment variables [`ClientSecretCredential::from_env`] reads (those of azure-identity's
/// `EnvironmentCredential`).
pub const ENV_TENANT_ID: &str = "AZURE_TENANT_ID";
pub const ENV_CLIENT_ID: &str = "AZURE_CLIENT_ID";
pub const ENV_CLIENT_SECRET: &str = "AZURE_CLIENT_SECRET";
/// Optional: the authority (default [`DEFAULT_AUTHORITY`]).
pub const ENV_AUTHORITY_HOST: &str = "AZURE_AUTHORITY_HOST";

impl ClientSecretCredential {
    pub fn new(tenant: &str, client_id: &str, secret: &str) -> Result<ClientSecretCredential, ConfigError> {
        let http = crate::http_client()?;
        Ok(ClientSecretCredential {
            tenant: tenant.to_string(),
            client_id: client_id.to_string(),
            secret: secret.to_string(),
            authority: Url::parse(DEFAULT_AUTHORITY).expect("the default authority is a URL"),
            scope: ARM_SCOPE.to_string(),
            http,
            cache: tokio::sync::Mutex::new(None),
        })
    }

    /// Another Entra ID authority (a sovereign cloud, or a test server).
    pub fn with_authority(mut self, authority: Url) -> ClientSecretCredential {
        self.authority = authority;
        self
    }

    /// Another scope (default [`ARM_SCOPE`]; sovereign clouds have their own).
    pub fn with_scope(mut self, scope: &str) -> ClientSecretCredential {
        self.scope = scope.to_string();
        self
    }

    /// From `AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET` and, optionally,
    /// `AZURE_AUTHORITY_HOST`. The error names every missing variable.
    pub fn from_env() -> Result<ClientSecretCredential, ConfigError> {
        ClientSecretCredential::from_vars(|name| std::env::var(name).ok())
    }

    /// [`ClientSecretCredential::from_env`] over any variable lookup (tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<ClientSecretCredential, ConfigError> {
        let get = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let (tenant, client, secret) = (get(ENV_TENANT_ID), get(ENV_CLIENT_ID), get(ENV_CLIENT_SECRET));
        let missing: Vec<&str> = [(ENV_TENANT_ID, &tenant), (ENV_CLIENT_ID, &client), (ENV_CLIENT_SECRET, &secret)]
            .into_iter()
            .filter(|(_, v)| v.is_none())
            .map(|(name, _)| name)
            .collect();
        let (Some(tenant), Some(client), Some(secret)) = (tenant, client, secret) else {
            return Err(ConfigError::MissingEnv { names: missing.iter().map(|s| s.to_string()).collect() });
        };
        let mut cred = ClientSecretCredential::new(&tenant, &client, &secret)?;
        if let Some(authority) = get(ENV_AUTHORITY_HOST) {
            cred = cred.with_authority(crate::parse_url(ENV_AUTHORITY_HOST, &authority)?);
        }
        Ok(cred)
    }

    /// `{authority}/{tenant}/oauth2/v2.0/token`.
    pub fn token_url(&self) -> Url {
        let mut url = self.authority.clone();
        url.set_query(None);
        url.set_fragment(None);
        if let Ok(mut segs) = url.path_segments_mut() {
            segs.pop_if_empty().push(&self.tenant).extend(["oauth2", "v2.0", "token"]);
        }
        url
    }

    async fn fetch(&self) -> Result<(String, Duration), CloudError> {
        let url = self.token_url();
        let target = format!("token endpoint {url}");
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.secret.as_str()),
            ("scope", self.scope.as_str()),
        ];
        let resp = self
            .http
            .post(url)
            .form(&form)
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .map_err(|e| transport_error(&target, &e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.map_err(|e| transport_error(&target, &e))?;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            // Entra ID errors: {"error": "invalid_client", "error_description": "AADSTS…"}.
            let code = body["error"].as_str().unwrap_or("TokenRequestFailed").to_string();
            let message =
                body["error_description"].as_str().map(str::to_string).unwrap_or_else(|| crate::snippet(&text));
            return Err(status_error(&target, status, &headers, code, message));
        }
        let Some(token) = body["access_token"].as_str().filter(|t| !t.is_empty()) else {
            return Err(CloudError::Server {
                target,
                status: 502,
                message: "the token endpoint answered without an access_token".to_string(),
            });
        };
        // v2 answers a number; v1 and some proxies a string.
        let lifetime = match &body["expires_in"] {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
        .unwrap_or(300);
        Ok((token.to_string(), Duration::from_secs(lifetime)))
    }
}

#[async_trait]
impl TokenSource for ClientSecretCredential {
    async fn token(&self) -> Result<String, CloudError> {
        let mut cache = self.cache.lock().await;
        if let Some(c) = cache.as_ref() {
            if Instant::now() < c.refresh_at {
                return Ok(c.token.clone());
            }
        }
        let (token, lifetime) = self.fetch().await?;
        let margin = Duration::from_secs(300).min(lifetime / 2);
        *cache = Some(Cached { token: token.clone(), refresh_at: Instant::now() + lifetime - margin });
        Ok(token)
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

    #[test]
    fn from_vars_names_every_missing_variable() {
        let err =
            ClientSecretCredential::from_vars(vars(&[(ENV_TENANT_ID, "t"), (ENV_CLIENT_SECRET, " ")])).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("AZURE_CLIENT_ID") && text.contains("AZURE_CLIENT_SECRET"), "{text}");
        assert!(!text.contains("AZURE_TENANT_ID"), "{text}");
    }

    #[test]
    fn token_url_appends_the_tenant_to_the_authority() {
        let cred = ClientSecretCredential::from_vars(vars(&[
            (ENV_TENANT_ID, "my-tenant"),
            (ENV_CLIENT_ID, "c"),
            (ENV_CLIENT_SECRET, "s"),
            (ENV_AUTHORITY_HOST, "http://127.0.0.1:9/"),
        ]))
        .unwrap();
        assert_eq!(cred.token_url().as_str(), "http://127.0.0.1:9/my-tenant/oauth2/v2.0/token");
        let default = ClientSecretCredential::new("t", "c", "s").unwrap();
        assert_eq!(default.token_url().as_str(), "https://login.microsoftonline.com/t/oauth2/v2.0/token");
        assert!(!format!("{cred:?}").contains("\"s\""));
    }
}
