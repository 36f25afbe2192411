//! provider-gcp's Shoot validator, data-driven:
//!
//! - `pkg/apis/gcp/validation/shoot.go` (`ValidateNetworking`, `ValidateWorkers`,
//!   `ValidateWorkersUpdate`): every entry of upstream's `shoot_test.go`, with the complete error
//!   text where upstream checks only type and path;
//! - Gardener's own GCP manifests (`tests/data/gcp/`, see its README) through the strict decoder and
//!   `validate_shoot`, with the verdict upstream's admission gives them.

use std::path::PathBuf;

use trellis_providers::field::{ErrorList, Path};
use trellis_providers::gcp::api::InfrastructureConfig;
use trellis_providers::gcp::validation::shoot::{
    validate_networking, validate_shoot, validate_workers, validate_workers_update, GcpShoot,
};
use trellis_providers::gcp::validation::validate_infrastructure_config;
use trellis_providers::manifest::{Networking, Worker};

#[track_caller]
fn assert_errors(errs: ErrorList, expected: &[&str]) {
    let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    assert_eq!(got, expected, "\n  got:\n    {}\n", got.join("\n    "));
}

#[track_caller]
fn networking(yaml: &str) -> Networking {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("bad test networking {yaml}: {e}"))
}

#[track_caller]
fn workers(yaml: &str) -> Vec<Worker> {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("bad test workers {yaml}: {e}"))
}

fn spec_networking() -> Path {
    Path::new("spec").child("networking")
}

// ---------------------------------------------------------------------------------------------
// #ValidateNetworking (path `spec.networking`)

