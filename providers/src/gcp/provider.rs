//! GCP as a [`Provider`]: each method delegates to the pure planning functions of this module's
//! parent ([`super::desired`], [`super::preflight`], [`super::render`], [`super::warnings`],
//! [`super::validation`]) over an [`Observed`] keyed by [`GceIds`].

use serde_json::Value;
use trellis_planner::cloud::CloudRead;
use trellis_planner::discover::{NotFetched, Observed};
use trellis_planner::ids::{GceIds, IdScheme};
use trellis_planner::model::Desired;
use trellis_plans::{Artifacts, Kind, Mode, Node, Plan};
use trellis_state::{ProviderState, Workspace};

use super::api::{InfrastructureConfig, Mode as CfgMode};
use super::state::{GcpState, LastApplied};
use super::{desired, fleet, names, preflight, render, warnings, Ctx, GcpShoot};
use crate::field::Path;
use crate::manifest::ShootEnvelope;
use crate::provider::{
    AppliedShoots, CloudCtx, FleetShoot, FleetWarning, Orphan, Planned, Provider, ProviderError, ProviderShoot,
};

/// The GCP provider, as registered in [`crate::registry`].
pub static GCP: Gcp = Gcp;

/// `spec.provider.type: gcp`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gcp;

fn other(e: impl std::error::Error + Send + Sync + 'static) -> ProviderError {
    ProviderError::Other(Box::new(e))
}

fn bug(stage: &'static str) -> impl Fn(NotFetched) -> ProviderError {
    move |e| other(e.in_stage(stage))
}

impl Gcp {
    /// The GCP shoot behind `shoot`.
    fn shoot<'a>(&self, shoot: &'a dyn ProviderShoot) -> Result<&'a GcpShoot, ProviderError> {
        shoot.typed(super::PROVIDER_TYPE)
    }
}

/// The provider state of a workspace, migrated to the current version (empty for a new workspace).
pub fn stored_state(ws: &Workspace) -> Result<GcpState, ProviderError> {
    Ok(ws.provider_state::<GcpState>()?.unwrap_or_default())
}

/// The shoot as last applied: `shoot` with the configuration, networking and workers of `applied`.
fn old_shoot(shoot: &GcpShoot, applied: &LastApplied) -> GcpShoot {
    let mut old = shoot.clone();
    old.spec.provider.infrastructure_config = applied.infrastructure_config.clone();
    old.spec.networking = applied.networking.clone();
    old.spec.provider.workers = applied.workers.clone();
    old
}

/// Admission validation, all errors at once: the shoot's name and namespace ([`crate::metadata`];
/// the name-length rule only before the first apply), Gardener's rules for `spec.networking`
/// ([`crate::networking`], with its update rules against the last-applied networking), then
/// provider-gcp's Shoot validator ([`super::validation::shoot::validate_shoot`]) with the last-applied
/// shoot as the old one.
pub fn validate(shoot: &GcpShoot, ws: &Workspace) -> Result<(), ProviderError> {
    let stored = stored_state(ws)?;
    let old = stored.last_applied.as_ref().map(|a| old_shoot(shoot, a));
    let workerless = shoot.spec.provider.workers.is_empty();
    let networking_path = Path::new("spec").child("networking");
    let networking = &shoot.spec.networking;

    let mut errs = crate::metadata::validate(&shoot.metadata);
    if errs.is_empty() && old.is_none() {
        errs.extend(crate::metadata::validate_create(&shoot.metadata));
    }
    errs.extend(crate::networking::validate_networking(networking, workerless, &networking_path));
    if let Some(old) = &old {
        errs.extend(crate::networking::validate_networking_update(networking, &old.spec.networking, &networking_path));
    }
    errs.extend(crate::networking::validate_shoot_networks(networking, &networking_path));
    errs.extend(super::validation::shoot::validate_shoot(shoot, old.as_ref()));
    let mut seen = std::collections::BTreeSet::new();
    errs.retain(|e| seen.insert(e.to_string()));
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ProviderError::Invalid(errs))
    }
}

/// What the cloud holds of the resources `(ids, lists)` name.
async fn observe(
    cloud: &dyn CloudRead,
    ctx: &CloudCtx,
    (ids, lists): (Vec<String>, Vec<trellis_planner::discover::ListReq>),
) -> Result<Observed, ProviderError> {
    let mut observed = Observed::new(&GceIds);
    observed.fetch(cloud, &ctx.retry, &ids, &lists).await.map_err(other)?;
    Ok(observed)
}

