//! Bullet "A VNet PUT leaves its subnets alone; ARM replaces them from the body": a VNet PUT whose
//! body has `properties.subnets` makes the VNet's subnets exactly those (absent from the array =
//! deleted, `[]` or `null` = all deleted); without `subnets` they stay as they are (ARM since
//! api-version 2023-09-01). A subnet in use cannot be removed that way.

use serde_json::{json, Value};
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_sim::ArmSim;

use crate::common;
use common::{id, rejected, RG};

fn vnet_id() -> String {
    id("virtualNetworks/vnet")
}

fn subnet(name: &str) -> String {
    id(&format!("virtualNetworks/vnet/subnets/{name}"))
}

/// A VNet 10.0.0.0/16 with subnets a (10.0.1.0/24) and b (10.0.2.0/24), written on their own.
async fn base() -> ArmSim {
    let sim = ArmSim::in_memory("sub-1");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim.put(
        &vnet_id(),
        json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
    )
    .await
    .unwrap();
    for (name, prefix) in [("a", "10.0.1.0/24"), ("b", "10.0.2.0/24")] {
        sim.put(&subnet(name), json!({"properties": {"addressPrefix": prefix}})).await.unwrap();
    }
    sim
}

fn vnet_body(subnets: Value) -> Value {
    json!({"location": "westeurope", "properties": {
        "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
        "subnets": subnets,
    }})
}

fn subnet_names(vnet: &Value) -> Vec<String> {
    vnet["properties"]["subnets"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn regression_vnet_put_with_subnets_replaces_the_subnets() {
    let sim = base().await;
    let body = vnet_body(json!([
        {"name": "a", "properties": {"addressPrefix": "10.0.1.0/24"}},
        {"name": "c", "properties": {"addressPrefix": "10.0.3.0/24"}},
    ]));
    let answer = sim.put(&vnet_id(), body).await.unwrap();
    assert_eq!(subnet_names(&answer), vec!["a", "c"]);
    assert_eq!(sim.get(&subnet("b")).await.unwrap(), None, "b was not in the body: deleted");
    let c = sim.get(&subnet("c")).await.unwrap().expect("c was created from the body");
    assert_eq!(c["properties"]["addressPrefix"], json!("10.0.3.0/24"));
    assert_eq!(c["properties"]["privateEndpointNetworkPolicies"], json!("Disabled"), "ARM's defaults apply");
}

#[tokio::test]
async fn regression_vnet_put_with_empty_or_null_subnets_deletes_them_all() {
    for empty in [json!([]), Value::Null] {
        let sim = base().await;
        let answer = sim.put(&vnet_id(), vnet_body(empty.clone())).await.unwrap();
        assert_eq!(subnet_names(&answer), Vec::<String>::new(), "subnets: {empty}");
        assert_eq!(sim.get(&subnet("a")).await.unwrap(), None);
    }
}

#[tokio::test]
async fn vnet_put_without_subnets_leaves_them_alone() {
    let sim = base().await;
    let before = sim.get(&subnet("a")).await.unwrap().unwrap();
    let body = json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}});
    let answer = sim.put(&vnet_id(), body).await.unwrap();
    assert_eq!(subnet_names(&answer), vec!["a", "b"]);
    assert_eq!(sim.get(&subnet("a")).await.unwrap().unwrap(), before);
}

#[tokio::test]
async fn vnet_put_of_its_own_get_keeps_the_subnets_and_their_etags() {
    // What a read-modify-write does: GET the VNet (subnets included), change something, PUT it back.
    let sim = base().await;
    let before_a = sim.get(&subnet("a")).await.unwrap().unwrap();
    let mut vnet = sim.get(&vnet_id()).await.unwrap().unwrap();
    vnet["tags"] = json!({"owner": "trellis"});
    let answer = sim.put(&vnet_id(), vnet).await.unwrap();
    assert_eq!(subnet_names(&answer), vec!["a", "b"]);
    assert_eq!(answer["tags"], json!({"owner": "trellis"}));
    let after_a = sim.get(&subnet("a")).await.unwrap().unwrap();
    assert_eq!(after_a, before_a, "an unchanged subnet is not rewritten (same etag)");
}

#[tokio::test]
async fn regression_vnet_put_cannot_remove_a_subnet_in_use() {
    let sim = base().await;
    let nic = id("networkInterfaces/nic");
    sim.put(
        &nic,
        json!({"location": "westeurope", "properties": {"ipConfigurations": [{"name": "ipconfig1", "properties": {
            "subnet": {"id": subnet("b")}, "privateIPAllocationMethod": "Dynamic"}}]}}),
    )
    .await
    .unwrap();
    let body = vnet_body(json!([{"name": "a", "properties": {"addressPrefix": "10.0.1.0/24"}}]));
    let (status, code, message) = rejected(sim.put(&vnet_id(), body).await.unwrap_err());
    assert_eq!((status, code.as_str()), (400, "InUseSubnetCannotBeDeleted"), "{message}");
    assert!(message.contains(&format!("{nic}/ipConfigurations/ipconfig1")), "{message}");
    assert!(sim.get(&subnet("b")).await.unwrap().is_some(), "nothing changed");
}

#[tokio::test]
async fn regression_vnet_put_checks_the_subnets_in_its_body() {
    let sim = base().await;
    let outside = vnet_body(json!([{"name": "a", "properties": {"addressPrefix": "10.1.0.0/24"}}]));
    let (_, code, _) = rejected(sim.put(&vnet_id(), outside).await.unwrap_err());
    assert_eq!(code, "NetcfgSubnetRangeOutsideVnet");
    let overlapping = vnet_body(json!([
        {"name": "a", "properties": {"addressPrefix": "10.0.1.0/24"}},
        {"name": "x", "properties": {"addressPrefix": "10.0.1.128/25"}},
    ]));
    let (_, code, _) = rejected(sim.put(&vnet_id(), overlapping).await.unwrap_err());
    assert_eq!(code, "NetcfgSubnetRangesOverlap");
    let dangling = vnet_body(json!([
        {"name": "a", "properties": {"addressPrefix": "10.0.1.0/24", "routeTable": {"id": id("routeTables/missing")}}},
    ]));
    let (_, code, _) = rejected(sim.put(&vnet_id(), dangling).await.unwrap_err());
    assert_eq!(code, "InvalidResourceReference");
    assert_eq!(subnet_names(&sim.get(&vnet_id()).await.unwrap().unwrap()), vec!["a", "b"], "nothing changed");
}
