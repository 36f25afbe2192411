//! The pipeline every provider's plan runs through, written once: a provider implements [`Stages`] (its
//! pure stages, typed by its own shoot, context and state) and is registered as a [`Staged`] provider,
//! which is the object-safe [`Provider`] the engine drives.
//!
//! A plan ([`plan_shoot`]): read the stored state → admission validation (Gardener's Shoot rules, then
//! the provider's) → the admitted shoot (a mutating webhook's defaults) → context (what every later
//! stage needs; may warn and seed the next state) → discovery, in rounds, each round's ids and lists
//! chosen from what the rounds before found → pre-flight (runtime rules; may record facts in the next
//! state) → desired → diff (the planner's, the same for everyone) → artifacts → warnings → the plan
//! document and the next state. A destroy ([`plan_destroy`]) and the artifacts after an apply
//! ([`artifacts_after_apply`]) are the same walk over fewer stages.
//!
//! Purity: only the pipeline reads the cloud (discovery, through the [`CloudRead`] it is given); every
//! stage is a function of its arguments. The exceptions are the two fleet-level and after-destroy reads
//! a provider makes itself ([`Stages::orphans`], [`Stages::check_fleet`]), also read-only.

use std::borrow::Cow;
use std::error::Error;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use trellis_planner::cloud::CloudRead;
use trellis_planner::discover::{FetchBug, ListReq, Observed};
use trellis_planner::ids::IdScheme;
use trellis_planner::model::Desired;
use trellis_plans::terraform::TerraformKind;
use trellis_plans::{Artifacts, Kind, Mode, Node, Plan};
use trellis_state::{ProviderState, VersionedState, Workspace};

use crate::field::{ErrorList, Path};
use crate::manifest::{Networking, ObjectMeta, ShootEnvelope};
use crate::provider::{
    AppliedShoots, CloudCtx, FleetShoot, FleetWarning, Orphan, Planned, Provider, ProviderError, ProviderShoot,
};

/// What one discovery round fetches: resources by id, and lists (a parent's children of a type).
pub type Fetch = (Vec<String>, Vec<ListReq>);

/// Pre-flight errors, one per line.
pub type PreflightErrors = Vec<Box<dyn Error + Send + Sync>>;

/// At most this many discovery rounds: a provider that asks for more has a bug (reported, not looped).
pub const MAX_DISCOVERY_ROUNDS: usize = 8;

/// What the context stage hands the later ones.
pub struct Setup<C, S> {
    /// The provider's context of this plan.
    pub ctx: C,
    /// The next state, seeded from the stored one (pre-flight and [`Stages::next_state`] finish it).
    pub state: S,
    /// Warnings known before the cloud is read (they come first in the plan).
    pub warnings: Vec<String>,
}

/// What Gardener itself checks of a Shoot before any provider sees it: its name and namespace
/// ([`crate::metadata`]) and `spec.networking` ([`crate::networking`]: the API's validation, the update
/// rules against the last-applied networking, and the `ShootValidator` admission plugin's checks).
pub struct GardenerShoot<'a> {
    pub metadata: &'a ObjectMeta,
    pub networking: &'a Networking,
    /// A shoot without workers (its networking rules are fewer).
    pub workerless: bool,
    /// Nothing applied yet: the create-only rules apply (the name's length).
    pub first_apply: bool,
    /// The networking as last applied, for the update rules (`None`: unknown or never applied).
    pub old_networking: Option<Cow<'a, Networking>>,
}

impl GardenerShoot<'_> {
    /// Every broken rule, in Gardener's order.
    pub fn validate(&self) -> ErrorList {
        let path = Path::new("spec").child("networking");
        let mut errs = crate::metadata::validate(self.metadata);
        if errs.is_empty() && self.first_apply {
            errs.extend(crate::metadata::validate_create(self.metadata));
        }
        errs.extend(crate::networking::validate_networking(self.networking, self.workerless, &path));
        if let Some(old) = &self.old_networking {
            errs.extend(crate::networking::validate_networking_update(self.networking, old, &path));
        }
        errs.extend(crate::networking::validate_shoot_networks(self.networking, &path));
        errs
    }
}

