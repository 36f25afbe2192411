//! World files: parsing, validation and re-sync.

use serde_json::json;
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_sim::{ArmSim, AzureWorld, DnsWorld, Origin, SimError, WorldFile, WorldSection};

const SUB: &str = "6d3a9c1e-0000-4000-8000-000000000001";

fn hub(rest: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/hub-network{rest}")
}

fn net(rest: &str) -> String {
    hub(&format!("/providers/Microsoft.Network/{rest}"))
}

/// A hub network: RG, VNet with one nested subnet, an NSG with a rule, a route table, and a second
/// subnet listed on its own that uses both.
fn hub_world(extra: &str) -> String {
    format!(
        r#"azure:
  subscriptionId: {SUB}
  resources:
    - id: {rg}
      location: westeurope
    - id: {vnet}
      location: westeurope
      properties:
        addressSpace: {{addressPrefixes: [10.250.0.0/16]}}
        subnets:
          - name: nested
            properties: {{addressPrefix: 10.250.1.0/24}}
    - id: {nsg}
      location: westeurope
      etag: W/"from-an-export"
      properties:
        securityRules:
          - name: allow-ssh
            properties: {{priority: 100, access: Allow, direction: Inbound, protocol: Tcp}}
        subnets: [{{id: ignored-back-reference}}]
    - id: {rt}
      location: westeurope
    - id: {workers}
      properties: {{addressPrefix: 10.250.0.0/24, networkSecurityGroup: {{id: {nsg}}}, routeTable: {{id: {rt}}}}}
{extra}"#,
        rg = hub(""),
        vnet = net("virtualNetworks/hub-vnet"),
        nsg = net("networkSecurityGroups/hub-nsg"),
        rt = net("routeTables/hub-rt"),
        workers = net("virtualNetworks/hub-vnet/subnets/shoot-a-workers"),
    )
}

