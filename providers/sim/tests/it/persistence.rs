//! The simulated cloud survives a reopen of its sled tree.

use serde_json::json;
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_sim::{ArmSim, AuditFile, Origin, WorldFile, DEFAULT_SUBSCRIPTION};

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
    let audit = || AuditFile::new(dir.path().join("audit/azure.jsonl"), None);
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
        sim.persist_audit(&audit()).unwrap();
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
    assert_eq!(audit().read().unwrap().len(), 3);
    sim.persist_audit(&audit()).unwrap();
    assert_eq!(sim.persist_audit(&audit()).unwrap(), 0, "only new calls are appended");
    let calls = audit().read().unwrap();
    let last = calls.last().unwrap();
    assert_eq!((last.method.as_str(), last.status), ("PUT", 200));
    assert_eq!(calls.len(), 4);

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

/// A simulated cloud that leaves its flushes to the database's owner (trellis' state): a write returns
/// without flushing — the owner's next flush (the node's state commit) makes it durable — so a fleet's
/// thousands of writes cost no flush of their own; the owner's flush brings every write made before it
/// to disk; commits outside calls still run the owner's flush.
#[tokio::test]
async fn writes_left_to_the_owner_return_without_a_flush_and_the_owners_flush_makes_them_durable() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path());
    let flushes = Arc::new(AtomicUsize::new(0));
    {
        let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
        let (counted, owner) = (flushes.clone(), db.clone());
        let deferred = sim
            .leave_flushes_to_owner(Arc::new(move || {
                owner.flush().map_err(|e| e.to_string())?;
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }))
            .unwrap();
        for n in 0..3 {
            sim.put(&format!("{RG}-{n}"), json!({"location": "westeurope"})).await.unwrap();
        }
        assert_eq!(flushes.load(Ordering::SeqCst), 0, "no write waited for a flush");
        // The owner's flush (a state commit) writes and covers every write made before it.
        deferred.write().unwrap();
        db.flush().unwrap();
    }
    drop(db);
    let db = open_db(dir.path());
    let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
    for n in 0..3 {
        assert!(sim.get(&format!("{RG}-{n}")).await.unwrap().is_some(), "write {n} is durable");
    }
}

/// A cloud that leaves its flushes to the database's owner writes nothing to its tree per call: its
/// writes wait, in memory, for the owner's next flush, which writes them in one batch (issue #8: one
/// sled batch per cloud write was two log writes to the device each). Meanwhile every read sees
/// them — resources, child arrays (prefix scans), back-references and in-use checks (the reverse
/// index) —; a kill before the owner's write loses them (and the owner acknowledged nothing that
/// depends on them); after it they survive a reopen.
#[tokio::test]
async fn regression_writes_left_to_the_owner_are_read_before_and_durable_after_its_write() {
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path());
    let tree = db.open_tree("sim").unwrap();
    let (sim, deferred) = {
        let sim = ArmSim::open(tree.clone(), None).unwrap();
        let owner = db.clone();
        let deferred = sim.leave_flushes_to_owner(Arc::new(move || owner.flush().map(drop).map_err(|e| e.to_string())));
        (sim, deferred.unwrap())
    };
    let stored_before = tree.len();
    let app = format!("{RG}-app");
    let shared = format!("{RG}-shared");
    let nsg = format!("{shared}/providers/Microsoft.Network/networkSecurityGroups/nsg");
    let vnet = format!("{app}/providers/Microsoft.Network/virtualNetworks/v");
    let subnet = format!("{vnet}/subnets/a");
    for (id, body) in [
        (app.clone(), json!({"location": "westeurope"})),
        (shared.clone(), json!({"location": "westeurope"})),
        (nsg.clone(), json!({"location": "westeurope"})),
        (
            vnet.clone(),
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
        ),
        (subnet.clone(), json!({"properties": {"addressPrefix": "10.0.1.0/24", "networkSecurityGroup": {"id": nsg}}})),
    ] {
        sim.put(&id, body).await.unwrap();
    }
    assert_eq!(tree.len(), stored_before, "no call wrote to the tree");
    let got = sim.get(&vnet).await.unwrap().expect("the VNet is there");
    assert_eq!(got["properties"]["subnets"][0]["id"], json!(subnet), "{got}");
    assert_nsg_in_use(&sim, &nsg, &subnet).await;

    deferred.write().unwrap();
    assert!(tree.len() > stored_before, "the owner's write stored them");
    deferred.write().unwrap();
    db.flush().unwrap();
    drop((sim, deferred, tree));
    drop(db);
    let db = open_db(dir.path());
    let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
    let got = sim.get(&vnet).await.unwrap().expect("the VNet survived the reopen");
    assert_eq!(got["properties"]["subnets"][0]["id"], json!(subnet), "{got}");
    assert_nsg_in_use(&sim, &nsg, &subnet).await;
}

