//! The pure model of a domains plan: the domain in each role ([`Roles`]), how a plan moves them
//! ([`next_roles`]), and what follows from them — the DNSRecord objects ([`records`]), the API-server
//! SANs, the advertised addresses, the service-account issuers, the kubeconfig server, the
//! `InternalDomainUpToDate` constraint and the user's actions (`artifacts`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::api::{DomainsShoot, ShootView};
use super::phase::{Phase, Trigger};
use crate::seed::SeedDnsProviderConfig;

/// `extensions.gardener.cloud/v1alpha1`.
pub const DNSRECORD_API_VERSION: &str = "extensions.gardener.cloud/v1alpha1";
/// The TTL trellis writes into every DNSRecord (seconds).
pub const TTL: u64 = 120;
/// The constraint a shoot carries when its internal domain is not the seed's desired one (house
/// style: a positive statement, `True` is fine, kept only while not `True`).
pub const CONSTRAINT_INTERNAL_DOMAIN_UP_TO_DATE: &str = "InternalDomainUpToDate";
/// The DNS provider type that means "no DNS records" (upstream's `unmanaged`).
pub const UNMANAGED: &str = "unmanaged";

/// The four roles of GEP-0066.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    External,
    Internal,
    PriorExternal,
    PriorInternal,
}

impl Role {
    /// The `role` label and the advertised-address name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::External => "external",
            Role::Internal => "internal",
            Role::PriorExternal => "prior-external",
            Role::PriorInternal => "prior-internal",
        }
    }
}

/// A cluster domain served through a DNS provider.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Endpoint {
    /// The cluster domain; the API server is `api.<domain>`.
    pub domain: String,
    /// The DNS provider type (`aws-route53`, …); `unmanaged`: no record.
    pub provider_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// The name of the DNSRecord object serving `api.<domain>` (`None` when unmanaged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
}

impl Endpoint {
    /// `api.<domain>`.
    pub fn api(&self) -> String {
        api(&self.domain)
    }
}

/// `api.<domain>` (upstream's `GetAPIServerDomain`).
pub fn api(domain: &str) -> String {
    format!("api.{domain}")
}

/// The domain in each role.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Roles {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<Endpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal: Option<Endpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_external: Option<Endpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_internal: Option<Endpoint>,
}

impl Roles {
    /// Every endpoint with its role, in upstream's advertised-address order.
    pub fn all(&self) -> Vec<(Role, &Endpoint)> {
        [
            (Role::External, &self.external),
            (Role::Internal, &self.internal),
            (Role::PriorExternal, &self.prior_external),
            (Role::PriorInternal, &self.prior_internal),
        ]
        .into_iter()
        .filter_map(|(r, e)| e.as_ref().map(|e| (r, e)))
        .collect()
    }

    /// Whether a domain migration is under way (a prior role is set).
    pub fn migrating(&self) -> bool {
        self.prior_external.is_some() || self.prior_internal.is_some()
    }

    /// The roles as they were before the migration: the prior domain where there is one.
    pub fn before(&self) -> Roles {
        Roles {
            external: self.prior_external.clone().or_else(|| self.external.clone()),
            internal: self.prior_internal.clone().or_else(|| self.internal.clone()),
            prior_external: None,
            prior_internal: None,
        }
    }
}

/// `<shoot>.<project>.internal.<domain>`, or `<shoot>.<project>.<domain>` when the seed's internal
/// domain already contains `internal` (upstream's `ConstructInternalClusterDomain`).
pub fn internal_cluster_domain(shoot: &str, project: &str, internal_domain: &str) -> String {
    if internal_domain.contains("internal") {
        format!("{shoot}.{project}.{internal_domain}")
    } else {
        format!("{shoot}.{project}.internal.{internal_domain}")
    }
}

