//! The world file's `dns:` section: the DNS zones that exist before trellis runs, where each lives
//! in Azure DNS and in Cloud DNS, and the record sets already in them (someone else's: trellis never
//! writes or deletes them).
//!
//! ```yaml
//! dns:
//!   zones:
//!     - name: example.com                 # the zone's DNS name
//!       azure: {subscription: 6d3a9c1e-0000-4000-8000-000000000001, resourceGroup: dns-rg}
//!       gcp: {project: my-project, managedZone: example-com}
//!       records:
//!         - {name: www.example.com, type: CNAME, ttl: 300, values: [lb.example.net]}
//! ```
//!
//! A record may state its `etag` (the version the cloud gave it; `trellis world export` writes the
//! one it read, so an offline plan carries the etag an online one does); without it each change
//! gets a new one.
//!
//! Zone and record names are DNS names (compared in lowercase, a trailing dot ignored); a record
//! must be inside its zone; `type` is one of `A`, `AAAA`, `CNAME`, `TXT`; `values` are required and
//! valid for the type (IPv4, IPv6, exactly one host name, non-empty text); a CNAME is the only record
//! set at its name and not at the zone apex; `ttl` defaults to 300 (at most 2147483647) — what
//! exists keeps the clouds' rules. `azure:` says where the zone lives in Azure DNS:
//! `resourceGroup` (required in the block) and `subscription` (a GUID; absent: the zone is served
//! under every subscription); without the block the zone is in resource group `dns` of every
//! subscription. `gcp:` says where it lives in Cloud DNS: `managedZone` (required in the block) and
//! `project` (absent: every project); without the block the managed zone is the zone's name with
//! `.` replaced by `-` (`example.com` → `example-com`) in every project. Two zones with one managed
//! zone in one project are refused. Every problem is reported at once.
//!
//! A sync makes the declared zones and record sets exist as declared (a declared record set
//! replaces whatever was there under its name and type, with a new etag: the world says someone else
//! made it; one already as declared keeps its etag); declared record sets the file no longer lists
//! are removed — never a record set written through the API (by trellis) — and so is a zone no
//! longer listed unless a record set written through the API is still in it. A declared record set
//! that would break the CNAME rule beside a record set written through the API refuses the sync,
//! which then changes nothing.

use super::store::{
    default_managed_zone, etag, invalid_value, normal_name, record_id, record_key, valid_name, within, AzureZone,
    Dirty, DnsStore, GcpZone, Record, RecordType, Zone, MAX_TTL,
};
use crate::core::world::{SyncReport, WorldFile, WorldSection};
use crate::core::Origin;
use crate::SimError;
use serde::Deserialize;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// The TTL of a declared record that states none.
pub const WORLD_TTL: u64 = 300;

/// A parsed `dns:` section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsWorld {
    pub zones: Vec<WorldZone>,
}

/// A declared zone.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldZone {
    pub name: String,
    /// Where the zone lives in Azure DNS (absent: resource group `dns`, any subscription).
    #[serde(default)]
    pub azure: Option<AzureZone>,
    /// Where the zone lives in Cloud DNS (absent: managed zone `<name with - for .>`, any project).
    #[serde(default)]
    pub gcp: Option<GcpZone>,
    #[serde(default)]
    pub records: Vec<WorldRecord>,
}

/// A declared record.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldRecord {
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    pub ttl: Option<u64>,
    #[serde(default)]
    pub values: Vec<String>,
    /// The version the cloud gave it (what `trellis world export` read): kept, so a plan offline
    /// carries the etag a plan online does. Absent: a new one at each change.
    #[serde(default)]
    pub etag: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDns {
    #[serde(default)]
    zones: Vec<WorldZone>,
}

/// The `dns:` section of world files ([`WorldSection`]).
pub struct Section;

/// The `dns:` section of world files.
pub static SECTION: Section = Section;

impl WorldSection for Section {
    fn key(&self) -> &'static str {
        "dns"
    }

    fn check(&self, world: &WorldFile) -> Result<(), SimError> {
        if let Some(dns) = DnsWorld::of(world)? {
            dns.declared(&world.path)?;
        }
        Ok(())
    }
}

