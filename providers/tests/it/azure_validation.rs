//! Azure admission validation, data-driven: every rule of upstream's
//! `pkg/apis/azure/validation/infrastructure.go` (reference §3.1, in upstream's order, with its
//! paths, messages and quirks) and the user-managed-egress rules of the spec (C1–C7, D1–D4).
//!
//! Each row is an InfrastructureConfig (YAML, as in a manifest) and the complete list of errors,
//! rendered as upstream's `field.Error.Error()`.

use crate::common;

use trellis_providers::azure::api::InfrastructureConfig;
use trellis_providers::azure::validation::{
    validate_infrastructure_config, validate_infrastructure_config_against_zones,
    validate_infrastructure_config_update, ShootContext,
};
use trellis_providers::field::Path;

const NODES: &str = "10.250.0.0/16";
const PODS: &str = "100.96.0.0/11";
const SERVICES: &str = "100.64.0.0/13";

fn shoot() -> ShootContext<'static> {
    ShootContext { nodes: Some(NODES), pods: Some(PODS), services: Some(SERVICES), in_place_update_workers: false }
}

#[track_caller]
fn cfg(yaml: &str) -> InfrastructureConfig {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("bad test config {yaml}: {e}"))
}

#[track_caller]
fn assert_errors(got: Vec<String>, expected: &[&str], what: &str) {
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    assert_eq!(got, expected, "\n{what}\n  got:\n    {}\n", got.join("\n    "));
}

/// Create validation of `yaml` against `shoot`.
#[track_caller]
fn check_with(shoot: ShootContext<'_>, yaml: &str, expected: &[&str]) {
    let got = validate_infrastructure_config(&cfg(yaml), shoot).iter().map(|e| e.to_string()).collect();
    assert_errors(got, expected, yaml);
}

/// Create validation of `yaml` against the default shoot networking (nodes 10.250.0.0/16,
/// pods 100.96.0.0/11, services 100.64.0.0/13).
#[track_caller]
fn check(yaml: &str, expected: &[&str]) {
    check_with(shoot(), yaml, expected);
}

/// Update validation `old` → `new` (the update rules only).
#[track_caller]
fn check_update_with(shoot: ShootContext<'_>, old: &str, new: &str, expected: &[&str]) {
    let got =
        validate_infrastructure_config_update(&cfg(old), &cfg(new), shoot).iter().map(|e| e.to_string()).collect();
    assert_errors(got, expected, &format!("{old} -> {new}"));
}

#[track_caller]
fn check_update(old: &str, new: &str, expected: &[&str]) {
    check_update_with(shoot(), old, new, expected);
}

const SINGLE: &str = "{networks: {workers: 10.250.0.0/16}}";
const ZONED: &str = "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 1, cidr: 10.250.0.0/24}, {name: 2, cidr: 10.250.1.0/24}]}}";
const BYO: &str =
    "{zoned: true, networks: {vnet: {name: hub-vnet, resourceGroup: hub-network}, subnet: {name: shoot-workers}}}";

#[test]
fn valid_configurations_have_no_errors() {
    for yaml in [
        SINGLE,
        ZONED,
        BYO,
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.0.0/19, serviceEndpoints: [Microsoft.Storage, Microsoft.KeyVault], natGateway: {enabled: true, zone: 1, idleConnectionTimeoutMinutes: 120, ipAddresses: [{name: my-ip, resourceGroup: ip-rg, zone: 1}]}}}",
        "{networks: {vnet: {name: existing-vnet, resourceGroup: vnet-rg}, workers: 10.250.0.0/16, natGateway: {enabled: true, sku: StandardV2, ipAddresses: [{name: v2-ip, resourceGroup: ip-rg}]}}}",
        "{networks: {vnet: {cidr: 10.0.0.0/8, ddosProtectionPlanID: /subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ddos-rg/providers/Microsoft.Network/ddosProtectionPlans/my-plan}, workers: 10.250.0.0/16}}",
        "{networks: {workers: 10.250.0.0/16, natGateway: {enabled: false}}, identity: {name: my-identity, resourceGroup: id-rg, acrAccess: true}}",
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 1, cidr: 10.250.0.0/24, serviceEndpoints: [Microsoft.Storage], natGateway: {enabled: true, sku: Standard, idleConnectionTimeoutMinutes: 4, ipAddresses: [{name: z1-ip, resourceGroup: ip-rg}]}}]}}",
    ] {
        check(yaml, &[]);
    }
}

#[test]
fn resource_group_is_not_supported_yet() {
    check(
        "{resourceGroup: {name: my-rg}, networks: {workers: 10.250.0.0/16}}",
        &[
            r#"resourceGroup: Invalid value: azure.ResourceGroup{Name:"my-rg"}: specifying an existing resource group is not supported yet"#,
        ],
    );
    check(
        "{resourceGroup: {name: 'rg.'}, networks: {workers: 10.250.0.0/16}}",
        &[
            r#"resourceGroup.name: Invalid value: "rg.": does not match expected regex ^[A-Za-z0-9_().-]{1,89}[A-Za-z0-9_()-]$"#,
            r#"resourceGroup: Invalid value: azure.ResourceGroup{Name:"rg."}: specifying an existing resource group is not supported yet"#,
        ],
    );
}

#[test]
fn workers_or_zones_must_be_specified_but_not_both() {
    check("{networks: {}}", &["networks.workers: Forbidden: either workers or zones must be specified"]);
    // The network rules stop there; identity is still validated.
    check(
        "{networks: {vnet: {name: x}}, identity: {name: id, resourceGroup: rg}}",
        &[
            "networks.workers: Forbidden: either workers or zones must be specified",
            r#"identity.name: Invalid value: "id": must not be fewer than 3 characters, got 2"#,
        ],
    );
    check(
        "{zoned: true, networks: {workers: 10.250.0.0/16, zones: [{name: 1, cidr: 10.250.0.0/24}]}}",
        &["networks.workers: Forbidden: workers and zones cannot be specified in parallel"],
    );
}

