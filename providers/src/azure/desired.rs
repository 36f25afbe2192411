//! Desired state for an Azure shoot: the upstream task graph (reference §2.2) and, in
//! user-managed-egress mode, the spec's task-gating matrix — as typed desired resources.
//!
//! Pure: a function of the configuration, the observed cloud and what the workspace remembers.
//! Managed resources carry a JSON merge patch of exactly the attributes upstream manages, so
//! attributes written by others (CCM routes, NSG rules, subnet delegations) are left alone.

use super::api::{InfrastructureConfig, OutboundAccessType};
use super::kind;
use super::names::{self, rtype};
use super::prefixes::SubnetPrefixes;
use super::Ctx;
use serde_json::{json, Value};
use trellis_planner::discover::{ListReq, NotFetched, Observed};
use trellis_planner::model::{Desired, ManagedSpec, ReadOwnership, ReadSpec, Resource, VerifySpec};
use trellis_plans::{Detach, Kind, Ownership, Reason, ReasonCode};
use trellis_state::Workspace;

/// Tags upstream puts on managed public IPs.
const TAG_MANAGED_BY: &str = "managed-by-gardener";
const TAG_SHOOT_NAME: &str = "gardener-shoot-name";

/// ARM's idle timeout of a NAT gateway written without one (minutes). Upstream leaves the timeout out
/// when `natGateway.idleConnectionTimeoutMinutes` is not set, so Azure applies this default (and a PUT
/// without it resets a timeout set before): the desired value, or the live default would be a
/// perpetual update to "absent".
pub const NAT_IDLE_TIMEOUT_DEFAULT: i32 = 4;

/// One NAT gateway the configuration asks for (single-subnet layout or one zone).
#[derive(Clone, Debug)]
pub struct NatPlan {
    pub name: String,
    pub zone: Option<i32>,
    pub sku: String,
    pub idle_timeout: Option<i32>,
    /// Managed public IP name, when the user gave no IPs.
    pub managed_ip: Option<String>,
    /// User public IPs: (resource group, name).
    pub user_ips: Vec<(String, String)>,
}

impl NatPlan {
    pub fn id(&self, ctx: &Ctx) -> String {
        names::resource_id(&ctx.sub, &ctx.tn, rtype::NAT_GATEWAY, &self.name)
    }

    /// The ids of the public IPs this NAT uses.
    pub fn ip_ids(&self, ctx: &Ctx) -> Vec<String> {
        let mut ids: Vec<String> =
            self.managed_ip.iter().map(|n| names::resource_id(&ctx.sub, &ctx.tn, rtype::PUBLIC_IP, n)).collect();
        ids.extend(self.user_ips.iter().map(|(rg, n)| names::resource_id(&ctx.sub, rg, rtype::PUBLIC_IP, n)));
        ids
    }
}

/// One worker subnet the configuration asks for.
#[derive(Clone, Debug)]
pub struct SubnetPlan {
    pub name: String,
    pub zone: Option<i32>,
    pub migrated: bool,
    pub cidr: String,
    pub service_endpoints: Vec<String>,
    pub nat: Option<NatPlan>,
}

/// The managed-mode layout: subnets and their NATs, in configuration order.
pub fn layout(cfg: &InfrastructureConfig, ctx: &Ctx) -> Vec<SubnetPlan> {
    let tn = &ctx.tn;
    let net = &cfg.networks;
    if net.zones.is_empty() {
        let nat = net.nat_gateway.as_ref().filter(|n| n.enabled).map(|n| {
            let name = names::nat_name(tn, None, false);
            NatPlan {
                managed_ip: n.ip_addresses.is_empty().then(|| names::public_ip_name(&name)),
                user_ips: n.ip_addresses.iter().map(|ip| (ip.resource_group.clone(), ip.name.clone())).collect(),
                zone: n.zone,
                sku: n.sku.clone().unwrap_or_else(|| "Standard".to_string()),
                idle_timeout: n.idle_connection_timeout_minutes,
                name,
            }
        });
        return vec![SubnetPlan {
            name: names::subnet_name(tn, None, false),
            zone: None,
            migrated: false,
            cidr: net.workers.clone().unwrap_or_default(),
            service_endpoints: net.service_endpoints.clone(),
            nat,
        }];
    }
    net.zones
        .iter()
        .map(|z| {
            let migrated = ctx.migrated_zone == Some(z.name);
            let nat = z.nat_gateway.as_ref().filter(|n| n.enabled).map(|n| {
                let name = names::nat_name(tn, Some(z.name), migrated);
                NatPlan {
                    managed_ip: n.ip_addresses.is_empty().then(|| names::public_ip_name(&name)),
                    user_ips: n.ip_addresses.iter().map(|ip| (ip.resource_group.clone(), ip.name.clone())).collect(),
                    zone: Some(z.name),
                    sku: n.sku.clone().unwrap_or_else(|| "Standard".to_string()),
                    idle_timeout: n.idle_connection_timeout_minutes,
                    name,
                }
            });
            SubnetPlan {
                name: names::subnet_name(tn, Some(z.name), migrated),
                zone: Some(z.name),
                migrated,
                cidr: z.cidr.clone(),
                service_endpoints: z.service_endpoints.clone(),
                nat,
            }
        })
        .collect()
}

