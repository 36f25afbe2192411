//! The PostgreSQL state backend against a real, throwaway server (see the `trellis-pgtest` crate): the
//! behaviours every backend has, locks across sessions, killed clients, dropped connections, server
//! restarts, concurrency, integrity, schema versions, and calls from every kind of thread.

// As in the crate: `StateError` carries a `LockInfo` by value; errors are rare.
#![allow(clippy::result_large_err)]

use crate::common;

use common::behaviour::{self, workspace_with_one_resource, SHOOT};
use common::{connect, database, db_name};
use std::sync::Arc;
use std::time::Duration;
use trellis_pgtest::PgServer;
use trellis_state::{
    Acquired, LockInfo, LockRelease, PgStore, PgUrl, StateError, StateLocation, StateStore, Workspace,
};

#[test]
fn pg_commit_increments_serial_and_survives_reconnect() {
    let (_server, url) = database("commit");
    let store = connect(&url);
    let ws = behaviour::commit_increments_serial(&store);
    store.close().unwrap();
    let store = connect(&url);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws));
    assert_eq!(store.history(SHOOT).unwrap().len(), 2);
    assert!(store.stats().calls >= 2);
}

#[test]
fn pg_list_is_sorted_and_histories_do_not_mix() {
    let (_server, url) = database("list");
    behaviour::list_is_sorted_and_histories_do_not_mix(&connect(&url));
}

#[test]
fn pg_stale_commits_are_refused_and_write_nothing() {
    let (_server, url) = database("stale");
    behaviour::stale_commits_are_refused(&connect(&url));
}

#[test]
fn pg_locks_name_their_holder_and_unlock_needs_the_id() {
    let (_server, url) = database("locks");
    behaviour::locks(&connect(&url));
}

#[test]
fn pg_push_refuses_rollbacks_and_stores_above_both() {
    let (_server, url) = database("push");
    behaviour::push(&connect(&url));
}

#[test]
fn pg_remove_forgets_the_workspace_and_keeps_its_history_under_its_removed_name() {
    let (_server, url) = database("remove");
    behaviour::remove(&connect(&url));
}

#[test]
fn pg_export_and_import_keep_lineage_serial_and_history() {
    let (server, url) = database("export");
    let into: PgUrl = server.create_database("import").unwrap().parse().unwrap();
    behaviour::export_import(&connect(&url), &connect(&into));
}

#[test]
fn pg_two_machines_locking_one_shoot_one_is_refused_naming_the_holder() {
    let (_server, url) = database("two_machines");
    let (first, second) = (connect(&url), connect(&url));
    let apply = LockInfo { host: "runner-1".to_string(), ..LockInfo::here("apply") };
    assert_eq!(first.lock(SHOOT, &apply).unwrap(), Acquired::Fresh);
    let err = second.lock(SHOOT, &LockInfo { host: "runner-2".to_string(), ..LockInfo::here("apply") }).unwrap_err();
    assert!(matches!(&err, StateError::Locked { holder, .. } if *holder == apply), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("runner-1") && msg.contains(&format!("pid {}", apply.pid)) && msg.contains(&apply.created));
    assert_eq!(second.lock_holder(SHOOT).unwrap(), Some(apply.clone()));
    assert_eq!(second.list().unwrap()[0].locked_by, Some(apply.clone()));
    // The same lock id from another session is still someone else's session lock.
    assert!(matches!(second.lock(SHOOT, &apply), Err(StateError::Locked { .. })));
    // `state unlock` cannot free a live session's lock: refused, naming the holder, and the record kept
    // (it removed the record and said "Removed the lock" while the lock stayed in force).
    let err = second.force_unlock(SHOOT).unwrap_err();
    assert!(
        matches!(&err, StateError::Locked { holder, release: LockRelease::Session, .. } if *holder == apply),
        "{err:?}"
    );
    assert!(err.to_string().contains("nothing to unlock by hand"), "{err}");
    assert_eq!(second.lock_holder(SHOOT).unwrap(), Some(apply.clone()));
    first.close().unwrap();
    // Closing released it, record and all.
    assert_eq!(second.lock_holder(SHOOT).unwrap(), None);
    assert_eq!(second.lock(SHOOT, &LockInfo::here("plan")).unwrap(), Acquired::Fresh);
}

