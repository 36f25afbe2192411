//! GCP as [`Stages`]: each stage is one of the pure planning functions of this module's parent
//! ([`super::desired`], [`super::preflight`], [`super::render`], [`super::warnings`],
//! [`super::validation`]) over an [`Observed`] keyed by [`GceIds`]; the pipeline is [`crate::stages`]'s.

use super::kind;
use serde_json::Value;
use std::borrow::Cow;
use trellis_planner::cloud::CloudRead;
use trellis_planner::discover::{NotFetched, Observed};
use trellis_planner::ids::{GceIds, IdScheme};
use trellis_planner::model::Desired;
use trellis_plans::terraform::TerraformKind;
use trellis_plans::{Artifacts, Kind, Mode, Node, Plan};
use trellis_state::Workspace;

use super::api::{InfrastructureConfig, Mode as CfgMode};
use super::state::{GcpState, LastApplied};
use super::{desired, fleet, names, preflight, render, warnings, Ctx, GcpShoot};
use crate::field::ErrorList;
use crate::manifest::ShootEnvelope;
use crate::provider::{AppliedShoots, CloudCtx, FleetShoot, FleetWarning, Orphan, ProviderError};
use crate::stages::{Fetch, GardenerShoot, PreflightErrors, Setup, Staged, Stages};

/// The GCP provider, as registered in [`crate::registry`].
pub static GCP: Staged<Gcp> = Staged(Gcp);

/// `spec.provider.type: gcp`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Gcp;

fn bug(stage: &'static str) -> impl Fn(NotFetched) -> ProviderError {
    move |e| e.in_stage(stage).into()
}

/// The provider state of a workspace, migrated to the current version (empty for a new workspace).
pub fn stored_state(ws: &Workspace) -> Result<GcpState, ProviderError> {
    crate::stages::stored_state::<Gcp>(ws)
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
    crate::stages::validate(&Gcp, shoot, &stored_state(ws)?)
}

/// The selfLink of the shoot's BYO workers subnet (`None` in managed mode).
fn byo_workers_subnet(cfg: &InfrastructureConfig, ctx: &Ctx) -> Option<String> {
    match cfg.mode() {
        CfgMode::UserManagedEgress { workers, .. } => Some(desired::subnet_res(ctx, &workers.name).id),
        CfgMode::Managed => None,
    }
}

fn last_applied(shoot: &GcpShoot) -> LastApplied {
    LastApplied {
        infrastructure_config: shoot.spec.provider.infrastructure_config.clone(),
        networking: shoot.spec.networking.clone(),
        workers: shoot.spec.provider.workers.clone(),
    }
}

#[async_trait::async_trait]
impl Stages for Gcp {
    type Shoot = GcpShoot;
    type Ctx = Ctx;
    type State = GcpState;

    const TYPE: &'static str = super::PROVIDER_TYPE;

