//! Pre-flight: runtime rules against the observed cloud, after admission validation and before the
//! plan is built. Every error names the cloud resource (name + parent) and what to do.

use super::api::InfrastructureConfig;
use super::byo::discovered;
use super::desired::{layout, vnet};
use super::names::{self, rtype};
use super::prefixes::subnet_nets;
use super::state::ByoFacts;
use super::Ctx;
use crate::networking::intersect;
use ipnet::IpNet;
use serde_json::Value;
use trellis_planner::discover::{NotFetched, Observed};

/// One pre-flight failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflightError {
    /// The spec rule, e.g. `C8`, or `upstream` for managed-mode checks.
    pub rule: &'static str,
    /// The field the user can change, when there is one.
    pub field: Option<&'static str>,
    pub message: String,
    /// It says that a resource of the user's the shoot names does not exist (its VNet, subnet, public
    /// IP, identity): against the simulated cloud, most often one no world file declared.
    pub missing: bool,
}

impl std::fmt::Display for PreflightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.field {
            Some(field) => write!(f, "{field}: {}", self.message),
            None => f.write_str(&self.message),
        }
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

fn err(rule: &'static str, field: Option<&'static str>, message: String) -> PreflightError {
    PreflightError { rule, field, message, missing: false }
}

/// A resource of the user's that the shoot names does not exist.
fn missing(rule: &'static str, field: Option<&'static str>, message: String) -> PreflightError {
    PreflightError { rule, field, message, missing: true }
}

