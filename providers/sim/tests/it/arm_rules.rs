//! The ARM rules the simulator enforces, one test per rule.

use serde_json::{json, Value};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Op};
use trellis_sim::ArmSim;

use crate::common;
use common::{id, rejected, RG};

const SUB: &str = "/subscriptions/sub-1";

/// A resource group with a VNet, route table, NSG and NAT gateway (+ public IP).
async fn base() -> ArmSim {
    let sim = ArmSim::in_memory("sub-1");
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim.put(
        &id("virtualNetworks/vnet"),
        json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
    )
    .await
    .unwrap();
    sim.put(&id("routeTables/rt"), json!({"location": "westeurope"})).await.unwrap();
    sim.put(&id("networkSecurityGroups/nsg"), json!({"location": "westeurope"})).await.unwrap();
    sim.put(&id("publicIPAddresses/pip"), json!({"location": "westeurope", "sku": {"name": "Standard"}}))
        .await
        .unwrap();
    sim.put(
        &id("natGateways/nat"),
        json!({"location": "westeurope", "properties": {"publicIpAddresses": [{"id": id("publicIPAddresses/pip")}]}}),
    )
    .await
    .unwrap();
    sim
}

fn subnet_body(extra: Value) -> Value {
    let mut props = json!({"addressPrefix": "10.0.1.0/24"});
    props.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({ "properties": props })
}

#[tokio::test]
async fn get_and_delete_of_missing_resources() {
    let sim = base().await;
    assert_eq!(sim.get(&id("routeTables/nope")).await.unwrap(), None);
    sim.delete(&id("routeTables/nope")).await.unwrap();
    sim.delete(&id("virtualNetworks/missing/subnets/s")).await.unwrap();
    let statuses: Vec<(String, u16)> = sim.calls().iter().rev().take(3).map(|c| (c.method.clone(), c.status)).collect();
    assert_eq!(statuses, vec![("DELETE".into(), 204), ("DELETE".into(), 204), ("GET".into(), 404)]);
}

