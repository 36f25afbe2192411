//! Plausible Azure plans built in code, for the renderer and diff tests.
//!
//! The values follow provider-azure's names (`worker_route_table`, `<tn>-workers`, `<tn>-nodes`) and the
//! azure.json key order of the upstream chart, so the snapshots read like real plans.
#![allow(dead_code)]

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use trellis_plans::*;

pub const SUB: &str = "00000000-0000-0000-0000-0000000000a1";
pub const TENANT: &str = "00000000-0000-0000-0000-0000000000b2";
pub const REGION: &str = "westeurope";

/// `/subscriptions/SUB/resourceGroups/RG` plus an optional provider path.
pub fn arm(rg: &str, rest: &str) -> String {
    let base = format!("/subscriptions/{SUB}/resourceGroups/{rg}");
    if rest.is_empty() {
        base
    } else {
        format!("{base}/providers/Microsoft.Network/{rest}")
    }
}

/// A node with the common fields; the operation's data (`changes`, `patch`, `checks`) and `depends_on`
/// are filled in by the caller.
pub fn node(address: &str, kind: Kind, scope: &str, name: &str, action: Action, ownership: Ownership) -> Node {
    let n = Node {
        address: address.to_string(),
        kind,
        name: name.to_string(),
        scope: scope.to_string(),
        id: None,
        op: op(action, ownership),
        reason: Reason::new(code_of(action, ownership), ""),
        depends_on: Vec::new(),
        observed: None,
    };
    assert_eq!(n.ownership(), ownership, "{address}: a plan has no {ownership:?} node with action {action:?}");
    n
}

/// The code a node of this action and ownership most often has (callers that say more set their own).
pub fn code_of(action: Action, ownership: Ownership) -> ReasonCode {
    match (action, ownership) {
        (Action::Create, _) => ReasonCode::Absent,
        (Action::Update, _) => ReasonCode::Differs,
        (Action::Replace, _) => ReasonCode::ForceNew,
        (Action::Noop, _) => ReasonCode::InSync,
        (Action::Delete | Action::Read, Ownership::Runtime) => ReasonCode::RuntimeOwned,
        (Action::Delete, _) => ReasonCode::RecordedInState,
        (Action::Verify | Action::Read, _) | (Action::Skip, Ownership::User) => ReasonCode::ByoUserOwned,
        (Action::Skip, _) => ReasonCode::GatedOut,
    }
}

/// An operation with empty data (a write's patch is `{}`).
pub fn op(action: Action, ownership: Ownership) -> Operation {
    match action {
        Action::Create => Operation::Create { patch: json!({}), changes: vec![] },
        Action::Update => Operation::Update { patch: json!({}), changes: vec![] },
        Action::Replace => Operation::Replace { patch: json!({}), changes: vec![], detach: vec![] },
        Action::Delete => Operation::Delete {
            ownership: if ownership == Ownership::Runtime {
                DeleteOwnership::Runtime
            } else {
                DeleteOwnership::Managed
            },
            changes: vec![],
        },
        Action::Verify => Operation::Verify { checks: vec![] },
        Action::Read => Operation::Read {
            ownership: if ownership == Ownership::Runtime { ReadOwnership::Runtime } else { ReadOwnership::User },
        },
        Action::Noop => Operation::Noop { patch: None },
        Action::Skip => Operation::Skip { ownership },
    }
}

/// A create node: `changes` are the after values, `patch` is the merge patch built from them.
pub fn create(
    address: &str,
    kind: Kind,
    scope: &str,
    name: &str,
    id: String,
    after: &[(&str, Value)],
    reason: &str,
) -> Node {
    let mut n = node(address, kind, scope, name, Action::Create, Ownership::Managed);
    n.id = Some(id);
    n.reason = Reason::new(ReasonCode::Absent, reason);
    n.op = Operation::Create {
        patch: patch_of(after),
        changes: after
            .iter()
            .map(|(p, v)| Change { path: p.to_string(), before: None, after: Some(v.clone()) })
            .collect(),
    };
    n
}

/// The RFC 7386 merge patch that sets the given JSON pointers.
pub fn patch_of(after: &[(&str, Value)]) -> Value {
    let mut root = json!({});
    for (pointer, v) in after {
        let mut cur = &mut root;
        let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            let obj = cur.as_object_mut().expect("patch paths never cross a non-object");
            if i + 1 == parts.len() {
                obj.insert(part.to_string(), v.clone());
                break;
            }
            cur = obj.entry(part.to_string()).or_insert_with(|| json!({}));
        }
    }
    root
}

