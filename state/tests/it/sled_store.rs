//! Behaviour of the sled state backend as a user of `trellis` sees it: commits that survive restarts,
//! stale plans refused, workspace locks with holder details, and state dirs in use by another process.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use trellis_state::{Acquired, LockInfo, SledStore, StateError, StateStore, Workspace};

use crate::common;

use common::behaviour::{self, workspace_with_one_resource, SHOOT};

fn state_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn open(dir: &Path) -> SledStore {
    SledStore::open(dir, "test").expect("open state dir")
}

/// The state dir's database opened with sled directly. sled releases its file lock a moment after a
/// store is dropped (jobs on its thread pool still hold the file), so retry for a while, as `open` does.
fn raw_sled(dir: &Path) -> sled::Db {
    let mut attempts = 0;
    loop {
        match sled::open(dir) {
            Ok(db) => return db,
            Err(e) if attempts < 250 => {
                attempts += 1;
                eprintln!("waiting for the state dir to be released: {e}");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("open {} with sled: {e}", dir.display()),
        }
    }
}

/// A pid that certainly belongs to no running process: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn `true`");
    let pid = child.id();
    child.wait().expect("wait for `true`");
    pid
}

#[test]
fn commit_increments_serial_and_survives_reopen() {
    let dir = state_dir();
    let mut ws = workspace_with_one_resource();
    {
        let store = open(dir.path());
        assert_eq!(store.load(SHOOT).unwrap(), None);
        store.commit(&mut ws, "apply").unwrap();
        assert_eq!(ws.serial, 1);
        ws.outputs = Some(serde_json::json!({"egress_cidrs": ["20.1.2.3/32"]}));
        store.commit(&mut ws, "apply").unwrap();
        assert_eq!(ws.serial, 2);
    }

    let store = open(dir.path());
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()));
    let history = store.history(SHOOT).unwrap();
    assert_eq!(history.iter().map(|h| h.serial).collect::<Vec<_>>(), vec![1, 2]);
    assert!(history.iter().all(|h| h.operation == "apply" && h.resources == 1));

    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].shoot.as_str(), list[0].serial, list[0].resources), (SHOOT, 2, 1));
    assert_eq!(list[0].lineage, ws.lineage);
    assert_eq!(list[0].locked_by, None);
}

#[test]
fn list_is_sorted_and_histories_do_not_mix() {
    let dir = state_dir();
    let store = open(dir.path());
    // "shoot--a--b" is a prefix of "shoot--a--b-c": their histories must still stay apart.
    for shoot in ["shoot--a--b-c", "shoot--a--b"] {
        let mut ws = Workspace::new(shoot);
        store.commit(&mut ws, "apply").unwrap();
    }
    let mut ws = store.load("shoot--a--b").unwrap().unwrap();
    store.commit(&mut ws, "destroy").unwrap();

    let shoots: Vec<_> = store.list().unwrap().into_iter().map(|s| s.shoot).collect();
    assert_eq!(shoots, vec!["shoot--a--b", "shoot--a--b-c"]);
    let ops: Vec<_> = store.history("shoot--a--b").unwrap().into_iter().map(|h| h.operation).collect();
    assert_eq!(ops, vec!["apply", "destroy"]);
    assert_eq!(store.history("shoot--a--b-c").unwrap().len(), 1);
    assert!(store.history("shoot--never").unwrap().is_empty());
}

#[test]
fn commit_with_a_stale_serial_is_refused_and_writes_nothing() {
    let dir = state_dir();
    let store = open(dir.path());
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();

    // Two runs read serial 1; the first one commits, the second one is stale.
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
    assert_eq!(store.load(SHOOT).unwrap(), Some(first));
    assert_eq!(store.history(SHOOT).unwrap().len(), 2);
}

