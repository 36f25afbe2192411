//! The DNS store and its rules: zones, their record sets, and the seeds' `DNSRecord` objects.
//!
//! Ids are [`trellis_planner::ids::DnsIds`]'s, compared in lowercase (DNS names without a trailing
//! dot):
//! - `/seeds/{seed}/namespaces/{namespace}/dnsrecords/{name}`: a `DNSRecord` object;
//! - `/dns/zones/{zone}/records/{fqdn}/{type}`: a record set of a zone (what the DNS provider
//!   extension writes for a `DNSRecord`);
//! - `/dns/zones/{zone}`: a zone (declared by the world file).
//!
//! Every rule checks everything first and changes the store only when the call succeeds, so a refused
//! call changes nothing.

use crate::core::ApiError;
use crate::core::Origin;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;
use trellis_planner::ids::{DnsIds, IdScheme};

/// The `apiVersion` and `kind` of the objects trellis writes.
pub const DNSRECORD_API_VERSION: &str = "extensions.gardener.cloud/v1alpha1";
pub const DNSRECORD_KIND: &str = "DNSRecord";
/// The TTL of a `DNSRecord` that sets none (upstream's default, seconds): the TTL of the record set
/// the DNS provider extension writes for it.
pub const DEFAULT_TTL: u64 = 120;

/// The record types the simulated zones hold (upstream's `DNSRecordType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordType {
    A,
    Aaaa,
    Cname,
    Txt,
}

impl RecordType {
    pub const ALL: [RecordType; 4] = [RecordType::A, RecordType::Aaaa, RecordType::Cname, RecordType::Txt];

    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::A => "A",
            RecordType::Aaaa => "AAAA",
            RecordType::Cname => "CNAME",
            RecordType::Txt => "TXT",
        }
    }

    /// Upstream's names, exactly (`A`, `AAAA`, `CNAME`, `TXT`).
    pub fn parse(s: &str) -> Option<RecordType> {
        RecordType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The names of the record types, for messages.
fn record_types() -> String {
    RecordType::ALL.iter().map(|t| format!("{t:?}", t = t.as_str())).collect::<Vec<_>>().join(", ")
}

/// A parsed id of the DNS simulator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DnsId {
    /// `/seeds/{seed}/namespaces/{namespace}/dnsrecords/{name}`.
    Object { seed: String, namespace: String, name: String },
    /// `/dns/zones/{zone}/records/{fqdn}/{type}`.
    Record { zone: String, fqdn: String, rtype: RecordType },
    /// `/dns/zones/{zone}`.
    Zone { zone: String },
    /// `/seeds/{seed}`: where a seed's ingress answers (declared by the world file's `seeds:`).
    Seed { seed: String },
}

impl FromStr for DnsId {
    type Err = String;

    fn from_str(id: &str) -> Result<DnsId, String> {
        let trimmed = id.trim();
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        let segments: Vec<&str> = trimmed.split('/').collect();
        let bad = || {
            format!(
                "{id:?} is not a DNS id: expected /seeds/{{seed}}/namespaces/{{namespace}}/dnsrecords/{{name}}, /dns/zones/{{zone}}, /dns/zones/{{zone}}/records/{{name}}/{{type}} or /seeds/{{seed}}"
            )
        };
        if segments.iter().skip(1).any(|s| s.is_empty()) {
            return Err(bad());
        }
        match segments.as_slice() {
            ["", s, seed] if s.eq_ignore_ascii_case("seeds") => Ok(DnsId::Seed { seed: seed.to_string() }),
            ["", s, seed, n, namespace, d, name]
                if s.eq_ignore_ascii_case("seeds")
                    && n.eq_ignore_ascii_case("namespaces")
                    && d.eq_ignore_ascii_case("dnsrecords") =>
            {
                Ok(DnsId::Object { seed: seed.to_string(), namespace: namespace.to_string(), name: name.to_string() })
            }
            ["", d, z, zone] if d.eq_ignore_ascii_case("dns") && z.eq_ignore_ascii_case("zones") => {
                Ok(DnsId::Zone { zone: zone.to_string() })
            }
            ["", d, z, zone, r, fqdn, rtype]
                if d.eq_ignore_ascii_case("dns")
                    && z.eq_ignore_ascii_case("zones")
                    && r.eq_ignore_ascii_case("records") =>
            {
                let rtype = RecordType::parse(&rtype.to_ascii_uppercase())
                    .ok_or_else(|| format!("{id:?}: record type {rtype:?} is not one of {}", record_types()))?;
                Ok(DnsId::Record { zone: zone.to_string(), fqdn: fqdn.to_string(), rtype })
            }
            _ => Err(bad()),
        }
    }
}

