//! Admission validation of the Azure `InfrastructureConfig`, create and update, as upstream's
//! `pkg/apis/azure/validation/infrastructure.go` (reference §3): the same rules in the same order,
//! with the same field paths, messages and quirks, plus the user-managed-egress rules of the spec
//! (`networks.subnet` set; acceptance C1–C7 and D1–D4).
//!
//! Every function returns all errors at once. Paths are relative to the `fld` given (upstream's
//! unit tests pass a nil path, so errors read `networks.vnet.cidr`); the shoot's CIDRs are
//! `networking.nodes|pods|services`.
//!
//! Upstream quirks copied on purpose (a faithful port reports what upstream reports):
//! - a changed single-subnet `networks.workers` is reported twice on update;
//! - a zoned-layout `natGateway` / `serviceEndpoints` is reported at `networks.workers`;
//! - zone service endpoints are reported at `networks.zones.serviceEndpoints[j]` (no zone index);
//! - multi → single-subnet is reported at `networks.worker` (singular);
//! - a zone's NAT idle-timeout range check runs before the "disabled" check;
//! - the public IPs of a `StandardV2` NAT gateway get no name/resource-group validation;
//! - the immutable `zoned` error shows the *old* value (upstream swaps the arguments).
//!
//! Inferred where the reference is silent (upstream master's source was not available to check):
//! - bad struct values print as Go's `%#v` with the value in place of the pointer address (Go's own
//!   output contains addresses, so it can never match byte for byte; see `gorepr`);
//! - the elided StandardV2 message reads "(StandardV2 is zone-redundant)";
//! - a Standard-SKU public IP without a zone counts as a zone mismatch and shows `null`;
//! - the NAT SKU change check runs only when old and new both have a NAT gateway;
//! - the VNet CIDR expansion check compares first and last addresses and skips unparsable CIDRs.

pub mod filter;
pub mod gorepr;
pub mod shoot;

/// The CIDR checks moved to [`crate::cidr`] (shared with GCP); kept here under their old path.
pub use crate::cidr;

use std::collections::BTreeSet;

use crate::azure::api::{
    is_using_single_subnet_layout, InfrastructureConfig, NatGatewayConfig, NetworkConfig, ResourceGroup, VNet, Zone,
    ZonedNatGatewayConfig, NAT_GATEWAY_SKUS, NAT_GATEWAY_SKU_STANDARD, NAT_GATEWAY_SKU_STANDARD_V2,
};
use crate::field::{ErrorList, FieldError, Path, Value};
use crate::manifest::{Networking, Shoot};
use cidr::{validate_cidr_is_canonical, validate_cidr_not_overlap, validate_cidr_parse, Cidr};
use filter::{
    parse_resource_id, validate_generic_name, validate_public_ip_name, validate_resource_group_name,
    validate_resource_id, validate_service_endpoint, validate_subnet_name, validate_vnet_name,
};
use gorepr::GoValue;

const NAT_GATEWAY_MIN_TIMEOUT_IN_MINUTES: i32 = 4;
const NAT_GATEWAY_MAX_TIMEOUT_IN_MINUTES: i32 = 120;

pub use crate::field::FIELD_IMMUTABLE_ERROR_MSG;

/// What validation needs to know about the shoot besides its InfrastructureConfig.
///
/// Built from the shoot's `spec.networking` (then no worker uses an in-place update strategy) or
/// from the whole [`Shoot`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ShootContext<'a> {
    /// `spec.networking.nodes`.
    pub nodes: Option<&'a str>,
    /// `spec.networking.pods`.
    pub pods: Option<&'a str>,
    /// `spec.networking.services`.
    pub services: Option<&'a str>,
    /// Whether a worker pool uses `AutoInPlaceUpdate` / `ManualInPlaceUpdate` (update rules only).
    pub in_place_update_workers: bool,
}

impl<'a> From<&'a Networking> for ShootContext<'a> {
    fn from(n: &'a Networking) -> ShootContext<'a> {
        ShootContext {
            nodes: n.nodes.as_deref(),
            pods: n.pods.as_deref(),
            services: n.services.as_deref(),
            in_place_update_workers: false,
        }
    }
}

