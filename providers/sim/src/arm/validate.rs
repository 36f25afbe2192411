//! What the network resource provider refuses in a write (PUT) beyond containment and references,
//! with Azure's codes and messages: a VNet address space that is not CIDRs
//! (`InvalidAddressPrefixFormat`), a security rule whose priority is outside 100–4096
//! (`SecurityRuleInvalidPriority`), whose address prefix is neither `*`, an IP address, a CIDR nor a
//! service tag (`SecurityRuleInvalidAddressPrefix`), or that shares its priority and direction with
//! another rule of the NSG (`SecurityRuleConflict`), and a `VirtualAppliance` route without a next-hop
//! address (`MissingNextHopIpAddress`). These apply to writes only: a world file declares what exists.

use crate::arm::rules::ArmError;
use crate::arm::ArmId;
use ipnet::IpNet;
use serde_json::Value;

/// The lowest and highest priority of a security rule one writes (Azure's own default rules sit at
/// 65000 and above).
pub(crate) const PRIORITIES: std::ops::RangeInclusive<i64> = 100..=4096;

/// The service tags a security rule may name instead of an address (Azure's list, by their base
/// name; a regional form such as `Storage.WestEurope` names the same tag). A name not in it is refused
/// as Azure refuses an unknown tag.
const SERVICE_TAGS: &[&str] = &[
    "VirtualNetwork",
    "Internet",
    "AzureLoadBalancer",
    "AzureCloud",
    "AzureTrafficManager",
    "AzureActiveDirectory",
    "AzureMonitor",
    "AzureKeyVault",
    "AzureContainerRegistry",
    "AzureCosmosDB",
    "AzureBackup",
    "AzureResourceManager",
    "AzureFrontDoor",
    "AzurePlatformDNS",
    "AzurePlatformIMDS",
    "AzurePlatformLKM",
    "AzureSiteRecovery",
    "AzureUpdateDelivery",
    "AzureMachineLearning",
    "AzureDevOps",
    "ApiManagement",
    "AppService",
    "AppServiceManagement",
    "BatchNodeManagement",
    "EventHub",
    "GatewayManager",
    "GuestAndHybridManagement",
    "MicrosoftContainerRegistry",
    "ServiceBus",
    "Sql",
    "SqlManagement",
    "Storage",
];

/// `InvalidAddressPrefixFormat` for `prefix` of the resource `id`.
pub(crate) fn invalid_prefix_format(id: &ArmId, prefix: &Value) -> ArmError {
    let shown = prefix.as_str().map(str::to_string).unwrap_or_else(|| prefix.to_string());
    ArmError::new(
        400,
        "InvalidAddressPrefixFormat",
        format!("Address prefix {shown} of resource {id} is not formatted correctly. It should follow CIDR notation, for example 10.0.0.0/24."),
    )
}

/// A VNet's `addressSpace.addressPrefixes`: each a CIDR.
pub(crate) fn vnet(id: &ArmId, value: &Value) -> Result<(), ArmError> {
    let prefixes = value.pointer("/properties/addressSpace/addressPrefixes").and_then(Value::as_array);
    for prefix in prefixes.into_iter().flatten() {
        if prefix.as_str().and_then(|p| p.parse::<IpNet>().ok()).is_none() {
            return Err(invalid_prefix_format(id, prefix));
        }
    }
    Ok(())
}