/// A DNS name in its stored form: lowercase, without a trailing dot.
pub fn normal_name(name: &str) -> String {
    let name = name.trim();
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// Whether `name` is `zone` or inside it (at a label boundary); both in [`normal_name`] form.
pub fn within(name: &str, zone: &str) -> bool {
    name == zone || name.strip_suffix(zone).is_some_and(|head| head.ends_with('.'))
}

/// Whether `name` is a DNS name a zone can hold: labels of letters, digits, `-` and `_` (a leading
/// `*` label for a wildcard), each 1–63 characters, 253 in all.
pub fn valid_name(name: &str) -> bool {
    let name = normal_name(name);
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    name.split('.').enumerate().all(|(i, label)| {
        (i == 0 && label == "*")
            || (!label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    })
}

/// The id of the record `fqdn`/`rtype` in zone `zone`.
pub fn record_id(zone: &str, fqdn: &str, rtype: RecordType) -> String {
    format!("/dns/zones/{zone}/records/{fqdn}/{rtype}")
}

/// A zone record's id from its key (the type in upstream's spelling: `…/api.example.com/A`).
pub(crate) fn shown_record_id(record_key: &str) -> String {
    match record_key.parse::<DnsId>() {
        Ok(DnsId::Record { zone, fqdn, rtype }) => record_id(&zone, &fqdn, rtype),
        _ => record_key.to_string(),
    }
}

/// The store's key of the record set `fqdn`/`rtype` of zone `zone` (names in any spelling).
pub(crate) fn record_key(zone: &str, fqdn: &str, rtype: RecordType) -> String {
    key(&record_id(&normal_name(zone), &normal_name(fqdn), rtype))
}

/// The largest TTL a record set may have (seconds): Azure DNS's and Cloud DNS's bound, 2^31 - 1.
pub const MAX_TTL: u64 = 2_147_483_647;

/// The resource group of a zone that declares no `azure:` block.
pub const DEFAULT_AZURE_RESOURCE_GROUP: &str = "dns";

/// The managed-zone name of a zone that declares no `gcp:` block: its DNS name with `.` replaced by
/// `-` (`example.com` → `example-com`).
pub fn default_managed_zone(zone: &str) -> String {
    normal_name(zone).replace('.', "-")
}

/// A record set as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// `{"name", "type", "ttl", "values"}`: the record set's body.
    pub value: Value,
    pub origin: Origin,
    /// The version a conditional write names (`Precondition::IfMatch`); a new one on every write.
    #[serde(default)]
    pub etag: String,
}

impl Record {
    /// The record set as a GET answers it: its body, `etag` and `zone`.
    pub fn render(&self, zone: &str) -> Value {
        let mut out = self.value.clone();
        if let Some(m) = out.as_object_mut() {
            m.insert("etag".into(), json!(self.etag));
            m.insert("zone".into(), json!(zone));
        }
        out
    }
}

/// An etag of the simulated DNS (the shape of Azure DNS's): the clock's tick.
pub(crate) fn etag(tick: u64) -> String {
    format!("00000000-0000-0000-0000-{tick:012x}")
}

/// Where a zone lives in Azure: `dns.zones[].azure` of the world file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AzureZone {
    /// The subscription (a GUID); absent: the zone is served under every subscription.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<String>,
    pub resource_group: String,
}

