//! The provider interface: what the engine, the loader and the CLI know about a provider.
//!
//! A provider implements [`crate::stages::Stages`] (its pure stages; the pipeline that runs them is
//! written once) and registers the [`Provider`] that makes, [`crate::stages::Staged`], in
//! [`crate::registry`]; nothing outside the provider's own module names its types. A loaded Shoot is
//! provider-neutral for everyone else: a [`ProviderShoot`] (the typed manifest, erased) together with
//! the `&'static dyn Provider` that parsed it and is the only one that reads it.
//!
//! Purity: [`Provider::validate`] does no I/O. The async methods (and [`Provider::check_fleet`])
//! read the cloud only through the [`CloudRead`] they are given (discovery), never write it;
//! everything they compute from what they read is a pure function of (manifest, workspace, observed).
//! See `docs/dev/writing-a-provider.md`.

use std::any::Any;
use std::fmt;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use trellis_planner::cloud::CloudRead;
use trellis_planner::ids::IdScheme;
use trellis_planner::retry::RetryPolicy;
use trellis_plans::terraform::TerraformKind;
use trellis_plans::{Artifacts, Kind, Plan};
use trellis_state::{ProviderState, StateError, Workspace};

use crate::field::ErrorList;
use crate::manifest::{ObjectMeta, Shoot, ShootEnvelope};

/// A Shoot parsed by its provider: the typed manifest behind a provider-neutral face. Only the
/// provider that parsed it looks inside ([`ProviderShoot::as_any`]).
pub trait ProviderShoot: Any + Send + Sync + fmt::Debug {
    /// `metadata`.
    fn metadata(&self) -> &ObjectMeta;
    /// `shoot--<project>--<name>`: the state key and the cloud-side name prefix.
    fn technical_id(&self) -> String;
    /// The manifest as JSON, as a plan file carries it (`source.shoot`); [`Provider::shoot_from_json`]
    /// reads it back.
    fn to_json(&self) -> Result<Value, serde_json::Error>;
    /// For the provider's own downcast.
    fn as_any(&self) -> &dyn Any;
}

impl dyn ProviderShoot {
    /// The typed shoot, if it is a `T`.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.as_any().downcast_ref()
    }

    /// The typed shoot `provider` parsed; a shoot of another type is [`ProviderError::WrongShoot`] (a
    /// bug in the caller, never a panic).
    pub fn typed<T: 'static>(&self, provider: &'static str) -> Result<&T, ProviderError> {
        self.downcast_ref::<T>().ok_or_else(|| ProviderError::WrongShoot { provider, found: self.technical_id() })
    }
}

/// Every provider's Shoot is a [`Shoot`] of its InfrastructureConfig.
impl<C> ProviderShoot for Shoot<C>
where
    C: Serialize + fmt::Debug + Send + Sync + 'static,
{
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn technical_id(&self) -> String {
        Shoot::technical_id(self)
    }

    fn to_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What every cloud-reading call of a provider needs besides the shoot.
#[derive(Clone, Debug)]
pub struct CloudCtx {
    /// The cloud account the shoots live in (Azure: the subscription id).
    pub account: String,
    pub retry: RetryPolicy,
    /// Take out-of-band changes to the user's own resources on purpose (`--accept-drift`).
    pub accept_drift: bool,
    /// Addresses of managed resources to replace although the diff would update them or find them in
    /// sync (`--replace ADDRESS`); empty for a destroy.
    pub replace: std::sync::Arc<std::collections::BTreeSet<String>>,
}

/// A planned shoot: the plan and what the apply needs to remember.
pub struct Planned {
    pub plan: Plan,
    /// The provider's state (typed by the provider, stored at its current version) to keep after a
    /// successful apply: the last-applied configuration and what the plan decided.
    pub state: ProviderState,
    /// Recorded resources to forget after a successful apply, as (address, id): managed resources
    /// the configuration no longer wants that are already gone from the cloud (no delete node).
    pub forget: Vec<(String, String)>,
}

/// One artifact a runtime writer (a cloud controller) left on the user's resources, which trellis
/// never deletes: reported after a destroy with the command to prune it.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Orphan {
    pub kind: Kind,
    pub id: String,
    /// Who wrote it.
    pub writer: &'static str,
    /// The command (the cloud's CLI) that removes it.
    pub prune: String,
}

