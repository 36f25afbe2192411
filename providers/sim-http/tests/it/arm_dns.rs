//! The simulated DNS served as Azure DNS, over HTTP as a client calls it: the routes, the status
//! codes and ARM error shapes of Azure DNS's refusals, and the neutral calls behind them.

use serde_json::{json, Value};
use trellis_sim::{DnsSim, WorldFile};
use trellis_sim_http::arm_dns::ArmDnsServer;
use trellis_sim_http::ServerOptions;

const SUB: &str = "6d3a9c1e-0000-4000-8000-000000000001";
const API: &str = "api-version=2018-05-01";
const WORLD: &str = "dns:
  zones:
    - name: example.com
      azure: {subscription: 6d3a9c1e-0000-4000-8000-000000000001, resourceGroup: dns-rg}
      records:
        - {name: www.example.com, type: A, ttl: 60, values: [198.51.100.7]}
    - name: dev.example.com
";

struct Served {
    dns: DnsSim,
    base: String,
    client: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve() -> Served {
    let dns = DnsSim::in_memory();
    dns.sync_world(&WorldFile::parse("world.yaml", WORLD).unwrap()).unwrap();
    let router = ArmDnsServer::new(dns.clone(), ServerOptions::default()).router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/subscriptions/{SUB}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Served { dns, base, client: reqwest::Client::new(), task }
}

impl Served {
    fn zone(&self) -> String {
        format!("{}/resourceGroups/dns-rg/providers/Microsoft.Network/dnsZones/example.com", self.base)
    }

    async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut r = self.client.request(method, url).bearer_auth("t");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        if let Some(body) = body {
            r = r.json(&body);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let code = resp.headers().get("x-ms-error-code").map(|v| v.to_str().unwrap().to_string());
        let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap_or(Value::Null);
        if let Some(code) = code {
            assert_eq!(body["error"]["code"], json!(code), "the code is repeated in x-ms-error-code");
        }
        (status, body)
    }
}

fn a(ttl: u64, ip: &str) -> Value {
    json!({"properties": {"TTL": ttl, "ARecords": [{"ipv4Address": ip}]}})
}

#[tokio::test]
async fn zones_are_listed_per_subscription_and_resource_group_and_read() {
    let s = serve().await;
    let (status, body) = s
        .send(reqwest::Method::GET, &format!("{}/providers/Microsoft.Network/dnszones?{API}", s.base), &[], None)
        .await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = body["value"].as_array().unwrap().iter().map(|z| z["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            format!("/subscriptions/{SUB}/resourceGroups/dns/providers/Microsoft.Network/dnszones/dev.example.com"),
            format!("/subscriptions/{SUB}/resourceGroups/dns-rg/providers/Microsoft.Network/dnszones/example.com"),
        ],
        "dev.example.com has no azure block: resource group dns, every subscription"
    );
    let rg = format!("{}/resourceGroups/DNS-RG/providers/Microsoft.Network/dnsZones?{API}", s.base);
    let (status, body) = s.send(reqwest::Method::GET, &rg, &[], None).await;
    assert_eq!(
        (status, body["value"].as_array().unwrap().len()),
        (200, 1),
        "resource groups compare case-insensitively"
    );
    let (status, zone) = s.send(reqwest::Method::GET, &format!("{}?{API}", s.zone()), &[], None).await;
    assert_eq!(status, 200);
    assert_eq!(
        (zone["name"].as_str(), zone["type"].as_str()),
        (Some("example.com"), Some("Microsoft.Network/dnszones"))
    );
    let other = format!("{}/resourceGroups/other/providers/Microsoft.Network/dnsZones/example.com?{API}", s.base);
    let (status, body) = s.send(reqwest::Method::GET, &other, &[], None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("ResourceNotFound")));
    let (status, body) = s.send(reqwest::Method::DELETE, &format!("{}?{API}", s.zone()), &[], None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (405, Some("MethodNotAllowed")));
}

#[tokio::test]
async fn record_sets_are_written_under_azure_dns_conditions() {
    let s = serve().await;
    let set = format!("{}/A/api?{API}", s.zone());
    let (status, created) =
        s.send(reqwest::Method::PUT, &set, &[("If-None-Match", "*")], Some(a(120, "203.0.113.10"))).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["name"], "api");
    assert_eq!(created["type"], "Microsoft.Network/dnszones/A");
    assert_eq!(created["properties"]["fqdn"], "api.example.com.");
    assert_eq!(created["properties"]["ARecords"], json!([{"ipv4Address": "203.0.113.10"}]));
    let etag = created["etag"].as_str().unwrap().to_string();
    assert_eq!(s.dns.get_now("/dns/zones/example.com/records/api.example.com/A").unwrap()["etag"], json!(etag));

    let (status, body) =
        s.send(reqwest::Method::PUT, &set, &[("If-None-Match", "*")], Some(a(120, "203.0.113.11"))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (412, Some("PreconditionFailed")));
    assert_eq!(body["error"]["message"], "The Record set api exists already and hence cannot be created again.");

    let (status, body) =
        s.send(reqwest::Method::PUT, &set, &[("If-Match", "stale")], Some(a(120, "203.0.113.11"))).await;
    assert_eq!(
        (status, body["error"]["message"].as_str()),
        (412, Some("The Record set api has been modified (etag mismatch)."))
    );
    let (status, updated) =
        s.send(reqwest::Method::PUT, &set, &[("If-Match", &etag)], Some(a(300, "203.0.113.11"))).await;
    assert_eq!((status, updated["properties"]["TTL"].clone()), (200, json!(300)));

    let (status, _) = s.send(reqwest::Method::DELETE, &set, &[("If-Match", &etag)], None).await;
    assert_eq!(status, 412, "the etag moved with the update");
    let now = updated["etag"].as_str().unwrap();
    assert_eq!(s.send(reqwest::Method::DELETE, &set, &[("If-Match", now)], None).await.0, 200);
    assert_eq!(s.send(reqwest::Method::DELETE, &set, &[], None).await.0, 204, "absent");
    let (status, body) = s.send(reqwest::Method::GET, &set, &[], None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("NotFound")));
    assert_eq!(
        body["error"]["message"],
        json!(format!("The resource record 'api' does not exist in resource group 'dns-rg' of subscription '{SUB}'."))
    );

    // The neutral calls behind the requests, in the simulated DNS's audit log.
    let calls: Vec<(String, u16)> = s.dns.calls().into_iter().map(|c| (c.method, c.status)).collect();
    let methods: Vec<&str> = calls.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["PUT", "PUT", "PUT", "PUT", "DELETE", "DELETE", "DELETE", "GET"]);
}

