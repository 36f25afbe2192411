//! Admission validation of whole Shoot manifests through `azure::validate`, as `trellis validate`
//! and `trellis plan` run it: the Shoot's own rules that trellis did not check before (issue #7,
//! items 2 and 5) — provider-azure's Shoot validator (`ValidateNetworking`, `ValidateWorkers`,
//! `ValidateWorkersUpdate`) and Gardener's rules for `spec.networking`. The rule tables, with
//! upstream's unit-test entries, are in `shoot_validation.rs`.

use crate::common;
use common::managed_shoot as shoot;

use serde_json::json;
use trellis_providers::azure::{self, AzureShoot};
use trellis_providers::provider::ProviderError;
use trellis_state::Workspace;

#[track_caller]
fn assert_errors(got: Vec<String>, expected: &[&str], what: &str) {
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    assert_eq!(got, expected, "\n{what}\n  got:\n    {}\n", got.join("\n    "));
}

/// `azure::validate` against `ws`: the error lines (empty when valid).
fn validate_in(shoot: &AzureShoot, ws: &Workspace) -> Vec<String> {
    match azure::validate(shoot, ws) {
        Ok(()) => Vec::new(),
        Err(ProviderError::Invalid(errs)) => errs.iter().map(|e| e.to_string()).collect(),
        Err(other) => panic!("unexpected error {other}"),
    }
}

fn validate(shoot: &AzureShoot) -> Vec<String> {
    validate_in(shoot, &Workspace::new(&shoot.technical_id()))
}

/// A workspace in which `old` (a Calico shoot: the Shoot mutator leaves it alone) was applied.
fn applied(old: &AzureShoot) -> Workspace {
    let mut ws = Workspace::new(&old.technical_id());
    let state = azure::state::AzureState { last_applied: Some(azure::last_applied(old)), ..Default::default() };
    ws.set_provider_state(Some(&state)).unwrap();
    ws.serial = 1;
    ws
}

#[test]
fn the_test_shoot_is_valid() {
    assert_errors(validate(&shoot(&[])), &[], "the test shoot");
}

#[test]
fn regression_calico_with_overlay_is_refused() {
    let s = shoot(&[(
        "    type: calico\n",
        "    type: calico\n    providerConfig:\n      apiVersion: calico.networking.extensions.gardener.cloud/v1alpha1\n      kind: NetworkConfig\n      overlay:\n        enabled: true\n",
    )]);
    assert_errors(
        validate(&s),
        &["spec.networking.providerConfig.overlay.enabled: Forbidden: Calico overlay network is not supported on azure"],
        "calico overlay",
    );
}

