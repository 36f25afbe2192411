//! State integrity as a user of the sled backend sees it: a database that does not match what trellis
//! last wrote is refused and left as it was found, a killed run is not mistaken for damage, foreign
//! directories are never taken over, and a workspace can be restored with `push`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use trellis_state::{SledStore, StateError, StateStore, Workspace, WorkspaceFile};

const SHOOT: &str = "shoot--dev--alpha";

fn open(dir: &Path) -> SledStore {
    SledStore::open(dir, "test").expect("open state dir")
}

/// Something to change between commits: `outputs[key] = value`.
fn note(ws: &mut Workspace, key: &str, value: &str) {
    ws.outputs.get_or_insert_with(|| serde_json::json!({}))[key] = serde_json::json!(value);
}

/// Commits `n` versions of the shoot's workspace (serials 1..=n) and closes the store.
fn committed(dir: &Path, n: u64) -> Workspace {
    let store = open(dir);
    let mut ws = store.load(SHOOT).unwrap().unwrap_or_else(|| Workspace::new(SHOOT));
    for _ in 0..n {
        let step = format!("{}", ws.serial + 1);
        note(&mut ws, "step", &step);
        store.commit(&mut ws, "apply").unwrap();
    }
    store.close().unwrap();
    ws
}

/// Every file under `dir`, relative path -> content.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Copies the files of `from` into a new directory `to`.
fn copy_dir(from: &Path, to: &Path) {
    for (rel, bytes) in files(from) {
        let path = to.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
}

/// sled's files of a closed state dir (to put an older database back later).
fn sled_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files(dir)
        .into_iter()
        .filter(|(rel, _)| {
            let name = rel.to_string_lossy();
            name == "db" || name == "conf" || name.starts_with("snap.") || name.starts_with("blobs/")
        })
        .collect()
}

/// As a run that was killed leaves the dir: sled's files were not sealed at its end.
fn as_if_the_last_run_was_killed(dir: &Path) {
    fs::write(dir.join("seal.json"), r#"{"state": "open"}"#).unwrap();
}

#[track_caller]
fn assert_damaged(result: Result<SledStore, StateError>, needle: &str) -> String {
    let err = result.err().expect("a damaged state dir must not open");
    assert!(matches!(err, StateError::Damaged { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(needle), "{msg:?} should contain {needle:?}");
    assert!(msg.contains("restore with `mv "), "{msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
    msg
}

#[test]
fn regression_damaged_state_db_is_refused_and_left_as_found() {
    let clean = tempfile::tempdir().unwrap();
    committed(clean.path(), 5);
    let len = fs::metadata(clean.path().join("db")).unwrap().len();
    let overwrites = [0, len / 8, len / 4, len / 3, len / 2, 3 * len / 4, len - 16];
    let truncations = [0, len / 8, len / 3, len / 2, len - 1];
    let damages = overwrites
        .iter()
        .map(|&at| (format!("16 bytes at {at}"), Some(at), None))
        .chain(truncations.iter().map(|&to| (format!("truncated to {to}"), None, Some(to))));
    for (what, overwrite, truncate) in damages {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("state");
        copy_dir(clean.path(), &dir);
        let db = dir.join("db");
        let mut bytes = fs::read(&db).unwrap();
        if let Some(at) = overwrite {
            bytes[at as usize..at as usize + 16].copy_from_slice(b"XXXXXXXXXXXXXXXX");
        }
        if let Some(to) = truncate {
            bytes.truncate(to as usize);
        }
        fs::write(&db, &bytes).unwrap();
        let before = files(&dir);

        let msg = assert_damaged(SledStore::open(&dir, "plan"), "changed after trellis last closed it");
        assert!(msg.contains(&format!("state in {} is damaged", dir.display())), "{what}: {msg}");
        assert!(matches!(SledStore::open_existing(&dir, "state list"), Err(StateError::Damaged { .. })), "{what}");
        assert_eq!(files(&dir), before, "{what}: the damaged state dir is left exactly as it was");
    }
}

#[test]
fn regression_a_silent_rollback_after_a_killed_run_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    committed(dir, 2);
    let older = sled_files(dir);
    committed(dir, 1);
    // The database falls back to serial 2 (as sled does when it drops a damaged tail of its log), and the
    // last run did not close cleanly, so the files are verified rather than compared with the seal.
    for rel in sled_files(dir).keys() {
        fs::remove_file(dir.join(rel)).unwrap();
    }
    for (rel, bytes) in &older {
        fs::write(dir.join(rel), bytes).unwrap();
    }
    as_if_the_last_run_was_killed(dir);
    let before = files(dir);
    let msg = assert_damaged(SledStore::open(dir, "plan"), &format!("workspace {SHOOT} is stored at serial 2"));
    assert!(msg.contains("says serial 3"), "{msg}");
    assert_eq!(files(dir), before, "verified on a copy: the state dir is left exactly as it was");
}

#[test]
fn regression_a_commit_interrupted_before_its_head_record_is_not_damage() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    // The head records are the heads journal; a record cut off is one whose write was interrupted.
    let head = dir.join("heads.log");

    // The first commit: killed after sled committed it, before its head record was written.
    committed(dir, 1);
    fs::remove_file(&head).unwrap();
    as_if_the_last_run_was_killed(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap().unwrap().serial, 1);

    // A later commit: the head record still names the version before it, which is also the backup.
    committed(dir, 1);
    let head_of_2 = fs::read(&head).unwrap();
    committed(dir, 1);
    fs::write(&head, &head_of_2).unwrap();
    as_if_the_last_run_was_killed(dir);
    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap().unwrap().serial, 3);
    // The next commit brings the head record up to date.
    let mut ws = store.load(SHOOT).unwrap().unwrap();
    store.commit(&mut ws, "apply").unwrap();
    store.close().unwrap();
    as_if_the_last_run_was_killed(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap().unwrap().serial, 4);

    // A head record two versions behind is not what a crash leaves.
    fs::write(&head, &head_of_2).unwrap();
    as_if_the_last_run_was_killed(dir);
    assert_damaged(SledStore::open(dir, "plan"), "says serial 2");

    // A push stores a version several serials ahead; its head write can be interrupted the same way.
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let head = dir.join("heads.log");
    let ws = committed(dir, 1);
    let head_of_1 = fs::read(&head).unwrap();
    let store = open(dir);
    assert_eq!(store.push(&Workspace { serial: 9, ..ws }, false).unwrap(), 10);
    store.close().unwrap();
    fs::write(&head, &head_of_1).unwrap();
    as_if_the_last_run_was_killed(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap().unwrap().serial, 10);
}

#[test]
fn regression_the_previous_version_is_kept_as_a_backup_that_push_restores() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    committed(dir, 2);
    let backup = fs::read_to_string(dir.join("backups").join(format!("{SHOOT}.json"))).unwrap();
    let latest = committed(dir, 1);
    let previous = WorkspaceFile::parse("backup", &backup).unwrap();
    assert_eq!(previous.serial, 2);
    assert_eq!(previous.lineage, latest.lineage);
    assert_eq!(previous.outputs.as_ref().unwrap()["step"], "2");

    let store = open(dir);
    // An older version rolls the state back: refused unless forced.
    let err = store.push(&previous, false).unwrap_err();
    assert!(matches!(err, StateError::PushRefused { .. }), "{err:?}");
    assert!(err.to_string().contains("serial 2") && err.to_string().contains("--force"), "{err}");
    // Another lineage: refused unless forced.
    let other = Workspace { serial: 7, ..Workspace::new(SHOOT) };
    let err = store.push(&other, false).unwrap_err();
    assert!(err.to_string().contains(&latest.lineage) && err.to_string().contains("--force"), "{err}");
    assert_eq!(store.load(SHOOT).unwrap(), Some(latest.clone()), "refused pushes change nothing");

    // Forced: stored above both serials, so plans made against either are stale.
    assert_eq!(store.push(&previous, true).unwrap(), 4);
    let restored = store.load(SHOOT).unwrap().unwrap();
    assert_eq!(restored, Workspace { serial: 4, ..previous });
    assert_eq!(store.history(SHOOT).unwrap().last().unwrap().operation, "push");
    store.close().unwrap();
    as_if_the_last_run_was_killed(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap(), Some(restored), "the push is consistent with its head record");
}

