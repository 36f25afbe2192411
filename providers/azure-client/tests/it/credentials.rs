//! Issue #6 item 14: workload identity federation and managed identity, against fake endpoints on
//! 127.0.0.1 (IMDS through its host override, never 169.254.169.254).

use crate::common;

use common::{token_answer, Answer, Fake};
use serde_json::json;
use std::collections::HashMap;
use trellis_azure_client::{EnvCredential, TokenSource, JWT_BEARER};
use trellis_planner::cloud::CloudError;

const JWT_1: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6b25lIn0.c2lnLW9uZQ";
const JWT_2: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dHdvIn0.c2lnLXR3bw";
const IDENTITY_HEADER: &str = "5b8a3f0e-2c41-4f7d-9a3e-0d6c1b2a7e94";

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| map.get(name).cloned()
}

#[tokio::test]
async fn regression_workload_identity_exchanges_the_federated_token() {
    // Lifetime 0: every call fetches again, so the test sees the rotated file being read.
    let entra = Fake::start(|hit| {
        let ok = hit.form("grant_type").as_deref() == Some("client_credentials")
            && hit.form("client_assertion_type").as_deref() == Some(JWT_BEARER)
            && hit.form("client_assertion").is_some()
            && hit.form("client_secret").is_none();
        if ok {
            token_answer(&format!("arm-token-for-{}", hit.form("client_assertion").unwrap().len()), 0)
        } else {
            Answer::json(400, json!({"error": "invalid_request", "error_description": "AADSTS90014"}))
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("azure-identity-token");
    std::fs::write(&file, format!("{JWT_1}\n")).unwrap();
    let cred = EnvCredential::from_vars(env(&[
        ("AZURE_TENANT_ID", "my-tenant"),
        ("AZURE_CLIENT_ID", "app-id"),
        ("AZURE_FEDERATED_TOKEN_FILE", file.to_str().unwrap()),
        ("AZURE_AUTHORITY_HOST", &entra.url()),
    ]))
    .unwrap();
    assert!(matches!(cred, EnvCredential::WorkloadIdentity(_)), "{cred:?}");
    assert!(cred.token().await.unwrap().starts_with("arm-token-for-"));

    // Kubernetes rotates the projected token: the next request sends the new one.
    std::fs::write(&file, JWT_2).unwrap();
    cred.token().await.unwrap();
    let hits = entra.hits();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].path(), "/my-tenant/oauth2/v2.0/token");
    assert_eq!(hits[0].form("client_assertion").as_deref(), Some(JWT_1));
    assert_eq!(hits[1].form("client_assertion").as_deref(), Some(JWT_2));
    assert_eq!(hits[0].form("client_id").as_deref(), Some("app-id"));
    assert_eq!(hits[0].form("scope").as_deref(), Some("https://management.azure.com/.default"));

    // The file disappears: a clear error naming it, no request.
    std::fs::remove_file(&file).unwrap();
    let err = cred.token().await.unwrap_err();
    assert!(matches!(&err, CloudError::Rejected { code, .. } if code == "FederatedTokenUnreadable"), "{err:?}");
    assert!(err.to_string().contains(file.to_str().unwrap()), "{err}");
    assert_eq!(entra.hits().len(), 2);
}

#[tokio::test]
async fn regression_a_federated_token_echoed_back_is_redacted() {
    let entra = Fake::start(|hit| Answer::text(400, format!("bad request: {}", hit.body))).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    // Not JWT-shaped, so only the literal (known value) redaction can catch it.
    let opaque = "opaque-federated-token-0123456789";
    std::fs::write(&file, opaque).unwrap();
    let cred = EnvCredential::from_vars(env(&[
        ("AZURE_TENANT_ID", "t"),
        ("AZURE_CLIENT_ID", "c"),
        ("AZURE_FEDERATED_TOKEN_FILE", file.to_str().unwrap()),
        ("AZURE_AUTHORITY_HOST", &entra.url()),
    ]))
    .unwrap();
    let err = cred.token().await.unwrap_err().to_string();
    assert!(entra.hits()[0].body.contains(opaque));
    assert!(!err.contains(opaque), "{err}");
    assert!(err.contains("client_assertion=<redacted>"), "{err}");
}

#[tokio::test]
async fn regression_managed_identity_asks_imds() {
    let imds = Fake::start(|hit| {
        if hit.header("metadata") != Some("true") {
            return Answer::json(
                400,
                json!({"error": "invalid_request", "error_description": "Required metadata header not specified"}),
            );
        }
        // IMDS answers its numbers as strings.
        Answer::json(
            200,
            json!({"access_token": "imds-token", "expires_in": "86399", "expires_on": "1900000000",
            "resource": hit.query("resource"), "token_type": "Bearer"}),
        )
    })
    .await;
    for (client_id, expected) in [(None, None), (Some("user-assigned-id"), Some("user-assigned-id"))] {
        let mut vars = vec![("AZURE_TOKEN_CREDENTIALS", "ManagedIdentityCredential")];
        let host = imds.url();
        vars.push(("AZURE_POD_IDENTITY_AUTHORITY_HOST", &host));
        if let Some(id) = client_id {
            vars.push(("AZURE_CLIENT_ID", id));
        }
        let cred = EnvCredential::from_vars(env(&vars)).unwrap();
        assert_eq!(cred.token().await.unwrap(), "imds-token");
        assert_eq!(cred.token().await.unwrap(), "imds-token", "cached");
        let hit = imds.hits().pop().unwrap();
        assert_eq!((hit.method.as_str(), hit.path()), ("GET", "/metadata/identity/oauth2/token"));
        assert_eq!(hit.query("api-version").as_deref(), Some("2018-02-01"));
        assert_eq!(hit.query("resource").as_deref(), Some("https://management.azure.com/"));
        assert_eq!(hit.query("client_id").as_deref(), expected);
    }
    assert_eq!(imds.hits().len(), 2, "one request per credential, then the cache");

    // No identity on this VM: IMDS's own error, as a refusal.
    let none = Fake::start(|_| {
        Answer::json(400, json!({"error": "invalid_request", "error_description": "Identity not found"}))
    })
    .await;
    let host = none.url();
    let cred = EnvCredential::from_vars(env(&[
        ("AZURE_TOKEN_CREDENTIALS", "prod"),
        ("AZURE_POD_IDENTITY_AUTHORITY_HOST", &host),
    ]))
    .unwrap();
    let err = cred.token().await.unwrap_err();
    assert!(
        matches!(&err, CloudError::Rejected { status: 400, message, .. } if message == "Identity not found"),
        "{err:?}"
    );
    assert!(err.to_string().contains("managed identity endpoint http://127.0.0.1:"), "{err}");
}

#[tokio::test]
async fn regression_app_service_managed_identity_sends_its_header_and_redacts_it() {
    let msi = Fake::start(|hit| {
        if hit.header("x-identity-header") == Some(IDENTITY_HEADER) && hit.query("client_id").is_none() {
            Answer::json(
                200,
                json!({"access_token": "app-service-token", "expires_on": "4102444800",
                "resource": "https://management.azure.com/", "token_type": "Bearer"}),
            )
        } else {
            Answer::text(401, format!("unauthorized: {}", hit.echo()))
        }
    })
    .await;
    let endpoint = format!("{}/msi/token", msi.url());
    let cred = EnvCredential::from_vars(env(&[("IDENTITY_ENDPOINT", &endpoint), ("IDENTITY_HEADER", IDENTITY_HEADER)]))
        .unwrap();
    assert_eq!(cred.token().await.unwrap(), "app-service-token");
    let hit = &msi.hits()[0];
    assert_eq!(hit.path(), "/msi/token");
    assert_eq!(hit.query("api-version").as_deref(), Some("2019-08-01"));

    // A wrong identity: the echoed header value never shows.
    let cred = EnvCredential::from_vars(env(&[
        ("IDENTITY_ENDPOINT", &endpoint),
        ("IDENTITY_HEADER", IDENTITY_HEADER),
        ("AZURE_CLIENT_ID", "someone-else"),
    ]))
    .unwrap();
    let err = cred.token().await.unwrap_err().to_string();
    assert!(msi.hits()[1].echo().contains(IDENTITY_HEADER));
    assert!(!err.contains(IDENTITY_HEADER), "{err}");
    assert!(err.contains("<redacted>"), "{err}");
}