pub fn check(path: &str, expect: Value, message: &str) -> Check {
    Check { path: path.to_string(), expect, message: message.to_string() }
}

/// azure.json as the upstream template renders it (workload identity, so no client secret).
pub fn azure_json(entries: &[(String, Value)]) -> CloudProviderConfig {
    let mut values = Map::new();
    let mut content = String::new();
    for (k, v) in entries {
        values.insert(k.to_string(), v.clone());
        content.push_str(&format!("{k}: {v}\n"));
    }
    CloudProviderConfig { file_name: "azure.json".to_string(), format: ConfigFormat::Yaml, values, content }
}

/// The azure.json keys of a shoot, in template order. `extra` is inserted after `vnetName`.
pub fn azure_json_entries(
    rg: &str,
    rt: &str,
    nsg: &str,
    subnet: &str,
    vnet: &str,
    extra: &[(&str, Value)],
    max_nodes: u64,
) -> Vec<(String, Value)> {
    let mut e: Vec<(&str, Value)> = vec![
        ("aadClientId", json!("7d2c1f0e-aaaa-bbbb-cccc-0123456789ab")),
        ("aadFederatedTokenFile", json!("/var/run/secrets/gardener.cloud/workload-identity/token")),
        ("useFederatedWorkloadIdentityExtension", json!(true)),
        ("tenantId", json!(TENANT)),
        ("subscriptionId", json!(SUB)),
        ("cloud", json!("AZUREPUBLICCLOUD")),
        ("location", json!(REGION)),
        ("resourceGroup", json!(rg)),
        ("routeTableName", json!(rt)),
        ("securityGroupName", json!(nsg)),
        ("subnetName", json!(subnet)),
        ("vnetName", json!(vnet)),
    ];
    e.extend(extra.iter().cloned());
    e.extend([
        ("loadBalancerSku", json!("standard")),
        ("vmType", json!("vmss")),
        ("cloudProviderBackoff", json!(true)),
        ("cloudProviderBackoffRetries", json!(6)),
        ("cloudProviderBackoffExponent", json!(1.5)),
        ("cloudProviderBackoffDuration", json!(5)),
        ("cloudProviderBackoffJitter", json!(1.0)),
        ("cloudProviderRateLimit", json!(true)),
        ("cloudProviderRateLimitQPS", json!(max_nodes.max(10))),
        ("cloudProviderRateLimitBucket", json!(max_nodes.max(100))),
        ("cloudProviderRateLimitQPSWrite", json!(max_nodes.max(10))),
        ("cloudProviderRateLimitBucketWrite", json!(max_nodes.max(100))),
    ]);
    e.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn finish(
    shoot: &str,
    mode: Mode,
    prior: Prior,
    mut nodes: Vec<Node>,
    artifacts: Artifacts,
    warnings: Vec<String>,
) -> Plan {
    nodes.sort_by(|a, b| a.address.cmp(&b.address));
    Plan {
        format_version: FORMAT_VERSION,
        shoot: shoot.to_string(),
        provider: Provider::new("azure"),
        mode: Some(mode),
        prior,
        digest: body_digest(&nodes, &artifacts),
        summary: Summary::of(&nodes),
        nodes,
        artifacts,
        warnings,
        source: None,
        record: Vec::new(),
        applied_artifacts: None,
        destroy: false,
        targets: Vec::new(),
    }
}

pub fn ccm_flags(configure_cloud_routes: bool) -> BTreeMap<String, bool> {
    BTreeMap::from([("configure-cloud-routes".to_string(), configure_cloud_routes)])
}

/// A new managed-mode shoot: resource group, VNet, `worker_route_table`, `<tn>-workers`, `<tn>-nodes`, all created.
pub fn azure_managed_plan(tn: &str) -> Plan {
    let rg = format!("azure.resource_group.{tn}");
    let vnet = format!("azure.virtual_network.{tn}.{tn}");
    let rt = format!("azure.route_table.{tn}.worker_route_table");
    let nsg = format!("azure.network_security_group.{tn}.{tn}-workers");
    let subnet = format!("azure.subnet.{tn}.{tn}-nodes");
    let rt_id = arm(tn, "routeTables/worker_route_table");
    let nsg_id = arm(tn, &format!("networkSecurityGroups/{tn}-workers"));

    let mut nodes = vec![
        create(
            &rg,
            Kind::new("resource_group"),
            tn,
            tn,
            arm(tn, ""),
            &[("/location", json!(REGION))],
            "managed mode: upstream task `ensure resource group` (the shoot's cluster resource group)",
        ),
        create(
            &vnet,
            Kind::new("virtual_network"),
            tn,
            tn,
            arm(tn, &format!("virtualNetworks/{tn}")),
            &[("/location", json!(REGION)), ("/properties/addressSpace/addressPrefixes", json!(["10.250.0.0/16"]))],
            "managed mode: upstream task `ensure vnet` (networks.vnet.cidr 10.250.0.0/16, no BYO VNet)",
        ),
        create(
            &rt,
            Kind::new("route_table"),
            tn,
            "worker_route_table",
            rt_id.clone(),
            &[("/location", json!(REGION))],
            "managed mode: upstream task `ensure route table`; created empty, the seed CCM writes per-node routes",
        ),
        create(
            &nsg,
            Kind::new("network_security_group"),
            tn,
            &format!("{tn}-workers"),
            nsg_id.clone(),
            &[("/location", json!(REGION))],
            "managed mode: upstream task `ensure security group`",
        ),
        create(
            &subnet,
            Kind::new("subnet"),
            tn,
            &format!("{tn}-nodes"),
            arm(tn, &format!("virtualNetworks/{tn}/subnets/{tn}-nodes")),
            &[
                ("/properties/addressPrefix", json!("10.250.0.0/19")),
                ("/properties/networkSecurityGroup/id", json!(nsg_id)),
                ("/properties/routeTable/id", json!(rt_id)),
                ("/properties/serviceEndpoints", json!([])),
            ],
            "managed mode: upstream task `ensure subnets` (networks.workers 10.250.0.0/19)",
        ),
    ];
    for n in &mut nodes {
        if n.address == subnet {
            n.depends_on = vec![nsg.clone(), rt.clone(), vnet.clone()];
        } else if n.address != rg {
            n.depends_on = vec![rg.clone()];
        }
    }

    let status = json!({
        "apiVersion": "azure.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "InfrastructureStatus",
        "networks": {
            "vnet": {"name": tn},
            "subnets": [{"name": format!("{tn}-nodes"), "purpose": "nodes"}],
            "layout": "SingleSubnet",
            "outboundAccessType": "LoadBalancer"
        },
        "resourceGroup": {"name": tn},
        "routeTables": [{"purpose": "nodes", "name": "worker_route_table"}],
        "securityGroups": [{"purpose": "nodes", "name": format!("{tn}-workers")}]
    });
    let cfg = azure_json(&azure_json_entries(
        tn,
        "worker_route_table",
        &format!("{tn}-workers"),
        &format!("{tn}-nodes"),
        tn,
        &[],
        3,
    ));
    let artifacts = Artifacts::new()
        .with(Artifact::InfrastructureStatus(status))
        .with(Artifact::EgressCidrs(Some(vec![])))
        .with(Artifact::CloudProviderConfig(cfg))
        .with(Artifact::CcmFlags(ccm_flags(true)))
        .with(Artifact::AllowEgress(true));
    finish(tn, Mode::Managed, Prior::default(), nodes, artifacts, vec![])
}

pub const LINEAGE: &str = "3f6c2a9e-5d1b-4c8e-9a7f-0b1e2d3c4f5a";

/// An applied user-managed-egress shoot (BYO subnet in `hub-network/hub-vnet`): nothing to write, the
/// user's subnet and NSG verified, VNet and route table read, Gardener's own network resources skipped.
pub fn azure_user_managed_plan(tn: &str) -> Plan {
    let hub = "hub-network";
    let subnet_name = "shoot-beta-workers";
    let rt_id = arm(hub, "routeTables/hub-egress-rt");
    let nsg_id = arm(hub, "networkSecurityGroups/shoot-beta-nsg");

    let mut rg = node(
        &format!("azure.resource_group.{tn}"),
        Kind::new("resource_group"),
        tn,
        tn,
        Action::Noop,
        Ownership::Managed,
    );
    rg.id = Some(arm(tn, ""));
    rg.reason =
        Reason::new(ReasonCode::InSync, "managed in both modes: the cluster resource group matches the configuration");

    let mut vnet = node(
        &format!("azure.virtual_network.{hub}.hub-vnet"),
        Kind::new("virtual_network"),
        hub,
        "hub-vnet",
        Action::Read,
        Ownership::User,
    );
    vnet.id = Some(arm(hub, "virtualNetworks/hub-vnet"));
    vnet.reason = Reason::new(
        ReasonCode::ByoUserOwned,
        "user-managed egress: the BYO VNet (networks.vnet.name/resourceGroup) is read, never written",
    );

    let mut subnet = node(
        &format!("azure.subnet.{hub}.{subnet_name}"),
        Kind::new("subnet"),
        hub,
        subnet_name,
        Action::Verify,
        Ownership::User,
    );
    subnet.id = Some(arm(hub, &format!("virtualNetworks/hub-vnet/subnets/{subnet_name}")));
    subnet.reason = Reason::new(
        ReasonCode::ByoUserOwned,
        "user-managed egress: BYO subnet (networks.subnet set); must exist and be dedicated to this shoot",
    );
    subnet.depends_on = vec![vnet.address.clone()];
    subnet.op = Operation::Verify {
        checks: vec![
            check(
                "/properties/addressPrefix",
                json!("10.250.0.0/16"),
                "the BYO subnet's CIDR must equal networking.nodes",
            ),
            check(
                "/properties/networkSecurityGroup/id",
                json!(nsg_id),
                "the BYO subnet must have an NSG attached (the CCM needs securityGroupName)",
            ),
            check(
                "/properties/routeTable/id",
                json!(rt_id),
                "the BYO subnet must keep its route table (non-overlay CNI)",
            ),
        ],
    };

    let mut nsg = node(
        &format!("azure.network_security_group.{hub}.shoot-beta-nsg"),
        Kind::new("network_security_group"),
        hub,
        "shoot-beta-nsg",
        Action::Verify,
        Ownership::User,
    );
    nsg.id = Some(nsg_id);
    nsg.reason = Reason::new(
        ReasonCode::ByoUserOwned,
        "user-managed egress: the NSG is discovered from the BYO subnet; the CCM and bastion write rules on it, trellis never does",
    );
    nsg.depends_on = vec![subnet.address.clone()];
    nsg.op = Operation::Verify {
        checks: vec![check("/properties/provisioningState", json!("Succeeded"), "the NSG must be provisioned")],
    };

    let mut rt = node(
        &format!("azure.route_table.{hub}.hub-egress-rt"),
        Kind::new("route_table"),
        hub,
        "hub-egress-rt",
        Action::Read,
        Ownership::User,
    );
    rt.id = Some(rt_id);
    rt.reason = Reason::new(
        ReasonCode::ByoUserOwned,
        "user-managed egress: the route table is discovered from the BYO subnet; the seed CCM writes per-node routes into it",
    );
    rt.depends_on = vec![subnet.address.clone()];

    let skip = |address: String, kind: Kind, name: String, why: &str| {
        let mut n = node(&address, kind, tn, &name, Action::Skip, Ownership::Managed);
        n.reason = Reason::new(ReasonCode::GatedOut, why);
        n
    };
    let skips = vec![
        skip(
            format!("azure.route_table.{tn}.worker_route_table"),
            Kind::new("route_table"),
            "worker_route_table".to_string(),
            "skipped: user-managed egress — the route table is discovered from the BYO subnet (Networks.Subnet set)",
        ),
        skip(
            format!("azure.network_security_group.{tn}.{tn}-workers"),
            Kind::new("network_security_group"),
            format!("{tn}-workers"),
            "skipped: user-managed egress — the NSG is discovered from the BYO subnet (Networks.Subnet set)",
        ),
        skip(
            format!("azure.subnet.{tn}.{tn}-nodes"),
            Kind::new("subnet"),
            format!("{tn}-nodes"),
            "skipped: user-managed egress — `EnsureUserSubnet` verifies the BYO subnet instead of creating <tn>-nodes",
        ),
    ];

    let mut nodes = vec![rg, vnet, subnet, nsg, rt];
    nodes.extend(skips);

    let status = json!({
        "apiVersion": "azure.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "InfrastructureStatus",
        "networks": {
            "vnet": {"name": "hub-vnet", "resourceGroup": hub},
            "subnets": [{"name": subnet_name, "purpose": "nodes"}],
            "layout": "SingleSubnet",
            "outboundAccessType": "UserManaged"
        },
        "resourceGroup": {"name": tn},
        "routeTables": [{"purpose": "nodes", "name": "hub-egress-rt", "resourceGroup": hub}],
        "securityGroups": [{"purpose": "nodes", "name": "shoot-beta-nsg", "resourceGroup": hub}]
    });
    let cfg = azure_json(&azure_json_entries(
        tn,
        "hub-egress-rt",
        "shoot-beta-nsg",
        subnet_name,
        "hub-vnet",
        &[
            ("vnetResourceGroup", json!(hub)),
            ("routeTableResourceGroup", json!(hub)),
            ("securityGroupResourceGroup", json!(hub)),
            ("disableOutboundSNAT", json!(true)),
        ],
        3,
    ));
    let artifacts = Artifacts::new()
        .with(Artifact::InfrastructureStatus(status))
        .with(Artifact::EgressCidrs(None))
        .with(Artifact::CloudProviderConfig(cfg))
        .with(Artifact::CcmFlags(ccm_flags(true)))
        .with(Artifact::AllowEgress(false));
    let warnings = vec![
        "egress CIDRs are unknown in user-managed egress mode: consumers of shoot.status.provider.egressCIDRs must handle null"
            .to_string(),
        "the seed CCM writes per-node pod-CIDR routes into the user's route table hub-network/hub-egress-rt; automation that reverts them breaks pod networking".to_string(),
    ];
    finish(
        tn,
        Mode::UserManagedEgress,
        Prior { lineage: Some(LINEAGE.to_string()), serial: 4 },
        nodes,
        artifacts,
        warnings,
    )
}

/// An applied managed shoot after drift and a config change: every write action, a runtime-owned read,
/// and no-ops.
pub fn azure_drifted_plan(tn: &str) -> Plan {
    let mut plan = azure_managed_plan(tn);
    let nat_addr = format!("azure.nat_gateway.{tn}.{tn}-nat-gateway");
    let nat_id = arm(tn, &format!("natGateways/{tn}-nat-gateway"));
    for n in &mut plan.nodes {
        n.op = Operation::Noop { patch: None };
        n.reason = Reason::new(ReasonCode::InSync, "matches the configuration");
        if n.kind == Kind::new("route_table") {
            n.reason = Reason::new(
                ReasonCode::ForceNew,
                "ForceNew attribute /location differs (created in northeurope): delete, then create",
            );
            n.op = Operation::Replace {
                patch: json!({"location": REGION}),
                changes: vec![Change {
                    path: "/location".to_string(),
                    before: Some(json!("northeurope")),
                    after: Some(json!(REGION)),
                }],
                detach: vec![],
            };
        }
        if n.kind == Kind::new("subnet") {
            n.reason = Reason::new(
                ReasonCode::Differs,
                "managed mode: networks.serviceEndpoints changed; the NAT gateway is no longer configured",
            );
            n.op = Operation::Update {
                patch: json!({"properties": {"natGateway": null, "serviceEndpoints": [{"service": "Microsoft.Storage"}]}}),
                changes: vec![
                    Change { path: "/properties/natGateway/id".to_string(), before: Some(json!(nat_id)), after: None },
                    Change {
                        path: "/properties/serviceEndpoints".to_string(),
                        before: Some(json!([])),
                        after: Some(json!([{"service": "Microsoft.Storage"}])),
                    },
                ],
            };
        }
    }
    let mut nat =
        node(&nat_addr, Kind::new("nat_gateway"), tn, &format!("{tn}-nat-gateway"), Action::Delete, Ownership::Managed);
    nat.id = Some(nat_id.clone());
    nat.reason = Reason::new(
        ReasonCode::RecordedInState,
        "managed: no longer desired (networks.natGateway removed from the InfrastructureConfig)",
    );
    nat.depends_on = vec![format!("azure.subnet.{tn}.{tn}-nodes")];
    nat.op = Operation::Delete {
        ownership: DeleteOwnership::Managed,
        changes: vec![Change { path: "/location".to_string(), before: Some(json!(REGION)), after: None }],
    };
    let mut route = node(
        &format!("azure.route.{tn}.worker_route_table.{tn}-worker-z1-5f7c8"),
        Kind::new("route"),
        tn,
        &format!("{tn}-worker-z1-5f7c8"),
        Action::Read,
        Ownership::Runtime,
    );
    route.id = Some(arm(tn, &format!("routeTables/worker_route_table/routes/{tn}-worker-z1-5f7c8")));
    route.reason = Reason::new(
        ReasonCode::RuntimeOwned,
        "runtime: per-node pod-CIDR route written by the seed CCM; reported, never written",
    );
    route.depends_on = vec![format!("azure.route_table.{tn}.worker_route_table")];
    plan.nodes.push(nat);
    plan.nodes.push(route);
    plan.nodes.sort_by(|a, b| a.address.cmp(&b.address));
    plan.summary = plan.expected_summary();
    plan.prior = Prior { lineage: Some(LINEAGE.to_string()), serial: 7 };
    plan.digest = plan.body_digest();
    plan.warnings = vec![format!(
        "azure.route_table.{tn}.worker_route_table: the replacement drops 1 runtime-owned route until the seed CCM writes it again"
    )];
    plan
}

pub fn set(plans: Vec<Plan>) -> PlanSet {
    PlanSet::new(plans)
}

/// Text that tries everything a user-provided string can do to a terminal: set the window title,
/// clear the screen, go back to the start of the line, start a C1 control sequence, reverse the
/// display order. Starts with `BEGIN` and ends with `END`, so tests can see it arrive whole.
pub const TERMINAL_ATTACK: &str = "BEGIN\u{1b}]0;owned\u{7}\u{1b}[2J\rforged line\u{9b}31m\u{202e}reversed\u{7f}\nEND";

/// Text that tries to escape from wherever it lands in a pull-request comment: close a code span,
/// a table cell, the `<summary>` and the `<details>`, open new ones, add a table row, an image and
/// an entity. Starts with `BEGIN` and ends with `END`.
pub const MARKDOWN_ATTACK: &str = "BEGIN` | ``` </code></summary></details><details open><summary>injected</summary>\n| forged | row |\n<img src=x onerror=alert(1)> &amp; \\` [link](http://x) END";

/// `plan` with `payload` appended to every string it holds (and to the keys of the CCM flags and
/// of the patches), except the enum fields, which a plan file cannot hold free text in.
pub fn hostile(plan: &Plan, payload: &str) -> Plan {
    fn walk(v: &mut Value, payload: &str, keys_too: bool) {
        match v {
            Value::String(s) => s.push_str(payload),
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, payload, keys_too)),
            Value::Object(map) => {
                for (k, mut v) in std::mem::take(map) {
                    if !keys_too
                        && matches!(
                            k.as_str(),
                            "action" | "ownership" | "reason_code" | "kind" | "provider" | "mode" | "format"
                        )
                    {
                        map.insert(k, v);
                        continue;
                    }
                    walk(&mut v, payload, keys_too || k == "ccm_flags" || k == "patch");
                    map.insert(if keys_too { format!("{k}{payload}") } else { k }, v);
                }
            }
            _ => {}
        }
    }
    let mut v = serde_json::to_value(plan).expect("a plan serialises");
    walk(&mut v, payload, false);
    serde_json::from_value(v).expect("the hostile plan is still a plan")
}

