//! GCE selfLinks: `projects/P/global/C/N`, `projects/P/regions/R/C/N`, IAM's
//! `projects/P/serviceAccounts/EMAIL`. Compared case-sensitively ([`GceIds`]); any API origin and
//! version prefix (`https://www.googleapis.com/compute/v1/`) is accepted and dropped.

use trellis_planner::ids::{GceIds, IdScheme};

/// The URL prefix GCE writes in front of every compute selfLink.
pub const COMPUTE_URL: &str = "https://www.googleapis.com/compute/v1/";

/// The resource collections the simulator knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Collection {
    Networks,
    Subnetworks,
    Routers,
    Addresses,
    Firewalls,
    Routes,
    ServiceAccounts,
    Operations,
    /// VMs (zonal): the bastion's, written by the runtime writers.
    Instances,
}

impl Collection {
    pub const ALL: [Collection; 9] = [
        Collection::Networks,
        Collection::Subnetworks,
        Collection::Routers,
        Collection::Addresses,
        Collection::Firewalls,
        Collection::Routes,
        Collection::ServiceAccounts,
        Collection::Operations,
        Collection::Instances,
    ];

    /// The collection's segment in a selfLink.
    pub fn segment(self) -> &'static str {
        match self {
            Collection::Networks => "networks",
            Collection::Subnetworks => "subnetworks",
            Collection::Routers => "routers",
            Collection::Addresses => "addresses",
            Collection::Firewalls => "firewalls",
            Collection::Routes => "routes",
            Collection::ServiceAccounts => "serviceAccounts",
            Collection::Operations => "operations",
            Collection::Instances => "instances",
        }
    }

    /// The resource's `kind` (IAM service accounts have none).
    pub fn kind(self) -> Option<&'static str> {
        Some(match self {
            Collection::Networks => "compute#network",
            Collection::Subnetworks => "compute#subnetwork",
            Collection::Routers => "compute#router",
            Collection::Addresses => "compute#address",
            Collection::Firewalls => "compute#firewall",
            Collection::Routes => "compute#route",
            Collection::Operations => "compute#operation",
            Collection::Instances => "compute#instance",
            Collection::ServiceAccounts => return None,
        })
    }

    fn scope(self) -> ScopeKind {
        match self {
            Collection::Networks | Collection::Firewalls | Collection::Routes => ScopeKind::Global,
            Collection::Subnetworks | Collection::Routers | Collection::Addresses => ScopeKind::Regional,
            Collection::ServiceAccounts => ScopeKind::Project,
            Collection::Instances => ScopeKind::Zonal,
            Collection::Operations => ScopeKind::Either,
        }
    }

    fn from_segment(s: &str) -> Option<Collection> {
        Collection::ALL.into_iter().find(|c| c.segment() == s)
    }

    /// The collection of a store key (a [`GcePath::key`]), without parsing the rest of it: the
    /// segment before the name.
    pub(crate) fn of_key(key: &str) -> Option<Collection> {
        key.rsplit('/').nth(1).and_then(Collection::from_segment)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ScopeKind {
    Global,
    Regional,
    Zonal,
    Project,
    Either,
}

/// Where a collection lives: a project's `global`, one of its regions, or the project itself (IAM).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Global,
    Region(String),
    Zone(String),
    Project,
}

/// A collection: `projects/P/global/networks`, `projects/P/regions/R/subnetworks`, ….
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CollectionPath {
    pub project: String,
    pub scope: Scope,
    pub collection: Collection,
}

/// One resource: its collection and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GcePath {
    pub parent: CollectionPath,
    pub name: String,
}

const SHAPES: &str = "expected projects/{project}/global/{networks|firewalls|routes|operations}/{name}, projects/{project}/regions/{region}/{subnetworks|routers|addresses|operations}/{name}, projects/{project}/zones/{zone}/{instances|operations}/{name} or projects/{project}/serviceAccounts/{email}";

impl CollectionPath {
    /// Parses a collection path (any origin prefix).
    pub fn parse(path: &str) -> Result<CollectionPath, String> {
        let key = GceIds.key(path);
        let segments: Vec<&str> = key.split('/').collect();
        parse_collection(&segments)
            .ok_or_else(|| format!("'{path}' is not a GCE collection; {SHAPES} without the name"))
    }

    /// `projects/P/global/networks` etc.
    pub fn path(&self) -> String {
        match &self.scope {
            Scope::Global => format!("projects/{}/global/{}", self.project, self.collection.segment()),
            Scope::Region(r) => format!("projects/{}/regions/{r}/{}", self.project, self.collection.segment()),
            Scope::Zone(z) => format!("projects/{}/zones/{z}/{}", self.project, self.collection.segment()),
            Scope::Project => format!("projects/{}/{}", self.project, self.collection.segment()),
        }
    }

