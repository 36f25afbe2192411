//! The Shoot's own admission rules and the overlay decision, through the real binary (issue #7,
//! items 2, 3 and 5): what `trellis validate` and `trellis plan` say about a shoot's networking and
//! workers, and whether the CCM writes routes when the CNI's provider config is left out.

use crate::common;

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

const OVERLAY_CONFIG: &str = "    providerConfig:
      apiVersion: cilium.networking.extensions.gardener.cloud/v1alpha1
      kind: NetworkConfig
      overlay:
        enabled: true
";

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

#[test]
fn regression_cilium_shoot_keeps_the_overlay_it_was_applied_with() {
    // Applied with overlay on (no route table on the subnet: fine under overlay). Then the provider
    // config is left out: provider-azure's Shoot mutator carries the old overlay over, so the CCM
    // still writes no routes and no route table is needed. trellis used to read "no overlay" here
    // and refuse the plan (C9).
    let sb = Sandbox::new();
    let world = scenario("C9-byo-subnet-without-route-table/world.yaml");
    let with_overlay = scenario("C9-byo-subnet-without-route-table/shoot-overlay.yaml");
    sb.run(&["apply", "-f", &with_overlay, "--world", &world, "--auto-approve"]).code(0);
    let ws = sb.workspace("shoot--platform--byo-c9");
    assert_eq!(
        ws["provider_state"]["data"]["last_applied"]["networking"]["providerConfig"]["overlay"]["enabled"],
        true
    );

    let without = edited(&sb, &with_overlay, "shoot.yaml", &[(OVERLAY_CONFIG, "")]);
    // The last-applied configuration changes (the provider config is gone): a change to record, no cloud write.
    let plan = sb.run(&["plan", "-f", &without, "--world", &world, "--output", "json", "--detailed-exitcode"]).code(2);
    let plan = plan.json();
    assert_eq!(plan["artifacts"]["ccm_flags"]["configure-cloud-routes"], false, "{plan:#}");
}

#[test]
fn a_new_cilium_shoot_without_provider_config_runs_without_overlay() {
    // provider-azure's mutator writes `overlay.enabled: false` into a new Cilium shoot: the CCM
    // writes routes, so the BYO subnet needs a route table (C9).
    let sb = Sandbox::new();
    let world = scenario("C9-byo-subnet-without-route-table/world.yaml");
    let shoot = edited(
        &sb,
        &scenario("C9-byo-subnet-without-route-table/shoot-overlay.yaml"),
        "shoot.yaml",
        &[(OVERLAY_CONFIG, "")],
    );
    sb.run(&["plan", "-f", &shoot, "--world", &world]).code(1).stderr_has("has no route table attached");
    // The same shoot in managed mode records the mutated provider config in its state.
    let managed = edited(&sb, &common::a1(), "managed.yaml", &[("type: calico", "type: cilium")]);
    sb.run(&["apply", "-f", &managed, "--auto-approve"]).code(0);
    let ws = sb.workspace("shoot--dev--alpha");
    assert_eq!(
        ws["provider_state"]["data"]["last_applied"]["networking"]["providerConfig"],
        serde_json::json!({"overlay": {"enabled": false}})
    );
}

#[test]
fn upstream_example_manifests_validate_and_plan() {
    // provider-azure's own example Shoots (docs/usage/usage.md), kept in providers/tests/data/upstream.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/tests/data/upstream");
    for name in ["non-zoned.yaml", "zoned.yaml", "zoned-nat-per-zone.yaml"] {
        let sb = Sandbox::new();
        let file = dir.join(name);
        let file = file.to_str().expect("UTF-8 path");
        sb.run(&["validate", "-f", file]).code(0).stdout_has("1 shoot(s) valid.");
        sb.run(&["plan", "-f", file]).code(0);
    }
}
