//! `terraform::plan_json`: Terraform's JSON plan representation of a plan file — addresses in
//! Terraform's grammar, a module per shoot, names that are identifiers, whole objects, the shapes of
//! `after_unknown` and `*_sensitive`, `prior_state` and `configuration` consistent with the changes.

use crate::common::*;
use serde_json::{json, Value};
use trellis_plans::terraform::{self, TerraformKind, TerraformKinds, TerraformType};
use trellis_plans::{Action, Kind, Provider};

/// A provider's facts as a test declares them: NAT gateways and subnets are `azurerm` types; ARM sets
/// a NAT gateway's etag and resource GUID on a create, its etag on every write, and its id is known.
struct TestKinds;

impl TerraformKinds for TestKinds {
    fn terraform_kind(
        &self,
        _: Provider,
        kind: Kind,
        id: Option<&str>,
        _: Option<&Value>,
        _: &[&Value],
    ) -> TerraformKind {
        let source = "registry.terraform.io/hashicorp/azurerm";
        match kind.as_str() {
            "nat_gateway" => TerraformKind {
                resource_type: Some(TerraformType { name: "azurerm_nat_gateway", source }),
                computed: &["/etag", "/properties/resourceGuid"],
                rewritten: &["/etag"],
                known_on_create: id.map(|id| vec![("/id", json!(id))]).unwrap_or_default(),
            },
            "subnet" => TerraformKind {
                resource_type: Some(TerraformType { name: "azurerm_subnet", source }),
                computed: &["/etag"],
                rewritten: &["/etag"],
                known_on_create: vec![],
            },
            _ => TerraformKind::default(),
        }
    }
}

fn changes(tf: &Value) -> &Vec<Value> {
    tf["resource_changes"].as_array().unwrap()
}

fn change<'a>(tf: &'a Value, trellis_address_part: &str) -> &'a Value {
    changes(tf)
        .iter()
        .find(|c| c["trellis_address"].as_str().unwrap().contains(trellis_address_part))
        .unwrap_or_else(|| panic!("no change for {trellis_address_part}: {tf:#}"))
}

/// Every resource of a module tree (`planned_values` or `prior_state.values`), by address.
fn resources(root: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for module in root["root_module"]["child_modules"].as_array().into_iter().flatten() {
        for r in module["resources"].as_array().unwrap() {
            out.push((r["address"].as_str().unwrap().to_string(), r["values"].clone()));
        }
    }
    out
}

/// The drifted plan of `tn` with the objects as read, as a plan made now carries them.
fn drifted_with_objects(tn: &str) -> trellis_plans::Plan {
    let mut plan = azure_drifted_plan(tn);
    for n in &mut plan.nodes {
        let id = n.id.clone().unwrap_or_default();
        let base = json!({"id": id, "name": n.name, "etag": "W/\"3\"", "location": REGION});
        n.observed = match n.action() {
            Action::Create | Action::Skip => None,
            _ if n.kind == Kind::new("subnet") => Some(json!({
                "id": id, "name": "nodes", "etag": "W/\"3\"",
                "properties": {"addressPrefix": "10.250.0.0/19", "natGateway": {"id": "/nat"}, "serviceEndpoints": []}
            })),
            _ if n.kind == Kind::new("nat_gateway") => Some(
                json!({"id": id, "name": n.name, "etag": "W/\"4\"", "location": REGION, "sku": {"name": "Standard"}}),
            ),
            _ => Some(base),
        };
    }
    plan.digest = plan.body_digest();
    plan
}

