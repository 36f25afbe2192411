//! Bad values of struct type, rendered as upstream's `field.Error` prints them: Go's `%#v` of the
//! internal API types (package `azure`), e.g. `azure.ResourceGroup{Name:"rg"}`.
//!
//! One deliberate difference: Go prints a non-nil pointer field as its address
//! (`(*string)(0xc000123450)`), which is neither stable nor useful; trellis prints the pointee in
//! its place (`(*string)("hub-vnet")`). Nil pointers print as Go does (`(*string)(nil)`).

use crate::azure::api::{
    IdentityConfig, NatGatewayConfig, PublicIPReference, ResourceGroup, VNet, Zone, ZonedNatGatewayConfig,
    ZonedPublicIPReference,
};
use crate::field::{go_quote, Value};

fn ptr_str(v: Option<&str>) -> String {
    match v {
        Some(s) => format!("(*string)({})", go_quote(s)),
        None => "(*string)(nil)".into(),
    }
}

fn ptr_i32(v: Option<i32>) -> String {
    match v {
        Some(n) => format!("(*int32)({n})"),
        None => "(*int32)(nil)".into(),
    }
}

fn ptr_bool(v: Option<bool>) -> String {
    match v {
        Some(b) => format!("(*bool)({b})"),
        None => "(*bool)(nil)".into(),
    }
}

/// A slice as `%#v` prints it; empty slices are nil after decoding an omitted field.
fn slice<T>(type_name: &str, items: &[T], item: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        return format!("[]{type_name}(nil)");
    }
    let parts: Vec<String> = items.iter().map(item).collect();
    format!("[]{type_name}{{{}}}", parts.join(", "))
}

fn strings(items: &[String]) -> String {
    slice("string", items, |s| go_quote(s))
}

pub fn resource_group(rg: &ResourceGroup) -> Value {
    Value::raw(format!("azure.ResourceGroup{{Name:{}}}", go_quote(&rg.name)))
}

/// A Go `*ResourceGroup` bad value: the struct, or `null`.
pub fn opt_resource_group(rg: Option<&ResourceGroup>) -> Value {
    rg.map_or_else(Value::null, resource_group)
}

pub fn vnet(v: &VNet) -> Value {
    Value::raw(format!(
        "azure.VNet{{Name:{}, ResourceGroup:{}, CIDR:{}, DDosProtectionPlanID:{}}}",
        ptr_str(v.name.as_deref()),
        ptr_str(v.resource_group.as_deref()),
        ptr_str(v.cidr.as_deref()),
        ptr_str(v.ddos_protection_plan_id.as_deref()),
    ))
}

fn public_ip(ip: &PublicIPReference) -> String {
    format!(
        "azure.PublicIPReference{{Name:{}, ResourceGroup:{}, Zone:{}}}",
        go_quote(&ip.name),
        go_quote(&ip.resource_group),
        ptr_i32(ip.zone)
    )
}

fn zoned_public_ip(ip: &ZonedPublicIPReference) -> String {
    format!(
        "azure.ZonedPublicIPReference{{Name:{}, ResourceGroup:{}}}",
        go_quote(&ip.name),
        go_quote(&ip.resource_group)
    )
}

pub fn nat_gateway(n: &NatGatewayConfig) -> Value {
    Value::raw(format!(
        "azure.NatGatewayConfig{{Enabled:{}, IdleConnectionTimeoutMinutes:{}, Zone:{}, SKU:{}, IPAddresses:{}}}",
        n.enabled,
        ptr_i32(n.idle_connection_timeout_minutes),
        ptr_i32(n.zone),
        ptr_str(n.sku.as_deref()),
        slice("azure.PublicIPReference", &n.ip_addresses, public_ip),
    ))
}

fn zoned_nat_gateway_text(n: &ZonedNatGatewayConfig) -> String {
    format!(
        "azure.ZonedNatGatewayConfig{{Enabled:{}, IdleConnectionTimeoutMinutes:{}, SKU:{}, IPAddresses:{}}}",
        n.enabled,
        ptr_i32(n.idle_connection_timeout_minutes),
        ptr_str(n.sku.as_deref()),
        slice("azure.ZonedPublicIPReference", &n.ip_addresses, zoned_public_ip),
    )
}

