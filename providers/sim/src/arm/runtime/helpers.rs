//! What both controllers share: NSG read/write, names, addresses, array edits.

use super::*;
use crate::arm::ArmId;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use trellis_planner::cloud::CloudWrite;

/// The Service hash in a CCM rule name (`k8s-azure-lb_<h>-…`).
pub(super) fn ccm_rule_hash(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(CCM_RULE_PREFIX)?;
    Some(rest.split_once('-').map_or(rest, |(h, _)| h))
}

pub(super) fn check_name(what: &str, name: &str) -> Result<(), RuntimeError> {
    if name.is_empty() || name.contains('/') || name.trim() != name {
        return Err(RuntimeError::Invalid(format!(
            "{what} name '{name}' cannot be used in an ARM id (empty, '/' or surrounding spaces)"
        )));
    }
    Ok(())
}

pub(super) async fn get_nsg(cloud: &dyn CloudWrite, nsg_id: &str) -> Result<Value, RuntimeError> {
    cloud.get(nsg_id).await?.ok_or_else(|| {
        RuntimeError::Invalid(format!(
            "the network security group {nsg_id} (securityGroupName / securityGroupResourceGroup in azure.json) does not exist"
        ))
    })
}

/// Step 6: writes the NSG as it was read, with `rules` as its `securityRules`.
pub(super) async fn put_nsg(
    cloud: &dyn CloudWrite,
    nsg_id: &str,
    mut nsg: Value,
    rules: Vec<Value>,
) -> Result<(), RuntimeError> {
    let props = nsg.as_object_mut().map(|o| o.entry("properties").or_insert_with(|| json!({})));
    match props {
        Some(Value::Object(p)) => {
            p.insert("securityRules".into(), Value::Array(rules));
        }
        _ => return Err(RuntimeError::Invalid(format!("{nsg_id}: the NSG read back has no properties object"))),
    }
    cloud.put(nsg_id, nsg).await?;
    Ok(())
}

/// An IPv4 address inside the subnet's prefix, derived from `seed` (skips the 4 addresses Azure
/// reserves at the start and the broadcast address).
pub(super) async fn subnet_address(
    cloud: &dyn CloudWrite,
    subnet_id: &str,
    seed: &str,
) -> Result<String, RuntimeError> {
    let Some(subnet) = cloud.get(subnet_id).await? else {
        return Err(RuntimeError::Invalid(format!(
            "the worker subnet {subnet_id} (vnetName / vnetResourceGroup / subnetName in azure.json) does not exist"
        )));
    };
    let prefix = subnet
        .pointer("/properties/addressPrefix")
        .and_then(Value::as_str)
        .or_else(|| subnet.pointer("/properties/addressPrefixes/0").and_then(Value::as_str))
        .unwrap_or_default();
    host_in(prefix, seed).ok_or_else(|| {
        RuntimeError::Invalid(format!("{subnet_id}: address prefix '{prefix}' is not an IPv4 CIDR with room for hosts"))
    })
}

pub(super) fn host_in(prefix: &str, seed: &str) -> Option<String> {
    let (addr, len) = prefix.split_once('/')?;
    let len: u32 = len.parse().ok().filter(|l| *l <= 29)?;
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    let size = 1u64 << (32 - len);
    let base = u64::from(u32::from(ip)) & !(size - 1);
    let h = Sha256::digest(seed.as_bytes());
    let n = u64::from(u32::from_be_bytes([h[0], h[1], h[2], h[3]]));
    let offset = 4 + n % (size - 5);
    Some(std::net::Ipv4Addr::from((base + offset) as u32).to_string())
}

/// A node port for the Service's health probe, from its hash.
pub(super) fn node_port(hash: &str) -> u16 {
    30000 + (u32::from_str_radix(hash, 16).unwrap_or(0) % 2768) as u16
}

pub(super) fn name_of(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn security_rules(nsg: &Value) -> Vec<Value> {
    nsg.pointer("/properties/securityRules").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// `properties` without `provisioningState`.
pub(super) fn props_without_state(v: &Value) -> Value {
    let mut p = v.get("properties").cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = p.as_object_mut() {
        m.remove("provisioningState");
    }
    p
}

/// The load balancer's properties as written (no `provisioningState`), or empty for a new one.
pub(super) fn lb_properties(lb: Option<&Value>) -> Map<String, Value> {
    match lb.map(props_without_state) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

pub(super) fn array<'a>(props: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    props.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

pub(super) fn array_mut<'a>(props: &'a mut Map<String, Value>, key: &str) -> &'a mut Vec<Value> {
    let slot = props.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut().expect("made an array above")
}

/// Replaces the items of `props[key]` whose name matches with `items`, at the position of the first
/// match (at the end when none matched), so that re-applying the same items changes nothing.
pub(super) fn upsert(props: &mut Map<String, Value>, key: &str, matches: impl Fn(&str) -> bool, items: Vec<Value>) {
    let list = array_mut(props, key);
    let at = list.iter().position(|v| matches(name_of(v))).unwrap_or(list.len());
    list.retain(|v| !matches(name_of(v)));
    let at = at.min(list.len());
    list.splice(at..at, items);
}

/// Adds or replaces the rule `name` with `props` (+ a priority): an equal rule is kept as is, a
/// changed one keeps its priority, a new one gets the first priority from `base` that no rule of the
/// same direction uses.
pub(super) fn put_rule(rules: &mut Vec<Value>, name: &str, props: Value, base: i64) -> Result<(), RuntimeError> {
    let priority_of = |r: &Value| r.pointer("/properties/priority").and_then(Value::as_i64);
    let without_priority = |r: &Value| {
        let mut p = props_without_state(r);
        if let Some(m) = p.as_object_mut() {
            m.remove("priority");
        }
        p
    };
    let existing = rules.iter().position(|r| name_of(r) == name);
    if let Some(i) = existing {
        if without_priority(&rules[i]) == props && priority_of(&rules[i]).is_some() {
            return Ok(());
        }
    }
    let direction = props.get("direction").and_then(Value::as_str).unwrap_or("Inbound");
    let priority = match existing.and_then(|i| priority_of(&rules[i])) {
        Some(p) => p,
        None => {
            let used: BTreeSet<i64> = rules
                .iter()
                .filter(|r| {
                    r.pointer("/properties/direction")
                        .and_then(Value::as_str)
                        .unwrap_or("Inbound")
                        .eq_ignore_ascii_case(direction)
                })
                .filter_map(priority_of)
                .collect();
            (base..=MAX_PRIORITY).find(|p| !used.contains(p)).ok_or_else(|| {
                RuntimeError::Invalid(format!(
                    "no free {direction} priority from {base} to {MAX_PRIORITY} for rule {name}"
                ))
            })?
        }
    };
    let mut props = props;
    props["priority"] = json!(priority);
    let rule = json!({"name": name, "type": RULE_TYPE, "properties": props});
    match existing {
        Some(i) => rules[i] = rule,
        None => rules.push(rule),
    }
    Ok(())
}

/// The id of the NSG rule `rule` on `nsg_id` (for messages and tests).
pub fn rule_id(nsg_id: &str, rule: &str) -> String {
    ArmId::parse(nsg_id)
        .map(|id| id.child("securityRules", rule).to_string())
        .unwrap_or_else(|_| format!("{nsg_id}/securityRules/{rule}"))
}
