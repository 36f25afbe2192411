//! Gardener `Seed` manifests (`core.gardener.cloud/v1beta1`), as upstream's
//! `pkg/apis/core/v1beta1/types_seed.go` defines them (gardener/gardener, commit
//! b312835d1784c3628983205c05452b2eaa95b645).
//!
//! As for Shoots ([`crate::manifest`]): every struct is `deny_unknown_fields` (an unknown field is a
//! `file:line:col` error), every field defaults to its empty value (a missing one is for validation
//! to report), and the parts trellis does not interpret yet are [`Opaque`]. The fields the domains
//! work needs — `spec.provider`, `spec.dns`, `spec.ingress`, `spec.networks`, `spec.backup` — are
//! typed, with GEP-0066's `spec.dns.internalDomains` / `internalDomainEnabled` (read by the
//! [`crate::domains`] provider). [`crate::manifest::load`] returns Seeds beside the Shoots.

use serde::{Deserialize, Serialize};

use crate::manifest::{ObjectMeta, Opaque};

/// `core.gardener.cloud/v1beta1` `Seed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Seed {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: SeedSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Opaque>,
}

/// `spec` (`SeedSpec`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeedSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<Backup>,
    #[serde(default)]
    pub dns: SeedDns,
    #[serde(default)]
    pub networks: SeedNetworks,
    #[serde(default)]
    pub provider: SeedProvider,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<Ingress>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_restrictions: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Opaque>,
}

/// `spec.backup` (`Backup`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Backup {
    #[serde(default)]
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_ref: Option<ObjectReference>,
}

/// `spec.dns` (`SeedDNS`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeedDns {
    /// The DNS provider of the seed's ingress domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<SeedDnsProvider>,
    /// The seed's internal domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal: Option<SeedDnsProviderConfig>,
    /// The seed's default domains; the first that matches a Shoot wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defaults: Vec<SeedDnsProviderConfig>,
    /// GEP-0066 (gate `MutableShootDomains`): the seed's internal domains, the desired one first, then
    /// former ones that shoots not migrated yet may still use. Each entry is a provider config like
    /// `internal` (type, domain, zone, credentials), not a bare domain: the records of a former
    /// internal domain are still written (kept as `prior-internal`) and deleted through its own DNS
    /// provider, zone and credentials, and `internalDomains[0]` is kept in sync with `internal`, which
    /// is a provider config.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub internal_domains: Vec<SeedDnsProviderConfig>,
    /// GEP-0066 (gate `MutableShootDomains`): whether shoots get an internal domain; `None` is
    /// upstream's default, `true`.
    #[serde(default, deserialize_with = "crate::strict::opt_bool", skip_serializing_if = "Option::is_none")]
    pub internal_domain_enabled: Option<bool>,
}

impl SeedDns {
    /// The desired internal domain: `internalDomains[0]`, else `internal` (upstream defaults one from
    /// the other while both fields exist).
    pub fn desired_internal(&self) -> Option<&SeedDnsProviderConfig> {
        self.internal_domains.first().or(self.internal.as_ref())
    }

    /// `internalDomainEnabled`, defaulted to `true`.
    pub fn internal_domain_enabled(&self) -> bool {
        self.internal_domain_enabled.unwrap_or(true)
    }

    /// The internal domain config whose domain is `domain` (the desired one or a former one).
    pub fn internal_by_domain(&self, domain: &str) -> Option<&SeedDnsProviderConfig> {
        self.internal.iter().chain(&self.internal_domains).find(|c| c.domain.eq_ignore_ascii_case(domain))
    }
}

/// `spec.dns.provider` (`SeedDNSProvider`). Upstream's `secretRef` is tombstoned: the credentials
/// are named by `credentialsRef`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeedDnsProvider {
    /// E.g. `aws-route53`, `azure-dns`.
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_ref: Option<ObjectReference>,
}

/// `spec.dns.internal`, `spec.dns.defaults[]` (`SeedDNSProviderConfig`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeedDnsProviderConfig {
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub domain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(default)]
    pub credentials_ref: ObjectReference,
}

/// A `corev1.ObjectReference` (credentials: a Secret or a WorkloadIdentity).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
}

/// `spec.ingress` (`Ingress`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ingress {
    /// The ingress domain; immutable once set.
    #[serde(default)]
    pub domain: String,
    #[serde(default)]
    pub controller: IngressController,
}

/// `spec.ingress.controller` (`IngressController`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IngressController {
    /// E.g. `nginx`.
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<Opaque>,
}

/// `spec.networks` (`SeedNetworks`); seed and shoot networks must be disjoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeedNetworks {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    #[serde(default)]
    pub pods: String,
    #[serde(default)]
    pub services: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shoot_defaults: Option<ShootNetworks>,
    #[serde(default, rename = "blockCIDRs", skip_serializing_if = "Vec::is_empty")]
    pub block_cidrs: Vec<String>,
    /// `IPv4`, `IPv6`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_families: Vec<String>,
}

/// `spec.networks.shootDefaults` (`ShootNetworks`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShootNetworks {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<String>,
}

/// `spec.provider` (`SeedProvider`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeedProvider {
    /// The seed's infrastructure provider, e.g. `azure`.
    #[serde(default, rename = "type")]
    pub type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<Opaque>,
    #[serde(default)]
    pub region: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
}
