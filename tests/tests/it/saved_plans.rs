//! `apply PLAN` runs only what trellis itself would plan now (issue 6, item 1).
//!
//! An attacker who edits a plan file and fixes its summary and digest gets nothing executed: the plan is
//! re-planned from its embedded manifest against the state and the cloud, and refused unless every node
//! and artifact is identical. Writes by others that change no planned node leave a saved plan valid.

use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use trellis_engine::ops;
use trellis_planner::cloud::CloudWrite;
use trellis_plans::{Action, DeleteOwnership, Operation, Ownership, Plan, PlanFileError, PlanSet};
use trellis_sim::runtime::Ccm;
use trellis_tests::{node, user_owned, writes_to, Scenario};

/// What a careful attacker does after editing: fix the summary and the digest, so the file reads back.
fn reseal(plan: &mut Plan) {
    plan.summary = plan.expected_summary();
    plan.digest = plan.body_digest();
}

/// Writes the edited set as a plan file would be written and reads it back as `apply PLAN` does.
fn through_file(set: &PlanSet) -> Result<PlanSet, PlanFileError> {
    PlanSet::from_json("edited.tfplan", &set.to_json())
}

/// Runs the checks `apply PLAN` runs; the error message, if refused.
async fn refused(s: &Scenario, set: &PlanSet) -> Option<String> {
    let set = through_file(set).expect("a resealed plan file reads back");
    let shoots = match ops::shoots_from_plan(&set) {
        Ok(shoots) => shoots,
        Err(e) => return Some(format!("{e:#}")),
    };
    ops::check_saved_plan(&s.session, &set, shoots).await.err().map(|e| format!("{e:#}"))
}

/// The plan of the scenario's `shoot.yaml`, as `trellis plan --out` saves it (with its manifest).
async fn saved(s: &Scenario) -> PlanSet {
    let plan = s.plan().await.unwrap();
    assert!(plan.source.is_some(), "plans carry their manifest");
    PlanSet::new(vec![plan])
}

#[tokio::test]
async fn regression_tampered_plan_deleting_a_user_vnet_is_refused() {
    let s = Scenario::new("B1");
    let mut set = saved(&s).await;
    let vnet = node(&set.plans[0], "virtual_network.hub-network.hub-vnet").clone();
    assert_eq!(vnet.ownership(), Ownership::User);
    let user_ids = user_owned(&[&set.plans[0]]);
    let n = set.plans[0].nodes.iter_mut().find(|n| n.address == vnet.address).unwrap();
    n.op = Operation::Delete { ownership: DeleteOwnership::Managed, changes: vec![] };
    reseal(&mut set.plans[0]);

    let mark = s.sim().mark();
    let msg = refused(&s, &set).await.expect("the edited plan is refused");
    assert!(
        msg.contains(&format!("node {}: the action is `delete` in the plan file, `verify` now", vnet.address)),
        "{msg}"
    );
    assert!(msg.contains("re-run `trellis plan`"), "{msg}");
    assert!(writes_to(&s.sim().calls_since(mark), &user_ids).is_empty(), "no write to a user resource");
    assert!(s.exists(vnet.id.as_deref().unwrap()), "the user's VNet survives");
}

#[tokio::test]
async fn regression_tampered_plan_with_an_edited_patch_is_refused() {
    let s = Scenario::new("A1");
    let mut set = saved(&s).await;
    let n = set.plans[0].nodes.iter_mut().find(|n| n.action() == Action::Create).unwrap();
    let address = n.address.clone();
    let Operation::Create { patch, .. } = &mut n.op else { unreachable!("found as a create") };
    patch["tags"] = json!({"owner": "mallory"});
    reseal(&mut set.plans[0]);
    let msg = refused(&s, &set).await.expect("refused");
    assert!(msg.contains(&format!("node {address}: the patch is ")), "{msg}");
}

#[tokio::test]
async fn regression_tampered_plan_with_an_edited_id_is_refused() {
    let s = Scenario::new("A1");
    let mut set = saved(&s).await;
    let n = set.plans[0].nodes.iter_mut().find(|n| n.action() == Action::Create).unwrap();
    let address = n.address.clone();
    n.id = Some("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/victim".to_string());
    reseal(&mut set.plans[0]);
    let msg = refused(&s, &set).await.expect("refused");
    assert!(msg.contains(&format!("node {address}: the cloud id is ")), "{msg}");
}

