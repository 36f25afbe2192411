//! Pre-flight: runtime rules against the observed cloud, after admission validation and before the
//! plan is built. Every error is one line naming the project, the region and the resource, and what
//! to do.
//!
//! User-managed egress (the spec's runtime validator, C13–C17, and upstream's
//! `ensureUserManagedWorkersSubnet` / `ensureUserManagedServicesSubnet` / `ensureUserManagedVPC`):
//! the VPC exists; the workers subnet exists in the shoot's region and belongs to the VPC (C13); its
//! primary range contains `networking.nodes` and overlaps neither pods nor services (C14, upstream's
//! `validateWorkerSubnetCIDRRelationships` and its messages); in dual-stack it is `IPV4_IPV6` with an
//! external IPv6 range (C15), has the secondary range `podSecondaryRangeName` (C16, upstream's
//! message) whose range equals `networking.pods` (C17, the spec's rule; upstream does not compare it);
//! the services subnet exists in the region and VPC, `IPV4_IPV6` with an external IPv6 range.
//!
//! Managed mode (upstream's `ensureUserManagedVPC`, `ensureUserManagedCloudRouter` and
//! `configvalidator.go`): a VPC and Cloud Router named in the configuration (A2) exist, and every
//! `natIPNames` address (A3) exists in the region and is used by nothing but the shoot's router.

use super::api::{InfrastructureConfig, Mode, SubnetReference};
use super::desired::{address_res, nat_ip_names, router_res, subnet_res, vpc_res};
use super::names;
use super::Ctx;
use crate::cidr::Cidr;
use crate::field::{escape_unprintable, ErrorList, Path};
use serde_json::Value;
use trellis_planner::discover::{NotFetched, Observed};

/// One pre-flight failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflightError {
    /// The spec rule (`C13`…`C17`), or `upstream` for upstream's checks.
    pub rule: &'static str,
    /// The field the user can change.
    pub field: &'static str,
    pub message: String,
    /// It says that a resource of the user's the shoot names does not exist (its VPC, subnet, Cloud
    /// Router): against the simulated cloud, most often one no world file declared.
    pub missing: bool,
}

impl std::fmt::Display for PreflightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A message that starts with an index continues the field's path (`natIPNames[0].name`).
        let sep = if self.message.starts_with('[') { "" } else { ": " };
        write!(f, "{}{sep}{}", self.field, self.message)
    }
}

impl std::error::Error for PreflightError {}

impl PreflightError {
    /// As the pipeline carries it: a missing resource of the user's marked so.
    pub fn boxed(self) -> Box<dyn std::error::Error + Send + Sync> {
        let missing = self.missing;
        crate::provider::preflight_error(self, missing)
    }
}

fn err(rule: &'static str, field: &'static str, message: String) -> PreflightError {
    PreflightError { rule, field, message, missing: false }
}

/// A resource of the user's that the shoot names does not exist.
fn missing(rule: &'static str, field: &'static str, message: String) -> PreflightError {
    PreflightError { rule, field, message, missing: true }
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// All pre-flight errors of the shoot. "Not found" is said only of what discovery looked up.
pub fn check(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<PreflightError>, NotFetched> {
    match cfg.mode() {
        Mode::UserManagedEgress { workers, services } => byo(ctx, cfg, workers, services, observed),
        Mode::Managed => managed(cfg, ctx, observed),
    }
}

fn vpc_exists(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
) -> Result<Option<PreflightError>, NotFetched> {
    let vpc = vpc_res(cfg, ctx);
    Ok(observed.get(&vpc.id)?.is_none().then(|| {
        missing(
            "upstream",
            "networks.vpc.name",
            format!(
                "VPC {} not found in project {} (failed to locate user-managed VPC); create it, or name an existing VPC of the project",
                vpc.name, ctx.project
            ),
        )
    }))
}

/// A user subnet: present in the region and in the VPC, or the error (C13) saying which is not.
fn user_subnet<'a>(
    field: &'static str,
    what: &str,
    name: &str,
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &'a Observed,
    errs: &mut Vec<PreflightError>,
) -> Result<Option<&'a Value>, NotFetched> {
    let vpc = vpc_res(cfg, ctx);
    let Some(subnet) = observed.get(&subnet_res(ctx, name).id)? else {
        errs.push(missing(
            "C13",
            field,
            format!(
                "user-managed {what} subnet {name:?} not found in project {} region {}; create it in VPC {} in that region, or name an existing one",
                ctx.project, ctx.region, vpc.name
            ),
        ));
        return Ok(None);
    };
    let network = text(subnet, "network").unwrap_or_default();
    if observed.ids().key(network) != observed.ids().key(&vpc.id) {
        errs.push(err(
            "C13",
            field,
            format!(
                "user-managed {what} subnet {name:?} in project {} region {} belongs to network {:?}, not to the configured VPC {:?}; name a subnet of VPC {}",
                ctx.project,
                ctx.region,
                escape_unprintable(network),
                vpc.name,
                vpc.name
            ),
        ));
        return Ok(None);
    }
    Ok(Some(subnet))
}

