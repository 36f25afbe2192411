//! Discovery, the reconcile graph and the delete graph of provider-gcp's `infraflow`
//! (`graph.go` `buildReconcileGraph` / `buildDeleteGraph`, branch b10c0b5 with the user-managed-egress
//! early returns), as [`Desired`] resources.
//!
//! Managed mode: the service account, the VPC (or the user's, verified), the nodes / internal /
//! services subnets, the Cloud Router (or the user's, verified), the Cloud NAT, the user's NAT
//! addresses (verified), the static firewall rules (untargeted, with IPv6 mirrors in dual-stack).
//! User-managed egress: the user's VPC and subnets are verified, nothing is written, and every managed
//! task the BYO branch does not schedule is a skip node saying why.
//!
//! **A Cloud NAT is an entry of its router's `nats[]`** (GCE has no NAT resource of its own). It is
//! planned as its own node with the id `<router selfLink>/nats/<name>` ([`names::nat_link`]) and the
//! entry as its patch, so that a NAT on the user's router (A2) is a managed node beside a verified
//! router, and the router's other NATs are never in a patch. A cloud implementation answers a GET of
//! that id with the entry (absent when the router has none of that name) and writes it as a write of
//! the router (GCE `routers.patch` with the router's `fingerprint`) that replaces or removes that one
//! entry.

use super::api::{InfrastructureConfig, Mode, SubnetReference};
use super::kind;
use super::names::{self, collection};
use super::Ctx;
use crate::nodes::{check, skipped_at};
use ipnet::IpNet;
use serde_json::{json, Value};
use trellis_planner::cloud::ListFilter;
use trellis_planner::discover::{ListReq, NotFetched, Observed};
use trellis_planner::model::{Desired, ManagedSpec, Resource, VerifySpec};
use trellis_plans::{Kind, Ownership, Reason, ReasonCode};

/// Upstream's `DefaultAggregationInterval`, `DefaultFlowSampling`, `DefaultMetadata`.
pub const FLOW_LOGS_DEFAULT_INTERVAL: &str = "INTERVAL_5_MIN";
pub const FLOW_LOGS_DEFAULT_SAMPLING: f64 = 0.5;
pub const FLOW_LOGS_DEFAULT_METADATA: &str = "EXCLUDE_ALL_METADATA";
/// GCP's load-balancer health-check source ranges, in upstream's order (`ensure_utils.go`).
pub const HEALTH_CHECK_RANGES_IPV4: [&str; 4] =
    ["35.191.0.0/16", "209.85.204.0/22", "209.85.152.0/22", "130.211.0.0/22"];
pub const HEALTH_CHECK_RANGES_IPV6: [&str; 3] = ["2600:2d00:1:b029::/64", "2600:2d00:1:1::/64", "2600:1901:8001::/48"];
/// Upstream's ICMPv6 protocol number (GCE knows no name for it).
const ICMP_V6: &str = "58";

/// Scope of a global resource (the project) and of a regional one (`project/region`).
fn global_scope(ctx: &Ctx) -> String {
    ctx.project.clone()
}
fn regional_scope(ctx: &Ctx) -> String {
    format!("{}/{}", ctx.project, ctx.region)
}

fn res(kind: Kind, scope: String, name: &str, id: String) -> Resource {
    Resource { address: names::address(kind, &scope, name), kind, name: name.to_string(), scope, id }
}

/// How the reason of the BYO workers subnet's plan node starts: the fleet check finds a shoot's
/// workers subnet by it ([`super::fleet::is_byo_workers_subnet_node`]).
pub const WORKERS_SUBNET_WHY: &str = "your workers subnet (networks.subnetWorkers)";

pub fn vpc_res(cfg: &InfrastructureConfig, ctx: &Ctx) -> Resource {
    let name = names::vpc_name(cfg, &ctx.tn);
    res(kind::NETWORK, global_scope(ctx), &name, names::network_link(&ctx.project, &name))
}
pub fn subnet_res(ctx: &Ctx, name: &str) -> Resource {
    res(kind::SUBNETWORK, regional_scope(ctx), name, names::subnet_link(&ctx.project, &ctx.region, name))
}
pub fn router_res(cfg: &InfrastructureConfig, ctx: &Ctx) -> Resource {
    let name = names::router_name(cfg, &ctx.tn);
    res(kind::ROUTER, regional_scope(ctx), &name, names::router_link(&ctx.project, &ctx.region, &name))
}
pub fn nat_res(cfg: &InfrastructureConfig, ctx: &Ctx) -> Resource {
    let router = names::router_name(cfg, &ctx.tn);
    let name = names::cloud_nat(&ctx.tn);
    res(
        kind::CLOUD_NAT,
        format!("{}/{router}", regional_scope(ctx)),
        &name,
        names::nat_link(&ctx.project, &ctx.region, &router, &name),
    )
}
pub fn address_res(ctx: &Ctx, name: &str) -> Resource {
    res(kind::ADDRESS, regional_scope(ctx), name, names::address_link(&ctx.project, &ctx.region, name))
}
pub fn firewall_res(ctx: &Ctx, name: &str) -> Resource {
    res(kind::FIREWALL, global_scope(ctx), name, names::firewall_link(&ctx.project, name))
}
pub fn route_res(ctx: &Ctx, name: &str) -> Resource {
    res(kind::ROUTE, global_scope(ctx), name, names::route_link(&ctx.project, name))
}
pub fn service_account_res(ctx: &Ctx) -> Resource {
    let name = names::service_account_name(&ctx.tn);
    res(kind::SERVICE_ACCOUNT, global_scope(ctx), &name, names::service_account_link(&ctx.project, &ctx.tn))
}

