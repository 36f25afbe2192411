//! Issue #6 items 12 and 13: no secret or token in any error text, no redirect followed with
//! credentials, and credentials only over https (plain http only to loopback addresses).
//!
//! Every server here listens on 127.0.0.1. Where a test needs an address that is *not* loopback by
//! name, it uses `0.0.0.0`: not a loopback address (so trellis must refuse plain http to it), yet
//! Linux delivers a connection to 0.0.0.0 to this machine, so even a client that wrongly connects
//! never sends anything off the machine — and the fake records that it did.

use crate::common;

use common::{token_answer, Answer, Fake};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use trellis_azure_client::{ArmClient, ClientSecretCredential, EnvCredential, StaticToken, TokenSource, Url};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite};

const RG: &str = "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/rg";

/// A client secret as Entra ID issues them (40 characters, with `~` `.` `_` `-`), plus characters
/// that form encoding changes, so both spellings must be redacted.
const SECRET: &str = "Qx8Q~aB3.dEf_gHiJkLmN-oPqRsTuVwXyZ0123+/=";
/// An access token as Entra ID issues them: a JWT.
const JWT: &str =
    "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL21hbmFnZW1lbnQuYXp1cmUuY29tIn0.c2lnbmF0dXJlLXBhcnQ";
/// A bearer token that does not look like a JWT (only its use in `Authorization` gives it away).
const OPAQUE: &str = "opaque-arm-token-0123456789abcdef";

fn arm(url: &str, token: &str) -> ArmClient {
    ArmClient::new(Url::parse(url).unwrap(), Arc::new(StaticToken(token.into())))
        .unwrap()
        .with_lro_poll_cap(Duration::from_millis(20))
        .with_request_timeout(Duration::from_secs(10))
}

fn assert_clean(text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "{s:?} leaked into: {text}");
        let encoded: String = form_urlencoded::byte_serialize(s.as_bytes()).collect();
        assert!(!text.contains(&encoded), "{encoded:?} leaked into: {text}");
    }
}

#[tokio::test]
async fn regression_token_endpoint_echo_is_redacted() {
    // An endpoint (a proxy, a misconfigured authority) that echoes the request in its error.
    let json_echo =
        Fake::start(|hit| Answer::json(401, json!({"error": "invalid_client", "error_description": hit.echo()}))).await;
    let text_echo = Fake::start(|hit| Answer::text(502, hit.echo())).await;
    for fake in [&json_echo, &text_echo] {
        let cred = ClientSecretCredential::new("my-tenant", "app-id", SECRET)
            .unwrap()
            .with_authority(Url::parse(&fake.url()).unwrap())
            .unwrap();
        let err = cred.token().await.unwrap_err();
        let text = format!("{err} {err:?}");
        assert!(fake.hits()[0].body.contains("client_secret="), "the fake saw the secret: {:?}", fake.hits());
        assert_clean(&text, &[SECRET]);
        assert!(text.contains("client_secret=<redacted>"), "{text}");
        assert!(text.contains("/my-tenant/oauth2/v2.0/token"), "the message still says where: {text}");
    }
}

#[tokio::test]
async fn regression_arm_error_echo_is_redacted() {
    // An ARM endpoint whose errors echo the request headers, and tokens in JSON fields.
    let fake = Fake::start(|hit| {
        let extra = r#"{"access_token": "leaked-access-token-value", "refresh_token": "leaked-refresh-token-value"}"#;
        match hit.method.as_str() {
            "GET" => Answer::json(
                400,
                json!({"error": {"code": "BadRequest", "message": format!("{} {extra}", hit.echo())}}),
            ),
            _ => Answer::text(500, format!("{} {extra}", hit.echo())),
        }
    })
    .await;
    for token in [JWT, OPAQUE] {
        let client = arm(&fake.url(), token);
        let get = client.get(RG).await.unwrap_err();
        let put = client.put(RG, json!({"location": "westeurope"})).await.unwrap_err();
        for err in [get, put] {
            let text = format!("{err} {err:?}");
            assert!(text.contains("Bearer <redacted>"), "{text}");
            assert_clean(&text, &[token, "leaked-access-token-value", "leaked-refresh-token-value"]);
            assert!(text.contains(RG), "the message still says where: {text}");
        }
    }
    assert!(fake.hits().iter().any(|h| h.header("authorization") == Some(&format!("Bearer {OPAQUE}"))));
}