#[test]
fn pg_a_store_dropped_without_close_frees_its_locks() {
    let (_server, url) = database("dropped_store");
    let killed = connect(&url);
    let apply = LockInfo::here("apply");
    killed.lock(SHOOT, &apply).unwrap();
    drop(killed); // as a killed process: its sessions end, its lock record stays behind
    let next = connect(&url);
    assert_eq!(next.lock_holder(SHOOT).unwrap(), None, "a record whose session is gone holds nothing");
    // The server notices the closed session a moment later; the lock must then be free.
    let mut tries = 0;
    let taken = loop {
        match next.lock(SHOOT, &LockInfo::here("apply")) {
            Ok(taken) => break taken,
            Err(StateError::Locked { .. }) if tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("the dropped store's lock was not freed: {e}"),
        }
    };
    assert_eq!(taken, Acquired::BrokeStale(apply));
}

/// Not a check of its own: with `TRELLIS_PG_TEST_HOLD_LOCK=URL` set, this is the child process of
/// `pg_a_killed_process_s_locks_are_free_for_the_next`: it locks SHOOT, says `LOCKED` and waits to be
/// killed. Without the variable it does nothing.
#[test]
fn hold_lock_child() {
    let Ok(url) = std::env::var("TRELLIS_PG_TEST_HOLD_LOCK") else { return };
    let store = connect(&url.parse().unwrap());
    store.lock(SHOOT, &LockInfo::here("apply")).unwrap();
    println!("LOCKED");
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn pg_a_killed_process_s_locks_are_free_for_the_next() {
    use std::io::{BufRead, BufReader};
    let (_server, url) = database("killed");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "pg_store::hold_lock_child", "--nocapture", "--test-threads=1"])
        .env("TRELLIS_PG_TEST_HOLD_LOCK", url.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|l| l.is_ok_and(|l| l.contains("LOCKED"))), "the child did not lock");
    let store = connect(&url);
    let held = store.lock(SHOOT, &LockInfo::here("apply")).unwrap_err();
    assert!(matches!(&held, StateError::Locked { holder, .. } if holder.pid == child.id()), "{held:?}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let mut tries = 0;
    loop {
        match store.lock(SHOOT, &LockInfo::here("apply")) {
            Ok(Acquired::BrokeStale(old)) => {
                assert_eq!(old.pid, child.id());
                break;
            }
            Err(StateError::Locked { .. }) if tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            other => panic!("expected the killed child's lock to be taken over, got {other:?}"),
        }
    }
}

#[test]
fn pg_a_dropped_connection_between_two_commits_loses_nothing() {
    let (server, url) = database("dropped_connection");
    let store = connect(&url);
    let apply = LockInfo::here("apply");
    store.lock(SHOOT, &apply).unwrap();
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();
    assert!(server.kill_connections(&db_name(&url)).unwrap() >= 2, "the pool's and the lock's sessions");
    ws.outputs = Some(serde_json::json!({"after": "reconnect"}));
    store.commit(&mut ws, "apply").unwrap();
    assert_eq!(ws.serial, 2);
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()));
    assert_eq!(store.history(SHOOT).unwrap().len(), 2);
    // Its lock was taken again on the new lock connection.
    let other = connect(&url);
    assert!(matches!(other.lock(SHOOT, &LockInfo::here("plan")), Err(StateError::Locked { .. })));
    assert_eq!(other.lock_holder(SHOOT).unwrap(), Some(apply));
}

/// A login role `NAME_<db>` with the documented run-time grants on a migrated database, and its URL.
fn dml_role(server: &PgServer, url: &PgUrl, name: &str) -> PgUrl {
    let db = db_name(url);
    let role = format!("{name}_{db}");
    connect(url).close().unwrap(); // migrated by the owner
    server
        .psql(
            &db,
            &format!(
                "CREATE ROLE {role} LOGIN; GRANT CONNECT ON DATABASE {db} TO {role}; GRANT SELECT, INSERT, UPDATE, \
                 DELETE ON trellis_workspaces, trellis_history, trellis_locks, trellis_schema_migrations TO {role}"
            ),
        )
        .unwrap();
    format!("postgres://{role}@127.0.0.1:{}/{db}", server.port()).parse().unwrap()
}

