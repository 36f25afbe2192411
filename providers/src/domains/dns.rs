//! What a domains plan reads of the DNS at plan time, and what it decides from it: the address the
//! records point at ([`address`]: the Seed annotation, else the seed's ingress), the zone each
//! `DNSRecord`'s record set goes into ([`choose_zone`]) and the record sets themselves
//! ([`RecordSet`]), with the plan-time refusals ([`DnsError`]), each one line.
//!
//! Ids are neutral (the same for every cloud, so plans against the simulator and against a real
//! cloud compare byte for byte):
//! - a zone: `/dns/zones/{zone}` (`{zone}` its DNS name, lowercase, no trailing dot), listed as the
//!   children of type `zones` of `/dns`: `{"id", "name", "azure"?: {"subscription"?, "resourceGroup"},
//!   "gcp"?: {"project"?, "managedZone"}}`;
//! - a record set: `/dns/zones/{zone}/records/{fqdn}/{TYPE}`, body `{"name", "type", "ttl",
//!   "values"}`; a GET adds the read-only `etag` (the version a write is made under) and `zone`;
//! - a seed: `/seeds/{seed}`, `{"name", "ingress": {"ip" | "hostname"}}`.

use serde_json::{json, Value};

use super::api::{DomainsShoot, ANNOTATION_API_SERVER_ADDRESS};
use super::kind::normal_name;
use super::model::{self, Record, Role, Roles, TTL};

/// The parent and type of the zone list.
pub const ZONES_PARENT: &str = "/dns";
pub const ZONES: &str = "zones";

/// Why a domains plan cannot be made against the DNS it read: one line each, saying what, where and
/// what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DnsError {
    #[error("Seed {seed} has no API-server address: declare its ingress in the world file's seeds: section (seeds: [{{name: {seed}, ingress: {{ip: …}}}}]) or annotate it with {ANNOTATION_API_SERVER_ADDRESS}")]
    NoAddress { seed: String },
    #[error("no DNS zone for {fqdn} (DNSRecord {record}): {listed}; create the zone or declare it in the world file's dns: section")]
    NoZone { fqdn: String, record: String, listed: String },
    #[error("no DNS zone {zone:?} (spec.zone of DNSRecord {record}, {form}): {listed}; create the zone or declare it in the world file's dns: section, or correct the zone in the Seed's DNS config")]
    NoSuchZone { zone: String, record: String, form: String, listed: String },
    #[error("{fqdn} (DNSRecord {record}) is not in zone {zone} (spec.zone): name the zone that holds it in the Seed's DNS config")]
    OutsideZone { fqdn: String, record: String, zone: String },
    #[error("{fqdn} (DNSRecord {record}): two listed zones are named {name}, {first} and {second}; name one in the Seed's DNS config (spec.zone of the DNSRecord: azure-dns {{resourceGroup}}/{{zoneName}}, google-clouddns the managed zone's name)")]
    AmbiguousZone { fqdn: String, record: String, name: String, first: String, second: String },
    #[error("record set {fqdn} {rtype} in zone {zone} exists and was not created by this shoot's domains plan (values {values}): trellis never writes or deletes a record set it did not create for this shoot; if another shoot's domains plan wrote it, that shoot owns the name (`trellis state list` shows the +domains workspaces), otherwise delete it yourself or choose another domain")]
    Foreign { fqdn: String, rtype: String, zone: String, values: String },
}

/// `/seeds/{seed}`.
pub fn seed_id(seed: &str) -> String {
    format!("/seeds/{seed}")
}

/// The Seed's `trellis.gardener.cloud/api-server-address` annotation, trimmed, if set: the explicit
/// override of the address the records point at.
pub fn annotated_address(ds: &DomainsShoot) -> Option<String> {
    ds.seed
        .metadata
        .annotations
        .get(ANNOTATION_API_SERVER_ADDRESS)
        .map(|a| a.trim())
        .filter(|a| !a.is_empty())
        .map(str::to_string)
}

/// The ingress a seed read from `/seeds/{seed}` names: `ingress.ip`, else `ingress.hostname`.
pub fn ingress_address(seed: &Value) -> Option<String> {
    let ingress = seed.get("ingress")?;
    ["ip", "hostname"]
        .iter()
        .filter_map(|f| ingress.get(*f).and_then(Value::as_str).map(str::trim))
        .find(|a| !a.is_empty())
        .map(str::to_string)
}

/// The address the records point at, in order: the annotation (`annotated`), else the ingress of the
/// seed `seed` as read (`None`: it does not exist, names no ingress, or was not read).
pub fn address(annotated: Option<&str>, seed: Option<&Value>) -> Option<String> {
    annotated.map(str::to_string).or_else(|| seed.and_then(ingress_address))
}

