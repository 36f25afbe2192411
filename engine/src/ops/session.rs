//! The session: where state and the simulated clouds live, which cloud each provider plans in, and
//! how workspaces are named.

use crate::backend::{Backend, SimPlace, StateLocation};
use anyhow::{Context as _, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use trellis_planner::cloud::CloudWrite;
use trellis_planner::retry::RetryPolicy;
use trellis_plans::Plan;
use trellis_providers::provider::{CloudCtx, Provider, ProviderError};
use trellis_sim::{ArmSim, DnsSim, GceSim, WorldFile};

/// The sled tree the simulated Azure cloud lives in, next to the state.
pub const SIM_TREE: &str = "sim/azure";
/// The sled tree the simulated cloud's audit log is kept in.
pub const SIM_AUDIT_TREE: &str = "sim/azure-audit";
/// The sled tree the simulated GCE cloud's audit log is kept in.
pub const SIM_GCE_AUDIT_TREE: &str = "sim/gce-audit";
/// The sled tree the simulated GCE cloud lives in, next to the state and the ARM simulator.
pub const GCE_SIM_TREE: &str = "sim/gce";
/// The sled tree the simulated DNS (zones, records, the seeds' DNSRecord objects) lives in.
pub const DNS_SIM_TREE: &str = "sim/dns";
/// The sled tree the simulated DNS's audit log is kept in.
pub const DNS_SIM_AUDIT_TREE: &str = "sim/dns-audit";
/// The account of the domains provider's calls: the simulated DNS has none.
pub const DNS_ACCOUNT: &str = "dns";
/// The GCP project of the shoots planned against the simulated GCE cloud (world files declare their
/// resources in it: `projects/trellis-sim/…`).
pub const SIM_PROJECT: &str = "trellis-sim";

/// The operations that write to the cloud; only their audit log is kept in the state dir.
const WRITING_OPERATIONS: [&str; 3] = ["apply", "destroy", "sim"];

/// State and cloud for one command.
pub struct Session {
    /// The cloud every stage talks to: the simulated cloud by default, or a real one.
    pub cloud: Arc<dyn CloudWrite>,
    /// The simulated cloud kept in the state dir (also when `cloud` is a real one: world files sync into it).
    pub sim: ArmSim,
    /// The cloud GCP shoots talk to: the simulated GCE cloud ([`Session::gce`]).
    pub gce_cloud: Arc<dyn CloudWrite>,
    /// The simulated GCE cloud kept in the state dir (tree [`GCE_SIM_TREE`]).
    pub gce: GceSim,
    /// The GCP project GCP shoots live in.
    pub project: String,
    /// The simulated DNS the domains provider's plans read and write (tree [`DNS_SIM_TREE`]): the
    /// seeds' DNSRecord objects and the zones the DNS extension writes them into.
    pub dns: DnsSim,
    /// The feature gates plans are made under (`--feature-gates`; every gate off by default).
    pub features: trellis_providers::features::Features,
    // After `cloud` and `sim`, which hold sled trees: dropped last, so the store can seal sled's files.
    /// The state (`--state`) and the simulated clouds' database (`--sim-dir`, or the sled state dir).
    pub store: Arc<Backend>,
    /// The subscription the shoots' credentials point at.
    pub subscription: String,
    pub retry: RetryPolicy,
    /// Take out-of-band changes to the user's BYO resources on purpose (`--accept-drift`).
    pub accept_drift: bool,
    /// Whether [`Session::close`] keeps the simulated cloud's audit log (commands that write the cloud).
    keep_audit: bool,
}

impl Session {
    /// Opens the sled state dir (creating it) and the simulated cloud inside it; syncs `--world` if given
    /// ([`Session::open_at`] with the dir and [`SimPlace::InState`]).
    pub fn open(state_dir: &Path, operation: &str, world: Option<&Path>) -> Result<(Session, Option<String>)> {
        Session::open_at(&StateLocation::Dir(state_dir.to_path_buf()), &SimPlace::InState, operation, world)
    }

    /// Opens the state (creating a state dir) and the simulated cloud ([`SimPlace`]: inside a sled state
    /// dir, or in a dir of its own); syncs `--world` if given. `operation` names the command (`plan`,
    /// `apply`, `destroy`, `sim`, …) in the dir's holder record and the database's lock records.
    /// If anything after opening the state fails, what this open created is removed again.
    pub fn open_at(
        state: &StateLocation,
        sim_place: &SimPlace,
        operation: &str,
        world: Option<&Path>,
    ) -> Result<(Session, Option<String>)> {
        let world = world.map(load_world).transpose()?;
        let store = Backend::open(state, sim_place, operation)?;
        let subscription = world.as_ref().and_then(|w| w.azure.as_ref()).and_then(|a| a.subscription_id.clone());
        let opened = store.tree(SIM_TREE).map_err(anyhow::Error::from).and_then(|tree| {
            let sim = ArmSim::open(tree, subscription)?;
            let gce = GceSim::open(store.tree(GCE_SIM_TREE)?)?;
            let dns = DnsSim::open(store.tree(DNS_SIM_TREE)?)?;
            let note = match &world {
                Some(world) => {
                    let mut report = sim.sync_world(world)?;
                    for other in [gce.sync_world(world)?, dns.sync_world(world)?] {
                        report.added.extend(other.added);
                        report.updated.extend(other.updated);
                        report.removed.extend(other.removed);
                    }
                    Some(format!(
                        "world: {} added, {} updated, {} removed",
                        report.added.len(),
                        report.updated.len(),
                        report.removed.len()
                    ))
                }
                None => None,
            };
            Ok(((sim, gce, dns), note))
        });
        let ((sim, gce, dns), note) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                let _ = store.discard();
                return Err(e);
            }
        };
        let store = Arc::new(store);
        // The simulated cloud lives in the state's database (a sled state dir without `--sim-dir`): its
        // writes join the state's grouped flushes, so a write and the commits made meanwhile are made
        // durable together (in a `--sim-dir` of its own, each state commit flushes it first). An ARM
        // call's write does not wait for a flush, nor is it written to sled: every flush of the database
        // holding the simulated cloud first writes the writes made before it in one batch, so the state
        // commit of its node (begun after the write) makes it durable before the node counts as done
        // (see `Persist::record`).
        let weak = Arc::downgrade(&store);
        let shared_flush: trellis_sim::SharedFlush = Arc::new(move || match weak.upgrade() {
            Some(store) => store.flush().map_err(|e| e.to_string()),
            None => Err("the state dir was closed".to_string()),
        });
        let deferred = sim.leave_flushes_to_owner(Arc::clone(&shared_flush))?;
        store.write_before_flush(move || deferred.write().map_err(|e| e.to_string()));
        gce.share_flush(Arc::clone(&shared_flush));
        dns.share_flush(shared_flush);
        let gce_cloud: Arc<dyn CloudWrite> = Arc::new(gce.clone());
        let cloud: Arc<dyn CloudWrite> = Arc::new(sim.clone());
        let subscription = sim.subscription();
        Ok((
            Session {
                cloud,
                sim,
                gce_cloud,
                gce,
                project: SIM_PROJECT.to_string(),
                dns,
                features: Default::default(),
                store,
                subscription,
                retry: RetryPolicy::default(),
                accept_drift: false,
                keep_audit: WRITING_OPERATIONS.contains(&operation),
            },
            note,
        ))
    }

    /// Talks to another cloud (e.g. the real Azure client) instead of the simulated one.
    pub fn use_cloud(&mut self, cloud: Arc<dyn CloudWrite>, subscription: String) {
        self.cloud = cloud;
        self.subscription = subscription;
    }

    /// `--cloud gcp`: GCP shoots talk to the real GCE client in `project` instead of the simulated GCE cloud.
    pub fn use_gce_cloud(&mut self, cloud: Arc<dyn CloudWrite>, project: String) {
        self.gce_cloud = cloud;
        self.project = project;
    }

    pub fn subscription(&self) -> String {
        self.subscription.clone()
    }

    /// What the providers' cloud-reading calls need: the account, the retry policy, `--accept-drift`.
    pub fn cloud_ctx(&self) -> CloudCtx {
        CloudCtx { account: self.subscription(), retry: self.retry.clone(), accept_drift: self.accept_drift }
    }

    /// The cloud of each provider with its context: Azure shoots talk to [`Session::cloud`] in the
    /// subscription, GCP shoots to [`Session::gce_cloud`] in [`Session::project`], domains plans to
    /// the simulated DNS ([`Session::dns`]; there is no real DNS client yet, so also with `--cloud azure|gcp`).
    pub fn clouds(&self) -> Clouds {
        let gcp = CloudCtx { account: self.project.clone(), ..self.cloud_ctx() };
        let dns = CloudCtx { account: DNS_ACCOUNT.to_string(), ..self.cloud_ctx() };
        let dns_cloud: Arc<dyn CloudWrite> = Arc::new(self.dns.clone());
        Clouds {
            by_type: BTreeMap::from([
                ("azure", (Arc::clone(&self.cloud), self.cloud_ctx())),
                ("gcp", (Arc::clone(&self.gce_cloud), gcp)),
                ("domains", (dns_cloud, dns)),
            ]),
        }
    }

    /// Ends the command: keeps the simulated cloud's audit log of a command that writes the cloud
    /// (`apply`, `destroy`, `trellis sim …`; a plan's reads stay in memory, so a plan writes nothing), then
    /// closes the state (see [`Backend::close`]).
    pub fn close(self) -> Result<()> {
        let kept = self.persist_audit();
        let store = self.release();
        match Arc::try_unwrap(store) {
            Ok(store) => store.close()?,
            Err(shared) => drop(shared), // someone still holds it: dropping closes it without sealing
        }
        kept
    }

    /// Ends a command that failed: keeps the audit log as [`Session::close`] does, then removes what this
    /// command created in the state dir if it recorded nothing (see [`Backend::discard`]), so a typo
    /// leaves no `.trellis` behind — never a directory another process holds.
    pub fn discard(self) -> Result<()> {
        let kept = self.persist_audit();
        let store = self.release();
        if let Ok(store) = Arc::try_unwrap(store) {
            store.discard()?;
        }
        kept
    }

    /// [`Session::close`] when `result` is a success, else [`Session::discard`]; returns `result`.
    pub fn finish<T>(self, result: Result<T>) -> Result<T> {
        match result {
            Ok(value) => {
                self.close()?;
                Ok(value)
            }
            Err(e) => {
                // The command's own error is the one to report.
                let _ = self.discard();
                Err(e)
            }
        }
    }

    fn persist_audit(&self) -> Result<()> {
        if self.keep_audit {
            let tree = self.store.tree(SIM_AUDIT_TREE)?;
            self.sim.persist_audit(&tree)?;
            let tree = self.store.tree(SIM_GCE_AUDIT_TREE)?;
            self.gce.persist_audit(&tree)?;
            self.dns.persist_audit(&self.store.tree(DNS_SIM_AUDIT_TREE)?)?;
        }
        Ok(())
    }

    /// Drops the cloud and the simulated cloud (which hold sled trees) and hands back the store.
    fn release(self) -> Arc<Backend> {
        let Session { cloud, sim, gce_cloud, gce, dns, store, .. } = self;
        drop(cloud);
        drop(sim);
        drop(gce_cloud);
        drop(gce);
        drop(dns);
        store
    }
}

