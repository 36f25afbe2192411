//! The `domains` provider (GEP-0066, mutable shoot domains): plans a Shoot's API-server DNS records
//! — the seed's `DNSRecord` objects and the record sets the DNS provider extension writes for them
//! into the clouds' DNS zones — through the two-phase CA rotation, with the artifacts a reviewer
//! checks (SANs, advertised addresses, service-account issuers, kubeconfig server, the
//! `InternalDomainUpToDate` constraint, the user's actions per phase).
//!
//! - [`api`]: what it reads of a Shoot ([`api::ShootView`]) and its input [`DomainsShoot`] (the
//!   Shoot paired with its Seed and the feature gates, [`pair`]).
//! - [`phase`]: the six upstream CA-rotation phases, the triggers and upstream's refusals.
//! - [`model`]: the domain in each role, how a plan moves them, records and artifacts (pure).
//! - [`dns`]: what a plan reads of the DNS and decides from it — the address, the zone of each
//!   record set, the record sets, the plan-time refusals.
//! - [`validation`]: the Shoot rules (all errors at once); [`check_seed`]: the Seed rules that need
//!   every shoot of the seed.
//! - [`state`]: the typed, versioned provider state — **the truth** of the phase and the roles.
//! - [`provider`]: the [`crate::provider::Provider`] impl ([`DOMAINS`]).
//!
//! Decisions (documented for users in `docs/usage/domain-migration.md`):
//! - **DNSRecord names.** A role's record is upstream's `<shoot>-external` / `<shoot>-internal`. A
//!   DNSRecord's name and `spec.name` are immutable, and the simulator (like Gardener's DNS
//!   extension) refuses two objects for one FQDN, so a migration keeps the object that served the
//!   old domain as it is (only its `role` label becomes `prior-external` / `prior-internal`: no DNS
//!   gap) and creates the new domain's record as a distinct object, `<shoot>-<role>-migrated` when
//!   `<shoot>-<role>` is the prior one. Completion deletes the prior object; the next migration
//!   alternates back to `<shoot>-<role>`.
//! - **Record values.** The address the records point at is a runtime fact (upstream: the seed's
//!   istio-ingress load balancer, which no Seed field carries), read at plan time: the Seed's
//!   `trellis.gardener.cloud/api-server-address` annotation when set (an explicit override), else
//!   the seed's ingress (GET `/seeds/{seed}`: `{"name", "ingress": {"ip" | "hostname"}}`, from the
//!   world file's `seeds:` section or a landscape's export); neither, while the plan writes records,
//!   refuses the plan in one line. `A` for IPv4, `AAAA` for IPv6, `CNAME` for a hostname.
//! - **Record sets.** Each `DNSRecord` node is followed by a `dns_record_set` node: the record set
//!   the DNS provider extension writes for it, id `/dns/zones/{zone}/records/{fqdn}/{TYPE}` and body
//!   `{name, type, ttl, values}`, the same for every cloud, depending on the `DNSRecord`'s node
//!   (deletes the other way round: a `DNSRecord`'s delete waits for the record sets'). Its address
//!   is `domains.dns_record_set.<technical id>.<zone>/<fqdn>/<type>` (lowercase: one address per
//!   id, so a record set that moves to another zone is deleted beside its replacement). Record sets
//!   no longer wanted are deleted as `DNSRecord`s are: driven from what the workspace recorded.
//! - **Zones** are read at plan time (`/dns` lists its `zones`): a record set goes into the zone
//!   `spec.zone` names (azure-dns `{resourceGroup}/{zoneName}`, google-clouddns the managed zone's
//!   name, else — and when no zone is named so — the zone's DNS name), else the listed zone whose
//!   name is the longest suffix of the FQDN. No zone, or two of that name, refuses the plan.
//! - **Ownership.** A record set is trellis's when the workspace recorded it. One that exists and is
//!   not is refused at plan time, naming it — unless the workspace records the `DNSRecord` it is
//!   written for and it holds exactly what the plan writes (trellis's own create whose commit was
//!   lost): that one is taken over as a no-op, as the executor takes over its own landed create.
//! - **Where the truth lives.** The provider state: the phase and roles trellis last applied. The
//!   manifest's `status` is read only before the first apply (adoption). `gardener.cloud/operation`
//!   and the confirmation annotation are consumed by the apply that acted on them (recorded in state,
//!   since trellis does not edit the user's manifest).
//! - **Seed pairing** is this provider's hook, registered with its entry in the engine's registry:
//!   [`pair`] makes a Shoot's domains input on its Seed, and [`check_seeds`] runs the Seed-level
//!   rules over a fleet's domains inputs (grouped by Seed here), the Seeds of the run and the domains
//!   workspaces in state; per Seed, [`check_seed`] (the Seed, the Seed as last seen if known, and
//!   every DomainsShoot of the seed); usage of an internal domain is read from the shoots'
//!   `status.advertisedAddresses` (`internal` / `prior-internal`), as the GEP says, and from their
//!   domains state ([`internal_in_use`]).
//! - **Constraint.** `InternalDomainUpToDate` (positive statement; only written while `False`, as
//!   upstream's optional constraints), reason `InternalDomainMigrationRequired`.