/// Where a zone lives in Cloud DNS: `dns.zones[].gcp` of the world file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GcpZone {
    /// The project; absent: the zone is served under every project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    pub managed_zone: String,
}

/// A zone: its DNS name ([`normal_name`] form) and where it lives in each cloud, as declared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Zone {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure: Option<AzureZone>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcp: Option<GcpZone>,
}

impl Zone {
    /// Its `azure:` block, or the default one ([`DEFAULT_AZURE_RESOURCE_GROUP`]).
    pub fn azure(&self) -> AzureZone {
        self.azure.clone().unwrap_or_else(|| AzureZone {
            subscription: None,
            resource_group: DEFAULT_AZURE_RESOURCE_GROUP.to_string(),
        })
    }

    /// Its `gcp:` block, or the default one ([`default_managed_zone`]).
    pub fn gcp(&self) -> GcpZone {
        self.gcp.clone().unwrap_or_else(|| GcpZone { project: None, managed_zone: default_managed_zone(&self.name) })
    }

    /// The zone object a GET or LIST answers: `{"id", "name", "azure", "gcp"}`, both blocks always.
    pub fn object(&self) -> Value {
        json!({
            "id": format!("/dns/zones/{}", self.name),
            "name": self.name,
            "azure": self.azure(),
            "gcp": self.gcp(),
        })
    }
}

/// A key of the store's tree: which map, and the entry's key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Dirty {
    Zone(String),
    Record(String),
    Object(String),
    Seed(String),
}

/// Everything the simulated DNS holds. Maps are keyed by [`DnsIds::key`] of the id (zones by their
/// name).
#[derive(Default)]
pub(crate) struct DnsStore {
    pub zones: BTreeMap<String, Zone>,
    pub records: BTreeMap<String, Record>,
    pub objects: BTreeMap<String, Value>,
    /// The seeds of the world file's `seeds:` section, by name.
    pub seeds: BTreeMap<String, super::seeds::WorldSeed>,
    /// Ticks on every write; an object's `resourceVersion` and a record set's etag are the clock
    /// of its last write.
    pub clock: u64,
    /// Changed since the last persist.
    pub dirty: BTreeSet<Dirty>,
    pub meta_dirty: bool,
}

pub(crate) fn key(id: &str) -> String {
    DnsIds.key(id)
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "Invalid", message)
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "BadRequest", message)
}

fn not_allowed(id: &str, what: &str) -> ApiError {
    ApiError::new(405, "MethodNotAllowed", format!("{id} is {what}: it cannot be written through the API"))
}

pub(crate) fn parse_id(id: &str) -> Result<DnsId, ApiError> {
    id.parse::<DnsId>().map_err(invalid)
}

/// What a record-set write asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SetWrite<'a> {
    /// Only if the set does not exist (`If-None-Match: *`).
    Create,
    /// Replace the set; with `Some(etag)` only at that version (`If-Match`; `*`: any version, the set
    /// must exist), without one an absent set is created (a PUT).
    Update(Option<&'a str>),
}

impl DnsStore {
    /// GET: an object, a record set or a zone as a GET answers it; `None` when absent.
    pub fn get(&self, id: &DnsId, raw: &str) -> Option<Value> {
        match id {
            DnsId::Object { .. } => self.objects.get(&key(raw)).cloned(),
            DnsId::Record { zone, fqdn, rtype } => {
                let zone = normal_name(zone);
                self.records.get(&record_key(&zone, fqdn, *rtype)).map(|r| r.render(&zone))
            }
            DnsId::Zone { zone } => self.zones.get(&normal_name(zone)).map(Zone::object),
            DnsId::Seed { seed } => self.seeds.get(&seed.to_ascii_lowercase()).map(super::seeds::WorldSeed::object),
        }
    }