/// A provider as the stages of its plans. Every method but the reads named in the module doc is pure.
/// Implement it, wrap it in [`Staged`] and register that (see `docs/dev/writing-a-provider.md`).
#[async_trait::async_trait]
pub trait Stages: Send + Sync + 'static {
    /// The typed input: a `Shoot<InfrastructureConfig>` (or a provider's own input document).
    type Shoot: ProviderShoot + DeserializeOwned + Serialize + Clone;
    /// What the stages of one plan share (names, the account, what the configuration decides).
    type Ctx: Send + Sync;
    /// The provider's state, kept in the shoot's workspace after an apply. Its `PartialEq` is what tells
    /// a plan that the state changes (derive it: equal exactly when the JSON it is stored as is).
    type State: VersionedState + Default + Clone + PartialEq + Send + Sync;

    /// `spec.provider.type` (and the name plans carry): `azure`.
    const TYPE: &'static str;

    /// How this provider's cloud ids compare.
    fn id_scheme(&self) -> &'static dyn IdScheme;

    /// `apiVersion` and `kind` of `spec.provider.infrastructureConfig` (`("", "")`: none).
    fn config_type(&self) -> (&'static str, &'static str) {
        ("", "")
    }

    /// What Terraform's readers are told about `kind` (`show --output terraform-json`): the Terraform
    /// provider's type for the same resource and the attributes the cloud sets; `id` is the node's
    /// cloud id, `body` the object it writes or read, `related` the objects of the plan's nodes it is
    /// linked to (depends on, or is depended on by). The default maps nothing (`<provider>_<kind>`).
    fn terraform_kind(
        &self,
        _kind: Kind,
        _id: Option<&str>,
        _body: Option<&Value>,
        _related: &[&Value],
    ) -> TerraformKind {
        TerraformKind::default()
    }

    /// The shoot the loader's one pass read, its infrastructureConfig still any YAML (see
    /// [`Provider::shoot_from_envelope`]). The default goes through JSON.
    fn shoot_of_envelope(&self, shoot: ShootEnvelope) -> Result<Self::Shoot, serde_json::Error> {
        serde_json::from_value(serde_json::to_value(&shoot)?)
    }

    /// Gardener's own rules for the shoot, checked before [`Stages::rules`]; `None` when the input is
    /// not a Shoot of this provider (domains).
    fn gardener_shoot<'a>(&self, _shoot: &'a Self::Shoot, _stored: &'a Self::State) -> Option<GardenerShoot<'a>> {
        None
    }

    /// The provider's admission rules (create, and update against `stored`'s last-applied configuration).
    fn rules(&self, shoot: &Self::Shoot, stored: &Self::State) -> ErrorList;

    /// The shoot as Gardener stores it once admitted (a mutating webhook's defaults). The default: as it is.
    fn admitted<'a>(&self, shoot: &'a Self::Shoot, _stored: &Self::State) -> Cow<'a, Self::Shoot> {
        Cow::Borrowed(shoot)
    }

    /// The kind of cloud account a shoot lives in (Azure's subscription, GCP's project), checked
    /// against what the workspace records before [`Stages::context`] and [`Stages::destroy_context`]
    /// ([`crate::account::check`]); `None` (the default): not tied to one account.
    fn account(&self) -> Option<&'static crate::account::Account> {
        None
    }

    /// The context of a plan, the next state seeded from `stored`, and the warnings known already.
    fn context(
        &self,
        shoot: &Self::Shoot,
        ws: &Workspace,
        stored: &Self::State,
        cloud: &CloudCtx,
    ) -> Result<Setup<Self::Ctx, Self::State>, ProviderError>;

    /// Discovery round `round` (from 0): what to fetch, given what the rounds before found; `None`: done.
    fn discovery(
        &self,
        round: usize,
        shoot: &Self::Shoot,
        ctx: &Self::Ctx,
        observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError>;

    /// The runtime rules against the observed cloud; may record what it learnt in `next` (the facts of
    /// the user's resources a later plan compares against). `accept_drift`: `--accept-drift`.
    fn preflight(
        &self,
        _shoot: &Self::Shoot,
        _ctx: &Self::Ctx,
        _observed: &Observed,
        _stored: &Self::State,
        _next: &mut Self::State,
        _accept_drift: bool,
    ) -> Result<PreflightErrors, ProviderError> {
        Ok(Vec::new())
    }

    /// What the cloud should hold.
    fn desired(&self, shoot: &Self::Shoot, ctx: &Self::Ctx, observed: &Observed)
        -> Result<Vec<Desired>, ProviderError>;

    /// Recorded resources to forget after the apply, as (address, id): managed ones no longer wanted
    /// that are already gone (no delete node). The default: none.
    fn forget(
        &self,
        _ctx: &Self::Ctx,
        _desired: &[Desired],
        _observed: &Observed,
    ) -> Result<Vec<(String, String)>, ProviderError> {
        Ok(Vec::new())
    }

    /// The plan's artifacts, exactly those this provider renders; `nodes` is the diff (empty after an apply).
    fn artifacts(
        &self,
        shoot: &Self::Shoot,
        ctx: &Self::Ctx,
        observed: &Observed,
        nodes: &[Node],
    ) -> Result<Artifacts, ProviderError>;

    /// Warnings found against the cloud (after the context's own). The default: none.
    fn warnings(
        &self,
        _shoot: &Self::Shoot,
        _ctx: &Self::Ctx,
        _observed: &Observed,
    ) -> Result<Vec<String>, ProviderError> {
        Ok(Vec::new())
    }

    /// The mode the shoot is reconciled in; `None` for a provider without modes (its plans are derived).
    fn mode(&self, shoot: &Self::Shoot) -> Option<Mode>;

    /// The state to keep after a successful apply, from the one pre-flight left.
    fn next_state(
        &self,
        shoot: &Self::Shoot,
        ctx: &Self::Ctx,
        state: Self::State,
    ) -> Result<Self::State, ProviderError>;

    /// The context of a destroy plan (from the stored state; no validation).
    fn destroy_context(
        &self,
        shoot: &Self::Shoot,
        ws: &Workspace,
        stored: &Self::State,
        cloud: &CloudCtx,
    ) -> Result<Self::Ctx, ProviderError>;

    /// Discovery round `round` of a destroy.
    fn destroy_discovery(
        &self,
        round: usize,
        shoot: &Self::Shoot,
        ctx: &Self::Ctx,
        observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError>;

    /// What the cloud should hold after the destroy (the delete graph).
    fn destroy_desired(
        &self,
        shoot: &Self::Shoot,
        ctx: &Self::Ctx,
        observed: &Observed,
    ) -> Result<Vec<Desired>, ProviderError>;

    /// A destroy plan's artifacts (none; some providers keep the empty ones earlier versions wrote).
    fn destroy_artifacts(&self) -> Artifacts {
        Artifacts::new()
    }

    /// The state a destroy plan leaves (a destroy empties the workspace; the state says what was last applied).
    fn destroy_state(&self, shoot: &Self::Shoot, stored: Self::State) -> Self::State;

    /// The context to render the artifacts again after an apply, from the state the plan left.
    fn after_apply_context(
        &self,
        shoot: &Self::Shoot,
        state: &Self::State,
        cloud: &CloudCtx,
    ) -> Result<Self::Ctx, ProviderError>;

    /// After a destroy: what runtime writers left on the user's resources. Reads `cloud`. The default: nothing.
    async fn orphans(
        &self,
        _shoot: &Self::Shoot,
        _cloud: &dyn CloudRead,
        _ctx: &CloudCtx,
    ) -> Result<Vec<Orphan>, ProviderError> {
        Ok(Vec::new())
    }

    /// See [`Provider::fleet_facts`]. The default: nothing (no fleet rules).
    fn fleet_facts(&self, _plan: &Plan) -> Option<Plan> {
        None
    }

    /// See [`Provider::check_fleet`]. The default: no rules.
    async fn check_fleet(
        &self,
        _fleet: &[FleetShoot<'_>],
        _applied: AppliedShoots<'_>,
        _cloud: &dyn CloudRead,
        _ctx: &CloudCtx,
    ) -> Result<Vec<FleetWarning>, ProviderError> {
        Ok(Vec::new())
    }
}

impl From<trellis_planner::cloud::CloudError> for ProviderError {
    fn from(e: trellis_planner::cloud::CloudError) -> ProviderError {
        ProviderError::Other(Box::new(e))
    }
}

impl From<FetchBug> for ProviderError {
    fn from(e: FetchBug) -> ProviderError {
        ProviderError::Other(Box::new(e))
    }
}

/// The provider state of a workspace, migrated to the current version (empty for a new workspace).
pub fn stored_state<S: Stages>(ws: &Workspace) -> Result<S::State, ProviderError> {
    Ok(ws.provider_state::<S::State>()?.unwrap_or_default())
}

/// Admission validation: Gardener's rules, then the provider's; every error once, all at once.
pub fn validate<S: Stages>(stages: &S, shoot: &S::Shoot, stored: &S::State) -> Result<(), ProviderError> {
    let mut errs = stages.gardener_shoot(shoot, stored).map(|g| g.validate()).unwrap_or_default();
    errs.extend(stages.rules(shoot, stored));
    // Upstream reports some errors twice (e.g. Azure's single-subnet workers rule runs in two places).
    let mut seen = std::collections::BTreeSet::new();
    errs.retain(|e| seen.insert(e.to_string()));
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ProviderError::Invalid(errs))
    }
}