pub mod api;
pub mod dns;
pub mod kind;
pub mod model;
pub mod phase;
pub mod provider;
pub mod state;
pub mod validation;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use api::DomainsShoot;
pub use provider::{Domains, DOMAINS};

use crate::features::Features;
use crate::field::{ErrorList, FieldError};
use crate::manifest::LoadedSeed;
use crate::provider::{ProviderError, ProviderShoot};
use crate::seed::Seed;
use trellis_state::Workspace;

/// `domains`.
pub const PROVIDER_TYPE: &str = "domains";

/// The provider, as its plans name it.
pub const PROVIDER: trellis_plans::Provider = trellis_plans::Provider::new(PROVIDER_TYPE);

/// Why a Shoot and a Seed cannot be paired, or a domains input cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DomainsError {
    #[error("{file}: the Shoot cannot be read for its domains plan: {detail}")]
    Shoot { file: String, detail: String },
    #[error("{file}: Shoot {shoot} is scheduled on seed {want:?} (spec.seedName), not on the Seed {got:?} it was paired with; pass the Seed it names")]
    WrongSeed { file: String, shoot: String, want: String, got: String },
    #[error("{file}: Shoot {shoot} has no spec.seedName: a domains plan needs the Seed the Shoot is scheduled on; set spec.seedName")]
    NoSeed { file: String, shoot: String },
    /// A domains workspace in state whose provider state cannot be read ([`check_seeds`]).
    #[error("state of {workspace}")]
    State {
        workspace: String,
        #[source]
        source: ProviderError,
    },
}

impl From<DomainsError> for ProviderError {
    fn from(e: DomainsError) -> ProviderError {
        ProviderError::Other(Box::new(e))
    }
}

/// A Shoot paired with its Seed: the input of a domains plan. `shoot` is the Shoot document as JSON
/// (the infra provider's `ProviderShoot::to_json()`, or the raw document), `file` names it in errors.
/// The Shoot's `spec.seedName` must name `seed`.
pub fn pair(
    shoot: &serde_json::Value,
    seed: &Seed,
    features: Features,
    file: &Path,
) -> Result<Box<dyn ProviderShoot>, ProviderError> {
    let file_s = file.display().to_string();
    let view: api::ShootView = serde_json::from_value(shoot.clone())
        .map_err(|e| DomainsError::Shoot { file: file_s.clone(), detail: e.to_string() })?;
    let name = format!("{}/{}", view.metadata.namespace, view.metadata.name);
    match view.spec.seed_name.as_deref() {
        None | Some("") => return Err(DomainsError::NoSeed { file: file_s, shoot: name }.into()),
        Some(s) if s != seed.metadata.name => {
            return Err(DomainsError::WrongSeed {
                file: file_s,
                shoot: name,
                want: s.to_string(),
                got: seed.metadata.name.clone(),
            }
            .into())
        }
        Some(_) => {}
    }
    Ok(Box::new(DomainsShoot { shoot: view, seed: seed.clone(), features }))
}

/// An internal cluster domain (`<shoot>.<project>.internal.<seed internal domain>`) a shoot uses
/// after trellis's last apply: the `internal` or `prior-internal` role of its domains state
/// ([`state::DomainsState::internal_in_use`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InternalInUse {
    /// The shoot's technical id.
    pub shoot: String,
    /// The internal cluster domain.
    pub domain: String,
}

