//! The fleet planner: [`plan_fleet_streaming`] (what `trellis plan` runs), [`plan_files`] (the same,
//! collected, for apply, destroy and the tests), [`plan_fleet`] (a saved plan's manifests), the one
//! per-shoot step (`plan_one`) and the fleet-wide checks.

use crate::backend::Backend;
use crate::shard::{Shard, ShardCount};
use anyhow::{bail, Context as _, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_planner::wide::FleetReads;
use trellis_plans::render::{RenderedText, TextOptions};
use trellis_plans::{Plan, PlanSet, RenderedPlan};
use trellis_providers::features::Features;
use trellis_providers::field::ErrorList;
use trellis_providers::manifest::{self, ManifestError};
use trellis_providers::metadata;
use trellis_providers::provider::{FleetShoot, FleetWarning, Provider, ProviderError, ProviderShoot};
use trellis_state::{StateStore, Workspace};

use crate::registry::Registry;

use super::*;

/// Plans the shoots of `paths` (files, or directories of them) for a caller that needs them all at
/// once (`apply -f`, `destroy`, the scenario tests): [`plan_fleet_streaming`] — the one fleet planner
/// `trellis plan` runs — with every shoot's [`ShootPlan`] collected, the fleet checks' warnings added,
/// in the order `trellis plan` hands them out (input order; the derived plans after every infrastructure
/// plan), which is the order `apply -f` prints and starts them in. Reads only. The notes on Seed pairing
/// are dropped ([`plan_files_with`] hands them out).
pub async fn plan_files(
    session: &Session,
    paths: &[PathBuf],
    destroy: bool,
    shard: Option<Shard>,
) -> Result<FleetPlans> {
    plan_files_with(session, paths, destroy, shard, |_| {}).await
}

/// [`plan_files`], handing each note on Seed pairing to `note` as the planner finds it (before any
/// error that follows it; [`derived_inputs`]).
pub async fn plan_files_with(
    session: &Session,
    paths: &[PathBuf],
    destroy: bool,
    shard: Option<Shard>,
    note: impl FnMut(String),
) -> Result<FleetPlans> {
    plan_files_with_options(session, paths, StreamOptions { destroy, shard, ..StreamOptions::default() }, note).await
}

/// [`plan_files_with`] under `opts` (destroy, shard, orphans, keep going; what it hands out is set here:
/// every shoot's whole [`ShootPlan`]).
pub async fn plan_files_with_options(
    session: &Session,
    paths: &[PathBuf],
    opts: StreamOptions,
    note: impl FnMut(String),
) -> Result<FleetPlans> {
    let files = read_ahead(Arc::clone(&session.registry), list_manifest_files(paths)?);
    let opts = StreamOptions { keep: true, json: false, text: None, keep_plans: false, ..opts };
    let mut plans = Vec::new();
    let mut summary = plan_fleet_streaming(session, paths, files, opts, note, |p| {
        plans.extend(p.shoot_plan);
        Ok(())
    })
    .await?;
    // The warnings move into the plans they are for (the summary keeps the counts).
    add_fleet_warnings(plans.iter_mut().map(|p| &mut p.planned.plan), std::mem::take(&mut summary.fleet_warnings));
    Ok(FleetPlans { plans, summary })
}

/// What [`plan_files`] gives: the planned shoots (the fleet warnings added to their plans) and the
/// stream's summary (counts, the shard's count; its `fleet_warnings` emptied into the plans).
pub struct FleetPlans {
    pub plans: Vec<ShootPlan>,
    pub summary: StreamSummary,
}

/// Plans shoots that are not in files (a saved plan's manifests, [`check_saved_plan`]) with the same
/// per-shoot step as [`plan_fleet_streaming`] (`plan_one`) and the same fleet-wide checks; in
/// workspace order. Reads only.
pub async fn plan_fleet(session: &Session, shoots: Vec<ShootInput>, destroy: bool) -> Result<Vec<ShootPlan>> {
    plan_fleet_targeted(session, shoots, destroy, &session.targeting).await
}

/// [`plan_fleet`] under `targeting` instead of the session's (a saved plan's replacements,
/// [`Targeting::of_saved`]); a `--replace` that was not planned as one is left for the caller to
/// find (it compares the plans).
pub async fn plan_fleet_targeted(
    session: &Session,
    shoots: Vec<ShootInput>,
    destroy: bool,
    targeting: &Targeting,
) -> Result<Vec<ShootPlan>> {
    let mut shared = Shared::with(session, StreamOptions { destroy, ..StreamOptions::default() }, targeting);
    shared.check_replace = false;
    let shared = Arc::new(shared);
    let mut plans = plan_inputs(&shared, shoots).await?;
    // By workspace: a shoot's infrastructure plan, then its derived plan (`<id>` < `<id>+domains`).
    plans.sort_by(|a, b| a.workspace.shoot.cmp(&b.workspace.shoot));
    let warnings = check_fleet(session, &plans).await?;
    add_fleet_warnings(plans.iter_mut().map(|p| &mut p.planned.plan), warnings);
    Ok(plans)
}

/// A shoot the provider refused: its workspace name, its file, why.
pub type Refusal = (String, PathBuf, ProviderError);

/// Plans every input (concurrently) with [`plan_one`]. Plans come in input order; every refusal
/// fails the call ([`FleetError`], in input order). No fleet-wide check.
async fn plan_inputs(shared: &Arc<Shared>, shoots: Vec<ShootInput>) -> Result<Vec<ShootPlan>> {
    let (plans, refused) = plan_each(shared, shoots).await?;
    if !refused.is_empty() {
        return Err(FleetError::new(refused).into());
    }
    Ok(plans)
}

/// [`plan_inputs`], except that under [`StreamOptions::keep_going`] the refusals are moved into
/// `refused` and the other inputs' plans returned.
async fn plan_inputs_keep_going(
    shared: &Arc<Shared>,
    shoots: Vec<ShootInput>,
    refused: &mut Vec<Refusal>,
) -> Result<Vec<ShootPlan>> {
    let (plans, refusals) = plan_each(shared, shoots).await?;
    if !refusals.is_empty() && !shared.opts.keep_going {
        return Err(FleetError::new(refusals).into());
    }
    refused.extend(refusals);
    Ok(plans)
}

/// Plans every input (concurrently) with [`plan_one`]: the plans and the provider's refusals, each in
/// input order. Any other failure fails the call.
async fn plan_each(shared: &Arc<Shared>, shoots: Vec<ShootInput>) -> Result<(Vec<ShootPlan>, Vec<Refusal>)> {
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
            Ok(Some(planned)) => done.push((i, planned)),
            Ok(None) => shared.matched.left_out(),
            Err(NotPlanned::Other(e)) => return Err(e),
            Err(NotPlanned::Failed(e)) => failures.push((i, (id, file, e))),
        }
    }
    done.sort_by_key(|(i, _)| *i);
    failures.sort_by_key(|(i, _)| *i);
    Ok((done.into_iter().map(|(_, p)| p).collect(), failures.into_iter().map(|(_, f)| f).collect()))
}

