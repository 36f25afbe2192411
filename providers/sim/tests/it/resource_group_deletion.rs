//! Bullet "Resource-group deletion is atomic and instant": a resource-group DELETE is a long-running
//! operation. The group shows `provisioningState: Deleting`, writes into it are refused with 409
//! `ResourceGroupBeingDeleted`, its resources go away one by one (users before what they use), then
//! the group. An interrupted delete leaves a `Deleting` group with resources left, persisted; a
//! later DELETE completes it. The blocking `delete` waits for the end, so callers see no change.

use serde_json::{json, Value};
use std::time::Duration;
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite};
use trellis_sim::{ArmSim, Fault, FaultRule, Faults, Matcher};

use crate::common;
use common::{id, NET, RG};

/// sled keeps its file lock for a moment after a `Db` is dropped; a reopen in the same process waits.
fn open_db(path: &std::path::Path) -> sled::Db {
    for _ in 0..100 {
        match sled::open(path) {
            Ok(db) => return db,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    sled::open(path).unwrap()
}

/// A resource group with a VNet whose subnet uses a route table, an NSG and a NAT gateway (which
/// uses a public IP): five top-level resources.
async fn fill(sim: &ArmSim) {
    let loc = json!({"location": "westeurope"});
    sim.put(RG, loc.clone()).await.unwrap();
    for r in ["routeTables/rt", "networkSecurityGroups/nsg"] {
        sim.put(&id(r), loc.clone()).await.unwrap();
    }
    sim.put(&id("publicIPAddresses/pip"), json!({"location": "westeurope", "sku": {"name": "Standard"}}))
        .await
        .unwrap();
    sim.put(
        &id("natGateways/nat"),
        json!({"location": "westeurope", "properties": {"publicIpAddresses": [{"id": id("publicIPAddresses/pip")}]}}),
    )
    .await
    .unwrap();
    sim.put(
        &id("virtualNetworks/vnet"),
        json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
    )
    .await
    .unwrap();
    sim.put(
        &id("virtualNetworks/vnet/subnets/workers"),
        json!({"properties": {"addressPrefix": "10.0.1.0/24",
            "routeTable": {"id": id("routeTables/rt")},
            "networkSecurityGroup": {"id": id("networkSecurityGroups/nsg")},
            "natGateway": {"id": id("natGateways/nat")}}}),
    )
    .await
    .unwrap();
}

fn state(v: &Value) -> &str {
    v["properties"]["provisioningState"].as_str().unwrap()
}

/// The ids left in the resource group, sorted.
fn left(sim: &ArmSim) -> Vec<String> {
    sim.snapshot()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|i| i.starts_with(&format!("{RG}/")))
        .map(|i| i.trim_start_matches(&format!("{NET}/")).to_string())
        .collect()
}

fn interrupt_after(steps: usize) -> Faults {
    Faults::none().with_rule(FaultRule::once_at(
        Matcher::method("DELETE"),
        1,
        Fault::Interrupted { after_steps: steps },
    ))
}

#[tokio::test(start_paused = true)]
async fn regression_resource_group_delete_is_a_long_running_operation_showing_deleting() {
    let sim = ArmSim::in_memory("sub-1");
    fill(&sim).await;
    sim.set_faults(Faults::none().with_latency(Duration::ZERO, Duration::from_secs(60)));
    let (deleted, rg) = tokio::join!(sim.delete(RG), async {
        // While the delete runs, the group is there, Deleting.
        sim.get(RG).await.unwrap()
    });
    deleted.expect("the blocking delete waits for the end");
    assert_eq!(state(&rg.expect("the group is there while deleting")), "Deleting");
    assert_eq!(sim.get(RG).await.unwrap(), None);
    assert!(left(&sim).is_empty(), "{:?}", left(&sim));
}

#[tokio::test]
async fn regression_interrupted_resource_group_delete_is_left_half_done_and_a_later_delete_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open_db(dir.path());
        let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
        fill(&sim).await;
        sim.set_faults(interrupt_after(2));
        assert!(matches!(sim.delete(RG).await, Err(CloudError::Timeout { .. })));
        assert_eq!(sim.calls().last().map(|c| (c.method.as_str(), c.status)), Some(("DELETE", 408)));
        // Users go before what they use: the VNet (its subnet uses the rest), then the NAT gateway.
        assert_eq!(left(&sim), vec!["networkSecurityGroups/nsg", "publicIPAddresses/pip", "routeTables/rt"]);
        assert_eq!(state(&sim.get(RG).await.unwrap().unwrap()), "Deleting");
    }
    // A later run finds the half-deleted group as it was left.
    let db = open_db(dir.path());
    let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
    assert_eq!(state(&sim.get(RG).await.unwrap().unwrap()), "Deleting");
    assert_eq!(left(&sim), vec!["networkSecurityGroups/nsg", "publicIPAddresses/pip", "routeTables/rt"]);
    // Writes into it are refused, as ARM refuses them.
    match sim.put(&id("routeTables/rt2"), json!({"location": "westeurope"})).await.unwrap_err() {
        CloudError::Rejected { status, code, message, .. } => {
            assert_eq!((status, code.as_str()), (409, "ResourceGroupBeingDeleted"), "{message}");
            assert!(message.contains("'rg'"), "{message}");
        }
        other => panic!("expected ResourceGroupBeingDeleted, got {other:?}"),
    }
    let e = sim.put(RG, json!({"location": "westeurope"})).await.unwrap_err();
    assert!(matches!(e, CloudError::Rejected { status: 409, ref code, .. } if code == "ResourceGroupBeingDeleted"));
    sim.delete(RG).await.expect("a second delete resumes and completes it");
    assert_eq!(sim.get(RG).await.unwrap(), None);
    assert!(left(&sim).is_empty());
}

#[tokio::test]
async fn resource_group_delete_refused_in_use_leaves_the_group_as_it_was() {
    let sim = ArmSim::in_memory("sub-1");
    fill(&sim).await;
    // A subnet in another group uses the route table: nothing may be deleted.
    let other = "/subscriptions/sub-1/resourceGroups/other";
    sim.put(other, json!({"location": "westeurope"})).await.unwrap();
    let vnet = format!("{other}/providers/Microsoft.Network/virtualNetworks/v");
    sim.put(&vnet, json!({"location": "westeurope"})).await.unwrap();
    sim.put(
        &format!("{vnet}/subnets/s"),
        json!({"properties": {"addressPrefix": "10.9.0.0/24", "routeTable": {"id": id("routeTables/rt")}}}),
    )
    .await
    .unwrap();
    let before = left(&sim);
    let e = sim.delete(RG).await.unwrap_err();
    assert!(
        matches!(e, CloudError::Rejected { status: 400, ref code, .. } if code == "InUseRouteTableCannotBeDeleted")
    );
    assert_eq!(left(&sim), before);
    assert_eq!(state(&sim.get(RG).await.unwrap().unwrap()), "Succeeded");
}

#[tokio::test]
async fn interrupted_on_a_call_that_is_not_long_running_acts_as_timeout_after_apply() {
    let sim = ArmSim::in_memory("sub-1");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim.set_faults(Faults::none().with_rule(FaultRule::once_at(
        Matcher::method("PUT"),
        1,
        Fault::Interrupted { after_steps: 0 },
    )));
    let e = sim.put(&id("routeTables/rt"), json!({"location": "westeurope"})).await.unwrap_err();
    assert!(matches!(e, CloudError::Timeout { .. }), "{e:?}");
    assert!(sim.get(&id("routeTables/rt")).await.unwrap().is_some(), "applied all the same");
}
