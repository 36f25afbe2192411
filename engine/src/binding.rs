//! A provider's cloud binding: everything about the cloud its shoots are planned and applied in that
//! is not the provider's pure stages — the simulated cloud (its sled trees, how it is opened on the
//! state's database, its world-file section, its audit log's name), the real client built from the
//! environment and the command line (`--cloud NAME` and the binding's own flags), and the simulated
//! cloud's runtime writers (`trellis sim …`). The registry ([`crate::registry`]) pairs each provider
//! with its binding; [`crate::ops::Session`] opens every binding's simulated cloud and keeps, per
//! provider, the cloud its shoots talk to. The three built in: [`crate::bindings`].

use crate::backend::Backend;
use crate::ops::Session;
use anyhow::Result;
use serde_json::Value;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;
use trellis_planner::cloud::{Call, CloudError, CloudRead, CloudWrite, ListFilter, Precondition};
use trellis_sim::{AuditFile, Faults, SharedFlush, SimError, SyncReport, WorldFile, WorldSection};

/// The storage of a simulated cloud: a tree of the state's sled database (re-exported, so a binding
/// implements against it without depending on sled itself).
pub use sled::Tree;

/// A simulated cloud as a session holds it, opened on its tree of the state's database (a cheap
/// handle: `ArmSim`, `GceSim`, `DnsSim`). Typed access is a downcast: [`Session::sim`].
pub trait Simulator: Any + Send + Sync {
    /// The simulated cloud as the cloud its provider's shoots talk to.
    fn cloud(&self) -> Arc<dyn CloudWrite>;

    /// Makes its writes durable through `flush`, the state database's grouped flush (see
    /// [`Session::open_with`]); `store` is that database, for a simulated cloud that leaves its writes
    /// to the owner's flushes altogether.
    fn share_flush(&self, flush: SharedFlush, store: &Backend) -> Result<(), SimError>;

    /// Re-syncs what its section of `world` declares (not audited, not faulted).
    fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError>;

    /// Appends the calls not persisted yet to `file` and syncs it; how many were written.
    fn persist_audit(&self, file: &AuditFile) -> Result<usize, SimError>;

    /// Keeps the audit log in `file` as calls are made (a served cloud, `trellis sim serve`).
    fn keep_audit(&self, _file: AuditFile) -> Result<usize, SimError> {
        Err(SimError::Storage("this simulated cloud is not served and keeps its audit log in memory".to_string()))
    }

    /// Every call since it was opened.
    fn calls(&self) -> Vec<Call>;

    /// A resource as a GET returns it, without audit, latency or faults.
    fn get_now(&self, id: &str) -> Option<Value>;

    /// Installs `faults` (latency, injected failures).
    fn set_faults(&self, faults: Faults);
}

/// Where a simulated cloud lives: its sled tree in the state's database (or the sim dir), and its
/// audit log beside that database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimTrees {
    /// Its resources (`sim/azure`).
    pub cloud: &'static str,
    /// Its audit log, kept for the commands that write: a file of JSON lines, relative to the
    /// database's directory (`audit/azure.jsonl`). Not in the database: the log only grows, and every
    /// open of the database reads the pages of all its trees.
    pub audit_file: &'static str,
    /// The tree an earlier trellis kept the audit log in (`sim/azure-audit`): read before the file,
    /// and moved into it by the first command that writes.
    pub legacy_audit: &'static str,
}

/// What the command line says about the clouds, for [`CloudBinding::choose`].
pub struct CloudChoice<'a> {
    /// `--cloud`: `sim`, or the [`CloudBinding::real_cloud`] name of one binding.
    pub cloud: &'a str,
    /// `--endpoint`: the API endpoint of the real client instead of the cloud's own.
    pub endpoint: Option<&'a str>,
    /// `--world`, if given: with a real client it may hold only the sections that stay simulated
    /// ([`CloudBinding::world_sections_beside_real`]; checked by [`crate::registry::Registry::choose`]).
    pub world: Option<&'a std::path::Path>,
    /// The bindings' own flags ([`CloudBinding::args`]), as parsed.
    pub flags: &'a clap::ArgMatches,
}

