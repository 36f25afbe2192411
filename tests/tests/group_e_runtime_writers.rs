//! The runtime writers against the user's resources after a BYO apply: the CCM (Services of type
//! LoadBalancer, per-node routes) and the bastion controller, configured only from the azure.json and
//! CCM flags trellis rendered. Acceptance B4, B5, E10–E14, F2–F4.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use trellis_planner::cloud::{CloudWrite, Op};
use trellis_sim::runtime::{Bastion, Ccm, DISABLE_NSG_RULE_ANNOTATION};
use trellis_sim::{Fault, FaultRule, Faults, Matcher};
use trellis_tests::{writes_to, Scenario};

const SUB: &str = "6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17";

fn id(rg: &str, rest: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.Network/{rest}")
}

/// A BYO scenario, applied, with the controllers configured from what trellis rendered.
struct Running {
    s: Scenario,
    ccm: Ccm,
    bastion: Bastion,
    nsg: String,
    rt: String,
    tn: String,
}

async fn running(scenario: &str, nsg_rg: &str, rt_rg: &str) -> Running {
    let s = Scenario::new(scenario);
    let report = s.apply().await.unwrap();
    assert!(report.ok);
    let artifacts = report.shoots[0].artifacts.clone().unwrap();
    let values = artifacts["cloud_provider_config"]["values"].as_object().unwrap().clone();
    let routes = artifacts["ccm_flags"]["configure-cloud-routes"].as_bool().unwrap();
    let cloud: Arc<dyn CloudWrite> = Arc::new(s.sim().clone());
    Running {
        ccm: Ccm::new(Arc::clone(&cloud), &values, routes).unwrap(),
        bastion: Bastion::new(cloud, &values).unwrap(),
        nsg: id(nsg_rg, "networkSecurityGroups/shoot-a-nsg"),
        rt: id(rt_rg, "routeTables/shoot-a-rt"),
        tn: report.shoots[0].shoot.clone(),
        s,
    }
}

impl Running {
    fn rules(&self) -> Vec<String> {
        names(&self.s.sim().get_now(&self.nsg).unwrap(), "/properties/securityRules")
    }
    fn routes(&self) -> Vec<String> {
        names(&self.s.sim().get_now(&self.rt).unwrap(), "/properties/routes")
    }
    fn nsg_writes_since(&self, mark: usize) -> usize {
        writes_to(&self.s.sim().calls_since(mark), std::slice::from_ref(&self.nsg)).len()
    }
    async fn destroy(&self) -> trellis_cli::ops::ApplyReport {
        let report = self.s.destroy_files(&["shoot.yaml"]).await.unwrap();
        assert!(report.ok, "{report:#?}");
        assert!(!self.s.exists(&format!("/subscriptions/{SUB}/resourceGroups/{}", self.tn)), "cluster RG deleted");
        for user in [&self.nsg, &self.rt, &id("hub-network", "virtualNetworks/hub-vnet/subnets/shoot-a-workers")] {
            assert!(self.s.exists(user), "{user} survives");
        }
        report
    }
}