fn parse(text: &str) -> WorldFile {
    WorldFile::parse("world.yaml", text).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn sync_adds_world_resources_in_get_shape() {
    let sim = ArmSim::in_memory("ignored");
    let report = sim.sync_world(&parse(&hub_world(""))).unwrap();
    assert_eq!(report.added.len(), 7, "{report:?}");
    assert!(report.updated.is_empty() && report.removed.is_empty());
    assert_eq!(sim.subscription(), SUB);
    assert!(sim.calls().is_empty(), "world writes are not audited");

    let workers = sim.get(&net("virtualNetworks/hub-vnet/subnets/shoot-a-workers")).await.unwrap().unwrap();
    assert_eq!(workers["type"], json!("Microsoft.Network/virtualNetworks/subnets"));
    assert_eq!(workers["properties"]["routeTable"], json!({"id": net("routeTables/hub-rt")}));
    let nsg = sim.get(&net("networkSecurityGroups/hub-nsg")).await.unwrap().unwrap();
    assert_eq!(nsg["properties"]["subnets"], json!([{"id": net("virtualNetworks/hub-vnet/subnets/shoot-a-workers")}]));
    assert_eq!(nsg["properties"]["securityRules"][0]["properties"]["priority"], json!(100));
    // A world file holds what exists: the etag it was exported with is kept (a later write gives a new one).
    assert_eq!(nsg["etag"], json!("W/\"from-an-export\""));
    assert!(sim.get_now(&net("networkSecurityGroups/hub-nsg/securityRules/allow-ssh")).is_some());
    assert!(sim.get_now(&net("virtualNetworks/hub-vnet/subnets/nested")).is_some(), "nested subnets are resources");

    // The same file again changes nothing, not even an etag.
    let before = sim.snapshot();
    assert!(sim.sync_world(&parse(&hub_world(""))).unwrap().is_empty());
    assert_eq!(sim.snapshot(), before);
}

#[tokio::test]
async fn sync_updates_and_removes_world_resources_and_leaves_api_resources_alone() {
    let sim = ArmSim::in_memory(SUB);
    sim.sync_world(&parse(&hub_world(""))).unwrap();
    // apply creates resources of its own, some inside world resources.
    let rg = format!("/subscriptions/{SUB}/resourceGroups/shoot--p--a");
    sim.put(&rg, json!({"location": "westeurope"})).await.unwrap();
    let route = net("routeTables/hub-rt/routes/ccm-node-1");
    sim.put(&route, json!({"properties": {"addressPrefix": "100.96.0.0/24", "nextHopType": "VirtualAppliance", "nextHopIpAddress": "10.250.0.4"}}))
        .await
        .unwrap();
    let mine = net("virtualNetworks/hub-vnet/subnets/shoot-a-extra");
    sim.put(&mine, json!({"properties": {"addressPrefix": "10.250.9.0/24"}})).await.unwrap();

    // The user detaches the NSG from the workers subnet and deletes the NSG and the nested subnet.
    let edited = hub_world("")
        .replace(&format!("networkSecurityGroup: {{id: {}}}, ", net("networkSecurityGroups/hub-nsg")), "")
        .replace(
            "        subnets:\n          - name: nested\n            properties: {addressPrefix: 10.250.1.0/24}\n",
            "",
        );
    let nsg_start = edited.find(&format!("    - id: {}", net("networkSecurityGroups/hub-nsg"))).unwrap();
    let nsg_end = edited.find(&format!("    - id: {}", net("routeTables/hub-rt"))).unwrap();
    let edited = format!("{}{}", &edited[..nsg_start], &edited[nsg_end..]);
    let report = sim.sync_world(&parse(&edited)).unwrap();

    assert_eq!(report.added, Vec::<String>::new());
    // The VNet itself did not change: its subnets are resources of their own.
    assert_eq!(report.updated, vec![net("virtualNetworks/hub-vnet/subnets/shoot-a-workers")]);
    assert_eq!(
        report.removed,
        vec![
            net("networkSecurityGroups/hub-nsg"),
            net("networkSecurityGroups/hub-nsg/securityRules/allow-ssh"),
            net("virtualNetworks/hub-vnet/subnets/nested"),
        ]
    );
    let workers = sim.get_now(&net("virtualNetworks/hub-vnet/subnets/shoot-a-workers")).unwrap();
    assert!(workers["properties"].get("networkSecurityGroup").is_none());
    assert_eq!(sim.origin(&route), Some(Origin::Api));
    assert!(sim.get_now(&rg).is_some());
    assert!(sim.get_now(&mine).is_some());
    assert_eq!(
        sim.get_now(&net("routeTables/hub-rt")).unwrap()["properties"]["routes"][0]["name"],
        json!("ccm-node-1")
    );

    // Removing the whole hub from the file removes what apply put inside it too.
    let report = sim.sync_world(&parse(&format!("azure:\n  subscriptionId: {SUB}\n"))).unwrap();
    assert!(report.removed.contains(&route) && report.removed.contains(&mine), "{report:?}");
    assert!(sim.get_now(&rg).is_some());
}

#[test]
fn missing_parent_names_both_ids() {
    let subnet = net("virtualNetworks/hub-vnet/subnets/w");
    let text = format!("azure:\n  subscriptionId: {SUB}\n  resources:\n    - id: {rg}\n      location: westeurope\n    - id: {subnet}\n      properties: {{addressPrefix: 10.0.0.0/24}}\n", rg = hub(""));
    let sim = ArmSim::in_memory(SUB);
    let e = sim.sync_world(&parse(&text)).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!(
            "world file world.yaml: resource {subnet} (line 6, column 7) references missing parent {}",
            net("virtualNetworks/hub-vnet")
        )),
        "{msg}"
    );
    assert!(msg.ends_with("add the parent to the file"), "{msg}");
    assert!(sim.snapshot().is_empty(), "a refused sync changes nothing");

    // A parent created through the API is good enough.
    let other = format!(
        "azure:\n  subscriptionId: {SUB}\n  resources:\n    - id: {}\n      properties: {{priority: 100}}\n",
        net("networkSecurityGroups/n/securityRules/r")
    );
    let e = sim.sync_world(&parse(&other)).unwrap_err();
    assert!(e.to_string().contains("references missing parent"), "{e}");
}