#[test]
fn regression_push_checks_the_checksum_of_its_file() {
    let ws = Workspace::new(SHOOT);
    let text = serde_json::to_string_pretty(&WorkspaceFile::new(ws.clone())).unwrap();
    assert_eq!(WorkspaceFile::parse("f.json", &text).unwrap(), ws);
    let edited = text.replace(&ws.lineage, "00000000-0000-4000-8000-000000000000");
    let err = WorkspaceFile::parse("f.json", &edited).unwrap_err().to_string();
    assert!(err.starts_with("f.json: its checksum sha256:") && err.contains("remove the \"checksum\" field"), "{err}");
    let without: serde_json::Value = serde_json::from_str(&edited).unwrap();
    let without = serde_json::json!({ "workspace": without["workspace"] });
    assert_eq!(
        WorkspaceFile::parse("f.json", &without.to_string()).unwrap().lineage,
        "00000000-0000-4000-8000-000000000000"
    );
}

/// A value of the wrong type in a hand-edited workspace file is refused naming its field (the file is
/// read as JSON first, for its checksum, so serde_json's message alone has no position).
#[test]
fn regression_push_names_the_field_of_a_value_of_the_wrong_type() {
    let ws = Workspace::new(SHOOT);
    let mut file = serde_json::json!({ "workspace": serde_json::to_value(&ws).unwrap() });
    file["workspace"]["serial"] = serde_json::json!("x");
    let err = WorkspaceFile::parse("f.json", &file.to_string()).unwrap_err().to_string();
    assert!(err.starts_with("f.json: workspace.serial: invalid type: string \"x\", expected u64;"), "{err}");
    assert!(err.contains("expected the JSON that `trellis state pull` prints"), "{err}");
    file["workspace"]["serial"] = serde_json::json!(3);
    file["workspace"]["resources"] = serde_json::json!({
        "azure.resource_group.x.x": { "kind": "resource_group", "id": "/subscriptions/s/resourceGroups/x", "ownership": 5 }
    });
    let err = WorkspaceFile::parse("f.json", &file.to_string()).unwrap_err().to_string();
    assert!(
        err.starts_with("f.json: workspace.resources.azure.resource_group.x.x.ownership: invalid type: integer `5`"),
        "{err}"
    );
}

#[test]
fn regression_a_foreign_directory_is_refused_and_left_alone() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("mine");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("db"), "my own database, not trellis'").unwrap();
    let before = files(&dir);
    for result in [SledStore::open(&dir, "apply").map(Some), SledStore::open_existing(&dir, "validate")] {
        let err = result.err().expect("a foreign dir must not open");
        assert!(matches!(err, StateError::NotStateDir { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("{} is not a trellis state dir", dir.display())), "{msg}");
        assert!(msg.contains("it holds db") && msg.contains("pass a new or empty directory with --state"), "{msg}");
    }
    assert_eq!(files(&dir), before, "nothing in it was touched");
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "nothing was added to it");
}

#[test]
fn regression_a_state_dir_of_an_earlier_trellis_is_adopted() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let ws = committed(dir, 2);
    // What the previous version of trellis left: sled's files only.
    for name in ["trellis-state.json", "seal.json"] {
        fs::remove_file(dir.join(name)).unwrap();
    }
    fs::remove_file(dir.join("heads.log")).unwrap();
    fs::remove_dir_all(dir.join("backups")).unwrap();
    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws));
    store.close().unwrap();
    assert!(dir.join("trellis-state.json").is_file());
    assert_eq!(head_serial(dir, SHOOT), 2, "adopted: the head record is written");

    // A sled database of something else is not adopted.
    let other = work.path().join("other");
    {
        let db = sled::open(&other).unwrap();
        db.open_tree("not-trellis").unwrap().insert("k", "v").unwrap();
        db.flush().unwrap();
    }
    let err = SledStore::open(&other, "plan").err().expect("not adopted");
    assert!(matches!(err, StateError::NotStateDir { .. }), "{err:?}");
    assert!(!other.join("trellis-state.json").exists());
}

#[test]
fn regression_a_state_dir_of_a_newer_format_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    fs::write(dir.join("trellis-state.json"), r#"{"kind": "trellis-state", "format_version": 5}"#).unwrap();
    let err = SledStore::open(dir, "plan").err().expect("a newer format must not open");
    assert!(err.to_string().contains("written by a newer trellis (state format 5"), "{err}");
    assert_eq!(fs::read_dir(dir).unwrap().count(), 1);
}

#[test]
fn regression_discard_removes_only_what_this_run_created() {
    let work = tempfile::tempdir().unwrap();

    // A dir this run created: removed.
    let new = work.path().join("new");
    open(&new).discard().unwrap();
    assert!(!new.exists());

    // An empty dir the user made: emptied again, kept.
    let empty = work.path().join("empty");
    fs::create_dir(&empty).unwrap();
    open(&empty).discard().unwrap();
    assert_eq!(fs::read_dir(&empty).unwrap().count(), 0);

    // Something was committed in this run, or the dir was a state dir before: kept.
    let used = work.path().join("used");
    let store = open(&used);
    store.commit(&mut Workspace::new(SHOOT), "apply").unwrap();
    store.discard().unwrap();
    assert_eq!(open(&used).list().unwrap().len(), 1);
    open(&used).discard().unwrap();
    assert_eq!(open(&used).list().unwrap().len(), 1);

    // Commands that only read never create or mark anything.
    assert!(SledStore::open_existing(&work.path().join("missing"), "state list").unwrap().is_none());
    assert!(SledStore::open_existing(&empty, "state list").unwrap().is_none());
    assert!(!work.path().join("missing").exists());
    assert_eq!(fs::read_dir(&empty).unwrap().count(), 0);
}

