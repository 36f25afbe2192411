//! What upstream leaves to documentation, trellis checks: shared BYO subnets, drift of the user's
//! resources, the route-table limit, NSG rules that block required flows, user resources in the
//! cluster resource group.

use trellis_tests::Scenario;

fn assert_has(msg: &str, want: &str) {
    assert!(msg.contains(want), "expected `{want}` in:\n{msg}");
}

#[tokio::test]
async fn a_fleet_with_two_shoots_on_one_byo_subnet_is_refused_naming_both() {
    let s = Scenario::new("X1");
    let err = s.plan_files(&["shoot-a.yaml", "shoot-b.yaml"]).await.err().expect("refused");
    let msg = format!("{err:#}");
    assert_has(&msg, "shoot--platform--byo-x1a");
    assert_has(&msg, "shoot--platform--byo-x1b");
    assert_has(&msg, "must be dedicated to one shoot");
}

#[tokio::test]
async fn a_byo_subnet_already_applied_for_another_shoot_is_refused() {
    let s = Scenario::new("X1");
    assert!(s.apply_files(&["shoot-a.yaml"]).await.unwrap().ok);
    let err = s.plan_files(&["shoot-b.yaml"]).await.err().expect("refused");
    assert_has(&format!("{err:#}"), "shoot--platform--byo-x1a (applied, in state)");
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
        plan.artifacts.cloud_provider_config.as_ref().unwrap().values["securityGroupName"],
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
    let report = s.apply_plans(plans, "apply").await.unwrap();
    assert!(!report.ok);
    let subnet = report.shoots[0].nodes.iter().find(|n| n.address.ends_with("hub-vnet/shoot-a-workers")).unwrap();
    let outcome = serde_json::to_value(&subnet.outcome).unwrap();
    assert_has(outcome["error"].as_str().unwrap(), "network security group association changed");
    assert_eq!(outcome["failure"]["class"], "verify_failed", "{outcome}");
}

#[tokio::test]
async fn the_route_table_limit_is_warned_about() {
    let s = Scenario::new("X2");
    let plan = s.plan().await.unwrap();
    assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
    assert_has(&plan.warnings[0], "route table hub-network/shoot-a-rt: 1 existing route(s) plus one per node for up to 390 nodes is 391 of Azure's limit of 400");
    let over = s.plan_file("shoot-over.yaml").await.unwrap();
    assert_has(&over.warnings[0], "is 451, over Azure's limit of 400 routes per route table");
    // Under overlay nothing writes routes, so there is nothing to warn about.
    let b7 = Scenario::new("B7");
    assert!(b7.plan_file("shoot-a.yaml").await.unwrap().warnings.is_empty());
}

#[tokio::test]
async fn an_nsg_rule_blocking_a_required_flow_is_warned_about() {
    let s = Scenario::new("X3");
    let plan = s.plan().await.unwrap();
    assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
    assert_has(&plan.warnings[0], "NSG hub-network/shoot-a-nsg: rule deny-vnet-inbound (priority 200, Deny) blocks inbound TCP 10250 from VirtualNetwork");
}

#[tokio::test]
async fn user_resources_in_the_cluster_resource_group_are_refused() {
    let s = Scenario::new("X4");
    let msg = format!("{:#}", s.plan().await.expect_err("refused"));
    assert_has(&msg, "VNet hub-vnet is in resource group shoot--platform--byo-x4, the shoot's cluster resource group, which trellis owns and deletes on destroy");
    assert_has(&msg, "the subnet's network security group shoot-a-nsg is in resource group shoot--platform--byo-x4");
}
