//! What every [`StateStore`] backend must do, as checks on a fresh, empty store: the sled tests run
//! them on a state dir, the PostgreSQL tests on a database.

use trellis_state::{
    Acquired, ExportedWorkspace, Imported, Kind, LockInfo, Ownership, ProviderState, StateError, StateStore,
    StoredResource, Workspace,
};

pub const SHOOT: &str = "shoot--dev--alpha";

pub fn workspace_with_one_resource() -> Workspace {
    let mut ws = Workspace::new(SHOOT);
    ws.resources.insert(
        "azure.resource_group.shoot--dev--alpha.main".to_string(),
        StoredResource {
            kind: Kind::new("resource_group"),
            id: "/subscriptions/s/resourceGroups/shoot--dev--alpha".to_string(),
            ownership: Ownership::Managed,
        },
    );
    ws.provider_state = Some(ProviderState {
        provider: "azure".to_string(),
        version: 2,
        data: serde_json::json!({"last_applied": {"networks": {"vnet": {"cidr": "10.250.0.0/16"}}}, "migrated_zone": 1}),
    });
    ws
}

/// Commits increment the serial, are read back as written, and are listed with their history.
pub fn commit_increments_serial(store: &dyn StateStore) -> Workspace {
    let mut ws = workspace_with_one_resource();
    assert_eq!(store.load(SHOOT).unwrap(), None);
    store.commit(&mut ws, "apply").unwrap();
    assert_eq!(ws.serial, 1);
    ws.outputs = Some(serde_json::json!({"egress_cidrs": ["20.1.2.3/32"]}));
    store.commit(&mut ws, "apply").unwrap();
    assert_eq!(ws.serial, 2);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()));
    let history = store.history(SHOOT).unwrap();
    assert_eq!(history.iter().map(|h| h.serial).collect::<Vec<_>>(), vec![1, 2]);
    assert!(history.iter().all(|h| h.operation == "apply" && h.resources == 1));
    assert_eq!(history[0].previous, None);
    assert_eq!(history[1].previous, history[0].checksum, "each entry names the version it replaced");
    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].shoot.as_str(), list[0].serial, list[0].resources), (SHOOT, 2, 1));
    assert_eq!(list[0].lineage, ws.lineage);
    assert_eq!(list[0].locked_by, None);
    ws
}

/// `list` is sorted by shoot; a shoot whose name is a prefix of another's keeps its own history.
pub fn list_is_sorted_and_histories_do_not_mix(store: &dyn StateStore) {
    for shoot in ["shoot--a--b-c", "shoot--a--b", "shoot--a--B"] {
        let mut ws = Workspace::new(shoot);
        store.commit(&mut ws, "apply").unwrap();
    }
    let mut ws = store.load("shoot--a--b").unwrap().unwrap();
    store.commit(&mut ws, "destroy").unwrap();
    let shoots: Vec<_> = store.list().unwrap().into_iter().map(|s| s.shoot).collect();
    assert_eq!(shoots, vec!["shoot--a--B", "shoot--a--b", "shoot--a--b-c"], "byte order, whatever the collation");
    let ops: Vec<_> = store.history("shoot--a--b").unwrap().into_iter().map(|h| h.operation).collect();
    assert_eq!(ops, vec!["apply", "destroy"]);
    assert_eq!(store.history("shoot--a--b-c").unwrap().len(), 1);
    assert!(store.history("shoot--never").unwrap().is_empty());
}

