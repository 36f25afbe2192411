//! Plan, apply and destroy over a fleet of shoots.
//!
//! Flow (one direction): manifests → per shoot: workspace from state → provider plan (validate,
//! discover, pre-flight, desired, diff, artifacts) → [`FleetPlan`] → apply: lock, executor, state
//! committed after every node, artifacts re-rendered from the cloud as it is afterwards.

use crate::backend::{Backend, SimPlace, StateLocation};
use crate::shard::{Shard, ShardCount};
use anyhow::{bail, Context as _, Result};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trellis_planner::cloud::{Audited, Call, CloudWrite};
use trellis_planner::exec::{self, ExecOptions, NodeResult, Observer};
use trellis_planner::retry::RetryPolicy;
use trellis_planner::write::WriteLocks;
use trellis_plans::render::{RenderedText, TextOptions};
use trellis_plans::{escape, Action, Node, Plan, PlanSet, RenderedPlan};
use trellis_providers::features::Features;
use trellis_providers::field::ErrorList;
use trellis_providers::manifest::{self, ManifestError};
use trellis_providers::metadata;
use trellis_providers::provider::{
    CloudCtx, FleetShoot, FleetWarning, Orphan, Planned, Provider, ProviderError, ProviderShoot,
};
use trellis_providers::registry::Registry;
use trellis_sim::{ArmSim, DnsSim, GceSim, WorldFile};
use trellis_state::{Acquired, LockInfo, StateStore, StoredResource, Workspace};

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

/// One plan input from the manifests: a Shoot with the provider that parsed it (its infrastructure
/// plan), or a Shoot paired with its Seed for the domains provider (its domains plan).
pub struct ShootInput {
    pub file: PathBuf,
    pub provider: &'static dyn Provider,
    pub shoot: Box<dyn ProviderShoot>,
}

impl ShootInput {
    /// The workspace its plan is kept in ([`workspace_name`]).
    pub fn id(&self) -> String {
        workspace_name(&self.shoot.technical_id(), self.provider.type_name())
    }
}

/// Loads every Shoot from the given files and directories, under every feature gate's default
/// ([`load_shoots_with`]).
pub fn load_shoots(paths: &[PathBuf]) -> Result<Vec<ShootInput>> {
    load_shoots_with(paths, Features::default())
}

/// Loads every Shoot from the given files and directories: each Shoot's infrastructure plan input,
/// then the domains plan input of each Shoot whose Seed is among them ([`domains_inputs`]).
pub fn load_shoots_with(paths: &[PathBuf], features: Features) -> Result<Vec<ShootInput>> {
    Ok(load_inputs(paths, features)?.0)
}

/// [`load_shoots_with`], and the Seeds among the inputs ([`check_seeds`] reads them).
pub fn load_inputs(paths: &[PathBuf], features: Features) -> Result<(Vec<ShootInput>, Vec<manifest::LoadedSeed>)> {
    if paths.is_empty() {
        bail!("no manifests given; pass -f FILE or -f DIR (a directory is a fleet: every Shoot in it)");
    }
    let loaded = manifest::load(paths)?;
    if loaded.shoots.is_empty() && loaded.domains_only.is_empty() {
        return Err(ManifestError::NoManifests { paths: paths.to_vec() }.into());
    }
    let domains = domains_inputs(&loaded, features)?;
    let mut inputs: Vec<ShootInput> = Vec::with_capacity(loaded.shoots.len() + domains.len());
    inputs.extend(loaded.shoots.into_iter().map(|l| ShootInput { file: l.file, provider: l.provider, shoot: l.shoot }));
    inputs.extend(domains);
    Ok((inputs, loaded.seeds))
}

/// The domains plan inputs of `loaded`: each Shoot whose `spec.seedName` names a loaded Seed
/// ([`manifest::pair_seeds`]), paired by [`trellis_providers::domains::pair`] under `features`, in
/// shoot order, then those of the Shoots without an infrastructure plan
/// ([`manifest::DomainsOnlyShoot`], paired by [`manifest::load`]), each with a note on stderr saying
/// that its infrastructure is not planned. A Shoot whose Seed is not among the inputs (while some
/// Seed is) gets a note on stderr and its infrastructure plan only; without Seeds nothing is said.
pub fn domains_inputs(loaded: &manifest::Loaded, features: Features) -> Result<Vec<ShootInput>> {
    let pairing = manifest::pair_seeds(loaded)?;
    for u in &pairing.unpaired {
        let shoot = &loaded.shoots[u.shoot];
        let names: Vec<&str> = loaded.seeds.iter().map(|s| s.seed.metadata.name.as_str()).collect();
        let seed = if u.seed_name.is_empty() {
            "no spec.seedName".to_string()
        } else {
            format!("spec.seedName {:?}", u.seed_name)
        };
        eprintln!(
            "note: {} ({}): {seed} names none of the given Seeds ({}); no domains plan, its infrastructure plan only",
            trellis_plans::escape::text(&shoot.technical_id()),
            trellis_plans::escape::text(&shoot.file.display().to_string()),
            trellis_plans::escape::text(&names.join(", "))
        );
    }
    let provider = Registry::builtin().domains();
    let mut out = Vec::with_capacity(pairing.pairs.len());
    let mut failures = Vec::new();
    for pair in &pairing.pairs {
        let l = &loaded.shoots[pair.shoot];
        let seed = &loaded.seeds[pair.seed].seed;
        let paired = l
            .shoot
            .to_json()
            .map_err(|e| ProviderError::Other(Box::new(e)))
            .and_then(|json| trellis_providers::domains::pair(&json, seed, features, &l.file));
        match paired {
            Ok(shoot) => out.push(ShootInput { file: l.file.clone(), provider, shoot }),
            Err(e) => failures.push((workspace_name(&l.technical_id(), provider.type_name()), l.file.clone(), e)),
        }
    }
    for d in &loaded.domains_only {
        let id = d.shoot.technical_id();
        eprintln!(
            "note: {} ({}): {}; no infrastructure plan is attempted (its infrastructure is not checked), its domains plan only",
            trellis_plans::escape::text(&id),
            trellis_plans::escape::text(&d.file.display().to_string()),
            trellis_plans::escape::text(&d.reason)
        );
        let seed_name = d.shoot.spec.seed_name.as_deref().unwrap_or_default();
        let Some(seed) = loaded.seeds.iter().find(|s| s.seed.metadata.name == seed_name) else {
            // [`manifest::load`] refuses such a Shoot already; said again for any other caller.
            bail!(
                "{}: shoot {id}: {}, so it gets a domains plan only, which needs its Seed {seed_name:?} (spec.seedName) among the inputs; pass the Seed with -f",
                d.file.display(),
                d.reason
            );
        };
        let paired = serde_json::to_value(&d.shoot)
            .map_err(|e| ProviderError::Other(Box::new(e)))
            .and_then(|json| trellis_providers::domains::pair(&json, &seed.seed, features, &d.file));
        match paired {
            Ok(shoot) => out.push(ShootInput { file: d.file.clone(), provider, shoot }),
            Err(e) => failures.push((workspace_name(&id, provider.type_name()), d.file.clone(), e)),
        }
    }
    if !failures.is_empty() {
        return Err(FleetError { failures }.into());
    }
    Ok(out)
}

/// A planned shoot, ready to show or apply.
pub struct ShootPlan {
    pub input_file: PathBuf,
    pub provider: &'static dyn Provider,
    pub shoot: Box<dyn ProviderShoot>,
    pub workspace: Workspace,
    pub planned: Planned,
}