#[test]
fn vnet_name_and_resource_group_go_together() {
    check(
        "{networks: {vnet: {name: existing-vnet}, workers: 10.250.0.0/16}}",
        &[
            r#"networks.vnet: Invalid value: azure.VNet{Name:(*string)("existing-vnet"), ResourceGroup:(*string)(nil), CIDR:(*string)(nil), DDosProtectionPlanID:(*string)(nil)}: vnet name and resource group need to be specified together"#,
        ],
    );
    // Only the vnet checks stop; the single-subnet checks still run.
    check(
        "{networks: {vnet: {resourceGroup: vnet-rg}, workers: 10.250.0.1/16}}",
        &[
            r#"networks.vnet: Invalid value: azure.VNet{Name:(*string)(nil), ResourceGroup:(*string)("vnet-rg"), CIDR:(*string)(nil), DDosProtectionPlanID:(*string)(nil)}: vnet name and resource group need to be specified together"#,
            r#"networks.workers: Invalid value: "10.250.0.1/16": must be valid canonical CIDR"#,
        ],
    );
}

#[test]
fn ddos_protection_plan_id_is_a_valid_resource_id() {
    let with = |id: &str| {
        format!("{{networks: {{vnet: {{cidr: 10.250.0.0/16, ddosProtectionPlanID: '{id}'}}, workers: 10.250.0.0/16}}}}")
    };
    check(
        &with("my-plan"),
        &[
            r#"networks.vnet.ddosProtectionPlanID: Invalid value: "my-plan": invalid DDoS protection plan ID: invalid resource ID: resource id 'my-plan' must start with '/'"#,
        ],
    );
    check(
        &with("/subscriptions/sub/resourceGroups/ddos-rg"),
        &[
            r#"networks.vnet.ddosProtectionPlanID: Invalid value: "sub": must be a valid Azure subscription ID: invalid UUID length: 3"#,
        ],
    );
    check(
        &with("/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg./providers/Microsoft.Network/ddosProtectionPlans/p"),
        &[
            r#"networks.vnet.ddosProtectionPlanID.resourceGroupName: Invalid value: "rg.": does not match expected regex ^[A-Za-z0-9_().-]{1,89}[A-Za-z0-9_()-]$"#,
            r#"networks.vnet.ddosProtectionPlanID: Invalid value: "p": must not be fewer than 3 characters, got 1"#,
        ],
    );
    // An unparsable id stops the vnet checks.
    check(
        "{networks: {vnet: {name: v, resourceGroup: rg, ddosProtectionPlanID: x}, workers: 10.250.0.0/16}}",
        &[
            r#"networks.vnet.ddosProtectionPlanID: Invalid value: "x": invalid DDoS protection plan ID: invalid resource ID: resource id 'x' must start with '/'"#,
        ],
    );
}

#[test]
fn existing_vnet_rules() {
    check(
        "{networks: {vnet: {name: '', resourceGroup: ''}, workers: 10.250.0.0/16}}",
        &[
            "networks.vnet.name: Required value: the vnet name must not be empty if specifying an existing vnet",
            "networks.vnet.resourceGroup: Required value: the vnet resource group must not be empty if specifying an existing vnet",
            "networks.vnet.resourceGroup: Required value: must not be empty",
            r#"networks.vnet.name: Invalid value: "": must not be fewer than 2 characters, got 0"#,
        ],
    );
    check(
        "{networks: {vnet: {name: '-vnet', resourceGroup: 'rg.'}, workers: 10.250.0.0/16}}",
        &[
            r#"networks.vnet.resourceGroup: Invalid value: "rg.": does not match expected regex ^[A-Za-z0-9_().-]{1,89}[A-Za-z0-9_()-]$"#,
            r#"networks.vnet.name: Invalid value: "-vnet": does not match expected regex ^[A-Za-z0-9][\w.-]*[\w]$"#,
        ],
    );
    check(
        "{networks: {vnet: {name: existing-vnet, resourceGroup: vnet-rg, cidr: 10.0.0.0/8}, workers: 10.250.0.0/16}}",
        &[
            r#"networks.vnet.cidr: Invalid value: azure.VNet{Name:(*string)("existing-vnet"), ResourceGroup:(*string)("vnet-rg"), CIDR:(*string)("10.0.0.0/8"), DDosProtectionPlanID:(*string)(nil)}: specifying a cidr for an existing vnet is not possible"#,
        ],
    );
    check(
        "{resourceGroup: {name: vnet-rg}, networks: {vnet: {name: existing-vnet, resourceGroup: vnet-rg}, workers: 10.250.0.0/16}}",
        &[
            r#"resourceGroup: Invalid value: azure.ResourceGroup{Name:"vnet-rg"}: specifying an existing resource group is not supported yet"#,
            r#"networks.vnet.resourceGroup: Invalid value: "vnet-rg": the vnet resource group must not be the same as the cluster resource group"#,
        ],
    );
    check(
        "{networks: {vnet: {name: existing-vnet, resourceGroup: vnet-rg, ddosProtectionPlanID: /subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ddos-rg/providers/Microsoft.Network/ddosProtectionPlans/my-plan}, workers: 10.250.0.0/16}}",
        &["networks.vnet.ddosProtectionPlanID: Forbidden: cannot assign a ddos protection plan to a vnet not managed by Gardener"],
    );
}

