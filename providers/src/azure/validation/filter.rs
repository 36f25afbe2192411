//! Name validators as upstream's `pkg/apis/azure/validation/filter.go`, plus ports of what they
//! rely on: `arm.ParseResourceID` (azcore) and `uuid.Parse` (google/uuid), with their error texts.
//!
//! Messages: `does not match expected regex <re>` (the regex as upstream writes it),
//! `must not be fewer than %d characters, got %d`, `must not be more than %d characters, got %d`,
//! Required `must not be empty`. The regex check skips "" (upstream lets empty strings through it).

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

use crate::field::{go_quote, ErrorList, FieldError, Path};

pub const RESOURCE_GROUP_NAME_REGEX: &str = r"^[A-Za-z0-9_().-]{1,89}[A-Za-z0-9_()-]$";
pub const VNET_NAME_REGEX: &str = r"^[A-Za-z0-9][\w.-]*[\w]$";
pub const GENERIC_AZURE_NAME_REGEX: &str = r"^[A-Za-z0-9][\w-]*$";
pub const SERVICE_ENDPOINTS_REGEX: &str = r"^Microsoft\.[A-Za-z0-9.]+$";
/// Azure's subnet naming rule (1–80 characters; starts alphanumeric; ends alphanumeric or `_`),
/// for the spec's `networks.subnet.name` (upstream has no validator for it).
pub const SUBNET_NAME_REGEX: &str = r"^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$";

/// A Go (RE2) regex: `\w` is ASCII-only there, so the Rust regex is compiled without Unicode.
struct GoRegex {
    source: &'static str,
    re: Regex,
}

impl GoRegex {
    fn new(source: &'static str) -> GoRegex {
        let re = RegexBuilder::new(source).unicode(false).build().expect("upstream regex compiles");
        GoRegex { source, re }
    }
}

static RESOURCE_GROUP_NAME: LazyLock<GoRegex> = LazyLock::new(|| GoRegex::new(RESOURCE_GROUP_NAME_REGEX));
static VNET_NAME: LazyLock<GoRegex> = LazyLock::new(|| GoRegex::new(VNET_NAME_REGEX));
static GENERIC_AZURE_NAME: LazyLock<GoRegex> = LazyLock::new(|| GoRegex::new(GENERIC_AZURE_NAME_REGEX));
static SERVICE_ENDPOINTS: LazyLock<GoRegex> = LazyLock::new(|| GoRegex::new(SERVICE_ENDPOINTS_REGEX));
static SUBNET_NAME: LazyLock<GoRegex> = LazyLock::new(|| GoRegex::new(SUBNET_NAME_REGEX));

fn regex(re: &GoRegex, name: &str, fld: &Path) -> ErrorList {
    if name.is_empty() || re.re.is_match(name) {
        return Vec::new();
    }
    vec![FieldError::invalid(fld, name, format!("does not match expected regex {}", re.source))]
}

fn min_length(min: usize, name: &str, fld: &Path) -> ErrorList {
    let l = name.chars().count();
    if l < min {
        return vec![FieldError::invalid(fld, name, format!("must not be fewer than {min} characters, got {l}"))];
    }
    Vec::new()
}

fn max_length(max: usize, name: &str, fld: &Path) -> ErrorList {
    let l = name.chars().count();
    if l > max {
        return vec![FieldError::invalid(fld, name, format!("must not be more than {max} characters, got {l}"))];
    }
    Vec::new()
}

fn not_empty(name: &str, fld: &Path) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::required(fld, "must not be empty")];
    }
    Vec::new()
}

/// `validateResourceGroupName`: regex, notEmpty, max 90.
pub fn validate_resource_group_name(name: &str, fld: &Path) -> ErrorList {
    let mut errs = regex(&RESOURCE_GROUP_NAME, name, fld);
    errs.extend(not_empty(name, fld));
    errs.extend(max_length(90, name, fld));
    errs
}

/// `validateVnetName`: regex, min 2, max 64.
pub fn validate_vnet_name(name: &str, fld: &Path) -> ErrorList {
    let mut errs = regex(&VNET_NAME, name, fld);
    errs.extend(min_length(2, name, fld));
    errs.extend(max_length(64, name, fld));
    errs
}

