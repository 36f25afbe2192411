//! The world file's `gcp:` section (`gce:`, its earlier name, is read as well): the user's GCE
//! resources that exist before trellis runs, in the project the shoots live in.
//!
//! ```yaml
//! gcp:
//!   project: acme-shared          # the project (no --project needed); optional
//!   quotas: {routesPerNetwork: 400, firewallsPerProject: 200}   # optional; these are the defaults
//!   resources:                    # GCE JSON as a GET or list returns it; selfLink says what and where
//!     - selfLink: https://www.googleapis.com/compute/v1/projects/acme-shared/global/networks/shared-vpc
//!       autoCreateSubnetworks: false
//!     - selfLink: projects/acme-shared/regions/europe-west1/subnetworks/workers
//!       network: projects/acme-shared/global/networks/shared-vpc
//!       ipCidrRange: 10.250.0.0/16
//! ```
//!
//! A world file holds what exists: each resource is taken as a GET answered it. References are
//! resolved (a reference must point at a declared resource), GCE's defaults fill what a hand-written
//! resource leaves out, and ranges must not overlap; every field it declares — the server's own
//! (`id`, `creationTimestamp`, `fingerprint`, `routeType`, an address's `address`, …) included — is
//! kept as declared. Insert rules are for writes, not for loading the world: the routes GCE makes
//! itself (a subnet route, `nextHopNetwork` only; a peering route, `nextHopPeering`; the default
//! route to `default-internet-gateway`) are accepted as recorded. A service account is declared by
//! its `name` (`projects/P/serviceAccounts/EMAIL`) instead of a selfLink. An auto-mode network's
//! subnetworks are declared like any other (GCE names them after the network). Quotas do not apply
//! to declared resources.

use super::path::{Collection, GcePath};
use super::rules;
use super::store::{Entry, GceStore, Quotas};
use crate::core::world::{SyncReport, WorldFile, WorldSection};
use crate::core::Origin;
use crate::SimError;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A declared resource: where, and its body as declared.
pub(crate) type Declared = (GcePath, Map<String, Value>);

/// A parsed `gcp:` section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GceWorld {
    /// The section's name in the file (`gcp`, or its alias `gce`), for messages.
    pub section: &'static str,
    /// The project the shoots live in (`None`: `--project`, else the simulator's default).
    pub project: Option<String>,
    /// `None`: keep the simulator's quotas.
    pub quotas: Option<Quotas>,
    pub resources: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawGce {
    project: Option<String>,
    quotas: Option<RawQuotas>,
    #[serde(default)]
    resources: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawQuotas {
    routes_per_network: Option<usize>,
    firewalls_per_project: Option<usize>,
}

/// The `gcp:` section of world files ([`WorldSection`]; `gce:` is its alias).
pub struct Section;

/// The `gcp:` section of world files.
pub static SECTION: Section = Section;

impl WorldSection for Section {
    fn key(&self) -> &'static str {
        "gcp"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["gce"]
    }

    fn check(&self, world: &WorldFile) -> Result<(), SimError> {
        if let Some(gce) = GceWorld::of(world)? {
            gce.declared(&world.path)?;
        }
        Ok(())
    }
}

impl GceWorld {
    /// The `gcp:` (or `gce:`) section of `world` (`None`: it has none).
    pub fn of(world: &WorldFile) -> Result<Option<GceWorld>, SimError> {
        #[derive(Deserialize)]
        struct File {
            gcp: Option<RawGce>,
            gce: Option<RawGce>,
        }
        let file = world.read::<File>()?;
        let (section, raw) = match (file.gcp, file.gce) {
            (Some(raw), _) => ("gcp", raw),
            (None, Some(raw)) => ("gce", raw),
            (None, None) => return Ok(None),
        };
        Ok(Some(GceWorld::from_raw(section, raw)))
    }

    fn from_raw(section: &'static str, raw: RawGce) -> GceWorld {
        GceWorld {
            section,
            project: raw.project,
            quotas: raw.quotas.map(|q| {
                let d = Quotas::default();
                Quotas {
                    routes_per_network: q.routes_per_network.unwrap_or(d.routes_per_network),
                    firewalls_per_project: q.firewalls_per_project.unwrap_or(d.firewalls_per_project),
                }
            }),
            resources: raw.resources,
        }
    }