#[test]
fn pg_a_lock_taken_by_another_session_while_the_connection_was_down_refuses_the_next_commit() {
    let (server, url) = database("lost_lock");
    let runner = dml_role(&server, &url, "runner");
    let role = runner.to_string().split("//").nth(1).unwrap().split('@').next().unwrap().to_string();
    let store = connect(&runner);
    store.lock(SHOOT, &LockInfo::here("apply")).unwrap();
    let mut ws = Workspace::new(SHOOT);
    store.commit(&mut ws, "apply").unwrap();
    // This runner loses its connections and cannot reconnect for a while (as in a network partition);
    // another machine takes the shoot meanwhile.
    let db = db_name(&url);
    server.psql(&db, &format!("ALTER ROLE {role} NOLOGIN")).unwrap();
    server.kill_connections(&db).unwrap();
    let other = connect(&url);
    let thief = LockInfo { host: "runner-9".to_string(), ..LockInfo::here("apply") };
    assert!(matches!(other.lock(SHOOT, &thief).unwrap(), Acquired::BrokeStale(_)));
    server.psql(&db, &format!("ALTER ROLE {role} LOGIN")).unwrap();
    let err = store.commit(&mut ws, "apply").unwrap_err();
    assert!(matches!(&err, StateError::Locked { holder, .. } if *holder == thief), "{err:?}");
    assert!(err.to_string().contains("runner-9"), "{err}");
    assert_eq!(store.load(SHOOT).unwrap().map(|w| w.serial), Some(1), "nothing committed before is lost");
}

#[test]
fn pg_locks_are_taken_again_as_soon_as_the_lock_connection_drops() {
    let (server, url) = database("retake");
    let store = connect(&url);
    let apply = LockInfo::here("apply");
    store.lock(SHOOT, &apply).unwrap();
    server.kill_connections(&db_name(&url)).unwrap();
    // No call is made on `store`: it reconnects and takes its lock again by itself.
    let other = connect(&url);
    let mut tries = 0;
    while other.lock_holder(SHOOT).unwrap().is_none() {
        tries += 1;
        assert!(tries < 100, "the lock was not taken again");
        std::thread::sleep(Duration::from_millis(50));
    }
    let err = other.lock(SHOOT, &LockInfo::here("plan")).unwrap_err();
    assert!(matches!(&err, StateError::Locked { holder, .. } if *holder == apply), "{err:?}");
}

#[test]
fn pg_a_server_restart_between_two_commits_is_survived() {
    let mut server = PgServer::start().unwrap_or_else(|e| panic!("{e}"));
    let url: PgUrl = server.create_database("restart").unwrap().parse().unwrap();
    let store = Arc::new(connect(&url));
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();
    server.restart().unwrap();
    store.commit(&mut ws, "apply").unwrap();
    assert_eq!(store.load(SHOOT).unwrap().map(|w| w.serial), Some(2));
    // Down while a commit is made: the commit waits for the server to be back.
    server.stop().unwrap();
    let committing = {
        let (store, mut ws) = (store.clone(), ws.clone());
        std::thread::spawn(move || store.commit(&mut ws, "apply").map(|()| ws.serial))
    };
    std::thread::sleep(Duration::from_millis(1500));
    server.start_again().unwrap();
    assert_eq!(committing.join().unwrap().unwrap(), 3);
    assert_eq!(store.load(SHOOT).unwrap().map(|w| w.serial), Some(3));
    assert_eq!(store.history(SHOOT).unwrap().len(), 3);
}

