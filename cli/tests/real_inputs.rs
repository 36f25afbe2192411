//! Real inputs written by others, through the binary: upstream's example Shoot manifests, ARM names
//! in another casing than the user wrote them, world files copied from examples.

mod common;

use common::*;
use std::path::Path;

/// `providers/tests/data/upstream/<name>`: upstream's example manifests (each names its source).
fn upstream(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/tests/data/upstream").join(name);
    assert!(path.exists(), "missing fixture {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

#[test]
fn regression_gardener_example_shoot_is_not_a_yaml_error() {
    let sb = Sandbox::new();
    let file = upstream("gardener-90-shoot.yaml");
    let run = sb.run(&["validate", "-f", &file]).code(1);
    assert_eq!(
        run.stderr_lines(),
        vec![format!(
            "error: {file}: document 1: spec.provider.type: unsupported provider type \"<some-provider-name>\"; trellis supports: azure"
        )]
    );
}

#[test]
fn regression_gardener_example_shoot_as_azure_validates_plans_and_applies() {
    let sb = Sandbox::new();
    let file = upstream("gardener-90-shoot-azure.yaml");
    sb.run(&["validate", "-f", &file]).code(0).stdout_has("1 shoot(s) valid.");
    let plan = sb.run(&["plan", "-f", &file, "--output", "json"]).code(0).json();
    assert_eq!(plan["shoot"], "shoot--dev--crazy-botany");
    let nodes = plan["nodes"].as_array().expect("nodes");
    assert!(nodes.iter().all(|n| n["action"] == "create"), "{plan:#}");
    assert_eq!(nodes.len(), 5, "{plan:#}");
    sb.run(&["apply", "-f", &file, "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &file, "--detailed-exitcode"]).code(0).stdout_has("No changes");
}
