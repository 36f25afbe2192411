//! GCP's fleet-wide checks ([`crate::provider::Provider::check_fleet`], issue #9 item 10), over the
//! BYO shoots of a fleet and the BYO shoots already applied in state:
//!
//! - **Refused**: two shoots on one BYO workers subnet. The spec lets shoots share a BYO VPC (B5),
//!   never a workers subnet: each shoot's CCM treats the subnet's routes as its own.
//! - **Warned** (B5): an untargeted user firewall rule that lets shoots sharing one VPC reach each
//!   other — an enabled INGRESS allow rule of the VPC with neither target tags nor target service
//!   accounts (it applies to every VM of the VPC, so to every shoot's nodes) whose source ranges
//!   overlap the workers subnet (primary, secondary or IPv6 ranges) of one of the shoots. Each
//!   planned shoot of such a VPC gets the warning, with the `gcloud` command that scopes the rule to
//!   it. Reads the project's firewall rules (one list) and the workers subnets of the shoots of such
//!   a VPC, only when two or more BYO shoots share a VPC.

use super::kind;
use std::collections::{BTreeMap, BTreeSet};

use ipnet::IpNet;
use serde_json::Value;
use trellis_planner::cloud::CloudRead;
use trellis_planner::discover::{ListReq, Observed};
use trellis_planner::ids::{GceIds, IdScheme};
use trellis_plans::{Node, Ownership};

use super::desired;
use super::names::{self, collection};
use super::state::GcpState;
use crate::provider::{AppliedShoots, CloudCtx, FleetShoot, FleetWarning, ProviderError};

/// Whether a plan node is a shoot's BYO workers subnet (`networks.subnetWorkers`): a user-owned
/// subnet verified as the workers subnet.
pub fn is_byo_workers_subnet_node(node: &Node) -> bool {
    node.kind == kind::SUBNETWORK
        && node.ownership() == Ownership::User
        && node.reason.detail().starts_with(desired::WORKERS_SUBNET_WHY)
}

/// Whether a plan node is a user's VPC (verified, never written).
pub fn is_user_vpc_node(node: &Node) -> bool {
    node.kind == kind::NETWORK && node.ownership() == Ownership::User
}

/// One BYO shoot as the fleet checks see it.
struct Member {
    shoot: String,
    /// `(file)` for a shoot of the fleet, `(applied, in state)` for one only in state.
    origin: String,
    in_fleet: bool,
    /// The selfLinks of its VPC (unknown for a state without its last-applied configuration) and
    /// workers subnet (as written).
    vpc: Option<String>,
    subnet: String,
}

impl Member {
    fn label(&self) -> String {
        format!("{} {}", self.shoot, self.origin)
    }
}