#[tokio::test]
async fn parents_in_the_sim_and_missing_links() {
    let sim = ArmSim::in_memory(SUB);
    sim.put(&hub(""), json!({"location": "westeurope"})).await.unwrap();
    sim.put(&net("routeTables/mine"), json!({"location": "westeurope"})).await.unwrap();
    let route = net("routeTables/mine/routes/user-route");
    let text = format!(
        "azure:\n  subscriptionId: {SUB}\n  resources:\n    - id: {route}\n      properties: {{addressPrefix: 0.0.0.0/0, nextHopType: Internet}}\n    - id: {v}\n      location: westeurope\n    - id: {v}/subnets/s\n      properties: {{natGateway: {{id: {nat}}}}}\n",
        v = net("virtualNetworks/v"),
        nat = net("natGateways/gone"),
    );
    let e = sim.sync_world(&parse(&text)).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("references missing Microsoft.Network/natGateways {}", net("natGateways/gone"))),
        "{msg}"
    );
    assert!(msg.contains("add it to the file"), "{msg}");
    sim.sync_world(&parse(
        &text.replace(&format!("natGateway: {{id: {}}}", net("natGateways/gone")), "addressPrefix: 10.0.0.0/24"),
    ))
    .unwrap();
    assert_eq!(sim.origin(&route), Some(Origin::World));
}

#[tokio::test]
async fn removing_a_resource_still_used_by_apply_is_refused() {
    let sim = ArmSim::in_memory(SUB);
    sim.sync_world(&parse(&hub_world(""))).unwrap();
    let mine = net("virtualNetworks/hub-vnet/subnets/mine");
    sim.put(
        &mine,
        json!({"properties": {"addressPrefix": "10.250.7.0/24", "routeTable": {"id": net("routeTables/hub-rt")}}}),
    )
    .await
    .unwrap();
    let text = hub_world("");
    let start = text.find(&format!("    - id: {}", net("routeTables/hub-rt"))).unwrap();
    let without_rt = format!("{}{}", &text[..start], text[start..].split_once("westeurope\n").unwrap().1)
        .replace(&format!(", routeTable: {{id: {}}}", net("routeTables/hub-rt")), "");
    let e = sim.sync_world(&parse(&without_rt)).unwrap_err();
    assert!(
        e.to_string().contains(&format!("{mine} (created through the API) references {}", net("routeTables/hub-rt"))),
        "{e}"
    );
}

#[test]
fn parse_errors_have_file_line_and_column() {
    let e = WorldFile::parse("bad.yaml", "azure:\n  resources:\n    - id: [unclosed\n").unwrap_err();
    let SimError::WorldParse { path, line, column, .. } = &e else { panic!("{e:?}") };
    assert_eq!(path, "bad.yaml");
    assert!(*line >= 3 && *column > 0, "{e}");
    // Named as a world file: a Shoot given as --world reads "world file shoot.yaml:3:1: unknown field
    // `apiVersion`, …", which says which flag's file is wrong.
    assert!(e.to_string().starts_with(&format!("world file bad.yaml:{line}:{column}: ")), "{e}");

    let e = WorldFile::parse("x.yaml", "azure:\n  resources: []\nawz: {}\n").unwrap_err();
    assert!(matches!(e, SimError::WorldParse { line: 3, .. }), "{e:?}");
    assert!(e.to_string().contains("awz"), "{e}");
    let e = WorldFile::parse("x.yaml", "azure:\n  subscriptionID: x\n").unwrap_err();
    assert!(matches!(e, SimError::WorldParse { line: 2, .. }), "{e:?}");
}

