//! Artifacts: the InfrastructureStatus, azure.json, CCM flags, allow-egress and egress CIDRs.
//!
//! Upstream sources: `GetInfrastructureStatus` (reference §2.3), the cloud-provider-config chart and
//! `getConfigChartValues` (§4), `deployAllowEgressChart` (§4); user-managed egress per the spec's
//! "Status shape", "Cloud-provider config" and "allow-egress" sections.

use super::api::{self, InfrastructureConfig, InfrastructureStatus, OutboundAccessType};
use super::byo::discovered;
use super::desired::{layout, outbound_access_type, vnet};
use super::names::{self, rtype};
use super::Ctx;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use trellis_planner::discover::{NotFetched, Observed};
use trellis_plans::{Action, Artifact, Artifacts, CloudProviderConfig, ConfigFormat, Node};

/// Shown where a value only exists after apply (a public IP's address).
pub const KNOWN_AFTER_APPLY: &str = "(known after apply)";
/// Stands in for credentials: trellis never reads or prints secrets.
pub const FROM_SECRET: &str = "(from the shoot's cloudprovider secret)";

/// The artifacts after this plan is applied. Reads the identity, the BYO subnet's associations and the
/// NAT public IPs, all of which discovery must have fetched. `nodes` are the plan's nodes (none after an
/// apply): a resource the plan replaces shows the values ARM assigns on create as known after apply.
pub fn artifacts(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
    nodes: &[Node],
) -> Result<Artifacts, NotFetched> {
    let status = status(cfg, ctx, observed)?;
    let outbound = outbound_access_type(cfg, ctx);
    let mut ccm_flags = BTreeMap::new();
    ccm_flags.insert("configure-cloud-routes".to_string(), configure_cloud_routes(cfg, ctx));
    Ok(Artifacts::new()
        .with(Artifact::InfrastructureStatus(serde_json::to_value(&status).expect("status serialises")))
        .with(Artifact::EgressCidrs(egress_cidrs(cfg, ctx, observed, nodes)?))
        .with(Artifact::CloudProviderConfig(azure_json(cfg, ctx, &status)))
        .with(Artifact::CcmFlags(ccm_flags))
        .with(Artifact::AllowEgress(allow_egress(ctx, outbound))))
}

/// `--configure-cloud-routes`: true in managed mode (upstream hard-codes it); in user-managed-egress
/// mode false exactly when the shoot runs an overlay CNI.
pub fn configure_cloud_routes(cfg: &InfrastructureConfig, ctx: &Ctx) -> bool {
    !cfg.is_using_user_managed_egress() || !ctx.overlay
}

/// Upstream `deployAllowEgressChart`: the skip annotation wins; otherwise only in LoadBalancer mode.
pub fn allow_egress(ctx: &Ctx, outbound: OutboundAccessType) -> bool {
    ctx.annotation(api::SHOOT_SKIP_ALLOW_EGRESS_DEPLOYMENT) != Some("true")
        && outbound == OutboundAccessType::LoadBalancer
}

/// NAT public IPs as /32; `None` in user-managed-egress mode (Gardener cannot know the user's egress).
/// An address is known only for a public IP that exists and that the plan does not replace: ARM
/// allocates a new address to every public IP it creates. An IP looked up and absent (or without an
/// address yet) is known after apply.
pub fn egress_cidrs(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    observed: &Observed,
    nodes: &[Node],
) -> Result<Option<Vec<String>>, NotFetched> {
    if cfg.is_using_user_managed_egress() {
        return Ok(None);
    }
    let replaced = |id: &str| {
        nodes
            .iter()
            .any(|n| n.action() == Action::Replace && n.id.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(id)))
    };
    let mut out = Vec::new();
    for s in layout(cfg, ctx) {
        for ip_id in s.nat.iter().flat_map(|n| n.ip_ids(ctx)) {
            let live = if replaced(&ip_id) { None } else { observed.get(&ip_id)? };
            match live.and_then(|ip| ip.pointer("/properties/ipAddress")).and_then(Value::as_str) {
                Some(address) => out.push(format!("{address}/32")),
                None => out.push(KNOWN_AFTER_APPLY.to_string()),
            }
        }
    }
    Ok(Some(out))
}

