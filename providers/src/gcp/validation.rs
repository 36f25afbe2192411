//! Admission validation of the GCP `InfrastructureConfig`, create and update, as upstream's
//! `pkg/apis/gcp/validation/infrastructure.go` (master `2286e4a`, plus the bring-your-own-subnet
//! branch of provider-gcp PR #1493, `b10c0b5`), with upstream's field paths, messages and order,
//! and the user-managed-egress spec's rules where the spec asks for more (C1–C12, C18, D1–D6).
//!
//! Every function returns all errors at once. Paths are relative to the `fld` given (upstream's
//! unit tests pass a nil path, so errors read `networks.vpc.name`; the Shoot validator passes
//! `spec.provider.infrastructureConfig`); the shoot's CIDRs are always `networking.nodes|pods|services`
//! (upstream builds that path itself).
//!
//! Create ([`validate_infrastructure_config_at`]):
//! 1. `subnetServices` without `subnetWorkers` is forbidden (C12); managed validation continues.
//! 2. User-managed egress (`subnetWorkers` set): the BYO rules ([`validate_byo_network_config`],
//!    C1–C11, C18), and nothing else — upstream's early return.
//! 3. Managed: upstream master's rules (workers, internal, nodes, VPC and Cloud Router, flow logs,
//!    Cloud NAT, MTU).
//!
//! Update ([`validate_infrastructure_config_update_at`]): switching mode is the only error (D1, D2);
//! in BYO mode `subnetWorkers`, `subnetServices` and `vpc` are whole-struct immutable (D3–D5);
//! managed mode keeps master's rules. [`validate_infrastructure_config_stack_migration`] is the
//! spec's `ValidateInfrastructureConfigStackMigration` (D6).
//!
//! Bad values of struct, pointer and slice type render as apimachinery 0.36 (upstream's) renders
//! them: a nil pointer as `null`, a pointer as its pointee, a struct or slice as JSON of the
//! internal API type, whose field names are the Go names (`{"Name":"r"}`).
//!
//! Upstream quirks copied on purpose:
//! - `maxPortsPerVM` without dynamic port allocation shows the value of `minPortsPerVM`;
//! - an empty Cloud Router name is reported at `networks.vpc.cloudRouter.name` with the whole
//!   router as the value;
//! - `internal` is immutable only when both the old and the new config name a VPC, and going from no
//!   VPC to a VPC is not checked;
//! - `flowSampling` is a float32 shown as the float64 upstream converts it to (`1.2000000476837158`).
//!
//! Where upstream's Go code would panic (an `internal` CIDR while neither `worker` nor `workers` is
//! set calls a method on a nil CIDR), trellis reports the missing `workers` and skips the check.

pub mod filter;
pub mod shoot;

use serde_json::{json, Value as Json};

use crate::cidr::{validate_cidr_is_canonical, validate_cidr_parse, Cidr};
use crate::field::{ErrorList, FieldError, Path, Value, FIELD_IMMUTABLE_ERROR_MSG};
use crate::gcp::api::{
    CloudNat, CloudRouter, FlowLogs, InfrastructureConfig, NatIpName, NetworkConfig, SubnetReference, Vpc,
};
use crate::manifest::{Networking, Shoot};
use crate::networking::IP_FAMILY_IPV6;
use filter::validate_gcp_resource_name;

/// Upstream's `validSubnetLogConfigIntervals`.
pub const VALID_SUBNET_LOG_CONFIG_INTERVALS: [&str; 6] =
    ["INTERVAL_5_SEC", "INTERVAL_30_SEC", "INTERVAL_1_MIN", "INTERVAL_5_MIN", "INTERVAL_10_MIN", "INTERVAL_15_MIN"];
/// Upstream's `validSubnetLogConfigMetadata`.
pub const VALID_SUBNET_LOG_CONFIG_METADATA: [&str; 3] =
    ["CUSTOM_METADATA", "EXCLUDE_ALL_METADATA", "INCLUDE_ALL_METADATA"];
