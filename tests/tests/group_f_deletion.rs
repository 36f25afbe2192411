//! Group F — deletion / teardown in user-managed-egress mode (F1 here; F2–F4 with the runtime writers
//! in `group_e_runtime_writers.rs`).

use trellis_planner::cloud::Op;
use trellis_plans::{Action, Ownership};
use trellis_tests::{writes_to, Scenario};

const SUB: &str = "6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17";

#[tokio::test]
async fn f1_delete_removes_the_cluster_resource_group_and_leaves_the_byo_resources() {
    let s = Scenario::new("B3");
    assert!(s.apply().await.unwrap().ok);
    let before: Vec<serde_json::Value> = s.sim().snapshot();
    let plans = {
        let shoots = trellis_cli::ops::load_shoots(&[s.file("shoot.yaml")]).unwrap();
        trellis_cli::ops::plan_fleet(&s.session, shoots, true).await.unwrap()
    };
    let plan = &plans[0].planned.plan;
    insta::assert_snapshot!("f1_destroy_plan", trellis_tests::text(plan));
    let subnet = plan.nodes.iter().find(|n| n.address.ends_with("hub-vnet/shoot-a-workers")).unwrap();
    assert_eq!((subnet.action(), subnet.ownership()), (Action::Skip, Ownership::User));
    let report = s.apply_plans(plans, "destroy").await.unwrap();
    assert!(report.ok, "{report:#?}");
    let writes: Vec<&str> = report.calls.iter().filter(|c| c.op == Op::Write).map(|c| c.target.as_str()).collect();
    assert_eq!(writes, vec![format!("/subscriptions/{SUB}/resourceGroups/shoot--platform--byo-b3").as_str()]);
    let user: Vec<String> = before
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|id| !id.contains("shoot--platform--byo-b3"))
        .map(str::to_string)
        .collect();
    assert!(writes_to(&report.calls, &user).is_empty());
    for id in &user {
        assert!(s.exists(id), "{id} must survive the shoot's deletion");
    }
    assert!(!s.exists(&format!("/subscriptions/{SUB}/resourceGroups/shoot--platform--byo-b3")));
}
