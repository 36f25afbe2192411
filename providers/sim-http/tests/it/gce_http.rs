//! The GCE REST server on the wire: requestId idempotency, paging, operations, errors, faults and
//! the token endpoint (the client's view is in trellis-gcp-client's tests).

use serde_json::{json, Value};
use std::time::Duration;
use trellis_sim::{Fault, Faults, GceSim};
use trellis_sim_http::gce::{GceOptions, GceServer, ISSUED_TOKEN};

const NETWORKS: &str = "/compute/v1/projects/p/global/networks";

async fn send(r: reqwest::RequestBuilder) -> (u16, Value, reqwest::header::HeaderMap) {
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.json::<Value>().await.unwrap_or(Value::Null);
    (status, body, headers)
}

/// A client that signs every request in with a bearer token (the server needs one).
fn signed_in() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, "Bearer t".parse().unwrap());
    reqwest::Client::builder().default_headers(headers).build().unwrap()
}

#[tokio::test]
async fn a_write_repeated_with_its_request_id_is_applied_once() {
    let sim = GceSim::in_memory();
    let srv = GceServer::new(sim.clone()).spawn_local().await.unwrap();
    let http = signed_in();
    let url = format!("{}{NETWORKS}?requestId=r-1&$alt=json", srv.url());
    let (s1, op1, _) = send(http.post(&url).json(&json!({"name": "vpc-a"}))).await;
    let (s2, op2, _) = send(http.post(&url).json(&json!({"name": "vpc-a"}))).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(op1, op2, "the first answer again");
    assert_eq!(op1["status"], "RUNNING", "a write's operation is polled");
    assert_eq!(sim.calls().len(), 1, "applied once");
    let link = op1["selfLink"].as_str().unwrap().replace("https://www.googleapis.com", &srv.url());
    let (s, op, _) = send(http.get(link)).await;
    assert_eq!((s, op["status"].as_str()), (200, Some("DONE")));

    // Without the requestId, the repeat is GCE's 409.
    let (s, err, _) = send(http.post(format!("{}{NETWORKS}", srv.url())).json(&json!({"name": "vpc-a"}))).await;
    assert_eq!(s, 409);
    assert_eq!(err["error"]["status"], "ALREADY_EXISTS");
    assert_eq!(err["error"]["errors"][0]["reason"], "alreadyExists");
}

#[tokio::test]
async fn an_empty_page_token_is_the_first_page_and_pages_are_capped() {
    let sim = GceSim::in_memory();
    for n in ["a", "b", "c"] {
        sim.insert("projects/p/global/networks", json!({"name": n})).await.unwrap();
    }
    let srv = GceServer::with_options(sim, GceOptions { page_size: Some(2), ..GceOptions::default() })
        .spawn_local()
        .await
        .unwrap();
    let http = signed_in();
    let (s, page, _) = send(http.get(format!("{}{NETWORKS}?pageToken=&maxResults=500", srv.url()))).await;
    assert_eq!(s, 200);
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["items"][0]["name"], "a");
    let token = page["nextPageToken"].as_str().unwrap();
    let (_, page, _) = send(http.get(format!("{}{NETWORKS}?pageToken={token}", srv.url()))).await;
    assert_eq!(page["items"][0]["name"], "c");
    assert!(page.get("nextPageToken").is_none());
}

#[tokio::test]
async fn faults_and_unknown_routes_answer_gce_errors() {
    let sim = GceSim::in_memory()
        .with_faults(Faults::fail_call(1, Fault::Throttle { retry_after: Duration::from_millis(1500) }));
    let srv = GceServer::new(sim).spawn_local().await.unwrap();
    let http = signed_in();
    let (s, err, headers) = send(http.get(format!("{}{NETWORKS}/x", srv.url()))).await;
    assert_eq!((s, err["error"]["status"].as_str()), (429, Some("RESOURCE_EXHAUSTED")));
    assert_eq!(headers.get("retry-after").unwrap(), "2");
    let (s, err, _) = send(http.get(format!("{}{NETWORKS}/x", srv.url()))).await;
    assert_eq!((s, err["error"]["status"].as_str()), (404, Some("NOT_FOUND")));
    let (s, err, _) = send(http.get(format!("{}/nowhere", srv.url()))).await;
    assert_eq!((s, err["error"]["code"].as_u64()), (404, Some(404)));
    let (s, _, _) = send(http.put(format!("{}{NETWORKS}/x", srv.url())).json(&json!({}))).await;
    assert_eq!(s, 405);
    let (s, err, _) = send(http.post(format!("{}{NETWORKS}", srv.url())).body("{not json")).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (400, Some("parseError")));
}

#[tokio::test]
async fn the_token_endpoint_answers_the_jwt_bearer_grant_and_tokens_are_checked() {
    let opts = GceOptions { required_token: Some(ISSUED_TOKEN.into()), ..GceOptions::default() };
    let srv = GceServer::with_options(GceSim::in_memory(), opts).spawn_local().await.unwrap();
    let http = reqwest::Client::new();
    let (s, _, _) = send(http.get(format!("{}{NETWORKS}", srv.url()))).await;
    assert_eq!(s, 401, "no token");
    let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=h.p.s";
    let (s, tok, _) =
        send(http.post(srv.token_uri()).header("content-type", "application/x-www-form-urlencoded").body(form)).await;
    assert_eq!((s, tok["access_token"].as_str()), (200, Some(ISSUED_TOKEN)));
    assert_eq!(srv.server.assertions(), ["h.p.s"]);
    let (s, _, _) = send(http.post(srv.token_uri()).body("grant_type=client_credentials")).await;
    assert_eq!(s, 400);
    let (s, page, _) = send(http.get(format!("{}{NETWORKS}", srv.url())).bearer_auth(ISSUED_TOKEN)).await;
    assert_eq!((s, page["kind"].as_str()), (200, Some("compute#networkList")));
    // IAM service accounts at the IAM API's path.
    let sa = json!({"accountId": "shoot-sa", "serviceAccount": {"displayName": "x"}});
    let (s, acct, _) =
        send(http.post(format!("{}/v1/projects/p/serviceAccounts", srv.url())).bearer_auth(ISSUED_TOKEN).json(&sa))
            .await;
    assert_eq!(s, 200, "{acct}");
    assert_eq!(acct["email"], "shoot-sa@p.iam.gserviceaccount.com");
    assert_eq!(srv.server.tokens_issued(), 1);
}