/// Why some shoots of a fleet could not be planned: each shoot's errors, one per line.
#[derive(Debug)]
pub struct FleetError {
    pub failures: Vec<(String, PathBuf, ProviderError)>,
}

impl FleetError {
    /// One line per shoot (its file, the error), then its field errors one per line, as written
    /// (unescaped: [`Lines`] escapes each when displayed).
    fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (shoot, file, err) in &self.failures {
            lines.push(format!("{shoot} ({}): {err}", file.display()));
            match err {
                ProviderError::Invalid(errs) => lines.extend(errs.iter().map(|e| e.to_string())),
                ProviderError::Preflight(errs) => lines.extend(errs.iter().map(|e| e.to_string())),
                _ => {}
            }
        }
        lines
    }
}

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Lines(self.lines()).fmt(f)
    }
}

/// An error that is a list, one fact a line (a fleet's failures, a manifest's field errors). Each
/// line is escaped when displayed ([`escape::text`]: a newline inside it is shown as `\n`), so the
/// only line breaks are the list's own: a value quoted in a line cannot start a line of its own.
/// Every other error is printed as one line ([`list_lines`]).
#[derive(Debug)]
pub struct Lines(pub Vec<String>);

impl std::fmt::Display for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, line) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            f.write_str(&escape::text(line))?;
        }
        Ok(())
    }
}

impl std::error::Error for Lines {}

/// The lines of `e` when it is a list, one fact a line ([`Lines`], [`FleetError`], a world file's
/// problems, a manifest error listing entries or field errors), unescaped, the contexts above the
/// list before its first line; `None` for every other error, which is printed as one line.
pub fn list_lines(e: &anyhow::Error) -> Option<Vec<String>> {
    let mut above: Vec<String> = Vec::new();
    for cause in e.chain() {
        let lines = if let Some(l) = cause.downcast_ref::<Lines>() {
            l.0.clone()
        } else if let Some(f) = cause.downcast_ref::<FleetError>() {
            f.lines()
        } else if let Some(trellis_sim::SimError::WorldInvalid { problems, .. }) = cause.downcast_ref() {
            problems.clone()
        } else if let Some(m) = cause.downcast_ref::<ManifestError>().filter(|m| m.is_list()) {
            m.to_string().split('\n').map(str::to_string).collect()
        } else {
            above.push(cause.to_string());
            continue;
        };
        let mut lines = lines;
        if let Some(first) = lines.first_mut() {
            let head: Vec<&String> = above.iter().filter(|a| !a.contains(first.as_str())).collect();
            if !head.is_empty() {
                *first = format!("{}: {first}", head.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(": "));
            }
        }
        return Some(lines);
    }
    None
}

impl std::error::Error for FleetError {}

/// Plans the shoots of `paths` (files, or directories of them) for a caller that needs them all at
/// once (`apply -f`, `destroy`, the scenario tests): [`plan_fleet_streaming`] — the one fleet planner
/// `trellis plan` runs — with every shoot's [`ShootPlan`] collected, the fleet checks' warnings added,
/// in workspace order (a shoot's infrastructure plan, then its domains plan). Reads only.
pub async fn plan_files(
    session: &Session,
    paths: &[PathBuf],
    destroy: bool,
    shard: Option<Shard>,
) -> Result<FleetPlans> {
    let files = read_ahead(list_manifest_files(paths)?);
    let opts = StreamOptions { keep: true, destroy, shard, ..StreamOptions::default() };
    let mut plans = Vec::new();
    let summary = plan_fleet_streaming(session, paths, files, opts, |p| {
        plans.extend(p.shoot_plan);
        Ok(())
    })
    .await?;
    add_fleet_warnings(plans.iter_mut().map(|p| &mut p.planned.plan), summary.fleet_warnings.clone());
    plans.sort_by(|a, b| a.workspace.shoot.cmp(&b.workspace.shoot));
    Ok(FleetPlans { plans, summary })
}

/// What [`plan_files`] gives: the planned shoots and the stream's summary (e.g. the shard's count).
pub struct FleetPlans {
    pub plans: Vec<ShootPlan>,
    pub summary: StreamSummary,
}

/// Plans shoots that are not in files (a saved plan's manifests, [`check_saved_plan`]) with the same
/// per-shoot step as [`plan_fleet_streaming`] ([`plan_one`]) and the same fleet-wide checks; in
/// workspace order. Reads only.
pub async fn plan_fleet(session: &Session, shoots: Vec<ShootInput>, destroy: bool) -> Result<Vec<ShootPlan>> {
    let shared = Arc::new(Shared::new(session, StreamOptions { destroy, ..StreamOptions::default() }));
    let mut plans = plan_inputs(&shared, shoots).await?;
    // By workspace: a shoot's infrastructure plan, then its domains plan (`<id>` < `<id>+domains`).
    plans.sort_by(|a, b| a.workspace.shoot.cmp(&b.workspace.shoot));
    let warnings = check_fleet(session, &plans).await?;
    add_fleet_warnings(plans.iter_mut().map(|p| &mut p.planned.plan), warnings);
    Ok(plans)
}

/// Plans every input (concurrently) with [`plan_one`]. Plans come in input order; every failure
/// fails the call ([`FleetError`], in input order). No fleet-wide check.
async fn plan_inputs(shared: &Arc<Shared>, shoots: Vec<ShootInput>) -> Result<Vec<ShootPlan>> {
    let mut tasks = tokio::task::JoinSet::new();
    for (i, input) in shoots.into_iter().enumerate() {
        let shared = Arc::clone(shared);
        tasks.spawn(async move {
            let (id, file) = (input.id(), input.file.clone());
            (i, id, file, plan_one(&shared, input).await)
        });
    }
    let mut done = Vec::new();
    let mut failures = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let (i, id, file, res) = joined.context("a planning task panicked")?;
        match res {
            Ok(planned) => done.push((i, planned)),
            Err(NotPlanned::Other(e)) => return Err(e),
            Err(NotPlanned::Failed(e)) => failures.push((i, id, file, e)),
        }
    }
    if !failures.is_empty() {
        failures.sort_by_key(|f| f.0);
        return Err(FleetError { failures: failures.into_iter().map(|(_, s, f, e)| (s, f, e)).collect() }.into());
    }
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, p)| p).collect())
}

/// Why [`plan_one`] gave no plan.
enum NotPlanned {
    /// Its workspace could not be read, or its plan could not be completed.
    Other(anyhow::Error),
    /// The provider refused it (invalid, pre-flight, the cloud).
    Failed(ProviderError),
}

/// The one per-shoot step of every fleet planner: the shoot's workspace, the provider's plan (or
/// destroy plan, [`StreamOptions::destroy`]) through the session's cloud, and the plan's `source`.
async fn plan_one(shared: &Shared, input: ShootInput) -> Result<ShootPlan, NotPlanned> {
    let id = input.id();
    let ws = shared.store.load(&id).map_err(|e| NotPlanned::Other(e.into()))?.unwrap_or_else(|| Workspace::new(&id));
    let (cloud, ctx) = shared.clouds.of(input.provider).map_err(NotPlanned::Failed)?;
    let (provider, shoot) = (input.provider, input.shoot.as_ref());
    let planned = if shared.opts.destroy {
        provider.plan_destroy(shoot, &ws, cloud.as_ref(), ctx).await
    } else {
        provider.plan(shoot, &ws, cloud.as_ref(), ctx).await
    };
    let mut planned = planned.map_err(NotPlanned::Failed)?;
    let json = shoot.to_json().map_err(|e| NotPlanned::Other(e.into()))?;
    let file = trellis_plans::Source::file_of(&input.file, shared.cwd.as_deref());
    planned.plan.source = Some(trellis_plans::Source { file, shoot: json });
    let ShootInput { file, provider, shoot } = input;
    Ok(ShootPlan { input_file: file, provider, shoot, workspace: ws, planned })
}

