//! Group A — regression: managed mode behaves as upstream does today (spec acceptance A1–A5).

use serde_json::json;
use trellis_plans::{Action, Ownership};
use trellis_tests::{azure_json, node, text, Scenario};

const TN_A1: &str = "shoot--dev--alpha";

#[tokio::test]
async fn a1_managed_vnet_and_subnet_without_nat() {
    let s = Scenario::new("A1");
    let plan = s.plan().await.unwrap();
    insta::assert_snapshot!("a1_plan", text(&plan));

    assert!(plan.nodes.iter().all(|n| n.action() == Action::Create && n.ownership() == Ownership::Managed));
    let names: Vec<&str> = plan.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "shoot--dev--alpha-workers",
            TN_A1,
            "worker_route_table",
            "shoot--dev--alpha/shoot--dev--alpha-nodes",
            TN_A1
        ]
    );
    let subnet = node(&plan, "shoot--dev--alpha-nodes");
    assert_eq!(
        subnet.depends_on,
        vec![
            "azure.network_security_group.shoot--dev--alpha.shoot--dev--alpha-workers",
            "azure.route_table.shoot--dev--alpha.worker_route_table",
            "azure.virtual_network.shoot--dev--alpha.shoot--dev--alpha",
        ]
    );
    // Artifacts: LoadBalancer egress, allow-egress Services deployed, no disableOutboundSNAT.
    let status = &plan.artifacts.infrastructure_status;
    assert_eq!(status["networks"]["outboundAccessType"], json!("LoadBalancer"));
    assert_eq!(status["routeTables"], json!([{"purpose": "nodes", "name": "worker_route_table"}]));
    assert_eq!(status["securityGroups"], json!([{"purpose": "nodes", "name": "shoot--dev--alpha-workers"}]));
    assert_eq!(plan.artifacts.allow_egress, Some(true));
    assert_eq!(plan.artifacts.egress_cidrs, Some(vec![]));
    assert!(azure_json(&plan, "disableOutboundSNAT").is_none());
    assert_eq!(plan.artifacts.ccm_flags.as_ref().unwrap().get("configure-cloud-routes"), Some(&true));
    assert_eq!(azure_json(&plan, "vmType"), Some(&json!("vmss")));

    // Apply creates exactly those resources, and the next plan is a no-op with zero writes.
    let report = s.apply().await.unwrap();
    assert!(report.ok, "{report:?}");
    let writes = report.calls.iter().filter(|c| c.op == trellis_planner::cloud::Op::Write).count();
    assert_eq!(writes, 5);
    let mark = s.sim().mark();
    let again = s.plan().await.unwrap();
    assert!(!again.has_changes(), "{}", text(&again));
    assert!(again.nodes.iter().all(|n| n.action() == Action::Noop));
    assert!(s.sim().calls_since(mark).iter().all(|c| c.op == trellis_planner::cloud::Op::Read));
}

#[tokio::test]
async fn a2_managed_nat_gateway_populates_egress_cidrs() {
    let s = Scenario::new("A2");
    let plan = s.plan().await.unwrap();
    insta::assert_snapshot!("a2_plan", text(&plan));
    let nat = node(&plan, ".shoot--dev--bravo-nat-gateway");
    assert_eq!(nat.action(), Action::Create);
    assert_eq!(nat.patch().unwrap()["zones"], json!(["1"]));
    let ip = node(&plan, ".shoot--dev--bravo-nat-gateway-ip");
    assert_eq!(ip.action(), Action::Create);
    assert!(nat.depends_on.contains(&ip.address));
    assert_eq!(plan.artifacts.infrastructure_status["networks"]["outboundAccessType"], json!("NATGateway"));
    assert_eq!(plan.artifacts.allow_egress, Some(false), "no allow-egress Services behind a NAT gateway");
    assert_eq!(plan.artifacts.egress_cidrs, Some(vec!["(known after apply)".to_string()]));

    let report = s.apply().await.unwrap();
    assert!(report.ok);
    let artifacts = &report.shoots[0].artifacts.as_ref().unwrap();
    let cidrs = artifacts["egress_cidrs"].as_array().unwrap();
    assert_eq!(cidrs.len(), 1);
    assert!(cidrs[0].as_str().unwrap().ends_with("/32"), "{cidrs:?}");
    let subnet_id = node(&plan, "shoot--dev--bravo-nodes").id.clone().unwrap();
    let subnet = s.sim().get_now(&subnet_id).unwrap();
    assert!(subnet["properties"]["natGateway"]["id"]
        .as_str()
        .unwrap()
        .ends_with("/natGateways/shoot--dev--bravo-nat-gateway"));
}

