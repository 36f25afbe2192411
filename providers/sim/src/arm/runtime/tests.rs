//! Unit tests of the runtime writers against an in-memory simulated cloud.

use super::helpers::*;
use super::*;
use crate::{ArmSim, Origin, WorldFile};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use trellis_planner::cloud::{CloudWrite, Op};

const SUB: &str = "6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17";
const CLUSTER_RG: &str = "shoot--platform--byo-b1";
const HUB: &str = "/subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub-network";

fn world() -> WorldFile {
    let text = format!(
        r#"
azure:
  subscriptionId: {SUB}
  resources:
    - id: /subscriptions/{SUB}/resourceGroups/{CLUSTER_RG}
      location: westeurope
    - id: {HUB}
      location: westeurope
    - id: {HUB}/providers/Microsoft.Network/virtualNetworks/hub-vnet
      location: westeurope
      properties:
        addressSpace:
          addressPrefixes: [10.250.0.0/16]
    - id: {HUB}/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg
      location: westeurope
      properties:
        securityRules:
          - name: deny-vnet-inbound
            properties: {{protocol: "*", sourcePortRange: "*", destinationPortRange: "*", sourceAddressPrefix: VirtualNetwork, destinationAddressPrefix: "*", access: Deny, direction: Inbound, priority: 500}}
    - id: {HUB}/providers/Microsoft.Network/routeTables/shoot-a-rt
      location: westeurope
      properties:
        routes:
          - name: default-to-firewall
            properties: {{addressPrefix: 0.0.0.0/0, nextHopType: VirtualAppliance, nextHopIpAddress: 10.250.255.4}}
    - id: {HUB}/providers/Microsoft.Network/virtualNetworks/hub-vnet/subnets/shoot-a-workers
      properties:
        addressPrefix: 10.250.0.0/19
        networkSecurityGroup: {{id: {HUB}/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg}}
        routeTable: {{id: {HUB}/providers/Microsoft.Network/routeTables/shoot-a-rt}}
"#
    );
    WorldFile::parse("world.yaml", &text).unwrap()
}

/// azure.json values as trellis renders them for B1 (user-managed egress).
fn values(disable_snat: bool) -> Map<String, Value> {
    let v = json!({
        "subscriptionId": SUB,
        "location": "westeurope",
        "resourceGroup": CLUSTER_RG,
        "routeTableName": "shoot-a-rt",
        "securityGroupName": "shoot-a-nsg",
        "subnetName": "shoot-a-workers",
        "vnetName": "hub-vnet",
        "vnetResourceGroup": "hub-network",
        "routeTableResourceGroup": "hub-network",
        "securityGroupResourceGroup": "hub-network",
        "loadBalancerSku": "standard",
        "disableOutboundSNAT": disable_snat,
    });
    v.as_object().unwrap().clone()
}

fn sim() -> ArmSim {
    let sim = ArmSim::in_memory(SUB);
    sim.sync_world(&world()).unwrap();
    sim
}

fn ccm(sim: &ArmSim, routes: bool) -> Ccm {
    Ccm::new(Arc::new(sim.clone()), &values(true), routes).unwrap()
}

fn nsg_id() -> String {
    format!("{HUB}/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg")
}

fn rt_id() -> String {
    format!("{HUB}/providers/Microsoft.Network/routeTables/shoot-a-rt")
}

fn cluster(rtype: &str, name: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{CLUSTER_RG}/providers/{rtype}/{name}")
}

fn rule_names(sim: &ArmSim) -> Vec<String> {
    security_rules(&sim.get_now(&nsg_id()).unwrap()).iter().map(|r| name_of(r).to_string()).collect()
}

fn route_names(sim: &ArmSim) -> Vec<String> {
    let rt = sim.get_now(&rt_id()).unwrap();
    rt.pointer("/properties/routes").unwrap().as_array().unwrap().iter().map(|r| name_of(r).to_string()).collect()
}

fn writes_to(sim: &ArmSim, mark: usize, fragment: &str) -> Vec<String> {
    sim.calls_since(mark)
        .into_iter()
        .filter(|c| c.op == Op::Write && c.target.to_ascii_lowercase().contains(&fragment.to_ascii_lowercase()))
        .map(|c| format!("{} {}", c.method, c.target))
        .collect()
}