#[test]
fn default_vnet_rules() {
    check(
        "{zoned: true, networks: {zones: [{name: 1, cidr: 10.250.0.0/24}]}}",
        &["networks.vnet.cidr: Forbidden: a vnet cidr or vnet reference must be specified when the workers field is not set"],
    );
    // The default vnet is the workers CIDR: it must hold the nodes and stay clear of pods and services.
    check(
        "{networks: {workers: 10.250.0.0/17}}",
        &[
            r#"networking.nodes: Invalid value: "10.250.0.0/16": must be a subset of "networks.workers" ("10.250.0.0/17")"#,
        ],
    );
    check_with(
        ShootContext { nodes: Some("100.64.0.0/16"), ..shoot() },
        "{networks: {workers: 100.64.0.0/10}}",
        &[
            r#"networking.pods: Invalid value: "100.96.0.0/11": must not overlap with "networks.workers" ("100.64.0.0/10")"#,
            r#"networking.services: Invalid value: "100.64.0.0/13": must not overlap with "networks.workers" ("100.64.0.0/10")"#,
            r#"networks.workers: Invalid value: "100.64.0.0/10": must be a subset of "networking.nodes" ("100.64.0.0/16")"#,
        ],
    );
}

#[test]
fn vnet_cidr_rules() {
    check(
        "{networks: {vnet: {cidr: 10.250.0.0/33}, workers: 10.250.0.0/16}}",
        &[r#"networks.vnet.cidr: Invalid value: "10.250.0.0/33": invalid CIDR address: 10.250.0.0/33"#],
    );
    check(
        "{networks: {vnet: {cidr: 10.250.0.1/16}, workers: 10.250.0.0/16}}",
        &[r#"networks.vnet.cidr: Invalid value: "10.250.0.1/16": must be valid canonical CIDR"#],
    );
    check(
        "{networks: {vnet: {cidr: 10.250.0.0/17}, workers: 10.250.0.0/16}}",
        &[
            r#"networking.nodes: Invalid value: "10.250.0.0/16": must be a subset of "networks.vnet.cidr" ("10.250.0.0/17")"#,
            r#"networks.workers: Invalid value: "10.250.0.0/16": must be a subset of "networks.vnet.cidr" ("10.250.0.0/17")"#,
        ],
    );
    check_with(
        ShootContext { nodes: Some("100.0.0.0/24"), ..shoot() },
        "{networks: {vnet: {cidr: 100.0.0.0/8}, workers: 100.0.0.0/24}}",
        &[
            r#"networking.pods: Invalid value: "100.96.0.0/11": must not overlap with "networks.vnet.cidr" ("100.0.0.0/8")"#,
            r#"networking.services: Invalid value: "100.64.0.0/13": must not overlap with "networks.vnet.cidr" ("100.0.0.0/8")"#,
        ],
    );
    check(
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/24}, zones: [{name: 1, cidr: 10.250.0.0/24}, {name: 2, cidr: 10.250.1.0/24}]}}",
        &[
            r#"networking.nodes: Invalid value: "10.250.0.0/16": must be a subset of "networks.vnet.cidr" ("10.250.0.0/24")"#,
            r#"networks.zones[1].cidr: Invalid value: "10.250.1.0/24": must be a subset of "networks.vnet.cidr" ("10.250.0.0/24")"#,
        ],
    );
}