#[tokio::test]
async fn a3_byo_vnet_nat_uses_user_public_ips() {
    let s = Scenario::new("A3");
    let plan = s.plan().await.unwrap();
    insta::assert_snapshot!("a3_plan", text(&plan));
    let vnet = node(&plan, "platform-network.platform-vnet");
    assert_eq!((vnet.action(), vnet.ownership()), (Action::Verify, Ownership::User));
    let ip = node(&plan, "platform-network.egress-ip-1");
    assert_eq!((ip.action(), ip.ownership()), (Action::Read, Ownership::User));
    assert!(
        plan.nodes.iter().all(|n| n.kind != trellis_plans::Kind::PublicIpAddress || n.ownership() == Ownership::User),
        "no new public IP"
    );
    assert_eq!(plan.artifacts.egress_cidrs, Some(vec!["51.105.20.7/32".to_string()]));
    assert_eq!(azure_json(&plan, "vnetResourceGroup"), Some(&json!("platform-network")));

    let report = s.apply().await.unwrap();
    assert!(report.ok);
    // The user's VNet and public IP received no write; only Gardener's subnet inside the VNet did.
    let user = [vnet.id.clone().unwrap(), ip.id.clone().unwrap()];
    let writes: Vec<_> = report.calls.iter().filter(|c| c.op == trellis_planner::cloud::Op::Write).collect();
    assert!(writes.iter().all(|c| !user.iter().any(|u| c.target.eq_ignore_ascii_case(u))), "{writes:?}");
    assert!(writes
        .iter()
        .any(|c| c.target.ends_with("/virtualNetworks/platform-vnet/subnets/shoot--dev--charlie-nodes")));
}

#[tokio::test]
async fn a4_multi_zone_layout_has_a_subnet_and_nat_per_zone() {
    let s = Scenario::new("A4");
    let plan = s.plan().await.unwrap();
    insta::assert_snapshot!("a4_plan", text(&plan));
    for z in 1..=3 {
        let subnet = node(&plan, &format!("shoot--dev--delta-nodes-z{z}"));
        assert_eq!(subnet.action(), Action::Create);
    }
    node(&plan, ".shoot--dev--delta-nat-gateway-z1");
    node(&plan, ".shoot--dev--delta-nat-gateway-z2");
    assert!(plan.nodes.iter().all(|n| !n.address.ends_with("nat-gateway-z3")));
    let status = &plan.artifacts.infrastructure_status["networks"];
    assert_eq!(status["layout"], json!("MultipleSubnet"));
    assert_eq!(status["outboundAccessType"], json!("LoadBalancer"), "zone 3 has no NAT");
    assert_eq!(status["subnets"][2], json!({"name": "shoot--dev--delta-nodes-z3", "purpose": "nodes", "zone": "3"}));
    assert!(s.apply().await.unwrap().ok);
    assert!(!s.plan().await.unwrap().has_changes());
}

