//! User-managed egress (bring-your-own subnet): the spec's task-gating matrix as desired resources.
//!
//! | task                 | here                                                                    |
//! |----------------------|-------------------------------------------------------------------------|
//! | EnsureResourceGroup  | managed, unchanged                                                      |
//! | EnsureVirtualNetwork | user VNet: verify                                                       |
//! | EnsureManagedIdentity| unchanged (read)                                                        |
//! | EnsureRouteTable     | skip; the subnet's route table (if any) is verified                     |
//! | EnsureSecurityGroup  | skip; the subnet's NSG is verified                                      |
//! | EnsurePublicIps/Nats | skip (no NAT in this mode)                                              |
//! | EnsureSubnets        | EnsureUserSubnet: verify existence and associations, never written      |

use super::api::InfrastructureConfig;
use super::desired::{check, identity, res, resource_group, skipped, vnet};
use super::kind;
use super::names::{self, rtype};
use super::prefixes::SubnetPrefixes;
use super::Ctx;
use serde_json::Value;
use trellis_planner::discover::{NotFetched, Observed};
use trellis_planner::model::{Desired, VerifySpec};
use trellis_plans::{Ownership, Reason, ReasonCode};

const GATED: &str = "skipped: user-managed egress (networks.subnet is set)";

/// What the BYO subnet points at, discovered from its associations.
#[derive(Clone, Debug, Default)]
pub struct Discovered {
    /// The subnet's address prefixes, in the field ARM shows them in.
    pub prefixes: Option<SubnetPrefixes>,
    pub route_table: Option<names::ArmId>,
    pub route_table_id: Option<String>,
    pub nsg: Option<names::ArmId>,
    pub nsg_id: Option<String>,
}

/// Reads the BYO subnet's associations from the observed cloud: the subnet (discovery round 1) and
/// the route table and NSG it references (round 2) must have been fetched.
pub fn discovered(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Discovered, NotFetched> {
    let Some(subnet) = &cfg.networks.subnet else { return Ok(Discovered::default()) };
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let Some(live) = observed.get(&names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &subnet.name))? else {
        return Ok(Discovered::default());
    };
    // Spelled as the referenced resource and the configuration spell it, not as the reference does.
    let link = |p: &str| -> Result<Option<String>, NotFetched> {
        let Some(reference) = live.pointer(p).and_then(Value::as_str) else { return Ok(None) };
        let own_id = observed.get(reference)?.and_then(|r| r.get("id")).and_then(Value::as_str);
        Ok(Some(names::canonical_reference(reference, own_id, &[&vnet_rg, &ctx.tn])))
    };
    let route_table_id = link("/properties/routeTable/id")?;
    let nsg_id = link("/properties/networkSecurityGroup/id")?;
    Ok(Discovered {
        prefixes: SubnetPrefixes::of(live),
        route_table: route_table_id.as_deref().and_then(names::parse_id),
        route_table_id,
        nsg: nsg_id.as_deref().and_then(names::parse_id),
        nsg_id,
    })
}

