//! ARM's defaults: what ARM makes of a PUT body besides storing it.

use crate::arm::rules::location;
use crate::arm::Kind;
use serde_json::{json, Value};

/// What ARM makes of a PUT body besides storing it (Microsoft's example responses in
/// azure-rest-api-specs, `specification/network/Network.Management/examples/2025-03-01/`, and the
/// defaults the REST reference documents): the location in its normal form (`West Europe` →
/// `westeurope`), and the defaults of attributes the body leaves out. Only what the body leaves out
/// is filled; nothing the caller sent is changed but the location's spelling.
pub(crate) fn arm_defaults(kind: Kind, value: &mut Value) {
    if kind.requires_location() {
        if let Some(normal) = location(value) {
            value["location"] = Value::String(normal);
        }
    }
    let Some(object) = value.as_object_mut() else { return };
    let mut default_sku = |sku: Value| {
        object.entry("sku").or_insert(sku);
    };
    let sku_name = match kind {
        Kind::PublicIpAddress => {
            default_sku(json!({"name": "Basic"}));
            let sku = object.get_mut("sku").and_then(Value::as_object_mut);
            let name = sku.as_ref().and_then(|s| s.get("name")).and_then(Value::as_str).map(str::to_string);
            if let Some(sku) = sku.filter(|_| name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case("Standard"))) {
                sku.entry("tier").or_insert(json!("Regional"));
            }
            name
        }
        Kind::NatGateway => {
            default_sku(json!({"name": "Standard"}));
            None
        }
        _ => None,
    };
    let Some(props) = object.get_mut("properties").and_then(Value::as_object_mut) else { return };
    let mut default = |key: &str, v: Value| {
        props.entry(key).or_insert(v);
    };
    match kind {
        Kind::VirtualNetwork => {
            default("enableDdosProtection", json!(false));
            default("virtualNetworkPeerings", json!([]));
        }
        Kind::Subnet => {
            default("privateEndpointNetworkPolicies", json!("Disabled"));
            default("privateLinkServiceNetworkPolicies", json!("Enabled"));
        }
        Kind::RouteTable => default("disableBgpRoutePropagation", json!(false)),
        Kind::NatGateway => default("idleTimeoutInMinutes", json!(4)),
        Kind::PublicIpAddress => {
            // A Standard public IP is always static; a Basic one is dynamic unless asked otherwise.
            let standard = sku_name.is_some_and(|n| n.eq_ignore_ascii_case("Standard"));
            default("publicIPAllocationMethod", json!(if standard { "Static" } else { "Dynamic" }));
            default("publicIPAddressVersion", json!("IPv4"));
            default("idleTimeoutInMinutes", json!(4));
        }
        _ => {}
    }
}