fn names(resource: &Value, pointer: &str) -> Vec<String> {
    resource
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|r| r["name"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn no_annotations() -> BTreeMap<String, String> {
    BTreeMap::new()
}

#[tokio::test]
async fn b4_per_node_routes_land_in_the_users_route_table_next_to_the_firewall_route() {
    let r = running("B4", "hub-network", "hub-network").await;
    r.ccm.add_node("node-1", "100.96.1.0/24").await.unwrap();
    r.ccm.add_node("node-2", "100.96.2.0/24").await.unwrap();
    assert_eq!(r.routes(), vec!["default-to-firewall", "node-1", "node-2"]);
    let rt = r.s.sim().get_now(&r.rt).unwrap();
    assert_eq!(rt["properties"]["routes"][0]["properties"]["nextHopType"], json!("VirtualAppliance"));
    assert_eq!(rt["properties"]["routes"][0]["properties"]["addressPrefix"], json!("0.0.0.0/0"));
    // trellis' next plan leaves the CCM's routes alone and changes nothing.
    assert!(!r.s.plan().await.unwrap().has_changes());
}

#[tokio::test]
async fn b5_per_node_routes_appear_in_an_empty_route_table() {
    let r = running("B5", "hub-network", "hub-network").await;
    r.ccm.add_node("node-1", "100.96.1.0/24").await.unwrap();
    assert_eq!(r.routes(), vec!["node-1"]);
}

#[tokio::test]
async fn e10_load_balancer_service_adds_rules_on_the_users_nsg_with_outbound_snat_disabled() {
    let r = running("B3", "security-team-rg", "network-team-rg").await;
    let svc =
        r.ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
    assert_eq!(r.rules().len(), 1);
    assert!(r.rules()[0].starts_with("k8s-azure-lb_"), "{:?}", r.rules());
    let lb = r.s.sim().get_now(&svc.load_balancer_id).unwrap();
    assert!(svc.load_balancer_id.contains(&format!("/resourceGroups/{}/", r.tn)), "SLB in the cluster RG");
    let rule = &lb["properties"]["loadBalancingRules"][0]["properties"];
    assert_eq!(rule["disableOutboundSnat"], json!(true), "azure.json says disableOutboundSNAT: true");
    assert!(r.s.exists(&svc.public_ip_id));
}

#[tokio::test]
async fn e11_disable_nsg_rule_annotation_means_zero_nsg_writes() {
    let r = running("B3", "security-team-rg", "network-team-rg").await;
    let mark = r.s.sim().mark();
    let annotations = BTreeMap::from([(DISABLE_NSG_RULE_ANNOTATION.to_string(), "true".to_string())]);
    let svc = r.ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &annotations, vec![]).await.unwrap();
    assert!(r.s.exists(&svc.load_balancer_id), "the SLB is still created");
    assert_eq!(r.nsg_writes_since(mark), 0);
    assert!(r.rules().is_empty());
}

#[tokio::test]
async fn e12_deleting_the_service_removes_slb_public_ip_and_nsg_rules() {
    let r = running("B3", "security-team-rg", "network-team-rg").await;
    let svc =
        r.ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
    r.ccm.ensure_load_balancer_deleted("default", "web").await.unwrap();
    assert!(r.rules().is_empty());
    assert!(!r.s.exists(&svc.load_balancer_id));
    assert!(!r.s.exists(&svc.public_ip_id));
}

#[tokio::test]
async fn e13_bastion_adds_four_rules_and_its_vm_sits_in_the_cluster_rg_with_its_nic_in_the_byo_subnet() {
    let r = running("B3", "security-team-rg", "network-team-rg").await;
    let b = r.bastion.create("cli-abc", vec!["203.0.113.7/32".into()], &["10.250.0.0/19".into()]).await.unwrap();
    assert_eq!(
        r.rules(),
        vec!["cli-abc-allow-ssh-ipv4", "cli-abc-allow-ssh-ipv6", "cli-abc-egress-worker", "cli-abc-deny-all"]
    );
    assert!(b.vm_id.contains(&format!("/resourceGroups/{}/", r.tn)));
    let nic = r.s.sim().get_now(&b.nic_id).unwrap();
    assert_eq!(
        nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"],
        json!(id("hub-network", "virtualNetworks/hub-vnet/subnets/shoot-a-workers"))
    );
    // No internet egress by design: a deny-all outbound rule.
    let nsg = r.s.sim().get_now(&r.nsg).unwrap();
    let deny = nsg["properties"]["securityRules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "cli-abc-deny-all")
        .unwrap();
    assert_eq!(
        (deny["properties"]["access"].as_str(), deny["properties"]["direction"].as_str()),
        (Some("Deny"), Some("Outbound"))
    );
    // The bastion's own deny-all is scoped to the bastion: trellis does not warn about it.
    assert!(r.s.plan().await.unwrap().warnings.is_empty());
}

#[tokio::test]
async fn e14_deleting_the_bastion_removes_its_rules_and_resources() {
    let r = running("B3", "security-team-rg", "network-team-rg").await;
    let b = r.bastion.create("cli-abc", vec!["203.0.113.7/32".into()], &["10.250.0.0/19".into()]).await.unwrap();
    r.bastion.delete("cli-abc").await.unwrap();
    assert!(r.rules().is_empty());
    for gone in [&b.vm_id, &b.nic_id, &b.disk_id, &b.public_ip_id] {
        assert!(!r.s.exists(gone), "{gone} removed");
    }
}

#[tokio::test]
async fn f2_graceful_teardown_leaves_no_rules_and_no_orphans() {
    let r = running("B3", "security-team-rg", "network-team-rg").await;
    r.ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
    r.bastion.create("cli-abc", vec!["203.0.113.7/32".into()], &["10.250.0.0/19".into()]).await.unwrap();
    r.ccm.add_node("node-1", "100.96.1.0/24").await.unwrap();
    // Graceful teardown: the controllers clean up before Gardener stops managing the shoot.
    r.ccm.ensure_load_balancer_deleted("default", "web").await.unwrap();
    r.bastion.delete("cli-abc").await.unwrap();
    r.ccm.remove_node("node-1").await.unwrap();
    let report = r.destroy().await;
    assert!(r.rules().is_empty());
    assert!(report.shoots[0].orphans.is_empty());
}

#[tokio::test]
async fn f3_force_delete_leaves_orphans_that_trellis_lists_but_never_deletes() {
    let r = running("B3", "security-team-rg", "network-team-rg").await;
    r.ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
    r.bastion.create("cli-abc", vec!["203.0.113.7/32".into()], &["10.250.0.0/19".into()]).await.unwrap();
    r.ccm.add_node("node-1", "100.96.1.0/24").await.unwrap();
    let report = r.destroy().await;
    let orphans = &report.shoots[0].orphans;
    let ids: Vec<&str> = orphans.iter().map(|o| o.id.rsplit('/').next().unwrap()).collect();
    assert_eq!(ids.len(), 6, "{ids:?}");
    assert!(ids.contains(&"node-1") && ids.contains(&"cli-abc-deny-all"));
    assert!(ids.iter().any(|i| i.starts_with("k8s-azure-lb_")));
    let route = orphans.iter().find(|o| o.id.ends_with("/routes/node-1")).unwrap();
    assert_eq!(
        route.prune,
        format!("az network route-table route delete --subscription {SUB} -g network-team-rg --route-table-name shoot-a-rt -n node-1")
    );
    // Listed, not deleted: everything is still there.
    assert_eq!(r.rules().len(), 5);
    assert_eq!(r.routes(), vec!["default-to-firewall", "node-1"], "the user's own route is not an orphan");
    let deletes_on_user: Vec<_> = report
        .calls
        .iter()
        .filter(|c| c.op == Op::Write && (c.target.starts_with(&r.nsg) || c.target.starts_with(&r.rt)))
        .collect();
    assert!(deletes_on_user.is_empty(), "{deletes_on_user:?}");
}

#[tokio::test]
async fn f4_revoked_nsg_permission_does_not_stop_deletion_and_leftovers_are_listed() {
    let r = running("B3", "security-team-rg", "network-team-rg").await;
    r.ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
    r.bastion.create("cli-abc", vec!["203.0.113.7/32".into()], &["10.250.0.0/19".into()]).await.unwrap();
    // The principal loses write permission on the NSG's resource group.
    r.s.sim().set_faults(Faults {
        rules: vec![FaultRule {
            matcher: Matcher { op: Some(Op::Write), ..Matcher::target_contains("/resourceGroups/security-team-rg/") },
            nth: None,
            times: usize::MAX,
            fault: Fault::Forbidden,
        }],
        ..Faults::none()
    });
    assert!(r.ccm.ensure_load_balancer_deleted("default", "web").await.is_err(), "the CCM cannot remove its rules");
    assert!(r.bastion.delete("cli-abc").await.is_err(), "nor can the bastion controller");
    let report = r.destroy().await;
    assert_eq!(report.shoots[0].orphans.len(), 5, "{:#?}", report.shoots[0].orphans);
}