#[test]
fn addresses_are_terraforms_and_unique_across_a_fleet() {
    // Two shoots with the same resource names (worker_route_table in both).
    let tf = terraform::plan_json(
        &set(vec![azure_managed_plan("shoot--dev--a"), azure_managed_plan("shoot--dev--b")]),
        "9.9.9",
        &TestKinds,
    );
    assert_eq!(tf["terraform_version"], terraform::TERRAFORM_VERSION);
    assert_eq!(tf["trellis_version"], "9.9.9");
    let mut seen = std::collections::BTreeSet::new();
    for c in changes(&tf) {
        let module = c["module_address"].as_str().unwrap();
        assert!(module == "module.shoot--dev--a" || module == "module.shoot--dev--b", "{c}");
        let data = if c["mode"] == "data" { "data." } else { "" };
        let (ty, name) = (c["type"].as_str().unwrap(), c["name"].as_str().unwrap());
        assert_eq!(c["address"], format!("{module}.{data}{ty}.{name}"), "{c}");
        assert_eq!(terraform::identifier(name), name, "a name is an identifier: {c}");
        assert!(seen.insert((module.to_string(), c["mode"].to_string(), ty.to_string(), name.to_string())), "{c}");
    }
    assert_eq!(seen.len(), 10);
    // The subnet's cloud name `<vnet>/<subnet>` made an identifier; its type mapped, others not.
    let subnet = change(&tf, "azure.subnet.shoot--dev--a.");
    assert_eq!(subnet["address"], "module.shoot--dev--a.azurerm_subnet.shoot--dev--a-nodes");
    assert_eq!(subnet["provider_name"], "registry.terraform.io/hashicorp/azurerm");
    let rt = change(&tf, "azure.route_table.shoot--dev--b.");
    assert_eq!(rt["address"], "module.shoot--dev--b.azure_route_table.worker_route_table");
    assert_eq!(rt["provider_name"], "trellis/azure");
    // One child module per shoot in planned_values and module_calls.
    let modules: Vec<&str> = tf["planned_values"]["root_module"]["child_modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["address"].as_str().unwrap())
        .collect();
    assert_eq!(modules, ["module.shoot--dev--a", "module.shoot--dev--b"]);
    let calls = tf["configuration"]["root_module"]["module_calls"].as_object().unwrap();
    assert_eq!(calls.keys().collect::<Vec<_>>(), ["shoot--dev--a", "shoot--dev--b"]);
    assert_eq!(calls["shoot--dev--a"]["module"]["resources"].as_array().unwrap().len(), 5);
    assert_eq!(
        tf["configuration"]["provider_config"]["azurerm"]["full_name"],
        "registry.terraform.io/hashicorp/azurerm"
    );
}

#[test]
fn names_that_collide_once_made_identifiers_get_a_suffix() {
    let mut plan = azure_managed_plan("shoot--dev--a");
    let mut twin = plan.nodes.iter().find(|n| n.kind == Kind::new("route_table")).unwrap().clone();
    twin.address = format!("{}-twin", twin.address);
    twin.name = "worker.route.table".to_string();
    plan.nodes.push(twin);
    plan.nodes.sort_by(|a, b| a.address.cmp(&b.address));
    let tf = terraform::plan_json(&set(vec![plan]), "t", &terraform::Unmapped);
    let names: Vec<&str> =
        changes(&tf).iter().filter(|c| c["type"] == "azure_route_table").map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["worker_route_table", "worker_route_table_2"]);
}