impl<'a, C> From<&'a Shoot<C>> for ShootContext<'a> {
    fn from(shoot: &'a Shoot<C>) -> ShootContext<'a> {
        ShootContext {
            in_place_update_workers: shoot.has_worker_with_in_place_update(),
            ..ShootContext::from(&shoot.spec.networking)
        }
    }
}

/// `ValidateInfrastructureConfig` with upstream's unit-test paths (`networks.vnet.cidr`).
pub fn validate_infrastructure_config<'a>(cfg: &InfrastructureConfig, shoot: impl Into<ShootContext<'a>>) -> ErrorList {
    validate_infrastructure_config_at(cfg, shoot, &Path::root())
}

/// `ValidateInfrastructureConfig(infra, shoot, fldPath)`: the create rules.
pub fn validate_infrastructure_config_at<'a>(
    cfg: &InfrastructureConfig,
    shoot: impl Into<ShootContext<'a>>,
    fld: &Path,
) -> ErrorList {
    let shoot = shoot.into();
    let networking = Path::new("networking");
    let nodes = shoot.nodes.map(|c| Cidr::new(c, networking.child("nodes")));
    let pods = shoot.pods.map(|c| Cidr::new(c, networking.child("pods")));
    let services = shoot.services.map(|c| Cidr::new(c, networking.child("services")));
    let mut errs = Vec::new();

    if let Some(rg) = &cfg.resource_group {
        errs.extend(validate_resource_group_name(&rg.name, &fld.child("resourceGroup.name")));
        errs.push(FieldError::invalid_value(
            fld.child("resourceGroup"),
            gorepr::resource_group(rg),
            "specifying an existing resource group is not supported yet",
        ));
    }

    if cfg.is_using_user_managed_egress() {
        errs.extend(validate_user_managed_egress_network_config(&cfg.networks, &fld.child("networks")));
    } else {
        errs.extend(validate_network_config(cfg, nodes.as_ref(), pods.as_ref(), services.as_ref(), fld));
    }

    if let Some(identity) = &cfg.identity {
        let path = fld.child("identity");
        errs.extend(validate_resource_group_name(&identity.resource_group, &path.child("resourceGroup")));
        errs.extend(validate_generic_name(&identity.name, &path.child("name")));
    }
    errs
}

fn some<'c>(cidrs: &[Option<&'c Cidr>]) -> Vec<&'c Cidr> {
    cidrs.iter().flatten().copied().collect()
}

fn validate_network_config(
    cfg: &InfrastructureConfig,
    nodes: Option<&Cidr>,
    pods: Option<&Cidr>,
    services: Option<&Cidr>,
    fld: &Path,
) -> ErrorList {
    let config = &cfg.networks;
    let networks_path = fld.child("networks");
    let workers_path = networks_path.child("workers");
    let zones_path = networks_path.child("zones");
    let vnet_path = networks_path.child("vnet");
    let mut errs = Vec::new();

    if config.workers.is_none() && config.zones.is_empty() {
        errs.push(FieldError::forbidden(&workers_path, "either workers or zones must be specified"));
        return errs;
    }
    if config.workers.is_some() && !config.zones.is_empty() {
        errs.push(FieldError::forbidden(&workers_path, "workers and zones cannot be specified in parallel"));
        return errs;
    }

    let worker_cidr = config.workers.as_deref().map(|w| Cidr::new(w, workers_path.clone()));
    errs.extend(validate_vnet_config(
        config,
        cfg.resource_group.as_ref(),
        worker_cidr.as_ref(),
        [nodes, pods, services],
        &zones_path,
        &vnet_path,
    ));

    if is_using_single_subnet_layout(cfg) {
        if let Some(workers) = &worker_cidr {
            errs.extend(validate_cidr_parse(&[workers]));
            errs.extend(validate_cidr_is_canonical(&workers_path, workers.cidr()));
            if let Some(nodes) = nodes {
                errs.extend(nodes.validate_subset(&[workers]));
            }
        }
        errs.extend(validate_nat_gateway_config(config.nat_gateway.as_ref(), &networks_path.child("natGateway")));
        let endpoints_path = networks_path.child("serviceEndpoints");
        for (i, endpoint) in config.service_endpoints.iter().enumerate() {
            errs.extend(validate_service_endpoint(endpoint, &endpoints_path.index(i)));
        }
        return errs;
    }

    if !cfg.zoned {
        errs.push(FieldError::forbidden(&zones_path, "cannot specify zones in an non-zonal cluster"));
    }
    if config.nat_gateway.is_some() {
        errs.push(FieldError::forbidden(&workers_path, "natGateway cannot be specified when workers field is missing"));
    }
    if !config.service_endpoints.is_empty() {
        errs.push(FieldError::forbidden(
            &workers_path,
            "serviceEndpoints cannot be specified when workers field is missing",
        ));
    }
    errs.extend(validate_zones(&config.zones, nodes, pods, services, &zones_path));
    errs
}