#[test]
fn regression_ipv6_single_stack_and_dual_stack_are_refused() {
    let s = shoot(&[("    services: 100.64.0.0/13\n", "    services: 100.64.0.0/13\n    ipFamilies: [IPv4, IPv6]\n")]);
    assert_errors(
        validate(&s),
        &[r#"spec.networking.ipFamilies: Invalid value: ["IPv4","IPv6"]: dual-stack networking is not supported"#],
        "dual-stack",
    );
    let s = shoot(&[
        ("    nodes: 10.250.0.0/16\n", "    nodes: 'fd00:10:250::/64'\n"),
        ("    pods: 100.96.0.0/11\n", "    pods: 'fd00:100:96::/56'\n"),
        ("    services: 100.64.0.0/13\n", "    services: 'fd00:100:64::/112'\n    ipFamilies: [IPv6]\n"),
    ]);
    assert_errors(
        validate(&s),
        &[
            r#"spec.networking.ipFamilies: Invalid value: ["IPv6"]: IPv6 single-stack networking is not supported"#,
            // The InfrastructureConfig's IPv4 networks cannot hold IPv6 nodes (upstream says so too).
            r#"networking.nodes: Invalid value: "fd00:10:250::/64": must be a subset of "networks.vnet.cidr" ("10.250.0.0/16")"#,
            r#"networks.workers: Invalid value: "10.250.0.0/19": must be a subset of "networking.nodes" ("fd00:10:250::/64")"#,
        ],
        "IPv6 single-stack",
    );
}

#[test]
fn regression_worker_without_volume_is_refused() {
    let s = shoot(&[("        volume:\n          type: StandardSSD_LRS\n          size: 50Gi\n", "")]);
    assert_errors(validate(&s), &["spec.provider.workers[0].volume: Required value: must not be nil"], "no volume");
}

#[test]
fn regression_worker_data_volumes_are_validated() {
    let s = shoot(&[(
        "          size: 50Gi\n",
        "          size: 50Gi\n          encrypted: true\n        dataVolumes:\n          - name: data\n            size: 100Gi\n",
    )]);
    assert_errors(
        validate(&s),
        &[
            "spec.provider.workers[0].volume.encrypted: Unsupported value: true",
            "spec.provider.workers[0].dataVolumes[0].type: Required value: must not be empty",
        ],
        "data volumes",
    );
}

#[test]
fn regression_worker_zones_follow_the_cluster() {
    // Zones on a non-zoned cluster.
    let s = shoot(&[("      zoned: true\n", "      zoned: false\n")]);
    assert_errors(
        validate(&s),
        &["spec.provider.workers[0].zones: Required value: zones must not be specified for non zoned clusters"],
        "zones on a non-zoned cluster",
    );
    // No zones on a zoned cluster.
    let s = shoot(&[("        zones: ['1', '2']\n", "")]);
    assert_errors(
        validate(&s),
        &["spec.provider.workers[0].zones: Required value: at least one zone must be configured for zoned clusters"],
        "no zones on a zoned cluster",
    );
    // A zone twice.
    let s = shoot(&[("        zones: ['1', '2']\n", "        zones: ['2', '2']\n")]);
    assert_errors(
        validate(&s),
        &[r#"spec.provider.workers[0].zones[1]: Invalid value: "2": must only be specified once per worker group"#],
        "duplicate zones",
    );
}

#[test]
fn regression_worker_zones_can_only_be_appended() {
    let old = shoot(&[]);
    let ws = applied(&old);
    assert_errors(validate_in(&shoot(&[("zones: ['1', '2']", "zones: ['1', '2', '3']")]), &ws), &[], "zone appended");
    assert_errors(
        validate_in(&shoot(&[("zones: ['1', '2']", "zones: ['2']")]), &ws),
        &[r#"spec.provider.workers[0].zones: Invalid value: ["2"]: field is immutable"#],
        "zone removed",
    );
}

#[test]
fn regression_shoot_cidrs_are_validated() {
    // The issue's example: it used to pass `validate` and plan.
    let s = shoot(&[("    nodes: 10.250.0.0/16\n", "    nodes: 10.250.0.0/99999999999\n")]);
    assert_errors(
        validate(&s),
        &[
            r#"spec.networking.nodes: Invalid value: "10.250.0.0/99999999999": invalid CIDR address: 10.250.0.0/99999999999"#,
        ],
        "nodes with a huge prefix",
    );
    let s = shoot(&[
        ("    pods: 100.96.0.0/11\n", "    pods: 100.96.0.7/11\n"),
        ("    services: 100.64.0.0/13\n", "    services: 'fd00::/112'\n"),
    ]);
    assert_errors(
        validate(&s),
        &[
            r#"spec.networking.pods: Invalid value: "100.96.0.7/11": must be valid canonical CIDR"#,
            r#"spec.networking.services: Invalid value: "fd00::": must be a valid IPv4 address"#,
        ],
        "non-canonical pods, IPv6 services",
    );
}

#[test]
fn regression_overlapping_shoot_networks_are_refused() {
    let s = shoot(&[("    services: 100.64.0.0/13\n", "    services: 100.96.0.0/13\n")]);
    assert_errors(
        validate(&s),
        &[
            r#"spec.networking.services: Invalid value: "100.96.0.0/13": shoot pod network intersects with shoot service network"#,
        ],
        "pods and services overlap",
    );
}

#[test]
fn regression_ip_families_are_validated() {
    let s = shoot(&[("    services: 100.64.0.0/13\n", "    services: 100.64.0.0/13\n    ipFamilies: [IPv4, ipv4]\n")]);
    assert_errors(
        validate(&s),
        &[
            r#"spec.networking.ipFamilies[1]: Unsupported value: "ipv4": supported values: "IPv4", "IPv6""#,
            r#"spec.networking.ipFamilies: Invalid value: ["IPv4","ipv4"]: dual-stack networking is not supported"#,
        ],
        "bad IP family",
    );
}

#[test]
fn regression_networking_type_is_required_and_immutable() {
    let s = shoot(&[("    type: calico\n", "")]);
    assert_errors(validate(&s), &["spec.networking.type: Required value: networking type must be provided"], "no type");
    let ws = applied(&shoot(&[]));
    let s = shoot(&[("    type: calico\n", "    type: cilium\n")]);
    assert_errors(
        validate_in(&s, &ws),
        &[r#"spec.networking.type: Invalid value: "cilium": field is immutable"#],
        "type changed",
    );
    let s = shoot(&[("    pods: 100.96.0.0/11\n", "    pods: 100.128.0.0/11\n")]);
    assert_errors(
        validate_in(&s, &ws),
        &[r#"spec.networking.pods: Invalid value: "100.128.0.0/11": field is immutable"#],
        "pods changed",
    );
}

#[test]
fn workerless_shoot_skips_the_azure_shoot_rules() {
    // As upstream's webhook: no nodes CIDR is required, no worker rules run; Gardener forbids nodes.
    let s = shoot(&[
        ("    type: calico\n", ""),
        ("    nodes: 10.250.0.0/16\n", ""),
        ("    pods: 100.96.0.0/11\n", ""),
        ("    workers:\n      - name: worker\n        minimum: 1\n        maximum: 3\n        volume:\n          type: StandardSSD_LRS\n          size: 50Gi\n        zones: ['1', '2']\n", ""),
    ]);
    assert_errors(validate(&s), &[], "workerless");
}

#[test]
fn a_state_without_recorded_workers_skips_their_update_rules() {
    // Written by a trellis that kept only the InfrastructureConfig and three CIDRs.
    let old = shoot(&[]);
    let mut ws = Workspace::new(&old.technical_id());
    ws.provider_state = Some(trellis_state::ProviderState {
        provider: "azure".to_string(),
        version: 1,
        data: json!({"last_applied": {
            "infrastructureConfig": old.spec.provider.infrastructure_config,
            "networking": {"nodes": "10.250.0.0/16", "pods": "100.96.0.0/11", "services": "100.64.0.0/13"},
        }, "memory": {}}),
    });
    let s = shoot(&[("zones: ['1', '2']", "zones: ['2', '1']"), ("    type: calico\n", "    type: cilium\n")]);
    assert_errors(validate_in(&s, &ws), &[], "legacy state");
}

/// Upstream's example manifests (provider-azure `docs/usage/usage.md`), as fixtures.
fn upstream_example(name: &str, edit: &[(&str, &str)]) -> AzureShoot {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/upstream").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    common::azure_shoot(&path, text, edit)
}

#[test]
fn upstream_example_manifests_are_valid() {
    for name in ["non-zoned.yaml", "zoned.yaml", "zoned-nat-per-zone.yaml"] {
        assert_errors(validate(&upstream_example(name, &[])), &[], name);
    }
}

#[test]
fn regression_upstream_examples_with_a_broken_worker_are_refused() {
    let s = upstream_example("zoned.yaml", &[("      zones:\n      - \"1\"\n      - \"2\"\n", "")]);
    assert_errors(
        validate(&s),
        &["spec.provider.workers[0].zones: Required value: at least one zone must be configured for zoned clusters"],
        "zoned example without worker zones",
    );
    let s = upstream_example("zoned-nat-per-zone.yaml", &[("      - \"2\"\n", "      - \"3\"\n")]);
    assert_errors(
        validate(&s),
        &[
            r#"spec.provider.workers[0].zones[1]: Invalid value: "3": zone configuration must be specified in "infrastructureConfig.networks.zones""#,
        ],
        "worker zone outside networks.zones",
    );
    let s =
        upstream_example("non-zoned.yaml", &[("      volume:\n        size: 50Gi\n        type: Standard_LRS\n", "")]);
    assert_errors(validate(&s), &["spec.provider.workers[0].volume: Required value: must not be nil"], "no volume");
}
