//! The hardening issue's GCP findings: no token or key in any error text (1), answers bounded and
//! checked against the resource asked for (5), bounded time — request timeouts, no retries of the
//! client's own under the engine's, operation polls with a floor (6), redaction before truncation
//! (7), no redirects followed (8). Every server here listens on 127.0.0.1.

use crate::common;

use common::{Answer, Fake, Silent};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use trellis_gcp_client::{Credentials, GcpClient, GcpOptions, Url, COMPUTE_URL, MIN_POLL_WAIT};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite};
use trellis_planner::retry::RetryPolicy;

const NET: &str = "projects/p/global/networks/vpc-a";
const FIREWALL: &str = "projects/p/global/firewalls/fw-ssh";
const SA: &str = "projects/p/serviceAccounts/shoot@p.iam.gserviceaccount.com";
/// An access token as Google's token endpoints issue them (opaque, not a JWT).
const OPAQUE: &str = "ya29.a0AfB_byC3x9Qm-opaque-access-token-0123456789abcdef";
/// A bound no test should reach: a hang fails the test instead of stalling the suite.
const NEVER: Duration = Duration::from_secs(120);

fn key_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/throwaway-service-account.json")
}

fn key() -> Value {
    serde_json::from_slice(&std::fs::read(key_path()).unwrap()).unwrap()
}

/// The key's secrets: its id and every line of its private key.
fn key_secrets() -> Vec<String> {
    let key = key();
    let mut out: Vec<String> = key["private_key"]
        .as_str()
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .map(str::to_string)
        .collect();
    out.push(key["private_key_id"].as_str().unwrap().to_string());
    out
}

fn opts() -> GcpOptions {
    GcpOptions {
        request_timeout: Duration::from_secs(10),
        operation_timeout: Duration::from_secs(10),
        poll_interval: Duration::ZERO,
        ..GcpOptions::default()
    }
}

async fn client(url: &str, creds: Credentials, opts: GcpOptions) -> GcpClient {
    GcpClient::with_options("p", Some(Url::parse(url).unwrap()), creds, opts).await.expect("client")
}

fn network(project: &str) -> Value {
    json!({"kind": "compute#network", "name": "vpc-a", "autoCreateSubnetworks": false,
        "selfLink": format!("{COMPUTE_URL}projects/{project}/global/networks/vpc-a")})
}

fn assert_clean(text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "{s:?} leaked into: {text}");
    }
}

/// The bearer token a fake received (the client's self-signed JWT).
fn sent_token(fake: &Fake) -> String {
    let hits = fake.hits();
    let auth = hits.iter().find_map(|h| h.header("authorization")).expect("a signed request");
    auth.strip_prefix("Bearer ").expect("a bearer token").to_string()
}

#[tokio::test]
async fn regression_an_echoed_token_or_key_is_redacted_from_every_error() {
    // A GCE endpoint (a proxy, a debugging front) whose errors echo the request — its
    // Authorization header — and other credentials, in GCE's JSON error and as plain text.
    let key = key();
    let leaks = format!(
        r#"{{"access_token": "{OPAQUE}"}} Authorization: Bearer {OPAQUE} key {} {}"#,
        key["private_key_id"].as_str().unwrap(),
        key["private_key"].as_str().unwrap()
    );
    let l = leaks.clone();
    let json_echo = Fake::start(move |hit| {
        let auth = hit.header("authorization").unwrap_or("").to_string();
        Answer::json(
            400,
            json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                "message": format!("you sent {auth} | {} {l}", hit.echo())}}),
        )
    })
    .await;
    let text_echo = Fake::start(move |hit| {
        let auth = hit.header("authorization").unwrap_or("").to_string();
        Answer::text(400, format!("you sent {auth} {leaks}"))
    })
    .await;
    for fake in [&json_echo, &text_echo] {
        let c = client(&fake.url(), Credentials::KeyFile(key_path()), opts()).await;
        let errors = [
            (NET, c.get(NET).await.unwrap_err()),
            (FIREWALL, c.create(FIREWALL, json!({"network": "global/networks/vpc-a"})).await.unwrap_err()),
            ("projects/p/global/firewalls", c.list("projects/p/global", "firewalls").await.unwrap_err()),
            (SA, c.delete(SA).await.unwrap_err()),
        ];
        let jwt = sent_token(fake);
        assert_eq!(jwt.split('.').count(), 3, "the client signs with a JWT: {jwt}");
        let secrets = key_secrets();
        let mut all: Vec<&str> = secrets.iter().map(String::as_str).collect();
        all.extend([jwt.as_str(), OPAQUE]);
        for (target, err) in errors {
            let text = format!("{err} {err:?}");
            assert_clean(&text, &all);
            assert!(text.contains("<redacted>"), "{text}");
            assert!(text.contains(target), "the message still says where: {text}");
            assert!(!err.to_string().contains('\n'), "one line: {err}");
        }
    }
}

