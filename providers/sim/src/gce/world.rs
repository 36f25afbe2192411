//! The world file's `gce:` section: the user's GCE resources that exist before trellis runs.
//!
//! ```yaml
//! gce:
//!   quotas: {routesPerNetwork: 400, firewallsPerProject: 200}   # optional; these are the defaults
//!   resources:                    # GCE JSON as a GET returns it; selfLink says what and where
//!     - selfLink: https://www.googleapis.com/compute/v1/projects/p/global/networks/shared-vpc
//!       autoCreateSubnetworks: false
//!     - selfLink: projects/p/regions/europe-west1/subnetworks/workers
//!       network: projects/p/global/networks/shared-vpc
//!       ipCidrRange: 10.250.0.0/16
//! ```
//!
//! Each resource passes the same checks and gets the same defaults as an insert (a reference must
//! point at a declared resource, names are RFC 1035, ranges must not overlap, …); what it declares of
//! the server's fields (`id`, `creationTimestamp`, `fingerprint`, an address's `address`, a subnet's
//! `externalIpv6Prefix`, `gatewayAddress`) is kept as declared. A service account is declared by its
//! `name` (`projects/P/serviceAccounts/EMAIL`) instead of a selfLink. An auto-mode network's
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

/// A parsed `gce:` section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GceWorld {
    /// `None`: keep the simulator's quotas.
    pub quotas: Option<Quotas>,
    pub resources: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawGce {
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

/// The `gce:` section of world files ([`WorldSection`]).
pub struct Section;

/// The `gce:` section of world files.
pub static SECTION: Section = Section;

impl WorldSection for Section {
    fn key(&self) -> &'static str {
        "gce"
    }

    fn check(&self, world: &WorldFile) -> Result<(), SimError> {
        if let Some(gce) = GceWorld::of(world)? {
            gce.declared(&world.path)?;
        }
        Ok(())
    }
}

impl GceWorld {
    /// The `gce:` section of `world` (`None`: it has none).
    pub fn of(world: &WorldFile) -> Result<Option<GceWorld>, SimError> {
        #[derive(Deserialize)]
        struct File {
            gce: Option<RawGce>,
        }
        Ok(world.read::<File>()?.gce.map(GceWorld::from_raw))
    }

    fn from_raw(raw: RawGce) -> GceWorld {
        GceWorld {
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

    /// Each declared resource with its path; every problem at once, one line each.
    pub(crate) fn declared(&self, file: &str) -> Result<Vec<Declared>, SimError> {
        let mut problems = Vec::new();
        let mut out: Vec<Declared> = Vec::new();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, r) in self.resources.iter().enumerate() {
            let at = format!("{file}: gce.resources[{i}]");
            let Value::Object(body) = r else {
                problems.push(format!("{at}: not an object; declare the resource as GCE's GET returns it"));
                continue;
            };
            let link = body
                .get("selfLink")
                .or_else(|| body.get("name").filter(|n| n.as_str().is_some_and(|n| n.contains("/serviceAccounts/"))));
            let Some(link) = link.and_then(Value::as_str) else {
                problems.push(format!("{at}: has no `selfLink`; add the resource's selfLink (projects/P/global/networks/N, projects/P/regions/R/subnetworks/S, …)"));
                continue;
            };
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
                problems.push(format!("{at}: '{}' is declared twice (gce.resources[{first}] and [{i}])", path.key()));
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

/// Server fields a world resource keeps as declared.
const KEPT: [&str; 8] = [
    "id",
    "selfLinkWithId",
    "creationTimestamp",
    "fingerprint",
    "address",
    "externalIpv6Prefix",
    "internalIpv6Prefix",
    "gatewayAddress",
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
            Err(e) => {
                problems.push(format!("{}: gce resource '{key}': {} ({} {})", world.path, e.message, e.status, e.code))
            }
        }
    }
    for network in auto_networks {
        if let Err(e) = rules::auto_subnets(&mut next, network, Origin::World) {
            problems.push(format!(
                "{}: gce resource '{}': its auto-mode subnetworks: {} ({} {})",
                world.path,
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
    let built = rules::build(store, path, body.clone(), None)?;
    let tick = store.tick();
    let mut value = rules::stamp(built, path, None, tick);
    for f in KEPT {
        if let Some(v) = body.get(f) {
            value[f] = v.clone();
        }
    }
    Ok(value)
}
