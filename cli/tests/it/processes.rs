//! Several `trellis` processes on one state dir: a running apply locks it; a killed apply loses
//! nothing, and the next apply converges without duplicates.
//!
//! The background applies use the hidden `--sim-write-latency-ms` flag so that every cloud write
//! takes a while: the test can act while the apply is still running.

use crate::common;

use common::*;
use std::collections::BTreeSet;
use std::path::Path;

const BRAVO: &str = A2_SHOOT;

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

#[test]
fn a_killed_apply_loses_nothing_and_the_next_apply_converges_without_duplicates() {
    // Reference: an uninterrupted apply in its own state dir.
    let clean = Sandbox::new();
    clean.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let expected = recorded(&clean, BRAVO);
    let expected_last_applied = clean.workspace(BRAVO)["provider_state"]["data"]["last_applied"].clone();
    assert_eq!(expected.as_object().unwrap().len(), 7);

    let sb = Sandbox::new();
    let mut apply = slow_apply(&sb);
    // The resource group is created first; everything else depends on it and takes another 3 s to write.
    let first = kill_after_two_nodes(&mut apply);
    assert_eq!(first, format!("azure.resource_group.{BRAVO}.{BRAVO}"));

    // The killed apply committed what it had done so far: the resource group, and not everything.
    let kept = recorded(&sb, BRAVO).as_object().expect("resources").clone();
    assert_killed_early(&kept, &first, &expected);

    // Resume without latency: takes over the dead process's lock, writes only what is missing.
    let resumed = sb.run(&["apply", "-f", &a2(), "--auto-approve", "--output", "json"]).code(0).json();
    let warnings = resumed["shoots"][0]["warnings"].to_string();
    assert!(warnings.contains("took over a stale lock") && warnings.contains("(pid "), "{warnings}");
    assert_writes_only_missing(&resumed, &kept);

    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    let ws = sb.workspace(BRAVO);
    assert_eq!(ws["resources"], expected, "the same resources as an uninterrupted apply");
    assert_eq!(ws["provider_state"]["data"]["last_applied"], expected_last_applied);
    assert_no_duplicates(&ws);
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

/// A fleet of `n` copies of the A1 shoot (`s1` … `sN`) in `<sandbox>/fleet`; returns the dir.
fn a1_fleet(sb: &Sandbox, n: usize) -> String {
    let text = std::fs::read_to_string(a1()).expect("A1 shoot");
    let dir = sb.file("fleet");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 1..=n {
        let shoot = text.replacen("name: alpha", &format!("name: s{i}"), 1);
        std::fs::write(Path::new(&dir).join(format!("s{i}.yaml")), shoot).unwrap();
    }
    dir
}

/// The grouped path: several shoots' commits (and the simulated cloud's writes, which the commits make
/// durable) share transactions and flushes. A fleet apply killed mid-way keeps every node it
/// acknowledged, with its cloud resource; the next apply writes only what is missing, once.
#[test]
fn regression_a_killed_fleet_apply_with_grouped_commits_loses_no_committed_node_and_converges() {
    let sb = Sandbox::new();
    let fleet = a1_fleet(&sb, 6);
    let mut apply = sb.spawn(&["apply", "-f", &fleet, "--auto-approve", "--sim-write-latency-ms", "400"]);
    // Each shoot's resource group first, then the rest: kill once several nodes of several shoots
    // were acknowledged (a node's line comes after its commit is durable).
    for _ in 0..8 {
        apply.wait_for_line(|l| l.ends_with(": created"));
    }
    apply.kill();

    let shoots = sb.workspaces();
    assert!(!shoots.is_empty(), "some shoots were committed before the kill");
    let kept: BTreeSet<String> = shoots.iter().flat_map(|s| sb.resource_ids(s)).collect();
    assert!(kept.len() >= 6, "the acknowledged nodes are in the state: {kept:?}");
    assert!(kept.len() < 30, "the apply was killed early: {kept:?}");

    // Every committed node's resource is in the simulated cloud: the next plan creates none of them.
    for shoot in &shoots {
        let file = format!("{fleet}/{}.yaml", shoot.trim_start_matches("shoot--dev--"));
        let plan = sb.run(&["plan", "-f", &file, "--output", "json"]).code(0).json();
        let created = plan_ids(&plan, "create");
        let lost: Vec<&String> = created.iter().filter(|id| kept.contains(*id)).collect();
        assert!(lost.is_empty(), "{shoot}: committed but not in the cloud: {lost:?}");
    }

    // Resume: nothing committed is written again, and the fleet converges.
    let resumed = sb.run(&["apply", "-f", &fleet, "--auto-approve", "--output", "json"]).code(0).json();
    assert_eq!(resumed["ok"], true);
    for (method, target) in writes(&resumed) {
        assert!(!kept.contains(&target), "{method} {target} was committed before the kill and is written again");
    }
    sb.run(&["plan", "-f", &fleet, "--detailed-exitcode"]).code(0).stdout_has("Fleet: 6 shoots, 0 with changes.");
    assert_eq!(sb.workspaces().len(), 6);
    let mut all = Vec::new();
    for shoot in sb.workspaces() {
        let ids = sb.resource_ids(&shoot);
        assert_eq!(ids.len(), 5, "{shoot}: every resource of an A1 shoot: {ids:?}");
        all.extend(ids);
    }
    let unique: BTreeSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "no resource is recorded twice");
}