    /// The children of `parent` of type `rtype`, sorted by id: a namespace's `dnsrecords`, a zone's
    /// `records`, `/dns`'s `zones`.
    pub fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, ApiError> {
        let parent_key = key(parent);
        match rtype {
            "dnsrecords" if DnsIds.parent(&format!("{parent_key}/dnsrecords/x")).as_deref() == Some(parent_key.as_str()) => {
                let prefix = format!("{parent_key}/dnsrecords/");
                Ok(self.objects.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)).map(|(_, v)| v.clone()).collect())
            }
            "records" => match parent.parse::<DnsId>() {
                Ok(DnsId::Zone { zone }) => {
                    let zone = normal_name(&zone);
                    if !self.zones.contains_key(&zone) {
                        return Err(zone_not_found(&zone));
                    }
                    let prefix = format!("/dns/zones/{zone}/records/");
                    Ok(self
                        .records
                        .range(prefix.clone()..)
                        .take_while(|(k, _)| k.starts_with(&prefix))
                        .map(|(_, r)| r.render(&zone))
                        .collect())
                }
                _ => Err(invalid(format!("cannot list records of {parent:?}: expected a zone, /dns/zones/{{zone}}"))),
            },
            "zones" if parent_key == "/dns" => Ok(self.zones.values().map(Zone::object).collect()),
            _ => Err(invalid(format!(
                "cannot list {rtype:?} under {parent:?}: the DNS simulator lists dnsrecords of /seeds/{{seed}}/namespaces/{{namespace}}, records of /dns/zones/{{zone}} and zones of /dns"
            ))),
        }
    }

    /// A write of `body` to `raw`: a `DNSRecord` object or a record set (a zone is read only).
    /// Answers the resource as a GET would and the call's status (201 created, 200 replaced).
    pub fn write(&mut self, id: &DnsId, raw: &str, body: Value, how: SetWrite<'_>) -> Result<(Value, u16), ApiError> {
        match id {
            DnsId::Object { namespace, name, .. } => {
                let (create, if_match) = match how {
                    SetWrite::Create => (true, None),
                    SetWrite::Update(v) => (false, v),
                };
                self.write_object(raw, namespace, name, body, create, if_match)
            }
            DnsId::Record { zone, fqdn, rtype } => self.write_set(raw, zone, fqdn, *rtype, body, how),
            DnsId::Zone { .. } => Err(not_allowed(raw, "a zone (declared in the world file's dns: section)")),
            DnsId::Seed { .. } => Err(not_allowed(raw, "a seed (declared in the world file's seeds: section)")),
        }
    }

    /// A delete of `raw` (with `if_match`: only at that version). `Ok(false)`: it did not exist.
    pub fn delete(&mut self, id: &DnsId, raw: &str, if_match: Option<&str>) -> Result<bool, ApiError> {
        match id {
            DnsId::Object { .. } => self.delete_object(raw, if_match),
            DnsId::Record { zone, fqdn, rtype } => self.delete_set(raw, zone, fqdn, *rtype, if_match),
            DnsId::Zone { .. } => Err(not_allowed(raw, "a zone (declared in the world file's dns: section)")),
            DnsId::Seed { .. } => Err(not_allowed(raw, "a seed (declared in the world file's seeds: section)")),
        }
    }

    /// Creates or replaces the `DNSRecord` object `raw` (`create`: only if absent; `if_match`: only
    /// at that `resourceVersion`). Answers the object as stored. Nothing else changes: the record
    /// sets the DNS extension writes for it are written through their own ids.
    fn write_object(
        &mut self,
        raw: &str,
        namespace: &str,
        name: &str,
        body: Value,
        create: bool,
        if_match: Option<&str>,
    ) -> Result<(Value, u16), ApiError> {
        let object_key = key(raw);
        let spec = check_object(&body, namespace, name)?;
        let existing = self.objects.get(&object_key);
        match (existing, create, if_match) {
            (Some(_), true, _) => {
                return Err(ApiError::new(409, "AlreadyExists", format!("DNSRecord {raw} already exists")))
            }
            (None, _, Some(_)) => {
                return Err(ApiError::new(412, "Conflict", format!("DNSRecord {raw} does not exist any more")))
            }
            (Some(old), _, Some(expected)) if version(old) != Some(expected) => {
                return Err(ApiError::new(
                    412,
                    "Conflict",
                    format!("DNSRecord {raw} changed since it was read (resourceVersion {expected})"),
                ))
            }
            _ => {}
        }
        let status = if existing.is_some() { 200 } else { 201 };
        if let Some(old) = existing.map(|old| check_object(old, namespace, name)).transpose()? {
            if old.fqdn != spec.fqdn {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    format!("spec.name: Invalid value: {:?}: field is immutable", spec.name),
                ));
            }
            if old.rtype != spec.rtype {
                return Err(ApiError::new(
                    422,
                    "Invalid",
                    format!("spec.recordType: Invalid value: {:?}: field is immutable", spec.rtype.as_str()),
                ));
            }
        }

        self.clock += 1;
        self.meta_dirty = true;
        let resource_version = self.clock.to_string();
        let mut stored = body;
        if let Some(obj) = stored.as_object_mut() {
            let metadata = obj.entry("metadata").or_insert_with(|| json!({}));
            if !metadata.is_object() {
                *metadata = json!({});
            }
            if let Some(m) = metadata.as_object_mut() {
                m.insert("name".into(), json!(name));
                m.insert("namespace".into(), json!(namespace));
                m.insert("resourceVersion".into(), json!(resource_version));
            }
            // The write model's version (`Precondition::of` reads `etag`), the same as `resourceVersion`.
            obj.insert("etag".into(), json!(resource_version));
        }
        self.objects.insert(object_key.clone(), stored.clone());
        self.dirty.insert(Dirty::Object(object_key));
        Ok((stored, status))
    }

    /// Deletes the `DNSRecord` object `raw` (with `if_match`: only at that version) — nothing else.
    /// `Ok(false)`: it did not exist.
    fn delete_object(&mut self, raw: &str, if_match: Option<&str>) -> Result<bool, ApiError> {
        let object_key = key(raw);
        let Some(existing) = self.objects.get(&object_key) else {
            return match if_match {
                Some(_) => Err(ApiError::new(412, "Conflict", format!("DNSRecord {raw} does not exist any more"))),
                None => Ok(false),
            };
        };
        if let Some(expected) = if_match {
            if version(existing) != Some(expected) {
                return Err(ApiError::new(
                    412,
                    "Conflict",
                    format!("DNSRecord {raw} changed since it was read (resourceVersion {expected})"),
                ));
            }
        }
        self.objects.remove(&object_key);
        self.dirty.insert(Dirty::Object(object_key));
        self.clock += 1;
        self.meta_dirty = true;
        Ok(true)
    }

    /// The zone `zone` (any spelling), or 404 naming it.
    fn zone(&self, zone: &str) -> Result<&Zone, ApiError> {
        self.zones.get(&normal_name(zone)).ok_or_else(|| zone_not_found(&normal_name(zone)))
    }

    /// Creates or replaces the record set `fqdn`/`rtype` of `zone` (see [`SetWrite`]) with the
    /// rules of both clouds: the zone exists, the name is inside it, the body is valid for the type,
    /// a CNAME is alone at its name and not at the apex.
    fn write_set(
        &mut self,
        raw: &str,
        zone: &str,
        fqdn: &str,
        rtype: RecordType,
        body: Value,
        how: SetWrite<'_>,
    ) -> Result<(Value, u16), ApiError> {
        let zone = self.zone(zone)?.name.clone();
        let fqdn = normal_name(fqdn);
        let spec = check_set(&body, raw, &zone, &fqdn, rtype)?;
        let set_key = record_key(&zone, &fqdn, rtype);
        let existing = self.records.get(&set_key);
        match (existing, how) {
            (Some(_), SetWrite::Create) => {
                return Err(ApiError::new(
                    409,
                    "AlreadyExists",
                    format!("record set {fqdn} {rtype} in zone {zone} already exists"),
                ))
            }
            (None, SetWrite::Update(Some(expected))) => {
                return Err(ApiError::new(
                    412,
                    "PreconditionFailed",
                    format!("record set {fqdn} {rtype} in zone {zone} does not exist: etag {expected} cannot match"),
                ))
            }
            (Some(old), SetWrite::Update(Some(expected))) if old.etag != expected && expected != "*" => {
                return Err(ApiError::new(
                    412,
                    "PreconditionFailed",
                    format!(
                        "record set {fqdn} {rtype} in zone {zone} changed since it was read: etag {expected} does not match its etag {}; read it again",
                        old.etag
                    ),
                ))
            }
            _ => {}
        }
        // CNAME exclusivity, in Azure DNS's words (409 Conflict).
        let others: Vec<RecordType> = RecordType::ALL
            .into_iter()
            .filter(|t| *t != rtype && self.records.contains_key(&record_key(&zone, &fqdn, *t)))
            .collect();
        if rtype == RecordType::Cname && !others.is_empty() {
            let types = others.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ");
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "The CNAME record could not be created because another record with the same name already exists in this zone ({fqdn}: {types} in zone {zone}); a CNAME must be the only record set at its name"
                ),
            ));
        }
        if rtype != RecordType::Cname && others.contains(&RecordType::Cname) {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "The {rtype} record could not be created because a CNAME record with the same name already exists in this zone ({fqdn} in zone {zone}); a CNAME must be the only record set at its name"
                ),
            ));
        }

        let status = if existing.is_some() { 200 } else { 201 };
        let origin = existing.map_or(Origin::Api, |r| r.origin);
        self.clock += 1;
        self.meta_dirty = true;
        let record = Record {
            value: json!({"name": fqdn, "type": rtype.as_str(), "ttl": spec.ttl, "values": spec.values}),
            origin,
            etag: etag(self.clock),
        };
        let answer = record.render(&zone);
        self.records.insert(set_key.clone(), record);
        self.dirty.insert(Dirty::Record(set_key));
        Ok((answer, status))
    }

    /// Deletes the record set `fqdn`/`rtype` of `zone` (with `if_match`: only at that etag).
    /// `Ok(false)`: it did not exist.
    fn delete_set(
        &mut self,
        raw: &str,
        zone: &str,
        fqdn: &str,
        rtype: RecordType,
        if_match: Option<&str>,
    ) -> Result<bool, ApiError> {
        let zone = self.zone(zone)?.name.clone();
        let fqdn = normal_name(fqdn);
        let set_key = record_key(&zone, &fqdn, rtype);
        match (self.records.get(&set_key), if_match) {
            (None, None) => return Ok(false),
            (None, Some(expected)) => {
                return Err(ApiError::new(
                    412,
                    "PreconditionFailed",
                    format!("record set {fqdn} {rtype} in zone {zone} does not exist: etag {expected} cannot match ({raw})"),
                ))
            }
            (Some(old), Some(expected)) if old.etag != expected && expected != "*" => {
                return Err(ApiError::new(
                    412,
                    "PreconditionFailed",
                    format!(
                        "record set {fqdn} {rtype} in zone {zone} changed since it was read: etag {expected} does not match its etag {}; read it again",
                        old.etag
                    ),
                ))
            }
            _ => {}
        }
        self.records.remove(&set_key);
        self.dirty.insert(Dirty::Record(set_key));
        self.clock += 1;
        self.meta_dirty = true;
        Ok(true)
    }
}

