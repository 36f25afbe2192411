//! The domains provider as [`Stages`]: validation ([`super::validation`]), the phase machine
//! ([`super::phase`]) and the model ([`super::model`]) over an [`Observed`] keyed by [`DnsIds`].
//!
//! It is not dispatched by `spec.provider.type` (every Shoot may have a domains plan beside its
//! infrastructure plan): the engine's registry registers it as a derived provider, and its shoots are made by
//! [`super::pair`].

use super::kind;
use std::collections::BTreeMap;

use serde_json::json;
use serde_json::Value;
use trellis_planner::discover::Observed;
use trellis_planner::ids::{DnsIds, IdScheme};
use trellis_planner::model::{Desired, ManagedSpec, Resource};
use trellis_plans::terraform::TerraformKind;
use trellis_plans::{Artifacts, Kind, Node, Ownership, Reason, ReasonCode};
use trellis_state::Workspace;

use super::api::{DomainsShoot, ANNOTATION_OPERATION};
use super::model::{self, Roles, Step};
use super::phase::{Phase, Trigger};
use super::state::{DomainsState, LastApplied};
use super::validation;
use crate::field::ErrorList;
use crate::provider::{CloudCtx, Planned, ProviderError};
use crate::stages::{Fetch, Setup, Staged, Stages};

/// The domains provider (registered by the engine as a derived provider, paired by [`super::pair`]).
pub static DOMAINS: Staged<Domains> = Staged(Domains);

/// GEP-0066's DNS records and artifacts of one Shoot.
#[derive(Clone, Copy, Debug, Default)]
pub struct Domains;

fn other(e: impl std::error::Error + Send + Sync + 'static) -> ProviderError {
    ProviderError::Other(Box::new(e))
}

/// The provider state of a workspace, migrated to the current version (empty for a new workspace).
pub fn stored_state(ws: &Workspace) -> Result<DomainsState, ProviderError> {
    crate::stages::stored_state::<Domains>(ws)
}

/// What one plan decides before it looks at the cloud.
#[derive(Clone, Debug)]
pub struct Decided {
    /// The phase the plan executes (`None`: never rotated).
    pub phase: Option<Phase>,
    pub trigger: Trigger,
    /// The roles after the last apply.
    pub before: Roles,
    /// The roles the plan leaves.
    pub roles: Roles,
    /// The DNSRecord objects the plan wants.
    pub records: Vec<model::Record>,
    /// The state to store after the apply.
    pub state: DomainsState,
    pub warnings: Vec<String>,
}

/// Validation, the phase machine and the roles: everything but discovery. Pure.
pub fn decide(ds: &DomainsShoot, stored: &DomainsState) -> Result<Decided, ProviderError> {
    let trigger = validation::validate(ds, stored).map_err(ProviderError::Invalid)?;
    let current = validation::current_phase(ds, stored);
    let phase = super::phase::planned(trigger, current);
    let migrate_internal = ds.features.mutable_shoot_domains && validation::migrate_internal_confirmed(ds, stored);
    let tn = ds.shoot.technical_id();
    let old = stored.last_applied.as_ref().map(|_| &stored.roles);
    let roles = model::next_roles(
        &ds.shoot.metadata.name,
        Step {
            old,
            external: model::desired_external(ds, stored.last_applied.as_ref()),
            internal: model::desired_internal(ds),
            trigger,
            migrate_internal,
            gate: ds.features.mutable_shoot_domains,
        },
    );
    let seed = seed_name(ds);
    let address = validation::api_server_address(ds).unwrap_or_default();
    let records = model::records(&seed, &tn, &roles, address);
    let before = old.cloned().unwrap_or_else(|| roles.clone());
    let internal_started =
        matches!(trigger, Trigger::Start { .. }) && roles.prior_internal.is_some() && before.prior_internal.is_none();
    let operation = ds.shoot.annotations().get(ANNOTATION_OPERATION).filter(|a| !a.trim().is_empty()).cloned();
    let state = DomainsState {
        phase: phase.map(Phase::after_apply),
        roles: roles.clone(),
        last_applied: Some(LastApplied {
            domain: ds.shoot.domain().map(str::to_string),
            providers: ds.shoot.providers().cloned(),
            seed_name: ds.shoot.spec.seed_name.clone(),
        }),
        consumed_operation: operation,
        consumed_migrate_internal_confirmation: ds.shoot.migrate_internal_confirmed()
            && (internal_started || stored.consumed_migrate_internal_confirmation),
    };
    Ok(Decided { phase, trigger, before, roles, records, state, warnings: warnings(ds, stored) })
}

fn seed_name(ds: &DomainsShoot) -> String {
    ds.shoot.spec.seed_name.clone().unwrap_or_else(|| ds.seed.metadata.name.clone())
}

