//! What the simulated ARM answers beyond GET/PUT/DELETE of one resource, as Azure does (issue #24):
//! an NSG's six default rules, subscription-wide lists, Update Tags (PATCH), the generic resource
//! list, and the network resource provider's refusals of a write (security-rule priority, conflict
//! and address prefix, a VNet's address space, a `VirtualAppliance` route without its next hop).

use serde_json::{json, Value};
use trellis_planner::cloud::{CloudRead, CloudWrite, Op};
use trellis_sim::{ArmSim, Precondition};

use crate::common;
use common::{id, rejected, RG};

const SUB: &str = "/subscriptions/sub-1";

async fn with_nsg() -> ArmSim {
    let sim = ArmSim::in_memory("sub-1");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim.put(&id("networkSecurityGroups/nsg"), json!({"location": "westeurope"})).await.unwrap();
    sim
}

fn rule(priority: i64, direction: &str) -> Value {
    json!({"properties": {
        "priority": priority, "direction": direction, "access": "Allow", "protocol": "Tcp",
        "sourcePortRange": "*", "destinationPortRange": "443",
        "sourceAddressPrefix": "Internet", "destinationAddressPrefix": "10.0.0.0/16",
    }})
}

#[tokio::test]
async fn regression_an_nsg_shows_azures_six_default_rules_which_are_read_only() {
    let sim = with_nsg().await;
    let nsg = sim.get(&id("networkSecurityGroups/nsg")).await.unwrap().unwrap();
    let defaults = nsg["properties"]["defaultSecurityRules"].as_array().unwrap();
    let seen: Vec<(&str, i64, &str, &str)> = defaults
        .iter()
        .map(|r| {
            let p = &r["properties"];
            (
                r["name"].as_str().unwrap(),
                p["priority"].as_i64().unwrap(),
                p["direction"].as_str().unwrap(),
                p["access"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("AllowVnetInBound", 65000, "Inbound", "Allow"),
            ("AllowAzureLoadBalancerInBound", 65001, "Inbound", "Allow"),
            ("DenyAllInBound", 65500, "Inbound", "Deny"),
            ("AllowVnetOutBound", 65000, "Outbound", "Allow"),
            ("AllowInternetOutBound", 65001, "Outbound", "Allow"),
            ("DenyAllOutBound", 65500, "Outbound", "Deny"),
        ]
    );
    let first = &defaults[0];
    assert_eq!(first["id"], json!(id("networkSecurityGroups/nsg/defaultSecurityRules/AllowVnetInBound")));
    assert_eq!(first["type"], json!("Microsoft.Network/networkSecurityGroups/defaultSecurityRules"));
    assert_eq!(first["etag"], nsg["etag"]);
    assert_eq!(first["properties"]["description"], json!("Allow inbound traffic from all VMs in VNET"));
    assert_eq!(defaults[4]["properties"]["destinationAddressPrefix"], json!("Internet"));
    assert_eq!(nsg["properties"]["securityRules"], json!([]), "no rule of the user's");

    // A client that sends back what it read (default rules included) writes only its own rules.
    let mut body = nsg.clone();
    body["properties"]["securityRules"] = json!([{"name": "https", "properties": rule(200, "Inbound")["properties"]}]);
    let written = sim.put(&id("networkSecurityGroups/nsg"), body).await.unwrap();
    assert_eq!(written["properties"]["securityRules"].as_array().unwrap().len(), 1);
    assert_eq!(written["properties"]["defaultSecurityRules"].as_array().unwrap().len(), 6);
    assert_eq!(written["properties"]["defaultSecurityRules"][0]["etag"], written["etag"], "the NSG's new etag");
    assert!(sim.get(&id("networkSecurityGroups/nsg/securityRules/AllowVnetInBound")).await.unwrap().is_none());

    // Each can be read on its own and listed (DefaultSecurityRules Get / List), never written.
    let one = sim.get(&id("networkSecurityGroups/nsg/defaultSecurityRules/denyallinbound")).await.unwrap().unwrap();
    assert_eq!(one["name"], json!("DenyAllInBound"));
    let listed = sim
        .list(&id("networkSecurityGroups/nsg"), "Microsoft.Network/networkSecurityGroups/defaultSecurityRules")
        .await
        .unwrap();
    assert_eq!(listed, written["properties"]["defaultSecurityRules"].as_array().unwrap().clone());
    let e = sim.put(&id("networkSecurityGroups/nsg/defaultSecurityRules/DenyAllInBound"), rule(65500, "Inbound")).await;
    assert_eq!(rejected(e.unwrap_err()).0, 405);
    let e = sim.delete(&id("networkSecurityGroups/nsg/defaultSecurityRules/DenyAllInBound")).await;
    assert_eq!(rejected(e.unwrap_err()).0, 405);
}

#[tokio::test]
async fn a_subscription_lists_every_vnet_and_nsg_of_its_resource_groups() {
    let sim = with_nsg().await;
    let other = format!("{SUB}/resourceGroups/other");
    sim.put(&other, json!({"location": "westeurope"})).await.unwrap();
    for (group, name) in [(RG.to_string(), "a"), (other.clone(), "b")] {
        let vnet = format!("{group}/providers/Microsoft.Network/virtualNetworks/{name}");
        sim.put(
            &vnet,
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
        )
        .await
        .unwrap();
        sim.put(&format!("{vnet}/subnets/s"), json!({"properties": {"addressPrefix": "10.0.0.0/24"}})).await.unwrap();
    }
    let vnets = sim.list(SUB, "Microsoft.Network/virtualNetworks").await.unwrap();
    let names: Vec<&str> = vnets.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["b", "a"], "sorted by id: other < rg");
    assert_eq!(vnets[0]["properties"]["subnets"].as_array().unwrap().len(), 1, "as a GET shows them");
    let nsgs = sim.list(SUB, "microsoft.network/networksecuritygroups").await.unwrap();
    assert_eq!(nsgs.len(), 1);
    assert_eq!(nsgs[0]["properties"]["defaultSecurityRules"].as_array().unwrap().len(), 6);
    let e = sim.list(SUB, "Microsoft.Network/virtualNetworks/subnets").await.unwrap_err();
    assert_eq!(rejected(e).1, "InvalidResourceType");
}

#[tokio::test]
async fn update_tags_replaces_the_tags_and_nothing_else() {
    let sim = with_nsg().await;
    sim.put(&id("publicIPAddresses/pip"), json!({"location": "westeurope", "tags": {"old": "1"}})).await.unwrap();
    sim.put(&id("natGateways/nat"), json!({"location": "westeurope"})).await.unwrap();
    sim.put(&id("routeTables/rt"), json!({"location": "westeurope"})).await.unwrap();
    sim.put(
        &id("virtualNetworks/vnet"),
        json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
    )
    .await
    .unwrap();
    for kind in [
        "virtualNetworks/vnet",
        "networkSecurityGroups/nsg",
        "routeTables/rt",
        "publicIPAddresses/pip",
        "natGateways/nat",
    ] {
        let before = sim.get_now(&id(kind)).unwrap();
        let after = sim
            .patch_tags(&id(kind), json!({"tags": {"team": "net", "env": "prod"}}), &Precondition::none())
            .await
            .unwrap();
        assert_eq!(after["tags"], json!({"team": "net", "env": "prod"}), "{kind}: replaced, not merged");
        assert_ne!(after["etag"], before["etag"], "{kind}");
        // Apart from the tags and the etag (an NSG's default rules carry its etag), nothing changed.
        let strip = |v: &Value| {
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("tags");
            v.as_object_mut().unwrap().remove("etag");
            v["properties"].as_object_mut().unwrap().remove("defaultSecurityRules");
            v
        };
        assert_eq!(strip(&after), strip(&before), "{kind}: only the tags and the etag change");
        assert_eq!(sim.get_now(&id(kind)).unwrap(), after);
    }
    let cleared = sim.patch_tags(&id("routeTables/rt"), json!({"tags": {}}), &Precondition::none()).await.unwrap();
    assert!(cleared.get("tags").is_none());
    let group = sim.patch_tags(RG, json!({"tags": {"owner": "me"}}), &Precondition::none()).await.unwrap();
    assert_eq!(group["tags"], json!({"owner": "me"}));

    let e = sim.patch_tags(&id("routeTables/missing"), json!({"tags": {}}), &Precondition::none()).await;
    assert_eq!(rejected(e.unwrap_err()).1, "ResourceNotFound");
    let e = sim.patch_tags(&id("routeTables/rt"), json!({"tags": {"n": 1}}), &Precondition::none()).await;
    assert_eq!(rejected(e.unwrap_err()).1, "InvalidRequestContent");
    let e = sim.patch_tags(&id("virtualNetworks/vnet/subnets/s"), json!({"tags": {}}), &Precondition::none()).await;
    assert_eq!(rejected(e.unwrap_err()).0, 405);
    let stale = Precondition::if_match("W/\"1\"");
    assert!(sim.patch_tags(&id("routeTables/rt"), json!({"tags": {}}), &stale).await.is_err());
    let patch = sim.calls().into_iter().find(|c| c.method == "PATCH").unwrap();
    assert_eq!(patch.op, Op::Write, "audited as a write");
}

#[tokio::test]
async fn the_generic_resource_list_shows_top_level_resources_of_a_group_or_subscription() {
    let sim = with_nsg().await;
    sim.put(
        &id("publicIPAddresses/pip"),
        json!({"location": "West Europe", "sku": {"name": "Standard"}, "tags": {"a": "b"}}),
    )
    .await
    .unwrap();
    sim.put(&id("networkSecurityGroups/nsg/securityRules/r"), rule(100, "Inbound")).await.unwrap();
    let listed = sim.list_resources(RG).await.unwrap();
    assert_eq!(
        listed,
        vec![
            json!({"id": id("networkSecurityGroups/nsg"), "name": "nsg", "type": "Microsoft.Network/networkSecurityGroups", "location": "westeurope"}),
            json!({"id": id("publicIPAddresses/pip"), "name": "pip", "type": "Microsoft.Network/publicIPAddresses",
                   "sku": {"name": "Standard", "tier": "Regional"}, "location": "westeurope", "tags": {"a": "b"}}),
        ]
    );
    assert_eq!(sim.list_resources(SUB).await.unwrap(), listed);
    let e = sim.list_resources(&format!("{SUB}/resourceGroups/nope")).await.unwrap_err();
    assert_eq!(rejected(e).1, "ResourceGroupNotFound");
}

#[tokio::test]
async fn regression_security_rules_are_refused_as_azure_refuses_them_alone_or_in_their_nsg() {
    let sim = with_nsg().await;
    let nsg = id("networkSecurityGroups/nsg");
    let e = sim.put(&format!("{nsg}/securityRules/low"), rule(99, "Inbound")).await.unwrap_err();
    let (status, code, message) = rejected(e);
    assert_eq!((status, code.as_str()), (400, "SecurityRuleInvalidPriority"));
    assert_eq!(message, "Security rule has invalid Priority. Value provided: 99 Allowed range 100-4096.");
    let e = sim.put(&format!("{nsg}/securityRules/high"), rule(4097, "Inbound")).await.unwrap_err();
    assert_eq!(rejected(e).1, "SecurityRuleInvalidPriority");

    sim.put(&format!("{nsg}/securityRules/first"), rule(300, "Inbound")).await.unwrap();
    sim.put(&format!("{nsg}/securityRules/outbound"), rule(300, "Outbound")).await.unwrap();
    let e = sim.put(&format!("{nsg}/securityRules/second"), rule(300, "inbound")).await.unwrap_err();
    let (_, code, message) = rejected(e);
    assert_eq!(code, "SecurityRuleConflict");
    assert_eq!(
        message,
        "Security rule second conflicts with rule first. Rules cannot have the same Priority and Direction."
    );
    // Rewriting a rule with its own priority is no conflict.
    sim.put(&format!("{nsg}/securityRules/first"), rule(300, "Inbound")).await.unwrap();

    let mut bad = rule(400, "Inbound");
    bad["properties"]["sourceAddressPrefix"] = json!("any");
    let e = sim.put(&format!("{nsg}/securityRules/bad"), bad.clone()).await.unwrap_err();
    let (_, code, message) = rejected(e);
    assert_eq!(code, "SecurityRuleInvalidAddressPrefix");
    assert_eq!(
        message,
        format!("Security rule {nsg}/securityRules/bad has invalid Address prefix. Value provided: any")
    );

    // The same checks on the NSG's own array; a refused PUT changes nothing.
    let before = sim.get_now(&nsg).unwrap();
    for (rules, code) in [
        (json!([{"name": "x", "properties": rule(50, "Inbound")["properties"]}]), "SecurityRuleInvalidPriority"),
        (
            json!([{"name": "x", "properties": rule(500, "Outbound")["properties"]}, {"name": "y", "properties": rule(500, "Outbound")["properties"]}]),
            "SecurityRuleConflict",
        ),
        (json!([{"name": "bad", "properties": bad["properties"]}]), "SecurityRuleInvalidAddressPrefix"),
    ] {
        let e =
            sim.put(&nsg, json!({"location": "westeurope", "properties": {"securityRules": rules}})).await.unwrap_err();
        assert_eq!(rejected(e).1, code);
        assert_eq!(sim.get_now(&nsg).unwrap(), before);
    }
}

#[tokio::test]
async fn regression_routes_and_address_spaces_are_refused_as_azure_refuses_them() {
    let sim = with_nsg().await;
    sim.put(&id("routeTables/rt"), json!({"location": "westeurope"})).await.unwrap();
    let appliance = json!({"properties": {"addressPrefix": "0.0.0.0/0", "nextHopType": "VirtualAppliance"}});
    let e = sim.put(&id("routeTables/rt/routes/to-fw"), appliance.clone()).await.unwrap_err();
    let (status, code, message) = rejected(e);
    assert_eq!((status, code.as_str()), (400, "MissingNextHopIpAddress"));
    assert_eq!(
        message,
        "NextHopIpAddress cannot be Null or Empty in route to-fw when NextHopType is VirtualAppliance."
    );
    let in_table = json!({"location": "westeurope", "properties": {"routes": [{"name": "to-fw", "properties": appliance["properties"]}]}});
    assert_eq!(rejected(sim.put(&id("routeTables/rt"), in_table).await.unwrap_err()).1, "MissingNextHopIpAddress");
    let mut with_hop = appliance.clone();
    with_hop["properties"]["nextHopIpAddress"] = json!("10.0.0.4");
    sim.put(&id("routeTables/rt/routes/to-fw"), with_hop).await.unwrap();

    let e = sim
        .put(
            &id("virtualNetworks/v"),
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.1.0.0"]}}}),
        )
        .await
        .unwrap_err();
    let (_, code, message) = rejected(e);
    assert_eq!(code, "InvalidAddressPrefixFormat");
    assert!(message.contains("Address prefix 10.1.0.0 of resource"), "{message}");
    assert!(sim.get_now(&id("virtualNetworks/v")).is_none());
}

#[tokio::test]
async fn the_write_model_sees_the_refusals_of_the_in_process_cloud() {
    // `--cloud sim` goes through CloudWrite::create/update: the same core, the same refusal.
    let sim = with_nsg().await;
    let e = sim.create(&id("networkSecurityGroups/nsg/securityRules/r"), rule(5000, "Inbound")).await.unwrap_err();
    assert_eq!(rejected(e).1, "SecurityRuleInvalidPriority");
}
