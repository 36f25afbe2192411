//! Azure DNS behind the engine's neutral DNS ids: [`AzureDns`] implements [`CloudRead`] and
//! [`CloudWrite`] over the ids every DNS backend shares (the simulated DNS, Cloud DNS), translating
//! each call to Azure DNS's REST API (api-version [`crate::DNS_API_VERSION`]) through an
//! [`ArmClient`] — its credential, its request rules (https or loopback, no redirects, capped and
//! redacted answers) and its error classes.
//!
//! # Ids and calls
//! | neutral call | ARM |
//! |---|---|
//! | `list("/dns", "zones")` | `GET /subscriptions/{s}/providers/Microsoft.Network/dnszones` (every resource group, following `nextLink`) |
//! | `get("/dns/zones/{zone}")` | the zone from that list (`None` when the subscription has none of that name) |
//! | `list("/dns/zones/{zone}", "records")` | `GET {zone id}/recordsets`: its A, AAAA, CNAME and TXT record sets (SOA, NS and the other types are not the domains plan's) |
//! | `get("/dns/zones/{zone}/records/{fqdn}/{TYPE}")` | `GET {zone id}/{TYPE}/{relative name or @}` |
//! | `create(id, body)` | `PUT` with `If-None-Match: *` (412 → `AlreadyExists`) |
//! | `update(id, body, IfMatch(etag))` | `PUT` with `If-Match: <etag>` (412 → `PreconditionFailed`) |
//! | `remove(id, IfMatch(etag))` | `DELETE` with `If-Match: <etag>` |
//!
//! A zone object is `{"id": "/dns/zones/{zone}", "name": "{zone}", "azure": {"subscription",
//! "resourceGroup"}}`, the resource group parsed from the zone's ARM id. A record set is `{"name":
//! "{fqdn}", "type": "A", "ttl": 120, "values": [...], "etag", "zone"}`: `ttl` from `properties.TTL`,
//! `values` from `ARecords[].ipv4Address`, `AAAARecords[].ipv6Address`, `CNAMERecord.cname` or
//! `TXTRecords[].value` (a TXT record's strings joined; written back in strings of at most 255
//! bytes, the longest a TXT string holds). A write sends `properties.TTL` and the records only.
//!
//! Which resource group holds a zone comes from the zone list, kept per [`AzureDns`] and listed
//! again when a zone is not in it. A zone that is not in the subscription is an error naming the zone
//! and the subscription; two zones of one DNS name in two resource groups of the subscription are
//! refused (a neutral id names the zone by its DNS name only), naming both.
//!
//! Throttling (429 with `Retry-After`), server errors and timeouts are the ARM client's transient
//! errors, retried by the engine's retry policy; every error leaves redacted, as the ARM client's.

use crate::ArmClient;
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex, PoisonError};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};
use trellis_planner::ids::ArmId;

/// The REST type of Azure DNS zones.
pub const ZONES_TYPE: &str = "Microsoft.Network/dnsZones";
/// The REST type of a zone's record sets of every type (the list `{zone}/recordsets`).
pub const RECORDSETS_TYPE: &str = "Microsoft.Network/dnsZones/recordsets";
/// The largest TTL Azure DNS takes (seconds; `properties.TTL` is a 32-bit signed integer).
pub const MAX_TTL: u64 = 2_147_483_647;
/// The longest string of a TXT record (RFC 1035 character-string); longer values are split.
const TXT_CHUNK: usize = 255;

/// The record types the neutral ids name, in Azure's spelling of their record arrays.
const TYPES: [&str; 4] = ["A", "AAAA", "CNAME", "TXT"];

/// Whether `id` is a neutral DNS id served by [`AzureDns`]: `/dns`, a zone or a record set
/// (`/dns/zones/…`). A `DNSRecord` object (`/seeds/…`) is not.
pub fn claims(id: &str) -> bool {
    let id = id.trim();
    id.get(..4).is_some_and(|head| head.eq_ignore_ascii_case("/dns"))
        && matches!(id.as_bytes().get(4), None | Some(b'/'))
}