fn is_external_vnet_used(vnet: &VNet) -> bool {
    vnet.name.is_some() && vnet.resource_group.is_some()
}

fn is_default_vnet_config(vnet: &VNet) -> bool {
    vnet.cidr.is_none() && vnet.name.is_none() && vnet.resource_group.is_none()
}

fn validate_vnet_config(
    config: &NetworkConfig,
    resource_group: Option<&ResourceGroup>,
    workers: Option<&Cidr>,
    [nodes, pods, services]: [Option<&Cidr>; 3],
    zones_path: &Path,
    vnet_path: &Path,
) -> ErrorList {
    let vnet = &config.vnet;
    let mut errs = Vec::new();

    if vnet.name.is_some() != vnet.resource_group.is_some() {
        errs.push(FieldError::invalid_value(
            vnet_path,
            gorepr::vnet(vnet),
            "vnet name and resource group need to be specified together",
        ));
        return errs;
    }

    if let Some(ddos) = &vnet.ddos_protection_plan_id {
        let ddos_path = vnet_path.child("ddosProtectionPlanID");
        match parse_resource_id(ddos) {
            Err(e) => {
                errs.push(FieldError::invalid(&ddos_path, ddos, format!("invalid DDoS protection plan ID: {e}")));
                return errs;
            }
            Ok(rid) => {
                errs.extend(validate_resource_id(&rid, Some("ddosProtectionPlans"), &ddos_path));
                errs.extend(validate_generic_name(&rid.name, &ddos_path));
            }
        }
    }

    if let (Some(name), Some(rg)) = (&vnet.name, &vnet.resource_group) {
        if name.is_empty() {
            errs.push(FieldError::required(
                vnet_path.child("name"),
                "the vnet name must not be empty if specifying an existing vnet",
            ));
        }
        if rg.is_empty() {
            errs.push(FieldError::required(
                vnet_path.child("resourceGroup"),
                "the vnet resource group must not be empty if specifying an existing vnet",
            ));
        }
        errs.extend(validate_resource_group_name(rg, &vnet_path.child("resourceGroup")));
        errs.extend(validate_vnet_name(name, &vnet_path.child("name")));
        if vnet.cidr.is_some() {
            errs.push(FieldError::invalid_value(
                vnet_path.child("cidr"),
                gorepr::vnet(vnet),
                "specifying a cidr for an existing vnet is not possible",
            ));
        }
        if resource_group.is_some_and(|crg| &crg.name == rg) {
            errs.push(FieldError::invalid(
                vnet_path.child("resourceGroup"),
                rg,
                "the vnet resource group must not be the same as the cluster resource group",
            ));
        }
        if vnet.ddos_protection_plan_id.is_some() {
            errs.push(FieldError::forbidden(
                vnet_path.child("ddosProtectionPlanID"),
                "cannot assign a ddos protection plan to a vnet not managed by Gardener",
            ));
        }
        return errs;
    }

    if is_default_vnet_config(vnet) {
        let Some(workers) = workers else {
            errs.push(FieldError::forbidden(
                vnet_path.child("cidr"),
                "a vnet cidr or vnet reference must be specified when the workers field is not set",
            ));
            return errs;
        };
        errs.extend(workers.validate_subset(&some(&[nodes])));
        errs.extend(workers.validate_not_overlap(&some(&[pods, services])));
        return errs;
    }

    let Some(cidr) = &vnet.cidr else { return errs };
    let cidr_path = vnet_path.child("cidr");
    let vnet_cidr = Cidr::new(cidr, cidr_path.clone());
    errs.extend(vnet_cidr.validate_parse());
    errs.extend(validate_cidr_is_canonical(&cidr_path, cidr));
    errs.extend(vnet_cidr.validate_subset(&some(&[nodes])));
    errs.extend(vnet_cidr.validate_not_overlap(&some(&[pods, services])));
    if let Some(workers) = workers {
        errs.extend(vnet_cidr.validate_subset(&[workers]));
    }
    for (i, zone) in config.zones.iter().enumerate() {
        let zone_cidr = Cidr::new(&zone.cidr, zones_path.index(i).child("cidr"));
        errs.extend(vnet_cidr.validate_subset(&[&zone_cidr]));
    }
    errs
}