fn no_annotations() -> BTreeMap<String, String> {
    BTreeMap::new()
}

#[tokio::test]
async fn e10_service_creates_lb_pip_and_nsg_rule_with_outbound_snat_disabled() {
    let sim = sim();
    let ccm = ccm(&sim, true);
    let st = ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
    let h = service_hash("default", "web");
    assert_eq!(st.hash, h);
    assert_eq!(h.len(), 8);

    let pip = sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", &format!("kubernetes-{h}"))).unwrap();
    let ip = pip.pointer("/properties/ipAddress").unwrap().as_str().unwrap();
    assert_eq!(st.ingress_ip, ip);

    let lb = sim.get_now(&cluster("Microsoft.Network/loadBalancers", "kubernetes")).unwrap();
    assert_eq!(lb["sku"]["name"], "Standard");
    let rule = &lb.pointer("/properties/loadBalancingRules/0").unwrap();
    assert_eq!(rule["name"], format!("{h}-TCP-443"));
    assert_eq!(rule.pointer("/properties/disableOutboundSnat"), Some(&json!(true)));
    assert_eq!(rule.pointer("/properties/frontendPort"), Some(&json!(443)));

    let name = format!("k8s-azure-lb_{h}-TCP-443-Internet");
    assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string(), name.clone()]);
    assert_eq!(st.security_rules, vec![name.clone()]);
    let nsg_rule = sim.get_now(&rule_id(&nsg_id(), &name)).unwrap();
    let p = &nsg_rule["properties"];
    assert_eq!(p["sourceAddressPrefix"], "Internet");
    assert_eq!(p["destinationAddressPrefix"], ip);
    assert_eq!(p["destinationPortRange"], "443");
    assert_eq!(p["access"], "Allow");
    assert_eq!(p["priority"], 501, "500 is taken by the user's inbound rule");

    // Idempotent: a second reconcile reads, never writes.
    let mark = sim.mark();
    ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
    assert!(writes_to(&sim, mark, "").is_empty(), "{:?}", sim.calls_since(mark));

    // Without disableOutboundSNAT in azure.json (managed mode) the LB rule keeps SNAT.
    let mut v = values(false);
    v.remove("disableOutboundSNAT");
    let managed = Ccm::new(Arc::new(sim.clone()), &v, true).unwrap();
    managed.ensure_load_balancer_service("default", "api", 80, "tcp", &no_annotations(), vec![]).await.unwrap();
    let lb = sim.get_now(&cluster("Microsoft.Network/loadBalancers", "kubernetes")).unwrap();
    let api = format!("{}-TCP-80", service_hash("default", "api"));
    let rules = lb.pointer("/properties/loadBalancingRules").unwrap().as_array().unwrap();
    let api_rule = rules.iter().find(|r| r["name"] == api.as_str()).unwrap();
    assert_eq!(api_rule.pointer("/properties/disableOutboundSnat"), Some(&json!(false)));
}

#[tokio::test]
async fn source_ranges_give_one_rule_each_and_a_port_change_replaces_the_rules() {
    let sim = sim();
    let ccm = ccm(&sim, true);
    let ranges = vec!["203.0.113.0/24".to_string(), "198.51.100.7/32".to_string()];
    ccm.ensure_load_balancer_service("prod", "gw", 443, "TCP", &no_annotations(), ranges).await.unwrap();
    let h = service_hash("prod", "gw");
    let mut want = vec![
        "deny-vnet-inbound".to_string(),
        format!("k8s-azure-lb_{h}-TCP-443-203.0.113.0_24"),
        format!("k8s-azure-lb_{h}-TCP-443-198.51.100.7_32"),
    ];
    assert_eq!(rule_names(&sim), want);
    let r = sim.get_now(&rule_id(&nsg_id(), &want[2])).unwrap();
    assert_eq!(r["properties"]["sourceAddressPrefix"], "198.51.100.7/32");
    assert_eq!(r["properties"]["priority"], 502);

    ccm.ensure_load_balancer_service("prod", "gw", 8443, "TCP", &no_annotations(), vec![]).await.unwrap();
    want.truncate(1);
    want.push(format!("k8s-azure-lb_{h}-TCP-8443-Internet"));
    assert_eq!(rule_names(&sim), want);
    let lb = sim.get_now(&cluster("Microsoft.Network/loadBalancers", "kubernetes")).unwrap();
    let names: Vec<&str> =
        lb.pointer("/properties/loadBalancingRules").unwrap().as_array().unwrap().iter().map(name_of).collect();
    assert_eq!(names, vec![format!("{h}-TCP-8443")]);
}