pub fn desired(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, NotFetched> {
    let tn = ctx.tn.as_str();
    let subnet = cfg.networks.subnet.as_ref().expect("only called in user-managed-egress mode");
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let found = discovered(cfg, ctx, observed)?;
    let mut out = vec![resource_group(ctx)];

    let vnet_id = names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name);
    let vnet_address = names::address(kind::VIRTUAL_NETWORK, &vnet_rg, &vnet_name);
    out.push(Desired::Verify(VerifySpec {
        res: res(kind::VIRTUAL_NETWORK, &vnet_rg, &vnet_name, vnet_id),
        checks: vec![],
        depends_on: vec![],
        why: Reason::new(ReasonCode::ByoUserOwned, "bring-your-own VNet (networks.vnet): read only; it must exist"),
    }));
    out.extend(identity(cfg, ctx));

    // The tasks the spec gates out, shown so a reviewer sees what is not created and why.
    out.push(skipped(
        kind::ROUTE_TABLE,
        tn,
        names::ROUTE_TABLE_NAME,
        None,
        Ownership::Managed,
        Reason::new(
            ReasonCode::GatedOut,
            format!("{GATED} — no route table is created; the route table is discovered from the BYO subnet"),
        ),
    ));
    out.push(skipped(
        kind::NETWORK_SECURITY_GROUP,
        tn,
        &names::nsg_name(tn),
        None,
        Ownership::Managed,
        Reason::new(
            ReasonCode::GatedOut,
            format!("{GATED} — no NSG is created; the NSG is discovered from the BYO subnet"),
        ),
    ));
    out.push(skipped(
        kind::NAT_GATEWAY,
        tn,
        &names::nat_name(tn, None, false),
        None,
        Ownership::Managed,
        Reason::new(ReasonCode::GatedOut, format!("{GATED} — Gardener creates no NAT gateway or public IPs; egress is yours (a NAT you attach to the subnet stays untouched)")),
    ));

    let subnet_id = names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &subnet.name);
    let mut checks = vec![];
    let subnet_ref = format!("subnet {} in VNet {vnet_rg}/{vnet_name}", subnet.name);
    // ARM shows the prefixes as `addressPrefix` or `addressPrefixes`: verify the field this subnet uses.
    if let Some(prefixes) = &found.prefixes {
        checks.push(check(
            prefixes.pointer(),
            prefixes.value(),
            format!(
                "{subnet_ref}: address prefix changed since the plan (was {}); re-run `trellis plan` so pre-flight re-checks it against networking.nodes",
                prefixes.display()
            ),
        ));
    }
    checks.push(check(
        "/properties/networkSecurityGroup/id",
        found.nsg_id.clone().map(Value::String).unwrap_or(Value::Null),
        format!(
            "{subnet_ref}: network security group association changed (expected {}); the CCM needs the NSG named in azure.json — re-attach it or re-run `trellis plan`",
            found.nsg_id.as_deref().unwrap_or("none")
        ),
    ));
    checks.push(check(
        "/properties/routeTable/id",
        found.route_table_id.clone().map(Value::String).unwrap_or(Value::Null),
        format!(
            "{subnet_ref}: route table association changed (expected {}); re-attach it or re-run `trellis plan`",
            found.route_table_id.as_deref().unwrap_or("none")
        ),
    ));
    out.push(Desired::Verify(VerifySpec {
        res: res(kind::SUBNET, &vnet_rg, &format!("{vnet_name}/{}", subnet.name), subnet_id),
        checks,
        depends_on: vec![vnet_address],
        why: Reason::new(ReasonCode::ByoUserOwned, "bring-your-own subnet (networks.subnet): discovered read-only, never written (EnsureUserSubnet); its NSG and route table associations and CIDR must stay as planned"),
    }));

    if let (Some(id), Some(parsed)) = (&found.nsg_id, &found.nsg) {
        out.push(Desired::Verify(VerifySpec {
            res: res(kind::NETWORK_SECURITY_GROUP, &parsed.resource_group, &parsed.name, id.clone()),
            checks: vec![],
            depends_on: vec![],
            why: Reason::new(ReasonCode::ByoUserOwned, "your NSG, discovered from the subnet: never written by trellis; the CCM and bastion controller add their rules at run time"),
        }));
    }
    if let (Some(id), Some(parsed)) = (&found.route_table_id, &found.route_table) {
        let writer = if ctx.overlay {
            "overlay CNI: the CCM's route controller is off, nothing writes routes"
        } else {
            "the CCM writes per-node pod-CIDR routes at run time"
        };
        out.push(Desired::Verify(VerifySpec {
            res: res(kind::ROUTE_TABLE, &parsed.resource_group, &parsed.name, id.clone()),
            checks: vec![],
            depends_on: vec![],
            why: Reason::new(
                ReasonCode::ByoUserOwned,
                format!("your route table, discovered from the subnet: never written by trellis; {writer}"),
            ),
        }));
    }
    Ok(out)
}