fn validate_zones(
    zones: &[Zone],
    nodes: Option<&Cidr>,
    pods: Option<&Cidr>,
    services: Option<&Cidr>,
    fld: &Path,
) -> ErrorList {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    let mut zone_cidrs = Vec::with_capacity(zones.len());

    for (i, zone) in zones.iter().enumerate() {
        let zone_path = fld.index(i);
        if !names.insert(zone.name) {
            errs.push(FieldError::invalid_value(
                &zone_path,
                Value::display(zone.name),
                "the same zone cannot be specified multiple times",
            ));
        }
        let zone_cidr = Cidr::new(&zone.cidr, zone_path.child("cidr"));
        errs.extend(validate_cidr_is_canonical(zone_cidr.path(), zone_cidr.cidr()));
        // QUIRK: upstream builds this path from the zones path, without the zone's index.
        let endpoints_path = fld.child("serviceEndpoints");
        for (j, endpoint) in zone.service_endpoints.iter().enumerate() {
            errs.extend(validate_service_endpoint(endpoint, &endpoints_path.index(j)));
        }
        errs.extend(validate_zoned_nat_gateway_config(zone.nat_gateway.as_ref(), &zone_path.child("natGateway")));
        zone_cidrs.push(zone_cidr);
    }

    let all: Vec<&Cidr> = zone_cidrs.iter().collect();
    errs.extend(validate_cidr_parse(&all));
    if let Some(nodes) = nodes {
        errs.extend(nodes.validate_subset(&all));
    }
    errs.extend(validate_cidr_not_overlap(&zone_cidrs));
    if let Some(pods) = pods {
        errs.extend(pods.validate_not_overlap(&all));
    }
    if let Some(services) = services {
        errs.extend(services.validate_not_overlap(&all));
    }
    errs
}

fn idle_timeout_out_of_range(minutes: Option<i32>) -> Option<i32> {
    minutes.filter(|m| !(NAT_GATEWAY_MIN_TIMEOUT_IN_MINUTES..=NAT_GATEWAY_MAX_TIMEOUT_IN_MINUTES).contains(m))
}

const IDLE_TIMEOUT_RANGE_MSG: &str = "idleConnectionTimeoutMinutes values must range between 4 and 120";
const NAT_DISABLED_MSG: &str = "NatGateway is disabled but additional NatGateway config is passed";

