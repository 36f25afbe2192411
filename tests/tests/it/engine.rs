//! Engine invariants end to end: idempotence, crash safety, stale plans, locks, determinism.

use std::collections::BTreeSet;
use trellis_engine::ops;
use trellis_planner::cloud::Op;
use trellis_planner::retry::RetryPolicy;
use trellis_plans::PlanSet;
use trellis_sim::{Fault, Faults};
use trellis_state::{LockInfo, StateStore};
use trellis_tests::Scenario;

/// Ids of everything in the simulated cloud.
fn cloud_ids(s: &Scenario) -> BTreeSet<String> {
    s.sim().snapshot().iter().filter_map(|r| r["id"].as_str().map(str::to_ascii_lowercase)).collect()
}

fn state_addresses(s: &Scenario, shoot: &str) -> BTreeSet<String> {
    s.session.store.load(shoot).unwrap().map(|ws| ws.resources.keys().cloned().collect()).unwrap_or_default()
}

#[tokio::test]
async fn apply_then_plan_is_a_noop_with_zero_writes() {
    for id in ["A1", "A2", "A3", "A4"] {
        let s = Scenario::new(id);
        assert!(s.apply().await.unwrap().ok);
        let mark = s.sim().mark();
        let plan = s.plan().await.unwrap();
        assert!(!plan.has_changes(), "{id}: {}", trellis_tests::text(&plan));
        let writes = s.sim().calls_since(mark).into_iter().filter(|c| c.op == Op::Write).count();
        assert_eq!(writes, 0, "{id}: planning wrote to the cloud");
    }
}

/// Injects a failure at each cloud call of an apply in turn; the next plan + apply must converge to
/// the same cloud and state as a clean run, with no duplicates.
#[tokio::test]
async fn crash_safety_failure_at_every_apply_call_converges() {
    let clean = Scenario::new("A2");
    let report = clean.apply().await.unwrap();
    assert!(report.ok);
    let expected_cloud = cloud_ids(&clean);
    let expected_state = state_addresses(&clean, "shoot--dev--bravo");
    let calls = report.calls.len();
    assert!(calls > 8, "the apply makes a call per node at least: {calls}");

    for fault in [Fault::ServerError, Fault::Timeout, Fault::TimeoutAfterApply] {
        for n in 1..=calls {
            let mut s = Scenario::new("A2");
            s.session.retry = RetryPolicy::immediate(1);
            let plans = s.plan_files(&["shoot.yaml"]).await.unwrap();
            s.sim().set_faults(Faults::fail_call(n, fault.clone()));
            let first = s.apply_plans(plans, trellis_engine::ops::ApplyOp::Apply).await.unwrap();
            assert!(!first.ok, "call {n} ({fault:?}) was injected but the apply succeeded");
            s.sim().set_faults(Faults::none());
            let second = s.apply().await.unwrap();
            assert!(second.ok, "call {n} ({fault:?}): recovery apply failed: {second:?}");
            let again = s.plan().await.unwrap();
            assert!(!again.has_changes(), "call {n} ({fault:?}): not converged:\n{}", trellis_tests::text(&again));
            assert_eq!(cloud_ids(&s), expected_cloud, "call {n} ({fault:?}): cloud differs from a clean run");
            assert_eq!(state_addresses(&s, "shoot--dev--bravo"), expected_state, "call {n} ({fault:?}): state lost");
        }
    }
}

#[tokio::test]
async fn transient_errors_are_retried_and_honour_retry_after() {
    let s = Scenario::new("A1");
    let plans = s.plan_files(&["shoot.yaml"]).await.unwrap();
    s.sim().set_faults(
        Faults::none()
            .with_rule(
                trellis_sim::FaultRule::always(
                    trellis_sim::Matcher::method("PUT"),
                    Fault::Throttle { retry_after: std::time::Duration::from_millis(1) },
                )
                .times(2),
            )
            .with_rule(trellis_sim::FaultRule::once_at(trellis_sim::Matcher::method("GET"), 3, Fault::ServerError)),
    );
    let report = s.apply_plans(plans, trellis_engine::ops::ApplyOp::Apply).await.unwrap();
    assert!(report.ok, "{report:?}");
    let statuses: Vec<u16> = report.calls.iter().map(|c| c.status).collect();
    assert_eq!(statuses.iter().filter(|&&st| st == 429).count(), 2);
    assert_eq!(statuses.iter().filter(|&&st| st == 500).count(), 1);
}