/// The serial the head record of `shoot` names, as it is on disk: its last record in the heads journal.
fn head_serial(dir: &Path, shoot: &str) -> u64 {
    let raw = fs::read_to_string(dir.join("heads.log")).expect("heads journal");
    raw.lines()
        .rev()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|head| head["shoot"] == shoot)
        .expect("head record")["serial"]
        .as_u64()
        .expect("serial")
}

/// Commits from several threads at once share flushes, but each is durable when it returns: its head
/// record is on disk, and a run killed right after finds every commit (the dir opens, unsealed, and
/// passes the check on a copy). Each committer sees its own serial; commits of one workspace from two
/// threads are compare-and-swap as ever.
#[test]
fn concurrent_commits_are_all_durable_and_each_sees_its_own_serial() {
    const THREADS: usize = 8;
    const COMMITS: u64 = 20;
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let shared_commits = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (store, dir, shared_commits) = (&store, dir.path(), &shared_commits);
            s.spawn(move || {
                let shoot = format!("shoot--dev--t{t}");
                let mut ws = Workspace::new(&shoot);
                for n in 1..=COMMITS {
                    note(&mut ws, "step", &n.to_string());
                    store.commit(&mut ws, "apply").unwrap();
                    assert_eq!(ws.serial, n, "{shoot} sees its own serial");
                    assert_eq!(head_serial(dir, &shoot), n, "{shoot}'s head is written before commit returns");
                }
                // A workspace every thread commits to: conflicts are re-read and retried.
                for _ in 0..3 {
                    loop {
                        let mut ws = store
                            .load("shoot--dev--shared")
                            .unwrap()
                            .unwrap_or_else(|| Workspace::new("shoot--dev--shared"));
                        let before = ws.serial;
                        note(&mut ws, &format!("t{t}"), &before.to_string());
                        match store.commit(&mut ws, "apply") {
                            Ok(()) => {
                                assert_eq!(ws.serial, before + 1);
                                assert!(head_serial(dir, "shoot--dev--shared") >= ws.serial);
                                shared_commits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                break;
                            }
                            Err(StateError::Conflict { .. }) => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
    assert_eq!(shared_commits.into_inner(), 3 * THREADS as u64);
    // Killed right after: nothing sealed, so the next open checks a copy against the head records.
    drop(store);
    fs::write(dir.path().join("seal.json"), r#"{"state": "open"}"#).unwrap();
    let store = open(dir.path());
    for t in 0..THREADS {
        let shoot = format!("shoot--dev--t{t}");
        let ws = store.load(&shoot).unwrap().expect("stored");
        assert_eq!(
            (ws.serial, ws.outputs.as_ref().unwrap()["step"].as_str()),
            (COMMITS, Some(COMMITS.to_string().as_str()))
        );
        assert_eq!(store.history(&shoot).unwrap().len(), COMMITS as usize);
    }
    let shared = store.load("shoot--dev--shared").unwrap().expect("stored");
    assert_eq!(shared.serial, 3 * THREADS as u64);
    assert_eq!(head_serial(dir.path(), "shoot--dev--shared"), shared.serial);
}

/// The records of the heads journal, parsed.
fn journal(dir: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(dir.join("heads.log"))
        .expect("heads journal")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a record"))
        .collect()
}

#[test]
fn regression_head_records_are_appended_to_one_journal_not_a_file_per_commit() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    committed(dir, 2);
    assert!(!dir.join("heads").exists(), "no file per workspace");
    let serials: Vec<_> = journal(dir).iter().map(|h| h["serial"].as_u64().unwrap()).collect();
    assert_eq!(serials, [1, 2], "one record per commit, in order");
    let marker: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("trellis-state.json")).unwrap()).unwrap();
    assert_eq!(marker["format_version"], 4);

    // A run that commits and leaves the journal more than twice as long as the workspaces compacts it.
    committed(dir, 1);
    let serials: Vec<_> = journal(dir).iter().map(|h| h["serial"].as_u64().unwrap()).collect();
    assert_eq!(serials, [3], "compacted at close: one record per workspace");
    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap().unwrap().serial, 3);
}

#[test]
fn regression_a_torn_heads_journal_tail_is_recovered() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    committed(dir, 1);
    let ws = committed(dir, 1);
    // Killed while appending the head of serial 3: part of its record, no newline.
    let log = dir.join("heads.log");
    let mut bytes = fs::read(&log).unwrap();
    let torn = br#"{"shoot":"shoot--dev--alpha","lineage":"#;
    bytes.extend_from_slice(torn);
    fs::write(&log, &bytes).unwrap();
    as_if_the_last_run_was_killed(dir);
    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()), "the torn record is ignored");
    // The next append cuts the torn record off: every record is whole again.
    let mut ws = ws;
    store.commit(&mut ws, "apply").unwrap();
    assert_eq!(head_serial(dir, SHOOT), 3);
    assert!(fs::read(&log).unwrap().ends_with(b"}\n"));
    assert!(journal(dir).iter().all(|h| h["shoot"] == SHOOT));
    store.close().unwrap();
    assert_eq!(open(dir).load(SHOOT).unwrap().unwrap().serial, 3);
}

#[test]
fn regression_a_garbled_heads_journal_is_refused_and_left_as_found() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    committed(dir, 1);
    committed(dir, 1);
    let log = dir.join("heads.log");
    let text = fs::read_to_string(&log).unwrap();
    for (what, garbled) in [
        ("garbled record", text.replacen("\"serial\"", "\"seXial\"", 1)),
        ("garbage with a newline", format!("{text}XXXX\n")),
        ("a record of a newer version", text.replacen("\"serial\":2", "\"serial\":7", 1)),
    ] {
        fs::write(&log, &garbled).unwrap();
        // After a killed run the database is verified on a copy, so nothing may change.
        as_if_the_last_run_was_killed(dir);
        let before = files(dir);
        let needle = if what.starts_with("a record") { "says serial 7" } else { "of the heads journal" };
        let msg = assert_damaged(SledStore::open(dir, "plan"), needle);
        assert!(msg.contains("heads.log"), "{what}: {msg}");
        assert!(files(dir) == before, "{what}: left exactly as it was");
    }
}

