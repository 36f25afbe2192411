//! Deletion driven by state (issue #8, item 5): the managed resources a workspace records are deleted
//! when the configuration no longer wants them, wherever they are and whatever their names; a name
//! scan only adds leftovers state does not know; resources recorded as someone else's are never
//! deleted.

use serde_json::json;
use trellis_planner::discover::Observed;
use trellis_plans::{Action, Kind, Ownership, ReasonCode};
use trellis_providers::azure::desired::{self, Recorded};
use trellis_providers::azure::{names, Ctx};

const SUB: &str = "00000000-0000-0000-0000-000000000001";

use crate::common;
use common::data_shoot as shoot;

fn recorded(kind: Kind, id: &str, ownership: Ownership) -> Recorded {
    let p = names::parse_id(id).unwrap();
    let name = p.parent.map_or(p.name.clone(), |parent| format!("{parent}/{}", p.name));
    Recorded { address: names::address(kind, &p.resource_group, &name), kind, id: id.to_string(), ownership }
}

fn id(rg: &str, rtype: &str, name: &str) -> String {
    names::resource_id(SUB, rg, rtype, name)
}

fn delete_reason(nodes: &[trellis_plans::Node], id: &str) -> Option<trellis_plans::Reason> {
    nodes
        .iter()
        .find(|n| n.id.as_deref().is_some_and(|x| x.eq_ignore_ascii_case(id)))
        .filter(|n| n.action() == Action::Delete)
        .map(|n| n.reason.clone())
}

#[test]
fn regression_recorded_managed_resources_outside_the_naming_scheme_are_deleted_and_user_ones_never() {
    let shoot = shoot("azure-managed.yaml");
    let cfg = &shoot.spec.provider.infrastructure_config;
    let mut ctx = Ctx::new(&shoot, SUB, &Default::default());
    let tn = ctx.tn.clone();
    // Made by trellis under a name no configuration derives any more, in another resource group.
    let legacy_ip = id("legacy-egress", names::rtype::PUBLIC_IP, "egress-ip-1");
    // Recorded as the user's: never deleted, though it sits in the cluster group with the shoot's name.
    let user_nat = id(&tn, names::rtype::NAT_GATEWAY, &format!("{tn}-user-nat"));
    // Made by trellis and recorded, but gone from the cloud: nothing to delete, only to forget.
    let gone_nat = id(&tn, names::rtype::NAT_GATEWAY, "old-nat");
    // Not recorded, found by the name scan: made by an earlier trellis (or upstream).
    let unrecorded_nat = id(&tn, names::rtype::NAT_GATEWAY, &format!("{tn}-nat-gateway-z9"));
    ctx.recorded = vec![
        recorded(trellis_providers::azure::kind::PUBLIC_IP_ADDRESS, &legacy_ip, Ownership::Managed),
        recorded(trellis_providers::azure::kind::NAT_GATEWAY, &user_nat, Ownership::User),
        recorded(trellis_providers::azure::kind::NAT_GATEWAY, &gone_nat, Ownership::Managed),
    ];

    let mut observed = Observed::new(&trellis_planner::ids::ArmIds);
    for rid in desired::discovery_round1(cfg, &ctx) {
        observed.insert(&rid, None);
    }
    let rg = names::resource_group_id(SUB, &tn);
    observed.insert(&rg, Some(json!({"id": rg, "name": tn})));
    let (ids, lists) = desired::discovery_round2(cfg, &ctx, &observed).unwrap();
    for rid in [&legacy_ip, &gone_nat] {
        assert!(ids.contains(rid), "discovery looks up what state records: {rid}");
    }
    for rid in ids {
        observed.insert(&rid, None);
    }
    observed.insert(&legacy_ip, Some(json!({"id": legacy_ip, "name": "egress-ip-1"})));
    for req in lists {
        let items = if req.rtype == names::rtype::NAT_GATEWAY {
            vec![
                json!({"id": unrecorded_nat, "name": format!("{tn}-nat-gateway-z9")}),
                json!({"id": user_nat, "name": format!("{tn}-user-nat")}),
            ]
        } else {
            vec![]
        };
        assert!(observed.answer(&req, items).is_empty(), "ARM lists are whole, never narrowed");
    }

    let wanted = desired::desired(cfg, &ctx, &observed).unwrap();
    let forget = desired::recorded_gone(&ctx, &wanted, &observed).unwrap();
    let nodes = trellis_planner::diff::plan_nodes(wanted, &observed).unwrap();
    let reason = delete_reason(&nodes, &legacy_ip).expect("the recorded IP outside the cluster group is deleted");
    assert!(reason.detail().contains("recorded in state"), "{reason}");
    assert_eq!(reason.code(), Some(ReasonCode::RecordedInState));
    let legacy = nodes.iter().find(|n| n.id.as_deref() == Some(legacy_ip.as_str())).unwrap();
    assert_eq!(
        (legacy.ownership(), legacy.scope.as_str(), legacy.name.as_str()),
        (Ownership::Managed, "legacy-egress", "egress-ip-1")
    );
    let reason = delete_reason(&nodes, &unrecorded_nat).expect("the name scan still finds what state does not know");
    assert!(reason.detail().contains("found by name"), "{reason}");
    assert_eq!(reason.code(), Some(ReasonCode::FoundByName));
    assert_eq!(delete_reason(&nodes, &user_nat), None, "recorded as the user's: never deleted");
    assert!(nodes.iter().all(|n| n.id.as_deref() != Some(gone_nat.as_str())), "gone: no node");
    assert_eq!(forget, vec![(ctx.recorded[2].address.clone(), gone_nat.clone())]);
    // The IP goes after every write of the plan (the subnet update that detaches what it uses).
    let subnet = nodes.iter().find(|n| n.kind == trellis_providers::azure::kind::SUBNET).unwrap();
    assert!(legacy.depends_on.contains(&subnet.address), "{:?}", legacy.depends_on);
}

