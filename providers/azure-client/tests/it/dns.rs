//! The Azure DNS adaptor (`dns::AzureDns`) through the real ARM client against the simulated DNS
//! served as Azure DNS (`trellis_sim_http::arm_dns`): neutral ids in, ARM requests on the wire, the
//! simulated DNS's neutral calls behind the server.

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use trellis_azure_client::dns::AzureDns;
use trellis_azure_client::{ArmClient, StaticToken, Url};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Op, Precondition};
use trellis_planner::retry::RetryPolicy;
use trellis_sim::{DnsSim, Fault, FaultRule, Faults, Matcher, WorldFile};
use trellis_sim_http::arm_dns::ArmDnsServer;
use trellis_sim_http::ServerOptions;

const SUB: &str = "6d3a9c1e-0000-4000-8000-000000000001";
const OTHER_SUB: &str = "6d3a9c1e-0000-4000-8000-000000000002";

/// example.com in resource group dns-rg of SUB with someone else's record set; dev.example.com in
/// resource group platform (every subscription); elsewhere.org in another subscription.
const WORLD: &str = "dns:
  zones:
    - name: example.com
      azure: {subscription: 6d3a9c1e-0000-4000-8000-000000000001, resourceGroup: dns-rg}
      records:
        - {name: www.example.com, type: A, ttl: 60, values: [198.51.100.7]}
    - name: dev.example.com
      azure: {resourceGroup: platform}
    - name: elsewhere.org
      azure: {subscription: 6d3a9c1e-0000-4000-8000-000000000002, resourceGroup: dns-rg}
";

struct Fixture {
    dns: DnsSim,
    _server: Served,
    adaptor: AzureDns,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
}

/// The server on 127.0.0.1, stopped when dropped.
struct Served(tokio::task::JoinHandle<()>);

impl Drop for Served {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn fixture_with(opts: ServerOptions, subscription: &str) -> Fixture {
    let dns = DnsSim::in_memory();
    dns.sync_world(&WorldFile::parse("world.yaml", WORLD).unwrap()).unwrap();
    let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&requests);
    let router = ArmDnsServer::new(dns.clone(), opts).router().layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let seen = Arc::clone(&seen);
            async move {
                let line = format!("{} {}", req.method(), req.uri());
                let cond = ["if-none-match", "if-match"]
                    .iter()
                    .filter_map(|h| req.headers().get(*h).map(|v| format!(" {h}: {}", v.to_str().unwrap_or("?"))))
                    .collect::<String>();
                seen.lock().unwrap().push(format!("{line}{cond}"));
                next.run(req).await
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let client = ArmClient::new(Url::parse(&url).unwrap(), Arc::new(StaticToken("t".into())))
        .unwrap()
        .with_request_timeout(Duration::from_secs(10));
    Fixture { dns, _server: Served(task), adaptor: AzureDns::new(Arc::new(client), subscription), requests }
}

async fn fixture() -> Fixture {
    fixture_with(ServerOptions::default(), SUB).await
}

const API: &str = "/dns/zones/example.com/records/api.dev2.example.com/A";

fn a_set(fqdn: &str, ttl: u64, values: &[&str]) -> Value {
    json!({"name": fqdn, "type": "A", "ttl": ttl, "values": values})
}

#[tokio::test]
async fn zones_are_listed_with_the_resource_group_of_each() {
    let f = fixture().await;
    let zones = f.adaptor.list("/dns", "zones").await.unwrap();
    assert_eq!(
        zones,
        vec![
            json!({"id": "/dns/zones/dev.example.com", "name": "dev.example.com",
                "azure": {"subscription": SUB, "resourceGroup": "platform"}}),
            json!({"id": "/dns/zones/example.com", "name": "example.com",
                "azure": {"subscription": SUB, "resourceGroup": "dns-rg"}}),
        ],
        "elsewhere.org lives in another subscription"
    );
    assert_eq!(f.adaptor.get("/dns/zones/Example.COM").await.unwrap().unwrap()["azure"]["resourceGroup"], "dns-rg");
    assert_eq!(f.adaptor.get("/dns/zones/elsewhere.org").await.unwrap(), None);
    let requests = f.requests.lock().unwrap().clone();
    assert!(
        requests.iter().all(|r| r.starts_with(&format!(
            "GET /subscriptions/{SUB}/providers/Microsoft.Network/dnsZones?api-version=2018-05-01"
        ))),
        "{requests:#?}"
    );
}

#[tokio::test]
async fn the_zone_list_follows_next_link() {
    let f = fixture_with(ServerOptions { page_size: Some(1), ..ServerOptions::default() }, SUB).await;
    assert_eq!(f.adaptor.list("/dns", "zones").await.unwrap().len(), 2);
    let requests = f.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert!(requests[1].contains("$skiptoken=1"), "{requests:#?}");
}

#[tokio::test]
async fn record_sets_are_created_read_updated_listed_and_removed() {
    let f = fixture().await;
    let created = f.adaptor.create(API, a_set("api.dev2.example.com", 120, &["203.0.113.10"])).await.unwrap();
    let etag = created["etag"].as_str().unwrap().to_string();
    assert_eq!(
        created,
        json!({"name": "api.dev2.example.com", "type": "A", "ttl": 120, "values": ["203.0.113.10"],
            "etag": etag, "zone": "example.com"})
    );
    assert_eq!(f.adaptor.get(API).await.unwrap().unwrap(), created);
    assert_eq!(f.dns.get_now(API).unwrap()["values"], json!(["203.0.113.10"]), "the simulated DNS holds it");

    let updated = f
        .adaptor
        .update(API, a_set("api.dev2.example.com", 300, &["203.0.113.11"]), &Precondition::IfMatch(etag.clone()))
        .await
        .unwrap();
    assert_eq!(updated["ttl"], 300);
    assert_ne!(updated["etag"], json!(etag), "a write moves the etag");

    let listed = f.adaptor.list("/dns/zones/example.com", "records").await.unwrap();
    let names: Vec<&str> = listed.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["api.dev2.example.com", "www.example.com"]);