/// `/dns/zones/{zone}/records/{fqdn}/{TYPE}`.
pub fn record_set_id(zone: &str, fqdn: &str, rtype: &str) -> String {
    format!("/dns/zones/{zone}/records/{fqdn}/{rtype}")
}

/// A zone as the messages name it: its DNS name, and where it lives when the list says.
pub fn describe_zone(zone: &Value) -> String {
    let name = zone_name(zone);
    let field = |pointer: &str| zone.pointer(pointer).and_then(Value::as_str).filter(|s| !s.is_empty());
    let mut at = Vec::new();
    if let Some(rg) = field("/azure/resourceGroup") {
        at.push(format!("resource group {rg}"));
    }
    if let Some(s) = field("/azure/subscription") {
        at.push(format!("subscription {s}"));
    }
    if let Some(z) = field("/gcp/managedZone") {
        at.push(format!("managed zone {z}"));
    }
    if let Some(p) = field("/gcp/project") {
        at.push(format!("project {p}"));
    }
    if at.is_empty() {
        name
    } else {
        format!("{name} ({})", at.join(", "))
    }
}

/// A listed zone's DNS name, in [`normal_name`] form.
fn zone_name(zone: &Value) -> String {
    normal_name(zone.get("name").and_then(Value::as_str).unwrap_or_default())
}

/// Whether `name` is `zone` or inside it (at a label boundary); both in [`normal_name`] form.
pub fn within(name: &str, zone: &str) -> bool {
    !zone.is_empty() && (name == zone || name.strip_suffix(zone).is_some_and(|head| head.ends_with('.')))
}

fn listed_zones(zones: &[&Value]) -> String {
    if zones.is_empty() {
        "no zone is listed".to_string()
    } else {
        format!("the listed zones are {}", zones.iter().map(|z| describe_zone(z)).collect::<Vec<_>>().join(", "))
    }
}

/// How `provider` names a zone in `spec.zone`.
fn zone_form(provider: &str) -> &'static str {
    match provider {
        "azure-dns" => "azure-dns names it {resourceGroup}/{zoneName}",
        "google-clouddns" => "google-clouddns names it by its managed zone's name",
        _ => "named by its DNS name",
    }
}

/// Whether the listed `zone` is the one `spec_zone` names in the form of the DNS provider `provider`:
/// azure-dns `{resourceGroup}/{zoneName}`, google-clouddns the managed zone's name.
fn provider_names(zone: &Value, provider: &str, spec_zone: &str) -> bool {
    let field = |pointer: &str| zone.pointer(pointer).and_then(Value::as_str);
    match provider {
        "azure-dns" => spec_zone.split_once('/').is_some_and(|(rg, name)| {
            normal_name(name) == zone_name(zone)
                && field("/azure/resourceGroup").is_some_and(|g| g.eq_ignore_ascii_case(rg))
        }),
        "google-clouddns" => field("/gcp/managedZone") == Some(spec_zone.trim()),
        _ => false,
    }
}

/// The zone (its DNS name) the record set of `record` (DNS name `fqdn`, written by the DNS provider
/// `provider`, `spec.zone` `spec_zone`) goes into, among the listed `zones`:
/// - `spec.zone` set: the zone it names in the provider's form; when none is named
///   so, the zone whose DNS name it is; the FQDN must lie in it;
/// - else the zone whose name is the longest suffix of the FQDN.
///
/// Two zones of that one DNS name (two resource groups, two projects) are refused naming both.
pub fn choose_zone(
    zones: &[&Value],
    record: &str,
    fqdn: &str,
    provider: &str,
    spec_zone: Option<&str>,
) -> Result<String, DnsError> {
    let fqdn = normal_name(fqdn);
    let candidates: Vec<&Value> = match spec_zone.map(str::trim).filter(|z| !z.is_empty()) {
        Some(spec) => {
            let named: Vec<&Value> = zones.iter().copied().filter(|z| provider_names(z, provider, spec)).collect();
            let named = if named.is_empty() {
                zones.iter().copied().filter(|z| zone_name(z) == normal_name(spec)).collect()
            } else {
                named
            };
            let Some(first) = named.first() else {
                return Err(DnsError::NoSuchZone {
                    zone: spec.to_string(),
                    record: record.to_string(),
                    form: zone_form(provider).to_string(),
                    listed: listed_zones(zones),
                });
            };
            if !within(&fqdn, &zone_name(first)) {
                return Err(DnsError::OutsideZone { fqdn, record: record.to_string(), zone: describe_zone(first) });
            }
            named
        }
        None => {
            let longest = zones.iter().map(|z| zone_name(z)).filter(|n| within(&fqdn, n)).max_by_key(String::len);
            let Some(longest) = longest else {
                return Err(DnsError::NoZone { fqdn, record: record.to_string(), listed: listed_zones(zones) });
            };
            zones.iter().copied().filter(|z| zone_name(z) == longest).collect()
        }
    };
    match candidates.as_slice() {
        [one] => Ok(zone_name(one)),
        [first, second, ..] => Err(DnsError::AmbiguousZone {
            fqdn,
            record: record.to_string(),
            name: zone_name(first),
            first: describe_zone(first),
            second: describe_zone(second),
        }),
        [] => Err(DnsError::NoZone { fqdn, record: record.to_string(), listed: listed_zones(zones) }),
    }
}

