//! The write model over HTTP: `If-None-Match: *` on create, `If-Match: <etag>` on update and delete,
//! 412 classified by the condition sent, long-running operations polled to their end.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use trellis_azure_client::{ArmClient, StaticToken, Url};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};
use trellis_sim::ArmSim;
use trellis_sim_http::{ServerOptions, SimServer};

const SUB: &str = "00000000-0000-0000-0000-0000000000aa";
const RG: &str = "/subscriptions/00000000-0000-0000-0000-0000000000aa/resourceGroups/rg";

fn rt(name: &str) -> String {
    format!("{RG}/providers/Microsoft.Network/routeTables/{name}")
}

async fn fixture() -> (ArmSim, trellis_sim_http::Running, ArmClient) {
    let sim = ArmSim::in_memory(SUB);
    // Two `InProgress` polls per operation: every write below is a long-running operation.
    let opts = ServerOptions { in_progress_polls: 2, ..ServerOptions::default() };
    let server = SimServer::with_options(sim.clone(), opts).spawn_local().await.expect("server starts");
    let client = ArmClient::new(Url::parse(&server.url()).unwrap(), Arc::new(StaticToken("t".into())))
        .expect("client")
        .with_lro_poll_cap(Duration::from_millis(20))
        .with_request_timeout(Duration::from_secs(10));
    client.put(RG, json!({"location": "westeurope"})).await.expect("resource group");
    (sim, server, client)
}

#[tokio::test]
async fn regression_create_over_an_existing_resource_is_already_exists() {
    let (sim, _server, client) = fixture().await;
    let created = client.create(&rt("rt"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(created["name"], "rt", "the create's operation was polled and the resource read back");
    let err = client.create(&rt("RT"), json!({"location": "westeurope", "tags": {"x": "y"}})).await.unwrap_err();
    assert!(matches!(err, CloudError::AlreadyExists { status: 412, .. }), "{err:?}");
    assert_eq!(sim.get_now(&rt("rt")).unwrap().get("tags"), None, "the existing resource is untouched");
}

#[tokio::test]
async fn regression_stale_etag_is_precondition_failed_on_update_and_delete() {
    let (sim, _server, client) = fixture().await;
    let read = client.create(&rt("rt"), json!({"location": "westeurope"})).await.unwrap();
    let etag = read["etag"].as_str().unwrap().to_string();
    let pre = Precondition::IfMatch(etag.clone());

    // Someone else writes the route table (the CCM adds a route): its etag changes.
    sim.put(
        &format!("{}/routes/node-1", rt("rt")),
        json!({"properties": {"addressPrefix": "100.96.0.0/24", "nextHopType": "VirtualAppliance", "nextHopIpAddress": "10.250.0.4"}}),
    )
    .await
    .unwrap();

    let err = client.update(&rt("rt"), read.clone(), &pre).await.unwrap_err();
    assert_eq!(err, CloudError::PreconditionFailed { target: rt("rt"), expected: etag.clone() });
    assert!(err.to_string().contains("changed since it was read"), "{err}");
    assert!(!err.is_transient());
    assert_eq!(client.remove(&rt("rt"), &pre).await.unwrap_err(), err.clone());
    let routes = &sim.get_now(&rt("rt")).unwrap()["properties"]["routes"];
    assert_eq!(routes.as_array().map(Vec::len), Some(1), "the CCM's route survives: {routes}");

    // With the current etag both go through.
    let now = client.get(&rt("rt")).await.unwrap().unwrap();
    let current = Precondition::of(&now);
    assert_ne!(current, pre);
    let updated = client.update(&rt("rt"), now, &current).await.unwrap();
    client.remove(&rt("rt"), &Precondition::of(&updated)).await.unwrap();
    assert_eq!(client.get(&rt("rt")).await.unwrap(), None);
}
