//! What a GCP plan hands to the rest of Gardener: the InfrastructureStatus (upstream's `getStatus`),
//! the egress CIDRs (`PatchProviderStatusAndState`), the status networking with the dual-stack IPv6
//! ranges, `cloudprovider.conf` (the `cloud-provider-config` chart as `getConfigChartValues` fills
//! it, with b10c0b5's subnetwork-name fallback) and the CCM's `--configure-cloud-routes`.

use super::api::{
    CloudRouter, InfrastructureConfig, InfrastructureStatus, Mode, NatIp, NetworkStatus, Purpose, Subnet, Vpc,
    API_VERSION, INFRASTRUCTURE_STATUS_KIND,
};
use super::desired::{address_res, ipv6_cidrs, nat_ip_names, subnet_names};
use super::names;
use super::Ctx;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use trellis_planner::discover::{NotFetched, Observed};
use trellis_plans::{Artifact, Artifacts, CloudProviderConfig, ConfigFormat};

/// The warning a BYO plan carries about its empty egress CIDRs (spec: "Status shape", E9).
pub const BYO_EGRESS_WARNING: &str = "user-managed egress: shoot.status.provider.egressCIDRs is empty — Gardener has no reliable way to know your egress IPs (your own Cloud NAT, an NVA, an on-prem gateway, or none at all); consumers of egressCIDRs must handle the empty case";

