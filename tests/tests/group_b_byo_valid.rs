//! Group B — valid user-managed-egress configurations reconcile green, and nothing of the user's is
//! ever written (spec acceptance B1–B7; E3/E6/E9 asserted on every one of them through the audit log).

use serde_json::json;
use trellis_plans::{Action, Kind, Ownership, Plan};
use trellis_tests::{azure_json, node, text, user_owned, writes_to, Scenario};

/// Plans and applies the given manifests; asserts the apply is green and wrote nothing user-owned.
async fn apply_green(s: &Scenario, files: &[&str]) -> Vec<Plan> {
    let plans = s.plan_files(files).await.unwrap();
    let plan_docs: Vec<Plan> = plans.iter().map(|p| p.planned.plan.clone()).collect();
    let user = user_owned(&plan_docs.iter().collect::<Vec<_>>());
    assert!(!user.is_empty());
    let report = s.apply_plans(plans, "apply").await.unwrap();
    assert!(report.ok, "{report:#?}");
    assert!(
        writes_to(&report.calls, &user).is_empty(),
        "writes to user-owned resources: {:?}",
        writes_to(&report.calls, &user)
    );
    // Only the cluster resource groups are written.
    for c in report.calls.iter().filter(|c| c.op == trellis_planner::cloud::Op::Write) {
        assert!(c.target.contains("/resourceGroups/shoot--platform--"), "unexpected write {c:?}");
    }
    for file in files {
        let again = s.plan_file(file).await.unwrap();
        assert!(!again.has_changes(), "{}", text(&again));
    }
    plan_docs
}

fn assert_byo_shape(plan: &Plan) {
    assert_eq!(plan.mode, Some(trellis_plans::Mode::UserManagedEgress));
    for n in &plan.nodes {
        match (n.kind, n.ownership()) {
            (Kind::ResourceGroup, Ownership::Managed) => assert_eq!(n.action(), Action::Create),
            (_, Ownership::User) => assert_eq!(n.action(), Action::Verify, "{}", n.address),
            (_, Ownership::Managed) => {
                assert_eq!(n.action(), Action::Skip, "{}: only the cluster RG is managed", n.address)
            }
            (_, Ownership::Runtime) => panic!("no runtime node expected: {}", n.address),
        }
    }
    let skipped: Vec<&str> =
        plan.nodes.iter().filter(|n| n.action() == Action::Skip).map(|n| n.name.as_str()).collect();
    assert_eq!(skipped.len(), 3, "route table, NSG and NAT are gated out: {skipped:?}");
    assert!(plan.nodes.iter().filter(|n| n.action() == Action::Skip).all(|n| n.reason.contains("user-managed egress")));
    let st = &plan.artifacts.infrastructure_status;
    assert_eq!(st["networks"]["outboundAccessType"], json!("UserManaged"));
    assert_eq!(st["networks"]["layout"], json!("SingleSubnet"));
    assert_eq!(plan.artifacts.egress_cidrs, None);
    assert_eq!(plan.artifacts.allow_egress, Some(false));
    assert_eq!(azure_json(plan, "disableOutboundSNAT"), Some(&json!(true)));
}

#[tokio::test]
async fn b1_byo_subnet_with_nsg_and_route_table_in_the_vnet_resource_group() {
    let s = Scenario::new("B1");
    let plans = apply_green(&s, &["shoot.yaml"]).await;
    let plan = &plans[0];
    insta::assert_snapshot!("b1_plan", text(plan));
    assert_byo_shape(plan);
    assert_eq!(azure_json(plan, "subnetName"), Some(&json!("shoot-a-workers")));
    assert_eq!(azure_json(plan, "routeTableName"), Some(&json!("shoot-a-rt")));
    assert_eq!(azure_json(plan, "securityGroupName"), Some(&json!("shoot-a-nsg")));
    assert_eq!(azure_json(plan, "vnetResourceGroup"), Some(&json!("hub-network")));
    assert_eq!(azure_json(plan, "securityGroupResourceGroup"), Some(&json!("hub-network")));
    assert_eq!(azure_json(plan, "routeTableResourceGroup"), Some(&json!("hub-network")));
    assert!(!s.exists("/subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/shoot--platform--byo-b1/providers/Microsoft.Network/networkSecurityGroups/shoot--platform--byo-b1-workers"));
}