fn skipped(r: &Resource, ownership: Ownership, why: Reason) -> Desired {
    skipped_at(r.address.clone(), r.kind, &r.scope, &r.name, Some(r.id.clone()), ownership, why)
}

/// The four static firewall rules' names, IPv6 mirrors last.
pub fn static_firewall_names(tn: &str) -> [String; 4] {
    [
        names::fw_allow_internal(tn),
        names::fw_allow_health_checks(tn),
        names::fw_allow_internal_ipv6(tn),
        names::fw_allow_health_checks_ipv6(tn),
    ]
}

/// The NAT addresses the user names (`networks.cloudNAT.natIPNames`, A3).
pub fn nat_ip_names(cfg: &InfrastructureConfig) -> Vec<&str> {
    cfg.networks.cloud_nat.iter().flat_map(|n| n.nat_ip_names.iter().flatten()).map(|n| n.name.as_str()).collect()
}

/// The subnets the shoot's nodes and services live in: (nodes, services), BYO or managed names.
pub fn subnet_names(cfg: &InfrastructureConfig, ctx: &Ctx) -> (String, Option<String>) {
    match cfg.mode() {
        Mode::UserManagedEgress { workers, services } => (workers.name.clone(), services.map(|s| s.name.clone())),
        Mode::Managed => (names::nodes_subnet(&ctx.tn), ctx.dual_stack().then(|| names::services_subnet(&ctx.tn))),
    }
}

/// The project's firewall rules in the shoot's VPC (every reader of the list looks at those only:
/// the static rules, the CCM's and the bastion controller's, the user's equivalents in BYO): GCE's
/// list filter reads them without the rest of the project's.
fn firewall_list(cfg: &InfrastructureConfig, ctx: &Ctx) -> ListReq {
    ListReq::new(names::global(&ctx.project), collection::FIREWALLS).narrowed(in_vpc(cfg, ctx))
}
/// The project's routes in the shoot's VPC (the CCM's routes of the shoot; BYO's route-quota warning).
fn route_list(cfg: &InfrastructureConfig, ctx: &Ctx) -> ListReq {
    ListReq::new(names::global(&ctx.project), collection::ROUTES).narrowed(in_vpc(cfg, ctx))
}
fn in_vpc(cfg: &InfrastructureConfig, ctx: &Ctx) -> ListFilter {
    ListFilter::new("network", names::vpc_name(cfg, &ctx.tn))
}

/// What planning reads, in one round: one GET per named resource, and the firewall rules of the
/// shoot's VPC as one list that answers for the static rules (and, in BYO, shows the user's
/// equivalents); in BYO also the VPC's routes (the quota warning).
pub fn discovery(cfg: &InfrastructureConfig, ctx: &Ctx) -> (Vec<String>, Vec<ListReq>) {
    let mut ids = vec![vpc_res(cfg, ctx).id];
    let statics = static_firewall_names(&ctx.tn).map(|n| firewall_res(ctx, &n).id);
    match cfg.mode() {
        Mode::UserManagedEgress { workers, services } => {
            ids.push(subnet_res(ctx, &workers.name).id);
            ids.extend(services.map(|s| subnet_res(ctx, &s.name).id));
            (ids, vec![firewall_list(cfg, ctx), route_list(cfg, ctx)])
        }
        Mode::Managed => {
            ids.push(service_account_res(ctx).id);
            for s in [names::nodes_subnet(&ctx.tn), names::internal_subnet(&ctx.tn), names::services_subnet(&ctx.tn)] {
                ids.push(subnet_res(ctx, &s).id);
            }
            ids.push(router_res(cfg, ctx).id);
            ids.push(nat_res(cfg, ctx).id);
            ids.extend(nat_ip_names(cfg).into_iter().map(|n| address_res(ctx, n).id));
            (ids, vec![firewall_list(cfg, ctx).covering(statics)])
        }
    }
}

/// What `destroy` reads: the named resources of the mode, and the firewall rules and routes of the
/// shoot's VPC.
pub fn destroy_discovery(cfg: &InfrastructureConfig, ctx: &Ctx) -> (Vec<String>, Vec<ListReq>) {
    let (mut ids, _) = discovery(cfg, ctx);
    ids.retain(|id| !id.contains("/addresses/"));
    let mut fw = firewall_list(cfg, ctx);
    if cfg.mode() == Mode::Managed {
        fw = fw.covering(static_firewall_names(&ctx.tn).map(|n| firewall_res(ctx, &n).id));
    }
    (ids, vec![fw, route_list(cfg, ctx)])
}