/// Whether the internal cluster domain `cluster_domain` lies on the seed's internal domain `entry`:
/// it is [`model::internal_cluster_domain`] of its first two labels (the shoot's name and project,
/// DNS labels without dots) on `entry`.
fn on_internal_domain(cluster_domain: &str, entry: &str) -> bool {
    let mut labels = cluster_domain.splitn(3, '.');
    match (labels.next(), labels.next(), labels.next()) {
        (Some(name), Some(project), Some(_)) => {
            cluster_domain.eq_ignore_ascii_case(&model::internal_cluster_domain(name, project, entry))
        }
        _ => false,
    }
}

/// The Seed-level rules of GEP-0066 over the Seed, the Seed as last seen (`old_seed`, when known) and
/// every shoot scheduled on it; every error at once ([`ProviderError::Invalid`], Seed field paths):
/// - `internal` and `internalDomains[0]` in sync (gate on);
/// - no shoot still uses an internal domain the Seed no longer lists (gate on): use is read from the
///   shoots' `status.advertisedAddresses` (`internal` / `prior-internal`) and from `applied`, the
///   internal domains the shoots trellis applied on this seed use after their last apply (their
///   domains state; the caller gathers them, for shoots of the fleet and shoots not in this run);
/// - `internalDomainEnabled: false` only when every shoot has an external domain (gate on);
/// - with the gate off, today's rule: the internal domain must not change while shoots are
///   scheduled onto the seed: against `old_seed`, and against `applied` (a shoot applied on the
///   seed whose internal cluster domain lies on another internal domain than `spec.dns.internal`).
pub fn check_seed(
    seed: &Seed,
    old_seed: Option<&Seed>,
    shoots: &[&DomainsShoot],
    applied: &[InternalInUse],
    features: Features,
) -> Result<(), ProviderError> {
    let dns = &seed.spec.dns;
    let mut errs = ErrorList::new();
    if !features.mutable_shoot_domains {
        let old = old_seed.and_then(|o| o.spec.dns.internal.as_ref()).map(|c| c.domain.as_str());
        let new = dns.internal.as_ref().map(|c| c.domain.as_str());
        // trellis keeps no Seed in state: the applied shoots' internal cluster domains tell which
        // internal domain they were built from.
        let mut moved: Vec<&str> = applied
            .iter()
            .filter(|a| !new.is_some_and(|d| on_internal_domain(&a.domain, d)))
            .map(|a| a.shoot.as_str())
            .collect();
        moved.sort_unstable();
        moved.dedup();
        if (old.is_some() && old != new && !shoots.is_empty()) || !moved.is_empty() {
            let mut detail =
                "internal domain must not be changed while shoots are still scheduled onto seed".to_string();
            if !moved.is_empty() {
                detail.push_str(&format!(" (applied on another internal domain: {})", moved.join(", ")));
            }
            errs.push(FieldError::forbidden("spec.dns.internal", detail));
        }
    } else {
        if let (Some(i), Some(first)) = (&dns.internal, dns.internal_domains.first()) {
            if i != first {
                errs.push(FieldError::invalid(
                    "spec.dns.internal",
                    &i.domain,
                    format!("must be the same as spec.dns.internalDomains[0] (domain {:?}): both fields name the desired internal domain", first.domain),
                ));
            }
        }
        let listed: Vec<&str> = dns
            .internal
            .iter()
            .chain(&dns.internal_domains)
            .map(|c| c.domain.as_str())
            .filter(|d| !d.is_empty())
            .collect();
        let mut in_use: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for s in shoots {
            let v = &s.shoot;
            for a in v.status.advertised_addresses.iter().filter(|a| a.name == "internal" || a.name == "prior-internal")
            {
                let host = a.url.trim_start_matches("https://");
                let known = listed.iter().any(|d| {
                    host.eq_ignore_ascii_case(&model::api(&model::internal_cluster_domain(
                        &v.metadata.name,
                        v.project(),
                        d,
                    )))
                });
                if !known {
                    in_use.entry(host.to_ascii_lowercase()).or_default().push(v.technical_id());
                }
            }
        }
        for a in applied {
            if !listed.iter().any(|d| on_internal_domain(&a.domain, d)) {
                in_use.entry(model::api(&a.domain).to_ascii_lowercase()).or_default().push(a.shoot.clone());
            }
        }
        for users in in_use.values_mut() {
            users.sort();
            users.dedup();
        }
        for (host, users) in in_use {
            errs.push(FieldError::forbidden(
                "spec.dns.internalDomains",
                format!(
                    "the internal domain of {host} is still used by shoot(s) {}: keep its entry until they migrated",
                    users.join(", ")
                ),
            ));
        }
        if !dns.internal_domain_enabled() {
            let without: Vec<String> =
                shoots.iter().filter(|s| s.shoot.domain().is_none()).map(|s| s.shoot.technical_id()).collect();
            if !without.is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.dns.internalDomainEnabled",
                    format!(
                        "the internal domain may be disabled only when every shoot on the seed has an external domain; without one: {}",
                        without.join(", ")
                    ),
                ));
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ProviderError::Invalid(errs))
    }
}