    /// The region, for a regional collection (a zonal one: its zone's region, `europe-west1-b` →
    /// `europe-west1`).
    pub fn region(&self) -> Option<&str> {
        match &self.scope {
            Scope::Region(r) => Some(r),
            Scope::Zone(z) => z.rsplit_once('-').map(|(r, _)| r),
            _ => None,
        }
    }

    /// The zone, for a zonal collection.
    pub fn zone(&self) -> Option<&str> {
        match &self.scope {
            Scope::Zone(z) => Some(z),
            _ => None,
        }
    }

    /// The resource `name` in this collection.
    pub fn child(&self, name: &str) -> GcePath {
        GcePath { parent: self.clone(), name: name.to_string() }
    }
}

fn parse_collection(segments: &[&str]) -> Option<CollectionPath> {
    let (project, scope, coll) = match segments {
        ["projects", p, "global", c] => (*p, Scope::Global, *c),
        ["projects", p, "regions", r, c] if !r.is_empty() => (*p, Scope::Region(r.to_string()), *c),
        ["projects", p, "zones", z, c] if !z.is_empty() => (*p, Scope::Zone(z.to_string()), *c),
        ["projects", p, c] => (*p, Scope::Project, *c),
        _ => return None,
    };
    let collection = Collection::from_segment(coll)?;
    let fits = matches!(
        (collection.scope(), &scope),
        (ScopeKind::Global | ScopeKind::Either, Scope::Global)
            | (ScopeKind::Regional | ScopeKind::Either, Scope::Region(_))
            | (ScopeKind::Zonal | ScopeKind::Either, Scope::Zone(_))
            | (ScopeKind::Project, Scope::Project)
    );
    (fits && !project.is_empty()).then(|| CollectionPath { project: project.to_string(), scope, collection })
}

impl GcePath {
    /// Parses a selfLink (any origin prefix), e.g. `projects/p/regions/r/subnetworks/s`.
    pub fn parse(id: &str) -> Result<GcePath, String> {
        let key = GceIds.key(id);
        let segments: Vec<&str> = key.split('/').collect();
        let Some((name, rest)) = segments.split_last() else {
            return Err(format!("'{id}' is not a GCE resource; {SHAPES}"));
        };
        match parse_collection(rest) {
            Some(parent) if !name.is_empty() => Ok(GcePath { parent, name: name.to_string() }),
            _ => Err(format!("'{id}' is not a GCE resource; {SHAPES}")),
        }
    }

    /// The store key: the path from `projects/` on.
    pub fn key(&self) -> String {
        format!("{}/{}", self.parent.path(), self.name)
    }

    /// The selfLink as GCE writes it: the full compute URL (IAM: the relative name).
    pub fn url(&self) -> String {
        match self.parent.collection {
            Collection::ServiceAccounts => self.key(),
            _ => format!("{COMPUTE_URL}{}", self.key()),
        }
    }

    pub fn collection(&self) -> Collection {
        self.parent.collection
    }

    pub fn project(&self) -> &str {
        &self.parent.project
    }

    pub fn region(&self) -> Option<&str> {
        self.parent.region()
    }
}

/// A reference as a request may write it — a full URL, `projects/P/…`, or partial (`global/networks/n`,
/// `regions/r/subnetworks/s`, resolved in `project`) — as the path of a resource of `collection`.
pub fn resolve(reference: &str, project: &str, collection: Collection) -> Result<GcePath, String> {
    let r = reference.trim();
    let full = if r.starts_with("global/") || r.starts_with("regions/") || r.starts_with("zones/") {
        format!("projects/{project}/{r}")
    } else {
        r.to_string()
    };
    let path = GcePath::parse(&full)?;
    if path.collection() != collection {
        return Err(format!("'{reference}' is not a reference to {}", collection.segment()));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store key's collection, read from its segment before the name, is the one its full parse
    /// finds (also where a name is a collection's segment).
    #[test]
    fn the_collection_of_a_key_is_the_one_its_parse_finds() {
        for key in [
            "projects/p/global/networks/vpc",
            "projects/p/global/firewalls/networks",
            "projects/p/global/routes/r",
            "projects/p/regions/europe-west1/subnetworks/routers",
            "projects/p/regions/europe-west1/routers/rtr",
            "projects/p/regions/europe-west1/addresses/a",
            "projects/p/zones/europe-west1-b/instances/vm",
            "projects/p/serviceAccounts/sa@p.iam.gserviceaccount.com",
        ] {
            assert_eq!(Collection::of_key(key), Some(GcePath::parse(key).unwrap().collection()), "{key}");
        }
        assert_eq!(Collection::of_key("projects/p/global/nothing/x"), None);
    }
}
