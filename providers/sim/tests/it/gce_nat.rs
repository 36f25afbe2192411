//! The Cloud NAT sub-resource contract (ARCHITECTURE.md): a NAT is `<router selfLink>/nats/<name>`;
//! GET answers the entry; create/update/remove PATCH the router's whole `nats[]`. A router has no
//! fingerprint in compute v1: a write under a precondition needs the entry's content version.

use serde_json::json;
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};
use trellis_planner::ids::{GceIds, IdScheme};
use trellis_sim::GceSim;

const ROUTER: &str = "projects/p/regions/europe-west1/routers/rtr";
const NAT: &str = "projects/p/regions/europe-west1/routers/rtr/nats/nat-a";
const OTHER: &str = "projects/p/regions/europe-west1/routers/rtr/nats/users-nat";

async fn with_router() -> GceSim {
    let sim = GceSim::in_memory();
    sim.insert("projects/p/global/networks", json!({"name": "vpc-a", "autoCreateSubnetworks": false})).await.unwrap();
    sim.insert(
        "projects/p/regions/europe-west1/routers",
        json!({"name": "rtr", "network": "global/networks/vpc-a",
               "nats": [{"name": "users-nat", "natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"}]}),
    )
    .await
    .unwrap();
    sim
}

fn nat_body() -> serde_json::Value {
    json!({"name": "nat-a", "natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES", "minPortsPerVm": 2048})
}

#[tokio::test]
async fn regression_a_cloud_nat_is_a_node_written_into_its_routers_nats() {
    let sim = with_router().await;
    assert_eq!(sim.get(NAT).await.unwrap(), None, "no entry yet");
    let router0 = sim.get(ROUTER).await.unwrap().unwrap();
    assert!(router0.get("fingerprint").is_none(), "a router has no fingerprint in compute v1: {router0}");

    let created = sim.create(NAT, nat_body()).await.unwrap();
    assert_eq!(created["name"], "nat-a");
    assert_eq!(created["minPortsPerVm"], 2048);
    let router = sim.get(ROUTER).await.unwrap().unwrap();
    assert!(created.get("fingerprint").is_none(), "a NAT answers its entry as the router holds it: {created}");
    let names: Vec<_> = router["nats"].as_array().unwrap().iter().map(|n| n["name"].clone()).collect();
    assert_eq!(names, vec![json!("users-nat"), json!("nat-a")], "the user's NAT is kept");
    assert_eq!(sim.get(NAT).await.unwrap().unwrap()["name"], "nat-a");

    // A second create of the same entry: already there.
    assert!(matches!(sim.create(NAT, nat_body()).await, Err(CloudError::AlreadyExists { .. })));

    // Update under the entry's content version: merged into the entry only.
    let pre = GceIds.precondition(&sim.get(NAT).await.unwrap().unwrap());
    let updated = sim.update(NAT, json!({"minPortsPerVm": 4096}), &pre).await.unwrap();
    assert_eq!(updated["minPortsPerVm"], 4096);
    assert_eq!(sim.get(OTHER).await.unwrap().unwrap()["natIpAllocateOption"], "AUTO_ONLY");
    // The same stale version again: refused, naming the NAT.
    match sim.update(NAT, json!({"minPortsPerVm": 1024}), &pre).await {
        Err(CloudError::PreconditionFailed { target, .. }) => assert_eq!(target, NAT),
        other => panic!("expected a precondition failure, got {other:?}"),
    }

    // Every write of the NAT reached the cloud as a GET and a PATCH of its router, as a client sends them.
    let writes: Vec<(String, String)> =
        sim.calls().iter().filter(|c| c.method != "GET").map(|c| (c.method.clone(), c.target.clone())).collect();
    assert!(writes.iter().all(|(m, t)| m != "PATCH" || t == ROUTER), "{writes:?}");
    assert!(writes.iter().any(|(m, t)| m == "PATCH" && t == ROUTER), "{writes:?}");

    // Remove: only that entry goes; removing again is fine.
    sim.remove(NAT, &Precondition::None).await.unwrap();
    assert_eq!(sim.get(NAT).await.unwrap(), None);
    assert!(sim.get(OTHER).await.unwrap().is_some());
    sim.remove(NAT, &Precondition::None).await.unwrap();

    // A NAT of a router that does not exist: GET is absent, a create is refused (404).
    let orphan = "projects/p/regions/europe-west1/routers/nope/nats/x";
    assert_eq!(sim.get(orphan).await.unwrap(), None);
    match sim.create(orphan, json!({})).await {
        Err(CloudError::Rejected { status: 404, message, .. }) => {
            assert!(message.contains("routers/nope"), "{message}")
        }
        other => panic!("expected a 404, got {other:?}"),
    }
}