/// The characters that must never reach a terminal raw (a line break is the renderer's own).
pub fn raw_controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            c != '\n'
                && (c.is_control()
                    || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}'))
        })
        .collect()
}

/// What a markdown document is made of, as a CommonMark + GFM-tables reader sees it: its blocks,
/// tables, rows, cells, list items and HTML tags, without the text in them.
pub fn md_structure(md: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut out = Vec::new();
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match event {
            Event::Start(tag) => match tag {
                Tag::Emphasis | Tag::Strong | Tag::Strikethrough => {}
                Tag::Link { .. } | Tag::Image { .. } => out.push(format!("{tag:?}")),
                other => out.push(format!("start {:?}", std::mem::discriminant(&other))),
            },
            Event::End(tag) => match tag {
                TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {}
                other => out.push(format!("end {other:?}")),
            },
            Event::Html(html) | Event::InlineHtml(html) => {
                // Tag names only: `<details>`, `</summary>`, …
                let mut rest = html.as_ref();
                while let Some(i) = rest.find('<') {
                    let name: String =
                        rest[i + 1..].chars().take_while(|c| *c == '/' || c.is_ascii_alphabetic()).collect();
                    out.push(format!("html <{name}>"));
                    rest = &rest[i + 1..];
                }
            }
            _ => {}
        }
    }
    out
}

/// The text of every table cell, list item and heading (code spans included), as a reader shows it.
pub fn md_texts(md: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::TableCell | Tag::Item | Tag::Heading { .. } | Tag::Paragraph) => {
                current.get_or_insert_with(String::new);
            }
            Event::End(TagEnd::TableCell | TagEnd::Item | TagEnd::Heading(_) | TagEnd::Paragraph) => {
                out.extend(current.take());
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(c) = current.as_mut() {
                    c.push_str(&t);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(c) = current.as_mut() {
                    c.push(' ');
                }
            }
            _ => {}
        }
    }
    out
}
