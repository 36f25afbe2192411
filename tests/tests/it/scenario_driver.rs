//! The scenario driver's own expectations: a scenario must be able to fail.

use trellis_tests::expect::ScenarioCase;

/// A scenario directory in a temp dir with these files.
fn case(files: &[(&str, &str)]) -> (tempfile::TempDir, ScenarioCase) {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write scenario file");
    }
    let case = ScenarioCase { dir: dir.path().to_path_buf(), name: "driver/self-test".to_string() };
    (dir, case)
}

const GCE_WORLD: &str = "gce:
  resources:
    - selfLink: projects/trellis-sim/global/networks/my-vpc
      autoCreateSubnetworks: false
";

/// `none_exist:` looked only at the simulated ARM cloud, so a GCP scenario's `none_exist` passed
/// whatever the GCE cloud held.
#[test]
fn regression_none_exist_sees_gce_resources() {
    let (_dir, case) = case(&[
        ("world.yaml", GCE_WORLD),
        ("expect.yaml", "steps:\n  - world: world.yaml\n    none_exist: [global/networks/my-vpc]\n"),
    ]);
    let err = case.run().expect_err("the VPC exists, so none_exist must fail");
    assert!(err.contains("none_exist: projects/trellis-sim/global/networks/my-vpc exists"), "unexpected error: {err}");
}
