//! `trellis state migrate` at the store level: sled -> PostgreSQL -> sled keeps every workspace's
//! lineage, serial, content and history entry for entry; re-running it changes nothing; the sled
//! backend's export and import behave as the PostgreSQL backend's do.

use crate::common;

use common::behaviour::workspace_with_one_resource;
use common::{connect, database};
use trellis_state::{migrate, Imported, MigrateReport, SledStore, StateError, StateStore, Workspace};

/// A sled store with three shoots: several commits each, a push, and a lock without a workspace.
fn fleet(store: &SledStore) {
    for (i, shoot) in ["shoot--p--a", "shoot--p--b", "shoot--q--a"].iter().enumerate() {
        let mut ws = Workspace { shoot: shoot.to_string(), ..workspace_with_one_resource() };
        ws.lineage = Workspace::new(shoot).lineage;
        for n in 0..=i {
            ws.outputs = Some(serde_json::json!({"n": n}));
            store.commit(&mut ws, "apply").unwrap();
        }
    }
    let mut pushed = store.load("shoot--p--b").unwrap().unwrap();
    pushed.outputs = None;
    store.push(&pushed, false).unwrap();
    store.lock("shoot--z--locked-only", &trellis_state::LockInfo::here("apply")).unwrap();
    // A shoot removed (`state rm`) and committed again: its removed life's history is kept beside it.
    let mut ws = Workspace::new("shoot--r--again");
    store.commit(&mut ws, "apply").unwrap();
    store.commit(&mut ws, "apply").unwrap();
    store.remove(&ws.shoot, &ws.lineage, ws.serial).unwrap();
    let mut ws = Workspace::new("shoot--r--again");
    store.commit(&mut ws, "apply").unwrap();
}

/// Every history of a removed workspace, by name, as JSON entry for entry.
fn removed(store: &dyn StateStore) -> Vec<(String, Vec<String>)> {
    let names = store.removed_histories().unwrap();
    names
        .into_iter()
        .map(|name| {
            let history = store.history(&name).unwrap().iter().map(|h| serde_json::to_string(h).unwrap()).collect();
            (name, history)
        })
        .collect()
}

/// Issue #27's leftovers (s32's note): `state migrate` copied the workspaces with their histories but
/// dropped the histories kept for removed workspaces (`<shoot>.removed-…`): the record of what a
/// `state rm` or a destroy forgot was lost on the way. They are carried now, compared after the copy,
/// and a re-run finds them there.
#[test]
fn regression_migrate_carries_the_histories_of_removed_workspaces() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let source = SledStore::open(a.path(), "test").unwrap();
    fleet(&source);
    let kept = removed(&source);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].0.starts_with("shoot--r--again.removed-2-"), "{kept:?}");
    assert_eq!(kept[0].1.len(), 3, "two commits and the removal");
    let to = SledStore::open(b.path(), "test").unwrap();
    let mut seen = Vec::new();
    let report = migrate(&source, &to, &mut |name, outcome| seen.push((name.to_string(), outcome))).unwrap();
    assert_eq!(report, MigrateReport { created: 4, already_there: 0, removed_histories: 1 });
    assert_eq!(seen.last().unwrap(), &(kept[0].0.clone(), Imported::Created));
    assert_eq!(removed(&to), kept);
    assert_eq!(exports(&to), exports(&source));
    // Kept across the destination's close and open (durable, and no workspace of its own).
    to.close().unwrap();
    let to = SledStore::open(b.path(), "test").unwrap();
    assert_eq!(removed(&to), kept);
    assert!(to.load(&kept[0].0).unwrap().is_none());
    // A re-run finds it there; another history under the same name is refused, naming it.
    let report = migrate(&source, &to, &mut |_, outcome| assert_eq!(outcome, Imported::AlreadyThere)).unwrap();
    assert_eq!(report, MigrateReport { created: 0, already_there: 4, removed_histories: 1 });
    let err = to.import_removed_history(&kept[0].0, &[]).unwrap_err();
    assert!(matches!(&err, StateError::PushRefused { shoot, .. } if *shoot == kept[0].0), "{err:?}");
}

fn exports(store: &dyn StateStore) -> Vec<String> {
    store
        .list()
        .unwrap()
        .into_iter()
        .filter_map(|s| store.export(&s.shoot).unwrap())
        .map(|e| {
            // Byte for byte: the workspace and every history entry as JSON.
            let history: Vec<String> = e.history.iter().map(|h| serde_json::to_string(h).unwrap()).collect();
            format!("{}\n{}", serde_json::to_string(&e.workspace).unwrap(), history.join("\n"))
        })
        .collect()
}

#[test]
fn migrate_sled_to_pg_to_sled_keeps_lineage_serial_and_history_byte_identical() {
    let (_server, url) = database("migrate");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let source = SledStore::open(a.path(), "test").unwrap();
    fleet(&source);
    let pg = connect(&url);
    let mut seen = Vec::new();
    let report = migrate(&source, &pg, &mut |shoot, outcome| seen.push((shoot.to_string(), outcome))).unwrap();
    assert_eq!(report, MigrateReport { created: 4, already_there: 0, removed_histories: 1 });
    let removed_name = removed(&source)[0].0.clone();
    assert_eq!(
        seen.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        ["shoot--p--a", "shoot--p--b", "shoot--q--a", "shoot--r--again", removed_name.as_str()]
    );
    assert!(seen.iter().all(|(_, o)| *o == Imported::Created));
    assert_eq!(exports(&pg), exports(&source));
    assert_eq!(removed(&pg), removed(&source));

    let back = SledStore::open(b.path(), "test").unwrap();
    let report = migrate(&pg, &back, &mut |_, _| {}).unwrap();
    assert_eq!(report.created, 4);
    assert_eq!(exports(&back), exports(&source));
    assert_eq!(removed(&back), removed(&source));
    // The imported state dir passes the integrity check of the next open, and goes on committing.
    back.close().unwrap();
    let back = SledStore::open(b.path(), "test").unwrap();
    assert_eq!(exports(&back), exports(&source));
    let mut ws = back.load("shoot--q--a").unwrap().unwrap();
    back.commit(&mut ws, "apply").unwrap();
    assert_eq!(ws.serial, 4);

    // Re-run (an interrupted migrate is simply run again): nothing is copied twice.
    let report = migrate(&source, &pg, &mut |_, outcome| assert_eq!(outcome, Imported::AlreadyThere)).unwrap();
    assert_eq!(report, MigrateReport { created: 0, already_there: 4, removed_histories: 1 });
    // A destination that moved on is refused, naming the shoot.
    let err = migrate(&back, &pg, &mut |_, _| {}).unwrap_err();
    assert!(matches!(&err, StateError::PushRefused { shoot, .. } if shoot == "shoot--q--a"), "{err:?}");
}