/// One security rule on its own: its priority and its address prefixes.
pub(crate) fn security_rule(id: &ArmId, value: &Value) -> Result<(), ArmError> {
    let props = value.get("properties");
    let priority = props.and_then(|p| p.get("priority"));
    if !priority.and_then(Value::as_i64).is_some_and(|p| PRIORITIES.contains(&p)) {
        let shown = match priority {
            None | Some(Value::Null) => "0".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        return Err(ArmError::new(
            400,
            "SecurityRuleInvalidPriority",
            format!("Security rule has invalid Priority. Value provided: {shown} Allowed range 100-4096."),
        ));
    }
    for field in ["sourceAddressPrefix", "destinationAddressPrefix"] {
        if let Some(prefix) = props.and_then(|p| p.get(field)).filter(|v| !v.is_null()) {
            check_rule_prefix(id, prefix)?;
        }
    }
    for field in ["sourceAddressPrefixes", "destinationAddressPrefixes"] {
        let list = props.and_then(|p| p.get(field)).and_then(Value::as_array);
        for prefix in list.into_iter().flatten() {
            check_rule_prefix(id, prefix)?;
        }
    }
    Ok(())
}

fn check_rule_prefix(id: &ArmId, prefix: &Value) -> Result<(), ArmError> {
    let ok = prefix.as_str().is_some_and(|p| {
        p == "*" || p.parse::<std::net::IpAddr>().is_ok() || p.parse::<IpNet>().is_ok() || is_service_tag(p)
    });
    if ok {
        return Ok(());
    }
    let shown = prefix.as_str().map(str::to_string).unwrap_or_else(|| prefix.to_string());
    Err(ArmError::new(
        400,
        "SecurityRuleInvalidAddressPrefix",
        format!("Security rule {id} has invalid Address prefix. Value provided: {shown}"),
    ))
}

/// `Tag` or `Tag.Region` (`AzureFrontDoor.Backend`, `Storage.WestEurope`), the tag compared without case.
fn is_service_tag(p: &str) -> bool {
    let base = p.split_once('.').map_or(p, |(base, _)| base);
    let suffix_ok =
        p.split_once('.').is_none_or(|(_, s)| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()));
    suffix_ok && SERVICE_TAGS.iter().any(|t| t.eq_ignore_ascii_case(base))
}

/// The rules of one NSG (each `(name, value)`), in order: no two with the same priority and
/// direction; the later of two clashing rules is blamed (so a rule being written goes last, as Azure
/// blames it: "Security rule <new> conflicts with rule <existing>").
pub(crate) fn no_conflicts<'a>(rules: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Result<(), ArmError> {
    let mut seen: Vec<(&str, i64, String)> = Vec::new();
    for (name, value) in rules {
        let props = value.get("properties");
        let Some(priority) = props.and_then(|p| p.get("priority")).and_then(Value::as_i64) else { continue };
        let direction =
            props.and_then(|p| p.get("direction")).and_then(Value::as_str).unwrap_or_default().to_ascii_lowercase();
        if let Some((other, _, _)) = seen.iter().find(|(_, p, d)| *p == priority && *d == direction) {
            return Err(ArmError::new(
                400,
                "SecurityRuleConflict",
                format!("Security rule {name} conflicts with rule {other}. Rules cannot have the same Priority and Direction."),
            ));
        }
        seen.push((name, priority, direction));
    }
    Ok(())
}