/// Adds the fleet checks' warnings ([`Provider::check_fleet`]) to the plans of the shoots they are
/// for, after the plans' own warnings.
pub fn add_fleet_warnings<'a>(plans: impl Iterator<Item = &'a mut Plan>, warnings: Vec<FleetWarning>) {
    if warnings.is_empty() {
        return;
    }
    let mut by_shoot: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for w in warnings {
        by_shoot.entry(w.shoot).or_default().push(w.message);
    }
    for plan in plans {
        if let Some(found) = by_shoot.remove(&plan.shoot) {
            plan.warnings.extend(found);
        }
    }
}

/// Fleet-wide rules: one technical id per shoot, then each provider's own rules over its shoots
/// ([`Provider::check_fleet`]; Azure: a BYO subnet belongs to one shoot only), against the fleet
/// and the shoots already applied in this state. Returns the checks' warnings.
async fn check_fleet(session: &Session, plans: &[ShootPlan]) -> Result<Vec<FleetWarning>> {
    let mut seen: BTreeMap<&str, &Path> = BTreeMap::new();
    for p in plans {
        if let Some(other) = seen.insert(&p.workspace.shoot, &p.input_file) {
            bail!(
                "shoot {} is defined twice: {} and {}; each shoot must appear once",
                p.planned.plan.shoot,
                other.display(),
                p.input_file.display()
            );
        }
    }
    let facts: Vec<FleetFacts<'_>> =
        plans.iter().map(|p| FleetFacts { provider: p.provider, plan: &p.planned.plan, file: &p.input_file }).collect();
    let warnings = check_fleet_facts(session, &|shoot| seen.contains_key(shoot), &facts).await?;
    check_seeds(
        plans.iter().map(|p| (p.shoot.as_ref(), p.input_file.as_path())),
        &[],
        session.features,
        Some(session.store.as_ref()),
    )?;
    Ok(warnings)
}

/// The Seed-level rules of GEP-0066 ([`trellis_providers::domains::check_seed`]) over each Seed and
/// the domains inputs of the shoots on it, Seeds in name order. The Seed as last seen is not known
/// (trellis keeps no Seed in state): the applied shoots' internal domains stand in for it. With a `store`,
/// the internal domains in use are also read from the domains workspaces in state
/// ([`internal_domains_in_use`]): every shoot trellis applied on the Seed, in this run or not.
///
/// `seeds` are the Seeds of the run and `features` the run's gates: a Seed without any of its shoots
/// among `inputs` is checked too, against the shoots applied on it (with a `store`).
pub fn check_seeds<'a>(
    inputs: impl Iterator<Item = (&'a dyn ProviderShoot, &'a Path)>,
    seeds: &[manifest::LoadedSeed],
    features: Features,
    store: Option<&dyn StateStore>,
) -> Result<()> {
    use trellis_providers::domains::{check_seed, DomainsShoot};
    let mut by_seed: BTreeMap<String, Vec<(&DomainsShoot, &Path)>> = BTreeMap::new();
    for (shoot, file) in inputs {
        if let Some(ds) = shoot.downcast_ref::<DomainsShoot>() {
            by_seed.entry(ds.seed.metadata.name.clone()).or_default().push((ds, file));
        }
    }
    // The Seeds without a shoot in this run (names are unique: [`manifest::pair_seeds`]).
    let alone: Vec<&manifest::LoadedSeed> =
        seeds.iter().filter(|s| !by_seed.contains_key(&s.seed.metadata.name)).collect();
    // Read with the gate on (the in-use rule) and off (the internal domain must not change while
    // applied shoots are on the seed); only when some Seed is checked.
    let applied = match store {
        Some(store) if !by_seed.is_empty() || !alone.is_empty() => internal_domains_in_use(store)?,
        _ => BTreeMap::new(),
    };
    let mut failures = Vec::new();
    for (name, shoots) in &by_seed {
        let (first, file) = shoots[0];
        let all: Vec<&DomainsShoot> = shoots.iter().map(|(ds, _)| *ds).collect();
        let used = applied.get(name).map(Vec::as_slice).unwrap_or_default();
        if let Err(e) = check_seed(&first.seed, None, &all, used, first.features) {
            failures.push((format!("seed {name}"), file.to_path_buf(), e));
        }
    }
    for s in alone {
        let name = &s.seed.metadata.name;
        let used = applied.get(name).map(Vec::as_slice).unwrap_or_default();
        if let Err(e) = check_seed(&s.seed, None, &[], used, features) {
            failures.push((format!("seed {name}"), s.file.clone(), e));
        }
    }
    failures.sort_by(|a, b| a.0.cmp(&b.0));
    if failures.is_empty() {
        Ok(())
    } else {
        Err(FleetError { failures }.into())
    }
}

/// The internal domains the shoots trellis applied use, by the Seed they were applied on: each
/// domains workspace in state (`<id>+domains`) whose shoot was last applied with `spec.seedName`
/// set, its `internal` and `prior-internal` roles ([`DomainsState::internal_in_use`]).
///
/// [`DomainsState::internal_in_use`]: trellis_providers::domains::state::DomainsState::internal_in_use
fn internal_domains_in_use(
    store: &dyn StateStore,
) -> Result<BTreeMap<String, Vec<trellis_providers::domains::InternalInUse>>> {
    use trellis_providers::domains::{provider::stored_state, InternalInUse};
    let mut out: BTreeMap<String, Vec<InternalInUse>> = BTreeMap::new();
    for summary in store.list()? {
        let Some(shoot) = summary.shoot.strip_suffix(DOMAINS_WORKSPACE_SUFFIX) else { continue };
        let Some(ws) = store.load(&summary.shoot)? else { continue };
        let state = stored_state(&ws).with_context(|| format!("state of {}", summary.shoot))?;
        let Some(seed) = state.last_applied.as_ref().and_then(|l| l.seed_name.clone()) else { continue };
        let used = out.entry(seed).or_default();
        used.extend(
            state
                .internal_in_use()
                .into_iter()
                .map(|d| InternalInUse { shoot: shoot.to_string(), domain: d.to_string() }),
        );
    }
    Ok(out)
}

/// What the fleet-wide checks read of one planned shoot: its plan, whole or reduced by
/// [`Provider::fleet_facts`].
struct FleetFacts<'a> {
    provider: &'static dyn Provider,
    plan: &'a Plan,
    file: &'a Path,
}

/// Each provider's [`Provider::check_fleet`] over the plans' facts (in technical-id order);
/// `in_fleet` says which shoots are part of the fleet (their workspaces in state are not "applied
/// elsewhere"), also those whose facts were dropped. Returns the providers' warnings.
async fn check_fleet_facts(
    session: &Session,
    in_fleet: &(dyn Fn(&str) -> bool + Sync),
    plans: &[FleetFacts<'_>],
) -> Result<Vec<FleetWarning>> {
    // The workspaces in state of shoots not in this fleet, read only if a provider asks.
    let applied = || -> Result<Vec<Workspace>, ProviderError> {
        let mut out = Vec::new();
        for summary in session.store.list()? {
            if in_fleet(summary.shoot.as_str()) {
                continue;
            }
            out.extend(session.store.load(&summary.shoot)?);
        }
        Ok(out)
    };
    let clouds = session.clouds();
    let mut warnings = Vec::new();
    for provider in Registry::builtin().providers() {
        let fleet: Vec<FleetShoot<'_>> = plans
            .iter()
            .filter(|p| p.provider.type_name() == provider.type_name())
            .map(|p| FleetShoot { plan: p.plan, file: p.file })
            .collect();
        if !fleet.is_empty() {
            let (cloud, ctx) = clouds.of(*provider)?;
            warnings.extend(provider.check_fleet(&fleet, &applied, cloud.as_ref(), ctx).await?);
        }
    }
    Ok(warnings)
}

/// The manifest files of `paths` in input order ([`manifest::list_files`]): each path as given, a
/// directory's `*.yaml`/`*.yml` files sorted. Lists only; nothing is parsed.
pub fn list_manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if paths.is_empty() {
        bail!("no manifests given; pass -f FILE or -f DIR (a directory is a fleet: every Shoot in it)");
    }
    Ok(manifest::list_files(paths)?)
}