#[test]
fn networking_table() {
    let check = |yaml: &str, expected: &[&str]| {
        assert_errors(validate_networking(&networking(yaml), &spec_networking()), expected)
    };
    // "should return no error because nodes CIDR was provided"
    check("{nodes: 1.2.3.4/5}", &[]);
    // "should return an error because no nodes CIDR was provided"
    check("{}", &["spec.networking.nodes: Required value: a nodes CIDR must be provided for GCP shoots"]);
    // dual-stack: "should pass dual-stack"
    check("{nodes: 1.2.3.4/5, ipFamilies: [IPv4, IPv6], providerConfig: {overlay: {enabled: false}}}", &[]);
    // "should deny with dual-stack networking and overlay explicitly enabled"
    check(
        "{nodes: 1.2.3.4/5, ipFamilies: [IPv4, IPv6], providerConfig: {overlay: {enabled: true}}}",
        &["spec.networking.providerConfig.overlay.enabled: Invalid value: true: overlay must be set to false in conjunction with IPv6"],
    );
    // "should deny with dual-stack networking and overlay implicitly enabled"
    check(
        "{nodes: 1.2.3.4/5, ipFamilies: [IPv4, IPv6], providerConfig: {}}",
        &[
            r#"spec.networking.ipFamilies: Invalid value: ["IPv4","IPv6"]: overlay must be set to false in conjunction with IPv6"#,
        ],
    );
    // Beyond upstream's table, from shoot.go: no providerConfig at all is the same as `{}`.
    check(
        "{nodes: 1.2.3.4/5, ipFamilies: [IPv4, IPv6]}",
        &[
            r#"spec.networking.ipFamilies: Invalid value: ["IPv4","IPv6"]: overlay must be set to false in conjunction with IPv6"#,
        ],
    );
    // IPv6 single-stack: refused, and the overlay rule applies too.
    check(
        "{nodes: 1.2.3.4/5, ipFamilies: [IPv6], providerConfig: {overlay: {enabled: false}}}",
        &[r#"spec.networking.ipFamilies: Invalid value: ["IPv6"]: IPv6 single-stack networking is not supported"#],
    );
    // A providerConfig that is not an object cannot be decoded.
    check(
        "{nodes: 1.2.3.4/5, ipFamilies: [IPv4, IPv6], providerConfig: overlay}",
        &[
            r#"spec.networking.providerConfig: Invalid value: "overlay": failed to decode networking provider config: json: cannot unmarshal string into Go value of type map[string]interface {}"#,
        ],
    );
    // Upstream's type assertions: an overlay that is not an object, or an `enabled` that is not a
    // boolean, passes; IPv4 never looks at the overlay.
    check("{nodes: 1.2.3.4/5, ipFamilies: [IPv4, IPv6], providerConfig: {overlay: true}}", &[]);
    check("{nodes: 1.2.3.4/5, ipFamilies: [IPv4, IPv6], providerConfig: {overlay: {enabled: 'true'}}}", &[]);
    check("{nodes: 1.2.3.4/5, ipFamilies: [IPv4], providerConfig: {overlay: {enabled: true}}}", &[]);
}

// ---------------------------------------------------------------------------------------------
// #ValidateWorkers

#[test]
fn workers_table() {
    // "should pass successfully"
    let ok = workers(
        "[{name: foo, volume: {type: some-type, size: 40Gi}, zones: [zone1]}, {name: bar, volume: {type: some-type, size: 40Gi}, zones: [zone1]}]",
    );
    assert_errors(validate_workers(&ok, &Path::new("")), &[]);
    // "should fail without at least one zone"
    let no_zone = workers("[{name: bar, volume: {type: some-type, size: 40Gi}, zones: []}]");
    assert_errors(
        validate_workers(&no_zone, &Path::new("workers")),
        &["workers[0].zones: Required value: at least one zone must be configured"],
    );
    // Beyond upstream's table, from shoot.go: the volume rules.
    let bad = workers(
        "[{name: a, zones: [z]}, {name: b, volume: {}, zones: [z]}, {name: c, volume: {type: SCRATCH, size: 10Gi}}]",
    );
    assert_errors(
        validate_workers(&bad, &Path::new("spec").child("provider").child("workers")),
        &[
            "spec.provider.workers[0].volume: Required value: must not be nil",
            "spec.provider.workers[1].volume.type: Required value: must not be empty",
            "spec.provider.workers[1].volume.size: Required value: must not be empty",
            r#"spec.provider.workers[2].volume.type: Invalid value: "SCRATCH": type SCRATCH is not allowed as boot disk"#,
            "spec.provider.workers[2].zones: Required value: at least one zone must be configured",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// #ValidateWorkersUpdate

fn two_workers() -> Vec<Worker> {
    workers(
        "[{name: foo, volume: {type: some-type, size: 40Gi}, zones: [zone1, zone2]}, {name: bar, volume: {type: some-type, size: 40Gi}, zones: [zone1, zone2]}]",
    )
}

#[test]
fn workers_update_table() {
    let path = Path::new("workers");
    let old = two_workers();
    // "should pass because workers are unchanged"
    assert_errors(validate_workers_update(&old, &old.clone(), &path), &[]);
    // "should allow adding workers"
    assert_errors(validate_workers_update(&old[..1], &old, &path), &[]);
    // "should allow adding a zone to a worker"
    let mut new = old.clone();
    new[0].zones.push("another-zone".into());
    assert_errors(validate_workers_update(&old, &new, &path), &[]);
    // "should forbid removing a zone from a worker"
    let mut new = old.clone();
    new[1].zones.remove(0);
    assert_errors(
        validate_workers_update(&old, &new, &path),
        &[r#"workers[1].zones: Invalid value: ["zone2"]: field is immutable"#],
    );
    // "should forbid changing the zone order"
    let mut new = old.clone();
    new[0].zones.reverse();
    new[1].zones.reverse();
    assert_errors(
        validate_workers_update(&old, &new, &path),
        &[
            r#"workers[0].zones: Invalid value: ["zone2","zone1"]: field is immutable"#,
            r#"workers[1].zones: Invalid value: ["zone2","zone1"]: field is immutable"#,
        ],
    );
    // "should forbid adding a zone while changing an existing one"
    let mut new = old.clone();
    new.push(workers("[{name: worker3, zones: [zone1]}]").remove(0));
    new[1].zones[0] = "zone2".into();
    assert_errors(
        validate_workers_update(&old, &new, &path),
        &[r#"workers[1].zones: Invalid value: ["zone2","zone2"]: field is immutable"#],
    );
    // "should allow adding in-place workers"
    let mut new = old.clone();
    new[1].update_strategy = Some("AutoInPlaceUpdate".into());
    assert_errors(validate_workers_update(&old[..1], &new, &path), &[]);
}

#[test]
fn workers_update_in_place_table() {
    let path = Path::new("spec").child("provider").child("workers");
    // "should forbid changing the providerConfig if the update strategy is in-place"
    let old = workers(
        r#"
- {name: foo, updateStrategy: AutoInPlaceUpdate, providerConfig: {foo: bar}, zones: [zone1, zone2]}
- {name: worker2, updateStrategy: ManualInPlaceUpdate, providerConfig: {zoo: dash}, zones: [zone1, zone2]}
- {name: worker3, updateStrategy: AutoRollingUpdate, providerConfig: {bar: foo}}
- {name: worker4, updateStrategy: AutoInPlaceUpdate, providerConfig: {bar: foo}}
"#,
    );
    let mut new = old.clone();
    new[0].provider_config = Some(serde_json::json!({"foo": "baz"}));
    new[1].provider_config = Some(serde_json::json!({"zoo": "bash"}));
    new[2].provider_config = Some(serde_json::json!({"bar": "baz"}));
    assert_errors(
        validate_workers_update(&old, &new, &path),
        &[
            r#"spec.provider.workers[0].providerConfig: Invalid value: {"foo":"baz"}: providerConfig is immutable when update strategy is in-place"#,
            r#"spec.provider.workers[1].providerConfig: Invalid value: {"zoo":"bash"}: providerConfig is immutable when update strategy is in-place"#,
        ],
    );
    // "should forbid changing the data volumes if the update strategy is in-place"
    let old = workers(
        r#"
- {name: foo, updateStrategy: AutoInPlaceUpdate, dataVolumes: [{name: foo, size: 20Gi, type: foo}], zones: [zone1, zone2]}
- {name: worker2, updateStrategy: ManualInPlaceUpdate, dataVolumes: [{name: bar, size: 30Gi, type: bar}], zones: [zone1, zone2]}
"#,
    );
    let new = workers(
        r#"
- {name: foo, updateStrategy: AutoInPlaceUpdate, dataVolumes: [{name: baz, size: 40Gi, type: baz}], zones: [zone1, zone2]}
- {name: worker2, updateStrategy: ManualInPlaceUpdate, dataVolumes: [{name: qux, size: 50Gi, type: qux}], zones: [zone1, zone2]}
"#,
    );
    assert_errors(
        validate_workers_update(&old, &new, &path),
        &[
            r#"spec.provider.workers[0].dataVolumes: Invalid value: [{"Name":"baz","Type":"baz","VolumeSize":"40Gi","Encrypted":null}]: dataVolumes are immutable when update strategy is in-place"#,
            r#"spec.provider.workers[1].dataVolumes: Invalid value: [{"Name":"qux","Type":"qux","VolumeSize":"50Gi","Encrypted":null}]: dataVolumes are immutable when update strategy is in-place"#,
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Gardener's own GCP manifests

fn data(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gcp").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse_shoot(text: &str) -> Result<GcpShoot, String> {
    trellis_planner::yaml::from_str(text).map_err(|e| e.to_string())
}

#[track_caller]
fn shoot(file: &str) -> GcpShoot {
    parse_shoot(&data(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn usage_example_shoot_is_valid() {
    let s = shoot("usage-shoot.yaml");
    assert_eq!(s.spec.provider.type_, trellis_providers::gcp::PROVIDER_TYPE);
    assert_errors(validate_shoot(&s, None), &[]);
    assert_errors(validate_shoot(&s, Some(&s)), &[]);
}

#[test]
fn usage_example_infrastructure_config_is_valid_as_written_and_refused_uncommented() {
    let text = data("usage-infrastructure-config.yaml");
    let cfg: InfrastructureConfig = trellis_planner::yaml::from_str(&text).unwrap();
    let nodes = trellis_providers::gcp::validation::ShootContext { nodes: Some("10.250.0.0/16"), ..Default::default() };
    assert_errors(validate_infrastructure_config(&cfg, nodes), &[]);

    // Every commented line switched on, as a reader trying the whole example would.
    let uncommented: String =
        text.lines().skip(1).map(|l| l.strip_prefix("# ").map_or(l.to_string(), |l| format!("  {l}")) + "\n").collect();
    let cfg: InfrastructureConfig = trellis_planner::yaml::from_str(&uncommented).unwrap();
    assert_eq!(cfg.networks.vpc.as_ref().unwrap().name, "my-vpc");
    assert_eq!(cfg.networks.cloud_nat.as_ref().unwrap().nat_ip_names.as_ref().unwrap().len(), 2);
    // QUIRK (upstream): the value shown is minPortsPerVM's.
    assert_errors(
        validate_infrastructure_config(&cfg, nodes),
        &["networks.cloudNAT.maxPortsPerVM: Invalid value: 2048: maxPortsPerVM are only configurable if dynamic port allocation is enabled."],
    );
}

#[test]
fn example_infrastructure_provider_config_is_refused_for_its_unknown_dual_stack_field() {
    let text = data("example-30-infrastructure.yaml");
    let infrastructure = text.split("\n---\n").last().unwrap();
    let doc: serde_json::Value = trellis_planner::yaml::from_str(infrastructure).unwrap();
    assert_eq!(doc["kind"], "Infrastructure");
    let provider_config = doc["spec"]["providerConfig"].clone();
    let err = serde_json::from_value::<InfrastructureConfig>(provider_config.clone()).unwrap_err().to_string();
    assert!(err.contains("unknown field `dualStack`"), "{err}");
    // Without it the config is valid (the Cluster's shoot has no nodes CIDR to compare with).
    let mut provider_config = provider_config;
    provider_config["networks"].as_object_mut().unwrap().remove("dualStack");
    let cfg: InfrastructureConfig = serde_json::from_value(provider_config).unwrap();
    assert_errors(
        validate_infrastructure_config(&cfg, trellis_providers::gcp::validation::ShootContext::default()),
        &[],
    );
}

#[test]
fn gardener_example_shoot_with_the_gcp_lines_is_refused_as_upstream_refuses_it() {
    let text = data("gardener-90-shoot-gcp.yaml");
    let err = parse_shoot(&text).unwrap_err();
    assert!(err.contains("dualStack"), "{err}");
    let without: String = text
        .lines()
        .filter(|l| !matches!(l.trim_end(), "        dualStack:" | "          enabled: true"))
        .map(|l| format!("{l}\n"))
        .collect();
    let s = parse_shoot(&without).unwrap();
    assert_errors(
        validate_shoot(&s, None),
        &[
            r#"spec.provider.infrastructureConfig.networks.workers: Invalid value: "10.242.0.0/19": must be a subset of "networking.nodes" ("10.250.0.0/16")"#,
            "spec.provider.workers[0].zones: Required value: at least one zone must be configured",
        ],
    );
}

#[test]
fn ipv6_usage_example_is_refused_without_the_overlay_switched_off() {
    let mut s = shoot("ipv6-dual-stack-shoot.yaml");
    assert_errors(
        validate_shoot(&s, None),
        &[
            r#"spec.networking.ipFamilies: Invalid value: ["IPv4","IPv6"]: overlay must be set to false in conjunction with IPv6"#,
        ],
    );
    s.spec.networking.provider_config = Some(serde_json::json!({"overlay": {"enabled": false}}));
    assert_errors(validate_shoot(&s, None), &[]);
}

#[test]
fn user_managed_egress_examples_validate_as_upstream() {
    let s = shoot("user-managed-egress-ipv4-shoot.yaml");
    assert!(matches!(
        s.spec.provider.infrastructure_config.mode(),
        trellis_providers::gcp::api::Mode::UserManagedEgress { .. }
    ));
    assert_errors(validate_shoot(&s, None), &[]);

    let mut s = shoot("user-managed-egress-dual-stack-shoot.yaml");
    assert_errors(
        validate_shoot(&s, None),
        &[
            r#"spec.networking.ipFamilies: Invalid value: ["IPv4","IPv6"]: overlay must be set to false in conjunction with IPv6"#,
        ],
    );
    s.spec.networking.provider_config = Some(serde_json::json!({"overlay": {"enabled": false}}));
    assert_errors(validate_shoot(&s, None), &[]);
}

#[test]
fn a_workerless_shoot_is_not_validated() {
    let mut s = shoot("usage-shoot.yaml");
    s.spec.provider.workers.clear();
    s.spec.provider.infrastructure_config.networks.workers.clear();
    assert_errors(validate_shoot(&s, None), &[]);
}

#[test]
fn update_runs_the_update_rules_then_the_create_rules() {
    let old = shoot("usage-shoot.yaml");
    let mut new = old.clone();
    new.spec.provider.infrastructure_config.networks.workers = "10.250.0.0/17".into();
    new.spec.provider.workers[0].zones = vec!["europe-west1-c".into()];
    assert_errors(
        validate_shoot(&new, Some(&old)),
        &[
            r#"spec.provider.infrastructureConfig.networks.workers: Invalid value: "10.250.0.0/17": worker CIDR blocks can only be expanded"#,
            r#"spec.provider.workers[0].zones: Invalid value: ["europe-west1-c"]: field is immutable"#,
        ],
    );
}