#[tokio::test]
async fn the_stores_rules_are_azure_dns_refusals() {
    let s = serve().await;
    let (status, body) = s
        .send(
            reqwest::Method::PUT,
            &format!("{}/CNAME/www?{API}", s.zone()),
            &[],
            Some(json!({"properties": {"TTL": 60, "CNAMERecord": {"cname": "lb.example.net"}}})),
        )
        .await;
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("Conflict")), "{body}");
    let (status, body) =
        s.send(reqwest::Method::PUT, &format!("{}/A/x?{API}", s.zone()), &[], Some(a(60, "::1"))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("BadRequest")), "{body}");
    let (status, body) = s
        .send(
            reqwest::Method::PUT,
            &format!("{}/A/x?{API}", s.zone()),
            &[],
            Some(json!({"properties": {"ARecords": []}})),
        )
        .await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("BadRequest")), "a TTL is required");
    let (status, body) = s.send(reqwest::Method::GET, &format!("{}/MX/x?{API}", s.zone()), &[], None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("BadRequest")));
    let missing =
        format!("{}/resourceGroups/dns-rg/providers/Microsoft.Network/dnsZones/nowhere.net/A/x?{API}", s.base);
    let (status, body) = s.send(reqwest::Method::PUT, &missing, &[], Some(a(60, "192.0.2.1"))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("ParentResourceNotFound")));
    let (status, body) = s.send(reqwest::Method::GET, &format!("{}?api-version=2024-03-01", s.zone()), &[], None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("NoRegisteredProviderFound")));
    let (status, body) = s.send(reqwest::Method::GET, &s.zone(), &[], None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("MissingApiVersionParameter")));
    let status = s.client.get(format!("{}?{API}", s.zone())).send().await.unwrap().status().as_u16();
    assert_eq!(status, 401, "a bearer token is required");
    assert!(s.dns.get_now("/dns/zones/example.com/records/x.example.com/A").is_none(), "nothing was written");
}

#[tokio::test]
async fn record_sets_are_listed_all_or_by_type() {
    let s = serve().await;
    let txt = json!({"properties": {"TTL": 60, "TXTRecords": [{"value": ["a", "b"]}]}});
    assert_eq!(s.send(reqwest::Method::PUT, &format!("{}/TXT/@?{API}", s.zone()), &[], Some(txt)).await.0, 201);
    let (status, all) = s.send(reqwest::Method::GET, &format!("{}/recordsets?{API}", s.zone()), &[], None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = all["value"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["@", "www"]);
    assert_eq!(all["value"][0]["properties"]["TXTRecords"], json!([{"value": ["ab"]}]));
    let (_, a_only) = s.send(reqwest::Method::GET, &format!("{}/A?{API}", s.zone()), &[], None).await;
    assert_eq!(a_only["value"].as_array().unwrap().len(), 1);
}

/// `If-Match: *` is ARM's "only if it exists": the server once dropped it, so such a PUT created a
/// missing record set (an upsert) instead of answering 412.
#[tokio::test]
async fn regression_if_match_star_needs_the_record_set_to_exist() {
    let s = serve().await;
    let set = format!("{}/A/api?{API}", s.zone());
    let (status, body) = s.send(reqwest::Method::PUT, &set, &[("If-Match", "*")], Some(a(60, "203.0.113.10"))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (412, Some("PreconditionFailed")), "{body}");
    assert!(s.dns.get_now("/dns/zones/example.com/records/api.example.com/A").is_none(), "nothing was created");
    let (status, _) = s.send(reqwest::Method::DELETE, &set, &[("If-Match", "*")], None).await;
    assert_eq!(status, 412, "a delete under If-Match: * of a missing set");
    assert_eq!(s.send(reqwest::Method::PUT, &set, &[], Some(a(60, "203.0.113.10"))).await.0, 201);
    let (status, body) = s.send(reqwest::Method::PUT, &set, &[("If-Match", "*")], Some(a(60, "203.0.113.11"))).await;
    assert_eq!((status, body["properties"]["ARecords"][0]["ipv4Address"].as_str()), (200, Some("203.0.113.11")));
    assert_eq!(s.send(reqwest::Method::DELETE, &set, &[("If-Match", "*")], None).await.0, 200);
}