#[test]
fn single_subnet_workers_rules() {
    check(
        "{networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.0.0/33}}",
        &[r#"networks.workers: Invalid value: "10.250.0.0/33": invalid CIDR address: 10.250.0.0/33"#],
    );
    check(
        "{networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.0.1/19}}",
        &[r#"networks.workers: Invalid value: "10.250.0.1/19": must be valid canonical CIDR"#],
    );
    check(
        "{networks: {vnet: {cidr: 10.0.0.0/8}, workers: 10.251.0.0/19}}",
        &[
            r#"networks.workers: Invalid value: "10.251.0.0/19": must be a subset of "networking.nodes" ("10.250.0.0/16")"#,
        ],
    );
    // Without shoot CIDRs, nothing is compared with them.
    check_with(ShootContext::default(), "{networks: {vnet: {cidr: 10.0.0.0/8}, workers: 10.251.0.0/19}}", &[]);
}

#[test]
fn single_subnet_service_endpoints() {
    check(
        "{networks: {workers: 10.250.0.0/16, serviceEndpoints: [Microsoft.Storage, Storage]}}",
        &[
            r#"networks.serviceEndpoints[1]: Invalid value: "Storage": does not match expected regex ^Microsoft\.[A-Za-z0-9.]+$"#,
            r#"networks.serviceEndpoints[1]: Invalid value: "Storage": must not be fewer than 9 characters, got 7"#,
        ],
    );
}

#[test]
fn single_subnet_nat_gateway_rules() {
    let nat = |n: &str| format!("{{networks: {{workers: 10.250.0.0/16, natGateway: {n}}}}}");
    check(
        &nat("{enabled: false, zone: 1}"),
        &["networks.natGateway: Invalid value: azure.NatGatewayConfig{Enabled:false, IdleConnectionTimeoutMinutes:(*int32)(nil), Zone:(*int32)(1), SKU:(*string)(nil), IPAddresses:[]azure.PublicIPReference(nil)}: NatGateway is disabled but additional NatGateway config is passed"],
    );
    check(
        &nat("{enabled: false, sku: Basic, idleConnectionTimeoutMinutes: 500}"),
        &["networks.natGateway: Invalid value: azure.NatGatewayConfig{Enabled:false, IdleConnectionTimeoutMinutes:(*int32)(500), Zone:(*int32)(nil), SKU:(*string)(\"Basic\"), IPAddresses:[]azure.PublicIPReference(nil)}: NatGateway is disabled but additional NatGateway config is passed"],
    );
    check(
        &nat("{enabled: true, idleConnectionTimeoutMinutes: 3}"),
        &["networks.natGateway.idleConnectionTimeoutMinutes: Invalid value: 3: idleConnectionTimeoutMinutes values must range between 4 and 120"],
    );
    check(
        &nat("{enabled: true, idleConnectionTimeoutMinutes: 121}"),
        &["networks.natGateway.idleConnectionTimeoutMinutes: Invalid value: 121: idleConnectionTimeoutMinutes values must range between 4 and 120"],
    );
    check(
        &nat("{enabled: true, sku: Basic}"),
        &[r#"networks.natGateway.sku: Unsupported value: "Basic": supported values: "Standard", "StandardV2""#],
    );
    check(
        &nat("{enabled: true, ipAddresses: [{name: my-ip, resourceGroup: ip-rg, zone: 1}]}"),
        &[
            r#"networks.natGateway.zone: Invalid value: azure.NatGatewayConfig{Enabled:true, IdleConnectionTimeoutMinutes:(*int32)(nil), Zone:(*int32)(nil), SKU:(*string)(nil), IPAddresses:[]azure.PublicIPReference{azure.PublicIPReference{Name:"my-ip", ResourceGroup:"ip-rg", Zone:(*int32)(1)}}}: Public IPs can only be selected for zonal NatGateways"#,
        ],
    );
    check(
        &nat("{enabled: true, zone: 1, ipAddresses: [{name: '', resourceGroup: '', zone: 2}, {name: 'ip.', resourceGroup: ip-rg}]}"),
        &[
            "networks.natGateway.ipAddresses[0].resourceGroup: Required value: must not be empty",
            "networks.natGateway.ipAddresses[0].name: Required value: must not be empty",
            "networks.natGateway.ipAddresses[0].zone: Invalid value: 2: Public IP can't be used as it is not in the same zone as the NatGateway (zone 1)",
            r#"networks.natGateway.ipAddresses[1].name: Invalid value: "ip.": does not match expected regex ^[A-Za-z0-9][\w-]*$"#,
            "networks.natGateway.ipAddresses[1].zone: Invalid value: null: Public IP can't be used as it is not in the same zone as the NatGateway (zone 1)",
        ],
    );
    check(
        &nat("{enabled: true, sku: StandardV2, zone: 1, ipAddresses: [{name: v2-ip, resourceGroup: ip-rg, zone: 1}]}"),
        &[
            "networks.natGateway.zone: Forbidden: zone cannot be specified when using StandardV2 SKU (StandardV2 is zone-redundant)",
            "networks.natGateway.ipAddresses[0].zone: Forbidden: zone cannot be specified for IP addresses when using StandardV2 SKU (StandardV2 is zone-redundant)",
        ],
    );
    // QUIRK: the public IPs of a StandardV2 NAT gateway are not name-checked.
    check(&nat("{enabled: true, sku: StandardV2, ipAddresses: [{name: 'bad name!', resourceGroup: ''}]}"), &[]);
}

#[test]
fn multi_subnet_layout_rules() {
    check(
        "{networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 1, cidr: 10.250.0.0/24}]}}",
        &["networks.zones: Forbidden: cannot specify zones in an non-zonal cluster"],
    );
    // QUIRK: both are reported at networks.workers.
    check(
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, natGateway: {enabled: true}, serviceEndpoints: [Microsoft.Storage], zones: [{name: 1, cidr: 10.250.0.0/24}]}}",
        &[
            "networks.workers: Forbidden: natGateway cannot be specified when workers field is missing",
            "networks.workers: Forbidden: serviceEndpoints cannot be specified when workers field is missing",
        ],
    );
}

#[test]
fn zones_rules() {
    let zones = |z: &str| format!("{{zoned: true, networks: {{vnet: {{cidr: 10.0.0.0/8}}, zones: {z}}}}}");
    check(
        &zones("[{name: 1, cidr: 10.250.0.0/24}, {name: 1, cidr: 10.250.1.0/24}]"),
        &["networks.zones[1]: Invalid value: 1: the same zone cannot be specified multiple times"],
    );
    check(
        &zones("[{name: 1, cidr: 10.250.0.1/24}]"),
        &[r#"networks.zones[0].cidr: Invalid value: "10.250.0.1/24": must be valid canonical CIDR"#],
    );
    // QUIRK: the zone index is missing from the service endpoint path.
    check(
        &zones("[{name: 1, cidr: 10.250.0.0/24}, {name: 2, cidr: 10.250.1.0/24, serviceEndpoints: [Microsoft.Storage, Microsoft]}]"),
        &[r#"networks.zones.serviceEndpoints[1]: Invalid value: "Microsoft": does not match expected regex ^Microsoft\.[A-Za-z0-9.]+$"#],
    );
    check(
        &zones("[{name: 1, cidr: 10.250.0.0/33}]"),
        &[r#"networks.zones[0].cidr: Invalid value: "10.250.0.0/33": invalid CIDR address: 10.250.0.0/33"#],
    );
    check(
        &zones("[{name: 1, cidr: 10.251.0.0/24}]"),
        &[
            r#"networks.zones[0].cidr: Invalid value: "10.251.0.0/24": must be a subset of "networking.nodes" ("10.250.0.0/16")"#,
        ],
    );
    check(
        &zones("[{name: 1, cidr: 10.250.0.0/23}, {name: 2, cidr: 10.250.1.0/24}]"),
        &[
            r#"networks.zones[1].cidr: Invalid value: "10.250.1.0/24": must not overlap with "networks.zones[0].cidr" ("10.250.0.0/23")"#,
        ],
    );
    check_with(
        ShootContext { nodes: None, ..shoot() },
        &zones("[{name: 1, cidr: 100.96.0.0/24}, {name: 2, cidr: 100.64.0.0/24}]").replace("10.0.0.0/8", "100.0.0.0/8"),
        &[
            r#"networking.pods: Invalid value: "100.96.0.0/11": must not overlap with "networks.vnet.cidr" ("100.0.0.0/8")"#,
            r#"networking.services: Invalid value: "100.64.0.0/13": must not overlap with "networks.vnet.cidr" ("100.0.0.0/8")"#,
            r#"networks.zones[0].cidr: Invalid value: "100.96.0.0/24": must not overlap with "networking.pods" ("100.96.0.0/11")"#,
            r#"networks.zones[1].cidr: Invalid value: "100.64.0.0/24": must not overlap with "networking.services" ("100.64.0.0/13")"#,
        ],
    );
}

#[test]
fn zoned_nat_gateway_rules() {
    let nat = |n: &str| {
        format!("{{zoned: true, networks: {{vnet: {{cidr: 10.250.0.0/16}}, zones: [{{name: 1, cidr: 10.250.0.0/24, natGateway: {n}}}]}}}}")
    };
    check(
        &nat("{enabled: false, ipAddresses: [{name: z1-ip, resourceGroup: ip-rg}]}"),
        &[
            r#"networks.zones[0].natGateway: Invalid value: azure.ZonedNatGatewayConfig{Enabled:false, IdleConnectionTimeoutMinutes:(*int32)(nil), SKU:(*string)(nil), IPAddresses:[]azure.ZonedPublicIPReference{azure.ZonedPublicIPReference{Name:"z1-ip", ResourceGroup:"ip-rg"}}}: NatGateway is disabled but additional NatGateway config is passed"#,
        ],
    );
    // QUIRK: the idle range check runs first, even for a disabled NAT gateway.
    check(
        &nat("{enabled: false, idleConnectionTimeoutMinutes: 200}"),
        &[
            "networks.zones[0].natGateway.idleConnectionTimeoutMinutes: Invalid value: 200: idleConnectionTimeoutMinutes values must range between 4 and 120",
            "networks.zones[0].natGateway: Invalid value: azure.ZonedNatGatewayConfig{Enabled:false, IdleConnectionTimeoutMinutes:(*int32)(200), SKU:(*string)(nil), IPAddresses:[]azure.ZonedPublicIPReference(nil)}: NatGateway is disabled but additional NatGateway config is passed",
        ],
    );
    check(
        &nat("{enabled: true, ipAddresses: [{name: '', resourceGroup: 'rg.'}]}"),
        &[
            r#"networks.zones[0].natGateway.ipAddresses[0].resourceGroup: Invalid value: "rg.": does not match expected regex ^[A-Za-z0-9_().-]{1,89}[A-Za-z0-9_()-]$"#,
            "networks.zones[0].natGateway.ipAddresses[0].name: Required value: must not be empty",
        ],
    );
    check(
        &nat("{enabled: true, sku: Basic}"),
        &[
            r#"networks.zones[0].natGateway.sku: Unsupported value: "Basic": supported values: "Standard", "StandardV2""#,
            "networks.zones[0].natGateway.sku: Forbidden: Only Standard SKU can be configured for multi-subnet layout",
        ],
    );
    check(
        &nat("{enabled: true, sku: StandardV2}"),
        &["networks.zones[0].natGateway.sku: Forbidden: Only Standard SKU can be configured for multi-subnet layout"],
    );
}

#[test]
fn identity_rules() {
    check(
        "{networks: {workers: 10.250.0.0/16}, identity: {name: '', resourceGroup: ''}}",
        &[
            "identity.resourceGroup: Required value: must not be empty",
            r#"identity.name: Invalid value: "": must not be fewer than 3 characters, got 0"#,
        ],
    );
    check(
        "{networks: {workers: 10.250.0.0/16}, identity: {name: 'my identity', resourceGroup: id-rg}}",
        &[r#"identity.name: Invalid value: "my identity": does not match expected regex ^[A-Za-z0-9][\w-]*$"#],
    );
}

#[test]
fn field_paths_follow_the_given_root() {
    let errs = trellis_providers::azure::validation::validate_infrastructure_config_at(
        &cfg("{resourceGroup: {name: rg}, networks: {workers: 10.250.0.0/17}}"),
        shoot(),
        &Path::new("spec").child("provider").child("infrastructureConfig"),
    );
    let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        got,
        vec![
            r#"spec.provider.infrastructureConfig.resourceGroup: Invalid value: azure.ResourceGroup{Name:"rg"}: specifying an existing resource group is not supported yet"#,
            r#"networking.nodes: Invalid value: "10.250.0.0/16": must be a subset of "spec.provider.infrastructureConfig.networks.workers" ("10.250.0.0/17")"#,
        ]
    );
}

// --- User-managed egress (spec: networks.subnet set), create: C1–C7 ---

#[test]
fn c1_byo_subnet_without_vnet_resource_group_is_rejected() {
    check(
        "{networks: {vnet: {name: hub-vnet}, subnet: {name: shoot-workers}}}",
        &["networks.vnet.resourceGroup: Required value: the resource group of an existing vnet must be set in user-managed-egress mode (networks.subnet is set): the subnet is looked up in this vnet"],
    );
    check(
        "{networks: {subnet: {name: shoot-workers}}}",
        &[
            "networks.vnet.name: Required value: the name of an existing vnet must be set in user-managed-egress mode (networks.subnet is set): the subnet is looked up in this vnet",
            "networks.vnet.resourceGroup: Required value: the resource group of an existing vnet must be set in user-managed-egress mode (networks.subnet is set): the subnet is looked up in this vnet",
        ],
    );
    check(
        "{networks: {vnet: {name: '', resourceGroup: 'rg.'}, subnet: {name: shoot-workers}}}",
        &[
            "networks.vnet.name: Required value: the name of an existing vnet must be set in user-managed-egress mode (networks.subnet is set): the subnet is looked up in this vnet",
            r#"networks.vnet.resourceGroup: Invalid value: "rg.": does not match expected regex ^[A-Za-z0-9_().-]{1,89}[A-Za-z0-9_()-]$"#,
        ],
    );
}

#[test]
fn c2_byo_subnet_with_zones_is_rejected() {
    check(
        "{zoned: true, networks: {vnet: {name: hub-vnet, resourceGroup: hub-network}, subnet: {name: shoot-workers}, zones: [{name: 1, cidr: 10.250.0.0/24}]}}",
        &["networks.zones: Forbidden: zones must not be set in user-managed-egress mode (networks.subnet is set): only the single-subnet layout is supported with a user-managed subnet"],
    );
}

#[test]
fn c3_byo_subnet_with_workers_is_rejected() {
    check(
        "{networks: {vnet: {name: hub-vnet, resourceGroup: hub-network}, subnet: {name: shoot-workers}, workers: 10.250.0.0/16}}",
        &["networks.workers: Forbidden: workers must not be set in user-managed-egress mode (networks.subnet is set): the worker CIDR is discovered from the subnet"],
    );
}

#[test]
fn c4_byo_subnet_with_nat_gateway_is_rejected() {
    for nat in [
        "{enabled: true}",
        "{enabled: false}",
        "{enabled: true, sku: StandardV2}",
        "{enabled: true, zone: 1, ipAddresses: [{name: ip, resourceGroup: rg, zone: 1}]}",
    ] {
        check(
            &format!("{{networks: {{vnet: {{name: hub-vnet, resourceGroup: hub-network}}, subnet: {{name: shoot-workers}}, natGateway: {nat}}}}}"),
            &["networks.natGateway: Forbidden: natGateway must not be set in user-managed-egress mode (networks.subnet is set): egress is user-managed; attach a NAT gateway to the subnet yourself if you need one"],
        );
    }
}

#[test]
fn c5_byo_subnet_with_service_endpoints_is_rejected() {
    check(
        "{networks: {vnet: {name: hub-vnet, resourceGroup: hub-network}, subnet: {name: shoot-workers}, serviceEndpoints: [Microsoft.Storage]}}",
        &["networks.serviceEndpoints: Forbidden: serviceEndpoints must not be set in user-managed-egress mode (networks.subnet is set): configure service endpoints on the subnet yourself"],
    );
}

#[test]
fn c6_byo_subnet_with_vnet_cidr_is_rejected() {
    check(
        "{networks: {vnet: {name: hub-vnet, resourceGroup: hub-network, cidr: 10.250.0.0/16}, subnet: {name: shoot-workers}}}",
        &["networks.vnet.cidr: Forbidden: cidr must not be set in user-managed-egress mode (networks.subnet is set): the vnet is user-managed and its address space is not declared here"],
    );
}

#[test]
fn c7_byo_subnet_with_ddos_protection_plan_is_rejected() {
    check(
        "{networks: {vnet: {name: hub-vnet, resourceGroup: hub-network, ddosProtectionPlanID: /subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ddos-rg/providers/Microsoft.Network/ddosProtectionPlans/my-plan}, subnet: {name: shoot-workers}}}",
        &["networks.vnet.ddosProtectionPlanID: Forbidden: ddosProtectionPlanID must not be set in user-managed-egress mode (networks.subnet is set): the DDoS protection plan of a user-managed vnet is managed by its owner"],
    );
}

#[test]
fn byo_subnet_name_must_be_a_valid_azure_subnet_name() {
    let with = |name: &str| {
        format!("{{networks: {{vnet: {{name: hub-vnet, resourceGroup: hub-network}}, subnet: {{name: '{name}'}}}}}}")
    };
    check(&with(""), &["networks.subnet.name: Required value: the name of an existing subnet in networks.vnet must be set in user-managed-egress mode"]);
    check(
        &with("workers."),
        &[
            r#"networks.subnet.name: Invalid value: "workers.": does not match expected regex ^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$"#,
        ],
    );
    check(
        &with(&"w".repeat(81)),
        &[&format!(
            r#"networks.subnet.name: Invalid value: "{}": must not be more than 80 characters, got 81"#,
            "w".repeat(81)
        )],
    );
    check(&with("w"), &[]);
    check(&with("shoot_workers.v2_"), &[]);
}

#[test]
fn byo_rules_report_every_violation_at_once() {
    check(
        "{zoned: true, resourceGroup: {name: rg}, networks: {vnet: {cidr: 10.250.0.0/16, ddosProtectionPlanID: x}, subnet: {name: ''}, workers: 10.250.0.0/16, zones: [{name: 1, cidr: 10.250.0.0/24}], natGateway: {enabled: true}, serviceEndpoints: [Microsoft.Storage]}, identity: {name: id, resourceGroup: rg}}",
        &[
            r#"resourceGroup: Invalid value: azure.ResourceGroup{Name:"rg"}: specifying an existing resource group is not supported yet"#,
            "networks.vnet.name: Required value: the name of an existing vnet must be set in user-managed-egress mode (networks.subnet is set): the subnet is looked up in this vnet",
            "networks.vnet.resourceGroup: Required value: the resource group of an existing vnet must be set in user-managed-egress mode (networks.subnet is set): the subnet is looked up in this vnet",
            "networks.vnet.cidr: Forbidden: cidr must not be set in user-managed-egress mode (networks.subnet is set): the vnet is user-managed and its address space is not declared here",
            "networks.vnet.ddosProtectionPlanID: Forbidden: ddosProtectionPlanID must not be set in user-managed-egress mode (networks.subnet is set): the DDoS protection plan of a user-managed vnet is managed by its owner",
            "networks.workers: Forbidden: workers must not be set in user-managed-egress mode (networks.subnet is set): the worker CIDR is discovered from the subnet",
            "networks.zones: Forbidden: zones must not be set in user-managed-egress mode (networks.subnet is set): only the single-subnet layout is supported with a user-managed subnet",
            "networks.natGateway: Forbidden: natGateway must not be set in user-managed-egress mode (networks.subnet is set): egress is user-managed; attach a NAT gateway to the subnet yourself if you need one",
            "networks.serviceEndpoints: Forbidden: serviceEndpoints must not be set in user-managed-egress mode (networks.subnet is set): configure service endpoints on the subnet yourself",
            "networks.subnet.name: Required value: the name of an existing subnet in networks.vnet must be set in user-managed-egress mode",
            r#"identity.name: Invalid value: "id": must not be fewer than 3 characters, got 2"#,
        ],
    );
}

#[test]
fn byo_mode_does_not_require_workers_or_zones() {
    // The managed rule "either workers or zones must be specified" does not apply.
    check(BYO, &[]);
    check_with(ShootContext::default(), BYO, &[]);
}

// --- Update ---

#[test]
fn update_resource_group_is_immutable() {
    check_update(
        SINGLE,
        "{resourceGroup: {name: rg}, networks: {workers: 10.250.0.0/16}}",
        &[r#"resourceGroup: Invalid value: azure.ResourceGroup{Name:"rg"}: field is immutable"#],
    );
    check_update(
        "{resourceGroup: {name: rg}, networks: {workers: 10.250.0.0/16}}",
        SINGLE,
        &["resourceGroup: Invalid value: null: field is immutable"],
    );
}

#[test]
fn update_single_subnet_workers_change_is_reported_twice() {
    // QUIRK: the layout switch repeats the workers check.
    check_update(
        SINGLE,
        "{networks: {workers: 10.250.0.0/17}}",
        &[
            r#"networks.workers: Invalid value: "10.250.0.0/17": field is immutable"#,
            r#"networks.workers: Invalid value: "10.250.0.0/17": field is immutable"#,
        ],
    );
    check_update(SINGLE, SINGLE, &[]);
}

#[test]
fn update_with_in_place_update_workers_freezes_identity_and_zones() {
    let in_place = ShootContext { in_place_update_workers: true, ..shoot() };
    check_update_with(
        in_place,
        SINGLE,
        "{networks: {workers: 10.250.0.0/16}, identity: {name: my-identity, resourceGroup: id-rg}}",
        &[
            r#"identity: Invalid value: azure.IdentityConfig{Name:"my-identity", ResourceGroup:"id-rg", ACRAccess:(*bool)(nil)}: field is immutable when there is a worker with in-place update strategy"#,
        ],
    );
    check_update_with(
        in_place,
        ZONED,
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 1, cidr: 10.250.0.0/24}, {name: 2, cidr: 10.250.1.0/24}, {name: 3, cidr: 10.250.2.0/24}]}}",
        &[r#"networks.zones: Invalid value: []azure.Zone{azure.Zone{Name:1, CIDR:"10.250.0.0/24", ServiceEndpoints:[]string(nil), NatGateway:(*azure.ZonedNatGatewayConfig)(nil)}, azure.Zone{Name:2, CIDR:"10.250.1.0/24", ServiceEndpoints:[]string(nil), NatGateway:(*azure.ZonedNatGatewayConfig)(nil)}, azure.Zone{Name:3, CIDR:"10.250.2.0/24", ServiceEndpoints:[]string(nil), NatGateway:(*azure.ZonedNatGatewayConfig)(nil)}}: field is immutable when there is a worker with in-place update strategy"#],
    );
    // Without in-place workers, adding a zone is fine.
    check_update(
        ZONED,
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 1, cidr: 10.250.0.0/24}, {name: 2, cidr: 10.250.1.0/24}, {name: 3, cidr: 10.250.2.0/24}]}}",
        &[],
    );
}

