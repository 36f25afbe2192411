//! Warnings of a GCP plan (issue #9 item 10), each one line.
//!
//! User-managed egress: the reconciler creates no static firewall rules, so the user must have rules
//! equivalent to `<tn>-allow-internal-access` and `<tn>-allow-health-checks` (and their IPv6 mirrors in
//! dual-stack) on the VPC. A rule counts as an equivalent when it is an enabled INGRESS allow rule of
//! the VPC that applies to the shoot's VMs (untargeted, or target tag = the technical id), lets the
//! spec's TCP ports through (1-65535; the node ports 30000-32767), and its source ranges cover the sources the spec's command names (the nodes range; every
//! health-check range). A missing one is a warning with the spec's `gcloud compute firewall-rules
//! create …` command. In single-stack, the CCM writes a route per node into the user's VPC: a warning
//! when the VPC's routes plus the shoot's maximum node count reach 80% of GCE's default quota.

use super::api::{InfrastructureConfig, Mode};
use super::desired::{ipv6_cidrs, HEALTH_CHECK_RANGES_IPV4, HEALTH_CHECK_RANGES_IPV6};
use super::names::{self, collection};
use super::Ctx;
use ipnet::IpNet;
use serde_json::Value;
use trellis_planner::discover::{NotFetched, Observed};

/// GCE's default quota of routes per VPC network (spec: "Route-controller and pod routing").
pub const ROUTES_QUOTA_DEFAULT: i64 = 400;

fn strs(v: &Value, key: &str) -> Vec<String> {
    v.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

/// Whether a rule's `allowed` lets TCP ports `lo..=hi` through (no `ports`: every port).
fn allows_tcp(rule: &Value, lo: u32, hi: u32) -> bool {
    rule.get("allowed").and_then(Value::as_array).into_iter().flatten().any(|a| {
        let proto = a.get("IPProtocol").and_then(Value::as_str);
        if !matches!(proto, Some("tcp" | "all" | "6")) {
            return false;
        }
        let ports = strs(a, "ports");
        ports.is_empty()
            || ports.iter().any(|p| {
                let (a, b) = p.split_once('-').unwrap_or((p, p));
                matches!((a.parse::<u32>(), b.parse::<u32>()), (Ok(a), Ok(b)) if a <= lo && hi <= b)
            })
    })
}

/// The source ranges of the VPC's enabled INGRESS rules that let TCP ports `lo..=hi` through to this
/// shoot's VMs (untargeted, or target tag = the technical id).
fn applicable_sources(rules: &[&Value], vpc: &str, tn: &str, lo: u32, hi: u32) -> Vec<IpNet> {
    let mut out = Vec::new();
    for r in rules {
        let network = r.get("network").and_then(Value::as_str).map(names::last_segment);
        let direction = r.get("direction").and_then(Value::as_str).unwrap_or("INGRESS");
        let disabled = r.get("disabled").and_then(Value::as_bool).unwrap_or(false);
        let tags = strs(r, "targetTags");
        let accounts = strs(r, "targetServiceAccounts");
        let targets = (tags.is_empty() && accounts.is_empty()) || tags.iter().any(|t| t == tn);
        if network == Some(vpc) && direction == "INGRESS" && !disabled && targets && allows_tcp(r, lo, hi) {
            out.extend(strs(r, "sourceRanges").iter().filter_map(|s| s.parse::<IpNet>().ok()));
        }
    }
    out
}

fn covered(sources: &[IpNet], cidr: &str) -> bool {
    match cidr.parse::<IpNet>() {
        Ok(c) => sources.iter().any(|s| s.contains(&c)),
        Err(_) => true,
    }
}

pub fn warnings(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<String>, NotFetched> {
    let mut out = Vec::new();
    if cfg.mode() == Mode::Managed {
        return Ok(out);
    }
    let tn = ctx.tn.as_str();
    let project = ctx.project.as_str();
    let vpc = names::vpc_name(cfg, tn);
    let global = names::global(project);
    let rules = observed.list(&global, collection::FIREWALLS)?;
    // allow-internal-access's TCP range, and the node ports the health checks probe.
    let sources = applicable_sources(&rules, &vpc, tn, 1, 65535);
    let hc_sources = applicable_sources(&rules, &vpc, tn, 30000, 32767);
    let head = |what: &str, rule: &str| {
        format!("user-managed egress: VPC {vpc} in project {project} has no firewall rule equivalent to {rule} for this shoot ({what}); create one, e.g.:")
    };
    let tail = format!("--project={project} --network={vpc} --direction=INGRESS --priority=1000");
    if let Some(nodes) = ctx.nodes.as_deref().filter(|n| !covered(&sources, n)) {
        out.push(format!(
            "{} gcloud compute firewall-rules create {tn}-allow-internal {tail} --source-ranges={nodes} --target-tags={tn} --rules=icmp,ipip,tcp:1-65535,udp:1-65535",
            head(&format!("ingress from the nodes range {nodes}"), &names::fw_allow_internal(tn))
        ));
    }
    if !HEALTH_CHECK_RANGES_IPV4.iter().all(|c| covered(&hc_sources, c)) {
        out.push(format!(
            "{} gcloud compute firewall-rules create {tn}-allow-health-checks {tail} --source-ranges=35.191.0.0/16,130.211.0.0/22,209.85.152.0/22,209.85.204.0/22 --target-tags={tn} --rules=tcp:30000-32767,udp:30000-32767",
            head("GCP load-balancer health checks", &names::fw_allow_health_checks(tn))
        ));
    }
    if ctx.dual_stack() {
        let v6 = ipv6_cidrs(cfg, ctx, observed)?;
        if let Some(nodes6) = v6.nodes.as_deref().filter(|n| !covered(&sources, n)) {
            let srcs: Vec<&str> = [Some(nodes6), v6.services_subnet.as_deref()].into_iter().flatten().collect();
            out.push(format!(
                "{} gcloud compute firewall-rules create {tn}-allow-internal-ipv6 {tail} --source-ranges={} --target-tags={tn} --rules=ipv6-icmp,ipip,tcp:1-65535,udp:1-65535",
                head(&format!("ingress from the workers subnet's IPv6 range {nodes6}"), &names::fw_allow_internal_ipv6(tn)),
                srcs.join(",")
            ));
        }
        if !HEALTH_CHECK_RANGES_IPV6.iter().all(|c| covered(&hc_sources, c)) {
            out.push(format!(
                "{} gcloud compute firewall-rules create {tn}-allow-health-checks-ipv6 {tail} --source-ranges=2600:2d00:1:b029::/64,2600:2d00:1:1::/64,2600:1901:8001::/48 --target-tags={tn} --rules=tcp:30000-32767,udp:30000-32767",
                head("GCP load-balancer IPv6 health checks", &names::fw_allow_health_checks_ipv6(tn))
            ));
        }
    } else {
        let routes = observed
            .list(&global, collection::ROUTES)?
            .iter()
            .filter(|r| r.get("network").and_then(Value::as_str).map(names::last_segment) == Some(vpc.as_str()))
            .count() as i64;
        let after = routes + ctx.max_nodes;
        if after * 5 >= ROUTES_QUOTA_DEFAULT * 4 {
            out.push(format!(
                "user-managed egress: VPC {vpc} in project {project} has {routes} routes and this shoot's CCM adds one per node (up to {}, the workers' maximum): {after} of GCE's default quota of {ROUTES_QUOTA_DEFAULT} routes per VPC; ask Google for a quota increase (1000) before the VPC runs out",
                ctx.max_nodes
            ));
        }
    }
    Ok(out)
}