/// The MTU range of a Gardener-managed VPC.
pub const MTU_MIN: i32 = 1300;
pub const MTU_MAX: i32 = 8896;

/// The shoot's IP stack as the GCP rules see it: dual-stack when `spec.networking.ipFamilies`
/// contains `IPv6` (upstream's `isDualStack`; IPv6 single-stack is refused by the Shoot validator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    SingleStackIPv4,
    DualStack,
}

impl Stack {
    pub fn of(ip_families: &[String]) -> Stack {
        if ip_families.iter().any(|f| f == IP_FAMILY_IPV6) {
            Stack::DualStack
        } else {
            Stack::SingleStackIPv4
        }
    }
}

/// What validation needs to know about the shoot besides its InfrastructureConfig.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShootContext<'a> {
    /// `spec.networking.nodes`.
    pub nodes: Option<&'a str>,
    /// `spec.networking.pods`.
    pub pods: Option<&'a str>,
    /// `spec.networking.services`.
    pub services: Option<&'a str>,
    /// `spec.networking.ipFamilies` as written (PR #1493 passes them to the create rules).
    pub ip_families: &'a [String],
}

impl ShootContext<'_> {
    pub fn stack(&self) -> Stack {
        Stack::of(self.ip_families)
    }
}

impl<'a> From<&'a Networking> for ShootContext<'a> {
    fn from(n: &'a Networking) -> ShootContext<'a> {
        ShootContext {
            nodes: n.nodes.as_deref(),
            pods: n.pods.as_deref(),
            services: n.services.as_deref(),
            ip_families: &n.ip_families,
        }
    }
}

impl<'a, C> From<&'a Shoot<C>> for ShootContext<'a> {
    fn from(shoot: &'a Shoot<C>) -> ShootContext<'a> {
        ShootContext::from(&shoot.spec.networking)
    }
}

// ---------------------------------------------------------------------------------------------
// Bad values as apimachinery renders them (JSON of the internal types, Go field names).

fn router_json(r: Option<&CloudRouter>) -> Json {
    r.map_or(Json::Null, |r| json!({ "Name": r.name }))
}

fn vpc_value(v: Option<&Vpc>) -> Value {
    v.map_or_else(Value::null, |v| {
        Value::json(&json!({ "Name": v.name, "CloudRouter": router_json(v.cloud_router.as_ref()) }))
    })
}

fn router_value(r: Option<&CloudRouter>) -> Value {
    Value::json(&router_json(r))
}

fn subnet_reference_value(s: Option<&SubnetReference>) -> Value {
    s.map_or_else(Value::null, |s| {
        Value::json(&json!({ "Name": s.name, "PodSecondaryRangeName": s.pod_secondary_range_name }))
    })
}

fn nat_ip_names_value(names: &[NatIpName]) -> Value {
    Value::json(&Json::Array(names.iter().map(|n| json!({ "Name": n.name })).collect()))
}

fn opt_i32_value(v: Option<i32>) -> Value {
    v.map_or_else(Value::null, Value::display)
}

/// `apivalidation.ValidateImmutableField(new, old, fld)`: Invalid with the new value.
fn validate_immutable_field<T: PartialEq>(new: &T, old: &T, value: impl FnOnce(&T) -> Value, fld: &Path) -> ErrorList {
    if new == old {
        return Vec::new();
    }
    vec![FieldError::invalid_value(fld, value(new), FIELD_IMMUTABLE_ERROR_MSG)]
}

// ---------------------------------------------------------------------------------------------
// Create

/// `ValidateInfrastructureConfig` with upstream's unit-test paths (`networks.workers`).
pub fn validate_infrastructure_config<'a>(cfg: &InfrastructureConfig, shoot: impl Into<ShootContext<'a>>) -> ErrorList {
    validate_infrastructure_config_at(cfg, shoot, &Path::root())
}