#[tokio::test]
async fn a_failed_node_skips_its_dependents_and_finishes_independent_work() {
    let mut s = Scenario::new("A1");
    s.session.retry = RetryPolicy::immediate(1);
    let plans = s.plan_files(&["shoot.yaml"]).await.unwrap();
    s.sim().set_faults(Faults::none().with_rule(trellis_sim::FaultRule::always(
        trellis_sim::Matcher::target_contains("routeTables/worker_route_table"),
        Fault::ServerError,
    )));
    let report = s.apply_plans(plans, trellis_engine::ops::ApplyOp::Apply).await.unwrap();
    let outcome = |suffix: &str| {
        let n = report.shoots[0].nodes.iter().find(|n| n.address.ends_with(suffix)).unwrap();
        serde_json::to_value(&n.outcome).unwrap()["status"].as_str().unwrap().to_string()
    };
    assert_eq!(outcome("worker_route_table"), "failed");
    assert_eq!(outcome("shoot--dev--alpha-nodes"), "skipped");
    assert_eq!(outcome("shoot--dev--alpha-workers"), "done", "the NSG does not depend on the route table");
    assert_eq!(outcome("virtual_network.shoot--dev--alpha.shoot--dev--alpha"), "done");
}

#[tokio::test]
async fn plans_are_deterministic() {
    let a = Scenario::new("A4");
    let b = Scenario::new("A4");
    let first = PlanSet::new(vec![a.plan().await.unwrap()]).to_json();
    let second = PlanSet::new(vec![a.plan().await.unwrap()]).to_json();
    let other_state = PlanSet::new(vec![b.plan().await.unwrap()]).to_json();
    assert_eq!(first, second);
    assert_eq!(first, other_state);
}

#[tokio::test]
async fn a_saved_plan_is_refused_once_state_moved() {
    let s = Scenario::new("A1");
    let saved = PlanSet::new(vec![s.plan().await.unwrap()]);
    assert!(s.apply().await.unwrap().ok);
    let shoots = ops::shoots_from_plan(&saved).unwrap();
    let err = ops::check_saved_plan(&s.session, &saved, shoots).await.expect_err("stale plan refused");
    let msg = format!("{err:#}");
    assert!(msg.contains("stale plan") && msg.contains("re-run `trellis plan`"), "{msg}");
}

#[tokio::test]
async fn a_saved_plan_is_refused_when_the_cloud_changed() {
    let s = Scenario::new("A3");
    let saved = PlanSet::new(vec![s.plan().await.unwrap()]);
    // Someone changes the user's public IP out of band.
    s.sync_world("world-ip-changed.yaml");
    let shoots = ops::shoots_from_plan(&saved).unwrap();
    let err = ops::check_saved_plan(&s.session, &saved, shoots).await.expect_err("stale plan refused");
    let msg = format!("{err:#}");
    assert!(msg.contains("the cloud changed since the plan was made"), "{msg}");
    // A fresh plan applies fine.
    let fresh = PlanSet::new(vec![s.plan().await.unwrap()]);
    let shoots = ops::shoots_from_plan(&fresh).unwrap();
    let plans = ops::check_saved_plan(&s.session, &fresh, shoots).await.unwrap();
    assert!(s.apply_plans(plans, trellis_engine::ops::ApplyOp::Apply).await.unwrap().ok);
}

#[tokio::test]
async fn a_locked_workspace_is_refused_with_the_holder() {
    let s = Scenario::new("A1");
    let holder = LockInfo { pid: 1, operation: "apply".into(), ..LockInfo::here("apply") };
    s.session.store.lock("shoot--dev--alpha", &holder).unwrap();
    // A shoot whose lock is held fails on its own (the other shoots of the fleet are not stopped by
    // an error of the run): its report says why.
    let report = s.apply().await.unwrap();
    assert!(!report.ok);
    assert_eq!(report.shoots[0].status, ops::ShootStatus::Failed);
    let msg = report.shoots[0].error.clone().unwrap();
    assert!(
        msg.contains("shoot--dev--alpha") && msg.contains("pid 1") && msg.contains("trellis state unlock"),
        "{msg}"
    );
    s.session.store.force_unlock("shoot--dev--alpha").unwrap();
    assert!(s.apply().await.unwrap().ok);
}

#[tokio::test]
async fn state_survives_and_records_every_node() {
    let s = Scenario::new("A2");
    assert!(s.apply().await.unwrap().ok);
    let ws = s.session.store.load("shoot--dev--bravo").unwrap().unwrap();
    assert_eq!(ws.resources.len(), 7, "{:?}", ws.resources.keys().collect::<Vec<_>>());
    let history = s.session.store.history("shoot--dev--bravo").unwrap();
    assert!(history.len() >= 7, "a commit per node plus the final one: {}", history.len());
    assert!(ws.provider_state.is_some() && ws.outputs.is_some());
}