/// The Seed-level rules of GEP-0066 over a fleet, the hook the engine calls for this provider's
/// entry: each Seed with the domains inputs of its shoots among `inputs` (this provider's, as
/// [`pair`] made them or a saved plan carries them; grouped by the Seed each was paired with), then
/// each Seed of the run (`seeds`) without any of them, checked under the run's `features`
/// against the shoots applied on it; Seeds in name order, each with [`check_seed`]. The Seed as last
/// seen is not known (trellis keeps no Seed in state): the applied shoots' internal domains stand in
/// for it. `applied` gives the domains workspaces in state (the shoot's technical id and the
/// workspace), read only when some Seed is checked ([`internal_in_use`]): every shoot trellis applied
/// on the Seed, in this run or not.
///
/// Returns every Seed that breaks a rule as (`seed NAME`, its file, the errors); `Err` when the state
/// cannot be read or an input is not a domains input.
pub fn check_seeds(
    inputs: &[(&dyn ProviderShoot, &Path)],
    seeds: &[LoadedSeed],
    features: Features,
    applied: &dyn Fn() -> Result<Vec<(String, Workspace)>, ProviderError>,
) -> Result<Vec<(String, PathBuf, ProviderError)>, ProviderError> {
    let mut by_seed: BTreeMap<&str, Vec<(&DomainsShoot, &Path)>> = BTreeMap::new();
    for &(shoot, file) in inputs {
        let ds = shoot.typed::<DomainsShoot>(PROVIDER_TYPE)?;
        by_seed.entry(ds.seed.metadata.name.as_str()).or_default().push((ds, file));
    }
    // The Seeds without a shoot in this run (names are unique: [`crate::manifest::pair_seeds`]).
    let alone: Vec<&LoadedSeed> =
        seeds.iter().filter(|s| !by_seed.contains_key(s.seed.metadata.name.as_str())).collect();
    if by_seed.is_empty() && alone.is_empty() {
        return Ok(Vec::new());
    }
    // Read with the gate on (the in-use rule) and off (the internal domain must not change while
    // applied shoots are on the seed).
    let applied = internal_in_use(&applied()?)?;
    let mut failures = Vec::new();
    for (name, shoots) in &by_seed {
        let (first, file) = shoots[0];
        let all: Vec<&DomainsShoot> = shoots.iter().map(|(ds, _)| *ds).collect();
        let used = applied.get(*name).map(Vec::as_slice).unwrap_or_default();
        if let Err(e) = check_seed(&first.seed, None, &all, used, first.features) {
            failures.push((format!("seed {name}"), file.to_path_buf(), e));
        }
    }
    for s in alone {
        let name = &s.seed.metadata.name;
        let used = applied.get(name.as_str()).map(Vec::as_slice).unwrap_or_default();
        if let Err(e) = check_seed(&s.seed, None, &[], used, features) {
            failures.push((format!("seed {name}"), s.file.clone(), e));
        }
    }
    Ok(failures)
}

/// The internal domains the shoots trellis applied use, by the Seed they were applied on: of each
/// domains workspace (`(technical id, workspace)`) whose shoot was last applied with
/// `spec.seedName` set, its `internal` and `prior-internal` roles
/// ([`state::DomainsState::internal_in_use`]).
pub fn internal_in_use(
    workspaces: &[(String, Workspace)],
) -> Result<BTreeMap<String, Vec<InternalInUse>>, ProviderError> {
    let mut out: BTreeMap<String, Vec<InternalInUse>> = BTreeMap::new();
    for (shoot, ws) in workspaces {
        let state =
            provider::stored_state(ws).map_err(|source| DomainsError::State { workspace: ws.shoot.clone(), source })?;
        let Some(seed) = state.last_applied.as_ref().and_then(|l| l.seed_name.clone()) else { continue };
        let used = out.entry(seed).or_default();
        used.extend(
            state.internal_in_use().into_iter().map(|d| InternalInUse { shoot: shoot.clone(), domain: d.to_string() }),
        );
    }
    Ok(out)
}