/// A commit made against a serial that moved, another lineage, or a serial never stored is a
/// conflict, and writes nothing.
pub fn stale_commits_are_refused(store: &dyn StateStore) {
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();
    let mut first = store.load(SHOOT).unwrap().unwrap();
    let mut second = first.clone();
    first.outputs = Some(serde_json::json!({"by": "first"}));
    second.outputs = Some(serde_json::json!({"by": "second"}));
    store.commit(&mut first, "apply").unwrap();
    let err = store.commit(&mut second, "apply").unwrap_err();
    assert!(matches!(&err, StateError::Conflict { shoot, .. } if shoot == SHOOT), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("serial is 2") && msg.contains("serial 1"), "{msg}");
    assert!(msg.contains("re-run `trellis plan`"), "{msg}");
    assert_eq!(second.serial, 1, "a refused commit leaves the caller's serial alone");

    let mut other = Workspace::new(SHOOT);
    other.serial = first.serial;
    let err = store.commit(&mut other, "apply").unwrap_err();
    assert!(matches!(&err, StateError::Conflict { .. }), "{err:?}");
    assert!(err.to_string().contains(&first.lineage), "{err}");
    let mut fresh = Workspace::new(SHOOT);
    assert!(matches!(store.commit(&mut fresh, "apply"), Err(StateError::Conflict { .. })));

    let mut never = Workspace::new("shoot--dev--never");
    never.serial = 3;
    assert!(matches!(store.commit(&mut never, "apply"), Err(StateError::Conflict { .. })));
    assert_eq!(store.load("shoot--dev--never").unwrap(), None);
    assert!(store.history("shoot--dev--never").unwrap().is_empty());

    assert_eq!(store.load(SHOOT).unwrap(), Some(first));
    assert_eq!(store.history(SHOOT).unwrap().len(), 2);
}

/// A held lock is refused naming its holder; the same lock id again is fine; unlock needs the id,
/// force_unlock does not.
pub fn locks(store: &dyn StateStore) {
    let apply = LockInfo::here("apply");
    assert_eq!(store.lock(SHOOT, &apply).unwrap(), Acquired::Fresh);
    assert_eq!(store.lock(SHOOT, &apply).unwrap(), Acquired::Fresh);
    let err = store.lock(SHOOT, &LockInfo::here("plan")).unwrap_err();
    assert!(matches!(&err, StateError::Locked { shoot, holder, .. } if shoot == SHOOT && *holder == apply), "{err:?}");
    let msg = err.to_string();
    for part in [format!("pid {}", apply.pid), format!("@{}", apply.host), "apply by".to_string()] {
        assert!(msg.contains(&part), "{msg:?} should contain {part:?}");
    }
    assert_eq!(store.lock_holder(SHOOT).unwrap(), Some(apply.clone()));
    // A shoot that is locked but was never committed is listed with its holder.
    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].serial, list[0].locked_by.as_ref()), (0, Some(&apply)));

    let err = store.unlock(SHOOT, "not-the-lock-id").unwrap_err();
    assert!(matches!(&err, StateError::Locked { holder, .. } if *holder == apply), "{err:?}");
    store.unlock(SHOOT, &apply.id).unwrap();
    assert_eq!(store.lock_holder(SHOOT).unwrap(), None);
    store.unlock(SHOOT, &apply.id).unwrap();

    let plan = LockInfo::here("plan");
    assert_eq!(store.lock(SHOOT, &plan).unwrap(), Acquired::Fresh);
    assert_eq!(store.force_unlock(SHOOT).unwrap(), Some(plan));
    assert_eq!(store.lock_holder(SHOOT).unwrap(), None);
    assert_eq!(store.force_unlock(SHOOT).unwrap(), None);
    let again = LockInfo::here("apply");
    assert_eq!(store.lock(SHOOT, &again).unwrap(), Acquired::Fresh);
    store.unlock(SHOOT, &again.id).unwrap();
}