#[test]
fn regression_a_state_dir_of_format_1_with_a_head_file_per_workspace_is_read_and_upgraded() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let ws = committed(dir, 2);
    // What the trellis before the journal left: `heads/<shoot>.json` and format 1.
    let head = journal(dir).pop().unwrap();
    fs::create_dir(dir.join("heads")).unwrap();
    fs::write(dir.join("heads").join(format!("{SHOOT}.json")), serde_json::to_vec_pretty(&head).unwrap()).unwrap();
    fs::remove_file(dir.join("heads.log")).unwrap();
    fs::write(dir.join("trellis-state.json"), r#"{"kind": "trellis-state", "format_version": 1}"#).unwrap();

    // A run that only reads changes nothing.
    let before = files(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap(), Some(ws.clone()));
    assert_same_files(&files(dir), &before, "a run that only reads a format-1 dir");

    // A run that commits moves the heads into the journal and marks the dir format 4.
    committed(dir, 1);
    assert!(!dir.join("heads").exists());
    assert_eq!(head_serial(dir, SHOOT), 3);
    let marker: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("trellis-state.json")).unwrap()).unwrap();
    assert_eq!(marker["format_version"], 4);
    as_if_the_last_run_was_killed(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap().unwrap().serial, 3);
}

#[test]
fn regression_the_backup_is_the_version_a_run_left_written_once_when_it_closes() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let backup_serial = || {
        let text = fs::read_to_string(dir.join("backups").join(format!("{SHOOT}.json"))).unwrap();
        WorkspaceFile::parse("backup", &text).unwrap().serial
    };
    // A run that creates the workspace leaves its backup too.
    committed(dir, 2);
    assert_eq!(backup_serial(), 2);
    // While a run commits, the backup is what the last run left; when it closes, what this one left.
    let store = open(dir);
    let mut ws = store.load(SHOOT).unwrap().unwrap();
    for step in ["3", "4", "5"] {
        note(&mut ws, "step", step);
        store.commit(&mut ws, "apply").unwrap();
        assert_eq!(backup_serial(), 2, "not rewritten per commit");
    }
    store.close().unwrap();
    assert_eq!(backup_serial(), 5);
    // A killed run writes none: the backup is the version it found.
    let store = open(dir);
    let mut ws = store.load(SHOOT).unwrap().unwrap();
    store.commit(&mut ws, "apply").unwrap();
    std::mem::forget(store);
    assert_eq!(backup_serial(), 5);
}

/// A fleet's run leaves the backup of every workspace it committed, each the version it left, and one
/// that cannot be written fails the close with a line naming the state dir after the others were
/// written (it stopped the backups after it: a fleet's recovery lost them for one bad file).
#[test]
fn regression_a_backup_that_cannot_be_written_does_not_stop_the_others() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let shoots: Vec<String> = (0..150).map(|i| format!("shoot--dev--s{i:03}")).collect();
    let run = |steps: u64| {
        let store = open(dir);
        for shoot in &shoots {
            let mut ws = store.load(shoot).unwrap().unwrap_or_else(|| Workspace::new(shoot));
            for _ in 0..steps {
                let step = format!("{shoot} {}", ws.serial + 1);
                note(&mut ws, "step", &step);
                store.commit(&mut ws, "apply").unwrap();
            }
        }
        store.close().map_err(|e| e.to_string())
    };
    let backup = |shoot: &str| {
        let text = fs::read_to_string(dir.join("backups").join(format!("{shoot}.json"))).unwrap();
        WorkspaceFile::parse("backup", &text).unwrap()
    };
    run(2).unwrap();
    for shoot in &shoots {
        let ws = backup(shoot);
        assert_eq!((ws.shoot.as_str(), ws.serial), (shoot.as_str(), 2));
        assert_eq!(ws.outputs.unwrap()["step"], format!("{shoot} 2"));
    }

    // One backup cannot be replaced (a directory where its file goes): the close says so; every
    // other backup is the version this run left.
    let blocked = &shoots[77];
    fs::remove_file(dir.join("backups").join(format!("{blocked}.json"))).unwrap();
    fs::create_dir(dir.join("backups").join(format!("{blocked}.json"))).unwrap();
    let err = run(1).unwrap_err();
    assert!(err.contains("writing a backup into") && err.contains(&dir.display().to_string()), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for shoot in shoots.iter().filter(|s| *s != blocked) {
        assert_eq!(backup(shoot).serial, 3, "{shoot}");
    }
    assert_eq!(open(dir).load(blocked).unwrap().unwrap().serial, 3, "the commits themselves are kept");
}

/// The seal as state format 2 wrote it (byte for byte): each of sled's files with its length and SHA-256.
fn sha256_seal(dir: &Path) -> String {
    use sha2::Digest as _;
    let files: Vec<String> = sled_files(dir)
        .into_iter()
        .map(|(rel, bytes)| {
            format!(
                "    {{\n      \"name\": \"{}\",\n      \"len\": {},\n      \"sha256\": \"{}\"\n    }}",
                rel.to_string_lossy(),
                bytes.len(),
                hex::encode(sha2::Sha256::digest(&bytes))
            )
        })
        .collect();
    format!("{{\n  \"state\": \"closed\",\n  \"files\": [\n{}\n  ]\n}}\n", files.join(",\n"))
}

/// Whether the two snapshots of a dir are the same (without printing megabytes when they are not). In
/// `seal.json` the files' stamps (what the file system says of them: inode and times, which sled's open
/// moves without changing a byte) are left out: every run writes the seal with the stamps it found.
#[track_caller]
fn assert_same_files(now: &BTreeMap<PathBuf, Vec<u8>>, before: &BTreeMap<PathBuf, Vec<u8>>, what: &str) {
    let unstamped = |bytes: Option<&Vec<u8>>| {
        let mut seal: serde_json::Value = serde_json::from_slice(bytes?).ok()?;
        for file in seal["files"].as_array_mut()? {
            file.as_object_mut()?.remove("stat");
        }
        Some(seal)
    };
    let differ = |k: &PathBuf| match k.to_str() {
        Some("seal.json") => unstamped(now.get(k)) != unstamped(before.get(k)),
        _ => now.get(k) != before.get(k),
    };
    let changed: Vec<_> =
        now.keys().chain(before.keys()).filter(|k| differ(k)).map(|k| k.display().to_string()).collect();
    assert!(changed.is_empty(), "{what}: changed {changed:?}");
}

fn marker_version(dir: &Path) -> u64 {
    let marker: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("trellis-state.json")).unwrap()).unwrap();
    marker["format_version"].as_u64().unwrap()
}