impl CloudChoice<'_> {
    /// The value of one of the bindings' own flags (`None`: not given, or not a flag of this command).
    pub fn flag(&self, id: &str) -> Option<&str> {
        self.flags.try_get_one::<String>(id).ok().flatten().map(String::as_str)
    }
}

/// What a binding's shoots talk to for one command.
pub enum Chosen {
    /// The simulated cloud, in this account (`None`: [`CloudBinding::sim_account`]).
    Sim(Option<String>),
    /// A real client, in this account.
    Real(Arc<dyn CloudWrite>, String),
    /// A real client for some ids, beside the simulated cloud for the rest: the ids `claims` accepts
    /// go to `real`, every other id to the binding's simulated cloud (the domains provider with a real
    /// DNS: record sets in the cloud's DNS, the seeds' `DNSRecord` objects in the simulated seed).
    /// The session composes the two ([`BesideCloud`]) once it opened the simulated cloud; `account` is
    /// the real client's.
    Beside { real: Arc<dyn CloudWrite>, account: String, claims: fn(&str) -> bool },
}

impl Chosen {
    /// The real client chosen, if any (`Real`, or the real half of `Beside`), with its account.
    pub fn real(&self) -> Option<(&Arc<dyn CloudWrite>, &str)> {
        match self {
            Chosen::Sim(_) => None,
            Chosen::Real(cloud, account) | Chosen::Beside { real: cloud, account, .. } => Some((cloud, account)),
        }
    }
}

/// [`Chosen::Beside`] composed: one cloud whose calls go to `real` for the ids `claims` accepts and to
/// `sim` (the binding's simulated cloud) for every other id. A list goes by its parent's id.
pub struct BesideCloud {
    pub real: Arc<dyn CloudWrite>,
    pub sim: Arc<dyn CloudWrite>,
    pub claims: fn(&str) -> bool,
}

impl BesideCloud {
    fn of(&self, id: &str) -> &Arc<dyn CloudWrite> {
        if (self.claims)(id) {
            &self.real
        } else {
            &self.sim
        }
    }
}

#[async_trait::async_trait]
impl CloudRead for BesideCloud {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        self.of(id).get(id).await
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.of(parent).list(parent, rtype).await
    }

    async fn list_where(&self, parent: &str, rtype: &str, filter: &ListFilter) -> Result<Vec<Value>, CloudError> {
        self.of(parent).list_where(parent, rtype, filter).await
    }

    fn round_trips(&self) -> bool {
        self.real.round_trips()
    }
}

#[async_trait::async_trait]
impl CloudWrite for BesideCloud {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        self.of(id).create(id, body).await
    }

    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        self.of(id).update(id, body, pre).await
    }

    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        self.of(id).remove(id, pre).await
    }
}

/// Whether `trellis sim show ID` looks `id` up in a binding's simulated cloud.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shows {
    /// Not this cloud's id.
    No,
    /// This cloud's id; the words naming the cloud when it is not found (`simulated DNS`).
    Yes(&'static str),
    /// Any id no other cloud claims.
    Otherwise(&'static str),
}

/// Where `trellis sim …` runs, for its messages.
pub struct SimCtx<'a> {
    /// The state (`--state`), as messages show it.
    pub state: &'a str,
    /// Where the simulated clouds live, as messages show it.
    pub sim_where: &'a str,
}

/// What a binding's `trellis sim` command did.
pub enum SimOutput {
    /// Text to print (a resource's JSON).
    Shown(String),
    /// A runtime writer ran: the calls it made (its writes are printed, also when a later call
    /// failed), then its summary line or its error.
    Wrote { calls: Vec<Call>, result: Result<String> },
}

/// How `trellis sim serve` serves the simulated clouds (its flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeOptions {
    /// Page lists after this many items (`--page-size`); `None`: the API's own default page.
    pub page_size: Option<usize>,
}