/// `validateGenericName`: regex, min 3, max 120.
pub fn validate_generic_name(name: &str, fld: &Path) -> ErrorList {
    let mut errs = regex(&GENERIC_AZURE_NAME, name, fld);
    errs.extend(min_length(3, name, fld));
    errs.extend(max_length(120, name, fld));
    errs
}

/// `validatePublicIPName`: generic regex, notEmpty, max 80.
pub fn validate_public_ip_name(name: &str, fld: &Path) -> ErrorList {
    let mut errs = regex(&GENERIC_AZURE_NAME, name, fld);
    errs.extend(not_empty(name, fld));
    errs.extend(max_length(80, name, fld));
    errs
}

/// `validateServiceEndpoint`: regex, min 9, max 120.
pub fn validate_service_endpoint(name: &str, fld: &Path) -> ErrorList {
    let mut errs = regex(&SERVICE_ENDPOINTS, name, fld);
    errs.extend(min_length(9, name, fld));
    errs.extend(max_length(120, name, fld));
    errs
}

/// The spec's subnet name rule (no upstream counterpart): regex, max 80 (emptiness is the
/// caller's Required error).
pub fn validate_subnet_name(name: &str, fld: &Path) -> ErrorList {
    let mut errs = regex(&SUBNET_NAME, name, fld);
    errs.extend(max_length(80, name, fld));
    errs
}

/// The parts of an `arm.ResourceID` the validators use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceId {
    pub subscription_id: String,
    pub resource_group_name: String,
    pub provider: String,
    /// `ResourceType.Namespace`, e.g. `Microsoft.Network`.
    pub namespace: String,
    /// `ResourceType.Types`, e.g. `["virtualNetworks", "subnets"]`.
    pub types: Vec<String>,
    pub name: String,
}

impl ResourceId {
    fn type_string(&self) -> String {
        let mut s = self.namespace.clone();
        for t in &self.types {
            s.push('/');
            s.push_str(t);
        }
        s
    }

    fn root() -> ResourceId {
        ResourceId { namespace: BUILTIN_NAMESPACE.into(), types: vec!["tenants".into()], ..Default::default() }
    }

    fn child(&self, namespace: &str, types: Vec<String>, name: &str) -> ResourceId {
        let mut id = ResourceId {
            subscription_id: self.subscription_id.clone(),
            resource_group_name: self.resource_group_name.clone(),
            provider: self.provider.clone(),
            namespace: namespace.to_string(),
            types,
            name: name.to_string(),
        };
        let t = id.type_string();
        if t == SUBSCRIPTION_TYPE {
            id.subscription_id = name.to_string();
        }
        if t == RESOURCE_GROUP_TYPE {
            id.resource_group_name = name.to_string();
        }
        if t == PROVIDER_TYPE {
            id.provider = name.to_string();
        }
        id
    }

    /// `newResourceID(parent, typeName, name)`: `subscriptions`/`resourceGroups` are the built-in
    /// types, anything else is a child type of the parent's.
    fn child_of_type(&self, type_name: &str, name: &str) -> ResourceId {
        match type_name.to_ascii_lowercase().as_str() {
            "resourcegroups" => self.child(BUILTIN_NAMESPACE, vec!["resourceGroups".into()], name),
            "subscriptions" => self.child(BUILTIN_NAMESPACE, vec!["subscriptions".into()], name),
            _ => {
                let mut types = self.types.clone();
                types.push(type_name.to_string());
                self.child(&self.namespace.clone(), types, name)
            }
        }
    }
}

const BUILTIN_NAMESPACE: &str = "Microsoft.Resources";
const SUBSCRIPTION_TYPE: &str = "Microsoft.Resources/subscriptions";
const RESOURCE_GROUP_TYPE: &str = "Microsoft.Resources/resourceGroups";
const PROVIDER_TYPE: &str = "Microsoft.Resources/providers";
const TENANT_TYPE: &str = "Microsoft.Resources/tenants";

/// `arm.ParseResourceID`, with its error texts (`invalid resource ID: …`).
pub fn parse_resource_id(id: &str) -> Result<ResourceId, String> {
    if id.is_empty() {
        return Err("invalid resource ID: id cannot be empty".into());
    }
    if !id.starts_with('/') {
        return Err(format!("invalid resource ID: resource id '{id}' must start with '/'"));
    }
    let parts: Vec<&str> = id.split('/').filter(|p| !p.is_empty()).collect();
    if parts.len() < 2 {
        return Err(format!("invalid resource ID: {id}"));
    }
    if !parts[0].eq_ignore_ascii_case("subscriptions") && !parts[0].eq_ignore_ascii_case("providers") {
        return Err(format!("invalid resource ID: {id}"));
    }
    append_next(ResourceId::root(), &parts, id)
}

