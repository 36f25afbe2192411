//! Plan warnings: what upstream leaves to documentation, trellis checks.
//!
//! - The route table approaching Azure's 400-route limit: with cloud routes on, the CCM writes one route
//!   per node, so the workers' maximum node count plus the routes already there must fit.
//! - A rule on the user's NSG that blocks a flow Kubernetes needs (spec: "User responsibilities").
//! - A BYO subnet that is not dedicated to the shoot: delegated to a service, linked to another
//!   service (service association links), or already hosting IP configurations of resources outside
//!   the shoot's cluster resource group (spec: the subnet must be dedicated to one shoot).

use super::api::InfrastructureConfig;
use super::byo::discovered;
use super::desired::vnet;
use super::names::{self, rtype};
use super::render::configure_cloud_routes;
use super::Ctx;
use ipnet::IpNet;
use serde_json::Value;
use trellis_planner::discover::{NotFetched, Observed};

/// Azure's default limit of routes per route table.
pub const ROUTE_LIMIT: i64 = 400;

/// The plan's warnings. The route table, the BYO subnet and its NSG must have been fetched; a
/// resource looked up and absent (created by this plan) warns about nothing.
pub fn warnings(cfg: &InfrastructureConfig, ctx: &Ctx, observed: &Observed) -> Result<Vec<String>, NotFetched> {
    let mut out = Vec::new();
    let found = discovered(cfg, ctx, observed)?;
    let rt_id = match &cfg.networks.subnet {
        Some(_) => found.route_table_id.clone(),
        None => Some(names::resource_id(&ctx.sub, &ctx.tn, rtype::ROUTE_TABLE, names::ROUTE_TABLE_NAME)),
    };
    if configure_cloud_routes(cfg, ctx) {
        if let Some(rt_id) = rt_id {
            out.extend(route_limit(ctx, &rt_id, observed.get(&rt_id)?));
        }
    }
    if let (Some(_), Some(nsg_id)) = (&cfg.networks.subnet, &found.nsg_id) {
        if let Some(nsg) = observed.get(nsg_id)? {
            let subnet = found.prefixes.as_ref().and_then(|p| p.parsed().ok()).unwrap_or_default();
            out.extend(blocked_flows(nsg_id, nsg, &subnet));
        }
    }
    if let Some(subnet) = &cfg.networks.subnet {
        let (vnet_rg, vnet_name, _) = vnet(cfg, ctx);
        let id = names::subnet_id(&ctx.sub, &vnet_rg, &vnet_name, &subnet.name);
        if let Some(live) = observed.get(&id)? {
            out.extend(not_dedicated(ctx, &id, live));
        }
    }
    Ok(out)
}

/// The BYO subnet must be dedicated to the shoot, and able to host its machines. ARM shows what else
/// uses it: `delegations[]` (reserved for a service), `serviceAssociationLinks[]` (a service holds
/// it), `ipConfigurations[]` (NICs, load balancer frontends, private endpoints… in it). The shoot's own
/// machines, bastion and internal load balancers live in its cluster resource group and do not count.
fn not_dedicated(ctx: &Ctx, id: &str, subnet: &Value) -> Vec<String> {
    let list = |p: &str| subnet.pointer(p).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("?").to_string();
    let mut out = Vec::new();
    let delegations = list("/properties/delegations");
    if !delegations.is_empty() {
        let shown: Vec<String> = delegations
            .iter()
            .map(|d| format!("{} (delegation {})", text(d, "/properties/serviceName"), text(d, "/name")))
            .collect();
        out.push(format!(
            "subnet {id} is delegated to {}: a delegated subnet is reserved for that service, so it is not dedicated to this shoot, and Azure may refuse the shoot's machines in it; remove the delegation or use a subnet dedicated to this shoot",
            shown.join(", ")
        ));
    }
    let links = list("/properties/serviceAssociationLinks");
    if !links.is_empty() {
        let shown: Vec<String> = links
            .iter()
            .map(|l| format!("{} ({})", text(l, "/name"), text(l, "/properties/linkedResourceType")))
            .collect();
        out.push(format!(
            "subnet {id} has service association link {}: another service holds the subnet, so it is not dedicated to this shoot; release the subnet from that service or use a subnet dedicated to this shoot",
            shown.join(", ")
        ));
    }
    let cluster_rg = format!("/resourcegroups/{}/", ctx.tn.to_ascii_lowercase());
    let foreign: Vec<String> = list("/properties/ipConfigurations")
        .iter()
        .map(|c| text(c, "/id"))
        .filter(|c| !c.to_ascii_lowercase().contains(&cluster_rg))
        .collect();
    if !foreign.is_empty() {
        out.push(format!(
            "subnet {id} already hosts {} IP configuration(s) of other resources ({}): the subnet is not dedicated to this shoot and their addresses are not available to its machines; move those resources out or use a subnet dedicated to this shoot",
            foreign.len(),
            foreign.join(", ")
        ));
    }
    out
}