#[tokio::test]
async fn destroy_deletes_the_cluster_resource_group_and_nothing_of_the_user() {
    let s = Scenario::new("A3");
    assert!(s.apply().await.unwrap().ok);
    let report = s.destroy_files(&["shoot.yaml"]).await.unwrap();
    assert!(report.ok, "{report:?}");
    let writes: Vec<_> = report.calls.iter().filter(|c| c.op == Op::Write).map(|c| c.target.clone()).collect();
    assert_eq!(
        writes,
        vec![
            "/subscriptions/7f3c2a10-4b5e-4d8f-9a61-0c2e8b7d5f31/resourceGroups/platform-network/providers/Microsoft.Network/virtualNetworks/platform-vnet/subnets/shoot--dev--charlie-nodes".to_string(),
            "/subscriptions/7f3c2a10-4b5e-4d8f-9a61-0c2e8b7d5f31/resourceGroups/shoot--dev--charlie".to_string(),
        ]
    );
    assert!(s.exists("/subscriptions/7f3c2a10-4b5e-4d8f-9a61-0c2e8b7d5f31/resourceGroups/platform-network/providers/Microsoft.Network/virtualNetworks/platform-vnet"));
    assert!(s.exists("/subscriptions/7f3c2a10-4b5e-4d8f-9a61-0c2e8b7d5f31/resourceGroups/platform-network/providers/Microsoft.Network/publicIPAddresses/egress-ip-1"));
    assert!(s.session.store.load("shoot--dev--charlie").unwrap().unwrap().resources.is_empty());
}

/// The same for a replace (NAT and public IP to another zone): a failure at any call of the
/// detach → delete → create → re-attach sequence converges on the next apply.
#[tokio::test]
async fn crash_safety_of_a_replace_converges() {
    let clean = Scenario::new("A2");
    assert!(clean.apply().await.unwrap().ok);
    let report = clean.apply_files(&["shoot-zone2.yaml"]).await.unwrap();
    assert!(report.ok);
    let expected_cloud = cloud_ids(&clean);
    let calls = report.calls.len();
    for n in 1..=calls {
        let mut s = Scenario::new("A2");
        assert!(s.apply().await.unwrap().ok);
        s.session.retry = RetryPolicy::immediate(1);
        let plans = s.plan_files(&["shoot-zone2.yaml"]).await.unwrap();
        s.sim().set_faults(Faults::fail_call(n, Fault::ServerError));
        let first = s.apply_plans(plans, trellis_engine::ops::ApplyOp::Apply).await.unwrap();
        assert!(!first.ok, "call {n} was injected but the apply succeeded");
        s.sim().set_faults(Faults::none());
        assert!(s.apply_files(&["shoot-zone2.yaml"]).await.unwrap().ok, "call {n}: recovery failed");
        let again = s.plan_file("shoot-zone2.yaml").await.unwrap();
        assert!(!again.has_changes(), "call {n}: not converged:\n{}", trellis_tests::text(&again));
        assert_eq!(cloud_ids(&s), expected_cloud, "call {n}");
    }
}

/// A fleet apply stops at the first failing shoot unless told to keep going: with one shoot in flight
/// at a time, the shoot after a failed one is reported skipped (not started, nothing written to it);
/// with `keep_going` it is applied.
#[tokio::test]
async fn regression_a_failing_shoot_stops_the_fleet_unless_keep_going() {
    for keep_going in [false, true] {
        let mut s = Scenario::new("B6");
        s.session.retry = RetryPolicy::immediate(1);
        let plans = s.plan_files(&["shoot-a.yaml", "shoot-b.yaml"]).await.unwrap();
        let order: Vec<String> = plans.iter().map(|p| p.workspace.shoot.clone()).collect();
        let (first, second) = (order[0].clone(), order[1].clone());
        s.sim().set_faults(Faults::none().with_rule(trellis_sim::FaultRule::always(
            trellis_sim::Matcher::target_contains(&first),
            Fault::Forbidden,
        )));
        let opts = ops::ApplyOptions { keep_going, ..ops::ApplyOptions::new(1, ops::ApplyOp::Apply) };
        let report = ops::apply(&s.session, plans, &opts, &mut ops::Quiet).await.unwrap();
        assert!(!report.ok);
        assert_eq!(report.shoots[0].status, ops::ShootStatus::Failed, "{first}");
        let other = &report.shoots[1];
        if keep_going {
            assert_eq!(other.status, ops::ShootStatus::Applied, "{second}: {other:?}");
        } else {
            assert_eq!(other.status, ops::ShootStatus::Skipped, "{second}: {other:?}");
            assert!(other.calls.is_empty() && other.nodes.is_empty());
            let why = other.error.as_deref().unwrap();
            assert!(why.contains(&format!("{first} failed before it")) && why.contains("--keep-going"), "{why}");
            assert!(s.session.store.load(&second).unwrap().is_none(), "nothing of the skipped shoot recorded");
        }
    }
}

/// `apply -f` plans and applies in one run; a shoot whose workspace another run committed to in
/// between is not applied, and its report says what happened (not "stale plan", which is about plan
/// files).
#[tokio::test]
async fn regression_a_workspace_that_moved_on_during_apply_is_said_as_such() {
    let s = Scenario::new("A1");
    let plans = s.plan_files(&["shoot.yaml"]).await.unwrap();
    assert!(s.apply().await.unwrap().ok, "another run applies the shoot meanwhile");
    let report = s.apply_plans(plans, ops::ApplyOp::Apply).await.unwrap();
    assert!(!report.ok);
    let why = report.shoots[0].error.clone().unwrap();
    assert!(
        why.contains("its workspace moved on while this run planned it") && why.contains("serial 0 when planned"),
        "{why}"
    );
    assert!(!why.contains("stale plan"), "{why}");
}
