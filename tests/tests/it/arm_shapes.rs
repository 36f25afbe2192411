//! Issue #7 items 1, 9 and 10: real ARM shapes. A subnet shown with `addressPrefixes` instead of
//! `addressPrefix` (item 1); a managed subnet that does not fit the user's VNet — overlapping one of its
//! subnets, outside its address space, or in a VNet in another region (item 9); a BYO subnet that is not
//! dedicated to the shoot — delegated, linked to another service, hosting other resources' IP
//! configurations (item 10). The world files are Microsoft's documented example responses
//! (azure-rest-api-specs), named in each file's header.

use serde_json::{json, Value};
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_plans::Action;
use trellis_sim::ArmSim;
use trellis_tests::{node, scenario_dir, text, Scenario};

/// The error of a refused plan, as the CLI prints it (the plan itself is not printed when it was not refused).
fn refused<T>(result: anyhow::Result<T>) -> String {
    match result {
        Ok(_) => panic!("expected the plan to be refused"),
        Err(e) => format!("{e:#}"),
    }
}

fn assert_has(msg: &str, want: &str) {
    assert!(msg.contains(want), "expected `{want}` in:\n{msg}");
}

/// A scenario with one of its other world files.
fn with_world(id: &str, world: &str) -> Scenario {
    let dir = scenario_dir(id);
    let world = dir.join(world);
    Scenario::with_world(dir, Some(world))
}

// ---- item 1: addressPrefixes ----

#[tokio::test]
async fn regression_byo_subnet_with_address_prefixes_plans_and_applies() {
    let s = Scenario::new("I7-1");
    let plan = s.plan().await.unwrap();
    // The verify node checks the field the subnet uses, with every prefix.
    let subnet = node(&plan, "test-vnet/test-2");
    let prefix_checks: Vec<(&str, &Value)> = subnet
        .checks()
        .iter()
        .filter(|c| c.path.contains("addressPrefix"))
        .map(|c| (c.path.as_str(), &c.expect))
        .collect();
    assert_eq!(prefix_checks, vec![("/properties/addressPrefixes", &json!(["10.0.0.0/28", "10.0.1.0/28"]))]);
    let report = s.apply().await.unwrap();
    assert!(report.ok, "{report:#?}");
    // Applied once, the same subnet is no change and no drift.
    let again = s.plan().await.unwrap();
    assert!(!again.has_changes(), "{}", text(&again));
}

#[tokio::test]
async fn regression_byo_subnet_checks_every_address_prefix() {
    let s = Scenario::new("I7-1");
    let msg = refused(s.plan_file("shoot-second-prefix-conflicts.yaml").await);
    assert_has(
        &msg,
        "networking.nodes: subnet test-2 in VNet test-vnet (resource group rg1) has CIDR 10.0.1.0/28, which is not within networking.nodes (10.0.0.0/24)",
    );
    assert_has(
        &msg,
        "networking.pods: subnet test-2 in VNet test-vnet (resource group rg1) has CIDR 10.0.1.0/28, which overlaps networking.pods (10.0.1.0/24)",
    );
    // The first prefix fits: it is not reported.
    assert!(!msg.contains("has CIDR 10.0.0.0/28"), "{msg}");
}

#[tokio::test]
async fn regression_byo_drift_compares_every_address_prefix() {
    let s = Scenario::new("I7-1");
    assert!(s.apply().await.unwrap().ok);
    // Out of band, the second prefix of the subnet changes; the first stays.
    let id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/test-vnet/subnets/test-2";
    let mut subnet = s.sim().get(id).await.unwrap().unwrap();
    subnet["properties"]["addressPrefixes"] = json!(["10.0.0.0/28", "10.0.2.0/28"]);
    s.sim().put(id, subnet).await.unwrap();
    let msg = refused(s.plan().await);
    assert_has(
        &msg,
        "the address prefix changed since the last apply, from 10.0.0.0/28, 10.0.1.0/28 to 10.0.0.0/28, 10.0.2.0/28",
    );
}

/// The managed subnet of the I7-9 shoot (in the user's VNet), as ARM would show it with
/// `addressPrefixes`; re-planning must see no change (it was a perpetual update).
#[tokio::test]
async fn regression_managed_subnet_shown_with_address_prefixes_is_no_change() {
    let s = Scenario::new("I7-9");
    assert!(s.apply().await.unwrap().ok);
    let id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/test-vnet/subnets/shoot--platform--vnet-ok-nodes";
    reshape(s.sim(), id, json!(["10.0.2.0/24"])).await;
    let plan = s.plan().await.unwrap();
    assert!(!plan.has_changes(), "{}", text(&plan));
    assert_eq!(node(&plan, "test-vnet/shoot--platform--vnet-ok-nodes").action(), Action::Noop);

    // A second prefix on the shoot's subnet is removed, as upstream's PUT (one prefix) removes it,
    // in the shape the subnet uses; then the plan is empty again.
    reshape(s.sim(), id, json!(["10.0.2.0/24", "10.0.3.0/24"])).await;
    let plan = s.plan().await.unwrap();
    let subnet = node(&plan, "test-vnet/shoot--platform--vnet-ok-nodes");
    assert_eq!(subnet.action(), Action::Update);
    let paths: Vec<&str> = subnet.changes().iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, vec!["/properties/addressPrefixes"]);
    assert!(s.apply().await.unwrap().ok);
    assert_eq!(s.sim().get_now(id).unwrap()["properties"]["addressPrefixes"], json!(["10.0.2.0/24"]));
    assert!(!s.plan().await.unwrap().has_changes());
}

