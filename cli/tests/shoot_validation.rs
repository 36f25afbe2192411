//! The Shoot's own admission rules through the real binary (issue #7, items 2 and 5): what
//! `trellis validate` and `trellis plan` say about a shoot's networking and workers.

mod common;

use common::{scenario, Sandbox};

/// `text` with `from` replaced by `to` (once), written into the sandbox as `name`.
fn edited(sb: &Sandbox, source: &str, name: &str, edits: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(source).expect("read fixture");
    for (from, to) in edits {
        assert!(text.contains(from), "{from:?} not in {source}");
        text = text.replacen(from, to, 1);
    }
    let path = sb.file(name);
    std::fs::write(&path, text).expect("write manifest");
    path
}

#[test]
fn regression_shoot_cidrs_are_validated() {
    let sb = Sandbox::new();
    let shoot = edited(&sb, &common::a1(), "shoot.yaml", &[("nodes: 10.250.0.0/16", "nodes: 10.250.0.0/99999999999")]);
    let expected = r#"spec.networking.nodes: Invalid value: "10.250.0.0/99999999999": invalid CIDR address: 10.250.0.0/99999999999"#;
    let run = sb.run(&["validate", "-f", &shoot]).code(1);
    assert!(run.stderr_lines().contains(&expected), "{}", run.stderr);
    let run = sb.run(&["plan", "-f", &shoot]).code(1);
    assert!(run.stderr.contains(expected), "{}", run.stderr);
    sb.assert_no_workspaces();
}

#[test]
fn regression_calico_with_overlay_is_refused() {
    // It used to plan the BYO subnet with the CCM's routes off.
    let sb = Sandbox::new();
    let shoot = edited(
        &sb,
        &scenario("C9-byo-subnet-without-route-table/shoot-overlay.yaml"),
        "shoot.yaml",
        &[("type: cilium", "type: calico"), ("cilium.networking.extensions", "calico.networking.extensions")],
    );
    let world = scenario("C9-byo-subnet-without-route-table/world.yaml");
    let run = sb.run(&["plan", "-f", &shoot, "--world", &world]).code(1);
    assert!(
        run.stderr_lines().contains(
            &"spec.networking.providerConfig.overlay.enabled: Forbidden: Calico overlay network is not supported on azure"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn regression_worker_rules_are_enforced() {
    let sb = Sandbox::new();
    let shoot = edited(
        &sb,
        &common::a2(),
        "shoot.yaml",
        &[
            ("        volume:\n          type: StandardSSD_LRS\n          size: 50Gi\n", ""),
            ("zones: [\"1\"]", "zones: [\"1\", \"1\"]"),
        ],
    );
    let run = sb.run(&["validate", "-f", &shoot]).code(1);
    let lines = run.stderr_lines();
    assert_eq!(
        &lines[1..],
        &[
            "spec.provider.workers[0].volume: Required value: must not be nil",
            r#"spec.provider.workers[0].zones[1]: Invalid value: "1": must only be specified once per worker group"#,
        ],
        "{}",
        run.stderr
    );
}
