//! Real inputs written by others, through the binary: upstream's example Shoot manifests, ARM names
//! in another casing than the user wrote them, world files copied from examples.

use crate::common;

use common::*;
use std::path::Path;

/// `providers/tests/data/upstream/<name>`: upstream's example manifests (each names its source).
fn upstream(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/tests/data/upstream").join(name);
    assert!(path.exists(), "missing fixture {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

#[test]
fn regression_gardener_example_shoot_is_not_a_yaml_error() {
    let sb = Sandbox::new();
    let file = upstream("gardener-90-shoot.yaml");
    let run = sb.run(&["validate", "-f", &file]).code(1);
    assert_eq!(
        run.stderr_lines(),
        vec![format!(
            "error: {file}: document 1: spec.provider.type: unsupported provider type \"<some-provider-name>\"; trellis supports: azure, gcp"
        )]
    );
}

#[test]
fn regression_gardener_example_shoot_as_azure_validates_plans_and_applies() {
    let sb = Sandbox::new();
    let file = upstream("gardener-90-shoot-azure.yaml");
    sb.run(&["validate", "-f", &file]).code(0).stdout_has("1 shoot(s) valid.");
    let plan = sb.run(&["plan", "-f", &file, "--output", "json"]).code(0).json();
    assert_eq!(plan["shoot"], "shoot--dev--crazy-botany");
    let nodes = plan["nodes"].as_array().expect("nodes");
    assert!(nodes.iter().all(|n| n["action"] == "create"), "{plan:#}");
    assert_eq!(nodes.len(), 5, "{plan:#}");
    sb.run(&["apply", "-f", &file, "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &file, "--detailed-exitcode"]).code(0).stdout_has("No changes");
}

// ARM names are case-insensitive: one resource, one address, whatever casing a name is written in.

const B1: &str = "B1-byo-nsg-rt-in-vnet-rg";
const B1_SHOOT: &str = "shoot--platform--byo-b1";
const HUB: &str = "resourceGroups/hub-network/providers/Microsoft.Network";

/// B1's world with the subnet's references to its NSG and route table written in upper case
/// (`HUB-NETWORK/…/SHOOT-A-NSG` for the NSG `hub-network/…/shoot-a-nsg`).
fn world_with_upper_case_references() -> String {
    let world = std::fs::read_to_string(scenario(&format!("{B1}/world.yaml"))).unwrap();
    let mut out = String::new();
    for line in world.lines() {
        let line = if line.contains("networkSecurityGroup: {id:") || line.contains("routeTable: {id:") {
            line.replace(HUB, "resourceGroups/HUB-NETWORK/providers/Microsoft.Network")
                .replace("/shoot-a-nsg}", "/SHOOT-A-NSG}")
                .replace("/shoot-a-rt}", "/SHOOT-A-RT}")
        } else {
            line.to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    assert!(out.contains("HUB-NETWORK/providers/Microsoft.Network/networkSecurityGroups/SHOOT-A-NSG}"), "{out}");
    out
}

/// The plan of `shoot` against `world` as JSON (`--detailed-exitcode`: `code` is 0 without changes).
#[track_caller]
fn plan_json(sb: &Sandbox, shoot: &str, world: &str, code: i32) -> serde_json::Value {
    sb.run(&["plan", "-f", shoot, "--world", world, "--output", "json", "--detailed-exitcode"]).code(code).json()
}

/// The workspace's resources as (address, id), asserting one address per resource (ids compared
/// case-insensitively, as ARM compares them) and lowercase addresses.
#[track_caller]
fn one_address_per_resource(sb: &Sandbox) -> Vec<(String, String)> {
    let ws = sb.workspace(B1_SHOOT);
    let resources: Vec<(String, String)> = ws["resources"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(address, r)| (address.clone(), r["id"].as_str().unwrap().to_string()))
        .collect();
    let mut ids: Vec<String> = resources.iter().map(|(_, id)| id.to_ascii_lowercase()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), resources.len(), "one address per resource: {resources:#?}");
    for (address, _) in &resources {
        assert_eq!(address, &address.to_ascii_lowercase(), "addresses are lowercase: {resources:#?}");
    }
    resources
}

/// What a plan says each node is: address, scope, name, id and the values its checks expect.
fn identities(plan: &serde_json::Value) -> Vec<serde_json::Value> {
    let nodes = plan["nodes"].as_array().unwrap();
    nodes.iter().map(|n| serde_json::json!([n["address"], n["scope"], n["name"], n["id"], n["checks"]])).collect()
}

fn azure_json(plan: &serde_json::Value) -> String {
    plan["artifacts"]["cloud_provider_config"]["content"].as_str().unwrap().to_string()
}

#[test]
fn regression_references_in_another_casing_are_one_resource_with_one_address() {
    let sb = Sandbox::new();
    let shoot = scenario(&format!("{B1}/shoot.yaml"));
    let lower = scenario(&format!("{B1}/world.yaml"));
    let upper = sb.file("world-upper.yaml");
    std::fs::write(&upper, world_with_upper_case_references()).unwrap();

    let first = plan_json(&sb, &shoot, &upper, 2);
    let json = azure_json(&first);
    // The resource's own name and the configured resource group, not the reference's spelling.
    assert!(json.contains("securityGroupName: \"shoot-a-nsg\"\n"), "{json}");
    assert!(json.contains("routeTableName: \"shoot-a-rt\"\n"), "{json}");
    assert!(json.contains("securityGroupResourceGroup: \"hub-network\"\n"), "{json}");
    assert!(!json.contains("HUB-NETWORK") && !json.contains("SHOOT-A"), "{json}");
    sb.run(&["apply", "-f", &shoot, "--world", &upper, "--auto-approve"]).code(0);
    let applied = one_address_per_resource(&sb);

    // Someone re-attaches the same NSG and route table, spelled in lower case: nothing changed.
    stays_one_resource_across_casings(&sb, &shoot, [&lower, &upper, &lower], &first, &applied);
}

/// Planning and applying against each world in turn (the same resources, references spelled differently)
/// changes nothing: the same azure.json, the same addresses, names, ids and checks, one state entry each.
fn stays_one_resource_across_casings(
    sb: &Sandbox,
    shoot: &str,
    worlds: [&String; 3],
    first: &serde_json::Value,
    applied: &[(String, String)],
) {
    for world in worlds {
        let plan = plan_json(sb, shoot, world, 0);
        assert_eq!(azure_json(&plan), azure_json(first), "azure.json keeps its casing");
        assert_eq!(identities(&plan), identities(first), "the same addresses, names, ids and checks");
        sb.run(&["apply", "-f", shoot, "--world", world, "--auto-approve"]).code(0);
        assert_eq!(one_address_per_resource(sb), applied);
    }
}

#[test]
fn regression_configured_names_in_another_casing_are_one_resource_with_one_address() {
    let sb = Sandbox::new();
    let text = std::fs::read_to_string(scenario(&format!("{B1}/shoot.yaml"))).unwrap();
    let text = text
        .replace("name: hub-vnet", "name: HUB-VNET")
        .replace("resourceGroup: hub-network", "resourceGroup: HUB-NETWORK")
        .replace("name: shoot-a-workers", "name: SHOOT-A-WORKERS");
    assert!(text.contains("HUB-VNET") && text.contains("HUB-NETWORK") && text.contains("SHOOT-A-WORKERS"));
    let shoot = sb.file("shoot.yaml");
    std::fs::write(&shoot, text).unwrap();
    let lower = scenario(&format!("{B1}/world.yaml"));
    let upper = sb.file("world-upper.yaml");
    std::fs::write(&upper, world_with_upper_case_references()).unwrap();

    let first = plan_json(&sb, &shoot, &lower, 2);
    let json = azure_json(&first);
    // What the user configured is rendered as configured, the NSG's resource group included.
    for line in [
        "vnetName: \"HUB-VNET\"\n",
        "vnetResourceGroup: \"HUB-NETWORK\"\n",
        "subnetName: \"SHOOT-A-WORKERS\"\n",
        "securityGroupName: \"shoot-a-nsg\"\n",
        "securityGroupResourceGroup: \"HUB-NETWORK\"\n",
        "routeTableResourceGroup: \"HUB-NETWORK\"\n",
    ] {
        assert!(json.contains(line), "{line:?} in\n{json}");
    }
    sb.run(&["apply", "-f", &shoot, "--world", &lower, "--auto-approve"]).code(0);
    let applied = one_address_per_resource(&sb);
    assert!(
        applied.iter().any(|(a, _)| a == "azure.virtual_network.hub-network.hub-vnet"),
        "the address of the configured VNet: {applied:#?}"
    );

    stays_one_resource_across_casings(&sb, &shoot, [&lower, &upper, &lower], &first, &applied);
}

#[test]
fn regression_a_resource_named_in_another_casing_is_not_a_leftover() {
    // The shoot's NAT gateway exists, its name spelled `…-NAT-Gateway`: it is the NAT the shoot asks
    // for (`…-nat-gateway`), not a leftover of this shoot to delete.
    let sb = Sandbox::new();
    let sub = "00000000-0000-0000-0000-000000000000";
    let rg = format!("/subscriptions/{sub}/resourceGroups/shoot--dev--bravo");
    let world = sb.file("world.yaml");
    std::fs::write(
        &world,
        format!(
            "azure:\n  subscriptionId: {sub}\n  resources:\n    - {{id: {rg}, location: westeurope}}\n    - id: {rg}/providers/Microsoft.Network/natGateways/shoot--dev--bravo-NAT-Gateway\n      location: westeurope\n      sku: {{name: Standard}}\n      zones: [\"1\"]\n      properties: {{idleTimeoutInMinutes: 4}}\n"
        ),
    )
    .unwrap();
    let plan = plan_json(&sb, &a2(), &world, 2);
    let nats: Vec<(&str, &str)> = plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "nat_gateway")
        .map(|n| (n["address"].as_str().unwrap(), n["action"].as_str().unwrap()))
        .collect();
    assert_eq!(nats, vec![("azure.nat_gateway.shoot--dev--bravo.shoot--dev--bravo-nat-gateway", "update")], "{plan:#}");
}

// World files copied from examples: placeholders are refused, naming what to fix.

#[test]
fn regression_world_file_with_a_placeholder_subscription_is_refused() {
    // Microsoft's documented responses, copied as they are: `/subscriptions/subid/…`.
    let sb = Sandbox::new();
    let world = data("world-from-arm-examples.yaml");
    let run = sb.run(&["plan", "-f", &a1(), "--world", &world]).code(1);
    assert_eq!(run.stdout, "", "nothing is planned");
    let lines = run.stderr_lines();
    assert!(lines[0].starts_with("error: "), "{}", run.stderr);
    assert!(
        lines[0].ends_with(&format!(
            "world file {world}: azure.subscriptionId \"subid\" is not a subscription id: give the id of the subscription your resources are in, a UUID such as 6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17 (az account show --query id -o tsv)"
        )),
        "{}",
        run.stderr
    );
    // Every resource under the placeholder is named, with its line.
    // The route table's JSON body starts on the line before its `"name"`.
    let (line, _) = position_of(&world, "\"name\": \"testrt\"");
    assert!(
        run.stderr.contains(&format!(
            "world file {world}: resource /subscriptions/subid/resourceGroups/rg1/providers/Microsoft.Network/routeTables/testrt (line {}, column 7) is in subscription \"subid\", which is not a subscription id (a placeholder copied from an example?); give the id of the subscription it is in\n",
            line - 1
        )),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches("is not a subscription id").count(), 6, "{}", run.stderr);
    sb.assert_no_workspaces();
}

#[test]
fn regression_world_resources_under_another_subscription_are_refused() {
    // The file's subscription fixed, the resources' ids still copied with the placeholder.
    let sb = Sandbox::new();
    let text = std::fs::read_to_string(data("world-from-arm-examples.yaml")).unwrap();
    let text = text.replace("subscriptionId: subid", "subscriptionId: 6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17");
    let world = sb.file("world.yaml");
    std::fs::write(&world, text).unwrap();
    let run = sb.run(&["plan", "-f", &a1(), "--world", &world]).code(1);
    assert_eq!(run.stderr.matches("is not a subscription id").count(), 5, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "world file {world}: resource /subscriptions/subid/resourceGroups/rg1 (line 11, column 7) is in subscription \"subid\", which is not a subscription id (a placeholder copied from an example?); give the id of the subscription it is in: the file's subscription is 6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17 (azure.subscriptionId)\n"
        )),
        "{}",
        run.stderr
    );
    // With the placeholder replaced everywhere, the same resources are accepted.
    let fixed = std::fs::read_to_string(&world)
        .unwrap()
        .replace("/subscriptions/subid/", "/subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/");
    std::fs::write(&world, fixed).unwrap();
    sb.run(&["plan", "-f", &a1(), "--world", &world])
        .code(0)
        .stdout_has("subscriptionId: \"6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17\"");
}

#[test]
fn regression_fleet_with_upstream_seed_example_plans_and_applies_its_shoots() {
    let sb = Sandbox::new();
    let fleet = sb.path().join("fleet");
    std::fs::create_dir(&fleet).expect("fleet dir");
    std::fs::copy(upstream("gardener-50-seed.yaml"), fleet.join("00-seed.yaml")).expect("copy seed");
    std::fs::copy(a2(), fleet.join("10-bravo.yaml")).expect("copy shoot");
    let fleet = fleet.to_str().expect("UTF-8 path");
    // The Seed loads beside the Shoot; nothing plans it.
    sb.run(&["validate", "-f", fleet]).code(0).stdout_has("1 shoot(s) valid.");
    sb.run(&["plan", "-f", fleet])
        .code(0)
        .stdout_has("Plan: 7 to create, 0 to update, 0 to replace, 0 to delete, 1 workspace to record.");
    sb.run(&["apply", "-f", fleet, "--auto-approve"]).code(0).stdout_has("shoot--dev--bravo: apply complete.");
    assert_eq!(sb.workspaces(), ["shoot--dev--bravo"]);
    // Seeds alone are nothing to plan: the loader's message for no Shoot at all.
    let seed = upstream("gardener-50-seed.yaml");
    let run = sb.run(&["plan", "-f", &seed]).code(1);
    assert_eq!(run.stderr_lines(), vec![format!("error: no Shoot manifests found in {seed}")]);
}

/// A world file holds what exists: scenario B1's resources as ARM GETs return them (etags, `type`,
/// `provisioningState`, `resourceGuid`, an NSG's six default rules and a rule of the user's,
/// back-references, a subnet's `ipConfigurations` of a NIC not in the file, the subnet both nested in
/// its VNet and on its own) load verbatim and plan as the hand-written world of the same resources;
/// after the apply, trellis plans no change, though the NSG shows Azure's default rules.
#[test]
fn a_world_of_recorded_arm_get_responses_loads_and_plans_as_the_hand_written_one() {
    let shoot = scenario("B1-byo-nsg-rt-in-vnet-rg/shoot.yaml");
    let recorded = data("world-arm-recorded.yaml");
    let written = scenario("B1-byo-nsg-rt-in-vnet-rg/world.yaml");
    let by_hand = Sandbox::new();
    let expected = by_hand.run(&["plan", "-f", &shoot, "--world", &written, "--output", "json"]).code(0).json();
    let sb = Sandbox::new();
    let plan = sb.run(&["plan", "-f", &shoot, "--world", &recorded, "--output", "json"]).code(0).json();
    // The same plan but for the objects as read (`observed`, which the digest covers): the recorded
    // ones carry what Azure answered (the exported etags kept, provisioningState, …). The recorded
    // subnet also hosts a NIC's IP configuration, which trellis warns about (the hand-written world has
    // none).
    let mut plan = plan;
    let warnings = plan.as_object_mut().unwrap().remove("warnings").unwrap();
    let mut expected = expected;
    assert_eq!(expected.as_object_mut().unwrap().remove("warnings"), Some(serde_json::json!([])));
    let nsg_read = plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "network_security_group" && n["action"] == "verify")
        .map(|n| n["observed"].clone())
        .expect("the user's NSG is verified");
    assert_eq!(nsg_read["properties"]["provisioningState"], "Succeeded", "{nsg_read:#}");
    assert_eq!(nsg_read["properties"]["defaultSecurityRules"].as_array().map(Vec::len), Some(6), "{nsg_read:#}");
    let vnet_read = plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "virtual_network")
        .map(|n| n["observed"].clone())
        .expect("the user's VNet is verified");
    assert_eq!(
        vnet_read["etag"], "W/\"5f1c0b6e-8d52-4f0a-9a3b-2c7e41d9b8a1\"",
        "the exported etag is kept: {vnet_read:#}"
    );
    let without_reads = |plan: &mut serde_json::Value| {
        plan.as_object_mut().unwrap().remove("digest");
        for node in plan["nodes"].as_array_mut().unwrap() {
            node.as_object_mut().unwrap().remove("observed");
        }
    };
    without_reads(&mut plan);
    without_reads(&mut expected);
    assert_eq!(plan, expected);
    assert_eq!(warnings.as_array().map(Vec::len), Some(1), "{warnings:#}");
    assert!(
        warnings[0].as_str().unwrap().contains("networkInterfaces/jumpbox-nic/ipConfigurations/ipconfig1"),
        "{warnings:#}"
    );

    sb.run(&["apply", "-f", &shoot, "--world", &recorded, "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &shoot, "--world", &recorded, "--detailed-exitcode"]).code(0).stdout_has("No changes");
    let nsg = "/subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub-network/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg";
    let shown: serde_json::Value =
        serde_json::from_str(&sb.run(&["sim", "show", nsg]).code(0).stdout).expect("the NSG as JSON");
    assert_eq!(shown["properties"]["defaultSecurityRules"].as_array().map(Vec::len), Some(6));
    let rules: Vec<&str> =
        shown["properties"]["securityRules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(rules, ["allow-ssh-from-bastion"], "the user's rule, and no default rule written as one");
    let subnet = format!(
        "{}/virtualNetworks/hub-vnet/subnets/shoot-a-workers",
        nsg.rsplit_once("/networkSecurityGroups").unwrap().0
    );
    let shown: serde_json::Value = serde_json::from_str(&sb.run(&["sim", "show", &subnet]).code(0).stdout).unwrap();
    assert_eq!(shown["properties"]["ipConfigurations"].as_array().map(Vec::len), Some(1), "kept as exported");
    assert_eq!(shown["properties"]["serviceEndpoints"][0]["service"], "Microsoft.Storage");
}