/// A route: a `VirtualAppliance` next hop needs `nextHopIpAddress`.
pub(crate) fn route(id: &ArmId, value: &Value) -> Result<(), ArmError> {
    let props = value.get("properties");
    let hop = props.and_then(|p| p.get("nextHopType")).and_then(Value::as_str).unwrap_or_default();
    let address = props.and_then(|p| p.get("nextHopIpAddress")).and_then(Value::as_str).unwrap_or_default();
    if hop.eq_ignore_ascii_case("VirtualAppliance") && address.trim().is_empty() {
        return Err(ArmError::new(
            400,
            "MissingNextHopIpAddress",
            format!(
                "NextHopIpAddress cannot be Null or Empty in route {} when NextHopType is VirtualAppliance.",
                id.name()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule_id() -> ArmId {
        ArmId::parse(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n/securityRules/r",
        )
        .unwrap()
    }

    fn rule(priority: Value, source: &str) -> Value {
        json!({"properties": {"priority": priority, "direction": "Inbound", "sourceAddressPrefix": source, "destinationAddressPrefix": "*"}})
    }

    #[test]
    fn a_rule_priority_outside_100_to_4096_is_refused_with_azures_code() {
        for bad in [json!(99), json!(4097), json!(0), json!(65000), json!("200"), Value::Null] {
            let e = security_rule(&rule_id(), &rule(bad.clone(), "*")).unwrap_err();
            assert_eq!((e.status, e.code.as_str()), (400, "SecurityRuleInvalidPriority"), "{bad}");
            assert!(e.message.ends_with("Allowed range 100-4096."), "{}", e.message);
        }
        for good in [100, 4096, 1000] {
            security_rule(&rule_id(), &rule(json!(good), "*")).unwrap();
        }
    }

    #[test]
    fn a_rule_address_prefix_must_be_an_address_a_cidr_a_tag_or_a_star() {
        for good in [
            "*",
            "10.0.0.0/16",
            "10.0.0.1",
            "2001:db8::/32",
            "Internet",
            "virtualnetwork",
            "Storage.WestEurope",
            "AzureFrontDoor.Backend",
        ] {
            security_rule(&rule_id(), &rule(json!(1000), good)).unwrap();
        }
        for bad in ["any", "10.0.0.0/33", "10.0.0/16", "Storage.", "10.0.0.0 /16", ""] {
            let e = security_rule(&rule_id(), &rule(json!(1000), bad)).unwrap_err();
            assert_eq!(e.code, "SecurityRuleInvalidAddressPrefix", "{bad}");
            assert!(e.message.ends_with(&format!("Value provided: {bad}")), "{}", e.message);
        }
        let mut prefixes = rule(json!(1000), "*");
        prefixes["properties"]["destinationAddressPrefixes"] = json!(["10.0.0.0/8", "nope"]);
        assert_eq!(security_rule(&rule_id(), &prefixes).unwrap_err().code, "SecurityRuleInvalidAddressPrefix");
    }

    #[test]
    fn two_rules_with_one_priority_and_direction_conflict() {
        let inbound = rule(json!(100), "*");
        let mut outbound = rule(json!(100), "*");
        outbound["properties"]["direction"] = json!("Outbound");
        no_conflicts([("a", &inbound), ("b", &outbound)]).unwrap();
        let e = no_conflicts([("a", &inbound), ("b", &outbound), ("c", &inbound)]).unwrap_err();
        assert_eq!(e.code, "SecurityRuleConflict");
        assert_eq!(
            e.message,
            "Security rule c conflicts with rule a. Rules cannot have the same Priority and Direction."
        );
    }

    #[test]
    fn a_virtual_appliance_route_needs_its_next_hop_address() {
        let id = ArmId::parse("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/t/routes/r1")
            .unwrap();
        let e = route(&id, &json!({"properties": {"addressPrefix": "0.0.0.0/0", "nextHopType": "VirtualAppliance"}}))
            .unwrap_err();
        assert_eq!(e.code, "MissingNextHopIpAddress");
        assert_eq!(
            e.message,
            "NextHopIpAddress cannot be Null or Empty in route r1 when NextHopType is VirtualAppliance."
        );
        route(&id, &json!({"properties": {"nextHopType": "VirtualAppliance", "nextHopIpAddress": "10.0.0.4"}}))
            .unwrap();
        route(&id, &json!({"properties": {"nextHopType": "Internet"}})).unwrap();
    }

    #[test]
    fn a_vnet_address_space_is_cidrs() {
        let id =
            ArmId::parse("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v").unwrap();
        vnet(&id, &json!({"properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}})).unwrap();
        let e = vnet(&id, &json!({"properties": {"addressSpace": {"addressPrefixes": ["10.1.0.0"]}}})).unwrap_err();
        assert_eq!(e.code, "InvalidAddressPrefixFormat");
        assert!(e.message.starts_with(&format!("Address prefix 10.1.0.0 of resource {id} is not formatted correctly")));
    }
}