fn append_next(parent: ResourceId, parts: &[&str], id: &str) -> Result<ResourceId, String> {
    let invalid = || Err(format!("invalid resource ID: {id}"));
    if parts.is_empty() {
        return Ok(parent);
    }
    if parts.len() == 1 {
        if parts[0].eq_ignore_ascii_case("subscriptions") || parts[0].eq_ignore_ascii_case("resourcegroups") {
            return invalid();
        }
        if parent.type_string() == RESOURCE_GROUP_TYPE {
            return invalid();
        }
        return Ok(parent.child_of_type(parts[0], ""));
    }
    if parts[0].eq_ignore_ascii_case("providers") && (parts.len() == 2 || parts[2].eq_ignore_ascii_case("providers")) {
        let t = parent.type_string();
        if t != SUBSCRIPTION_TYPE && t != TENANT_TYPE {
            return invalid();
        }
        let provider = parent.child(BUILTIN_NAMESPACE, vec!["providers".into()], parts[1]);
        return append_next(provider, &parts[2..], id);
    }
    if parts.len() > 3 && parts[0].eq_ignore_ascii_case("providers") {
        let types = parts[2].split('/').map(str::to_string).collect();
        let next = parent.child(parts[1], types, parts[3]);
        return append_next(next, &parts[4..], id);
    }
    if parts.len() > 1 && !parts[0].eq_ignore_ascii_case("providers") {
        let next = parent.child_of_type(parts[0], parts[1]);
        return append_next(next, &parts[2..], id);
    }
    invalid()
}

/// `uuid.Parse` (google/uuid): the canonical, `urn:uuid:`, braced and 32-hex forms.
pub fn parse_uuid(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let body: &[u8] = match b.len() {
        36 => b,
        45 => {
            if !b[..9].eq_ignore_ascii_case(b"urn:uuid:") {
                return Err(format!("invalid urn prefix: {}", go_quote(&String::from_utf8_lossy(&b[..9]))));
            }
            &b[9..]
        }
        38 => &b[1..],
        32 => {
            return if b.iter().all(u8::is_ascii_hexdigit) { Ok(()) } else { Err("invalid UUID format".into()) };
        }
        n => return Err(format!("invalid UUID length: {n}")),
    };
    if body[8] != b'-' || body[13] != b'-' || body[18] != b'-' || body[23] != b'-' {
        return Err("invalid UUID format".into());
    }
    for x in [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34] {
        if !body[x].is_ascii_hexdigit() || !body[x + 1].is_ascii_hexdigit() {
            return Err("invalid UUID format".into());
        }
    }
    Ok(())
}