fn validate_nat_gateway_config(nat: Option<&NatGatewayConfig>, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let Some(nat) = nat else { return errs };

    if !nat.enabled {
        if nat.zone.is_some()
            || nat.idle_connection_timeout_minutes.is_some()
            || !nat.ip_addresses.is_empty()
            || nat.sku.is_some()
        {
            errs.push(FieldError::invalid_value(path, gorepr::nat_gateway(nat), NAT_DISABLED_MSG));
        }
        return errs;
    }

    if let Some(idle) = idle_timeout_out_of_range(nat.idle_connection_timeout_minutes) {
        errs.push(FieldError::invalid_value(
            path.child("idleConnectionTimeoutMinutes"),
            Value::display(idle),
            IDLE_TIMEOUT_RANGE_MSG,
        ));
    }
    if let Some(sku) = &nat.sku {
        if !NAT_GATEWAY_SKUS.contains(&sku.as_str()) {
            errs.push(FieldError::not_supported(path.child("sku"), sku, &NAT_GATEWAY_SKUS));
        }
    }

    let ips_path = path.child("ipAddresses");
    match nat.effective_sku() {
        NAT_GATEWAY_SKU_STANDARD => {
            let Some(zone) = nat.zone else {
                if !nat.ip_addresses.is_empty() {
                    errs.push(FieldError::invalid_value(
                        path.child("zone"),
                        gorepr::nat_gateway(nat),
                        "Public IPs can only be selected for zonal NatGateways",
                    ));
                }
                return errs;
            };
            for (i, ip) in nat.ip_addresses.iter().enumerate() {
                let ip_path = ips_path.index(i);
                errs.extend(validate_resource_group_name(&ip.resource_group, &ip_path.child("resourceGroup")));
                errs.extend(validate_public_ip_name(&ip.name, &ip_path.child("name")));
                if ip.zone != Some(zone) {
                    errs.push(FieldError::invalid_value(
                        ip_path.child("zone"),
                        ip.zone.map_or_else(Value::null, Value::display),
                        format!(
                            "Public IP can't be used as it is not in the same zone as the NatGateway (zone {zone})"
                        ),
                    ));
                }
            }
        }
        NAT_GATEWAY_SKU_STANDARD_V2 => {
            if nat.zone.is_some() {
                errs.push(FieldError::forbidden(
                    path.child("zone"),
                    "zone cannot be specified when using StandardV2 SKU (StandardV2 is zone-redundant)",
                ));
            }
            for (i, ip) in nat.ip_addresses.iter().enumerate() {
                if ip.zone.is_some() {
                    errs.push(FieldError::forbidden(
                        ips_path.index(i).child("zone"),
                        "zone cannot be specified for IP addresses when using StandardV2 SKU (StandardV2 is zone-redundant)",
                    ));
                }
            }
        }
        _ => {}
    }
    errs
}

fn validate_zoned_nat_gateway_config(nat: Option<&ZonedNatGatewayConfig>, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let Some(nat) = nat else { return errs };

    // QUIRK: the range check runs before the "disabled" check.
    if let Some(idle) = idle_timeout_out_of_range(nat.idle_connection_timeout_minutes) {
        errs.push(FieldError::invalid_value(
            path.child("idleConnectionTimeoutMinutes"),
            Value::display(idle),
            IDLE_TIMEOUT_RANGE_MSG,
        ));
    }
    if !nat.enabled {
        if nat.idle_connection_timeout_minutes.is_some() || !nat.ip_addresses.is_empty() || nat.sku.is_some() {
            errs.push(FieldError::invalid_value(path, gorepr::zoned_nat_gateway(nat), NAT_DISABLED_MSG));
        }
        return errs;
    }

    let ips_path = path.child("ipAddresses");
    for (i, ip) in nat.ip_addresses.iter().enumerate() {
        let ip_path = ips_path.index(i);
        errs.extend(validate_resource_group_name(&ip.resource_group, &ip_path.child("resourceGroup")));
        errs.extend(validate_public_ip_name(&ip.name, &ip_path.child("name")));
    }
    if let Some(sku) = &nat.sku {
        if !NAT_GATEWAY_SKUS.contains(&sku.as_str()) {
            errs.push(FieldError::not_supported(path.child("sku"), sku, &NAT_GATEWAY_SKUS));
        }
        if sku != NAT_GATEWAY_SKU_STANDARD {
            errs.push(FieldError::forbidden(
                path.child("sku"),
                "Only Standard SKU can be configured for multi-subnet layout",
            ));
        }
    }
    errs
}