    f.adaptor.remove(API, &Precondition::IfMatch(updated["etag"].as_str().unwrap().into())).await.unwrap();
    assert_eq!(f.adaptor.get(API).await.unwrap(), None);
    assert_eq!(f.dns.get_now(API), None);

    let requests = f.requests.lock().unwrap().clone();
    let rg = format!("/subscriptions/{SUB}/resourceGroups/dns-rg/providers/Microsoft.Network/dnszones/example.com");
    assert!(
        requests.contains(&format!("PUT {rg}/A/api.dev2?api-version=2018-05-01 if-none-match: *")),
        "{requests:#?}"
    );
    assert!(
        requests.contains(&format!("PUT {rg}/A/api.dev2?api-version=2018-05-01 if-match: {etag}")),
        "{requests:#?}"
    );
    assert!(requests
        .iter()
        .any(|r| r.starts_with(&format!("DELETE {rg}/A/api.dev2?api-version=2018-05-01 if-match: "))));
    assert_eq!(
        requests.iter().filter(|r| r.contains("/providers/Microsoft.Network/dnsZones?")).count(),
        1,
        "the zone list is read once and kept: {requests:#?}"
    );
}

#[tokio::test]
async fn apex_cname_and_txt_record_sets_translate() {
    let f = fixture().await;
    let apex = "/dns/zones/dev.example.com/records/dev.example.com/TXT";
    let long = "v=".to_string() + &"x".repeat(300);
    let txt = json!({"name": "dev.example.com", "type": "TXT", "ttl": 60, "values": [long, "second"]});
    let created = f.adaptor.create(apex, txt).await.unwrap();
    assert_eq!(created["values"], json!([long, "second"]), "a long TXT value comes back whole");
    let cname = "/dns/zones/dev.example.com/records/api.dev.example.com/CNAME";
    let body = json!({"name": "api.dev.example.com", "type": "CNAME", "ttl": 60, "values": ["lb.example.net"]});
    assert_eq!(f.adaptor.create(cname, body).await.unwrap()["values"], json!(["lb.example.net"]));
    let requests = f.requests.lock().unwrap().clone();
    assert!(requests.iter().any(|r| r.starts_with(&format!(
        "PUT /subscriptions/{SUB}/resourceGroups/platform/providers/Microsoft.Network/dnszones/dev.example.com/TXT/@?"
    ))));
}

#[tokio::test]
async fn regression_a_create_over_someone_elses_record_set_is_already_exists_and_changes_nothing() {
    let f = fixture().await;
    let www = "/dns/zones/example.com/records/www.example.com/A";
    let before = f.dns.get_now(www).unwrap();
    let err = f.adaptor.create(www, a_set("www.example.com", 120, &["203.0.113.10"])).await.unwrap_err();
    assert!(matches!(err, CloudError::AlreadyExists { status: 412, .. }), "{err:?}");
    assert_eq!(f.dns.get_now(www).unwrap(), before);
}

#[tokio::test]
async fn regression_a_stale_etag_is_precondition_failed_on_update_and_remove() {
    let f = fixture().await;
    let created = f.adaptor.create(API, a_set("api.dev2.example.com", 120, &["203.0.113.10"])).await.unwrap();
    let stale = Precondition::IfMatch(created["etag"].as_str().unwrap().to_string());
    // Someone else changes the set.
    f.dns.update(API, a_set("api.dev2.example.com", 120, &["192.0.2.1"]), &Precondition::None).await.unwrap();
    let err = f.adaptor.update(API, a_set("api.dev2.example.com", 120, &["203.0.113.12"]), &stale).await.unwrap_err();
    assert!(matches!(err, CloudError::PreconditionFailed { .. }), "{err:?}");
    let err = f.adaptor.remove(API, &stale).await.unwrap_err();
    assert!(matches!(err, CloudError::PreconditionFailed { .. }), "{err:?}");
    assert_eq!(f.dns.get_now(API).unwrap()["values"], json!(["192.0.2.1"]), "their change stands");
}