/// Why [`plan_one`] gave no plan.
enum NotPlanned {
    /// Its workspace could not be read, or its plan could not be completed.
    Other(anyhow::Error),
    /// The provider refused it (invalid, pre-flight, the cloud).
    Failed(ProviderError),
}

/// The one per-shoot step of every fleet planner: the shoot's workspace, the provider's plan (or
/// destroy plan, [`StreamOptions::destroy`]) through the session's cloud, the plan's `source`, and
/// `--target` / `--replace` ([`targeting::select`]: `None` when the targets leave the shoot out).
async fn plan_one(shared: &Shared, input: ShootInput) -> Result<Option<ShootPlan>, NotPlanned> {
    let id = input.id();
    let ws = shared.store.load(&id).map_err(|e| NotPlanned::Other(e.into()))?.unwrap_or_else(|| Workspace::new(&id));
    let (cloud, ctx) = shared.clouds.of(input.provider).map_err(NotPlanned::Failed)?;
    let (provider, shoot) = (input.provider, input.shoot.as_ref());
    let reads = shared.reads(provider, cloud);
    let planned = if shared.opts.destroy {
        provider.plan_destroy(shoot, &ws, reads.as_ref(), ctx).await
    } else if shared.opts.json {
        // Every plan of a run that renders JSON is handed out through [`StreamedPlan::of`], which
        // hashes its body while rendering it: the body is not serialised a second time for the digest.
        provider.plan_undigested(shoot, &ws, reads.as_ref(), ctx).await
    } else {
        provider.plan(shoot, &ws, reads.as_ref(), ctx).await
    };
    let mut planned = planned.map_err(NotPlanned::Failed)?;
    let json = shoot.to_json().map_err(|e| NotPlanned::Other(e.into()))?;
    let file = trellis_plans::Source::file_of(&input.file, shared.cwd.as_deref());
    planned.plan.source = Some(trellis_plans::Source { file, shoot: json });
    let name = input.shoot.metadata().name.clone();
    let (targeting, matched) = (&shared.targeting, &shared.matched);
    let keep = targeting::select(
        targeting,
        matched,
        &mut planned.plan,
        &input.shoot.technical_id(),
        &name,
        shared.check_replace,
    )
    .map_err(NotPlanned::Other)?;
    if !keep {
        return Ok(None);
    }
    let ShootInput { file, provider, shoot, .. } = input;
    Ok(Some(ShootPlan { input_file: file, provider, shoot, workspace: ws, planned }))
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
        &session.registry,
        plans.iter().map(|p| (p.provider, p.shoot.as_ref(), p.input_file.as_path())),
        &[],
        session.features,
        Some(session.store.as_ref()),
    )?;
    Ok(warnings)
}

