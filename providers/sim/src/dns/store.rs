//! The DNS store and its rules: zones, zone records, the seeds' `DNSRecord` objects, and the DNS
//! controller that turns a `DNSRecord` into a zone record.
//!
//! Ids are [`trellis_planner::ids::DnsIds`]'s, compared in lowercase:
//! - `/seeds/{seed}/namespaces/{namespace}/dnsrecords/{name}`: a `DNSRecord` object (what trellis writes);
//! - `/dns/zones/{zone}/records/{fqdn}/{type}`: a record in a zone (what the DNS extension writes);
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
/// The TTL of a zone record whose `DNSRecord` sets none (upstream's default, seconds).
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
}

impl FromStr for DnsId {
    type Err = String;

    fn from_str(id: &str) -> Result<DnsId, String> {
        let trimmed = id.trim();
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        let segments: Vec<&str> = trimmed.split('/').collect();
        let bad = || {
            format!(
                "{id:?} is not a DNS id: expected /seeds/{{seed}}/namespaces/{{namespace}}/dnsrecords/{{name}}, /dns/zones/{{zone}} or /dns/zones/{{zone}}/records/{{name}}/{{type}}"
            )
        };
        if segments.iter().skip(1).any(|s| s.is_empty()) {
            return Err(bad());
        }
        match segments.as_slice() {
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

/// A zone record as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// `{"name", "type", "ttl", "values", "owner"?}`: what a GET answers.
    pub value: Value,
    pub origin: Origin,
}

impl Record {
    /// The `DNSRecord` id that owns the record, if the DNS controller wrote it.
    pub fn owner(&self) -> Option<&str> {
        self.value.get("owner").and_then(Value::as_str)
    }
}

/// A zone: its name as declared (the zone's id in `spec.zone`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Zone {
    pub name: String,
}

/// A key of the store's tree: which map, and the entry's key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Dirty {
    Zone(String),
    Record(String),
    Object(String),
}

/// Everything the simulated DNS holds. Maps are keyed by [`DnsIds::key`] of the id.
#[derive(Default)]
pub(crate) struct DnsStore {
    pub zones: BTreeMap<String, Zone>,
    pub records: BTreeMap<String, Record>,
    pub objects: BTreeMap<String, Value>,
    /// Ticks on every write; an object's `resourceVersion` is the clock of its last write.
    pub clock: u64,
    /// Changed since the last persist.
    pub dirty: BTreeSet<Dirty>,
    pub meta_dirty: bool,
}

/// A write the DNS controller made to a zone record, for the audit log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ControllerWrite {
    /// `PUT` (created or changed) or `DELETE`.
    pub method: &'static str,
    pub target: String,
    pub status: u16,
}

pub(crate) fn key(id: &str) -> String {
    DnsIds.key(id)
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "Invalid", message)
}

fn not_allowed(id: &str) -> ApiError {
    ApiError::new(
        405,
        "MethodNotAllowed",
        format!(
            "{id} is written by the DNS extension, not through the API: write a DNSRecord object (/seeds/{{seed}}/namespaces/{{namespace}}/dnsrecords/{{name}}) instead"
        ),
    )
}

pub(crate) fn parse_id(id: &str) -> Result<DnsId, ApiError> {
    id.parse::<DnsId>().map_err(invalid)
}

impl DnsStore {
    /// The zone whose name is the longest suffix of `fqdn` (in [`normal_name`] form).
    fn zone_for(&self, fqdn: &str) -> Option<&Zone> {
        self.zones.iter().filter(|(k, _)| within(fqdn, k)).max_by_key(|(k, _)| k.len()).map(|(_, z)| z)
    }

    /// Zone names, for messages.
    fn zone_names(&self) -> String {
        if self.zones.is_empty() {
            "none is loaded (declare zones in the world file's dns: section)".to_string()
        } else {
            format!(
                "the loaded zones are {}",
                self.zones.values().map(|z| z.name.as_str()).collect::<Vec<_>>().join(", ")
            )
        }
    }