/// The VNet the shoot uses: (resource group, name, whether trellis manages it).
pub fn vnet(cfg: &InfrastructureConfig, ctx: &Ctx) -> (String, String, bool) {
    match (&cfg.networks.vnet.resource_group, &cfg.networks.vnet.name) {
        (Some(rg), Some(name)) => (rg.clone(), name.clone(), false),
        _ => (ctx.tn.clone(), ctx.tn.clone(), true),
    }
}

/// What discovery must look at, in two rounds: first the containers, then what lives in them.
pub fn discovery_round1(cfg: &InfrastructureConfig, ctx: &Ctx) -> Vec<String> {
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let mut ids = vec![
        names::resource_group_id(&ctx.sub, &ctx.tn),
        names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name),
    ];
    if let Some(identity) = &cfg.identity {
        ids.push(names::resource_id(&ctx.sub, &identity.resource_group, rtype::IDENTITY, &identity.name));
    }
    if let Some(subnet) = &cfg.networks.subnet {
        ids.push(names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &subnet.name));
    }
    ids
}

/// Round two: every resource the plan may touch, plus the lists upstream scans for leftovers. Reads
/// what round one fetched; lists under a container that does not exist are not run (nothing is in it).
pub fn discovery_round2(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
) -> Result<(Vec<String>, Vec<ListReq>), NotFetched> {
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let rg_id = names::resource_group_id(&ctx.sub, &ctx.tn);
    let vnet_id = names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name);
    // What state records as made by trellis: whatever the configuration says now, each is either
    // wanted or a leftover to delete (or to forget, when it is gone).
    let mut ids: Vec<String> = ctx.recorded.iter().filter(|r| r.managed()).map(|r| r.id.clone()).collect();
    let mut lists = Vec::new();
    if let Some(subnet) = &cfg.networks.subnet {
        // User-managed egress: the route table and NSG come from the subnet's associations.
        let subnet_id = names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &subnet.name);
        if let Some(s) = observed.get(&subnet_id)? {
            for link in ["/properties/routeTable/id", "/properties/networkSecurityGroup/id"] {
                if let Some(id) = s.pointer(link).and_then(Value::as_str) {
                    ids.push(id.to_string());
                }
            }
        }
        return Ok((ids, lists));
    }
    let route_table = names::resource_id(&ctx.sub, &ctx.tn, rtype::ROUTE_TABLE, names::ROUTE_TABLE_NAME);
    let nsg = names::resource_id(&ctx.sub, &ctx.tn, rtype::NSG, &names::nsg_name(&ctx.tn));
    // Everything in the cluster resource group and the VNet is answered by lists or the VNet's own
    // body (one read per resource; the NAT gateway and public IP lists are upstream's scans for
    // leftovers anyway, and a fresh shoot's absent resource group answers for all of them without a
    // read); the user's public IPs, elsewhere, by GETs.
    let (mut subnets, mut nats, mut ips) = (Vec::new(), Vec::new(), Vec::new());
    for s in layout(cfg, ctx) {
        subnets.push(names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &s.name));
        if let Some(nat) = &s.nat {
            nats.push(nat.id(ctx));
            ips.extend(nat.managed_ip.iter().map(|n| names::resource_id(&ctx.sub, &ctx.tn, rtype::PUBLIC_IP, n)));
            ids.extend(nat.user_ips.iter().map(|(rg, n)| names::resource_id(&ctx.sub, rg, rtype::PUBLIC_IP, n)));
        }
    }
    // Under a resource group or VNet known to be absent the lists are not run and what they cover
    // is absent (`Observed::fetch`).
    observed.get(&rg_id)?;
    observed.get(&vnet_id)?;
    lists.push(ListReq::new(rg_id.clone(), rtype::ROUTE_TABLE).covering([route_table]));
    lists.push(ListReq::new(rg_id.clone(), rtype::NSG).covering([nsg]));
    lists.push(ListReq::new(rg_id.clone(), rtype::NAT_GATEWAY).covering(nats));
    lists.push(ListReq::new(rg_id, rtype::PUBLIC_IP).covering(ips));
    // ARM's VNet GET (round one) carries its subnets whole: they answer the subnet list, not run again.
    lists.push(ListReq::new(vnet_id, rtype::SUBNET).covering(subnets).embedded_at("/properties/subnets"));
    Ok((ids, lists))
}

