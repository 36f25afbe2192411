//! The engine against the simulator's ARM behaviours of issue #8: a VNet PUT replaces the subnets
//! from its body, and a resource-group delete is a long-running operation that can stop halfway.

use serde_json::{json, Value};
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_planner::retry::RetryPolicy;
use trellis_plans::Action;
use trellis_sim::{Fault, FaultRule, Faults, Matcher};
use trellis_tests::Scenario;

/// The resource of REST type `rtype` in the simulated cloud (exactly one).
fn only(s: &Scenario, rtype: &str) -> Value {
    let found: Vec<Value> = s.sim().snapshot().into_iter().filter(|r| r["type"] == rtype).collect();
    assert_eq!(found.len(), 1, "one {rtype}: {found:?}");
    found.into_iter().next().unwrap()
}

#[tokio::test]
async fn vnet_update_keeps_the_subnets() {
    let s = Scenario::new("A1");
    assert!(s.apply().await.unwrap().ok);
    let subnet = only(&s, "Microsoft.Network/virtualNetworks/subnets");
    let vnet_id = only(&s, "Microsoft.Network/virtualNetworks")["id"].as_str().unwrap().to_string();

    // Out of band: someone turns DDoS protection on (a read-modify-write, subnets included).
    let mut vnet = s.sim().get(&vnet_id).await.unwrap().unwrap();
    vnet["properties"]["enableDdosProtection"] = json!(true);
    s.sim().put(&vnet_id, vnet).await.unwrap();

    let plan = s.plan().await.unwrap();
    let vnet_node = plan.nodes.iter().find(|n| n.id.as_deref() == Some(vnet_id.as_str())).expect("a VNet node");
    assert_eq!(vnet_node.action(), Action::Update, "the drift is planned as a VNet update");
    let report = s.apply().await.unwrap();
    assert!(report.ok, "{report:#?}");

    // The engine merged its patch into the live VNet, subnets included: ARM kept them as they were.
    let vnet = s.sim().get(&vnet_id).await.unwrap().unwrap();
    assert_eq!(vnet["properties"]["enableDdosProtection"], json!(false));
    let id = subnet["id"].as_str().unwrap();
    assert_eq!(s.sim().get(id).await.unwrap().as_ref(), Some(&subnet), "the subnet is untouched (same etag)");
    assert!(s.plan().await.unwrap().nodes.iter().all(|n| n.action() != Action::Update), "converged");
}

#[tokio::test]
async fn interrupted_destroy_leaves_a_deleting_resource_group_and_a_rerun_finishes_it() {
    let mut s = Scenario::new("A1");
    assert!(s.apply().await.unwrap().ok);
    let rg = only(&s, "Microsoft.Resources/resourceGroups")["id"].as_str().unwrap().to_string();
    let in_rg = |s: &Scenario| s.sim().snapshot().iter().filter(|r| r["id"].as_str().unwrap() != rg).count();
    let resources = in_rg(&s);

    // The first destroy stops waiting after one resource of the group is gone (no retry).
    s.session.retry = RetryPolicy::immediate(1);
    s.sim().set_faults(Faults::none().with_rule(FaultRule::once_at(
        Matcher::method("DELETE"),
        1,
        Fault::Interrupted { after_steps: 1 },
    )));
    let report = s.destroy_files(&["shoot.yaml"]).await.unwrap();
    assert!(!report.ok, "the interrupted destroy fails: {report:#?}");
    let left = s.sim().get(&rg).await.unwrap().expect("the group is still there");
    assert_eq!(left["properties"]["provisioningState"], json!("Deleting"));
    let now = in_rg(&s);
    assert!(0 < now && now < resources, "half done: {now} of {resources} resources left");

    // A re-run of destroy deletes the group again, which resumes and completes the deletion.
    s.sim().set_faults(Faults::none());
    s.session.retry = RetryPolicy::immediate(4);
    let report = s.destroy_files(&["shoot.yaml"]).await.unwrap();
    assert!(report.ok, "{report:#?}");
    assert_eq!(s.sim().get(&rg).await.unwrap(), None);
    assert!(s.sim().snapshot().is_empty(), "{:?}", s.sim().snapshot());
}
