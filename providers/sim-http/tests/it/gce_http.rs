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

/// `aggregated/subnetworks` answers as GCE's aggregatedList: `items` keyed `regions/R`, a region with
/// subnetworks on this page lists them, every other one carries a `NO_RESULTS_ON_PAGE` warning; it
/// pages like a list.
#[tokio::test]
async fn aggregated_subnetworks_are_keyed_by_region_with_warnings_for_empty_regions_and_paged() {
    let sim = GceSim::in_memory();
    sim.insert("projects/p/global/networks", json!({"name": "vpc", "autoCreateSubnetworks": false})).await.unwrap();
    for (region, name, cidr) in [
        ("europe-west1", "a", "10.0.0.0/24"),
        ("europe-west1", "b", "10.0.1.0/24"),
        ("us-central1", "c", "10.0.2.0/24"),
    ] {
        sim.insert(
            &format!("projects/p/regions/{region}/subnetworks"),
            json!({"name": name, "network": "global/networks/vpc", "ipCidrRange": cidr}),
        )
        .await
        .unwrap();
    }
    let srv = GceServer::new(sim).spawn_local().await.unwrap();
    let http = signed_in();
    let url = format!("{}/compute/v1/projects/p/aggregated/subnetworks", srv.url());
    let (s, page, _) = send(http.get(&url)).await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["kind"], "compute#subnetworkAggregatedList");
    let items = page["items"].as_object().unwrap();
    let names = |scope: &str| -> Vec<String> {
        items[scope]["subnetworks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("regions/europe-west1"), ["a", "b"]);
    assert_eq!(names("regions/us-central1"), ["c"]);
    let empty = &items["regions/asia-east1"];
    assert_eq!(empty["warning"]["code"], "NO_RESULTS_ON_PAGE");
    assert_eq!(empty["warning"]["data"], json!([{"key": "scope", "value": "regions/asia-east1"}]));
    assert!(empty.get("subnetworks").is_none());
    assert!(page.get("nextPageToken").is_none());

    // Two a page: europe-west1's two, then us-central1's one.
    let (_, first, _) = send(http.get(format!("{url}?maxResults=2"))).await;
    assert_eq!(first["items"]["regions/europe-west1"]["subnetworks"].as_array().unwrap().len(), 2);
    assert_eq!(first["items"]["regions/us-central1"]["warning"]["code"], "NO_RESULTS_ON_PAGE");
    let token = first["nextPageToken"].as_str().unwrap();
    let (_, second, _) = send(http.get(format!("{url}?maxResults=2&pageToken={token}"))).await;
    assert_eq!(second["items"]["regions/us-central1"]["subnetworks"][0]["name"], "c");
    assert!(second.get("nextPageToken").is_none());
    // A filter applies across regions.
    let (_, filtered, _) = send(http.get(&url).query(&[("filter", "name = \"b\"")])).await;
    assert_eq!(filtered["items"]["regions/europe-west1"]["subnetworks"].as_array().unwrap().len(), 1);
    let (s, _, _) = send(http.get(format!("{}/compute/v1/projects/p/aggregated/nothings", srv.url()))).await;
    assert_eq!(s, 404);
}

/// globalOperations.wait / regionOperations.wait answer the operation once it is DONE.
#[tokio::test]
async fn operations_wait_answers_the_done_operation() {
    let sim = GceSim::in_memory();
    let srv = GceServer::new(sim).spawn_local().await.unwrap();
    let http = signed_in();
    let (_, op, _) = send(http.post(format!("{}{NETWORKS}", srv.url())).json(&json!({"name": "vpc"}))).await;
    assert_eq!(op["status"], "RUNNING");
    let name = op["name"].as_str().unwrap();
    let (s, waited, _) =
        send(http.post(format!("{}/compute/v1/projects/p/global/operations/{name}/wait", srv.url()))).await;
    assert_eq!((s, waited["status"].as_str(), waited["name"].as_str()), (200, Some("DONE"), Some(name)));
    let (_, op, _) = send(
        http.post(format!("{}/compute/v1/projects/p/regions/europe-west1/subnetworks", srv.url()))
            .json(&json!({"name": "s", "network": "global/networks/vpc", "ipCidrRange": "10.0.0.0/24"})),
    )
    .await;
    let name = op["name"].as_str().unwrap();
    let regional = format!("{}/compute/v1/projects/p/regions/europe-west1/operations/{name}", srv.url());
    let (s, waited, _) = send(http.post(format!("{regional}/wait"))).await;
    assert_eq!((s, waited["status"].as_str()), (200, Some("DONE")));
    let (s, got, _) = send(http.get(&regional)).await;
    assert_eq!((s, got["status"].as_str()), (200, Some("DONE")));
    let (s, err, _) =
        send(http.post(format!("{}/compute/v1/projects/p/global/operations/operation-nope/wait", srv.url()))).await;
    assert_eq!((s, err["error"]["status"].as_str()), (404, Some("NOT_FOUND")));
}

/// A firewall whose ranges mix IPv4 and IPv6 is refused, as GCE refuses it (400 invalid).
#[tokio::test]
async fn a_firewall_mixing_ipv4_and_ipv6_ranges_is_refused() {
    let sim = GceSim::in_memory();
    sim.insert("projects/p/global/networks", json!({"name": "vpc"})).await.unwrap();
    let srv = GceServer::new(sim.clone()).spawn_local().await.unwrap();
    let http = signed_in();
    let url = format!("{}/compute/v1/projects/p/global/firewalls", srv.url());
    let rule = |name: &str, field: &str, ranges: Value| json!({"name": name, "network": "global/networks/vpc", "allowed": [{"IPProtocol": "tcp"}], field: ranges});
    for (name, field, ranges) in [
        ("mixed-src", "sourceRanges", json!(["10.0.0.0/8", "2600:1900::/64"])),
        ("mixed-dst", "destinationRanges", json!(["2600:1900::/64", "0.0.0.0/0"])),
    ] {
        let mut body = rule(name, field, ranges);
        if field == "destinationRanges" {
            body["direction"] = json!("EGRESS");
        }
        let (s, err, _) = send(http.post(&url).json(&body)).await;
        assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (400, Some("invalid")), "{name}: {err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("'resource.{field}'")) && message.contains("IPv4"), "{message}");
    }
    assert!(sim.snapshot().iter().all(|r| r["kind"] != "compute#firewall"), "nothing was created");
    // One family per rule is fine, IPv6 alone too.
    let (s, _, _) = send(http.post(&url).json(&rule("v6", "sourceRanges", json!(["2600:1900::/64"])))).await;
    assert_eq!(s, 200);
}

/// What the simulated cloud answers is GCE's, never a trellis hint: a stale subnetwork fingerprint is
/// 412 "Precondition check failed.", a duplicate insert "The resource '…' already exists".
#[tokio::test]
async fn regression_the_simulated_clouds_errors_name_no_trellis_command() {
    let sim = GceSim::in_memory();
    sim.insert("projects/p/global/networks", json!({"name": "vpc"})).await.unwrap();
    sim.insert(
        "projects/p/regions/r1/subnetworks",
        json!({"name": "s", "network": "global/networks/vpc", "ipCidrRange": "10.0.0.0/24"}),
    )
    .await
    .unwrap();
    let srv = GceServer::new(sim).spawn_local().await.unwrap();
    let http = signed_in();
    let subnet = format!("{}/compute/v1/projects/p/regions/r1/subnetworks/s", srv.url());
    let mut answered = Vec::new();
    let (s, err, _) = send(http.patch(&subnet).json(&json!({"description": "x", "fingerprint": "AAAAAAAAAAA="}))).await;
    assert_eq!((s, err["error"]["status"].as_str()), (412, Some("FAILED_PRECONDITION")));
    assert_eq!(err["error"]["message"], "Precondition check failed.");
    answered.push(err);
    let (s, err, _) = send(http.patch(&subnet).json(&json!({"description": "x"}))).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (400, Some("required")));
    assert_eq!(err["error"]["message"], "Required field 'resource.fingerprint' not specified");
    answered.push(err);
    let (s, err, _) = send(http.post(format!("{}{NETWORKS}", srv.url())).json(&json!({"name": "vpc"}))).await;
    assert_eq!(s, 409);
    assert_eq!(err["error"]["message"], "The resource 'projects/p/global/networks/vpc' already exists");
    answered.push(err);
    for err in answered {
        assert!(!err.to_string().contains("trellis"), "{err}");
    }
}