    fn id_scheme(&self) -> &'static dyn IdScheme {
        &GceIds
    }

    fn account(&self) -> Option<&'static crate::account::Account> {
        Some(&PROJECT)
    }

    fn terraform_kind(
        &self,
        kind: Kind,
        id: Option<&str>,
        _body: Option<&Value>,
        _related: &[&Value],
    ) -> TerraformKind {
        kind::terraform_kind(kind, id)
    }

    fn config_type(&self) -> (&'static str, &'static str) {
        (super::api::API_VERSION, super::api::INFRASTRUCTURE_CONFIG_KIND)
    }

    fn shoot_of_envelope(&self, shoot: ShootEnvelope) -> Result<GcpShoot, serde_json::Error> {
        shoot.with_infrastructure_config()
    }

    fn gardener_shoot<'a>(&self, shoot: &'a GcpShoot, stored: &'a GcpState) -> Option<GardenerShoot<'a>> {
        let applied = stored.last_applied.as_ref();
        Some(GardenerShoot {
            metadata: &shoot.metadata,
            networking: &shoot.spec.networking,
            workerless: shoot.spec.provider.workers.is_empty(),
            first_apply: applied.is_none(),
            old_networking: applied.map(|a| Cow::Borrowed(&a.networking)),
        })
    }

    fn rules(&self, shoot: &GcpShoot, stored: &GcpState) -> ErrorList {
        let old = stored.last_applied.as_ref().map(|a| old_shoot(shoot, a));
        super::validation::shoot::validate_shoot(shoot, old.as_ref())
    }

    fn context(
        &self,
        shoot: &GcpShoot,
        _ws: &Workspace,
        stored: &GcpState,
        cloud: &CloudCtx,
    ) -> Result<Setup<Ctx, GcpState>, ProviderError> {
        Ok(Setup { ctx: Ctx::new(shoot, &cloud.account), state: stored.clone(), warnings: Vec::new() })
    }

    /// One round: the VPC, the static firewall rules, the subnets, router and NAT, and the lists.
    fn discovery(
        &self,
        round: usize,
        shoot: &GcpShoot,
        ctx: &Ctx,
        _observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        Ok((round == 0).then(|| desired::discovery(&shoot.spec.provider.infrastructure_config, ctx)))
    }

    fn preflight(
        &self,
        shoot: &GcpShoot,
        ctx: &Ctx,
        observed: &Observed,
        _stored: &GcpState,
        _next: &mut GcpState,
        _accept_drift: bool,
    ) -> Result<PreflightErrors, ProviderError> {
        let errs = preflight::check(&shoot.spec.provider.infrastructure_config, ctx, observed)
            .map_err(bug("gcp preflight"))?;
        Ok(errs.into_iter().map(preflight::PreflightError::boxed).collect())
    }

    fn desired(&self, shoot: &GcpShoot, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, ProviderError> {
        desired::desired(&shoot.spec.provider.infrastructure_config, ctx, observed).map_err(bug("gcp desired"))
    }

    fn artifacts(
        &self,
        shoot: &GcpShoot,
        ctx: &Ctx,
        observed: &Observed,
        _nodes: &[Node],
    ) -> Result<Artifacts, ProviderError> {
        render::artifacts(&shoot.spec.provider.infrastructure_config, ctx, observed).map_err(bug("gcp render"))
    }

    /// The firewall and route-quota warnings ([`warnings::warnings`]); in user-managed egress first the
    /// documented one that the egress CIDRs are empty.
    fn warnings(&self, shoot: &GcpShoot, ctx: &Ctx, observed: &Observed) -> Result<Vec<String>, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        let mut out = Vec::new();
        if matches!(cfg.mode(), CfgMode::UserManagedEgress { .. }) {
            out.push(super::render::BYO_EGRESS_WARNING.to_string());
        }
        out.extend(warnings::warnings(cfg, ctx, observed).map_err(bug("gcp warnings"))?);
        Ok(out)
    }

    fn mode(&self, shoot: &GcpShoot) -> Option<Mode> {
        Some(match shoot.spec.provider.infrastructure_config.mode() {
            CfgMode::UserManagedEgress { .. } => Mode::UserManagedEgress,
            CfgMode::Managed => Mode::Managed,
        })
    }

    fn next_state(&self, shoot: &GcpShoot, ctx: &Ctx, mut state: GcpState) -> Result<GcpState, ProviderError> {
        state.last_applied = Some(last_applied(shoot));
        state.byo_workers_subnet = byo_workers_subnet(&shoot.spec.provider.infrastructure_config, ctx);
        state.region = Some(ctx.region.clone());
        Ok(state)
    }

    fn destroy_context(
        &self,
        shoot: &GcpShoot,
        _ws: &Workspace,
        _stored: &GcpState,
        cloud: &CloudCtx,
    ) -> Result<Ctx, ProviderError> {
        Ok(Ctx::new(shoot, &cloud.account))
    }

    fn destroy_discovery(
        &self,
        round: usize,
        shoot: &GcpShoot,
        ctx: &Ctx,
        _observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        Ok((round == 0).then(|| desired::destroy_discovery(&shoot.spec.provider.infrastructure_config, ctx)))
    }

    /// The delete graph (upstream's `buildDeleteGraph`, with its BYO early return).
    fn destroy_desired(&self, shoot: &GcpShoot, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, ProviderError> {
        desired::destroy(&shoot.spec.provider.infrastructure_config, ctx, observed).map_err(bug("gcp destroy"))
    }

    /// The empty artifacts earlier versions wrote, which keep a destroy plan's digest.
    fn destroy_artifacts(&self) -> Artifacts {
        Artifacts::new()
            .with(trellis_plans::Artifact::InfrastructureStatus(Value::Null))
            .with(trellis_plans::Artifact::EgressCidrs(None))
    }

    fn destroy_state(&self, shoot: &GcpShoot, mut stored: GcpState) -> GcpState {
        stored.last_applied = Some(last_applied(shoot));
        stored
    }

    /// The plan's context: the artifacts are rendered again from the cloud as it is now (the NAT's and
    /// subnets' addresses GCE assigned during the apply).
    fn after_apply_context(&self, shoot: &GcpShoot, _state: &GcpState, cloud: &CloudCtx) -> Result<Ctx, ProviderError> {
        Ok(Ctx::new(shoot, &cloud.account))
    }

    /// What the runtime writers (the CCM's routes and LoadBalancer firewall rules) still hold for
    /// this shoot after the destroy: what the delete graph's safety net would delete if run again
    /// (the entries come from the project's route and firewall lists, so each is present).
    async fn orphans(
        &self,
        shoot: &GcpShoot,
        cloud: &dyn CloudRead,
        cctx: &CloudCtx,
    ) -> Result<Vec<Orphan>, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        let ctx = Ctx::new(shoot, &cctx.account);
        let (ids, lists) = desired::destroy_discovery(cfg, &ctx);
        let mut observed = Observed::new(&GceIds);
        observed.fetch(cloud, &cctx.retry, &ids, &lists).await?;
        let mut out = Vec::new();
        for d in desired::destroy(cfg, &ctx, &observed).map_err(bug("gcp orphans"))? {
            let Desired::DeleteRuntime { res, .. } = d else { continue };
            let (writer, command) = match res.kind {
                kind::ROUTE => ("cloud-controller-manager (route controller)", "routes"),
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
        // What the bastion controller left in a VPC of the user's: never deleted by trellis either.
        for name in desired::bastion_rules_left(cfg, &ctx, &observed).map_err(bug("gcp orphans"))? {
            out.push(Orphan {
                kind: kind::FIREWALL,
                id: desired::firewall_res(&ctx, &name).id,
                writer: "bastion controller",
                prune: format!("gcloud compute firewall-rules delete {name} --project={}", ctx.project),
            });
        }
        Ok(out)
    }

    /// The fleet checks ([`super::fleet`]) read each BYO shoot's workers subnet node and VPC node; a
    /// managed shoot adds nothing to them.
    fn fleet_facts(&self, plan: &Plan) -> Option<Plan> {
        if !plan.nodes.iter().any(fleet::is_byo_workers_subnet_node) {
            return None;
        }
        let nodes: Vec<_> = plan
            .nodes
            .iter()
            .filter(|n| fleet::is_byo_workers_subnet_node(n) || fleet::is_user_vpc_node(n))
            // Only the ids matter to the fleet's checks: the object as read stays with the plan.
            .map(|n| Node { observed: None, ..n.clone() })
            .collect();
        Some(plan.reduced_to(nodes))
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

/// A shoot's project, for [`crate::account::check`]: the `projects/{project}/…` of a resource's selfLink.
const PROJECT: crate::account::Account = crate::account::Account {
    word: "project",
    chosen_by: "--project",
    of: |id| trellis_planner::ids::GceIds::project(id).map(str::to_string),
    same: |a, b| a == b,
};