/// A parsed neutral DNS id.
#[derive(Clone, Debug, PartialEq, Eq)]
enum DnsPath {
    /// `/dns`: the zones' container.
    Root,
    /// `/dns/zones/{zone}`.
    Zone(String),
    /// `/dns/zones/{zone}/records/{fqdn}/{TYPE}`.
    Record { zone: String, fqdn: String, rtype: &'static str },
}

/// A DNS name as the neutral ids hold it: lowercase, no trailing dot.
fn normal_name(name: &str) -> String {
    let name = name.trim();
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

fn bad_request(target: &str, message: String) -> CloudError {
    CloudError::Rejected { target: target.to_string(), status: 400, code: "BadRequest".to_string(), message }
}

fn parse(id: &str) -> Result<DnsPath, CloudError> {
    let trimmed = id.trim();
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    let segs: Vec<&str> = trimmed.split('/').collect();
    let word = |s: &str, w: &str| s.eq_ignore_ascii_case(w);
    let path = match segs.as_slice() {
        ["", d] if word(d, "dns") => Some(DnsPath::Root),
        ["", d, z, zone] if word(d, "dns") && word(z, "zones") && !zone.is_empty() => {
            Some(DnsPath::Zone(normal_name(zone)))
        }
        ["", d, z, zone, r, fqdn, rtype]
            if word(d, "dns") && word(z, "zones") && word(r, "records") && !zone.is_empty() && !fqdn.is_empty() =>
        {
            let upper = rtype.to_ascii_uppercase();
            let rtype = TYPES
                .into_iter()
                .find(|t| *t == upper)
                .ok_or_else(|| bad_request(id, format!("record type '{rtype}' is not one of A, AAAA, CNAME, TXT")))?;
            Some(DnsPath::Record { zone: normal_name(zone), fqdn: normal_name(fqdn), rtype })
        }
        _ => None,
    };
    path.ok_or_else(|| {
        bad_request(
            id,
            format!("'{id}' is not a DNS id of Azure DNS: expected /dns, /dns/zones/{{zone}} or /dns/zones/{{zone}}/records/{{fqdn}}/{{TYPE}}"),
        )
    })
}

/// The record set's name relative to its zone (`@` at the apex), or `None` when `fqdn` is not in
/// `zone`.
pub fn relative_name(fqdn: &str, zone: &str) -> Option<String> {
    if fqdn == zone {
        return Some("@".to_string());
    }
    fqdn.strip_suffix(zone).and_then(|head| head.strip_suffix('.')).filter(|h| !h.is_empty()).map(str::to_string)
}

/// A zone as the zone list found it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct AzureZone {
    /// Its DNS name, lowercase.
    name: String,
    /// Its ARM id, as ARM answered it.
    id: String,
    resource_group: String,
}

impl AzureZone {
    fn of(doc: &Value) -> Option<AzureZone> {
        let id = doc.get("id")?.as_str()?;
        let parsed = ArmId::parse(id).ok()?;
        let resource_group = parsed.resource_group()?.to_string();
        let name = doc
            .get("name")
            .and_then(Value::as_str)
            .map(normal_name)
            .or_else(|| id.rsplit('/').next().map(normal_name))?;
        Some(AzureZone { name, id: id.to_string(), resource_group })
    }

    fn neutral(&self, subscription: &str) -> Value {
        json!({
            "id": format!("/dns/zones/{}", self.name),
            "name": self.name,
            "azure": { "subscription": subscription, "resourceGroup": self.resource_group },
        })
    }
}

/// Azure DNS in one subscription, over neutral DNS ids (see the module docs).
pub struct AzureDns {
    arm: Arc<ArmClient>,
    subscription: String,
    /// The zone list last read (`None`: not read yet).
    zones: Mutex<Option<Vec<AzureZone>>>,
}

impl AzureDns {
    /// Azure DNS in `subscription` (its GUID) through `arm`.
    pub fn new(arm: Arc<ArmClient>, subscription: impl Into<String>) -> AzureDns {
        AzureDns { arm, subscription: subscription.into(), zones: Mutex::new(None) }
    }