#[tokio::test]
async fn b2_route_table_in_a_central_resource_group() {
    let s = Scenario::new("B2");
    let plan = &apply_green(&s, &["shoot.yaml"]).await[0];
    assert_byo_shape(plan);
    assert_eq!(azure_json(plan, "routeTableResourceGroup"), Some(&json!("central-network-rg")));
    assert_eq!(azure_json(plan, "securityGroupResourceGroup"), Some(&json!("hub-network")));
}

#[tokio::test]
async fn b3_nsg_and_route_table_in_team_resource_groups() {
    let s = Scenario::new("B3");
    let plan = &apply_green(&s, &["shoot.yaml"]).await[0];
    assert_byo_shape(plan);
    assert_eq!(azure_json(plan, "securityGroupResourceGroup"), Some(&json!("security-team-rg")));
    assert_eq!(azure_json(plan, "routeTableResourceGroup"), Some(&json!("network-team-rg")));
    let st = &plan.artifacts.infrastructure_status;
    assert_eq!(
        st["securityGroups"],
        json!([{"purpose": "nodes", "name": "shoot-a-nsg", "resourceGroup": "security-team-rg"}])
    );
    assert_eq!(
        st["routeTables"],
        json!([{"purpose": "nodes", "name": "shoot-a-rt", "resourceGroup": "network-team-rg"}])
    );
}

#[tokio::test]
async fn b4_firewall_default_route_is_kept_and_cloud_routes_stay_on() {
    let s = Scenario::new("B4");
    let plan = &apply_green(&s, &["shoot.yaml"]).await[0];
    assert_byo_shape(plan);
    assert_eq!(
        plan.artifacts.ccm_flags.as_ref().unwrap().get("configure-cloud-routes"),
        Some(&true),
        "non-overlay: the CCM writes per-node routes"
    );
    let rt = s.sim().get_now(node(plan, "route_table.hub-network.shoot-a-rt").id.as_deref().unwrap()).unwrap();
    assert_eq!(rt["properties"]["routes"][0]["name"], json!("default-to-firewall"));
}

#[tokio::test]
async fn b5_empty_route_table_is_accepted() {
    let s = Scenario::new("B5");
    let plan = &apply_green(&s, &["shoot.yaml"]).await[0];
    assert_byo_shape(plan);
    assert_eq!(azure_json(plan, "routeTableName"), Some(&json!("shoot-a-rt")));
}

#[tokio::test]
async fn b6_two_byo_shoots_share_a_user_nat_gateway() {
    let s = Scenario::new("B6");
    let plans = apply_green(&s, &["shoot-a.yaml", "shoot-b.yaml"]).await;
    assert_eq!(plans.len(), 2);
    for p in &plans {
        assert_byo_shape(p);
        assert!(
            p.nodes.iter().all(|n| n.kind != Kind::NatGateway || n.action() == Action::Skip),
            "the NAT is never referenced"
        );
    }
    let nat = "/subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub-network/providers/Microsoft.Network/natGateways/shared-nat";
    for subnet in ["shoot-a-workers", "shoot-b-workers"] {
        let id = format!("/subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub-network/providers/Microsoft.Network/virtualNetworks/hub-vnet/subnets/{subnet}");
        assert_eq!(
            s.sim().get_now(&id).unwrap()["properties"]["natGateway"]["id"],
            json!(nat),
            "the NAT stays attached"
        );
    }
}

#[tokio::test]
async fn b7_two_overlay_shoots_share_a_route_table() {
    let s = Scenario::new("B7");
    let plans = apply_green(&s, &["shoot-a.yaml", "shoot-b.yaml"]).await;
    for p in &plans {
        assert_byo_shape(p);
        assert_eq!(
            p.artifacts.ccm_flags.as_ref().unwrap().get("configure-cloud-routes"),
            Some(&false),
            "overlay: no CCM route writes"
        );
        assert_eq!(azure_json(p, "routeTableName"), Some(&json!("shared-rt")));
        assert_eq!(azure_json(p, "routeTableResourceGroup"), Some(&json!("hub-network")));
    }
}