/// Runs the discovery rounds `round` chooses, fetching each through `cloud`.
async fn discover(
    ids: &'static dyn IdScheme,
    cloud: &dyn CloudRead,
    cctx: &CloudCtx,
    mut round: impl FnMut(usize, &Observed) -> Result<Option<Fetch>, ProviderError>,
) -> Result<Observed, ProviderError> {
    let mut observed = Observed::new(ids);
    for n in 0..=MAX_DISCOVERY_ROUNDS {
        let Some((ids, lists)) = round(n, &observed)? else {
            return Ok(observed);
        };
        observed.fetch(cloud, &cctx.retry, &ids, &lists).await?;
    }
    Err(ProviderError::Other(
        format!("bug: discovery asked for more than {MAX_DISCOVERY_ROUNDS} rounds; please report").into(),
    ))
}

fn stored_blob<T: VersionedState>(provider: &str, state: &T) -> Result<ProviderState, ProviderError> {
    ProviderState::of(state)
        .map_err(|e| ProviderError::Other(format!("{provider} state does not serialise: {e}").into()))
}

/// Plans one shoot: the stages in the module doc's order. Reads the cloud only in discovery.
pub async fn plan_shoot<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    ws: &Workspace,
    cloud: &dyn CloudRead,
    cctx: &CloudCtx,
) -> Result<Planned, ProviderError> {
    plan_shoot_undigested(stages, shoot, ws, cloud, cctx).await.map(digested)
}