    pub fn subscription(&self) -> &str {
        &self.subscription
    }

    /// Lists the subscription's zones (every resource group) and keeps the list.
    async fn list_zones(&self) -> Result<Vec<AzureZone>, CloudError> {
        let parent = format!("/subscriptions/{}", self.subscription);
        let docs = self.arm.list(&parent, ZONES_TYPE).await?;
        let mut zones = Vec::with_capacity(docs.len());
        for doc in &docs {
            let zone = AzureZone::of(doc).ok_or_else(|| CloudError::Server {
                target: format!("{parent}/providers/{ZONES_TYPE}"),
                status: 502,
                message: format!(
                    "ARM listed a DNS zone without a usable id and name ({}); check that the endpoint is ARM itself",
                    crate::redact(&doc.get("id").map(Value::to_string).unwrap_or_default(), &[])
                ),
            })?;
            zones.push(zone);
        }
        zones.sort_by(|a, b| (&a.name, a.id.to_ascii_lowercase()).cmp(&(&b.name, b.id.to_ascii_lowercase())));
        *self.zones.lock().unwrap_or_else(PoisonError::into_inner) = Some(zones.clone());
        Ok(zones)
    }

    /// The zones named `name` in the list kept, listing again when there is none (or no list yet).
    async fn zones_named(&self, name: &str) -> Result<Vec<AzureZone>, CloudError> {
        let cached: Option<Vec<AzureZone>> = self
            .zones
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|zones| zones.iter().filter(|z| z.name == name).cloned().collect());
        match cached {
            Some(found) if !found.is_empty() => Ok(found),
            _ => Ok(self.list_zones().await?.into_iter().filter(|z| z.name == name).collect()),
        }
    }