/// The seed default domain an external domain lies in (`domain` ends with `.<default>`, upstream's
/// `isDefaultDomain`).
pub fn default_domain_of<'a>(defaults: &'a [SeedDnsProviderConfig], domain: &str) -> Option<&'a SeedDnsProviderConfig> {
    defaults.iter().find(|d| !d.domain.is_empty() && domain.ends_with(&format!(".{}", d.domain)))
}

/// The shoot's primary DNS provider (an entry of `spec.dns.providers`) as Gardener's
/// `plugin/pkg/shoot/dns` admission leaves it (`Admit`; a domains shoot always has `spec.seedName`):
/// - the entry with `primary: true` (upstream's `FindPrimaryDNSProvider`), else
/// - on an update (`old`: the shoot as last applied), the entry with the `type` and `credentialsRef`
///   of the old object's primary provider ("it was possible to apply shoots w/o a primary provider
///   before, we have to re-add it"), else
/// - `setPrimaryDNSProvider`: `providers[0]` unless the shoot's domain is one of the seed's default
///   domains (`isDefaultDomain`) — the domain after `assignDefaultDomainIfNeeded`, which gives a
///   shoot without one `<shoot>.<project>.<first default domain>` unless it uses unmanaged DNS
///   (`providers[0]` of type `unmanaged`), so a shoot without a domain on a seed with default
///   domains gets no primary provider.
///
/// The seed's `spec.dns.defaults` are the default domains (upstream falls back to the garden's
/// default-domain secrets when a seed has none; trellis knows only the Seed).
pub fn primary_provider<'a>(
    shoot: &'a ShootView,
    defaults: &[SeedDnsProviderConfig],
    old: Option<&super::state::LastApplied>,
) -> Option<&'a Value> {
    let list = shoot.providers().and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    primary_of(list, shoot.domain(), defaults, old.map(|o| (o.providers.as_ref(), o.domain.as_deref())))
}

fn primary_of<'a>(
    list: &'a [Value],
    domain: Option<&str>,
    defaults: &[SeedDnsProviderConfig],
    old: Option<(Option<&Value>, Option<&str>)>,
) -> Option<&'a Value> {
    if let Some(p) = list.iter().find(|p| p.get("primary").and_then(Value::as_bool) == Some(true)) {
        return Some(p);
    }
    let old_list = old.and_then(|(p, _)| p).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if let Some(was) = old.and_then(|(_, d)| primary_of(old_list, d, defaults, None)) {
        let same =
            |p: &&Value| p.get("type") == was.get("type") && p.get("credentialsRef") == was.get("credentialsRef");
        if let Some(p) = list.iter().find(same) {
            return Some(p);
        }
    }
    let unmanaged = list.first().and_then(|p| p.get("type")).and_then(Value::as_str) == Some(UNMANAGED);
    let default = match domain {
        Some(d) => default_domain_of(defaults, d).is_some(),
        // Admission assigns `<shoot>.<project>.<defaults[0]>`: a default domain.
        None => !unmanaged && !defaults.is_empty(),
    };
    if default {
        None
    } else {
        list.first()
    }
}

/// The `type` of [`primary_provider`], if it names one.
pub fn primary_provider_type<'a>(
    shoot: &'a ShootView,
    defaults: &[SeedDnsProviderConfig],
    old: Option<&super::state::LastApplied>,
) -> Option<&'a str> {
    primary_provider(shoot, defaults, old)?.get("type")?.as_str().filter(|t| !t.is_empty())
}

/// The external endpoint the shoot asks for (its `spec.dns.domain`), served by its primary provider
/// as admission leaves it ([`primary_provider`]; `old`: the shoot as last applied) or by the seed
/// default domain it lies in; `None` without a domain or when neither provides it (with the gate on
/// validation refuses that; with it off Gardener admits it, and a warning says its gardenlet cannot
/// reconcile it).
pub fn desired_external(ds: &DomainsShoot, old: Option<&super::state::LastApplied>) -> Option<Endpoint> {
    let domain = ds.shoot.domain()?;
    if let Some(t) = primary_provider_type(&ds.shoot, &ds.seed.spec.dns.defaults, old) {
        return Some(Endpoint { domain: domain.to_string(), provider_type: t.to_string(), zone: None, record: None });
    }
    let d = default_domain_of(&ds.seed.spec.dns.defaults, domain)?;
    Some(Endpoint { domain: domain.to_string(), provider_type: d.type_.clone(), zone: d.zone.clone(), record: None })
}