#[test]
fn commit_for_another_lineage_is_refused_and_writes_nothing() {
    let dir = state_dir();
    let store = open(dir.path());
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();

    // Same shoot and serial, but made for a different (re-created) workspace.
    let mut other = Workspace::new(SHOOT);
    other.serial = ws.serial;
    let err = store.commit(&mut other, "apply").unwrap_err();
    assert!(matches!(&err, StateError::Conflict { shoot, .. } if shoot == SHOOT), "{err:?}");
    assert!(err.to_string().contains(&ws.lineage), "{err}");

    // A brand-new workspace (serial 0) cannot overwrite the stored one either.
    let mut fresh = Workspace::new(SHOOT);
    assert!(matches!(store.commit(&mut fresh, "apply"), Err(StateError::Conflict { .. })));

    assert_eq!(store.load(SHOOT).unwrap(), Some(ws));
    assert_eq!(store.history(SHOOT).unwrap().len(), 1);
}

#[test]
fn commit_against_a_serial_that_was_never_stored_is_refused() {
    let dir = state_dir();
    let store = open(dir.path());
    let mut ws = Workspace::new(SHOOT);
    ws.serial = 3;
    let err = store.commit(&mut ws, "apply").unwrap_err();
    assert!(matches!(err, StateError::Conflict { .. }), "{err:?}");
    assert_eq!(store.load(SHOOT).unwrap(), None);
    assert!(store.history(SHOOT).unwrap().is_empty());
}