/// What [`plan_fleet_streaming`] hands out per shoot.
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamOptions {
    /// Render each plan's JSON on the worker that planned it ([`StreamedPlan::json`]).
    pub json: bool,
    /// Render each plan's text on the worker that planned it ([`StreamedPlan::text`]).
    pub text: Option<TextOptions>,
    /// Hand out the plan itself ([`StreamedPlan::plan`]), e.g. for the markdown and HTML renderers,
    /// which need the whole fleet.
    pub keep_plans: bool,
    /// `--shard I/N`: plan only the shoots of this shard (the others are counted in
    /// [`StreamSummary::shard`]); a shoot's domains plan goes with its shoot.
    pub shard: Option<Shard>,
    /// Hand out each shoot's whole [`ShootPlan`] ([`StreamedPlan::shoot_plan`]): what an apply needs.
    pub keep: bool,
    /// Plan the shoots' deletion (each provider's delete graph) instead of their reconcile.
    pub destroy: bool,
}

/// One planned shoot, as [`plan_fleet_streaming`] hands it out (in input order).
pub struct StreamedPlan {
    /// `shoot--<project>--<name>`.
    pub shoot: String,
    pub has_changes: bool,
    /// With [`StreamOptions::json`].
    pub json: Option<RenderedPlan>,
    /// With [`StreamOptions::text`].
    pub text: Option<RenderedText>,
    /// With [`StreamOptions::keep_plans`].
    pub plan: Option<Plan>,
    /// With [`StreamOptions::keep`].
    pub shoot_plan: Option<ShootPlan>,
}

impl StreamedPlan {
    /// `plan` handed out as `opts` asks (rendered, and kept or not).
    fn of(plan: &Plan, opts: &StreamOptions) -> StreamedPlan {
        StreamedPlan {
            shoot: plan.shoot.clone(),
            has_changes: plan.has_changes(),
            json: opts.json.then(|| RenderedPlan::of(plan)),
            text: opts.text.map(|o| RenderedText::of(plan, &o)),
            plan: opts.keep_plans.then(|| plan.clone()),
            shoot_plan: None,
        }
    }

    /// A planned shoot handed out as `opts` asks, and its fleet facts ([`Provider::fleet_facts`]).
    fn with_facts(planned: ShootPlan, opts: &StreamOptions) -> (StreamedPlan, Option<Plan>) {
        let mut streamed = StreamedPlan::of(&planned.planned.plan, opts);
        let facts = if opts.keep {
            let facts = planned.provider.fleet_facts(planned.planned.plan.clone());
            streamed.shoot_plan = Some(planned);
            facts
        } else {
            planned.provider.fleet_facts(planned.planned.plan)
        };
        (streamed, facts)
    }
}

/// How many shoots a streaming plan has handed out, and whether any has changes.
#[derive(Clone, Debug, Default)]
pub struct StreamSummary {
    pub plans: usize,
    pub changes: bool,
    /// The fleet checks' warnings ([`Provider::check_fleet`]), known only once the whole fleet is
    /// planned, so not in the plans handed out: the caller adds them ([`add_fleet_warnings`]).
    pub fleet_warnings: Vec<FleetWarning>,
    /// With [`StreamOptions::shard`]: the shoots it took and those it left to the other shards.
    pub shard: ShardCount,
}

/// What planning one Shoot document of [`plan_file`] gave.
enum DocOutcome {
    /// Its workspace could not be read, or its plan could not be completed.
    Other(anyhow::Error),
    Failed(ProviderError),
    Planned(Box<PlannedDoc>),
}

struct PlannedDoc {
    provider: &'static dyn Provider,
    /// The plan reduced by [`Provider::fleet_facts`], for the fleet-wide checks at the end (none when
    /// they need nothing of it).
    facts: Option<Plan>,
    streamed: StreamedPlan,
}

struct DocJob {
    doc: manifest::DocRef,
    /// Its technical id and what planning it gave, or why its name or namespace breaks Gardener's
    /// rules (it is not planned then, and has no technical id).
    planned: Result<(String, DocOutcome), ErrorList>,
}

/// One manifest file: parsed, then each Shoot checked, planned and rendered.
struct FileJob {
    result: Result<Vec<DocJob>, ManifestError>,
    seeds: usize,
    /// Its Shoots without an infrastructure plan ([`manifest::DomainsOnlyShoot`]), planned at the end
    /// with the Seeds; the refusal of the first, for when no Seed is among the inputs.
    domains_only: usize,
    refusal: Option<ManifestError>,
    /// Its Shoots of other shards (`--shard`), not planned here.
    other_shards: usize,
}

struct Shared {
    store: Arc<Backend>,
    clouds: Clouds,
    opts: StreamOptions,
    /// The working directory, for each plan's `source.file` (looked up once, not once per shoot).
    cwd: Option<PathBuf>,
}

impl Shared {
    fn new(session: &Session, opts: StreamOptions) -> Shared {
        Shared { store: Arc::clone(&session.store), clouds: session.clouds(), opts, cwd: std::env::current_dir().ok() }
    }
}

/// Metadata check → workspace → provider plan → render, for one file read and parsed by [`read_ahead`].
async fn plan_file(loaded: Result<manifest::Loaded, ManifestError>, shared: Arc<Shared>) -> FileJob {
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(e) => return FileJob { result: Err(e), seeds: 0, domains_only: 0, refusal: None, other_shards: 0 },
    };
    let multi = loaded.documents() > 1;
    let mut docs = Vec::with_capacity(loaded.shoots.len());
    let mut other_shards = 0;
    for l in loaded.shoots {
        let doc = manifest::DocRef { file: l.file.clone(), doc_index: l.doc_index, multi };
        let errs = metadata::validate(l.metadata());
        if !errs.is_empty() {
            docs.push(DocJob { doc, planned: Err(errs) });
            continue;
        }
        let id = l.technical_id();
        if shared.opts.shard.is_some_and(|shard| !shard.takes(&id)) {
            other_shards += 1;
            continue;
        }
        let outcome = plan_doc(l, &shared).await;
        docs.push(DocJob { doc, planned: Ok((id, outcome)) });
    }
    let domains_only = loaded.domains_only.len();
    let refusal = loaded.domains_only.into_iter().next().map(|d| d.refusal);
    FileJob { result: Ok(docs), seeds: loaded.seeds.len(), domains_only, refusal, other_shards }
}

async fn plan_doc(l: manifest::LoadedShoot, shared: &Shared) -> DocOutcome {
    let input = ShootInput { file: l.file, provider: l.provider, shoot: l.shoot };
    match plan_one(shared, input).await {
        Err(NotPlanned::Other(e)) => DocOutcome::Other(e),
        Err(NotPlanned::Failed(e)) => DocOutcome::Failed(e),
        Ok(planned) => {
            let provider = planned.provider;
            let (streamed, facts) = StreamedPlan::with_facts(planned, &shared.opts);
            DocOutcome::Planned(Box::new(PlannedDoc { provider, facts, streamed }))
        }
    }
}

