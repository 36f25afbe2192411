//! trellis with its state in PostgreSQL (`--state postgres://…`), process level: one throwaway server
//! per test process (the `trellis-pgtest` crate), a database per test. The simulated cloud lives in
//! `--sim-dir` (default `.trellis/sim` in the working directory, so each sandbox has its own).

use crate::common;

use common::*;
use std::collections::BTreeSet;
use std::sync::Arc;
use trellis_engine::shard::Shard;
use trellis_pgtest::PgServer;

const BRAVO: &str = A2_SHOOT;

/// A test's own database: (server, URL).
fn database(name: &str) -> (Arc<PgServer>, String) {
    let server = PgServer::shared();
    let url = server.create_database(name).unwrap_or_else(|e| panic!("{e}"));
    (server, url)
}

fn db_name(url: &str) -> &str {
    url.rsplit('/').next().expect("a database")
}

fn example(rel: &str) -> String {
    format!("{}/../examples/{rel}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn pg_readme_example_applies_and_replans_no_changes() {
    let (_pg, url) = database("readme");
    let sb = Sandbox::with_state(&url);
    let shoot = example("azure-managed/shoot.yaml");
    sb.run(&["apply", "-f", &shoot, "--auto-approve", "--timings"])
        .code(0)
        .stdout_has("shoot--platform--web: apply complete.")
        .stderr_has("PostgreSQL call(s)")
        .stderr_has("s waiting on the database");
    sb.run(&["plan", "-f", &shoot, "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    assert_eq!(sb.workspaces(), vec!["shoot--platform--web".to_string()]);
    // The simulated cloud is in the default --sim-dir, not in the database: `trellis sim` finds it there,
    // or in the --sim-dir given, and names where it looked.
    assert!(sb.path().join(".trellis/sim").is_dir());
    let rg = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/shoot--platform--web";
    sb.run(&["sim", "show", rg]).code(0).stdout_has("\"name\": \"shoot--platform--web\"");
    let elsewhere = sb.file("other-sim");
    sb.run(&["sim", "show", rg, "--sim-dir", &elsewhere])
        .code(1)
        .stderr_has(&format!("{rg}: not found in the simulated cloud in {elsewhere}"));
}

#[test]
fn pg_location_comes_from_the_flag_or_trellis_state_and_its_password_is_never_shown() {
    let (pg, url) = database("redact");
    // The server trusts loopback, so any password is accepted: it is the one secret to look for.
    let with_password = url.replacen("postgres://trellis@", "postgres://trellis:s3cr3t@", 1);
    let shown = url.replacen("postgres://trellis@", "postgres://trellis:***@", 1);
    let sb = Sandbox::with_state(&with_password);
    let mut outputs = Vec::new();
    let apply = sb.run(&["apply", "-f", &a2(), "--auto-approve", "--output", "json"]).code(0);
    outputs.push(apply.stdout.clone() + &apply.stderr);
    let list = sb.run(&["state", "list"]).code(0).stdout_has(BRAVO);
    outputs.push(list.stdout.clone() + &list.stderr);
    let plan = sb.run(&["plan", "-f", &a2(), "--output", "json"]).code(0);
    outputs.push(plan.stdout.clone() + &plan.stderr);
    let missing = sb.run(&["state", "show", "shoot--dev--nope"]).code(1);
    missing.clone().stderr_has(&format!("no workspace for shoot--dev--nope in {shown};"));
    outputs.push(missing.stderr.clone());
    // TRELLIS_STATE when there is no --state; the flag wins over it.
    let mut cmd = sb.raw_command(&["state", "list"]);
    cmd.env("TRELLIS_STATE", &with_password);
    let from_env = finish(&mut cmd).code(0).stdout_has(BRAVO);
    outputs.push(from_env.stdout.clone());
    let mut cmd = sb.raw_command(&["state", "list", "--state", &with_password]);
    cmd.env("TRELLIS_STATE", "postgres://x:s3cr3t@127.0.0.1:1/elsewhere");
    finish(&mut cmd).code(0).stdout_has(BRAVO);
    // A malformed URL: one line naming it, password redacted.
    let bad = sb.run_raw(&["plan", "-f", &a2(), "--state", "postgres://trellis:s3cr3t@127.0.0.1:notaport/db"]).code(1);
    assert_eq!(bad.stderr_lines().len(), 1, "{}", bad.stderr);
    bad.clone().stderr_has("postgres://trellis:***@127.0.0.1:notaport/db");
    outputs.push(bad.stderr);
    // `--help` does not print the environment's value.
    let mut cmd = sb.raw_command(&["plan", "--help"]);
    cmd.env("TRELLIS_STATE", &with_password);
    outputs.push(finish(&mut cmd).code(0).stdout);
    for out in &outputs {
        assert!(!out.contains("s3cr3t"), "the password is shown:\n{out}");
    }
    // Nor is it stored: not in the workspace, not in the lock records.
    for table in ["trellis_workspaces", "trellis_history", "trellis_locks"] {
        let dump = pg
            .psql(
                db_name(&url),
                &format!("SELECT count(*) || ' ' || coalesce(string_agg(t::text, ' '), '') FROM {table} t"),
            )
            .unwrap();
        assert!(!dump.contains("s3cr3t"), "{table}: {dump}");
        if table != "trellis_locks" {
            assert!(!dump.starts_with("0 "), "{table} holds the applied workspace: {dump}");
        }
    }
}

#[test]
fn pg_state_commands_list_show_pull_push_unlock() {
    let (_pg, url) = database("state_cmds");
    let sb = Sandbox::with_state(&url);
    sb.assert_no_workspaces();
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let ws = sb.workspace(BRAVO);
    let serial = ws["serial"].as_u64().unwrap();
    let pulled = sb.run(&["state", "pull", BRAVO]).code(0).stdout;
    let file = sb.file("ws.json");
    std::fs::write(&file, pulled).unwrap();
    sb.run(&["state", "push", BRAVO, &file])
        .code(0)
        .stdout_has(&format!("Pushed {BRAVO} from {file}: the state now holds it at serial {}", serial + 1));
    assert_eq!(sb.workspace(BRAVO)["resources"], ws["resources"]);
    sb.run(&["state", "unlock", BRAVO]).code(0).stdout_has(&format!("{BRAVO} was not locked."));
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
}

/// `state rm` against PostgreSQL: the backup goes to the current directory, the workspace's history
/// stays in `trellis_history` under its removed name (never deleted), and the `state push` printed
/// restores the workspace; the plan is "No changes." again.
#[test]
fn pg_state_rm_writes_its_backup_here_keeps_the_history_and_push_restores() {
    let (pg, url) = database("state_rm");
    let sb = Sandbox::with_state(&url);
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let ws = sb.workspace(BRAVO);
    let (serial, lineage) = (ws["serial"].as_u64().unwrap(), ws["lineage"].as_str().unwrap().to_string());
    let rm = sb.run(&["state", "rm", BRAVO]).code(0);
    let file = format!("{BRAVO}.removed-{serial}-{}.json", &lineage[..8]);
    let undo = format!("undo with `trellis state push {BRAVO} {file} --state {url}`");
    assert!(rm.stdout.contains(&format!("Backup: {file}; {undo}")), "{}", rm.stdout);
    assert!(sb.path().join(&file).is_file(), "the backup is in the current directory");
    assert!(sb.workspaces().is_empty());
    let kept = pg
        .psql(
            db_name(&url),
            &format!("SELECT count(*) FROM trellis_history WHERE shoot = '{BRAVO}.removed-{serial}-{}'", &lineage[..8]),
        )
        .unwrap();
    assert_eq!(kept.trim(), (serial + 1).to_string(), "every version and the removal's entry are kept");
    sb.run(&["state", "push", BRAVO, &file]).code(0);
    assert_eq!(sb.workspace(BRAVO)["resources"], ws["resources"]);
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
}

#[test]
fn pg_a_killed_apply_loses_nothing_and_the_next_apply_converges_without_duplicates() {
    let expected = clean_a2_resources();
    let (_pg, url) = database("killed");
    let sb = Sandbox::with_state(&url);
    let mut apply = sb.spawn(&["apply", "-f", &a2(), "--auto-approve", "--sim-write-latency-ms", "3000"]);
    let first = kill_after_two_nodes(&mut apply);
    let kept = recorded(&sb, BRAVO).as_object().expect("resources").clone();
    assert_killed_early(&kept, &first, &expected);
    // PostgreSQL released the killed session's lock; the next apply takes over its record.
    let resumed = sb.run(&["apply", "-f", &a2(), "--auto-approve", "--output", "json"]).code(0).json();
    assert_writes_only_missing(&resumed, &kept);
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    let ws = sb.workspace(BRAVO);
    assert_eq!(ws["resources"], expected, "the same resources as an uninterrupted apply");
    assert_no_duplicates(&ws);
    assert!(!sb.run(&["state", "list"]).code(0).stdout.contains("locked"), "no lock is left behind");
}

#[test]
fn pg_two_applies_of_one_shoot_at_once_one_is_refused_naming_the_holder() {
    let (_pg, url) = database("two_applies");
    // Two "machines": one database, each its own working dir (and so its own simulated cloud).
    let (one, two) = (Sandbox::with_state(&url), Sandbox::with_state(&url));
    let mut first = one.spawn(&["apply", "-f", &a2(), "--auto-approve", "--sim-write-latency-ms", "2000"]);
    first.wait_for_line(|l| l.ends_with(": created"));
    let second = two.run(&["apply", "-f", &a2(), "--auto-approve"]).code(1);
    second
        .clone()
        .stderr_has(&format!("workspace {BRAVO} is locked: apply by "))
        .stderr_has(&format!("(pid {})", first.pid()))
        .stderr_has("PostgreSQL frees it when the process ends (even if killed): wait for it to finish");
    // The sled store's advice (`state unlock`) would be wrong here: the lock is a live session's.
    assert!(!second.stderr.contains("state unlock"), "{}", second.stderr);
    let (code, _) = first.wait();
    assert_eq!(code, 0, "the holder finishes its apply");
    one.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
}

/// `--lock-timeout`: a shoot's lock held by another session (here this test's, as another runner's
/// apply holds it) is waited for; still held at the end, the apply is refused saying it waited; let go
/// while it waits, the shoot is applied.
#[test]
fn pg_lock_timeout_waits_for_a_held_workspace_lock_and_applies_once_it_is_free() {
    use trellis_state::{LockInfo, PgStore, StateStore};
    let (_pg, url) = database("lock_timeout");
    let sb = Sandbox::with_state(&url);
    let holder_store = PgStore::connect(&url.parse().expect("a valid URL"), "test holder").expect("connect");
    let holder = LockInfo::here("test holder");
    holder_store.lock(BRAVO, &holder).expect("the test takes the lock");
    let names_holder = format!("(held by test holder by {}@{} (pid {})", holder.user, holder.host, holder.pid);

    let refused = sb.run(&["apply", "-f", &a2(), "--auto-approve", "--lock-timeout", "1s"]).code(1);
    let lines = refused.stderr_lines();
    let waiting = lines.iter().position(|l| l.starts_with("Waiting for ")).expect("a waiting line");
    assert!(lines[waiting].starts_with(&format!("Waiting for the lock on workspace {BRAVO} {names_holder}")));
    assert!(lines[waiting].ends_with("; --lock-timeout 1s)…"), "{}", lines[waiting]);
    let refusal = lines.iter().position(|l| l.contains(&format!("workspace {BRAVO} is locked: test holder by ")));
    let refusal = refusal.expect("the refusal names the holder");
    assert!(waiting < refusal, "it waited, then was refused: {}", refused.stderr);
    assert!(lines[refusal].ends_with(" (waited 1s)"), "{}", lines[refusal]);
    sb.run(&["state", "list"]).code(0).stdout_has(&format!("{BRAVO}  serial 0  0 resource(s)")); // nothing applied

    let mut apply = sb.spawn(&["apply", "-f", &a2(), "--auto-approve", "--lock-timeout", "2m"]);
    let line = apply.wait_for_line(|l| l.starts_with("Waiting for "));
    assert!(line.starts_with(&format!("Waiting for the lock on workspace {BRAVO} {names_holder}")), "{line}");
    holder_store.unlock(BRAVO, &holder.id).expect("the test lets go");
    let (code, stderr) = apply.wait();
    assert_eq!(code, 0, "{stderr:#?}");
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    holder_store.close().unwrap();
}

#[test]
fn pg_a_busy_sim_dir_is_refused_naming_the_holder_and_how_to_share() {
    let (_pg, url) = database("busy_sim");
    let sb = Sandbox::with_state(&url);
    let mut apply = sb.spawn(&["apply", "-f", &a2(), "--auto-approve", "--sim-write-latency-ms", "2000"]);
    apply.wait_for_line(|l| l.ends_with(": created"));
    let run = sb.run(&["plan", "-f", &a2()]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    run.stderr_has("error: simulated cloud dir .trellis/sim is in use by another trellis process: apply by ")
        .stderr_has(&format!("(pid {})", apply.pid()))
        .stderr_has(
            "give each runner its own --sim-dir, or share one simulated cloud: `trellis sim serve --sim-dir DIR`",
        );
    // Its own --sim-dir: no conflict (an empty cloud, so everything is to create).
    sb.run(&["plan", "-f", &a2(), "--sim-dir", &sb.file("other-sim")]).code(0);
}

#[test]
fn pg_dropped_database_connections_mid_apply_lose_no_committed_node_and_converge() {
    let expected = clean_a2_resources();
    let (pg, url) = database("dropped");
    let sb = Sandbox::with_state(&url);
    let mut apply = sb.spawn(&["apply", "-f", &a2(), "--auto-approve", "--sim-write-latency-ms", "1500"]);
    let first = apply.wait_for_line(|l| l.ends_with(": created"));
    let first = first.trim_end_matches(": created").to_string();
    // Every session of the apply is ended by the server, as when the network drops.
    assert!(pg.kill_connections(db_name(&url)).unwrap() > 0, "the apply was connected");
    let (code, stderr) = apply.wait();
    // The apply reconnects and finishes, or reports the failure; a committed node is never lost.
    assert!(code == 0 || code == 1, "{code}: {stderr:?}");
    eprintln!("the apply whose connections were dropped ended with {code}; its last line: {:?}", stderr.last());
    let kept = recorded(&sb, BRAVO);
    assert!(kept.as_object().unwrap().contains_key(&first), "{first} was committed before the drop: {kept}");
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    let ws = sb.workspace(BRAVO);
    assert_eq!(ws["resources"], expected);
    assert_no_duplicates(&ws);
}

/// Four shoots of the A1 example under other names, in `dir`.
fn small_fleet(sb: &Sandbox) -> (String, Vec<String>) {
    let dir = sb.file("fleet");
    std::fs::create_dir(&dir).unwrap();
    let template = std::fs::read_to_string(example("azure-managed/shoot.yaml")).unwrap();
    let mut ids = Vec::new();
    for name in ["ant", "bee", "cat", "dog"] {
        let doc = template.replacen("  name: web\n", &format!("  name: {name}\n"), 1);
        std::fs::write(format!("{dir}/{name}.yaml"), doc).unwrap();
        ids.push(format!("shoot--platform--{name}"));
    }
    (dir, ids)
}

#[test]
fn pg_two_shards_applied_at_once_each_apply_only_their_shoots_and_together_cover_the_fleet() {
    let (_pg, url) = database("shards");
    let sb = Sandbox::with_state(&url);
    let (fleet, ids) = small_fleet(&sb);
    let mine = |i: u32| -> BTreeSet<String> { ids.iter().filter(|id| Shard::number_of(id, 2) == i).cloned().collect() };
    assert!(!mine(1).is_empty() && !mine(2).is_empty(), "both shards have shoots: {:?} {:?}", mine(1), mine(2));
    let sim = |i: u32| sb.file(&format!("sim-{i}"));
    let mut runners: Vec<Background> = (1..=2)
        .map(|i| {
            sb.spawn(&["apply", "-f", &fleet, "--auto-approve", "--shard", &format!("{i}/2"), "--sim-dir", &sim(i)])
        })
        .collect();
    for (i, runner) in (1..=2).zip(runners.iter_mut()) {
        let (code, stderr) = runner.wait();
        assert_eq!(code, 0, "shard {i}: {stderr:?}");
        let line = format!(
            "shard {i}/2: {} of the fleet's 4 shoot(s) here; {} left to the other shards.",
            mine(i).len(),
            4 - mine(i).len()
        );
        assert!(stderr.contains(&line), "{line}: {stderr:?}");
    }
    let applied: BTreeSet<String> = sb.workspaces().into_iter().collect();
    assert_eq!(applied, ids.iter().cloned().collect(), "together they cover the fleet");
    for i in 1..=2 {
        // Each shard's cloud holds exactly its shoots: re-planned, nothing to do.
        sb.run(&["plan", "-f", &fleet, "--shard", &format!("{i}/2"), "--sim-dir", &sim(i), "--detailed-exitcode"])
            .code(0); // --detailed-exitcode: 0 is "nothing to do"
        for id in mine(i) {
            let ws = sb.workspace(&id);
            let rg = format!("/resourceGroups/{id}");
            assert!(ws["resources"].as_object().unwrap().values().all(|r| r["id"].as_str().unwrap().contains(&rg)));
        }
    }
}

#[test]
fn pg_state_migrate_copies_sled_into_postgres_and_back_and_refuses_itself() {
    let (_pg, url) = database("migrate");
    let sled = Sandbox::new();
    sled.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let before = sled.run(&["state", "pull", BRAVO]).code(0).stdout;
    sled.run_raw(&["state", "migrate", "--from", sled.state(), "--to", &url])
        .code(0)
        .stdout_has(&format!("{BRAVO}: copied\n"))
        .stdout_has(&format!("Migrated 1 workspace(s) from {} to {url}: 1 copied, 0 already there; and the histories of 0 removed workspace(s).", sled.state()));
    // Re-run (an interrupted migrate is finished this way): nothing copied twice.
    sled.run_raw(&["state", "migrate", "--from", sled.state(), "--to", &url])
        .code(0)
        .stdout_has(&format!("{BRAVO}: already there (same lineage and serial)"))
        .stdout_has("0 copied, 1 already there;");
    // The database holds the same workspace; the old dir keeps the simulated cloud for --sim-dir.
    let pg = Sandbox::with_state(&url);
    assert_eq!(pg.run(&["state", "pull", BRAVO]).code(0).stdout, before);
    pg.run(&["plan", "-f", &a2(), "--sim-dir", sled.state(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    // And back into a new sled dir, byte for byte.
    let back = Sandbox::new();
    back.run_raw(&["state", "migrate", "--from", &url, "--to", back.state()]).code(0).stdout_has("1 copied");
    assert_eq!(back.run(&["state", "pull", BRAVO]).code(0).stdout, before);
    // Onto itself: refused, one line.
    for same in [&url, &sled.state().to_string()] {
        let run = sled.run_raw(&["state", "migrate", "--from", same, "--to", same]).code(1);
        assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
        run.stderr_has("--from and --to are the same state");
    }
}

#[test]
fn pg_the_database_restarting_mid_apply_loses_no_committed_node_and_the_apply_converges() {
    let expected = clean_a2_resources();
    // A server of its own: this test stops and starts it.
    let mut pg = PgServer::start().unwrap_or_else(|e| panic!("{e}"));
    let url = pg.create_database("restart").unwrap();
    let sb = Sandbox::with_state(&url);
    let mut apply = sb.spawn(&["apply", "-f", &a2(), "--auto-approve", "--sim-write-latency-ms", "1500"]);
    let first = apply.wait_for_line(|l| l.ends_with(": created"));
    let first = first.trim_end_matches(": created").to_string();
    pg.restart().unwrap();
    let (code, stderr) = apply.wait();
    // Reconnected within the retry window (or reported); what was committed before is there.
    assert!(code == 0 || code == 1, "{code}: {stderr:?}");
    let kept = recorded(&sb, BRAVO);
    assert!(kept.as_object().unwrap().contains_key(&first), "{first} was committed before the restart: {kept}");
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    let ws = sb.workspace(BRAVO);
    assert_eq!(ws["resources"], expected);
    assert_no_duplicates(&ws);
}