#[tokio::test]
async fn e11_disable_nsg_rule_annotation_reads_the_nsg_once_and_never_writes_it() {
    let sim = sim();
    let ccm = ccm(&sim, true);
    let mark = sim.mark();
    let annotations = BTreeMap::from([(DISABLE_NSG_RULE_ANNOTATION.to_string(), "true".to_string())]);
    let st = ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &annotations, vec![]).await.unwrap();
    assert!(st.security_rules.is_empty());
    let nsg_calls: Vec<_> = sim
        .calls_since(mark)
        .into_iter()
        .filter(|c| c.target.to_ascii_lowercase().contains("networksecuritygroups"))
        .collect();
    assert_eq!(nsg_calls.len(), 1, "{nsg_calls:?}");
    assert_eq!((nsg_calls[0].method.as_str(), nsg_calls[0].op), ("GET", Op::Read));
    assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string()]);
    // The SLB and its public IP are there all the same.
    assert!(sim.get_now(&cluster("Microsoft.Network/loadBalancers", "kubernetes")).is_some());
    let h = service_hash("default", "web");
    assert!(sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", &format!("kubernetes-{h}"))).is_some());
}

#[tokio::test]
async fn e12_service_delete_removes_rules_lb_and_public_ip() {
    let sim = sim();
    let ccm = ccm(&sim, true);
    ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
    ccm.ensure_load_balancer_service("default", "api", 80, "TCP", &no_annotations(), vec![]).await.unwrap();
    let (web, api) = (service_hash("default", "web"), service_hash("default", "api"));
    let lb_id = cluster("Microsoft.Network/loadBalancers", "kubernetes");

    ccm.ensure_load_balancer_deleted("default", "web").await.unwrap();
    assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string(), format!("k8s-azure-lb_{api}-TCP-80-Internet")]);
    assert!(sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", &format!("kubernetes-{web}"))).is_none());
    let lb = sim.get_now(&lb_id).expect("the LB stays while another Service has rules on it");
    let fes: Vec<&str> =
        lb.pointer("/properties/frontendIPConfigurations").unwrap().as_array().unwrap().iter().map(name_of).collect();
    assert_eq!(fes, vec![api.as_str()]);

    ccm.ensure_load_balancer_deleted("default", "api").await.unwrap();
    assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string()]);
    assert!(sim.get_now(&lb_id).is_none(), "no rule left: the LB is deleted");
    assert!(sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", &format!("kubernetes-{api}"))).is_none());
    // The user's own rule was never part of a change.
    assert_eq!(sim.origin(&rule_id(&nsg_id(), "deny-vnet-inbound")), Some(Origin::World));

    // Idempotent: deleting again only reads.
    let mark = sim.mark();
    ccm.ensure_load_balancer_deleted("default", "api").await.unwrap();
    assert!(writes_to(&sim, mark, "").is_empty());
}

#[tokio::test]
async fn step4_sweeps_ccm_rules_whose_frontend_is_gone() {
    let sim = sim();
    let ccm = ccm(&sim, true);
    let stale = rule_id(&nsg_id(), "k8s-azure-lb_deadbeef-TCP-80-Internet");
    sim.put(
        &stale,
        json!({"properties": {"protocol": "Tcp", "access": "Allow", "direction": "Inbound", "priority": 600}}),
    )
    .await
    .unwrap();
    let annotations = BTreeMap::from([(DISABLE_NSG_RULE_ANNOTATION.to_string(), "true".to_string())]);
    ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &annotations, vec![]).await.unwrap();
    assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string()]);
}

