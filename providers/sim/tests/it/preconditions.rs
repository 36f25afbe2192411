//! The simulator honours the write model's conditions as ARM does: a create of an existing resource
//! and a write under a stale etag are 412, classified as `AlreadyExists` / `PreconditionFailed`.

use serde_json::json;
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Op, Precondition};
use trellis_sim::ArmSim;

const RG: &str = "/subscriptions/s/resourceGroups/rg";

fn net(rest: &str) -> String {
    format!("{RG}/providers/Microsoft.Network/{rest}")
}

async fn sim() -> ArmSim {
    let sim = ArmSim::in_memory("s");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim
}

#[tokio::test]
async fn regression_create_of_an_existing_resource_is_already_exists_and_changes_nothing() {
    let sim = sim().await;
    sim.create(&net("routeTables/rt"), json!({"location": "westeurope"})).await.unwrap();
    let before = sim.get_now(&net("routeTables/rt")).unwrap();
    let err = sim.create(&net("routeTables/RT"), json!({"location": "westeurope", "tags": {"a": "b"}})).await;
    assert!(matches!(err, Err(CloudError::AlreadyExists { status: 412, .. })), "{err:?}");
    assert_eq!(sim.get_now(&net("routeTables/rt")).unwrap(), before);
    let last = sim.calls().pop().unwrap();
    assert_eq!((last.op, last.method.as_str(), last.status), (Op::Write, "PUT", 412));
}

#[tokio::test]
async fn regression_if_match_is_honoured_on_update_and_delete() {
    let sim = sim().await;
    let vnet = net("virtualNetworks/v");
    let read = sim
        .create(
            &vnet,
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
        )
        .await
        .unwrap();
    let stale = Precondition::of(&read);
    assert!(matches!(stale, Precondition::IfMatch(_)));
    // A write to a child (a subnet) changes the parent's etag, as in ARM.
    sim.put(&format!("{vnet}/subnets/a"), json!({"properties": {"addressPrefix": "10.0.1.0/24"}})).await.unwrap();

    let err = sim.update(&vnet, read.clone(), &stale).await.unwrap_err();
    let Precondition::IfMatch(etag) = &stale else { unreachable!() };
    assert_eq!(err, CloudError::PreconditionFailed { target: vnet.clone(), expected: etag.clone() });
    assert_eq!(sim.remove(&vnet, &stale).await.unwrap_err(), err);
    assert!(sim.get_now(&format!("{vnet}/subnets/a")).is_some(), "nothing was deleted");

    let now = sim.get(&vnet).await.unwrap().unwrap();
    let updated = sim.update(&vnet, now, &Precondition::of(&sim.get_now(&vnet).unwrap())).await.unwrap();
    sim.remove(&vnet, &Precondition::of(&updated)).await.unwrap();
    assert_eq!(sim.get_now(&vnet), None);
    // A conditional delete of what is gone fails its condition (RFC 9110: no current representation),
    // as an update under a condition does not create; the executor reads again and calls it done.
    assert!(matches!(sim.remove(&vnet, &stale).await, Err(CloudError::PreconditionFailed { .. })));
    sim.remove(&vnet, &Precondition::None).await.unwrap();
    assert!(matches!(sim.update(&vnet, read, &stale).await, Err(CloudError::PreconditionFailed { .. })));
    assert_eq!(sim.get_now(&vnet), None);
}
