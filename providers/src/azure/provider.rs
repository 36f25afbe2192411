//! Azure as a [`Provider`]: each method delegates to the Azure pipeline of this module's parent.

use std::collections::BTreeMap;

use serde_json::Value;
use trellis_planner::cloud::CloudRead;
use trellis_planner::ids::{ArmIds, IdScheme};
use trellis_plans::{Artifacts, Plan};
use trellis_state::{ProviderState, Workspace};

use super::state::AzureState;
use super::{AzureError, AzureShoot};
use crate::manifest::ShootEnvelope;
use crate::provider::{
    AppliedShoots, CloudCtx, FleetShoot, FleetWarning, Orphan, Planned, Provider, ProviderError, ProviderShoot,
};

/// The Azure provider, as registered in [`crate::registry`].
pub static AZURE: Azure = Azure;

/// `spec.provider.type: azure`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Azure;

impl From<AzureError> for ProviderError {
    fn from(e: AzureError) -> ProviderError {
        match e {
            AzureError::Invalid(errs) => ProviderError::Invalid(errs),
            AzureError::Preflight(errs) => {
                ProviderError::Preflight(errs.into_iter().map(|e| Box::new(e) as Box<_>).collect())
            }
            other => ProviderError::Other(Box::new(other)),
        }
    }
}

impl Azure {
    /// The Azure shoot behind `shoot`.
    fn shoot<'a>(&self, shoot: &'a dyn ProviderShoot) -> Result<&'a AzureShoot, ProviderError> {
        shoot.typed(super::PROVIDER_TYPE)
    }
}

#[async_trait::async_trait]
impl Provider for Azure {
    fn type_name(&self) -> &'static str {
        super::PROVIDER_TYPE
    }

    fn ids(&self) -> &'static dyn IdScheme {
        &ArmIds
    }

    fn infrastructure_config_type(&self) -> (&'static str, &'static str) {
        (super::api::API_VERSION, super::api::INFRASTRUCTURE_CONFIG_KIND)
    }

    fn parse_shoot(&self, text: &str) -> Result<Box<dyn ProviderShoot>, serde_saphyr::Error> {
        crate::provider::parse_typed_shoot::<AzureShoot>(text)
    }

    fn shoot_from_json(&self, value: &Value) -> Result<Box<dyn ProviderShoot>, serde_json::Error> {
        crate::provider::typed_shoot_from_json::<AzureShoot>(value)
    }

    fn shoot_from_envelope(&self, shoot: ShootEnvelope) -> Result<Box<dyn ProviderShoot>, serde_json::Error> {
        crate::provider::typed_shoot_from_envelope::<super::api::InfrastructureConfig>(shoot)
    }

    fn validate(&self, shoot: &dyn ProviderShoot, ws: &Workspace) -> Result<(), ProviderError> {
        Ok(super::validate(self.shoot(shoot)?, ws)?)
    }

    async fn plan(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        neutral(super::plan(self.shoot(shoot)?, ws, cloud, &ctx.retry, &ctx.account, ctx.accept_drift).await?)
    }

    async fn plan_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        neutral(super::plan_destroy(self.shoot(shoot)?, ws, cloud, &ctx.retry, &ctx.account).await?)
    }

    async fn artifacts_after_apply(
        &self,
        shoot: &dyn ProviderShoot,
        state: &ProviderState,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Artifacts, ProviderError> {
        let shoot = self.shoot(shoot)?;
        let state: AzureState = state.read(&shoot.technical_id())?;
        Ok(super::artifacts_after_apply(shoot, &state, cloud, &ctx.retry, &ctx.account).await?)
    }

    async fn orphans_after_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Vec<Orphan>, ProviderError> {
        Ok(super::orphans::scan(self.shoot(shoot)?, cloud, &ctx.retry, &ctx.account).await?)
    }

    /// A BYO subnet belongs to one shoot only (spec: "The BYO subnet must not be shared across
    /// shoots"): checked across the fleet and against the shoots already applied in state.
    /// `check_fleet` reads the shoot's id and its BYO subnet node ([`super::byo_subnet_of_plan`]);
    /// a shoot without one (managed networking) adds nothing to it.
    fn fleet_facts(&self, plan: Plan) -> Option<Plan> {
        let nodes: Vec<_> = plan.nodes.iter().filter(|n| super::is_byo_subnet_node(n)).cloned().collect();
        if nodes.is_empty() {
            return None;
        }
        Some(Plan { nodes, artifacts: Artifacts::default(), warnings: Vec::new(), source: None, ..plan })
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

/// Azure's plan as the engine keeps it: the typed state stored as a versioned blob.
fn neutral(planned: super::Planned) -> Result<Planned, ProviderError> {
    let state = ProviderState::of(&planned.state)
        .map_err(|e| ProviderError::Other(format!("azure state does not serialise: {e}").into()))?;
    Ok(Planned { plan: planned.plan, state, forget: planned.forget })
}
