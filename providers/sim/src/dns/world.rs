//! The world file's `dns:` section: the DNS zones that exist before trellis runs, and the records
//! already in them (someone else's: trellis never writes or deletes them).
//!
//! ```yaml
//! dns:
//!   zones:
//!     - name: example.com                 # the zone's id, as a DNSRecord's spec.zone names it
//!       records:
//!         - {name: www.example.com, type: CNAME, ttl: 300, values: [lb.example.net]}
//! ```
//!
//! Zone and record names are DNS names (compared in lowercase, a trailing dot ignored); a record
//! must be inside its zone; `type` is one of `A`, `AAAA`, `CNAME`, `TXT`; `values` are required,
//! `ttl` defaults to 300. Every problem is reported at once. A sync makes the declared zones and
//! records exist as declared (a declared record replaces whatever was there under its name and type:
//! the world says someone else made it); declared records the file no longer lists are removed, and
//! so is a zone no longer listed unless a record the DNS controller wrote is still in it.

use super::store::{normal_name, record_id, valid_name, within, Dirty, DnsStore, Record, RecordType, Zone};
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
                }
                if let Some(first) = seen.insert((name.clone(), record.rtype.clone()), j) {
                    problems.push(format!(
                        "{at}: record {name} {} is declared twice (records[{first}] and records[{j}])",
                        record.rtype
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

/// Makes `store` hold what `world` declares (see the module doc). Assumes [`DnsWorld::declared`] passed.
pub(crate) fn sync(store: &mut DnsStore, world: &DnsWorld) -> SyncReport {
    let mut report = SyncReport::default();
    let mut declared_zones = BTreeSet::new();
    let mut declared_records = BTreeSet::new();
    for zone in &world.zones {
        let zone_name = normal_name(&zone.name);
        declared_zones.insert(zone_name.clone());
        if !store.zones.contains_key(&zone_name) {
            store.zones.insert(zone_name.clone(), Zone { name: zone_name.clone() });
            store.dirty.insert(Dirty::Zone(zone_name.clone()));
            report.added.push(format!("/dns/zones/{zone_name}"));
        }
        for record in &zone.records {
            let Some(rtype) = RecordType::parse(&record.rtype) else { continue };
            let fqdn = normal_name(&record.name);
            let id = record_id(&zone_name, &fqdn, rtype);
            let key = super::store::key(&id);
            let value = json!({
                "name": fqdn,
                "type": rtype.as_str(),
                "ttl": record.ttl.unwrap_or(WORLD_TTL),
                "values": record.values,
            });
            let new = Record { value, origin: Origin::World };
            match store.records.get(&key) {
                Some(old) if *old == new => {}
                Some(_) => report.updated.push(id),
                None => report.added.push(id),
            }
            store.records.insert(key.clone(), new);
            store.dirty.insert(Dirty::Record(key.clone()));
            declared_records.insert(key);
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