/// [`plan_shoot`] with the plan's digest left to the caller ([`trellis_plans::Plan::undigested`]:
/// computed while its JSON is rendered, or by [`trellis_plans::Plan::fill_digest`]).
pub async fn plan_shoot_undigested<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    ws: &Workspace,
    cloud: &dyn CloudRead,
    cctx: &CloudCtx,
) -> Result<Planned, ProviderError> {
    let (stored, shoot, setup) = plan_start(stages, shoot, ws, cctx)?;
    let shoot = shoot.as_ref();
    let observed = discover(stages.id_scheme(), cloud, cctx, |n, o| stages.discovery(n, shoot, &setup.ctx, o)).await?;
    plan_rest(stages, shoot, ws, cctx, &stored, setup, &observed)
}

/// A planned shoot with its plan's digest computed.
fn digested(mut planned: Planned) -> Planned {
    planned.plan.fill_digest();
    planned
}

/// [`plan_shoot`] against a cloud already read whole (`observed` holds every resource discovery would
/// fetch): for tests of a provider's stages without a cloud.
pub fn plan_observed<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    ws: &Workspace,
    cctx: &CloudCtx,
    observed: &Observed,
) -> Result<Planned, ProviderError> {
    let (stored, shoot, setup) = plan_start(stages, shoot, ws, cctx)?;
    plan_rest(stages, shoot.as_ref(), ws, cctx, &stored, setup, observed).map(digested)
}

/// What the stages before discovery leave: the stored state, the admitted shoot, the context.
type Started<'a, S> =
    (<S as Stages>::State, Cow<'a, <S as Stages>::Shoot>, Setup<<S as Stages>::Ctx, <S as Stages>::State>);

/// The stages before discovery: the stored state, validation, the admitted shoot and the context.
fn plan_start<'a, S: Stages>(
    stages: &S,
    shoot: &'a S::Shoot,
    ws: &Workspace,
    cctx: &CloudCtx,
) -> Result<Started<'a, S>, ProviderError> {
    let stored = stored_state::<S>(ws)?;
    validate(stages, shoot, &stored)?;
    let admitted = stages.admitted(shoot, &stored);
    same_account(stages, ws, cctx)?;
    let setup = stages.context(admitted.as_ref(), ws, &stored, cctx)?;
    Ok((stored, admitted, setup))
}