    /// The one zone named `name` that a record set id addresses: an error naming the zone and the
    /// subscription when there is none, naming both when two resource groups hold one.
    async fn zone(&self, target: &str, name: &str) -> Result<AzureZone, CloudError> {
        let mut found = self.zones_named(name).await?;
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(CloudError::Rejected {
                target: target.to_string(),
                status: 404,
                code: "ParentResourceNotFound".to_string(),
                message: format!(
                    "DNS zone {name} is not in subscription {} (no Microsoft.Network/dnsZones of that name in any of its resource groups): create the zone there, or pass the subscription that holds it with --subscription",
                    self.subscription
                ),
            }),
            _ => Err(CloudError::Rejected {
                target: target.to_string(),
                status: 409,
                code: "AmbiguousZone".to_string(),
                message: format!(
                    "DNS zone {name} is in {} resource groups of subscription {} ({}): trellis addresses a zone by its DNS name; keep one of them",
                    found.len(),
                    self.subscription,
                    found.iter().map(|z| z.resource_group.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }),
        }
    }

    /// The ARM id of a record set, with its zone.
    async fn record_set(&self, id: &str) -> Result<(String, String, String, &'static str), CloudError> {
        let DnsPath::Record { zone, fqdn, rtype } = parse(id)? else {
            return Err(bad_request(
                id,
                format!("'{id}' is not a record set id: expected /dns/zones/{{zone}}/records/{{fqdn}}/{{TYPE}}"),
            ));
        };
        let Some(relative) = relative_name(&fqdn, &zone) else {
            return Err(bad_request(id, format!("record set name {fqdn} is not inside zone {zone}")));
        };
        let azure = self.zone(id, &zone).await?;
        Ok((format!("{}/{rtype}/{relative}", azure.id), zone, fqdn, rtype))
    }
}

/// An ARM record set (`GET …/dnsZones/{zone}/{TYPE}/{name}`) as a neutral record set of `zone`.
pub fn neutral_record_set(doc: &Value, zone: &str) -> Option<Value> {
    let rtype = doc.get("type")?.as_str()?.rsplit('/').next()?.to_ascii_uppercase();
    let rtype = TYPES.into_iter().find(|t| *t == rtype)?;
    let name = doc.get("name")?.as_str()?;
    let fqdn = if name == "@" { zone.to_string() } else { format!("{}.{zone}", normal_name(name)) };
    let props = doc.get("properties").cloned().unwrap_or(Value::Null);
    let ttl = props.get("TTL").and_then(Value::as_u64).unwrap_or(0);
    let strings = |key: &str, field: &str| -> Vec<Value> {
        props
            .get(key)
            .and_then(Value::as_array)
            .map(|records| {
                records.iter().filter_map(|r| r.get(field).and_then(Value::as_str)).map(|v| json!(v)).collect()
            })
            .unwrap_or_default()
    };
    let values: Vec<Value> = match rtype {
        "A" => strings("ARecords", "ipv4Address"),
        "AAAA" => strings("AAAARecords", "ipv6Address"),
        "CNAME" => {
            props.pointer("/CNAMERecord/cname").and_then(Value::as_str).map(|c| vec![json!(c)]).unwrap_or_default()
        }
        _ => props
            .get("TXTRecords")
            .and_then(Value::as_array)
            .map(|records| {
                records
                    .iter()
                    .map(|r| {
                        let parts = r.get("value").and_then(Value::as_array).cloned().unwrap_or_default();
                        json!(parts.iter().filter_map(Value::as_str).collect::<String>())
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    let mut out = json!({ "name": fqdn, "type": rtype, "ttl": ttl, "values": values, "zone": zone });
    if let Some(etag) = doc.get("etag").and_then(Value::as_str) {
        out["etag"] = json!(etag);
    }
    Some(out)
}

/// `s` in pieces of at most [`TXT_CHUNK`] bytes, cut at character boundaries.
fn txt_chunks(s: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < s.len() {
        let mut end = (start + TXT_CHUNK).min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        out.push(json!(&s[start..end]));
        start = end;
    }
    if out.is_empty() {
        out.push(json!(""));
    }
    out
}

/// A neutral record set body (`{name, type, ttl, values}`) as the ARM body of `fqdn`/`rtype`: every
/// problem with the body in one error naming the id and the field.
pub fn arm_record_set(id: &str, fqdn: &str, rtype: &str, body: &Value) -> Result<Value, CloudError> {
    let field = |f: &str, why: String| bad_request(id, format!("record set body: `{f}` {why}"));
    if let Some(name) = body.get("name") {
        match name.as_str().map(normal_name) {
            Some(n) if n == fqdn => {}
            _ => return Err(field("name", format!("is {name}, but the id names {fqdn}"))),
        }
    }
    if let Some(t) = body.get("type") {
        if t.as_str().map(str::to_ascii_uppercase).as_deref() != Some(rtype) {
            return Err(field("type", format!("is {t}, but the id names {rtype}")));
        }
    }
    let ttl = match body.get("ttl") {
        Some(t) => t
            .as_u64()
            .filter(|t| *t <= MAX_TTL)
            .ok_or_else(|| field("ttl", format!("is {t}: expected seconds, 0..={MAX_TTL}")))?,
        None => return Err(field("ttl", "is missing: expected seconds".to_string())),
    };
    let values: Vec<&str> = match body.get("values").and_then(Value::as_array) {
        Some(values) => values
            .iter()
            .map(|v| v.as_str().ok_or_else(|| field("values", format!("holds {v}: expected strings"))))
            .collect::<Result<_, _>>()?,
        None => return Err(field("values", "is missing: expected a list of strings".to_string())),
    };
    let mut props = Map::new();
    props.insert("TTL".to_string(), json!(ttl));
    match rtype {
        "A" => {
            props.insert("ARecords".into(), values.iter().map(|v| json!({ "ipv4Address": v })).collect());
        }
        "AAAA" => {
            props.insert("AAAARecords".into(), values.iter().map(|v| json!({ "ipv6Address": v })).collect());
        }
        "CNAME" => {
            let [cname] = values.as_slice() else {
                return Err(field(
                    "values",
                    format!("holds {} values: a CNAME record set holds exactly one host name", values.len()),
                ));
            };
            props.insert("CNAMERecord".into(), json!({ "cname": cname }));
        }
        _ => {
            props.insert("TXTRecords".into(), values.iter().map(|v| json!({ "value": txt_chunks(v) })).collect());
        }
    }
    Ok(json!({ "properties": props }))
}

/// ARM's answer to a write as the neutral record set; a write whose answer is not a record set is
/// the endpoint's fault.
fn answered(arm_id: &str, doc: &Value, zone: &str) -> Result<Value, CloudError> {
    neutral_record_set(doc, zone).ok_or_else(|| CloudError::Server {
        target: arm_id.to_string(),
        status: 502,
        message: "ARM answered the write with a body that is not a DNS record set".to_string(),
    })
}

#[async_trait]
impl CloudRead for AzureDns {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        match parse(id)? {
            DnsPath::Root => Err(bad_request(id, "/dns is the zones' container: list its zones".to_string())),
            DnsPath::Zone(name) => {
                let found = self.zones_named(&name).await?;
                match found.as_slice() {
                    [] => Ok(None),
                    [zone] => Ok(Some(zone.neutral(&self.subscription))),
                    _ => self.zone(id, &name).await.map(|z| Some(z.neutral(&self.subscription))),
                }
            }
            DnsPath::Record { .. } => {
                let (arm_id, zone, _, _) = self.record_set(id).await?;
                match self.arm.get(&arm_id).await? {
                    Some(doc) => answered(&arm_id, &doc, &zone).map(Some),
                    None => Ok(None),
                }
            }
        }
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        let target = format!("{parent}/{rtype}");
        match (parse(parent)?, rtype) {
            (DnsPath::Root, "zones") => {
                Ok(self.list_zones().await?.iter().map(|z| z.neutral(&self.subscription)).collect())
            }
            (DnsPath::Zone(name), "records") => {
                let zone = self.zone(&target, &name).await?;
                let docs = self.arm.list(&zone.id, RECORDSETS_TYPE).await?;
                Ok(docs.iter().filter_map(|d| neutral_record_set(d, &name)).collect())
            }
            _ => Err(bad_request(
                &target,
                format!("cannot list '{rtype}' under '{parent}': Azure DNS lists zones of /dns and records of /dns/zones/{{zone}}"),
            )),
        }
    }
}

#[async_trait]
impl CloudWrite for AzureDns {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let (arm_id, zone, fqdn, rtype) = self.record_set(id).await?;
        let body = arm_record_set(id, &fqdn, rtype, &body)?;
        let doc = self.arm.create(&arm_id, body).await?;
        answered(&arm_id, &doc, &zone)
    }

    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        let (arm_id, zone, fqdn, rtype) = self.record_set(id).await?;
        let body = arm_record_set(id, &fqdn, rtype, &body)?;
        let doc = self.arm.update(&arm_id, body, pre).await?;
        answered(&arm_id, &doc, &zone)
    }

    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        let (arm_id, _, _, _) = self.record_set(id).await?;
        self.arm.remove(&arm_id, pre).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_the_dns_ids_only() {
        for id in ["/dns", "/dns/zones/example.com", "/DNS/zones/example.com/records/api.example.com/A"] {
            assert!(claims(id), "{id}");
        }
        for id in ["/dnsx", "/seeds/s/namespaces/n/dnsrecords/r", "/subscriptions/s", "dns", ""] {
            assert!(!claims(id), "{id}");
        }
    }

    #[test]
    fn ids_parse_to_zone_and_relative_names() {
        assert_eq!(
            parse("/dns/zones/Example.COM./records/API.example.com/aaaa").unwrap(),
            DnsPath::Record { zone: "example.com".into(), fqdn: "api.example.com".into(), rtype: "AAAA" }
        );
        assert!(matches!(parse("/dns/zones/e.com/records/a.e.com/MX"), Err(CloudError::Rejected { status: 400, .. })));
        assert!(parse("/dns/zones//records/a/A").is_err());
        assert_eq!(relative_name("example.com", "example.com").as_deref(), Some("@"));
        assert_eq!(relative_name("api.dev.example.com", "example.com").as_deref(), Some("api.dev"));
        assert_eq!(relative_name("badexample.com", "example.com"), None);
        assert_eq!(relative_name("example.org", "example.com"), None);
    }

    #[test]
    fn record_sets_translate_both_ways() {
        let id = "/dns/zones/example.com/records/api.example.com/A";
        let body =
            json!({"name": "api.example.com", "type": "A", "ttl": 120, "values": ["203.0.113.10", "203.0.113.11"]});
        let arm = arm_record_set(id, "api.example.com", "A", &body).unwrap();
        assert_eq!(
            arm,
            json!({"properties": {"TTL": 120, "ARecords": [{"ipv4Address": "203.0.113.10"}, {"ipv4Address": "203.0.113.11"}]}})
        );
        let doc = json!({"id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/dnszones/example.com/A/api",
            "name": "api", "type": "Microsoft.Network/dnszones/A", "etag": "e1", "properties": arm["properties"]});
        assert_eq!(
            neutral_record_set(&doc, "example.com").unwrap(),
            json!({"name": "api.example.com", "type": "A", "ttl": 120, "values": ["203.0.113.10", "203.0.113.11"],
                "etag": "e1", "zone": "example.com"})
        );
        let apex = json!({"name": "@", "type": "Microsoft.Network/dnszones/TXT", "properties": {"TTL": 60,
            "TXTRecords": [{"value": ["a", "b"]}, {"value": ["c"]}]}});
        assert_eq!(neutral_record_set(&apex, "example.com").unwrap()["values"], json!(["ab", "c"]));
        assert_eq!(neutral_record_set(&apex, "example.com").unwrap()["name"], json!("example.com"));
        let soa = json!({"name": "@", "type": "Microsoft.Network/dnszones/SOA", "properties": {}});
        assert_eq!(neutral_record_set(&soa, "example.com"), None);
    }

    #[test]
    fn long_txt_values_are_split_into_strings_of_255_bytes() {
        let long = "é".repeat(200); // 400 bytes
        let arm = arm_record_set("x", "t.example.com", "TXT", &json!({"ttl": 1, "values": [long]})).unwrap();
        let parts = arm.pointer("/properties/TXTRecords/0/value").unwrap().as_array().unwrap();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.as_str().unwrap().len() <= 255));
        let joined: String = parts.iter().map(|p| p.as_str().unwrap()).collect();
        assert_eq!(joined, long);
    }

    #[test]
    fn bad_bodies_are_refused_naming_the_field() {
        let refuse = |rtype: &str, body: Value| match arm_record_set("ID", "c.example.com", rtype, &body) {
            Err(CloudError::Rejected { status: 400, message, target, .. }) => {
                assert_eq!(target, "ID");
                message
            }
            other => panic!("{other:?}"),
        };
        assert!(refuse("CNAME", json!({"ttl": 1, "values": ["a.example.org", "b.example.org"]})).contains("`values`"));
        assert!(refuse("A", json!({"ttl": 2147483648u64, "values": []})).contains("`ttl`"));
        assert!(refuse("A", json!({"values": []})).contains("`ttl` is missing"));
        assert!(refuse("A", json!({"name": "other.example.com", "ttl": 1, "values": []})).contains("`name`"));
        assert!(refuse("A", json!({"type": "AAAA", "ttl": 1, "values": []})).contains("`type`"));
        assert!(refuse("A", json!({"ttl": 1, "values": [1]})).contains("expected strings"));
    }
}