/// All pre-flight errors for the shoot. "Not found" is said only of what discovery looked up.
pub fn check(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<PreflightError>, NotFetched> {
    let mut errs = Vec::new();
    let rg_id = names::resource_group_id(&ctx.sub, &ctx.tn);
    if let Some(location) = observed.get(&rg_id)?.and_then(|rg| rg.get("location")).and_then(Value::as_str) {
        if !same_location(location, &ctx.region) {
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
    let live_vnet = observed.get(&names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name))?;
    if !vnet_managed && live_vnet.is_none() {
        errs.push(missing(
            "upstream",
            Some("networks.vnet"),
            format!("user vnet not found: VNet {vnet_name} does not exist in resource group {vnet_rg} (subscription {}); create it or fix networks.vnet", ctx.sub),
        ));
        return Ok(errs);
    }
    if let Some(live) = live_vnet {
        errs.extend(vnet_region(cfg, ctx, &vnet_rg, &vnet_name, vnet_managed, live));
        if !vnet_managed && !cfg.is_using_user_managed_egress() {
            errs.extend(subnets_in_user_vnet(cfg, ctx, observed, live)?);
        }
    }
    if let Some(identity) = &cfg.identity {
        let id = names::resource_id(&ctx.sub, &identity.resource_group, rtype::IDENTITY, &identity.name);
        if observed.get(&id)?.is_none() {
            errs.push(missing(
                "upstream",
                Some("identity"),
                format!(
                    "user-assigned identity {} not found in resource group {}; create it or fix identity",
                    identity.name, identity.resource_group
                ),
            ));
        }
    }
    if !vnet_managed && vnet_rg.eq_ignore_ascii_case(&ctx.tn) {
        errs.push(in_cluster_rg(ctx, "networks.vnet.resourceGroup", &format!("VNet {vnet_name}")));
    }
    if cfg.is_using_user_managed_egress() {
        byo(cfg, ctx, observed, &mut errs)?;
    } else {
        for s in layout(cfg, ctx) {
            for (rg, name) in s.nat.iter().flat_map(|n| n.user_ips.iter()) {
                if observed.get(&names::resource_id(&ctx.sub, rg, rtype::PUBLIC_IP, name))?.is_none() {
                    errs.push(missing(
                        "upstream",
                        Some("networks.natGateway.ipAddresses"),
                        format!("public IP {name} not found in resource group {rg}; create it or remove it from the NAT gateway's ipAddresses"),
                    ));
                }
            }
        }
    }
    Ok(errs)
}

/// C8–C12: the BYO subnet exists and is compatible.
fn byo(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
    errs: &mut Vec<PreflightError>,
) -> Result<(), NotFetched> {
    let subnet = cfg.networks.subnet.as_ref().expect("BYO mode");
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let subnet_id = names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &subnet.name);
    let where_ = format!("subnet {} in VNet {vnet_name} (resource group {vnet_rg})", subnet.name);
    if observed.get(&subnet_id)?.is_none() {
        errs.push(missing(
            "C8",
            Some("networks.subnet.name"),
            format!("{where_} not found; create the subnet in the VNet before creating the shoot, or fix networks.subnet.name"),
        ));
        return Ok(());
    }
    let found = discovered(cfg, ctx, observed)?;
    for (what, parsed) in [("route table", &found.route_table), ("network security group", &found.nsg)] {
        if let Some(p) = parsed.as_ref().filter(|p| p.resource_group.eq_ignore_ascii_case(&ctx.tn)) {
            errs.push(in_cluster_rg(ctx, "networks.subnet", &format!("the subnet's {what} {}", p.name)));
        }
    }
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
    // ARM shows one prefix (`addressPrefix`) or a list (`addressPrefixes`): every prefix is checked.
    match found.prefixes.as_ref().map(|p| p.parsed()) {
        Some(Ok(cidrs)) => cidr_rules(ctx, &where_, &cidrs, errs),
        Some(Err(bad)) => errs.push(err(
            "C10",
            Some("networks.subnet"),
            format!("{where_} has address prefix '{bad}', which is not a CIDR; fix the subnet's address prefixes"),
        )),
        None => errs.push(err(
            "C10",
            Some("networks.subnet"),
            format!("{where_} shows no address prefix (neither properties.addressPrefix nor properties.addressPrefixes); give the subnet its address range"),
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
    Ok(())
}

/// A user-owned resource inside the cluster resource group would be deleted with it on destroy.
fn in_cluster_rg(ctx: &Ctx, field: &'static str, what: &str) -> PreflightError {
    err(
        "ownership",
        Some(field),
        format!(
            "{what} is in resource group {}, the shoot's cluster resource group, which trellis owns and deletes on destroy (with everything in it); move your resource to another resource group",
            ctx.tn
        ),
    )
}

/// C10 (every prefix of the subnet ⊆ nodes) and C11 (no prefix overlaps pods/services).
fn cidr_rules(ctx: &Ctx, where_: &str, cidrs: &[IpNet], errs: &mut Vec<PreflightError>) {
    let parse = |s: &Option<String>| s.as_deref().and_then(|s| s.parse::<IpNet>().ok());
    let Some(nodes) = parse(&ctx.nodes) else {
        let shown: Vec<String> = cidrs.iter().map(IpNet::to_string).collect();
        errs.push(err(
            "C10",
            Some("networking.nodes"),
            format!(
                "networking.nodes must be set in user-managed-egress mode to check {where_} ({}) against it",
                shown.join(", ")
            ),
        ));
        return;
    };
    for cidr in cidrs {
        if !nodes.contains(cidr) {
            errs.push(err(
                "C10",
                Some("networking.nodes"),
                format!("{where_} has CIDR {cidr}, which is not within networking.nodes ({nodes}); widen networking.nodes or use a subnet inside it"),
            ));
        }
        for (field, value) in [("networking.pods", &ctx.pods), ("networking.services", &ctx.services)] {
            if let Some(other) = parse(value).filter(|other| intersect(other, cidr)) {
                errs.push(err(
                    "C11",
                    Some(field),
                    format!("{where_} has CIDR {cidr}, which overlaps {field} ({other}); the node network must not overlap pods or services"),
                ));
            }
        }
    }
}

/// Location names as ARM compares them: `West Europe` is `westeurope`.
fn same_location(a: &str, b: &str) -> bool {
    names::arm_location(a) == names::arm_location(b)
}

/// The VNet must be in the shoot's region: the shoot's machines (and in managed mode its route table,
/// NSG and NAT gateways) are created there, and ARM refuses references across regions.
fn vnet_region(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    rg: &str,
    name: &str,
    managed: bool,
    vnet: &Value,
) -> Option<PreflightError> {
    let location = vnet.get("location").and_then(Value::as_str)?;
    if same_location(location, &ctx.region) {
        return None;
    }
    Some(if managed {
        err(
            "upstream",
            None,
            format!(
                "VNet {name} (resource group {rg}) exists in location {location}, but the shoot's region is {}: the location of the VNet does not match expected location; delete the VNet so that it is created in {}",
                ctx.region, ctx.region
            ),
        )
    } else {
        let created = if cfg.is_using_user_managed_egress() {
            "the shoot's machines are"
        } else {
            "the shoot's route table, network security group, NAT gateways and machines are"
        };
        err(
            "vnet",
            Some("networks.vnet"),
            format!(
                "VNet {name} (resource group {rg}) is in location {location}, but the shoot's region is {region}; {created} created in {region}, and Azure refuses to attach them to a VNet in another region (InvalidResourceReference) — use a VNet in {region}, or fix networks.vnet",
                region = ctx.region
            ),
        )
    })
}

/// Managed subnets in a VNet of the user's: each must lie inside the VNet's address space and must not
/// overlap a subnet that is not this shoot's (upstream's own-subnet rule: the name starts with
/// `<tn>-nodes`). ARM refuses both at the subnet PUT.
fn subnets_in_user_vnet(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
    live: &Value,
) -> Result<Vec<PreflightError>, NotFetched> {
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let vnet_id = names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name);
    let space_prefixes: Vec<&str> = live
        .pointer("/properties/addressSpace/addressPrefixes")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let space: Vec<IpNet> = space_prefixes.iter().filter_map(|p| p.parse().ok()).collect();
    let own = names::subnet_name(&ctx.tn, None, false);
    let others: Vec<(String, Vec<IpNet>)> = observed
        .list(&vnet_id, rtype::SUBNET)?
        .iter()
        .filter_map(|s| Some((s.get("name").and_then(Value::as_str)?.to_string(), subnet_nets(s))))
        .filter(|(name, _)| !name.starts_with(&own))
        .collect();
    let field = if cfg.networks.zones.is_empty() { "networks.workers" } else { "networks.zones" };
    let in_vnet = format!("VNet {vnet_name} (resource group {vnet_rg})");
    let mut errs = Vec::new();
    for s in layout(cfg, ctx) {
        let Ok(cidr) = s.cidr.parse::<IpNet>() else { continue };
        let what = match s.zone {
            Some(z) => format!("subnet {} (zone {z}, {cidr})", s.name),
            None => format!("subnet {} ({cidr})", s.name),
        };
        if !space.is_empty() && !space.iter().any(|v| v.contains(&cidr)) {
            errs.push(err(
                "vnet",
                Some(field),
                format!(
                    "{what} lies outside the address space of {in_vnet}: {}; Azure refuses such a subnet (NetcfgSubnetRangeOutsideVnet) — use a CIDR inside the VNet's address space, or add an address range to the VNet",
                    space_prefixes.join(", ")
                ),
            ));
        }
        for (other, nets) in &others {
            if let Some(hit) = nets.iter().find(|n| intersect(n, &cidr)) {
                errs.push(err(
                    "vnet",
                    Some(field),
                    format!(
                        "{what} overlaps subnet {other} ({hit}) of {in_vnet}; Azure refuses overlapping subnets (NetcfgSubnetRangesOverlap) — choose a CIDR that no other subnet of the VNet uses"
                    ),
                ));
            }
        }
    }
    Ok(errs)
}

/// The BYO facts to remember after an apply (empty in managed mode).
pub fn byo_memory(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<ByoFacts, NotFetched> {
    if !cfg.is_using_user_managed_egress() {
        return Ok(ByoFacts::default());
    }
    let found = discovered(cfg, ctx, observed)?;
    Ok(ByoFacts {
        subnet_cidr: found.prefixes.map(|p| p.display()),
        nsg_id: found.nsg_id,
        route_table_id: Some(found.route_table_id.unwrap_or_default()),
    })
}

/// Drift of the user's resources since the last apply: the subnet's CIDR, NSG or route table changed
/// out of band. The shoot's nodes, azure.json and the CCM all depend on them, so the plan stops and says
/// what moved; `--accept-drift` takes the new values on purpose.
/// `now` is [`byo_memory`] of the observed cloud.
pub fn drift(cfg: &InfrastructureConfig, ctx: &Ctx, now: &ByoFacts, remembered: &ByoFacts) -> Vec<PreflightError> {
    let Some(subnet) = &cfg.networks.subnet else { return Vec::new() };
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let where_ = format!("subnet {} in VNet {vnet_name} (resource group {vnet_rg})", subnet.name);
    let mut errs = Vec::new();
    type Fact = fn(&ByoFacts) -> Option<String>;
    let facts: [(Fact, &str, &str); 3] = [
        (|f| f.subnet_cidr.clone(), "address prefix", "the nodes' addresses and the CIDR checks depend on it"),
        (
            |f| f.nsg_id.clone(),
            "network security group",
            "azure.json names it as securityGroupName; the CCM and bastion rules live on it",
        ),
        (
            |f| f.route_table_id.clone(),
            "route table",
            "azure.json names it as routeTableName; the CCM writes per-node routes into it",
        ),
    ];
    for (fact, what, consequence) in facts {
        let Some(before) = fact(remembered) else { continue };
        let after = fact(now).unwrap_or_default();
        if !before.eq_ignore_ascii_case(&after) {
            let show = |v: &str| if v.is_empty() { "none".to_string() } else { v.to_string() };
            errs.push(err(
                "drift",
                Some("networks.subnet"),
                format!(
                    "{where_}: the {what} changed since the last apply, from {} to {} (an out-of-band change); {consequence}. Restore it, or re-run with --accept-drift if the change is intended",
                    show(&before),
                    show(&after)
                ),
            ));
        }
    }
    errs
}