/// The bug: an update showed only its changed attributes, a delete only its id. With the
/// objects as read, both sides are whole; the update's `after` is the object with the patch merged in.
#[test]
fn regression_changes_hold_whole_objects() {
    let tf = terraform::plan_json(&set(vec![drifted_with_objects("shoot--dev--a")]), "t", &TestKinds);
    let subnet = &change(&tf, "azure.subnet.")["change"];
    assert_eq!(subnet["before"]["properties"]["addressPrefix"], "10.250.0.0/19", "{subnet:#}");
    assert_eq!(subnet["after"]["properties"]["addressPrefix"], "10.250.0.0/19", "unchanged, still there: {subnet:#}");
    assert!(subnet["after"]["properties"].get("natGateway").is_none(), "removed by the patch: {subnet:#}");
    assert_eq!(subnet["after"]["properties"]["serviceEndpoints"], json!([{"service": "Microsoft.Storage"}]));
    assert_eq!(subnet["after"]["name"], "nodes");
    // The etag changes on every write: unknown after, shaped like the value otherwise.
    assert_eq!(subnet["after"]["etag"], Value::Null);
    assert_eq!(subnet["after_unknown"], json!({"properties": {"serviceEndpoints": [{}]}, "etag": true}));
    assert_eq!(subnet["before_sensitive"], json!({"properties": {"natGateway": {}, "serviceEndpoints": []}}));

    let nat = &change(&tf, "azure.nat_gateway.")["change"];
    assert_eq!(nat["actions"], json!(["delete"]));
    assert_eq!(nat["before"]["sku"]["name"], "Standard", "a delete's before is the whole object: {nat:#}");
    assert_eq!(nat["after"], Value::Null);
    assert_eq!(nat["after_unknown"], json!({}));
    assert_eq!(nat["after_sensitive"], json!(false));

    // A replace: before as read, after the new body (what the create writes).
    let rt = &change(&tf, "azure.route_table.")["change"];
    assert_eq!(rt["actions"], json!(["delete", "create"]));
    assert_eq!(rt["before"]["etag"], "W/\"3\"");
    assert_eq!(rt["after"], json!({"location": REGION}));

    // A runtime route read: a data source, its object as read after (re-read at apply time).
    let route = change(&tf, "azure.route.");
    assert_eq!(route["mode"], "data");
    assert!(route["address"].as_str().unwrap().starts_with("module.shoot--dev--a.data.azure_route."), "{route}");
    assert_eq!(route["change"]["before"], Value::Null);
    assert_eq!(route["change"]["after"]["name"], "shoot--dev--a-worker-z1-5f7c8");

    // prior_state: every object as read; planned_values: every object after, none deleted.
    let prior = resources(&tf["prior_state"]["values"]);
    let planned = resources(&tf["planned_values"]);
    for c in changes(&tf) {
        let address = c["address"].as_str().unwrap();
        let read = prior.iter().find(|(a, _)| a == address).map(|(_, v)| v);
        let after = planned.iter().find(|(a, _)| a == address).map(|(_, v)| v);
        match c["change"]["actions"].as_array().unwrap().as_slice() {
            [a] if a == "read" => assert_eq!(read, Some(&c["change"]["after"]), "{address}"),
            _ => assert_eq!(read, Some(&c["change"]["before"]), "{address}"),
        }
        if c["change"]["actions"] == json!(["delete"]) {
            assert_eq!(after, None, "{address}");
        } else {
            assert_eq!(after, Some(&c["change"]["after"]), "{address}");
        }
    }
    // A resource deleted because nothing configures it any more is not in the configuration.
    let configured: Vec<&str> = tf["configuration"]["root_module"]["module_calls"]["shoot--dev--a"]["module"]
        ["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["address"].as_str().unwrap())
        .collect();
    assert!(!configured.iter().any(|a| a.starts_with("azurerm_nat_gateway.")), "{configured:?}");
    assert_eq!(configured.len(), changes(&tf).len() - 1);
}

/// A create: the body written, what the cloud assigns unknown (`null` after, `true` in
/// `after_unknown`), what it assigns but trellis knows (the id) known.
#[test]
fn a_create_shows_the_body_and_what_the_cloud_assigns_as_unknown() {
    let mut plan = azure_managed_plan("shoot--dev--a");
    let mut nat = create(
        "azure.nat_gateway.shoot--dev--a.nat",
        Kind::new("nat_gateway"),
        "shoot--dev--a",
        "nat",
        arm("shoot--dev--a", "natGateways/nat"),
        &[("/sku/name", json!("Standard")), ("/properties/idleTimeoutInMinutes", json!(4))],
        "nat",
    );
    nat.depends_on = vec![];
    plan.nodes.push(nat);
    let tf = terraform::plan_json(&set(vec![plan]), "t", &TestKinds);
    let c = &change(&tf, "azure.nat_gateway.")["change"];
    assert_eq!(c["before"], Value::Null);
    assert_eq!(c["before_sensitive"], json!(false));
    assert_eq!(
        c["after"],
        json!({"sku": {"name": "Standard"}, "properties": {"idleTimeoutInMinutes": 4, "resourceGuid": null}, "id": arm("shoot--dev--a", "natGateways/nat"), "etag": null})
    );
    assert_eq!(c["after_unknown"], json!({"sku": {}, "properties": {"resourceGuid": true}, "etag": true}));
}

/// A plan file written before nodes carried the object as read: an update still has two objects (the
/// attributes its changes name), never a null side.
#[test]
fn an_update_of_an_older_plan_file_has_two_objects() {
    let tf = terraform::plan_json(&set(vec![azure_drifted_plan("shoot--dev--a")]), "t", &terraform::Unmapped);
    let subnet = &change(&tf, "azure.subnet.")["change"];
    assert!(subnet["before"].is_object() && subnet["after"].is_object(), "{subnet:#}");
    assert_eq!(subnet["after"]["properties"]["serviceEndpoints"], json!([{"service": "Microsoft.Storage"}]));
    // A read without its object: wholly unknown, as Terraform writes a deferred read.
    let route = &change(&tf, "azure.route.")["change"];
    assert_eq!((&route["after"], &route["after_unknown"]), (&Value::Null, &json!(true)));
}

#[test]
fn terraform_json_of_every_action() {
    let tf = terraform::plan_json(&set(vec![drifted_with_objects("shoot--dev--a")]), "t", &TestKinds);
    insta::assert_snapshot!(format!("{tf:#}"));
}
