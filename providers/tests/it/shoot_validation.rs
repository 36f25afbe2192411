//! Admission validation of the Shoot's own fields, data-driven:
//!
//! - provider-azure's `pkg/apis/azure/validation/shoot.go` (`ValidateNetworking`, `ValidateWorkers`,
//!   `ValidateWorkersUpdate`): every entry of upstream's `shoot_test.go`, with the complete error
//!   text where upstream checks only type and path;
//! - Gardener's rules for `spec.networking` (`pkg/api/core/validation/shoot.go` `validateNetworking`
//!   and `validateNetworkingUpdate`, `ValidateIPFamilies`, the `ShootValidator` plugin's
//!   disjointedness and reserved-range checks from `pkg/utils/validation/cidr/disjoint.go`): the
//!   entries of upstream's "networking section" and `disjoint_test.go`;
//!
//! Whole manifests through `azure::validate` are in `shoot_admission.rs`.

use trellis_providers::azure::api::InfrastructureConfig;
use trellis_providers::azure::validation::shoot::{validate_networking, validate_workers, validate_workers_update};
use trellis_providers::field::Path;
use trellis_providers::manifest::{Networking, Worker};
use trellis_providers::networking as core;

#[track_caller]
fn assert_errors(got: Vec<String>, expected: &[&str], what: &str) {
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    assert_eq!(got, expected, "\n{what}\n  got:\n    {}\n", got.join("\n    "));
}

fn strings(errs: trellis_providers::field::ErrorList) -> Vec<String> {
    errs.iter().map(|e| e.to_string()).collect()
}

#[track_caller]
fn networking(yaml: &str) -> Networking {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("bad test networking {yaml}: {e}"))
}

#[track_caller]
fn workers(yaml: &str) -> Vec<Worker> {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("bad test workers {yaml}: {e}"))
}

#[track_caller]
fn infra(yaml: &str) -> InfrastructureConfig {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("bad test config {yaml}: {e}"))
}

fn spec_networking() -> Path {
    Path::new("spec").child("networking")
}

// ---------------------------------------------------------------------------------------------
// provider-azure `ValidateNetworking` (upstream's table, path `spec.networking`)

#[track_caller]
fn check_azure_networking(yaml: &str, expected: &[&str]) {
    assert_errors(strings(validate_networking(&networking(yaml), &spec_networking())), expected, yaml);
}

#[test]
fn azure_networking_table() {
    // "should return no error because nodes CIDR was provided"
    check_azure_networking("{nodes: 1.2.3.4/5}", &[]);
    // "should return an error because no nodes CIDR was provided"
    check_azure_networking(
        "{}",
        &["spec.networking.nodes: Required value: a nodes CIDR must be provided for Azure shoots"],
    );
    // "should return an error if calico is used with overlay network"
    check_azure_networking(
        "{nodes: 1.2.3.4/5, type: calico, providerConfig: {apiVersion: calico.networking.extensions.gardener.cloud/v1alpha1, kind: NetworkConfig, overlay: {enabled: true}}}",
        &["spec.networking.providerConfig.overlay.enabled: Forbidden: Calico overlay network is not supported on azure"],
    );
    // "should return no error if calico is used without overlay network"
    check_azure_networking(
        "{nodes: 1.2.3.4/5, type: calico, providerConfig: {apiVersion: calico.networking.extensions.gardener.cloud/v1alpha1, kind: NetworkConfig, overlay: {enabled: false}}}",
        &[],
    );
    // "should return no error if cilium is used with overlay network"
    check_azure_networking(
        "{nodes: 1.2.3.4/5, type: cilium, providerConfig: {apiVersion: cilium.networking.extensions.gardener.cloud/v1alpha1, kind: NetworkConfig, overlay: {enabled: true}}}",
        &[],
    );
}