fn route_limit(ctx: &Ctx, rt_id: &str, rt: Option<&Value>) -> Option<String> {
    let pods = ctx.pods.as_deref().and_then(|p| p.parse::<IpNet>().ok());
    let routes =
        rt.and_then(|rt| rt.pointer("/properties/routes")).and_then(Value::as_array).cloned().unwrap_or_default();
    // Per-node routes the CCM already wrote point at pod CIDRs; everything else is the user's.
    let others = routes
        .iter()
        .filter(|r| {
            let prefix =
                r.pointer("/properties/addressPrefix").and_then(Value::as_str).and_then(|p| p.parse::<IpNet>().ok());
            !matches!((pods, prefix), (Some(pods), Some(p)) if pods.contains(&p))
        })
        .count() as i64;
    let needed = others + ctx.max_nodes;
    let name =
        names::parse_id(rt_id).map(|p| format!("{}/{}", p.resource_group, p.name)).unwrap_or_else(|| rt_id.to_string());
    if needed > ROUTE_LIMIT {
        Some(format!(
            "route table {name}: {others} existing route(s) plus one per node for up to {} nodes is {needed}, over Azure's limit of {ROUTE_LIMIT} routes per route table; lower the workers' maximum, use an overlay CNI, or ask Azure support to raise the limit (up to 1000)",
            ctx.max_nodes
        ))
    } else if needed * 10 > ROUTE_LIMIT * 8 {
        Some(format!(
            "route table {name}: {others} existing route(s) plus one per node for up to {} nodes is {needed} of Azure's limit of {ROUTE_LIMIT} routes per route table",
            ctx.max_nodes
        ))
    } else {
        None
    }
}

/// A flow Kubernetes needs through the subnet's NSG.
struct Flow {
    inbound: bool,
    /// Service tag or `*` for the other end.
    peer: &'static str,
    port: u16,
    why: &'static str,
}

const FLOWS: [Flow; 4] = [
    Flow { inbound: true, peer: "VirtualNetwork", port: 10250, why: "node-to-node and API server-to-kubelet traffic" },
    Flow { inbound: true, peer: "AzureLoadBalancer", port: 30000, why: "load balancer health probes to NodePorts (30000-32767)" },
    Flow { inbound: false, peer: "VirtualNetwork", port: 10250, why: "node-to-node traffic" },
    Flow {
        inbound: false,
        peer: "Internet",
        port: 443,
        why: "the API server, Azure Resource Manager and image registries (unless you reach them through private endpoints)",
    },
];

/// `subnet`: the nodes' prefixes (every prefix of the BYO subnet).
fn blocked_flows(nsg_id: &str, nsg: &Value, subnet: &[IpNet]) -> Vec<String> {
    let mut rules: Vec<&Value> = nsg
        .pointer("/properties/securityRules")
        .and_then(Value::as_array)
        .map(|r| r.iter().collect())
        .unwrap_or_default();
    rules.sort_by_key(|r| r.pointer("/properties/priority").and_then(Value::as_i64).unwrap_or(i64::MAX));
    let name = names::parse_id(nsg_id)
        .map(|p| format!("{}/{}", p.resource_group, p.name))
        .unwrap_or_else(|| nsg_id.to_string());
    let mut out = Vec::new();
    for flow in &FLOWS {
        let Some(first) = rules.iter().find(|r| matches_flow(r, flow, subnet)) else { continue };
        let p = |k: &str| first.pointer(&format!("/properties/{k}")).cloned().unwrap_or(Value::Null);
        if p("access").as_str().is_some_and(|a| a.eq_ignore_ascii_case("deny")) {
            out.push(format!(
                "NSG {name}: rule {} (priority {}, Deny) blocks {} TCP {} {} {}, which Kubernetes needs for {}; add an Allow rule with a lower priority number",
                first.get("name").and_then(Value::as_str).unwrap_or("?"),
                p("priority"),
                if flow.inbound { "inbound" } else { "outbound" },
                flow.port,
                if flow.inbound { "from" } else { "to" },
                flow.peer,
                flow.why
            ));
        }
    }
    out
}

fn matches_flow(rule: &Value, flow: &Flow, subnet: &[IpNet]) -> bool {
    let p = |k: &str| rule.pointer(&format!("/properties/{k}"));
    let direction = p("direction").and_then(Value::as_str).unwrap_or("");
    if !direction.eq_ignore_ascii_case(if flow.inbound { "Inbound" } else { "Outbound" }) {
        return false;
    }
    let protocol = p("protocol").and_then(Value::as_str).unwrap_or("*");
    if protocol != "*" && !protocol.eq_ignore_ascii_case("tcp") {
        return false;
    }
    let ports = strings(p("destinationPortRange"), p("destinationPortRanges"));
    if !ports.iter().any(|r| port_in(r, flow.port)) {
        return false;
    }
    // The rule must cover both ends: the peer, and the nodes on our side (a rule scoped to one
    // machine, like the bastion's deny-all from the bastion's own address, does not block the nodes).
    let (peer, ours) = if flow.inbound { ("source", "destination") } else { ("destination", "source") };
    let covers = |side: &str, tag: &str| {
        strings(p(&format!("{side}AddressPrefix")), p(&format!("{side}AddressPrefixes")))
            .iter()
            .any(|prefix| prefix_covers(prefix, tag, subnet))
    };
    covers(peer, flow.peer) && covers(ours, "VirtualNetwork")
}

