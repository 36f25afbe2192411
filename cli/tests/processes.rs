//! Several `trellis` processes on one state dir: a running apply locks it; a killed apply loses
//! nothing, and the next apply converges without duplicates.
//!
//! The background applies use the hidden `--sim-write-latency-ms` flag so that every cloud write
//! takes a while: the test can act while the apply is still running.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

const BRAVO: &str = "shoot--dev--bravo";

/// A slow `apply -f A2 --auto-approve` in the background (each cloud write takes 3 s).
fn slow_apply(sb: &Sandbox) -> Background {
    sb.spawn(&["apply", "-f", &a2(), "--auto-approve", "--sim-write-latency-ms", "3000"])
}

#[test]
fn a_running_apply_locks_the_state_dir_and_names_itself() {
    let sb = Sandbox::new();
    let mut apply = slow_apply(&sb);
    let holder = Path::new(sb.state()).join("holder.json");
    wait_until("the apply has opened the state dir", || holder.exists());

    for args in [vec!["plan", "-f", &a2()], vec!["state", "list"], vec!["apply", "-f", &a2(), "--auto-approve"]] {
        let run = sb.run(&args).code(1);
        let lines = run.stderr_lines();
        assert_eq!(lines.len(), 1, "one line:\n{}", run.stderr);
        let msg = lines[0];
        assert!(msg.contains(&format!("state dir {} is in use by another trellis process", sb.state())), "{msg}");
        assert!(msg.contains("apply by "), "names the holder's operation: {msg}");
        assert!(msg.contains(&format!("(pid {})", apply.pid())), "names the holder's pid: {msg}");
    }

    // Once the holder is gone (even killed), the dir is usable again.
    apply.kill();
    sb.run(&["plan", "-f", &a2()]).code(0);
}

/// The resources a workspace records: address -> {kind, id, ownership}.
fn resources(sb: &Sandbox) -> Value {
    sb.workspace(BRAVO)["resources"].clone()
}

#[test]
fn a_killed_apply_loses_nothing_and_the_next_apply_converges_without_duplicates() {
    // Reference: an uninterrupted apply in its own state dir.
    let clean = Sandbox::new();
    clean.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let expected = resources(&clean);
    let expected_last_applied = clean.workspace(BRAVO)["provider_state"]["data"]["last_applied"].clone();
    assert_eq!(expected.as_object().unwrap().len(), 7);

    let sb = Sandbox::new();
    let mut apply = slow_apply(&sb);
    // The non-TTY progress prints one line per finished node. The resource group is created first;
    // everything else depends on it and takes another 3 s to write. Kill the apply once one of those
    // has finished too: by then the resource group's node has certainly been committed. (The line of
    // a node is printed just before its commit, so killing on the very first line can race it.)
    let first = apply.wait_for_line(|l| l.ends_with(": created"));
    apply.wait_for_line(|l| l.ends_with(": created"));
    apply.kill();
    let first = first.trim_end_matches(": created").to_string();
    assert_eq!(first, format!("azure.resource_group.{BRAVO}.{BRAVO}"));

    // The killed apply committed what it had done so far: the resource group, and not everything.
    let kept = resources(&sb).as_object().expect("resources").clone();
    assert!(kept.contains_key(&first), "{first} was created before the kill and is in the state: {kept:?}");
    assert!(kept.len() < 7, "the apply was killed early: {kept:?}");
    for (address, r) in &kept {
        assert_eq!(&expected[address], r, "{address} is recorded as in a clean run");
    }

    // Resume without latency: takes over the dead process's lock, writes only what is missing.
    let resumed = sb.run(&["apply", "-f", &a2(), "--auto-approve", "--output", "json"]).code(0).json();
    assert_eq!(resumed["ok"], true);
    let warnings = resumed["shoots"][0]["warnings"].to_string();
    assert!(warnings.contains("took over a stale lock") && warnings.contains("(pid "), "{warnings}");
    for (method, target) in writes(&resumed) {
        assert_eq!(method, "PUT", "{target}");
        assert!(
            !kept.values().any(|r| r["id"] == target.as_str()),
            "{target} was applied before the kill and is written again"
        );
    }

    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    let ws = sb.workspace(BRAVO);
    assert_eq!(ws["resources"], expected, "the same resources as an uninterrupted apply");
    assert_eq!(ws["provider_state"]["data"]["last_applied"], expected_last_applied);
    let ids: Vec<&str> = ws["resources"].as_object().unwrap().values().map(|r| r["id"].as_str().unwrap()).collect();
    let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "no resource is recorded twice: {ids:?}");
    assert!(!sb.run(&["state", "list"]).code(0).stdout.contains("locked"), "no lock is left behind");
}

#[test]
fn state_unlock_removes_the_lock_a_killed_apply_left() {
    let sb = Sandbox::new();
    let mut apply = slow_apply(&sb);
    // After the second finished node the workspace has certainly been committed (see above).
    apply.wait_for_line(|l| l.ends_with(": created"));
    apply.wait_for_line(|l| l.ends_with(": created"));
    let pid = apply.pid();
    apply.kill();

    let list = sb.run(&["state", "list"]).code(0);
    assert!(list.stdout.starts_with(BRAVO), "{}", list.stdout);
    assert!(list.stdout.contains("locked: apply by "), "the dead apply's lock is shown: {}", list.stdout);
    assert!(list.stdout.contains(&format!("(pid {pid})")), "{}", list.stdout);

    sb.run(&["state", "unlock", BRAVO])
        .code(0)
        .stdout_has(&format!("Removed the lock on {BRAVO} (apply by "))
        .stdout_has(&format!("(pid {pid})"));
    assert!(!sb.run(&["state", "list"]).code(0).stdout.contains("locked"));
    sb.run(&["state", "unlock", BRAVO]).code(0).stdout_has(&format!("{BRAVO} was not locked."));

    // The apply can be resumed; no stale-lock takeover is needed any more.
    let resumed = sb.run(&["apply", "-f", &a2(), "--auto-approve", "--output", "json"]).code(0).json();
    assert!(resumed["shoots"][0].get("warnings").is_none(), "{resumed}");
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0);
}