/// A plan (or destroy plan) for the account the workspace's resources live in ([`Stages::account`]).
fn same_account<S: Stages>(stages: &S, ws: &Workspace, cctx: &CloudCtx) -> Result<(), ProviderError> {
    match stages.account() {
        Some(account) => {
            crate::account::check(ws, &cctx.account, account).map_err(|e| ProviderError::Other(Box::new(e)))
        }
        None => Ok(()),
    }
}

/// The stages after discovery.
fn plan_rest<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    ws: &Workspace,
    cctx: &CloudCtx,
    stored: &S::State,
    Setup { ctx, mut state, mut warnings }: Setup<S::Ctx, S::State>,
    observed: &Observed,
) -> Result<Planned, ProviderError> {
    let errs = stages.preflight(shoot, &ctx, observed, stored, &mut state, cctx.accept_drift)?;
    if !errs.is_empty() {
        return Err(ProviderError::Preflight(errs));
    }
    let desired = stages.desired(shoot, &ctx, observed)?;
    let forget = stages.forget(&ctx, &desired, observed)?;
    let replace = |address: &str| cctx.replace.contains(address);
    let nodes = trellis_planner::diff::plan_nodes_replacing(desired, observed, &replace)?;
    orderable(&nodes)?;
    let artifacts = stages.artifacts(shoot, &ctx, observed, &nodes)?;
    warnings.extend(stages.warnings(shoot, &ctx, observed)?);
    let mut plan = plan_document(stages, shoot, ws, nodes, artifacts, warnings);
    let state = stages.next_state(shoot, &ctx, state)?;
    let (record, applied) = workspace_record(ws, stored, &state, &plan.artifacts);
    if let Some(warning) = applied.as_ref().and_then(|a| egress_change(a, &plan.artifacts)) {
        plan.warnings.push(warning);
    }
    plan.set_record(record, applied);
    Ok(Planned { plan, state: stored_blob(S::TYPE, &state)?, forget })
}

/// A plan the executor can order: one node per address, every dependency a node of the plan, no
/// cycle (the graph the apply builds). A provider's bug is then one error when planning, not a plan
/// that shows and an apply that fails.
fn orderable(nodes: &[Node]) -> Result<(), ProviderError> {
    trellis_planner::graph::PlanGraph::build(nodes).map(drop).map_err(|e| ProviderError::Other(Box::new(e)))
}

/// The warning when the shoot's egress CIDRs (its NAT's public addresses) change from the last
/// applied ones: allow-lists that name the old addresses break.
fn egress_change(applied: &Artifacts, now: &Artifacts) -> Option<String> {
    let Some(Some(old)) = applied.egress_cidrs() else {
        return None;
    };
    let new = now.egress_cidrs();
    if new == Some(Some(old)) {
        return None;
    }
    let new = match new {
        Some(Some(new)) if !new.is_empty() => new.join(", "),
        Some(Some(_)) | None => "none".to_string(),
        Some(None) => "known only after apply".to_string(),
    };
    Some(format!(
        "the shoot's egress CIDRs change from {} to {new}: allow-lists that name the old addresses (firewalls, services that admit the shoot by its source address) break; update them",
        if old.is_empty() { "none".to_string() } else { old.join(", ") }
    ))
}

/// What applying a plan records in `ws` beyond its resources ([`trellis_plans::RecordReason`]): the
/// first record of a shoot, a changed provider state (`stored` → `next`), artifacts that differ from
/// the last applied ones (returned too, for the renderers' before → after).
fn workspace_record<T: PartialEq>(
    ws: &Workspace,
    stored: &T,
    next: &T,
    artifacts: &Artifacts,
) -> (Vec<trellis_plans::RecordReason>, Option<Artifacts>) {
    use trellis_plans::RecordReason;
    if ws.serial == 0 {
        return (vec![RecordReason::NewWorkspace], None);
    }
    let mut record = Vec::new();
    if ws.provider_state.is_none() || stored != next {
        record.push(RecordReason::ProviderState);
    }
    // The usual re-plan: the outputs are the artifacts as they are, byte for byte (they were stored
    // as the artifacts serialise): no parse, no tree, no diff. Other bytes are compared below.
    let same = ws
        .outputs
        .as_ref()
        .is_some_and(|outputs| serde_json::to_vec(outputs).is_ok_and(|bytes| serialises_as(artifacts, &bytes)));
    if same {
        return (record, None);
    }
    // What counts is what the renderers show: artifacts whose shown form is the same (outputs an
    // earlier trellis wrote in another form) are no change. Outputs that cannot be read are absent.
    let applied = ws.outputs.clone().and_then(|o| serde_json::from_value::<Artifacts>(o).ok());
    let changed = match &applied {
        Some(applied) => !trellis_plans::diff::artifacts_diff(applied, artifacts).is_empty(),
        None => true,
    };
    if changed {
        record.push(RecordReason::Artifacts);
    }
    (record, applied.filter(|_| changed))
}