fn strings(one: Option<&Value>, many: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = one.and_then(Value::as_str).map(|s| vec![s.to_string()]).unwrap_or_default();
    if let Some(list) = many.and_then(Value::as_array) {
        out.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
    }
    out
}

fn port_in(range: &str, port: u16) -> bool {
    match range.split_once('-') {
        _ if range == "*" => true,
        Some((a, b)) => {
            matches!((a.trim().parse::<u16>(), b.trim().parse::<u16>()), (Ok(a), Ok(b)) if a <= port && port <= b)
        }
        None => range.trim().parse::<u16>() == Ok(port),
    }
}

/// Whether a rule's prefix covers the tag's addresses; for the nodes (`VirtualNetwork`), a prefix that
/// covers any of the subnet's prefixes blocks the nodes there.
fn prefix_covers(prefix: &str, tag: &str, subnet: &[IpNet]) -> bool {
    if prefix == "*" || prefix.eq_ignore_ascii_case(tag) {
        return true;
    }
    let Ok(net) = prefix.parse::<IpNet>() else { return false };
    match tag {
        "VirtualNetwork" => subnet.iter().any(|s| net.contains(s)),
        "Internet" => net.prefix_len() == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nsg(rules: Value) -> Value {
        json!({"properties": {"securityRules": rules}})
    }

    #[test]
    fn a_deny_all_inbound_rule_is_reported_once_per_blocked_flow() {
        let n = nsg(json!([
            {"name": "deny-all-in", "properties": {"priority": 100, "access": "Deny", "direction": "Inbound", "protocol": "*",
              "sourceAddressPrefix": "*", "destinationAddressPrefix": "*", "destinationPortRange": "*"}}
        ]));
        let w = blocked_flows(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n",
            &n,
            &[],
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with(
            "NSG rg/n: rule deny-all-in (priority 100, Deny) blocks inbound TCP 10250 from VirtualNetwork"
        ));
    }

    #[test]
    fn an_earlier_allow_wins_and_unrelated_denies_are_quiet() {
        let n = nsg(json!([
            {"name": "allow-vnet", "properties": {"priority": 100, "access": "Allow", "direction": "Inbound", "protocol": "Tcp",
              "sourceAddressPrefix": "VirtualNetwork", "destinationAddressPrefix": "*", "destinationPortRange": "*"}},
            {"name": "deny-vnet", "properties": {"priority": 200, "access": "Deny", "direction": "Inbound", "protocol": "*",
              "sourceAddressPrefix": "VirtualNetwork", "destinationAddressPrefix": "*", "destinationPortRange": "*"}},
            {"name": "deny-rdp", "properties": {"priority": 150, "access": "Deny", "direction": "Inbound", "protocol": "Tcp",
              "sourceAddressPrefix": "*", "destinationAddressPrefix": "*", "destinationPortRange": "3389"}},
            {"name": "deny-udp-out", "properties": {"priority": 150, "access": "Deny", "direction": "Outbound", "protocol": "Udp",
              "sourceAddressPrefix": "*", "destinationAddressPrefix": "*", "destinationPortRange": "*"}}
        ]));
        assert!(blocked_flows("x", &n, &[]).is_empty());
    }

    #[test]
    fn a_deny_scoped_to_one_machine_does_not_block_the_nodes() {
        let n = nsg(json!([
            {"name": "bastion-deny-all", "properties": {"priority": 1000, "access": "Deny", "direction": "Outbound", "protocol": "*",
              "sourceAddressPrefix": "10.250.0.9/32", "destinationAddressPrefix": "*", "destinationPortRange": "*"}}
        ]));
        assert!(blocked_flows("x", &n, &["10.250.0.0/19".parse().unwrap()]).is_empty());
    }

    #[test]
    fn port_ranges_and_prefixes() {
        assert!(port_in("30000-32767", 30000) && port_in("*", 1) && port_in("443", 443) && !port_in("80", 443));
        let subnet: IpNet = "10.250.0.0/19".parse().unwrap();
        assert!(prefix_covers("10.250.0.0/16", "VirtualNetwork", &[subnet]));
        assert!(!prefix_covers("10.251.0.0/16", "VirtualNetwork", &[subnet]));
        assert!(prefix_covers("0.0.0.0/0", "Internet", &[]));
        // A rule covering the second prefix of a subnet shown with `addressPrefixes` blocks its nodes.
        let second: IpNet = "10.251.0.0/24".parse().unwrap();
        assert!(prefix_covers("10.251.0.0/16", "VirtualNetwork", &[subnet, second]));
    }
}
