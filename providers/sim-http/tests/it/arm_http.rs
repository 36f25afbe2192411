//! ARM's REST surface beyond GET/PUT/DELETE of one resource, over HTTP as clients call it (the
//! official SDKs' calls; their own test is `cli/tests/it/outside/arm_sdk.rs`): HEAD check existence,
//! PATCH Update Tags, List All at subscription scope, the generic resource list with `$filter`, and
//! paging every list through `nextLink`.

use serde_json::{json, Value};
use trellis_sim::{ArmSim, DEFAULT_SUBSCRIPTION};
use trellis_sim_http::{ServerOptions, SimServer};

const API: &str = "api-version=2024-05-01";

async fn serve(page_size: Option<usize>) -> (String, trellis_sim_http::Running) {
    let srv = SimServer::with_options(
        ArmSim::in_memory(DEFAULT_SUBSCRIPTION),
        ServerOptions { page_size, ..Default::default() },
    );
    let running = srv.spawn_local().await.unwrap();
    (format!("{}/subscriptions/{DEFAULT_SUBSCRIPTION}", running.url()), running)
}

async fn send(r: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = r.bearer_auth("t").send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A resource group `rg` with VNets `v0`…`v{n-1}` (each with a subnet) and an NSG.
async fn world(sub: &str, vnets: usize) -> reqwest::Client {
    let c = reqwest::Client::new();
    assert_eq!(
        send(c.put(format!("{sub}/resourcegroups/rg?{API}")).json(&json!({"location": "westeurope"}))).await.0,
        201
    );
    for i in 0..vnets {
        let vnet = format!("{sub}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v{i}");
        let body = json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [{"name": "s", "properties": {"addressPrefix": "10.0.0.0/24"}}]}});
        assert_eq!(send(c.put(format!("{vnet}?{API}")).json(&body)).await.0, 201);
    }
    let nsg = format!("{sub}/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg?{API}");
    assert_eq!(send(c.put(nsg).json(&json!({"location": "westeurope"}))).await.0, 201);
    c
}

/// Every item of a list, following `nextLink`; and how many pages it took.
async fn all_pages(c: &reqwest::Client, first: String) -> (Vec<Value>, usize) {
    let (mut items, mut pages, mut next) = (Vec::new(), 0, Some(first));
    while let Some(url) = next {
        let (status, body) = send(c.get(&url)).await;
        assert_eq!(status, 200, "{url}: {body}");
        items.extend(body["value"].as_array().unwrap().iter().cloned());
        pages += 1;
        next = body.get("nextLink").and_then(Value::as_str).map(str::to_string);
        assert!(pages < 100, "nextLink never ends");
    }
    (items, pages)
}

#[tokio::test]
async fn head_checks_that_a_resource_group_exists() {
    let (sub, _running) = serve(None).await;
    let c = world(&sub, 0).await;
    let head = |name: &str| c.head(format!("{sub}/resourcegroups/{name}?{API}")).bearer_auth("t").send();
    let found = head("RG").await.unwrap();
    assert_eq!(found.status().as_u16(), 204);
    assert_eq!(found.content_length(), Some(0));
    assert_eq!(head("nope").await.unwrap().status().as_u16(), 404);
}

#[tokio::test]
async fn patch_updates_the_tags_synchronously() {
    let (sub, _running) = serve(None).await;
    let c = world(&sub, 1).await;
    let vnet = format!("{sub}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v0?{API}");
    let (status, body) = send(c.patch(&vnet).json(&json!({"tags": {"a": "b"}}))).await;
    assert_eq!(status, 200);
    assert_eq!(body["tags"], json!({"a": "b"}));
    assert_eq!(body["properties"]["subnets"][0]["name"], json!("s"), "the subnets stay");
    let (status, body) = send(c.patch(&vnet).header("If-Match", "W/\"1\"").json(&json!({"tags": {}}))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (412, Some("PreconditionFailed")));
    let missing = format!("{sub}/resourceGroups/rg/providers/Microsoft.Network/routeTables/nope?{API}");
    let (status, body) = send(c.patch(missing).json(&json!({"tags": {}}))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("ResourceNotFound")));
    let (status, body) = send(c.patch(&vnet).body("[]")).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("InvalidRequestContent")));
}

#[tokio::test]
async fn every_list_pages_through_next_link_at_the_page_size() {
    let (sub, _running) = serve(Some(2)).await;
    let c = world(&sub, 5).await;
    let (all, pages) = all_pages(&c, format!("{sub}/providers/Microsoft.Network/virtualNetworks?{API}")).await;
    assert_eq!((all.len(), pages), (5, 3));
    let (in_rg, pages) =
        all_pages(&c, format!("{sub}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks?{API}")).await;
    assert_eq!((in_rg.len(), pages), (5, 3));
    assert_eq!(all, in_rg, "List All and List show the same VNets");
    let (nsgs, _) = all_pages(&c, format!("{sub}/providers/Microsoft.Network/networkSecurityGroups?{API}")).await;
    assert_eq!(nsgs[0]["properties"]["defaultSecurityRules"].as_array().unwrap().len(), 6);
    let (generic, pages) = all_pages(&c, format!("{sub}/resourceGroups/rg/resources?{API}")).await;
    assert_eq!((generic.len(), pages), (6, 3));
    let nsg_id = format!(
        "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"
    );
    let nsg = json!({"id": nsg_id, "name": "nsg", "type": "Microsoft.Network/networkSecurityGroups", "location": "westeurope"});
    assert_eq!(generic[0], nsg, "id, name, type, location: a GenericResource");
    // The filter is kept in nextLink, so every page is filtered.
    let filter = "resourceType eq 'Microsoft.Network/virtualNetworks' and location eq 'westeurope'";
    let url = format!("{sub}/resources?{API}&$filter={}", filter.replace(' ', "%20").replace('\'', "%27"));
    let (vnets, pages) = all_pages(&c, url).await;
    assert_eq!((vnets.len(), pages), (5, 3));
    let (status, body) = send(c.get(format!("{sub}/resources?{API}&$filter=tagName%20eq%20%27x%27"))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("InvalidFilterInQueryString")));
}

#[tokio::test]
async fn lists_are_one_page_up_to_arms_default_page_size() {
    let (sub, _running) = serve(ServerOptions::default().page_size).await;
    let c = world(&sub, 3).await;
    let (status, body) = send(c.get(format!("{sub}/providers/Microsoft.Network/virtualNetworks?{API}"))).await;
    assert_eq!(status, 200);
    assert_eq!(body["value"].as_array().unwrap().len(), 3);
    assert!(body.get("nextLink").is_none());
    assert_eq!(ServerOptions::default().page_size, Some(trellis_sim_http::DEFAULT_PAGE_SIZE));
}
