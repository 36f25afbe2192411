//! Bullet "Writes are instant and never conflict": ARM serialises the writes within a VNet. While a
//! write to a VNet or one of its subnets is in flight (its simulated latency), another write in the
//! same VNet is refused at once with 409 `AnotherOperationInProgress`, as ARM answers.

use serde_json::json;
use std::time::Duration;
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite};
use trellis_sim::{ArmSim, Faults};

use crate::common;
use common::{NET, RG};

fn vnet(name: &str) -> String {
    format!("{NET}/virtualNetworks/{name}")
}

fn subnet(vnet_name: &str, name: &str) -> String {
    format!("{}/subnets/{name}", vnet(vnet_name))
}

fn body(prefix: &str) -> serde_json::Value {
    json!({"properties": {"addressPrefix": prefix}})
}

/// Two VNets; writes take 30 simulated seconds.
async fn sim() -> ArmSim {
    let sim = ArmSim::in_memory("sub-1");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    for (name, space) in [("one", "10.0.0.0/16"), ("two", "10.1.0.0/16")] {
        let v = json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": [space]}}});
        sim.put(&vnet(name), v).await.unwrap();
    }
    sim.set_faults(Faults::none().with_latency(Duration::ZERO, Duration::from_secs(30)));
    sim
}

#[tokio::test(start_paused = true)]
async fn regression_overlapping_subnet_writes_in_one_vnet_are_refused_with_another_operation_in_progress() {
    let sim = sim().await;
    let (one_a, one_b) = (subnet("one", "a"), subnet("one", "b"));
    let (a, b) = tokio::join!(sim.put(&one_a, body("10.0.1.0/24")), sim.put(&one_b, body("10.0.2.0/24")));
    a.expect("the first write is accepted");
    match b.unwrap_err() {
        CloudError::Conflict { code, message, .. } => {
            assert_eq!(code.as_str(), "AnotherOperationInProgress");
            assert!(
                message.starts_with("Another operation on this or dependent resource is in progress."),
                "{message}"
            );
            assert!(message.contains("/providers/Microsoft.Network/locations/westeurope/operations/"), "{message}");
        }
        other => panic!("expected AnotherOperationInProgress, got {other:?}"),
    }
    assert!(sim.get(&subnet("one", "b")).await.unwrap().is_none(), "the refused write was not applied");
    let statuses: Vec<u16> = sim.calls().iter().filter(|c| c.method == "PUT").map(|c| c.status).collect();
    assert!(statuses.ends_with(&[409, 201]), "audited: {statuses:?}");

    // Once the first write is done, the VNet takes the next one.
    sim.put(&one_b, body("10.0.2.0/24")).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn regression_a_vnet_write_and_a_subnet_write_overlapping_conflict() {
    let sim = sim().await;
    let v = json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}});
    let (one, one_a) = (vnet("one"), subnet("one", "a"));
    let (first, second) = tokio::join!(sim.put(&one, v), sim.delete(&one_a));
    first.unwrap();
    assert!(matches!(second, Err(CloudError::Conflict { ref code, .. }) if code == "AnotherOperationInProgress"));
}

#[tokio::test(start_paused = true)]
async fn writes_in_different_vnets_or_one_after_the_other_do_not_conflict() {
    let sim = sim().await;
    let (one_a, two_a) = (subnet("one", "a"), subnet("two", "a"));
    let (a, b) = tokio::join!(sim.put(&one_a, body("10.0.1.0/24")), sim.put(&two_a, body("10.1.1.0/24")));
    a.unwrap();
    b.unwrap();
    // Reads are never refused, and writes outside VNets are not serialised.
    let (one, one_b) = (vnet("one"), subnet("one", "b"));
    let (x, y) = (format!("{NET}/networkSecurityGroups/x"), format!("{NET}/networkSecurityGroups/y"));
    let (r, w, nsg1, nsg2) = tokio::join!(
        sim.get(&one),
        sim.put(&one_b, body("10.0.2.0/24")),
        sim.put(&x, json!({"location": "westeurope"})),
        sim.put(&y, json!({"location": "westeurope"})),
    );
    r.unwrap();
    w.unwrap();
    nsg1.unwrap();
    nsg2.unwrap();
}

#[tokio::test]
async fn without_latency_writes_are_instant_and_never_overlap() {
    let sim = sim().await;
    sim.set_faults(Faults::none());
    let (one_a, one_b) = (subnet("one", "a"), subnet("one", "b"));
    let (a, b) = tokio::join!(sim.put(&one_a, body("10.0.1.0/24")), sim.put(&one_b, body("10.0.2.0/24")));
    a.unwrap();
    b.unwrap();
}