/// `ValidateInfrastructureConfig(infra, nodes, pods, services, ipFamilies, fldPath)`: the create rules.
pub fn validate_infrastructure_config_at<'a>(
    cfg: &InfrastructureConfig,
    shoot: impl Into<ShootContext<'a>>,
    fld: &Path,
) -> ErrorList {
    let shoot = shoot.into();
    let networks = &cfg.networks;
    let networks_path = fld.child("networks");
    let mut errs = Vec::new();

    // C12 (PR #1493 infrastructure.go:41).
    if networks.subnet_workers.is_none() && networks.subnet_services.is_some() {
        errs.push(FieldError::forbidden(
            networks_path.child("subnetServices"),
            "subnetServices may only be set in combination with subnetWorkers (bring-your-own-subnet mode)",
        ));
    }
    if networks.subnet_workers.is_some() {
        errs.extend(validate_byo_network_config(networks, shoot.stack(), &networks_path));
        return errs;
    }
    errs.extend(validate_managed_network_config(networks, &shoot, &networks_path));
    errs
}

/// PR #1493's `validateBYONetworkConfig` (infrastructure.go:149-217) with the spec's additions:
/// `subnetWorkers.name` (and `subnetServices.name`, `podSecondaryRangeName`, `vpc.name`) must be a
/// valid GCP resource name, and in dual-stack the services subnet must differ from the workers
/// subnet (C18).
pub fn validate_byo_network_config(networks: &NetworkConfig, stack: Stack, networks_path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let Some(subnet_workers) = &networks.subnet_workers else { return errs };
    let vpc_path = networks_path.child("vpc");

    // C1
    match &networks.vpc {
        Some(vpc) if !vpc.name.is_empty() => {
            errs.extend(validate_gcp_resource_name(&vpc.name, &vpc_path.child("name")))
        }
        _ => errs.push(FieldError::required(vpc_path.child("name"), "vpc name must be set when using BYO subnet mode")),
    }
    // C2
    if networks.vpc.as_ref().is_some_and(|v| v.cloud_router.is_some()) {
        errs.push(FieldError::forbidden(
            vpc_path.child("cloudRouter"),
            "cloudRouter must not be set in BYO subnet mode; manage egress outside of Gardener",
        ));
    }
    // C3
    if !networks.worker.is_empty() {
        errs.push(FieldError::forbidden(
            networks_path.child("worker"),
            "worker CIDR must not be set in BYO subnet mode; use subnetWorkers instead",
        ));
    }
    if !networks.workers.is_empty() {
        errs.push(FieldError::forbidden(
            networks_path.child("workers"),
            "workers CIDR must not be set in BYO subnet mode; use subnetWorkers instead",
        ));
    }
    // C4
    if networks.internal.is_some() {
        errs.push(FieldError::forbidden(
            networks_path.child("internal"),
            "internal subnet must not be set in BYO subnet mode",
        ));
    }
    // C5
    if networks.cloud_nat.is_some() {
        errs.push(FieldError::forbidden(
            networks_path.child("cloudNAT"),
            "cloudNAT must not be set in BYO subnet mode; manage egress outside of Gardener",
        ));
    }
    // C6
    if networks.flow_logs.is_some() {
        errs.push(FieldError::forbidden(
            networks_path.child("flowLogs"),
            "flowLogs must not be set in BYO subnet mode",
        ));
    }
    // C7
    if networks.mtu.is_some() {
        errs.push(FieldError::forbidden(networks_path.child("mtu"), "mtu must not be set in BYO subnet mode"));
    }

    let workers_path = networks_path.child("subnetWorkers");
    if subnet_workers.name.is_empty() {
        errs.push(FieldError::required(workers_path.child("name"), "subnetWorkers name must not be empty"));
    } else {
        errs.extend(validate_gcp_resource_name(&subnet_workers.name, &workers_path.child("name")));
    }

    let dual_stack = stack == Stack::DualStack;
    let services_path = networks_path.child("subnetServices");
    match (&networks.subnet_services, dual_stack) {
        // C11
        (Some(_), false) => {
            errs.push(FieldError::forbidden(&services_path, "subnetServices is only allowed for dual-stack shoots"))
        }
        // C10
        (None, true) => {
            errs.push(FieldError::required(&services_path, "subnetServices is required for dual-stack shoots"))
        }
        (Some(services), true) => {
            let name_path = services_path.child("name");
            if services.name.is_empty() {
                errs.push(FieldError::required(&name_path, "subnetServices name must not be empty"));
            } else {
                errs.extend(validate_gcp_resource_name(&services.name, &name_path));
                // C18 (spec).
                if services.name == subnet_workers.name {
                    errs.push(FieldError::invalid(
                        &name_path,
                        &services.name,
                        "must differ from networks.subnetWorkers.name: the services' IPv6 range is sliced from this subnet's /64 and would overlap the nodes' and pods' ranges",
                    ));
                }
            }
            if services.pod_secondary_range_name.is_some() {
                errs.push(FieldError::forbidden(
                    services_path.child("podSecondaryRangeName"),
                    "podSecondaryRangeName is only valid on subnetWorkers, not subnetServices",
                ));
            }
        }
        (None, false) => {}
    }

    let range_path = workers_path.child("podSecondaryRangeName");
    match (&subnet_workers.pod_secondary_range_name, dual_stack) {
        // C8
        (Some(_), false) => {
            errs.push(FieldError::forbidden(&range_path, "podSecondaryRangeName is only allowed for dual-stack shoots"))
        }
        // C9
        (None, true) => {
            errs.push(FieldError::required(&range_path, "podSecondaryRangeName is required for dual-stack shoots"))
        }
        (Some(name), true) if name.is_empty() => errs.push(FieldError::invalid(
            &range_path,
            "",
            "podSecondaryRangeName must not be empty in dual-stack mode",
        )),
        (Some(name), true) => errs.extend(validate_gcp_resource_name(name, &range_path)),
        (None, false) => {}
    }
    errs
}