/// How many files one planning task reads and plans, in order, at most ([`plan_fleet_streaming`]).
const FILES_PER_TASK: usize = 8;

/// The files of a batch task, in order, or one error if the task (its parse or its planning) panicked.
fn batch_results(joined: Result<Vec<FileJob>, tokio::task::JoinError>) -> Vec<Result<FileJob>> {
    match joined {
        Ok(jobs) => jobs.into_iter().map(Ok).collect(),
        Err(e) => vec![Err(anyhow::Error::new(e).context("a planning task panicked"))],
    }
}

/// How many documents (Shoots, Seeds; a file without any, or unreadable, counts as one) [`read_ahead`]
/// holds parsed and not yet planned at most: the parse runs ahead of the planning, but a fleet (of
/// one-document files or of files with many documents each) is not read whole into memory.
const READ_AHEAD_DOCS: usize = 1024;

/// A batch of files read and parsed (or the parse task's panic), with its share of [`READ_AHEAD_DOCS`]
/// (given back once planned).
type ParsedBatch =
    (Result<Vec<Result<manifest::Loaded, ManifestError>>, tokio::task::JoinError>, tokio::sync::OwnedSemaphorePermit);

/// A fleet's files, read and parsed in input order ahead of their planning ([`read_ahead`]).
pub struct ReadAhead {
    batches: tokio::sync::mpsc::Receiver<ParsedBatch>,
    /// The task that reads; stopped when the planning stops early (a failed open, a failed shoot).
    reader: tokio::task::AbortHandle,
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Starts reading and parsing `files` (from [`list_manifest_files`]) on the runtime's worker threads,
/// in batches, up to [`READ_AHEAD_DOCS`] documents ahead of what [`plan_fleet_streaming`] has
/// planned. Started before the session opens, so parsing the first shoots overlaps the state's open
/// (its checks read the whole state dir) and the simulated cloud's: a fleet plan's only serial part
/// besides the end. Reading touches nothing but the manifest files, and nothing read is shown before
/// the session is open: a failed open is still the command's only error.
pub fn read_ahead(files: Vec<PathBuf>) -> ReadAhead {
    read_ahead_bounded(files, READ_AHEAD_DOCS)
}

/// [`read_ahead`] holding at most `max_docs` documents parsed and not yet planned.
fn read_ahead_bounded(files: Vec<PathBuf>, max_docs: usize) -> ReadAhead {
    use futures::StreamExt as _;
    let window = planning_window();
    // A task plans a few files one after the other: one task, and one wake-up of the planning loop,
    // per batch rather than per file (with a file per task the scheduler's wake-ups cost ~5 % of the
    // CPU). A small fleet still fills the window (at least `window` batches, down to a file each), so
    // as many files wait for the cloud at once as with a task per file.
    let per_task = (files.len() / window).clamp(1, FILES_PER_TASK);
    let batches: Vec<Vec<PathBuf>> = files.chunks(per_task).map(<[PathBuf]>::to_vec).collect();
    let max_docs = max_docs.max(1);
    // Every batch holds at least one permit, so the permits bound the batches waiting here too.
    let (tx, rx) = tokio::sync::mpsc::channel(max_docs);
    let reader = tokio::spawn(async move {
        let mut parsed = futures::stream::iter(batches)
            .map(|batch| tokio::spawn(async move { batch.iter().map(|f| manifest::load_file(f)).collect::<Vec<_>>() }))
            .buffered(window);
        let docs = Arc::new(tokio::sync::Semaphore::new(max_docs));
        while let Some(batch) = parsed.next().await {
            // A file of more documents than the bound takes all of it.
            let count = match &batch {
                Ok(files) => files.iter().map(|l| l.as_ref().map_or(1, |l| l.documents().max(1))).sum(),
                Err(_) => 1,
            };
            let count = u32::try_from(count.min(max_docs)).unwrap_or(1);
            let Ok(permit) = Arc::clone(&docs).acquire_many_owned(count).await else { break };
            if tx.send((batch, permit)).await.is_err() {
                break; // the planning stopped
            }
        }
    })
    .abort_handle();
    ReadAhead { batches: rx, reader }
}

/// How many batches are worked on at once: 4 per core.
fn planning_window() -> usize {
    4 * std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

/// Plans the Shoots of `files` (from [`list_manifest_files`]; `paths` as given, for messages) and
/// hands each plan to `emit` as soon as it and every shoot before it are planned, in input order
/// (file order, then document order). Reads only.
///
/// Files are worked on concurrently, each on the runtime's worker threads from reading it to
/// rendering its plans, in batches of up to [`FILES_PER_TASK`] files per task (fewer for a fleet
/// smaller than 8 times the window), at most a bounded window of batches at once (4 per core), so the
/// memory held
/// does not grow with the fleet beyond a few small facts: per shoot its id and where it came from,
/// and, if the fleet-wide checks read anything of its plan, the plan reduced to that
/// ([`Provider::fleet_facts`]; Azure: a BYO shoot's subnet node) stay until the end.
///
/// The checks that need the whole fleet are decided at the end, and fail the call with the same
/// errors, in the same precedence, as [`load_shoots`] followed by [`plan_fleet`]: the first file
/// that cannot be read or parsed; no Shoot at all; every invalid name or namespace; a duplicate
/// technical id; a workspace that cannot be read; every shoot that cannot be planned; the providers'
/// [`Provider::check_fleet`] (over the shoots in technical-id order). After the first failure
/// nothing more is emitted, so what was emitted before it is a prefix of the fleet: a caller that
/// must not leave a partial document (a plan file) writes it only on success.
pub async fn plan_fleet_streaming(
    session: &Session,
    paths: &[PathBuf],
    mut files: ReadAhead,
    opts: StreamOptions,
    mut emit: impl FnMut(StreamedPlan) -> Result<()>,
) -> Result<StreamSummary> {
    use futures::StreamExt as _;
    let shared = Arc::new(Shared::new(session, opts));
    let window = planning_window();
    let ReadAhead { batches, .. } = &mut files;
    let batches = futures::stream::poll_fn(|cx| batches.poll_recv(cx));
    let mut jobs = batches
        .map(|(parsed, read_ahead): ParsedBatch| {
            let shared = Arc::clone(&shared);
            async move {
                // A panic while parsing is the batch's error, as one while planning is.
                tokio::spawn(async move {
                    let mut jobs = Vec::new();
                    for loaded in parsed? {
                        jobs.push(plan_file(loaded, Arc::clone(&shared)).await);
                    }
                    drop(read_ahead); // planned: the reader may parse as many documents more
                    Ok(jobs)
                })
                .await
                .and_then(|planned| planned)
            }
        })
        .buffered(window)
        .flat_map(|joined| futures::stream::iter(batch_results(joined)));

    let mut summary = StreamSummary::default();
    let (mut shoots, mut seeds) = (0usize, 0usize);
    let mut unreadable: Option<ManifestError> = None;
    // The first Shoot without an infrastructure plan: refused as before when no Seed is among the inputs.
    let mut refusal: Option<ManifestError> = None;
    let mut invalid: Vec<(manifest::DocRef, ErrorList)> = Vec::new();
    let mut seen: HashMap<String, manifest::DocRef> = HashMap::new();
    let mut duplicate: Option<ManifestError> = None;
    let mut other: Option<anyhow::Error> = None;
    let mut failures: Vec<(String, PathBuf, ProviderError)> = Vec::new();
    let mut facts: Vec<(&'static dyn Provider, Plan, PathBuf)> = Vec::new();
    let mut failed = false;
    while let Some(job) = jobs.next().await {
        let job = job?;
        let docs = match job.result {
            Ok(docs) => docs,
            Err(e) => {
                unreadable.get_or_insert(e);
                failed = true;
                continue;
            }
        };
        seeds += job.seeds;
        shoots += job.domains_only;
        summary.shard.left += job.other_shards;
        if let Some(e) = job.refusal {
            refusal.get_or_insert(e);
        }
        for DocJob { doc, planned } in docs {
            shoots += 1;
            summary.shard.taken += 1;
            let (id, outcome) = match planned {
                Ok(planned) => planned,
                Err(errs) => {
                    invalid.push((doc, errs));
                    failed = true;
                    continue;
                }
            };
            match seen.get(&id) {
                Some(first) => {
                    if duplicate.is_none() {
                        duplicate = Some(ManifestError::DuplicateShoot {
                            technical_id: id.clone(),
                            first: first.clone(),
                            second: doc.clone(),
                        });
                    }
                    failed = true;
                }
                None => {
                    seen.insert(id.clone(), doc.clone());
                }
            }
            match outcome {
                DocOutcome::Other(e) => {
                    other.get_or_insert(e);
                    failed = true;
                }
                DocOutcome::Failed(e) => {
                    failures.push((id, doc.file, e));
                    failed = true;
                }
                DocOutcome::Planned(planned) if !failed => {
                    let PlannedDoc { provider, facts: reduced, streamed } = *planned;
                    summary.plans += 1;
                    summary.changes |= streamed.has_changes;
                    emit(streamed)?;
                    if let Some(reduced) = reduced {
                        facts.push((provider, reduced, doc.file));
                    }
                }
                DocOutcome::Planned(_) => {} // the command fails: nothing more is shown or checked
            }
        }
    }
    if let Some(e) = unreadable {
        return Err(e.into());
    }
    if let Some(e) = refusal.filter(|_| seeds == 0) {
        return Err(e.into());
    }
    if shoots == 0 && summary.shard.left == 0 {
        // Seeds alone plan nothing: a domains plan is a Shoot's. (A shard may take none of a fleet.)
        return Err(ManifestError::NoManifests { paths: paths.to_vec() }.into());
    }
    if !invalid.is_empty() {
        return Err(ManifestError::InvalidMetadata { failures: invalid }.into());
    }
    if let Some(e) = duplicate {
        return Err(e.into());
    }
    if let Some(e) = other {
        return Err(e);
    }
    if !failures.is_empty() {
        return Err(FleetError { failures }.into());
    }
    // Domains plans (GEP-0066), only when Seeds were among the inputs: a Seed may be in any file, so
    // the manifests are loaded again whole and paired ([`domains_inputs`]); each paired Shoot's domains
    // plan is made and handed out after every infrastructure plan, in shoot order.
    let mut domains = Vec::new();
    let mut loaded_seeds = Vec::new();
    if seeds > 0 {
        let loaded = manifest::load(paths)?;
        let mut inputs = domains_inputs(&loaded, session.features)?;
        if let Some(shard) = opts.shard {
            inputs.retain(|input| shard.takes(&input.shoot.technical_id()));
        }
        domains = plan_inputs(&shared, inputs).await?;
        loaded_seeds = loaded.seeds;
    }
    facts.sort_by(|a, b| a.1.shoot.cmp(&b.1.shoot));
    let facts: Vec<FleetFacts<'_>> =
        facts.iter().map(|(provider, plan, file)| FleetFacts { provider: *provider, plan, file }).collect();
    summary.fleet_warnings = check_fleet_facts(session, &|shoot| seen.contains_key(shoot), &facts).await?;
    check_seeds(
        domains.iter().map(|p| (p.shoot.as_ref(), p.input_file.as_path())),
        &loaded_seeds,
        session.features,
        Some(session.store.as_ref()),
    )?;
    // The domains plans go out last, after every infrastructure plan, in shoot order.
    for planned in domains {
        summary.plans += 1;
        summary.changes |= planned.planned.plan.has_changes();
        emit(StreamedPlan::with_facts(planned, &opts).0)?;
    }
    Ok(summary)
}

/// The plan documents of planned shoots, by value: for the fleet's plan file without copying it.
pub fn into_plan_set(plans: Vec<ShootPlan>) -> PlanSet {
    PlanSet::new(plans.into_iter().map(|p| p.planned.plan).collect())
}

pub fn plan_set(plans: &[ShootPlan]) -> PlanSet {
    PlanSet::new(plans.iter().map(|p| p.planned.plan.clone()).collect())
}

/// What `apply --output json` prints.
#[derive(Serialize, Debug)]
pub struct ApplyReport {
    pub operation: String,
    pub shoots: Vec<ShootReport>,
    /// Every cloud call made, in order.
    pub calls: Vec<Call>,
    pub ok: bool,
}

#[derive(Serialize, Debug)]
pub struct ShootReport {
    pub shoot: String,
    pub ok: bool,
    pub nodes: Vec<NodeResult>,
    pub calls: Vec<Call>,
    /// Artifacts rendered from the cloud as it is after the apply (null for destroy or on failure).
    pub artifacts: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// After a destroy in user-managed-egress mode: what the CCM and bastion controller left on the
    /// user's NSG and route table (never deleted by trellis), with the command to prune each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub orphans: Vec<Orphan>,
}

/// Called for every node as it starts and ends, for progress display.
pub trait Progress: Send {
    fn start(&mut self, _shoot: &str, _node: &Node) {}
    fn finish(&mut self, _shoot: &str, _node: &Node, _result: &NodeResult) {}
    fn message(&mut self, _line: &str) {}
}

/// No progress output.
pub struct Quiet;
impl Progress for Quiet {}

/// Persists state after every node, then tells the progress display.
struct Persist<'a> {
    store: &'a Backend,
    ws: &'a mut Workspace,
    operation: &'a str,
    progress: &'a mut dyn Progress,
}

impl Observer for Persist<'_> {
    fn started(&mut self, node: &Node) {
        self.progress.start(&self.ws.shoot, node);
    }

    fn finished(&mut self, node: &Node, result: &NodeResult) -> Result<(), String> {
        // State first: once a line says "created", the state has it.
        let committed = self.record(node, result);
        self.progress.finish(&self.ws.shoot, node, result);
        committed
    }
}

impl Persist<'_> {
    fn record(&mut self, node: &Node, result: &NodeResult) -> Result<(), String> {
        if !result.outcome.is_ok() {
            return Ok(());
        }
        let id = node.id.clone().unwrap_or_default();
        let changed = match node.action() {
            Action::Create | Action::Update | Action::Replace | Action::Verify | Action::Read | Action::Noop => {
                let kept = StoredResource { kind: node.kind, id, ownership: node.ownership() };
                self.ws.record_resource(&node.address, kept)
            }
            Action::Delete => self.ws.forget_resource(&node.address, &id),
            Action::Skip => false,
        };
        if changed {
            // Returns once the commit is durable; commits of other shoots made meanwhile share its flush,
            // and so do the simulated cloud's writes made before it (this node's among them).
            blocking(|| self.store.commit(self.ws, self.operation).map_err(|e| e.to_string()))?;
        } else if node.action().is_write() {
            // Nothing new to record, but the node wrote to the cloud: its writes are durable before the
            // node counts as done (the simulated cloud leaves its flushes to the state's).
            blocking(|| self.store.flush().map_err(|e| e.to_string()))?;
        }
        Ok(())
    }
}