#[test]
fn every_bad_resource_is_reported_at_once() {
    let text = format!(
        "azure:\n  subscriptionId: {SUB}\n  resources:\n    - location: westeurope\n    - id: not-an-id\n    - id: {rg}\n    - id: {rg}\n    - id: {s}\n      properties: {{routeTable: [{{id: x}}]}}\n",
        rg = hub(""),
        s = net("virtualNetworks/v/subnets/s"),
    );
    let e = WorldFile::parse("w.yaml", &text).unwrap_err();
    let SimError::WorldInvalid { problems, .. } = &e else { panic!("{e:?}") };
    assert_eq!(problems.len(), 4, "{e}");
    assert!(problems[0].contains("line 4, column 7") && problems[0].contains("has no `id`"), "{}", problems[0]);
    assert!(problems[1].contains("not an ARM id"), "{}", problems[1]);
    assert!(problems[2].contains("declared twice (line 6 and line 7)"), "{}", problems[2]);
    assert!(problems[3].contains("not an array"), "{}", problems[3]);
}

/// A section of no simulated cloud is refused where it is: `gcp:` was kept and ignored without a
/// word (the simulated GCP cloud's section is `gce:`).
#[test]
fn regression_unknown_sections_are_refused_and_empty_files_are_fine() {
    let text = "dns:\n  zones: []\ngcloud:\n  resources: [{kind: 'compute#subnetwork', name: s}]\n";
    let e = WorldFile::parse("w.yaml", text).unwrap_err();
    let SimError::WorldParse { line, message, .. } = &e else { panic!("{e:?}") };
    assert_eq!(*line, 3, "{e}");
    assert!(message.contains("unknown field `gcloud`") && message.contains("gcp"), "{e}");
    let w = parse("dns:\n  zones: []\n");
    assert_eq!(DnsWorld::of(&w).unwrap().unwrap().zones, vec![]);
    assert!(AzureWorld::of(&w).unwrap().is_none());
    let empty = parse("# nothing yet\n");
    assert!(!empty.has("azure") && !empty.has("gce") && !empty.has("dns"));
    assert_eq!(empty.path, "world.yaml");
    assert_eq!(empty, parse(""));
}

/// A world file's sections are its simulated clouds': a caller that knows other sections (a
/// registered binding's own) parses them with [`WorldFile::parse_with`], and an unknown one names
/// the known sections.
#[test]
fn sections_are_the_callers() {
    struct Mine;
    impl WorldSection for Mine {
        fn key(&self) -> &'static str {
            "mine"
        }
        fn check(&self, world: &WorldFile) -> Result<(), SimError> {
            #[derive(serde::Deserialize)]
            struct File {
                #[allow(dead_code)]
                mine: Option<Vec<String>>,
            }
            world.read::<File>().map(drop)
        }
    }
    let [azure, ..] = trellis_sim::builtin_sections();
    let w = WorldFile::parse_with("w.yaml", "mine: [a]\nazure: {}\n", &[azure, &Mine]).unwrap();
    assert!(w.has("mine") && w.has("azure") && !w.has("dns"));
    let e = WorldFile::parse_with("w.yaml", "mine: 3\n", &[&Mine]).unwrap_err();
    assert!(matches!(e, SimError::WorldParse { line: 1, .. }), "{e:?}");
    let e = WorldFile::parse_with("w.yaml", "mine: []\ndns: {}\n", &[azure, &Mine]).unwrap_err();
    assert!(e.to_string().contains("unknown field `dns`, expected one of azure, mine"), "{e}");
    let e = WorldFile::parse("w.yaml", "mine: []\n").unwrap_err();
    assert!(e.to_string().contains("expected one of azure, gcp, dns, seeds"), "{e}");
}

#[test]
fn resources_in_a_listed_other_subscription_are_allowed() {
    let other_sub = "11111111-0000-4000-8000-000000000000";
    let other = format!("/subscriptions/{other_sub}/resourceGroups/net");
    let text = format!(
        "azure:\n  subscriptionId: {SUB}\n  otherSubscriptions: [{other_sub}]\n  resources:\n    - {{id: {other}, location: westeurope}}\n    - {{id: {other}/providers/Microsoft.Network/routeTables/rt, location: westeurope}}\n    - {{id: {rg}, location: westeurope}}\n    - {{id: {v}, location: westeurope}}\n    - id: {v}/subnets/s\n      properties: {{routeTable: {{id: {other}/providers/Microsoft.Network/routeTables/rt}}}}\n",
        rg = hub(""),
        v = net("virtualNetworks/v"),
    );
    let sim = ArmSim::in_memory(SUB);
    sim.sync_world(&parse(&text)).unwrap();
    assert_eq!(
        sim.get_now(&format!("{other}/providers/Microsoft.Network/routeTables/rt")).unwrap()["properties"]["subnets"]
            [0]["id"],
        json!(format!("{}/subnets/s", net("virtualNetworks/v")))
    );
}