/// A resource with its plan address.
pub(super) fn res(kind: Kind, scope: &str, name: &str, id: String) -> Resource {
    Resource { address: names::address(kind, scope, name), kind, name: name.to_string(), scope: scope.to_string(), id }
}

/// The cluster resource group.
pub(super) fn rg_res(ctx: &Ctx) -> Resource {
    res(kind::RESOURCE_GROUP, &ctx.tn, &ctx.tn, names::resource_group_id(&ctx.sub, &ctx.tn))
}

fn subnet_res(ctx: &Ctx, vnet_rg: &str, vnet_name: &str, name: &str) -> Resource {
    res(kind::SUBNET, vnet_rg, &format!("{vnet_name}/{name}"), names::subnet_id(&ctx.sub, vnet_rg, vnet_name, name))
}

/// The cluster resource group, managed in both modes.
pub(super) fn resource_group(ctx: &Ctx) -> Desired {
    Desired::Managed(ManagedSpec {
        res: rg_res(ctx),
        patch: json!({"location": names::arm_location(&ctx.region)}),
        force_new: vec![],
        depends_on: vec![],
        why: "the cluster resource group, managed in both modes (upstream task `ensure resource group`)".to_string(),
        referrers: vec![],
    })
}

/// The user-assigned identity, read for the status (upstream task `ensure managed identity`).
pub(super) fn identity(cfg: &InfrastructureConfig, ctx: &Ctx) -> Option<Desired> {
    let identity = cfg.identity.as_ref()?;
    Some(Desired::Read(ReadSpec {
        res: res(
            kind::MANAGED_IDENTITY,
            &identity.resource_group,
            &identity.name,
            names::resource_id(&ctx.sub, &identity.resource_group, rtype::IDENTITY, &identity.name),
        ),
        ownership: ReadOwnership::User,
        depends_on: vec![],
        why: Reason::new(
            ReasonCode::ByoUserOwned,
            "user-assigned identity (identity): read for the status's id and clientID (upstream task `ensure managed identity`)",
        ),
    }))
}

/// Everything the plan says about an Azure shoot.
pub fn desired(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, NotFetched> {
    let mut out = if cfg.is_using_user_managed_egress() {
        super::byo::desired(cfg, ctx, observed)?
    } else {
        managed(cfg, ctx, observed)?
    };
    recorded_deletes(ctx, &mut out, true);
    Ok(out)
}

/// A resource the workspace records: its address, kind, cloud id and who owns it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub address: String,
    pub kind: Kind,
    pub id: String,
    pub ownership: Ownership,
}

impl Recorded {
    /// Every resource `ws` records with a cloud id.
    pub fn of(ws: &Workspace) -> Vec<Recorded> {
        ws.resources
            .iter()
            .filter(|(_, r)| !r.id.is_empty())
            .map(|(address, r)| Recorded {
                address: address.clone(),
                kind: r.kind,
                id: r.id.clone(),
                ownership: r.ownership,
            })
            .collect()
    }

    /// Whether trellis created it (and so may delete it).
    pub fn managed(&self) -> bool {
        self.ownership == Ownership::Managed
    }
}

/// Whether state records `id` as created by trellis.
fn recorded_managed(ctx: &Ctx, id: &str) -> bool {
    ctx.recorded.iter().any(|r| r.managed() && r.id.eq_ignore_ascii_case(id))
}

/// Whether state records `id` as someone else's: a name scan never deletes it.
fn recorded_foreign(ctx: &Ctx, id: &str) -> bool {
    ctx.recorded.iter().any(|r| !r.managed() && r.id.eq_ignore_ascii_case(id))
}

/// Which source found a leftover, for its plan reason: its code and words.
fn found_by(ctx: &Ctx, id: &str) -> (ReasonCode, &'static str) {
    if recorded_managed(ctx, id) {
        (ReasonCode::RecordedInState, "recorded in state")
    } else {
        (ReasonCode::FoundByName, "found by name: not recorded in state, made by an earlier trellis or by upstream")
    }
}

/// The order in which leftovers can go: what uses a resource before the resource (a subnet uses a
/// NAT gateway, route table and NSG; a NAT gateway its public IPs; everything sits in a resource group).
fn delete_rank(kind: Kind) -> u8 {
    match kind {
        kind::SUBNET | kind::LOAD_BALANCER => 0,
        kind::NAT_GATEWAY => 1,
        kind::VIRTUAL_NETWORK => 3,
        kind::RESOURCE_GROUP => 4,
        _ => 2,
    }
}

fn is_delete(d: &Desired) -> bool {
    matches!(d, Desired::DeleteManaged { .. } | Desired::DeleteRuntime { .. })
}

