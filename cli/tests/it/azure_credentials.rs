//! `--cloud azure` signs in from the environment (issue #6 items 12 and 14): a service principal
//! with a client secret, workload identity federation, or a managed identity — and never prints a
//! secret, whatever a server echoes.
//!
//! One server on 127.0.0.1 plays Entra ID (the token endpoint), the managed identity endpoint
//! (IMDS, reached through `AZURE_POD_IDENTITY_AUTHORITY_HOST`) and ARM (the simulated cloud of
//! `trellis-sim-http`, which accepts only the token this server issues). Nothing else is contacted.

use crate::common;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use common::*;
use serde_json::json;
use std::process::Command;
use std::sync::{Arc, Mutex};

const SUB: &str = "00000000-0000-0000-0000-0000000000c1";
/// The only token the served ARM accepts.
const ISSUED: &str = "token-issued-by-the-fake-identity-server";
/// A federated (Kubernetes service account) token, as the workload identity webhook projects it.
const ASSERTION: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Z2FyZGVuIn0.c2lnbmVk";
/// A client secret as Entra ID issues them.
const SECRET: &str = "Qx8Q~aB3.dEf_gHiJkLmN-oPqRsTuVwXyZ01234567";

/// What the identity endpoints received, one text per request.
type Seen = Arc<Mutex<Vec<String>>>;

struct Cloud {
    rt: tokio::runtime::Runtime,
    url: String,
    seen: Seen,
    _server: tokio::task::JoinHandle<()>,
}

impl Cloud {
    fn start() -> Cloud {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let seen: Seen = Arc::default();
        let sim = trellis_sim::ArmSim::in_memory(SUB);
        let arm = trellis_sim_http::SimServer::with_options(
            sim,
            trellis_sim_http::ServerOptions { required_token: Some(ISSUED.into()), ..Default::default() },
        );
        let app = Router::new()
            .route("/{tenant}/oauth2/v2.0/token", post(entra))
            .route("/metadata/identity/oauth2/token", get(imds))
            .with_state(seen.clone())
            .fallback_service(arm.router());
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = rt.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Cloud { rt, url, seen, _server: server }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// `trellis ARGS --cloud azure --subscription SUB` against this server, with exactly `vars` as
    /// the credential environment (every other Azure identity variable removed).
    fn command(&self, sb: &Sandbox, args: &[&str], vars: &[(&str, &str)]) -> Command {
        let mut cmd = sb.command(args);
        cmd.args(["--cloud", "azure", "--subscription", SUB]);
        for (name, _) in std::env::vars() {
            if name.starts_with("AZURE_") || name.starts_with("IDENTITY_") || name.starts_with("MSI_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("TRELLIS_AZURE_ENDPOINT", &self.url).env("AZURE_AUTHORITY_HOST", &self.url);
        cmd.envs(vars.iter().copied());
        cmd
    }
}

impl Drop for Cloud {
    fn drop(&mut self) {
        self._server.abort();
        let _ = &self.rt;
    }
}

fn token(status: StatusCode, body: serde_json::Value) -> Response {
    (status, [("content-type", "application/json")], body.to_string()).into_response()
}

/// Entra ID: a client secret or a federated assertion; tenant `echo` answers every request with an
/// error that echoes the request (as a misbehaving proxy might).
async fn entra(
    State(seen): State<Seen>,
    axum::extract::Path(tenant): axum::extract::Path<String>,
    body: Bytes,
) -> Response {
    let text = String::from_utf8_lossy(&body).into_owned();
    seen.lock().unwrap().push(format!("token {tenant} {text}"));
    let form: std::collections::HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
    if tenant == "echo" {
        return token(StatusCode::UNAUTHORIZED, json!({"error": "invalid_client", "error_description": text}));
    }
    let secret_ok = field("client_secret") == SECRET;
    let assertion_ok = field("client_assertion") == ASSERTION
        && field("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
    if field("grant_type") != "client_credentials" || !(secret_ok || assertion_ok) {
        return token(
            StatusCode::UNAUTHORIZED,
            json!({"error": "invalid_client", "error_description": "AADSTS7000215"}),
        );
    }
    token(StatusCode::OK, json!({"token_type": "Bearer", "expires_in": 3600, "access_token": ISSUED}))
}

/// IMDS: `Metadata: true` required, `expires_in` as a string (as IMDS answers).
async fn imds(State(seen): State<Seen>, uri: Uri, headers: HeaderMap) -> Response {
    seen.lock().unwrap().push(format!("imds {uri} metadata={:?}", headers.get("metadata")));
    if headers.get("metadata").and_then(|v| v.to_str().ok()) != Some("true") {
        return token(
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_request", "error_description": "Required metadata header not specified"}),
        );
    }
    token(
        StatusCode::OK,
        json!({"token_type": "Bearer", "expires_in": "3599", "access_token": ISSUED,
        "resource": "https://management.azure.com/"}),
    )
}

#[test]
fn regression_workload_identity_signs_in_from_the_environment() {
    let cloud = Cloud::start();
    let sb = Sandbox::new();
    let token_file = sb.file("azure-identity-token");
    std::fs::write(&token_file, format!("{ASSERTION}\n")).unwrap();
    let vars =
        [("AZURE_TENANT_ID", "my-tenant"), ("AZURE_CLIENT_ID", "app-id"), ("AZURE_FEDERATED_TOKEN_FILE", &token_file)];
    let run = finish(&mut cloud.command(&sb, &["plan", "-f", &a1()], &vars));
    run.code(0).stdout_has("Plan: 5 to create");
    let seen = cloud.seen();
    assert!(seen.iter().any(|s| s.starts_with("token my-tenant ") && s.contains("client_assertion=")), "{seen:?}");
    assert!(seen.iter().all(|s| !s.contains("client_secret")), "{seen:?}");
}

#[test]
fn regression_managed_identity_signs_in_from_the_environment() {
    let cloud = Cloud::start();
    let sb = Sandbox::new();
    let vars =
        [("AZURE_TOKEN_CREDENTIALS", "ManagedIdentityCredential"), ("AZURE_POD_IDENTITY_AUTHORITY_HOST", &cloud.url)];
    let run = finish(&mut cloud.command(&sb, &["plan", "-f", &a1()], &vars));
    run.code(0).stdout_has("Plan: 5 to create");
    let seen = cloud.seen();
    assert!(seen.iter().any(|s| s.starts_with("imds ") && s.contains("api-version=2018-02-01")), "{seen:?}");
}

#[test]
fn regression_secrets_echoed_by_the_token_endpoint_are_not_printed() {
    let cloud = Cloud::start();
    let sb = Sandbox::new();
    let vars = [("AZURE_TENANT_ID", "echo"), ("AZURE_CLIENT_ID", "app-id"), ("AZURE_CLIENT_SECRET", SECRET)];
    let run = finish(&mut cloud.command(&sb, &["plan", "-f", &a1()], &vars)).code(1);
    assert!(cloud.seen().iter().any(|s| s.contains("client_secret=")), "the server saw the secret");
    let encoded: String = form_urlencoded::byte_serialize(SECRET.as_bytes()).collect();
    for text in [&run.stdout, &run.stderr] {
        assert!(!text.contains(SECRET) && !text.contains(&encoded), "the secret was printed:\n{text}");
    }
    let run = run.stderr_has("client_secret=<redacted>").stderr_has("/echo/oauth2/v2.0/token");
    assert_eq!(run.stderr_lines().len(), 1, "one line: {}", run.stderr);
}