#[tokio::test]
async fn b4_b5_routes_written_only_with_configure_cloud_routes_and_user_route_preserved() {
    let sim = sim();
    let on = ccm(&sim, true);
    let id = on.add_node("shoot--platform--byo-b1-worker-z1-abc", "100.96.1.0/24").await.unwrap().unwrap();
    assert_eq!(route_names(&sim), vec!["default-to-firewall", "shoot--platform--byo-b1-worker-z1-abc"]);
    let route = sim.get_now(&id).unwrap();
    assert_eq!(route.pointer("/properties/addressPrefix"), Some(&json!("100.96.1.0/24")));
    assert_eq!(route.pointer("/properties/nextHopType"), Some(&json!("VirtualAppliance")));
    let hop = route.pointer("/properties/nextHopIpAddress").unwrap().as_str().unwrap();
    assert!(hop.starts_with("10.250."), "{hop} lies in the worker subnet 10.250.0.0/19");
    let user = sim.get_now(&format!("{}/routes/default-to-firewall", rt_id())).unwrap();
    assert_eq!(user.pointer("/properties/nextHopIpAddress"), Some(&json!("10.250.255.4")));

    // Idempotent.
    let mark = sim.mark();
    on.add_node("shoot--platform--byo-b1-worker-z1-abc", "100.96.1.0/24").await.unwrap();
    assert!(writes_to(&sim, mark, "").is_empty());

    // Route controller off (overlay CNI): no call at all.
    let off = ccm(&sim, false);
    let mark = sim.mark();
    assert_eq!(off.add_node("n2", "100.96.2.0/24").await.unwrap(), None);
    assert_eq!(off.remove_node("shoot--platform--byo-b1-worker-z1-abc").await.unwrap(), None);
    assert!(sim.calls_since(mark).is_empty());

    on.remove_node("shoot--platform--byo-b1-worker-z1-abc").await.unwrap();
    assert_eq!(route_names(&sim), vec!["default-to-firewall"]);
    assert_eq!(sim.origin(&format!("{}/routes/default-to-firewall", rt_id())), Some(Origin::World));
    let mark = sim.mark();
    on.remove_node("shoot--platform--byo-b1-worker-z1-abc").await.unwrap();
    assert!(writes_to(&sim, mark, "").is_empty());
}

#[tokio::test]
async fn empty_route_table_name_is_a_clear_error_only_when_routes_are_on() {
    let sim = sim();
    let mut v = values(true);
    v.insert("routeTableName".into(), json!(""));
    let on = Ccm::new(Arc::new(sim.clone()), &v, true).unwrap();
    let err = on.add_node("n1", "100.96.1.0/24").await.unwrap_err().to_string();
    assert!(err.contains("routeTableName") && err.contains("configure-cloud-routes"), "{err}");
    let off = Ccm::new(Arc::new(sim.clone()), &v, false).unwrap();
    assert_eq!(off.add_node("n1", "100.96.1.0/24").await.unwrap(), None);
}

