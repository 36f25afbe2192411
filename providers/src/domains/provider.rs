//! The domains provider as a [`Provider`]: validation ([`super::validation`]), the phase machine
//! ([`super::phase`]) and the model ([`super::model`]) over an [`Observed`] keyed by [`DnsIds`].
//!
//! It is not dispatched by `spec.provider.type` (every Shoot may have a domains plan beside its
//! infrastructure plan): [`crate::registry::Registry::domains`] returns it, and its shoots are made by
//! [`super::pair`].

use std::collections::BTreeMap;

use serde_json::{json, Value};
use trellis_planner::cloud::CloudRead;
use trellis_planner::discover::Observed;
use trellis_planner::ids::{DnsIds, IdScheme};
use trellis_planner::model::{Desired, ManagedSpec, Resource};
use trellis_plans::{Artifacts, Kind, Node, Ownership, Plan, Reason, ReasonCode};
use trellis_state::{ProviderState, Workspace};

use super::api::{DomainsShoot, ANNOTATION_OPERATION};
use super::model::{self, Roles, Step};
use super::phase::{Phase, Trigger};
use super::state::{DomainsState, LastApplied};
use super::validation;
use crate::provider::{
    AppliedShoots, CloudCtx, FleetShoot, FleetWarning, Orphan, Planned, Provider, ProviderError, ProviderShoot,
};

/// The domains provider ([`crate::registry::Registry::domains`]).
pub static DOMAINS: Domains = Domains;

/// GEP-0066's DNS records and artifacts of one Shoot.
#[derive(Clone, Copy, Debug, Default)]
pub struct Domains;

fn other(e: impl std::error::Error + Send + Sync + 'static) -> ProviderError {
    ProviderError::Other(Box::new(e))
}

/// The provider state of a workspace, migrated to the current version (empty for a new workspace).
pub fn stored_state(ws: &Workspace) -> Result<DomainsState, ProviderError> {
    Ok(ws.provider_state::<DomainsState>()?.unwrap_or_default())
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
            external: model::desired_external(ds),
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
    Ok(Decided { phase, trigger, before, roles, records, state, warnings: warnings(ds) })
}

fn seed_name(ds: &DomainsShoot) -> String {
    ds.shoot.spec.seed_name.clone().unwrap_or_else(|| ds.seed.metadata.name.clone())
}

/// The plan's warnings: the feature gates it was made under, the domain Gardener's admission would
/// default a missing `spec.dns.domain` to, Seed fields that have no effect with the gate off.
pub fn warnings(ds: &DomainsShoot) -> Vec<String> {
    let mut out = vec![format!("planned under feature gates {}", ds.features)];
    let dns = &ds.seed.spec.dns;
    if ds.shoot.domain().is_none() && ds.shoot.primary_provider_type() != Some(model::UNMANAGED) {
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
        kind: Kind::DnsRecord,
        name: name.to_string(),
        scope: format!("{seed}/{tn}"),
        id: id.to_string(),
    }
}

/// The DNSRecord objects the workspace records as trellis's (what deletes are driven from).
fn recorded(ws: &Workspace) -> Vec<(String, String)> {
    ws.resources
        .iter()
        .filter(|(_, r)| r.kind == Kind::DnsRecord && r.ownership == Ownership::Managed && !r.id.is_empty())
        .map(|(a, r)| (a.clone(), r.id.clone()))
        .collect()
}

fn last_segment(id: &str) -> &str {
    id.trim_end_matches('/').rsplit('/').next().unwrap_or(id)
}

/// The desired state: every wanted record managed (its whole body; name, type and record type are
/// immutable upstream, so a change of them replaces the object), every recorded record no longer
/// wanted deleted.
pub fn desired(ds: &DomainsShoot, d: &Decided, recorded: &[(String, String)]) -> Vec<Desired> {
    let tn = ds.shoot.technical_id();
    let seed = seed_name(ds);
    let phase = d.phase.map_or("no CA rotation", Phase::as_str);
    let mut out: Vec<Desired> = d
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
        if d.records.iter().any(|r| DnsIds.same(&r.id, id)) {
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

async fn observe(cloud: &dyn CloudRead, ctx: &CloudCtx, ids: Vec<String>) -> Result<Observed, ProviderError> {
    let mut observed = Observed::new(&DnsIds);
    observed.fetch(cloud, &ctx.retry, &ids, &[]).await.map_err(other)?;
    Ok(observed)
}

fn plan_document(tn: &str, ws: &Workspace, nodes: Vec<Node>, artifacts: Artifacts, warnings: Vec<String>) -> Plan {
    Plan::new(tn.to_string(), trellis_plans::Provider::Domains, None, ws.prior(), nodes, artifacts, warnings)
}

fn provider_state(state: &DomainsState) -> Result<ProviderState, ProviderError> {
    ProviderState::of(state).map_err(|e| ProviderError::Other(format!("domains state does not serialise: {e}").into()))
}

/// Plans one shoot against `observed` (holding every id of `d.records` and of `recorded`). Pure.
pub fn plan_with(ds: &DomainsShoot, ws: &Workspace, observed: &Observed) -> Result<Planned, ProviderError> {
    let stored = stored_state(ws)?;
    let d = decide(ds, &stored)?;
    let rec = recorded(ws);
    let desired = desired(ds, &d, &rec);
    let nodes = trellis_planner::diff::plan_nodes(desired, observed).map_err(other)?;
    let mut forget = Vec::new();
    for (addr, id) in &rec {
        let wanted = d.records.iter().any(|r| DnsIds.same(&r.id, id));
        if !wanted && matches!(observed.get(id), Ok(None)) {
            forget.push((addr.clone(), id.clone()));
        }
    }
    let artifacts = artifacts(ds, d.phase, &d.before, &d.roles)?;
    let plan = plan_document(&ds.shoot.technical_id(), ws, nodes, artifacts, d.warnings.clone());
    Ok(Planned { plan, state: provider_state(&d.state)?, forget })
}

/// The ids a plan reads: the wanted records and the recorded ones.
pub fn discovery(ds: &DomainsShoot, ws: &Workspace) -> Result<Vec<String>, ProviderError> {
    let d = decide(ds, &stored_state(ws)?)?;
    Ok(d.records.iter().map(|r| r.id.clone()).chain(recorded(ws).into_iter().map(|(_, id)| id)).collect())
}

impl Domains {
    fn shoot<'a>(&self, shoot: &'a dyn ProviderShoot) -> Result<&'a DomainsShoot, ProviderError> {
        shoot.typed(super::PROVIDER_TYPE)
    }
}