/// 404: the zone does not exist.
fn zone_not_found(zone: &str) -> ApiError {
    ApiError::new(404, "NotFound", format!("DNS zone {zone} does not exist"))
}

/// What a record-set write sets.
struct SetSpec {
    ttl: u64,
    values: Vec<String>,
}

/// The fields a record-set body may carry: the managed ones and the read-only ones (ignored).
const SET_FIELDS: [&str; 7] = ["name", "type", "ttl", "values", "etag", "zone", "id"];

/// Checks the record-set write `raw` of `fqdn`/`rtype` in `zone` (both in [`normal_name`] form):
/// the name, and the body `{"name", "type", "ttl", "values"}` (`name` and `type` may be left out;
/// read-only `etag`, `zone`, `id` are ignored). Every problem in one 400 line.
fn check_set(body: &Value, raw: &str, zone: &str, fqdn: &str, rtype: RecordType) -> Result<SetSpec, ApiError> {
    let mut problems = Vec::new();
    if !valid_name(fqdn) {
        problems.push(format!("the record name {fqdn:?} is not a valid DNS name"));
    } else if !within(fqdn, zone) {
        problems.push(format!("the record name {fqdn} is not in zone {zone}"));
    } else if rtype == RecordType::Cname && fqdn == zone {
        problems.push(format!("a CNAME record set cannot be at the zone apex ({zone})"));
    }
    let Some(obj) = body.as_object() else {
        problems.push("the body must be a record set, a JSON object {name, type, ttl, values}".to_string());
        return Err(bad_request(format!("record set {raw}: {}", problems.join("; "))));
    };
    for field in obj.keys().filter(|k| !SET_FIELDS.contains(&k.as_str())) {
        problems.push(format!("{field}: unknown field (a record set has name, type, ttl, values)"));
    }
    match obj.get("name") {
        None | Some(Value::Null) => {}
        Some(Value::String(name)) if normal_name(name) == fqdn => {}
        Some(v) => problems.push(format!("name: {v} does not match the id's record name {fqdn}")),
    }
    match obj.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t.eq_ignore_ascii_case(rtype.as_str()) => {}
        Some(v) => problems.push(format!("type: {v} does not match the id's record type {rtype}")),
    }
    let ttl = match obj.get("ttl") {
        None | Some(Value::Null) => {
            problems.push(format!("ttl: required, an integer from 0 to {MAX_TTL}"));
            0
        }
        Some(v) => match v.as_u64().filter(|t| *t <= MAX_TTL) {
            Some(t) => t,
            None => {
                problems.push(format!("ttl: {v} is out of range: an integer from 0 to {MAX_TTL}"));
                0
            }
        },
    };
    let values: Vec<String> = match obj.get("values").and_then(Value::as_array) {
        Some(values) if !values.is_empty() => {
            let strings: Vec<String> = values.iter().filter_map(Value::as_str).map(str::to_string).collect();
            if strings.len() != values.len() {
                problems.push("values: every value must be a string".to_string());
            }
            if rtype == RecordType::Cname && values.len() != 1 {
                problems.push(format!("values: a CNAME record set holds exactly one value, not {}", values.len()));
            }
            for v in &strings {
                if let Some(why) = invalid_value(rtype, v) {
                    problems.push(format!("values: {v:?} {why}"));
                }
            }
            strings
        }
        _ => {
            problems.push("values: required, a non-empty list".to_string());
            Vec::new()
        }
    };
    if problems.is_empty() {
        Ok(SetSpec { ttl, values })
    } else {
        Err(bad_request(format!("record set {raw}: {}", problems.join("; "))))
    }
}

