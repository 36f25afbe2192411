//! The Cloud DNS adaptor (`trellis_gcp_client::dns::CloudDns`, on google-cloud-dns-v1) end to end
//! against the simulated DNS served as Cloud DNS v1 (`trellis-sim-http`'s Cloud DNS server on
//! 127.0.0.1, a free port): the real crate's requests, the simulated DNS's rules.

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use trellis_gcp_client::dns::{CloudDns, DnsOptions};
use trellis_gcp_client::{Credentials, Url};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};
use trellis_planner::retry::RetryPolicy;
use trellis_sim::{DnsSim, Fault, FaultRule, Faults, Matcher, WorldFile};
use trellis_sim_http::clouddns::{CloudDnsOptions, CloudDnsRunning, CloudDnsServer};

/// Zone example.com (managed zone `example-com`, every project) with someone's record set, and
/// zone shared.example.org, which lives in project `dns-shared` only.
const WORLD: &str = "dns:
  zones:
    - name: example.com
      records:
        - {name: www.example.com, type: A, ttl: 60, values: [192.0.2.9]}
    - name: shared.example.org
      gcp: {project: dns-shared, managedZone: shared}
";

const API: &str = "/dns/zones/example.com/records/api.dev.example.com/A";
const WWW: &str = "/dns/zones/example.com/records/www.example.com/A";

fn sim() -> DnsSim {
    let sim = DnsSim::in_memory();
    sim.sync_world(&WorldFile::parse("world.yaml", WORLD).unwrap()).unwrap();
    sim
}

fn fast() -> DnsOptions {
    DnsOptions {
        request_timeout: Duration::from_secs(10),
        change_timeout: Duration::from_secs(20),
        // The floor (MIN_POLL_WAIT) applies.
        poll_interval: Duration::ZERO,
        page_size: Some(1),
    }
}

async fn serve(sim: &DnsSim) -> CloudDnsRunning {
    let opts = CloudDnsOptions { accept_anonymous: true, ..CloudDnsOptions::default() };
    CloudDnsServer::with_options(Arc::new(sim.clone()), opts).spawn_local().await.expect("bind 127.0.0.1")
}

async fn client(srv: &CloudDnsRunning, zone_projects: &[&str]) -> CloudDns {
    let url = Url::parse(&srv.url()).unwrap();
    let projects: Vec<String> = zone_projects.iter().map(|p| p.to_string()).collect();
    CloudDns::new("shoots-prod", &projects, Some(url), Credentials::Anonymous, fast()).await.expect("client")
}

fn a(ttl: u64, ip: &str) -> Value {
    json!({"name": "api.dev.example.com", "type": "A", "ttl": ttl, "values": [ip]})
}

#[tokio::test]
async fn zones_are_listed_with_their_managed_zone_and_project() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    // Paged one zone per page: shared.example.org lives in another project, so only one.
    let zones = c.list("/dns", "zones").await.unwrap();
    assert_eq!(
        zones,
        vec![
            json!({"id": "/dns/zones/example.com", "name": "example.com", "gcp": {"project": "shoots-prod", "managedZone": "example-com"}})
        ]
    );
    assert_eq!(c.get("/dns/zones/example.com").await.unwrap().unwrap()["gcp"]["managedZone"], "example-com");
    assert_eq!(c.get("/dns/zones/shared.example.org").await.unwrap(), None);

    let both = client(&srv, &["shoots-prod", "dns-shared"]).await;
    let names: Vec<Value> = both.list("/dns", "zones").await.unwrap().iter().map(|z| z["gcp"].clone()).collect();
    assert_eq!(
        names,
        vec![
            json!({"project": "shoots-prod", "managedZone": "example-com"}),
            json!({"project": "dns-shared", "managedZone": "example-com"}),
            json!({"project": "dns-shared", "managedZone": "shared"}),
        ]
    );
    // example.com is in both projects now: which one is meant cannot be told.
    let e = both.get(API).await.unwrap_err().to_string();
    assert!(e.contains("example-com in project shoots-prod") && e.contains("example-com in project dns-shared"), "{e}");
}

