//! What the domains provider reads of a Shoot ([`ShootView`]) and its input ([`DomainsShoot`]: the
//! Shoot paired with its Seed under the feature gates of the plan).
//!
//! [`ShootView`] is a *view*: it reads the parts of a `core.gardener.cloud/v1beta1` Shoot that
//! GEP-0066 is about and ignores the rest (the infrastructure provider's loader is strict about the
//! whole document; this view is read from that provider's `to_json()` or from the raw document).
//! The fields it reads keep the strict rules of [`crate::manifest`]: a wrong type is an error.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::features::Features;
use crate::manifest::{Dns, ObjectMeta};
use crate::seed::Seed;

/// `gardener.cloud/operation`.
pub const ANNOTATION_OPERATION: &str = "gardener.cloud/operation";
/// `confirmation.gardener.cloud/migrate-internal-domain` (GEP-0066; value `true`).
pub const ANNOTATION_MIGRATE_INTERNAL_DOMAIN: &str = "confirmation.gardener.cloud/migrate-internal-domain";
/// `authentication.gardener.cloud/issuer` (value `managed`: the managed service-account issuer).
pub const ANNOTATION_ISSUER: &str = "authentication.gardener.cloud/issuer";
/// The Seed annotation naming the address the shoots' API-server DNS records point at (the seed's
/// istio-ingress load balancer upstream, which no Seed field carries): an IPv4 address (`A`), an IPv6
/// address (`AAAA`) or a hostname (`CNAME`). A trellis input, documented in
/// `docs/usage/domain-migration.md`.
pub const ANNOTATION_API_SERVER_ADDRESS: &str = "trellis.gardener.cloud/api-server-address";

/// A Shoot as the domains provider reads it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShootView {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ShootViewSpec,
    #[serde(default)]
    pub status: ShootViewStatus,
}

/// The parts of `spec` read here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShootViewSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_name: Option<String>,
    #[serde(default)]
    pub kubernetes: Kubernetes,
    #[serde(default)]
    pub provider: ProviderView,
}

/// `spec.kubernetes` (the service-account config only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kubernetes {
    #[serde(default, rename = "kubeAPIServer", skip_serializing_if = "Option::is_none")]
    pub kube_api_server: Option<KubeApiServer>,
}

/// `spec.kubernetes.kubeAPIServer`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeApiServer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_config: Option<ServiceAccountConfig>,
}

/// `spec.kubernetes.kubeAPIServer.serviceAccountConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_issuers: Vec<String>,
}

/// `spec.provider` (the workers' names and `controlPlane` only: a worker pool with `controlPlane` makes
/// the shoot self-hosted, upstream's `IsShootSelfHosted`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderView {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerView>,
}

/// `spec.provider.workers[]` (name and `controlPlane`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerView {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<Value>,
}

/// The parts of `status` read here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShootViewStatus {
    #[serde(default, rename = "technicalID", skip_serializing_if = "Option::is_none")]
    pub technical_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Credentials>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advertised_addresses: Vec<AdvertisedAddress>,
}

/// `status.credentials`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation: Option<Rotation>,
}

/// `status.credentials.rotation`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rotation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authorities: Option<CaRotation>,
}

/// `status.credentials.rotation.certificateAuthorities` (the phase only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaRotation {
    /// `""` (upstream's zero value) and absent both mean never rotated.
    #[serde(default, deserialize_with = "empty_is_none", skip_serializing_if = "Option::is_none")]
    pub phase: Option<super::phase::Phase>,
}

fn empty_is_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<super::phase::Phase>, D::Error> {
    match Option::<String>::deserialize(d)?.as_deref() {
        None | Some("") => Ok(None),
        Some(s) => super::phase::Phase::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(s)).map(Some),
    }
}

/// `status.advertisedAddresses[]` (`ShootAdvertisedAddress`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdvertisedAddress {
    pub name: String,
    pub url: String,
}

impl ShootView {
    /// `metadata.annotations`.
    pub fn annotations(&self) -> &BTreeMap<String, String> {
        &self.metadata.annotations
    }

    /// The project: the namespace without its `garden-` prefix.
    pub fn project(&self) -> &str {
        crate::metadata::project_of(&self.metadata.namespace)
    }

    /// `status.technicalID`, else `shoot--<project>--<name>`.
    pub fn technical_id(&self) -> String {
        match &self.status.technical_id {
            Some(id) if !id.is_empty() => id.clone(),
            _ => format!("shoot--{}--{}", self.project(), self.metadata.name),
        }
    }

    /// `spec.dns.domain`, if set and not empty.
    pub fn domain(&self) -> Option<&str> {
        self.spec.dns.as_ref().and_then(|d| d.domain.as_deref()).filter(|d| !d.is_empty())
    }

    /// `spec.dns.providers`, as written (`None` when absent or empty).
    pub fn providers(&self) -> Option<&Value> {
        self.spec.dns.as_ref().and_then(|d| d.providers.as_ref()).filter(|p| !p.is_null())
    }

    /// Whether a worker pool carries `controlPlane` (upstream's `IsShootSelfHosted`).
    pub fn is_self_hosted(&self) -> bool {
        self.spec.provider.workers.iter().any(|w| w.control_plane.is_some())
    }

    /// `spec.kubernetes.kubeAPIServer.serviceAccountConfig`.
    pub fn service_account_config(&self) -> Option<&ServiceAccountConfig> {
        self.spec.kubernetes.kube_api_server.as_ref()?.service_account_config.as_ref()
    }

    /// Whether `authentication.gardener.cloud/issuer=managed` is set.
    pub fn managed_issuer(&self) -> bool {
        self.annotations().get(ANNOTATION_ISSUER).is_some_and(|v| v == "managed")
    }

    /// `status.credentials.rotation.certificateAuthorities.phase` (`None`: never rotated).
    pub fn ca_phase(&self) -> Option<super::phase::Phase> {
        self.status.credentials.as_ref()?.rotation.as_ref()?.certificate_authorities.as_ref()?.phase
    }

    /// Whether `confirmation.gardener.cloud/migrate-internal-domain=true` is set.
    pub fn migrate_internal_confirmed(&self) -> bool {
        self.annotations().get(ANNOTATION_MIGRATE_INTERNAL_DOMAIN).is_some_and(|v| v == "true")
    }
}

/// The input of a domains plan: a Shoot paired with its Seed, under the feature gates of the plan
/// ([`super::pair`]). Its JSON form (a plan file's `source.shoot`) is `{"shoot", "seed", "features"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainsShoot {
    pub shoot: ShootView,
    pub seed: Seed,
    pub features: Features,
}

impl crate::provider::ProviderShoot for DomainsShoot {
    fn metadata(&self) -> &ObjectMeta {
        &self.shoot.metadata
    }

    fn technical_id(&self) -> String {
        self.shoot.technical_id()
    }

    fn to_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
