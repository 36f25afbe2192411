//! The world file's `seeds:` section: where each seed's API-server records point — the address of
//! its istio-ingress load balancer, a runtime fact of the landscape the Seed manifest does not
//! carry.
//!
//! ```yaml
//! seeds:
//!   - name: aws-eu1
//!     ingress: {ip: 203.0.113.10}        # or {hostname: lb.example.net}
//! ```
//!
//! `name` is the Seed's `metadata.name` (a DNS-1123 subdomain); `ingress` has exactly one of `ip`
//! (an IPv4 or IPv6 address) and `hostname` (a DNS name). Every problem is reported at once. The
//! simulated DNS answers `GET /seeds/{name}` with `{"name": "aws-eu1", "ingress": {"ip":
//! "203.0.113.10"}}` (`Ok(None)` for a seed the file does not declare) and refuses writes (405): a
//! sync makes the store hold exactly the declared seeds. A file without the section leaves the
//! seeds as they are.

use super::store::{normal_name, valid_name, Dirty, DnsStore};
use crate::core::world::{SyncReport, WorldFile, WorldSection};
use crate::SimError;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A declared seed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldSeed {
    pub name: String,
    pub ingress: Ingress,
}

/// Where a seed's istio-ingress load balancer answers: an address or a host name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ingress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
}

impl WorldSeed {
    /// The object `GET /seeds/{name}` answers.
    pub fn object(&self) -> Value {
        json!({"name": self.name, "ingress": self.ingress})
    }
}

/// The `seeds:` section of world files ([`WorldSection`]).
pub struct Section;

/// The `seeds:` section of world files.
pub static SECTION: Section = Section;

impl WorldSection for Section {
    fn key(&self) -> &'static str {
        "seeds"
    }

    fn check(&self, world: &WorldFile) -> Result<(), SimError> {
        if let Some(seeds) = of(world)? {
            declared(&seeds, &world.path)?;
        }
        Ok(())
    }
}

/// The `seeds:` section of `world` (`None`: it has none).
pub fn of(world: &WorldFile) -> Result<Option<Vec<WorldSeed>>, SimError> {
    #[derive(Deserialize)]
    struct File {
        seeds: Option<Vec<WorldSeed>>,
    }
    Ok(world.read::<File>()?.seeds)
}

/// Whether `name` is a Kubernetes object name (a DNS-1123 subdomain: at most 253 lowercase letters,
/// digits, `-` and `.`, starting and ending with a letter or digit).
fn is_object_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// Every problem of the section, one line each (`seeds[i]…: …`); `Ok` when there is none.
pub(crate) fn declared(seeds: &[WorldSeed], path: &str) -> Result<(), SimError> {
    let mut problems = Vec::new();
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, seed) in seeds.iter().enumerate() {
        let at = format!("{path}: seeds[{i}]");
        if !is_object_name(&seed.name) {
            problems.push(format!(
                "{at}.name: {:?} is not a Seed name (lowercase letters, digits, - and ., starting and ending with a letter or digit, at most 253)",
                seed.name
            ));
        }
        if let Some(first) = names.insert(seed.name.as_str(), i) {
            problems.push(format!("{at}.name: seed {} is declared twice (seeds[{first}] and seeds[{i}])", seed.name));
        }
        match (&seed.ingress.ip, &seed.ingress.hostname) {
            (Some(ip), None) => {
                if ip.parse::<std::net::IpAddr>().is_err() {
                    problems.push(format!("{at}.ingress.ip: {ip:?} is not an IPv4 or IPv6 address"));
                }
            }
            (None, Some(host)) => {
                if !valid_name(host) || normal_name(host).starts_with('*') {
                    problems.push(format!("{at}.ingress.hostname: {host:?} is not a host name"));
                }
            }
            _ => problems.push(format!(
                "{at}.ingress: give exactly one of ip (the load balancer's address) and hostname (its DNS name)"
            )),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(SimError::WorldInvalid { path: path.to_string(), problems })
    }
}

/// Makes `store` hold exactly the declared seeds. Assumes [`declared`] passed.
pub(crate) fn sync(store: &mut DnsStore, seeds: &[WorldSeed]) -> SyncReport {
    let mut report = SyncReport::default();
    let mut kept = BTreeSet::new();
    for seed in seeds {
        let key = seed.name.clone();
        kept.insert(key.clone());
        match store.seeds.get(&key) {
            Some(old) if old == seed => continue,
            Some(_) => report.updated.push(format!("/seeds/{key}")),
            None => report.added.push(format!("/seeds/{key}")),
        }
        store.seeds.insert(key.clone(), seed.clone());
        store.dirty.insert(Dirty::Seed(key));
    }
    let gone: Vec<String> = store.seeds.keys().filter(|k| !kept.contains(*k)).cloned().collect();
    for key in gone {
        store.seeds.remove(&key);
        report.removed.push(format!("/seeds/{key}"));
        store.dirty.insert(Dirty::Seed(key));
    }
    report
}