/// A user VNet's subnet in resource group `app` that uses an NSG in resource group `shared`
/// (references across resource groups), in `tree`.
async fn cross_group_cloud(tree: sled::Tree) -> (String, String) {
    let app = format!("{RG}-app");
    let shared = format!("{RG}-shared");
    let sim = ArmSim::open(tree, None).unwrap();
    sim.put(&app, json!({"location": "westeurope"})).await.unwrap();
    sim.put(&shared, json!({"location": "westeurope"})).await.unwrap();
    let nsg = format!("{shared}/providers/Microsoft.Network/networkSecurityGroups/nsg");
    sim.put(&nsg, json!({"location": "westeurope"})).await.unwrap();
    let vnet = format!("{app}/providers/Microsoft.Network/virtualNetworks/v");
    sim.put(
        &vnet,
        json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
    )
    .await
    .unwrap();
    let subnet = format!("{vnet}/subnets/a");
    sim.put(&subnet, json!({"properties": {"addressPrefix": "10.0.1.0/24", "networkSecurityGroup": {"id": nsg}}}))
        .await
        .unwrap();
    (nsg, subnet)
}

/// What the reopened cloud says about the NSG: its back-reference to the subnet, and its deletion
/// refused while the subnet uses it.
async fn assert_nsg_in_use(sim: &ArmSim, nsg: &str, subnet: &str) {
    let got = sim.get(nsg).await.unwrap().expect("the NSG is there");
    assert_eq!(got["properties"]["subnets"], json!([{"id": subnet}]), "{got}");
    match sim.delete(nsg).await {
        Err(trellis_planner::cloud::CloudError::Rejected { code, .. }) => {
            assert_eq!(code, "InUseNetworkSecurityGroupCannotBeDeleted")
        }
        other => panic!("expected the in-use refusal, got {other:?}"),
    }
}

