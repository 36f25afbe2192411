//! The simulated GCE cloud survives a reopen of its sled tree (the state dir's `sim/gce`).

use serde_json::json;
use trellis_planner::cloud::{CloudRead, CloudWrite, Precondition};
use trellis_sim::{AuditFile, GceSim, Origin, Quotas, WorldFile};

/// Opens the database (sled keeps its file lock for a moment after a drop; see persistence.rs).
fn open_db(path: &std::path::Path) -> sled::Db {
    for _ in 0..100 {
        match sled::open(path) {
            Ok(db) => return db,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    sled::open(path).unwrap()
}

const VPC: &str = "projects/p/global/networks/my-vpc";
const ROUTER: &str = "projects/p/regions/europe-west1/routers/rtr";
const NAT: &str = "projects/p/regions/europe-west1/routers/rtr/nats/nat";
const FW: &str = "projects/p/global/firewalls/fw";

#[tokio::test]
async fn regression_gce_simulator_state_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (before, calls_before) = {
        let db = open_db(dir.path());
        let sim = GceSim::open(db.open_tree("sim/gce").unwrap()).unwrap();
        let world = WorldFile::parse(
            "w.yaml",
            &format!("gce:\n  quotas: {{routesPerNetwork: 7}}\n  resources:\n    - {{selfLink: {VPC}, autoCreateSubnetworks: false}}\n"),
        )
        .unwrap();
        sim.sync_world(&world).unwrap();
        sim.create(ROUTER, json!({"network": VPC})).await.unwrap();
        sim.create(NAT, json!({"natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"})).await.unwrap();
        sim.create(FW, json!({"network": VPC, "sourceRanges": ["10.0.0.0/8"], "allowed": [{"IPProtocol": "tcp"}]}))
            .await
            .unwrap();
        sim.remove(FW, &Precondition::None).await.unwrap();
        (sim.snapshot(), sim.calls().len())
        // No explicit flush or close: every call returned only after its write was durable.
    };
    assert!(calls_before > 0);
    let db = open_db(dir.path());
    let sim = GceSim::open(db.open_tree("sim/gce").unwrap()).unwrap();
    assert_eq!(sim.snapshot(), before, "the same resources, ids, fingerprints and timestamps");
    assert_eq!(sim.origin(VPC), Some(Origin::World));
    assert_eq!(sim.origin(ROUTER), Some(Origin::Api));
    assert_eq!(sim.get(NAT).await.unwrap().unwrap()["name"], "nat");
    assert_eq!(sim.get(FW).await.unwrap(), None, "the delete was kept too");
    assert_eq!(sim.quotas(), Quotas { routes_per_network: 7, ..Quotas::default() });
    // The clock went on: a new resource gets a new id, and the old ones keep theirs.
    let again = sim
        .create(FW, json!({"network": VPC, "sourceRanges": ["10.0.0.0/8"], "allowed": [{"IPProtocol": "tcp"}]}))
        .await
        .unwrap();
    let router = sim.get_now(ROUTER).unwrap();
    assert_ne!(again["id"], router["id"]);
    assert_ne!(again["creationTimestamp"], router["creationTimestamp"]);
    // A world re-sync that keeps the VPC leaves it as it was (declared bodies were kept).
    let world = WorldFile::parse(
        "w.yaml",
        &format!("gce:\n  resources:\n    - {{selfLink: {VPC}, autoCreateSubnetworks: false}}\n"),
    )
    .unwrap();
    let report = sim.sync_world(&world).unwrap();
    assert!(report.added.is_empty() && report.updated.is_empty() && report.removed.is_empty(), "{report:?}");
}

/// A damaged stored entry is found when the cloud is first used, not at open (opening reads the
/// counters only, so a command that never calls GCE never reads the rest): that call and every call
/// after it answer 500 naming the key, and nothing is written meanwhile.
#[tokio::test]
async fn regression_a_damaged_gce_simulator_entry_is_refused_naming_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path());
    let tree = db.open_tree("sim/gce").unwrap();
    {
        let sim = GceSim::open(tree.clone()).unwrap();
        sim.set_quotas(Quotas { routes_per_network: 7, firewalls_per_project: 9 }).unwrap();
    }
    tree.insert("e projects/p/global/networks/broken", b"{not json".to_vec()).unwrap();
    let stored = tree.len();

    let sim = GceSim::open(tree.clone()).expect("opening reads the counters only");
    sim.set_faults(Default::default());
    assert_eq!(sim.quotas(), Quotas { routes_per_network: 7, firewalls_per_project: 9 }, "read at open");
    assert!(sim.calls().is_empty());
    for _ in 0..2 {
        let err = sim.get(VPC).await.unwrap_err().to_string();
        assert!(err.contains("projects/p/global/networks/broken") && err.contains("500"), "{err}");
    }
    let err = sim.create(FW, json!({"network": VPC})).await.unwrap_err().to_string();
    assert!(err.contains("projects/p/global/networks/broken"), "{err}");
    assert_eq!(tree.len(), stored, "nothing is written over a store that could not be read");
}