#[test]
fn regression_the_seal_hashes_with_blake3_and_format_2_seals_still_verify() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let ws = committed(dir, 2);
    // The seal names its algorithm: BLAKE3 (state formats 3 and 4).
    let seal: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("seal.json")).unwrap()).unwrap();
    let sealed = seal["files"].as_array().unwrap();
    assert!(!sealed.is_empty());
    for file in sealed {
        assert_eq!(file["blake3"].as_str().map(str::len), Some(64), "{file}");
        assert!(file.get("sha256").is_none(), "{file}");
    }
    assert_eq!(marker_version(dir), 4);

    // What state format 2 left: a SHA-256 seal. It opens in place, and a run that only reads leaves it
    // (and everything else) byte for byte as it was.
    fs::write(dir.join("seal.json"), sha256_seal(dir)).unwrap();
    fs::write(dir.join("trellis-state.json"), r#"{"kind": "trellis-state", "format_version": 2}"#).unwrap();
    let before = files(dir);
    let store = open(dir);
    assert!(!dir.join(".verify").exists(), "a matching seal opens in place, without verifying a copy");
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws));
    store.close().unwrap();
    assert_same_files(&files(dir), &before, "a run that only reads");

    // A SHA-256 seal still catches a change to the database, which is left as found.
    let db = dir.join("db");
    let good = fs::read(&db).unwrap();
    let mut bad = good.clone();
    let at = bad.len() / 2;
    bad[at..at + 16].copy_from_slice(b"XXXXXXXXXXXXXXXX");
    fs::write(&db, &bad).unwrap();
    let msg = assert_damaged(SledStore::open(dir, "plan"), "changed after trellis last closed it");
    assert!(msg.contains("sha256"), "{msg}");
    assert_eq!(fs::read(&db).unwrap(), bad);
    fs::write(&db, &good).unwrap();

    // The first run that writes reseals with BLAKE3 and marks the dir format 4.
    let ws = committed(dir, 1);
    assert_eq!(ws.serial, 3);
    let seal: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("seal.json")).unwrap()).unwrap();
    assert!(seal["files"].as_array().unwrap().iter().all(|f| f.get("blake3").is_some() && f.get("sha256").is_none()));
    assert_eq!(marker_version(dir), 4);
    let before = files(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap().unwrap().serial, 3);
    assert_same_files(&files(dir), &before, "a BLAKE3 seal is kept by a run that only reads");
}

#[test]
fn regression_a_workspace_this_trellis_cannot_read_does_not_refuse_the_whole_state_dir() {
    use sha2::Digest as _;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    const BRAVO: &str = "shoot--dev--bravo";
    let store = open(dir);
    for shoot in [SHOOT, BRAVO] {
        let mut ws = Workspace::new(shoot);
        ws.record_resource(
            "azure.resource_group.rg",
            trellis_state::StoredResource {
                kind: trellis_state::Kind::new("resource_group"),
                id: "/subscriptions/s/resourceGroups/rg".to_string(),
                ownership: trellis_state::Ownership::Managed,
            },
        );
        store.commit(&mut ws, "apply").unwrap();
    }
    store.close().unwrap();

    // A newer trellis stored alpha's resource record with an ownership this one does not know, and its
    // head (whose digest covers the records) and head record. (A kind this trellis has no provider for
    // reads: kinds are names, not a closed list.)
    let (stored, checksum) = {
        let db = sled::Config::new().path(dir).open().unwrap();
        let (heads, parts) = (db.open_tree("workspace_heads").unwrap(), db.open_tree("workspace_parts").unwrap());
        let mut prefix = SHOOT.as_bytes().to_vec();
        prefix.push(0xFF);
        let (key, raw) = parts.scan_prefix(&prefix).next().unwrap().unwrap();
        let newer = String::from_utf8(raw.to_vec()).unwrap().replace("\"managed\"", "\"borrowed\"");
        assert_ne!(newer.as_bytes(), &raw[..]);
        parts.insert(&key, newer.as_bytes()).unwrap();
        let hash = |value: &[u8]| {
            let mut h = blake3::Hasher::new();
            h.update(&(key.len() as u64).to_le_bytes());
            h.update(&key);
            h.update(value);
            *h.finalize().as_bytes()
        };
        let mut head: serde_json::Value = serde_json::from_slice(&heads.get(SHOOT).unwrap().unwrap()).unwrap();
        let mut digest = hex::decode(head["parts"].as_str().unwrap()).unwrap();
        for (d, (a, b)) in digest.iter_mut().zip(hash(&raw).iter().zip(hash(newer.as_bytes()).iter())) {
            *d ^= a ^ b;
        }
        head["parts"] = serde_json::json!(hex::encode(digest));
        let head = serde_json::to_vec(&head).unwrap();
        heads.insert(SHOOT, head.as_slice()).unwrap();
        db.flush().unwrap();
        let checksum = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&head)));
        (newer, checksum)
    };
    let mut heads = journal(dir);
    for head in heads.iter_mut().filter(|h| h["shoot"] == SHOOT) {
        head["checksum"] = serde_json::json!(checksum);
    }
    let lines: Vec<String> = heads.iter().map(|h| format!("{h}\n")).collect();
    fs::write(dir.join("heads.log"), lines.concat()).unwrap();
    as_if_the_last_run_was_killed(dir);
    assert!(stored.contains("borrowed"));

    // The dir opens; the other workspace reads; alpha is refused when it is read, naming what is wrong.
    let store = SledStore::open(dir, "plan").expect("one unreadable workspace does not make the dir damaged");
    assert_eq!(store.load(BRAVO).unwrap().unwrap().serial, 1);
    let err = store.load(SHOOT).expect_err("alpha cannot be read by this trellis");
    assert!(matches!(err, StateError::Corrupt { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(SHOOT) && msg.contains("borrowed"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    let listed: Vec<_> = store.list().unwrap().into_iter().map(|w| (w.shoot, w.resources)).collect();
    assert_eq!(listed, [(SHOOT.to_string(), 1), (BRAVO.to_string(), 1)]);
}

/// A resource record with this address and resource id.
fn rg(ws: &mut Workspace, name: &str, id: &str) {
    ws.record_resource(
        &format!("azure.resource_group.{name}"),
        trellis_state::StoredResource {
            kind: trellis_state::Kind::new("resource_group"),
            id: id.to_string(),
            ownership: trellis_state::Ownership::Managed,
        },
    );
}

/// sled's database in `dir`, opened directly (retried while a store that just closed lets go of it).
fn raw_sled(dir: &Path) -> sled::Db {
    for _ in 0..150 {
        if let Ok(db) = sled::Config::new().path(dir).open() {
            return db;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("sled's files in {} stay locked", dir.display());
}

/// Every entry of a tree (empty when the tree does not exist).
fn tree_entries(dir: &Path, name: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = raw_sled(dir);
    let tree = db.open_tree(name).unwrap();
    tree.iter().map(|item| item.unwrap()).map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
}

#[test]
fn regression_a_commit_writes_only_the_changed_resource_record_and_the_head() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let store = open(dir);
    let mut ws = Workspace::new(SHOOT);
    for i in 0..20 {
        rg(&mut ws, &format!("rg{i:02}"), &format!("/subscriptions/s/resourceGroups/rg{i:02}"));
    }
    note(&mut ws, "step", "1");
    store.commit(&mut ws, "apply").unwrap();
    store.close().unwrap();
    let before = tree_entries(dir, "workspace_parts");
    assert_eq!(before.len(), 21, "one key per resource record, one for the outputs");
    assert!(tree_entries(dir, "workspaces").is_empty(), "no workspace is stored whole");

    // A node commit changes one resource: only its record (and the head) is written.
    let store = open(dir);
    let mut ws = store.load(SHOOT).unwrap().unwrap();
    rg(&mut ws, "rg07", "/subscriptions/s/resourceGroups/rg07-new");
    store.commit(&mut ws, "apply").unwrap();
    store.close().unwrap();
    let after = tree_entries(dir, "workspace_parts");
    let changed: Vec<String> = after
        .keys()
        .chain(before.keys())
        .filter(|k| after.get(*k) != before.get(*k))
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].ends_with("azure.resource_group.rg07"), "{changed:?}");
    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()));
    assert_eq!(store.list().unwrap()[0].resources, 20);

    // A resource forgotten and the outputs dropped: their records are removed.
    let mut ws = store.load(SHOOT).unwrap().unwrap();
    ws.forget_resource("azure.resource_group.rg03", "");
    ws.outputs = None;
    store.commit(&mut ws, "apply").unwrap();
    store.close().unwrap();
    assert_eq!(tree_entries(dir, "workspace_parts").len(), 19);
    as_if_the_last_run_was_killed(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap(), Some(ws));
}