/// Runs `f`, which blocks on the state store (a commit waits for the flush that makes it durable),
/// without holding up the other shoots: on a multi-threaded runtime (the binary's) the worker thread
/// first hands its other tasks to another thread (`block_in_place`), so the shoots' commits wait
/// together and share a flush; on a current-thread runtime it just runs.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Options for apply and destroy.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    pub parallelism: usize,
    pub operation: String,
}

/// Applies planned shoots concurrently; at most `parallelism` nodes are in flight across the whole
/// fleet (one shared limit), so a fleet apply takes about as long as its busiest shoots, not their sum.
/// Each shoot runs as its own task (at most `parallelism` shoots at a time), so that the state commits
/// of concurrent shoots wait together and share one flush; their progress comes back here over a
/// channel, each node's end only after its state is durable. Reports come back in plan order.
pub async fn apply(
    session: &Session,
    plans: Vec<ShootPlan>,
    opts: &ApplyOptions,
    progress: &mut dyn Progress,
) -> Result<ApplyReport> {
    let parallelism = opts.parallelism.max(1);
    let ctx = ApplyCtx {
        store: Arc::clone(&session.store),
        clouds: Arc::new(session.clouds()),
        opts: opts.clone(),
        limit: Arc::new(tokio::sync::Semaphore::new(parallelism)),
        write_locks: Arc::new(
            Registry::builtin()
                .providers()
                .iter()
                .chain(std::iter::once(&Registry::builtin().domains()))
                .map(|p| (p.type_name(), Arc::new(WriteLocks::new(p.ids()))))
                .collect(),
        ),
    };
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let mut results: Vec<Option<Result<ShootReport>>> = plans.iter().map(|_| None).collect();
    let mut waiting = plans.into_iter().enumerate();
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.len() < parallelism {
            let Some((i, p)) = waiting.next() else { break };
            let (ctx, mut shoot_progress) = (ctx.clone(), SendProgress(events.clone()));
            running.spawn(async move { (i, apply_one(&ctx, p, &mut shoot_progress).await) });
        }
        tokio::select! {
            biased;
            Some(event) = received.recv() => event.show(progress),
            joined = running.join_next() => match joined {
                None => break,
                Some(Ok((i, result))) => results[i] = Some(result),
                Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Some(Err(e)) => bail!("applying a shoot was interrupted: {e}"),
            },
        }
    }
    drop(events);
    while let Some(event) = received.recv().await {
        event.show(progress);
    }
    let mut report = ApplyReport { operation: opts.operation.clone(), shoots: Vec::new(), calls: Vec::new(), ok: true };
    for shoot_report in results.into_iter().flatten() {
        let shoot_report = shoot_report?;
        report.ok &= shoot_report.ok;
        report.calls.extend(shoot_report.calls.iter().cloned());
        report.shoots.push(shoot_report);
    }
    Ok(report)
}