/// The Seed-level rules (GEP-0066's, of the domains provider) over a fleet: each provider of derived
/// plans in the registry gets its own inputs among `inputs` through its
/// [`crate::registry::Derived::check_seeds`] hook, with the Seeds of the run (`seeds`: a Seed without
/// any of its shoots among `inputs` is checked too, against the shoots applied on it), the run's
/// `features` and, with a `store`, its workspaces in state (`<id><suffix>`, read only if the hook
/// asks): every shoot trellis applied on the Seed, in this run or not. Every broken rule fails the
/// call ([`FleetError`], by subject: `seed NAME`).
pub fn check_seeds<'a>(
    registry: &Registry,
    inputs: impl Iterator<Item = (&'static dyn Provider, &'a dyn ProviderShoot, &'a Path)>,
    seeds: &[manifest::LoadedSeed],
    features: Features,
    store: Option<&dyn StateStore>,
) -> Result<()> {
    let inputs: Vec<_> = inputs.collect();
    let mut failures = Vec::new();
    for entry in registry.entries() {
        let Some(derived) = entry.derived else { continue };
        let kind = entry.provider.type_name();
        let own: Vec<(&dyn ProviderShoot, &Path)> =
            inputs.iter().filter(|(p, _, _)| p.type_name() == kind).map(|&(_, shoot, file)| (shoot, file)).collect();
        let applied = || derived_workspaces(store, derived.workspace_suffix);
        failures.extend((derived.check_seeds)(&own, seeds, features, &applied)?);
    }
    failures.sort_by(|a, b| a.0.cmp(&b.0));
    if failures.is_empty() {
        Ok(())
    } else {
        Err(FleetError::new(failures).into())
    }
}