#[tokio::test]
async fn a_record_set_is_created_read_updated_listed_and_removed() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;

    assert_eq!(c.get(API).await.unwrap(), None);
    let created = c.create(API, a(120, "203.0.113.10")).await.unwrap();
    assert_eq!(created["values"], json!(["203.0.113.10"]));
    assert_eq!(created["zone"], "example.com");
    let read = c.get(API).await.unwrap().expect("created");
    assert_eq!(read["ttl"], 120);
    let etag = read["etag"].as_str().unwrap().to_string();
    assert_eq!(created["etag"], read["etag"]);

    let updated = c.update(API, a(300, "203.0.113.11"), &Precondition::IfMatch(etag.clone())).await.unwrap();
    assert_eq!(updated["values"], json!(["203.0.113.11"]));
    assert_ne!(updated["etag"], json!(etag));
    // The store holds what the change said.
    let held = sim.get(API).await.unwrap().unwrap();
    assert_eq!((held["ttl"].clone(), held["values"].clone()), (json!(300), json!(["203.0.113.11"])));

    let listed = c.list("/dns/zones/example.com", "records").await.unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["api.dev.example.com", "www.example.com"]);

    let now = c.get(API).await.unwrap().unwrap();
    c.remove(API, &Precondition::of(&now)).await.unwrap();
    assert_eq!(c.get(API).await.unwrap(), None);
    assert_eq!(sim.get(API).await.unwrap(), None);
    // Removing what is gone is done.
    c.remove(API, &Precondition::None).await.unwrap();
    // Every write went through a change the client waited for.
    let changes: Vec<_> = srv.server.requests().into_iter().filter(|r| r.path.contains("/changes")).collect();
    assert!(changes.iter().any(|r| r.method == "GET"), "the client polled its changes: {changes:?}");
}

#[tokio::test]
async fn an_update_to_what_is_there_sends_no_change() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    c.create(API, a(120, "203.0.113.10")).await.unwrap();
    let read = c.get(API).await.unwrap().unwrap();
    let posts = |srv: &CloudDnsRunning| srv.server.requests().iter().filter(|r| r.method == "POST").count();
    let before = posts(&srv);
    let same = c.update(API, a(120, "203.0.113.10"), &Precondition::of(&read)).await.unwrap();
    assert_eq!(same["etag"], read["etag"]);
    assert_eq!(posts(&srv), before, "no change for an update to the same set");
}

#[tokio::test]
async fn a_cname_keeps_its_neutral_form() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    let id = "/dns/zones/example.com/records/ingress.dev.example.com/CNAME";
    let body = json!({"name": "ingress.dev.example.com", "type": "CNAME", "ttl": 120, "values": ["lb.example.net"]});
    c.create(id, body).await.unwrap();
    assert_eq!(c.get(id).await.unwrap().unwrap()["values"], json!(["lb.example.net"]));
    assert_eq!(sim.get(id).await.unwrap().unwrap()["values"], json!(["lb.example.net"]));
}

#[tokio::test]
async fn a_cname_beside_another_type_is_refused_in_one_line() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    let id = "/dns/zones/example.com/records/www.example.com/CNAME";
    let e = c
        .create(id, json!({"name": "www.example.com", "type": "CNAME", "ttl": 60, "values": ["lb.example.net"]}))
        .await
        .unwrap_err();
    match &e {
        CloudError::Rejected { status: 400, code, .. } => assert_eq!(code, "cnameResourceRecordSetConflict"),
        other => panic!("{other:?}"),
    }
    assert!(!e.to_string().contains('\n') && e.to_string().contains("www.example.com"), "{e}");
    assert_eq!(sim.get(id).await.unwrap(), None);
}

#[tokio::test]
async fn a_set_that_exists_is_never_overwritten_by_a_create() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    let e = c.create(WWW, json!({"name": "www.example.com", "type": "A", "ttl": 60, "values": ["203.0.113.1"]})).await;
    assert!(matches!(e, Err(CloudError::AlreadyExists { status: 409, .. })), "{e:?}");
    assert_eq!(sim.get(WWW).await.unwrap().unwrap()["values"], json!(["192.0.2.9"]));
}

