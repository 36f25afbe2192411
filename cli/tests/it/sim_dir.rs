//! `--sim-dir` with a sled state dir: the simulated clouds in a dir of their own, apart from the state.

use crate::common;

use common::*;

#[test]
fn a_sled_state_with_its_simulated_cloud_in_a_sim_dir_of_its_own() {
    let sb = Sandbox::new();
    let sim = sb.file("sim");
    sb.run(&["apply", "-f", &a2(), "--auto-approve", "--sim-dir", &sim]).code(0);
    sb.run(&["plan", "-f", &a2(), "--sim-dir", &sim, "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    // The state dir's own simulated cloud is empty: the shoot's resources are in the sim dir only.
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(2).stdout_has("7 to create");
    // The sim dir is not the state dir.
    let run = sb.run(&["plan", "-f", &a2(), "--sim-dir", sb.state()]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    run.stderr_has("is the state dir; leave --sim-dir out");
}

#[test]
fn a_busy_sim_dir_is_one_line_naming_its_holder() {
    let sb = Sandbox::new();
    let sim = sb.file("sim");
    let mut apply =
        sb.spawn(&["apply", "-f", &a2(), "--auto-approve", "--sim-dir", &sim, "--sim-write-latency-ms", "2000"]);
    apply.wait_for_line(|l| l.ends_with(": created"));
    let other = Sandbox::new();
    let run = other.run(&["plan", "-f", &a2(), "--sim-dir", &sim]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    run.stderr_has(&format!("error: simulated cloud dir {sim} is in use by another trellis process: apply by "))
        .stderr_has(&format!("(pid {})", apply.pid()))
        .stderr_has("give each runner its own --sim-dir");
    // The failed plan left no state dir behind.
    other.assert_no_workspaces();
    assert!(!std::path::Path::new(other.state()).exists());
}
