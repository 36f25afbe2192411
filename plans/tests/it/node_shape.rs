//! Plan files whose nodes no plan could contain are refused when read, with one line naming the node.
//! The plans are written as JSON here, as an editor would leave them, each with a matching digest
//! (so it is the node's shape that is refused, not an edited body).

use serde_json::{json, Value};
use trellis_plans::{PlanFileError, PlanSet};

const RG: &str = "/subscriptions/00000000-0000-0000-0000-0000000000a1/resourceGroups/shoot--dev--alpha";
const VNET: &str = "/subscriptions/00000000-0000-0000-0000-0000000000a1/resourceGroups/hub/providers/Microsoft.Network/virtualNetworks/hub-vnet";

/// A plan of two nodes: the cluster resource group (created) and a BYO VNet (verified).
fn plan() -> Value {
    json!({
        "format_version": 1,
        "shoot": "shoot--dev--alpha",
        "provider": "azure",
        "mode": "user-managed-egress",
        "prior": {"lineage": null, "serial": 0},
        "digest": "",
        "nodes": [
            {
                "address": "azure.resource_group.shoot--dev--alpha",
                "kind": "resource_group",
                "name": "shoot--dev--alpha",
                "scope": "shoot--dev--alpha",
                "id": RG,
                "action": "create",
                "ownership": "managed",
                "reason": "managed in both modes",
                "depends_on": [],
                "changes": [{"path": "/location", "after": "westeurope"}],
                "patch": {"location": "westeurope"}
            },
            {
                "address": "azure.virtual_network.hub.hub-vnet",
                "kind": "virtual_network",
                "name": "hub-vnet",
                "scope": "hub",
                "id": VNET,
                "action": "verify",
                "ownership": "user",
                "reason": "user-managed egress: the BYO VNet is read, never written",
                "depends_on": [],
                "changes": [],
                "checks": [{"path": "/location", "expect": "westeurope", "message": "the VNet must be in the shoot's region"}]
            }
        ],
        "artifacts": {
            "infrastructure_status": null,
            "egress_cidrs": null,
            "cloud_provider_config": {"format": "yaml", "values": {}, "content": ""},
            "ccm_flags": {},
            "allow_egress": false
        },
        "warnings": [],
        "summary": {"create": 1, "update": 0, "replace": 0, "delete": 0, "verify": 1, "read": 0, "noop": 0, "skip": 0}
    })
}

/// The plan file after `edit`, with the digest of its edited body.
fn file(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = plan();
    edit(&mut v);
    let body = json!({"nodes": v["nodes"], "artifacts": v["artifacts"]});
    v["digest"] = json!(trellis_plans::sha256_hex(serde_json::to_string(&body).unwrap().as_bytes()));
    serde_json::to_string_pretty(&v).unwrap()
}