/// The plan's warnings: the feature gates it was made under, the domain Gardener's admission would
/// default a missing `spec.dns.domain` to, an external domain Gardener admits but its gardenlet
/// cannot serve (gate off), Seed fields that have no effect with the gate off.
pub fn warnings(ds: &DomainsShoot, stored: &DomainsState) -> Vec<String> {
    let mut out = vec![format!("planned under feature gates {}", ds.features)];
    let dns = &ds.seed.spec.dns;
    let old = stored.last_applied.as_ref();
    let unmanaged = match model::primary_provider(&ds.shoot, &dns.defaults, old) {
        Some(p) => p.get("type").and_then(Value::as_str) == Some(model::UNMANAGED),
        None => {
            ds.shoot.providers().and_then(Value::as_array).and_then(|l| l.first()).and_then(|p| p.get("type"))
                == Some(&json!(model::UNMANAGED))
        }
    };
    if let (Some(d), None) = (ds.shoot.domain(), model::desired_external(ds, old)) {
        // Only with the gate off: with it on, validation refuses such a domain.
        let defaults: Vec<&str> = dns.defaults.iter().map(|c| c.domain.as_str()).collect();
        let (defaults, unless) = if defaults.is_empty() {
            // Upstream reads the garden's default-domain secrets then; trellis knows only the Seed.
            ("none".to_string(), " unless one of the garden's default-domain secrets holds its domain")
        } else {
            (defaults.join(", "), "")
        };
        out.push(format!(
            "spec.dns.domain {d:?} is not a subdomain of the seed's default domains ({defaults}) and spec.dns.providers names no DNS provider: Gardener admits the shoot, but its gardenlet cannot reconcile it (\"unable to figure out which secret should be used for dns\"){unless}; trellis plans no external DNS record"
        ));
    }
    if ds.shoot.domain().is_none() && !unmanaged {
        if let Some(d) = dns.defaults.first() {
            out.push(format!(
                "spec.dns.domain is not set: Gardener's admission would default it to {}.{}.{} (the seed's first default domain); trellis plans the shoot as written, on its internal domain only",
                ds.shoot.metadata.name,
                ds.shoot.project(),
                d.domain
            ));
        }
    }
    if !ds.features.mutable_shoot_domains && (!dns.internal_domains.is_empty() || dns.internal_domain_enabled.is_some())
    {
        out.push(format!(
            "seed {}: spec.dns.internalDomains and spec.dns.internalDomainEnabled have no effect with MutableShootDomains=false",
            ds.seed.metadata.name
        ));
    }
    out
}

/// The artifacts of `roles` in `phase` (`before`: the roles before the plan), each a value at the top
/// level, by name in alphabetical order.
pub fn artifacts(
    ds: &DomainsShoot,
    phase: Option<Phase>,
    before: &Roles,
    roles: &Roles,
) -> Result<Artifacts, ProviderError> {
    let tn = ds.shoot.technical_id();
    let issuers = model::issuers(&ds.shoot, roles, phase);
    let role_map: BTreeMap<&str, &str> =
        roles.all().into_iter().map(|(r, e)| (r.as_str(), e.domain.as_str())).collect();
    let mut named = BTreeMap::new();
    named.insert(
        "domains".to_string(),
        json!({"phase": phase.map(Phase::as_str), "roles": role_map, "featureGates": ds.features.to_string()}),
    );
    named.insert("apiserver_sans".to_string(), json!(model::sans(&tn, roles)));
    named.insert(
        "advertised_addresses".to_string(),
        json!(model::advertised_addresses(roles, &issuers, validation::api_server_address(ds))),
    );
    named.insert("service_account_issuer".to_string(), json!(issuers));
    if let Some(server) = model::kubeconfig_server(roles) {
        named.insert("kubeconfig_server".to_string(), json!(server));
    }
    let actions = model::user_actions(phase, roles, before, &issuers);
    if !actions.is_empty() {
        named.insert("user_actions".to_string(), json!(actions));
    }
    if let Some(c) = model::constraint(ds, roles) {
        named.insert("constraints".to_string(), json!([c]));
    }
    let mut artifacts = Artifacts::new();
    for (name, value) in named {
        artifacts.set_value(name, value).map_err(other)?;
    }
    Ok(artifacts)
}

/// `domains.dns_record.<technical id>.<name>`.
pub fn address(tn: &str, name: &str) -> String {
    format!("domains.dns_record.{tn}.{name}")
}

fn resource(seed: &str, tn: &str, name: &str, id: &str) -> Resource {
    Resource {
        address: address(tn, name),
        kind: kind::DNS_RECORD,
        name: name.to_string(),
        scope: format!("{seed}/{tn}"),
        id: id.to_string(),
    }
}

