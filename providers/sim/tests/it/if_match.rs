//! Bullet "Etags are generated but If-Match is ignored": every write gives the resource a new etag,
//! and a write with `If-Match` / `If-None-Match: *` that does not hold is refused with 412
//! `PreconditionFailed` and changes nothing — so a lost update (say, against the CCM) is caught.

use serde_json::{json, Value};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite};
use trellis_sim::{ArmSim, Precondition};

const RG: &str = "/subscriptions/sub-1/resourceGroups/rg";
const NSG: &str = "/subscriptions/sub-1/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg";

fn etag(v: &Value) -> String {
    v["etag"].as_str().expect("an etag").to_string()
}

fn precondition_failed(e: CloudError) -> String {
    match e {
        CloudError::Rejected { status: 412, code, message, .. } if code == "PreconditionFailed" => message,
        other => panic!("expected 412 PreconditionFailed, got {other:?}"),
    }
}

async fn sim() -> ArmSim {
    let sim = ArmSim::in_memory("sub-1");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim
}

#[tokio::test]
async fn every_write_gives_a_new_etag() {
    let sim = sim().await;
    let first = etag(&sim.put(NSG, json!({"location": "westeurope"})).await.unwrap());
    let second = etag(&sim.put(NSG, json!({"location": "westeurope"})).await.unwrap());
    assert_ne!(first, second);
    assert_eq!(etag(&sim.get(NSG).await.unwrap().unwrap()), second);
}

#[tokio::test]
async fn regression_put_with_a_stale_if_match_is_refused_with_precondition_failed() {
    let sim = sim().await;
    let read = sim.put(NSG, json!({"location": "westeurope", "tags": {"v": "1"}})).await.unwrap();
    let stale = etag(&read);
    // Someone else (the CCM, say) writes in between.
    let theirs = sim.put(NSG, json!({"location": "westeurope", "tags": {"v": "theirs"}})).await.unwrap();

    let ours = json!({"location": "westeurope", "tags": {"v": "ours"}});
    let message =
        precondition_failed(sim.put_if(NSG, ours.clone(), &Precondition::if_match(&stale)).await.unwrap_err());
    assert!(message.contains(&stale) && message.contains(&etag(&theirs)), "{message}");
    assert_eq!(sim.calls().last().map(|c| c.status), Some(412), "audited");
    assert_eq!(sim.get(NSG).await.unwrap().unwrap(), theirs, "nothing changed");

    // With the current etag the write goes ahead, and gets a new etag.
    let written = sim.put_if(NSG, ours, &Precondition::if_match(&etag(&theirs))).await.unwrap();
    assert_eq!(written["tags"], json!({"v": "ours"}));
    assert_ne!(etag(&written), etag(&theirs));
}

#[tokio::test]
async fn regression_if_none_match_any_refuses_to_overwrite_an_existing_resource() {
    let sim = sim().await;
    let body = json!({"location": "westeurope"});
    sim.put_if(NSG, body.clone(), &Precondition::if_none_match_any()).await.expect("created: it did not exist");
    precondition_failed(sim.put_if(NSG, body, &Precondition::if_none_match_any()).await.unwrap_err());
}

#[tokio::test]
async fn regression_if_match_on_a_missing_resource_fails() {
    let sim = sim().await;
    let body = json!({"location": "westeurope"});
    precondition_failed(sim.put_if(NSG, body.clone(), &Precondition::if_match("W/\"1\"")).await.unwrap_err());
    precondition_failed(sim.put_if(NSG, body, &Precondition::if_match("*")).await.unwrap_err());
    assert_eq!(sim.get(NSG).await.unwrap(), None);
}

#[tokio::test]
async fn regression_delete_with_a_stale_if_match_is_refused() {
    let sim = sim().await;
    let stale = etag(&sim.put(NSG, json!({"location": "westeurope"})).await.unwrap());
    let current = etag(&sim.put(NSG, json!({"location": "westeurope", "tags": {"a": "b"}})).await.unwrap());
    precondition_failed(sim.delete_if(NSG, &Precondition::if_match(&stale)).await.unwrap_err());
    assert!(sim.get(NSG).await.unwrap().is_some());
    sim.delete_if(NSG, &Precondition::if_match(&current)).await.unwrap();
    assert_eq!(sim.get(NSG).await.unwrap(), None);
}

#[tokio::test]
async fn regression_if_match_star_and_etags_on_a_resource_without_one() {
    let sim = sim().await;
    let current = etag(&sim.put(NSG, json!({"location": "westeurope"})).await.unwrap());
    let body = json!({"location": "westeurope"});
    sim.put_if(NSG, body.clone(), &Precondition::if_match("*")).await.expect("`*` matches an existing resource");
    // A resource group has no etag: only `*` matches it.
    precondition_failed(sim.put_if(RG, body.clone(), &Precondition::if_match(&current)).await.unwrap_err());
    sim.put_if(RG, body, &Precondition::if_match("*")).await.expect("`*` matches the resource group");
    // A resource group's delete (a long-running operation) checks If-Match too.
    precondition_failed(sim.delete_if(RG, &Precondition::if_match(&current)).await.unwrap_err());
    assert!(sim.get(RG).await.unwrap().is_some(), "the resource group stays");
}