#[tokio::test]
async fn regression_token_endpoint_redirect_is_not_followed() {
    let elsewhere = Fake::start(|_| token_answer("stolen", 3600)).await;
    let location = format!("{}/steal/oauth2/v2.0/token", elsewhere.url());
    for status in [307, 308, 302] {
        let loc = location.clone();
        let authority = Fake::start(move |_| Answer::redirect(status, &loc)).await;
        let cred = ClientSecretCredential::new("my-tenant", "app-id", SECRET)
            .unwrap()
            .with_authority(Url::parse(&authority.url()).unwrap())
            .unwrap();
        let err = cred.token().await.unwrap_err();
        let text = err.to_string();
        assert!(elsewhere.hits().is_empty(), "the secret was sent on to {location}: {:?}", elsewhere.hits());
        assert!(text.contains(&location) && text.contains(&format!("HTTP {status}")), "{text}");
        assert!(!err.is_transient(), "a redirect is not retried: {err:?}");
        assert_eq!(authority.hits().len(), 1);
    }
}

#[tokio::test]
async fn regression_arm_redirect_is_not_followed() {
    let elsewhere = Fake::start(|_| Answer::json(200, json!({"id": RG, "name": "rg"}))).await;
    let location = format!("{}{RG}?api-version=2021-04-01", elsewhere.url());
    let loc = location.clone();
    let endpoint = Fake::start(move |_| Answer::redirect(302, &loc)).await;
    let client = arm(&endpoint.url(), OPAQUE);
    let err = client.get(RG).await.unwrap_err();
    let text = err.to_string();
    assert!(elsewhere.hits().is_empty(), "the client followed the redirect: {:?}", elsewhere.hits());
    assert!(text.contains(&location) && text.contains("HTTP 302"), "{text}");
    assert!(!err.is_transient(), "{err:?}");
    let err = client.delete(RG).await.unwrap_err();
    assert!(err.to_string().contains(&location), "{err}");
    assert!(elsewhere.hits().is_empty());
}

#[tokio::test]
async fn regression_insecure_authority_is_refused() {
    let fake = Fake::start(|_| token_answer("t", 3600)).await;
    let authority = format!("http://0.0.0.0:{}", fake.port);
    let vars = |name: &str| {
        Some(match name {
            "AZURE_TENANT_ID" => "tenant".to_string(),
            "AZURE_CLIENT_ID" => "client".to_string(),
            "AZURE_CLIENT_SECRET" => SECRET.to_string(),
            "AZURE_AUTHORITY_HOST" => authority.clone(),
            _ => return None,
        })
    };
    match EnvCredential::from_vars(vars) {
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("AZURE_AUTHORITY_HOST") && text.contains(&authority), "{text}");
            assert!(text.contains("https"), "{text}");
        }
        Ok(cred) => {
            let got = cred.token().await;
            panic!("plain http to {authority} was accepted ({got:?}); the fake received {:?}", fake.hits());
        }
    }
    assert!(fake.hits().is_empty());
}

#[tokio::test]
async fn regression_insecure_arm_endpoint_is_refused() {
    let fake = Fake::start(|_| Answer::json(200, json!({"id": RG}))).await;
    let endpoint = format!("http://0.0.0.0:{}", fake.port);
    match ArmClient::new(Url::parse(&endpoint).unwrap(), Arc::new(StaticToken(OPAQUE.into()))) {
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains(&endpoint) && text.contains("https"), "{text}");
        }
        Ok(client) => {
            let got = client.get(RG).await;
            panic!("plain http to {endpoint} was accepted ({got:?}); the fake received {:?}", fake.hits());
        }
    }
    assert!(fake.hits().is_empty());
}

#[tokio::test]
async fn a_long_running_operation_elsewhere_is_never_polled_with_the_token() {
    // Polls carry the token, so their URL must be on the endpoint's own origin; an operation URL
    // over plain http to a non-loopback address is never requested.
    let elsewhere = Fake::start(|_| Answer::json(200, json!({"status": "Succeeded"}))).await;
    for poll in [format!("http://0.0.0.0:{}/op", elsewhere.port), format!("{}/op", elsewhere.url())] {
        let p = poll.clone();
        let endpoint = Fake::start(move |_| Answer {
            status: 201,
            headers: vec![("azure-asyncoperation".into(), p.clone()), ("retry-after".into(), "0".into())],
            body: json!({"id": RG}).to_string(),
        })
        .await;
        let err = arm(&endpoint.url(), OPAQUE).put(RG, json!({"location": "westeurope"})).await.unwrap_err();
        assert!(matches!(&err, CloudError::Rejected { .. }), "{err:?}");
        assert!(err.to_string().contains(&poll), "{err}");
        assert!(elsewhere.hits().is_empty(), "polled {poll}: {:?}", elsewhere.hits());
    }
}