/// The plan document of one shoot; `source` is filled in by the caller, which knows the file.
fn plan_document(
    cfg: &InfrastructureConfig,
    tn: &str,
    ws: &Workspace,
    nodes: Vec<Node>,
    artifacts: Artifacts,
    warnings: Vec<String>,
) -> Plan {
    let mode = match cfg.mode() {
        CfgMode::UserManagedEgress { .. } => Mode::UserManagedEgress,
        CfgMode::Managed => Mode::Managed,
    };
    Plan::new(tn.to_string(), trellis_plans::Provider::Gcp, Some(mode), ws.prior(), nodes, artifacts, warnings)
}

/// The selfLink of the shoot's BYO workers subnet (`None` in managed mode).
fn byo_workers_subnet(cfg: &InfrastructureConfig, ctx: &Ctx) -> Option<String> {
    match cfg.mode() {
        CfgMode::UserManagedEgress { workers, .. } => Some(desired::subnet_res(ctx, &workers.name).id),
        CfgMode::Managed => None,
    }
}

fn neutral(plan: Plan, state: &GcpState) -> Result<Planned, ProviderError> {
    let state = ProviderState::of(state)
        .map_err(|e| ProviderError::Other(format!("gcp state does not serialise: {e}").into()))?;
    Ok(Planned { plan, state, forget: Vec::new() })
}

fn last_applied(shoot: &GcpShoot) -> LastApplied {
    LastApplied {
        infrastructure_config: shoot.spec.provider.infrastructure_config.clone(),
        networking: shoot.spec.networking.clone(),
        workers: shoot.spec.provider.workers.clone(),
    }
}

