//! The domains provider as [`Stages`]: validation ([`super::validation`]), the phase machine
//! ([`super::phase`]) and the model ([`super::model`]) over an [`Observed`] keyed by [`DnsIds`];
//! what is read of the DNS and decided from it ([`super::dns`]) in two discovery rounds ([`discovery`]),
//! its refusals at pre-flight. A plan's nodes: each `DNSRecord` and, after it, its record set; the
//! recorded record sets and `DNSRecord`s no longer wanted deleted, the sets first.
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
use super::{dns, validation};
use crate::field::ErrorList;
use crate::provider::{CloudCtx, Planned, ProviderError};
use crate::stages::{Fetch, PreflightErrors, Setup, Staged, Stages};
use trellis_planner::discover::ListReq;

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
    Ok(Decided { phase, trigger, before, roles, state, warnings: warnings(ds, stored) })
}

fn seed_name(ds: &DomainsShoot) -> String {
    ds.shoot.spec.seed_name.clone().unwrap_or_else(|| ds.seed.metadata.name.clone())
}

/// The plan's warnings: the feature gates it was made under (when one is not at its default), the domain Gardener's admission would
/// default a missing `spec.dns.domain` to, an external domain Gardener admits but its gardenlet
/// cannot serve (gate off), Seed fields that have no effect with the gate off.
pub fn warnings(ds: &DomainsShoot, stored: &DomainsState) -> Vec<String> {
    // Only when a gate differs from upstream's default (the `domains` artifact always records them).
    let mut out = Vec::new();
    if ds.features != crate::features::Features::default() {
        out.push(format!("planned under feature gates {}", ds.features));
    }
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
    address: Option<&str>,
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
    named.insert("advertised_addresses".to_string(), json!(model::advertised_addresses(roles, &issuers, address)));
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

/// `domains.dns_record_set.<technical id>.<zone>/<fqdn>/<type>`, lowercase: the record set's id
/// without its constant parts (a zone and a DNS name hold no `/`, so two record sets never share an
/// address, also when a record moves to another zone and the old set is deleted beside the new one).
pub fn set_address(tn: &str, zone: &str, fqdn: &str, rtype: &str) -> String {
    format!("domains.dns_record_set.{tn}.{zone}/{fqdn}/{rtype}").to_ascii_lowercase()
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

/// A record set's resource: named `<fqdn>/<TYPE>`, scoped by its zone.
fn set_resource(tn: &str, address: String, id: &str) -> Resource {
    let (zone, fqdn, rtype) = dns::parse_record_set_id(id).unwrap_or_default();
    Resource {
        address,
        kind: kind::DNS_RECORD_SET,
        name: format!("{fqdn}/{}", rtype.to_ascii_uppercase()),
        scope: if zone.is_empty() { tn.to_string() } else { zone.to_string() },
        id: id.to_string(),
    }
}

/// The resources of `kind` the workspace records as trellis's (what deletes are driven from).
fn recorded(ws: &Workspace, kind: Kind) -> Vec<(String, String)> {
    ws.resources
        .iter()
        .filter(|(_, r)| r.kind == kind && r.ownership == Ownership::Managed && !r.id.is_empty())
        .map(|(a, r)| (a.clone(), r.id.clone()))
        .collect()
}

fn last_segment(id: &str) -> &str {
    id.trim_end_matches('/').rsplit('/').next().unwrap_or(id)
}

fn is_recorded(rec: &[(String, String)], id: &str) -> bool {
    rec.iter().any(|(_, r)| DnsIds.same(r, id))
}

/// The phase as a reason says it.
fn phase_words(phase: Option<Phase>) -> &'static str {
    phase.map_or("no CA rotation", Phase::as_str)
}

/// The desired state: every wanted `DNSRecord` managed (its whole body; name, type and record type are
/// immutable upstream, so a change of them replaces the object) and its record set after it; every
/// recorded record set and `DNSRecord` no longer wanted deleted (the sets first).
pub fn desired(ctx: &DomainsCtx, wanted: &Wanted) -> Vec<Desired> {
    let tn = &ctx.tn;
    let seed = &ctx.seed;
    let phase = phase_words(ctx.phase);
    let mut out = Vec::new();
    for (r, set) in wanted.records.iter().zip(&wanted.sets) {
        let record_address = address(tn, &r.name);
        out.push(Desired::Managed(ManagedSpec {
            res: resource(seed, tn, &r.name, &r.id),
            patch: r.body.clone(),
            force_new: vec!["/spec/name", "/spec/recordType", "/spec/type"],
            depends_on: Vec::new(),
            why: format!(
                "GEP-0066: the {} DNS record of the shoot's API server ({phase}): writes {}",
                r.role.as_str(),
                set.describe()
            ),
            referrers: Vec::new(),
        }));
        out.push(Desired::Managed(ManagedSpec {
            res: set_resource(tn, set_address(tn, &set.zone, &set.fqdn, set.rtype), &set.id),
            patch: set.body(),
            force_new: vec!["/name", "/type"],
            depends_on: vec![record_address],
            why: format!(
                "GEP-0066: the record set DNSRecord {} asks for, written as its DNS provider {} does ({}, {phase}): {}",
                r.name,
                set.provider,
                r.role.as_str(),
                set.describe()
            ),
            referrers: Vec::new(),
        }));
    }
    let set_deletes = deleted_sets(ctx, &ctx.recorded_sets, |id| wanted.sets.iter().any(|s| DnsIds.same(&s.id, id)));
    let after: Vec<String> = set_deletes.iter().map(|d| d.address().to_string()).collect();
    out.extend(set_deletes);
    for (addr, id) in &ctx.recorded {
        if wanted.records.iter().any(|r| DnsIds.same(&r.id, id)) {
            continue;
        }
        out.push(Desired::DeleteManaged {
            res: resource(seed, tn, last_segment(id), id),
            depends_on: after.clone(),
            why: Reason::new(
                ReasonCode::RecordedInState,
                format!("GEP-0066: recorded by trellis ({addr}) and no longer wanted ({phase}): the old name leaves"),
            ),
        });
    }
    out
}

/// The deletes of the recorded record sets `rec` that `keep` does not keep, each naming the
/// `DNSRecord` it was written for when a recorded one of that name and type was read.
fn deleted_sets(ctx: &DomainsCtx, rec: &[(String, String)], keep: impl Fn(&str) -> bool) -> Vec<Desired> {
    let phase = phase_words(ctx.phase);
    rec.iter()
        .filter(|(_, id)| !keep(id))
        .map(|(addr, id)| {
            let of = ctx.set_owner(id).map(|o| format!(" of DNSRecord {o}")).unwrap_or_default();
            let words = if ctx.destroying {
                format!("destroy: the record set{of}, recorded by trellis ({addr})")
            } else {
                format!("GEP-0066: the record set{of}, recorded by trellis ({addr}) and no longer wanted ({phase}): the old name leaves its zone")
            };
            let code = if ctx.destroying { ReasonCode::Destroy } else { ReasonCode::RecordedInState };
            Desired::DeleteManaged { res: set_resource(&ctx.tn, addr.clone(), id), depends_on: Vec::new(), why: Reason::new(code, words) }
        })
        .collect()
}

/// What the stages of one domains plan share.
#[derive(Clone, Debug, Default)]
pub struct DomainsCtx {
    /// The phase the plan executes (`None`: never rotated).
    pub phase: Option<Phase>,
    /// The roles before the plan, and the roles it leaves.
    pub before: Roles,
    pub roles: Roles,
    /// The seed's name and the shoot's technical id.
    pub seed: String,
    pub tn: String,
    /// The Seed's `trellis.gardener.cloud/api-server-address`, if set.
    pub annotated: Option<String>,
    /// Whether the plan writes the `DNSRecord`s of `roles` (not in a destroy, not after an apply).
    pub writes: bool,
    /// A destroy plan.
    pub destroying: bool,
    /// The `DNSRecord` objects and the record sets the workspace records as trellis's, as (address, id).
    pub recorded: Vec<(String, String)>,
    pub recorded_sets: Vec<(String, String)>,
    /// The recorded `DNSRecord` objects as read, for naming the owner of a record set being deleted.
    owners: Vec<Value>,
}

impl DomainsCtx {
    /// The ids of the `DNSRecord` objects the plan writes.
    fn record_ids(&self) -> Vec<String> {
        if self.writes {
            model::record_ids(&self.seed, &self.tn, &self.roles)
        } else {
            Vec::new()
        }
    }

    /// Whether the plan needs the address the records point at: it writes records, or the shoot has
    /// no domain at all (its advertised address is the seed's).
    fn needs_address(&self) -> bool {
        !self.destroying && (!self.record_ids().is_empty() || self.roles.all().is_empty())
    }

    /// The `name` of a recorded `DNSRecord`, as read, whose `spec.name` and `spec.recordType` are
    /// those of the record set `id`.
    fn set_owner(&self, id: &str) -> Option<String> {
        let (_, fqdn, rtype) = dns::parse_record_set_id(id)?;
        self.owners
            .iter()
            .find(|o| {
                o.pointer("/spec/name").and_then(Value::as_str).map(kind::normal_name).as_deref()
                    == Some(&kind::normal_name(fqdn))
                    && o.pointer("/spec/recordType")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.eq_ignore_ascii_case(rtype))
            })
            .and_then(|o| o.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
    }

    /// The context with the recorded `DNSRecord` objects as `observed` read them.
    fn with_owners(&self, observed: &Observed) -> DomainsCtx {
        let mut ctx = self.clone();
        ctx.owners = self.recorded.iter().filter_map(|(_, id)| observed.get(id).ok().flatten().cloned()).collect();
        ctx
    }
}

/// What a plan writes, decided from what it read: the address, the `DNSRecord` objects and their
/// record sets (one each, in the same order).
#[derive(Clone, Debug, Default)]
pub struct Wanted {
    pub address: Option<String>,
    pub records: Vec<model::Record>,
    pub sets: Vec<dns::RecordSet>,
}

/// The address the plan's records point at, from the annotation or the seed as `observed` read it.
fn address_of(ctx: &DomainsCtx, observed: &Observed) -> Option<String> {
    let seed = observed.get(&dns::seed_id(&ctx.seed)).ok().flatten();
    dns::address(ctx.annotated.as_deref(), seed)
}

/// The `DNSRecord` objects and record sets `ctx` wants, against `observed` (the seed and the zone
/// list read): `Ok(Err)` with every refusal at once; `Err` when discovery did not read what it needs
/// (a bug).
fn wanted(ctx: &DomainsCtx, observed: &Observed) -> Result<Result<Wanted, Vec<dns::DnsError>>, ProviderError> {
    let address = address_of(ctx, observed);
    if ctx.record_ids().is_empty() {
        return Ok(Ok(Wanted { address, ..Wanted::default() }));
    }
    let bug = |e: trellis_planner::discover::NotFetched| other(e.in_stage("domains records"));
    if ctx.annotated.is_none() {
        observed.get(&dns::seed_id(&ctx.seed)).map_err(bug)?;
    }
    let Some(addr) = address.clone() else {
        return Ok(Err(vec![dns::DnsError::NoAddress { seed: ctx.seed.clone() }]));
    };
    let zones = observed.list(dns::ZONES_PARENT, dns::ZONES).map_err(bug)?;
    let records = model::records(&ctx.seed, &ctx.tn, &ctx.roles, &addr);
    let mut sets = Vec::new();
    let mut errs = Vec::new();
    for r in &records {
        match dns::record_set(&ctx.roles, r, &addr, &zones) {
            Ok(s) => sets.push(s),
            Err(e) => errs.push(e),
        }
    }
    Ok(if errs.is_empty() { Ok(Wanted { address, records, sets }) } else { Err(errs) })
}

/// The context of no CA rotation: for tests and callers that have only an `observed` cloud.
fn no_cloud() -> CloudCtx {
    CloudCtx { account: String::new(), retry: Default::default(), accept_drift: false, replace: Default::default() }
}

/// Plans one shoot against `observed` (holding every id and list of [`discovery`]'s rounds). Pure.
pub fn plan_with(ds: &DomainsShoot, ws: &Workspace, observed: &Observed) -> Result<Planned, ProviderError> {
    crate::stages::plan_observed(&Domains, ds, ws, &no_cloud(), observed)
}

/// The ids and lists discovery round `round` reads, given what the rounds before read (`observed`):
/// what a test hands [`plan_with`].
pub fn discovery(
    ds: &DomainsShoot,
    ws: &Workspace,
    round: usize,
    observed: &Observed,
) -> Result<Option<Fetch>, ProviderError> {
    let setup = Domains.context(ds, ws, &stored_state(ws)?, &no_cloud())?;
    Ok(fetch(&setup.ctx, round, observed))
}

/// The rounds of discovery:
/// 0. the wanted and the recorded `DNSRecord` objects, the recorded record sets, the seed (when no
///    annotation names the address and the plan needs it), and the zone list (when it writes records);
/// 1. the wanted record sets (their zone and type follow from round 0).
fn fetch(ctx: &DomainsCtx, round: usize, observed: &Observed) -> Option<Fetch> {
    match round {
        0 => {
            let wanted = ctx.record_ids();
            let mut ids: Vec<String> = wanted
                .iter()
                .cloned()
                .chain(ctx.recorded.iter().map(|(_, id)| id.clone()))
                .chain(ctx.recorded_sets.iter().map(|(_, id)| id.clone()))
                .collect();
            if ctx.annotated.is_none() && ctx.needs_address() {
                ids.push(dns::seed_id(&ctx.seed));
            }
            let lists = if wanted.is_empty() { Vec::new() } else { vec![ListReq::new(dns::ZONES_PARENT, dns::ZONES)] };
            (!ids.is_empty() || !lists.is_empty()).then_some((ids, lists))
        }
        1 => {
            // A refusal is the pre-flight's to report; the sets that could be placed are read.
            let address = address_of(ctx, observed)?;
            let zones = observed.list(dns::ZONES_PARENT, dns::ZONES).ok()?;
            let ids: Vec<String> = model::records(&ctx.seed, &ctx.tn, &ctx.roles, &address)
                .iter()
                .filter(|_| ctx.writes)
                .filter_map(|r| dns::record_set(&ctx.roles, r, &address, &zones).ok())
                .map(|s| s.id)
                .collect();
            (!ids.is_empty()).then_some((ids, Vec::new()))
        }
        _ => None,
    }
}

/// The plan-time refusals against the DNS read: no address, no zone or an ambiguous one, and a record
/// set the plan would create that exists and is not trellis's. A set is trellis's when the workspace
/// records it, or when the workspace records the `DNSRecord` it is written for and the set holds
/// exactly what the plan writes (trellis's own create whose commit was lost, or the set the simulated
/// DNS wrote for that object before record sets were planned): what the executor recognises as its
/// own landed create, too.
fn refusals(ctx: &DomainsCtx, observed: &Observed) -> Result<Vec<dns::DnsError>, ProviderError> {
    let wanted = match wanted(ctx, observed)? {
        Ok(w) => w,
        Err(errs) => return Ok(errs),
    };
    let mut errs = Vec::new();
    for set in &wanted.sets {
        let Some(live) = observed.get(&set.id).map_err(|e| other(e.in_stage("domains preflight")))? else { continue };
        if is_recorded(&ctx.recorded_sets, &set.id) || (is_recorded(&ctx.recorded, &set.record_id) && set.is(live)) {
            continue;
        }
        errs.push(dns::DnsError::Foreign {
            fqdn: set.fqdn.clone(),
            rtype: set.rtype.to_string(),
            zone: set.zone.clone(),
            values: dns::values_of(live),
        });
    }
    Ok(errs)
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

    fn terraform_kind(&self, kind: Kind, id: Option<&str>, body: Option<&Value>, related: &[&Value]) -> TerraformKind {
        kind::terraform_kind(kind, id, body, related)
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
        let ctx = DomainsCtx { phase: d.phase, before: d.before, roles: d.roles, writes: true, ..base_ctx(ds, ws) };
        Ok(Setup { ctx, state: d.state, warnings: d.warnings })
    }

    fn discovery(
        &self,
        round: usize,
        _ds: &DomainsShoot,
        ctx: &DomainsCtx,
        observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        Ok(fetch(ctx, round, observed))
    }

    fn preflight(
        &self,
        _ds: &DomainsShoot,
        ctx: &DomainsCtx,
        observed: &Observed,
        _stored: &DomainsState,
        _next: &mut DomainsState,
        _accept_drift: bool,
    ) -> Result<PreflightErrors, ProviderError> {
        Ok(refusals(ctx, observed)?
            .into_iter()
            .map(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            .collect())
    }

    fn desired(
        &self,
        _ds: &DomainsShoot,
        ctx: &DomainsCtx,
        observed: &Observed,
    ) -> Result<Vec<Desired>, ProviderError> {
        // Pre-flight refused every plan this would refuse.
        let wanted = wanted(ctx, observed)?.map_err(|mut errs| other(errs.swap_remove(0)))?;
        Ok(desired(&ctx.with_owners(observed), &wanted))
    }

    /// The recorded `DNSRecord` objects and record sets no longer wanted that are gone already.
    fn forget(
        &self,
        ctx: &DomainsCtx,
        desired: &[Desired],
        observed: &Observed,
    ) -> Result<Vec<(String, String)>, ProviderError> {
        let mut forget = Vec::new();
        for (addr, id) in ctx.recorded.iter().chain(&ctx.recorded_sets) {
            let wanted = desired.iter().any(|d| matches!(d, Desired::Managed(m) if DnsIds.same(&m.res.id, id)));
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
        observed: &Observed,
        _nodes: &[Node],
    ) -> Result<Artifacts, ProviderError> {
        artifacts(ds, ctx.phase, &ctx.before, &ctx.roles, address_of(ctx, observed).as_deref())
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

    /// Deletes every record set and `DNSRecord` object the workspace records as trellis's (never
    /// found by name).
    fn destroy_context(
        &self,
        ds: &DomainsShoot,
        ws: &Workspace,
        _stored: &DomainsState,
        _cloud: &CloudCtx,
    ) -> Result<DomainsCtx, ProviderError> {
        Ok(DomainsCtx { destroying: true, ..base_ctx(ds, ws) })
    }

    fn destroy_discovery(
        &self,
        round: usize,
        _ds: &DomainsShoot,
        ctx: &DomainsCtx,
        observed: &Observed,
    ) -> Result<Option<Fetch>, ProviderError> {
        Ok(fetch(ctx, round, observed))
    }

    fn destroy_desired(
        &self,
        _ds: &DomainsShoot,
        ctx: &DomainsCtx,
        observed: &Observed,
    ) -> Result<Vec<Desired>, ProviderError> {
        Ok(destroy_desired(&ctx.with_owners(observed)))
    }

    fn destroy_state(&self, _ds: &DomainsShoot, _stored: DomainsState) -> DomainsState {
        DomainsState::default()
    }

    /// The artifacts as the applied plan left them: the phase advanced (Preparing → Prepared, …);
    /// only the seed is read (for the address of a shoot without a domain, when no annotation names it).
    fn after_apply_context(
        &self,
        ds: &DomainsShoot,
        state: &DomainsState,
        _cloud: &CloudCtx,
    ) -> Result<DomainsCtx, ProviderError> {
        Ok(DomainsCtx {
            phase: state.phase,
            before: state.roles.clone(),
            roles: state.roles.clone(),
            seed: seed_name(ds),
            tn: ds.shoot.technical_id(),
            annotated: dns::annotated_address(ds),
            ..DomainsCtx::default()
        })
    }
}

/// The context's parts every plan of `ds` shares: names, the annotation, what the workspace records.
fn base_ctx(ds: &DomainsShoot, ws: &Workspace) -> DomainsCtx {
    DomainsCtx {
        seed: seed_name(ds),
        tn: ds.shoot.technical_id(),
        annotated: dns::annotated_address(ds),
        recorded: recorded(ws, kind::DNS_RECORD),
        recorded_sets: recorded(ws, kind::DNS_RECORD_SET),
        ..DomainsCtx::default()
    }
}

/// The delete graph of a destroy: every recorded record set, then every recorded `DNSRecord` object.
fn destroy_desired(ctx: &DomainsCtx) -> Vec<Desired> {
    let mut out = deleted_sets(ctx, &ctx.recorded_sets, |_| false);
    let after: Vec<String> = out.iter().map(|d| d.address().to_string()).collect();
    out.extend(ctx.recorded.iter().map(|(addr, id)| Desired::DeleteManaged {
        res: resource(&ctx.seed, &ctx.tn, last_segment(id), id),
        depends_on: after.clone(),
        why: Reason::new(ReasonCode::Destroy, format!("destroy: recorded by trellis ({addr})")),
    }));
    out
}

/// The destroy plan over `observed` (holding the recorded ids). Pure.
pub fn destroy_with(ds: &DomainsShoot, ws: &Workspace, observed: &Observed) -> Result<Planned, ProviderError> {
    crate::stages::destroy_observed(&Domains, ds, ws, &no_cloud(), observed)
}