/// What applying one shoot needs from the session, owned, so that each shoot can run as its own task.
#[derive(Clone)]
struct ApplyCtx {
    store: Arc<Backend>,
    clouds: Arc<Clouds>,
    opts: ApplyOptions,
    /// The fleet-wide limit of nodes in flight.
    limit: Arc<tokio::sync::Semaphore>,
    /// The fleet-wide write scopes, per provider (each under its provider's id scheme,
    /// [`Provider::ids`]): shoots may write subnets into one VNet, NATs into one router.
    write_locks: Arc<BTreeMap<&'static str, Arc<WriteLocks>>>,
}

/// A progress call of one shoot's task, shown by [`apply`] on the caller's display.
enum ProgressEvent {
    Start(String, Box<Node>),
    Finish(String, Box<Node>, Box<NodeResult>),
    Message(String),
}

impl ProgressEvent {
    fn show(self, progress: &mut dyn Progress) {
        match self {
            ProgressEvent::Start(shoot, node) => progress.start(&shoot, &node),
            ProgressEvent::Finish(shoot, node, result) => progress.finish(&shoot, &node, &result),
            ProgressEvent::Message(line) => progress.message(&line),
        }
    }
}

/// The progress display of one shoot's task: every call goes to [`apply`] in order. Sending fails
/// only when `apply` is gone, and then there is no display left to tell.
struct SendProgress(tokio::sync::mpsc::UnboundedSender<ProgressEvent>);

impl Progress for SendProgress {
    fn start(&mut self, shoot: &str, node: &Node) {
        let _ = self.0.send(ProgressEvent::Start(shoot.to_string(), Box::new(node.clone())));
    }
    fn finish(&mut self, shoot: &str, node: &Node, result: &NodeResult) {
        let event = ProgressEvent::Finish(shoot.to_string(), Box::new(node.clone()), Box::new(result.clone()));
        let _ = self.0.send(event);
    }
    fn message(&mut self, line: &str) {
        let _ = self.0.send(ProgressEvent::Message(line.to_string()));
    }
}

async fn apply_one(ctx: &ApplyCtx, p: ShootPlan, progress: &mut dyn Progress) -> Result<ShootReport> {
    let shoot = p.workspace.shoot.clone();
    let store: &dyn StateStore = ctx.store.as_ref();
    let lock = LockInfo::here(&ctx.opts.operation);
    let mut warnings = Vec::new();
    if let Acquired::BrokeStale(dead) = blocking(|| store.lock(&shoot, &lock).map_err(anyhow::Error::from))? {
        let line = format!("{shoot}: took over a stale lock from a process that is gone ({dead})");
        progress.message(&line);
        warnings.push(line);
    }
    let result = apply_locked(ctx, p, progress, warnings).await;
    blocking(|| store.unlock(&shoot, &lock.id).map_err(anyhow::Error::from))?;
    result
}

async fn apply_locked(
    ctx: &ApplyCtx,
    p: ShootPlan,
    progress: &mut dyn Progress,
    mut warnings: Vec<String>,
) -> Result<ShootReport> {
    let plan = &p.planned.plan;
    let opts = &ctx.opts;
    let store: &dyn StateStore = ctx.store.as_ref();
    let workspace = p.workspace.shoot.clone();
    let mut ws = store.load(&workspace)?.unwrap_or_else(|| Workspace::new(&workspace));
    check_prior(plan, &ws)?;
    let (provider_cloud, cloud_ctx) = ctx.clouds.of(p.provider)?;
    let write_locks = match ctx.write_locks.get(p.provider.type_name()) {
        Some(locks) => Arc::clone(locks),
        None => bail!("bug: no write locks for provider {}; please report", p.provider.type_name()),
    };
    let audited = Arc::new(Audited::new(Arc::clone(provider_cloud)));
    let cloud: Arc<dyn CloudWrite> = audited.clone();
    let exec_opts = ExecOptions {
        parallelism: opts.parallelism,
        retry: cloud_ctx.retry.clone(),
        shared_limit: Some(Arc::clone(&ctx.limit)),
        write_locks,
    };
    let results = {
        let mut persist = Persist { store: ctx.store.as_ref(), ws: &mut ws, operation: &opts.operation, progress };
        exec::execute(&plan.nodes, cloud, &exec_opts, &mut persist).await?
    };
    let mut ok = results.iter().all(|r| r.outcome.is_ok());
    let destroy = opts.operation == "destroy";
    let mut artifacts = None;
    let mut orphans = Vec::new();
    if ok && destroy {
        match p.provider.orphans_after_destroy(p.shoot.as_ref(), audited.as_ref(), cloud_ctx).await {
            Ok(found) => orphans = found,
            Err(e) => warnings.push(format!("{}: the orphan report could not be made: {e}", plan.shoot)),
        }
    }
    if ok && destroy && ws.serial == 0 {
        // Nothing was ever applied for this shoot: no workspace to empty.
    } else if ok && destroy {
        ws.resources.clear();
        ws.outputs = None;
        ws.provider_state = None;
        blocking(|| store.commit(&mut ws, &opts.operation).map_err(anyhow::Error::from))?;
    } else if ok {
        // The resources are in place; the artifacts are re-rendered from the cloud as it is now
        // (public IP addresses are known only after apply). If that read fails, the state keeps the
        // resources but not the new config, so the next apply re-reads and records it.
        let after =
            p.provider.artifacts_after_apply(p.shoot.as_ref(), &p.planned.state, audited.as_ref(), cloud_ctx).await;
        match after {
            Ok(after) => {
                let value = serde_json::to_value(&after)?;
                ws.outputs = Some(value.clone());
                ws.provider_state = Some(p.planned.state.clone());
                for (address, id) in &p.planned.forget {
                    ws.forget_resource(address, id);
                }
                blocking(|| store.commit(&mut ws, &opts.operation).map_err(anyhow::Error::from))?;
                artifacts = Some(value);
            }
            Err(e) => {
                ok = false;
                warnings.push(format!(
                    "{}: every resource was applied, but reading the artifacts back failed: {e}; run `trellis apply` again to record them",
                    plan.shoot
                ));
            }
        }
    }
    Ok(ShootReport { shoot: workspace, ok, nodes: results, calls: audited.calls(), artifacts, warnings, orphans })
}

