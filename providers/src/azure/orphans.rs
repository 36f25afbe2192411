//! Orphan report: what the runtime writers left on the user's NSG and route table.
//!
//! The spec leaves pruning to the user ("No cleanup of orphan routes or NSG rules on shoot deletion").
//! trellis never deletes them either, but after a destroy it lists them with the command to prune each:
//! - NSG rules the CCM wrote for Services of type LoadBalancer (`k8s-azure-lb_*`),
//! - NSG rules of the bastion controller (`<bastion>-allow-ssh-ipv4|-allow-ssh-ipv6|-egress-worker|-deny-all`),
//! - routes the CCM's route controller wrote: one per node, for the node's pod CIDR (inside
//!   `networking.pods`); the user's own routes (a default route to a firewall) point elsewhere.

use super::api::InfrastructureConfig;
use super::byo::discovered;
use super::kind;
use super::Ctx;
use ipnet::IpNet;
use serde_json::Value;
use trellis_planner::discover::{NotFetched, Observed};

/// Prefix of the NSG rules the Azure CCM writes (upstream cloud-provider-azure).
pub const CCM_RULE_PREFIX: &str = "k8s-azure-lb_";
/// Suffixes of the bastion controller's four rules.
pub const BASTION_RULE_SUFFIXES: [&str; 4] = ["-allow-ssh-ipv4", "-allow-ssh-ipv6", "-egress-worker", "-deny-all"];

/// One artifact a runtime writer left behind (`prune`: the Azure CLI command that removes it).
pub use crate::provider::Orphan;

/// The orphans on the BYO subnet's NSG and route table (none in managed mode: those go with the
/// cluster resource group). The subnet, its NSG and route table must have been fetched.
pub fn orphans(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<Orphan>, NotFetched> {
    if !cfg.is_using_user_managed_egress() {
        return Ok(Vec::new());
    }
    let found = discovered(cfg, ctx, observed)?;
    let mut out = Vec::new();
    if let (Some(nsg_id), Some(nsg)) = (&found.nsg_id, &found.nsg) {
        for rule in children(observed.get(nsg_id)?, "/properties/securityRules") {
            let Some(name) = rule.get("name").and_then(Value::as_str) else { continue };
            let writer = if name.starts_with(CCM_RULE_PREFIX) {
                "cloud-controller-manager (Service of type LoadBalancer)"
            } else if BASTION_RULE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                "bastion controller"
            } else {
                continue;
            };
            out.push(Orphan {
                kind: kind::SECURITY_RULE,
                id: format!("{nsg_id}/securityRules/{name}"),
                writer,
                prune: format!(
                    "az network nsg rule delete --subscription {} -g {} --nsg-name {} -n {name}",
                    nsg.subscription, nsg.resource_group, nsg.name
                ),
            });
        }
    }
    let pods = ctx.pods.as_deref().and_then(|p| p.parse::<IpNet>().ok());
    if let (Some(rt_id), Some(rt), Some(pods)) = (&found.route_table_id, &found.route_table, pods) {
        for route in children(observed.get(rt_id)?, "/properties/routes") {
            let Some(name) = route.get("name").and_then(Value::as_str) else { continue };
            let prefix = route
                .pointer("/properties/addressPrefix")
                .and_then(Value::as_str)
                .and_then(|p| p.parse::<IpNet>().ok());
            if prefix.is_some_and(|p| pods.contains(&p)) {
                out.push(Orphan {
                    kind: kind::ROUTE,
                    id: format!("{rt_id}/routes/{name}"),
                    writer: "cloud-controller-manager (per-node pod-CIDR route)",
                    prune: format!(
                        "az network route-table route delete --subscription {} -g {} --route-table-name {} -n {name}",
                        rt.subscription, rt.resource_group, rt.name
                    ),
                });
            }
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

fn children<'a>(resource: Option<&'a Value>, pointer: &str) -> Vec<&'a Value> {
    resource.and_then(|r| r.pointer(pointer)).and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default()
}

/// Reads the subnet, its NSG and route table, and lists the orphans on them.
pub async fn scan(
    shoot: &super::AzureShoot,
    cloud: &dyn trellis_planner::cloud::CloudRead,
    retry: &trellis_planner::retry::RetryPolicy,
    subscription: &str,
) -> Result<Vec<Orphan>, crate::provider::ProviderError> {
    let cfg = &shoot.spec.provider.infrastructure_config;
    if !cfg.is_using_user_managed_egress() {
        return Ok(Vec::new());
    }
    let ctx = Ctx::new(shoot, subscription, &Default::default());
    let mut observed = Observed::new(&trellis_planner::ids::ArmIds);
    observed.fetch(cloud, retry, &super::desired::discovery_round1(cfg, &ctx), &[]).await?;
    // Round two of a BYO shoot is exactly the subnet's route table and NSG.
    let (ids, _) =
        super::desired::discovery_round2(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure orphans discovery"))?;
    observed.fetch(cloud, retry, &ids, &[]).await?;
    Ok(orphans(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure orphans"))?)
}