#[test]
fn regression_a_changed_added_or_removed_resource_record_is_damage() {
    let clean = tempfile::tempdir().unwrap();
    let store = open(clean.path());
    for shoot in [SHOOT, "shoot--dev--bravo"] {
        let mut ws = Workspace::new(shoot);
        rg(&mut ws, "a", "/subscriptions/s/resourceGroups/a");
        rg(&mut ws, "b", "/subscriptions/s/resourceGroups/b");
        store.commit(&mut ws, "apply").unwrap();
    }
    store.close().unwrap();
    let mut prefix = SHOOT.as_bytes().to_vec();
    prefix.push(0xFF);
    type Damage = fn(&sled::Tree, &[u8], &[u8]);
    let damages: [(&str, Damage); 3] = [
        ("changed", |parts, key, value| {
            let other = String::from_utf8(value.to_vec()).unwrap().replace("resourceGroups/", "resourceGroups/x");
            parts.insert(key, other.as_bytes()).unwrap();
        }),
        ("removed", |parts, key, _| {
            parts.remove(key).unwrap();
        }),
        ("added", |parts, key, value| {
            let mut other = key.to_vec();
            other.extend_from_slice(b"2");
            parts.insert(other, value).unwrap();
        }),
    ];
    for (what, damage) in damages {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("state");
        copy_dir(clean.path(), &dir);
        {
            let db = raw_sled(&dir);
            let parts = db.open_tree("workspace_parts").unwrap();
            let (key, value) = parts.scan_prefix(&prefix).next().unwrap().unwrap();
            damage(&parts, &key, &value);
            db.flush().unwrap();
        }
        // After a killed run the records are checked against their head, on a copy.
        as_if_the_last_run_was_killed(&dir);
        let before = files(&dir);
        let msg = assert_damaged(
            SledStore::open(&dir, "plan"),
            &format!("the records of workspace {SHOOT} do not match its head"),
        );
        assert!(!msg.contains("bravo"), "{what}: {msg}");
        assert_eq!(files(&dir), before, "{what}: left as found");
    }
}

/// A state dir as trellis of state format 3 left it: each workspace stored whole, its history entry,
/// its head record, a BLAKE3 seal.
fn format_3_dir(dir: &Path, ws: &Workspace) -> String {
    use sha2::Digest as _;
    let raw = serde_json::to_vec(ws).unwrap();
    let checksum = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&raw)));
    {
        let db = raw_sled(dir);
        db.open_tree("workspaces").unwrap().insert(SHOOT, raw.as_slice()).unwrap();
        db.open_tree("locks").unwrap();
        let mut key = SHOOT.as_bytes().to_vec();
        key.push(0xFF);
        key.extend_from_slice(&ws.serial.to_be_bytes());
        let entry = serde_json::json!({"serial": ws.serial, "operation": "apply", "at": "2026-11-30T12:00:00Z",
            "resources": ws.resources.len(), "checksum": checksum, "previous": "sha256:00"});
        db.open_tree("history").unwrap().insert(key, serde_json::to_vec(&entry).unwrap()).unwrap();
        db.flush().unwrap();
    }
    drop(raw_sled(dir)); // sled settles its files on the open after a write, as trellis' close does
    let head = serde_json::json!({"shoot": SHOOT, "lineage": ws.lineage, "serial": ws.serial, "checksum": checksum});
    fs::write(dir.join("heads.log"), format!("{head}\n")).unwrap();
    fs::write(dir.join("trellis-state.json"), r#"{"kind": "trellis-state", "format_version": 3}"#).unwrap();
    // The seal as trellis writes it (byte for byte), with BLAKE3.
    let files: Vec<String> = sled_files(dir)
        .into_iter()
        .map(|(rel, bytes)| {
            format!(
                "    {{\n      \"name\": \"{}\",\n      \"len\": {},\n      \"blake3\": \"{}\"\n    }}",
                rel.to_string_lossy(),
                bytes.len(),
                blake3::hash(&bytes).to_hex()
            )
        })
        .collect();
    let seal = format!("{{\n  \"state\": \"closed\",\n  \"files\": [\n{}\n  ]\n}}\n", files.join(",\n"));
    fs::write(dir.join("seal.json"), seal).unwrap();
    checksum
}

#[test]
fn regression_a_format_3_state_dir_is_read_as_it_is_and_moved_to_records_by_its_first_write() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let mut ws = Workspace::new(SHOOT);
    ws.serial = 2;
    rg(&mut ws, "a", "/subscriptions/s/resourceGroups/a");
    rg(&mut ws, "b", "/subscriptions/s/resourceGroups/b");
    note(&mut ws, "step", "2");
    let old_checksum = format_3_dir(dir, &ws);

    // A run that only reads leaves it byte for byte as it was.
    let before = files(dir);
    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()));
    assert_eq!(store.list().unwrap()[0].resources, 2);
    store.close().unwrap();
    assert_same_files(&files(dir), &before, "a run that only reads a format-3 dir");

    // The first commit moves the workspace to one record per resource and marks the dir format 4.
    let store = open(dir);
    let mut next = store.load(SHOOT).unwrap().unwrap();
    rg(&mut next, "b", "/subscriptions/s/resourceGroups/b2");
    store.commit(&mut next, "apply").unwrap();
    store.close().unwrap();
    assert_eq!(marker_version(dir), 4);
    assert!(tree_entries(dir, "workspaces").is_empty(), "no longer stored whole");
    assert_eq!(tree_entries(dir, "workspace_parts").len(), 3, "two resource records and the outputs");
    assert_eq!(head_serial(dir, SHOOT), 3);

    // It verifies after a killed run, and its history links the new layout to the old version.
    as_if_the_last_run_was_killed(dir);
    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap(), Some(next));
    let history = store.history(SHOOT).unwrap();
    assert_eq!(history.iter().map(|e| e.serial).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(history[1].previous.as_deref(), Some(old_checksum.as_str()));
}

