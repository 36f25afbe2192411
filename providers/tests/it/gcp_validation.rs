//! Admission validation of the GCP InfrastructureConfig, create and update:
//!
//! - upstream's table (`pkg/apis/gcp/validation/infrastructure_test.go`, master `2286e4a` and the
//!   BYO cases of provider-gcp PR #1493 `b10c0b5`), case by case with upstream's names, asserting
//!   the complete error text where upstream checks only type and path;
//! - one test per acceptance ID of the user-managed-egress spec, named by it (C1–C12, C18, D1–D6);
//!   C13–C17 are runtime (pre-flight) rules and come with discovery.
//!
//! The Shoot validator (`shoot.go`) and whole manifests are in `gcp_shoot_validation.rs`.

use trellis_providers::field::{ErrorList, Path};
use trellis_providers::gcp::api::{
    CloudNat, CloudRouter, FlowLogs, InfrastructureConfig, NatIpName, SubnetReference, Vpc,
};
use trellis_providers::gcp::validation::shoot::{validate_shoot, GcpShoot};
use trellis_providers::gcp::validation::{
    validate_infrastructure_config, validate_infrastructure_config_at, validate_infrastructure_config_stack_migration,
    validate_infrastructure_config_update, ShootContext,
};

const PODS: &str = "100.96.0.0/11";
const SERVICES: &str = "100.64.0.0/13";
const NODES: &str = "10.250.0.0/16";
const REGEX_MSG: &str = "does not match expected regex ^[a-z]([-a-z0-9]*[a-z0-9])?$";

fn strings(errs: ErrorList) -> Vec<String> {
    errs.iter().map(|e| e.to_string()).collect()
}

#[track_caller]
fn assert_errors(errs: ErrorList, expected: &[&str]) {
    let got = strings(errs);
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    assert_eq!(got, expected, "\n  got:\n    {}\n", got.join("\n    "));
}

#[track_caller]
fn infra(yaml: &str) -> InfrastructureConfig {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("bad test config {yaml}: {e}"))
}

fn ipv4() -> Vec<String> {
    Vec::new()
}

fn dual() -> Vec<String> {
    vec!["IPv4".to_string(), "IPv6".to_string()]
}

fn ctx<'a>(
    nodes: Option<&'a str>,
    pods: Option<&'a str>,
    services: Option<&'a str>,
    families: &'a [String],
) -> ShootContext<'a> {
    ShootContext { nodes, pods, services, ip_families: families }
}

fn create(cfg: &InfrastructureConfig) -> ErrorList {
    validate_infrastructure_config(cfg, ctx(Some(NODES), Some(PODS), Some(SERVICES), &[]))
}

fn create_with(cfg: &InfrastructureConfig, families: &[String]) -> ErrorList {
    validate_infrastructure_config(cfg, ctx(Some(NODES), Some(PODS), Some(SERVICES), families))
}

/// Upstream's `BeforeEach`: a managed config with every section set.
fn base() -> InfrastructureConfig {
    infra(
        r#"
networks:
  vpc: {name: hugo, cloudRouter: {name: hugo-cr}}
  cloudNAT:
    minPortsPerVM: 20
    natIPNames: [{name: test}]
  flowLogs: {aggregationInterval: INTERVAL_5_SEC, metadata: INCLUDE_ALL_METADATA, flowSampling: 0.4}
  internal: 10.10.0.0/24
  workers: 10.250.0.0/16
  worker: 10.250.0.0/16
"#,
    )
}

/// PR #1493's BYO `BeforeEach`.
fn byo() -> InfrastructureConfig {
    infra("networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}}")
}

/// A valid dual-stack BYO config.
fn byo_dual() -> InfrastructureConfig {
    infra(
        "networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers, podSecondaryRangeName: my-pods}, subnetServices: {name: my-services}}",
    )
}

// ---------------------------------------------------------------------------------------------
// #ValidateInfrastructureConfig — CIDR