/// A simulated cloud served over HTTP (`trellis sim serve`).
pub struct Served {
    /// Whether a request path is this API's; `None`: every path no other served cloud claims.
    pub claims: Option<fn(&str) -> bool>,
    pub router: axum::Router,
}

/// One answer a world export recorded ([`CloudBinding::export_world`]): a resource as a GET (`asked`:
/// the id asked for) or a list (`asked`: `None`) returned it, untouched.
#[derive(Clone, Debug, PartialEq)]
pub struct Read {
    pub asked: Option<String>,
    pub value: Value,
}

/// A binding's section of an exported world file ([`CloudBinding::export_world`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ExportedSection {
    /// The top-level key (`azure`, `gcp`, `dns`, `seeds`).
    pub key: &'static str,
    /// The section, in the order it is written (a map: `subscriptionId`, `resources`, …; or a list:
    /// `seeds:`).
    pub body: Value,
    /// How many resources it declares.
    pub resources: usize,
}

/// A provider's cloud binding. Object-safe: the registry holds `&'static dyn CloudBinding`.
#[async_trait::async_trait]
pub trait CloudBinding: Send + Sync {
    /// The `spec.provider.type` of the provider it serves (`azure`).
    fn provider_type(&self) -> &'static str;

    /// Its simulated cloud's name where the clouds are listed (`trellis sim audit`: `azure`, `gce`).
    fn sim_name(&self) -> &'static str;

    /// The sled trees of its simulated cloud. Bindings with the same trees share one simulated cloud.
    fn trees(&self) -> SimTrees;

    /// Its section of world files (`None`: it reads none).
    fn world_section(&self) -> Option<&'static dyn WorldSection> {
        None
    }

    /// Further sections of world files its simulated cloud reads besides [`CloudBinding::world_section`]
    /// (the DNS's `seeds:`).
    fn more_world_sections(&self) -> &'static [&'static dyn WorldSection] {
        &[]
    }

    /// The sections of its world file ([`CloudBinding::world_section`],
    /// [`CloudBinding::more_world_sections`]) that still describe its simulated cloud when its shoots
    /// talk to a real client (the DNS's `seeds:`: the seeds stay simulated beside Azure DNS or Cloud
    /// DNS). With a real cloud, `--world` may hold only such sections; every other one describes what
    /// the real client reads from the cloud itself and is refused.
    fn world_sections_beside_real(&self) -> &'static [&'static dyn WorldSection] {
        &[]
    }

    /// Opens its simulated cloud on `tree`; `world` is the world file about to be synced into it
    /// (read only for what opening needs).
    fn open_sim(&self, tree: Tree, world: Option<&WorldFile>) -> Result<Arc<dyn Simulator>, SimError>;

    /// The account its shoots use in the simulated cloud unless a flag says otherwise.
    fn sim_account(&self, sim: &dyn Simulator) -> String;

    /// The `--cloud` value that selects its real client (`None`: it has none; the simulated cloud is used).
    fn real_cloud(&self) -> Option<&'static str> {
        None
    }

    /// Its own command-line flags, global to every command that opens a session (ids unique across
    /// the registry; values read as strings through [`CloudChoice::flag`]).
    fn args(&self) -> Vec<clap::Arg> {
        Vec::new()
    }

    /// The ids of its own flags ([`CloudBinding::args`]) that mean something to its simulated cloud
    /// too (GCP's `project`: the simulated project). The others configure the real client only:
    /// given on the command line with `--cloud sim` they are refused, not ignored
    /// ([`crate::registry::Registry::choose`]).
    fn sim_flags(&self) -> &'static [&'static str] {
        &[]
    }

    /// What its shoots talk to for this command: its real client when `--cloud` names it (built from
    /// the environment and the flags; every problem is an error before anything is opened), else the
    /// simulated cloud.
    async fn choose(&self, _choice: &CloudChoice<'_>) -> Result<Chosen> {
        Ok(Chosen::Sim(None))
    }

    /// `trellis world export`: its sections of a world file declaring `read` — every resource the
    /// shoots' plans read through its real client in `account` (with a [`Chosen::Beside`], through
    /// both halves: what stays simulated too), as the cloud returned it — one entry a resource, sorted
    /// by id, completed with what the section needs to load on its own (parents, resources the read
    /// ones reference), read through `cloud`. Empty: it writes no section.
    async fn export_world(
        &self,
        _read: Vec<Read>,
        _cloud: &dyn CloudRead,
        _account: &str,
    ) -> Result<Vec<ExportedSection>> {
        Ok(Vec::new())
    }

    /// The name of the HTTP API `trellis sim serve` serves its simulated cloud in (`ARM`; `None`: not
    /// served).
    fn http_api(&self) -> Option<&'static str> {
        None
    }

    /// Its simulated cloud over HTTP ([`CloudBinding::http_api`]), the API its real client speaks.
    fn serve(&self, _sim: &dyn Simulator, _opts: &ServeOptions) -> Option<Served> {
        None
    }

    /// `trellis sim show ID`: whether `id` is looked up in its simulated cloud.
    fn shows(&self, _id: &str) -> Shows {
        Shows::No
    }

    /// The ids `trellis sim show` takes for its simulated cloud, for the help (`an ARM id`).
    fn shows_help(&self) -> Option<&'static str> {
        None
    }

    /// Its `trellis sim` subcommands (runtime writers of its simulated cloud).
    fn sim_commands(&self) -> Vec<clap::Command> {
        Vec::new()
    }

    /// Runs its `trellis sim` subcommand `name` ([`CloudBinding::sim_commands`]).
    async fn run_sim(
        &self,
        _session: &Session,
        name: &str,
        _matches: &clap::ArgMatches,
        _ctx: &SimCtx<'_>,
    ) -> Result<SimOutput> {
        anyhow::bail!("bug: `trellis sim {name}` is not a command of the {} binding; please report", self.sim_name())
    }
}