/// Deletes of the managed resources state records that nothing in `out` wants and that no node of
/// `out` deletes already: deletion driven by state, so a resource trellis created is found whatever
/// its name or resource group (a name scan finds only names derived from the current configuration).
/// Resources recorded as someone else's are never deleted. With `inside_cluster_group` false (a
/// destroy, whose resource group deletion takes everything in it), only those outside the cluster
/// resource group. Each runs after every write of the plan (which detaches what uses it) and after the
/// deletes of what uses it; deletes of what it uses wait for it.
pub fn recorded_deletes(ctx: &Ctx, out: &mut Vec<Desired>, inside_cluster_group: bool) {
    let same = |d: &Desired, id: &str| d.id().is_some_and(|x| x.eq_ignore_ascii_case(id));
    let leftovers: Vec<&Recorded> = ctx
        .recorded
        .iter()
        .filter(|r| r.managed())
        .filter(|r| inside_cluster_group || !in_cluster_group(ctx, &r.id))
        .filter(|r| !out.iter().any(|d| same(d, &r.id)))
        .collect();
    if leftovers.is_empty() {
        return;
    }
    let writes: Vec<String> = out
        .iter()
        .filter_map(|d| match d {
            Desired::Managed(m) => Some(m.res.address.clone()),
            _ => None,
        })
        .collect();
    let deletes: Vec<(u8, String)> = out
        .iter()
        .filter(|d| is_delete(d))
        .filter_map(|d| Some((delete_rank(kind_of(d)?), d.address().to_string())))
        .chain(leftovers.iter().map(|r| (delete_rank(r.kind), r.address.clone())))
        .collect();
    for d in out.iter_mut() {
        if let Desired::DeleteManaged { res, depends_on, .. } = d {
            let rank = delete_rank(res.kind);
            depends_on.extend(leftovers.iter().filter(|r| delete_rank(r.kind) < rank).map(|r| r.address.clone()));
        }
    }
    for r in leftovers {
        let rank = delete_rank(r.kind);
        let mut depends_on = writes.clone();
        depends_on.extend(deletes.iter().filter(|(k, a)| *k < rank && a != &r.address).map(|(_, a)| a.clone()));
        let (scope, name) = match names::parse_id(&r.id) {
            Some(p) => (p.resource_group, p.parent.map_or(p.name.clone(), |parent| format!("{parent}/{}", p.name))),
            None => (String::new(), r.id.clone()),
        };
        let what = r.kind.as_str().replace('_', " ");
        let why = if inside_cluster_group {
            Reason::new(
                ReasonCode::RecordedInState,
                format!(
                    "{what} trellis created for this shoot (recorded in state) that the configuration no longer asks for"
                ),
            )
        } else {
            Reason::new(
                ReasonCode::Destroy,
                format!(
                    "{what} trellis created for this shoot (recorded in state), outside the cluster resource group"
                ),
            )
        };
        out.push(Desired::DeleteManaged {
            res: Resource { address: r.address.clone(), kind: r.kind, name, scope, id: r.id.clone() },
            depends_on,
            why,
        });
    }
}

fn kind_of(d: &Desired) -> Option<Kind> {
    match d {
        Desired::DeleteManaged { res, .. } | Desired::DeleteRuntime { res, .. } => Some(res.kind),
        _ => None,
    }
}

/// Whether `id` lies in the shoot's cluster resource group (or is that group).
fn in_cluster_group(ctx: &Ctx, id: &str) -> bool {
    let group = names::resource_group_id(&ctx.sub, &ctx.tn);
    id.len() >= group.len()
        && id[..group.len()].eq_ignore_ascii_case(&group)
        && (id.len() == group.len() || id.as_bytes()[group.len()] == b'/')
}

/// The managed resources state records that `desired` does not want and that are gone from the
/// cloud, as (address, id): nothing to delete, only to forget after the apply.
pub fn recorded_gone(ctx: &Ctx, desired: &[Desired], observed: &Observed) -> Result<Vec<(String, String)>, NotFetched> {
    let mut out = Vec::new();
    for r in ctx.recorded.iter().filter(|r| r.managed()) {
        let wanted = desired.iter().any(|d| !is_delete(d) && d.id().is_some_and(|x| x.eq_ignore_ascii_case(&r.id)));
        if !wanted && observed.get(&r.id)?.is_none() {
            out.push((r.address.clone(), r.id.clone()));
        }
    }
    Ok(out)
}

