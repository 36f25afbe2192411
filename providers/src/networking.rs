//! Gardener's rules for a Shoot's `spec.networking` (provider-independent), with upstream's field
//! paths and messages:
//!
//! - [`validate_networking`]: gardener/gardener `pkg/api/core/validation/shoot.go`
//!   `validateNetworking` — for a shoot with workers the CNI `type` is set and a valid label-name
//!   suffix; for a workerless shoot `type`, `providerConfig`, `pods` and `nodes` are forbidden;
//!   `ipFamilies` holds only `IPv4`/`IPv6`, each once (`ValidateIPFamilies`; further checks stop
//!   there, as upstream's do); `nodes`, `pods` and `services` parse as CIDRs, are of the primary IP
//!   family (single-stack only) and are canonical.
//! - [`validate_networking_update`]: `validateNetworkingUpdate` — `type` is immutable, `pods` and
//!   `services` too once set, and `ipFamilies` changes only IPv4 ↔ [IPv4, IPv6]
//!   (`validateIPFamiliesUpdate`).
//! - [`validate_shoot_networks`]: the `ShootValidator` admission plugin's `validateShootNetworks`
//!   for an IPv4 shoot — pods, services and nodes are pairwise disjoint
//!   (`ValidateShootNetworkDisjointedness`) and none of them intersects the ranges Gardener reserves
//!   (`validateOverlapWithReservedRanges`, checked whenever a shoot is scheduled to a seed).
//!
//! Upstream validates the shoot after defaulting, so here too an empty `ipFamilies` is `[IPv4]`
//! (`SetDefaults_Networking`) and an absent `spec.networking` is an empty one (`SetDefaults_Shoot`).
//!
//! Not ported, because trellis has no seed: the seed-dependent parts of `validateShootNetworks`
//! (`pods`/`services` required once a seed is assigned — the seed's `shootDefaults` fill them —
//! and IPv6 networks intersecting the seed's).
//!
//! One deliberate difference: upstream's admission checks only ever see CIDRs that parsed (the
//! API's validation rejects the shoot first), and its `NetworksIntersect` says "intersects" for a
//! CIDR that does not parse. trellis reports every error at once, so it skips a CIDR that does not
//! parse in those checks instead of reporting an intersection that is not there.

use ipnet::IpNet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value as Json};

use crate::cidr::{validate_cidr_is_canonical, Cidr};
use crate::field::{ErrorList, FieldError, Path, Value};
use crate::manifest::Networking;

/// `core.IPFamilyIPv4`.
pub const IP_FAMILY_IPV4: &str = "IPv4";
/// `core.IPFamilyIPv6`.
pub const IP_FAMILY_IPV6: &str = "IPv6";
/// `availableIPFamilies`, sorted as `sets.List` returns them.
pub const AVAILABLE_IP_FAMILIES: [&str; 2] = [IP_FAMILY_IPV4, IP_FAMILY_IPV6];

/// Gardener's `workerlessErrorMsg`.
pub const WORKERLESS_ERROR_MSG: &str = "this field should not be set for workerless Shoot clusters";
/// `v1beta1constants.LabelExtensionNetworkingTypePrefix`: the CNI type is a label-name suffix of it.
pub const LABEL_EXTENSION_NETWORKING_TYPE_PREFIX: &str = "networking.extensions.gardener.cloud/";

/// The ranges Gardener reserves (`v1beta1constants`), in the order upstream checks them.
pub const RESERVED_RANGES: [(&str, &str); 6] = [
    ("fd8f:6d53:b97a:1::/96", "default vpn network"),
    ("240.0.0.0/8", "reserved kube-apiserver mapping range"),
    ("241.0.0.0/8", "reserved seed pod network mapping range"),
    ("242.0.0.0/8", "reserved shoot node network mapping range"),
    ("243.0.0.0/8", "reserved shoot service network mapping range"),
    ("244.0.0.0/8", "reserved shoot pod network mapping range"),
];