/// `push` refuses another lineage and an older serial unless forced, and stores the workspace at a
/// serial above both.
pub fn push(store: &dyn StateStore) {
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();
    store.commit(&mut ws, "apply").unwrap();
    let mut old = ws.clone();
    old.serial = 1;
    assert!(matches!(store.push(&old, false), Err(StateError::PushRefused { .. })));
    let other = Workspace::new(SHOOT);
    assert!(matches!(store.push(&other, false), Err(StateError::PushRefused { .. })));
    let mut restored = ws.clone();
    restored.outputs = Some(serde_json::json!({"restored": true}));
    assert_eq!(store.push(&restored, false).unwrap(), 3);
    let stored = store.load(SHOOT).unwrap().unwrap();
    assert_eq!((stored.serial, stored.outputs.clone()), (3, restored.outputs.clone()));
    assert_eq!(store.push(&old, true).unwrap(), 4);
    let history = store.history(SHOOT).unwrap();
    assert_eq!(history.last().map(|h| (h.serial, h.operation.as_str())), Some((4, "push")));
    assert_eq!(store.push(&Workspace::new("shoot--dev--new"), false).unwrap(), 1);
}

/// `remove` forgets the workspace when it is the version named, keeps its history under its removed name
/// (the removal's entry last), refuses a stale version, and the shoot starts again from nothing; `push`
/// of the removed version restores it.
pub fn remove(store: &dyn StateStore) {
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();
    store.commit(&mut ws, "apply").unwrap();
    assert!(matches!(store.remove(SHOOT, &ws.lineage, 1), Err(StateError::Conflict { .. })));
    assert!(matches!(store.remove(SHOOT, "another-lineage", 2), Err(StateError::Conflict { .. })));
    let name = store.remove(SHOOT, &ws.lineage, 2).unwrap();
    assert_eq!(name, trellis_state::removed_name(SHOOT, &ws.lineage, 2));
    assert_eq!(store.load(SHOOT).unwrap(), None);
    assert!(store.list().unwrap().iter().all(|w| w.shoot != SHOOT));
    assert!(store.history(SHOOT).unwrap().is_empty());
    let kept: Vec<(u64, String)> = store.history(&name).unwrap().into_iter().map(|e| (e.serial, e.operation)).collect();
    assert_eq!(kept, [(1, "apply".to_string()), (2, "apply".to_string()), (3, "state rm".to_string())]);
    assert!(matches!(store.remove(SHOOT, &ws.lineage, 2), Err(StateError::Conflict { .. })));
    // Started again from nothing, then removed at the same serial: its own name (another lineage).
    let mut again = Workspace::new(SHOOT);
    store.commit(&mut again, "apply").unwrap();
    store.commit(&mut again, "apply").unwrap();
    assert_eq!(store.history(SHOOT).unwrap().len(), 2);
    let second = store.remove(SHOOT, &again.lineage, 2).unwrap();
    assert_ne!(second, name);
    // The removed version pushed back.
    assert_eq!(store.push(&ws, false).unwrap(), 3);
    assert_eq!(store.load(SHOOT).unwrap().unwrap().resources, ws.resources);
}

/// `export` gives the workspace and its history; `import` creates what is missing, accepts the same
/// lineage and serial again, and refuses anything else.
pub fn export_import(store: &dyn StateStore, into: &dyn StateStore) {
    assert_eq!(store.export(SHOOT).unwrap(), None);
    let ws = commit_increments_serial(store);
    let exported = store.export(SHOOT).unwrap().unwrap();
    assert_eq!(exported.workspace, ws);
    assert_eq!(exported.history, store.history(SHOOT).unwrap());
    assert_eq!(into.import(&exported).unwrap(), Imported::Created);
    assert_eq!(into.export(SHOOT).unwrap(), Some(exported.clone()));
    assert_eq!(into.import(&exported).unwrap(), Imported::AlreadyThere);
    // The imported workspace goes on from where it was.
    let mut next = into.load(SHOOT).unwrap().unwrap();
    into.commit(&mut next, "apply").unwrap();
    assert_eq!(next.serial, 3);
    let err = into.import(&exported).unwrap_err();
    assert!(matches!(&err, StateError::PushRefused { shoot, .. } if shoot == SHOOT), "{err:?}");
    assert!(err.to_string().contains("serial 3"), "{err}");
    let other = ExportedWorkspace { workspace: Workspace::new(SHOOT), history: Vec::new() };
    assert!(matches!(into.import(&other), Err(StateError::PushRefused { .. })));
}