/// Opening the simulated cloud reads its metadata, not its resources (issue #8: the open of a
/// re-plan cost ~0.5 s for 70,000 resources): a damaged resource is found by the call that reads it,
/// which fails with one line naming its key, while the rest of the cloud answers as before.
#[tokio::test]
async fn regression_opening_the_simulated_cloud_reads_no_resource() {
    let db = sled::Config::new().temporary(true).open().unwrap();
    let tree = db.open_tree("sim").unwrap();
    let other = format!("{RG}-other");
    {
        let sim = ArmSim::open(tree.clone(), None).unwrap();
        sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
        sim.put(&other, json!({"location": "westeurope"})).await.unwrap();
    }
    let key = other.to_ascii_lowercase();
    tree.insert(key.as_bytes(), &b"{not json"[..]).unwrap();

    let sim = ArmSim::open(tree, None).expect("the open reads no resource");
    assert!(sim.get(RG).await.unwrap().is_some(), "the rest of the cloud answers");
    match sim.get(&other).await {
        Err(trellis_planner::cloud::CloudError::Server { status, message, .. }) => {
            assert_eq!(status, 500);
            assert!(message.contains(&format!("damaged at key {key}")), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
        other => panic!("expected a 500 naming the damaged key, got {other:?}"),
    }
    assert!(sim.get(RG).await.unwrap().is_some(), "the damage fails only the call that read it");
}

/// Back-references and in-use checks read the reverse index kept in the tree: after a reopen they
/// hold across resource groups, before anything else was read.
#[tokio::test]
async fn references_across_resource_groups_hold_after_a_reopen() {
    let db = sled::Config::new().temporary(true).open().unwrap();
    let tree = db.open_tree("sim").unwrap();
    let (nsg, subnet) = cross_group_cloud(tree.clone()).await;
    let sim = ArmSim::open(tree.clone(), None).unwrap();
    assert_nsg_in_use(&sim, &nsg, &subnet).await;
    // Dropping the reference (the subnet without the NSG) frees it, also after another reopen.
    sim.put(&subnet, json!({"properties": {"addressPrefix": "10.0.1.0/24"}})).await.unwrap();
    drop(sim);
    let sim = ArmSim::open(tree, None).unwrap();
    let got = sim.get(&nsg).await.unwrap().unwrap();
    assert!(got["properties"].get("subnets").is_none(), "{got}");
    sim.delete(&nsg).await.unwrap();
}

/// A simulated cloud written by an earlier trellis has no reverse index, and one written since by
/// such a trellis has an outdated one (its writes tick the clock, not the index): the open rebuilds
/// it from every resource, once.
#[tokio::test]
async fn a_tree_without_a_current_reverse_index_is_indexed_at_open() {
    let db = sled::Config::new().temporary(true).open().unwrap();
    let tree = db.open_tree("sim").unwrap();
    let (nsg, subnet) = cross_group_cloud(tree.clone()).await;
    // As an earlier trellis left it: no `#ref …` keys, no `#refs`.
    let index: Vec<_> = tree.scan_prefix("#ref").keys().map(Result::unwrap).collect();
    assert!(index.len() > 1, "the index is kept in the tree");
    for k in index {
        tree.remove(k).unwrap();
    }
    let contents = |tree: &sled::Tree| -> Vec<(Vec<u8>, Vec<u8>)> {
        tree.iter().map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap()).collect()
    };
    let before = contents(&tree);
    let sim = ArmSim::open(tree.clone(), None).unwrap();
    assert_nsg_in_use(&sim, &nsg, &subnet).await;
    assert_eq!(contents(&tree), before, "opening and reading write nothing (a plan leaves the state dir as it was)");
    // The next write stores the index built at open.
    sim.put(&format!("{RG}-more"), json!({"location": "westeurope"})).await.unwrap();
    assert!(tree.scan_prefix("#ref ").count() > 0, "the index is stored with the next write");
    drop(sim);
    let sim = ArmSim::open(tree.clone(), None).unwrap();
    assert_nsg_in_use(&sim, &nsg, &subnet).await;
    drop(sim);

    // An earlier trellis writes a second subnet using the NSG (and ticks the clock), not the index.
    let second = subnet.replace("/subnets/a", "/subnets/b");
    let stored = json!({
        "value": {"id": second, "name": "b", "type": "Microsoft.Network/virtualNetworks/subnets",
                  "properties": {"addressPrefix": "10.0.2.0/24", "networkSecurityGroup": {"id": nsg}}},
        "origin": "api", "seq": 99
    });
    tree.insert(second.to_ascii_lowercase().as_bytes(), serde_json::to_vec(&stored).unwrap()).unwrap();
    let clock: u64 = serde_json::from_slice(&tree.get("#clock").unwrap().unwrap()).unwrap();
    tree.insert("#clock", serde_json::to_vec(&(clock + 1)).unwrap()).unwrap();
    let sim = ArmSim::open(tree, None).unwrap();
    let got = sim.get(&nsg).await.unwrap().unwrap();
    assert_eq!(got["properties"]["subnets"], json!([{"id": subnet}, {"id": second}]), "{got}");
}

/// A write waiting for its flush does not hold up its runtime's worker thread: on the binary's
/// multi-threaded runtime, writes made meanwhile by other tasks reach the flush too and wait for it
/// together (before, each waiting write blocked a worker, so at most as many writes as worker
/// threads — two on a 2-core machine — could ever share a flush, and the other tasks could not run).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn regression_writes_waiting_for_their_flush_leave_the_worker_thread_to_other_writes() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let db = sled::Config::new().temporary(true).open().unwrap();
    let sim = ArmSim::open(db.open_tree("sim").unwrap(), None).unwrap();
    let (inside, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (i, m, flush_db) = (Arc::clone(&inside), Arc::clone(&most), db.clone());
    sim.share_flush(Arc::new(move || {
        let now = i.fetch_add(1, Ordering::SeqCst) + 1;
        m.fetch_max(now, Ordering::SeqCst);
        // A slow disk: long enough for the other writes to arrive while this one waits.
        std::thread::sleep(std::time::Duration::from_millis(300));
        i.fetch_sub(1, Ordering::SeqCst);
        flush_db.flush().map(drop).map_err(|e| e.to_string())
    }));
    let writes: Vec<_> = (0..4)
        .map(|n| {
            let sim = sim.clone();
            tokio::spawn(async move { sim.put(&format!("{RG}-{n}"), json!({"location": "westeurope"})).await })
        })
        .collect();
    for w in writes {
        w.await.unwrap().unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 4, "the four writes waited for a flush at the same time");
}

/// The ids a LIST answers, in order.
async fn listed(sim: &ArmSim, parent: &str, rtype: &str) -> Vec<String> {
    let items = sim.list(parent, rtype).await.unwrap();
    items.iter().map(|v| v["id"].as_str().unwrap().to_string()).collect()
}

/// The ids in a GET's collection array (a VNet's `subnets`).
async fn children(sim: &ArmSim, id: &str, property: &str) -> Vec<String> {
    let got = sim.get(id).await.unwrap().unwrap();
    let items = got["properties"][property].as_array().cloned().unwrap_or_default();
    items.iter().map(|v| v["id"].as_str().unwrap().to_string()).collect()
}

/// The simulated cloud keeps its prefix scans of the tree (a plan lists one resource group several
/// times; a VNet's subnets are answered from its resource group's scan) until its set of keys
/// changes: within their lifetime they are never stale — every write, delete, refused write and
/// world sync is seen by the next list and GET, also in sibling resources sharing a name prefix.
#[tokio::test]
async fn kept_prefix_scans_never_answer_what_the_tree_no_longer_holds() {
    let db = sled::Config::new().temporary(true).open().unwrap();
    let tree = db.open_tree("sim").unwrap();
    let net = format!("{RG}/providers/Microsoft.Network");
    let (v, v2) = (format!("{net}/virtualNetworks/v"), format!("{net}/virtualNetworks/v2"));
    let (rt1, rt2) = (format!("{net}/routeTables/rt1"), format!("{net}/routeTables/rt2"));
    let space = json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}});
    {
        let sim = ArmSim::open(tree.clone(), None).unwrap();
        sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
        sim.put(&v, space.clone()).await.unwrap();
        sim.put(&v2, space.clone()).await.unwrap();
        sim.put(&format!("{v}/subnets/a"), json!({"properties": {"addressPrefix": "10.0.1.0/24"}})).await.unwrap();
        sim.put(&format!("{v2}/subnets/z"), json!({"properties": {"addressPrefix": "10.0.9.0/24"}})).await.unwrap();
        sim.put(&rt1, json!({"location": "westeurope"})).await.unwrap();
    }
    // Reopened: nothing is read yet, every answer below comes from the tree and the kept scans.
    let sim = ArmSim::open(tree, None).unwrap();
    let route_tables = "Microsoft.Network/routeTables";
    let subnets = "Microsoft.Network/virtualNetworks/subnets";
    assert_eq!(listed(&sim, RG, route_tables).await, vec![rt1.clone()]);
    assert_eq!(listed(&sim, &v, subnets).await, vec![format!("{v}/subnets/a")], "v2's subnet is not v's");
    assert_eq!(children(&sim, &v, "subnets").await, vec![format!("{v}/subnets/a")]);

    sim.put(&rt2, json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(listed(&sim, RG, route_tables).await, vec![rt1.clone(), rt2.clone()], "a create is listed");
    sim.put(&format!("{v}/subnets/b"), json!({"properties": {"addressPrefix": "10.0.2.0/24"}})).await.unwrap();
    let both = vec![format!("{v}/subnets/a"), format!("{v}/subnets/b")];
    assert_eq!(listed(&sim, &v, subnets).await, both);
    assert_eq!(children(&sim, &v, "subnets").await, both, "a GET's child array sees the new child");

    sim.delete(&rt1).await.unwrap();
    assert_eq!(listed(&sim, RG, route_tables).await, vec![rt2.clone()], "a delete is not listed");
    // A refused write (a subnet outside the VNet's address space) changes nothing.
    let refused = sim.put(&format!("{v}/subnets/c"), json!({"properties": {"addressPrefix": "192.168.0.0/24"}})).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(listed(&sim, &v, subnets).await, both);

    // The whole cloud listed (a world sync reads every resource), then one VNet deleted by ARM.
    let world = WorldFile::parse(
        "w.yaml",
        &format!("azure:\n  subscriptionId: {SUB}\n  resources:\n    - {{id: {RG}, location: westeurope}}\n"),
    )
    .unwrap();
    sim.sync_world(&world).unwrap();
    sim.delete(&v2).await.unwrap();
    assert!(sim.get(&v2).await.unwrap().is_none());
    assert!(sim.get(&format!("{v2}/subnets/z")).await.unwrap().is_none(), "its subnet went with it");
    assert_eq!(children(&sim, &v, "subnets").await, both);
    let snapshot: Vec<String> = sim.snapshot().iter().map(|v| v["id"].as_str().unwrap().to_string()).collect();
    assert!(!snapshot.iter().any(|id| id.contains("virtualNetworks/v2")), "{snapshot:?}");
}