/// Master's `ValidateInfrastructureConfig` (infrastructure.go:36-137) for a managed config.
fn validate_managed_network_config(
    networks: &NetworkConfig,
    shoot: &ShootContext<'_>,
    networks_path: &Path,
) -> ErrorList {
    let networking = Path::new("networking");
    let nodes = shoot.nodes.map(|c| Cidr::new(c, networking.child("nodes")));
    let pods = shoot.pods.map(|c| Cidr::new(c, networking.child("pods")));
    let services = shoot.services.map(|c| Cidr::new(c, networking.child("services")));
    let mut errs = Vec::new();

    if networks.worker.is_empty() && networks.workers.is_empty() {
        errs.push(FieldError::required(
            networks_path.child("workers"),
            "must specify the network range for the worker network",
        ));
    }

    let mut worker_cidr = None;
    for (value, name) in [(&networks.worker, "worker"), (&networks.workers, "workers")] {
        if value.is_empty() {
            continue;
        }
        let path = networks_path.child(name);
        let cidr = Cidr::new(value, path.clone());
        errs.extend(validate_cidr_parse(&[&cidr]));
        errs.extend(validate_cidr_is_canonical(&path, value));
        worker_cidr = Some(cidr);
    }

    if let Some(internal) = &networks.internal {
        let path = networks_path.child("internal");
        let internal_cidr = Cidr::new(internal, path.clone());
        errs.extend(validate_cidr_parse(&[&internal_cidr]));
        errs.extend(validate_cidr_is_canonical(&path, internal));
        for cidr in [&pods, &services, &nodes, &worker_cidr].into_iter().flatten() {
            errs.extend(cidr.validate_not_overlap(&[&internal_cidr]));
        }
    }

    if let (Some(nodes), Some(workers)) = (&nodes, &worker_cidr) {
        errs.extend(nodes.validate_subset(&[workers]));
    }

    let vpc_path = networks_path.child("vpc");
    if let Some(vpc) = &networks.vpc {
        if vpc.name.is_empty() {
            errs.push(FieldError::invalid(
                vpc_path.child("name"),
                "",
                "vpc name must not be empty when vpc key is provided",
            ));
            if let Some(router) = &vpc.cloud_router {
                errs.push(FieldError::invalid_value(
                    vpc_path.child("cloudRouter"),
                    router_value(Some(router)),
                    "cloud router can not be configured when the VPC name is not specified",
                ));
            }
        } else {
            errs.extend(validate_gcp_resource_name(&vpc.name, &vpc_path.child("name")));
            match &vpc.cloud_router {
                None => errs.push(FieldError::invalid_value(
                    vpc_path.child("cloudRouter"),
                    Value::null(),
                    "cloud router must be defined when reusing a VPC",
                )),
                Some(router) if router.name.is_empty() => errs.push(FieldError::invalid_value(
                    vpc_path.child("cloudRouter").child("name"),
                    router_value(Some(router)),
                    "cloud router name must be specified when reusing a VPC",
                )),
                Some(router) => {
                    errs.extend(validate_gcp_resource_name(&router.name, &vpc_path.child("cloudRouter").child("name")))
                }
            }
        }
    }

    if let Some(flow_logs) = &networks.flow_logs {
        errs.extend(validate_network_flow_logs(flow_logs, &networks_path.child("flowLogs")));
    }
    if let Some(nat) = &networks.cloud_nat {
        errs.extend(validate_cloud_nat_config(nat, networks_path));
    }
    if let Some(mtu) = networks.mtu {
        let mtu_path = networks_path.child("mtu");
        if networks.vpc.as_ref().is_some_and(|v| !v.name.is_empty()) {
            errs.push(FieldError::forbidden(&mtu_path, "mtu cannot be configured when using an existing VPC"));
        }
        if !(MTU_MIN..=MTU_MAX).contains(&mtu) {
            errs.push(FieldError::invalid_value(&mtu_path, Value::display(mtu), "mtu must be between 1300 and 8896"));
        }
    }
    errs
}