/// The seed's desired internal domain config for this plan: `internalDomains[0]` (or `internal`) with
/// the gate on, `None` when the gate is on and `internalDomainEnabled` is false; `internal` with the
/// gate off (the new Seed fields then have no effect).
pub fn seed_internal(ds: &DomainsShoot) -> Option<&SeedDnsProviderConfig> {
    let dns = &ds.seed.spec.dns;
    if !ds.features.mutable_shoot_domains {
        return dns.internal.as_ref();
    }
    if !dns.internal_domain_enabled() {
        return None;
    }
    dns.desired_internal().filter(|c| !c.domain.is_empty())
}

/// The internal endpoint the seed asks for.
pub fn desired_internal(ds: &DomainsShoot) -> Option<Endpoint> {
    let cfg = seed_internal(ds)?;
    Some(Endpoint {
        domain: internal_cluster_domain(&ds.shoot.metadata.name, ds.shoot.project(), &cfg.domain),
        provider_type: cfg.type_.clone(),
        zone: cfg.zone.clone(),
        record: None,
    })
}

/// The DNSRecord object name for a new endpoint of `role` (`External`/`Internal`): upstream's
/// `<shoot>-external` / `<shoot>-internal`, unless the record being replaced (now prior) holds that
/// name — DNSRecord names and `spec.name` are immutable, so the new domain gets a distinct object,
/// `<shoot>-<role>-migrated`; the next migration alternates back.
fn record_name(shoot: &str, role: Role, prior: Option<&Endpoint>) -> String {
    let base = format!("{shoot}-{}", role.as_str());
    if prior.and_then(|p| p.record.as_deref()) == Some(base.as_str()) {
        format!("{base}-migrated")
    } else {
        base
    }
}

fn named(mut e: Endpoint, shoot: &str, role: Role, prior: Option<&Endpoint>) -> Endpoint {
    e.record = (e.provider_type != UNMANAGED).then(|| record_name(shoot, role, prior));
    e
}

fn same_domain(a: Option<&Endpoint>, b: Option<&Endpoint>) -> bool {
    a.map(|e| e.domain.to_ascii_lowercase()) == b.map(|e| e.domain.to_ascii_lowercase())
}

/// Everything [`next_roles`] decides from.
pub struct Step<'a> {
    /// The roles after the last apply (`None`: never applied).
    pub old: Option<&'a Roles>,
    pub external: Option<Endpoint>,
    pub internal: Option<Endpoint>,
    pub trigger: Trigger,
    /// The gate is on and the shoot confirmed the internal-domain migration.
    pub migrate_internal: bool,
    /// `MutableShootDomains`.
    pub gate: bool,
}