/// The GCE audit log outlives the process as ARM's does (`Session::close` appends it to the state
/// dir's `audit/gce.jsonl`): calls are appended once, in order, and a reopened simulator adds its
/// own after them.
#[tokio::test]
async fn regression_gce_audit_log_is_kept_in_a_file_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let file = || AuditFile::new(dir.path().join("audit/gce.jsonl"), None);
    {
        let db = open_db(dir.path());
        let sim = GceSim::open(db.open_tree("sim/gce").unwrap()).unwrap();
        sim.create(VPC, json!({"autoCreateSubnetworks": false})).await.unwrap();
        sim.get(VPC).await.unwrap();
        let made = sim.calls().len();
        assert!(made >= 2, "{:?}", sim.calls());
        assert_eq!(sim.persist_audit(&file()).unwrap(), made);
        assert_eq!(sim.persist_audit(&file()).unwrap(), 0, "only new calls are appended");
    }
    let db = open_db(dir.path());
    let sim = GceSim::open(db.open_tree("sim/gce").unwrap()).unwrap();
    sim.remove(VPC, &Precondition::None).await.unwrap();
    assert_eq!(sim.persist_audit(&file()).unwrap(), sim.calls().len());
    let calls = file().read().unwrap();
    assert_eq!(calls.first().map(|c| c.method.as_str()), Some("POST"), "{calls:?}");
    assert_eq!(calls.last().map(|c| (c.method.as_str(), c.target.as_str())), Some(("DELETE", VPC)), "{calls:?}");
}

/// The operations of earlier sessions (one a write: they only grow) are read when an operation is
/// first asked for, not with the resources: a damaged stored operation fails reads of operations,
/// naming its key, while the resources stay usable — and a plan, which never asks for operations,
/// never reads them.
#[tokio::test]
async fn regression_operations_of_earlier_sessions_are_read_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path());
    let tree = db.open_tree("sim/gce").unwrap();
    let ops = "projects/p/global/operations";
    let first = {
        let sim = GceSim::open(tree.clone()).unwrap();
        sim.create(VPC, json!({"autoCreateSubnetworks": false})).await.unwrap();
        let page = sim.list_page(ops, &Default::default()).await.unwrap();
        let link = page["items"][0]["selfLink"].as_str().expect("the VPC's insert operation").to_string();
        link[link.find("projects/").unwrap()..].to_string()
    };
    tree.insert(format!("o {ops}/broken"), b"{not json".to_vec()).unwrap();

    let sim = GceSim::open(tree.clone()).unwrap();
    assert!(sim.get(VPC).await.unwrap().is_some(), "the resources read without the operations");
    sim.create(FW, json!({"network": VPC, "allowed": [{"IPProtocol": "icmp"}]})).await.expect("and written");
    for _ in 0..2 {
        let err = sim.get(&first).await.unwrap_err().to_string();
        assert!(err.contains(&format!("o {ops}/broken")) && err.contains("500"), "{err}");
    }
    let err = sim.list_page(ops, &Default::default()).await.unwrap_err().to_string();
    assert!(err.contains(&format!("o {ops}/broken")), "{err}");

    tree.remove(format!("o {ops}/broken")).unwrap();
    let op = sim.get(&first).await.unwrap().expect("the earlier session's operation");
    assert_eq!(op["operationType"], "insert", "{op}");
    let listed = sim.list_page(ops, &Default::default()).await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2, "the earlier session's and this one's: {listed}");
}