#[test]
fn regression_destroy_deletes_recorded_managed_resources_outside_the_cluster_group_first() {
    let shoot = shoot("azure-managed.yaml");
    let cfg = &shoot.spec.provider.infrastructure_config;
    let mut ctx = Ctx::new(&shoot, SUB, &Default::default());
    let tn = ctx.tn.clone();
    let outside = id("legacy-egress", names::rtype::PUBLIC_IP, "egress-ip-1");
    let inside = id(&tn, names::rtype::NAT_GATEWAY, "old-nat");
    ctx.recorded = vec![
        recorded(trellis_providers::azure::kind::PUBLIC_IP_ADDRESS, &outside, Ownership::Managed),
        recorded(trellis_providers::azure::kind::NAT_GATEWAY, &inside, Ownership::Managed),
        Recorded {
            address: names::address(trellis_providers::azure::kind::RESOURCE_GROUP, &tn, &tn),
            kind: trellis_providers::azure::kind::RESOURCE_GROUP,
            id: names::resource_group_id(SUB, &tn),
            ownership: Ownership::Managed,
        },
    ];
    let mut observed = Observed::new(&trellis_planner::ids::ArmIds);
    for rid in desired::discovery_round1(cfg, &ctx) {
        observed.insert(&rid, None);
    }
    let rg = names::resource_group_id(SUB, &tn);
    observed.insert(&rg, Some(json!({"id": rg, "name": tn})));
    let (ids, lists) = desired::destroy_discovery(cfg, &ctx, &observed).unwrap();
    assert_eq!(ids, vec![outside.clone()], "only what the resource group's deletion does not take");
    observed.insert(&outside, Some(json!({"id": outside})));
    for req in lists {
        assert!(observed.answer(&req, vec![]).is_empty(), "ARM lists are whole, never narrowed");
    }
    let wanted = desired::destroy(cfg, &ctx, &observed).unwrap();
    assert!(wanted.iter().all(|d| d.id() != Some(inside.as_str())), "the resource group takes what is inside it");
    let nodes = trellis_planner::diff::plan_nodes(wanted, &observed).unwrap();
    let ip = nodes.iter().find(|n| n.id.as_deref() == Some(outside.as_str())).expect("deleted");
    assert_eq!(ip.action(), Action::Delete);
    assert!(ip.reason.detail().contains("recorded in state"), "{}", ip.reason);
    assert_eq!(ip.reason.code(), Some(ReasonCode::Destroy), "part of the destroy");
    let rg_node = nodes.iter().find(|n| n.kind == trellis_providers::azure::kind::RESOURCE_GROUP).unwrap();
    assert!(rg_node.depends_on.contains(&ip.address), "{:?}", rg_node.depends_on);
}