/// Why `value` is not a valid value of a `rtype` record set; `None` when it is.
pub(crate) fn invalid_value(rtype: RecordType, value: &str) -> Option<&'static str> {
    match rtype {
        RecordType::A => value.parse::<std::net::Ipv4Addr>().is_err().then_some("is not an IPv4 address"),
        RecordType::Aaaa => value.parse::<std::net::Ipv6Addr>().is_err().then_some("is not an IPv6 address"),
        RecordType::Cname => {
            (!valid_name(value) || normal_name(value).starts_with('*')).then_some("is not a host name")
        }
        RecordType::Txt => value.is_empty().then_some("is empty"),
    }
}

/// A stored object's `resourceVersion`.
fn version(object: &Value) -> Option<&str> {
    object.get("metadata")?.get("resourceVersion")?.as_str()
}

/// What the immutability rules read of a `DNSRecord`.
struct ObjectSpec {
    /// `spec.name` as written.
    name: String,
    /// `spec.name` in [`normal_name`] form.
    fqdn: String,
    rtype: RecordType,
}

fn str_at(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

/// Checks a `DNSRecord` body (upstream's `ValidateDNSRecord`, the parts the simulator needs): every
/// problem, in one line.
fn check_object(body: &Value, namespace: &str, name: &str) -> Result<ObjectSpec, ApiError> {
    let empty = Map::new();
    let Some(obj) = body.as_object() else {
        return Err(invalid("the request body must be a DNSRecord object (a JSON object)"));
    };
    let mut problems = Vec::new();
    if str_at(obj.get("apiVersion")) != Some(DNSRECORD_API_VERSION) || str_at(obj.get("kind")) != Some(DNSRECORD_KIND) {
        problems.push(format!("apiVersion/kind: expected {DNSRECORD_API_VERSION} {DNSRECORD_KIND}"));
    }
    let metadata = obj.get("metadata").and_then(Value::as_object).unwrap_or(&empty);
    for (field, want) in [("name", name), ("namespace", namespace)] {
        match str_at(metadata.get(field)) {
            Some(have) if !have.eq_ignore_ascii_case(want) => {
                problems.push(format!("metadata.{field}: Invalid value: {have:?}: the id names {want:?}"))
            }
            _ => {}
        }
    }
    let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    if str_at(spec.get("type")).is_none_or(str::is_empty) {
        problems.push("spec.type: Required value: field is required".to_string());
    }
    let dns_name = str_at(spec.get("name")).unwrap_or_default().to_string();
    if dns_name.is_empty() {
        problems.push("spec.name: Required value: field is required".to_string());
    } else if !valid_name(&dns_name) {
        problems.push(format!("spec.name: Invalid value: {dns_name:?}: not a valid DNS name"));
    }
    let rtype = match str_at(spec.get("recordType")) {
        None => {
            problems.push("spec.recordType: Required value: field is required".to_string());
            None
        }
        Some(t) => {
            let parsed = RecordType::parse(t);
            if parsed.is_none() {
                problems
                    .push(format!("spec.recordType: Unsupported value: {t:?}: supported values: {}", record_types()));
            }
            parsed
        }
    };
    match spec.get("values").and_then(Value::as_array) {
        Some(values) if !values.is_empty() => {
            if values.iter().any(|v| v.as_str().is_none_or(str::is_empty)) {
                problems.push("spec.values: Invalid value: every value must be a non-empty string".to_string());
            }
        }
        _ => problems.push("spec.values: Required value: field is required".to_string()),
    }
    if let Some(v) = spec.get("ttl").filter(|v| !v.is_null() && v.as_u64().is_none()) {
        problems.push(format!("spec.ttl: Invalid value: {v}: must be a non-negative integer"));
    }
    match spec.get("zone") {
        None | Some(Value::Null) => {}
        Some(Value::String(z)) if !z.is_empty() => {}
        Some(v) => problems.push(format!("spec.zone: Invalid value: {v}: must be a zone id")),
    }
    match (rtype, problems.is_empty()) {
        (Some(rtype), true) => Ok(ObjectSpec { fqdn: normal_name(&dns_name), name: dns_name, rtype }),
        _ => Err(ApiError::new(422, "Invalid", problems.join("; "))),
    }
}