fn managed(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, NotFetched> {
    let tn = ctx.tn.as_str();
    let (vnet_rg, vnet_name, vnet_managed) = vnet(cfg, ctx);
    let rg = rg_res(ctx);
    let mut out = vec![resource_group(ctx)];

    let vnet_res = res(
        kind::VIRTUAL_NETWORK,
        &vnet_rg,
        &vnet_name,
        names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name),
    );
    if vnet_managed {
        let cidr = cfg.networks.vnet.cidr.clone().or_else(|| cfg.networks.workers.clone()).unwrap_or_default();
        let ddos = cfg.networks.vnet.ddos_protection_plan_id.clone();
        out.push(Desired::Managed(ManagedSpec {
            res: vnet_res.clone(),
            patch: json!({
                "location": names::arm_location(&ctx.region),
                "properties": {
                    "addressSpace": {"addressPrefixes": [cidr]},
                    "enableDdosProtection": ddos.is_some(),
                    "ddosProtectionPlan": ddos.map(|id| json!({"id": id})),
                }
            }),
            force_new: vec![],
            depends_on: vec![rg.address.clone()],
            why: "the shoot's VNet (upstream task `ensure vnet`)".to_string(),
            referrers: vec![],
        }));
    } else {
        out.push(Desired::Verify(VerifySpec {
            res: vnet_res.clone(),
            checks: vec![],
            depends_on: vec![],
            why: Reason::new(ReasonCode::ByoUserOwned, "bring-your-own VNet (networks.vnet.name/resourceGroup): read only; it must exist (upstream task `ensure vnet` only reads it)"),
        }));
    }

    out.extend(identity(cfg, ctx));

    let rt = res(
        kind::ROUTE_TABLE,
        tn,
        names::ROUTE_TABLE_NAME,
        names::resource_id(&ctx.sub, tn, rtype::ROUTE_TABLE, names::ROUTE_TABLE_NAME),
    );
    out.push(Desired::Managed(ManagedSpec {
        res: rt.clone(),
        patch: json!({"location": names::arm_location(&ctx.region)}),
        force_new: vec![],
        depends_on: vec![rg.address.clone()],
        why: "the worker route table, created empty; the CCM writes per-node routes into it (upstream task `ensure route table`)".to_string(),
        referrers: vec![],
    }));
    let nsg_name = names::nsg_name(tn);
    let nsg = res(kind::NETWORK_SECURITY_GROUP, tn, &nsg_name, names::resource_id(&ctx.sub, tn, rtype::NSG, &nsg_name));
    out.push(Desired::Managed(ManagedSpec {
        res: nsg.clone(),
        patch: json!({"location": names::arm_location(&ctx.region)}),
        force_new: vec![],
        depends_on: vec![rg.address.clone()],
        why: "the worker NSG, created empty; the CCM and bastion controller write rules into it (upstream task `ensure security group`)".to_string(),
        referrers: vec![],
    }));

    let subnets = layout(cfg, ctx);
    let mut subnet_addresses = Vec::new();
    let mut nat_addresses = Vec::new();
    let mut wanted_nats = Vec::new();
    let mut wanted_ips = Vec::new();
    let mut pinned_ips = Vec::new();
    for s in &subnets {
        let mut subnet_deps = vec![vnet_res.address.clone(), rt.address.clone(), nsg.address.clone()];
        let nat_id = s.nat.as_ref().map(|nat| {
            let subnet_id = names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &s.name);
            let (nat_address, ip_deps) = nat_gateway(ctx, nat, &rg, &subnet_id, &mut out);
            subnet_deps.push(nat_address.clone());
            nat_addresses.push(nat_address);
            nat_addresses.extend(ip_deps);
            wanted_nats.push(nat.name.clone());
            wanted_ips.extend(nat.managed_ip.clone());
            pinned_ips
                .extend(nat.user_ips.iter().filter(|(rg, _)| rg.eq_ignore_ascii_case(tn)).map(|(_, n)| n.clone()));
            nat.id(ctx)
        });
        let sres = subnet_res(ctx, &vnet_rg, &vnet_name, &s.name);
        let live_subnet = observed.get(&sres.id)?;
        let live_nat = live_subnet.and_then(|v| v.pointer("/properties/natGateway/id")).and_then(Value::as_str);
        // Without a NAT of ours, an existing association is removed only if that NAT is in the cluster
        // resource group: a NAT the user attached stays attached (upstream `ensureSubnets`).
        let nat_value = match (&nat_id, live_nat) {
            (Some(id), _) => Some(json!({"id": id})),
            (None, Some(live)) if names::parse_id(live).is_some_and(|p| p.resource_group.eq_ignore_ascii_case(tn)) => {
                Some(Value::Null)
            }
            (None, _) => None,
        };
        let mut props = Value::Object(address_range(&s.cidr, live_subnet));
        props["serviceEndpoints"] = if s.service_endpoints.is_empty() {
            Value::Null
        } else {
            Value::Array(s.service_endpoints.iter().map(|e| json!({"service": e})).collect())
        };
        props["routeTable"] = json!({"id": rt.id});
        props["networkSecurityGroup"] = json!({"id": nsg.id});
        props["defaultOutboundAccess"] =
            json!(ctx.annotation(super::api::DISABLE_DEFAULT_OUTBOUND_ACCESS_ANNOTATION) != Some("true"));
        if let Some(v) = nat_value {
            props["natGateway"] = v;
        }
        let zone_note = match (s.zone, s.migrated) {
            (Some(z), true) => format!(" for zone {z} (migrated from the single-subnet layout: keeps its name)"),
            (Some(z), false) => format!(" for zone {z}"),
            (None, _) => String::new(),
        };
        subnet_addresses.push(sres.address.clone());
        out.push(Desired::Managed(ManagedSpec {
            res: sres,
            patch: json!({"properties": props}),
            force_new: vec![],
            depends_on: subnet_deps,
            why: format!("worker subnet{zone_note} (upstream task `ensure subnets`)"),
            referrers: vec![],
        }));
    }

    // Leftovers upstream deletes: NATs and public IPs named after the shoot in its resource group, and
    // subnets named `<tn>-nodes*` in the VNet, that the configuration no longer asks for.
    let rg_id = names::resource_group_id(&ctx.sub, tn);
    for nat in observed.list(&rg_id, rtype::NAT_GATEWAY)? {
        let Some(name) = nat.get("name").and_then(Value::as_str) else { continue };
        let id = names::resource_id(&ctx.sub, tn, rtype::NAT_GATEWAY, name);
        if name.starts_with(tn)
            && !wanted_nats.iter().any(|w| w.eq_ignore_ascii_case(name))
            && !recorded_foreign(ctx, &id)
        {
            let (code, found) = found_by(ctx, &id);
            out.push(Desired::DeleteManaged {
                why: Reason::new(
                    code,
                    format!(
                        "NAT gateway of this shoot that the configuration no longer asks for ({found}; upstream task `ensure nats`)"
                    ),
                ),
                res: res(kind::NAT_GATEWAY, tn, name, id),
                depends_on: subnet_addresses.clone(),
            });
        }
    }
    for ip in observed.list(&rg_id, rtype::PUBLIC_IP)? {
        let Some(name) = ip.get("name").and_then(Value::as_str) else { continue };
        let tagged = ip.pointer(&format!("/tags/{TAG_MANAGED_BY}")).is_some()
            && ip.pointer(&format!("/tags/{TAG_SHOOT_NAME}")).is_some();
        let id = names::resource_id(&ctx.sub, tn, rtype::PUBLIC_IP, name);
        if name.starts_with(tn)
            && tagged
            && !wanted_ips.iter().any(|w| w.eq_ignore_ascii_case(name))
            && !pinned_ips.iter().any(|p| p.eq_ignore_ascii_case(name))
            && !recorded_foreign(ctx, &id)
        {
            let mut deps = subnet_addresses.clone();
            deps.extend(nat_addresses.iter().cloned());
            let (code, found) = found_by(ctx, &id);
            out.push(Desired::DeleteManaged {
                why: Reason::new(
                    code,
                    format!(
                        "public IP of this shoot that the configuration no longer asks for ({found}; upstream task `ensure public IPs`)"
                    ),
                ),
                res: res(kind::PUBLIC_IP_ADDRESS, tn, name, id),
                depends_on: deps,
            });
        }
    }
    let vnet_id = names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name);
    let prefix = names::subnet_name(tn, None, false);
    for s in observed.list(&vnet_id, rtype::SUBNET)? {
        let Some(name) = s.get("name").and_then(Value::as_str) else { continue };
        let r = subnet_res(ctx, &vnet_rg, &vnet_name, name);
        if name.starts_with(&prefix)
            && !subnets.iter().any(|w| w.name.eq_ignore_ascii_case(name))
            && !recorded_foreign(ctx, &r.id)
        {
            let (code, found) = found_by(ctx, &r.id);
            out.push(Desired::DeleteManaged {
                why: Reason::new(
                    code,
                    format!(
                        "worker subnet of this shoot that the configuration no longer asks for ({found}; upstream task `ensure subnets`)"
                    ),
                ),
                res: r,
                depends_on: vec![],
            });
        }
    }
    Ok(out)
}

