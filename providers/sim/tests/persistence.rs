//! The simulated cloud survives a reopen of its sled tree.

use serde_json::json;
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_sim::{ArmSim, Origin, WorldFile, DEFAULT_SUBSCRIPTION};

const SUB: &str = "6d3a9c1e-0000-4000-8000-0000000000aa";
const RG: &str = "/subscriptions/6d3a9c1e-0000-4000-8000-0000000000aa/resourceGroups/rg";

/// Opens the database. sled's background threads keep the file lock for a moment after a `Db` is
/// dropped, so a reopen in the same process waits for it (a separate `trellis` run never has to).
fn open_db(path: &std::path::Path) -> sled::Db {
    for _ in 0..100 {
        match sled::open(path) {
            Ok(db) => return db,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    sled::open(path).unwrap()
}

#[tokio::test]
async fn writes_and_world_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let subnet = format!("{RG}/providers/Microsoft.Network/virtualNetworks/v/subnets/a");
    let (before, etag) = {
        let db = open_db(dir.path());
        let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
        assert_eq!(sim.subscription(), DEFAULT_SUBSCRIPTION);
        let world = WorldFile::parse(
            "w.yaml",
            &format!("azure:\n  subscriptionId: {SUB}\n  resources:\n    - {{id: {RG}, location: westeurope}}\n"),
        )
        .unwrap();
        sim.sync_world(&world).unwrap();
        sim.put(&format!("{RG}/providers/Microsoft.Network/virtualNetworks/v"), json!({"location": "westeurope"}))
            .await
            .unwrap();
        let created = sim.put(&subnet, json!({"properties": {"addressPrefix": "10.0.0.0/24"}})).await.unwrap();
        sim.delete(&format!("{RG}/providers/Microsoft.Network/routeTables/none")).await.unwrap();
        sim.persist_audit(&db.open_tree("audit").unwrap()).unwrap();
        (sim.snapshot(), created["etag"].clone())
    };
    let db = open_db(dir.path());
    let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
    assert_eq!(sim.subscription(), SUB);
    assert_eq!(sim.snapshot(), before);
    assert_eq!(sim.origin(RG), Some(Origin::World));
    assert_eq!(sim.origin(&subnet), Some(Origin::Api));
    assert!(sim.calls().is_empty(), "the audit log is per ArmSim value");

    // Etags keep counting after a reopen.
    let again = sim.put(&subnet, json!({"properties": {"addressPrefix": "10.0.0.0/24"}})).await.unwrap();
    assert_ne!(again["etag"], etag);
    let audit = db.open_tree("audit").unwrap();
    assert_eq!(audit.len(), 3);
    sim.persist_audit(&audit).unwrap();
    assert_eq!(sim.persist_audit(&audit).unwrap(), 0, "only new calls are appended");
    let last: trellis_planner::cloud::Call =
        serde_json::from_slice(&audit.iter().values().next_back().unwrap().unwrap()).unwrap();
    assert_eq!((last.method.as_str(), last.status), ("PUT", 200));
    assert_eq!(audit.len(), 4);

    // A subscription given at open wins and is stored.
    drop(sim);
    let sim = ArmSim::open(db.open_tree("sim").unwrap(), Some("other".into())).unwrap();
    assert_eq!(sim.subscription(), "other");
    assert!(sim.get(RG).await.unwrap().is_some());
}

#[tokio::test]
async fn regression_public_ip_addresses_are_not_handed_out_again_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let pip = format!("{RG}/providers/Microsoft.Network/publicIPAddresses/egress");
    let body = json!({"location": "westeurope", "sku": {"name": "Standard"}});
    let first = {
        let db = open_db(dir.path());
        let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
        sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
        let created = sim.put(&pip, body.clone()).await.unwrap();
        sim.delete(&pip).await.unwrap();
        created["properties"]["ipAddress"].clone()
    };
    let db = open_db(dir.path());
    let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
    let again = sim.put(&pip, body).await.unwrap();
    assert!(again["properties"]["ipAddress"].is_string());
    assert_ne!(again["properties"]["ipAddress"], first, "a re-created public IP gets a new address");
}

/// A write through a simulated cloud whose flush is shared with the database's owner (trellis' state)
/// returns only after that flush ran, and a failed flush is the write's 500; reads flush nothing.
#[tokio::test]
async fn regression_writes_are_made_durable_by_the_shared_flush_before_they_return() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path());
    let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
    let flushes = Arc::new(AtomicUsize::new(0));
    let failing = Arc::new(AtomicBool::new(false));
    let (counted, fails, owner) = (flushes.clone(), failing.clone(), db.clone());
    sim.share_flush(Arc::new(move || {
        if fails.load(Ordering::SeqCst) {
            return Err("disk full".to_string());
        }
        owner.flush().map_err(|e| e.to_string())?;
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }));
    let rg = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";
    sim.put(rg, json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(flushes.load(Ordering::SeqCst), 1, "flushed before the write returned");
    sim.get(rg).await.unwrap();
    assert_eq!(flushes.load(Ordering::SeqCst), 1, "a read flushes nothing");
    failing.store(true, Ordering::SeqCst);
    let err =
        sim.put(&format!("{rg}/providers/Microsoft.Network/routeTables/rt"), json!({"location": "westeurope"})).await;
    let msg = format!("{:?}", err.expect_err("a write that could not be made durable fails"));
    assert!(msg.contains("could not persist the change") && msg.contains("disk full"), "{msg}");
}