#[test]
fn pg_concurrent_commits_of_100_workspaces_from_8_threads() {
    let (_server, url) = database("concurrent");
    let store = Arc::new(connect(&url));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for i in (t..100).step_by(8) {
                    let mut ws = Workspace::new(&format!("shoot--load--s{i:03}"));
                    for _ in 0..3 {
                        store.commit(&mut ws, "apply").unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let list = store.list().unwrap();
    assert_eq!(list.len(), 100);
    assert!(list.iter().all(|w| w.serial == 3));
    // The same shoot from several threads: exactly one of each pair of racing commits wins.
    let mut ws = Workspace::new("shoot--load--race");
    store.commit(&mut ws, "apply").unwrap();
    let results: Vec<_> = (0..8)
        .map(|_| {
            let (store, mut ws) = (store.clone(), ws.clone());
            std::thread::spawn(move || store.commit(&mut ws, "apply").is_ok())
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(results.iter().filter(|ok| **ok).count(), 1);
    assert_eq!(store.load("shoot--load--race").unwrap().map(|w| w.serial), Some(2));
}

#[test]
fn pg_calls_work_from_async_tasks_blocking_threads_and_plain_threads() {
    let (_server, url) = database("contexts");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let store = Arc::new(rt.block_on(async {
        // Connecting from inside a runtime, too.
        connect(&url)
    }));
    let from_task = {
        let store = store.clone();
        rt.block_on(async move {
            tokio::spawn(async move {
                let mut ws = Workspace::new("shoot--ctx--task");
                store.commit(&mut ws, "apply").map(|()| ws.serial)
            })
            .await
            .unwrap()
        })
    };
    assert_eq!(from_task.unwrap(), 1);
    let from_blocking = {
        let store = store.clone();
        rt.block_on(async move {
            tokio::task::spawn_blocking(move || {
                let mut ws = Workspace::new("shoot--ctx--blocking");
                store.commit(&mut ws, "apply").map(|()| ws.serial)
            })
            .await
            .unwrap()
        })
    };
    assert_eq!(from_blocking.unwrap(), 1);
    let from_thread = {
        let store = store.clone();
        std::thread::spawn(move || store.list().map(|l| l.len())).join().unwrap()
    };
    assert_eq!(from_thread.unwrap(), 2);
    // Closing and dropping inside a runtime must not panic either.
    let store = Arc::try_unwrap(store).ok().unwrap();
    rt.block_on(async move {
        tokio::spawn(async move { store.close() }).await.unwrap().unwrap();
        let dropped = connect(&url);
        tokio::spawn(async move { drop(dropped) }).await.unwrap();
    });
}

#[test]
fn pg_a_damaged_version_is_refused_naming_shoot_and_serial() {
    let (server, url) = database("damaged");
    let store = connect(&url);
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();
    store.commit(&mut ws, "apply").unwrap();
    let db = db_name(&url);
    server
        .psql(&db, "UPDATE trellis_workspaces SET document = replace(document, '10.250.0.0/16', '10.99.0.0/16')")
        .unwrap();
    let err = store.load(SHOOT).unwrap_err();
    assert!(matches!(&err, StateError::DamagedVersion { shoot, serial: 2, .. } if shoot == SHOOT), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&url.to_string()) && msg.contains("trellis state push"), "{msg}");
    assert!(matches!(store.export(SHOOT), Err(StateError::DamagedVersion { .. })));
    // A damaged old version in the history is found by export too.
    server
        .psql(&db, "UPDATE trellis_workspaces SET document = (SELECT document FROM trellis_history WHERE serial = 2)")
        .unwrap();
    assert!(store.load(SHOOT).is_ok());
    server
        .psql(&db, "UPDATE trellis_history SET document = replace(document, '10.250', '10.98') WHERE serial = 1")
        .unwrap();
    let err = store.export(SHOOT).unwrap_err();
    assert!(matches!(&err, StateError::DamagedVersion { serial: 1, .. }), "{err:?}");
}

#[test]
fn pg_a_database_of_a_newer_schema_is_refused() {
    let (server, url) = database("newer_schema");
    connect(&url).close().unwrap();
    server.psql(&db_name(&url), "INSERT INTO trellis_schema_migrations (version) VALUES (99)").unwrap();
    let err = PgStore::connect(&url, "test").err().expect("refused");
    assert!(matches!(err, StateError::NewerSchema { version: 99, .. }), "{err:?}");
    assert!(err.to_string().ends_with("upgrade trellis"), "{err}");
}

#[test]
fn pg_first_uses_at_the_same_time_migrate_once() {
    let (server, url) = database("first_use");
    let connects: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PgStore::connect(&url, "test").map(|s| s.close()))
        })
        .collect();
    for c in connects {
        c.join().unwrap().unwrap().unwrap();
    }
    assert_eq!(server.psql(&db_name(&url), "SELECT count(*) FROM trellis_schema_migrations").unwrap(), "1");
}

#[test]
fn pg_errors_never_show_the_password() {
    let server = common::server();
    let raw = format!("postgres://trellis:hunter2secret@127.0.0.1:{}/no_such_database", server.port());
    let location: StateLocation = raw.parse().unwrap();
    assert!(!location.to_string().contains("hunter2secret"));
    let StateLocation::Postgres(url) = location else { panic!("a postgres URL") };
    let err = PgStore::connect(&url, "test").err().expect("no such database");
    let msg = err.to_string();
    assert!(!msg.contains("hunter2secret") && msg.contains("trellis:***@"), "{msg}");
    assert!(msg.contains("no_such_database") && msg.contains("createdb"), "{msg}");
    assert!(!format!("{err:?}").contains("hunter2secret"));
}