#[tokio::test]
async fn a_missing_zone_is_one_line_naming_the_zone_and_the_subscription() {
    let f = fixture().await;
    let err = f
        .adaptor
        .create("/dns/zones/nowhere.net/records/a.nowhere.net/A", a_set("a.nowhere.net", 1, &["192.0.2.1"]))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("nowhere.net") && text.contains(SUB) && !text.contains('\n'), "{text}");
    assert!(matches!(err, CloudError::Rejected { status: 404, .. }), "{err:?}");
    // In another subscription the zone is not there either: it is looked up in the subscription given.
    let err = f.adaptor.get("/dns/zones/elsewhere.org/records/a.elsewhere.org/A").await.unwrap_err().to_string();
    assert!(err.contains("elsewhere.org") && err.contains(SUB), "{err}");
    let other = fixture_with(ServerOptions::default(), OTHER_SUB).await;
    assert_eq!(other.adaptor.get("/dns/zones/elsewhere.org/records/a.elsewhere.org/A").await.unwrap(), None);
}

#[tokio::test]
async fn the_clouds_rules_come_back_as_azure_dns_refusals() {
    let f = fixture().await;
    // A CNAME beside the A record set at www: 409 Conflict.
    let err = f
        .adaptor
        .create(
            "/dns/zones/example.com/records/www.example.com/CNAME",
            json!({"name": "www.example.com", "type": "CNAME", "ttl": 60, "values": ["lb.example.net"]}),
        )
        .await
        .unwrap_err();
    assert!(matches!(&err, CloudError::Rejected { status: 409, code, .. } if code == "Conflict"), "{err:?}");
    assert!(!err.is_transient(), "a CNAME conflict does not go away by retrying");
    // An IPv6 value in an A record set: 400 BadRequest.
    let err = f.adaptor.create(API, a_set("api.dev2.example.com", 60, &["2001:db8::1"])).await.unwrap_err();
    assert!(matches!(&err, CloudError::Rejected { status: 400, code, .. } if code == "BadRequest"), "{err:?}");
    // A name outside the zone never reaches the cloud.
    let before = f.requests.lock().unwrap().len();
    let err = f
        .adaptor
        .create("/dns/zones/example.com/records/api.example.org/A", a_set("api.example.org", 60, &["192.0.2.1"]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not inside zone example.com"), "{err}");
    assert_eq!(f.requests.lock().unwrap().len(), before);
}

#[tokio::test]
async fn a_throttled_write_converges_under_the_retry_policy() {
    let f = fixture().await;
    f.adaptor.list("/dns", "zones").await.unwrap();
    f.dns.set_faults(Faults::none().with_rule(
        FaultRule::always(Matcher::method("PUT"), Fault::Throttle { retry_after: Duration::from_millis(1) }).times(2),
    ));
    let body = a_set("api.dev2.example.com", 120, &["203.0.113.10"]);
    let first = f.adaptor.create(API, body.clone()).await.unwrap_err();
    assert!(matches!(first, CloudError::Throttled { retry_after: Some(_), .. }), "{first:?}");
    assert!(first.is_transient());
    let retry = RetryPolicy::immediate(3);
    let created = retry.run(|| f.adaptor.create(API, body.clone())).await.unwrap();
    assert_eq!(created["values"], json!(["203.0.113.10"]));
    let puts: Vec<u16> = f.dns.calls().iter().filter(|c| c.op == Op::Write).map(|c| c.status).collect();
    assert_eq!(puts, [429, 429, 201], "two throttled PUTs, then the create");
}

#[tokio::test]
async fn a_zone_found_after_the_list_was_kept_is_listed_again() {
    let f = fixture().await;
    f.adaptor.list("/dns", "zones").await.unwrap();
    let world = format!("{WORLD}    - name: later.example.net\n      azure: {{resourceGroup: late-rg}}\n");
    f.dns.sync_world(&WorldFile::parse("world.yaml", &world).unwrap()).unwrap();
    let id = "/dns/zones/later.example.net/records/a.later.example.net/A";
    f.adaptor.create(id, a_set("a.later.example.net", 60, &["192.0.2.5"])).await.unwrap();
    let requests = f.requests.lock().unwrap().clone();
    assert!(
        requests.iter().any(|r| r.starts_with(&format!(
            "PUT /subscriptions/{SUB}/resourceGroups/late-rg/providers/Microsoft.Network/dnszones/later.example.net/A/a?"
        ))),
        "{requests:#?}"
    );
}