/// The DNSRecord objects the workspace records as trellis's (what deletes are driven from).
fn recorded(ws: &Workspace) -> Vec<(String, String)> {
    ws.resources
        .iter()
        .filter(|(_, r)| r.kind == kind::DNS_RECORD && r.ownership == Ownership::Managed && !r.id.is_empty())
        .map(|(a, r)| (a.clone(), r.id.clone()))
        .collect()
}

fn last_segment(id: &str) -> &str {
    id.trim_end_matches('/').rsplit('/').next().unwrap_or(id)
}

/// The desired state: every wanted record managed (its whole body; name, type and record type are
/// immutable upstream, so a change of them replaces the object), every recorded record no longer
/// wanted deleted.
pub fn desired(ds: &DomainsShoot, ctx: &DomainsCtx) -> Vec<Desired> {
    let tn = ds.shoot.technical_id();
    let seed = seed_name(ds);
    let phase = ctx.phase.map_or("no CA rotation", Phase::as_str);
    let recorded = &ctx.recorded;
    let mut out: Vec<Desired> = ctx
        .records
        .iter()
        .map(|r| {
            Desired::Managed(ManagedSpec {
                res: resource(&seed, &tn, &r.name, &r.id),
                patch: r.body.clone(),
                force_new: vec!["/spec/name", "/spec/recordType", "/spec/type"],
                depends_on: Vec::new(),
                why: format!("GEP-0066: the {} DNS record of the shoot's API server ({phase})", r.role.as_str()),
                referrers: Vec::new(),
            })
        })
        .collect();
    for (addr, id) in recorded {
        if ctx.records.iter().any(|r| DnsIds.same(&r.id, id)) {
            continue;
        }
        out.push(Desired::DeleteManaged {
            res: resource(&seed, &tn, last_segment(id), id),
            depends_on: Vec::new(),
            why: Reason::new(
                ReasonCode::RecordedInState,
                format!("GEP-0066: recorded by trellis ({addr}) and no longer wanted ({phase}): the old name leaves"),
            ),
        });
    }
    out
}

/// What the stages of one domains plan share.
#[derive(Clone, Debug, Default)]
pub struct DomainsCtx {
    /// The phase the plan executes (`None`: never rotated).
    pub phase: Option<Phase>,
    /// The roles before the plan, and the roles it leaves.
    pub before: Roles,
    pub roles: Roles,
    /// The DNSRecord objects the plan wants (none in a destroy).
    pub records: Vec<model::Record>,
    /// The DNSRecord objects the workspace records as trellis's, as (address, id).
    pub recorded: Vec<(String, String)>,
}

/// The context of no CA rotation: for tests and callers that have only an `observed` cloud.
fn no_cloud() -> CloudCtx {
    CloudCtx { account: String::new(), retry: Default::default(), accept_drift: false }
}

/// Plans one shoot against `observed` (holding every id of [`discovery`]). Pure.
pub fn plan_with(ds: &DomainsShoot, ws: &Workspace, observed: &Observed) -> Result<Planned, ProviderError> {
    crate::stages::plan_observed(&Domains, ds, ws, &no_cloud(), observed)
}

/// The ids a plan reads: the wanted records and the recorded ones.
pub fn discovery(ds: &DomainsShoot, ws: &Workspace) -> Result<Vec<String>, ProviderError> {
    let setup = Domains.context(ds, ws, &stored_state(ws)?, &no_cloud())?;
    Ok(record_ids(&setup.ctx))
}

/// The wanted and the recorded record ids of `ctx`.
fn record_ids(ctx: &DomainsCtx) -> Vec<String> {
    ctx.records.iter().map(|r| r.id.clone()).chain(ctx.recorded.iter().map(|(_, id)| id.clone())).collect()
}

/// The record ids of `ctx`: one round, none when there are none.
fn fetch(ctx: &DomainsCtx, round: usize) -> Option<Fetch> {
    let ids = record_ids(ctx);
    (round == 0 && !ids.is_empty()).then_some((ids, Vec::new()))
}

#[async_trait::async_trait]
impl Stages for Domains {
    /// A [`DomainsShoot`] document (`{shoot, seed, features}`, what `to_json` writes), made by [`super::pair`].
    type Shoot = DomainsShoot;
    type Ctx = DomainsCtx;
    type State = DomainsState;

    const TYPE: &'static str = super::PROVIDER_TYPE;