/// The cloud each provider's shoots are planned and applied against, with the context of their
/// calls (the account: Azure's subscription, GCP's project), by `spec.provider.type`: a fleet may mix
/// providers, and each shoot's provider decides its cloud.
#[derive(Clone)]
pub struct Clouds {
    by_type: BTreeMap<&'static str, (Arc<dyn CloudWrite>, CloudCtx)>,
}

impl Clouds {
    /// The cloud and context of `provider`'s shoots.
    pub fn of(&self, provider: &dyn Provider) -> Result<(&Arc<dyn CloudWrite>, &CloudCtx), ProviderError> {
        self.by_type.get(provider.type_name()).map(|(cloud, ctx)| (cloud, ctx)).ok_or_else(|| {
            ProviderError::Other(
                format!("bug: no cloud is configured for provider {}; please report", provider.type_name()).into(),
            )
        })
    }
}

/// Reads and checks a world file.
pub fn load_world(path: &Path) -> Result<WorldFile> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read world file {}", path.display()))?;
    Ok(WorldFile::parse(&path.display().to_string(), &text)?)
}

/// What the workspace of a domains plan is called after the shoot's technical id
/// (`shoot--dev--a+domains`): a Shoot's infrastructure plan and its domains plan are kept apart (the
/// state refuses one workspace with two provider types), and no technical id holds a `+`.
pub const DOMAINS_WORKSPACE_SUFFIX: &str = "+domains";

/// The workspace a plan of `provider_type` for the shoot `technical_id` is kept in: the technical id
/// for its infrastructure plan, `<technical id>+domains` for its domains plan.
pub fn workspace_name(technical_id: &str, provider_type: &str) -> String {
    if provider_type == trellis_providers::domains::PROVIDER_TYPE {
        format!("{technical_id}{DOMAINS_WORKSPACE_SUFFIX}")
    } else {
        technical_id.to_string()
    }
}

/// The workspace of a plan ([`workspace_name`] of its shoot and provider).
pub fn plan_workspace(plan: &Plan) -> String {
    workspace_name(&plan.shoot, plan.provider.as_str())
}