/// What a destroy of the shoot `id` (from `file`) leaves of its derived plans (GEP-0066's domains
/// plan): one note per derived workspace that holds something in state (resources or provider state)
/// and that no derived plan of this destroy (`derived`) covers, because the shoot's Seed is not among
/// the inputs. The note names the workspace and every managed resource it records (their ids): they
/// stay, in the cloud and in state, until a destroy with the Seed.
fn derived_left_behind(session: &Session, id: &str, file: &Path, derived: &[ShootPlan]) -> Result<Vec<String>> {
    use trellis_plans::escape::text;
    let mut out = Vec::new();
    for entry in session.registry.entries() {
        let Some(hooks) = entry.derived else { continue };
        let name = format!("{id}{}", hooks.workspace_suffix);
        if derived.iter().any(|p| p.workspace.shoot == name) {
            continue;
        }
        let Some(ws) = session.store.load(&name)? else { continue };
        if ws.resources.is_empty() && ws.provider_state.is_none() {
            continue; // nothing applied, or destroyed already
        }
        let mut records: Vec<&str> = ws
            .resources
            .values()
            .filter(|r| r.ownership == trellis_plans::Ownership::Managed)
            .map(|r| r.id.as_str())
            .collect();
        records.sort_unstable();
        let records = if records.is_empty() { "none".to_string() } else { records.join(", ") };
        out.push(format!(
            "note: {} ({}): its Seed is not among the inputs, so this destroy leaves its {} workspace {} and the records it holds ({}); destroy again with the Seed (-f seed.yaml) to delete them",
            text(id),
            text(&file.display().to_string()),
            text(entry.provider.type_name()),
            text(&name),
            text(&records)
        ));
    }
    Ok(out)
}