    /// The selfLink of a resource declared without one, from its `kind`, `name`, `region` (a
    /// regional kind; a URL or the bare name) and the section's `project`, as the design's example
    /// declares a subnetwork (`{kind: compute#subnetwork, name, region, …}`).
    fn link_of(&self, body: &Map<String, Value>) -> Option<String> {
        let project = self.project.as_deref()?;
        let kind = body.get("kind")?.as_str()?;
        let name = body.get("name")?.as_str()?;
        let collection = Collection::ALL.into_iter().find(|c| c.kind() == Some(kind))?;
        let last = |field: &str| body.get(field)?.as_str()?.rsplit('/').next().map(str::to_string);
        Some(match collection {
            Collection::Networks | Collection::Firewalls | Collection::Routes => {
                format!("projects/{project}/global/{}/{name}", collection.segment())
            }
            Collection::Subnetworks | Collection::Routers | Collection::Addresses => {
                format!("projects/{project}/regions/{}/{}/{name}", last("region")?, collection.segment())
            }
            Collection::Instances => format!("projects/{project}/zones/{}/instances/{name}", last("zone")?),
            Collection::ServiceAccounts | Collection::Operations => return None,
        })
    }

    /// Each declared resource with its path; every problem at once, one line each.
    pub(crate) fn declared(&self, file: &str) -> Result<Vec<Declared>, SimError> {
        let mut problems = Vec::new();
        let section = self.section;
        if let Some(project) = &self.project {
            if !valid_project(project) {
                problems.push(format!("{file}: {section}.project: '{project}' is not a GCP project id (6 to 30 lowercase letters, digits and hyphens, starting with a letter, not ending with a hyphen)"));
            }
        }
        let mut out: Vec<Declared> = Vec::new();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, r) in self.resources.iter().enumerate() {
            let at = format!("{file}: {section}.resources[{i}]");
            let Value::Object(body) = r else {
                problems.push(format!("{at}: not an object; declare the resource as GCE's GET returns it"));
                continue;
            };
            let link = body
                .get("selfLink")
                .or_else(|| body.get("name").filter(|n| n.as_str().is_some_and(|n| n.contains("/serviceAccounts/"))))
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| self.link_of(body));
            let Some(link) = link else {
                problems.push(format!("{at}: has no `selfLink`; add the resource's selfLink (projects/P/global/networks/N, projects/P/regions/R/subnetworks/S, …), or its `kind`, `name` (and `region`) with the section's `project:`"));
                continue;
            };
            let link = link.as_str();
            let path = match GcePath::parse(link) {
                Ok(p) if p.collection() != Collection::Operations => p,
                Ok(_) => {
                    problems.push(format!("{at}: '{link}' is an operation; declare resources only"));
                    continue;
                }
                Err(e) => {
                    problems.push(format!("{at}: {e}"));
                    continue;
                }
            };
            if let Some(name) = body.get("name").and_then(Value::as_str) {
                let own = if path.collection() == Collection::ServiceAccounts { path.key() } else { path.name.clone() };
                if name != own {
                    problems.push(format!("{at}: `name` '{name}' is not the selfLink's '{own}'"));
                    continue;
                }
            }
            if let Some(first) = seen.insert(path.key(), i) {
                problems
                    .push(format!("{at}: '{}' is declared twice ({section}.resources[{first}] and [{i}])", path.key()));
                continue;
            }
            out.push((path, body.clone()));
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(SimError::WorldInvalid { path: file.to_string(), problems })
        }
    }
}