#[test]
fn update_multi_subnet_zones() {
    check_update(
        ZONED,
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 2, cidr: 10.250.3.0/24}]}}",
        &[
            "networks.zones: Forbidden: removing zones is not allowed",
            r#"networks.zones[0].cidr: Invalid value: "10.250.3.0/24": field is immutable"#,
        ],
    );
}

#[test]
fn update_layout_transitions() {
    // QUIRK: singular networks.worker.
    check_update(
        ZONED,
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.0.0/24}}",
        &["networks.worker: Forbidden: updating the infrastructure configuration from using dedicated subnets per zone to using single subnet is not allowed"],
    );
    check_update(
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.9.0/24}}",
        ZONED,
        &["networks.zones: Forbidden: when updating InfrastructureConfig to use dedicated subnets per zones, the CIDR for one of the zones must match that of the previous config.networks.workers"],
    );
    check_update("{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.1.0/24}}", ZONED, &[]);
}

#[test]
fn update_zoned_is_immutable_and_shows_the_old_value() {
    // QUIRK: upstream passes (old, new) to ValidateImmutableField.
    check_update(
        SINGLE,
        "{zoned: true, networks: {workers: 10.250.0.0/16}}",
        &["zoned: Invalid value: false: field is immutable"],
    );
}

#[test]
fn update_vnet_rules() {
    // An existing vnet keeps its name and resource group; a default vnet cannot become an existing one.
    check_update(
        "{networks: {vnet: {name: vnet-a, resourceGroup: rg-a}, workers: 10.250.0.0/16}}",
        "{networks: {vnet: {name: vnet-b, resourceGroup: rg-b}, workers: 10.250.0.0/16}}",
        &[
            r#"networks.vnet.name: Invalid value: "vnet-b": field is immutable"#,
            r#"networks.vnet.resourceGroup: Invalid value: "rg-b": field is immutable"#,
        ],
    );
    check_update(
        SINGLE,
        "{networks: {vnet: {name: vnet-b, resourceGroup: rg-b}, workers: 10.250.0.0/16}}",
        &[
            r#"networks.vnet.name: Invalid value: "vnet-b": field is immutable"#,
            r#"networks.vnet.resourceGroup: Invalid value: "rg-b": field is immutable"#,
        ],
    );
    check_update(
        "{networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.0.0/16}}",
        SINGLE,
        &["networks.vnet.cidr: Invalid value: null: vnet cidr need to be specified"],
    );
    check_update(
        "{networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.0.0/16}}",
        "{networks: {vnet: {cidr: 10.250.0.0/17}, workers: 10.250.0.0/16}}",
        &[r#"networks.vnet.cidr: Invalid value: "10.250.0.0/17": VNet CIDR blocks can only be expanded"#],
    );
    check_update(
        "{networks: {vnet: {cidr: 10.250.0.0/16}, workers: 10.250.0.0/16}}",
        "{networks: {vnet: {cidr: 10.248.0.0/14}, workers: 10.250.0.0/16}}",
        &[],
    );
}

#[test]
fn update_nat_gateway_sku_cannot_change() {
    check_update(
        "{networks: {workers: 10.250.0.0/16, natGateway: {enabled: true}}}",
        "{networks: {workers: 10.250.0.0/16, natGateway: {enabled: true, sku: StandardV2}}}",
        &[
            r#"networks.natGateway.sku: Invalid value: "StandardV2": changing the NAT Gateway SKU is not allowed as it requires recreation of the NAT Gateway and causes outbound connectivity disruption"#,
        ],
    );
    check_update(
        "{networks: {workers: 10.250.0.0/16, natGateway: {enabled: true}}}",
        "{networks: {workers: 10.250.0.0/16, natGateway: {enabled: true, sku: Standard}}}",
        &[],
    );
    check_update(
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 1, cidr: 10.250.0.0/24, natGateway: {enabled: true, sku: StandardV2}}]}}",
        "{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 1, cidr: 10.250.0.0/24, natGateway: {enabled: true}}]}}",
        &[r#"networks.zones[0].natGateway.sku: Invalid value: "Standard": changing the NAT Gateway SKU is not allowed as it requires recreation of the NAT Gateway and causes outbound connectivity disruption"#],
    );
}