#[tokio::test]
async fn regression_a_secret_straddling_the_quoted_part_of_an_answer_is_redacted_whole() {
    // A plain-text error body is quoted up to 300 characters. The token starts before the cut and
    // ends after it: cut first, its first half was printed (no pattern matched it any more).
    for pad in [270, 285, 295] {
        let fake = Fake::start(move |hit| {
            let token = hit.header("authorization").unwrap_or("").trim_start_matches("Bearer ").to_string();
            Answer::text(400, format!("{} you sent {token} which is not valid here at all", "x".repeat(pad)))
        })
        .await;
        for token in [JWT, OPAQUE] {
            let err = arm(&fake.url(), token).get(RG).await.unwrap_err();
            let text = format!("{err} {err:?}");
            for part in [&token[..12], &token[token.len() - 12..]] {
                assert!(!text.contains(part), "part {part:?} of the token leaked (pad {pad}): {text}");
            }
        }
    }
}

#[tokio::test]
async fn regression_an_oversized_answer_is_refused_without_being_read_whole() {
    // Valid JSON, far larger than the limit: refused while reading, in one line, not retried.
    let big = format!(r#"{{"id": "{RG}", "name": "rg", "tags": {{"x": "{}"}}}}"#, "a".repeat(2 << 20));
    let fake = Fake::start(move |_| Answer { status: 200, headers: vec![], body: big.clone() }).await;
    let client = arm(&fake.url(), OPAQUE).with_response_limit(1 << 20);
    let err = client.get(RG).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(&err, CloudError::Rejected { code, .. } if code == "ResponseTooLarge"), "{err:?}");
    assert!(text.contains("larger than 1 MiB") && text.contains(RG), "{text}");
    assert!(!err.is_transient(), "{err:?}");
    assert!(!text.contains('\n'));
    // Under the limit the same answer is read.
    let fine = arm(&fake.url(), OPAQUE).with_response_limit(4 << 20);
    assert_eq!(fine.get(RG).await.unwrap().unwrap()["name"], "rg");
}

#[tokio::test]
async fn regression_an_answer_for_another_resource_is_refused() {
    // A GET answered with another resource group (a proxy, a broken endpoint) was taken for the
    // one asked for; a list item from elsewhere likewise.
    let other = "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/someone-elses";
    let fake = Fake::start(move |hit| {
        if hit.path().ends_with("/providers/Microsoft.Network/virtualNetworks") {
            Answer::json(
                200,
                json!({"value": [{"id": format!("{other}/providers/Microsoft.Network/virtualNetworks/v")}]}),
            )
        } else {
            Answer::json(200, json!({"id": other, "name": "someone-elses", "location": "westeurope"}))
        }
    })
    .await;
    let client = arm(&fake.url(), OPAQUE);
    let err = client.get(RG).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(&err, CloudError::Rejected { code, .. } if code == "WrongResource"), "{err:?}");
    assert!(text.contains(other) && text.contains(RG), "{text}");
    let err = client.list(RG, "Microsoft.Network/virtualNetworks").await.unwrap_err();
    assert!(err.to_string().contains("someone-elses"), "{err}");
    // The id compares as ARM compares ids: without regard to case.
    let same = Fake::start(|_| Answer::json(200, json!({"id": RG.to_uppercase(), "name": "rg"}))).await;
    assert!(arm(&same.url(), OPAQUE).get(RG).await.unwrap().is_some());
}

#[tokio::test]
async fn regression_an_operation_answering_retry_after_zero_is_not_polled_in_a_tight_loop() {
    // `Retry-After: 0` on every poll was obeyed: ~22 polls a second. Polls wait at least 1 s, so
    // an operation that never ends is polled at most twice before a 2.5 s operation timeout.
    let fake = Fake::start(|hit| {
        let zero = vec![("retry-after".into(), "0".into())];
        match hit.method.as_str() {
            "PUT" => Answer {
                status: 201,
                headers: [zero.clone(), vec![("azure-asyncoperation".into(), "/op".into())]].concat(),
                body: json!({"id": RG}).to_string(),
            },
            _ => Answer { status: 200, headers: zero, body: json!({"status": "InProgress"}).to_string() },
        }
    })
    .await;
    let client = ArmClient::new(Url::parse(&fake.url()).unwrap(), Arc::new(StaticToken(OPAQUE.into())))
        .unwrap()
        .with_lro_timeout(Duration::from_millis(2500));
    let err = client.put(RG, json!({"location": "westeurope"})).await.unwrap_err();
    assert!(matches!(err, CloudError::Timeout { .. }), "{err:?}");
    let polls = fake.hits().iter().filter(|h| h.path() == "/op").count();
    assert!(polls <= 2, "{polls} polls");
}
