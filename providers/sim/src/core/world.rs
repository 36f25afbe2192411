//! The world file: what exists in the cloud before trellis runs, and re-syncing the simulator to it.
//!
//! ```yaml
//! azure:
//!   subscriptionId: 6d3a9c1e-…          # the subscription the shoot's credentials point at
//!   otherSubscriptions: [9b1d4f2e-…]    # optional: others that resources below really live in
//!   resources:                          # ARM JSON as a GET returns it
//!     - id: /subscriptions/…/resourceGroups/hub-network
//!       location: westeurope
//!     - id: /subscriptions/…/resourceGroups/hub-network/providers/Microsoft.Network/virtualNetworks/hub-vnet/subnets/workers
//!       properties: {addressPrefix: 10.250.0.0/16, routeTable: {id: …}}
//! gcp:                                  # the simulated GCE cloud (see `gce::world`; `gce:` is an alias)
//!   project: my-project
//!   resources:
//!     - selfLink: projects/p/global/networks/shared-vpc
//!       autoCreateSubnetworks: false
//! dns:                                  # the simulated DNS (see `dns::world`)
//!   zones: [{name: example.com, records: [{name: www.example.com, type: A, values: [192.0.2.1]}]}]
//! seeds:                                # where seeds' API-server records point (see `dns::seeds`)
//!   - {name: aws-eu1, ingress: {ip: 203.0.113.10}}
//! ```
//!
//! The file has one section per simulated cloud, each owned by the cloud it is for: a
//! [`WorldSection`] names its top-level key and reads and checks its section out of the file
//! ([`WorldFile::read`]): `azure:` is the ARM module's (`arm::world`: its resources, their checks, and
//! the sync into the store), `gcp:` the GCE module's (`gce::world`; read from `gce:` too, its earlier
//! name), `dns:` and `seeds:` the DNS module's (`dns::world`, `dns::seeds`). [`WorldFile::parse_with`] takes the sections the
//! caller knows (the engine: those of its registered cloud bindings) and refuses any other top-level
//! key, naming the known ones (a misspelt section would otherwise be ignored without a word), and a
//! section given under two of its names;
//! [`WorldFile::parse`] knows this crate's four.

use crate::SimError;
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_saphyr::Spanned;
use std::fmt;

/// A parsed world file: its top-level sections, each read by the simulated cloud it is for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorldFile {
    /// Where it was read from, for messages.
    pub path: String,
    /// The file's text (empty for a file of comments only): each section is read from it.
    text: String,
    /// The top-level keys, in file order.
    sections: Vec<String>,
}

/// One simulated cloud's section of a world file.
pub trait WorldSection: Send + Sync {
    /// The top-level key (`azure`).
    fn key(&self) -> &'static str;

    /// Other top-level keys the section is also read from (an earlier name: `gce` for `gcp`); a
    /// file may use one of the names, not several.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// Reads and checks the section of `world` (every problem at once); `Ok` when it has none.
    fn check(&self, world: &WorldFile) -> Result<(), SimError>;
}

/// The sections of this crate's simulated clouds, in the order they are checked.
pub fn builtin_sections() -> [&'static dyn WorldSection; 4] {
    [&crate::arm::world::SECTION, &crate::gce::world::SECTION, &crate::dns::world::SECTION, &crate::dns::seeds::SECTION]
}

/// What a sync changed, as ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub removed: Vec<String>,
}

impl SyncReport {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.removed.is_empty()
    }

    /// Adds what `other` changed.
    pub fn extend(&mut self, other: SyncReport) {
        self.added.extend(other.added);
        self.updated.extend(other.updated);
        self.removed.extend(other.removed);
    }
}

impl WorldFile {
    /// Parses a world file with this crate's sections (`azure`, `gcp`, `dns`, `seeds`;
    /// [`WorldFile::parse_with`]).
    pub fn parse(path: &str, text: &str) -> Result<WorldFile, SimError> {
        WorldFile::parse_with(path, text, &builtin_sections())
    }

    /// Parses a world file whose sections are `sections`. Syntax errors, unknown keys (a top-level
    /// key of no section among them, naming theirs) and wrong types report `path:line:column`; each
    /// section's checks (resources without a valid id, malformed bodies) report all their problems at
    /// once, section by section in the order given.
    pub fn parse_with(path: &str, text: &str, sections: &[&dyn WorldSection]) -> Result<WorldFile, SimError> {
        if text.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')) {
            return Ok(WorldFile { path: path.to_string(), ..WorldFile::default() });
        }
        let keys: TopLevel = trellis_planner::yaml::from_str(text).map_err(|e| parse_error(path, &e))?;
        let known: Vec<&str> = sections.iter().map(|s| s.key()).collect();
        let accepted: Vec<&str> =
            sections.iter().flat_map(|s| std::iter::once(s.key()).chain(s.aliases().iter().copied())).collect();
        if let Some(unknown) = keys.0.iter().find(|k| !accepted.contains(&k.value.as_str())) {
            let message = format!("unknown field `{}`, expected one of {}", unknown.value, known.join(", "));
            let (line, column) = (unknown.referenced.line(), unknown.referenced.column());
            return Err(SimError::WorldParse { path: path.to_string(), line, column, message });
        }
        for section in sections {
            let names: Vec<&Spanned<String>> = keys
                .0
                .iter()
                .filter(|k| k.value == section.key() || section.aliases().contains(&k.value.as_str()))
                .collect();
            if let [_, second, ..] = names.as_slice() {
                let message = format!(
                    "`{}` and `{}` are one section ({} is the name, {} its alias): keep one",
                    names[0].value,
                    second.value,
                    section.key(),
                    section.aliases().join(", ")
                );
                let (line, column) = (second.referenced.line(), second.referenced.column());
                return Err(SimError::WorldParse { path: path.to_string(), line, column, message });
            }
        }
        let world = WorldFile {
            path: path.to_string(),
            text: text.to_string(),
            sections: keys.0.into_iter().map(|k| k.value).collect(),
        };
        for section in sections {
            section.check(&world)?;
        }
        Ok(world)
    }

    /// Whether the file has a top-level `key`.
    pub fn has(&self, key: &str) -> bool {
        self.sections.iter().any(|s| s == key)
    }

    /// Reads the file as `T`: a section's reader, a struct whose one field is the section's key
    /// (others are skipped, so `T` must not deny unknown fields) — errors report `path:line:column`
    /// in the file.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, SimError> {
        if self.text.is_empty() {
            return trellis_planner::yaml::from_str("{}").map_err(|e| parse_error(&self.path, &e));
        }
        trellis_planner::yaml::from_str(&self.text).map_err(|e| parse_error(&self.path, &e))
    }
}

fn parse_error(path: &str, e: &serde_saphyr::Error) -> SimError {
    let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
    let message = trellis_planner::yaml::message(e);
    SimError::WorldParse { path: path.to_string(), line, column, message }
}

/// A world file's top-level keys, where they are (the values are skipped).
struct TopLevel(Vec<Spanned<String>>);

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TopLevel, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = TopLevel;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of world-file sections")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
                let mut keys = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.push(key);
                }
                Ok(TopLevel(keys))
            }
        }
        deserializer.deserialize_map(Keys)
    }
}