/// The InfrastructureStatus. Managed: the VPC, its router, the subnets, the NAT IPs of the user's
/// `natIPNames` addresses (none with auto-allocated NAT IPs: upstream reports only those), the
/// service account. BYO: the user's VPC and subnets with their purposes, no router, no NAT IPs, no
/// service account.
pub fn status(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<InfrastructureStatus, NotFetched> {
    let (nodes, services) = subnet_names(cfg, ctx);
    let mut subnets = vec![Subnet { name: nodes, purpose: Purpose::Nodes }];
    let mut vpc = Vpc { name: names::vpc_name(cfg, &ctx.tn), cloud_router: None };
    let mut nat_ips = Vec::new();
    let mut service_account_email = String::new();
    if cfg.mode() == Mode::Managed {
        if cfg.networks.internal.is_some() {
            subnets.push(Subnet { name: names::internal_subnet(&ctx.tn), purpose: Purpose::Internal });
        }
        vpc.cloud_router = Some(CloudRouter { name: names::router_name(cfg, &ctx.tn) });
        for name in nat_ip_names(cfg) {
            let ip = observed.get(&address_res(ctx, name).id)?.and_then(|a| a.get("address")).and_then(Value::as_str);
            nat_ips.push(NatIp { ip: ip.unwrap_or("(known after apply)").to_string() });
        }
        service_account_email = names::service_account_email(&ctx.project, &ctx.tn);
    }
    if let Some(s) = services.filter(|_| ctx.dual_stack()) {
        subnets.push(Subnet { name: s, purpose: Purpose::Services });
    }
    Ok(InfrastructureStatus {
        api_version: API_VERSION.to_string(),
        kind: INFRASTRUCTURE_STATUS_KIND.to_string(),
        networks: NetworkStatus { vpc, subnets, nat_ips, ip_families: ctx.ip_families.clone() },
        service_account_email,
    })
}

/// `status.egressCIDRs`: the NAT IPs as /32 (plus the nodes' IPv6 range in dual-stack when there are
/// IPv4 ones, as upstream); `None` in user-managed egress (empty: Gardener cannot know them).
pub fn egress_cidrs(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
) -> Result<Option<Vec<String>>, NotFetched> {
    if cfg.mode() != Mode::Managed {
        return Ok(None);
    }
    let mut out: Vec<String> = status(cfg, ctx, observed)?
        .networks
        .nat_ips
        .into_iter()
        .map(|ip| if ip.ip.starts_with('(') { ip.ip } else { format!("{}/32", ip.ip) })
        .collect();
    if !out.is_empty() {
        if let Some(v6) = ipv6_cidrs(cfg, ctx, observed)?.nodes {
            out.push(v6);
        }
    }
    Ok(Some(out))
}

/// `status.networking` as `PatchProviderStatusAndState` writes it: the shoot's ranges, and in
/// dual-stack the nodes subnet's IPv6 range (nodes and pods) and the /108 of the services subnet's.
pub fn status_networking(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Value, NotFetched> {
    let mut nodes: Vec<String> = ctx.nodes.iter().cloned().collect();
    let mut pods: Vec<String> = ctx.pods.iter().cloned().collect();
    let mut services: Vec<String> = ctx.services.iter().cloned().collect();
    if ctx.dual_stack() {
        let v6 = ipv6_cidrs(cfg, ctx, observed)?;
        let later = || "(known after apply)".to_string();
        let n = v6.nodes.unwrap_or_else(later);
        nodes.push(n.clone());
        pods.push(n);
        services.push(v6.services.unwrap_or_else(later));
    }
    Ok(json!({"nodes": nodes, "pods": pods, "services": services}))
}

/// `cloudprovider.conf`: the chart's template rendered with `getConfigChartValues`' values.
/// `subnetwork-name` is the internal subnet, or in user-managed egress the workers subnet (b10c0b5's
/// fallback); the line is left out when empty, as the template's `if` does.
pub fn cloud_provider_config(cfg: &InfrastructureConfig, ctx: &Ctx) -> CloudProviderConfig {
    let network = names::vpc_name(cfg, &ctx.tn);
    let subnetwork = match cfg.mode() {
        Mode::UserManagedEgress { workers, .. } => workers.name.clone(),
        Mode::Managed => cfg.networks.internal.as_ref().map(|_| names::internal_subnet(&ctx.tn)).unwrap_or_default(),
    };
    let mut values = serde_json::Map::new();
    values.insert("project-id".into(), json!(ctx.project));
    values.insert("network-name".into(), json!(network));
    if !subnetwork.is_empty() {
        values.insert("subnetwork-name".into(), json!(subnetwork));
    }
    values.insert("multizone".into(), json!(true));
    values.insert("local-zone".into(), json!(ctx.zone));
    values.insert("token-url".into(), json!("nil"));
    values.insert("node-tags".into(), json!(ctx.tn));
    let mut content = String::from("[Global]\n");
    content.push_str(&format!("project-id=\"{}\"\n", ctx.project));
    content.push_str(&format!("network-name=\"{network}\"\n"));
    if !subnetwork.is_empty() {
        content.push_str(&format!("subnetwork-name=\"{subnetwork}\"\n"));
    }
    content.push_str("multizone=true\n");
    content.push_str(&format!("local-zone=\"{}\"\n", ctx.zone));
    content.push_str("token-url=nil\n");
    content.push_str(&format!("node-tags=\"{}\"\n", ctx.tn));
    CloudProviderConfig { file_name: "cloudprovider.conf".to_string(), format: ConfigFormat::Ini, values, content }
}

/// The CCM's `--configure-cloud-routes`: false in dual-stack (alias IPs, upstream and spec); true in
/// user-managed egress single-stack (the spec: per-node routes in the user's VPC; turning it off for
/// overlay CNIs is out of the spec's scope); otherwise upstream's `!overlay`.
pub fn configure_cloud_routes(cfg: &InfrastructureConfig, ctx: &Ctx) -> bool {
    if ctx.dual_stack() {
        return false;
    }
    match cfg.mode() {
        Mode::UserManagedEgress { .. } => true,
        Mode::Managed => !ctx.overlay,
    }
}

/// Every artifact of a GCP plan.
pub fn artifacts(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Artifacts, NotFetched> {
    let status = serde_json::to_value(status(cfg, ctx, observed)?).unwrap_or(Value::Null);
    // `status_networking` stays under `named`, where GCP plan files have always had it (their digests).
    let named = BTreeMap::from([("status_networking".to_string(), status_networking(cfg, ctx, observed)?)]);
    Ok(Artifacts::new()
        .with(Artifact::InfrastructureStatus(status))
        .with(Artifact::EgressCidrs(egress_cidrs(cfg, ctx, observed)?))
        .with(Artifact::CloudProviderConfig(cloud_provider_config(cfg, ctx)))
        .with(Artifact::CcmFlags(BTreeMap::from([(
            "configure-cloud-routes".to_string(),
            configure_cloud_routes(cfg, ctx),
        )])))
        .with(Artifact::Named(named)))
}