/// The roles a plan leaves.
///
/// - First plan: the desired domains, no prior roles.
/// - A start trigger with the gate on: a changed external domain moves the old one to
///   `prior-external`; a changed internal domain (the seed's, with the confirmation annotation) moves
///   the old one to `prior-internal`. The records of unchanged roles stay as they are.
/// - A complete trigger: the prior roles go.
/// - Otherwise the roles stay (an external domain set for the first time is taken, as upstream
///   allows setting a domain that was not set).
pub fn next_roles(shoot: &str, s: Step<'_>) -> Roles {
    let Some(old) = s.old else {
        return Roles {
            external: s.external.map(|e| named(e, shoot, Role::External, None)),
            internal: s.internal.map(|e| named(e, shoot, Role::Internal, None)),
            ..Roles::default()
        };
    };
    let mut roles = old.clone();
    match s.trigger {
        Trigger::Start { .. } if s.gate => {
            if !same_domain(old.external.as_ref(), s.external.as_ref()) {
                roles.prior_external = old.external.clone();
                roles.external = s.external.map(|e| named(e, shoot, Role::External, old.external.as_ref()));
            }
            if s.migrate_internal && !same_domain(old.internal.as_ref(), s.internal.as_ref()) {
                roles.prior_internal = old.internal.clone();
                roles.internal = s.internal.map(|e| named(e, shoot, Role::Internal, old.internal.as_ref()));
            }
        }
        Trigger::Complete { .. } => {
            roles.prior_external = None;
            roles.prior_internal = None;
        }
        _ => {
            if roles.external.is_none() {
                roles.external = s.external.map(|e| named(e, shoot, Role::External, None));
            }
        }
    }
    roles
}

/// `A` for an IPv4 address, `AAAA` for IPv6, `CNAME` for a hostname (upstream's `GetDNSRecordType`).
pub fn record_type(address: &str) -> &'static str {
    match address.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => "A",
        Ok(IpAddr::V6(_)) => "AAAA",
        Err(_) => "CNAME",
    }
}

/// One desired DNSRecord object.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub role: Role,
    pub name: String,
    /// `/seeds/{seed}/namespaces/{technical id}/dnsrecords/{name}`.
    pub id: String,
    pub body: Value,
}

/// `/seeds/{seed}/namespaces/{namespace}/dnsrecords/{name}`.
pub fn record_id(seed: &str, namespace: &str, name: &str) -> String {
    format!("/seeds/{seed}/namespaces/{namespace}/dnsrecords/{name}")
}

/// The ids of the DNSRecord objects of `roles` (unmanaged endpoints have none): [`records`]' ids,
/// which do not depend on the address.
pub fn record_ids(seed: &str, tn: &str, roles: &Roles) -> Vec<String> {
    roles.all().into_iter().filter_map(|(_, e)| Some(record_id(seed, tn, e.record.as_deref()?))).collect()
}

/// The DNSRecord objects of `roles` (unmanaged endpoints have none), pointing at `address`.
pub fn records(seed: &str, tn: &str, roles: &Roles, address: &str) -> Vec<Record> {
    roles
        .all()
        .into_iter()
        .filter_map(|(role, e)| {
            let name = e.record.clone()?;
            let mut spec = json!({
                "type": e.provider_type,
                "name": e.api(),
                "recordType": record_type(address),
                "values": [address],
                "ttl": TTL,
            });
            if let Some(zone) = &e.zone {
                spec["zone"] = json!(zone);
            }
            let body = json!({
                "apiVersion": DNSRECORD_API_VERSION,
                "kind": "DNSRecord",
                "metadata": {
                    "name": name,
                    "namespace": tn,
                    "labels": {"role": role.as_str(), "gardener.cloud/role": "controlplane"},
                },
                "spec": spec,
            });
            Some(Record { role, id: record_id(seed, tn, &name), name, body })
        })
        .collect()
}

/// How the shoot's service-account issuer is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssuerMode {
    /// Derived from the domains: `https://api.<internal>`, else `https://api.<external>`.
    Default,
    /// `spec.kubernetes.kubeAPIServer.serviceAccountConfig.issuer`.
    Custom,
    /// `authentication.gardener.cloud/issuer=managed`.
    Managed,
}

/// The issuer derived from the domains (upstream's `defaultIssuer`).
pub fn default_issuer(roles: &Roles) -> Option<String> {
    roles.internal.as_ref().or(roles.external.as_ref()).map(|e| format!("https://{}", e.api()))
}