#[test]
fn upstream_should_forbid_invalid_worker_cidrs() {
    let mut cfg = base();
    cfg.networks.workers = "invalid-cidr".into();
    assert_errors(
        create(&cfg),
        &[r#"networks.workers: Invalid value: "invalid-cidr": invalid CIDR address: invalid-cidr"#],
    );
}

#[test]
fn upstream_should_forbid_invalid_internal_cidr() {
    let mut cfg = base();
    cfg.networks.internal = Some("invalid-cidr".into());
    assert_errors(
        create(&cfg),
        &[r#"networks.internal: Invalid value: "invalid-cidr": invalid CIDR address: invalid-cidr"#],
    );
}

#[test]
fn upstream_should_forbid_workers_cidr_which_are_not_in_nodes_cidr() {
    let mut cfg = base();
    cfg.networks.workers = "1.1.1.1/32".into();
    assert_errors(
        create(&cfg),
        &[r#"networks.workers: Invalid value: "1.1.1.1/32": must be a subset of "networking.nodes" ("10.250.0.0/16")"#],
    );
}

#[test]
fn upstream_should_forbid_internal_cidr_to_overlap_with_node_and_worker_cidr() {
    let overlapping = "10.250.1.0/30";
    let mut cfg = base();
    cfg.networks.internal = Some(overlapping.into());
    cfg.networks.workers = overlapping.into();
    let errs = validate_infrastructure_config(&cfg, ctx(Some(overlapping), Some(PODS), Some(SERVICES), &[]));
    assert_errors(
        errs,
        &[
            r#"networks.internal: Invalid value: "10.250.1.0/30": must not overlap with "networking.nodes" ("10.250.1.0/30")"#,
            r#"networks.internal: Invalid value: "10.250.1.0/30": must not overlap with "networks.workers" ("10.250.1.0/30")"#,
        ],
    );
}

#[test]
fn upstream_should_forbid_non_canonical_cidrs() {
    let mut cfg = base();
    cfg.networks.internal = Some("10.10.0.4/24".into());
    cfg.networks.workers = "10.250.3.8/24".into();
    let errs = validate_infrastructure_config(
        &cfg,
        ctx(Some("10.250.0.3/16"), Some("100.96.0.4/11"), Some("100.64.0.5/13"), &[]),
    );
    assert_errors(
        errs,
        &[
            r#"networks.workers: Invalid value: "10.250.3.8/24": must be valid canonical CIDR"#,
            r#"networks.internal: Invalid value: "10.10.0.4/24": must be valid canonical CIDR"#,
        ],
    );
}

#[test]
fn upstream_should_allow_specifying_valid_config() {
    assert_errors(create(&base()), &[]);
}

#[test]
fn upstream_should_allow_specifying_valid_config_with_pods_and_services_nil() {
    assert_errors(validate_infrastructure_config(&base(), ctx(Some(NODES), None, None, &[])), &[]);
}

#[test]
fn workers_are_required_and_a_missing_worker_cidr_does_not_break_the_internal_checks() {
    // Upstream panics here (a method call on the nil worker CIDR); trellis reports the missing workers.
    let mut cfg = base();
    cfg.networks.workers.clear();
    cfg.networks.worker.clear();
    assert_errors(
        create(&cfg),
        &["networks.workers: Required value: must specify the network range for the worker network"],
    );
    // The deprecated `worker` alone is enough, and is checked at its own path.
    cfg.networks.worker = "10.250.0.1/16".into();
    assert_errors(create(&cfg), &[r#"networks.worker: Invalid value: "10.250.0.1/16": must be valid canonical CIDR"#]);
}

// ---------------------------------------------------------------------------------------------
// #ValidateInfrastructureConfig — VPC

fn vpc_test_config() -> InfrastructureConfig {
    infra("networks: {internal: 10.10.0.0/24, workers: 10.250.0.0/16}")
}

#[test]
fn upstream_should_forbid_configuring_cloud_router_if_vpc_name_is_not_set() {
    let mut cfg = vpc_test_config();
    cfg.networks.vpc = Some(Vpc { name: String::new(), cloud_router: Some(CloudRouter::default()) });
    assert_errors(
        create(&cfg),
        &[
            r#"networks.vpc.name: Invalid value: "": vpc name must not be empty when vpc key is provided"#,
            r#"networks.vpc.cloudRouter: Invalid value: {"Name":""}: cloud router can not be configured when the VPC name is not specified"#,
        ],
    );
}

#[test]
fn upstream_should_forbid_empty_vpc_flow_log_config() {
    let mut cfg = base();
    cfg.networks.flow_logs = Some(FlowLogs::default());
    assert_errors(
        create(&cfg),
        &["networks.flowLogs: Required value: at least one VPC flow log parameter must be specified when VPC flow log section is provided"],
    );
}

#[test]
fn upstream_should_forbid_reusing_a_vpc_without_specifying_a_cloud_router() {
    let mut cfg = vpc_test_config();
    cfg.networks.vpc = Some(Vpc { name: "test-vpc".into(), cloud_router: None });
    assert_errors(
        create(&cfg),
        &["networks.vpc.cloudRouter: Invalid value: null: cloud router must be defined when reusing a VPC"],
    );
}

#[test]
fn upstream_should_forbid_reusing_a_vpc_without_specifying_a_cloud_router_name() {
    let mut cfg = vpc_test_config();
    cfg.networks.vpc = Some(Vpc { name: "test-vpc".into(), cloud_router: Some(CloudRouter::default()) });
    assert_errors(
        create(&cfg),
        &[
            r#"networks.vpc.cloudRouter.name: Invalid value: {"Name":""}: cloud router name must be specified when reusing a VPC"#,
        ],
    );
}

#[test]
fn upstream_should_forbid_invalid_vpc_name() {
    let mut cfg = base();
    cfg.networks.vpc.as_mut().unwrap().name = "invalid-VPC-name".into();
    assert_errors(create(&cfg), &[&format!(r#"networks.vpc.name: Invalid value: "invalid-VPC-name": {REGEX_MSG}"#)]);
}

#[test]
fn upstream_should_forbid_invalid_vpc_cloud_router_name() {
    let mut cfg = base();
    cfg.networks.vpc.as_mut().unwrap().cloud_router.as_mut().unwrap().name = "invalid-CLOUD-ROUTER-name".into();
    assert_errors(
        create(&cfg),
        &[&format!(r#"networks.vpc.cloudRouter.name: Invalid value: "invalid-CLOUD-ROUTER-name": {REGEX_MSG}"#)],
    );
}

// ---------------------------------------------------------------------------------------------
// #ValidateInfrastructureConfig — MTU

#[test]
fn upstream_should_allow_valid_mtu_values_for_gardener_managed_vpc() {
    let mut cfg = base();
    cfg.networks.vpc = None;
    for mtu in [1300, 1460, 1500, 8896] {
        cfg.networks.mtu = Some(mtu);
        assert_errors(create(&cfg), &[]);
    }
}

#[test]
fn upstream_should_forbid_mtu_below_1300_and_above_8896() {
    let mut cfg = base();
    cfg.networks.vpc = None;
    cfg.networks.mtu = Some(1299);
    assert_errors(create(&cfg), &["networks.mtu: Invalid value: 1299: mtu must be between 1300 and 8896"]);
    cfg.networks.mtu = Some(8897);
    assert_errors(create(&cfg), &["networks.mtu: Invalid value: 8897: mtu must be between 1300 and 8896"]);
}

#[test]
fn upstream_should_forbid_mtu_when_using_an_existing_vpc() {
    let mut cfg = base();
    cfg.networks.mtu = Some(8896);
    assert_errors(create(&cfg), &["networks.mtu: Forbidden: mtu cannot be configured when using an existing VPC"]);
    cfg.networks.mtu = Some(9000);
    assert_errors(
        create(&cfg),
        &[
            "networks.mtu: Forbidden: mtu cannot be configured when using an existing VPC",
            "networks.mtu: Invalid value: 9000: mtu must be between 1300 and 8896",
        ],
    );
}

#[test]
fn upstream_should_allow_nil_mtu() {
    let mut cfg = base();
    cfg.networks.mtu = None;
    assert_errors(create(&cfg), &[]);
}

// ---------------------------------------------------------------------------------------------
// #ValidateInfrastructureConfig — CloudNAT and flow logs

#[test]
fn upstream_should_allow_correct_flowlogs_config() {
    let mut cfg = base();
    cfg.networks.flow_logs = Some(FlowLogs {
        aggregation_interval: Some("INTERVAL_1_MIN".into()),
        metadata: Some("INCLUDE_ALL_METADATA".into()),
        flow_sampling: Some(0.5),
    });
    assert_errors(create(&cfg), &[]);
}

#[test]
fn upstream_should_allow_cloud_nat_with_valid_nat_ip_names_or_without_them() {
    let mut cfg = base();
    cfg.networks.cloud_nat =
        Some(CloudNat { nat_ip_names: Some(vec![NatIpName { name: "test".into() }]), ..Default::default() });
    assert_errors(create(&cfg), &[]);
    cfg.networks.cloud_nat = Some(CloudNat::default());
    assert_errors(create(&cfg), &[]);
}

#[test]
fn upstream_should_forbid_empty_array_for_nat_ip_names_when_cloud_nat_is_present() {
    let mut cfg = base();
    cfg.networks.cloud_nat = Some(CloudNat { nat_ip_names: Some(vec![]), ..Default::default() });
    assert_errors(create(&cfg), &["networks.cloudNAT.natIPNames: Invalid value: []: nat IP names cannot be empty."]);
    // The same from YAML: an explicit empty list, not an absent one.
    let cfg = infra("networks: {workers: 10.250.0.0/16, cloudNAT: {natIPNames: []}}");
    assert_errors(create(&cfg), &["networks.cloudNAT.natIPNames: Invalid value: []: nat IP names cannot be empty."]);
}

#[test]
fn upstream_should_forbid_invalid_cloud_nat_ip_name() {
    let mut cfg = base();
    cfg.networks.cloud_nat.as_mut().unwrap().nat_ip_names.as_mut().unwrap()[0].name =
        "invalid-CLOUD-NAT-ip-name".into();
    assert_errors(
        create(&cfg),
        &[&format!(r#"networks.cloudNAT.natIPNames[0].name: Invalid value: "invalid-CLOUD-NAT-ip-name": {REGEX_MSG}"#)],
    );
}

#[test]
fn upstream_should_forbid_invalid_flow_logs_aggregation_interval() {
    let mut cfg = base();
    cfg.networks.flow_logs.as_mut().unwrap().aggregation_interval = Some("INTERVAL_25_SEC".into());
    assert_errors(
        create(&cfg),
        &[
            r#"networks.flowLogs.aggregationInterval: Unsupported value: "INTERVAL_25_SEC": supported values: "INTERVAL_5_SEC", "INTERVAL_30_SEC", "INTERVAL_1_MIN", "INTERVAL_5_MIN", "INTERVAL_10_MIN", "INTERVAL_15_MIN""#,
        ],
    );
}

#[test]
fn upstream_should_forbid_invalid_flow_logs_sampling_rate() {
    let mut cfg = base();
    cfg.networks.flow_logs.as_mut().unwrap().flow_sampling = Some(1.2);
    // v1alpha1's float32, seen by upstream as the float64 it converts to.
    assert_errors(
        create(&cfg),
        &["networks.flowLogs.flowSampling: Invalid value: 1.2000000476837158: must be between 0 and 1"],
    );
    cfg.networks.flow_logs.as_mut().unwrap().flow_sampling = Some(-0.5);
    assert_errors(create(&cfg), &["networks.flowLogs.flowSampling: Invalid value: -0.5: must be between 0 and 1"]);
}

#[test]
fn upstream_should_forbid_invalid_flow_logs_metadata() {
    let mut cfg = base();
    cfg.networks.flow_logs.as_mut().unwrap().metadata = Some("foo".into());
    assert_errors(
        create(&cfg),
        &[
            r#"networks.flowLogs.metadata: Unsupported value: "foo": supported values: "CUSTOM_METADATA", "EXCLUDE_ALL_METADATA", "INCLUDE_ALL_METADATA""#,
        ],
    );
}

#[test]
fn cloud_nat_port_rules_as_upstream() {
    let nat = |yaml: &str| {
        let mut cfg = base();
        cfg.networks.cloud_nat = Some(serde_saphyr::from_str(yaml).unwrap());
        strings(create(&cfg))
    };
    assert!(nat("{enableDynamicPortAllocation: true, minPortsPerVM: 64, maxPortsPerVM: 1024}").is_empty());
    assert_eq!(
        nat("{enableDynamicPortAllocation: true, endpointIndependentMapping: {enabled: true}, minPortsPerVM: 100, maxPortsPerVM: 60}"),
        [
            "networks.cloudNAT.enableDynamicPortAllocation: Invalid value: true: dynamic port allocation may not be enabled at the same time as endpoint independent mapping.",
            "networks.cloudNAT.maxPortsPerVM: Invalid value: 60: maxPortsPerVM must be a power of two.",
            "networks.cloudNAT.minPortsPerVM: Invalid value: 100: minPortsPerVM must be a power of two if dynamic port allocation is enabled.",
            "networks.cloudNAT.minPortsPerVM: Invalid value: 100: minPortsPerVM may not be greater than maxPortsPerVM.",
        ]
    );
    // QUIRK: without dynamic port allocation the error shows minPortsPerVM's value (or null).
    assert_eq!(
        nat("{minPortsPerVM: 2048, maxPortsPerVM: 65536}"),
        ["networks.cloudNAT.maxPortsPerVM: Invalid value: 2048: maxPortsPerVM are only configurable if dynamic port allocation is enabled."]
    );
    assert_eq!(
        nat("{maxPortsPerVM: 65536}"),
        ["networks.cloudNAT.maxPortsPerVM: Invalid value: null: maxPortsPerVM are only configurable if dynamic port allocation is enabled."]
    );
    // Endpoint-independent mapping alone and the timeouts are free.
    assert!(nat("{endpointIndependentMapping: {enabled: true}, udpIdleTimeoutSec: 30, icmpIdleTimeoutSec: 30, tcpEstablishedIdleTimeoutSec: 1200, tcpTransitoryIdleTimeoutSec: 30, tcpTimeWaitTimeoutSec: 120}").is_empty());
}

#[test]
fn errors_come_all_at_once_in_upstream_order_under_the_given_path() {
    let cfg = infra(
        r#"
networks:
  vpc: {name: Bad_Vpc}
  internal: 10.250.0.0/24
  workers: 10.250.0.1/16
  flowLogs: {metadata: nope}
  cloudNAT: {natIPNames: [{name: ""}]}
  mtu: 1
"#,
    );
    let fld = Path::new("spec").child("provider").child("infrastructureConfig");
    let errs = validate_infrastructure_config_at(&cfg, ctx(Some(NODES), Some(PODS), Some(SERVICES), &[]), &fld);
    let p = "spec.provider.infrastructureConfig.networks";
    assert_errors(
        errs,
        &[
            &format!(r#"{p}.workers: Invalid value: "10.250.0.1/16": must be valid canonical CIDR"#),
            &format!(
                r#"{p}.internal: Invalid value: "10.250.0.0/24": must not overlap with "networking.nodes" ("10.250.0.0/16")"#
            ),
            &format!(
                r#"{p}.internal: Invalid value: "10.250.0.0/24": must not overlap with "{p}.workers" ("10.250.0.1/16")"#
            ),
            &format!(r#"{p}.vpc.name: Invalid value: "Bad_Vpc": {REGEX_MSG}"#),
            &format!("{p}.vpc.cloudRouter: Invalid value: null: cloud router must be defined when reusing a VPC"),
            &format!(
                r#"{p}.flowLogs.metadata: Unsupported value: "nope": supported values: "CUSTOM_METADATA", "EXCLUDE_ALL_METADATA", "INCLUDE_ALL_METADATA""#
            ),
            &format!(
                r#"{p}.cloudNAT.natIPNames[0].name: Invalid value: "": must not be fewer than 1 characters, got 0"#
            ),
            &format!("{p}.mtu: Forbidden: mtu cannot be configured when using an existing VPC"),
            &format!("{p}.mtu: Invalid value: 1: mtu must be between 1300 and 8896"),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// #ValidateInfrastructureConfigUpdate (managed)

#[test]
fn upstream_should_return_no_errors_for_an_unchanged_config() {
    assert_errors(validate_infrastructure_config_update(&base(), &base()), &[]);
}

#[test]
fn upstream_should_allow_changing_cloud_nat_and_flow_logs_details() {
    let mut new = base();
    new.networks.cloud_nat = Some(CloudNat {
        min_ports_per_vm: Some(30),
        nat_ip_names: Some(vec![NatIpName { name: "not-test".into() }]),
        ..Default::default()
    });
    new.networks.flow_logs =
        Some(FlowLogs { aggregation_interval: Some("INTERVAL_30_SEC".into()), ..Default::default() });
    assert_errors(validate_infrastructure_config_update(&base(), &new), &[]);
}

#[test]
fn upstream_should_forbid_changing_existing_infrastructure_network_details() {
    let mut new = base();
    new.networks.vpc =
        Some(Vpc { name: "not-hugo".into(), cloud_router: Some(CloudRouter { name: "not-hugo-cr".into() }) });
    new.networks.workers = "10.96.0.0/16".into();
    new.networks.worker = "10.96.0.0/16".into();
    new.networks.internal = Some("10.96.0.0/16".into());
    assert_errors(
        validate_infrastructure_config_update(&base(), &new),
        &[
            r#"networks.vpc.name: Invalid value: "not-hugo": field is immutable"#,
            r#"networks.vpc.cloudRouter: Invalid value: {"Name":"not-hugo-cr"}: field is immutable"#,
            r#"networks.internal: Invalid value: "10.96.0.0/16": field is immutable"#,
            r#"networks.workers: Invalid value: "10.96.0.0/16": worker CIDR blocks can only be expanded"#,
        ],
    );
}

#[test]
fn upstream_should_allow_adding_an_internal_subnet_if_it_was_not_set_before() {
    let mut old = base();
    old.networks.internal = None;
    let mut new = base();
    new.networks.internal = Some("10.96.0.0/16".into());
    assert_errors(validate_infrastructure_config_update(&old, &new), &[]);
}

#[test]
fn upstream_should_forbid_updating_vpc_value_to_nil() {
    let mut new = base();
    new.networks.vpc = None;
    assert_errors(
        validate_infrastructure_config_update(&base(), &new),
        &["networks.vpc: Invalid value: null: field is immutable"],
    );
}

#[test]
fn upstream_should_allow_expanding_and_forbid_shrinking_the_worker_subnet() {
    let mut new = base();
    new.networks.workers = "10.250.0.0/15".into();
    assert_errors(validate_infrastructure_config_update(&base(), &new), &[]);
    new.networks.workers = "10.250.0.0/17".into();
    assert_errors(
        validate_infrastructure_config_update(&base(), &new),
        &[r#"networks.workers: Invalid value: "10.250.0.0/17": worker CIDR blocks can only be expanded"#],
    );
}

#[test]
fn upstream_should_forbid_changing_mtu_and_allow_it_unchanged() {
    let mut old = base();
    old.networks.mtu = Some(1500);
    let mut new = old.clone();
    new.networks.mtu = Some(8896);
    assert_errors(
        validate_infrastructure_config_update(&old, &new),
        &["networks.mtu: Invalid value: 8896: field is immutable"],
    );
    assert_errors(validate_infrastructure_config_update(&old, &old.clone()), &[]);
    new.networks.mtu = None;
    assert_errors(
        validate_infrastructure_config_update(&old, &new),
        &["networks.mtu: Invalid value: null: field is immutable"],
    );
}

#[test]
fn upstream_quirk_going_from_no_vpc_to_a_vpc_is_not_checked() {
    let mut old = base();
    old.networks.vpc = None;
    assert_errors(validate_infrastructure_config_update(&old, &base()), &[]);
}

// ---------------------------------------------------------------------------------------------
// #ValidateInfrastructureConfig BYO mode (PR #1493)

#[test]
fn upstream_byo_should_allow_valid_byo_config() {
    assert_errors(create(&byo()), &[]);
    assert_errors(create_with(&byo_dual(), &dual()), &[]);
}

#[test]
fn upstream_byo_should_require_vpc_name() {
    let mut cfg = byo();
    cfg.networks.vpc = None;
    assert_errors(
        create(&cfg),
        &["networks.vpc.name: Required value: vpc name must be set when using BYO subnet mode"],
    );
    cfg.networks.vpc = Some(Vpc::default());
    assert_errors(
        create(&cfg),
        &["networks.vpc.name: Required value: vpc name must be set when using BYO subnet mode"],
    );
}

#[test]
fn upstream_byo_should_forbid_every_managed_field() {
    let cases: [(&str, &str); 7] = [
        ("vpc: {name: my-vpc, cloudRouter: {name: my-cr}}", "networks.vpc.cloudRouter: Forbidden: cloudRouter must not be set in BYO subnet mode; manage egress outside of Gardener"),
        ("workers: 10.250.0.0/16", "networks.workers: Forbidden: workers CIDR must not be set in BYO subnet mode; use subnetWorkers instead"),
        ("worker: 10.250.0.0/16", "networks.worker: Forbidden: worker CIDR must not be set in BYO subnet mode; use subnetWorkers instead"),
        ("internal: 10.10.0.0/24", "networks.internal: Forbidden: internal subnet must not be set in BYO subnet mode"),
        ("cloudNAT: {}", "networks.cloudNAT: Forbidden: cloudNAT must not be set in BYO subnet mode; manage egress outside of Gardener"),
        ("flowLogs: {aggregationInterval: INTERVAL_5_SEC}", "networks.flowLogs: Forbidden: flowLogs must not be set in BYO subnet mode"),
        ("mtu: 1500", "networks.mtu: Forbidden: mtu must not be set in BYO subnet mode"),
    ];
    for (extra, expected) in cases {
        let vpc = if extra.starts_with("vpc:") { "" } else { "vpc: {name: my-vpc}" };
        let cfg = infra(&format!("networks:\n  subnetWorkers: {{name: my-workers}}\n  {vpc}\n  {extra}\n"));
        assert_errors(create(&cfg), &[expected]);
    }
}

#[test]
fn upstream_byo_should_require_subnet_workers_name() {
    let mut cfg = byo();
    cfg.networks.subnet_workers.as_mut().unwrap().name.clear();
    assert_errors(create(&cfg), &["networks.subnetWorkers.name: Required value: subnetWorkers name must not be empty"]);
}

#[test]
fn upstream_byo_subnet_services_and_pod_range_by_stack() {
    // SubnetServices on a non-dual-stack shoot.
    let mut cfg = byo();
    cfg.networks.subnet_services = Some(SubnetReference { name: "my-services".into(), ..Default::default() });
    assert_errors(
        create(&cfg),
        &["networks.subnetServices: Forbidden: subnetServices is only allowed for dual-stack shoots"],
    );
    // Required on a dual-stack shoot.
    let mut cfg = byo_dual();
    cfg.networks.subnet_services = None;
    assert_errors(
        create_with(&cfg, &dual()),
        &["networks.subnetServices: Required value: subnetServices is required for dual-stack shoots"],
    );
    // Empty name.
    let mut cfg = byo_dual();
    cfg.networks.subnet_services.as_mut().unwrap().name.clear();
    assert_errors(
        create_with(&cfg, &dual()),
        &["networks.subnetServices.name: Required value: subnetServices name must not be empty"],
    );
    // podSecondaryRangeName on subnetServices.
    let mut cfg = byo_dual();
    cfg.networks.subnet_services.as_mut().unwrap().pod_secondary_range_name = Some("my-pods".into());
    assert_errors(
        create_with(&cfg, &dual()),
        &["networks.subnetServices.podSecondaryRangeName: Forbidden: podSecondaryRangeName is only valid on subnetWorkers, not subnetServices"],
    );
    // podSecondaryRangeName: forbidden for IPv4, required and non-empty for dual-stack.
    let mut cfg = byo();
    cfg.networks.subnet_workers.as_mut().unwrap().pod_secondary_range_name = Some("ipv4-pod-cidr".into());
    assert_errors(
        create(&cfg),
        &["networks.subnetWorkers.podSecondaryRangeName: Forbidden: podSecondaryRangeName is only allowed for dual-stack shoots"],
    );
    let mut cfg = byo_dual();
    cfg.networks.subnet_workers.as_mut().unwrap().pod_secondary_range_name = None;
    assert_errors(
        create_with(&cfg, &dual()),
        &["networks.subnetWorkers.podSecondaryRangeName: Required value: podSecondaryRangeName is required for dual-stack shoots"],
    );
    let mut cfg = byo_dual();
    cfg.networks.subnet_workers.as_mut().unwrap().pod_secondary_range_name = Some(String::new());
    assert_errors(
        create_with(&cfg, &dual()),
        &[
            r#"networks.subnetWorkers.podSecondaryRangeName: Invalid value: "": podSecondaryRangeName must not be empty in dual-stack mode"#,
        ],
    );
    let mut cfg = byo_dual();
    cfg.networks.subnet_workers.as_mut().unwrap().pod_secondary_range_name = Some("ipv4-pod-cidr".into());
    assert_errors(create_with(&cfg, &dual()), &[]);
}

#[test]
fn byo_skips_the_managed_cidr_rules() {
    // Upstream's early return: the shoot's CIDRs are checked against the subnet at runtime (C14).
    let cfg = byo();
    assert_errors(validate_infrastructure_config(&cfg, ctx(Some("garbage"), Some(NODES), Some(NODES), &[])), &[]);
}

#[test]
fn byo_names_are_gcp_resource_names() {
    // The spec: "SubnetWorkers.Name non-empty, valid GCP resource name" (upstream's PR checks none).
    let cfg = infra(
        "networks: {vpc: {name: My_Vpc}, subnetWorkers: {name: Workers, podSecondaryRangeName: Pods}, subnetServices: {name: -services}}",
    );
    assert_errors(
        create_with(&cfg, &dual()),
        &[
            &format!(r#"networks.vpc.name: Invalid value: "My_Vpc": {REGEX_MSG}"#),
            &format!(r#"networks.subnetWorkers.name: Invalid value: "Workers": {REGEX_MSG}"#),
            &format!(r#"networks.subnetServices.name: Invalid value: "-services": {REGEX_MSG}"#),
            &format!(r#"networks.subnetWorkers.podSecondaryRangeName: Invalid value: "Pods": {REGEX_MSG}"#),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// #ValidateInfrastructureConfigUpdate BYO mode (PR #1493)

#[test]
fn upstream_byo_update_should_forbid_switching_mode_both_ways() {
    let msg = ["networks.subnetWorkers: Forbidden: cannot switch between BYO subnet mode and managed mode"];
    assert_errors(validate_infrastructure_config_update(&base(), &byo()), &msg);
    assert_errors(validate_infrastructure_config_update(&byo(), &base()), &msg);
}

#[test]
fn upstream_byo_update_should_forbid_changing_subnets_and_allow_unchanged() {
    let mut new = byo();
    new.networks.subnet_workers = Some(SubnetReference { name: "different-workers".into(), ..Default::default() });
    assert_errors(
        validate_infrastructure_config_update(&byo(), &new),
        &[
            r#"networks.subnetWorkers: Invalid value: {"Name":"different-workers","PodSecondaryRangeName":null}: field is immutable"#,
        ],
    );
    let mut old = byo();
    old.networks.subnet_services = Some(SubnetReference { name: "my-services".into(), ..Default::default() });
    let mut new = old.clone();
    new.networks.subnet_services = Some(SubnetReference { name: "different-services".into(), ..Default::default() });
    assert_errors(
        validate_infrastructure_config_update(&old, &new),
        &[
            r#"networks.subnetServices: Invalid value: {"Name":"different-services","PodSecondaryRangeName":null}: field is immutable"#,
        ],
    );
    assert_errors(validate_infrastructure_config_update(&byo(), &byo()), &[]);
}

// ---------------------------------------------------------------------------------------------
// The spec's acceptance IDs, group C (API validation; C13–C17 are runtime rules).

#[test]
fn c1_subnet_workers_without_vpc_name_is_rejected() {
    let cfg = infra("networks: {subnetWorkers: {name: my-workers}}");
    assert_errors(
        create(&cfg),
        &["networks.vpc.name: Required value: vpc name must be set when using BYO subnet mode"],
    );
}

#[test]
fn c2_subnet_workers_with_cloud_router_is_rejected() {
    let cfg = infra("networks: {vpc: {name: my-vpc, cloudRouter: {name: r}}, subnetWorkers: {name: my-workers}}");
    assert_errors(
        create(&cfg),
        &["networks.vpc.cloudRouter: Forbidden: cloudRouter must not be set in BYO subnet mode; manage egress outside of Gardener"],
    );
}

#[test]
fn c3_subnet_workers_with_workers_cidr_is_rejected() {
    let cfg = infra("networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}, workers: 10.250.0.0/16}");
    assert_errors(
        create(&cfg),
        &["networks.workers: Forbidden: workers CIDR must not be set in BYO subnet mode; use subnetWorkers instead"],
    );
}

#[test]
fn c4_subnet_workers_with_internal_is_rejected() {
    let cfg = infra("networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}, internal: 10.10.0.0/24}");
    assert_errors(create(&cfg), &["networks.internal: Forbidden: internal subnet must not be set in BYO subnet mode"]);
}

#[test]
fn c5_subnet_workers_with_cloud_nat_is_rejected() {
    let cfg = infra(
        "networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}, cloudNAT: {natIPNames: [{name: ip}]}}",
    );
    assert_errors(
        create(&cfg),
        &["networks.cloudNAT: Forbidden: cloudNAT must not be set in BYO subnet mode; manage egress outside of Gardener"],
    );
}

#[test]
fn c6_subnet_workers_with_flow_logs_is_rejected() {
    let cfg =
        infra("networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}, flowLogs: {flowSampling: 0.5}}");
    assert_errors(create(&cfg), &["networks.flowLogs: Forbidden: flowLogs must not be set in BYO subnet mode"]);
}

#[test]
fn c7_subnet_workers_with_mtu_is_rejected() {
    let cfg = infra("networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}, mtu: 1460}");
    assert_errors(create(&cfg), &["networks.mtu: Forbidden: mtu must not be set in BYO subnet mode"]);
}

#[test]
fn c8_ipv4_shoot_with_pod_secondary_range_name_is_rejected() {
    let cfg = infra("networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers, podSecondaryRangeName: pods}}");
    let expected =
        ["networks.subnetWorkers.podSecondaryRangeName: Forbidden: podSecondaryRangeName is only allowed for dual-stack shoots"];
    assert_errors(create_with(&cfg, &ipv4()), &expected);
    assert_errors(create_with(&cfg, &["IPv4".to_string()]), &expected);
}

#[test]
fn c9_dual_stack_shoot_without_pod_secondary_range_name_is_rejected() {
    let cfg = infra(
        "networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}, subnetServices: {name: my-services}}",
    );
    assert_errors(
        create_with(&cfg, &dual()),
        &["networks.subnetWorkers.podSecondaryRangeName: Required value: podSecondaryRangeName is required for dual-stack shoots"],
    );
}

#[test]
fn c10_dual_stack_shoot_without_subnet_services_is_rejected() {
    let cfg = infra("networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers, podSecondaryRangeName: pods}}");
    assert_errors(
        create_with(&cfg, &dual()),
        &["networks.subnetServices: Required value: subnetServices is required for dual-stack shoots"],
    );
}

#[test]
fn c11_ipv4_shoot_with_subnet_services_is_rejected() {
    let cfg = infra(
        "networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}, subnetServices: {name: my-services}}",
    );
    assert_errors(
        create_with(&cfg, &ipv4()),
        &["networks.subnetServices: Forbidden: subnetServices is only allowed for dual-stack shoots"],
    );
}

#[test]
fn c12_subnet_services_without_subnet_workers_is_rejected() {
    // Managed validation continues (the base config is otherwise valid).
    let mut cfg = base();
    cfg.networks.subnet_services = Some(SubnetReference { name: "my-services".into(), ..Default::default() });
    assert_errors(
        create(&cfg),
        &["networks.subnetServices: Forbidden: subnetServices may only be set in combination with subnetWorkers (bring-your-own-subnet mode)"],
    );
    // In dual-stack too.
    assert_eq!(create_with(&cfg, &dual()).len(), 1);
}

#[test]
fn c18_dual_stack_subnet_services_equal_to_subnet_workers_is_rejected() {
    let cfg = infra(
        "networks: {vpc: {name: my-vpc}, subnetWorkers: {name: shared, podSecondaryRangeName: pods}, subnetServices: {name: shared}}",
    );
    assert_errors(
        create_with(&cfg, &dual()),
        &[
            r#"networks.subnetServices.name: Invalid value: "shared": must differ from networks.subnetWorkers.name: the services' IPv6 range is sliced from this subnet's /64 and would overlap the nodes' and pods' ranges"#,
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Group D (update / immutability).

#[test]
fn d1_managed_shoot_adding_subnet_workers_is_rejected() {
    let old = infra("networks: {vpc: {name: my-vpc, cloudRouter: {name: r}}, workers: 10.250.0.0/16}");
    let new = infra("networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}}");
    // The mode switch is the only error: the managed rules would report its consequences.
    assert_errors(
        validate_infrastructure_config_update(&old, &new),
        &["networks.subnetWorkers: Forbidden: cannot switch between BYO subnet mode and managed mode"],
    );
}

#[test]
fn d2_byo_shoot_removing_subnet_workers_is_rejected() {
    let old = byo();
    let new = infra("networks: {vpc: {name: my-vpc, cloudRouter: {name: r}}, workers: 10.250.0.0/16}");
    assert_errors(
        validate_infrastructure_config_update(&old, &new),
        &["networks.subnetWorkers: Forbidden: cannot switch between BYO subnet mode and managed mode"],
    );
}

#[test]
fn d3_byo_shoot_changing_subnet_workers_name_is_rejected() {
    let mut new = byo();
    new.networks.subnet_workers.as_mut().unwrap().name = "other-workers".into();
    assert_errors(
        validate_infrastructure_config_update(&byo(), &new),
        &[
            r#"networks.subnetWorkers: Invalid value: {"Name":"other-workers","PodSecondaryRangeName":null}: field is immutable"#,
        ],
    );
}

#[test]
fn d4_dual_stack_byo_shoot_changing_pod_range_or_services_subnet_is_rejected() {
    let mut new = byo_dual();
    new.networks.subnet_workers.as_mut().unwrap().pod_secondary_range_name = Some("other-pods".into());
    assert_errors(
        validate_infrastructure_config_update(&byo_dual(), &new),
        &[
            r#"networks.subnetWorkers: Invalid value: {"Name":"my-workers","PodSecondaryRangeName":"other-pods"}: field is immutable"#,
        ],
    );
    let mut new = byo_dual();
    new.networks.subnet_services.as_mut().unwrap().name = "other-services".into();
    assert_errors(
        validate_infrastructure_config_update(&byo_dual(), &new),
        &[
            r#"networks.subnetServices: Invalid value: {"Name":"other-services","PodSecondaryRangeName":null}: field is immutable"#,
        ],
    );
    new.networks.subnet_services = None;
    assert_errors(
        validate_infrastructure_config_update(&byo_dual(), &new),
        &["networks.subnetServices: Invalid value: null: field is immutable"],
    );
}

#[test]
fn d5_byo_shoot_changing_the_vpc_is_rejected_as_a_whole() {
    let mut new = byo();
    new.networks.vpc.as_mut().unwrap().name = "other-vpc".into();
    assert_errors(
        validate_infrastructure_config_update(&byo(), &new),
        &[r#"networks.vpc: Invalid value: {"Name":"other-vpc","CloudRouter":null}: field is immutable"#],
    );
    // Whole struct: adding a Cloud Router is a change of the VPC too (and rejected by create as C2).
    new.networks.vpc = Some(Vpc { name: "my-vpc".into(), cloud_router: Some(CloudRouter { name: "r".into() }) });
    assert_errors(
        validate_infrastructure_config_update(&byo(), &new),
        &[r#"networks.vpc: Invalid value: {"Name":"my-vpc","CloudRouter":{"Name":"r"}}: field is immutable"#],
    );
    new.networks.vpc = None;
    assert_errors(
        validate_infrastructure_config_update(&byo(), &new),
        &["networks.vpc: Invalid value: null: field is immutable"],
    );
}

#[test]
fn d6_byo_shoot_changing_ip_families_is_rejected_by_stack_migration() {
    let networking = Path::new("spec").child("networking");
    let expected = ["spec.networking.ipFamilies: Forbidden: migrating between single-stack and dual-stack networking is not allowed in BYO subnet mode (networks.subnetWorkers): the referenced subnets are provisioned for one stack type"];
    let v4 = vec!["IPv4".to_string()];
    assert_errors(validate_infrastructure_config_stack_migration(&byo_dual(), &v4, &dual(), &networking), &expected);
    assert_errors(validate_infrastructure_config_stack_migration(&byo(), &dual(), &v4, &networking), &expected);
    assert_errors(validate_infrastructure_config_stack_migration(&byo(), &[], &dual(), &networking), &expected);
    // Same stack, written differently: no migration.
    assert_errors(validate_infrastructure_config_stack_migration(&byo(), &[], &v4, &networking), &[]);
    // Managed shoots migrate IPv4 → dual-stack as upstream allows.
    assert_errors(validate_infrastructure_config_stack_migration(&base(), &v4, &dual(), &networking), &[]);

    // Through the Shoot validator: the migration error, and the new stack's create rules.
    let shoot = |families: &str, cfg: &str| -> GcpShoot {
        serde_saphyr::from_str(&format!(
            r#"
apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata: {{name: s, namespace: garden-p}}
spec:
  region: europe-west1
  networking: {{type: calico, nodes: 10.250.0.0/16, ipFamilies: {families}, providerConfig: {{overlay: {{enabled: false}}}}}}
  provider:
    type: gcp
    infrastructureConfig: {cfg}
    workers: [{{name: w, minimum: 1, maximum: 1, volume: {{type: pd-balanced, size: 50Gi}}, zones: [europe-west1-b]}}]
"#
        ))
        .unwrap()
    };
    let old = shoot("[IPv4]", "{networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}}}");
    let new = shoot("[IPv4, IPv6]", "{networks: {vpc: {name: my-vpc}, subnetWorkers: {name: my-workers}}}");
    assert_errors(
        validate_shoot(&new, Some(&old)),
        &[
            expected[0],
            "spec.provider.infrastructureConfig.networks.subnetServices: Required value: subnetServices is required for dual-stack shoots",
            "spec.provider.infrastructureConfig.networks.subnetWorkers.podSecondaryRangeName: Required value: podSecondaryRangeName is required for dual-stack shoots",
        ],
    );
    assert_errors(validate_shoot(&old, Some(&old)), &[]);
}

// ---------------------------------------------------------------------------------------------
// Findings

#[test]
fn regression_a_cidr_with_a_line_break_is_reported_on_one_line() {
    // Go's parse error embeds the text as written; a line break in it split the error in two lines
    // (the CLI prints one error per line). Control characters are now shown escaped, as in the value.
    let cfg = infra("networks: {workers: \"10.250.0.0/16\\nx\", internal: \"10.10.0.0/24\\r\"}");
    assert_errors(
        create(&cfg),
        &[
            r#"networks.workers: Invalid value: "10.250.0.0/16\nx": invalid CIDR address: 10.250.0.0/16\nx"#,
            r#"networks.internal: Invalid value: "10.10.0.0/24\r": invalid CIDR address: 10.10.0.0/24\r"#,
        ],
    );
    // Printable text is Go's message unchanged.
    let cfg = infra(r#"networks: {workers: "10.250.0.0/16 \"x\""}"#);
    assert_errors(
        create(&cfg),
        &[r#"networks.workers: Invalid value: "10.250.0.0/16 \"x\"": invalid CIDR address: 10.250.0.0/16 "x""#],
    );
}
