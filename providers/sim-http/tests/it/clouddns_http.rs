//! The Cloud DNS v1 server on the wire: zones per project, record sets, changes and their status,
//! Google's error JSON (the adaptor's view is in trellis-gcp-client's tests).

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use trellis_planner::cloud::CloudRead;
use trellis_sim::{DnsSim, Fault, Faults, WorldFile};
use trellis_sim_http::clouddns::{CloudDnsOptions, CloudDnsServer};

const WORLD: &str = "dns:
  zones:
    - name: example.com
      records:
        - {name: www.example.com, type: A, ttl: 60, values: [192.0.2.9]}
        - {name: txt.example.com, type: TXT, ttl: 60, values: [v=spf1]}
    - name: other.example.org
      gcp: {project: dns-shared, managedZone: other}
";

const ZONE: &str = "/dns/v1/projects/p1/managedZones/example-com";

fn sim() -> DnsSim {
    let sim = DnsSim::in_memory();
    sim.sync_world(&WorldFile::parse("world.yaml", WORLD).unwrap()).unwrap();
    sim
}

async fn send(r: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json::<Value>().await.unwrap_or(Value::Null))
}

fn signed_in() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, "Bearer t".parse().unwrap());
    reqwest::Client::builder().default_headers(headers).build().unwrap()
}

#[tokio::test]
async fn zones_are_served_under_their_project_and_paged() {
    let srv = CloudDnsServer::new(Arc::new(sim())).spawn_local().await.unwrap();
    let http = signed_in();
    let (s, body) = send(http.get(format!("{}/dns/v1/projects/p1/managedZones", srv.url()))).await;
    assert_eq!(s, 200);
    let names: Vec<&str> = body["managedZones"].as_array().unwrap().iter().filter_map(|z| z["name"].as_str()).collect();
    assert_eq!(names, ["example-com"], "other.example.org lives in dns-shared only");
    assert_eq!(body["managedZones"][0]["dnsName"], "example.com.");

    let url = format!("{}/dns/v1/projects/dns-shared/managedZones?maxResults=1", srv.url());
    let (_, first) = send(http.get(&url)).await;
    let token = first["nextPageToken"].as_str().expect("a second page").to_string();
    let (_, second) = send(http.get(format!("{url}&pageToken={token}"))).await;
    assert_eq!(second["managedZones"][0]["name"], "other");
    assert!(second.get("nextPageToken").is_none());

    let (_, filtered) =
        send(http.get(format!("{}/dns/v1/projects/dns-shared/managedZones?dnsName=other.example.org.", srv.url())))
            .await;
    assert_eq!(filtered["managedZones"].as_array().unwrap().len(), 1);
    // By name or by numeric id.
    let id = filtered["managedZones"][0]["id"].as_str().unwrap().to_string();
    let (s, zone) = send(http.get(format!("{}/dns/v1/projects/dns-shared/managedZones/{id}", srv.url()))).await;
    assert_eq!((s, zone["name"].as_str()), (200, Some("other")));
    let (s, err) = send(http.get(format!("{}/dns/v1/projects/p1/managedZones/other", srv.url()))).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (404, Some("notFound")));
}

#[tokio::test]
async fn record_sets_are_read_filtered_created_patched_and_deleted() {
    let sim = sim();
    let srv = CloudDnsServer::new(Arc::new(sim.clone())).spawn_local().await.unwrap();
    let http = signed_in();
    let base = format!("{}{ZONE}", srv.url());

    let (s, txt) = send(http.get(format!("{base}/rrsets/txt.example.com./TXT"))).await;
    assert_eq!((s, txt["rrdatas"].clone()), (200, json!(["\"v=spf1\""])), "TXT data quoted as Cloud DNS shows it");
    let (_, listed) = send(http.get(format!("{base}/rrsets?name=www.example.com.&type=A"))).await;
    assert_eq!(listed["rrsets"].as_array().unwrap().len(), 1);
    let (s, err) = send(http.get(format!("{base}/rrsets?type=A"))).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (400, Some("invalid")));

    let set = json!({"name": "api.example.com.", "type": "CNAME", "ttl": 120, "rrdatas": ["lb.example.net."]});
    let (s, created) = send(http.post(format!("{base}/rrsets")).json(&set)).await;
    assert_eq!((s, created["rrdatas"].clone()), (200, json!(["lb.example.net."])));
    let held = sim.get("/dns/zones/example.com/records/api.example.com/CNAME").await.unwrap().unwrap();
    assert_eq!(held["values"], json!(["lb.example.net"]), "neutral: no trailing dot");
    let (s, err) = send(http.post(format!("{base}/rrsets")).json(&set)).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (409, Some("alreadyExists")));

    let (s, patched) =
        send(http.patch(format!("{base}/rrsets/api.example.com./CNAME")).json(&json!({"ttl": 300}))).await;
    assert_eq!((s, patched["ttl"].clone(), patched["rrdatas"].clone()), (200, json!(300), json!(["lb.example.net."])));

    let (s, _) = send(http.delete(format!("{base}/rrsets/api.example.com./CNAME"))).await;
    assert_eq!(s, 200);
    let (s, err) = send(http.delete(format!("{base}/rrsets/api.example.com./CNAME"))).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (404, Some("notFound")));

    // The store's rules answer in Google's words: a CNAME beside another type is refused.
    let beside = json!({"name": "www.example.com.", "type": "CNAME", "ttl": 60, "rrdatas": ["x.example.net."]});
    let (s, err) = send(http.post(format!("{base}/rrsets")).json(&beside)).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (400, Some("cnameResourceRecordSetConflict")));
    assert!(err["error"]["message"].as_str().is_some_and(|m| m.contains("www.example.com")), "{err}");
    // A type the simulator does not model.
    let mx = json!({"name": "example.com.", "type": "MX", "ttl": 60, "rrdatas": ["10 mx.example.com."]});
    let (s, err) = send(http.post(format!("{base}/rrsets")).json(&mx)).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (400, Some("invalid")));
}