/// The BYO shoots of the fleet (from their plans' facts) and, when there are any, those applied in
/// state (from their provider state) that are not in the fleet.
fn members(fleet: &[FleetShoot<'_>], applied: AppliedShoots<'_>, project: &str) -> Result<Vec<Member>, ProviderError> {
    let mut out = Vec::new();
    for s in fleet {
        let id = |pick: fn(&Node) -> bool| s.plan.nodes.iter().find(|n| pick(n)).and_then(|n| n.id.clone());
        if let (Some(subnet), Some(vpc)) = (id(is_byo_workers_subnet_node), id(is_user_vpc_node)) {
            out.push(Member {
                shoot: s.plan.shoot.clone(),
                origin: format!("({})", s.file.display()),
                in_fleet: true,
                vpc: Some(vpc),
                subnet,
            });
        }
    }
    if out.is_empty() {
        return Ok(out);
    }
    for ws in applied()? {
        let Ok(Some(state)) = ws.provider_state::<GcpState>() else { continue };
        let Some(subnet) = state.byo_workers_subnet.clone() else { continue };
        let vpc = state
            .last_applied
            .as_ref()
            .map(|applied| names::network_link(project, &names::vpc_name(&applied.infrastructure_config, &ws.shoot)));
        out.push(Member {
            shoot: ws.shoot.clone(),
            origin: "(applied, in state)".to_string(),
            in_fleet: false,
            vpc,
            subnet,
        });
    }
    Ok(out)
}

/// A BYO workers subnet referenced by more than one shoot: the fleet is refused.
fn shared_subnets(members: &[Member]) -> Result<(), ProviderError> {
    let mut users: BTreeMap<String, (&str, Vec<String>)> = BTreeMap::new();
    for m in members {
        users.entry(GceIds.key(&m.subnet)).or_insert_with(|| (&m.subnet, Vec::new())).1.push(m.label());
    }
    let shared: Vec<String> = users
        .values()
        .filter(|(_, shoots)| shoots.len() > 1)
        .map(|(subnet, shoots)| format!("workers subnet {subnet} is referenced by {}", shoots.join(" and ")))
        .collect();
    if shared.is_empty() {
        return Ok(());
    }
    Err(ProviderError::Fleet(format!(
        "{}; a BYO workers subnet (networks.subnetWorkers) must be dedicated to one shoot (shoots may share a VPC, not a workers subnet) — give each shoot its own subnet",
        shared.join("; ")
    )))
}

fn strs<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a str> {
    v.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

/// An enabled INGRESS allow rule of `vpc` (by name) that targets every VM of the VPC.
fn untargeted_allow(rule: &Value, vpc: &str) -> bool {
    let network = rule.get("network").and_then(Value::as_str).map(names::last_segment);
    let direction = rule.get("direction").and_then(Value::as_str).unwrap_or("INGRESS");
    let disabled = rule.get("disabled").and_then(Value::as_bool).unwrap_or(false);
    let allows = rule.get("allowed").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    network == Some(vpc)
        && direction == "INGRESS"
        && !disabled
        && allows
        && strs(rule, "targetTags").next().is_none()
        && strs(rule, "targetServiceAccounts").next().is_none()
}

/// The address ranges of a subnet's VMs and pods: primary, secondary, internal and external IPv6.
fn subnet_ranges(subnet: &Value) -> Vec<IpNet> {
    let mut out: Vec<&str> = Vec::new();
    for key in ["ipCidrRange", "ipv6CidrRange", "externalIpv6Prefix", "internalIpv6Prefix"] {
        out.extend(subnet.get(key).and_then(Value::as_str));
    }
    let secondary = subnet.get("secondaryIpRanges").and_then(Value::as_array).into_iter().flatten();
    out.extend(secondary.filter_map(|r| r.get("ipCidrRange").and_then(Value::as_str)));
    out.iter().filter_map(|s| s.parse().ok()).collect()
}

/// How many shoots a warning names before it says how many more there are.
const NAMED: usize = 5;

/// `a, b, c` — the first [`NAMED`] of `shoots`, then `and N more`, so that a VPC shared by thousands of
/// shoots gives warnings of one bounded line each.
fn some_of(shoots: &[&str]) -> String {
    let mut out = shoots.iter().take(NAMED).copied().collect::<Vec<_>>().join(", ");
    if shoots.len() > NAMED {
        out.push_str(&format!(" and {} more", shoots.len() - NAMED));
    }
    out
}

fn other(e: impl std::error::Error + Send + Sync + 'static) -> ProviderError {
    ProviderError::Other(Box::new(e))
}

fn overlaps(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

/// GCP's fleet checks (see the module doc): the refusal first, then the warnings.
pub async fn check(
    fleet: &[FleetShoot<'_>],
    applied: AppliedShoots<'_>,
    cloud: &dyn CloudRead,
    ctx: &CloudCtx,
) -> Result<Vec<FleetWarning>, ProviderError> {
    let project = ctx.account.as_str();
    let members = members(fleet, applied, project)?;
    shared_subnets(&members)?;

    // The VPCs (by name: one project) that two or more BYO shoots share, one of them planned now.
    let mut by_vpc: BTreeMap<&str, Vec<&Member>> = BTreeMap::new();
    for m in &members {
        if let Some(vpc) = &m.vpc {
            by_vpc.entry(names::last_segment(vpc)).or_default().push(m);
        }
    }
    by_vpc.retain(|_, ms| ms.len() > 1 && ms.iter().any(|m| m.in_fleet));
    if by_vpc.is_empty() {
        return Ok(Vec::new());
    }
    let mut observed = Observed::new(&GceIds);
    let global = names::global(project);
    observed.fetch(cloud, &ctx.retry, &[], &[ListReq::new(&global, collection::FIREWALLS)]).await.map_err(other)?;
    let rules = observed.list(&global, collection::FIREWALLS).map_err(other)?;
    let mut candidates: BTreeMap<&str, Vec<(&str, Vec<IpNet>)>> = BTreeMap::new();
    for (vpc, _) in by_vpc.iter() {
        for r in rules.iter().filter(|r| untargeted_allow(r, vpc)) {
            let name = r.get("name").and_then(Value::as_str).unwrap_or_else(|| {
                r.get("selfLink").and_then(Value::as_str).map(names::last_segment).unwrap_or("(unnamed)")
            });
            let sources: Vec<IpNet> = strs(r, "sourceRanges").filter_map(|s| s.parse().ok()).collect();
            candidates.entry(vpc).or_default().push((name, sources));
        }
    }
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let subnets: Vec<String> = candidates.keys().flat_map(|vpc| by_vpc[vpc].iter().map(|m| m.subnet.clone())).collect();
    let mut observed_subnets = Observed::new(&GceIds);
    observed_subnets.fetch(cloud, &ctx.retry, &subnets, &[]).await.map_err(other)?;

    let mut out = BTreeSet::new();
    for (vpc, rules) in &candidates {
        let group = &by_vpc[vpc];
        let mut shoots: Vec<&str> = group.iter().map(|m| m.shoot.as_str()).collect();
        shoots.sort_unstable();
        for (rule, sources) in rules {
            let mut reaching = Vec::new();
            for m in group {
                let ranges = observed_subnets.get(&m.subnet).map_err(other)?.map(subnet_ranges).unwrap_or_default();
                if ranges.iter().any(|r| sources.iter().any(|s| overlaps(r, s))) {
                    reaching.push(m.shoot.as_str());
                }
            }
            if reaching.is_empty() {
                continue;
            }
            reaching.sort_unstable();
            let srcs: Vec<String> = sources.iter().map(IpNet::to_string).collect();
            for m in group.iter().filter(|m| m.in_fleet) {
                out.insert(FleetWarning {
                    shoot: m.shoot.clone(),
                    message: format!(
                        "user-managed egress: firewall rule {rule} of VPC {vpc} in project {project} has no target tags or service accounts, so it applies to every VM in the VPC, and its source ranges ({}) include the nodes of {}: the shoots sharing this VPC ({}) can reach each other's nodes through it; scope it to one shoot, e.g.: gcloud compute firewall-rules update {rule} --project={project} --target-tags={}",
                        srcs.join(","),
                        some_of(&reaching),
                        some_of(&shoots),
                        m.shoot
                    ),
                });
            }
        }
    }
    Ok(out.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::some_of;

    #[test]
    fn regression_b5_warning_names_a_bounded_number_of_shoots() {
        assert_eq!(some_of(&["a", "b"]), "a, b");
        let many: Vec<String> = (0..5000).map(|i| format!("shoot--p--s{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            some_of(&many),
            "shoot--p--s0, shoot--p--s1, shoot--p--s2, shoot--p--s3, shoot--p--s4 and 4995 more"
        );
    }
}