#[tokio::test]
async fn regression_a_secret_straddling_the_quoted_part_of_an_answer_is_redacted_whole() {
    // A plain-text error body is quoted up to 300 characters. The token starts before the cut and
    // ends after it: cut first, its first part would be printed (no pattern matches it any more).
    for pad in [270, 285, 295] {
        let fake = Fake::start(move |hit| {
            let token = hit.header("authorization").unwrap_or("").trim_start_matches("Bearer ").to_string();
            let body = if hit.method == "GET" {
                format!("{} you sent {token} which is not valid here at all", "x".repeat(pad))
            } else {
                format!("{} you sent Bearer {OPAQUE} which is not valid here at all", "x".repeat(pad))
            };
            Answer::text(400, body)
        })
        .await;
        let c = client(&fake.url(), Credentials::KeyFile(key_path()), opts()).await;
        let get = c.get(NET).await.unwrap_err();
        let jwt = sent_token(&fake);
        let post = c.create(FIREWALL, json!({})).await.unwrap_err();
        for (err, token) in [(get, jwt.as_str()), (post, OPAQUE)] {
            let text = format!("{err} {err:?}");
            for part in [&token[..12], &token[token.len() - 12..]] {
                assert!(!text.contains(part), "part {part:?} of the token leaked (pad {pad}): {text}");
            }
            assert!(text.contains("xxxx"), "the body is still quoted: {text}");
        }
    }
}

#[tokio::test]
async fn regression_a_redirect_is_not_followed() {
    // The official clients followed a 307 to another server and took its answers for GCE's.
    let elsewhere = Fake::start(|_| Answer::json(200, network("p"))).await;
    let base = elsewhere.url();
    let endpoint = Fake::start(move |hit| Answer::redirect(307, &format!("{base}{}", hit.uri))).await;
    let c = client(&endpoint.url(), Credentials::KeyFile(key_path()), opts()).await;
    let get = c.get(NET).await.unwrap_err();
    let create = c.create(NET, json!({"autoCreateSubnetworks": false})).await.unwrap_err();
    for err in [get, create] {
        let text = err.to_string();
        assert!(matches!(&err, CloudError::Rejected { code, .. } if code == "Redirected"), "{err:?}");
        assert!(text.contains(&elsewhere.url()) && text.contains("--endpoint"), "names the Location: {text}");
        assert!(!err.is_transient(), "a redirect is not retried: {err:?}");
    }
    assert!(elsewhere.hits().is_empty(), "the client followed the redirect: {:?}", elsewhere.hits());
    assert_eq!(endpoint.hits().len(), 2);
}

#[tokio::test]
async fn regression_an_oversized_answer_is_refused_while_read() {
    // Valid JSON, far larger than the limit: refused while reading, in one line, not retried.
    let mut big = network("p");
    big["description"] = json!("a".repeat(2 << 20));
    let body = big.to_string();
    let fake = Fake::start(move |_| Answer { status: 200, headers: vec![], body: body.clone() }).await;
    let small = GcpOptions { response_limit: 1 << 20, ..opts() };
    let err = client(&fake.url(), Credentials::Anonymous, small).await.get(NET).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(&err, CloudError::Rejected { code, .. } if code == "ResponseTooLarge"), "{err:?}");
    assert!(text.contains("larger than 1 MiB") && text.contains(NET), "{text}");
    assert!(!err.is_transient() && !text.contains('\n'), "{err:?}");
    // Under the limit the same answer is read.
    let roomy = GcpOptions { response_limit: 4 << 20, ..opts() };
    let got = client(&fake.url(), Credentials::Anonymous, roomy).await.get(NET).await.unwrap().unwrap();
    assert_eq!(got["name"], "vpc-a");
}

#[tokio::test]
async fn regression_an_answer_for_another_resource_is_refused() {
    // A GET answered with another project's network, a list item of another collection, another
    // service account: each was taken for the one asked for.
    let fake = Fake::start(|hit| match hit.path() {
        "/compute/v1/projects/p/global/firewalls" => Answer::json(
            200,
            json!({"items": [{"name": "fw", "selfLink": format!("{COMPUTE_URL}projects/other/global/firewalls/fw")}]}),
        ),
        "/compute/v1/projects/p/global/routes" => Answer::json(
            200,
            json!({"items": [{"name": "r", "selfLink": format!("{COMPUTE_URL}projects/p/global/routes/r")}]}),
        ),
        p if p.starts_with("/v1/projects/p/serviceAccounts/") => Answer::json(
            200,
            json!({"name": "projects/p/serviceAccounts/someone-else@p.iam.gserviceaccount.com",
                "email": "someone-else@p.iam.gserviceaccount.com"}),
        ),
        _ => Answer::json(200, network("someone-elses")),
    })
    .await;
    let c = client(&fake.url(), Credentials::Anonymous, opts()).await;
    let get = c.get(NET).await.unwrap_err();
    let list = c.list("projects/p/global", "firewalls").await.unwrap_err();
    let account = c.get(SA).await.unwrap_err();
    for (err, other) in [(get, "someone-elses"), (list, "projects/other"), (account, "someone-else@")] {
        assert!(matches!(&err, CloudError::Rejected { code, .. } if code == "WrongResource"), "{err:?}");
        assert!(err.to_string().contains(other), "names what was answered: {err}");
    }
    // Items of the listed collection are read.
    assert_eq!(c.list("projects/p/global", "routes").await.unwrap().len(), 1);
}

