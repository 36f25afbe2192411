//! GEP-0066 admission rules for one Shoot against the last-applied one (the old object of an
//! update is the provider state's `LastApplied`), every error at once, upstream's field paths.

use regex::Regex;
use std::sync::OnceLock;

use super::api::{DomainsShoot, ANNOTATION_OPERATION};
use super::model::{self, default_domain_of};
use super::phase::{self, Phase, Trigger};
use super::state::DomainsState;
use crate::field::{ErrorList, FieldError, Value};

const DNS1123_SUBDOMAIN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn dns1123(s: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    s.len() <= 253 && RE.get_or_init(|| Regex::new(DNS1123_SUBDOMAIN).expect("valid regex")).is_match(s)
}

/// The phase the shoot is in: the state's after an apply (the truth), the manifest's status before.
pub fn current_phase(ds: &DomainsShoot, state: &DomainsState) -> Option<Phase> {
    if state.last_applied.is_some() {
        state.phase
    } else {
        ds.shoot.ca_phase()
    }
}

/// The CA-rotation trigger of this update (upstream's refusals included).
pub fn trigger_of(ds: &DomainsShoot, state: &DomainsState) -> Result<Trigger, ErrorList> {
    phase::trigger(&operations(ds, state), current_phase(ds, state))
}

/// The operations of `gardener.cloud/operation`, none when the last apply consumed that value.
fn operations<'a>(ds: &'a DomainsShoot, state: &DomainsState) -> Vec<&'a str> {
    let annotation = ds.shoot.annotations().get(ANNOTATION_OPERATION).map(String::as_str);
    phase::operations(annotation.filter(|a| state.consumed_operation.as_deref() != Some(*a)))
}

/// Every rule; `Ok(trigger)` when the shoot may be planned.
pub fn validate(ds: &DomainsShoot, state: &DomainsState) -> Result<Trigger, ErrorList> {
    let gate = ds.features.mutable_shoot_domains;
    let shoot = &ds.shoot;
    let dns = &ds.seed.spec.dns;
    let domain_path = "spec.dns.domain";
    let mut errs = crate::metadata::validate(&shoot.metadata);
    let trigger = match trigger_of(ds, state) {
        Ok(t) => t,
        Err(e) => {
            errs.extend(e);
            // Refused for the phase, still what the update asks for: no second error about it.
            phase::requested(&operations(ds, state))
        }
    };
    let starting = matches!(trigger, Trigger::Start { .. });

    if let Some(d) = shoot.domain() {
        if !dns1123(d) {
            errs.push(FieldError::invalid(domain_path, d, DNS1123_SUBDOMAIN_MSG));
        }
        // GEP-0066's rule, with the gate on only: today's admission (`plugin/pkg/shoot/dns`) admits
        // such a domain (its gardenlet then cannot reconcile it: a warning says so).
        let own = model::primary_provider_type(shoot, &dns.defaults, state.last_applied.as_ref());
        if gate && own.is_none() && default_domain_of(&dns.defaults, d).is_none() {
            let defaults: Vec<&str> = dns.defaults.iter().map(|c| c.domain.as_str()).collect();
            errs.push(FieldError::invalid(
                domain_path,
                d,
                format!(
                    "domain must be a subdomain of one of the seed's default domains ({}) unless the shoot sets its own primary DNS provider in spec.dns.providers",
                    if defaults.is_empty() { "the seed has none".to_string() } else { defaults.join(", ") }
                ),
            ));
        }
    }

    // At least one valid domain; an external one when the seed's internal domain is disabled.
    if shoot.domain().is_none() {
        if gate && !dns.internal_domain_enabled() {
            errs.push(FieldError::required(
                domain_path,
                "the seed's internal domain is disabled (spec.dns.internalDomainEnabled: false): the shoot must have an external domain",
            ));
        } else if model::seed_internal(ds).is_none() {
            errs.push(FieldError::required(
                domain_path,
                "a shoot needs at least one valid domain (internal or external) and the seed has no internal domain: set spec.dns.domain",
            ));
        }
    }

    let old = state.last_applied.as_ref();
    let old_domain = old.and_then(|o| o.domain.as_deref());
    let domain_changed = old_domain.is_some_and(|o| shoot.domain().is_none_or(|n| !n.eq_ignore_ascii_case(o)));
    let internal_migration = gate
        && migrate_internal_confirmed(ds, state)
        && starting
        && state.roles.internal.as_ref().map(|e| &e.domain) != model::desired_internal(ds).as_ref().map(|e| &e.domain);
    if domain_changed {
        let new = shoot.domain().map_or(Value::null(), Value::str);
        if !gate {
            errs.push(FieldError::invalid_value(domain_path, new, "field is immutable"));
        } else if !starting {
            errs.push(FieldError::forbidden(
                domain_path,
                format!(
                    "the domain may change only in the same update that starts a CA rotation ({ANNOTATION_OPERATION}={})",
                    phase::START_TRIGGERS.join(" or ")
                ),
            ));
        }
    }
    if (domain_changed || internal_migration) && shoot.is_self_hosted() {
        errs.push(FieldError::forbidden(
            domain_path,
            "changing the domains of a self-hosted shoot is not supported yet",
        ));
    }
    let migration = (gate && domain_changed && starting) || internal_migration || state.roles.migrating();
    if migration && old.is_some_and(|o| o.providers.as_ref() != shoot.providers()) {
        errs.push(FieldError::forbidden(
            "spec.dns.providers",
            "the DNS providers must not change while a domain migration is requested or in progress",
        ));
    }
    if let (Some(o), Some(n)) = (old.and_then(|o| o.seed_name.as_deref()), shoot.spec.seed_name.as_deref()) {
        if o != n {
            errs.push(FieldError::invalid("spec.seedName", n, "field is immutable"));
        }
    }

    // The address the records point at is a runtime fact (the Seed annotation, else the seed's
    // ingress as read at plan time): the plan, not admission, refuses a Seed without one
    // (`super::dns::DnsError::NoAddress`).
    let mut seen = std::collections::BTreeSet::new();
    errs.retain(|e| seen.insert(e.to_string()));
    if errs.is_empty() {
        Ok(trigger)
    } else {
        Err(errs)
    }
}

/// `confirmation.gardener.cloud/migrate-internal-domain=true`, unless the last apply consumed it.
pub fn migrate_internal_confirmed(ds: &DomainsShoot, state: &DomainsState) -> bool {
    ds.shoot.migrate_internal_confirmed() && !state.consumed_migrate_internal_confirmation
}