/// One planned shoot of a fleet, as the fleet-wide checks see it.
#[derive(Clone, Copy, Debug)]
pub struct FleetShoot<'a> {
    pub plan: &'a Plan,
    /// The manifest the shoot came from.
    pub file: &'a Path,
}

/// The workspaces applied in state for shoots that are not in the fleet being planned (read only
/// when a fleet-wide check needs them).
pub type AppliedShoots<'a> = &'a (dyn Fn() -> Result<Vec<Workspace>, ProviderError> + Sync);

/// What a fleet-wide check found that does not refuse the fleet: a warning for one planned shoot,
/// which the caller adds to that shoot's plan (`Plan::warnings`), as the plan's own warnings.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FleetWarning {
    /// The technical id of the shoot whose plan carries the warning (one of the fleet's).
    pub shoot: String,
    /// One line, like a plan's own warnings.
    pub message: String,
}

/// Why a provider cannot plan a shoot (or a fleet). Each renders as one line; [`ProviderError::Invalid`]
/// and [`ProviderError::Preflight`] carry their errors, one per line, for the caller to list.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Admission validation failed (create or update rules).
    #[error("{} validation error(s)", .0.len())]
    Invalid(ErrorList),
    /// Runtime rules against the observed cloud failed.
    #[error("{} pre-flight error(s)", .0.len())]
    Preflight(Vec<Box<dyn std::error::Error + Send + Sync>>),
    /// A fleet-wide rule is broken (e.g. a resource shared by two shoots).
    #[error("{0}")]
    Fleet(String),
    /// The provider was handed a shoot another provider parsed: a bug in the caller.
    #[error("bug: provider {provider} was handed a shoot it did not parse ({found}); please report")]
    WrongShoot { provider: &'static str, found: String },
    /// Anything else: the cloud, the state, a bug in discovery; the provider's own error.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl ProviderError {
    /// A pre-flight failure that includes a [`MissingUserResource`].
    pub fn missing_user_resource(&self) -> bool {
        matches!(self, ProviderError::Preflight(errs) if errs.iter().any(|e| e.is::<MissingUserResource>()))
    }
}

/// A pre-flight error saying that a resource of the user's the shoot names (a BYO VNet, subnet, VPC,
/// public IP, identity, Cloud Router) does not exist. Against the simulated cloud that is most often
/// one no world file declared, and the CLI says so after the errors; every other pre-flight error
/// (a location that differs, a subnet too small, a foreign DNS record) is not about the world.
#[derive(Debug)]
pub struct MissingUserResource(pub Box<dyn std::error::Error + Send + Sync>);

impl fmt::Display for MissingUserResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for MissingUserResource {}

/// A provider's pre-flight error as the pipeline carries it: marked when it is a missing resource of
/// the user's ([`MissingUserResource`]).
pub fn preflight_error<E: std::error::Error + Send + Sync + 'static>(
    e: E,
    missing: bool,
) -> Box<dyn std::error::Error + Send + Sync> {
    if missing {
        Box::new(MissingUserResource(Box::new(e)))
    } else {
        Box::new(e)
    }
}

impl From<StateError> for ProviderError {
    fn from(e: StateError) -> ProviderError {
        ProviderError::Other(Box::new(e))
    }
}