/// `validateResourceID(rid, resourceType, fld)`: the subscription must be a UUID, the resource
/// group a valid name (`<fld>.resourceGroupName`), the resource type a generic name
/// (`<fld>.resourceType`).
pub fn validate_resource_id(rid: &ResourceId, resource_type: Option<&str>, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if !rid.subscription_id.is_empty() {
        if let Err(e) = parse_uuid(&rid.subscription_id) {
            errs.push(FieldError::invalid(
                fld,
                &rid.subscription_id,
                format!("must be a valid Azure subscription ID: {e}"),
            ));
        }
    }
    if !rid.resource_group_name.is_empty() {
        errs.extend(validate_resource_group_name(&rid.resource_group_name, &fld.child("resourceGroupName")));
    }
    if let Some(t) = resource_type {
        errs.extend(validate_generic_name(t, &fld.child("resourceType")));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> Path {
        Path::new("x")
    }

    #[test]
    fn names_as_filter_go() {
        assert!(validate_resource_group_name("hub-network", &p()).is_empty());
        assert!(validate_resource_group_name("rg.(1)_x", &p()).is_empty());
        assert_eq!(
            validate_resource_group_name("rg.", &p())[0].to_string(),
            r#"x: Invalid value: "rg.": does not match expected regex ^[A-Za-z0-9_().-]{1,89}[A-Za-z0-9_()-]$"#
        );
        assert_eq!(validate_resource_group_name("", &p())[0].to_string(), "x: Required value: must not be empty");
        let long = "a".repeat(91);
        let errs = validate_resource_group_name(&long, &p());
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[1].detail, "must not be more than 90 characters, got 91");
        assert!(validate_vnet_name("hub_vnet.1", &p()).is_empty());
        assert_eq!(validate_vnet_name("a", &p()).len(), 2); // regex (needs 2 chars) + min length
        assert_eq!(validate_vnet_name("", &p())[0].detail, "must not be fewer than 2 characters, got 0");
        // Go's \w is ASCII-only.
        assert_eq!(
            validate_vnet_name("vnät", &p())[0].detail,
            r"does not match expected regex ^[A-Za-z0-9][\w.-]*[\w]$"
        );
        assert!(validate_generic_name("my-identity", &p()).is_empty());
        assert_eq!(validate_generic_name("ab", &p())[0].detail, "must not be fewer than 3 characters, got 2");
        assert_eq!(validate_public_ip_name("", &p())[0].to_string(), "x: Required value: must not be empty");
        assert!(validate_service_endpoint("Microsoft.Storage", &p()).is_empty());
        assert_eq!(validate_service_endpoint("Storage", &p()).len(), 2);
        assert!(validate_subnet_name("shoot-a_workers", &p()).is_empty());
        assert_eq!(validate_subnet_name("workers-", &p()).len(), 1);
        assert!(validate_subnet_name("w", &p()).is_empty());
    }

    #[test]
    fn resource_ids_as_azcore() {
        let id = parse_resource_id(
            "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ddos-rg/providers/Microsoft.Network/ddosProtectionPlans/plan",
        )
        .unwrap();
        assert_eq!(id.subscription_id, "00000000-0000-0000-0000-000000000001");
        assert_eq!(id.resource_group_name, "ddos-rg");
        assert_eq!(
            (id.namespace.as_str(), id.types.as_slice(), id.name.as_str()),
            ("Microsoft.Network", &["ddosProtectionPlans".to_string()][..], "plan")
        );
        let subnet = parse_resource_id(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/w",
        )
        .unwrap();
        assert_eq!(subnet.types, vec!["virtualNetworks", "subnets"]);
        assert_eq!(subnet.name, "w");
        assert_eq!(parse_resource_id("").unwrap_err(), "invalid resource ID: id cannot be empty");
        assert_eq!(
            parse_resource_id("plan").unwrap_err(),
            "invalid resource ID: resource id 'plan' must start with '/'"
        );
        assert_eq!(parse_resource_id("/subscriptions").unwrap_err(), "invalid resource ID: /subscriptions");
        assert_eq!(parse_resource_id("/foo/bar").unwrap_err(), "invalid resource ID: /foo/bar");
        assert_eq!(
            parse_resource_id("/subscriptions/s/resourceGroups").unwrap_err(),
            "invalid resource ID: /subscriptions/s/resourceGroups"
        );
        assert_eq!(
            parse_resource_id("/subscriptions/s/resourceGroups/rg/x").unwrap_err(),
            "invalid resource ID: /subscriptions/s/resourceGroups/rg/x"
        );
        assert!(parse_resource_id("/subscriptions/s/resourceGroups/rg").is_ok());
    }

    #[test]
    fn uuids_as_google_uuid() {
        assert!(parse_uuid("00000000-0000-0000-0000-000000000001").is_ok());
        assert!(parse_uuid("{00000000-0000-0000-0000-000000000001}").is_ok());
        assert!(parse_uuid("urn:uuid:00000000-0000-0000-0000-000000000001").is_ok());
        assert!(parse_uuid("00000000000000000000000000000001").is_ok());
        assert_eq!(parse_uuid("sub").unwrap_err(), "invalid UUID length: 3");
        assert_eq!(parse_uuid("00000000x0000-0000-0000-000000000001").unwrap_err(), "invalid UUID format");
        assert_eq!(parse_uuid("zz000000-0000-0000-0000-000000000001").unwrap_err(), "invalid UUID format");
        assert_eq!(
            parse_uuid("urn:uuix:00000000-0000-0000-0000-000000000001").unwrap_err(),
            r#"invalid urn prefix: "urn:uuix:""#
        );
    }
}