/// The spec's user-managed-egress rules (`networks.subnet` set), instead of the managed-mode
/// network rules. Every rule runs; none short-circuits another.
fn validate_user_managed_egress_network_config(config: &NetworkConfig, networks_path: &Path) -> ErrorList {
    const MODE: &str = "in user-managed-egress mode (networks.subnet is set)";
    let vnet_path = networks_path.child("vnet");
    let vnet = &config.vnet;
    let mut errs = Vec::new();

    // C1: the subnet lives in a user VNet, referenced by name and resource group.
    match vnet.name.as_deref() {
        None | Some("") => errs.push(FieldError::required(
            vnet_path.child("name"),
            format!("the name of an existing vnet must be set {MODE}: the subnet is looked up in this vnet"),
        )),
        Some(name) => errs.extend(validate_vnet_name(name, &vnet_path.child("name"))),
    }
    match vnet.resource_group.as_deref() {
        None | Some("") => errs.push(FieldError::required(
            vnet_path.child("resourceGroup"),
            format!("the resource group of an existing vnet must be set {MODE}: the subnet is looked up in this vnet"),
        )),
        Some(rg) => errs.extend(validate_resource_group_name(rg, &vnet_path.child("resourceGroup"))),
    }
    // C6, C7: the VNet is the user's.
    if vnet.cidr.is_some() {
        errs.push(FieldError::forbidden(
            vnet_path.child("cidr"),
            format!("cidr must not be set {MODE}: the vnet is user-managed and its address space is not declared here"),
        ));
    }
    if vnet.ddos_protection_plan_id.is_some() {
        errs.push(FieldError::forbidden(
            vnet_path.child("ddosProtectionPlanID"),
            format!("ddosProtectionPlanID must not be set {MODE}: the DDoS protection plan of a user-managed vnet is managed by its owner"),
        ));
    }
    // C3, C2, C4, C5: the subnet and its egress are the user's.
    if config.workers.is_some() {
        errs.push(FieldError::forbidden(
            networks_path.child("workers"),
            format!("workers must not be set {MODE}: the worker CIDR is discovered from the subnet"),
        ));
    }
    if !config.zones.is_empty() {
        errs.push(FieldError::forbidden(
            networks_path.child("zones"),
            format!(
                "zones must not be set {MODE}: only the single-subnet layout is supported with a user-managed subnet"
            ),
        ));
    }
    if config.nat_gateway.is_some() {
        errs.push(FieldError::forbidden(
            networks_path.child("natGateway"),
            format!("natGateway must not be set {MODE}: egress is user-managed; attach a NAT gateway to the subnet yourself if you need one"),
        ));
    }
    if !config.service_endpoints.is_empty() {
        errs.push(FieldError::forbidden(
            networks_path.child("serviceEndpoints"),
            format!("serviceEndpoints must not be set {MODE}: configure service endpoints on the subnet yourself"),
        ));
    }
    // The subnet reference itself.
    if let Some(subnet) = &config.subnet {
        let name_path = networks_path.child("subnet").child("name");
        if subnet.name.is_empty() {
            errs.push(FieldError::required(
                &name_path,
                "the name of an existing subnet in networks.vnet must be set in user-managed-egress mode",
            ));
        } else {
            errs.extend(validate_subnet_name(&subnet.name, &name_path));
        }
    }
    errs
}

/// apimachinery's `ValidateImmutableField(newVal, oldVal, fldPath)`: Invalid with the new value and
/// `field is immutable` when they differ (semantic equality: an empty list equals an absent one).
pub fn validate_immutable_field<T: PartialEq + GoValue>(new: &T, old: &T, fld: &Path) -> ErrorList {
    if new == old {
        return Vec::new();
    }
    vec![FieldError::invalid_value(fld, new.go_value(), FIELD_IMMUTABLE_ERROR_MSG)]
}

/// `ValidateInfrastructureConfigUpdate` with upstream's unit-test paths.
pub fn validate_infrastructure_config_update<'a>(
    old: &InfrastructureConfig,
    new: &InfrastructureConfig,
    shoot: impl Into<ShootContext<'a>>,
) -> ErrorList {
    validate_infrastructure_config_update_at(old, new, shoot, &Path::root())
}