/// The IPv6 ranges of upstream's `ensureIPv6CIDRs` (dual-stack): the nodes subnet's and the services
/// subnet's `externalIpv6Prefix` (GCE assigns a /64 to an `IPV4_IPV6` / `EXTERNAL` subnet), and the
/// services range cut from the services subnet's prefix as upstream's `getFirstSubnet(…, 108)`: the
/// prefix's network address with a /108 mask (`None` for what is not assigned yet: known after apply).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ipv6Cidrs {
    pub nodes: Option<String>,
    pub services_subnet: Option<String>,
    pub services: Option<String>,
}

pub fn ipv6_cidrs(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Ipv6Cidrs, NotFetched> {
    if !ctx.dual_stack() {
        return Ok(Ipv6Cidrs::default());
    }
    let (nodes, services) = subnet_names(cfg, ctx);
    let prefix = |name: &str| -> Result<Option<String>, NotFetched> {
        Ok(observed
            .get(&subnet_res(ctx, name).id)?
            .and_then(|s| s.get("externalIpv6Prefix"))
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string))
    };
    let nodes = prefix(&nodes)?;
    let services_subnet = match &services {
        Some(s) => prefix(s)?,
        None => None,
    };
    let services = services_subnet.as_deref().map(|p| first_subnet(p, 108));
    Ok(Ipv6Cidrs { nodes, services_subnet, services })
}

/// Upstream's `getFirstSubnet`: the CIDR's network address with `ones` bits of mask; the input as it
/// is when it does not parse or the mask does not fit.
pub fn first_subnet(cidr: &str, ones: u8) -> String {
    match cidr.parse::<IpNet>() {
        Ok(net) => IpNet::new(net.network(), ones).map(|n| n.to_string()).unwrap_or_else(|_| cidr.to_string()),
        Err(_) => cidr.to_string(),
    }
}

