//! Injected faults and latency: exact and deterministic.

use serde_json::json;
use std::time::Duration;
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Op};
use trellis_sim::{ArmSim, Fault, FaultRule, Faults, Matcher};

const RG: &str = "/subscriptions/s/resourceGroups/rg";

fn rt(name: &str) -> String {
    format!("{RG}/providers/Microsoft.Network/routeTables/{name}")
}

#[tokio::test]
async fn nth_call_fault_fires_exactly_once() {
    let sim = ArmSim::in_memory("s");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim.set_faults(Faults::fail_call(3, Fault::ServerError));
    let mut outcomes = Vec::new();
    for i in 0..5 {
        outcomes.push(sim.put(&rt(&format!("rt{i}")), json!({"location": "westeurope"})).await.is_ok());
    }
    assert_eq!(outcomes, vec![true, true, false, true, true]);
    assert_eq!(sim.faults_fired(), 1);
    assert_eq!(sim.get_now(&rt("rt2")), None, "a 500 applies nothing");
    let statuses: Vec<u16> = sim.calls().iter().skip(1).map(|c| c.status).collect();
    assert_eq!(statuses, vec![201, 201, 500, 201, 201]);

    // Installing faults again restarts the count.
    sim.set_faults(Faults::fail_call(1, Fault::Timeout));
    assert!(matches!(sim.get(RG).await, Err(CloudError::Timeout { .. })));
    assert_eq!(sim.calls().last().unwrap().status, 408);
    sim.get(RG).await.unwrap();
}

#[tokio::test]
async fn timeout_after_apply_applies_the_write() {
    let sim = ArmSim::in_memory("s").with_faults(Faults::none().with_rule(FaultRule::once_at(
        Matcher::method("PUT"),
        2,
        Fault::TimeoutAfterApply,
    )));
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    let e = sim.put(&rt("rt"), json!({"location": "westeurope"})).await.unwrap_err();
    assert!(matches!(e, CloudError::Timeout { .. }), "{e:?}");
    assert!(e.is_transient());
    assert!(sim.get(&rt("rt")).await.unwrap().is_some(), "the write took effect");
    let put = &sim.calls()[1];
    assert_eq!((put.method.as_str(), put.status), ("PUT", 201));

    // The same for a delete.
    sim.set_faults(Faults::fail_call(1, Fault::TimeoutAfterApply));
    assert!(sim.delete(&rt("rt")).await.is_err());
    assert_eq!(sim.get_now(&rt("rt")), None);
}

#[tokio::test]
async fn throttle_carries_retry_after() {
    let sim = ArmSim::in_memory("s");
    sim.set_faults(Faults::none().with_rule(
        FaultRule::always(Matcher::op(Op::Read), Fault::Throttle { retry_after: Duration::from_secs(7) }).times(2),
    ));
    for _ in 0..2 {
        let e = sim.get(RG).await.unwrap_err();
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
        assert!(matches!(e, CloudError::Throttled { .. }));
    }
    assert_eq!(sim.get(RG).await.unwrap(), None);
    let statuses: Vec<u16> = sim.calls().iter().map(|c| c.status).collect();
    assert_eq!(statuses, vec![429, 429, 404]);
}

#[tokio::test]
async fn matchers_select_by_method_target_and_op() {
    let sim = ArmSim::in_memory("s");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim.set_faults(
        Faults::none().with_rule(FaultRule::always(Matcher::target_contains("ROUTETABLES/bad"), Fault::ServerError)),
    );
    sim.put(&rt("good"), json!({"location": "westeurope"})).await.unwrap();
    assert!(matches!(
        sim.put(&rt("bad"), json!({"location": "westeurope"})).await,
        Err(CloudError::Server { status: 500, .. })
    ));
    assert!(sim.get(&rt("bad")).await.is_err());
    assert!(sim.list(RG, "Microsoft.Network/routeTables").await.is_ok());
    assert_eq!(sim.faults_fired(), 2);
}

#[tokio::test(start_paused = true)]
async fn latency_uses_tokio_time() {
    let sim = ArmSim::in_memory("s")
        .with_faults(Faults::none().with_latency(Duration::from_secs(1), Duration::from_secs(30)));
    // Under paused time the sleeps advance the clock instantly; the calls still complete.
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    assert!(sim.get(RG).await.unwrap().is_some());
    assert_eq!(sim.faults().write_latency, Duration::from_secs(30));
}
