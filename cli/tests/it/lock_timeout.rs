//! `--lock-timeout DURATION`: a command waits for a lock another process holds (the state dir, the
//! sim dir; a PostgreSQL workspace lock in `pg.rs`) instead of being refused at once, printing who
//! holds it; a lock still held at the end is refused as without the flag, saying how long it waited.
//!
//! The holder is a store the test itself opens through the state API, so the test decides when the
//! lock is let go: after the waiting command said it waits (events in order, no timing).

use crate::common;

use common::*;
use std::path::Path;
use trellis_state::SledStore;

/// The state dir held by this test process (`SledStore::open`), as a trellis process holds it.
fn hold(dir: &str) -> SledStore {
    SledStore::open(Path::new(dir), "test holder").expect("the test opens the dir")
}

#[test]
fn a_command_with_lock_timeout_waits_for_the_state_dir_and_goes_on_once_it_is_free() {
    let sb = Sandbox::new();
    let holder = hold(sb.state());
    let mut apply = sb.spawn(&["apply", "-f", &a2(), "--auto-approve", "--lock-timeout", "2m"]);
    let line = apply.wait_for_line(|l| l.starts_with("Waiting for "));
    assert_eq!(
        line.split(" since ").next().unwrap(),
        format!(
            "Waiting for state dir {} (held by test holder by {}@{} (pid {})",
            sb.state(),
            me().user,
            me().host,
            std::process::id()
        ),
        "names the dir and its holder: {line}"
    );
    assert!(line.ends_with("; --lock-timeout 2m)…"), "{line}");
    holder.close().expect("the holder lets go");
    let (code, stderr) = apply.wait();
    assert_eq!(code, 0, "{stderr:#?}");
    assert_eq!(stderr.iter().filter(|l| l.starts_with("Waiting for ")).count(), 1, "one waiting line: {stderr:#?}");
    assert!(!stderr.iter().any(|l| l.starts_with("error")), "{stderr:#?}");
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
}

#[test]
fn without_lock_timeout_a_held_state_dir_is_refused_at_once() {
    let sb = Sandbox::new();
    let holder = hold(sb.state());
    for run in [sb.run(&["plan", "-f", &a2()]), sb.run(&["plan", "-f", &a2(), "--lock-timeout", "0s"])] {
        let run = run.code(1);
        assert_eq!(run.stderr_lines().len(), 1, "the refusal only, no waiting line: {}", run.stderr);
        assert!(!run.stderr.contains("waited"), "{}", run.stderr);
        run.stderr_has(&format!(
            "error: state dir {} is in use by another trellis process: test holder by ",
            sb.state()
        ))
        .stderr_has(&format!("(pid {})", std::process::id()))
        .stderr_has("; wait for it to finish");
    }
    holder.close().unwrap();
}

#[test]
fn a_state_dir_held_past_the_lock_timeout_is_refused_saying_it_waited_and_validate_skips_it() {
    let sb = Sandbox::new();
    let holder = hold(sb.state());
    // The flag, and the environment variable CI sets once for every command.
    let flag = sb.run(&["state", "list", "--lock-timeout", "1s"]);
    let env = finish(sb.command(&["plan", "-f", &a2()]).env("TRELLIS_LOCK_TIMEOUT", "1s"));
    for run in [flag, env] {
        let run = run.code(1);
        let lines = run.stderr_lines();
        assert_eq!(lines.len(), 2, "the waiting line, then the refusal: {}", run.stderr);
        assert!(lines[0].starts_with(&format!("Waiting for state dir {} (held by test holder by ", sb.state())));
        assert!(lines[0].ends_with("; --lock-timeout 1s)…"), "{}", lines[0]);
        assert!(
            lines[1].starts_with(&format!(
                "error: state dir {} is in use by another trellis process: test holder",
                sb.state()
            )),
            "{}",
            lines[1]
        );
        assert!(lines[1].ends_with("; wait for it to finish (waited 1s)"), "{}", lines[1]);
    }
    // `validate` reads the state only for the update rules: a dir still held is skipped with a note.
    let run = sb.run(&["validate", "-f", &a2(), "--lock-timeout", "1s"]).code(0);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(lines[0].starts_with("Waiting for state dir "), "{}", lines[0]);
    assert!(lines[1].starts_with("note: update rules skipped, the state cannot be read: state dir "), "{}", lines[1]);
    assert!(lines[1].ends_with(" (waited 1s)"), "{}", lines[1]);
    holder.close().unwrap();
}