    /// GET: an object, a record or a zone as stored; `None` when absent.
    pub fn get(&self, id: &DnsId, raw: &str) -> Option<Value> {
        match id {
            DnsId::Object { .. } => self.objects.get(&key(raw)).cloned(),
            DnsId::Record { .. } => self.records.get(&key(raw)).map(|r| r.value.clone()),
            DnsId::Zone { .. } => {
                self.zones.get(&key(raw)["/dns/zones/".len()..]).map(|z| json!({"name": z.name, "id": raw}))
            }
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
                Ok(DnsId::Zone { .. }) => {
                    if !self.zones.contains_key(&parent_key["/dns/zones/".len()..]) {
                        return Err(ApiError::new(404, "NotFound", format!("DNS zone {parent} does not exist")));
                    }
                    let prefix = format!("{parent_key}/records/");
                    Ok(self
                        .records
                        .range(prefix.clone()..)
                        .take_while(|(k, _)| k.starts_with(&prefix))
                        .map(|(_, r)| r.value.clone())
                        .collect())
                }
                _ => Err(invalid(format!("cannot list records of {parent:?}: expected a zone, /dns/zones/{{zone}}"))),
            },
            "zones" if parent_key == "/dns" => {
                Ok(self.zones.values().map(|z| json!({"name": z.name, "id": format!("/dns/zones/{}", z.name)})).collect())
            }
            _ => Err(invalid(format!(
                "cannot list {rtype:?} under {parent:?}: the DNS simulator lists dnsrecords of /seeds/{{seed}}/namespaces/{{namespace}}, records of /dns/zones/{{zone}} and zones of /dns"
            ))),
        }
    }

    /// Creates or replaces the `DNSRecord` object `raw` (`create`: only if absent; `if_match`: only
    /// at that `resourceVersion`), then runs the DNS controller over it. Answers the object as
    /// stored and the controller's writes.
    pub fn write_object(
        &mut self,
        id: &DnsId,
        raw: &str,
        body: Value,
        create: bool,
        if_match: Option<&str>,
    ) -> Result<(Value, Vec<ControllerWrite>), ApiError> {
        let DnsId::Object { namespace, name, .. } = id else {
            return Err(not_allowed(raw));
        };
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
        let old_spec = existing.map(|old| check_object(old, namespace, name)).transpose()?;
        if let Some(old) = &old_spec {
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

        // The DNS controller: the zone record this object stands for, and whether it may write it.
        let zone = self.resolve_zone(&spec, raw)?;
        let target = record_id(&zone.name, &spec.fqdn, spec.rtype);
        let target_key = key(&target);
        if let Some(record) = self.records.get(&target_key) {
            if record.owner().map(key).as_deref() != Some(object_key.as_str()) {
                return Err(owned_elsewhere(raw, &target, record));
            }
        }
        let old_target = old_spec.and_then(|old| {
            let zone = self.resolve_zone(&old, raw).ok()?;
            Some(key(&record_id(&zone.name, &old.fqdn, old.rtype)))
        });

        // Every check passed: write.
        let mut writes = Vec::new();
        if let Some(old_key) = old_target.filter(|k| *k != target_key) {
            if self.records.get(&old_key).and_then(Record::owner).map(key).as_deref() == Some(object_key.as_str()) {
                self.records.remove(&old_key);
                writes.push(ControllerWrite { method: "DELETE", target: shown_record_id(&old_key), status: 200 });
                self.dirty.insert(Dirty::Record(old_key));
            }
        }
        let value = json!({
            "name": spec.fqdn,
            "type": spec.rtype.as_str(),
            "ttl": spec.ttl,
            "values": spec.values,
            "owner": raw.trim().trim_end_matches('/'),
        });
        let changed = self.records.get(&target_key).map(|r| &r.value) != Some(&value);
        if changed {
            let status = if self.records.contains_key(&target_key) { 200 } else { 201 };
            self.records.insert(target_key.clone(), Record { value, origin: Origin::Api });
            self.dirty.insert(Dirty::Record(target_key));
            writes.push(ControllerWrite { method: "PUT", target, status });
        }

        self.clock += 1;
        self.meta_dirty = true;
        let mut stored = body;
        let resource_version = self.clock.to_string();
        let obj = stored.as_object_mut().expect("checked: an object");
        let metadata = obj.entry("metadata").or_insert_with(|| json!({}));
        if let Some(m) = metadata.as_object_mut() {
            m.insert("name".into(), json!(name));
            m.insert("namespace".into(), json!(namespace));
            m.insert("resourceVersion".into(), json!(resource_version));
        }
        // The write model's version (`Precondition::of` reads `etag`), the same as `resourceVersion`.
        obj.insert("etag".into(), json!(resource_version));
        self.objects.insert(object_key.clone(), stored.clone());
        self.dirty.insert(Dirty::Object(object_key));
        Ok((stored, writes))
    }

    /// Deletes the `DNSRecord` object `raw` (with `if_match`: only at that version) and the zone
    /// record it owns — nothing else. `Ok(None)`: it did not exist.
    pub fn delete_object(
        &mut self,
        id: &DnsId,
        raw: &str,
        if_match: Option<&str>,
    ) -> Result<Option<Vec<ControllerWrite>>, ApiError> {
        let DnsId::Object { .. } = id else {
            return Err(not_allowed(raw));
        };
        let object_key = key(raw);
        let Some(existing) = self.objects.get(&object_key) else {
            return match if_match {
                Some(_) => Err(ApiError::new(412, "Conflict", format!("DNSRecord {raw} does not exist any more"))),
                None => Ok(None),
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
        let owned: Vec<String> = self
            .records
            .iter()
            .filter(|(_, r)| r.owner().map(key).as_deref() == Some(object_key.as_str()))
            .map(|(k, _)| k.clone())
            .collect();
        let mut writes = Vec::new();
        for record_key in owned {
            self.records.remove(&record_key);
            writes.push(ControllerWrite { method: "DELETE", target: shown_record_id(&record_key), status: 200 });
            self.dirty.insert(Dirty::Record(record_key));
        }
        self.objects.remove(&object_key);
        self.dirty.insert(Dirty::Object(object_key));
        self.clock += 1;
        self.meta_dirty = true;
        Ok(Some(writes))
    }

    /// The zone of a `DNSRecord`: `spec.zone` if set (a loaded zone holding `spec.name`), else the
    /// loaded zone whose name is the longest suffix of `spec.name`.
    fn resolve_zone(&self, spec: &ObjectSpec, raw: &str) -> Result<Zone, ApiError> {
        match &spec.zone {
            Some(zone) => {
                let found = self.zones.get(&normal_name(zone)).ok_or_else(|| {
                    invalid(format!("no DNS zone {zone:?} (spec.zone of DNSRecord {raw}); {}", self.zone_names()))
                })?;
                if !within(&spec.fqdn, &normal_name(&found.name)) {
                    return Err(invalid(format!(
                        "DNS name {} (spec.name of DNSRecord {raw}) is not in zone {} (spec.zone)",
                        spec.fqdn, found.name
                    )));
                }
                Ok(found.clone())
            }
            None => self.zone_for(&spec.fqdn).cloned().ok_or_else(|| {
                invalid(format!(
                    "no DNS zone for {} (spec.name of DNSRecord {raw}): no loaded zone is a suffix of it; {}",
                    spec.fqdn,
                    self.zone_names()
                ))
            }),
        }
    }
}

/// The refusal of a write to a zone record someone else owns.
fn owned_elsewhere(raw: &str, target: &str, record: &Record) -> ApiError {
    let owner = match record.owner() {
        Some(owner) => format!("DNSRecord {owner}"),
        None => "someone else (declared in the world file, not created by trellis)".to_string(),
    };
    ApiError::new(
        409,
        "Conflict",
        format!(
            "DNSRecord {raw}: the zone record {target} is owned by {owner}; the DNS extension never overwrites a record it did not create — remove it or choose another domain"
        ),
    )
}

/// A stored object's `resourceVersion`.
fn version(object: &Value) -> Option<&str> {
    object.get("metadata")?.get("resourceVersion")?.as_str()
}

/// What the DNS controller reads of a `DNSRecord`.
struct ObjectSpec {
    /// `spec.name` as written.
    name: String,
    /// `spec.name` in [`normal_name`] form.
    fqdn: String,
    rtype: RecordType,
    values: Vec<String>,
    ttl: u64,
    zone: Option<String>,
}

/// Checks a `DNSRecord` body (upstream's `ValidateDNSRecord`, the parts the simulator needs): every
/// problem, one per line.
fn str_at(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

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
    let values: Vec<String> = match spec.get("values").and_then(Value::as_array) {
        Some(values) if !values.is_empty() => {
            let strings: Vec<String> = values.iter().filter_map(Value::as_str).map(str::to_string).collect();
            if strings.len() != values.len() || strings.iter().any(String::is_empty) {
                problems.push("spec.values: Invalid value: every value must be a non-empty string".to_string());
            }
            strings
        }
        _ => {
            problems.push("spec.values: Required value: field is required".to_string());
            Vec::new()
        }
    };
    let ttl = match spec.get("ttl") {
        None | Some(Value::Null) => DEFAULT_TTL,
        Some(v) => match v.as_u64() {
            Some(ttl) => ttl,
            None => {
                problems.push(format!("spec.ttl: Invalid value: {v}: must be a non-negative integer"));
                DEFAULT_TTL
            }
        },
    };
    let zone = match spec.get("zone") {
        None | Some(Value::Null) => None,
        Some(Value::String(z)) if !z.is_empty() => Some(z.clone()),
        Some(v) => {
            problems.push(format!("spec.zone: Invalid value: {v}: must be a zone id"));
            None
        }
    };
    match (rtype, problems.is_empty()) {
        (Some(rtype), true) => {
            Ok(ObjectSpec { fqdn: normal_name(&dns_name), name: dns_name, rtype, values, ttl, zone })
        }
        _ => Err(ApiError::new(422, "Invalid", problems.join("; "))),
    }
}