/// The reconcile graph: upstream's `buildReconcileGraph` with its BYO early return.
pub fn desired(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, NotFetched> {
    match cfg.mode() {
        Mode::UserManagedEgress { workers, services } => byo(cfg, ctx, workers, services),
        Mode::Managed => managed(cfg, ctx, observed),
    }
}

fn byo(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    workers: &SubnetReference,
    services: Option<&SubnetReference>,
) -> Result<Vec<Desired>, NotFetched> {
    let tn = ctx.tn.as_str();
    let vpc = vpc_res(cfg, ctx);
    let vpc_url = names::url(&vpc.id);
    let dual = ctx.dual_stack();
    let mut out = vec![Desired::Verify(VerifySpec {
        res: vpc.clone(),
        checks: vec![],
        depends_on: vec![],
        why: Reason::new(
            ReasonCode::ByoUserOwned,
            "your VPC (networks.vpc.name), verified only (user-managed egress: upstream task `ensure VPC`, user VPC)",
        ),
    })];
    let subnet_checks = |name: &str| {
        let mut checks = vec![check(
            "/network",
            json!(vpc_url),
            format!("subnet {name} in project {} region {} must belong to VPC {}", ctx.project, ctx.region, vpc.name),
        )];
        if dual {
            checks.push(check(
                "/stackType",
                json!("IPV4_IPV6"),
                format!("subnet {name} must have stackType IPV4_IPV6 for a dual-stack shoot"),
            ));
        }
        checks
    };
    let w = subnet_res(ctx, &workers.name);
    out.push(Desired::Verify(VerifySpec {
        checks: subnet_checks(&workers.name),
        depends_on: vec![vpc.address.clone()],
        why: Reason::new(ReasonCode::ByoUserOwned, format!("{WORKERS_SUBNET_WHY}, verified only: never created or patched (upstream task `ensure worker subnet`, ensureUserManagedWorkersSubnet)")),
        res: w.clone(),
    }));
    if dual {
        if let Some(s) = services {
            out.push(Desired::Verify(VerifySpec {
                res: subnet_res(ctx, &s.name),
                checks: subnet_checks(&s.name),
                depends_on: vec![vpc.address.clone(), w.address.clone()],
                why: Reason::new(ReasonCode::ByoUserOwned, "your services subnet (networks.subnetServices), verified only; the shoot's IPv6 services range is its /64 cut to a /108 (upstream tasks `ensure IPv6 services subnet`, `ensure IPv6 CIDRs`)"),
            }));
        }
    }
    let not_scheduled = |what: &str| {
        Reason::new(
            ReasonCode::GatedOut,
            format!(
                "not created: user-managed egress (networks.subnetWorkers) — upstream's BYO branch does not schedule {what}"
            ),
        )
    };
    out.push(skipped(&service_account_res(ctx), Ownership::Managed, not_scheduled("`ensure service account`")));
    out.push(skipped(
        &subnet_res(ctx, &names::internal_subnet(tn)),
        Ownership::Managed,
        not_scheduled("`ensure internal subnet`; internal load balancers take their IPs from your workers subnet (cloudprovider.conf subnetwork-name)"),
    ));
    let router = res(
        kind::ROUTER,
        regional_scope(ctx),
        &names::cloud_router(tn),
        names::router_link(&ctx.project, &ctx.region, &names::cloud_router(tn)),
    );
    out.push(skipped(&router, Ownership::Managed, not_scheduled("`ensure router`; egress is yours")));
    let nat = res(
        kind::CLOUD_NAT,
        format!("{}/{}", regional_scope(ctx), router.name),
        &names::cloud_nat(tn),
        names::nat_link(&ctx.project, &ctx.region, &router.name, &names::cloud_nat(tn)),
    );
    out.push(skipped(
        &nat,
        Ownership::Managed,
        not_scheduled("`ensure nats` (nor `ensure IP addresses`); egress is yours"),
    ));
    let rules = static_firewall_names(tn);
    let count = if dual { 4 } else { 2 };
    for name in &rules[..count] {
        out.push(skipped(
            &firewall_res(ctx, name),
            Ownership::Managed,
            not_scheduled("`ensure firewall`; provide an equivalent rule yourself, tag-scoped to the shoot's technical id (see warnings)"),
        ));
    }
    Ok(out)
}

fn flow_logs(cfg: &InfrastructureConfig) -> (bool, Value) {
    match &cfg.networks.flow_logs {
        None => (false, Value::Null),
        Some(f) => (
            true,
            json!({
                "aggregationInterval": f.aggregation_interval.as_deref().unwrap_or(FLOW_LOGS_DEFAULT_INTERVAL),
                "flowSampling": f.flow_sampling.map(f64::from).unwrap_or(FLOW_LOGS_DEFAULT_SAMPLING),
                "metadata": f.metadata.as_deref().unwrap_or(FLOW_LOGS_DEFAULT_METADATA),
            }),
        ),
    }
}

/// Upstream's `targetSubnetState`.
fn subnet_patch(
    name: &str,
    description: &str,
    cidr: &str,
    vpc_url: &str,
    flow: (bool, Value),
    dual: bool,
    pods: Option<&str>,
) -> Value {
    let mut p = json!({
        "name": name,
        "description": description,
        "ipCidrRange": cidr,
        "network": vpc_url,
        "privateIpGoogleAccess": false,
        "enableFlowLogs": flow.0,
        "logConfig": flow.1,
    });
    if dual {
        p["ipv6AccessType"] = json!("EXTERNAL");
        p["stackType"] = json!("IPV4_IPV6");
        if let Some(pods) = pods {
            p["secondaryIpRanges"] = json!([{"rangeName": names::SECONDARY_RANGE_PODS, "ipCidrRange": pods}]);
        }
    }
    p
}

/// Upstream's `targetNATState`.
pub fn nat_patch(cfg: &InfrastructureConfig, ctx: &Ctx, nodes_subnet_url: &str) -> Value {
    let n = cfg.networks.cloud_nat.clone().unwrap_or_default();
    let ips: Vec<String> = nat_ip_names(cfg).into_iter().map(|a| names::url(&address_res(ctx, a).id)).collect();
    json!({
        "name": names::cloud_nat(&ctx.tn),
        "enableDynamicPortAllocation": n.enable_dynamic_port_allocation,
        "enableEndpointIndependentMapping": n.endpoint_independent_mapping.map(|e| e.enabled).unwrap_or(false),
        "logConfig": {"enable": true, "filter": "ERRORS_ONLY"},
        "minPortsPerVm": n.min_ports_per_vm.unwrap_or(2048),
        "maxPortsPerVm": n.max_ports_per_vm.unwrap_or(65536),
        "natIpAllocateOption": if ips.is_empty() { "AUTO_ONLY" } else { "MANUAL_ONLY" },
        "natIps": if ips.is_empty() { Value::Null } else { json!(ips) },
        "sourceSubnetworkIpRangesToNat": "LIST_OF_SUBNETWORKS",
        "subnetworks": [{"name": nodes_subnet_url, "sourceIpRangesToNat": ["ALL_IP_RANGES"]}],
        "icmpIdleTimeoutSec": n.icmp_idle_timeout_sec.unwrap_or(30),
        "tcpEstablishedIdleTimeoutSec": n.tcp_established_idle_timeout_sec.unwrap_or(1200),
        "tcpTimeWaitTimeoutSec": n.tcp_time_wait_timeout_sec.unwrap_or(120),
        "tcpTransitoryIdleTimeoutSec": n.tcp_transitory_idle_timeout_sec.unwrap_or(30),
        "udpIdleTimeoutSec": n.udp_idle_timeout_sec.unwrap_or(30),
    })
}

/// Upstream's `firewallRuleAllow*`: untargeted (the `NullFields` are `null`, removing them), enabled.
fn firewall_patch(name: &str, vpc_url: &str, sources: &[String], allowed: Value) -> Value {
    json!({
        "name": name,
        "network": vpc_url,
        "direction": "INGRESS",
        "priority": 1000,
        "sourceRanges": sources,
        "allowed": allowed,
        "disabled": false,
        "denied": null,
        "destinationRanges": null,
        "sourceServiceAccounts": null,
        "sourceTags": null,
        "targetTags": null,
        "targetServiceAccounts": null,
    })
}

fn allowed_internal(icmp: &str) -> Value {
    json!([
        {"IPProtocol": icmp},
        {"IPProtocol": "ipip"},
        {"IPProtocol": "tcp", "ports": ["1-65535"]},
        {"IPProtocol": "udp", "ports": ["1-65535"]},
    ])
}

fn allowed_health_checks() -> Value {
    json!([{"IPProtocol": "udp", "ports": ["30000-32767"]}, {"IPProtocol": "tcp", "ports": ["30000-32767"]}])
}

fn managed(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, NotFetched> {
    let tn = ctx.tn.as_str();
    let dual = ctx.dual_stack();
    let net = &cfg.networks;
    let mut out = Vec::new();

    let sa = service_account_res(ctx);
    out.push(Desired::Managed(ManagedSpec {
        patch: json!({"displayName": sa.name}),
        res: sa,
        force_new: vec![],
        depends_on: vec![],
        why: "service account of the shoot (upstream task `ensure service account`)".to_string(),
        referrers: vec![],
    }));

    let vpc = vpc_res(cfg, ctx);
    let vpc_url = names::url(&vpc.id);
    if names::is_user_vpc(cfg) {
        out.push(Desired::Verify(VerifySpec {
            res: vpc.clone(),
            checks: vec![],
            depends_on: vec![],
            why: Reason::new(
                ReasonCode::ByoUserOwned,
                "your VPC (networks.vpc.name): verified only (upstream task `ensure VPC`, ensureUserManagedVPC)",
            ),
        }));
    } else {
        let mut patch =
            json!({"name": vpc.name, "autoCreateSubnetworks": false, "routingConfig": {"routingMode": "REGIONAL"}});
        if let Some(mtu) = net.mtu {
            patch["mtu"] = json!(mtu);
        }
        out.push(Desired::Managed(ManagedSpec {
            res: vpc.clone(),
            patch,
            force_new: vec!["/autoCreateSubnetworks"],
            depends_on: vec![],
            why: "the shoot's VPC (upstream task `ensure VPC`)".to_string(),
            referrers: vec![],
        }));
    }

    let workers = if net.workers.is_empty() { net.worker.as_str() } else { net.workers.as_str() };
    let nodes = subnet_res(ctx, &names::nodes_subnet(tn));
    let nodes_url = names::url(&nodes.id);
    out.push(Desired::Managed(ManagedSpec {
        patch: subnet_patch(
            &nodes.name,
            "gardener-managed worker subnet",
            workers,
            &vpc_url,
            flow_logs(cfg),
            dual,
            ctx.pods.as_deref(),
        ),
        res: nodes.clone(),
        force_new: vec!["/network"],
        depends_on: vec![vpc.address.clone()],
        why: "workers subnet (networks.workers; upstream task `ensure worker subnet`)".to_string(),
        referrers: vec![],
    }));
    let mut fw_deps = vec![vpc.address.clone(), nodes.address.clone()];

    let internal = subnet_res(ctx, &names::internal_subnet(tn));
    match &net.internal {
        Some(cidr) => {
            fw_deps.push(internal.address.clone());
            out.push(Desired::Managed(ManagedSpec {
                patch: subnet_patch(&internal.name, "gardener-managed internal subnet", cidr, &vpc_url, flow_logs(cfg), false, None),
                res: internal,
                force_new: vec!["/network"],
                depends_on: vec![vpc.address.clone()],
                why: "internal subnet for internal load balancers (networks.internal; upstream task `ensure internal subnet`)".to_string(),
                referrers: vec![],
            }));
        }
        None => {
            if observed.get(&internal.id)?.is_some() {
                out.push(Desired::DeleteManaged {
                    res: internal,
                    depends_on: vec![],
                    why: Reason::new(ReasonCode::FoundByName, "internal subnet of this shoot that networks.internal no longer asks for (upstream task `ensure internal subnet` deletes it)"),
                });
            }
        }
    }

    if dual {
        let services = subnet_res(ctx, &names::services_subnet(tn));
        fw_deps.push(services.address.clone());
        out.push(Desired::Managed(ManagedSpec {
            patch: subnet_patch(
                &services.name,
                "gardener-managed services subnet",
                ctx.services.as_deref().unwrap_or_default(),
                &vpc_url,
                (false, Value::Null),
                true,
                None,
            ),
            res: services,
            force_new: vec!["/network"],
            depends_on: vec![vpc.address.clone()],
            why: "IPv6 services subnet, dual-stack (spec.networking.services; upstream task `ensure IPv6 services subnet`)".to_string(),
            referrers: vec![],
        }));
    }

    let router = router_res(cfg, ctx);
    if names::user_router(cfg).is_some() {
        out.push(Desired::Verify(VerifySpec {
            checks: vec![check(
                "/network",
                json!(vpc_url),
                format!("Cloud Router {} in project {} region {} must belong to VPC {}", router.name, ctx.project, ctx.region, vpc.name),
            )],
            res: router.clone(),
            depends_on: vec![vpc.address.clone()],
            why: Reason::new(ReasonCode::ByoUserOwned, "your Cloud Router (networks.vpc.cloudRouter.name): verified only; the Cloud NAT is added to it (upstream task `ensure router`, ensureUserManagedCloudRouter)"),
        }));
    } else {
        out.push(Desired::Managed(ManagedSpec {
            patch: json!({"name": router.name, "description": "gardener-managed router", "network": vpc_url}),
            res: router.clone(),
            force_new: vec!["/network"],
            depends_on: vec![vpc.address.clone()],
            why: "Cloud Router (upstream task `ensure router`)".to_string(),
            referrers: vec![],
        }));
    }

    let mut nat_deps = vec![router.address.clone(), nodes.address.clone()];
    for name in nat_ip_names(cfg) {
        let a = address_res(ctx, name);
        nat_deps.push(a.address.clone());
        out.push(Desired::Verify(VerifySpec {
            checks: vec![],
            res: a,
            depends_on: vec![],
            why: Reason::new(ReasonCode::ByoUserOwned, "your static external address for the Cloud NAT (networks.cloudNAT.natIPNames): verified only (upstream task `ensure IP addresses`)"),
        }));
    }
    out.push(Desired::Managed(ManagedSpec {
        patch: nat_patch(cfg, ctx, &nodes_url),
        res: nat_res(cfg, ctx),
        force_new: vec![],
        depends_on: nat_deps,
        why: format!("Cloud NAT on router {} (networks.cloudNAT; upstream task `ensure nats`)", router.name),
        referrers: vec![],
    }));

    // Firewall rules: upstream's source ranges [pods, internal, workers, worker], empty ones skipped.
    let sources: Vec<String> =
        [ctx.pods.as_deref(), net.internal.as_deref(), Some(net.workers.as_str()), Some(net.worker.as_str())]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
    let [internal_name, hc_name, internal6_name, hc6_name] = static_firewall_names(tn);
    let mut rules = vec![
        (internal_name, sources, allowed_internal("icmp"), "untargeted: every VM in the VPC (upstream's rule)"),
        (
            hc_name,
            HEALTH_CHECK_RANGES_IPV4.map(str::to_string).to_vec(),
            allowed_health_checks(),
            "GCP load-balancer health checks, untargeted",
        ),
    ];
    if dual {
        let v6 = ipv6_cidrs(cfg, ctx, observed)?;
        let sources6: Vec<String> = [v6.nodes, v6.services_subnet].into_iter().flatten().collect();
        if sources6.is_empty() {
            for name in [internal6_name, hc6_name] {
                out.push(skipped(
                    &firewall_res(ctx, &name),
                    Ownership::Managed,
                    Reason::new(ReasonCode::KnownAfterApply, "not planned yet: its sources are the subnets' IPv6 ranges, which GCE assigns when it creates them (known after apply); `trellis plan` again after the apply plans it (upstream task `ensure firewall` creates it once `ensure IPv6 CIDR services` has them)"),
                ));
            }
        } else {
            rules.push((internal6_name, sources6, allowed_internal(ICMP_V6), "IPv6 mirror, untargeted"));
            rules.push((
                hc6_name,
                HEALTH_CHECK_RANGES_IPV6.map(str::to_string).to_vec(),
                allowed_health_checks(),
                "IPv6 health checks, untargeted",
            ));
        }
    }
    for (name, sources, allowed, note) in rules {
        let r = firewall_res(ctx, &name);
        out.push(Desired::Managed(ManagedSpec {
            patch: firewall_patch(&name, &vpc_url, &sources, allowed),
            res: r,
            force_new: vec!["/network", "/direction"],
            depends_on: fw_deps.clone(),
            why: format!("static firewall rule, {note} (upstream task `ensure firewall`)"),
            referrers: vec![],
        }));
    }
    Ok(out)
}

/// Whether a firewall rule is the CCM's for this shoot: name `k8s…` (upstream's
/// `KubernetesFirewallNamePrefix`), in the shoot's VPC, target tag exactly the technical id.
fn ccm_firewall_of_shoot(rule: &Value, vpc: &str, tn: &str) -> bool {
    let name = rule.get("name").and_then(Value::as_str).unwrap_or_default();
    name.starts_with(names::KUBERNETES_FIREWALL_PREFIX)
        && in_network(rule, vpc)
        && rule.get("targetTags").and_then(Value::as_array).is_some_and(|t| t.iter().any(|t| t.as_str() == Some(tn)))
}

/// Whether a firewall rule is one the BYO safety net deletes: the spec's `k8s-fw-*` (the CCM's and
/// ingress-gce's `k8s-fw-l7-*`) and `k8s-*-hc` health-check rules, tag-scoped to this shoot.
fn byo_ccm_firewall_of_shoot(rule: &Value, vpc: &str, tn: &str) -> bool {
    let name = rule.get("name").and_then(Value::as_str).unwrap_or_default();
    (name.starts_with("k8s-fw-") || (name.starts_with("k8s-") && name.ends_with("-hc")))
        && ccm_firewall_of_shoot(rule, vpc, tn)
}

fn in_network(v: &Value, vpc: &str) -> bool {
    v.get("network").and_then(Value::as_str).is_some_and(|n| names::last_segment(n) == vpc)
}

/// A CCM route of this shoot: name `shoot--…`, in the VPC, next hop an instance of this shoot
/// (name `<tn>-…`: the `-` keeps shoot `n`'s routes apart from shoot `n2`'s, F3).
fn ccm_route_of_shoot(route: &Value, vpc: &str, tn: &str) -> bool {
    let name = route.get("name").and_then(Value::as_str).unwrap_or_default();
    let hop = route.get("nextHopInstance").and_then(Value::as_str).map(names::last_segment).unwrap_or_default();
    name.starts_with(names::SHOOT_ROUTE_PREFIX) && in_network(route, vpc) && hop.starts_with(&format!("{tn}-"))
}

/// Suffixes of the bastion controller's three firewall rules (`<base>-allow-ssh`, …), each
/// tag-scoped to the bastion VM's tag `<base>`.
pub const BASTION_RULE_SUFFIXES: [&str; 3] = ["-allow-ssh", "-egress-worker", "-deny-all"];

/// The bastion controller's firewall rules in a VPC of the user's (a Bastion not deleted before the
/// shoot): rules in the shoot's VPC named `<base><suffix>` whose only target tag is `<base>`. Nothing
/// deletes them (upstream's destroy leaves them to the bastion controller); the orphan report names
/// them. Sorted by name. Needs the destroy discovery's firewall list.
pub fn bastion_rules_left(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
) -> Result<Vec<String>, NotFetched> {
    if !names::is_user_vpc(cfg) {
        return Ok(Vec::new());
    }
    let vpc = names::vpc_name(cfg, &ctx.tn);
    let mut out = Vec::new();
    for rule in observed.list(&names::global(&ctx.project), collection::FIREWALLS)? {
        let Some(name) = rule.get("name").and_then(Value::as_str) else { continue };
        let Some(base) = BASTION_RULE_SUFFIXES.iter().find_map(|s| name.strip_suffix(s)) else { continue };
        let tags: Vec<&str> = rule
            .get("targetTags")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if in_network(rule, &vpc) && tags == [base] {
            out.push(name.to_string());
        }
    }
    out.sort();
    Ok(out)
}

fn runtime_cleanups(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
    byo: bool,
) -> Result<Vec<Desired>, NotFetched> {
    let vpc = names::vpc_name(cfg, &ctx.tn);
    let mut out = Vec::new();
    for route in observed.list(&names::global(&ctx.project), collection::ROUTES)? {
        let Some(name) = route.get("name").and_then(Value::as_str) else { continue };
        if ccm_route_of_shoot(route, &vpc, &ctx.tn) {
            out.push(Desired::DeleteRuntime {
                res: route_res(ctx, name),
                depends_on: vec![],
                rule: Reason::new(ReasonCode::RuntimeOwned, "route the CCM wrote for a node of this shoot (upstream task `destroy kubernetes routes`, ensureKubernetesRoutesDeleted: the safety net for routes the in-cluster CCM did not remove)"),
            });
        }
    }
    for rule in observed.list(&names::global(&ctx.project), collection::FIREWALLS)? {
        let Some(name) = rule.get("name").and_then(Value::as_str) else { continue };
        let ours = if byo {
            byo_ccm_firewall_of_shoot(rule, &vpc, &ctx.tn)
        } else {
            ccm_firewall_of_shoot(rule, &vpc, &ctx.tn)
        };
        if ours {
            out.push(Desired::DeleteRuntime {
                res: firewall_res(ctx, name),
                depends_on: vec![],
                rule: Reason::new(ReasonCode::RuntimeOwned, if byo {
                    "firewall rule the CCM wrote for a LoadBalancer Service, target tag = this shoot's technical id (upstream task `destroy CCM firewall rules`, ensureCCMFirewallRulesDeleted: the BYO safety net; your own rules are never touched)"
                } else {
                    "firewall rule the CCM wrote, target tag = this shoot's technical id (upstream task `destroy infrastructure firewall`)"
                }),
            });
        }
    }
    Ok(out)
}

/// The delete graph: upstream's `buildDeleteGraph` with its BYO early return (exactly the two
/// safety-net cleanups; the user's VPC and subnets are shown as skipped).
pub fn destroy(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, NotFetched> {
    let tn = ctx.tn.as_str();
    let vpc = vpc_res(cfg, ctx);
    if let Mode::UserManagedEgress { workers, services } = cfg.mode() {
        let mut out = runtime_cleanups(cfg, ctx, observed, true)?;
        out.push(skipped(
            &vpc,
            Ownership::User,
            Reason::new(ReasonCode::ByoUserOwned, "never deleted: your VPC (networks.vpc.name)"),
        ));
        out.push(skipped(
            &subnet_res(ctx, &workers.name),
            Ownership::User,
            Reason::new(ReasonCode::ByoUserOwned, "never deleted: your workers subnet (networks.subnetWorkers)"),
        ));
        if let Some(s) = services {
            out.push(skipped(
                &subnet_res(ctx, &s.name),
                Ownership::User,
                Reason::new(ReasonCode::ByoUserOwned, "never deleted: your services subnet (networks.subnetServices)"),
            ));
        }
        return Ok(out);
    }
    let mut out = runtime_cleanups(cfg, ctx, observed, false)?;
    out.push(Desired::DeleteManaged {
        res: service_account_res(ctx),
        depends_on: vec![],
        why: Reason::new(ReasonCode::Destroy, "service account of the shoot (upstream task `destroy service account`)"),
    });
    let mut vpc_deps = Vec::new();
    for name in static_firewall_names(tn) {
        let r = firewall_res(ctx, &name);
        vpc_deps.push(r.address.clone());
        out.push(Desired::DeleteManaged {
            res: r,
            depends_on: vec![],
            why: Reason::new(
                ReasonCode::Destroy,
                "static firewall rule (upstream task `destroy infrastructure firewall`)",
            ),
        });
    }
    vpc_deps.extend(out.iter().filter(|d| matches!(d, Desired::DeleteRuntime { .. })).map(|d| d.address().to_string()));
    let router = router_res(cfg, ctx);
    let user_router = names::user_router(cfg).is_some();
    if user_router {
        out.push(Desired::DeleteManaged {
            res: nat_res(cfg, ctx),
            depends_on: vec![],
            why: Reason::new(
                ReasonCode::Destroy,
                format!("Cloud NAT on your router {} (upstream task `destroy nats`)", router.name),
            ),
        });
        out.push(skipped(
            &router,
            Ownership::User,
            Reason::new(
                ReasonCode::ByoUserOwned,
                "never deleted: your Cloud Router (networks.vpc.cloudRouter.name); only the Cloud NAT is removed from it",
            ),
        ));
    } else {
        // A router whose NAT holds static addresses (natIPNames) cannot be deleted while it does (GCE
        // answers 400 resourceInUseByAnotherResource): the NAT goes first. Upstream deletes the router
        // alone; without natIPNames so does trellis.
        let mut router_deps = Vec::new();
        if !nat_ip_names(cfg).is_empty() {
            let nat = nat_res(cfg, ctx);
            router_deps.push(nat.address.clone());
            out.push(Desired::DeleteManaged {
                res: nat,
                depends_on: vec![],
                why: Reason::new(ReasonCode::Destroy, "Cloud NAT holding your static addresses (networks.cloudNAT.natIPNames), removed from its router first: a router whose NAT holds addresses cannot be deleted"),
            });
        }
        out.push(Desired::DeleteManaged {
            res: router.clone(),
            depends_on: router_deps,
            why: Reason::new(
                ReasonCode::Destroy,
                "Cloud Router, with its Cloud NAT (upstream task `ensure router deleted`)",
            ),
        });
        vpc_deps.push(router.address.clone());
    }
    let mut subnets =
        vec![(names::internal_subnet(tn), vec![], "internal subnet (upstream task `destroy internal subnet`)")];
    if ctx.dual_stack() {
        subnets.push((names::services_subnet(tn), vec![], "services subnet (upstream task `destroy services subnet`)"));
    }
    let nodes_deps = if user_router { vec![nat_res(cfg, ctx).address] } else { vec![router.address.clone()] };
    subnets.push((names::nodes_subnet(tn), nodes_deps, "workers subnet (upstream task `destroy worker subnet`)"));
    for (name, deps, why) in subnets {
        let r = subnet_res(ctx, &name);
        vpc_deps.push(r.address.clone());
        out.push(Desired::DeleteManaged { res: r, depends_on: deps, why: Reason::new(ReasonCode::Destroy, why) });
    }
    if names::is_user_vpc(cfg) {
        out.push(skipped(
            &vpc,
            Ownership::User,
            Reason::new(ReasonCode::ByoUserOwned, "never deleted: your VPC (networks.vpc.name)"),
        ));
    } else {
        out.push(Desired::DeleteManaged {
            res: vpc,
            depends_on: vpc_deps,
            why: Reason::new(ReasonCode::Destroy, "the shoot's VPC (upstream task `destroy vpc`)"),
        });
    }
    Ok(out)
}