/// The shoot's service-account issuer and accepted issuers under `roles` in `phase`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Issuers {
    #[serde(skip)]
    pub mode: IssuerMode,
    /// `None` for a managed issuer (its URL is the garden's, not derived from the shoot's domains).
    pub issuer: Option<String>,
    pub accepted_issuers: Vec<String>,
    /// The old domain-derived issuer still accepted during the migration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_issuer: Option<String>,
}

pub fn issuers(shoot: &ShootView, roles: &Roles, phase: Option<Phase>) -> Issuers {
    let sa = shoot.service_account_config();
    let custom = sa.and_then(|c| c.issuer.clone()).filter(|i| !i.is_empty());
    let user: Vec<String> = sa.map(|c| c.accepted_issuers.clone()).unwrap_or_default();
    let default = default_issuer(roles);
    let mode = if shoot.managed_issuer() {
        IssuerMode::Managed
    } else if custom.is_some() {
        IssuerMode::Custom
    } else {
        IssuerMode::Default
    };
    let mut accepted = Vec::new();
    let push = |i: String, accepted: &mut Vec<String>| {
        if !accepted.contains(&i) {
            accepted.push(i);
        }
    };
    let mut prior_issuer = None;
    match mode {
        IssuerMode::Default => {
            for i in user {
                if Some(&i) != default.as_ref() {
                    push(i, &mut accepted);
                }
            }
            let old = default_issuer(&roles.before());
            if phase.is_some_and(Phase::keeps_prior) && old.is_some() && old != default {
                prior_issuer = old.clone();
                push(old.unwrap_or_default(), &mut accepted);
            }
        }
        IssuerMode::Custom | IssuerMode::Managed => {
            for i in user.into_iter().chain(default.clone()) {
                push(i, &mut accepted);
            }
        }
    }
    let issuer = match mode {
        IssuerMode::Default => default,
        IssuerMode::Custom => custom,
        IssuerMode::Managed => None,
    };
    Issuers { mode, issuer, accepted_issuers: accepted, prior_issuer }
}

/// The kube-apiserver's domain SANs (upstream's `computeKubeAPIServerServerCertificateConfig`
/// `ExtraDNSNames`: technical id, `api.<internal>`, `<external>`, `api.<external>`), with the prior
/// domains appended while they are kept.
pub fn sans(tn: &str, roles: &Roles) -> Vec<String> {
    let mut out = vec![tn.to_string()];
    let mut add = |e: &Option<Endpoint>, internal: bool| {
        if let Some(e) = e {
            if !internal {
                out.push(e.domain.clone());
            }
            out.push(e.api());
        }
    };
    add(&roles.internal, true);
    add(&roles.external, false);
    add(&roles.prior_internal, true);
    add(&roles.prior_external, false);
    out
}

/// `status.advertisedAddresses` in upstream's order: `external`, `internal`, then `prior-external`,
/// `prior-internal`, `unmanaged` (only when none of those), `service-account-issuer`.
pub fn advertised_addresses(roles: &Roles, issuers: &Issuers, address: Option<&str>) -> Vec<Value> {
    let mut out: Vec<Value> = roles
        .all()
        .into_iter()
        .map(|(r, e)| json!({"name": r.as_str(), "url": format!("https://{}", e.api())}))
        .collect();
    if out.is_empty() {
        if let Some(a) = address {
            out.push(json!({"name": "unmanaged", "url": format!("https://{a}")}));
        }
    }
    let issuer_advertised = roles.internal.is_some() || issuers.mode != IssuerMode::Default;
    if let (true, Some(i)) = (issuer_advertised, &issuers.issuer) {
        out.push(json!({"name": "service-account-issuer", "url": i}));
    }
    out
}

/// The server of the kubeconfigs handed out to users: `api.<external>` unless it is unmanaged and an
/// internal domain exists, else `api.<internal>` (upstream's `ComputeOutOfClusterAPIServerAddress`).
pub fn kubeconfig_server(roles: &Roles) -> Option<String> {
    let ext = roles.external.as_ref();
    let pick = match (ext, roles.internal.as_ref()) {
        (Some(e), Some(i)) if e.provider_type == UNMANAGED => i,
        (Some(e), _) => e,
        (None, Some(i)) => i,
        (None, None) => return None,
    };
    Some(format!("https://{}", pick.api()))
}