#[tokio::test]
async fn e13_e14_bastion_rules_and_resources_appear_and_disappear() {
    let sim = sim();
    let bastion = Bastion::new(Arc::new(sim.clone()), &values(true)).unwrap();
    let st = bastion
        .create("cli-abc", vec!["203.0.113.7/32".into(), "2001:db8::/64".into()], &["10.250.0.0/19".into()])
        .await
        .unwrap();
    let names = ["cli-abc-allow-ssh-ipv4", "cli-abc-allow-ssh-ipv6", "cli-abc-egress-worker", "cli-abc-deny-all"]
        .map(String::from);
    let mut want = vec!["deny-vnet-inbound".to_string()];
    want.extend(names.iter().cloned());
    assert_eq!(rule_names(&sim), want);
    assert_eq!(st.security_rules, names.to_vec());

    let rule = |n: &str| sim.get_now(&rule_id(&nsg_id(), n)).unwrap()["properties"].clone();
    assert_eq!(rule("cli-abc-allow-ssh-ipv4")["sourceAddressPrefixes"], json!(["203.0.113.7/32"]));
    assert_eq!(rule("cli-abc-allow-ssh-ipv6")["sourceAddressPrefixes"], json!(["2001:db8::/64"]));
    assert_eq!(rule("cli-abc-allow-ssh-ipv4")["destinationAddressPrefix"], json!(st.private_ip));
    assert_eq!(rule("cli-abc-egress-worker")["destinationAddressPrefixes"], json!(["10.250.0.0/19"]));
    assert_eq!(rule("cli-abc-egress-worker")["direction"], "Outbound");
    assert_eq!(rule("cli-abc-deny-all")["access"], "Deny");
    assert_eq!(rule("cli-abc-deny-all")["direction"], "Outbound");
    assert!(rule("cli-abc-egress-worker")["priority"].as_i64() < rule("cli-abc-deny-all")["priority"].as_i64());

    let vm = sim.get_now(&cluster("Microsoft.Compute/virtualMachines", "cli-abc")).unwrap();
    assert_eq!(vm["type"], "Microsoft.Compute/virtualMachines");
    assert_eq!(vm.pointer("/properties/networkProfile/networkInterfaces/0/id"), Some(&json!(st.nic_id)));
    let nic = sim.get_now(&st.nic_id).unwrap();
    assert_eq!(nic["type"], "Microsoft.Network/networkInterfaces");
    assert_eq!(
        nic.pointer("/properties/ipConfigurations/0/properties/subnet/id"),
        Some(&json!(format!("{HUB}/providers/Microsoft.Network/virtualNetworks/hub-vnet/subnets/shoot-a-workers")))
    );
    assert!(nic.pointer("/properties/networkSecurityGroup").is_none(), "inherits the subnet's NSG");
    assert_eq!(sim.get_now(&st.disk_id).unwrap()["type"], "Microsoft.Compute/disks");
    let pip = sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", "cli-abc-public-ip")).unwrap();
    assert_eq!(pip.pointer("/properties/ipAddress"), Some(&json!(st.public_ip)));
    for id in bastion.resource_ids("cli-abc") {
        assert!(id.contains(&format!("/resourceGroups/{CLUSTER_RG}/")), "{id} is in the cluster RG");
    }

    // Idempotent.
    let mark = sim.mark();
    bastion
        .create("cli-abc", vec!["203.0.113.7/32".into(), "2001:db8::/64".into()], &["10.250.0.0/19".into()])
        .await
        .unwrap();
    assert!(writes_to(&sim, mark, "").is_empty());

    bastion.delete("cli-abc").await.unwrap();
    assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string()]);
    for id in bastion.resource_ids("cli-abc") {
        assert!(sim.get_now(&id).is_none(), "{id} is gone");
    }
    let mark = sim.mark();
    bastion.delete("cli-abc").await.unwrap();
    assert!(writes_to(&sim, mark, "").is_empty());
}

#[test]
fn config_falls_back_to_the_cluster_resource_group() {
    let v = json!({
        "subscriptionId": "s", "location": "westeurope", "resourceGroup": "shoot--p--n",
        "routeTableName": "worker_route_table", "securityGroupName": "shoot--p--n-workers",
        "subnetName": "shoot--p--n-nodes", "vnetName": "shoot--p--n",
    });
    let c = CloudConfig::from_values(v.as_object().unwrap()).unwrap();
    let rg = "/subscriptions/s/resourceGroups/shoot--p--n/providers";
    assert_eq!(c.nsg_id(), format!("{rg}/Microsoft.Network/networkSecurityGroups/shoot--p--n-workers"));
    assert_eq!(
        c.route_table_id().unwrap(),
        "/subscriptions/s/resourceGroups/shoot--p--n/providers/Microsoft.Network/routeTables/worker_route_table"
    );
    assert_eq!(c.subnet_id(), format!("{rg}/Microsoft.Network/virtualNetworks/shoot--p--n/subnets/shoot--p--n-nodes"));
    assert!(!c.disable_outbound_snat);
    let mut missing = v.as_object().unwrap().clone();
    missing.remove("securityGroupName");
    let err = CloudConfig::from_values(&missing).unwrap_err().to_string();
    assert!(err.contains("securityGroupName"), "{err}");
}

#[test]
fn derived_addresses_stay_inside_the_prefix() {
    for seed in ["a", "b", "node/x", "bastion/y"] {
        let ip: std::net::Ipv4Addr = host_in("10.250.0.0/19", seed).unwrap().parse().unwrap();
        let o = ip.octets();
        assert_eq!((o[0], o[1]), (10, 250));
        assert!(o[2] < 32);
        assert!(!(o[2] == 0 && o[3] < 4));
    }
    assert_eq!(host_in("10.0.0.0/30", "a"), None);
    assert_eq!(host_in("fd00::/64", "a"), None);
}