/// Whether `value`'s JSON is byte for byte `expected`: serialised into a writer that compares as it
/// goes and stops at the first difference, so nothing is allocated.
fn serialises_as<T: serde::Serialize + ?Sized>(value: &T, expected: &[u8]) -> bool {
    struct Same<'a>(&'a [u8]);
    impl std::io::Write for Same<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            match self.0.strip_prefix(buf) {
                Some(rest) => {
                    self.0 = rest;
                    Ok(buf.len())
                }
                None => Err(std::io::ErrorKind::InvalidData.into()),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut same = Same(expected);
    serde_json::to_writer(&mut same, value).is_ok() && same.0.is_empty()
}

/// Plans the deletion of one shoot (the provider's delete graph). Reads the cloud only in discovery.
pub async fn plan_destroy<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    ws: &Workspace,
    cloud: &dyn CloudRead,
    cctx: &CloudCtx,
) -> Result<Planned, ProviderError> {
    let stored = stored_state::<S>(ws)?;
    same_account(stages, ws, cctx)?;
    let ctx = stages.destroy_context(shoot, ws, &stored, cctx)?;
    let observed =
        discover(stages.id_scheme(), cloud, cctx, |n, o| stages.destroy_discovery(n, shoot, &ctx, o)).await?;
    destroy_rest(stages, shoot, ws, stored, &ctx, &observed)
}

/// [`plan_destroy`] against a cloud already read whole: for tests of a provider's stages.
pub fn destroy_observed<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    ws: &Workspace,
    cctx: &CloudCtx,
    observed: &Observed,
) -> Result<Planned, ProviderError> {
    let stored = stored_state::<S>(ws)?;
    same_account(stages, ws, cctx)?;
    let ctx = stages.destroy_context(shoot, ws, &stored, cctx)?;
    destroy_rest(stages, shoot, ws, stored, &ctx, observed)
}

fn destroy_rest<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    ws: &Workspace,
    stored: S::State,
    ctx: &S::Ctx,
    observed: &Observed,
) -> Result<Planned, ProviderError> {
    let desired = stages.destroy_desired(shoot, ctx, observed)?;
    let nodes = trellis_planner::diff::plan_nodes(desired, observed)?;
    orderable(&nodes)?;
    let mut plan = plan_document(stages, shoot, ws, nodes, stages.destroy_artifacts(), Vec::new());
    plan.destroy = true;
    plan.fill_digest();
    let state = stages.destroy_state(shoot, stored);
    // A destroy empties the workspace: nothing to forget one by one.
    Ok(Planned { plan, state: stored_blob(S::TYPE, &state)?, forget: Vec::new() })
}

/// The artifacts rendered again from the cloud as it is after an apply (values only known then), with
/// the state the plan left.
pub async fn artifacts_after_apply<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    state: &S::State,
    cloud: &dyn CloudRead,
    cctx: &CloudCtx,
) -> Result<Artifacts, ProviderError> {
    let ctx = stages.after_apply_context(shoot, state, cctx)?;
    let observed = discover(stages.id_scheme(), cloud, cctx, |n, o| stages.discovery(n, shoot, &ctx, o)).await?;
    stages.artifacts(shoot, &ctx, &observed, &[])
}

fn plan_document<S: Stages>(
    stages: &S,
    shoot: &S::Shoot,
    ws: &Workspace,
    nodes: Vec<Node>,
    artifacts: Artifacts,
    warnings: Vec<String>,
) -> Plan {
    let provider = trellis_plans::Provider::new(S::TYPE);
    Plan::undigested(shoot.technical_id(), provider, stages.mode(shoot), ws.prior(), nodes, artifacts, warnings)
}

