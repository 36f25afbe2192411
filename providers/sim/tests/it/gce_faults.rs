//! Faults and latency on the simulated GCE cloud: the core's fault rules, GCE's answers.

use serde_json::json;
use std::time::Duration;
use trellis_planner::cloud::{CloudError, CloudRead};
use trellis_sim::{Fault, FaultRule, Faults, GceSim, Matcher};

#[tokio::test]
async fn throttling_and_backend_errors_are_injected_and_audited() {
    let sim = GceSim::in_memory().with_faults(
        Faults::none()
            .with_rule(FaultRule::once_at(
                Matcher::method("POST"),
                1,
                Fault::Throttle { retry_after: Duration::from_millis(5) },
            ))
            .with_rule(FaultRule::once_at(Matcher::method("POST"), 2, Fault::ServerError)),
    );
    let body = json!({"name": "vpc-a"});
    let e = sim.insert("projects/p/global/networks", body.clone()).await.unwrap_err();
    assert!(matches!(e, CloudError::Throttled { .. }) && e.is_transient(), "{e:?}");
    let e = sim.insert("projects/p/global/networks", body.clone()).await.unwrap_err();
    assert!(matches!(e, CloudError::Server { status: 503, .. }), "{e:?}");
    assert!(sim.get_now("projects/p/global/networks/vpc-a").is_none(), "a faulted call applies nothing");
    sim.insert("projects/p/global/networks", body).await.unwrap();
    let statuses: Vec<u16> = sim.calls().iter().map(|c| c.status).collect();
    assert_eq!(statuses, [429, 503, 200]);
    assert_eq!(sim.faults_fired(), 2);
}

#[tokio::test]
async fn a_timeout_after_apply_applies_the_write() {
    let sim = GceSim::in_memory().with_faults(Faults::fail_call(1, Fault::TimeoutAfterApply));
    let e = sim.insert("projects/p/global/networks", json!({"name": "vpc-a"})).await.unwrap_err();
    assert!(matches!(e, CloudError::Timeout { .. }), "{e:?}");
    assert!(sim.get_now("projects/p/global/networks/vpc-a").is_some());
}

#[tokio::test(start_paused = true)]
async fn calls_take_their_latency() {
    let sim =
        GceSim::in_memory().with_faults(Faults::none().with_latency(Duration::from_secs(1), Duration::from_secs(4)));
    let start = tokio::time::Instant::now();
    sim.insert("projects/p/global/networks", json!({"name": "vpc-a"})).await.unwrap();
    sim.get("projects/p/global/networks/vpc-a").await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(6));
}