impl DnsWorld {
    /// The `dns:` section of `world` (`None`: it has none).
    pub fn of(world: &WorldFile) -> Result<Option<DnsWorld>, SimError> {
        #[derive(Deserialize)]
        struct File {
            dns: Option<RawDns>,
        }
        Ok(world.read::<File>()?.dns.map(DnsWorld::from_raw))
    }

    fn from_raw(raw: RawDns) -> DnsWorld {
        DnsWorld { zones: raw.zones }
    }

    /// Every problem of the section, one line each (`dns.zones[i]…: …`); `Ok` when there is none.
    pub(crate) fn declared(&self, path: &str) -> Result<(), SimError> {
        let mut problems = Vec::new();
        let mut zones: BTreeMap<String, usize> = BTreeMap::new();
        // Each zone's (declared or default) managed zone and project, for the uniqueness check.
        let mut managed_zones: Vec<(usize, (String, Option<String>))> = Vec::new();
        for (i, zone) in self.zones.iter().enumerate() {
            let at = format!("{path}: dns.zones[{i}]");
            let zone_name = normal_name(&zone.name);
            if !valid_name(&zone.name) || zone_name.starts_with('*') {
                problems.push(format!("{at}.name: {:?} is not a valid DNS zone name", zone.name));
            }
            if let Some(first) = zones.insert(zone_name.clone(), i) {
                problems.push(format!(
                    "{at}.name: zone {zone_name} is declared twice (dns.zones[{first}] and dns.zones[{i}])"
                ));
            }
            if let Some(azure) = &zone.azure {
                if let Some(subscription) = azure.subscription.as_deref().filter(|s| !is_guid(s)) {
                    problems.push(format!(
                        "{at}.azure.subscription: {subscription:?} is not a subscription id (a GUID, 8-4-4-4-12 hex digits)"
                    ));
                }
                if let Some(why) = invalid_resource_group(&azure.resource_group) {
                    problems.push(format!("{at}.azure.resourceGroup: {:?} {why}", azure.resource_group));
                }
            }
            if let Some(gcp) = &zone.gcp {
                if let Some(project) = gcp.project.as_deref().filter(|p| !is_project_id(p)) {
                    problems.push(format!(
                        "{at}.gcp.project: {project:?} is not a project id (6 to 30 lowercase letters, digits and hyphens, starting with a letter, not ending with a hyphen)"
                    ));
                }
                if !is_managed_zone_name(&gcp.managed_zone) {
                    problems.push(format!(
                        "{at}.gcp.managedZone: {:?} is not a managed zone name (1 to 63 lowercase letters, digits and hyphens, starting with a letter, not ending with a hyphen)",
                        gcp.managed_zone
                    ));
                }
            }
            let gcp = zone
                .gcp
                .clone()
                .unwrap_or_else(|| GcpZone { project: None, managed_zone: default_managed_zone(&zone.name) });
            if let Some((first, _)) = managed_zones.iter().find(|(_, (mz, project))| {
                *mz == gcp.managed_zone && (project.is_none() || gcp.project.is_none() || *project == gcp.project)
            }) {
                problems.push(format!(
                    "{at}.gcp.managedZone: managed zone {} is also dns.zones[{first}]'s in the same project; declare a distinct gcp.managedZone for one of them",
                    gcp.managed_zone
                ));
            }
            managed_zones.push((i, (gcp.managed_zone, gcp.project)));
            let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
            for (j, record) in zone.records.iter().enumerate() {
                let at = format!("{at}.records[{j}]");
                let name = normal_name(&record.name);
                if !valid_name(&record.name) {
                    problems.push(format!("{at}.name: {:?} is not a valid DNS name", record.name));
                } else if !within(&name, &zone_name) {
                    problems.push(format!("{at}.name: {name} is not in zone {zone_name}"));
                }
                if RecordType::parse(&record.rtype).is_none() {
                    problems.push(format!("{at}.type: {:?} is not one of A, AAAA, CNAME, TXT", record.rtype));
                }
                if record.values.is_empty() || record.values.iter().any(|v| v.trim().is_empty()) {
                    problems.push(format!("{at}.values: at least one value, none empty, is required"));
                } else if let Some(rtype) = RecordType::parse(&record.rtype) {
                    // What exists keeps the clouds' rules: values valid for the type.
                    for v in &record.values {
                        if let Some(why) = invalid_value(rtype, v) {
                            problems.push(format!("{at}.values: {v:?} {why}"));
                        }
                    }
                    if rtype == RecordType::Cname && record.values.len() != 1 {
                        problems.push(format!(
                            "{at}.values: a CNAME record set holds exactly one value, not {}",
                            record.values.len()
                        ));
                    }
                }
                if record.rtype == "CNAME" && name == zone_name {
                    problems.push(format!("{at}: a CNAME record set cannot be at the zone apex ({zone_name})"));
                }
                if let Some(ttl) = record.ttl.filter(|t| *t > MAX_TTL) {
                    problems.push(format!("{at}.ttl: {ttl} is out of range: an integer from 0 to {MAX_TTL}"));
                }
                if let Some(first) = seen.insert((name.clone(), record.rtype.clone()), j) {
                    problems.push(format!(
                        "{at}: record {name} {} is declared twice (records[{first}] and records[{j}])",
                        record.rtype
                    ));
                }
            }
            // A CNAME is the only record set at its name.
            for (j, record) in zone.records.iter().enumerate().filter(|(_, r)| r.rtype == "CNAME") {
                let name = normal_name(&record.name);
                let others: Vec<String> = seen
                    .iter()
                    .filter(|((n, t), _)| *n == name && t != "CNAME")
                    .map(|((_, t), k)| format!("{t} (records[{k}])"))
                    .collect();
                if !others.is_empty() {
                    problems.push(format!(
                        "{at}.records[{j}]: the CNAME {name} is not the only record set at its name: {}",
                        others.join(", ")
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(SimError::WorldInvalid { path: path.to_string(), problems })
        }
    }
}

/// Whether `world` can be synced into `store`: a declared record set must not break the CNAME rule
/// beside a record set written through the API (which a sync keeps) — every such clash, one line
/// each. Assumes [`DnsWorld::declared`] passed.
pub(crate) fn clashes(store: &DnsStore, world: &DnsWorld, path: &str) -> Result<(), SimError> {
    let mut problems = Vec::new();
    for (i, zone) in world.zones.iter().enumerate() {
        let zone_name = normal_name(&zone.name);
        for (j, record) in zone.records.iter().enumerate() {
            let Some(rtype) = RecordType::parse(&record.rtype) else { continue };
            let name = normal_name(&record.name);
            for other in RecordType::ALL.into_iter().filter(|t| *t != rtype) {
                if rtype != RecordType::Cname && other != RecordType::Cname {
                    continue;
                }
                let declared_too =
                    zone.records.iter().any(|r| normal_name(&r.name) == name && r.rtype == other.as_str());
                let written =
                    store.records.get(&record_key(&zone_name, &name, other)).is_some_and(|r| r.origin == Origin::Api);
                if written && !declared_too {
                    problems.push(format!(
                        "{path}: dns.zones[{i}].records[{j}]: {name} {rtype} cannot exist beside the {other} record set {} written through the API (a CNAME is the only record set at its name); drop it from the file or delete that record set first",
                        record_id(&zone_name, &name, other)
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(SimError::WorldInvalid { path: path.to_string(), problems })
    }
}

/// Makes `store` hold what `world` declares (see the module doc). Assumes [`DnsWorld::declared`] and
/// [`clashes`] passed.
pub(crate) fn sync(store: &mut DnsStore, world: &DnsWorld) -> SyncReport {
    let mut report = SyncReport::default();
    let mut declared_zones = BTreeSet::new();
    let mut declared_records = BTreeSet::new();
    for zone in &world.zones {
        let zone_name = normal_name(&zone.name);
        declared_zones.insert(zone_name.clone());
        let declared = Zone { name: zone_name.clone(), azure: zone.azure.clone(), gcp: zone.gcp.clone() };
        match store.zones.get(&zone_name) {
            Some(old) if *old == declared => {}
            Some(_) => report.updated.push(format!("/dns/zones/{zone_name}")),
            None => report.added.push(format!("/dns/zones/{zone_name}")),
        }
        if store.zones.get(&zone_name) != Some(&declared) {
            store.zones.insert(zone_name.clone(), declared);
            store.dirty.insert(Dirty::Zone(zone_name.clone()));
        }
        for record in &zone.records {
            let Some(rtype) = RecordType::parse(&record.rtype) else { continue };
            let fqdn = normal_name(&record.name);
            let id = record_id(&zone_name, &fqdn, rtype);
            let key = record_key(&zone_name, &fqdn, rtype);
            let value = json!({
                "name": fqdn,
                "type": rtype.as_str(),
                "ttl": record.ttl.unwrap_or(WORLD_TTL),
                "values": record.values,
            });
            declared_records.insert(key.clone());
            let declared_etag = record.etag.as_deref().map(str::trim).filter(|e| !e.is_empty());
            match store.records.get(&key) {
                Some(old)
                    if old.value == value
                        && old.origin == Origin::World
                        && declared_etag.is_none_or(|e| e == old.etag) =>
                {
                    continue
                }
                Some(_) => report.updated.push(id),
                None => report.added.push(id),
            }
            // Changed (or new): a new version, as the change someone else made would give it — or
            // the declared one; the clock passes a declared version of its own form, so no later
            // write is given it again.
            store.clock += 1;
            if let Some(tick) = declared_etag
                .and_then(|e| e.strip_prefix("00000000-0000-0000-0000-"))
                .and_then(|t| u64::from_str_radix(t, 16).ok())
            {
                store.clock = store.clock.max(tick.saturating_add(1));
            }
            store.meta_dirty = true;
            let version = declared_etag.map_or_else(|| etag(store.clock), str::to_string);
            store.records.insert(key.clone(), Record { value, origin: Origin::World, etag: version });
            store.dirty.insert(Dirty::Record(key));
        }
    }
    let stale: Vec<String> = store
        .records
        .iter()
        .filter(|(k, r)| r.origin == Origin::World && !declared_records.contains(*k))
        .map(|(k, _)| k.clone())
        .collect();
    for key in stale {
        store.records.remove(&key);
        report.removed.push(super::store::shown_record_id(&key));
        store.dirty.insert(Dirty::Record(key));
    }
    let gone: Vec<String> = store
        .zones
        .keys()
        .filter(|z| !declared_zones.contains(*z))
        .filter(|z| {
            let prefix = format!("/dns/zones/{z}/records/");
            !store.records.keys().any(|k| k.starts_with(&prefix))
        })
        .cloned()
        .collect();
    for zone in gone {
        store.zones.remove(&zone);
        report.removed.push(format!("/dns/zones/{zone}"));
        store.dirty.insert(Dirty::Zone(zone));
    }
    report
}

/// Whether `s` is a GUID (`8-4-4-4-12` hex digits), as Azure subscription ids are.
fn is_guid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Why `name` is not an ARM resource-group name (1 to 90 letters, digits, `_`, `-`, `.`, `(`, `)`,
/// not ending with `.`); `None` when it is one.
fn invalid_resource_group(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.chars().count() > 90 {
        Some("is not 1 to 90 characters long")
    } else if !name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '(' | ')')) {
        Some("holds a character other than letters, digits, _, -, ., ( and )")
    } else if name.ends_with('.') {
        Some("ends with a period")
    } else {
        None
    }
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?` of `min..=max` characters.
fn is_gcp_name(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether `s` is a Google Cloud project id.
fn is_project_id(s: &str) -> bool {
    is_gcp_name(s, 6, 30)
}

/// Whether `s` is a Cloud DNS managed-zone name.
fn is_managed_zone_name(s: &str) -> bool {
    is_gcp_name(s, 1, 63)
}
