//! Pre-flight: runtime rules against the observed cloud, after admission validation and before the
//! plan is built. Every error names the cloud resource (name + parent) and what to do.

use super::api::InfrastructureConfig;
use super::byo::discovered;
use super::desired::{layout, vnet};
use super::names::{self, rtype};
use super::Ctx;
use ipnet::IpNet;
use serde_json::Value;
use trellis_planner::discover::Observed;

/// One pre-flight failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflightError {
    /// The spec rule, e.g. `C8`, or `upstream` for managed-mode checks.
    pub rule: &'static str,
    /// The field the user can change, when there is one.
    pub field: Option<&'static str>,
    pub message: String,
}

impl std::fmt::Display for PreflightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.field {
            Some(field) => write!(f, "{field}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

fn err(rule: &'static str, field: Option<&'static str>, message: String) -> PreflightError {
    PreflightError { rule, field, message }
}

/// All pre-flight errors for the shoot.
pub fn check(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Vec<PreflightError> {
    let mut errs = Vec::new();
    let rg_id = names::resource_group_id(&ctx.sub, &ctx.tn);
    if let Some(location) = observed.get(&rg_id).and_then(|rg| rg.get("location")).and_then(Value::as_str) {
        if !location.eq_ignore_ascii_case(&ctx.region) {
            errs.push(err(
                "upstream",
                None,
                format!(
                    "resource group {} exists in location {location}, but the shoot's region is {}. To proceed please delete the resource group",
                    ctx.tn, ctx.region
                ),
            ));
        }
    }
    let (vnet_rg, vnet_name, vnet_managed) = vnet(cfg, ctx);
    if !vnet_managed && observed.get(&names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name)).is_none() {
        errs.push(err(
            "upstream",
            Some("networks.vnet"),
            format!("user vnet not found: VNet {vnet_name} does not exist in resource group {vnet_rg} (subscription {}); create it or fix networks.vnet", ctx.sub),
        ));
        return errs;
    }
    if let Some(identity) = &cfg.identity {
        let id = names::resource_id(&ctx.sub, &identity.resource_group, rtype::IDENTITY, &identity.name);
        if observed.get(&id).is_none() {
            errs.push(err(
                "upstream",
                Some("identity"),
                format!(
                    "user-assigned identity {} not found in resource group {}; create it or fix identity",
                    identity.name, identity.resource_group
                ),
            ));
        }
    }
    if cfg.networks.subnet.is_some() {
        byo(cfg, ctx, observed, &mut errs);
    } else {
        for s in layout(cfg, ctx) {
            for (rg, name) in s.nat.iter().flat_map(|n| n.user_ips.iter()) {
                if observed.get(&names::resource_id(&ctx.sub, rg, rtype::PUBLIC_IP, name)).is_none() {
                    errs.push(err(
                        "upstream",
                        Some("networks.natGateway.ipAddresses"),
                        format!("public IP {name} not found in resource group {rg}; create it or remove it from the NAT gateway's ipAddresses"),
                    ));
                }
            }
        }
    }
    errs
}

/// C8–C12: the BYO subnet exists and is compatible.
fn byo(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed, errs: &mut Vec<PreflightError>) {
    let subnet = cfg.networks.subnet.as_ref().expect("BYO mode");
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let subnet_id = names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &subnet.name);
    let where_ = format!("subnet {} in VNet {vnet_name} (resource group {vnet_rg})", subnet.name);
    if observed.get(&subnet_id).is_none() {
        errs.push(err(
            "C8",
            Some("networks.subnet.name"),
            format!("{where_} not found; create the subnet in the VNet before creating the shoot, or fix networks.subnet.name"),
        ));
        return;
    }
    let found = discovered(cfg, ctx, observed);
    if found.route_table_id.is_none() && !ctx.overlay {
        errs.push(err(
            "C9",
            Some("networks.subnet"),
            format!("{where_} has no route table attached; attach a route table (the CCM writes per-node pod-CIDR routes into it), or enable overlay in spec.networking.providerConfig (overlay.enabled: true) to run without one"),
        ));
    }
    if found.nsg_id.is_none() {
        errs.push(err(
            "C9b",
            Some("networks.subnet"),
            format!("{where_} has no network security group attached; attach an NSG dedicated to this shoot (the CCM needs its name as securityGroupName in azure.json)"),
        ));
    }
    match found.subnet_cidr.as_deref().map(str::parse::<IpNet>) {
        Some(Ok(cidr)) => cidr_rules(ctx, &where_, cidr, errs),
        Some(Err(_)) | None => errs.push(err(
            "C10",
            Some("networks.subnet"),
            format!("{where_} has no readable address prefix ({:?})", found.subnet_cidr),
        )),
    }
    for (what, id, parsed) in [
        ("route table", &found.route_table_id, &found.route_table),
        ("network security group", &found.nsg_id, &found.nsg),
    ] {
        if let (Some(id), Some(parsed)) = (id, parsed) {
            if !parsed.subscription.eq_ignore_ascii_case(&ctx.sub) {
                errs.push(err(
                    "C12",
                    Some("networks.subnet"),
                    format!("{where_}: the attached {what} {id} is in subscription {}, not the shoot's subscription {}; the CCM's azure.json cannot reference resources in another subscription — attach a {what} from subscription {}", parsed.subscription, ctx.sub, ctx.sub),
                ));
            }
        }
    }
}

/// C10 (subnet ⊆ nodes) and C11 (no overlap with pods/services).
fn cidr_rules(ctx: &Ctx, where_: &str, cidr: IpNet, errs: &mut Vec<PreflightError>) {
    let parse = |s: &Option<String>| s.as_deref().and_then(|s| s.parse::<IpNet>().ok());
    match parse(&ctx.nodes) {
        Some(nodes) if !nodes.contains(&cidr) => errs.push(err(
            "C10",
            Some("networking.nodes"),
            format!("{where_} has CIDR {cidr}, which is not within networking.nodes ({nodes}); widen networking.nodes or use a subnet inside it"),
        )),
        None => errs.push(err(
            "C10",
            Some("networking.nodes"),
            format!("networking.nodes must be set in user-managed-egress mode to check {where_} ({cidr}) against it"),
        )),
        _ => {}
    }
    for (field, value) in [("networking.pods", &ctx.pods), ("networking.services", &ctx.services)] {
        if let Some(other) = parse(value) {
            if other.contains(&cidr.network()) || cidr.contains(&other.network()) {
                errs.push(err(
                    "C11",
                    Some(if field == "networking.pods" { "networking.pods" } else { "networking.services" }),
                    format!("{where_} has CIDR {cidr}, which overlaps {field} ({other}); the node network must not overlap pods or services"),
                ));
            }
        }
    }
}
