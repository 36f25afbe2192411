//! A subnet's address prefixes in either of ARM's two shapes.
//!
//! ARM shows a subnet with `properties.addressPrefix` (one prefix) or with `properties.addressPrefixes`
//! (a list: subnets written with a list, dual-stack subnets), and keeps the shape the subnet was
//! written with. Microsoft's own example responses use both (`SubnetGet.json`: `addressPrefix`;
//! `VirtualNetworkCreateSubnetWithAddressPrefixes.json`: `addressPrefixes` with two entries). Every
//! reader of a subnet's CIDR goes through [`SubnetPrefixes`], so checks see every prefix and verify
//! the field the subnet really uses.

use ipnet::IpNet;
use serde_json::{json, Value};

const SINGLE: &str = "/properties/addressPrefix";
const LIST: &str = "/properties/addressPrefixes";

/// The address prefixes a live subnet shows, and in which field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubnetPrefixes {
    /// `true` when the subnet shows `addressPrefixes` (a list), `false` for `addressPrefix`.
    pub list: bool,
    /// The prefixes as written (a non-string entry of the list as its JSON text).
    pub prefixes: Vec<String>,
}

impl SubnetPrefixes {
    /// The prefixes of a subnet as ARM returns it: a non-empty `addressPrefixes` list, else
    /// `addressPrefix`; `None` when it shows neither.
    pub fn of(subnet: &Value) -> Option<SubnetPrefixes> {
        let list: Vec<String> = subnet
            .pointer(LIST)
            .and_then(Value::as_array)
            .map(|items| {
                items.iter().map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).collect()
            })
            .unwrap_or_default();
        if !list.is_empty() {
            return Some(SubnetPrefixes { list: true, prefixes: list });
        }
        let single = subnet.pointer(SINGLE).and_then(Value::as_str)?;
        Some(SubnetPrefixes { list: false, prefixes: vec![single.to_string()] })
    }

    /// The JSON pointer of the field the subnet uses.
    pub fn pointer(&self) -> &'static str {
        if self.list {
            LIST
        } else {
            SINGLE
        }
    }

    /// The value of that field, as the subnet shows it.
    pub fn value(&self) -> Value {
        if self.list {
            json!(self.prefixes)
        } else {
            json!(self.prefixes[0])
        }
    }

    /// Every prefix parsed, or the first one that is not a CIDR.
    pub fn parsed(&self) -> Result<Vec<IpNet>, &str> {
        self.prefixes.iter().map(|p| p.parse::<IpNet>().map_err(|_| p.as_str())).collect()
    }

    /// The prefixes for messages and workspace memory: `10.0.0.0/28, 10.0.1.0/28`.
    pub fn display(&self) -> String {
        self.prefixes.join(", ")
    }
}

/// The parsed prefixes of a subnet (either shape); empty when it has none or one is not a CIDR.
pub fn subnet_nets(subnet: &Value) -> Vec<IpNet> {
    SubnetPrefixes::of(subnet).and_then(|p| p.parsed().ok()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_shape_is_read_and_the_list_wins_when_both_are_shown() {
        let single = SubnetPrefixes::of(&json!({"properties": {"addressPrefix": "10.0.0.0/16"}})).unwrap();
        assert_eq!((single.list, single.pointer(), single.value()), (false, SINGLE, json!("10.0.0.0/16")));
        let list =
            SubnetPrefixes::of(&json!({"properties": {"addressPrefixes": ["10.0.0.0/28", "10.0.1.0/28"]}})).unwrap();
        assert_eq!((list.list, list.pointer(), list.display()), (true, LIST, "10.0.0.0/28, 10.0.1.0/28".to_string()));
        let both =
            json!({"properties": {"addressPrefix": "10.0.0.0/28", "addressPrefixes": ["10.0.0.0/28", "10.0.1.0/28"]}});
        assert_eq!(SubnetPrefixes::of(&both).unwrap().prefixes.len(), 2);
        let empty_list = json!({"properties": {"addressPrefix": "10.0.0.0/28", "addressPrefixes": []}});
        assert!(!SubnetPrefixes::of(&empty_list).unwrap().list);
        assert_eq!(SubnetPrefixes::of(&json!({"properties": {}})), None);
    }

    #[test]
    fn a_prefix_that_is_not_a_cidr_is_named() {
        let p = SubnetPrefixes::of(&json!({"properties": {"addressPrefixes": ["10.0.0.0/28", 7]}})).unwrap();
        assert_eq!(p.parsed(), Err("7"));
    }
}