/// C15 (and the services subnet's rule): `stackType: IPV4_IPV6` with an external IPv6 range.
fn dual_stack_subnet(
    rule: &'static str,
    field: &'static str,
    what: &str,
    name: &str,
    ctx: &Ctx,
    subnet: &Value,
) -> Option<PreflightError> {
    let stack = text(subnet, "stackType").unwrap_or("IPV4_ONLY");
    let prefix = text(subnet, "externalIpv6Prefix");
    if stack != "IPV4_IPV6" || prefix.is_none() {
        return Some(err(
            rule,
            field,
            format!(
                "user-managed {what} subnet {name:?} in project {} region {} has stackType {} and {}: a dual-stack shoot needs stackType IPV4_IPV6 with ipv6AccessType EXTERNAL (an external /64 assigned); recreate the subnet that way",
                ctx.project,
                ctx.region,
                escape_unprintable(stack),
                if prefix.is_some() { "an external IPv6 range" } else { "no external IPv6 range" }
            ),
        ));
    }
    None
}

fn byo(
    ctx: &Ctx,
    cfg: &InfrastructureConfig,
    workers: &SubnetReference,
    services: Option<&SubnetReference>,
    observed: &Observed,
) -> Result<Vec<PreflightError>, NotFetched> {
    let mut errs: Vec<PreflightError> = vpc_exists(cfg, ctx, observed)?.into_iter().collect();
    if !errs.is_empty() {
        // Without the VPC no subnet can belong to it: one error says it all.
        return Ok(errs);
    }
    let name = workers.name.as_str();
    let field = "networks.subnetWorkers.name";
    if let Some(subnet) = user_subnet(field, "nodes", name, cfg, ctx, observed, &mut errs)? {
        // C14: upstream's validateWorkerSubnetCIDRRelationships.
        let range = text(subnet, "ipCidrRange").unwrap_or_default();
        let worker = Cidr::new(range, Path::new("networks").child("subnetWorkers"));
        let networking = Path::new("networking");
        let mut cidr_errs: ErrorList = worker.validate_parse();
        if cidr_errs.is_empty() {
            if let Some(nodes) = &ctx.nodes {
                cidr_errs.extend(worker.validate_subset(&[&Cidr::new(nodes, networking.child("nodes"))]));
            }
            for (key, v) in [("pods", &ctx.pods), ("services", &ctx.services)] {
                if let Some(v) = v {
                    cidr_errs.extend(worker.validate_not_overlap(&[&Cidr::new(v, networking.child(key))]));
                }
            }
        }
        if !cidr_errs.is_empty() {
            let list: Vec<String> = cidr_errs.iter().map(ToString::to_string).collect();
            errs.push(err(
                "C14",
                field,
                format!(
                    "user-managed nodes subnet {name:?} (project {}, region {}, primary range {}): {}; the subnet's primary range must contain spec.networking.nodes and overlap neither pods nor services",
                    ctx.project,
                    ctx.region,
                    escape_unprintable(range),
                    list.join(", ")
                ),
            ));
        }
        if ctx.dual_stack() {
            errs.extend(dual_stack_subnet("C15", field, "nodes", name, ctx, subnet));
            if let Some(range_name) = workers.pod_secondary_range_name.as_deref() {
                let ranges = subnet.get("secondaryIpRanges").and_then(Value::as_array).cloned().unwrap_or_default();
                match ranges.iter().find(|r| r.get("rangeName").and_then(Value::as_str) == Some(range_name)) {
                    None => errs.push(err(
                        "C16",
                        "networks.subnetWorkers.podSecondaryRangeName",
                        format!(
                            "user-managed nodes subnet {name:?} does not have a secondary IP range named {range_name:?} (project {}, region {}); add it to the subnet with spec.networking.pods as its range, or name an existing one",
                            ctx.project, ctx.region
                        ),
                    )),
                    Some(r) => {
                        let got = text(r, "ipCidrRange").unwrap_or_default();
                        let want = ctx.pods.as_deref().unwrap_or_default();
                        let same = match (got.parse::<ipnet::IpNet>(), want.parse::<ipnet::IpNet>()) {
                            (Ok(a), Ok(b)) => a == b,
                            _ => got == want,
                        };
                        if !same {
                            errs.push(err(
                                "C17",
                                "networks.subnetWorkers.podSecondaryRangeName",
                                format!(
                                    "secondary IP range {range_name:?} of user-managed nodes subnet {name:?} (project {}, region {}) is {}, but spec.networking.pods is {}; they must be equal (alias-IP pod IPAM)",
                                    ctx.project,
                                    ctx.region,
                                    escape_unprintable(got),
                                    escape_unprintable(want)
                                ),
                            ));
                        }
                    }
                }
            }
        }
    }
    if ctx.dual_stack() {
        if let Some(s) = services {
            let field = "networks.subnetServices.name";
            if let Some(subnet) = user_subnet(field, "services", &s.name, cfg, ctx, observed, &mut errs)? {
                errs.extend(dual_stack_subnet("C15", field, "services", &s.name, ctx, subnet));
            }
        }
    }
    Ok(errs)
}