/// A provider: one `spec.provider.type` of Gardener Shoots, as the engine drives it. Every built-in
/// provider is a [`crate::stages::Staged`] (its [`crate::stages::Stages`] run by the one pipeline).
///
/// Object-safe; the registry holds `&'static dyn Provider`. Every method that takes a
/// [`ProviderShoot`] is given only shoots this provider parsed ([`Provider::parse_shoot`] or
/// [`Provider::shoot_from_json`]); another one is [`ProviderError::WrongShoot`], never a panic.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// `spec.provider.type` (`azure`).
    fn type_name(&self) -> &'static str;

    /// How this provider's cloud ids compare (ARM ids case-insensitively, GCE selfLinks as
    /// written): the scheme of its [`trellis_planner::discover::Observed`] and of the executor's
    /// write locks for its shoots.
    fn ids(&self) -> &'static dyn IdScheme;

    /// `apiVersion` and `kind` of the provider's `spec.provider.infrastructureConfig`; the loader
    /// refuses a Shoot whose config says otherwise.
    fn infrastructure_config_type(&self) -> (&'static str, &'static str);

    /// What Terraform's readers are told about `kind` (`show --output terraform-json`): the Terraform
    /// provider's type for the same resource and the attributes the cloud sets (see
    /// [`crate::stages::Stages::terraform_kind`]). The default maps nothing: `<provider>_<kind>`.
    fn terraform_kind(
        &self,
        _kind: Kind,
        _id: Option<&str>,
        _body: Option<&Value>,
        _related: &[&Value],
    ) -> TerraformKind {
        TerraformKind::default()
    }

    /// The typed pass over one YAML document (a Shoot of this provider). Errors keep serde-saphyr's
    /// location; the loader turns them into `file:line:col` messages.
    fn parse_shoot(&self, text: &str) -> Result<Box<dyn ProviderShoot>, serde_saphyr::Error>;

    /// A shoot back from [`ProviderShoot::to_json`] (a saved plan's `source.shoot`).
    fn shoot_from_json(&self, value: &Value) -> Result<Box<dyn ProviderShoot>, serde_json::Error>;

    /// The shoot the loader's one pass read, with its infrastructureConfig still any YAML: the
    /// config typed as this provider's ([`ShootEnvelope::with_infrastructure_config`]). On an error
    /// the loader reads the document with [`Provider::parse_shoot`] instead (whose error has a
    /// location), so an `Ok` must be what `parse_shoot` gives for the same document. The default
    /// goes through [`Provider::shoot_from_json`].
    fn shoot_from_envelope(&self, shoot: ShootEnvelope) -> Result<Box<dyn ProviderShoot>, serde_json::Error> {
        self.shoot_from_json(&serde_json::to_value(&shoot)?)
    }

    /// Admission validation, create and update rules (against `ws.last_applied`); all errors at
    /// once as [`ProviderError::Invalid`]. No I/O.
    fn validate(&self, shoot: &dyn ProviderShoot, ws: &Workspace) -> Result<(), ProviderError>;

    /// Plans one shoot: validate → discover (reads through `cloud`) → pre-flight → desired → diff →
    /// artifacts. Never writes.
    async fn plan(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError>;

    /// [`Provider::plan`] with the plan's `digest` left empty ([`trellis_plans::Plan::undigested`]),
    /// for a caller that renders the plan's JSON anyway and fills the digest in while rendering
    /// ([`trellis_plans::RenderedPlan::of_filling`]), or with [`trellis_plans::Plan::fill_digest`]. The
    /// default plans with the digest.
    async fn plan_undigested(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        self.plan(shoot, ws, cloud, ctx).await
    }

    /// Plans the deletion of one shoot (the provider's delete graph). Never writes.
    async fn plan_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError>;

    /// The artifacts rendered again from the cloud as it is after an apply (values only known then),
    /// with the provider state the plan left (`Planned::state`).
    async fn artifacts_after_apply(
        &self,
        shoot: &dyn ProviderShoot,
        state: &ProviderState,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Artifacts, ProviderError>;

    /// After a destroy: what runtime writers left on the user's resources (never deleted by trellis).
    async fn orphans_after_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Vec<Orphan>, ProviderError>;

    /// A plan reduced to what [`Provider::check_fleet`] reads of it, so that a fleet whose plans are
    /// streamed out keeps only this much per shoot until the fleet-wide check at the end; `None` when
    /// it reads nothing of this plan (the shoot is still part of the fleet: its workspace in state is
    /// not among the `applied` ones). `check_fleet` must decide the same over the reduced plans as
    /// over the whole fleet; it is not called for a provider none of whose plans has facts. The
    /// default keeps the whole plan. Takes the plan by reference: a provider copies only what it
    /// keeps (an apply holds every plan and must not copy each whole to find it keeps nothing).
    fn fleet_facts(&self, plan: &Plan) -> Option<Plan> {
        Some(plan.clone())
    }

    /// Fleet-wide rules over this provider's planned shoots (`fleet`) and the shoots already applied
    /// in state (`applied`, read only if needed): [`ProviderError::Fleet`] when one is broken (the
    /// fleet is refused), else the warnings for shoots of the fleet ([`FleetWarning`]; GCP: B5's
    /// untargeted firewall rules in a VPC shared by shoots). Reads the cloud only through `cloud`,
    /// and only what a check needs beyond the plans' facts.
    async fn check_fleet(
        &self,
        fleet: &[FleetShoot<'_>],
        applied: AppliedShoots<'_>,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Vec<FleetWarning>, ProviderError>;
}

impl fmt::Debug for dyn Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Provider({})", self.type_name())
    }
}
