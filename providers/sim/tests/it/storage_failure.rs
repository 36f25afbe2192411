//! One storage-failure policy for every simulated cloud (`core::sim`): a write that cannot be made
//! durable is the cloud's 500 naming why — never a success, never a timeout that may have applied.

use serde_json::json;
use std::sync::Arc;
use trellis_planner::cloud::{CloudError, CloudWrite};
use trellis_sim::{ArmSim, DnsSim, Fault, Faults, GceSim, SharedFlush, WorldFile};

fn failing_flush() -> SharedFlush {
    Arc::new(|| Err("disk full".to_string()))
}

fn tree(db: &sled::Db, name: &str) -> sled::Tree {
    db.open_tree(name).unwrap()
}

/// The cloud's 500 naming the storage failure, with its server error code.
fn assert_storage_failure(err: CloudError, code: &str) {
    match err {
        CloudError::Server { status: 500, message, .. } => {
            assert!(message.starts_with(&format!("{code}: ")), "{message}");
            assert!(message.contains("could not persist the change") && message.contains("disk full"), "{message}");
        }
        other => panic!("expected the cloud's 500, got {other:?}"),
    }
}

#[tokio::test]
async fn every_simulated_cloud_answers_a_failed_flush_with_its_500() {
    let db = sled::Config::new().temporary(true).open().unwrap();

    let arm = ArmSim::open(tree(&db, "sim/azure"), None).unwrap();
    arm.share_flush(failing_flush());
    let rg = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";
    assert_storage_failure(arm.create(rg, json!({"location": "westeurope"})).await.unwrap_err(), "InternalServerError");

    let gce = GceSim::open(tree(&db, "sim/gce")).unwrap();
    gce.share_flush(failing_flush());
    let vpc = "projects/p/global/networks/vpc";
    assert_storage_failure(
        gce.create(vpc, json!({"autoCreateSubnetworks": false})).await.unwrap_err(),
        "internalError",
    );

    let dns = DnsSim::open(tree(&db, "sim/dns")).unwrap();
    dns.sync_world(&WorldFile::parse("w.yaml", "dns:\n  zones:\n    - name: example.com\n").unwrap()).unwrap();
    dns.share_flush(failing_flush());
    let id = "/seeds/s/namespaces/shoot--dev--a/dnsrecords/a-external";
    let body = json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "DNSRecord",
        "metadata": {"name": "a-external", "namespace": "shoot--dev--a"},
        "spec": {"type": "aws-route53", "name": "api.a.example.com", "recordType": "A", "values": ["10.0.0.1"]},
    });
    assert_storage_failure(dns.create(id, body).await.unwrap_err(), "InternalError");
    let set = "/dns/zones/example.com/records/api.a.example.com/A";
    let body = json!({"name": "api.a.example.com", "type": "A", "ttl": 120, "values": ["10.0.0.1"]});
    assert_storage_failure(dns.create(set, body).await.unwrap_err(), "InternalError");
}

/// A write applied under an injected "timeout after apply" whose storage fails answers the storage
/// failure, not the timeout (which would let the caller think the write may have succeeded).
#[tokio::test]
async fn a_storage_failure_wins_over_an_injected_timeout() {
    let db = sled::Config::new().temporary(true).open().unwrap();
    let arm =
        ArmSim::open(tree(&db, "sim/azure"), None).unwrap().with_faults(Faults::fail_call(1, Fault::TimeoutAfterApply));
    arm.share_flush(failing_flush());
    let rg = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";
    assert_storage_failure(arm.create(rg, json!({"location": "westeurope"})).await.unwrap_err(), "InternalServerError");
}