#[tokio::test]
async fn a_set_changed_since_it_was_read_is_not_written() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    c.create(API, a(120, "203.0.113.10")).await.unwrap();
    let read = c.get(API).await.unwrap().unwrap();
    // Someone changes it behind trellis' back.
    let theirs = sim.get(API).await.unwrap().unwrap();
    sim.update(API, a(120, "198.51.100.7"), &Precondition::of(&theirs)).await.unwrap();

    let e = c.update(API, a(300, "203.0.113.11"), &Precondition::of(&read)).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
    assert!(
        e.to_string().contains("changed since it was read") && e.to_string().contains("re-run `trellis plan`"),
        "{e}"
    );
    let e = c.remove(API, &Precondition::of(&read)).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
    assert_eq!(sim.get(API).await.unwrap().unwrap()["values"], json!(["198.51.100.7"]));
}

#[tokio::test]
async fn a_change_whose_deletion_no_longer_matches_is_refused_by_the_server() {
    // The guard inside Cloud DNS itself: a deletion that is not the set held is 412.
    let sim = sim();
    let srv = serve(&sim).await;
    let http = reqwest::Client::new();
    let url = format!("{}/dns/v1/projects/p1/managedZones/example-com/changes", srv.url());
    let change = json!({
        "deletions": [{"name": "www.example.com.", "type": "A", "ttl": 60, "rrdatas": ["192.0.2.1"]}],
        "additions": [{"name": "www.example.com.", "type": "A", "ttl": 60, "rrdatas": ["192.0.2.2"]}],
    });
    let answer = http.post(&url).json(&change).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 412);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["errors"][0]["reason"], "conditionNotMet");
    assert_eq!(sim.get(WWW).await.unwrap().unwrap()["values"], json!(["192.0.2.9"]));
}

#[tokio::test]
async fn a_missing_zone_is_one_line_naming_zone_and_project() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    let id = "/dns/zones/example.net/records/api.example.net/A";
    let e = c.create(id, json!({"name": "api.example.net", "type": "A", "ttl": 60, "values": ["192.0.2.1"]})).await;
    let text = e.unwrap_err().to_string();
    assert!(text.contains("example.net") && text.contains("shoots-prod") && !text.contains('\n'), "{text}");
    let e = c.list("/dns/zones/shared.example.org", "records").await.unwrap_err().to_string();
    assert!(e.contains("shared.example.org") && e.contains("--dns-project"), "{e}");
}

#[tokio::test]
async fn a_zone_in_another_project_is_written_there() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &["dns-shared"]).await;
    let id = "/dns/zones/shared.example.org/records/api.shoot.shared.example.org/A";
    let body = json!({"name": "api.shoot.shared.example.org", "type": "A", "ttl": 60, "values": ["192.0.2.1"]});
    c.create(id, body).await.unwrap();
    assert!(sim.get(id).await.unwrap().is_some());
    let paths: Vec<String> = srv.server.requests().into_iter().filter(|r| r.method == "POST").map(|r| r.path).collect();
    assert_eq!(paths, ["/dns/v1/projects/dns-shared/managedZones/shared/changes"]);
}

#[tokio::test]
async fn throttled_calls_converge_under_the_engines_retries() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    sim.set_faults(
        Faults::none()
            .with_rule(FaultRule::always(Matcher::any(), Fault::Throttle { retry_after: Duration::ZERO }).times(3)),
    );
    let first = c.create(API, a(120, "203.0.113.10")).await.unwrap_err();
    assert!(matches!(first, CloudError::Throttled { .. }), "the client itself retries nothing: {first:?}");
    RetryPolicy::immediate(6).run(|| c.create(API, a(120, "203.0.113.10"))).await.expect("retries converge");
    assert_eq!(sim.get(API).await.unwrap().unwrap()["values"], json!(["203.0.113.10"]));
    assert!(srv.server.requests().iter().any(|r| r.status == 429));
}

#[tokio::test]
async fn a_failed_change_is_retried_to_the_same_end() {
    let sim = sim();
    let srv = serve(&sim).await;
    let c = client(&srv, &[]).await;
    c.create(API, a(120, "203.0.113.10")).await.unwrap();
    sim.set_faults(Faults::none().with_rule(FaultRule::once_at(Matcher::method("PUT"), 1, Fault::ServerError)));
    let pre = Precondition::of(&c.get(API).await.unwrap().unwrap());
    RetryPolicy::immediate(4)
        .run(|| c.update(API, a(300, "203.0.113.11"), &pre))
        .await
        .expect("a 5xx change is retried");
    assert_eq!(sim.get(API).await.unwrap().unwrap()["values"], json!(["203.0.113.11"]));
}