#[tokio::test]
async fn a5_single_subnet_shoot_migrates_to_multi_subnet_layout() {
    let s = Scenario::new("A5");
    assert!(s.apply().await.unwrap().ok);
    let plan = s.plan_file("shoot-zoned.yaml").await.unwrap();
    insta::assert_snapshot!("a5_migration_plan", text(&plan));
    // Zone 1 keeps the existing subnet and NAT gateway (no data-plane disruption); zone 2 is new.
    assert_eq!(node(&plan, "/shoot--dev--echo-nodes").action(), Action::Noop);
    assert_eq!(node(&plan, ".shoot--dev--echo-nat-gateway").action(), Action::Noop);
    assert_eq!(node(&plan, "/shoot--dev--echo-nodes-z2").action(), Action::Create);
    assert_eq!(node(&plan, ".shoot--dev--echo-nat-gateway-z2").action(), Action::Create);
    assert!(
        plan.nodes.iter().all(|n| n.action() != Action::Delete && n.action() != Action::Replace),
        "{}",
        text(&plan)
    );
    assert!(plan.warnings.iter().any(|w| w.contains("migration.azure.provider.extensions.gardener.cloud/zone=1")));
    let status = &plan.artifacts.infrastructure_status["networks"]["subnets"][0];
    assert_eq!(status["migrated"], json!(true));
    assert!(s.apply_files(&["shoot-zoned.yaml"]).await.unwrap().ok);
    let after = s.plan_file("shoot-zoned.yaml").await.unwrap();
    assert!(!after.has_changes(), "{}", text(&after));
    assert!(after.warnings.is_empty(), "the migration is remembered in state");
}

#[tokio::test]
async fn a2_moving_the_nat_to_another_zone_replaces_nat_and_ip_and_keeps_the_subnet_attached() {
    let s = Scenario::new("A2");
    assert!(s.apply().await.unwrap().ok);
    let plan = s.plan_file("shoot-zone2.yaml").await.unwrap();
    insta::assert_snapshot!("a2_zone_change_plan", text(&plan));
    let nat = node(&plan, ".shoot--dev--bravo-nat-gateway");
    let ip = node(&plan, ".shoot--dev--bravo-nat-gateway-ip");
    assert_eq!((nat.action(), ip.action()), (Action::Replace, Action::Replace));
    assert_eq!(nat.detach().len(), 1, "the subnet is detached from the NAT during the replacement");
    let report = s.apply_files(&["shoot-zone2.yaml"]).await.unwrap();
    assert!(report.ok, "{report:#?}");
    let subnet = s.sim().get_now(node(&plan, "shoot--dev--bravo-nodes").id.as_deref().unwrap()).unwrap();
    assert!(subnet["properties"]["natGateway"]["id"]
        .as_str()
        .unwrap()
        .ends_with("/natGateways/shoot--dev--bravo-nat-gateway"));
    let nat_live = s.sim().get_now(nat.id.as_deref().unwrap()).unwrap();
    assert_eq!(nat_live["zones"], json!(["2"]));
    assert_eq!(nat_live["properties"]["publicIpAddresses"].as_array().unwrap().len(), 1);
    assert!(!s.plan_file("shoot-zone2.yaml").await.unwrap().has_changes());
}

#[tokio::test]
async fn regression_a2_replaced_public_ip_shows_its_egress_cidr_as_known_after_apply() {
    let s = Scenario::new("A2");
    let first = s.apply().await.unwrap();
    assert!(first.ok, "{first:#?}");
    let old = first.shoots[0].artifacts.as_ref().unwrap()["egress_cidrs"].clone();
    assert!(old[0].as_str().unwrap().ends_with("/32"), "{old}");

    // The zone change replaces the public IP: ARM gives the new one another address.
    let plan = s.plan_file("shoot-zone2.yaml").await.unwrap();
    assert_eq!(node(&plan, ".shoot--dev--bravo-nat-gateway-ip").action(), Action::Replace);
    assert_eq!(plan.artifacts.egress_cidrs, Some(vec!["(known after apply)".to_string()]));
    assert!(text(&plan).contains("egress CIDRs: (known after apply)"), "{}", text(&plan));

    let report = s.apply_files(&["shoot-zone2.yaml"]).await.unwrap();
    assert!(report.ok, "{report:#?}");
    let new = report.shoots[0].artifacts.as_ref().unwrap()["egress_cidrs"].clone();
    assert!(new[0].as_str().unwrap().ends_with("/32"), "{new}");
    assert_ne!(new, old, "the replaced public IP has a new address");
    // Once applied, the address is known again.
    let after = s.plan_file("shoot-zone2.yaml").await.unwrap();
    assert_eq!(after.artifacts.egress_cidrs, Some(vec![new[0].as_str().unwrap().to_string()]));
}