/// A managed subnet's CIDR in the shape the live subnet shows it. ARM keeps the shape a subnet was
/// written with — `addressPrefix`, or the list `addressPrefixes` — so stating the CIDR in the other
/// shape would be a change on every plan. A list with other prefixes is replaced by the one CIDR, as
/// upstream's PUT (which sends only `addressPrefix`) replaces it; a stray `addressPrefix` beside the
/// list is removed, so the written subnet has one shape.
fn address_range(cidr: &str, live: Option<&Value>) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    match live.and_then(SubnetPrefixes::of) {
        Some(shown) if shown.list => {
            out.insert("addressPrefixes".to_string(), json!([cidr]));
            if live.and_then(|v| v.pointer("/properties/addressPrefix")).is_some() {
                out.insert("addressPrefix".to_string(), Value::Null);
            }
        }
        _ => {
            out.insert("addressPrefix".to_string(), json!(cidr));
        }
    }
    out
}

/// The NAT gateway of `subnet_id` and its public IPs; returns the NAT's address and the addresses of
/// its IP nodes. A replaced public IP is detached from the NAT first, a replaced NAT from the subnet.
fn nat_gateway(
    ctx: &Ctx,
    nat: &NatPlan,
    rg: &Resource,
    subnet_id: &str,
    out: &mut Vec<Desired>,
) -> (String, Vec<String>) {
    let tn = ctx.tn.as_str();
    let zones = nat.zone.map(|z| json!([z.to_string()])).unwrap_or(Value::Null);
    let mut ip_addresses = Vec::new();
    if let Some(ip_name) = &nat.managed_ip {
        let ip = res(kind::PUBLIC_IP_ADDRESS, tn, ip_name, names::resource_id(&ctx.sub, tn, rtype::PUBLIC_IP, ip_name));
        ip_addresses.push(ip.address.clone());
        out.push(Desired::Managed(ManagedSpec {
            res: ip,
            patch: json!({
                "location": names::arm_location(&ctx.region),
                "sku": {"name": nat.sku, "tier": "Regional"},
                "zones": zones,
                "tags": {TAG_MANAGED_BY: "true", TAG_SHOOT_NAME: tn},
                "properties": {"publicIPAllocationMethod": "Static", "publicIPAddressVersion": "IPv4"},
            }),
            force_new: vec!["/location", "/zones", "/properties/publicIPAllocationMethod", "/sku/name"],
            depends_on: vec![rg.address.clone()],
            why: format!("public IP of NAT gateway {} (upstream task `ensure public IPs`)", nat.name),
            referrers: vec![Detach { id: nat.id(ctx), path: "/properties/publicIpAddresses".to_string() }],
        }));
    }
    for (ip_rg, ip_name) in &nat.user_ips {
        let ip = res(
            kind::PUBLIC_IP_ADDRESS,
            ip_rg,
            ip_name,
            names::resource_id(&ctx.sub, ip_rg, rtype::PUBLIC_IP, ip_name),
        );
        ip_addresses.push(ip.address.clone());
        out.push(Desired::Read(ReadSpec {
            res: ip,
            ownership: ReadOwnership::User,
            depends_on: vec![],
            why: Reason::new(
                ReasonCode::ByoUserOwned,
                format!("your public IP for NAT gateway {} (natGateway.ipAddresses): read only", nat.name),
            ),
        }));
    }
    let nat_res = res(kind::NAT_GATEWAY, tn, &nat.name, nat.id(ctx));
    let address = nat_res.address.clone();
    let ips: Vec<Value> = nat.ip_ids(ctx).into_iter().map(|id| json!({"id": id})).collect();
    let mut deps = vec![rg.address.clone()];
    deps.extend(ip_addresses.iter().cloned());
    out.push(Desired::Managed(ManagedSpec {
        res: nat_res,
        patch: json!({
            "location": names::arm_location(&ctx.region),
            "sku": {"name": nat.sku},
            "zones": zones,
            "properties": {
                "idleTimeoutInMinutes": nat.idle_timeout.unwrap_or(NAT_IDLE_TIMEOUT_DEFAULT),
                "publicIpAddresses": ips,
            },
        }),
        force_new: vec!["/location", "/zones", "/sku/name"],
        depends_on: deps,
        why: "NAT gateway (networks.natGateway.enabled; upstream task `ensure nats`)".to_string(),
        referrers: vec![Detach { id: subnet_id.to_string(), path: "/properties/natGateway".to_string() }],
    }));
    (address, ip_addresses)
}

