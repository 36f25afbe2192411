//! The toy provider's stages: a Shoot of `spec.provider.type: toy` asks for object-store buckets
//! (`spec.provider.infrastructureConfig.buckets`); each is a managed `bucket` resource, and a bucket the
//! workspace records that the configuration no longer lists is deleted.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use trellis_planner::discover::Observed;
use trellis_planner::ids::IdScheme;
use trellis_planner::model::{Desired, ManagedSpec, Resource};
use trellis_plans::{Artifact, Artifacts, Kind, Mode, Node, Ownership, Reason, ReasonCode};
use trellis_providers::field::{ErrorList, FieldError, Path};
use trellis_providers::manifest::{Shoot, ShootEnvelope};
use trellis_providers::provider::{CloudCtx, ProviderError};
use trellis_providers::stages::{Fetch, GardenerShoot, Setup, Staged, Stages};
use trellis_state::{Migration, VersionedState, Workspace};

/// `spec.provider.type` of a toy Shoot.
pub const TYPE: &str = "toy";

/// The one resource kind the toy provider plans.
pub const BUCKET: Kind = Kind::new("bucket");

/// The provider, as registered.
pub static TOY: Staged<Toy> = Staged(Toy);

/// `spec.provider.infrastructureConfig` of a toy Shoot.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToyConfig {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub buckets: Vec<String>,
}

pub type ToyShoot = Shoot<ToyConfig>;

/// What the toy provider keeps in a shoot's workspace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ToyState {
    /// The buckets last applied.
    pub buckets: Option<Vec<String>>,
}

impl VersionedState for ToyState {
    const PROVIDER: &'static str = TYPE;
    const MIGRATIONS: &'static [Migration] = &[];
}

/// Toy ids: `toy://<account>/<technical id>/<bucket>`, compared as written; a bucket is its own scope.
pub struct ToyIds;

impl IdScheme for ToyIds {
    fn key(&self, id: &str) -> String {
        id.to_string()
    }

    fn parent(&self, id: &str) -> Option<String> {
        id.rsplit_once('/').map(|(parent, _)| parent.to_string())
    }

    fn write_scope(&self, id: &str) -> String {
        id.to_string()
    }
}

/// What every stage knows: the shoot's technical id, the account, the buckets the workspace records.
pub struct ToyCtx {
    tn: String,
    account: String,
    recorded: Vec<(String, String)>,
}

impl ToyCtx {
    fn new(shoot: &ToyShoot, ws: Option<&Workspace>, cloud: &CloudCtx) -> ToyCtx {
        let recorded = ws
            .map(|ws| {
                ws.resources
                    .iter()
                    .filter(|(_, r)| r.kind == BUCKET && r.ownership == Ownership::Managed)
                    .map(|(address, r)| (address.clone(), r.id.clone()))
                    .collect()
            })
            .unwrap_or_default();
        ToyCtx { tn: shoot.technical_id(), account: cloud.account.clone(), recorded }
    }

    fn bucket(&self, name: &str) -> Resource {
        Resource {
            address: format!("toy.bucket.{}.{name}", self.tn),
            kind: BUCKET,
            name: name.to_string(),
            scope: self.tn.clone(),
            id: format!("toy://{}/{}/{name}", self.account, self.tn),
        }
    }
}

fn buckets(shoot: &ToyShoot) -> &[String] {
    &shoot.spec.provider.infrastructure_config.buckets
}

/// Deletes of the recorded buckets `wanted` does not name.
fn recorded_deletes(ctx: &ToyCtx, wanted: &[String], why: &str) -> Vec<Desired> {
    ctx.recorded
        .iter()
        .filter(|(_, id)| !wanted.iter().any(|b| ctx.bucket(b).id == *id))
        .map(|(address, id)| {
            let name = id.rsplit('/').next().unwrap_or(id);
            Desired::DeleteManaged {
                res: ctx.bucket(name),
                depends_on: Vec::new(),
                why: Reason::new(ReasonCode::RecordedInState, format!("{why} ({address})")),
            }
        })
        .collect()
}

fn recorded_ids(ctx: &ToyCtx) -> impl Iterator<Item = String> + '_ {
    ctx.recorded.iter().map(|(_, id)| id.clone())
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Toy;

#[async_trait::async_trait]
impl Stages for Toy {
    type Shoot = ToyShoot;
    type Ctx = ToyCtx;
    type State = ToyState;

    const TYPE: &'static str = TYPE;