#[async_trait::async_trait]
impl Provider for Gcp {
    fn type_name(&self) -> &'static str {
        super::PROVIDER_TYPE
    }

    fn ids(&self) -> &'static dyn IdScheme {
        &GceIds
    }

    fn infrastructure_config_type(&self) -> (&'static str, &'static str) {
        (super::api::API_VERSION, super::api::INFRASTRUCTURE_CONFIG_KIND)
    }

    fn parse_shoot(&self, text: &str) -> Result<Box<dyn ProviderShoot>, serde_saphyr::Error> {
        crate::provider::parse_typed_shoot::<GcpShoot>(text)
    }

    fn shoot_from_json(&self, value: &Value) -> Result<Box<dyn ProviderShoot>, serde_json::Error> {
        crate::provider::typed_shoot_from_json::<GcpShoot>(value)
    }

    fn shoot_from_envelope(&self, shoot: ShootEnvelope) -> Result<Box<dyn ProviderShoot>, serde_json::Error> {
        crate::provider::typed_shoot_from_envelope::<InfrastructureConfig>(shoot)
    }

    fn validate(&self, shoot: &dyn ProviderShoot, ws: &Workspace) -> Result<(), ProviderError> {
        validate(self.shoot(shoot)?, ws)
    }

    /// validate → discover → pre-flight → desired → diff → artifacts and warnings.
    async fn plan(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        cctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        let shoot = self.shoot(shoot)?;
        validate(shoot, ws)?;
        let cfg = &shoot.spec.provider.infrastructure_config;
        let ctx = Ctx::new(shoot, &cctx.account);
        let observed = observe(cloud, cctx, desired::discovery(cfg, &ctx)).await?;
        let errs = preflight::check(cfg, &ctx, &observed).map_err(bug("gcp preflight"))?;
        if !errs.is_empty() {
            return Err(ProviderError::Preflight(errs.into_iter().map(|e| Box::new(e) as Box<_>).collect()));
        }
        let desired = desired::desired(cfg, &ctx, &observed).map_err(bug("gcp desired"))?;
        let nodes = trellis_planner::diff::plan_nodes(desired, &observed).map_err(other)?;
        let artifacts = render::artifacts(cfg, &ctx, &observed).map_err(bug("gcp render"))?;
        let warnings = warnings::warnings(cfg, &ctx, &observed).map_err(bug("gcp warnings"))?;
        let plan = plan_document(cfg, &ctx.tn, ws, nodes, artifacts, warnings);
        let mut state = stored_state(ws)?;
        state.last_applied = Some(last_applied(shoot));
        state.byo_workers_subnet = byo_workers_subnet(cfg, &ctx);
        state.region = Some(ctx.region.clone());
        neutral(plan, &state)
    }

    /// The delete graph (upstream's `buildDeleteGraph`, with its BYO early return).
    async fn plan_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        cctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        let shoot = self.shoot(shoot)?;
        let cfg = &shoot.spec.provider.infrastructure_config;
        let ctx = Ctx::new(shoot, &cctx.account);
        let observed = observe(cloud, cctx, desired::destroy_discovery(cfg, &ctx)).await?;
        let desired = desired::destroy(cfg, &ctx, &observed).map_err(bug("gcp destroy"))?;
        let nodes = trellis_planner::diff::plan_nodes(desired, &observed).map_err(other)?;
        // A destroy produces no artifacts; the empty ones earlier versions wrote keep its digest.
        let artifacts = Artifacts::new()
            .with(trellis_plans::Artifact::InfrastructureStatus(Value::Null))
            .with(trellis_plans::Artifact::EgressCidrs(None));
        let plan = plan_document(cfg, &ctx.tn, ws, nodes, artifacts, Vec::new());
        let mut state = stored_state(ws)?;
        state.last_applied = Some(last_applied(shoot));
        neutral(plan, &state)
    }

    /// The artifacts rendered again from the cloud as it is now (the NAT's and subnets' addresses
    /// GCE assigned during the apply).
    async fn artifacts_after_apply(
        &self,
        shoot: &dyn ProviderShoot,
        _state: &ProviderState,
        cloud: &dyn CloudRead,
        cctx: &CloudCtx,
    ) -> Result<Artifacts, ProviderError> {
        let shoot = self.shoot(shoot)?;
        let cfg = &shoot.spec.provider.infrastructure_config;
        let ctx = Ctx::new(shoot, &cctx.account);
        let observed = observe(cloud, cctx, desired::discovery(cfg, &ctx)).await?;
        render::artifacts(cfg, &ctx, &observed).map_err(bug("gcp render"))
    }

    /// What the runtime writers (the CCM's routes and LoadBalancer firewall rules) still hold for
    /// this shoot after the destroy: what the delete graph's safety net would delete if run again
    /// (the entries come from the project's route and firewall lists, so each is present).
    async fn orphans_after_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        cloud: &dyn CloudRead,
        cctx: &CloudCtx,
    ) -> Result<Vec<Orphan>, ProviderError> {
        let shoot = self.shoot(shoot)?;
        let cfg = &shoot.spec.provider.infrastructure_config;
        let ctx = Ctx::new(shoot, &cctx.account);
        let observed = observe(cloud, cctx, desired::destroy_discovery(cfg, &ctx)).await?;
        let mut out = Vec::new();
        for d in desired::destroy(cfg, &ctx, &observed).map_err(bug("gcp orphans"))? {
            let Desired::DeleteRuntime { res, .. } = d else { continue };
            let (writer, command) = match res.kind {
                Kind::Route => ("cloud-controller-manager (route controller)", "routes"),
                _ => ("cloud-controller-manager (service controller)", "firewall-rules"),
            };
            let name = names::last_segment(&res.id).to_string();
            out.push(Orphan {
                kind: res.kind,
                prune: format!("gcloud compute {command} delete {name} --project={}", ctx.project),
                id: res.id,
                writer,
            });
        }
        Ok(out)
    }

    /// The fleet checks ([`super::fleet`]) read each BYO shoot's workers subnet node and VPC node; a
    /// managed shoot adds nothing to them.
    fn fleet_facts(&self, plan: Plan) -> Option<Plan> {
        if !plan.nodes.iter().any(fleet::is_byo_workers_subnet_node) {
            return None;
        }
        let nodes: Vec<_> = plan
            .nodes
            .iter()
            .filter(|n| fleet::is_byo_workers_subnet_node(n) || fleet::is_user_vpc_node(n))
            .cloned()
            .collect();
        Some(Plan { nodes, artifacts: Artifacts::default(), warnings: Vec::new(), source: None, ..plan })
    }

    async fn check_fleet(
        &self,
        fleet: &[FleetShoot<'_>],
        applied: AppliedShoots<'_>,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Vec<FleetWarning>, ProviderError> {
        fleet::check(fleet, applied, cloud, ctx).await
    }
}