/// The shoot's `InternalDomainUpToDate` constraint, when it is not `True`: its internal domain is not
/// the seed's desired one (gate on only).
pub fn constraint(ds: &DomainsShoot, roles: &Roles) -> Option<Value> {
    if !ds.features.mutable_shoot_domains {
        return None;
    }
    let want = desired_internal(ds);
    if same_domain(roles.internal.as_ref(), want.as_ref()) {
        return None;
    }
    let now = roles.internal.as_ref().map_or("none".to_string(), |e| e.domain.clone());
    let target =
        want.as_ref().map_or("none (the seed's internal domain is disabled)".to_string(), |e| e.domain.clone());
    Some(json!({
        "type": CONSTRAINT_INTERNAL_DOMAIN_UP_TO_DATE,
        "status": "False",
        "reason": "InternalDomainMigrationRequired",
        "message": format!(
            "the shoot's internal domain {now} is not the seed's internal domain {target}: set {}=true and start a CA rotation ({}=rotate-ca-start) to migrate",
            super::api::ANNOTATION_MIGRATE_INTERNAL_DOMAIN,
            super::api::ANNOTATION_OPERATION
        ),
    }))
}

/// What the user must do in `phase` (the phase the plan executes) with `roles` (what it leaves) and
/// `issuers`.
pub fn user_actions(phase: Option<Phase>, roles: &Roles, before: &Roles, issuers: &Issuers) -> Vec<String> {
    let mut out = Vec::new();
    let migrating = roles.migrating() || before.migrating();
    let server = kubeconfig_server(roles).unwrap_or_default();
    let old_names: Vec<String> =
        [&before.prior_external, &before.prior_internal, &roles.prior_external, &roles.prior_internal]
            .into_iter()
            .flatten()
            .map(Endpoint::api)
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            });
    match phase {
        Some(p) if p.keeps_prior() && migrating => {
            out.push(format!(
                "the new names are served beside the old ones ({}): download a new kubeconfig (server {server}) and move every client to it before completing",
                old_names.join(", ")
            ));
            if let Some(old) = &issuers.prior_issuer {
                out.push(format!(
                    "the service-account issuer is now {}; the old issuer {old} is still accepted: update every external party that pins the old issuer (workload identity federation, OIDC relying parties) now — they break at Completing",
                    issuers.issuer.as_deref().unwrap_or_default()
                ));
            }
            if p == Phase::PreparingWithoutWorkersRollout || p == Phase::WaitingForWorkersRollout {
                out.push("roll out your worker pools (gardener.cloud/operation=rotate-rollout-workers=<pools>), then apply again to reach Prepared".to_string());
            }
            out.push(
                "when every client uses the new names, complete with gardener.cloud/operation=rotate-ca-complete"
                    .to_string(),
            );
        }
        Some(Phase::Completing) if migrating => {
            out.push(format!(
                "the old names ({}) stop resolving and leave the API server's certificate: kubeconfigs with the old server stop working",
                old_names.join(", ")
            ));
            out.push("tokens from the TokenRequest API issued before the rotation become invalid; bound and projected service-account tokens are refreshed automatically".to_string());
            if let Some(old) = &before_issuer(before, issuers) {
                out.push(format!("external parties that still pin the old issuer {old} break now"));
            }
        }
        _ => {}
    }
    out
}

fn before_issuer(before: &Roles, issuers: &Issuers) -> Option<String> {
    if issuers.mode != IssuerMode::Default {
        return None;
    }
    let old = default_issuer(&before.before())?;
    (Some(&old) != issuers.issuer.as_ref()).then_some(old)
}
