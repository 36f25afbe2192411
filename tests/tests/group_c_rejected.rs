//! Group C — rejected configurations: admission validation (C1–C7) and pre-flight against the
//! observed cloud (C8–C12, C9b). Every rejection writes nothing.

use trellis_state::StateStore;
use trellis_tests::Scenario;

/// Plans the scenario's manifest and returns the error lines; asserts nothing was written.
async fn rejected(id: &str, file: &str) -> String {
    let s = Scenario::new(id);
    let mark = s.sim().mark();
    let err = s.plan_file(file).await.err().unwrap_or_else(|| panic!("{id}: expected a rejection"));
    assert!(s.sim().calls_since(mark).iter().all(|c| c.op == trellis_planner::cloud::Op::Read));
    assert!(s.session.store.list().map(|l| l.is_empty()).unwrap_or(false));
    format!("{err:#}")
}

fn assert_has(msg: &str, want: &str) {
    assert!(msg.contains(want), "expected `{want}` in:\n{msg}");
}

#[tokio::test]
async fn c1_byo_subnet_requires_a_byo_vnet_resource_group() {
    let msg = rejected("C1", "shoot.yaml").await;
    assert_has(&msg, "networks.vnet.resourceGroup: Required value: the resource group of an existing vnet must be set in user-managed-egress mode");
}

#[tokio::test]
async fn c2_byo_subnet_with_zones_is_rejected() {
    assert_has(&rejected("C2", "shoot.yaml").await, "networks.zones: Forbidden");
}

#[tokio::test]
async fn c3_byo_subnet_with_workers_is_rejected() {
    assert_has(&rejected("C3", "shoot.yaml").await, "networks.workers: Forbidden");
}

#[tokio::test]
async fn c4_byo_subnet_with_nat_gateway_is_rejected() {
    assert_has(&rejected("C4", "shoot.yaml").await, "networks.natGateway: Forbidden");
}

#[tokio::test]
async fn c5_byo_subnet_with_service_endpoints_is_rejected() {
    assert_has(&rejected("C5", "shoot.yaml").await, "networks.serviceEndpoints: Forbidden");
}

#[tokio::test]
async fn c6_byo_subnet_with_vnet_cidr_is_rejected() {
    assert_has(&rejected("C6", "shoot.yaml").await, "networks.vnet.cidr");
}

#[tokio::test]
async fn c7_byo_subnet_with_ddos_plan_is_rejected() {
    assert_has(&rejected("C7", "shoot.yaml").await, "networks.vnet.ddosProtectionPlanID: Forbidden");
}

#[tokio::test]
async fn c8_missing_subnet_names_subnet_and_vnet() {
    let msg = rejected("C8", "shoot.yaml").await;
    assert_has(
        &msg,
        "networks.subnet.name: subnet shoot-x-workers in VNet hub-vnet (resource group hub-network) not found",
    );
}

#[tokio::test]
async fn c9_subnet_without_route_table_needs_overlay() {
    let msg = rejected("C9", "shoot.yaml").await;
    assert_has(&msg, "has no route table attached");
    assert_has(&msg, "overlay");
    // The same subnet is accepted for an overlay-CNI shoot, and the status then lists no route table.
    let s = Scenario::new("C9");
    let plan = s.plan_file("shoot-overlay.yaml").await.unwrap();
    assert_eq!(plan.artifacts.infrastructure_status["routeTables"], serde_json::json!([]));
    assert_eq!(plan.artifacts.cloud_provider_config.as_ref().unwrap().values["routeTableName"], serde_json::json!(""));
    assert!(!plan.artifacts.cloud_provider_config.as_ref().unwrap().values.contains_key("routeTableResourceGroup"));
    assert!(!plan.artifacts.ccm_flags.as_ref().unwrap()["configure-cloud-routes"]);
}

#[tokio::test]
async fn c9b_subnet_without_nsg_is_rejected() {
    let msg = rejected("C9b", "shoot.yaml").await;
    assert_has(&msg, "has no network security group attached");
    assert_has(&msg, "securityGroupName");
}

#[tokio::test]
async fn c10_subnet_outside_nodes_is_rejected() {
    let msg = rejected("C10", "shoot.yaml").await;
    assert_has(&msg, "networking.nodes: subnet shoot-a-workers in VNet hub-vnet (resource group hub-network) has CIDR 10.250.0.0/19, which is not within networking.nodes (10.251.0.0/16)");
}

#[tokio::test]
async fn c11_subnet_overlapping_pods_or_services_is_rejected() {
    // A subnet inside networking.nodes (C10 holds) that overlaps pods or services means the shoot's
    // own networks overlap: Gardener's ShootValidator refuses that at admission, before pre-flight.
    assert_has(
        &rejected("C11", "shoot.yaml").await,
        r#"spec.networking.pods: Invalid value: "10.250.0.0/17": shoot pod network intersects with shoot node network"#,
    );
    assert_has(
        &rejected("C11", "shoot-services.yaml").await,
        r#"spec.networking.services: Invalid value: "10.250.16.0/20": shoot service network intersects with shoot node network"#,
    );
    // Pre-flight's C11 check, for a subnet outside networking.nodes (reported with C10).
    let msg = rejected("C11", "shoot-outside-nodes.yaml").await;
    assert_has(&msg, "overlaps networking.pods (10.250.0.0/17)");
    assert_has(&msg, "which is not within networking.nodes (10.251.0.0/16)");
}

#[tokio::test]
async fn c12_route_table_in_another_subscription_is_rejected() {
    let msg = rejected("C12", "shoot.yaml").await;
    assert_has(&msg, "is in subscription 9b1d4f2e-7a3c-4e5b-8d6f-1c2a3b4c5d6e, not the shoot's subscription 6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17");
}
