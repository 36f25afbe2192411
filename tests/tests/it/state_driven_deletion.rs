//! Issue #8, item 5: the resources recorded in state drive the deletion of managed resources the
//! configuration no longer wants; a name scan only adds what an earlier trellis (or upstream) made.

use trellis_planner::cloud::CloudWrite;
use trellis_plans::{Action, Ownership};
use trellis_state::StateStore;
use trellis_tests::{node, Scenario};

const SUB: &str = "00000000-0000-0000-0000-000000000000";
const TN: &str = "shoot--dev--bravo";

fn id(rtype: &str, name: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{TN}/providers/Microsoft.Network/{rtype}/{name}")
}

/// A2's shoot with its NAT gateway switched off, written beside the scenario's state.
fn without_nat(s: &Scenario) -> String {
    let text = std::fs::read_to_string(s.file("shoot.yaml")).unwrap();
    let nat =
        "        natGateway:\n          enabled: true\n          idleConnectionTimeoutMinutes: 4\n          zone: 1\n";
    assert!(text.contains(nat));
    let edited = text.replace(nat, "        natGateway:\n          enabled: false\n");
    let path = s.state.path().join("shoot-without-nat.yaml");
    std::fs::write(&path, edited).unwrap();
    path.to_str().unwrap().to_string()
}

fn recorded_ids(s: &Scenario) -> Vec<String> {
    let ws = s.session.store.load(TN).unwrap().expect("workspace");
    ws.resources.values().map(|r| r.id.to_ascii_lowercase()).collect()
}

#[tokio::test]
async fn regression_a_managed_resource_the_name_scan_cannot_find_is_deleted_because_state_recorded_it() {
    let s = Scenario::new("A2");
    assert!(s.apply().await.unwrap().ok);
    let ip_id = id("publicIPAddresses", &format!("{TN}-nat-gateway-ip"));
    let nat_id = id("natGateways", &format!("{TN}-nat-gateway"));
    assert!(recorded_ids(&s).contains(&ip_id.to_ascii_lowercase()), "the apply recorded the public IP");
    // Out of band, the public IP loses the tags the name scan looks for (upstream deletes only tagged
    // IPs): the scan cannot tell it from a user's IP any more; state still knows trellis made it.
    let mut ip = s.sim().get_now(&ip_id).expect("public IP");
    ip.as_object_mut().unwrap().remove("tags");
    s.sim().put(&ip_id, ip).await.unwrap();

    let update = without_nat(&s);
    let plan = s.plan_file(&update).await.unwrap();
    let ip_node = node(&plan, &format!("{TN}-nat-gateway-ip"));
    assert_eq!((ip_node.action(), ip_node.ownership()), (Action::Delete, Ownership::Managed));
    assert!(ip_node.reason.detail().contains("recorded in state"), "{}", ip_node.reason);
    assert_eq!(ip_node.reason.code(), Some(trellis_plans::ReasonCode::RecordedInState));
    let nat_node = node(&plan, &format!("{TN}-nat-gateway"));
    assert_eq!(nat_node.action(), Action::Delete);
    assert!(nat_node.reason.detail().contains("recorded in state"), "{}", nat_node.reason);
    assert_eq!(nat_node.reason.code(), Some(trellis_plans::ReasonCode::RecordedInState));
    // The IP goes after the NAT gateway that uses it.
    assert!(ip_node.depends_on.contains(&nat_node.address), "{:?}", ip_node.depends_on);

    let report = s.apply_files(&[&update]).await.unwrap();
    assert!(report.ok, "{report:#?}");
    assert!(!s.exists(&ip_id) && !s.exists(&nat_id));
    let recorded = recorded_ids(&s);
    assert!(!recorded.contains(&ip_id.to_ascii_lowercase()) && !recorded.contains(&nat_id.to_ascii_lowercase()));
    let again = s.plan_file(&update).await.unwrap();
    let changes = [Action::Create, Action::Update, Action::Replace, Action::Delete].map(|a| again.summary.count(a));
    assert_eq!(changes, [0; 4], "re-plan after apply: no changes");
}

#[tokio::test]
async fn regression_a_recorded_resource_gone_from_the_cloud_is_forgotten_without_a_delete_node() {
    let s = Scenario::new("A2");
    assert!(s.apply().await.unwrap().ok);
    let ip_id = id("publicIPAddresses", &format!("{TN}-nat-gateway-ip"));
    let nat_id = id("natGateways", &format!("{TN}-nat-gateway"));
    // Out of band, someone detaches and deletes the NAT gateway and its public IP.
    let subnet_id = format!(
        "/subscriptions/{SUB}/resourceGroups/{TN}/providers/Microsoft.Network/virtualNetworks/{TN}/subnets/{TN}-nodes"
    );
    let mut subnet = s.sim().get_now(&subnet_id).expect("subnet");
    subnet["properties"].as_object_mut().unwrap().remove("natGateway");
    s.sim().put(&subnet_id, subnet).await.unwrap();
    s.sim().delete(&nat_id).await.unwrap();
    s.sim().delete(&ip_id).await.unwrap();

    let update = without_nat(&s);
    let plan = s.plan_file(&update).await.unwrap();
    assert!(plan.nodes.iter().all(|n| n.action() != Action::Delete), "nothing left to delete: {:#?}", plan.nodes);
    let report = s.apply_files(&[&update]).await.unwrap();
    assert!(report.ok, "{report:#?}");
    let recorded = recorded_ids(&s);
    assert!(!recorded.contains(&ip_id.to_ascii_lowercase()), "{recorded:?}");
    assert!(!recorded.contains(&nat_id.to_ascii_lowercase()), "{recorded:?}");
}