/// `validateNetworkFlowLogs(flowLogs, fldPath)`.
fn validate_network_flow_logs(flow_logs: &FlowLogs, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if flow_logs.aggregation_interval.is_none() && flow_logs.flow_sampling.is_none() && flow_logs.metadata.is_none() {
        errs.push(FieldError::required(
            fld,
            "at least one VPC flow log parameter must be specified when VPC flow log section is provided",
        ));
    }
    if let Some(interval) = &flow_logs.aggregation_interval {
        if !VALID_SUBNET_LOG_CONFIG_INTERVALS.contains(&interval.as_str()) {
            errs.push(FieldError::not_supported(
                fld.child("aggregationInterval"),
                interval,
                &VALID_SUBNET_LOG_CONFIG_INTERVALS,
            ));
        }
    }
    if let Some(metadata) = &flow_logs.metadata {
        if !VALID_SUBNET_LOG_CONFIG_METADATA.contains(&metadata.as_str()) {
            errs.push(FieldError::not_supported(fld.child("metadata"), metadata, &VALID_SUBNET_LOG_CONFIG_METADATA));
        }
    }
    if let Some(sampling) = flow_logs.flow_sampling {
        // The internal type is a float64 converted from v1alpha1's float32.
        let sampling = f64::from(sampling);
        if !(0.0..=1.0).contains(&sampling) {
            errs.push(FieldError::invalid_value(
                fld.child("flowSampling"),
                Value::display(sampling),
                "must be between 0 and 1",
            ));
        }
    }
    errs
}

/// Upstream's `isPowerOfTwo` (true for 0, and for `i32::MIN` by two's complement).
fn is_power_of_two(n: i32) -> bool {
    n & n.wrapping_sub(1) == 0
}

