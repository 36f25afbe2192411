//! Group E — invariants after a successful reconcile in user-managed-egress mode (E1–E9). The runtime
//! writers (CCM, bastion: E10–E14) are in `group_e_runtime_writers.rs`.

use serde_json::json;
use trellis_planner::cloud::Op;
use trellis_tests::{azure_json, writes_to, Scenario};

const SUB: &str = "6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17";
const TN: &str = "shoot--platform--byo-b3";

fn id(rg: &str, rest: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.Network/{rest}")
}

/// B3 (NSG and route table in team resource groups), applied: the richest BYO shape.
async fn applied() -> (Scenario, trellis_plans::Plan, trellis_cli::ops::ApplyReport) {
    let s = Scenario::new("B3");
    let plan = s.plan().await.unwrap();
    let report = s.apply().await.unwrap();
    assert!(report.ok, "{report:#?}");
    (s, plan, report)
}

#[tokio::test]
async fn e1_outbound_access_type_is_user_managed() {
    let (_, plan, report) = applied().await;
    assert_eq!(plan.artifacts.infrastructure_status["networks"]["outboundAccessType"], json!("UserManaged"));
    let after = report.shoots[0].artifacts.as_ref().unwrap();
    assert_eq!(after["infrastructure_status"]["networks"]["outboundAccessType"], json!("UserManaged"));
}

#[tokio::test]
async fn e2_egress_cidrs_are_nil() {
    let (_, plan, report) = applied().await;
    assert_eq!(plan.artifacts.egress_cidrs, None);
    assert_eq!(report.shoots[0].artifacts.as_ref().unwrap()["egress_cidrs"], json!(null));
}

#[tokio::test]
async fn e3_no_write_to_the_byo_subnet_nsg_route_table_or_vnet() {
    let (_, _, report) = applied().await;
    let user = vec![
        id("hub-network", "virtualNetworks/hub-vnet"),
        id("security-team-rg", "networkSecurityGroups/shoot-a-nsg"),
        id("network-team-rg", "routeTables/shoot-a-rt"),
    ];
    assert!(writes_to(&report.calls, &user).is_empty());
    let writes: Vec<&str> = report.calls.iter().filter(|c| c.op == Op::Write).map(|c| c.target.as_str()).collect();
    assert_eq!(
        writes,
        vec![format!("/subscriptions/{SUB}/resourceGroups/{TN}").as_str()],
        "only the cluster resource group"
    );
}

#[tokio::test]
async fn e4_no_worker_route_table_in_the_cluster_resource_group() {
    let (s, _, _) = applied().await;
    assert!(!s.exists(&id(TN, "routeTables/worker_route_table")));
}

#[tokio::test]
async fn e5_azure_json_security_group_is_the_users_nsg() {
    let (_, plan, _) = applied().await;
    assert_eq!(azure_json(&plan, "securityGroupName"), Some(&json!("shoot-a-nsg")));
    assert_ne!(azure_json(&plan, "securityGroupName"), Some(&json!(format!("{TN}-workers"))));
}

#[tokio::test]
async fn e6_subnet_still_points_at_the_users_nsg() {
    let s = Scenario::new("B3");
    let subnet_id = id("hub-network", "virtualNetworks/hub-vnet/subnets/shoot-a-workers");
    let before = s.sim().get_now(&subnet_id).unwrap();
    assert!(s.apply().await.unwrap().ok);
    let after = s.sim().get_now(&subnet_id).unwrap();
    assert_eq!(
        after["properties"]["networkSecurityGroup"]["id"],
        json!(id("security-team-rg", "networkSecurityGroups/shoot-a-nsg"))
    );
    assert_eq!(after, before, "the subnet, etag included, is exactly as it was");
}

#[tokio::test]
async fn e7_allow_egress_services_are_not_deployed() {
    let (_, plan, _) = applied().await;
    assert_eq!(plan.artifacts.allow_egress, Some(false));
}

#[tokio::test]
async fn e8_azure_json_has_the_byo_keys() {
    let (_, plan, _) = applied().await;
    for (key, value) in [
        ("subnetName", json!("shoot-a-workers")),
        ("routeTableName", json!("shoot-a-rt")),
        ("securityGroupName", json!("shoot-a-nsg")),
        ("vnetResourceGroup", json!("hub-network")),
        ("routeTableResourceGroup", json!("network-team-rg")),
        ("securityGroupResourceGroup", json!("security-team-rg")),
        ("disableOutboundSNAT", json!(true)),
    ] {
        assert_eq!(azure_json(&plan, key), Some(&value), "{key}");
    }
    let content = &plan.artifacts.cloud_provider_config.as_ref().unwrap().content;
    assert!(content.contains("disableOutboundSNAT: true\n"));
    let keys: Vec<&str> = content.lines().map(|l| l.split(':').next().unwrap()).collect();
    let pos = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(
        pos("vnetResourceGroup") < pos("routeTableResourceGroup")
            && pos("securityGroupResourceGroup") < pos("loadBalancerSku")
    );
}

#[tokio::test]
async fn e9_no_workers_nsg_in_the_cluster_resource_group() {
    let (s, _, _) = applied().await;
    assert!(!s.exists(&id(TN, &format!("networkSecurityGroups/{TN}-workers"))));
    let subnet = s.sim().get_now(&id("hub-network", "virtualNetworks/hub-vnet/subnets/shoot-a-workers")).unwrap();
    assert_eq!(
        subnet["properties"]["networkSecurityGroup"]["id"],
        json!(id("security-team-rg", "networkSecurityGroups/shoot-a-nsg"))
    );
}