#[test]
fn regression_concurrent_first_commits_to_a_format_3_dir_all_succeed() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let mut ws = Workspace::new(SHOOT);
    ws.serial = 1;
    format_3_dir(dir, &ws);
    // The first commits of a fleet apply arrive together; one of them moves the dir to format 4.
    let store = open(dir);
    std::thread::scope(|s| {
        for i in 0..8 {
            let store = &store;
            s.spawn(move || {
                let mut ws = Workspace::new(&format!("shoot--dev--s{i}"));
                rg(&mut ws, "a", "/subscriptions/s/resourceGroups/a");
                store.commit(&mut ws, "apply").unwrap();
            });
        }
    });
    store.close().unwrap();
    assert_eq!(marker_version(dir), 4);
    as_if_the_last_run_was_killed(dir);
    assert_eq!(open(dir).list().unwrap().len(), 9);
}

/// A load reads the workspace's head and its records with separate sled calls; a commit of the same
/// workspace landing in between made the records disagree with the head read before them, and the load
/// reported a healthy workspace as damaged ("its records do not match its head").
#[test]
fn regression_a_load_during_commits_of_the_same_workspace_is_never_reported_as_damage() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let (store, done) = (&store, &done);
        s.spawn(move || {
            let mut ws = Workspace::new(SHOOT);
            for n in 0..400 {
                note(&mut ws, "step", &n.to_string());
                store.commit(&mut ws, "apply").unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        for _ in 0..2 {
            s.spawn(move || {
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    if let Err(e) = store.load(SHOOT) {
                        panic!("a load while the workspace is being committed failed: {e}");
                    }
                }
            });
        }
    });
}

/// `state rm` of a whole workspace: gone from `list` and `load`, its head record dropped from the
/// journal, its history kept under its removed name with the removal's entry last; the next open is
/// clean, and the workspace can be started again or pushed back. A run killed after the removal was
/// durable but before the journal was rewritten (the journal still names the removed version) is not
/// damage — the removal's entry proves it —; a head naming any other version without a workspace is.
#[test]
fn regression_a_removed_workspace_is_gone_its_history_kept_and_an_interrupted_removal_is_not_damage() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let ws = committed(dir, 2);
    let head_of_2 = fs::read(dir.join("heads.log")).unwrap();
    let store = open(dir);
    let stale = store.remove(SHOOT, &ws.lineage, 1).unwrap_err();
    assert!(matches!(stale, StateError::Conflict { .. }), "{stale:?}");
    let name = store.remove(SHOOT, &ws.lineage, 2).unwrap();
    assert_eq!(name, trellis_state::removed_name(SHOOT, &ws.lineage, 2));
    assert!(name.starts_with(&format!("{SHOOT}.removed-2-")), "{name}");
    assert!(store.load(SHOOT).unwrap().is_none());
    assert!(store.list().unwrap().is_empty());
    assert!(store.history(SHOOT).unwrap().is_empty(), "the shoot starts again without a history");
    let kept = store.history(&name).unwrap();
    let ops: Vec<(u64, &str)> = kept.iter().map(|e| (e.serial, e.operation.as_str())).collect();
    assert_eq!(ops, [(1, "apply"), (2, "apply"), (3, "state rm")]);
    assert!(kept[2].checksum.is_none() && kept[2].previous == kept[1].checksum, "{:?}", kept[2]);
    let again = store.remove(SHOOT, &ws.lineage, 2).unwrap_err();
    assert!(matches!(again, StateError::Conflict { .. }), "{again:?}");
    store.close().unwrap();
    assert!(journal(dir).is_empty(), "the removed workspace has no head record");
    assert!(open(dir).load(SHOOT).unwrap().is_none());

    // Killed before the journal was rewritten: its head record still names serial 2.
    fs::write(dir.join("heads.log"), &head_of_2).unwrap();
    as_if_the_last_run_was_killed(dir);
    let store = open(dir);
    assert!(store.load(SHOOT).unwrap().is_none());
    // Started again: a new lineage, whose commits supersede the head record.
    let mut fresh = Workspace::new(SHOOT);
    store.commit(&mut fresh, "apply").unwrap();
    store.close().unwrap();
    as_if_the_last_run_was_killed(dir);
    assert_eq!(open(dir).load(SHOOT).unwrap().unwrap().lineage, fresh.lineage);

    // A head record of a version that was never removed, without its workspace, is damage.
    let work = tempfile::tempdir().unwrap();
    let other = work.path();
    let ws = committed(other, 2);
    let head_of_2 = fs::read(other.join("heads.log")).unwrap();
    let store = open(other);
    store.remove(SHOOT, &ws.lineage, 2).unwrap();
    store.close().unwrap();
    let last = head_of_2.trim_ascii_end().split(|&b| b == b'\n').next_back().unwrap();
    let mut forged: serde_json::Value = serde_json::from_slice(last).unwrap();
    forged["serial"] = serde_json::json!(1);
    fs::write(other.join("heads.log"), format!("{forged}\n")).unwrap();
    as_if_the_last_run_was_killed(other);
    assert_damaged(SledStore::open(other, "plan"), "is missing from the database");

    // The backup restores it: `push` into the state where it is gone.
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let ws = committed(dir, 1);
    let backup = dir.join("removed.json");
    WorkspaceFile::write_new(&backup, &ws).unwrap();
    let exists = WorkspaceFile::write_new(&backup, &ws).unwrap_err();
    assert_eq!(exists.kind(), std::io::ErrorKind::AlreadyExists, "a backup is never overwritten");
    let store = open(dir);
    store.remove(SHOOT, &ws.lineage, 1).unwrap();
    let restored = WorkspaceFile::parse("removed.json", &fs::read_to_string(&backup).unwrap()).unwrap();
    assert_eq!(store.push(&restored, false).unwrap(), 2);
    store.close().unwrap();
    let back = open(dir).load(SHOOT).unwrap().unwrap();
    assert_eq!((back.lineage, back.outputs), (ws.lineage, ws.outputs));
}

