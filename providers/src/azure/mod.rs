//! The Azure provider.
//!
//! - [`api`]: InfrastructureConfig / InfrastructureStatus as upstream (serde, upstream JSON names).
//! - [`validation`]: admission validation, create and update, with upstream's field paths and messages.
//! - [`overlay`]: whether the CNI runs an overlay (provider-azure's Shoot mutator, the CNIs' defaults).
//! - [`preflight`]: runtime rules against observed cloud state.
//! - [`desired`]: the upstream task graph as desired resources; [`byo`]: the spec's task-gating matrix.
//! - [`render`]: InfrastructureStatus, azure.json, CCM flags, allow-egress, egress CIDRs.
//! - [`names`]: resource names and ARM id templates.
//! - [`prefixes`]: a subnet's address prefixes in either of ARM's shapes (`addressPrefix`, `addressPrefixes`).
//!
//! [`plan`] runs the pipeline for one shoot: validate → discover → pre-flight → desired → diff → artifacts.
//! [`provider::Azure`] is this module as a [`crate::provider::Provider`] (what the registry holds).

pub mod api;
pub mod byo;
pub mod desired;
pub mod names;
pub mod orphans;
pub mod overlay;
pub mod prefixes;
pub mod preflight;
pub mod provider;
pub mod render;
pub mod state;
pub mod validation;
pub mod warnings;

use crate::field::{ErrorList, Path};
use crate::manifest::{Networking, Shoot, Worker};
use api::InfrastructureConfig;
use serde_json::Value;
use state::{AzureState, LastApplied};
use std::collections::BTreeMap;
use trellis_planner::cloud::{CloudError, CloudRead};
use trellis_planner::discover::{FetchBug, Observed};
use trellis_planner::retry::RetryPolicy;
use trellis_plans::{Mode, Plan, Provider};
use trellis_state::Workspace;

pub type AzureShoot = Shoot<InfrastructureConfig>;

/// `spec.provider.type` of an Azure Shoot.
pub const PROVIDER_TYPE: &str = "azure";

/// Everything the pure stages need to know about the shoot besides its InfrastructureConfig.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// Technical id and cluster resource group, `shoot--<project>--<name>`.
    pub tn: String,
    /// The subscription the shoot's credentials point at.
    pub sub: String,
    pub region: String,
    pub migrated_zone: Option<i32>,
    pub annotations: BTreeMap<String, String>,
    pub nodes: Option<String>,
    pub pods: Option<String>,
    pub services: Option<String>,
    /// Whether the CNI runs an overlay (see [`overlay`]): the plan's decision kept in state
    /// ([`AzureState::overlay`]), else `spec.networking.providerConfig.overlay.enabled` (false when absent).
    pub overlay: bool,
    /// Σ workers[].maximum.
    pub max_nodes: i64,
    /// The resources the workspace records, with their owners: the source of the deletion of the
    /// managed ones the configuration no longer wants ([`desired::recorded_deletes`]). Empty where no
    /// workspace is involved (artifacts after an apply, the orphan report).
    pub recorded: Vec<desired::Recorded>,
}

impl Ctx {
    pub fn new(shoot: &AzureShoot, subscription: &str, state: &AzureState) -> Ctx {
        Ctx {
            tn: shoot.technical_id(),
            sub: subscription.to_string(),
            region: shoot.spec.region.clone(),
            migrated_zone: state.migrated_zone,
            annotations: shoot.metadata.annotations.clone(),
            nodes: shoot.spec.networking.nodes.clone(),
            pods: shoot.spec.networking.pods.clone(),
            services: shoot.spec.networking.services.clone(),
            overlay: state.overlay.unwrap_or_else(|| shoot.overlay_enabled()),
            max_nodes: shoot.max_nodes(),
            recorded: Vec::new(),
        }
    }

    /// This context with the resources `ws` records.
    pub fn with_recorded(mut self, ws: &Workspace) -> Ctx {
        self.recorded = desired::Recorded::of(ws);
        self
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }
}