#[tokio::test]
async fn regression_tampered_plan_with_an_added_node_is_refused() {
    let s = Scenario::new("A1");
    let mut set = saved(&s).await;
    let mut extra = set.plans[0].nodes[0].clone();
    extra.address = "azure.resource_group.victim".to_string();
    extra.id = Some("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/victim".to_string());
    extra.op = Operation::Delete { ownership: DeleteOwnership::Managed, changes: vec![] };
    set.plans[0].nodes.push(extra);
    set.plans[0].nodes.sort_by(|a, b| a.address.cmp(&b.address));
    reseal(&mut set.plans[0]);
    let msg = refused(&s, &set).await.expect("refused");
    assert!(
        msg.contains(
            "node azure.resource_group.victim (`delete`) is in the plan file, but trellis does not plan it now"
        ),
        "{msg}"
    );
}

#[tokio::test]
async fn regression_tampered_plan_with_a_removed_node_is_refused() {
    let s = Scenario::new("A1");
    let mut set = saved(&s).await;
    let removed = set.plans[0].nodes.remove(0);
    reseal(&mut set.plans[0]);
    let msg = refused(&s, &set).await.expect("refused");
    assert!(msg.contains(&format!("trellis now plans node {}", removed.address)), "{msg}");
}

#[tokio::test]
async fn regression_tampered_plan_with_edited_artifacts_is_refused() {
    let s = Scenario::new("A1");
    let mut set = saved(&s).await;
    if let Some(b) = set.plans[0].artifacts.allow_egress() {
        set.plans[0].artifacts.set(trellis_plans::Artifact::AllowEgress(!b));
    }
    reseal(&mut set.plans[0]);
    let msg = refused(&s, &set).await.expect("refused");
    assert!(msg.contains("artifact allow_egress differs"), "{msg}");
}

#[tokio::test]
async fn regression_tampered_plan_carrying_another_shoots_manifest_is_refused() {
    let s = Scenario::new("A1");
    let mut set = saved(&s).await;
    set.plans[0].shoot = "shoot--dev--victim".to_string();
    let msg = refused(&s, &set).await.expect("refused");
    assert!(msg.contains("the plan carries the manifest of shoot shoot--dev--alpha"), "{msg}");
}

#[tokio::test]
async fn regression_edited_plan_without_a_new_digest_does_not_read() {
    let s = Scenario::new("A1");
    let mut set = saved(&s).await;
    let code = set.plans[0].nodes[0].reason.code().expect("a fresh plan's node has a code");
    set.plans[0].nodes[0].reason = trellis_plans::Reason::new(code, "trust me");
    match through_file(&set) {
        Err(e @ PlanFileError::Edited { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("do not match its digest") && msg.contains("re-run `trellis plan --out`"), "{msg}")
        }
        other => panic!("an edited body must be refused, got {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn regression_saved_plan_survives_a_runtime_writer_that_changes_no_planned_node() {
    let s = Scenario::new("A1");
    let report = s.apply().await.unwrap();
    assert!(report.ok);
    // A plan is saved, then the CCM adds a LoadBalancer Service's NSG rule and a route.
    let updated = saved(&s).await;
    let artifacts = report.shoots[0].artifacts.clone().unwrap();
    let values = artifacts["cloud_provider_config"]["values"].as_object().unwrap().clone();
    let cloud: Arc<dyn CloudWrite> = Arc::new(s.sim().clone());
    let ccm = Ccm::new(cloud, &values, true).unwrap();
    ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &BTreeMap::new(), vec![]).await.unwrap();
    ccm.add_node("node-1", "100.96.1.0/24").await.unwrap();

    let shoots = ops::shoots_from_plan(&updated).unwrap();
    let plans = ops::check_saved_plan(&s.session, &updated, shoots).await.expect("the saved plan is still valid");
    assert!(s.apply_plans(plans, trellis_engine::ops::ApplyOp::Apply).await.unwrap().ok);
}

#[tokio::test]
async fn regression_saved_plan_goes_stale_when_a_planned_node_changes() {
    let s = Scenario::new("A1");
    assert!(s.apply().await.unwrap().ok);
    let set = saved(&s).await;
    // Someone deletes the managed subnet: the plan would now have to create it.
    let subnet = set.plans[0].nodes.iter().find(|n| n.kind == trellis_providers::azure::kind::SUBNET).unwrap().clone();
    s.sim().delete(subnet.id.as_deref().unwrap()).await.unwrap();
    let shoots = ops::shoots_from_plan(&set).unwrap();
    let msg = format!("{:#}", ops::check_saved_plan(&s.session, &set, shoots).await.expect_err("stale"));
    assert!(
        msg.contains(&format!(
            "stale plan: node {}: the action is `noop` in the plan file, `create` now",
            subnet.address
        )),
        "{msg}"
    );
}