/// The one-line error `from_json` gives for the file, which must be about the node at `address`.
fn refused(text: &str, address: &str) -> String {
    match PlanSet::from_json("edited.tfplan", text) {
        Err(e @ PlanFileError::Invalid { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("edited.tfplan: node {address}: ")), "{msg}");
            assert!(msg.ends_with("the plan file was edited or corrupted — re-run `trellis plan`"), "{msg}");
            assert_eq!(msg.lines().count(), 1, "{msg}");
            msg
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn the_unedited_plan_is_read() {
    let set = PlanSet::from_json("plan.tfplan", &file(|_| {})).unwrap();
    assert_eq!(set.plans[0].nodes.len(), 2);
}

#[test]
fn regression_verify_with_a_patch_is_refused() {
    let text = file(|v| v["nodes"][1]["patch"] = json!({"properties": {"routeTable": null}}));
    let msg = refused(&text, "azure.virtual_network.hub.hub-vnet");
    assert!(msg.contains("action `verify` with a patch"), "{msg}");
}

#[test]
fn regression_create_with_checks_is_refused() {
    let text = file(|v| v["nodes"][0]["checks"] = json!([{"path": "/location", "expect": "x", "message": "m"}]));
    let msg = refused(&text, "azure.resource_group.shoot--dev--alpha");
    assert!(msg.contains("action `create` with checks"), "{msg}");
}

#[test]
fn regression_verify_with_attribute_changes_is_refused() {
    let text = file(|v| v["nodes"][1]["changes"] = json!([{"path": "/location", "before": "a", "after": "b"}]));
    let msg = refused(&text, "azure.virtual_network.hub.hub-vnet");
    assert!(msg.contains("action `verify` with attribute changes"), "{msg}");
}

#[test]
fn regression_verify_of_a_managed_resource_is_refused() {
    let text = file(|v| v["nodes"][1]["ownership"] = json!("managed"));
    let msg = refused(&text, "azure.virtual_network.hub.hub-vnet");
    assert!(msg.contains("managed resource with action `verify`"), "{msg}");
}

#[test]
fn a_write_on_a_user_owned_node_is_refused() {
    let text = file(|v| {
        let vnet = &mut v["nodes"][1];
        vnet["action"] = json!("update");
        vnet.as_object_mut().unwrap().remove("checks");
        vnet["patch"] = json!({"properties": {"dhcpOptions": null}});
        v["summary"]["verify"] = json!(0);
        v["summary"]["update"] = json!(1);
    });
    let msg = refused(&text, "azure.virtual_network.hub.hub-vnet");
    assert!(msg.contains("user-owned resource with write action `update`"), "{msg}");
}

#[test]
fn a_create_without_a_patch_is_refused() {
    let text = file(|v| {
        v["nodes"][0].as_object_mut().unwrap().remove("patch");
    });
    let msg = refused(&text, "azure.resource_group.shoot--dev--alpha");
    assert!(msg.contains("action `create` without a patch"), "{msg}");
}

/// A verify carries the object as read (`observed`); it is part of the body its digest covers, and it
/// is written back byte for byte. A plan file without it (written before nodes carried it) reads too.
#[test]
fn the_object_as_read_is_kept_and_covered_by_the_digest() {
    let vnet = json!({"id": VNET, "name": "hub-vnet", "location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}});
    let text = file(|v| v["nodes"][1]["observed"] = vnet.clone());
    let set = PlanSet::from_json("plan.tfplan", &text).unwrap();
    assert_eq!(set.plans[0].nodes[1].observed.as_ref(), Some(&vnet));
    let written: Value = serde_json::from_str(&set.to_json()).unwrap();
    assert_eq!(written["nodes"][1]["observed"], vnet, "written back");
    assert_eq!(written["digest"], serde_json::from_str::<Value>(&text).unwrap()["digest"]);
    // Without it: the node has none, and writing it back adds none (the digest still verifies).
    let old = PlanSet::from_json("old.tfplan", &file(|_| {})).unwrap();
    assert!(old.plans[0].nodes.iter().all(|n| n.observed.is_none()));
    assert!(!old.to_json().contains("\"observed\""));
    // Edited after the plan was made: refused as any edited body.
    let mut edited: Value = serde_json::from_str(&text).unwrap();
    edited["nodes"][1]["observed"]["location"] = json!("northeurope");
    let err = PlanSet::from_json("edited.tfplan", &edited.to_string()).unwrap_err();
    assert!(matches!(err, PlanFileError::Edited { .. }), "{err}");
}

/// A create's resource does not exist yet: a file claiming an object as read for it was edited.
#[test]
fn a_create_with_an_object_as_read_is_refused() {
    let text = file(|v| v["nodes"][0]["observed"] = json!({"location": "westeurope"}));
    let msg = refused(&text, "azure.resource_group.shoot--dev--alpha");
    assert!(msg.contains("action `create` with an object as read (`observed`)"), "{msg}");
}

/// `apply` compares a saved plan with a fresh one node by node, but not the object as read: attributes
/// trellis does not manage (a CCM's route, an etag) may move without making the plan stale.
#[test]
fn first_difference_does_not_compare_the_object_as_read() {
    let set = PlanSet::from_json("plan.tfplan", &file(|v| v["nodes"][1]["observed"] = json!({"etag": "1"}))).unwrap();
    let mut now = set.plans[0].clone();
    now.nodes[1].observed = Some(json!({"etag": "2"}));
    assert_eq!(trellis_plans::first_difference(&set.plans[0], &now), None);
}