impl std::fmt::Debug for dyn CloudBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CloudBinding({})", self.provider_type())
    }
}

/// `--annotation KEY=VALUE` values of a runtime writer, as a map.
pub(crate) fn parse_annotations(raw: &[String]) -> Result<BTreeMap<String, String>> {
    raw.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => anyhow::bail!("--annotation '{a}': expected KEY=VALUE"),
        })
        .collect()
}

/// A Service of a shoot (`--shoot`, `--namespace`, `--name`), for the runtime writers.
#[derive(clap::Args)]
pub(crate) struct ServiceRef {
    /// The shoot's technical id, `shoot--<project>--<name>`.
    #[arg(long, value_name = "ID")]
    pub shoot: String,
    /// The Service's namespace in the shoot.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// The Service's name.
    #[arg(long)]
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_sim::DnsSim;

    /// The ids a `Beside` claims reach its real client, every other id the simulated cloud — reads,
    /// lists (by their parent) and writes alike.
    #[tokio::test]
    async fn beside_routes_each_id_by_its_claim() {
        let real = DnsSim::in_memory();
        let sim = DnsSim::in_memory();
        let cloud = BesideCloud {
            real: Arc::new(real.clone()),
            sim: Arc::new(sim.clone()),
            claims: trellis_azure_client::dns::claims,
        };
        let object = "/seeds/s/namespaces/ns/dnsrecords/r";
        let _ = cloud.get("/dns/zones/example.com").await;
        let _ = cloud.list("/dns", "zones").await;
        let _ = cloud.get(object).await;
        let _ = cloud.list("/seeds/s/namespaces/ns", "dnsrecords").await;
        let _ = cloud.remove(object, &Precondition::None).await;
        let targets = |s: &DnsSim| s.calls().into_iter().map(|c| c.target).collect::<Vec<_>>();
        assert_eq!(targets(&real), ["/dns/zones/example.com", "/dns/zones"]);
        assert_eq!(targets(&sim), [object, "/seeds/s/namespaces/ns/dnsrecords", object]);
    }
}