/// Refuses a plan made against another state than the one stored now.
fn check_prior(plan: &Plan, ws: &Workspace) -> Result<()> {
    let now_lineage = ws.prior().lineage;
    if plan.prior.lineage.is_some() && plan.prior.lineage != now_lineage {
        bail!(
            "{}: the plan was made against state lineage {}, but the state now has lineage {}; the workspace was recreated — re-run `trellis plan`",
            plan.shoot,
            plan.prior.lineage.as_deref().unwrap_or("(none)"),
            now_lineage.as_deref().unwrap_or("(none)")
        );
    }
    if plan.prior.serial != ws.serial {
        bail!(
            "{}: stale plan: it was made at state serial {}, but the state is at serial {} now (something was applied since); re-run `trellis plan`",
            plan.shoot,
            plan.prior.serial,
            ws.serial
        );
    }
    Ok(())
}

/// For `apply PLAN`: re-plans each shoot from the manifest saved in the plan, against the state and the
/// cloud as they are now, and refuses unless the state has not moved and every node and artifact is
/// identical to the saved plan (naming the first difference). Returns the fresh plans: what runs is
/// always what trellis plans itself — ownership, actions, ids and patches come from the provider, never
/// from the file. A write by someone else that changes no planned node (a CCM's NSG rule, a route)
/// leaves the saved plan valid.
pub async fn check_saved_plan(
    session: &Session,
    saved: &PlanSet,
    shoots: Vec<ShootInput>,
    destroy: bool,
) -> Result<Vec<ShootPlan>> {
    let mut fresh: BTreeMap<String, ShootPlan> =
        plan_fleet(session, shoots, destroy).await?.into_iter().map(|p| (p.workspace.shoot.clone(), p)).collect();
    let mut out = Vec::new();
    for old in &saved.plans {
        let Some(p) = fresh.remove(&plan_workspace(old)) else {
            bail!("{}: the plan's shoot is not in the manifests; re-run `trellis plan`", old.shoot);
        };
        check_prior(old, &p.workspace)?;
        if let Some(difference) = trellis_plans::first_difference(old, &p.planned.plan) {
            bail!(
                "{}: stale plan: {difference}: the cloud changed since the plan was made, or the plan file was edited — re-run `trellis plan`",
                old.shoot
            );
        }
        out.push(p);
    }
    Ok(out)
}

/// The shoots a saved plan was made from (each plan carries its manifest).
pub fn shoots_from_plan(saved: &PlanSet) -> Result<Vec<ShootInput>> {
    saved
        .plans
        .iter()
        .map(|p| {
            let Some(source) = &p.source else {
                bail!("{}: the plan file carries no source manifest; re-run `trellis plan --out`", p.shoot);
            };
            let unreadable =
                || format!("{}: the plan's source manifest cannot be read; re-run `trellis plan --out`", p.shoot);
            // A domains plan carries its paired input (`{shoot, seed, features}`), read by the domains provider.
            let provider = match p.provider {
                trellis_plans::Provider::Domains => Registry::builtin().domains(),
                _ => {
                    let provider_type =
                        source.shoot.pointer("/spec/provider/type").and_then(Value::as_str).unwrap_or_default();
                    Registry::builtin().get(provider_type).with_context(unreadable)?
                }
            };
            let shoot = provider.shoot_from_json(&source.shoot).with_context(unreadable)?;
            // The technical id is made from the name: check it before anything uses it, as loading
            // a manifest does.
            let errs = trellis_providers::metadata::validate(shoot.metadata());
            if !errs.is_empty() {
                let head = format!(
                    "{}: the plan's source manifest ({}) has an invalid name; fix the manifest and re-run `trellis plan --out`",
                    p.shoot, source.file
                );
                return Err(Lines(std::iter::once(head).chain(errs.iter().map(|e| e.to_string())).collect()).into());
            }
            if shoot.technical_id() != p.shoot {
                bail!(
                    "{}: the plan carries the manifest of shoot {}; the plan file was edited — re-run `trellis plan --out`",
                    p.shoot,
                    shoot.technical_id()
                );
            }
            Ok(ShootInput { file: PathBuf::from(&source.file), provider, shoot })
        })
        .collect()
}

#[cfg(test)]
mod read_ahead_tests {
    use super::*;

    /// `n` files of `docs` A1 Shoots each (distinct names), in a temporary dir.
    fn fleet(n: usize, docs: usize) -> (tempfile::TempDir, Vec<PathBuf>) {
        let a1 = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/scenarios/azure/A1-managed-no-nat/shoot.yaml"
        ))
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let files = (0..n)
            .map(|i| {
                let text: Vec<String> =
                    (0..docs).map(|d| a1.replacen("name: alpha", &format!("name: s{i}-{d}"), 1)).collect();
                let path = dir.path().join(format!("{i:03}.yaml"));
                std::fs::write(&path, text.join("\n---\n")).unwrap();
                path
            })
            .collect();
        (dir, files)
    }

    /// Issue #9's read-ahead keeps memory bounded by documents, not files: with nothing planned, it
    /// stops once it holds the bound; a file of more documents than the bound still goes through.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn read_ahead_holds_at_most_its_documents_and_lets_a_larger_file_through() {
        let (_dir, files) = fleet(6, 2);
        let ahead = read_ahead_bounded(files, 4);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while ahead.batches.len() < 2 {
            assert!(std::time::Instant::now() < deadline, "the first two files were never read");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // Files of two documents, one file a batch: two batches hold the bound of 4.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(ahead.batches.len(), 2, "read ahead beyond 4 documents");

        // Everything arrives, in order, as batches are planned (their permits dropped); a file of 5
        // documents against a bound of 4 takes the whole bound instead of waiting forever.
        let (_dir, files) = fleet(3, 5);
        let names: Vec<PathBuf> = files.clone();
        let mut ahead = read_ahead_bounded(files, 4);
        let mut seen = Vec::new();
        let drained = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            while let Some((batch, permit)) = ahead.batches.recv().await {
                for loaded in batch.unwrap() {
                    let loaded = loaded.unwrap();
                    assert_eq!(loaded.documents(), 5);
                    seen.push(loaded.shoots[0].file.clone());
                }
                drop(permit);
            }
        })
        .await;
        assert!(drained.is_ok(), "a file of more documents than the bound never got through: {seen:?}");
        assert_eq!(seen, names);
    }
}