// --- User-managed egress, update: D1–D4 ---

#[test]
fn d1_adding_subnet_to_managed_shoot_is_rejected() {
    check_update(
        "{networks: {vnet: {name: hub-vnet, resourceGroup: hub-network}, workers: 10.250.0.0/16}}",
        BYO,
        &["networks.subnet: Forbidden: networks.subnet cannot be added to an existing shoot: switching from managed to user-managed egress is not allowed, as it would delete the route table, security group, NAT gateway and public IPs while workloads run; create a new shoot instead"],
    );
}

#[test]
fn d2_removing_subnet_from_byo_shoot_is_rejected() {
    check_update(
        BYO,
        "{zoned: true, networks: {vnet: {name: hub-vnet, resourceGroup: hub-network}, workers: 10.250.0.0/16}}",
        &["networks.subnet: Forbidden: networks.subnet cannot be removed from an existing shoot: switching from user-managed to managed egress is not allowed, as it would create a route table, security group, NAT gateway and public IPs while workloads run; create a new shoot instead"],
    );
}

#[test]
fn d3_changing_subnet_name_is_rejected() {
    check_update(
        BYO,
        &BYO.replace("shoot-workers", "other-workers"),
        &[r#"networks.subnet.name: Invalid value: "other-workers": field is immutable"#],
    );
    check_update(BYO, BYO, &[]);
}

#[test]
fn d4_changing_byo_vnet_name_or_resource_group_is_rejected() {
    check_update(
        BYO,
        &BYO.replace("hub-vnet", "other-vnet"),
        &[r#"networks.vnet.name: Invalid value: "other-vnet": field is immutable"#],
    );
    check_update(
        BYO,
        &BYO.replace("hub-network", "other-rg"),
        &[r#"networks.vnet.resourceGroup: Invalid value: "other-rg": field is immutable"#],
    );
}

// --- Against the cloud profile's zones ---

#[test]
fn zones_must_exist_in_the_region_unless_already_used() {
    let region = vec!["1".to_string(), "3".to_string(), "2".to_string()];
    let new = cfg("{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 1, cidr: 10.250.0.0/24}, {name: 4, cidr: 10.250.1.0/24}]}}");
    let got: Vec<String> = validate_infrastructure_config_against_zones(None, &new, &region, &Path::root())
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(got, vec![r#"networks.zones[1].name: Unsupported value: 4: supported values: "1", "2", "3""#]);
    let old = cfg("{zoned: true, networks: {vnet: {cidr: 10.250.0.0/16}, zones: [{name: 4, cidr: 10.250.1.0/24}]}}");
    assert!(validate_infrastructure_config_against_zones(Some(&old), &new, &region, &Path::root()).is_empty());
    assert!(validate_infrastructure_config_against_zones(None, &cfg(SINGLE), &[], &Path::root()).is_empty());
}

/// The valid managed shoot of the providers' tests, named `name` in `namespace`.
fn named_shoot(name: &str, namespace: &str) -> trellis_providers::azure::AzureShoot {
    common::managed_shoot(&[
        ("  name: web\n", &format!("  name: {name}\n")),
        ("  namespace: garden-dev\n", &format!("  namespace: {namespace}\n")),
    ])
}

#[test]
fn regression_project_and_shoot_name_longer_than_21_characters_is_refused_on_create() {
    use trellis_providers::azure;
    use trellis_providers::provider::ProviderError;
    use trellis_state::Workspace;
    // 8 + 13 = 21: fine.
    let shoot = named_shoot("thirteen-char", "garden-platform");
    azure::validate(&shoot, &Workspace::new(&shoot.technical_id())).unwrap();
    // 8 + 14 = 22: refused for a new shoot, with upstream's message.
    let shoot = named_shoot("fourteen-chars", "garden-platform");
    let new = Workspace::new(&shoot.technical_id());
    match azure::validate(&shoot, &new) {
        Err(ProviderError::Invalid(errs)) => assert_eq!(
            errs.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            vec!["metadata.name: Invalid value: \"fourteen-chars\": the length of the shoot name and the project name must not exceed 21 characters (project: platform; shoot: fourteen-chars)"]
        ),
        other => panic!("expected the length error, got {other:?}"),
    }
    // Upstream checks it on create only: a shoot whose configuration was applied keeps its name.
    let mut applied = new;
    let state = azure::state::AzureState { last_applied: Some(azure::last_applied(&shoot)), ..Default::default() };
    applied.set_provider_state(Some(&state)).unwrap();
    azure::validate(&shoot, &applied).unwrap();
}