/// `spec.networking.ipFamilies` after defaulting: `[IPv4]` when empty.
pub fn ip_families(networking: &Networking) -> Vec<String> {
    if networking.ip_families.is_empty() {
        vec![IP_FAMILY_IPV4.to_string()]
    } else {
        networking.ip_families.clone()
    }
}

/// `core.IsIPv6SingleStack`.
pub fn is_ipv6_single_stack(families: &[String]) -> bool {
    families.len() == 1 && families[0] == IP_FAMILY_IPV6
}

/// The defaulted IP families as JSON (how upstream renders a `[]IPFamily` bad value).
pub fn ip_families_value(families: &[String]) -> Value {
    Value::json(&serde_json::json!(families))
}

/// `validateNetworking(networking, workerless, fldPath)` on the defaulted networking.
pub fn validate_networking(networking: &Networking, workerless: bool, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if workerless {
        if networking.type_.is_some() {
            errs.push(FieldError::forbidden(fld.child("type"), WORKERLESS_ERROR_MSG));
        }
        if networking.provider_config.is_some() {
            errs.push(FieldError::forbidden(fld.child("providerConfig"), WORKERLESS_ERROR_MSG));
        }
        if networking.pods.is_some() {
            errs.push(FieldError::forbidden(fld.child("pods"), WORKERLESS_ERROR_MSG));
        }
        if networking.nodes.is_some() {
            errs.push(FieldError::forbidden(fld.child("nodes"), WORKERLESS_ERROR_MSG));
        }
    } else {
        let path = fld.child("type");
        match networking.type_.as_deref().unwrap_or("") {
            "" => errs.push(FieldError::required(&path, "networking type must be provided")),
            ty if !is_qualified_name(&format!("{LABEL_EXTENSION_NETWORKING_TYPE_PREFIX}{ty}")) => {
                errs.push(FieldError::invalid(&path, ty, "type must be a valid label name"))
            }
            _ => {}
        }
    }

    let families = ip_families(networking);
    let family_errs = validate_ip_families(&families, &fld.child("ipFamilies"));
    if !family_errs.is_empty() {
        // Upstream: "further validation doesn't make any sense, because we don't know which IP
        // family to check for in the CIDR fields".
        errs.extend(family_errs);
        return errs;
    }
    let primary = families.first().map_or(IP_FAMILY_IPV4, String::as_str);
    for (name, value) in [("nodes", &networking.nodes), ("pods", &networking.pods), ("services", &networking.services)]
    {
        let Some(value) = value else { continue };
        let path = fld.child(name);
        let cidr = Cidr::new(value, path.clone());
        errs.extend(cidr.validate_parse());
        // For dual-stack, the primary IP family need not match the configured CIDRs.
        if families.len() < 2 {
            errs.extend(validate_ip_family(&cidr, primary));
        }
        errs.extend(validate_cidr_is_canonical(&path, value));
    }
    errs
}

/// `ValidateIPFamilies`: every family is supported and appears once.
pub fn validate_ip_families(families: &[String], fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, family) in families.iter().enumerate() {
        // A `core.IPFamily` is a typed string: upstream renders it as JSON.
        let value = Value::json(&serde_json::Value::String(family.clone()));
        if !AVAILABLE_IP_FAMILIES.contains(&family.as_str()) {
            errs.push(FieldError::not_supported_value(fld.index(i), value.clone(), &AVAILABLE_IP_FAMILIES));
        }
        if seen.contains(&family.as_str()) {
            errs.push(FieldError::duplicate_value(fld.index(i), value));
        } else {
            seen.push(family);
        }
    }
    errs
}

/// Go's `ip.To4() != nil` for a parsed network: IPv4, or IPv4 mapped into IPv6.
fn is_go_ipv4(net: &IpNet) -> bool {
    match net {
        IpNet::V4(_) => true,
        IpNet::V6(n) => n.network().to_ipv4_mapped().is_some(),
    }
}