pub fn zoned_nat_gateway(n: &ZonedNatGatewayConfig) -> Value {
    Value::raw(zoned_nat_gateway_text(n))
}

/// A Go `*IdentityConfig` bad value: the struct, or `null`.
pub fn opt_identity(i: Option<&IdentityConfig>) -> Value {
    match i {
        None => Value::null(),
        Some(i) => Value::raw(format!(
            "azure.IdentityConfig{{Name:{}, ResourceGroup:{}, ACRAccess:{}}}",
            go_quote(&i.name),
            go_quote(&i.resource_group),
            ptr_bool(i.acr_access)
        )),
    }
}

/// A Go `[]Zone` bad value.
pub fn zones(zones: &[Zone]) -> Value {
    Value::raw(slice("azure.Zone", zones, |z| {
        let nat = match &z.nat_gateway {
            Some(n) => format!("(*azure.ZonedNatGatewayConfig)({})", zoned_nat_gateway_text(n)),
            None => "(*azure.ZonedNatGatewayConfig)(nil)".into(),
        };
        format!(
            "azure.Zone{{Name:{}, CIDR:{}, ServiceEndpoints:{}, NatGateway:{nat}}}",
            z.name,
            go_quote(&z.cidr),
            strings(&z.service_endpoints)
        )
    }))
}

/// How a Go value of this type prints as a bad value (after upstream's top-level pointer
/// dereference): strings quoted, numbers and booleans bare, nil pointers `null`, structs `%#v`.
pub trait GoValue {
    fn go_value(&self) -> Value;
}

impl GoValue for String {
    fn go_value(&self) -> Value {
        Value::str(self)
    }
}

impl GoValue for Option<String> {
    fn go_value(&self) -> Value {
        Value::opt_str(self.as_deref())
    }
}

impl GoValue for bool {
    fn go_value(&self) -> Value {
        Value::display(self)
    }
}

impl GoValue for i32 {
    fn go_value(&self) -> Value {
        Value::display(self)
    }
}

impl GoValue for Option<ResourceGroup> {
    fn go_value(&self) -> Value {
        opt_resource_group(self.as_ref())
    }
}

impl GoValue for Option<IdentityConfig> {
    fn go_value(&self) -> Value {
        opt_identity(self.as_ref())
    }
}

impl GoValue for Vec<Zone> {
    fn go_value(&self) -> Value {
        zones(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_go_syntax() {
        assert_eq!(resource_group(&ResourceGroup { name: "rg".into() }).0, r#"azure.ResourceGroup{Name:"rg"}"#);
        let v = VNet { name: Some("hub".into()), cidr: Some("10.0.0.0/8".into()), ..Default::default() };
        assert_eq!(
            vnet(&v).0,
            r#"azure.VNet{Name:(*string)("hub"), ResourceGroup:(*string)(nil), CIDR:(*string)("10.0.0.0/8"), DDosProtectionPlanID:(*string)(nil)}"#
        );
        let n = NatGatewayConfig { zone: Some(1), ..Default::default() };
        assert_eq!(
            nat_gateway(&n).0,
            "azure.NatGatewayConfig{Enabled:false, IdleConnectionTimeoutMinutes:(*int32)(nil), Zone:(*int32)(1), SKU:(*string)(nil), IPAddresses:[]azure.PublicIPReference(nil)}"
        );
        assert_eq!(zones(&[]).0, "[]azure.Zone(nil)");
        let z = Zone { name: 1, cidr: "10.0.0.0/24".into(), ..Default::default() };
        assert_eq!(
            zones(&[z]).0,
            r#"[]azure.Zone{azure.Zone{Name:1, CIDR:"10.0.0.0/24", ServiceEndpoints:[]string(nil), NatGateway:(*azure.ZonedNatGatewayConfig)(nil)}}"#
        );
        assert_eq!(opt_identity(None).0, "null");
    }
}
