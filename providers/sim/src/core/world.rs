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
//! gce:                                  # the simulated GCE cloud (see `gce::world`)
//!   resources:
//!     - selfLink: projects/p/global/networks/shared-vpc
//!       autoCreateSubnetworks: false
//! dns:                                  # the simulated DNS (see `dns::world`)
//!   zones: [{name: example.com, records: [{name: www.example.com, type: A, values: [192.0.2.1]}]}]
//! ```
//!
//!
//! The file has one section per simulated cloud: `azure:` is interpreted by the ARM module
//! (`arm::world`: its resources, their checks, and the sync into the store), `gce:` by the GCE
//! module (`gce::world`), `dns:` by the DNS module (`dns::world`); any other section is refused (a `gcp:` section, say, would
//! otherwise be ignored without a word: GCP's simulated cloud is `gce:`). A new cloud module adds
//! its section to [`WorldFile`] and validates it in [`WorldFile::parse`].

use crate::arm::world::{AzureWorld, RawAzure};
use crate::dns::world::{DnsWorld, RawDns};
use crate::gce::world::{GceWorld, RawGce};
use crate::SimError;
use serde::Deserialize;

/// A parsed world file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorldFile {
    /// Where it was read from, for messages.
    pub path: String,
    pub azure: Option<AzureWorld>,
    /// The simulated GCE cloud's section.
    pub gce: Option<GceWorld>,
    /// The simulated DNS's section: zones and the records already in them.
    pub dns: Option<DnsWorld>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorld {
    azure: Option<RawAzure>,
    gce: Option<RawGce>,
    dns: Option<RawDns>,
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
}

impl WorldFile {
    /// Parses a world file. Syntax errors, unknown keys and wrong types report `path:line:column`;
    /// resources without a valid ARM id or with a malformed body are reported all at once.
    pub fn parse(path: &str, text: &str) -> Result<WorldFile, SimError> {
        if text.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')) {
            return Ok(WorldFile { path: path.to_string(), ..WorldFile::default() });
        }
        let raw: RawWorld = trellis_planner::yaml::from_str(text).map_err(|e| {
            let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
            let message = trellis_planner::yaml::message(&e);
            SimError::WorldParse { path: path.to_string(), line, column, message }
        })?;
        let world = WorldFile {
            path: path.to_string(),
            azure: raw.azure.map(AzureWorld::from_raw),
            gce: raw.gce.map(GceWorld::from_raw),
            dns: raw.dns.map(DnsWorld::from_raw),
        };
        if let Some(azure) = &world.azure {
            azure.declared(&world.path)?;
        }
        if let Some(gce) = &world.gce {
            gce.declared(&world.path)?;
        }
        if let Some(dns) = &world.dns {
            dns.declared(&world.path)?;
        }
        Ok(world)
    }
}