/// Go's `net.IP.String()` of a network address (an IPv4-mapped address prints as IPv4).
fn go_ip_string(net: &IpNet) -> String {
    match net {
        IpNet::V4(n) => n.network().to_string(),
        IpNet::V6(n) => match n.network().to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => n.network().to_string(),
        },
    }
}

/// `cidr.ValidateIPFamily(family)`: Invalid with the network address when the CIDR is of the other
/// family; nothing for a CIDR that does not parse.
pub fn validate_ip_family(cidr: &Cidr, family: &str) -> ErrorList {
    let Some(net) = cidr.net() else { return Vec::new() };
    let wrong = match family {
        IP_FAMILY_IPV4 => (!is_go_ipv4(&net)).then_some("must be a valid IPv4 address"),
        IP_FAMILY_IPV6 => is_go_ipv4(&net).then_some("must be a valid IPv6 address"),
        _ => None,
    };
    match wrong {
        Some(detail) => vec![FieldError::invalid(cidr.path(), go_ip_string(&net), detail)],
        None => Vec::new(),
    }
}

/// `validateNetworkingUpdate(new, old, fldPath)`; both defaulted.
pub fn validate_networking_update(new: &Networking, old: &Networking, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if new.type_ != old.type_ {
        errs.push(FieldError::invalid_value(
            fld.child("type"),
            Value::opt_str(new.type_.as_deref()),
            crate::azure::validation::FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    for (name, new_value, old_value) in [("pods", &new.pods, &old.pods), ("services", &new.services, &old.services)] {
        if old_value.is_some() && new_value != old_value {
            errs.push(FieldError::invalid_value(
                fld.child(name),
                Value::opt_str(new_value.as_deref()),
                crate::azure::validation::FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    errs.extend(validate_ip_families_update(&ip_families(new), &ip_families(old), &fld.child("ipFamilies")));
    errs
}

/// `validateIPFamiliesUpdate`: IPv4 → [IPv4, IPv6] and back are the only changes allowed.
pub fn validate_ip_families_update(new: &[String], old: &[String], fld: &Path) -> ErrorList {
    let v4 = [IP_FAMILY_IPV4];
    let dual = [IP_FAMILY_IPV4, IP_FAMILY_IPV6];
    let is = |list: &[String], want: &[&str]| list.len() == want.len() && list.iter().zip(want).all(|(a, b)| a == b);
    if (is(old, &v4) && is(new, &dual)) || (is(old, &dual) && is(new, &v4)) || new == old {
        return Vec::new();
    }
    vec![FieldError::forbidden(
        fld,
        format!("unsupported IP family update: oldIPFamilies=[{}], newIPFamilies=[{}]", old.join(" "), new.join(" ")),
    )]
}

/// The `ShootValidator` admission plugin's checks of `spec.networking` that need no seed: for a
/// shoot with IPv4 among its (defaulted) IP families, pods, services and nodes must be pairwise
/// disjoint (`ValidateShootNetworkDisjointedness`) and must not intersect Gardener's reserved
/// ranges (`validateOverlapWithReservedRanges`, run for nodes, services, pods in that order).
pub fn validate_shoot_networks(networking: &Networking, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if !ip_families(networking).iter().any(|f| f == IP_FAMILY_IPV4) {
        return errs;
    }
    let net = |v: &Option<String>| v.as_deref().and_then(|s| Cidr::new(s, fld.clone()).net());
    let (nodes, pods, services) = (net(&networking.nodes), net(&networking.pods), net(&networking.services));
    let text = |v: &Option<String>| v.clone().unwrap_or_default();

    if let (Some(p), Some(s)) = (pods, services) {
        if intersect(&p, &s) {
            errs.push(FieldError::invalid(
                fld.child("services"),
                text(&networking.services),
                "shoot pod network intersects with shoot service network",
            ));
        }
    }
    if let (Some(p), Some(n)) = (pods, nodes) {
        if intersect(&p, &n) {
            errs.push(FieldError::invalid(
                fld.child("pods"),
                text(&networking.pods),
                "shoot pod network intersects with shoot node network",
            ));
        }
    }
    if let (Some(s), Some(n)) = (services, nodes) {
        if intersect(&s, &n) {
            errs.push(FieldError::invalid(
                fld.child("services"),
                text(&networking.services),
                "shoot service network intersects with shoot node network",
            ));
        }
    }

    for (name, kind, value, parsed) in [
        ("nodes", "node", &networking.nodes, nodes),
        ("services", "service", &networking.services, services),
        ("pods", "pod", &networking.pods, pods),
    ] {
        let Some(parsed) = parsed else { continue };
        for (range, what) in RESERVED_RANGES {
            let reserved: IpNet = range.parse().expect("upstream's reserved ranges parse");
            if intersect(&reserved, &parsed) {
                errs.push(FieldError::invalid(
                    fld.child(name),
                    text(value),
                    format!("{kind} network intersects with {what} ({range})"),
                ));
            }
        }
    }
    errs
}

/// `NetworksIntersect` for two parsed networks: one contains the other's first address (they share an
/// address).
pub fn intersect(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

static QUALIFIED_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$").expect("upstream regex compiles"));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$").expect("upstream regex compiles")
});

/// apimachinery's `IsQualifiedName` (what `ValidateLabelName` checks): an optional DNS-1123
/// subdomain prefix of at most 253 characters and `/`, then a name of at most 63 characters.
fn is_qualified_name(value: &str) -> bool {
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() || prefix.len() > 253 || !DNS1123_SUBDOMAIN.is_match(prefix) {
                return false;
            }
            *name
        }
        _ => return false,
    };
    !name.is_empty() && name.len() <= 63 && QUALIFIED_NAME.is_match(name)
}

/// Upstream's `decodeNetworkConfig`: the provider config as a JSON object (`json.Unmarshal` into a
/// `map[string]interface{}`; a JSON `null` decodes to an empty map). The error is Go's.
pub fn decode_network_config(raw: &Json) -> Result<Map<String, Json>, String> {
    let kind = match raw {
        Json::Object(map) => return Ok(map.clone()),
        Json::Null => return Ok(Map::new()),
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Number(_) => "number",
        Json::Bool(_) => "bool",
    };
    Err(format!("json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn networks_intersect_when_they_share_an_address() {
        assert!(intersect(&"10.0.0.0/16".parse().unwrap(), &"10.0.1.0/24".parse().unwrap()));
        assert!(!intersect(&"10.0.0.0/24".parse().unwrap(), &"10.0.1.0/24".parse().unwrap()));
    }

    #[test]
    fn qualified_names_as_apimachinery() {
        assert!(is_qualified_name("networking.extensions.gardener.cloud/calico"));
        assert!(is_qualified_name("networking.extensions.gardener.cloud/a_b.c-d"));
        assert!(!is_qualified_name("networking.extensions.gardener.cloud/$/()[]{}"));
        assert!(!is_qualified_name("networking.extensions.gardener.cloud/-x"));
        assert!(!is_qualified_name(&format!("networking.extensions.gardener.cloud/{}", "a".repeat(64))));
        assert!(is_qualified_name(&format!("networking.extensions.gardener.cloud/{}", "a".repeat(63))));
    }

    #[test]
    fn ipv4_mapped_addresses_count_as_ipv4_as_in_go() {
        let c = Cidr::new("::ffff:10.0.0.0/104", Path::new("n"));
        assert!(validate_ip_family(&c, IP_FAMILY_IPV4).is_empty());
        assert_eq!(
            validate_ip_family(&c, IP_FAMILY_IPV6)[0].to_string(),
            r#"n: Invalid value: "10.0.0.0": must be a valid IPv6 address"#
        );
    }

    #[test]
    fn network_config_decodes_as_go_does() {
        assert!(decode_network_config(&json!({"overlay": {"enabled": true}})).is_ok());
        assert!(decode_network_config(&Json::Null).unwrap().is_empty());
        assert_eq!(
            decode_network_config(&json!("x")).unwrap_err(),
            "json: cannot unmarshal string into Go value of type map[string]interface {}"
        );
    }
}