/// The record set the DNS provider extension writes for one `DNSRecord`.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordSet {
    /// The `DNSRecord` it is written for: its name, id and role.
    pub record: String,
    pub record_id: String,
    pub role: Role,
    /// The DNS provider type of the `DNSRecord` (`spec.type`).
    pub provider: String,
    /// The zone's DNS name.
    pub zone: String,
    pub fqdn: String,
    pub rtype: &'static str,
    pub ttl: u64,
    pub values: Vec<String>,
    /// `/dns/zones/{zone}/records/{fqdn}/{TYPE}`.
    pub id: String,
}

impl RecordSet {
    /// `{"name", "type", "ttl", "values"}`: what a create or update sends.
    pub fn body(&self) -> Value {
        json!({"name": self.fqdn, "type": self.rtype, "ttl": self.ttl, "values": self.values})
    }

    /// `A api.dev.example.com (TTL 120) → 203.0.113.10 in zone example.com`.
    pub fn describe(&self) -> String {
        format!("{} {} (TTL {}) → {} in zone {}", self.rtype, self.fqdn, self.ttl, self.values.join(", "), self.zone)
    }

    /// Whether `live` (a GET of the set) holds exactly what [`RecordSet::body`] writes.
    pub fn is(&self, live: &Value) -> bool {
        let body = self.body();
        live.get("name").and_then(Value::as_str).map(normal_name).as_deref() == Some(self.fqdn.as_str())
            && live.get("type").and_then(Value::as_str).map(str::to_ascii_uppercase).as_deref() == Some(self.rtype)
            && live.get("ttl") == body.get("ttl")
            && live.get("values") == body.get("values")
    }
}

/// The values of a record set as read, for messages.
pub fn values_of(live: &Value) -> String {
    match live.get("values").and_then(Value::as_array) {
        Some(values) if !values.is_empty() => values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "none".to_string(),
    }
}

/// The record set of `record` (one of [`model::records`] of `roles`, pointing at `address`) in the
/// zone chosen among `zones`.
pub fn record_set(roles: &Roles, record: &Record, address: &str, zones: &[&Value]) -> Result<RecordSet, DnsError> {
    let endpoint = roles.all().into_iter().find(|(r, _)| *r == record.role).map(|(_, e)| e);
    let provider = endpoint.map(|e| e.provider_type.clone()).unwrap_or_default();
    let spec_zone = endpoint.and_then(|e| e.zone.as_deref());
    let fqdn = normal_name(&endpoint.map(|e| e.api()).unwrap_or_default());
    let shown = format!("{}/{}", record_namespace(&record.id), record.name);
    let zone = choose_zone(zones, &shown, &fqdn, &provider, spec_zone)?;
    let rtype = model::record_type(address);
    Ok(RecordSet {
        record: record.name.clone(),
        record_id: record.id.clone(),
        role: record.role,
        provider,
        id: record_set_id(&zone, &fqdn, rtype),
        zone,
        fqdn,
        rtype,
        ttl: TTL,
        values: vec![address.to_string()],
    })
}

/// The namespace segment of a `DNSRecord` id (`/seeds/{seed}/namespaces/{ns}/dnsrecords/{name}`).
fn record_namespace(id: &str) -> &str {
    id.split('/').nth(4).unwrap_or_default()
}