#[test]
fn a_sim_dir_held_past_the_lock_timeout_is_refused_saying_it_waited_and_how_to_share() {
    let sb = Sandbox::new();
    let sim = sb.file("sim");
    let holder = hold(&sim);
    let run = sb.run(&["plan", "-f", &a2(), "--sim-dir", &sim, "--lock-timeout", "1s"]).code(1);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(
        lines[0].starts_with(&format!("Waiting for simulated cloud dir {sim} (held by test holder by ")),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(&format!("(pid {})", std::process::id())), "{}", lines[0]);
    assert!(lines[1].starts_with(&format!("error: simulated cloud dir {sim} is in use by another trellis process: ")));
    assert!(lines[1].contains("give each runner its own --sim-dir"), "{}", lines[1]);
    assert!(lines[1].ends_with(" (waited 1s)"), "{}", lines[1]);
    // The state dir the refused plan created is removed again; the sim dir is the holder's.
    sb.assert_no_workspaces();
    assert!(!Path::new(sb.state()).exists());
    holder.close().unwrap();
}

#[test]
fn a_sim_dir_freed_while_waiting_is_used() {
    let sb = Sandbox::new();
    let sim = sb.file("sim");
    let holder = hold(&sim);
    let mut plan = sb.spawn(&["plan", "-f", &a2(), "--sim-dir", &sim, "--lock-timeout", "1m"]);
    let line = plan.wait_for_line(|l| l.starts_with("Waiting for "));
    assert!(line.starts_with(&format!("Waiting for simulated cloud dir {sim} (held by test holder by ")), "{line}");
    holder.close().unwrap();
    let (code, stderr) = plan.wait();
    assert_eq!(code, 0, "{stderr:#?}");
}

#[test]
fn state_migrate_waits_for_its_target_dir() {
    let sb = Sandbox::new();
    sb.run(&["apply", "-f", &a1(), "--auto-approve"]).code(0);
    let target = sb.file("copy");
    let holder = hold(&target);
    let mut migrate =
        sb.spawn_raw(&["state", "migrate", "--from", sb.state(), "--to", &target, "--lock-timeout", "1m"]);
    let line = migrate.wait_for_line(|l| l.starts_with("Waiting for "));
    assert!(line.starts_with(&format!("Waiting for state dir {target} (held by test holder by ")), "{line}");
    holder.close().unwrap();
    let (code, stderr) = migrate.wait();
    assert_eq!(code, 0, "{stderr:#?}");
    let copy = Sandbox::with_state(&target);
    assert_eq!(copy.workspaces(), ["shoot--dev--alpha"]);
}

#[test]
fn lock_timeout_values_are_checked_before_anything_runs() {
    let sb = Sandbox::new();
    for (value, why) in [
        ("soon", "is not a duration; give one with its unit, e.g. 30s, 2m or 1h"),
        ("-5s", "is negative"),
        ("48h", "is longer than a day; give at most 24h"),
    ] {
        sb.run(&["plan", "-f", &a2(), &format!("--lock-timeout={value}")])
            .code(1)
            .stderr_has(&format!("error: invalid value '{value}' for '--lock-timeout <DURATION>'"))
            .stderr_has(why);
    }
    assert!(!Path::new(sb.state()).exists(), "nothing ran");
}

/// The user and host this process's locks name.
fn me() -> trellis_state::LockInfo {
    trellis_state::LockInfo::here("test")
}