#[test]
fn azure_networking_ip_families() {
    check_azure_networking("{nodes: 10.250.0.0/16, ipFamilies: [IPv4]}", &[]);
    check_azure_networking(
        "{nodes: 2001:db8::/64, ipFamilies: [IPv6]}",
        &[r#"spec.networking.ipFamilies: Invalid value: ["IPv6"]: IPv6 single-stack networking is not supported"#],
    );
    check_azure_networking(
        "{nodes: 10.250.0.0/16, ipFamilies: [IPv4, IPv6]}",
        &[r#"spec.networking.ipFamilies: Invalid value: ["IPv4","IPv6"]: dual-stack networking is not supported"#],
    );
}

#[test]
fn azure_networking_provider_config_that_upstream_cannot_read() {
    // Upstream's decodeNetworkConfig fails: InternalError with Go's JSON error.
    check_azure_networking(
        "{nodes: 10.250.0.0/16, type: calico, providerConfig: overlay}",
        &["spec.networking.providerConfig: Internal error: json: cannot unmarshal string into Go value of type map[string]interface {}"],
    );
    // The Shoot mutator decodes it for Cilium (and refuses the shoot the same way).
    check_azure_networking(
        "{nodes: 10.250.0.0/16, type: cilium, providerConfig: [overlay]}",
        &["spec.networking.providerConfig: Internal error: json: cannot unmarshal array into Go value of type map[string]interface {}"],
    );
    // Upstream's `overlay["enabled"].(bool)` panics on these; trellis says what is wrong.
    check_azure_networking(
        "{nodes: 10.250.0.0/16, type: calico, providerConfig: {overlay: {}}}",
        &["spec.networking.providerConfig.overlay.enabled: Required value: must be true or false when overlay is set"],
    );
    check_azure_networking(
        "{nodes: 10.250.0.0/16, type: calico, providerConfig: {overlay: {enabled: 'yes'}}}",
        &[r#"spec.networking.providerConfig.overlay.enabled: Invalid value: "yes": must be true or false"#],
    );
    // The CNI extensions decode `enabled` as a bool; any other value is refused for every CNI.
    check_azure_networking(
        "{nodes: 10.250.0.0/16, type: cilium, providerConfig: {overlay: {enabled: 1}}}",
        &["spec.networking.providerConfig.overlay.enabled: Invalid value: 1: must be true or false"],
    );
    check_azure_networking("{nodes: 10.250.0.0/16, type: cilium, providerConfig: {overlay: {}}}", &[]);
    check_azure_networking("{nodes: 10.250.0.0/16, type: calico, providerConfig: {overlay: null}}", &[]);
}

// ---------------------------------------------------------------------------------------------
// provider-azure `ValidateWorkers` (upstream's table: two workers with volumes)

const TWO_WORKERS: &str =
    "[{name: worker1, volume: {type: Volume, size: 30G}}, {name: worker2, volume: {type: Volume, size: 20G}}]";
const TWO_ZONED_WORKERS: &str = "[{name: worker1, volume: {type: Volume, size: 30G}, zones: ['1', '2']}, {name: worker2, volume: {type: Volume, size: 20G}, zones: ['1', '2']}]";
const NON_ZONED: &str = "{networks: {workers: 10.250.0.0/16}}";
const ZONED: &str = "{zoned: true, networks: {workers: 10.250.0.0/16}}";
const ZONED_MULTI_SUBNET: &str =
    "{zoned: true, networks: {zones: [{name: 1, cidr: 10.250.0.0/24}, {name: 2, cidr: 10.250.1.0/24}]}}";

#[track_caller]
fn check_workers(infra_yaml: &str, workers_yaml: &str, expected: &[&str]) {
    let got = strings(validate_workers(&workers(workers_yaml), &infra(infra_yaml), &Path::new("workers")));
    assert_errors(got, expected, workers_yaml);
}

#[test]
fn workers_non_zoned_cluster() {
    // "should pass because workers are configured correctly"
    check_workers(NON_ZONED, TWO_WORKERS, &[]);
    // "should forbid because zones are configured"
    check_workers(
        NON_ZONED,
        "[{name: worker1, volume: {type: Volume, size: 30G}, zones: ['1', '2']}, {name: worker2, volume: {type: Volume, size: 20G}}]",
        &["workers[0].zones: Required value: zones must not be specified for non zoned clusters"],
    );
}

#[test]
fn workers_zoned_cluster() {
    // "should pass because workers are configured correctly"
    check_workers(ZONED, TWO_ZONED_WORKERS, &[]);
    // "should forbid because volume is not configured"
    check_workers(
        ZONED,
        "[{name: worker1, volume: {type: Volume, size: 30G}, zones: ['1', '2']}, {name: worker2, zones: ['1', '2']}]",
        &["workers[1].volume: Required value: must not be nil"],
    );
    // "should forbid because volume type and size are not configured"
    check_workers(
        ZONED,
        "[{name: worker1, volume: {encrypted: false}, dataVolumes: [{encrypted: true}], zones: ['1', '2']}, {name: worker2, volume: {type: Volume, size: 20G}, zones: ['1', '2']}]",
        &[
            "workers[0].volume.type: Required value: must not be empty",
            "workers[0].volume.size: Required value: must not be empty",
            "workers[0].volume.encrypted: Unsupported value: false",
            "workers[0].dataVolumes[0].type: Required value: must not be empty",
            "workers[0].dataVolumes[0].size: Required value: must not be empty",
            "workers[0].dataVolumes[0].encrypted: Unsupported value: true",
        ],
    );
    // "should forbid because worker does not specify a zone"
    check_workers(
        ZONED,
        "[{name: worker1, volume: {type: Volume, size: 30G}}, {name: worker2, volume: {type: Volume, size: 20G}, zones: ['1', '2']}]",
        &["workers[0].zones: Required value: at least one zone must be configured for zoned clusters"],
    );
    // "should forbid because worker use zone twice"
    check_workers(
        ZONED,
        "[{name: worker1, volume: {type: Volume, size: 30G}, zones: ['1', '1']}, {name: worker2, volume: {type: Volume, size: 20G}, zones: ['1', '2']}]",
        &[r#"workers[0].zones[1]: Invalid value: "1": must only be specified once per worker group"#],
    );
}

#[test]
fn workers_with_too_many_data_volumes() {
    // "should forbid because of too many data volumes": 65 of them.
    let volumes: Vec<String> = (0..65).map(|_| "{name: foo, size: 20Gi, type: foo}".to_string()).collect();
    let yaml = format!(
        "[{{name: worker1, volume: {{type: Volume, size: 30G}}, zones: ['1', '2'], dataVolumes: [{}]}}, {{name: worker2, volume: {{type: Volume, size: 20G}}, zones: ['1', '2']}}]",
        volumes.join(", ")
    );
    check_workers(ZONED, &yaml, &["workers[0].dataVolumes: Too many: 65: must have at most 64 items"]);
    let volumes: Vec<String> = (0..64).map(|_| "{name: foo, size: 20Gi, type: foo}".to_string()).collect();
    let yaml =
        format!("[{{name: worker1, volume: {{type: Volume, size: 30G}}, dataVolumes: [{}]}}]", volumes.join(", "));
    check_workers(NON_ZONED, &yaml, &[]);
}

#[test]
fn workers_multiple_subnet_layout() {
    // "should forbid using zones not configured in infrastructure"
    check_workers(
        ZONED_MULTI_SUBNET,
        "[{name: worker1, volume: {type: Volume, size: 30G}, zones: [non-existent, '2']}, {name: worker2, volume: {type: Volume, size: 20G}, zones: ['1', '2']}]",
        &[r#"workers[0].zones[0]: Invalid value: "non-existent": zone configuration must be specified in "infrastructureConfig.networks.zones""#],
    );
    // "should allow zones when configured in infrastructure"
    check_workers(ZONED_MULTI_SUBNET, TWO_ZONED_WORKERS, &[]);
}

// ---------------------------------------------------------------------------------------------
// provider-azure `ValidateWorkersUpdate`

#[track_caller]
fn check_workers_update(old: &str, new: &str, path: &Path, expected: &[&str]) {
    let got = strings(validate_workers_update(&workers(old), &workers(new), path));
    assert_errors(got, expected, &format!("{old} -> {new}"));
}

#[test]
fn workers_update_zoned_cluster() {
    let path = Path::new("workers");
    let old = "[{name: worker1, zones: ['1', '2']}, {name: worker2, zones: ['1', '2']}]";
    // "should pass because workers are unchanged"
    check_workers_update(old, old, &path, &[]);
    // "should allow adding workers"
    check_workers_update("[{name: worker1, zones: ['1', '2']}]", old, &path, &[]);
    // "should allow adding a zone to a worker"
    check_workers_update(
        old,
        "[{name: worker1, zones: ['1', '2', another-zone]}, {name: worker2, zones: ['1', '2']}]",
        &path,
        &[],
    );
    // "should forbid removing a zone from a worker"
    check_workers_update(
        old,
        "[{name: worker1, zones: ['1', '2']}, {name: worker2, zones: ['2']}]",
        &path,
        &[r#"workers[1].zones: Invalid value: ["2"]: field is immutable"#],
    );
    // "should forbid changing the zone order"
    check_workers_update(
        old,
        "[{name: worker1, zones: ['2', '1']}, {name: worker2, zones: ['2', '1']}]",
        &path,
        &[
            r#"workers[0].zones: Invalid value: ["2","1"]: field is immutable"#,
            r#"workers[1].zones: Invalid value: ["2","1"]: field is immutable"#,
        ],
    );
    // "should forbid adding a zone while changing an existing one"
    check_workers_update(
        old,
        "[{name: worker1, zones: ['1', '2']}, {name: worker2, zones: ['2', '2']}, {name: worker3, zones: [zone1]}]",
        &path,
        &[r#"workers[1].zones: Invalid value: ["2","2"]: field is immutable"#],
    );
}

#[test]
fn workers_update_in_place_strategy() {
    let path = Path::new("spec").child("provider").child("workers");
    // "should forbid changing the providerConfig if the update strategy is in-place"
    check_workers_update(
        "[{name: worker1, updateStrategy: AutoInPlaceUpdate, providerConfig: {foo: bar}}, {name: worker2, updateStrategy: ManualInPlaceUpdate, providerConfig: {zoo: dash}}, {name: worker3, updateStrategy: AutoRollingUpdate, providerConfig: {bar: foo}}, {name: worker4, updateStrategy: AutoInPlaceUpdate, providerConfig: {bar: foo}}]",
        "[{name: worker1, updateStrategy: AutoInPlaceUpdate, providerConfig: {foo: baz}}, {name: worker2, updateStrategy: ManualInPlaceUpdate, providerConfig: {zoo: bash}}, {name: worker3, updateStrategy: AutoRollingUpdate, providerConfig: {bar: baz}}, {name: worker4, updateStrategy: AutoInPlaceUpdate, providerConfig: {bar: foo}}]",
        &path,
        &[
            r#"spec.provider.workers[0].providerConfig: Invalid value: {"foo":"baz"}: providerConfig is immutable when update strategy is in-place"#,
            r#"spec.provider.workers[1].providerConfig: Invalid value: {"zoo":"bash"}: providerConfig is immutable when update strategy is in-place"#,
        ],
    );
    // "should forbid changing the data volumes if the update strategy is in-place"
    check_workers_update(
        "[{name: worker1, updateStrategy: AutoInPlaceUpdate, dataVolumes: [{name: foo, size: 20Gi, type: foo}]}, {name: worker2, updateStrategy: ManualInPlaceUpdate, dataVolumes: [{name: bar, size: 30Gi, type: bar}]}]",
        "[{name: worker1, updateStrategy: AutoInPlaceUpdate, dataVolumes: [{name: baz, size: 40Gi, type: baz}]}, {name: worker2, updateStrategy: ManualInPlaceUpdate, dataVolumes: [{name: qux, size: 50Gi, type: qux}]}]",
        &path,
        &[
            r#"spec.provider.workers[0].dataVolumes: Invalid value: [{"Name":"baz","Type":"baz","VolumeSize":"40Gi","Encrypted":null}]: dataVolumes are immutable when update strategy is in-place"#,
            r#"spec.provider.workers[1].dataVolumes: Invalid value: [{"Name":"qux","Type":"qux","VolumeSize":"50Gi","Encrypted":null}]: dataVolumes are immutable when update strategy is in-place"#,
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Gardener core `validateNetworking` (upstream's "networking section", path `spec.networking`)

#[track_caller]
fn check_core(yaml: &str, workerless: bool, expected: &[&str]) {
    let n = networking(yaml);
    assert_errors(strings(core::validate_networking(&n, workerless, &spec_networking())), expected, yaml);
}

#[test]
fn core_networking_workerless_shoots() {
    // "should forbid setting networking.type, networking.providerConfig, networking.pods, networking.nodes"
    check_core(
        "{type: some-type, providerConfig: foo, pods: 0.0.0.0/0, nodes: 0.0.0.0/0, services: 0.0.0.0/0, ipFamilies: [IPv4]}",
        true,
        &[
            "spec.networking.type: Forbidden: this field should not be set for workerless Shoot clusters",
            "spec.networking.providerConfig: Forbidden: this field should not be set for workerless Shoot clusters",
            "spec.networking.pods: Forbidden: this field should not be set for workerless Shoot clusters",
            "spec.networking.nodes: Forbidden: this field should not be set for workerless Shoot clusters",
        ],
    );
    check_core("{services: 100.64.0.0/13}", true, &[]);
}

#[test]
fn core_networking_type() {
    // "should forbid not specifying a networking type" (absent or empty)
    check_core(
        "{nodes: 10.250.0.0/16}",
        false,
        &["spec.networking.type: Required value: networking type must be provided"],
    );
    check_core("{type: ''}", false, &["spec.networking.type: Required value: networking type must be provided"]);
    // "should forbid specifying a networking type with invalid characters"
    check_core(
        "{type: '$/()[]{}'}",
        false,
        &[r#"spec.networking.type: Invalid value: "$/()[]{}": type must be a valid label name"#],
    );
    // "should forbid specifying a very long networking type"
    check_core(
        "{type: my-extremely-long-networking-type-that-exceeds-the-maximum-length}",
        false,
        &[
            r#"spec.networking.type: Invalid value: "my-extremely-long-networking-type-that-exceeds-the-maximum-length": type must be a valid label name"#,
        ],
    );
    check_core("{type: calico}", false, &[]);
}

#[test]
fn core_networking_ip_families() {
    // "should forbid specifying unsupported IP family"; further checks stop there.
    check_core(
        "{type: calico, ipFamilies: [IPv5], nodes: not-a-cidr}",
        false,
        &[r#"spec.networking.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6""#],
    );
    check_core(
        "{type: calico, ipFamilies: [IPv4, IPv4]}",
        false,
        &[r#"spec.networking.ipFamilies[1]: Duplicate value: "IPv4""#],
    );
}

#[test]
fn core_networking_ipv4() {
    // "should allow valid networking configuration"
    check_core("{type: calico, nodes: 10.250.0.0/16, services: 100.64.0.0/13, pods: 100.96.0.0/11}", false, &[]);
    // "should forbid invalid network CIDRs"
    check_core(
        "{type: calico, nodes: invalid-cidr, services: invalid-cidr, pods: invalid-cidr}",
        false,
        &[
            r#"spec.networking.nodes: Invalid value: "invalid-cidr": invalid CIDR address: invalid-cidr"#,
            r#"spec.networking.pods: Invalid value: "invalid-cidr": invalid CIDR address: invalid-cidr"#,
            r#"spec.networking.services: Invalid value: "invalid-cidr": invalid CIDR address: invalid-cidr"#,
        ],
    );
    // "should forbid IPv6 CIDRs with IPv4 IP family"
    check_core(
        "{type: calico, pods: '2001:db8:1::/48', nodes: '2001:db8:2::/48', services: '2001:db8:3::/48'}",
        false,
        &[
            r#"spec.networking.nodes: Invalid value: "2001:db8:2::": must be a valid IPv4 address"#,
            r#"spec.networking.pods: Invalid value: "2001:db8:1::": must be a valid IPv4 address"#,
            r#"spec.networking.services: Invalid value: "2001:db8:3::": must be a valid IPv4 address"#,
        ],
    );
    // "should forbid non canonical CIDRs"
    check_core(
        "{type: calico, nodes: 10.250.0.3/16, services: 100.64.0.5/13, pods: 100.96.0.4/11}",
        false,
        &[
            r#"spec.networking.nodes: Invalid value: "10.250.0.3/16": must be valid canonical CIDR"#,
            r#"spec.networking.pods: Invalid value: "100.96.0.4/11": must be valid canonical CIDR"#,
            r#"spec.networking.services: Invalid value: "100.64.0.5/13": must be valid canonical CIDR"#,
        ],
    );
}

#[test]
fn core_networking_ipv6_and_dual_stack() {
    // IPv6: "should allow valid networking configuration"
    check_core(
        "{type: calico, ipFamilies: [IPv6], pods: '2001:db8:1::/48', nodes: '2001:db8:2::/48', services: '2001:db8:3::/48'}",
        false,
        &[],
    );
    // IPv6: "should forbid IPv4 CIDRs with IPv6 IP family"
    check_core(
        "{type: calico, ipFamilies: [IPv6], nodes: 10.250.0.0/16, services: 100.64.0.0/13, pods: 100.96.0.0/11}",
        false,
        &[
            r#"spec.networking.nodes: Invalid value: "10.250.0.0": must be a valid IPv6 address"#,
            r#"spec.networking.pods: Invalid value: "100.96.0.0": must be a valid IPv6 address"#,
            r#"spec.networking.services: Invalid value: "100.64.0.0": must be a valid IPv6 address"#,
        ],
    );
    // IPv6: "should forbid non canonical CIDRs" (the family check reports the network address)
    check_core(
        "{type: calico, ipFamilies: [IPv6], pods: '2001:db8:1::1/48', nodes: '2001:db8:2::2/48', services: '2001:db8:3::3/48'}",
        false,
        &[
            r#"spec.networking.nodes: Invalid value: "2001:db8:2::2/48": must be valid canonical CIDR"#,
            r#"spec.networking.pods: Invalid value: "2001:db8:1::1/48": must be valid canonical CIDR"#,
            r#"spec.networking.services: Invalid value: "2001:db8:3::3/48": must be valid canonical CIDR"#,
        ],
    );
    // dual-stack: "should allow IPv4 networking configuration" (no family check)
    check_core(
        "{type: calico, ipFamilies: [IPv6, IPv4], nodes: 10.250.0.0/16, services: 100.64.0.0/13, pods: 100.96.0.0/11}",
        false,
        &[],
    );
}

#[track_caller]
fn check_core_update(old: &str, new: &str, expected: &[&str]) {
    let got = strings(core::validate_networking_update(&networking(new), &networking(old), &spec_networking()));
    assert_errors(got, expected, &format!("{old} -> {new}"));
}

#[test]
fn core_networking_update() {
    // "should forbid changing the networking type"
    check_core_update(
        "{type: calico}",
        "{type: some-other-type}",
        &[r#"spec.networking.type: Invalid value: "some-other-type": field is immutable"#],
    );
    // "should allow increasing the networking nodes range"
    check_core_update("{type: calico, nodes: 10.181.0.0/18}", "{type: calico, nodes: 10.181.0.0/16}", &[]);
    // pods and services are immutable once set
    check_core_update(
        "{type: calico, pods: 100.96.0.0/11, services: 100.64.0.0/13}",
        "{type: calico, pods: 100.96.0.0/12}",
        &[
            r#"spec.networking.pods: Invalid value: "100.96.0.0/12": field is immutable"#,
            "spec.networking.services: Invalid value: null: field is immutable",
        ],
    );
    check_core_update("{type: calico}", "{type: calico, pods: 100.96.0.0/11}", &[]);
    // IP families: IPv4 <-> [IPv4, IPv6] only (an empty list is [IPv4])
    check_core_update("{type: calico}", "{type: calico, ipFamilies: [IPv4, IPv6]}", &[]);
    check_core_update("{type: calico, ipFamilies: [IPv4, IPv6]}", "{type: calico, ipFamilies: [IPv4]}", &[]);
    check_core_update(
        "{type: calico, ipFamilies: [IPv6]}",
        "{type: calico, ipFamilies: [IPv6, IPv4]}",
        &["spec.networking.ipFamilies: Forbidden: unsupported IP family update: oldIPFamilies=[IPv6], newIPFamilies=[IPv6 IPv4]"],
    );
    check_core_update(
        "{type: calico, ipFamilies: [IPv4]}",
        "{type: calico, ipFamilies: [IPv6, IPv4]}",
        &["spec.networking.ipFamilies: Forbidden: unsupported IP family update: oldIPFamilies=[IPv4], newIPFamilies=[IPv6 IPv4]"],
    );
    check_core_update(
        "{type: calico, ipFamilies: [IPv4, IPv6]}",
        "{type: calico, ipFamilies: [IPv6]}",
        &["spec.networking.ipFamilies: Forbidden: unsupported IP family update: oldIPFamilies=[IPv4 IPv6], newIPFamilies=[IPv6]"],
    );
}

#[track_caller]
fn check_networks(yaml: &str, expected: &[&str]) {
    let got = strings(core::validate_shoot_networks(&networking(yaml), &spec_networking()));
    assert_errors(got, expected, yaml);
}

#[test]
fn shoot_networks_are_disjoint() {
    // disjoint_test.go "ValidateShootNetworkDisjointedness IPv4": "should pass the validation"
    check_networks("{pods: 10.242.128.0/17, services: 10.242.0.0/17, nodes: 10.241.0.0/16}", &[]);
    // "should fail due to disjointedness of node, service and pod networks"
    check_networks(
        "{nodes: 10.241.0.0/16, pods: 10.241.0.0/16, services: 10.241.0.0/16}",
        &[
            r#"spec.networking.services: Invalid value: "10.241.0.0/16": shoot pod network intersects with shoot service network"#,
            r#"spec.networking.pods: Invalid value: "10.241.0.0/16": shoot pod network intersects with shoot node network"#,
            r#"spec.networking.services: Invalid value: "10.241.0.0/16": shoot service network intersects with shoot node network"#,
        ],
    );
    // Only for shoots with IPv4 among their IP families.
    check_networks("{ipFamilies: [IPv6], nodes: '2001:db8::/64', pods: '2001:db8::/64'}", &[]);
    // Missing or unparsable networks are skipped (the parse error is reported by validateNetworking).
    check_networks("{nodes: 10.250.0.0/99999999999, pods: 100.96.0.0/11, services: 100.64.0.0/13}", &[]);
    check_networks("{}", &[]);
}

#[test]
fn shoot_networks_do_not_intersect_reserved_ranges() {
    // disjoint_test.go: reserved kube-apiserver mapping range in the pod, service, node CIDR
    check_networks(
        "{pods: 240.100.0.0/16, services: 10.242.0.0/17, nodes: 10.243.0.0/16}",
        &[
            r#"spec.networking.pods: Invalid value: "240.100.0.0/16": pod network intersects with reserved kube-apiserver mapping range (240.0.0.0/8)"#,
        ],
    );
    check_networks(
        "{pods: 10.242.128.0/17, services: 241.0.0.0/16, nodes: 242.0.0.0/16}",
        &[
            r#"spec.networking.nodes: Invalid value: "242.0.0.0/16": node network intersects with reserved shoot node network mapping range (242.0.0.0/8)"#,
            r#"spec.networking.services: Invalid value: "241.0.0.0/16": service network intersects with reserved seed pod network mapping range (241.0.0.0/8)"#,
        ],
    );
    // A CIDR covering several reserved ranges intersects each of them.
    check_networks(
        "{nodes: 10.243.0.0/16, pods: 240.0.0.0/5}",
        &[
            r#"spec.networking.pods: Invalid value: "240.0.0.0/5": pod network intersects with reserved kube-apiserver mapping range (240.0.0.0/8)"#,
            r#"spec.networking.pods: Invalid value: "240.0.0.0/5": pod network intersects with reserved seed pod network mapping range (241.0.0.0/8)"#,
            r#"spec.networking.pods: Invalid value: "240.0.0.0/5": pod network intersects with reserved shoot node network mapping range (242.0.0.0/8)"#,
            r#"spec.networking.pods: Invalid value: "240.0.0.0/5": pod network intersects with reserved shoot service network mapping range (243.0.0.0/8)"#,
            r#"spec.networking.pods: Invalid value: "240.0.0.0/5": pod network intersects with reserved shoot pod network mapping range (244.0.0.0/8)"#,
        ],
    );
}