/// `ValidateCloudNatConfig(config, fldPath)`: reports under `<fldPath>.cloudNAT`.
pub fn validate_cloud_nat_config(nat: &CloudNat, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let nat_path = fld.child("cloudNAT");
    let names_path = nat_path.child("natIPNames");

    if let Some(names) = &nat.nat_ip_names {
        if names.is_empty() {
            errs.push(FieldError::invalid_value(
                &names_path,
                nat_ip_names_value(names),
                "nat IP names cannot be empty.",
            ));
        }
        for (i, name) in names.iter().enumerate() {
            errs.extend(validate_gcp_resource_name(&name.name, &names_path.index(i).child("name")));
        }
    }

    if nat.enable_dynamic_port_allocation {
        if nat.endpoint_independent_mapping.as_ref().is_some_and(|m| m.enabled) {
            // Upstream: no fitting error type, so the blame is on enableDynamicPortAllocation.
            errs.push(FieldError::invalid_value(
                nat_path.child("enableDynamicPortAllocation"),
                Value::display(true),
                "dynamic port allocation may not be enabled at the same time as endpoint independent mapping.",
            ));
        }
        if let Some(max) = nat.max_ports_per_vm.filter(|m| !is_power_of_two(*m)) {
            errs.push(FieldError::invalid_value(
                nat_path.child("maxPortsPerVM"),
                Value::display(max),
                "maxPortsPerVM must be a power of two.",
            ));
        }
        if let Some(min) = nat.min_ports_per_vm.filter(|m| !is_power_of_two(*m)) {
            errs.push(FieldError::invalid_value(
                nat_path.child("minPortsPerVM"),
                Value::display(min),
                "minPortsPerVM must be a power of two if dynamic port allocation is enabled.",
            ));
        }
        if let (Some(min), Some(max)) = (nat.min_ports_per_vm, nat.max_ports_per_vm) {
            if min > max {
                errs.push(FieldError::invalid_value(
                    nat_path.child("minPortsPerVM"),
                    Value::display(min),
                    "minPortsPerVM may not be greater than maxPortsPerVM.",
                ));
            }
        }
    } else if nat.max_ports_per_vm.is_some() {
        // QUIRK: upstream shows minPortsPerVM's value here.
        errs.push(FieldError::invalid_value(
            nat_path.child("maxPortsPerVM"),
            opt_i32_value(nat.min_ports_per_vm),
            "maxPortsPerVM are only configurable if dynamic port allocation is enabled.",
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Update

/// `ValidateInfrastructureConfigUpdate` with upstream's unit-test paths.
pub fn validate_infrastructure_config_update(old: &InfrastructureConfig, new: &InfrastructureConfig) -> ErrorList {
    validate_infrastructure_config_update_at(old, new, &Path::root())
}

/// `ValidateInfrastructureConfigUpdate(old, new, fldPath)` (PR #1493 infrastructure.go:287-350):
/// the update rules, run in addition to the create rules on `new`.
pub fn validate_infrastructure_config_update_at(
    old: &InfrastructureConfig,
    new: &InfrastructureConfig,
    fld: &Path,
) -> ErrorList {
    let networks_path = fld.child("networks");
    let vpc_path = networks_path.child("vpc");
    let (old_n, new_n) = (&old.networks, &new.networks);
    let mut errs = Vec::new();

    // D1, D2
    let (old_byo, new_byo) = (old_n.subnet_workers.is_some(), new_n.subnet_workers.is_some());
    if old_byo != new_byo {
        errs.push(FieldError::forbidden(
            networks_path.child("subnetWorkers"),
            "cannot switch between BYO subnet mode and managed mode",
        ));
        return errs;
    }
    if old_byo {
        // D3, D4
        errs.extend(validate_immutable_field(
            &new_n.subnet_workers,
            &old_n.subnet_workers,
            |s| subnet_reference_value(s.as_ref()),
            &networks_path.child("subnetWorkers"),
        ));
        errs.extend(validate_immutable_field(
            &new_n.subnet_services,
            &old_n.subnet_services,
            |s| subnet_reference_value(s.as_ref()),
            &networks_path.child("subnetServices"),
        ));
        // D5: the whole VPC, CloudRouter included.
        errs.extend(validate_immutable_field(&new_n.vpc, &old_n.vpc, |v| vpc_value(v.as_ref()), &vpc_path));
        return errs;
    }

    match (&old_n.vpc, &new_n.vpc) {
        (Some(_), None) => {
            errs.extend(validate_immutable_field(&new_n.vpc, &old_n.vpc, |v| vpc_value(v.as_ref()), &vpc_path))
        }
        (Some(old_vpc), Some(new_vpc)) => {
            errs.extend(validate_immutable_field(
                &new_vpc.name,
                &old_vpc.name,
                |n| Value::str(n),
                &vpc_path.child("name"),
            ));
            errs.extend(validate_immutable_field(
                &new_vpc.cloud_router,
                &old_vpc.cloud_router,
                |r| router_value(r.as_ref()),
                &vpc_path.child("cloudRouter"),
            ));
            // Adding an internal subnet is allowed, changing one is not.
            if old_n.internal.is_some() {
                errs.extend(validate_immutable_field(
                    &new_n.internal,
                    &old_n.internal,
                    |i| Value::opt_str(i.as_deref()),
                    &networks_path.child("internal"),
                ));
            }
        }
        _ => {}
    }

    let worker_cidr = |n: &NetworkConfig| {
        if n.workers.is_empty() {
            Cidr::new(&n.worker, networks_path.child("worker"))
        } else {
            Cidr::new(&n.workers, networks_path.child("workers"))
        }
    };
    let (new_worker, old_worker) = (worker_cidr(new_n), worker_cidr(old_n));
    if !new_worker.validate_subset(&[&old_worker]).is_empty() {
        errs.push(FieldError::invalid(new_worker.path(), new_worker.cidr(), "worker CIDR blocks can only be expanded"));
    }

    errs.extend(validate_immutable_field(&new_n.mtu, &old_n.mtu, |m| opt_i32_value(*m), &networks_path.child("mtu")));
    errs
}

/// The spec's `ValidateInfrastructureConfigStackMigration` (D6): with a user-managed workers subnet,
/// `spec.networking.ipFamilies` may not move between single-stack and dual-stack — the referenced
/// subnets are provisioned for one stack. (Managed shoots migrate IPv4 → dual-stack as upstream
/// allows.) `networking` is the path of the shoot's networking (`spec.networking`).
pub fn validate_infrastructure_config_stack_migration(
    new: &InfrastructureConfig,
    old_ip_families: &[String],
    new_ip_families: &[String],
    networking: &Path,
) -> ErrorList {
    let mut errs = Vec::new();
    if new.networks.subnet_workers.is_some() && Stack::of(old_ip_families) != Stack::of(new_ip_families) {
        errs.push(FieldError::forbidden(
            networking.child("ipFamilies"),
            "migrating between single-stack and dual-stack networking is not allowed in BYO subnet mode (networks.subnetWorkers): the referenced subnets are provisioned for one stack type",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_of_two_as_upstream() {
        for n in [0, 1, 2, 64, 1024, 65536, i32::MIN] {
            assert!(is_power_of_two(n), "{n}");
        }
        for n in [3, 20, 65535, -2, i32::MAX] {
            assert!(!is_power_of_two(n), "{n}");
        }
    }

    #[test]
    fn stack_is_dual_when_ipv6_is_among_the_families() {
        let f = |v: &[&str]| Stack::of(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(f(&[]), Stack::SingleStackIPv4);
        assert_eq!(f(&["IPv4"]), Stack::SingleStackIPv4);
        assert_eq!(f(&["IPv4", "IPv6"]), Stack::DualStack);
        assert_eq!(f(&["IPv6", "IPv4"]), Stack::DualStack);
    }
}
