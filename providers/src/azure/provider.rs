//! Azure as [`Stages`]: each stage is one of the pure functions of this module's parent and its
//! submodules; the pipeline that runs them is [`crate::stages`]'s.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;
use trellis_planner::cloud::CloudRead;
use trellis_planner::discover::Observed;
use trellis_planner::ids::{ArmIds, IdScheme};
use trellis_planner::model::Desired;
use trellis_plans::terraform::TerraformKind;
use trellis_plans::{Artifact, Artifacts, Kind, Mode, Node, Plan};
use trellis_state::Workspace;

use super::state::AzureState;
use super::{desired, overlay, preflight, render, warnings, AzureShoot, Ctx};
use crate::field::ErrorList;
use crate::manifest::ShootEnvelope;
use crate::provider::{AppliedShoots, CloudCtx, FleetShoot, FleetWarning, Orphan, ProviderError};
use crate::stages::{Fetch, GardenerShoot, PreflightErrors, Setup, Staged, Stages};

/// The Azure provider, as registered in [`crate::registry`].
pub static AZURE: Staged<Azure> = Staged(Azure);

/// `spec.provider.type: azure`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Azure;

#[async_trait::async_trait]
impl Stages for Azure {
    type Shoot = AzureShoot;
    type Ctx = Ctx;
    type State = AzureState;

    const TYPE: &'static str = super::PROVIDER_TYPE;