/// The problems of a world file that must be refused.
#[track_caller]
fn problems(text: &str) -> Vec<String> {
    match WorldFile::parse("w.yaml", text) {
        Err(SimError::WorldInvalid { problems, .. }) => problems,
        other => panic!("expected the world file to be refused, got {other:?}"),
    }
}

#[test]
fn regression_world_subscription_id_must_be_a_uuid() {
    for (yaml, shown) in [
        ("subid", "subid"),
        ("00000000-0000-0000-0000-00000000000", "00000000-0000-0000-0000-00000000000"),
        ("'{6d3a9c1e-0000-4000-8000-000000000001}'", "{6d3a9c1e-0000-4000-8000-000000000001}"),
        ("6d3a9c1e000040008000000000000001", "6d3a9c1e000040008000000000000001"),
        ("/subscriptions/6d3a9c1e-0000-4000-8000-000000000001", "/subscriptions/6d3a9c1e-0000-4000-8000-000000000001"),
        ("\"\"", ""),
    ] {
        let got = problems(&format!("azure:\n  subscriptionId: {yaml}\n"));
        assert_eq!(
            got,
            vec![format!(
                "world file w.yaml: azure.subscriptionId \"{shown}\" is not a subscription id: give the id of the subscription your resources are in, a UUID such as 6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17 (az account show --query id -o tsv)"
            )]
        );
    }
    let got = problems(&format!("azure:\n  subscriptionId: {SUB}\n  otherSubscriptions: [subid2, {SUB}]\n"));
    assert_eq!(
        got,
        vec![
            "world file w.yaml: azure.otherSubscriptions[0] \"subid2\" is not a subscription id: give the id of the other subscription your resources are in, a UUID such as 6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17".to_string(),
            format!("world file w.yaml: azure.otherSubscriptions[1] \"{SUB}\" is the file's own subscription (azure.subscriptionId); remove it"),
        ]
    );
    // Upper-case hex is a UUID too.
    parse(&format!("azure:\n  subscriptionId: {}\n", SUB.to_ascii_uppercase()));
}

#[test]
fn regression_world_resources_under_another_subscription_are_refused_naming_them() {
    let other = "/subscriptions/11111111-0000-4000-8000-000000000000/resourceGroups/net";
    // The file's own subscription in upper-case hex: the same subscription.
    let upper = SUB.to_ascii_uppercase();
    let text = format!(
        "azure:\n  subscriptionId: {SUB}\n  resources:\n    - {{id: {rg}, location: westeurope}}\n    - {{id: /subscriptions/subid/resourceGroups/rg1, location: westus}}\n    - {{id: {other}, location: westeurope}}\n    - {{id: /subscriptions/{upper}/resourceGroups/other-net, location: westeurope}}\n",
        rg = hub(""),
    );
    assert_eq!(
        problems(&text),
        vec![
            format!("world file w.yaml: resource /subscriptions/subid/resourceGroups/rg1 (line 5, column 7) is in subscription \"subid\", which is not a subscription id (a placeholder copied from an example?); give the id of the subscription it is in: the file's subscription is {SUB} (azure.subscriptionId)"),
            format!("world file w.yaml: resource {other} (line 6, column 7) is in subscription 11111111-0000-4000-8000-000000000000, not the file's subscription {SUB} (azure.subscriptionId); correct its id, or list 11111111-0000-4000-8000-000000000000 under azure.otherSubscriptions if it really lives in another subscription"),
        ]
    );
}

