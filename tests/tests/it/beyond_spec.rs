//! What upstream leaves to documentation, trellis checks: drift of the user's resources since the last
//! apply (shared BYO subnets, the route-table limit, NSG rules that block required flows and user
//! resources in the cluster resource group are data scenarios: `tests/scenarios/azure/X*`).

use trellis_tests::Scenario;

fn assert_has(msg: &str, want: &str) {
    assert!(msg.contains(want), "expected `{want}` in:\n{msg}");
}

#[tokio::test]
async fn every_plan_reverifies_the_byo_subnet_against_the_last_apply() {
    let mut s = Scenario::new("B1");
    assert!(s.apply().await.unwrap().ok);
    s.sync_world("world-nsg-swapped.yaml");
    let msg = format!("{:#}", s.plan().await.expect_err("drift refused"));
    assert_has(&msg, "the network security group changed since the last apply, from /subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub-network/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg to /subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub-network/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg-2");
    assert_has(&msg, "--accept-drift");
    // Accepting the drift plans the new NSG into azure.json; applying records it.
    s.session.accept_drift = true;
    let plan = s.plan().await.unwrap();
    assert_eq!(
        plan.artifacts.cloud_provider_config().unwrap().values["securityGroupName"],
        serde_json::json!("shoot-a-nsg-2")
    );
    assert!(s.apply().await.unwrap().ok);
    s.session.accept_drift = false;
    assert!(s.plan().await.is_ok());
}

#[tokio::test]
async fn a_changed_byo_subnet_cidr_is_drift() {
    let s = Scenario::new("B1");
    assert!(s.apply().await.unwrap().ok);
    s.sync_world("world-cidr-changed.yaml");
    let msg = format!("{:#}", s.plan().await.expect_err("drift refused"));
    assert_has(&msg, "the address prefix changed since the last apply, from 10.250.0.0/19 to 10.250.0.0/20");
}

#[tokio::test]
async fn a_detached_nsg_fails_the_plan_and_the_verify_node() {
    let s = Scenario::new("B1");
    let plans = s.plan_files(&["shoot.yaml"]).await.unwrap();
    // Between plan and apply the NSG is detached: the subnet's verify node fails the apply.
    s.sync_world("../C9b-byo-subnet-without-nsg/world.yaml");
    let report = s.apply_plans(plans, trellis_engine::ops::ApplyOp::Apply).await.unwrap();
    assert!(!report.ok);
    let subnet = report.shoots[0].nodes.iter().find(|n| n.address.ends_with("hub-vnet/shoot-a-workers")).unwrap();
    let outcome = serde_json::to_value(&subnet.outcome).unwrap();
    assert_has(outcome["error"].as_str().unwrap(), "network security group association changed");
    assert_eq!(outcome["failure"]["class"], "verify_failed", "{outcome}");
}