/// `ValidateInfrastructureConfigUpdate(old, new, shoot, fldPath)`: the update rules (run in
/// addition to the create rules on `new`).
///
/// The spec's mode rules come first: adding or removing `networks.subnet` (D1, D2) is the only
/// error reported — the managed rules would otherwise report its consequences (a removed
/// `networks.workers`, say) as further errors; `networks.subnet.name` is immutable (D3); the VNet
/// name and resource group are immutable by upstream's rule (D4).
pub fn validate_infrastructure_config_update_at<'a>(
    old: &InfrastructureConfig,
    new: &InfrastructureConfig,
    shoot: impl Into<ShootContext<'a>>,
    fld: &Path,
) -> ErrorList {
    let shoot = shoot.into();
    let networks_path = fld.child("networks");
    let mut errs = Vec::new();

    match (&old.networks.subnet, &new.networks.subnet) {
        (None, Some(_)) => {
            errs.push(FieldError::forbidden(
                networks_path.child("subnet"),
                "networks.subnet cannot be added to an existing shoot: switching from managed to user-managed egress is not allowed, as it would delete the route table, security group, NAT gateway and public IPs while workloads run; create a new shoot instead",
            ));
            return errs;
        }
        (Some(_), None) => {
            errs.push(FieldError::forbidden(
                networks_path.child("subnet"),
                "networks.subnet cannot be removed from an existing shoot: switching from user-managed to managed egress is not allowed, as it would create a route table, security group, NAT gateway and public IPs while workloads run; create a new shoot instead",
            ));
            return errs;
        }
        (Some(old_subnet), Some(new_subnet)) => {
            errs.extend(validate_immutable_field(
                &new_subnet.name,
                &old_subnet.name,
                &networks_path.child("subnet").child("name"),
            ));
        }
        (None, None) => {}
    }

    errs.extend(validate_immutable_field(&new.resource_group, &old.resource_group, &fld.child("resourceGroup")));

    let workers_path = networks_path.child("workers");
    if old.networks.workers.is_some() && new.networks.workers.is_some() {
        errs.extend(validate_immutable_field(&new.networks.workers, &old.networks.workers, &workers_path));
    }

    if shoot.in_place_update_workers {
        const IN_PLACE_MSG: &str = "field is immutable when there is a worker with in-place update strategy";
        if new.identity != old.identity {
            errs.push(FieldError::invalid_value(fld.child("identity"), new.identity.go_value(), IN_PLACE_MSG));
        }
        if new.networks.zones != old.networks.zones {
            errs.push(FieldError::invalid_value(
                networks_path.child("zones"),
                new.networks.zones.go_value(),
                IN_PLACE_MSG,
            ));
        }
    }

    let (old_single, new_single) = (is_using_single_subnet_layout(old), is_using_single_subnet_layout(new));
    match (old_single, new_single) {
        (false, false) => errs.extend(validate_zones_update(old, new, &networks_path)),
        (false, true) => errs.push(FieldError::forbidden(
            networks_path.child("worker"),
            "updating the infrastructure configuration from using dedicated subnets per zone to using single subnet is not allowed",
        )),
        (true, false) => {
            let matches = old
                .networks
                .workers
                .as_ref()
                .is_some_and(|workers| new.networks.zones.iter().any(|z| &z.cidr == workers));
            if !matches {
                errs.push(FieldError::forbidden(
                    networks_path.child("zones"),
                    "when updating InfrastructureConfig to use dedicated subnets per zones, the CIDR for one of the zones must match that of the previous config.networks.workers",
                ));
            }
        }
        // QUIRK: repeats the workers check above.
        (true, true) => {
            errs.extend(validate_immutable_field(&new.networks.workers, &old.networks.workers, &workers_path))
        }
    }

    // QUIRK: upstream passes (old, new), so the error shows the old value.
    errs.extend(validate_immutable_field(&old.zoned, &new.zoned, &fld.child("zoned")));
    errs.extend(validate_vnet_config_update(&old.networks, &new.networks, &networks_path));
    errs.extend(validate_nat_gateway_sku_update(&old.networks, &new.networks, &networks_path));
    errs
}

fn validate_zones_update(old: &InfrastructureConfig, new: &InfrastructureConfig, networks_path: &Path) -> ErrorList {
    let zones_path = networks_path.child("zones");
    let mut errs = Vec::new();
    if old.networks.zones.len() > new.networks.zones.len() {
        errs.push(FieldError::forbidden(&zones_path, "removing zones is not allowed"));
    }
    for (i, new_zone) in new.networks.zones.iter().enumerate() {
        for old_zone in old.networks.zones.iter().filter(|z| z.name == new_zone.name) {
            errs.extend(validate_immutable_field(&new_zone.cidr, &old_zone.cidr, &zones_path.index(i).child("cidr")));
        }
    }
    errs
}