    fn id_scheme(&self) -> &'static dyn IdScheme {
        &DnsIds
    }

    fn terraform_kind(&self, kind: Kind, _id: Option<&str>, body: Option<&Value>) -> TerraformKind {
        kind::terraform_kind(kind, body)
    }

    fn rules(&self, ds: &DomainsShoot, stored: &DomainsState) -> ErrorList {
        validation::validate(ds, stored).err().unwrap_or_default()
    }

    /// The phase machine and the roles ([`decide`]).
    fn context(
        &self,
        ds: &DomainsShoot,
        ws: &Workspace,
        stored: &DomainsState,
        _cloud: &CloudCtx,
    ) -> Result<Setup<DomainsCtx, DomainsState>, ProviderError> {
        let d = decide(ds, stored)?;
        let ctx =
            DomainsCtx { phase: d.phase, before: d.before, roles: d.roles, records: d.records, recorded: recorded(ws) };
        Ok(Setup { ctx, state: d.state, warnings: d.warnings })
    }

    fn discovery(
        &self,
        round: usize,
        _ds: &DomainsShoot,
        ctx: &DomainsCtx,
        _observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        Ok(fetch(ctx, round))
    }

    fn desired(
        &self,
        ds: &DomainsShoot,
        ctx: &DomainsCtx,
        _observed: &Observed,
    ) -> Result<Vec<Desired>, ProviderError> {
        Ok(desired(ds, ctx))
    }

    /// The recorded records no longer wanted that are gone already.
    fn forget(
        &self,
        ctx: &DomainsCtx,
        _desired: &[Desired],
        observed: &Observed,
    ) -> Result<Vec<(String, String)>, ProviderError> {
        let mut forget = Vec::new();
        for (addr, id) in &ctx.recorded {
            let wanted = ctx.records.iter().any(|r| DnsIds.same(&r.id, id));
            if !wanted && matches!(observed.get(id), Ok(None)) {
                forget.push((addr.clone(), id.clone()));
            }
        }
        Ok(forget)
    }

    fn artifacts(
        &self,
        ds: &DomainsShoot,
        ctx: &DomainsCtx,
        _observed: &Observed,
        _nodes: &[Node],
    ) -> Result<Artifacts, ProviderError> {
        artifacts(ds, ctx.phase, &ctx.before, &ctx.roles)
    }

    /// None: a domains plan is derived from its Shoot's (see [`trellis_plans::Plan::is_derived`]).
    fn mode(&self, _ds: &DomainsShoot) -> Option<trellis_plans::Mode> {
        None
    }

    fn next_state(
        &self,
        _ds: &DomainsShoot,
        _ctx: &DomainsCtx,
        state: DomainsState,
    ) -> Result<DomainsState, ProviderError> {
        Ok(state)
    }

    /// Deletes every DNSRecord object the workspace records as trellis's (never found by name).
    fn destroy_context(
        &self,
        _ds: &DomainsShoot,
        ws: &Workspace,
        _stored: &DomainsState,
        _cloud: &CloudCtx,
    ) -> Result<DomainsCtx, ProviderError> {
        Ok(DomainsCtx { recorded: recorded(ws), ..DomainsCtx::default() })
    }

    fn destroy_discovery(
        &self,
        round: usize,
        _ds: &DomainsShoot,
        ctx: &DomainsCtx,
        _observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        Ok(fetch(ctx, round))
    }

    fn destroy_desired(
        &self,
        ds: &DomainsShoot,
        ctx: &DomainsCtx,
        _observed: &Observed,
    ) -> Result<Vec<Desired>, ProviderError> {
        Ok(destroy_desired(ds, &ctx.recorded))
    }

    fn destroy_state(&self, _ds: &DomainsShoot, _stored: DomainsState) -> DomainsState {
        DomainsState::default()
    }

    /// The artifacts as the applied plan left them: the phase advanced (Preparing → Prepared, …); nothing read.
    fn after_apply_context(
        &self,
        _ds: &DomainsShoot,
        state: &DomainsState,
        _cloud: &CloudCtx,
    ) -> Result<DomainsCtx, ProviderError> {
        Ok(DomainsCtx {
            phase: state.phase,
            before: state.roles.clone(),
            roles: state.roles.clone(),
            ..DomainsCtx::default()
        })
    }
}

/// The delete graph of a destroy: every recorded DNSRecord object.
fn destroy_desired(ds: &DomainsShoot, rec: &[(String, String)]) -> Vec<Desired> {
    let tn = ds.shoot.technical_id();
    let seed = seed_name(ds);
    rec.iter()
        .map(|(addr, id)| Desired::DeleteManaged {
            res: resource(&seed, &tn, last_segment(id), id),
            depends_on: Vec::new(),
            why: Reason::new(ReasonCode::Destroy, format!("destroy: recorded by trellis ({addr})")),
        })
        .collect()
}

/// The destroy plan over `observed` (holding the recorded ids). Pure.
pub fn destroy_with(ds: &DomainsShoot, ws: &Workspace, observed: &Observed) -> Result<Planned, ProviderError> {
    crate::stages::destroy_observed(&Domains, ds, ws, &no_cloud(), observed)
}