/// A provider made of [`Stages`]: what the registry holds (`&'static dyn Provider`).
pub struct Staged<S>(pub S);

impl<S: Stages> Staged<S> {
    /// The typed shoot behind `shoot` (a shoot another provider parsed is a bug in the caller).
    fn typed<'a>(&self, shoot: &'a dyn ProviderShoot) -> Result<&'a S::Shoot, ProviderError> {
        shoot.typed(S::TYPE)
    }

    /// The stages.
    pub fn stages(&self) -> &S {
        &self.0
    }
}

impl<S> fmt::Debug for Staged<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Staged")
    }
}

#[async_trait::async_trait]
impl<S: Stages> Provider for Staged<S> {
    fn type_name(&self) -> &'static str {
        S::TYPE
    }

    fn ids(&self) -> &'static dyn IdScheme {
        self.0.id_scheme()
    }

    fn infrastructure_config_type(&self) -> (&'static str, &'static str) {
        self.0.config_type()
    }

    fn terraform_kind(&self, kind: Kind, id: Option<&str>, body: Option<&Value>, related: &[&Value]) -> TerraformKind {
        self.0.terraform_kind(kind, id, body, related)
    }

    fn parse_shoot(&self, text: &str) -> Result<Box<dyn ProviderShoot>, serde_saphyr::Error> {
        let shoot: S::Shoot = trellis_planner::yaml::from_str(text)?;
        Ok(Box::new(shoot))
    }

    fn shoot_from_json(&self, value: &Value) -> Result<Box<dyn ProviderShoot>, serde_json::Error> {
        let shoot = S::Shoot::deserialize(value)?;
        Ok(Box::new(shoot))
    }

    fn shoot_from_envelope(&self, shoot: ShootEnvelope) -> Result<Box<dyn ProviderShoot>, serde_json::Error> {
        Ok(Box::new(self.0.shoot_of_envelope(shoot)?))
    }

    fn validate(&self, shoot: &dyn ProviderShoot, ws: &Workspace) -> Result<(), ProviderError> {
        validate(&self.0, self.typed(shoot)?, &stored_state::<S>(ws)?)
    }

    async fn plan(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        plan_shoot(&self.0, self.typed(shoot)?, ws, cloud, ctx).await
    }

    async fn plan_undigested(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        plan_shoot_undigested(&self.0, self.typed(shoot)?, ws, cloud, ctx).await
    }

    async fn plan_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        plan_destroy(&self.0, self.typed(shoot)?, ws, cloud, ctx).await
    }

    async fn artifacts_after_apply(
        &self,
        shoot: &dyn ProviderShoot,
        state: &ProviderState,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Artifacts, ProviderError> {
        let shoot = self.typed(shoot)?;
        let state: S::State = state.read(&shoot.technical_id())?;
        artifacts_after_apply(&self.0, shoot, &state, cloud, ctx).await
    }

    async fn orphans_after_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Vec<Orphan>, ProviderError> {
        self.0.orphans(self.typed(shoot)?, cloud, ctx).await
    }

    fn fleet_facts(&self, plan: &Plan) -> Option<Plan> {
        self.0.fleet_facts(plan)
    }

    async fn check_fleet(
        &self,
        fleet: &[FleetShoot<'_>],
        applied: AppliedShoots<'_>,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Vec<FleetWarning>, ProviderError> {
        self.0.check_fleet(fleet, applied, cloud, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::serialises_as;
    use serde_json::json;

    #[test]
    fn serialises_as_compares_the_bytes_whole() {
        let value = json!({"a": 1, "b": [true, "x"]});
        let bytes = serde_json::to_vec(&value).unwrap();
        assert!(serialises_as(&value, &bytes));
        // A prefix, a longer text and one changed byte are not the same.
        assert!(!serialises_as(&value, &bytes[..bytes.len() - 1]));
        assert!(!serialises_as(&value, &[bytes.as_slice(), b" "].concat()));
        assert!(!serialises_as(&json!({"a": 2, "b": [true, "x"]}), &bytes));
        // Keys in another order are other bytes: the caller compares values then.
        assert!(!serialises_as(&json!({"b": [true, "x"], "a": 1}), &bytes));
    }
}