#[tokio::test]
async fn put_fills_read_only_fields_and_reports_created_then_replaced() {
    let sim = base().await;
    let vnet = sim.get(&id("virtualNetworks/vnet")).await.unwrap().unwrap();
    assert_eq!(vnet["id"], json!(id("virtualNetworks/vnet")));
    assert_eq!(vnet["name"], json!("vnet"));
    assert_eq!(vnet["type"], json!("Microsoft.Network/virtualNetworks"));
    assert_eq!(vnet["location"], json!("westeurope"));
    assert!(vnet["etag"].as_str().unwrap().starts_with("W/\""));
    assert_eq!(vnet["properties"]["provisioningState"], json!("Succeeded"));
    assert_eq!(vnet["properties"]["subnets"], json!([]));

    let rg = sim.get(RG).await.unwrap().unwrap();
    assert_eq!(rg["type"], json!("Microsoft.Resources/resourceGroups"));
    assert_eq!(rg["properties"]["provisioningState"], json!("Succeeded"));

    let pip = sim.get(&id("publicIPAddresses/pip")).await.unwrap().unwrap();
    let ip = pip["properties"]["ipAddress"].as_str().unwrap();
    assert!(ip.starts_with("20."), "{ip}");
    assert_eq!(pip["properties"]["natGateway"], json!({"id": id("natGateways/nat")}));
    // The same id gets the same address in another simulator.
    assert_eq!(base().await.get_now(&id("publicIPAddresses/pip")).unwrap()["properties"]["ipAddress"], json!(ip));

    let statuses: Vec<u16> = sim.calls().iter().filter(|c| c.method == "PUT").map(|c| c.status).collect();
    assert_eq!(statuses, vec![201; 6]);
    sim.put(&id("routeTables/rt"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(sim.calls().last().unwrap().status, 200);
}

#[tokio::test]
async fn regression_a_re_created_public_ip_gets_a_new_address_and_an_update_keeps_it() {
    let sim = base().await;
    let other = id("publicIPAddresses/other");
    let body = json!({"location": "westeurope", "sku": {"name": "Standard"}});
    let created = sim.put(&other, body.clone()).await.unwrap();
    let address = created["properties"]["ipAddress"].clone();
    assert!(address.is_string(), "{created}");
    let pip = sim.get_now(&id("publicIPAddresses/pip")).unwrap();
    assert_ne!(pip["properties"]["ipAddress"], address, "two public IPs never share an address");

    // An update keeps the address, whatever the body says.
    let mut tagged = body.clone();
    tagged["tags"] = json!({"a": "1"});
    tagged["properties"] = json!({"ipAddress": "1.2.3.4"});
    assert_eq!(sim.put(&other, tagged).await.unwrap()["properties"]["ipAddress"], address);

    // Deleted and created again under the same id: ARM allocates another address.
    sim.delete(&other).await.unwrap();
    let again = sim.put(&other, body).await.unwrap();
    assert!(again["properties"]["ipAddress"].is_string());
    assert_ne!(again["properties"]["ipAddress"], address);
}

/// Microsoft's example responses (azure-rest-api-specs, specification/network/Network.Management/
/// examples/2025-03-01/: PublicIpAddressCreateDefaults.json, PublicIpAddressCreateCustomizedValues.json,
/// VirtualNetworkCreate.json) and what ARM documents as defaults.
#[tokio::test]
async fn regression_put_answers_with_the_defaults_and_normal_forms_arm_adds() {
    let sim = ArmSim::in_memory("sub-1");
    let rg = sim.put(RG, json!({"location": "West Europe"})).await.unwrap();
    assert_eq!(rg["location"], json!("westeurope"), "ARM answers the location in its normal form");

    let vnet = sim
        .put(
            &id("virtualNetworks/vnet"),
            json!({"location": "WestEurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
        )
        .await
        .unwrap();
    assert_eq!(vnet["location"], json!("westeurope"));
    assert_eq!(vnet["properties"]["enableDdosProtection"], json!(false));
    assert_eq!(vnet["properties"]["virtualNetworkPeerings"], json!([]));

    let subnet = sim.put(&id("virtualNetworks/vnet/subnets/a"), subnet_body(json!({}))).await.unwrap();
    assert_eq!(subnet["properties"]["privateEndpointNetworkPolicies"], json!("Disabled"));
    assert_eq!(subnet["properties"]["privateLinkServiceNetworkPolicies"], json!("Enabled"));

    let rt = sim.put(&id("routeTables/rt"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(rt["properties"]["disableBgpRoutePropagation"], json!(false));

    let basic = sim.put(&id("publicIPAddresses/basic"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(basic["sku"], json!({"name": "Basic"}));
    assert_eq!(basic["properties"]["publicIPAllocationMethod"], json!("Dynamic"));
    assert_eq!(basic["properties"]["publicIPAddressVersion"], json!("IPv4"));
    assert_eq!(basic["properties"]["idleTimeoutInMinutes"], json!(4));

    let standard = sim
        .put(&id("publicIPAddresses/std"), json!({"location": "westeurope", "sku": {"name": "Standard"}}))
        .await
        .unwrap();
    assert_eq!(standard["sku"], json!({"name": "Standard", "tier": "Regional"}));
    assert_eq!(standard["properties"]["publicIPAllocationMethod"], json!("Static"));

    let nat = sim.put(&id("natGateways/nat"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(nat["properties"]["idleTimeoutInMinutes"], json!(4));
    assert_eq!(nat["sku"], json!({"name": "Standard"}));

    // What a body says is kept; a GET shows the same as the PUT answered.
    let custom = sim
        .put(&id("natGateways/custom"), json!({"location": "westeurope", "properties": {"idleTimeoutInMinutes": 10}}))
        .await
        .unwrap();
    assert_eq!(custom["properties"]["idleTimeoutInMinutes"], json!(10));
    assert_eq!(sim.get(&id("natGateways/nat")).await.unwrap().unwrap(), nat);
}

/// ARM's answers when a NIC, load balancer or VM still uses what is deleted (codes and messages as
/// Azure returns them: `InUseSubnetCannotBeDeleted`, `PublicIPAddressCannotBeDeleted`, `NicInUse`).
#[tokio::test]
async fn regression_a_nic_load_balancer_or_vm_blocks_deleting_what_it_uses() {
    let sim = base().await;
    let subnet = id("virtualNetworks/vnet/subnets/a");
    sim.put(&subnet, subnet_body(json!({}))).await.unwrap();
    for ip in ["nic-ip", "lb-ip"] {
        sim.put(
            &id(&format!("publicIPAddresses/{ip}")),
            json!({"location": "westeurope", "sku": {"name": "Standard"}}),
        )
        .await
        .unwrap();
    }
    let nic = id("networkInterfaces/nic");
    sim.put(
        &nic,
        json!({"location": "westeurope", "properties": {"ipConfigurations": [{"name": "ipconfig1", "properties": {
            "subnet": {"id": subnet}, "publicIPAddress": {"id": id("publicIPAddresses/nic-ip")}}}]}}),
    )
    .await
    .unwrap();
    let lb = id("loadBalancers/lb");
    sim.put(
        &lb,
        json!({"location": "westeurope", "properties": {"frontendIPConfigurations": [{"name": "fe", "properties": {
            "publicIPAddress": {"id": id("publicIPAddresses/lb-ip")}}}]}}),
    )
    .await
    .unwrap();
    let vm = format!("{RG}/providers/Microsoft.Compute/virtualMachines/vm");
    sim.put(
        &vm,
        json!({"location": "westeurope", "properties": {"networkProfile": {"networkInterfaces": [{"id": nic}]}}}),
    )
    .await
    .unwrap();

    let refused = |e: CloudError| rejected(e);
    let (status, code, message) = refused(sim.delete(&subnet).await.unwrap_err());
    assert_eq!((status, code.as_str()), (400, "InUseSubnetCannotBeDeleted"));
    assert!(message.starts_with("Subnet a is in use by "), "{message}");
    assert!(message.contains(&format!("{nic}/ipConfigurations/ipconfig1")), "{message}");
    assert!(message.contains("aka.ms/deletesubnet"), "{message}");
    let (_, code, _) = refused(sim.delete(&id("virtualNetworks/vnet")).await.unwrap_err());
    assert_eq!(code, "InUseSubnetCannotBeDeleted", "the VNet takes its subnets with it");
    let (_, code, message) = refused(sim.delete(&id("publicIPAddresses/nic-ip")).await.unwrap_err());
    assert_eq!(code, "PublicIPAddressCannotBeDeleted");
    assert!(message.contains(&format!("still allocated to resource {nic}/ipConfigurations/ipconfig1")), "{message}");
    let (_, code, message) = refused(sim.delete(&id("publicIPAddresses/lb-ip")).await.unwrap_err());
    assert_eq!(code, "PublicIPAddressCannotBeDeleted");
    assert!(message.contains(&format!("{lb}/frontendIPConfigurations/fe")), "{message}");
    let (_, code, message) = refused(sim.delete(&nic).await.unwrap_err());
    assert_eq!(code, "NicInUse");
    assert!(message.contains(&vm), "{message}");
    assert!(sim.get_now(&subnet).is_some() && sim.get_now(&nic).is_some());

    // In the right order, everything goes.
    sim.delete(&vm).await.unwrap();
    sim.delete(&nic).await.unwrap();
    sim.delete(&subnet).await.unwrap();
    sim.delete(&id("publicIPAddresses/nic-ip")).await.unwrap();
    sim.delete(&lb).await.unwrap();
    sim.delete(&id("publicIPAddresses/lb-ip")).await.unwrap();
}

#[tokio::test]
async fn a_resource_group_goes_with_the_nics_load_balancers_and_vms_in_it() {
    let sim = base().await;
    let subnet = id("virtualNetworks/vnet/subnets/a");
    sim.put(&subnet, subnet_body(json!({}))).await.unwrap();
    let nic = id("networkInterfaces/nic");
    sim.put(
        &nic,
        json!({"location": "westeurope", "properties": {"ipConfigurations": [{"name": "ipconfig1", "properties": {"subnet": {"id": subnet}}}]}}),
    )
    .await
    .unwrap();
    sim.put(
        &format!("{RG}/providers/Microsoft.Compute/virtualMachines/vm"),
        json!({"location": "westeurope", "properties": {"networkProfile": {"networkInterfaces": [{"id": nic}]}}}),
    )
    .await
    .unwrap();
    sim.delete(RG).await.unwrap();
    assert!(sim.get_now(&nic).is_none());
}

#[tokio::test]
async fn put_replaces_the_whole_resource() {
    let sim = base().await;
    let rt = id("routeTables/rt");
    let first = sim
        .put(
            &rt,
            json!({"location": "westeurope", "tags": {"a": "1"}, "properties": {"disableBgpRoutePropagation": true}}),
        )
        .await
        .unwrap();
    let second = sim.put(&rt, json!({"location": "westeurope", "tags": {"b": "2"}})).await.unwrap();
    assert_eq!(second["tags"], json!({"b": "2"}));
    assert_eq!(second["properties"]["disableBgpRoutePropagation"], json!(false), "left out: ARM's default again");
    assert_ne!(first["etag"], second["etag"]);
    assert_eq!(sim.get_now(&rt).unwrap(), second);
}

#[tokio::test]
async fn ids_are_case_insensitive_and_keep_their_creation_casing() {
    let sim = base().await;
    let lower = id("virtualNetworks/vnet/subnets/Workers").to_lowercase();
    sim.put(&lower, subnet_body(json!({}))).await.unwrap();
    // The nested resource takes its parent's casing; the name keeps the casing it was given.
    let got = sim.get(&id("virtualNetworks/VNET/subnets/WORKERS")).await.unwrap().unwrap();
    assert_eq!(got["id"], json!(id("virtualNetworks/vnet/subnets/workers")));
    assert_eq!(got["type"], json!("Microsoft.Network/virtualNetworks/subnets"));

    let upper = format!("{SUB}/resourcegroups/RG/providers/microsoft.network/routetables/Other");
    sim.put(&upper, json!({"location": "westeurope"})).await.unwrap();
    let got = sim.get(&id("routeTables/other")).await.unwrap().unwrap();
    // ARM's keywords and the type in canonical casing, the names as the creating request spelled them.
    let canonical = format!("{SUB}/resourceGroups/RG/providers/Microsoft.Network/routeTables/Other");
    assert_eq!(got["id"], json!(canonical));
    assert_eq!(got["type"], json!("Microsoft.Network/routeTables"));
    sim.put(&id("routeTables/OTHER"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(sim.get_now(&id("routeTables/other")).unwrap()["id"], json!(canonical));
}

/// Found with the official Python SDK against `trellis sim serve`: a resource created through a
/// lowercase `/resourcegroups/` path kept that spelling in its id (and its children's), while ARM
/// answers `/resourceGroups/` (and `Microsoft.Network/virtualNetworks`) whatever the request's casing.
#[tokio::test]
async fn regression_ids_are_answered_in_arms_canonical_casing_whatever_the_request_used() {
    let sim = ArmSim::in_memory(SUB.trim_start_matches("/subscriptions/"));
    let rg = format!("{SUB}/RESOURCEGROUPS/Lower");
    let made = sim.put(&rg, json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(made["id"], json!(format!("{SUB}/resourceGroups/Lower")));
    let vnet = format!("{SUB}/resourcegroups/lower/providers/MICROSOFT.NETWORK/virtualnetworks/v");
    sim.put(
        &vnet,
        json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}}),
    )
    .await
    .unwrap();
    let subnet = format!("{vnet}/SUBNETS/s");
    let got = sim.put(&subnet, json!({"properties": {"addressPrefix": "10.0.0.0/24"}})).await.unwrap();
    assert_eq!(
        got["id"],
        json!(format!("{SUB}/resourceGroups/lower/providers/Microsoft.Network/virtualNetworks/v/subnets/s"))
    );
    let listed = sim.list(&format!("{SUB}/resourceGroups/LOWER"), "microsoft.network/virtualnetworks").await.unwrap();
    assert_eq!(
        listed[0]["id"],
        json!(format!("{SUB}/resourceGroups/lower/providers/Microsoft.Network/virtualNetworks/v"))
    );
    assert!(listed[0]["properties"]["subnets"][0]["id"].as_str().unwrap().contains("/resourceGroups/lower/"));
}

#[tokio::test]
async fn containment_needs_the_resource_group_and_the_parent() {
    let sim = base().await;
    let e = sim
        .put(&format!("{SUB}/resourceGroups/nope/providers/Microsoft.Network/routeTables/rt"), json!({"location": "x"}))
        .await
        .unwrap_err();
    assert_eq!(rejected(e).1, "ResourceGroupNotFound");
    let e = sim.put(&id("virtualNetworks/missing/subnets/s"), subnet_body(json!({}))).await.unwrap_err();
    let (status, code, message) = rejected(e);
    assert_eq!((status, code.as_str()), (404, "ParentResourceNotFound"));
    assert!(message.contains("virtualNetworks/missing"), "{message}");
    let e = sim
        .put(&id("networkSecurityGroups/missing/securityRules/r"), json!({"properties": {"priority": 100}}))
        .await
        .unwrap_err();
    assert_eq!(rejected(e).1, "ParentResourceNotFound");
    assert_eq!(sim.calls().last().unwrap().status, 404);
}

#[tokio::test]
async fn tracked_resources_need_a_location_that_does_not_move() {
    let sim = base().await;
    let e = sim.put(&id("routeTables/noloc"), json!({})).await.unwrap_err();
    assert_eq!(rejected(e).1, "LocationRequired");
    let e = sim.put(RG, json!({"location": "northeurope"})).await.unwrap_err();
    assert_eq!(rejected(e).0, 409);
    sim.put(RG, json!({"location": "West Europe"})).await.unwrap();
}

#[tokio::test]
async fn subnet_links_must_exist_and_be_single_objects() {
    let sim = base().await;
    let subnet = id("virtualNetworks/vnet/subnets/s");
    let e = sim.put(&subnet, subnet_body(json!({"routeTable": {"id": id("routeTables/missing")}}))).await.unwrap_err();
    let (status, code, message) = rejected(e);
    assert_eq!((status, code.as_str()), (400, "InvalidResourceReference"));
    assert!(message.contains(&id("routeTables/missing")), "{message}");

    let e = sim
        .put(&subnet, subnet_body(json!({"networkSecurityGroup": {"id": id("networkSecurityGroups/missing")}})))
        .await
        .unwrap_err();
    assert_eq!(rejected(e).1, "InvalidResourceReference");
    let e = sim.put(&subnet, subnet_body(json!({"natGateway": {"id": id("natGateways/missing")}}))).await.unwrap_err();
    assert_eq!(rejected(e).1, "InvalidResourceReference");

    let two = json!([{"id": id("routeTables/rt")}, {"id": id("routeTables/rt")}]);
    let e = sim.put(&subnet, subnet_body(json!({"routeTable": two}))).await.unwrap_err();
    assert_eq!(rejected(e).1, "InvalidRequestFormat");

    let e = sim
        .put(&subnet, subnet_body(json!({"routeTable": {"id": id("networkSecurityGroups/nsg")}})))
        .await
        .unwrap_err();
    assert_eq!(rejected(e).1, "LinkedInvalidPropertyId");
    assert_eq!(sim.get(&subnet).await.unwrap(), None, "refused PUTs write nothing");
}

#[tokio::test]
async fn back_references_are_computed_on_get() {
    let sim = base().await;
    let (rt, nsg, nat) = (id("routeTables/rt"), id("networkSecurityGroups/nsg"), id("natGateways/nat"));
    // Two subnets with distinct ranges (ARM refuses overlapping ones): b 10.0.2.0/24, a 10.0.1.0/24.
    for (name, prefix) in [("b", "10.0.2.0/24"), ("a", "10.0.1.0/24")] {
        let body = subnet_body(json!({
            "addressPrefix": prefix,
            "routeTable": {"id": rt}, "networkSecurityGroup": {"id": nsg}, "natGateway": {"id": nat}
        }));
        sim.put(&id(&format!("virtualNetworks/vnet/subnets/{name}")), body).await.unwrap();
    }
    let refs = json!([{"id": id("virtualNetworks/vnet/subnets/a")}, {"id": id("virtualNetworks/vnet/subnets/b")}]);
    for target in [&rt, &nsg, &nat] {
        assert_eq!(sim.get(target).await.unwrap().unwrap()["properties"]["subnets"], refs, "{target}");
    }
    let vnet = sim.get(&id("virtualNetworks/vnet")).await.unwrap().unwrap();
    let names: Vec<&str> =
        vnet["properties"]["subnets"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["b", "a"], "subnets in creation order");
    assert_eq!(vnet["properties"]["subnets"][0]["properties"]["routeTable"], json!({"id": rt}));

    // Back-references are not stored: a GET body PUT back does not change them, and detaching shows.
    let rt_body = sim.get(&rt).await.unwrap().unwrap();
    sim.put(&rt, rt_body).await.unwrap();
    sim.put(&id("virtualNetworks/vnet/subnets/a"), subnet_body(json!({}))).await.unwrap();
    assert_eq!(
        sim.get(&rt).await.unwrap().unwrap()["properties"]["subnets"],
        json!([{"id": id("virtualNetworks/vnet/subnets/b")}])
    );
    // A VNet PUT without `subnets` leaves them alone (ARM since api-version 2023-09-01).
    sim.put(&id("virtualNetworks/vnet"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(
        sim.get(&id("virtualNetworks/vnet")).await.unwrap().unwrap()["properties"]["subnets"].as_array().unwrap().len(),
        2
    );
}

#[tokio::test]
async fn rules_and_routes_are_addressable_children() {
    let sim = base().await;
    let nsg = id("networkSecurityGroups/nsg");
    let rule = |name: &str, prio: u32| json!({"name": name, "properties": {"priority": prio, "access": "Allow", "direction": "Inbound"}});
    sim.put(
        &nsg,
        json!({"location": "westeurope", "properties": {"securityRules": [rule("ssh", 100), rule("web", 200)]}}),
    )
    .await
    .unwrap();

    let ssh = sim.get(&format!("{nsg}/securityRules/ssh")).await.unwrap().unwrap();
    assert_eq!(ssh["type"], json!("Microsoft.Network/networkSecurityGroups/securityRules"));
    assert_eq!(ssh["id"], json!(format!("{nsg}/securityRules/ssh")));
    assert_eq!(ssh["properties"]["priority"], json!(100));

    // A runtime writer adds and removes single rules; the parent's array follows.
    sim.put(&format!("{nsg}/securityRules/bastion"), json!({"properties": {"priority": 300}})).await.unwrap();
    sim.delete(&format!("{nsg}/securityRules/ssh")).await.unwrap();
    let got = sim.get(&nsg).await.unwrap().unwrap();
    let names: Vec<&str> =
        got["properties"]["securityRules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["web", "bastion"]);
    let listed = sim.list(&nsg, "Microsoft.Network/networkSecurityGroups/securityRules").await.unwrap();
    assert_eq!(listed.len(), 2);

    // A PUT of the NSG replaces its rules.
    sim.put(&nsg, json!({"location": "westeurope", "properties": {"securityRules": [rule("only", 100)]}}))
        .await
        .unwrap();
    assert_eq!(sim.get(&format!("{nsg}/securityRules/web")).await.unwrap(), None);

    let rt = id("routeTables/rt");
    let route = json!({"properties": {"addressPrefix": "10.1.0.0/24", "nextHopType": "VirtualAppliance", "nextHopIpAddress": "10.0.0.4"}});
    sim.put(&format!("{rt}/routes/node-1"), route).await.unwrap();
    let got = sim.get(&rt).await.unwrap().unwrap();
    assert_eq!(got["properties"]["routes"][0]["name"], json!("node-1"));
    assert_eq!(got["properties"]["routes"][0]["properties"]["nextHopIpAddress"], json!("10.0.0.4"));
    // Deleting the route table deletes its routes.
    sim.delete(&rt).await.unwrap();
    assert_eq!(sim.get(&format!("{rt}/routes/node-1")).await.unwrap(), None);
}

#[tokio::test]
async fn referenced_resources_cannot_be_deleted() {
    let sim = base().await;
    let subnet = id("virtualNetworks/vnet/subnets/s");
    let body = subnet_body(
        json!({"routeTable": {"id": id("routeTables/rt")}, "networkSecurityGroup": {"id": id("networkSecurityGroups/nsg")}}),
    );
    sim.put(&subnet, body).await.unwrap();

    let e = sim.delete(&id("routeTables/rt")).await.unwrap_err();
    let (status, code, message) = rejected(e);
    assert_eq!((status, code.as_str()), (400, "InUseRouteTableCannotBeDeleted"));
    assert!(message.contains(&subnet), "{message}");
    let e = sim.delete(&id("networkSecurityGroups/nsg")).await.unwrap_err();
    assert_eq!(rejected(e).1, "InUseNetworkSecurityGroupCannotBeDeleted");
    let e = sim.delete(&id("publicIPAddresses/pip")).await.unwrap_err();
    assert_eq!(rejected(e).1, "PublicIPAddressCannotBeDeleted");

    // Deleting the subnet first frees them.
    sim.delete(&subnet).await.unwrap();
    sim.delete(&id("routeTables/rt")).await.unwrap();
    sim.delete(&id("networkSecurityGroups/nsg")).await.unwrap();
}

#[tokio::test]
async fn deleting_a_resource_group_deletes_everything_in_it_unless_referenced_from_outside() {
    let sim = base().await;
    sim.put(&id("virtualNetworks/vnet/subnets/s"), subnet_body(json!({"routeTable": {"id": id("routeTables/rt")}})))
        .await
        .unwrap();
    // A subnet in another resource group uses this group's NSG.
    let other = format!("{SUB}/resourceGroups/other");
    sim.put(&other, json!({"location": "westeurope"})).await.unwrap();
    let other_vnet = format!("{other}/providers/Microsoft.Network/virtualNetworks/v2");
    sim.put(&other_vnet, json!({"location": "westeurope"})).await.unwrap();
    let foreign = format!("{other_vnet}/subnets/s2");
    sim.put(&foreign, subnet_body(json!({"networkSecurityGroup": {"id": id("networkSecurityGroups/nsg")}})))
        .await
        .unwrap();

    let e = sim.delete(RG).await.unwrap_err();
    let (_, code, message) = rejected(e);
    assert_eq!(code, "InUseNetworkSecurityGroupCannotBeDeleted");
    assert!(message.contains(&foreign), "{message}");
    assert!(sim.get_now(&id("virtualNetworks/vnet/subnets/s")).is_some(), "a refused delete deletes nothing");

    sim.delete(&foreign).await.unwrap();
    sim.delete(RG).await.unwrap();
    for rest in ["virtualNetworks/vnet", "virtualNetworks/vnet/subnets/s", "routeTables/rt", "natGateways/nat"] {
        assert_eq!(sim.get(&id(rest)).await.unwrap(), None, "{rest}");
    }
    assert!(sim.get_now(&other_vnet).is_some());
}

#[tokio::test]
async fn deleting_a_vnet_deletes_its_subnets() {
    let sim = base().await;
    sim.put(&id("virtualNetworks/vnet/subnets/s"), subnet_body(json!({}))).await.unwrap();
    sim.delete(&id("virtualNetworks/vnet")).await.unwrap();
    assert_eq!(sim.get(&id("virtualNetworks/vnet/subnets/s")).await.unwrap(), None);
    sim.delete(&id("virtualNetworks/vnet/subnets/s")).await.unwrap();
    assert_eq!(sim.calls().last().unwrap().status, 204);
}

#[tokio::test]
async fn list_returns_direct_children_sorted_by_id() {
    let sim = base().await;
    sim.put(&id("natGateways/a-nat"), json!({"location": "westeurope"})).await.unwrap();
    let nats = sim.list(RG, "Microsoft.Network/natGateways").await.unwrap();
    let ids: Vec<&str> = nats.iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![id("natGateways/a-nat"), id("natGateways/nat")]);

    for (name, prefix) in [("z", "10.0.26.0/24"), ("m", "10.0.13.0/24")] {
        let body = subnet_body(json!({"addressPrefix": prefix}));
        sim.put(&id(&format!("virtualNetworks/vnet/subnets/{name}")), body).await.unwrap();
    }
    let subnets = sim.list(&id("virtualNetworks/vnet"), "Microsoft.Network/virtualNetworks/subnets").await.unwrap();
    let names: Vec<&str> = subnets.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["m", "z"]);
    assert!(sim.list(RG, "Microsoft.Network/virtualNetworks/subnets").await.is_err(), "not a top-level type");

    let groups = sim.list(SUB, "Microsoft.Resources/resourceGroups").await.unwrap();
    assert_eq!(groups.len(), 1);

    let e = sim.list(&format!("{SUB}/resourceGroups/nope"), "Microsoft.Network/natGateways").await.unwrap_err();
    assert_eq!(rejected(e).0, 404);
    let last = sim.calls().last().unwrap().clone();
    assert_eq!((last.method.as_str(), last.op, last.status), ("LIST", Op::Read, 404));
    assert_eq!(last.target, format!("{SUB}/resourceGroups/nope/Microsoft.Network/natGateways"));
}

#[tokio::test]
async fn audit_log_records_every_call_and_marks_slice_it() {
    let sim = ArmSim::in_memory("sub-1");
    let _ = sim.put(&id("routeTables/rt"), json!({"location": "x"})).await;
    let mark = sim.mark();
    sim.put(RG, json!({"location": "westeurope"})).await.unwrap();
    sim.get(RG).await.unwrap();
    let all = sim.calls();
    assert_eq!(all.len(), 3);
    assert_eq!((all[0].method.as_str(), all[0].op, all[0].status), ("PUT", Op::Write, 404));
    let since: Vec<(String, u16)> = sim.calls_since(mark).into_iter().map(|c| (c.method, c.status)).collect();
    assert_eq!(since, vec![("PUT".to_string(), 201), ("GET".to_string(), 200)]);
    assert!(sim.calls_since(99).is_empty());
    // Clones share the cloud and the log.
    let twin = sim.clone();
    twin.get(RG).await.unwrap();
    assert_eq!(sim.mark(), 4);
}

#[tokio::test]
async fn snapshot_lists_every_resource_sorted_by_id() {
    let sim = base().await;
    sim.put(&id("virtualNetworks/vnet/subnets/s"), subnet_body(json!({}))).await.unwrap();
    let ids: Vec<String> = sim.snapshot().iter().map(|v| v["id"].as_str().unwrap().to_lowercase()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert_eq!(ids.len(), 7);
    assert!(sim.calls().iter().all(|c| c.method == "PUT"), "snapshot and get_now are not audited");
}

// Issue #7 item 9: what ARM refuses about a subnet's address range and region, the simulator refuses
// too (a simulator that accepts it hides the bug until the real apply).

#[tokio::test]
async fn regression_a_subnet_outside_its_vnet_address_space_is_refused() {
    let sim = base().await;
    let e = sim
        .put(&id("virtualNetworks/vnet/subnets/s"), json!({"properties": {"addressPrefix": "10.1.0.0/24"}}))
        .await
        .unwrap_err();
    assert_eq!(
        rejected(e),
        (
            400,
            "NetcfgSubnetRangeOutsideVnet".into(),
            "Subnet 's' is not valid because its IP address range is outside the IP address range of virtual network 'vnet'.".into()
        )
    );
    // Every prefix of `addressPrefixes` counts, not only the first.
    let e = sim
        .put(
            &id("virtualNetworks/vnet/subnets/s"),
            json!({"properties": {"addressPrefixes": ["10.0.0.0/28", "10.1.0.0/28"]}}),
        )
        .await
        .unwrap_err();
    assert_eq!(rejected(e).1, "NetcfgSubnetRangeOutsideVnet");
    sim.put(
        &id("virtualNetworks/vnet/subnets/s"),
        json!({"properties": {"addressPrefixes": ["10.0.0.0/28", "10.0.1.0/28"]}}),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn regression_overlapping_subnets_are_refused() {
    let sim = base().await;
    sim.put(&id("virtualNetworks/vnet/subnets/a"), subnet_body(json!({}))).await.unwrap();
    let e = sim
        .put(&id("virtualNetworks/vnet/subnets/b"), json!({"properties": {"addressPrefix": "10.0.1.128/25"}}))
        .await
        .unwrap_err();
    assert_eq!(
        rejected(e),
        (
            400,
            "NetcfgSubnetRangesOverlap".into(),
            "Subnet 'b' is not valid because its IP address range overlaps with that of an existing subnet in virtual network 'vnet'.".into()
        )
    );
    // Against a sibling shown with `addressPrefixes` too.
    sim.put(
        &id("virtualNetworks/vnet/subnets/c"),
        json!({"properties": {"addressPrefixes": ["10.0.8.0/24", "10.0.9.0/24"]}}),
    )
    .await
    .unwrap();
    let e = sim
        .put(&id("virtualNetworks/vnet/subnets/d"), json!({"properties": {"addressPrefix": "10.0.9.0/26"}}))
        .await
        .unwrap_err();
    assert_eq!(rejected(e).1, "NetcfgSubnetRangesOverlap");
    // A subnet does not overlap itself: PUT again with the same range is fine.
    sim.put(&id("virtualNetworks/vnet/subnets/a"), subnet_body(json!({}))).await.unwrap();
}

#[tokio::test]
async fn regression_a_subnet_prefix_that_is_not_a_cidr_is_refused() {
    let sim = base().await;
    let e = sim
        .put(&id("virtualNetworks/vnet/subnets/s"), json!({"properties": {"addressPrefix": "10.0.1.0/99"}}))
        .await
        .unwrap_err();
    let (status, code, message) = rejected(e);
    assert_eq!((status, code.as_str()), (400, "InvalidAddressPrefixFormat"));
    assert!(message.starts_with("Address prefix 10.0.1.0/99 of resource "), "{message}");
}

#[tokio::test]
async fn regression_a_subnet_cannot_reference_resources_in_another_region() {
    let sim = base().await;
    sim.put(&id("routeTables/rt-east"), json!({"location": "eastus"})).await.unwrap();
    let e = sim
        .put(
            &id("virtualNetworks/vnet/subnets/s"),
            subnet_body(json!({"routeTable": {"id": id("routeTables/rt-east")}})),
        )
        .await
        .unwrap_err();
    let (status, code, message) = rejected(e);
    assert_eq!((status, code.as_str()), (400, "InvalidResourceReference"));
    assert!(message.contains("routeTables/rt-east referenced by resource "), "{message}");
    assert!(message.contains("both resources are in the same region"), "{message}");
    // Location names are compared as ARM does: `West Europe` is `westeurope`.
    sim.put(&id("networkSecurityGroups/nsg-we"), json!({"location": "West Europe"})).await.unwrap();
    sim.put(
        &id("virtualNetworks/vnet/subnets/s"),
        subnet_body(json!({"networkSecurityGroup": {"id": id("networkSecurityGroups/nsg-we")}})),
    )
    .await
    .unwrap();
}