    fn id_scheme(&self) -> &'static dyn IdScheme {
        &ArmIds
    }

    fn account(&self) -> Option<&'static crate::account::Account> {
        Some(&SUBSCRIPTION)
    }

    fn terraform_kind(
        &self,
        kind: Kind,
        id: Option<&str>,
        _body: Option<&Value>,
        _related: &[&Value],
    ) -> TerraformKind {
        super::kind::terraform_kind(kind, id)
    }

    fn config_type(&self) -> (&'static str, &'static str) {
        (super::api::API_VERSION, super::api::INFRASTRUCTURE_CONFIG_KIND)
    }

    fn shoot_of_envelope(&self, shoot: ShootEnvelope) -> Result<AzureShoot, serde_json::Error> {
        shoot.with_infrastructure_config()
    }

    fn gardener_shoot<'a>(&self, shoot: &'a AzureShoot, stored: &'a AzureState) -> Option<GardenerShoot<'a>> {
        Some(super::gardener_shoot(shoot, stored))
    }

    fn rules(&self, shoot: &AzureShoot, stored: &AzureState) -> ErrorList {
        super::rules(shoot, stored)
    }

    fn admitted<'a>(&self, shoot: &'a AzureShoot, stored: &AzureState) -> Cow<'a, AzureShoot> {
        Cow::Owned(super::mutated(shoot, stored))
    }

    /// Remembers the CNI's overlay decision and, on a single → multi-subnet migration, the zone that
    /// keeps the single-subnet names (with a warning the first time).
    fn context(
        &self,
        shoot: &AzureShoot,
        ws: &Workspace,
        stored: &AzureState,
        cloud: &CloudCtx,
    ) -> Result<Setup<Ctx, AzureState>, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        let mut state = stored.clone();
        state.overlay = Some(overlay::overlay_enabled(&shoot.spec.networking));
        let mut warnings = Vec::new();
        if let Some(z) = super::migrated_zone(cfg, stored) {
            if stored.migrated_zone.is_none() {
                warnings.push(format!(
                    "single → multi-subnet migration: zone {z} takes over the existing subnet {tn}-nodes (and NAT gateway {tn}-nat-gateway), as upstream's migration webhook does with annotation {}={z}",
                    super::api::NETWORK_LAYOUT_ZONE_MIGRATION_ANNOTATION,
                    tn = shoot.technical_id()
                ));
            }
            state.migrated_zone = Some(z);
        }
        let ctx = Ctx::new(shoot, &cloud.account, &state).with_recorded(ws);
        Ok(Setup { ctx, state, warnings })
    }

    /// Round one: the resource group, the VNet and the identity; round two follows from what they hold.
    fn discovery(
        &self,
        round: usize,
        shoot: &AzureShoot,
        ctx: &Ctx,
        observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        Ok(match round {
            0 => Some((desired::discovery_round1(cfg, ctx), Vec::new())),
            1 => {
                Some(desired::discovery_round2(cfg, ctx, observed).map_err(|e| e.in_stage("azure discovery round 2"))?)
            }
            _ => None,
        })
    }

    /// The runtime rules, and the BYO facts remembered for the next plan's drift check.
    fn preflight(
        &self,
        shoot: &AzureShoot,
        ctx: &Ctx,
        observed: &Observed,
        stored: &AzureState,
        next: &mut AzureState,
        accept_drift: bool,
    ) -> Result<PreflightErrors, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        let mut errs = preflight::check(cfg, ctx, observed).map_err(|e| e.in_stage("azure preflight"))?;
        let byo_facts = preflight::byo_memory(cfg, ctx, observed).map_err(|e| e.in_stage("azure preflight"))?;
        if !accept_drift {
            errs.extend(preflight::drift(cfg, ctx, &byo_facts, &stored.byo));
        }
        if errs.is_empty() {
            next.byo.update(byo_facts);
        }
        Ok(errs.into_iter().map(preflight::PreflightError::boxed).collect())
    }

    fn desired(&self, shoot: &AzureShoot, ctx: &Ctx, observed: &Observed) -> Result<Vec<Desired>, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        Ok(desired::desired(cfg, ctx, observed).map_err(|e| e.in_stage("azure desired"))?)
    }

    fn forget(
        &self,
        ctx: &Ctx,
        desired: &[Desired],
        observed: &Observed,
    ) -> Result<Vec<(String, String)>, ProviderError> {
        Ok(desired::recorded_gone(ctx, desired, observed).map_err(|e| e.in_stage("azure desired"))?)
    }

    fn artifacts(
        &self,
        shoot: &AzureShoot,
        ctx: &Ctx,
        observed: &Observed,
        nodes: &[Node],
    ) -> Result<Artifacts, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        Ok(render::artifacts(cfg, ctx, observed, nodes).map_err(|e| e.in_stage("azure render"))?)
    }

    fn warnings(&self, shoot: &AzureShoot, ctx: &Ctx, observed: &Observed) -> Result<Vec<String>, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        Ok(warnings::warnings(cfg, ctx, observed).map_err(|e| e.in_stage("azure warnings"))?)
    }

    fn mode(&self, shoot: &AzureShoot) -> Option<Mode> {
        let byo = shoot.spec.provider.infrastructure_config.is_using_user_managed_egress();
        Some(if byo { Mode::UserManagedEgress } else { Mode::Managed })
    }

    fn next_state(&self, shoot: &AzureShoot, _ctx: &Ctx, mut state: AzureState) -> Result<AzureState, ProviderError> {
        state.last_applied = Some(super::last_applied(shoot));
        Ok(state)
    }

    fn destroy_context(
        &self,
        shoot: &AzureShoot,
        ws: &Workspace,
        stored: &AzureState,
        cloud: &CloudCtx,
    ) -> Result<Ctx, ProviderError> {
        Ok(Ctx::new(shoot, &cloud.account, stored).with_recorded(ws))
    }

    /// Round one as a plan's; round two: what the delete graph deletes.
    fn destroy_discovery(
        &self,
        round: usize,
        shoot: &AzureShoot,
        ctx: &Ctx,
        observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        Ok(match round {
            0 => Some((desired::discovery_round1(cfg, ctx), Vec::new())),
            1 => Some(
                desired::destroy_discovery(cfg, ctx, observed).map_err(|e| e.in_stage("azure destroy discovery"))?,
            ),
            _ => None,
        })
    }

    /// Upstream's delete graph.
    fn destroy_desired(
        &self,
        shoot: &AzureShoot,
        ctx: &Ctx,
        observed: &Observed,
    ) -> Result<Vec<Desired>, ProviderError> {
        let cfg = &shoot.spec.provider.infrastructure_config;
        Ok(desired::destroy(cfg, ctx, observed).map_err(|e| e.in_stage("azure destroy"))?)
    }

    /// The empty artifacts earlier versions wrote, so a destroy plan's JSON (and digest) stays what it was.
    fn destroy_artifacts(&self) -> Artifacts {
        Artifacts::new()
            .with(Artifact::InfrastructureStatus(Value::Null))
            .with(Artifact::EgressCidrs(None))
            .with(Artifact::CloudProviderConfig(Default::default()))
            .with(Artifact::CcmFlags(Default::default()))
            .with(Artifact::AllowEgress(false))
    }

    fn destroy_state(&self, shoot: &AzureShoot, mut stored: AzureState) -> AzureState {
        stored.last_applied = Some(super::last_applied(shoot));
        stored
    }

    /// The plan's context without the recorded resources (public IP addresses are known now).
    fn after_apply_context(
        &self,
        shoot: &AzureShoot,
        state: &AzureState,
        cloud: &CloudCtx,
    ) -> Result<Ctx, ProviderError> {
        Ok(Ctx::new(shoot, &cloud.account, state))
    }

    async fn orphans(
        &self,
        shoot: &AzureShoot,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Vec<Orphan>, ProviderError> {
        super::orphans::scan(shoot, cloud, &ctx.retry, &ctx.account).await
    }

    /// A BYO subnet belongs to one shoot only (spec: "The BYO subnet must not be shared across
    /// shoots"): checked across the fleet and against the shoots already applied in state.
    /// `check_fleet` reads the shoot's id and its BYO subnet node ([`super::byo_subnet_of_plan`]);
    /// a shoot without one (managed networking) adds nothing to it.
    fn fleet_facts(&self, plan: &Plan) -> Option<Plan> {
        // Only the ids matter to the fleet's checks: the object as read stays with the plan, not in the
        // facts kept for the whole fleet.
        let nodes: Vec<_> = plan
            .nodes
            .iter()
            .filter(|n| super::is_byo_subnet_node(n))
            .map(|n| Node { observed: None, ..n.clone() })
            .collect();
        if nodes.is_empty() {
            return None;
        }
        Some(plan.reduced_to(nodes))
    }

    async fn check_fleet(
        &self,
        fleet: &[FleetShoot<'_>],
        applied: AppliedShoots<'_>,
        _cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Vec<FleetWarning>, ProviderError> {
        let mut users: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in fleet {
            if let Some(subnet) = super::byo_subnet_of_plan(s.plan) {
                users.entry(subnet).or_default().push(format!("{} ({})", s.plan.shoot, s.file.display()));
            }
        }
        if !users.is_empty() {
            for ws in applied()? {
                if let Some(subnet) = super::byo_subnet_of_workspace(&ws, &ctx.account) {
                    if let Some(list) = users.get_mut(&subnet) {
                        list.push(format!("{} (applied, in state)", ws.shoot));
                    }
                }
            }
        }
        let shared: Vec<String> = users
            .iter()
            .filter(|(_, shoots)| shoots.len() > 1)
            .map(|(subnet, shoots)| format!("subnet {subnet} is referenced by {}", shoots.join(" and ")))
            .collect();
        if !shared.is_empty() {
            return Err(ProviderError::Fleet(format!(
                "{}; a BYO subnet (with its route table and NSG) must be dedicated to one shoot, because the shoots' CCMs would delete each other's routes and NSG rules — give each shoot its own subnet",
                shared.join("; ")
            )));
        }
        Ok(Vec::new())
    }
}

/// A shoot's subscription, for [`crate::account::check`].
const SUBSCRIPTION: crate::account::Account = crate::account::Account {
    word: "subscription",
    chosen_by: "--subscription; with the simulated cloud, a world file's azure.subscriptionId",
    of: |id| trellis_planner::ids::ArmId::parse(id).ok().map(|id| id.subscription().to_string()),
    same: |a, b| a.eq_ignore_ascii_case(b),
};