/// The zone, FQDN and type of a record-set id, if it is one.
pub fn parse_record_set_id(id: &str) -> Option<(&str, &str, &str)> {
    match id.trim().trim_end_matches('/').split('/').collect::<Vec<_>>().as_slice() {
        ["", "dns", "zones", zone, "records", fqdn, rtype] => Some((zone, fqdn, rtype)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &str) -> Value {
        json!({"id": format!("/dns/zones/{name}"), "name": name})
    }

    #[test]
    fn the_longest_suffix_wins_at_a_label_boundary() {
        let (a, b, c) = (zone("example.com"), zone("dev.example.com"), zone("v.example.com"));
        let zones = [&a, &b, &c];
        assert_eq!(
            choose_zone(&zones, "ns/r", "api.x.dev.example.com", "aws-route53", None).unwrap(),
            "dev.example.com"
        );
        assert_eq!(
            choose_zone(&zones, "ns/r", "API.x.DEV.example.com.", "aws-route53", None).unwrap(),
            "dev.example.com"
        );
        // `adev.example.com` is not inside `dev.example.com`.
        assert_eq!(choose_zone(&zones, "ns/r", "api.adev.example.com", "aws-route53", None).unwrap(), "example.com");
        let e = choose_zone(&zones, "ns/r", "api.other.org", "aws-route53", None).unwrap_err();
        assert_eq!(e.to_string(), "no DNS zone for api.other.org (DNSRecord ns/r): the listed zones are example.com, dev.example.com, v.example.com; create the zone or declare it in the world file's dns: section");
        let e = choose_zone(&[], "ns/r", "api.other.org", "aws-route53", None).unwrap_err();
        assert!(e.to_string().contains(": no zone is listed; create the zone"), "{e}");
    }

    #[test]
    fn spec_zone_names_the_zone_in_the_providers_form_else_by_its_dns_name() {
        let rg1 = json!({"id": "/dns/zones/example.com", "name": "example.com", "azure": {"resourceGroup": "dns-rg"}});
        let rg2 = json!({"id": "/dns/zones/example.com", "name": "example.com", "azure": {"resourceGroup": "other-rg", "subscription": "s"}});
        let gcp = json!({"id": "/dns/zones/example.org", "name": "example.org", "gcp": {"managedZone": "example-org", "project": "p"}});
        let zones = [&rg1, &rg2, &gcp];
        let fqdn = "api.a.example.com";
        assert_eq!(choose_zone(&zones, "ns/r", fqdn, "azure-dns", Some("DNS-RG/example.com")).unwrap(), "example.com");
        let e = choose_zone(&zones, "ns/r", fqdn, "azure-dns", None).unwrap_err();
        assert_eq!(e.to_string(), "api.a.example.com (DNSRecord ns/r): two listed zones are named example.com, example.com (resource group dns-rg) and example.com (resource group other-rg, subscription s); name one in the Seed's DNS config (spec.zone of the DNSRecord: azure-dns {resourceGroup}/{zoneName}, google-clouddns the managed zone's name)");
        // By its DNS name, both match: still ambiguous.
        assert!(matches!(
            choose_zone(&zones, "ns/r", fqdn, "azure-dns", Some("example.com")),
            Err(DnsError::AmbiguousZone { .. })
        ));
        assert_eq!(
            choose_zone(&zones, "ns/r", "api.example.org", "google-clouddns", Some("example-org")).unwrap(),
            "example.org"
        );
        // A zone named in no form.
        let e = choose_zone(&zones, "ns/r", "api.example.org", "google-clouddns", Some("nope")).unwrap_err();
        assert!(e.to_string().starts_with("no DNS zone \"nope\" (spec.zone of DNSRecord ns/r, google-clouddns names it by its managed zone's name): the listed zones are example.com (resource group dns-rg), "), "{e}");
        // The FQDN must lie in the zone spec.zone names.
        let e = choose_zone(&zones, "ns/r", "api.example.net", "google-clouddns", Some("example-org")).unwrap_err();
        assert_eq!(e.to_string(), "api.example.net (DNSRecord ns/r) is not in zone example.org (managed zone example-org, project p) (spec.zone): name the zone that holds it in the Seed's DNS config");
    }

    #[test]
    fn the_address_is_the_annotation_else_the_seeds_ingress() {
        let seed = json!({"name": "s", "ingress": {"hostname": "lb.example.net"}});
        assert_eq!(address(Some("203.0.113.10"), Some(&seed)).as_deref(), Some("203.0.113.10"));
        assert_eq!(address(None, Some(&seed)).as_deref(), Some("lb.example.net"));
        assert_eq!(
            address(None, Some(&json!({"name": "s", "ingress": {"ip": " 2001:db8::1 "}}))).as_deref(),
            Some("2001:db8::1")
        );
        assert_eq!(address(None, Some(&json!({"name": "s", "ingress": {"ip": ""}}))), None);
        assert_eq!(address(None, Some(&json!({"name": "s"}))), None);
        assert_eq!(address(None, None), None);
    }

    #[test]
    fn record_set_ids_parse_back() {
        assert_eq!(
            parse_record_set_id(&record_set_id("example.com", "api.example.com", "A")),
            Some(("example.com", "api.example.com", "A"))
        );
        assert_eq!(parse_record_set_id("/seeds/s/namespaces/n/dnsrecords/r"), None);
    }
}