/// The workspaces in `store` whose name ends in `suffix` (a provider of derived plans'), as (the
/// shoot's technical id, the workspace); none without a store or a suffix.
fn derived_workspaces(store: Option<&dyn StateStore>, suffix: &str) -> Result<Vec<(String, Workspace)>, ProviderError> {
    let mut out = Vec::new();
    let Some(store) = store.filter(|_| !suffix.is_empty()) else { return Ok(out) };
    for summary in store.list()? {
        let Some(shoot) = summary.shoot.strip_suffix(suffix) else { continue };
        let Some(ws) = store.load(&summary.shoot)? else { continue };
        out.push((shoot.to_string(), ws));
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
    for provider in session.registry.providers().providers() {
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
    /// [`StreamSummary::shard`]); a shoot's derived plan (domains) goes with its shoot.
    pub shard: Option<Shard>,
    /// Hand out each shoot's whole [`ShootPlan`] ([`StreamedPlan::shoot_plan`]): what an apply needs.
    pub keep: bool,
    /// Plan the shoots' deletion (each provider's delete graph) instead of their reconcile.
    pub destroy: bool,
    /// What to do about shoots in state whose manifests are not among the inputs.
    pub orphans: Orphans,
    /// A shoot the provider refuses (invalid, pre-flight, the cloud) does not fail the call: it is
    /// listed in [`StreamSummary::refused`] and the others are planned (`--keep-going`).
    pub keep_going: bool,
    /// Each shoot reads only what it asks for, never an account's wide list
    /// (`trellis_planner::wide`): `trellis world export`, whose world file holds what was read.
    pub own_reads: bool,
}

/// What a fleet plan does about shoots in state whose manifests are not among the inputs (orphans):
/// the inputs are a fleet directory that is the whole truth of the state (sharded: of the shard).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Orphans {
    /// Not looked for (the inputs are files, not the fleet).
    #[default]
    Ignore,
    /// One note each: `in state, not in the inputs: ID, N resources`.
    Report,
    /// The note, and each one's destroy planned from the manifest it was last applied with
    /// ([`trellis_state::Workspace::applied_manifest`]), handed out after the fleet's plans (`--prune`).
    Prune,
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
    /// `plan` handed out as `opts` asks (rendered, and kept or not). A plan without its digest yet
    /// ([`plan_one`] leaves it to the JSON's rendering) gets it here, before anything else reads it.
    fn of(plan: &mut Plan, opts: &StreamOptions) -> StreamedPlan {
        let json = opts.json.then(|| RenderedPlan::of_filling(plan));
        plan.fill_digest();
        StreamedPlan {
            shoot: plan.shoot.clone(),
            has_changes: plan.has_changes(),
            json,
            text: opts.text.map(|o| RenderedText::of(plan, &o)),
            plan: opts.keep_plans.then(|| plan.clone()),
            shoot_plan: None,
        }
    }

    /// A planned shoot handed out as `opts` asks, and its fleet facts ([`Provider::fleet_facts`]).
    fn with_facts(mut planned: ShootPlan, opts: &StreamOptions) -> (StreamedPlan, Option<Plan>) {
        let mut streamed = StreamedPlan::of(&mut planned.planned.plan, opts);
        let facts = planned.provider.fleet_facts(&planned.planned.plan);
        if opts.keep {
            streamed.shoot_plan = Some(planned);
        }
        (streamed, facts)
    }
}

/// How many shoots a streaming plan has handed out, and whether any has changes.
#[derive(Debug, Default)]
pub struct StreamSummary {
    pub plans: usize,
    pub changes: bool,
    /// The fleet checks' warnings ([`Provider::check_fleet`]), known only once the whole fleet is
    /// planned, so not in the plans handed out: the caller adds them ([`add_fleet_warnings`]).
    pub fleet_warnings: Vec<FleetWarning>,
    /// With [`StreamOptions::shard`]: the shoots it took and those it left to the other shards.
    pub shard: ShardCount,
    /// With [`StreamOptions::keep_going`]: the shoots the providers refused (technical id, file, why),
    /// in input order; the others were planned.
    pub refused: Vec<Refusal>,
    /// The shoots in state whose manifests are not among the inputs ([`StreamOptions::orphans`]).
    pub orphans: Vec<String>,
    /// With `--target` ([`Session::targeting`]): the plans it left out (shoots, and derived plans).
    pub left_out: usize,
}

/// What planning one Shoot document of [`plan_file`] gave.
enum DocOutcome {
    /// Its workspace could not be read, or its plan could not be completed.
    Other(anyhow::Error),
    Failed(ProviderError),
    Planned(Box<PlannedDoc>),
    /// `--target` leaves it out.
    LeftOut,
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
    registry: Arc<Registry>,
    clouds: Clouds,
    opts: StreamOptions,
    /// The working directory, for each plan's `source.file` (looked up once, not once per shoot).
    cwd: Option<PathBuf>,
    /// `--target` and `--replace`.
    targeting: Targeting,
    /// What the targets answered to so far.
    matched: Matched,
    /// Refuse a `--replace` that was not planned as one ([`targeting::replace_refusal`]).
    check_replace: bool,
    /// Per provider type, the reads of this run through its cloud: wide lists shared by the shoots
    /// (`trellis_planner::wide`), made when a shoot of the provider is first planned.
    reads: std::sync::Mutex<Vec<(&'static str, Arc<FleetReads>)>>,
}

impl Shared {
    fn new(session: &Session, opts: StreamOptions) -> Shared {
        Shared::with(session, opts, &session.targeting)
    }

    fn with(session: &Session, opts: StreamOptions, targeting: &Targeting) -> Shared {
        Shared {
            store: Arc::clone(&session.store),
            registry: Arc::clone(&session.registry),
            clouds: session.clouds_replacing(&targeting.replace),
            opts,
            cwd: std::env::current_dir().ok(),
            targeting: targeting.clone(),
            matched: Matched::default(),
            check_replace: true,
            reads: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The fleet's reads of `provider`'s cloud (`cloud`), shared by its shoots in this run.
    fn reads(&self, provider: &'static dyn Provider, cloud: &Arc<dyn CloudWrite>) -> Arc<FleetReads> {
        let mut reads = self.reads.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, r)) = reads.iter().find(|(t, _)| *t == provider.type_name()) {
            return Arc::clone(r);
        }
        let after = if self.opts.own_reads { usize::MAX } else { trellis_planner::wide::WIDE_AFTER };
        let r = Arc::new(FleetReads::after(Arc::clone(cloud) as Arc<dyn CloudRead>, provider.ids(), after));
        reads.push((provider.type_name(), Arc::clone(&r)));
        r
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
        // A shoot target names a shoot of the inputs, whichever shard takes it.
        shared.matched.shoot(&shared.targeting, &id, &l.metadata().name);
        if shared.opts.shard.is_some_and(|shard| !shard.takes(&id)) {
            other_shards += 1;
            continue;
        }
        if !shared.targeting.plans(&id, &l.metadata().name) {
            shared.matched.left_out();
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
    let input = ShootInput::new(&shared.registry, l.file, l.provider, l.shoot);
    match plan_one(shared, input).await {
        Err(NotPlanned::Other(e)) => DocOutcome::Other(e),
        Err(NotPlanned::Failed(e)) => DocOutcome::Failed(e),
        Ok(None) => {
            shared.matched.left_out();
            DocOutcome::LeftOut
        }
        Ok(Some(planned)) => {
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
/// in batches, up to `READ_AHEAD_DOCS` documents ahead of what [`plan_fleet_streaming`] has
/// planned. Started before the session opens, so parsing the first shoots overlaps the state's open
/// (its checks read the whole state dir) and the simulated cloud's: a fleet plan's only serial part
/// besides the end. Reading touches nothing but the manifest files, and nothing read is shown before
/// the session is open: a failed open is still the command's only error.
/// Shoots are dispatched by `spec.provider.type` through `registry` (the session's).
pub fn read_ahead(registry: Arc<Registry>, files: Vec<PathBuf>) -> ReadAhead {
    read_ahead_bounded(registry, files, READ_AHEAD_DOCS)
}

/// [`read_ahead`] holding at most `max_docs` documents parsed and not yet planned.
fn read_ahead_bounded(registry: Arc<Registry>, files: Vec<PathBuf>, max_docs: usize) -> ReadAhead {
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
            .map(|batch| {
                let registry = Arc::clone(&registry);
                tokio::spawn(async move {
                    batch.iter().map(|f| manifest::load_file_with(registry.providers(), f)).collect::<Vec<_>>()
                })
            })
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
/// rendering its plans, in batches of up to `FILES_PER_TASK` files per task (fewer for a fleet
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
///
/// The notes on Seed pairing ([`derived_inputs`]: a Shoot whose Seed is not among the inputs, a Shoot
/// without an infrastructure plan) go to `note`, one line each, when the derived plans are paired:
/// after every infrastructure plan was emitted, before the derived plans and the checks at the end
/// (and before any error of theirs). A destroy adds one note per shoot whose derived workspace in
/// state no derived plan of the run covers (its Seed not among the inputs): that workspace and the
/// records it holds stay. The engine prints nothing; the caller shows them.
pub async fn plan_fleet_streaming(
    session: &Session,
    paths: &[PathBuf],
    mut files: ReadAhead,
    opts: StreamOptions,
    mut note: impl FnMut(String),
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
                DocOutcome::Failed(e) if opts.keep_going => summary.refused.push((id, doc.file, e)),
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
                DocOutcome::LeftOut => {}
            }
        }
    }
    if let Some(e) = unreadable {
        return Err(e.into());
    }
    if let Some(e) = refusal.filter(|_| seeds == 0) {
        return Err(e.into());
    }
    if shoots == 0 && summary.shard.left == 0 && shared.matched.left_out_count() == 0 {
        // Seeds alone plan nothing: a derived plan is a Shoot's. (A shard may take none of a fleet.)
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
        return Err(FleetError::new(failures).into());
    }
    // Derived plans (GEP-0066's domains plans), only when Seeds were among the inputs: a Seed may be
    // in any file, so the manifests are loaded again whole and paired ([`derived_inputs`], its notes
    // handed to `note`); each paired Shoot's derived plan is made and handed out after every
    // infrastructure plan, in shoot order.
    let mut derived = Vec::new();
    if seeds > 0 {
        let loaded = manifest::load_with(session.registry.providers(), paths)?;
        let mut inputs = derived_inputs(&session.registry, &loaded, session.features, &mut note)?;
        let targeting = &shared.targeting;
        for input in &inputs {
            shared.matched.shoot(targeting, &input.shoot.technical_id(), &input.shoot.metadata().name);
        }
        if let Some(shard) = opts.shard {
            inputs.retain(|input| shard.takes(&input.shoot.technical_id()));
        }
        inputs.retain(|input| targeting.plans(&input.shoot.technical_id(), &input.shoot.metadata().name));
        // The Seed-level rules are checked before the shoots are planned, and a Seed whose rules are
        // broken is said as such beside what planning its shoots refused, not hidden behind it (a
        // missing DNS zone, a shoot's own validation).
        let seeds_checked = check_seeds(
            &session.registry,
            inputs.iter().map(|i| (i.provider, i.shoot.as_ref(), i.file.as_path())),
            &loaded.seeds,
            session.features,
            Some(session.store.as_ref()),
        );
        let planned = plan_inputs_keep_going(&shared, inputs, &mut summary.refused).await;
        derived = match (seeds_checked, planned) {
            (Ok(()), planned) => planned?,
            (Err(seeds), Ok(_)) => return Err(seeds),
            (Err(seeds), Err(plans)) => return Err(merge_fleet_errors(plans, seeds)),
        };
    }
    // Shoots in state whose manifests are gone from the inputs: noted, and with `--prune` their
    // destroys planned (handed out after every other plan).
    let pruned = if opts.orphans == Orphans::Ignore {
        Vec::new()
    } else {
        let orphans = find_orphans(session, &seen, opts.shard)?;
        for o in &orphans {
            note(o.note(opts.orphans));
        }
        summary.orphans = orphans.iter().map(|o| o.shoot.clone()).collect();
        if opts.orphans == Orphans::Prune {
            let inputs = orphans.into_iter().map(|o| o.input(session)).collect::<Result<Vec<_>>>()?;
            let destroy = Arc::new(Shared::new(session, StreamOptions { destroy: true, ..opts }));
            let mut plans = plan_inputs_keep_going(&destroy, inputs, &mut summary.refused).await?;
            for p in &mut plans {
                p.planned.plan.warnings.insert(0, pruned_warning(&p.workspace.shoot));
            }
            plans
        } else {
            Vec::new()
        }
    };
    if opts.destroy {
        let mut ids: Vec<(&String, &manifest::DocRef)> = seen.iter().collect();
        ids.sort_by(|a, b| a.0.cmp(b.0));
        for (id, doc) in ids {
            for line in derived_left_behind(session, id, &doc.file, &derived)? {
                note(line);
            }
        }
    }
    // Every target and replacement answered to by some plan, or the command fails naming the first.
    // (An address may be a node of a shoot another shard plans.)
    shared.matched.check(&shared.targeting, summary.shard.left > 0)?;
    summary.left_out = shared.matched.left_out_count();
    facts.sort_by(|a, b| a.1.shoot.cmp(&b.1.shoot));
    let facts: Vec<FleetFacts<'_>> =
        facts.iter().map(|(provider, plan, file)| FleetFacts { provider: *provider, plan, file }).collect();
    summary.fleet_warnings = check_fleet_facts(session, &|shoot| seen.contains_key(shoot), &facts).await?;
    // The derived plans go out last, after every infrastructure plan, in shoot order; then the
    // pruned shoots' destroys.
    for planned in derived.into_iter().chain(pruned) {
        summary.plans += 1;
        summary.changes |= planned.planned.plan.has_changes();
        emit(StreamedPlan::with_facts(planned, &opts).0)?;
    }
    Ok(summary)
}

/// Two failures of one fleet as one: both lists of failures, `first`'s then `then`'s, when both are
/// [`FleetError`]s; otherwise `first`.
fn merge_fleet_errors(first: anyhow::Error, then: anyhow::Error) -> anyhow::Error {
    match (first.downcast::<FleetError>(), then.downcast::<FleetError>()) {
        (Ok(mut a), Ok(b)) => {
            a.failures.extend(b.failures);
            a.into()
        }
        (Ok(a), Err(_)) => a.into(),
        (Err(a), _) => a,
    }
}

/// The warning that opens a pruned shoot's destroy plan: why a shoot nobody named is destroyed.
pub fn pruned_warning(workspace: &str) -> String {
    format!(
        "pruned: {workspace} is in state but its manifest is not among the inputs; this plan destroys it (--prune), as planned from the manifest it was last applied with"
    )
}

/// A workspace in state whose shoot is not among a fleet's inputs.
struct Orphan {
    shoot: String,
    /// Its resources, as `list` counts them (no load).
    resources: usize,
}

impl Orphan {
    /// The note `plan -f DIR` prints about it.
    fn note(&self, mode: Orphans) -> String {
        let n = self.resources;
        let what = format!(
            "in state, not in the inputs: {}, {n} resource{}",
            trellis_plans::escape::text(&self.shoot),
            if n == 1 { "" } else { "s" }
        );
        if mode == Orphans::Prune {
            format!("{what}; its destroy is planned (--prune)")
        } else {
            format!("{what}; `--prune` plans its destroy, `trellis state rm` forgets it")
        }
    }

    /// The input its destroy is planned from: the manifest it was last applied with, read by the
    /// provider that wrote its state (its workspace is loaded here, and checked as every load is).
    fn input(self, session: &Session) -> Result<ShootInput> {
        let registry = &session.registry;
        let id = self.shoot.as_str();
        let Some(workspace) = session.store.load(id)? else {
            bail!("{id} was removed from the state while this plan ran; plan again");
        };
        let (Some(state), Some(manifest)) = (&workspace.provider_state, &workspace.applied_manifest) else {
            bail!(
                "{id} is in state but not in the inputs, and its workspace does not hold the manifest it was applied with (an earlier trellis applied it): destroy it with `trellis destroy -f MANIFEST` (the manifest from your repository's history), or forget it with `trellis state rm {id}`"
            );
        };
        let Some(entry) = registry.entry(&state.provider) else {
            bail!("{id}: its state was written by provider {:?}, which this trellis does not know; prune it with a trellis that has it", state.provider);
        };
        let shoot = entry.provider.shoot_from_json(manifest).with_context(|| {
            format!(
                "{id}: the manifest its workspace holds cannot be read; destroy it with `trellis destroy -f MANIFEST`"
            )
        })?;
        let input = ShootInput::new(registry, PathBuf::from(format!("{id} in state")), entry.provider, shoot);
        if input.id() != id {
            bail!("{id}: the manifest its workspace holds is of {}; the state was edited — check it with `trellis state show {id}`", input.id());
        }
        Ok(input)
    }
}

/// The workspaces in state (of `shard`'s shoots) that hold something (resources or provider state)
/// and whose shoot is not among `seen` (the inputs' technical ids; a derived workspace,
/// `<id><suffix>`, goes with its shoot), sorted by name.
fn find_orphans(
    session: &Session,
    seen: &HashMap<String, manifest::DocRef>,
    shard: Option<Shard>,
) -> Result<Vec<Orphan>> {
    let suffixes: Vec<&str> = session
        .registry
        .entries()
        .iter()
        .filter_map(|e| e.derived.map(|d| d.workspace_suffix))
        .filter(|s| !s.is_empty())
        .collect();
    let mut out = Vec::new();
    for summary in session.store.list()? {
        let name = summary.shoot.as_str();
        let shoot = suffixes.iter().find_map(|s| name.strip_suffix(s)).unwrap_or(name);
        if seen.contains_key(shoot) || shard.is_some_and(|s| !s.takes(shoot)) {
            continue;
        }
        // A workspace with resources is an orphan by its count alone (nothing is loaded: noting the
        // orphans of a fleet costs what `list` does); one without is only if it has provider state.
        if summary.resources == 0 {
            let Some(ws) = session.store.load(name)? else { continue };
            if ws.provider_state.is_none() {
                continue; // destroyed, or never applied
            }
        }
        out.push(Orphan { shoot: summary.shoot.clone(), resources: summary.resources });
    }
    Ok(out)
}

/// The plan documents of planned shoots, by value: for the fleet's plan file without copying it.
pub fn into_plan_set(plans: Vec<ShootPlan>) -> PlanSet {
    PlanSet::new(plans.into_iter().map(|p| p.planned.plan).collect())
}

pub fn plan_set(plans: &[ShootPlan]) -> PlanSet {
    PlanSet::new(plans.iter().map(|p| p.planned.plan.clone()).collect())
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
        let ahead = read_ahead_bounded(Registry::builtin(), files, 4);
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
        let mut ahead = read_ahead_bounded(Registry::builtin(), files, 4);
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