/// Why a shoot cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum AzureError {
    #[error("{} validation error(s)", .0.len())]
    Invalid(ErrorList),
    #[error("{} pre-flight error(s)", .0.len())]
    Preflight(Vec<preflight::PreflightError>),
    #[error(transparent)]
    Cloud(#[from] CloudError),
    /// The workspace's provider state cannot be read (newer than this trellis, or damaged).
    #[error(transparent)]
    State(Box<trellis_state::StateError>),
    /// A stage asked about something discovery never fetched (a bug in the provider's discovery).
    #[error(transparent)]
    Bug(#[from] FetchBug),
}

/// A planned shoot: the plan and what the apply needs to remember.
pub struct Planned {
    pub plan: Plan,
    /// The provider state to store after a successful apply.
    pub state: AzureState,
    /// Recorded resources to forget after a successful apply, as (address, id): managed resources
    /// the configuration no longer wants that are already gone from the cloud (no delete node).
    pub forget: Vec<(String, String)>,
}

/// The provider state of a workspace, migrated to the current version (empty for a new workspace).
pub fn stored_state(ws: &Workspace) -> Result<AzureState, AzureError> {
    Ok(ws.provider_state::<AzureState>().map_err(|e| AzureError::State(Box::new(e)))?.unwrap_or_default())
}

/// The configuration as kept in state, for update validation and migrations: the
/// InfrastructureConfig, the networking as provider-azure's mutator leaves it, and the workers.
pub fn last_applied(shoot: &AzureShoot) -> LastApplied {
    LastApplied {
        infrastructure_config: Some(shoot.spec.provider.infrastructure_config.clone()),
        networking: Some(shoot.spec.networking.clone()),
        workers: Some(shoot.spec.provider.workers.clone()),
    }
}

fn old_config(state: &AzureState) -> Option<&InfrastructureConfig> {
    state.last_applied.as_ref()?.infrastructure_config.as_ref()
}

/// The shoot's spec as last applied, besides the InfrastructureConfig (for the update rules of
/// `spec.networking` and the workers, and for the mutator). `None` before the first apply, and for a
/// state written before trellis kept the workers: then those update rules cannot run.
#[derive(Clone, Debug, Default)]
pub struct OldSpec {
    pub networking: Networking,
    pub workers: Vec<Worker>,
}

fn old_spec(state: &AzureState) -> Option<OldSpec> {
    let applied = state.last_applied.as_ref()?;
    let workers = applied.workers.clone()?;
    Some(OldSpec { networking: applied.networking.clone().unwrap_or_default(), workers })
}

/// The shoot as Gardener would store it: `spec.networking` after provider-azure's Shoot mutator
/// ([`overlay::mutate_networking`], against the last-applied networking; not for a workerless shoot).
pub fn mutated(shoot: &AzureShoot, ws: &Workspace) -> Result<AzureShoot, AzureError> {
    let mut out = shoot.clone();
    if !shoot.spec.provider.workers.is_empty() {
        let old = old_spec(&stored_state(ws)?);
        out.spec.networking = overlay::mutate_networking(&shoot.spec.networking, old.as_ref().map(|o| &o.networking));
    }
    Ok(out)
}

/// Admission validation, all errors at once, in this order:
///
/// 1. the shoot's name and namespace ([`crate::metadata`]; the name-length rule only for a shoot
///    with no configuration applied yet, as upstream checks it on create only);
/// 2. Gardener's rules for `spec.networking` ([`crate::networking`]): the API's validation, its
///    update rules against the last-applied networking, and the `ShootValidator` admission plugin's
///    disjointedness and reserved-range checks;
/// 3. provider-azure's Shoot validator (skipped for a workerless shoot, as upstream's webhook does):
///    `ValidateNetworking`, the InfrastructureConfig's create rules and its update rules against the
///    last-applied config, `ValidateWorkers`, and `ValidateWorkersUpdate` against the last-applied
///    workers.
pub fn validate(shoot: &AzureShoot, ws: &Workspace) -> Result<(), AzureError> {
    let cfg = &shoot.spec.provider.infrastructure_config;
    let stored = stored_state(ws)?;
    let old = old_config(&stored);
    let old_spec = old_spec(&stored);
    let workerless = shoot.spec.provider.workers.is_empty();
    let networking_path = Path::new("spec").child("networking");
    let workers_path = Path::new("spec").child("provider").child("workers");

    let mut errs = crate::metadata::validate(&shoot.metadata);
    if errs.is_empty() && old.is_none() {
        errs.extend(crate::metadata::validate_create(&shoot.metadata));
    }
    let networking = &shoot.spec.networking;
    errs.extend(crate::networking::validate_networking(networking, workerless, &networking_path));
    if let Some(old) = &old_spec {
        errs.extend(crate::networking::validate_networking_update(networking, &old.networking, &networking_path));
    }
    errs.extend(crate::networking::validate_shoot_networks(networking, &networking_path));

    if !workerless {
        errs.extend(validation::shoot::validate_networking(networking, &networking_path));
    }
    errs.extend(validation::validate_infrastructure_config(cfg, shoot));
    if let Some(old) = old {
        errs.extend(validation::validate_infrastructure_config_update(old, cfg, shoot));
    }
    if !workerless {
        errs.extend(validation::shoot::validate_workers(&shoot.spec.provider.workers, cfg, &workers_path));
        if let Some(old) = &old_spec {
            errs.extend(validation::shoot::validate_workers_update(
                &old.workers,
                &shoot.spec.provider.workers,
                &workers_path,
            ));
        }
    }
    // Upstream reports some errors twice (the single-subnet workers rule runs in two places); say each once.
    let mut seen = std::collections::BTreeSet::new();
    errs.retain(|e| seen.insert(e.to_string()));
    if errs.is_empty() {
        Ok(())
    } else {
        Err(AzureError::Invalid(errs))
    }
}

/// The zone that keeps the single-subnet names: remembered, or found now by a single → multi-subnet
/// migration (the zone whose CIDR equals the old workers CIDR), as upstream's migration webhook does.
fn migrated_zone(cfg: &InfrastructureConfig, stored: &AzureState) -> Option<i32> {
    if let Some(z) = stored.migrated_zone {
        return Some(z);
    }
    let old = old_config(stored)?;
    if !old.networks.zones.is_empty() || cfg.networks.zones.is_empty() {
        return None;
    }
    old.networks.workers.as_ref().and_then(|w| cfg.networks.zones.iter().find(|z| &z.cidr == w)).map(|z| z.name)
}

/// Plans one Azure shoot against the cloud. Reads only.
pub async fn plan(
    shoot: &AzureShoot,
    ws: &Workspace,
    cloud: &dyn CloudRead,
    retry: &RetryPolicy,
    subscription: &str,
    accept_drift: bool,
) -> Result<Planned, AzureError> {
    validate(shoot, ws)?;
    let shoot = &mutated(shoot, ws)?;
    let cfg = &shoot.spec.provider.infrastructure_config;
    let stored = stored_state(ws)?;
    let mut state = stored.clone();
    state.overlay = Some(overlay::overlay_enabled(&shoot.spec.networking));
    let mut warnings = Vec::new();
    if let Some(z) = migrated_zone(cfg, &stored) {
        if stored.migrated_zone.is_none() {
            warnings.push(format!(
                "single → multi-subnet migration: zone {z} takes over the existing subnet {tn}-nodes (and NAT gateway {tn}-nat-gateway), as upstream's migration webhook does with annotation {}={z}",
                api::NETWORK_LAYOUT_ZONE_MIGRATION_ANNOTATION,
                tn = shoot.technical_id()
            ));
        }
        state.migrated_zone = Some(z);
    }
    let ctx = Ctx::new(shoot, subscription, &state).with_recorded(ws);

    let mut observed = Observed::default();
    observed.fetch(cloud, retry, &desired::discovery_round1(cfg, &ctx), &[]).await?;
    let (ids, lists) =
        desired::discovery_round2(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure discovery round 2"))?;
    observed.fetch(cloud, retry, &ids, &lists).await?;

    let mut errs = preflight::check(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure preflight"))?;
    let byo_facts = preflight::byo_memory(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure preflight"))?;
    if !accept_drift {
        errs.extend(preflight::drift(cfg, &ctx, &byo_facts, &stored.byo));
    }
    if !errs.is_empty() {
        return Err(AzureError::Preflight(errs));
    }
    state.byo.update(byo_facts);
    let desired = desired::desired(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure desired"))?;
    let forget = desired::recorded_gone(&ctx, &desired, &observed).map_err(|e| e.in_stage("azure desired"))?;
    let nodes = trellis_planner::diff::plan_nodes(desired, &observed)?;
    let artifacts = render::artifacts(cfg, &ctx, &observed, &nodes).map_err(|e| e.in_stage("azure render"))?;
    warnings.extend(warnings::warnings(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure warnings"))?);
    let plan = plan_document(cfg, &ctx, ws, nodes, artifacts, warnings);
    state.last_applied = Some(last_applied(shoot));
    Ok(Planned { plan, state, forget })
}

/// The plan document of one shoot; `source` is filled in by the caller, which knows the file.
fn plan_document(
    cfg: &InfrastructureConfig,
    ctx: &Ctx,
    ws: &Workspace,
    nodes: Vec<trellis_plans::Node>,
    artifacts: trellis_plans::Artifacts,
    warnings: Vec<String>,
) -> Plan {
    let mode = if cfg.is_using_user_managed_egress() { Mode::UserManagedEgress } else { Mode::Managed };
    Plan::new(ctx.tn.clone(), Provider::Azure, Some(mode), ws.prior(), nodes, artifacts, warnings)
}

/// Re-renders the artifacts against the cloud as it is after an apply (public IP addresses are known now).
pub async fn artifacts_after_apply(
    shoot: &AzureShoot,
    state: &AzureState,
    cloud: &dyn CloudRead,
    retry: &RetryPolicy,
    subscription: &str,
) -> Result<trellis_plans::Artifacts, AzureError> {
    let cfg = &shoot.spec.provider.infrastructure_config;
    let ctx = Ctx::new(shoot, subscription, state);
    let mut observed = Observed::default();
    observed.fetch(cloud, retry, &desired::discovery_round1(cfg, &ctx), &[]).await?;
    // Round two as planning does it: its lists answer for the resources in the cluster resource group.
    let (ids, lists) =
        desired::discovery_round2(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure discovery round 2"))?;
    observed.fetch(cloud, retry, &ids, &lists).await?;
    Ok(render::artifacts(cfg, &ctx, &observed, &[]).map_err(|e| e.in_stage("azure render"))?)
}

/// Plans the deletion of one Azure shoot (upstream delete graph). Reads only.
pub async fn plan_destroy(
    shoot: &AzureShoot,
    ws: &Workspace,
    cloud: &dyn CloudRead,
    retry: &RetryPolicy,
    subscription: &str,
) -> Result<Planned, AzureError> {
    let cfg = &shoot.spec.provider.infrastructure_config;
    let mut state = stored_state(ws)?;
    let ctx = Ctx::new(shoot, subscription, &state).with_recorded(ws);
    let mut observed = Observed::default();
    observed.fetch(cloud, retry, &desired::discovery_round1(cfg, &ctx), &[]).await?;
    let (ids, lists) =
        desired::destroy_discovery(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure destroy discovery"))?;
    observed.fetch(cloud, retry, &ids, &lists).await?;
    let desired = desired::destroy(cfg, &ctx, &observed).map_err(|e| e.in_stage("azure destroy"))?;
    let nodes = trellis_planner::diff::plan_nodes(desired, &observed)?;
    // A destroy produces no artifacts. The empty CCM artifacts are written as before, so a destroy
    // plan's JSON (and digest) is what earlier versions wrote.
    use trellis_plans::Artifact;
    let artifacts = trellis_plans::Artifacts::new()
        .with(Artifact::InfrastructureStatus(Value::Null))
        .with(Artifact::EgressCidrs(None))
        .with(Artifact::CloudProviderConfig(Default::default()))
        .with(Artifact::CcmFlags(Default::default()))
        .with(Artifact::AllowEgress(false));
    let plan = plan_document(cfg, &ctx, ws, nodes, artifacts, Vec::new());
    state.last_applied = Some(last_applied(shoot));
    // A destroy empties the workspace: nothing to forget one by one.
    Ok(Planned { plan, state, forget: Vec::new() })
}

/// The BYO subnet a planned shoot uses (its user-owned subnet node), lowercased.
pub fn byo_subnet_of_plan(plan: &Plan) -> Option<String> {
    plan.nodes.iter().find(|n| is_byo_subnet_node(n)).and_then(|n| n.id.as_deref()).map(str::to_ascii_lowercase)
}

/// Whether a plan node is a BYO subnet: a user-owned subnet.
pub fn is_byo_subnet_node(node: &trellis_plans::Node) -> bool {
    node.kind == trellis_plans::Kind::Subnet && node.ownership() == trellis_plans::Ownership::User
}

/// The BYO subnet a workspace's last-applied configuration uses, lowercased.
pub fn byo_subnet_of_workspace(ws: &Workspace, subscription: &str) -> Option<String> {
    let state = ws.provider_state::<AzureState>().ok()??;
    let cfg = old_config(&state)?;
    let subnet = cfg.networks.subnet.as_ref()?;
    let (rg, vnet) = (cfg.networks.vnet.resource_group.as_ref()?, cfg.networks.vnet.name.as_ref()?);
    Some(names::subnet_id(subscription, rg, vnet, &subnet.name).to_ascii_lowercase())
}