/// A skip node for a task the configuration gates out (or a resource of the user's a destroy leaves alone).
pub fn skipped(kind: Kind, scope: &str, name: &str, id: Option<String>, ownership: Ownership, why: Reason) -> Desired {
    crate::nodes::skipped_at(names::address(kind, scope, name), kind, scope, name, id, ownership, why)
}

/// A verify check that an attribute equals a value.
pub use crate::nodes::check;

/// The outbound access type upstream derives: NATGateway unless some subnet has no NAT.
pub fn outbound_access_type(cfg: &InfrastructureConfig, ctx: &Ctx) -> OutboundAccessType {
    if cfg.is_using_user_managed_egress() {
        return OutboundAccessType::UserManaged;
    }
    if layout(cfg, ctx).iter().all(|s| s.nat.is_some()) {
        OutboundAccessType::NatGateway
    } else {
        OutboundAccessType::LoadBalancer
    }
}

/// What `destroy` must look at: the cluster resource group, its load balancers, the VNet's subnets.
pub fn destroy_discovery(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
) -> Result<(Vec<String>, Vec<ListReq>), NotFetched> {
    let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
    let rg_id = names::resource_group_id(&ctx.sub, &ctx.tn);
    let vnet_id = names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name);
    let mut lists = Vec::new();
    if observed.get(&rg_id)?.is_some() {
        lists.push(ListReq::new(rg_id, rtype::LOAD_BALANCER));
    }
    if observed.get(&vnet_id)?.is_some() {
        lists.push(ListReq::new(vnet_id, rtype::SUBNET));
    }
    // What state records as made by trellis outside the cluster resource group (its deletion takes
    // the rest).
    let ids =
        ctx.recorded.iter().filter(|r| r.managed() && !in_cluster_group(ctx, &r.id)).map(|r| r.id.clone()).collect();
    Ok((ids, lists))
}