/// GCP's rule for project ids: 6 to 30 lowercase letters, digits and hyphens, starting with a
/// letter and not ending with a hyphen.
pub fn valid_project(project: &str) -> bool {
    (6..=30).contains(&project.len())
        && project.starts_with(|c: char| c.is_ascii_lowercase())
        && !project.ends_with('-')
        && project.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The order resources are built in: what is referenced before what refers to it.
fn rank(c: Collection) -> u8 {
    match c {
        Collection::Networks => 0,
        Collection::Subnetworks => 1,
        Collection::Addresses => 2,
        Collection::Routers => 3,
        Collection::Firewalls | Collection::Routes | Collection::ServiceAccounts | Collection::Operations => 4,
        Collection::Instances => 5,
    }
}

/// The fields of a declared resource the simulator keeps in its own normal form rather than as
/// declared: references (resolved to full URLs, so that what uses what is known; the region and zone
/// are the selfLink's), a router's NATs
/// and a VM's interfaces (their references inside), and what GET computes (a network's
/// `subnetworks`, an address's `status` and `users`). Every other declared field is kept verbatim.
const NORMALISED: [&str; 12] = [
    "region",
    "zone",
    "network",
    "subnetwork",
    "nats",
    "networkInterfaces",
    "nextHopGateway",
    "nextHopInstance",
    "nextHopNetwork",
    "subnetworks",
    "status",
    "users",
];

/// Re-syncs the declared resources (origin World): world resources no longer declared go, declared
/// ones are (re)built; API-created resources stay. Nothing changes when a resource is wrong.
pub(crate) fn sync(store: &mut GceStore, world: &WorldFile) -> Result<SyncReport, SimError> {
    let Some(gce) = GceWorld::of(world)? else {
        return Ok(SyncReport::default());
    };
    let mut declared = gce.declared(&world.path)?;
    declared.sort_by_key(|(p, _)| rank(p.collection()));
    let keys: BTreeSet<String> = declared.iter().map(|(p, _)| p.key()).collect();
    // Declared auto-mode networks: each has its subnetwork in every auto-mode region, as on GCE
    // (a subnetwork declared by that name stands in for it).
    let auto_networks: Vec<&GcePath> = declared
        .iter()
        .filter(|(p, body)| {
            p.collection() == Collection::Networks && body.get("autoCreateSubnetworks") == Some(&json!(true))
        })
        .map(|(p, _)| p)
        .collect();
    let auto_urls: BTreeSet<String> = auto_networks.iter().map(|p| p.url()).collect();
    let mut next = store.clone();
    let mut report = SyncReport::default();
    let gone: Vec<String> = next
        .entries
        .iter()
        .filter(|(k, e)| e.origin == Origin::World && !keys.contains(*k))
        .filter(|(_, e)| {
            !(e.auto && e.value.get("network").and_then(Value::as_str).is_some_and(|n| auto_urls.contains(n)))
        })
        .map(|(k, _)| k.clone())
        .collect();
    for k in gone {
        next.take(&k);
        report.removed.push(k);
    }
    // Declared resources are rebuilt from scratch, so references between them resolve in order.
    let mut problems = Vec::new();
    let changed: BTreeSet<String> = declared
        .iter()
        .filter(|(p, body)| {
            !next.entries.get(&p.key()).is_some_and(|e| {
                e.origin == Origin::World && e.declared.as_ref() == Some(&Value::Object((*body).clone()))
            })
        })
        .map(|(p, _)| p.key())
        .collect();
    for (path, body) in &declared {
        let key = path.key();
        if !changed.contains(&key) {
            continue;
        }
        let existed = next.take(&key).is_some();
        match world_value(&mut next, path, body) {
            Ok(value) => {
                next.put(
                    key.clone(),
                    Entry { value, origin: Origin::World, auto: false, declared: Some(Value::Object(body.clone())) },
                );
                if existed {
                    report.updated.push(key)
                } else {
                    report.added.push(key)
                }
            }
            Err(e) => problems.push(format!(
                "{}: {} resource '{key}': {} ({} {})",
                world.path, gce.section, e.message, e.status, e.code
            )),
        }
    }
    for network in auto_networks {
        if let Err(e) = rules::auto_subnets(&mut next, network, Origin::World) {
            problems.push(format!(
                "{}: {} resource '{}': its auto-mode subnetworks: {} ({} {})",
                world.path,
                gce.section,
                network.key(),
                e.message,
                e.status,
                e.code
            ));
        }
    }
    if !problems.is_empty() {
        return Err(SimError::WorldInvalid { path: world.path.clone(), problems });
    }
    if let Some(q) = gce.quotas {
        next.quotas = q;
        next.meta_dirty = true;
    }
    if gce.project.is_some() && next.project != gce.project {
        next.project = gce.project.clone();
        next.meta_dirty = true;
    }
    *store = next;
    Ok(report)
}

fn world_value(
    store: &mut GceStore,
    path: &GcePath,
    body: &Map<String, Value>,
) -> Result<Value, crate::core::ApiError> {
    if path.collection() != Collection::ServiceAccounts {
        rules::check_name("name", &path.name)?;
    }
    let built = rules::build_declared(store, path, body.clone())?;
    let tick = store.tick();
    let mut value = rules::stamp(built, path, None, tick);
    for (f, v) in body {
        if !NORMALISED.contains(&f.as_str()) {
            value[f] = v.clone();
        }
    }
    Ok(value)
}