    fn id_scheme(&self) -> &'static dyn IdScheme {
        &ToyIds
    }

    fn config_type(&self) -> (&'static str, &'static str) {
        ("toy.provider.extensions.gardener.cloud/v1alpha1", "InfrastructureConfig")
    }

    fn shoot_of_envelope(&self, shoot: ShootEnvelope) -> Result<ToyShoot, serde_json::Error> {
        shoot.with_infrastructure_config()
    }

    fn gardener_shoot<'a>(&self, shoot: &'a ToyShoot, stored: &'a ToyState) -> Option<GardenerShoot<'a>> {
        Some(GardenerShoot {
            metadata: &shoot.metadata,
            networking: &shoot.spec.networking,
            workerless: shoot.spec.provider.workers.is_empty(),
            first_apply: stored.buckets.is_none(),
            old_networking: None,
        })
    }

    /// Every bucket name a DNS label, none twice.
    fn rules(&self, shoot: &ToyShoot, _stored: &ToyState) -> ErrorList {
        let path = Path::new("spec").child("provider").child("infrastructureConfig").child("buckets");
        let mut errs = Vec::new();
        for (i, name) in buckets(shoot).iter().enumerate() {
            let label = !name.is_empty()
                && name.len() <= 63
                && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !label {
                errs.push(FieldError::invalid(
                    path.index(i).to_string(),
                    name.clone(),
                    "a bucket name is a DNS label: lowercase letters, digits and '-', at most 63",
                ));
            } else if buckets(shoot)[..i].contains(name) {
                errs.push(FieldError::invalid(path.index(i).to_string(), name.clone(), "listed twice"));
            }
        }
        errs
    }

    fn context(
        &self,
        shoot: &ToyShoot,
        ws: &Workspace,
        stored: &ToyState,
        cloud: &CloudCtx,
    ) -> Result<Setup<ToyCtx, ToyState>, ProviderError> {
        Ok(Setup { ctx: ToyCtx::new(shoot, Some(ws), cloud), state: stored.clone(), warnings: Vec::new() })
    }

    /// One round: the wanted buckets and the recorded ones.
    fn discovery(
        &self,
        round: usize,
        shoot: &ToyShoot,
        ctx: &ToyCtx,
        _observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        let ids: Vec<String> = buckets(shoot).iter().map(|b| ctx.bucket(b).id).chain(recorded_ids(ctx)).collect();
        Ok((round == 0).then_some((ids, Vec::new())))
    }

    fn desired(&self, shoot: &ToyShoot, ctx: &ToyCtx, _observed: &Observed) -> Result<Vec<Desired>, ProviderError> {
        let mut out: Vec<Desired> = buckets(shoot)
            .iter()
            .map(|name| {
                Desired::Managed(ManagedSpec {
                    res: ctx.bucket(name),
                    patch: json!({"name": name, "labels": {"shoot": ctx.tn}}),
                    force_new: vec!["/name"],
                    depends_on: Vec::new(),
                    why: "listed in spec.provider.infrastructureConfig.buckets".to_string(),
                    referrers: Vec::new(),
                })
            })
            .collect();
        out.extend(recorded_deletes(ctx, buckets(shoot), "recorded by trellis and no longer listed"));
        Ok(out)
    }

    fn artifacts(
        &self,
        shoot: &ToyShoot,
        _ctx: &ToyCtx,
        _observed: &Observed,
        _nodes: &[Node],
    ) -> Result<Artifacts, ProviderError> {
        let value = Artifact::value("buckets", json!(buckets(shoot))).map_err(|e| ProviderError::Other(Box::new(e)))?;
        Ok(Artifacts::new().with(value))
    }

    fn mode(&self, _shoot: &ToyShoot) -> Option<Mode> {
        Some(Mode::Managed)
    }

    fn next_state(&self, shoot: &ToyShoot, _ctx: &ToyCtx, mut state: ToyState) -> Result<ToyState, ProviderError> {
        state.buckets = Some(buckets(shoot).to_vec());
        Ok(state)
    }

    fn destroy_context(
        &self,
        shoot: &ToyShoot,
        ws: &Workspace,
        _stored: &ToyState,
        cloud: &CloudCtx,
    ) -> Result<ToyCtx, ProviderError> {
        Ok(ToyCtx::new(shoot, Some(ws), cloud))
    }

    fn destroy_discovery(
        &self,
        round: usize,
        _shoot: &ToyShoot,
        ctx: &ToyCtx,
        _observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        Ok((round == 0).then(|| (recorded_ids(ctx).collect(), Vec::new())))
    }

    fn destroy_desired(
        &self,
        _shoot: &ToyShoot,
        ctx: &ToyCtx,
        _observed: &Observed,
    ) -> Result<Vec<Desired>, ProviderError> {
        Ok(recorded_deletes(ctx, &[], "destroy: recorded by trellis"))
    }

    fn destroy_state(&self, _shoot: &ToyShoot, _stored: ToyState) -> ToyState {
        ToyState::default()
    }

    fn after_apply_context(
        &self,
        shoot: &ToyShoot,
        _state: &ToyState,
        cloud: &CloudCtx,
    ) -> Result<ToyCtx, ProviderError> {
        Ok(ToyCtx::new(shoot, None, cloud))
    }
}

/// A workerless toy Shoot (no networking) asking for `buckets`.
pub fn shoot_yaml(name: &str, buckets: &[&str]) -> String {
    let list: Vec<Value> = buckets.iter().map(|b| json!(b)).collect();
    format!(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: {name}\n  namespace: garden-dev\nspec:\n  region: toy-1\n  provider:\n    type: toy\n    infrastructureConfig:\n      apiVersion: toy.provider.extensions.gardener.cloud/v1alpha1\n      kind: InfrastructureConfig\n      buckets: {}\n",
        Value::Array(list)
    )
}