/// The upstream delete graph (reference §2.4): load balancers and Gardener-named subnets in a user VNet,
/// then the cluster resource group (which takes everything inside it). User-owned resources are listed
/// as skipped so the reviewer sees they stay.
pub fn destroy(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, NotFetched> {
    let tn = ctx.tn.as_str();
    let (vnet_rg, vnet_name, vnet_managed) = vnet(cfg, ctx);
    let rg_id = names::resource_group_id(&ctx.sub, tn);
    let byo_subnet = cfg.networks.subnet.as_ref().map(|s| s.name.as_str());
    let mut out = Vec::new();
    let mut lb_addresses = Vec::new();
    let mut subnet_addresses = Vec::new();
    if !vnet_managed {
        for lb in observed.list(&rg_id, rtype::LOAD_BALANCER)? {
            let Some(name) = lb.get("name").and_then(Value::as_str) else { continue };
            let r = res(kind::LOAD_BALANCER, tn, name, names::resource_id(&ctx.sub, tn, rtype::LOAD_BALANCER, name));
            lb_addresses.push(r.address.clone());
            out.push(Desired::DeleteRuntime {
                res: r,
                depends_on: vec![],
                rule: Reason::new(ReasonCode::RuntimeOwned, "load balancer the CCM created in the cluster resource group; upstream's delete graph removes every load balancer there first when the VNet is not Gardener's (task `delete load balancers`)"),
            });
        }
        let vnet_id = names::resource_id(&ctx.sub, &vnet_rg, rtype::VNET, &vnet_name);
        for s in observed.list(&vnet_id, rtype::SUBNET)? {
            let Some(name) = s.get("name").and_then(Value::as_str) else { continue };
            if Some(name) == byo_subnet {
                out.push(skipped(
                    kind::SUBNET,
                    &vnet_rg,
                    &format!("{vnet_name}/{name}"),
                    Some(names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, name)),
                    Ownership::User,
                    Reason::new(
                        ReasonCode::ByoUserOwned,
                        "never deleted: your subnet (networks.subnet), with its NSG and route table, stays untouched",
                    ),
                ));
            } else if name.starts_with(tn)
                && !recorded_foreign(ctx, &names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, name))
            {
                let r = subnet_res(ctx, &vnet_rg, &vnet_name, name);
                subnet_addresses.push(r.address.clone());
                let (_, found) = found_by(ctx, &r.id);
                out.push(Desired::DeleteManaged {
                    why: Reason::new(
                        ReasonCode::Destroy,
                        format!(
                            "subnet of this shoot in your VNet ({found}; upstream task `delete subnets in foreign resource group`)"
                        ),
                    ),
                    res: r,
                    depends_on: lb_addresses.clone(),
                });
            }
        }
        out.push(skipped(
            kind::VIRTUAL_NETWORK,
            &vnet_rg,
            &vnet_name,
            Some(vnet_id),
            Ownership::User,
            Reason::new(ReasonCode::ByoUserOwned, "never deleted: your VNet (networks.vnet)"),
        ));
    }
    let mut deps = lb_addresses;
    deps.extend(subnet_addresses);
    out.push(Desired::DeleteManaged {
        res: rg_res(ctx),
        depends_on: deps,
        why: Reason::new(ReasonCode::Destroy, "the cluster resource group and everything in it: VMs, NICs, disks, public IPs, load balancers, and in managed mode the VNet, route table, NSG and NAT gateways (upstream task `delete resource group`)"),
    });
    recorded_deletes(ctx, &mut out, false);
    Ok(out)
}