#[tokio::test]
async fn a_change_is_checked_in_full_then_applied_and_reported_done() {
    let sim = sim();
    let opts = CloudDnsOptions { pending_polls: 2, ..CloudDnsOptions::default() };
    let srv = CloudDnsServer::with_options(Arc::new(sim.clone()), opts).spawn_local().await.unwrap();
    let http = signed_in();
    let changes = format!("{}{ZONE}/changes", srv.url());
    let www = |ip: &str| json!({"name": "www.example.com.", "type": "A", "ttl": 60, "rrdatas": [ip]});
    let new = json!({"name": "new.example.com.", "type": "A", "ttl": 60, "rrdatas": ["192.0.2.1"]});

    // An addition of a set that exists: nothing of the change is applied.
    let (s, err) = send(http.post(&changes).json(&json!({"additions": [new.clone(), www("192.0.2.2")]}))).await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (409, Some("alreadyExists")));
    assert_eq!(sim.get("/dns/zones/example.com/records/new.example.com/A").await.unwrap(), None);
    // A deletion that is not the set held.
    let (s, err) =
        send(http.post(&changes).json(&json!({"deletions": [www("192.0.2.7")], "additions": [www("192.0.2.2")]})))
            .await;
    assert_eq!((s, err["error"]["errors"][0]["reason"].as_str()), (412, Some("conditionNotMet")));
    // Of a set that does not exist.
    let (s, _) = send(http.post(&changes).json(&json!({"deletions": [new.clone()]}))).await;
    assert_eq!(s, 404);
    let (s, _) = send(http.post(&changes).json(&json!({}))).await;
    assert_eq!(s, 400);

    let (s, change) =
        send(http.post(&changes).json(&json!({"deletions": [www("192.0.2.9")], "additions": [www("192.0.2.2"), new]})))
            .await;
    assert_eq!((s, change["status"].as_str()), (200, Some("pending")));
    let id = change["id"].as_str().unwrap();
    let (_, first) = send(http.get(format!("{changes}/{id}"))).await;
    let (_, second) = send(http.get(format!("{changes}/{id}"))).await;
    assert_eq!((first["status"].as_str(), second["status"].as_str()), (Some("pending"), Some("done")));
    assert_eq!(
        sim.get("/dns/zones/example.com/records/www.example.com/A").await.unwrap().unwrap()["values"],
        json!(["192.0.2.2"])
    );
    assert!(sim.get("/dns/zones/example.com/records/new.example.com/A").await.unwrap().is_some());
    let (s, _) = send(http.get(format!("{changes}/999"))).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn faults_and_missing_credentials_answer_googles_errors() {
    let sim = sim();
    let srv = CloudDnsServer::new(Arc::new(sim.clone())).spawn_local().await.unwrap();
    let (s, err) = send(reqwest::Client::new().get(format!("{}{ZONE}/rrsets", srv.url()))).await;
    assert_eq!((s, err["error"]["code"].clone()), (401, json!(401)));

    let http = signed_in();
    sim.set_faults(Faults::fail_call(1, Fault::Throttle { retry_after: Duration::from_millis(1500) }));
    let resp = http.get(format!("{}{ZONE}/rrsets", srv.url())).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["errors"][0]["reason"], "rateLimitExceeded");
    let (s, _) = send(http.get(format!("{}{ZONE}/rrsets", srv.url()))).await;
    assert_eq!(s, 200, "one throttle, then served");
}