/// Issue #27: an open costs what the command touches. A head record that no longer names its workspace
/// (here the journal edited after a clean close, which the seal does not cover) is found when that
/// workspace is read — by `load` and by `list` — and the other workspaces are used as before; the open
/// itself no longer reads every workspace.
#[test]
fn regression_a_workspace_is_checked_against_its_head_when_it_is_read_not_at_open() {
    const BRAVO: &str = "shoot--dev--bravo";
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let store = open(dir);
    for shoot in [SHOOT, BRAVO] {
        let mut ws = Workspace::new(shoot);
        note(&mut ws, "step", "1");
        store.commit(&mut ws, "apply").unwrap();
        note(&mut ws, "step", "2");
        store.commit(&mut ws, "apply").unwrap();
    }
    store.close().unwrap();
    // alpha's head record now says serial 7: its stored version is behind its head (a rollback).
    let mut heads = journal(dir);
    for head in heads.iter_mut().filter(|h| h["shoot"] == SHOOT) {
        head["serial"] = serde_json::json!(7);
    }
    let lines: Vec<String> = heads.iter().map(|h| format!("{h}\n")).collect();
    fs::write(dir.join("heads.log"), lines.concat()).unwrap();

    let store = SledStore::open(dir, "plan").expect("the open reads no workspace");
    assert_eq!(store.load(BRAVO).unwrap().unwrap().serial, 2, "the other workspace is used as before");
    for (what, err) in [("load", store.load(SHOOT).err()), ("list", store.list().err())] {
        let err = err.unwrap_or_else(|| panic!("{what} of a workspace behind its head must fail"));
        assert!(matches!(err, StateError::Damaged { .. }), "{what}: {err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("workspace {SHOOT} is stored at serial 2")) && msg.contains("says serial 7"),
            "{msg}"
        );
        assert!(!msg.contains(BRAVO), "{what}: {msg}");
    }
    store.close().unwrap();
}

/// The seal records each of sled's files with its stamp (inode, modification and change time): an
/// open hashes only the files whose stamp moved. A seal whose stamps match is trusted without reading
/// the files (here its hash is garbage and the dir opens); once a file's stamp moves, its content is
/// hashed and compared — garbage no longer matches, and the dir is refused as changed.
#[test]
fn regression_the_seal_hashes_only_the_files_whose_stamp_moved() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    committed(dir, 2);
    let seal_path = dir.join("seal.json");
    let mut seal: serde_json::Value = serde_json::from_slice(&fs::read(&seal_path).unwrap()).unwrap();
    let files = seal["files"].as_array_mut().unwrap();
    assert!(files.iter().all(|f| f["stat"]["inode"].is_u64()), "every sealed file has its stamp: {files:?}");
    let db = files.iter_mut().find(|f| f["name"] == "db").expect("db is sealed");
    db["blake3"] = serde_json::json!("0".repeat(64));
    fs::write(&seal_path, serde_json::to_vec_pretty(&seal).unwrap()).unwrap();

    // Stamps match: nothing is hashed, so the garbage hash is not noticed, by this open nor by the next
    // (a run that only reads hashes nothing at its close either: the seal keeps its hashes).
    for _ in 0..2 {
        let store = SledStore::open(dir, "plan").expect("a seal whose stamps match is trusted");
        assert_eq!(store.load(SHOOT).unwrap().unwrap().serial, 2);
        store.close().unwrap();
        let seal: serde_json::Value = serde_json::from_slice(&fs::read(&seal_path).unwrap()).unwrap();
        let db = seal["files"].as_array().unwrap().iter().find(|f| f["name"] == "db").unwrap().clone();
        assert_eq!(db["blake3"], serde_json::json!("0".repeat(64)), "{seal}");
    }

    // db's modification time moves (its content does not): now it is hashed, and differs from the seal.
    let file = fs::OpenOptions::new().write(true).open(dir.join("db")).unwrap();
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600)).unwrap();
    drop(file);
    assert_damaged(SledStore::open(dir, "plan"), "changed after trellis last closed it");
}

/// A copy of a state dir (new inodes, so no stamp matches) opens: its files are hashed and match the
/// seal; the next run that writes seals them with their new stamps.
#[test]
fn regression_a_copied_state_dir_is_hashed_once_and_opens() {
    let work = tempfile::tempdir().unwrap();
    let original = work.path().join("original");
    committed(&original, 2);
    let copy = work.path().join("copy");
    copy_dir(&original, &copy);
    let store = SledStore::open(&copy, "plan").expect("a copy matches its seal by content");
    assert_eq!(store.load(SHOOT).unwrap().unwrap().serial, 2);
    store.close().unwrap();
    committed(&copy, 1);
    assert_eq!(open(&copy).load(SHOOT).unwrap().unwrap().serial, 3);
}

/// What makes a read-only run's close cheap: sled's open of files it closed cleanly rewrites the tail of
/// its active segment with the bytes already there. Were that ever not so, the seal after a plan would
/// name a content the files no longer have; so after an apply and two plans, the sealed hashes are
/// those of the files.
#[test]
fn regression_the_seal_after_runs_that_only_read_names_the_content_of_the_files() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    committed(dir, 3);
    for _ in 0..2 {
        let store = SledStore::open(dir, "plan").unwrap();
        assert_eq!(store.load(SHOOT).unwrap().unwrap().serial, 3);
        store.close().unwrap();
    }
    let seal: serde_json::Value = serde_json::from_slice(&fs::read(dir.join("seal.json")).unwrap()).unwrap();
    let files = seal["files"].as_array().unwrap();
    assert!(files.iter().any(|f| f["name"] == "db"), "{seal}");
    for file in files {
        let name = file["name"].as_str().unwrap();
        let hash = blake3::hash(&fs::read(dir.join(name)).unwrap()).to_hex().to_string();
        assert_eq!(file["blake3"].as_str(), Some(hash.as_str()), "{name}: the seal names its content");
    }
}

/// Issue #27: an open reads of `heads.log` only which shoot each record is of; a workspace's record is
/// read when the workspace is. A garbled record of one shoot (in a dir closed cleanly) no longer keeps
/// every other shoot from being planned: loading that one shoot is refused, naming the record; the
/// others load, commit and compact the journal, which copies the unread record as it is, so the damage
/// stays where the next load of that shoot finds it.
#[test]
fn regression_a_garbled_head_record_is_found_when_its_workspace_is_read_not_at_open() {
    const OTHER: &str = "shoot--dev--bravo";
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let ws = committed(dir, 1);
    let store = open(dir);
    store.commit(&mut Workspace::new(OTHER), "apply").unwrap();
    store.close().unwrap();
    let log = dir.join("heads.log");
    let text = fs::read_to_string(&log).unwrap();
    let garbled = text.replacen(
        &format!("{{\"shoot\":\"{OTHER}\",\"lineage\""),
        &format!("{{\"shoot\":\"{OTHER}\",\"lineXage\""),
        1,
    );
    assert_ne!(garbled, text);
    fs::write(&log, &garbled).unwrap();

    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()), "the other shoot is read as it was");
    let refused = |store: &SledStore| {
        let err = store.load(OTHER).expect_err("a workspace whose head record does not read");
        assert!(matches!(err, StateError::Damaged { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("record 2 of the heads journal") && msg.contains("heads.log"), "{msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
    };
    refused(&store);
    // Enough commits of the other shoot that the close rewrites the journal with a record per shoot.
    let mut ws = ws;
    for step in ["a", "b", "c", "d"] {
        note(&mut ws, "step", step);
        store.commit(&mut ws, "apply").unwrap();
    }
    store.close().unwrap();
    assert_eq!(fs::read_to_string(&log).unwrap().lines().count(), 2, "compacted");
    let store = open(dir);
    assert_eq!(store.load(SHOOT).unwrap().unwrap().serial, ws.serial);
    refused(&store);
}