#[test]
fn a_held_lock_is_refused_naming_its_holder() {
    let dir = state_dir();
    let store = open(dir.path());
    let apply = LockInfo::here("apply");
    assert_eq!(store.lock(SHOOT, &apply).unwrap(), Acquired::Fresh);
    // Taking the same lock again is harmless.
    assert_eq!(store.lock(SHOOT, &apply).unwrap(), Acquired::Fresh);

    let err = store.lock(SHOOT, &LockInfo::here("plan")).unwrap_err();
    match &err {
        StateError::Locked { shoot, holder, .. } => {
            assert_eq!(shoot, SHOOT);
            assert_eq!(holder, &apply);
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let msg = err.to_string();
    for part in [
        format!("pid {}", apply.pid),
        format!("@{}", apply.host),
        "apply by".to_string(),
        format!("trellis state unlock {SHOOT}"),
    ] {
        assert!(msg.contains(&part), "{msg:?} should contain {part:?}");
    }
    assert_eq!(store.lock_holder(SHOOT).unwrap(), Some(apply));
}

#[test]
fn unlock_needs_the_lock_id_and_force_unlock_does_not() {
    let dir = state_dir();
    let store = open(dir.path());
    let apply = LockInfo::here("apply");
    store.lock(SHOOT, &apply).unwrap();

    let err = store.unlock(SHOOT, "not-the-lock-id").unwrap_err();
    assert!(matches!(&err, StateError::Locked { holder, .. } if *holder == apply), "{err:?}");
    assert_eq!(store.lock_holder(SHOOT).unwrap(), Some(apply.clone()));

    store.unlock(SHOOT, &apply.id).unwrap();
    assert_eq!(store.lock_holder(SHOOT).unwrap(), None);
    store.unlock(SHOOT, &apply.id).unwrap(); // releasing a released lock is fine

    let plan = LockInfo::here("plan");
    assert_eq!(store.lock(SHOOT, &plan).unwrap(), Acquired::Fresh);
    assert_eq!(store.force_unlock(SHOOT).unwrap(), Some(plan));
    assert_eq!(store.lock_holder(SHOOT).unwrap(), None);
    assert_eq!(store.force_unlock(SHOOT).unwrap(), None);
}

#[test]
fn locks_survive_reopen_and_show_in_list() {
    let dir = state_dir();
    let apply = LockInfo::here("apply");
    {
        let store = open(dir.path());
        let mut ws = Workspace::new(SHOOT);
        store.commit(&mut ws, "apply").unwrap();
        store.lock(SHOOT, &apply).unwrap();
    }
    let store = open(dir.path());
    assert_eq!(store.lock_holder(SHOOT).unwrap(), Some(apply.clone()));
    assert_eq!(store.list().unwrap()[0].locked_by, Some(apply));
}

#[test]
fn a_lock_held_by_a_dead_process_on_this_host_is_broken() {
    let dir = state_dir();
    let store = open(dir.path());
    let dead = LockInfo { pid: dead_pid(), ..LockInfo::here("apply") };
    assert_eq!(store.lock(SHOOT, &dead).unwrap(), Acquired::Fresh);

    let plan = LockInfo::here("plan");
    assert_eq!(store.lock(SHOOT, &plan).unwrap(), Acquired::BrokeStale(dead));
    assert_eq!(store.lock_holder(SHOOT).unwrap(), Some(plan));
}

#[test]
fn a_lock_from_another_host_is_never_broken() {
    let dir = state_dir();
    let store = open(dir.path());
    let remote = LockInfo { pid: dead_pid(), host: "some-other-host.example".to_string(), ..LockInfo::here("apply") };
    store.lock(SHOOT, &remote).unwrap();
    let err = store.lock(SHOOT, &LockInfo::here("plan")).unwrap_err();
    assert!(matches!(&err, StateError::Locked { holder, .. } if *holder == remote), "{err:?}");
}

/// Not a check of its own: when `TRELLIS_STATE_TEST_HOLD_DIR` is set, this is the child process of
/// `a_state_dir_open_in_another_process_is_refused`. It opens the dir, says `HOLDING` and keeps the dir
/// open until its stdin is closed. Without the variable it does nothing.
#[test]
fn hold_state_dir_child() {
    let Some(dir) = std::env::var_os("TRELLIS_STATE_TEST_HOLD_DIR") else {
        return;
    };
    let store = SledStore::open(Path::new(&dir), "apply").expect("child opens the state dir");
    println!("HOLDING");
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(store);
}

#[test]
fn a_state_dir_open_in_another_process_is_refused() {
    let dir = state_dir();
    // Re-run this test binary, asking it to run only the holder above.
    let mut child = Command::new(std::env::current_exe().expect("test binary path"))
        .args(["sled_store::hold_state_dir_child", "--exact", "--nocapture", "--test-threads=1"])
        .env("TRELLIS_STATE_TEST_HOLD_DIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the holder process");
    let mut lines = BufReader::new(child.stdout.take().expect("child stdout")).lines();
    let holding = lines.by_ref().map_while(Result::ok).any(|line| line.contains("HOLDING"));
    if !holding {
        let mut stderr = String::new();
        let _ = child.stderr.take().expect("child stderr").read_to_string(&mut stderr);
        panic!("the holder process never opened the dir: {stderr}");
    }

    let err = SledStore::open(dir.path(), "plan").err().expect("second open must fail");
    match &err {
        StateError::DirInUse { dir: in_use, holder: Some(holder) } => {
            assert_eq!(in_use, dir.path());
            assert_eq!(holder.pid, child.id());
            assert_eq!(holder.operation, "apply");
        }
        other => panic!("expected DirInUse with a holder, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&format!("pid {}", child.id())) && msg.contains("wait for it to finish"), "{msg}");

    // Once the holder is gone, the dir opens again and its holder file is ours.
    drop(child.stdin.take());
    assert!(child.wait().expect("wait for the holder").success());
    let store = open(dir.path());
    let holder: LockInfo = serde_json::from_slice(&std::fs::read(dir.path().join("holder.json")).unwrap()).unwrap();
    assert_eq!(holder.pid, std::process::id());
    drop(store);
    assert!(!dir.path().join("holder.json").exists(), "dropping the store removes holder.json");
}

#[test]
fn a_second_open_in_the_same_process_is_refused_too() {
    let dir = state_dir();
    let _store = SledStore::open(dir.path(), "apply").unwrap();
    match SledStore::open(dir.path(), "plan") {
        Err(StateError::DirInUse { holder: Some(holder), .. }) => {
            assert_eq!((holder.pid, holder.operation.as_str()), (std::process::id(), "apply"));
        }
        Err(other) => panic!("expected DirInUse, got {other:?}"),
        Ok(_) => panic!("expected DirInUse, the dir opened twice"),
    }
}

#[test]
fn a_regular_file_is_not_a_state_dir() {
    let dir = state_dir();
    let file = dir.path().join("state");
    std::fs::write(&file, "not a directory").unwrap();
    match SledStore::open(&file, "plan") {
        Err(err @ StateError::Open { .. }) => {
            let msg = err.to_string();
            assert!(msg.contains(&file.display().to_string()), "{msg}");
            assert!(msg.contains("not a directory"), "{msg}");
        }
        Err(other) => panic!("expected Open, got {other:?}"),
        Ok(_) => panic!("a regular file opened as a state dir"),
    }
}

/// Leaves the state dir as a run that was killed leaves it: sled's files were not sealed at the end, so
/// the next open verifies them on a copy instead of refusing any change.
fn as_if_the_last_run_was_killed(dir: &Path) {
    std::fs::write(dir.join("seal.json"), r#"{"state": "open"}"#).unwrap();
}

#[test]
fn a_corrupt_workspace_record_is_reported_with_its_shoot() {
    let dir = state_dir();
    {
        let store = open(dir.path());
        let mut ws = workspace_with_one_resource();
        store.commit(&mut ws, "apply").unwrap();
    }
    {
        // Damage the record behind the store's back (the layout is documented in the crate docs).
        let db = raw_sled(dir.path());
        db.open_tree("workspace_heads").unwrap().insert(SHOOT, &b"{\"shoot\": \"shoot--dev--al"[..]).unwrap();
        db.flush().unwrap();
    }
    // After a clean close, any change to sled's files is damage.
    let err = SledStore::open(dir.path(), "plan").err().expect("a changed db must not open");
    assert!(matches!(&err, StateError::Damaged { .. }), "{err:?}");
    assert!(err.to_string().contains("changed after trellis last closed it"), "{err}");

    // After a killed run, the record itself is checked against its head record.
    as_if_the_last_run_was_killed(dir.path());
    let err = SledStore::open(dir.path(), "plan").err().expect("a corrupt record must not open");
    assert!(matches!(&err, StateError::Damaged { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&format!("the stored record of workspace {SHOOT} does not parse")), "{msg}");
}

#[test]
fn an_unreadable_lock_record_blocks_until_force_unlocked() {
    let dir = state_dir();
    drop(open(dir.path()));
    {
        let db = raw_sled(dir.path());
        db.open_tree("locks").unwrap().insert(SHOOT, &b"garbage"[..]).unwrap();
        db.flush().unwrap();
    }
    // Lock records are not covered by head records: after a killed run, the dir opens.
    as_if_the_last_run_was_killed(dir.path());
    let store = open(dir.path());
    let err = store.lock(SHOOT, &LockInfo::here("apply")).unwrap_err();
    assert!(matches!(&err, StateError::Corrupt { shoot, .. } if shoot == SHOOT), "{err:?}");
    assert!(err.to_string().contains(&format!("trellis state unlock {SHOOT}")), "{err}");

    // force_unlock removes it (and says the record was unreadable); then the lock can be taken.
    assert!(matches!(store.force_unlock(SHOOT), Err(StateError::Corrupt { .. })));
    assert_eq!(store.lock_holder(SHOOT).unwrap(), None);
    assert_eq!(store.lock(SHOOT, &LockInfo::here("apply")).unwrap(), Acquired::Fresh);
}

#[test]
fn trees_for_the_simulator_are_kept_apart_from_the_state() {
    let dir = state_dir();
    let store = open(dir.path());
    let cloud = store.tree("workspaces").unwrap();
    cloud.insert(SHOOT, "a simulated resource").unwrap();
    assert_eq!(store.load(SHOOT).unwrap(), None);
    assert!(store.list().unwrap().is_empty());
    drop(cloud);
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.tree("workspaces").unwrap().get(SHOOT).unwrap().as_deref(), Some(&b"a simulated resource"[..]));
}

#[test]
fn sled_export_and_import_keep_lineage_serial_and_history() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (from, into) = (SledStore::open(a.path(), "test").unwrap(), SledStore::open(b.path(), "test").unwrap());
    behaviour::export_import(&from, &into);
}

#[test]
fn sled_behaves_as_every_backend_must() {
    for check in [
        behaviour::list_is_sorted_and_histories_do_not_mix as fn(&dyn StateStore),
        behaviour::stale_commits_are_refused,
        behaviour::locks,
        behaviour::push,
        behaviour::remove,
    ] {
        let dir = tempfile::tempdir().unwrap();
        check(&SledStore::open(dir.path(), "test").unwrap());
    }
}