#[test]
fn pg_lock_holders_are_found_for_every_lock_key() {
    // Lock keys are 64-bit hashes: half of them are negative as PostgreSQL's bigint. Sixteen shoots
    // cover both signs; every holder must be found by another session and by `list`.
    let (_server, url) = database("lock_keys");
    let (holder, other) = (connect(&url), connect(&url));
    let shoots: Vec<String> = (0..16).map(|i| format!("shoot--keys--s{i}")).collect();
    let info = LockInfo::here("apply");
    for shoot in &shoots {
        holder.lock(shoot, &info).unwrap();
    }
    for shoot in &shoots {
        assert_eq!(other.lock_holder(shoot).unwrap(), Some(info.clone()), "{shoot}");
    }
    let listed = other.list().unwrap();
    assert_eq!(listed.len(), 16);
    assert!(listed.iter().all(|w| w.locked_by.as_ref() == Some(&info)));
}

#[test]
fn pg_an_unreachable_server_is_one_error_naming_it() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url: PgUrl = format!("postgres://ci:pw-never-shown@127.0.0.1:{port}/trellis").parse().unwrap();
    let err = PgStore::connect(&url, "test").err().expect("nothing listens there");
    let msg = err.to_string();
    assert!(matches!(err, StateError::Database { .. }), "{err:?}");
    assert!(
        msg.starts_with(&format!("state database postgres://ci:***@127.0.0.1:{port}/trellis: connecting: ")),
        "{msg}"
    );
    assert!(msg.contains("retried for 10 s") && msg.contains("check that the database is up"), "{msg}");
    assert!(!msg.contains("pw-never-shown") && !msg.contains('\n'), "{msg}");
}

/// Found by the damaged-version test: the restore its message describes failed, because `push` read
/// the damaged version first even with `--force`, so a damaged workspace could not be replaced at all.
#[test]
fn regression_force_push_replaces_a_damaged_version() {
    let (server, url) = database("force_push_damaged");
    let store = connect(&url);
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();
    store.commit(&mut ws, "apply").unwrap();
    let db = db_name(&url);
    server.psql(&db, "UPDATE trellis_workspaces SET document = replace(document, '10.250.', '10.99.')").unwrap();
    let msg = store.load(SHOOT).unwrap_err().to_string();
    // The restore the message describes: serial 1 from the history, pushed as `state push` reads it.
    let query = msg.split("-Atc \"").nth(1).and_then(|q| q.split('"').next()).expect("the message has the query");
    let file = server.psql(&db, query).unwrap();
    let restored = trellis_state::WorkspaceFile::parse("restored.json", &file).unwrap();
    assert_eq!(restored.serial, 1);
    // Without --force it is still refused as damaged: nothing is replaced by accident.
    assert!(matches!(store.push(&restored, false), Err(StateError::DamagedVersion { .. })));
    assert_eq!(store.push(&restored, true).unwrap(), 3);
    let now = store.load(SHOOT).unwrap().unwrap();
    assert_eq!((now.serial, &now.resources, &now.provider_state), (3, &ws.resources, &ws.provider_state));
    assert_eq!(store.history(SHOOT).unwrap().last().map(|h| h.operation.clone()), Some("push".to_string()));
}

#[test]
fn pg_a_role_with_only_the_documented_grants_works_and_one_without_create_is_told_what_it_needs() {
    let (server, url) = database("grants");
    let db = db_name(&url);
    let fresh: PgUrl = format!("postgres://fresh_{db}@127.0.0.1:{}/{db}", server.port()).parse().unwrap();
    server.psql(&db, &format!("CREATE ROLE fresh_{db} LOGIN; GRANT CONNECT ON DATABASE {db} TO fresh_{db}")).unwrap();
    // PostgreSQL 15 grants no CREATE on schema public: the first run cannot migrate as this role.
    let err = PgStore::connect(&fresh, "test").err().expect("no CREATE on the schema");
    let msg = err.to_string();
    assert!(msg.contains("permission denied") && msg.contains("CREATE on the schema"), "{msg}");
    // Migrated once by an owner, the database is usable with SELECT/INSERT/UPDATE/DELETE alone.
    let as_ci = dml_role(&server, &url, "ci");
    let store = connect(&as_ci);
    behaviour::locks(&store);
    let mut ws = Workspace::new(SHOOT);
    store.commit(&mut ws, "apply").unwrap();
    assert_eq!(store.push(&ws, false).unwrap(), 2);
    assert_eq!(store.export(SHOOT).unwrap().map(|e| e.history.len()), Some(2));
    store.close().unwrap();
}