#[tokio::test]
async fn regression_a_server_that_never_answers_is_a_timeout() {
    // It accepts the connection and says nothing: without a request timeout the call never ended.
    let silent = Silent::start().await;
    let quick = GcpOptions { request_timeout: Duration::from_millis(300), ..opts() };
    let c = client(&silent.url(), Credentials::KeyFile(key_path()), quick).await;
    let get = tokio::time::timeout(NEVER, c.get(NET)).await.expect("the call ends");
    let create = tokio::time::timeout(NEVER, c.create(NET, json!({}))).await.expect("the call ends");
    for got in [get.map(|_| ()), create.map(|_| ())] {
        let err = got.unwrap_err();
        assert!(matches!(err, CloudError::Timeout { .. }), "{err:?}");
        assert!(err.is_transient(), "the engine may retry it: {err:?}");
    }
    assert!(silent.accepted() >= 1);
}

#[tokio::test]
async fn regression_503_and_429_storms_end_in_the_engines_bounded_attempts() {
    // The client retries nothing itself: each engine attempt is one request. The official clients
    // retried every call up to 8 times with backoff under the engine's own retries (minutes).
    let unavailable = Fake::start(|_| {
        Answer::json(503, json!({"error": {"code": 503, "status": "UNAVAILABLE", "message": "backend unavailable"}}))
    })
    .await;
    let throttled = Fake::start(|_| {
        Answer::json(429, json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "rate limit"}}))
            .with_header("retry-after", "0")
    })
    .await;
    let engine = RetryPolicy::immediate(4);
    for (fake, server) in [(&unavailable, true), (&throttled, false)] {
        let c = client(&fake.url(), Credentials::Anonymous, opts()).await;
        let get = tokio::time::timeout(NEVER, engine.run(|| c.get(NET))).await.expect("bounded");
        let err = get.unwrap_err();
        assert_eq!(fake.hits().len(), 4, "one request per engine attempt: {err:?}");
        let create = tokio::time::timeout(NEVER, engine.run(|| c.create(NET, json!({})))).await.expect("bounded");
        assert_eq!(fake.hits().len(), 8, "one insert per engine attempt: {create:?}");
        for err in [err, create.unwrap_err()] {
            match server {
                true => assert!(matches!(err, CloudError::Server { status: 503, .. }), "{err:?}"),
                false => assert!(matches!(err, CloudError::Throttled { .. }), "{err:?}"),
            }
        }
    }
}

#[tokio::test]
async fn regression_operation_polls_have_a_floor_and_a_deadline() {
    // An operation that is never DONE, polled from a server that answers at once: the client waits
    // at least MIN_POLL_WAIT between polls (whatever poll_interval says) and gives up at
    // operation_timeout.
    let op = json!({"kind": "compute#operation", "name": "operation-1", "status": "RUNNING",
        "selfLink": format!("{COMPUTE_URL}projects/p/global/operations/operation-1")});
    let fake = Fake::start(move |_| Answer::json(200, op.clone())).await;
    let timeout = Duration::from_secs(1);
    let bounded = GcpOptions { operation_timeout: timeout, poll_interval: Duration::ZERO, ..opts() };
    let c = client(&fake.url(), Credentials::Anonymous, bounded).await;
    let err = tokio::time::timeout(NEVER, c.create(NET, json!({}))).await.expect("bounded").unwrap_err();
    assert!(matches!(err, CloudError::Timeout { .. }), "{err:?}");
    let hits = fake.hits();
    let polls: Vec<_> = hits.iter().filter(|h| h.path().ends_with("/operations/operation-1")).collect();
    assert!(polls
        .iter()
        .all(|h| h.method == "GET" && h.path() == "/compute/v1/projects/p/global/operations/operation-1"));
    let most = (timeout.as_millis() / MIN_POLL_WAIT.as_millis()) as usize;
    assert!(!polls.is_empty() && polls.len() <= most, "{} polls in {timeout:?} (at most {most})", polls.len());
    assert_eq!(hits.len(), polls.len() + 1, "one insert, no retried request");
}