fn managed(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<PreflightError>, NotFetched> {
    let mut errs = Vec::new();
    if names::is_user_vpc(cfg) {
        errs.extend(vpc_exists(cfg, ctx, observed)?);
    }
    let router = router_res(cfg, ctx);
    if names::user_router(cfg).is_some() && observed.get(&router.id)?.is_none() {
        errs.push(missing(
            "upstream",
            "networks.vpc.cloudRouter.name",
            format!(
                "Cloud Router {} not found in project {} region {} (failed to locate user-managed CloudRouter); create it in VPC {}, or name an existing router",
                router.name,
                ctx.project,
                ctx.region,
                names::vpc_name(cfg, &ctx.tn)
            ),
        ));
    }
    // configvalidator.go: each natIPName exists and is used by nothing but the shoot's router.
    for (i, name) in nat_ip_names(cfg).into_iter().enumerate() {
        let field = "networks.cloudNAT.natIPNames";
        match observed.get(&address_res(ctx, name).id)? {
            None => errs.push(err(
                "upstream",
                field,
                format!(
                    "[{i}].name: Not found: {name:?} (no address {name} in project {} region {}); reserve the static external address there, or fix the name",
                    ctx.project, ctx.region
                ),
            )),
            Some(a) => {
                let users: Vec<String> = a
                    .get("users")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|u| escape_unprintable(names::last_segment(u)))
                    .collect();
                if users.len() > 1 || (users.len() == 1 && users[0] != router.name) {
                    errs.push(err(
                        "upstream",
                        field,
                        format!(
                            "[{i}].name: Invalid value: {name:?}: external IP address is already in use by {} (address {name} in project {} region {}); release it or reserve another",
                            users.join(","),
                            ctx.project,
                            ctx.region
                        ),
                    ));
                }
            }
        }
    }
    Ok(errs)
}