/// Rewrites a subnet out of band with `addressPrefixes` instead of `addressPrefix`.
async fn reshape(sim: &ArmSim, id: &str, prefixes: Value) {
    let mut subnet = sim.get(id).await.unwrap().unwrap();
    let props = subnet["properties"].as_object_mut().unwrap();
    props.remove("addressPrefix");
    props.insert("addressPrefixes".into(), prefixes);
    sim.put(id, subnet).await.unwrap();
}

// ---- item 9: the user's VNet ----

#[tokio::test]
async fn managed_subnet_next_to_other_subnets_of_the_user_vnet_applies() {
    let s = Scenario::new("I7-9");
    assert!(s.apply().await.unwrap().ok);
    // The shoot's own subnet, now in the VNet, is no conflict for the next plan.
    assert!(!s.plan().await.unwrap().has_changes());
}

#[tokio::test]
async fn regression_managed_subnet_overlapping_a_subnet_of_the_user_vnet_is_refused_at_plan() {
    let s = Scenario::new("I7-9");
    let msg = refused(s.plan_file("shoot-overlapping.yaml").await);
    assert_has(
        &msg,
        "networks.workers: subnet shoot--platform--vnet-overlap-nodes (10.0.1.0/25) overlaps subnet subnet1 (10.0.1.0/24) of VNet test-vnet (resource group rg1)",
    );
    assert_has(&msg, "NetcfgSubnetRangesOverlap");
}

#[tokio::test]
async fn regression_managed_subnet_outside_the_user_vnet_address_space_is_refused_at_plan() {
    let s = Scenario::new("I7-9");
    let msg = refused(s.plan_file("shoot-outside.yaml").await);
    assert_has(
        &msg,
        "networks.workers: subnet shoot--platform--vnet-outside-nodes (10.1.0.0/24) lies outside the address space of VNet test-vnet (resource group rg1): 10.0.0.0/16",
    );
    assert_has(&msg, "NetcfgSubnetRangeOutsideVnet");
}

#[tokio::test]
async fn regression_user_vnet_in_another_region_is_refused_at_plan() {
    let s = Scenario::new("I7-9");
    let msg = refused(s.plan_file("shoot-other-region.yaml").await);
    assert_has(
        &msg,
        "networks.vnet: VNet test-vnet (resource group rg1) is in location westus, but the shoot's region is eastus",
    );
    // The same for a BYO subnet: the shoot's machines could not join it.
    let byo = Scenario::new("I7-10");
    let msg = refused(byo.plan_file("shoot-other-region.yaml").await);
    assert_has(
        &msg,
        "networks.vnet: VNet test-vnet (resource group rg1) is in location westus, but the shoot's region is eastus",
    );
}

/// The shoot's own VNet (managed mode) found in another region than the shoot: upstream stops with
/// "the location of the VNet does not match expected location"; the plan said "update location" and
/// the apply failed at the PUT (a resource cannot move regions).
#[tokio::test]
async fn regression_managed_vnet_in_another_region_is_refused_at_plan() {
    let s = Scenario::new("A1");
    let rg = format!("/subscriptions/{}/resourceGroups/shoot--dev--alpha", s.subscription());
    s.sim().put(&rg, json!({"location": "westeurope"})).await.unwrap();
    let vnet = format!("{rg}/providers/Microsoft.Network/virtualNetworks/shoot--dev--alpha");
    let body =
        json!({"location": "northeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.250.0.0/16"]}}});
    s.sim().put(&vnet, body).await.unwrap();
    let msg = refused(s.plan().await);
    assert_has(
        &msg,
        "VNet shoot--dev--alpha (resource group shoot--dev--alpha) exists in location northeurope, but the shoot's region is westeurope: the location of the VNet does not match expected location",
    );
}

// ---- item 10: a BYO subnet that is not dedicated to the shoot ----

#[tokio::test]
async fn regression_delegated_byo_subnet_hosting_other_ip_configurations_is_warned_about() {
    let s = Scenario::new("I7-10");
    let plan = s.plan().await.unwrap();
    let subnet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/test-vnet/subnets/subnet1";
    assert_eq!(plan.warnings.len(), 2, "{:#?}", plan.warnings);
    assert_has(
        &plan.warnings[0],
        &format!("subnet {subnet} is delegated to Microsoft.Provider/resourceType (delegation myDelegation)"),
    );
    assert_has(&plan.warnings[1], &format!("subnet {subnet} already hosts 1 IP configuration(s) of other resources"));
    assert_has(
        &plan.warnings[1],
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/loadBalancers/lb/frontendIPConfigurations/fe",
    );
    // The shoot's own machine NIC (in its cluster resource group) is not another resource.
    assert!(!plan.warnings[1].contains("worker-z1-abcde-nic"), "{}", plan.warnings[1]);
    // The warnings are in the rendered plan too.
    assert_has(&text(&plan), "is delegated to Microsoft.Provider/resourceType");
}

#[tokio::test]
async fn regression_byo_subnet_with_a_service_association_link_is_warned_about() {
    let s = with_world("I7-10", "world-service-association.yaml");
    let plan = s.plan().await.unwrap();
    let subnet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/test-vnet/subnets/subnet1";
    assert_eq!(plan.warnings.len(), 2, "{:#?}", plan.warnings);
    assert_has(
        &plan.warnings[0],
        &format!("subnet {subnet} is delegated to Microsoft.Provider/resourceType (delegation aciDelegation)"),
    );
    assert_has(
        &plan.warnings[1],
        &format!(
            "subnet {subnet} has service association link serviceAssociationLink1 (Microsoft.Provider/resourceType)"
        ),
    );
}

#[tokio::test]
async fn a_byo_subnet_hosting_only_the_shoots_own_machines_is_not_warned_about() {
    let s = with_world("I7-10", "world-own-nics.yaml");
    let plan = s.plan().await.unwrap();
    assert!(plan.warnings.is_empty(), "{:#?}", plan.warnings);
}