#[test]
fn regression_world_resources_need_the_file_subscription() {
    let text = format!("azure:\n  resources:\n    - {{id: {rg}, location: westeurope}}\n", rg = hub(""));
    assert_eq!(
        problems(&text),
        vec![format!("world file w.yaml: azure.subscriptionId is not set; give the id of the subscription your resources are in ({SUB}, the subscription of the first resource, line 3)")]
    );
}

#[test]
fn regression_world_file_with_long_comment_blocks_parses() {
    // An exported world file annotated by hand: a key with no value, then many comment lines.
    let comments = "# exported from the hub subscription\n".repeat(500);
    let text = hub_world("").replace("azure:\n", &format!("dns:\n{comments}azure:\n"));
    let text = text.replace("  resources:\n", &format!("  resources:\n{comments}"));
    let w = parse(&text);
    assert_eq!(AzureWorld::of(&w).unwrap().unwrap().resources.len(), 5);
}

/// A world file holds what exists: an NSG as exported, with Azure's six default rules (nested, and one
/// listed on its own as `az network nsg rule list --include-default` shows it), `resourceGuid`, a
/// rule with a regional service tag, and a route table whose appliance route has its next hop —
/// loaded as declared, the default rules computed (six, not twelve), nothing refused.
#[tokio::test]
async fn an_exported_nsg_with_its_default_rules_loads_as_it_is() {
    let default_rule = |name: &str, priority: u32, direction: &str| {
        format!(
            "{{name: {name}, id: {}, etag: 'W/\"x\"', type: Microsoft.Network/networkSecurityGroups/defaultSecurityRules, properties: {{provisioningState: Succeeded, protocol: '*', access: Allow, priority: {priority}, direction: {direction}}}}}",
            net(&format!("networkSecurityGroups/exported/defaultSecurityRules/{name}"))
        )
    };
    let defaults =
        [default_rule("AllowVnetInBound", 65000, "Inbound"), default_rule("DenyAllOutBound", 65500, "Outbound")]
            .join(", ");
    let extra = format!(
        r#"    - id: {nsg}
      location: westeurope
      type: Microsoft.Network/networkSecurityGroups
      properties:
        provisioningState: Succeeded
        resourceGuid: 7c2e9a14-5b3d-4e8f-9a1c-6d0b2f4e8a37
        securityRules:
          - name: to-sql
            properties: {{priority: 200, access: Allow, direction: Outbound, protocol: Tcp, destinationAddressPrefix: Sql.WestEurope}}
        defaultSecurityRules: [{defaults}]
    - {standalone}
    - id: {rt}
      location: westeurope
      properties:
        routes:
          - name: to-fw
            properties: {{addressPrefix: 0.0.0.0/0, nextHopType: VirtualAppliance, nextHopIpAddress: 10.250.255.4, hasBgpOverride: false}}
"#,
        nsg = net("networkSecurityGroups/exported"),
        standalone = default_rule("DenyAllInBound", 65500, "Inbound"),
        rt = net("routeTables/exported-rt"),
    );
    let sim = ArmSim::in_memory("ignored");
    sim.sync_world(&parse(&hub_world(&extra))).unwrap();
    let nsg = sim.get(&net("networkSecurityGroups/exported")).await.unwrap().unwrap();
    assert_eq!(nsg["properties"]["resourceGuid"], json!("7c2e9a14-5b3d-4e8f-9a1c-6d0b2f4e8a37"));
    let defaults = nsg["properties"]["defaultSecurityRules"].as_array().unwrap();
    assert_eq!(defaults.len(), 6, "computed, not stored beside the computed ones");
    assert_eq!(defaults[0]["properties"]["description"], json!("Allow inbound traffic from all VMs in VNET"));
    assert_eq!(nsg["properties"]["securityRules"].as_array().unwrap().len(), 1);
    assert!(
        sim.snapshot().iter().all(|r| !r["id"].as_str().unwrap().contains("/defaultSecurityRules/")),
        "no default rule is stored as a resource"
    );
    let rt = sim.get(&net("routeTables/exported-rt")).await.unwrap().unwrap();
    assert_eq!(rt["properties"]["routes"][0]["properties"]["nextHopIpAddress"], json!("10.250.255.4"));
}
