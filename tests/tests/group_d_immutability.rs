//! Group D — update / immutability: the update rules run against the last-applied config in state.

use trellis_tests::Scenario;

/// Applies `shoot.yaml`, then plans `shoot-updated.yaml` and returns the rejection.
async fn update_rejected(id: &str) -> String {
    let s = Scenario::new(id);
    assert!(s.apply().await.unwrap().ok, "{id}: the original shoot applies");
    let mark = s.sim().mark();
    let err = s.plan_file("shoot-updated.yaml").await.err().unwrap_or_else(|| panic!("{id}: update must be rejected"));
    assert!(
        s.sim().calls_since(mark).iter().all(|c| c.op == trellis_planner::cloud::Op::Read),
        "{id}: a rejected update wrote"
    );
    format!("{err:#}")
}

fn assert_has(msg: &str, want: &str) {
    assert!(msg.contains(want), "expected `{want}` in:\n{msg}");
}

#[tokio::test]
async fn d1_adding_a_subnet_to_a_managed_shoot_is_forbidden() {
    assert_has(&update_rejected("D1").await, "networks.subnet: Forbidden");
}

#[tokio::test]
async fn d2_removing_the_subnet_from_a_byo_shoot_is_forbidden() {
    assert_has(&update_rejected("D2").await, "networks.subnet: Forbidden");
}

#[tokio::test]
async fn d3_renaming_the_byo_subnet_is_forbidden() {
    assert_has(
        &update_rejected("D3").await,
        "networks.subnet.name: Invalid value: \"shoot-b-workers\": field is immutable",
    );
}

#[tokio::test]
async fn d4_changing_the_byo_vnet_is_forbidden() {
    let msg = update_rejected("D4").await;
    assert_has(&msg, "networks.vnet.name: Invalid value: \"other-vnet\": field is immutable");
    assert_has(&msg, "networks.vnet.resourceGroup: Invalid value: \"other-network\": field is immutable");
}