fn validate_vnet_config_update(old: &NetworkConfig, new: &NetworkConfig, networks_path: &Path) -> ErrorList {
    let vnet_path = networks_path.child("vnet");
    let mut errs = Vec::new();
    if is_external_vnet_used(&old.vnet) || is_default_vnet_config(&old.vnet) {
        errs.extend(validate_immutable_field(&new.vnet.name, &old.vnet.name, &vnet_path.child("name")));
        errs.extend(validate_immutable_field(
            &new.vnet.resource_group,
            &old.vnet.resource_group,
            &vnet_path.child("resourceGroup"),
        ));
        return errs;
    }
    let Some(old_cidr) = &old.vnet.cidr else { return errs };
    let cidr_path = vnet_path.child("cidr");
    let Some(new_cidr) = &new.vnet.cidr else {
        errs.push(FieldError::invalid_value(cidr_path, Value::null(), "vnet cidr need to be specified"));
        return errs;
    };
    let (old_net, new_net) = (Cidr::new(old_cidr, cidr_path.clone()), Cidr::new(new_cidr, cidr_path.clone()));
    if old_net.parses() && new_net.parses() && !new_net.contains(&old_net) {
        errs.push(FieldError::invalid(cidr_path, new_cidr, "VNet CIDR blocks can only be expanded"));
    }
    errs
}

const NAT_SKU_CHANGE_MSG: &str = "changing the NAT Gateway SKU is not allowed as it requires recreation of the NAT Gateway and causes outbound connectivity disruption";

fn validate_nat_gateway_sku_update(old: &NetworkConfig, new: &NetworkConfig, networks_path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if let (Some(old_nat), Some(new_nat)) = (&old.nat_gateway, &new.nat_gateway) {
        if old_nat.effective_sku() != new_nat.effective_sku() {
            errs.push(FieldError::invalid(
                networks_path.child("natGateway").child("sku"),
                new_nat.effective_sku(),
                NAT_SKU_CHANGE_MSG,
            ));
        }
    }
    for (i, new_zone) in new.zones.iter().enumerate() {
        let Some(new_nat) = &new_zone.nat_gateway else { continue };
        let old_nat = old.zones.iter().find(|z| z.name == new_zone.name).and_then(|z| z.nat_gateway.as_ref());
        if let Some(old_nat) = old_nat {
            if old_nat.effective_sku() != new_nat.effective_sku() {
                errs.push(FieldError::invalid(
                    networks_path.child("zones").index(i).child("natGateway").child("sku"),
                    new_nat.effective_sku(),
                    NAT_SKU_CHANGE_MSG,
                ));
            }
        }
    }
    errs
}

/// `ValidateInfrastructureConfigAgainstCloudProfile` with the zones of the shoot's region (as the
/// cloud profile lists them): every `networks.zones[i].name` must be one of them, unless a zone of
/// that name existed in the old config. Skipped for the single-subnet layout.
///
/// Upstream lists the supported values in map order (random); trellis sorts them.
pub fn validate_infrastructure_config_against_zones(
    old: Option<&InfrastructureConfig>,
    new: &InfrastructureConfig,
    region_zones: &[String],
    fld: &Path,
) -> ErrorList {
    let mut errs = Vec::new();
    if is_using_single_subnet_layout(new) {
        return errs;
    }
    let supported: BTreeSet<&str> = region_zones.iter().map(String::as_str).collect();
    let supported: Vec<&str> = supported.into_iter().collect();
    let zones_path = fld.child("networks").child("zones");
    for (i, zone) in new.networks.zones.iter().enumerate() {
        if old.is_some_and(|o| o.networks.zones.iter().any(|z| z.name == zone.name)) {
            continue;
        }
        let name = crate::azure::api::infrastructure_zone_to_string(zone.name);
        if !supported.contains(&name.as_str()) {
            errs.push(FieldError::not_supported_value(
                zones_path.index(i).child("name"),
                Value::display(zone.name),
                &supported,
            ));
        }
    }
    errs
}