/// The InfrastructureStatus upstream would write after this reconcile.
pub fn status(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<InfrastructureStatus, NotFetched> {
    let (vnet_rg, vnet_name, vnet_managed) = vnet(cfg, ctx);
    let mut st = InfrastructureStatus {
        api_version: api::API_VERSION.to_string(),
        kind: api::INFRASTRUCTURE_STATUS_KIND.to_string(),
        ..InfrastructureStatus::default()
    };
    st.networks.vnet.name = vnet_name;
    st.networks.vnet.resource_group = (!vnet_managed).then_some(vnet_rg);
    st.resource_group.name = ctx.tn.clone();
    st.zoned = cfg.zoned;
    st.networks.outbound_access_type = outbound_access_type(cfg, ctx);
    if let Some(identity) = &cfg.identity {
        let id = names::resource_id(&ctx.sub, &identity.resource_group, rtype::IDENTITY, &identity.name);
        let client_id = observed
            .get(&id)?
            .and_then(|v| v.pointer("/properties/clientId"))
            .and_then(Value::as_str)
            .unwrap_or(KNOWN_AFTER_APPLY)
            .to_string();
        st.identity = Some(api::IdentityStatus { id, client_id, acr_access: identity.acr_access.unwrap_or(false) });
    }
    if let Some(subnet) = &cfg.networks.subnet {
        let found = discovered(cfg, ctx, observed)?;
        st.networks.layout = api::NetworkLayout::SingleSubnet;
        st.networks.subnets = vec![api::Subnet {
            name: subnet.name.clone(),
            purpose: api::Purpose::Nodes,
            zone: None,
            migrated: false,
            nat_gateway_id: None,
        }];
        st.route_tables = found
            .route_table
            .iter()
            .map(|rt| api::RouteTable {
                purpose: api::Purpose::Nodes,
                name: rt.name.clone(),
                resource_group: Some(rt.resource_group.clone()),
            })
            .collect();
        st.security_groups = found
            .nsg
            .iter()
            .map(|nsg| api::SecurityGroup {
                purpose: api::Purpose::Nodes,
                name: nsg.name.clone(),
                resource_group: Some(nsg.resource_group.clone()),
            })
            .collect();
        return Ok(st);
    }
    st.networks.layout = if cfg.networks.zones.is_empty() {
        api::NetworkLayout::SingleSubnet
    } else {
        api::NetworkLayout::MultipleSubnet
    };
    st.networks.subnets = layout(cfg, ctx)
        .into_iter()
        .map(|s| api::Subnet {
            nat_gateway_id: s.nat.as_ref().map(|n| n.id(ctx)),
            name: s.name,
            purpose: api::Purpose::Nodes,
            zone: s.zone.map(|z| z.to_string()),
            migrated: s.migrated,
        })
        .collect();
    st.route_tables = vec![api::RouteTable {
        purpose: api::Purpose::Nodes,
        name: names::ROUTE_TABLE_NAME.to_string(),
        resource_group: None,
    }];
    st.security_groups =
        vec![api::SecurityGroup { purpose: api::Purpose::Nodes, name: names::nsg_name(&ctx.tn), resource_group: None }];
    Ok(st)
}

/// azure.json (Secret `cloud-provider-config`, key `cloudprovider.conf`), keys in upstream's order.
pub fn azure_json(cfg: &InfrastructureConfig, ctx: &Ctx, status: &InfrastructureStatus) -> CloudProviderConfig {
    // Upstream `getConfigChartValues`: the first nodes subnet (any zone), the nodes route table and NSG;
    // an empty name where there is none (a BYO overlay shoot without a route table).
    let subnet = api::find_subnet_by_purpose_and_zone(&status.networks.subnets, api::Purpose::Nodes, None);
    let rt = status.route_tables.iter().find(|r| r.purpose == api::Purpose::Nodes);
    let nsg = status.security_groups.iter().find(|r| r.purpose == api::Purpose::Nodes);
    let max_nodes = ctx.max_nodes;
    let mut v = Map::new();
    let mut put = |k: &str, val: Value| {
        v.insert(k.to_string(), val);
    };
    put("aadClientId", json!(FROM_SECRET));
    put("aadClientSecret", json!(FROM_SECRET));
    put("tenantId", json!(FROM_SECRET));
    put("subscriptionId", json!(ctx.sub));
    put("cloud", json!("AZUREPUBLICCLOUD"));
    put("location", json!(ctx.region));
    put("resourceGroup", json!(status.resource_group.name));
    put("routeTableName", json!(rt.map_or("", |r| r.name.as_str())));
    put("securityGroupName", json!(nsg.map_or("", |r| r.name.as_str())));
    put("subnetName", json!(subnet.map_or("", |s| s.name.as_str())));
    put("vnetName", json!(status.networks.vnet.name));
    if let Some(rg) = &status.networks.vnet.resource_group {
        put("vnetResourceGroup", json!(rg));
    }
    // Spec (Cloud-provider config, concern 2): emitted only when the resource lives outside the cluster RG.
    let foreign = |rg: Option<&String>| rg.filter(|rg| !rg.eq_ignore_ascii_case(&status.resource_group.name)).cloned();
    if let Some(rg) = foreign(rt.and_then(|r| r.resource_group.as_ref())) {
        put("routeTableResourceGroup", json!(rg));
    }
    if let Some(rg) = foreign(nsg.and_then(|r| r.resource_group.as_ref())) {
        put("securityGroupResourceGroup", json!(rg));
    }
    put("loadBalancerSku", json!("standard"));
    if status.networks.outbound_access_type == OutboundAccessType::UserManaged {
        put("disableOutboundSNAT", json!(true));
    }
    put("vmType", json!(if cfg.zoned { "standard" } else { "vmss" }));
    put("cloudProviderBackoff", json!(true));
    put("cloudProviderBackoffRetries", json!(6));
    put("cloudProviderBackoffExponent", json!(1.5));
    put("cloudProviderBackoffDuration", json!(5));
    put("cloudProviderBackoffJitter", json!(1.0));
    put("cloudProviderRateLimit", json!(true));
    put("cloudProviderRateLimitQPS", json!(max_nodes.max(10)));
    put("cloudProviderRateLimitBucket", json!(max_nodes.max(100)));
    put("cloudProviderRateLimitQPSWrite", json!(max_nodes.max(10)));
    put("cloudProviderRateLimitBucketWrite", json!(max_nodes.max(100)));
    let content = v
        .iter()
        .map(|(k, val)| match val {
            Value::String(s) => format!("{k}: \"{s}\"\n"),
            other => format!("{k}: {other}\n"),
        })
        .collect();
    CloudProviderConfig { file_name: "azure.json".to_string(), format: ConfigFormat::Yaml, values: v, content }
}
