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
//! `plan` runs the pipeline for one shoot: validate → discover → pre-flight → desired → diff → artifacts.
//! [`provider::Azure`] is this module as a [`crate::provider::Provider`] (what the registry holds).

pub mod api;
pub mod byo;
pub mod desired;
pub mod kind;
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
use crate::provider::ProviderError;
use crate::stages::GardenerShoot;
use api::InfrastructureConfig;
use state::{AzureState, LastApplied};
use std::borrow::Cow;
use std::collections::BTreeMap;
use trellis_plans::Plan;
use trellis_state::Workspace;

pub type AzureShoot = Shoot<InfrastructureConfig>;

/// `spec.provider.type` of an Azure Shoot.
pub const PROVIDER_TYPE: &str = "azure";

/// The provider, as its plans name it.
pub const PROVIDER: trellis_plans::Provider = trellis_plans::Provider::new(PROVIDER_TYPE);

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

/// The provider state of a workspace, migrated to the current version (empty for a new workspace).
pub fn stored_state(ws: &Workspace) -> Result<AzureState, ProviderError> {
    crate::stages::stored_state::<provider::Azure>(ws)
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
pub fn mutated(shoot: &AzureShoot, stored: &AzureState) -> AzureShoot {
    let mut out = shoot.clone();
    if !shoot.spec.provider.workers.is_empty() {
        let old = old_spec(stored);
        out.spec.networking = overlay::mutate_networking(&shoot.spec.networking, old.as_ref().map(|o| &o.networking));
    }
    out
}

/// Admission validation, all errors at once, in this order:
///
/// 1. the shoot's name and namespace ([`crate::metadata`]; the name-length rule only for a shoot
///    with no configuration applied yet, as upstream checks it on create only);
/// 2. Gardener's rules for `spec.networking` ([`crate::networking`]): the API's validation, its
///    update rules against the last-applied networking, and the `ShootValidator` admission plugin's
///    disjointedness and reserved-range checks;
/// 3. provider-azure's Shoot validator (`rules`).
pub fn validate(shoot: &AzureShoot, ws: &Workspace) -> Result<(), ProviderError> {
    crate::stages::validate(&provider::Azure, shoot, &stored_state(ws)?)
}

/// Gardener's rules for the shoot (1 and 2 of [`validate`]).
fn gardener_shoot<'a>(shoot: &'a AzureShoot, stored: &'a AzureState) -> GardenerShoot<'a> {
    let applied = stored.last_applied.as_ref();
    GardenerShoot {
        metadata: &shoot.metadata,
        networking: &shoot.spec.networking,
        workerless: shoot.spec.provider.workers.is_empty(),
        first_apply: old_config(stored).is_none(),
        // Only with the workers known (a state written before trellis kept them has no old spec).
        old_networking: applied
            .filter(|a| a.workers.is_some())
            .map(|a| a.networking.as_ref().map_or_else(|| Cow::Owned(Networking::default()), Cow::Borrowed)),
    }
}

/// provider-azure's Shoot validator (skipped for a workerless shoot, as upstream's webhook does):
/// `ValidateNetworking`, the InfrastructureConfig's create rules and its update rules against the
/// last-applied config, `ValidateWorkers`, and `ValidateWorkersUpdate` against the last-applied workers.
fn rules(shoot: &AzureShoot, stored: &AzureState) -> ErrorList {
    let cfg = &shoot.spec.provider.infrastructure_config;
    let old = old_config(stored);
    let old_spec = old_spec(stored);
    let workerless = shoot.spec.provider.workers.is_empty();
    let networking_path = Path::new("spec").child("networking");
    let workers_path = Path::new("spec").child("provider").child("workers");
    let networking = &shoot.spec.networking;
    let mut errs = ErrorList::new();
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
    errs
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

/// The BYO subnet a planned shoot uses (its user-owned subnet node), lowercased.
pub fn byo_subnet_of_plan(plan: &Plan) -> Option<String> {
    plan.nodes.iter().find(|n| is_byo_subnet_node(n)).and_then(|n| n.id.as_deref()).map(str::to_ascii_lowercase)
}

/// Whether a plan node is a BYO subnet: a user-owned subnet.
pub fn is_byo_subnet_node(node: &trellis_plans::Node) -> bool {
    node.kind == kind::SUBNET && node.ownership() == trellis_plans::Ownership::User
}

/// The BYO subnet a workspace's last-applied configuration uses, lowercased.
pub fn byo_subnet_of_workspace(ws: &Workspace, subscription: &str) -> Option<String> {
    let state = ws.provider_state::<AzureState>().ok()??;
    let cfg = old_config(&state)?;
    let subnet = cfg.networks.subnet.as_ref()?;
    let (rg, vnet) = (cfg.networks.vnet.resource_group.as_ref()?, cfg.networks.vnet.name.as_ref()?);
    Some(names::subnet_id(subscription, rg, vnet, &subnet.name).to_ascii_lowercase())
}
