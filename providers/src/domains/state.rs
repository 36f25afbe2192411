//! What the domains provider remembers about a shoot between runs ([`DomainsState`]), typed and
//! versioned ([`VersionedState`]). **The state is the truth** of the phase and of the domain in each
//! role: it is what trellis last applied. The manifest's `status` (CA-rotation phase, advertised
//! addresses) is read only for a shoot trellis has not applied yet (adoption); afterwards it is
//! what Gardener reports and may lag.
//!
//! Versions:
//! - **1**: [`DomainsState`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use trellis_state::{Migration, VersionedState};

use super::model::Roles;
use super::phase::Phase;

/// The domains provider's state of one shoot (version 1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DomainsState {
    /// The CA-rotation phase after the last apply; `None`: never rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The domains in each role after the last apply, with the DNSRecord objects that serve them.
    #[serde(default)]
    pub roles: Roles,
    /// The shoot as last applied (the old object of an update); `None` before the first apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied: Option<LastApplied>,
    /// The `gardener.cloud/operation` value the last apply consumed. Upstream's gardenlet removes the
    /// annotation once it acted on it; trellis cannot edit the user's manifest, so a manifest that
    /// still carries this value is read as without it (a re-plan is a no-op, not a second start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumed_operation: Option<String>,
    /// Whether the last apply consumed `confirmation.gardener.cloud/migrate-internal-domain=true` (it
    /// started an internal-domain migration): while the manifest still carries it, it is not read
    /// again; it counts anew once it was removed from the manifest (a plan without it) and set again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub consumed_migrate_internal_confirmation: bool,
}

/// The parts of the Shoot the update rules compare against.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LastApplied {
    /// `spec.dns.domain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// `spec.dns.providers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Value>,
    /// `spec.seedName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_name: Option<String>,
}

impl DomainsState {
    /// The internal cluster domains the shoot uses after the last apply: its `internal` and
    /// `prior-internal` roles (what the Seed rule "no `internalDomains` entry removed while a shoot
    /// still uses it" reads, [`super::check_seed`]).
    pub fn internal_in_use(&self) -> Vec<&str> {
        [&self.roles.internal, &self.roles.prior_internal].into_iter().flatten().map(|e| e.domain.as_str()).collect()
    }

    /// What `trellis state show` prints of it: the phase, then each role's domain and DNSRecord object,
    /// one `key: value` line each.
    pub fn describe(&self) -> Vec<String> {
        let mut out = vec![format!("phase: {}", self.phase.map_or("none (never rotated)", Phase::as_str))];
        for (role, e) in self.roles.all() {
            let record = e.record.as_deref().map_or("no record (unmanaged)".to_string(), |r| format!("DNSRecord {r}"));
            out.push(format!("{}: {} ({record})", role.as_str(), e.domain));
        }
        out
    }
}

impl VersionedState for DomainsState {
    const PROVIDER: &'static str = "domains";
    const MIGRATIONS: &'static [Migration] = &[];
}