#[async_trait::async_trait]
impl Provider for Domains {
    fn type_name(&self) -> &'static str {
        super::PROVIDER_TYPE
    }

    fn ids(&self) -> &'static dyn IdScheme {
        &DnsIds
    }

    /// None: a domains plan reads no infrastructureConfig (its input is [`super::pair`]'s).
    fn infrastructure_config_type(&self) -> (&'static str, &'static str) {
        ("", "")
    }

    /// A [`DomainsShoot`] document (`{shoot, seed, features}`, what `to_json` writes).
    fn parse_shoot(&self, text: &str) -> Result<Box<dyn ProviderShoot>, serde_saphyr::Error> {
        crate::provider::parse_typed_shoot::<DomainsShoot>(text)
    }

    fn shoot_from_json(&self, value: &Value) -> Result<Box<dyn ProviderShoot>, serde_json::Error> {
        crate::provider::typed_shoot_from_json::<DomainsShoot>(value)
    }

    fn validate(&self, shoot: &dyn ProviderShoot, ws: &Workspace) -> Result<(), ProviderError> {
        let ds = self.shoot(shoot)?;
        validation::validate(ds, &stored_state(ws)?).map(|_| ()).map_err(ProviderError::Invalid)
    }

    async fn plan(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        let ds = self.shoot(shoot)?;
        let observed = observe(cloud, ctx, discovery(ds, ws)?).await?;
        plan_with(ds, ws, &observed)
    }

    /// Deletes every DNSRecord object the workspace records as trellis's (never found by name).
    async fn plan_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        ws: &Workspace,
        cloud: &dyn CloudRead,
        ctx: &CloudCtx,
    ) -> Result<Planned, ProviderError> {
        let ds = self.shoot(shoot)?;
        let rec = recorded(ws);
        let observed = observe(cloud, ctx, rec.iter().map(|(_, id)| id.clone()).collect()).await?;
        Ok(destroy_with(ds, ws, &rec, &observed)?)
    }

    /// The artifacts as the applied plan left them: the phase advanced (Preparing → Prepared, …).
    async fn artifacts_after_apply(
        &self,
        shoot: &dyn ProviderShoot,
        state: &ProviderState,
        _cloud: &dyn CloudRead,
        _ctx: &CloudCtx,
    ) -> Result<Artifacts, ProviderError> {
        let ds = self.shoot(shoot)?;
        let st: DomainsState = state.read(&ds.shoot.technical_id())?;
        artifacts(ds, st.phase, &st.roles, &st.roles)
    }

    /// Nothing: the DNS extension writes only the zone records of trellis's DNSRecord objects, which
    /// the destroy deletes with them.
    async fn orphans_after_destroy(
        &self,
        shoot: &dyn ProviderShoot,
        _cloud: &dyn CloudRead,
        _ctx: &CloudCtx,
    ) -> Result<Vec<Orphan>, ProviderError> {
        self.shoot(shoot)?;
        Ok(Vec::new())
    }

    /// Reads nothing of a domains plan: the Seed-level rules run in [`super::check_seed`], which the
    /// fleet plan calls with the Seed and all its shoots.
    fn fleet_facts(&self, _plan: Plan) -> Option<Plan> {
        None
    }

    /// See [`Provider::fleet_facts`]: the Seed-level rules are [`super::check_seed`]'s.
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

/// The destroy plan over `observed`. Pure.
pub fn destroy_with(
    ds: &DomainsShoot,
    ws: &Workspace,
    rec: &[(String, String)],
    observed: &Observed,
) -> Result<Planned, ProviderError> {
    let tn = ds.shoot.technical_id();
    let seed = seed_name(ds);
    let desired: Vec<Desired> = rec
        .iter()
        .map(|(addr, id)| Desired::DeleteManaged {
            res: resource(&seed, &tn, last_segment(id), id),
            depends_on: Vec::new(),
            why: Reason::new(ReasonCode::Destroy, format!("destroy: recorded by trellis ({addr})")),
        })
        .collect();
    let nodes = trellis_planner::diff::plan_nodes(desired, observed).map_err(other)?;
    // A destroy produces no artifacts.
    let plan = plan_document(&tn, ws, nodes, Artifacts::new(), Vec::new());
    Ok(Planned { plan, state: provider_state(&DomainsState::default())?, forget: Vec::new() })
}