/// Hardening finding 9: after the workspace's row was deleted by hand, the next apply started a new
/// lineage at serial 1 and `ON CONFLICT DO UPDATE` overwrote the history's earlier versions. The history
/// proves the workspace existed: the state is damaged, and is refused (as sled refuses a workspace its
/// head record names but the database lacks) until the row is restored, with nothing written.
#[test]
fn regression_a_deleted_workspace_row_never_overwrites_its_history() {
    let (server, url) = database("deleted_row");
    let store = connect(&url);
    let mut ws = workspace_with_one_resource();
    store.commit(&mut ws, "apply").unwrap();
    store.commit(&mut ws, "apply").unwrap();
    let db = db_name(&url);
    let history = || {
        server.psql(&db, "SELECT shoot, serial, entry, document, checksum FROM trellis_history ORDER BY 1, 2").unwrap()
    };
    let before = history();
    server.psql(&db, &format!("DELETE FROM trellis_workspaces WHERE shoot = '{SHOOT}'")).unwrap();
    let refused = |err: StateError, stored: Option<u64>| {
        assert!(
            matches!(&err, StateError::BehindHistory { shoot, stored: s, newest: 2, .. } if shoot == SHOOT && *s == stored),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(!msg.contains('\n') && msg.contains(&url.to_string()) && msg.contains("nothing was written"), "{msg}");
        msg
    };
    // What an apply does next: load (refused: it is not a new shoot), and a commit of a new lineage
    // (refused in the transaction too, for a run that loaded before the row went).
    refused(store.load(SHOOT).unwrap_err(), None);
    let mut again = workspace_with_one_resource();
    refused(store.commit(&mut again, "apply").unwrap_err(), None);
    assert_eq!(again.serial, 0);
    refused(store.push(&again, true).unwrap_err(), None);
    assert!(store.export(SHOOT).is_err());
    let into = connect(&url);
    let exported = trellis_state::ExportedWorkspace { workspace: ws.clone(), history: Vec::new() };
    refused(into.import(&exported).unwrap_err(), None);
    assert_eq!(history(), before, "the history was changed");
    assert_eq!(server.psql(&db, "SELECT count(*) FROM trellis_workspaces").unwrap(), "0");

    // A row put back at an older serial by hand: the SQL itself refuses to overwrite the history's
    // serial 2 (the commit, made against serial 1, gets past the compare-and-swap).
    server
        .psql(
            &db,
            "INSERT INTO trellis_workspaces (shoot, lineage, serial, resources, document, checksum) \
             SELECT shoot, document::json->>'lineage', serial, 1, document, checksum FROM trellis_history WHERE serial = 1",
        )
        .unwrap();
    refused(store.load(SHOOT).unwrap_err(), Some(1));
    let mut older = ws.clone();
    older.serial = 1;
    let msg = refused(store.commit(&mut older, "apply").unwrap_err(), Some(1));
    assert_eq!(history(), before, "the history was changed");

    // The restore the message gives brings back the newest version, and the workspace goes on from it.
    let restore = msg.split("-c \"").nth(1).and_then(|q| q.split('"').next()).expect("the message has the restore");
    server.psql(&db, restore).unwrap();
    assert_eq!(store.load(SHOOT).unwrap(), Some(ws.clone()));
    store.commit(&mut ws, "apply").unwrap();
    assert_eq!(store.history(SHOOT).unwrap().iter().map(|h| h.serial).collect::<Vec<_>>(), vec![1, 2, 3]);

    // Starting over on purpose, as the message says: the old history is kept under another name.
    let start_over = msg.split("-c \"").nth(2).and_then(|q| q.split('"').next()).expect("the message has it");
    server.psql(&db, start_over).unwrap();
    assert_eq!(store.load(SHOOT).unwrap(), None);
    let mut fresh = Workspace::new(SHOOT);
    store.commit(&mut fresh, "apply").unwrap();
    assert_eq!(fresh.serial, 1);
    let kept = server
        .psql(&db, &format!("SELECT count(*) FROM trellis_history WHERE shoot LIKE '{SHOOT}.deleted-%'"))
        .unwrap();
    assert_eq!(kept, "3");
}
