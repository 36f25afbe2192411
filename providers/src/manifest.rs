//! Gardener `Shoot` and `Seed` manifests (`core.gardener.cloud/v1beta1`), parsed into typed objects.
//!
//! Every struct here is `deny_unknown_fields`, and every field defaults to its empty value, as
//! upstream's Go types do: a missing field is for validation to report (with upstream's field
//! error), an unknown field or a wrong type is a parse error with file, line and column. Bool and
//! integer fields read through [`crate::strict`]: a quoted value is a string, as in Kubernetes.
//! Parts trellis does not interpret are [`Opaque`]: any YAML is accepted there and kept.
//!
//! [`load`] reads files and directories (a directory is a fleet: its `*.yaml`/`*.yml` files,
//! sorted, not recursive; an entry of that name that cannot be read as a file, such as a dangling
//! symbolic link or a directory, is an error naming it, never skipped); a file may hold several
//! documents separated by `---`. The common file — one document, a Shoot of a registered
//! provider with that provider's infrastructureConfig type — is read in one pass into a
//! [`ShootEnvelope`] (its infrastructureConfig kept as any YAML), which the provider then types
//! ([`provider::Provider::shoot_from_envelope`]); any other file, and any file that pass cannot
//! read, goes the general way, so every error and every other result is the general path's. There,
//! each document is read over the original text, so that every location points into the file as
//! written: the split pass (the YAML parser's events, which find
//! the documents and, for a plainly written head, `apiVersion`, `kind`, `spec.provider.type` and the
//! infrastructureConfig's `apiVersion`/`kind`), a light pass for those only when the split pass could
//! not read them safely, then the typed pass: a [`Seed`], or a Shoot parsed by the provider the
//! registry names for its type ([`crate::registry`]). Then every Shoot's name and
//! namespace are checked ([`crate::metadata::validate`]) before anything computes its technical id.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

use crate::field::ErrorList;
use crate::metadata;
use crate::provider::{self, ProviderShoot};
use crate::registry::{Registry, UnknownProvider};
pub use crate::seed::Seed;
use crate::strict::expected_in_words;

/// `apiVersion` of a Shoot.
pub const SHOOT_API_VERSION: &str = "core.gardener.cloud/v1beta1";
/// `kind` of a Shoot.
pub const SHOOT_KIND: &str = "Shoot";
/// `apiVersion` of a Seed.
pub const SEED_API_VERSION: &str = "core.gardener.cloud/v1beta1";
/// `kind` of a Seed.
pub const SEED_KIND: &str = "Seed";

/// Any YAML, kept as parsed (the parts of a manifest trellis does not interpret).
pub type Opaque = serde_json::Value;

/// `core.gardener.cloud/v1beta1` `Shoot`; `C` is the provider's `InfrastructureConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Shoot<C> {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ShootSpec<C>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Opaque>,
}

/// `metadata` (`metav1.ObjectMeta`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Opaque>,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_fields: Option<Opaque>,
}

/// `spec` (`ShootSpec`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShootSpec<C> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_profile_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_profile: Option<Opaque>,
    #[serde(default)]
    pub region: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_binding_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_binding_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_selector: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<Opaque>,
    #[serde(default)]
    pub networking: Networking,
    #[serde(default)]
    pub provider: Provider<C>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hibernation: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addons: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure_class_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_components: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_restrictions: Option<Opaque>,
}

/// `spec.networking`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Networking {
    /// The CNI: `cilium`, `calico`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The CNI's provider config; trellis reads `overlay.enabled` only
    /// ([`Shoot::overlay_enabled`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<String>,
    /// `IPv4`, `IPv6`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_families: Vec<String>,
}

/// `spec.provider`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Provider<C> {
    #[serde(default, rename = "type")]
    pub type_: String,
    /// The provider's `InfrastructureConfig` (its `apiVersion`/`kind` are checked by [`load`]).
    #[serde(default)]
    pub infrastructure_config: C,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_config: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<Worker>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers_settings: Option<Opaque>,
}

/// `spec.provider.workers[]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Worker {
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "crate::strict::int")]
    pub minimum: i32,
    #[serde(default, deserialize_with = "crate::strict::int")]
    pub maximum: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// `AutoRollingUpdate` (default), `AutoInPlaceUpdate`, `ManualInPlaceUpdate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cri: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<Opaque>,
    /// The root disk; provider-azure requires it (`ValidateWorkers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<Volume>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_volumes: Vec<DataVolume>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet_data_volume_name: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_components: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_controller_manager: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysctls: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_autoscaler: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Opaque>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<Opaque>,
}

/// `spec.provider.workers[].volume` (`Volume`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Volume {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// `size` (upstream's `VolumeSize`), e.g. `50Gi`.
    #[serde(default)]
    pub size: String,
    #[serde(default, deserialize_with = "crate::strict::opt_bool", skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
}

/// `spec.provider.workers[].dataVolumes[]` (`DataVolume`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DataVolume {
    #[serde(default)]
    pub name: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// `size` (upstream's `VolumeSize`).
    #[serde(default)]
    pub size: String,
    #[serde(default, deserialize_with = "crate::strict::opt_bool", skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
}

impl Worker {
    /// Gardener's `IsUpdateStrategyInPlace`: `AutoInPlaceUpdate` or `ManualInPlaceUpdate`.
    pub fn has_in_place_update_strategy(&self) -> bool {
        matches!(self.update_strategy.as_deref(), Some("AutoInPlaceUpdate" | "ManualInPlaceUpdate"))
    }
}

/// `spec.dns`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Dns {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Opaque>,
}

impl<C> Shoot<C> {
    /// The project: the namespace without its `garden-` prefix (namespace `garden` is project `garden`).
    pub fn project(&self) -> &str {
        crate::metadata::project_of(&self.metadata.namespace)
    }

    /// `shoot--<project>--<name>`: the seed namespace and upstream's technical name.
    pub fn technical_id(&self) -> String {
        format!("shoot--{}--{}", self.project(), self.metadata.name)
    }

    /// `spec.networking.providerConfig.overlay.enabled` (false when absent or not a bool).
    pub fn overlay_enabled(&self) -> bool {
        self.spec
            .networking
            .provider_config
            .as_ref()
            .and_then(|c| c.pointer("/overlay/enabled"))
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }

    /// `metadata.annotations[key]`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata.annotations.get(key).map(String::as_str)
    }

    /// Σ `spec.provider.workers[].maximum` (upstream's `maxNodes`).
    pub fn max_nodes(&self) -> i64 {
        self.spec.provider.workers.iter().map(|w| i64::from(w.maximum)).sum()
    }

    /// Whether a worker pool uses an in-place update strategy.
    pub fn has_worker_with_in_place_update(&self) -> bool {
        self.spec.provider.workers.iter().any(Worker::has_in_place_update_strategy)
    }
}

/// A Shoot whose `spec.provider.infrastructureConfig` is still any YAML: what the loader's one pass
/// reads a plainly written single-document file into, before the provider types the config
/// ([`provider::Provider::shoot_from_envelope`]).
pub type ShootEnvelope = Shoot<Opaque>;

impl ShootEnvelope {
    /// The same Shoot with its infrastructureConfig read as a `C` (from the JSON the YAML parser
    /// made of it: a quoted scalar is a string there too, so [`crate::strict`] fields read it as the
    /// typed pass does). An error carries no location: the loader then reads the document again
    /// with the typed pass, whose error has one.
    pub fn with_infrastructure_config<C: DeserializeOwned>(self) -> Result<Shoot<C>, serde_json::Error> {
        self.map_config(serde_json::from_value)
    }
}

impl<A> Shoot<A> {
    /// The same Shoot with its `spec.provider.infrastructureConfig` turned into a `B` by `f`; every
    /// other field is moved as it is.
    pub fn map_config<B, E>(self, f: impl FnOnce(A) -> Result<B, E>) -> Result<Shoot<B>, E> {
        let Shoot { api_version, kind, metadata, spec, status } = self;
        Ok(Shoot { api_version, kind, metadata, spec: spec.map_config(f)?, status })
    }
}

impl<A> ShootSpec<A> {
    /// The same spec with its provider's infrastructureConfig turned into a `B` by `f`.
    pub fn map_config<B, E>(self, f: impl FnOnce(A) -> Result<B, E>) -> Result<ShootSpec<B>, E> {
        Ok(ShootSpec {
            provider: self.provider.map_config(f)?,
            cloud_profile_name: self.cloud_profile_name,
            cloud_profile: self.cloud_profile,
            region: self.region,
            secret_binding_name: self.secret_binding_name,
            credentials_binding_name: self.credentials_binding_name,
            seed_name: self.seed_name,
            seed_selector: self.seed_selector,
            purpose: self.purpose,
            kubernetes: self.kubernetes,
            networking: self.networking,
            dns: self.dns,
            maintenance: self.maintenance,
            hibernation: self.hibernation,
            addons: self.addons,
            extensions: self.extensions,
            resources: self.resources,
            tolerations: self.tolerations,
            exposure_class_name: self.exposure_class_name,
            control_plane: self.control_plane,
            system_components: self.system_components,
            scheduler_name: self.scheduler_name,
            monitoring: self.monitoring,
            access_restrictions: self.access_restrictions,
        })
    }
}

impl<A> Provider<A> {
    /// The same provider section with its infrastructureConfig turned into a `B` by `f`.
    pub fn map_config<B, E>(self, f: impl FnOnce(A) -> Result<B, E>) -> Result<Provider<B>, E> {
        let Provider { type_, infrastructure_config, control_plane_config, workers, workers_settings } = self;
        Ok(Provider {
            type_,
            infrastructure_config: f(infrastructure_config)?,
            control_plane_config,
            workers,
            workers_settings,
        })
    }
}

/// One Shoot document of one file, parsed by its provider.
pub struct LoadedShoot {
    pub file: PathBuf,
    /// 0-based position of the document in its file (messages count from 1).
    pub doc_index: usize,
    /// The provider of its `spec.provider.type`, the only one that reads `shoot`.
    pub provider: &'static dyn provider::Provider,
    pub shoot: Box<dyn ProviderShoot>,
}

impl LoadedShoot {
    /// `spec.provider.type`.
    pub fn provider_type(&self) -> &'static str {
        self.provider.type_name()
    }

    /// `shoot--<project>--<name>`.
    pub fn technical_id(&self) -> String {
        self.shoot.technical_id()
    }

    pub fn metadata(&self) -> &ObjectMeta {
        self.shoot.metadata()
    }
}

impl fmt::Debug for LoadedShoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedShoot")
            .field("file", &self.file)
            .field("doc_index", &self.doc_index)
            .field("provider", &self.provider.type_name())
            .field("shoot", &self.shoot)
            .finish()
    }
}

/// One Seed document of one file.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedSeed {
    pub file: PathBuf,
    /// 0-based position of the document in its file (messages count from 1).
    pub doc_index: usize,
    pub seed: Seed,
}

/// A Shoot no infrastructure plan is attempted for: its `spec.provider.type` names no infrastructure
/// provider of trellis (`aws`, …), or it has no `spec.provider.infrastructureConfig`. It loads only
/// when its Seed (`spec.seedName`) is among the inputs, and then gets its domains plan only; without
/// its Seed, [`load`] refuses it with `refusal`, the error such a Shoot has always been refused with.
#[derive(Debug)]
pub struct DomainsOnlyShoot {
    pub file: PathBuf,
    /// 0-based position of the document in its file (messages count from 1).
    pub doc_index: usize,
    /// The Shoot, its infrastructureConfig (if any) kept as any YAML.
    pub shoot: ShootEnvelope,
    /// Why no infrastructure plan is attempted, for the user's note (`spec.provider.type "aws": …`).
    pub reason: String,
    /// What [`load`] returns when the Shoot's Seed is not among the inputs.
    pub refusal: ManifestError,
}

/// What manifests hold: Shoots (by provider), Shoots that get a domains plan only, and Seeds, each
/// in path, file and document order.
#[derive(Debug, Default)]
pub struct Loaded {
    pub shoots: Vec<LoadedShoot>,
    /// Shoots without an infrastructure plan ([`DomainsOnlyShoot`]). After [`load`], each has its
    /// Seed among [`Loaded::seeds`]; from [`load_file`] / [`parse_str`], not yet checked.
    pub domains_only: Vec<DomainsOnlyShoot>,
    pub seeds: Vec<LoadedSeed>,
}

impl Loaded {
    /// How many documents were read: Shoots (with an infrastructure plan or not) and Seeds.
    pub fn documents(&self) -> usize {
        self.shoots.len() + self.domains_only.len() + self.seeds.len()
    }
}

/// Where a document is: `file` alone, or `file: document N` when the file holds several.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocRef {
    pub file: PathBuf,
    /// 0-based.
    pub doc_index: usize,
    /// Whether the file holds several documents (then messages name the document).
    pub multi: bool,
}

impl fmt::Display for DocRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.multi {
            write!(f, " (document {})", self.doc_index + 1)?;
        }
        Ok(())
    }
}

/// What to do about a path that cannot be read, when the error itself does not say (the size limit's
/// message does).
fn path_hint(cause: &std::io::Error) -> &'static str {
    match cause.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => "; check the path given with -f",
        std::io::ErrorKind::PermissionDenied => "; check the path given with -f and that trellis may read it",
        _ => "",
    }
}

/// Why manifests could not be loaded. Each renders as one line for the user.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A path given with `-f` (or a file of a directory given so) that cannot be read.
    #[error("cannot read {}: {cause}{}", path.display(), path_hint(cause))]
    Io { path: PathBuf, cause: std::io::Error },
    /// Malformed YAML, an unknown field, a wrong type, a duplicate key.
    #[error("{}:{line}:{column}: {}{message}", file.display(), doc_prefix(*doc))]
    Parse {
        file: PathBuf,
        line: u64,
        column: u64,
        /// 0-based document, when the file holds several.
        doc: Option<usize>,
        message: String,
    },
    /// A document of another `apiVersion`/`kind` than a Shoot or a Seed.
    #[error(
        "{}: document {}: expected apiVersion {SHOOT_API_VERSION}, kind {SHOOT_KIND} or {SEED_KIND}; found {} {}",
        file.display(), doc + 1, or_none(api_version), or_none(kind)
    )]
    UnsupportedKind { file: PathBuf, doc: usize, api_version: String, kind: String },
    /// A Shoot whose `spec.provider.type` no registered provider handles (or that sets none).
    #[error("{}: document {}: spec.provider.type: {unknown}", file.display(), doc + 1)]
    UnsupportedProvider { file: PathBuf, doc: usize, unknown: UnknownProvider },
    #[error(
        "{}: document {}: spec.provider.infrastructureConfig: expected apiVersion {}, kind {} for provider {}; found {}",
        file.display(), doc + 1, provider.infrastructure_config_type().0, provider.infrastructure_config_type().1, provider.type_name(),
        if api_version.is_empty() && kind.is_empty() { "none (the infrastructureConfig is missing or has neither apiVersion nor kind)".to_string() } else { format!("{} {}", or_none(api_version), or_none(kind)) }
    )]
    InfrastructureConfig {
        file: PathBuf,
        doc: usize,
        /// The Shoot's provider ([`provider::Provider::infrastructure_config_type`]: what it reads).
        provider: &'static dyn provider::Provider,
        api_version: String,
        kind: String,
    },
    #[error("{}: no *.yaml or *.yml files in this directory", dir.display())]
    EmptyDir { dir: PathBuf },
    /// `*.yaml`/`*.yml` entries of a fleet directory that cannot be read as files, one line each.
    #[error("{}", escaped_lines(entries.iter().map(|e| e.to_string())))]
    UnreadableEntries { entries: Vec<UnreadableEntry> },
    #[error("no Shoot manifests found in {}", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoManifests { paths: Vec<PathBuf> },
    #[error("duplicate shoot {technical_id}: defined in {first} and in {second}")]
    DuplicateShoot { technical_id: String, first: DocRef, second: DocRef },
    /// Two Seeds of one name: a Shoot's `spec.seedName` could name either.
    #[error("duplicate seed {name:?}: defined in {first} and in {second}; each Seed must appear once")]
    DuplicateSeed { name: String, first: DocRef, second: DocRef },
    /// Shoots whose `metadata.name` / `metadata.namespace` break Gardener's rules ([`metadata::validate`]):
    /// per document a header line, then its field errors one per line.
    #[error("{}", invalid_metadata_lines(failures))]
    InvalidMetadata { failures: Vec<(DocRef, ErrorList)> },
}

fn invalid_metadata_lines(failures: &[(DocRef, ErrorList)]) -> String {
    let mut lines = Vec::new();
    for (doc, errs) in failures {
        lines.push(format!("{doc}: {} validation error(s) in the shoot's name:", errs.len()));
        lines.extend(errs.iter().map(|e| e.to_string()));
    }
    escaped_lines(lines)
}

/// The lines of a list error, each escaped (a newline inside one — a path, a name — is shown as
/// `\n`), joined by the list's own line breaks.
fn escaped_lines(lines: impl IntoIterator<Item = String>) -> String {
    lines.into_iter().map(|l| trellis_plans::escape::text(&l).into_owned()).collect::<Vec<_>>().join("\n")
}

impl ManifestError {
    /// Whether the error is a list, one fact a line (its text's only line breaks are the list's).
    pub fn is_list(&self) -> bool {
        matches!(self, ManifestError::UnreadableEntries { .. } | ManifestError::InvalidMetadata { .. })
    }
}

/// A `*.yaml`/`*.yml` entry of a fleet directory that is not a readable file.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableEntry {
    /// It cannot be inspected: a dangling or looping symbolic link, permission denied, an I/O error.
    #[error(
        "{}: cannot read it: {}{cause}; fix or remove it, or move it out of {}",
        path.display(),
        link.as_ref().map(|l| format!("it is a symbolic link to {}: ", l.display())).unwrap_or_default(),
        dir.display()
    )]
    Io { dir: PathBuf, path: PathBuf, link: Option<PathBuf>, cause: std::io::Error },
    #[error(
        "{}: is a directory, not a manifest file (a fleet directory is not read recursively); rename it or move it out of {}",
        path.display(),
        dir.display()
    )]
    Directory { dir: PathBuf, path: PathBuf },
    /// A socket, a FIFO, a device: reading it could block or never end.
    #[error("{}: is not a regular file; rename it or move it out of {}", path.display(), dir.display())]
    NotAFile { dir: PathBuf, path: PathBuf },
}

fn doc_prefix(doc: Option<usize>) -> String {
    doc.map(|d| format!("document {}: ", d + 1)).unwrap_or_default()
}

/// A value read from the manifest, for a one-line message: `<none>` when empty, control characters
/// escaped (a plain scalar may span lines: `kind: InfrastructureConfig` with a line after it is
/// `InfrastructureConfig\nwo`).
fn or_none(s: &str) -> std::borrow::Cow<'_, str> {
    if s.is_empty() {
        "<none>".into()
    } else {
        trellis_plans::escape::text(s)
    }
}

/// Loads every Shoot of `paths` (files, or directories of `*.yaml`/`*.yml`, not recursive).
///
/// Documents come in path order, then file order (a directory's files sorted by name), then
/// document order. Empty documents are skipped. Every Shoot's `metadata.name` and
/// `metadata.namespace` are checked ([`metadata::validate`]) before its technical id is used; the
/// errors of all documents come at once. Two documents with the same technical id are an error
/// naming both. Shoots are dispatched by `spec.provider.type` through [`Registry::builtin`]
/// ([`load_with`] takes another registry).
pub fn load(paths: &[PathBuf]) -> Result<Loaded, ManifestError> {
    load_with(Registry::builtin(), paths)
}

/// [`load`], dispatching Shoots through `registry`.
pub fn load_with(registry: &Registry, paths: &[PathBuf]) -> Result<Loaded, ManifestError> {
    let files = list_files(paths)?;
    // Each Shoot with whether its file holds several documents and its file's position.
    let mut shoots: Vec<(LoadedShoot, bool, usize)> = Vec::new();
    let mut domains_only: Vec<(DomainsOnlyShoot, bool, usize)> = Vec::new();
    let mut seeds = Vec::new();
    for (f, file) in files.iter().enumerate() {
        let docs = load_file_with(registry, file)?;
        let multi = docs.documents() > 1;
        shoots.extend(docs.shoots.into_iter().map(|d| (d, multi, f)));
        domains_only.extend(docs.domains_only.into_iter().map(|d| (d, multi, f)));
        seeds.extend(docs.seeds);
    }
    // A Shoot without an infrastructure plan needs its Seed among the inputs (its domains plan).
    if let Some(i) = domains_only.iter().position(|(d, _, _)| {
        let seed = d.shoot.spec.seed_name.as_deref().unwrap_or_default();
        seed.is_empty() || !seeds.iter().any(|s| s.seed.metadata.name == seed)
    }) {
        return Err(domains_only.swap_remove(i).0.refusal);
    }
    if shoots.is_empty() && domains_only.is_empty() && seeds.is_empty() {
        return Err(ManifestError::NoManifests { paths: paths.to_vec() });
    }

    // Every Shoot's name, where it is and (a closure: computed only from valid names) its technical
    // id, in file then document order.
    let here = |file: &Path, doc_index: usize, multi: bool| DocRef { file: file.to_path_buf(), doc_index, multi };
    type Doc<'a> = (usize, &'a ObjectMeta, DocRef, Box<dyn Fn() -> String + 'a>);
    let mut docs: Vec<Doc<'_>> = shoots
        .iter()
        .map(|(d, multi, f)| -> Doc<'_> {
            (*f, d.metadata(), here(&d.file, d.doc_index, *multi), Box::new(|| d.technical_id()))
        })
        .chain(domains_only.iter().map(|(d, multi, f)| -> Doc<'_> {
            (*f, &d.shoot.metadata, here(&d.file, d.doc_index, *multi), Box::new(|| d.shoot.technical_id()))
        }))
        .collect();
    docs.sort_by_key(|(f, _, here, _)| (*f, here.doc_index));
    let failures: Vec<(DocRef, ErrorList)> = docs
        .iter()
        .map(|(_, meta, here, _)| (here.clone(), metadata::validate(meta)))
        .filter(|(_, errs)| !errs.is_empty())
        .collect();
    if !failures.is_empty() {
        return Err(ManifestError::InvalidMetadata { failures });
    }

    let mut seen: BTreeMap<String, DocRef> = BTreeMap::new();
    for (_, _, here, id) in docs {
        let id = id();
        if let Some(first) = seen.get(&id) {
            return Err(ManifestError::DuplicateShoot { technical_id: id, first: first.clone(), second: here });
        }
        seen.insert(id, here);
    }
    Ok(Loaded {
        shoots: shoots.into_iter().map(|(d, _, _)| d).collect(),
        domains_only: domains_only.into_iter().map(|(d, _, _)| d).collect(),
        seeds,
    })
}

/// A Shoot of [`Loaded::shoots`] paired with the Seed of [`Loaded::seeds`] it runs on (indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedPair {
    pub shoot: usize,
    pub seed: usize,
}

/// A Shoot whose `spec.seedName` names none of the loaded Seeds (or is unset) while Seeds were given:
/// it gets no domains plan, only its infrastructure one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unpaired {
    pub shoot: usize,
    /// `spec.seedName` (empty: not set).
    pub seed_name: String,
}

/// How the loaded Shoots pair with the loaded Seeds: [`pair_seeds`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairing {
    /// In shoot order.
    pub pairs: Vec<SeedPair>,
    /// In shoot order; empty when no Seed was loaded (nothing to pair with, nothing to say).
    pub unpaired: Vec<Unpaired>,
}

/// Seed↔Shoot pairing, after loading: a Shoot runs on the Seed whose `metadata.name` is its
/// `spec.seedName` (names compared exactly, as Kubernetes does). Without Seeds nothing is read and
/// the pairing is empty. Two Seeds of the same name are an error naming both.
pub fn pair_seeds(loaded: &Loaded) -> Result<Pairing, ManifestError> {
    let mut pairing = Pairing::default();
    if loaded.seeds.is_empty() {
        return Ok(pairing);
    }
    let multi = |file: &Path| {
        loaded.shoots.iter().filter(|s| s.file == file).count() + loaded.seeds.iter().filter(|s| s.file == file).count()
            > 1
    };
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, seed) in loaded.seeds.iter().enumerate() {
        if let Some(&first) = by_name.get(seed.seed.metadata.name.as_str()) {
            let doc = |s: &LoadedSeed| DocRef { file: s.file.clone(), doc_index: s.doc_index, multi: multi(&s.file) };
            return Err(ManifestError::DuplicateSeed {
                name: seed.seed.metadata.name.clone(),
                first: doc(&loaded.seeds[first]),
                second: doc(seed),
            });
        }
        by_name.insert(&seed.seed.metadata.name, i);
    }
    for (i, shoot) in loaded.shoots.iter().enumerate() {
        let seed_name = seed_name_of(shoot.shoot.as_ref());
        match by_name.get(seed_name.as_str()) {
            Some(&seed) if !seed_name.is_empty() => pairing.pairs.push(SeedPair { shoot: i, seed }),
            _ => pairing.unpaired.push(Unpaired { shoot: i, seed_name }),
        }
    }
    Ok(pairing)
}

/// A loaded Shoot's `spec.seedName` (empty when unset).
pub fn seed_name_of(shoot: &dyn ProviderShoot) -> String {
    shoot
        .to_json()
        .ok()
        .and_then(|json| json.pointer("/spec/seedName").and_then(serde_json::Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

/// The files `paths` name, in the order [`load`] reads them: each path as given, a directory's
/// `*.yaml`/`*.yml` files sorted by name (not recursive). A file reached twice — the same path given
/// twice, a directory and a file in it (`-f shoots -f shoots/web.yaml`), two spellings of its
/// directory (`./shoots/../shoots/web.yaml`, a linked directory) — is listed once, where it is first
/// reached: its Shoots are not duplicates of themselves. (A file that is a symbolic link to another
/// is a file of its own, as before: its Shoots are duplicates.) Only lists and inspects; reads no
/// file, so a fleet's order is known before anything is parsed. Errors as [`load`]'s for the same
/// paths.
pub fn list_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ManifestError> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|cause| ManifestError::Io { path: path.clone(), cause })?;
        if meta.is_dir() {
            files.extend(fleet_files(path)?);
        } else {
            files.push(path.clone());
        }
    }
    // Which file a path is: its directory's canonical path and its name — one `realpath` per
    // directory, not per file of a fleet (a directory that cannot be resolved is kept as written,
    // and reading the file reports why). A file that is itself a symbolic link stays its own entry.
    let mut dirs: std::collections::HashMap<PathBuf, PathBuf> = std::collections::HashMap::new();
    let mut seen = std::collections::HashSet::new();
    files.retain(|file| {
        let key = match (file.parent(), file.file_name()) {
            (Some(dir), Some(name)) => {
                let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
                if !dirs.contains_key(dir) {
                    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
                    dirs.insert(dir.to_path_buf(), canonical);
                }
                dirs[dir].join(name)
            }
            _ => file.clone(),
        };
        seen.insert(key)
    });
    Ok(files)
}

/// Reads and parses one manifest file ([`parse_str`] of its text).
pub fn load_file(file: &Path) -> Result<Loaded, ManifestError> {
    load_file_with(Registry::builtin(), file)
}

/// [`load_file`], dispatching Shoots through `registry`.
pub fn load_file_with(registry: &Registry, file: &Path) -> Result<Loaded, ManifestError> {
    let text = read_input(file).map_err(|cause| ManifestError::Io { path: file.to_path_buf(), cause })?;
    parse_str_with(registry, file, &text)
}

/// The most bytes trellis reads of a file a user names: a manifest (`-f`), a world file (`--world`), a
/// plan file (`show`, `apply`, `diff`), a workspace file (`state push`). A plan of 10,000 applied
/// shoots is ~250 MB; a path that names the wrong thing (a device, a pipe that never ends, a
/// multi-gigabyte log) stops here instead of filling memory until the system kills the process.
pub const MAX_INPUT_BYTES: u64 = 1 << 30;

/// The text of the file at `path`, read whole: [`std::fs::read_to_string`] that stops after
/// [`MAX_INPUT_BYTES`] with an error ([`std::io::ErrorKind::FileTooLarge`]) saying so. The caller names
/// the path in its error, as for any other read error.
pub fn read_input(path: &Path) -> std::io::Result<String> {
    read_at_most(path, MAX_INPUT_BYTES)
}

fn read_at_most(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read as _;
    // Bytes first: a cut through a character of a file over the limit is the size's error, not UTF-8's.
    // Sized from the file's length where it has one (a 250 MB plan file is not grown by doubling).
    let file = std::fs::File::open(path)?;
    let hint = file.metadata().map_or(0, |m| m.len()).min(limit + 1);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "larger than {} MiB, the most trellis reads of a manifest, world, plan or workspace file; check that the path names the file you meant (a fleet whose plan is that large: plan it in shards, --shard)",
                limit >> 20
            ),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
}

/// The `*.yaml`/`*.yml` files of a fleet directory, sorted. Every such entry that is not a readable
/// file (a dangling or looping symbolic link, a directory, a socket, an entry that cannot be
/// inspected) is an error naming its path; all of them are reported at once.
fn fleet_files(dir: &Path) -> Result<Vec<PathBuf>, ManifestError> {
    let io = |cause| ManifestError::Io { path: dir.to_path_buf(), cause };
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let is_yaml = path.extension().and_then(|e| e.to_str()).is_some_and(|e| e == "yaml" || e == "yml");
        if !is_yaml {
            continue;
        }
        // A regular file as the directory lists it needs no further look (no `stat` per file of a
        // large fleet); anything else is inspected as below.
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            files.push(path);
            continue;
        }
        let dir = dir.to_path_buf();
        // `metadata` follows symbolic links: what is read is the target.
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => files.push(path),
            Ok(m) if m.is_dir() => unreadable.push(UnreadableEntry::Directory { dir, path }),
            Ok(_) => unreadable.push(UnreadableEntry::NotAFile { dir, path }),
            Err(cause) => {
                let link = std::fs::read_link(&path).ok().map(|target| match target.is_absolute() {
                    true => target,
                    false => dir.join(target),
                });
                unreadable.push(UnreadableEntry::Io { dir, path, link, cause });
            }
        }
    }
    if !unreadable.is_empty() {
        unreadable.sort_by(|a, b| a.path().cmp(b.path()));
        return Err(ManifestError::UnreadableEntries { entries: unreadable });
    }
    if files.is_empty() {
        return Err(ManifestError::EmptyDir { dir: dir.to_path_buf() });
    }
    files.sort();
    Ok(files)
}

impl UnreadableEntry {
    /// The entry's path.
    pub fn path(&self) -> &Path {
        match self {
            UnreadableEntry::Io { path, .. }
            | UnreadableEntry::Directory { path, .. }
            | UnreadableEntry::NotAFile { path, .. } => path,
        }
    }
}

/// Parses the Shoots and Seeds in `text` (the contents of `file`, which only names it in errors).
/// Empty documents are skipped; no duplicate check across documents (see [`load`]). Shoots are
/// dispatched by `spec.provider.type` through [`Registry::builtin`].
pub fn parse_str(file: &Path, text: &str) -> Result<Loaded, ManifestError> {
    parse_str_with(Registry::builtin(), file, text)
}

/// [`parse_str`], dispatching Shoots through `registry`.
pub fn parse_str_with(registry: &Registry, file: &Path, text: &str) -> Result<Loaded, ManifestError> {
    match one_pass_shoot(registry, file, text) {
        Some(shoot) => Ok(Loaded { shoots: vec![shoot], ..Loaded::default() }),
        None => parse_str_general_with(registry, file, text),
    }
}

/// [`parse_str`] without its one pass: the general path, for every file. The split pass finds the
/// documents (and reads their heads), then each is read by the light pass if needed and the typed
/// pass. [`parse_str`] gives the same result (or error) on every input; public so tests can check it.
pub fn parse_str_general(file: &Path, text: &str) -> Result<Loaded, ManifestError> {
    parse_str_general_with(Registry::builtin(), file, text)
}

/// [`parse_str_general`], dispatching Shoots through `registry`.
fn parse_str_general_with(registry: &Registry, file: &Path, text: &str) -> Result<Loaded, ManifestError> {
    let docs = split_documents(file, text)?;
    let multi = docs.len() > 1;
    // Byte offset of every line start, so each document is sliced out in constant time.
    let line_starts = yaml_line_starts(text);
    let mut out = Loaded::default();
    for doc in &docs {
        if doc.is_null {
            continue;
        }
        let padded = document_text(text, &line_starts, doc);
        let doc_for_errors = multi.then_some(doc.index);
        let offset = (doc.first_line - 1) as u64;
        let parse_err = |e: serde_saphyr::Error| parse_error(file, text, doc_for_errors, e, offset);

        // What is it, and for which provider? Read by the split pass when it could; else a light pass.
        let head = match &doc.head {
            Some(head) => head.clone(),
            None => trellis_planner::yaml::from_str::<Head>(padded).map_err(parse_err)?.facts(),
        };
        let HeadFacts { api_version, kind, provider_type, infrastructure_config_type } = head;
        match (api_version.as_str(), kind.as_str()) {
            (SHOOT_API_VERSION, SHOOT_KIND) => {}
            (SEED_API_VERSION, SEED_KIND) => {
                let seed: Seed = typed(padded).map_err(parse_err)?;
                out.seeds.push(LoadedSeed { file: file.to_path_buf(), doc_index: doc.index, seed });
                continue;
            }
            _ => {
                return Err(ManifestError::UnsupportedKind {
                    file: file.to_path_buf(),
                    doc: doc.index,
                    api_version,
                    kind,
                })
            }
        }
        let provider = match registry.get(&provider_type) {
            Ok(provider) => provider,
            // A provider type trellis has no infrastructure provider for: a domains plan only, if
            // its Seed is among the inputs ([`load`] decides).
            Err(unknown) if !provider_type.is_empty() => {
                let shoot: ShootEnvelope = typed(padded).map_err(parse_err)?;
                out.domains_only.push(DomainsOnlyShoot {
                    file: file.to_path_buf(),
                    doc_index: doc.index,
                    shoot,
                    reason: format!("trellis has no infrastructure provider for spec.provider.type {provider_type:?}"),
                    refusal: ManifestError::UnsupportedProvider { file: file.to_path_buf(), doc: doc.index, unknown },
                });
                continue;
            }
            Err(unknown) => {
                return Err(ManifestError::UnsupportedProvider { file: file.to_path_buf(), doc: doc.index, unknown })
            }
        };

        // Typed pass, by the provider.
        let shoot = provider.parse_shoot(padded).map_err(parse_err)?;

        let (a, k) = infrastructure_config_type;
        if (a.as_str(), k.as_str()) != provider.infrastructure_config_type() {
            let refusal = ManifestError::InfrastructureConfig {
                file: file.to_path_buf(),
                doc: doc.index,
                provider,
                api_version: a,
                kind: k,
            };
            // No infrastructureConfig at all: a domains plan only, if its Seed is among the inputs.
            let envelope: ShootEnvelope = typed(padded).map_err(parse_err)?;
            if envelope.spec.provider.infrastructure_config.is_null() {
                out.domains_only.push(DomainsOnlyShoot {
                    file: file.to_path_buf(),
                    doc_index: doc.index,
                    shoot: envelope,
                    reason: "no spec.provider.infrastructureConfig".to_string(),
                    refusal,
                });
                continue;
            }
            return Err(refusal);
        }
        out.shoots.push(LoadedShoot { file: file.to_path_buf(), doc_index: doc.index, provider, shoot });
    }
    Ok(out)
}

/// The one pass, for the common file: a single document that is a Shoot of a registered provider
/// with that provider's infrastructureConfig type. The whole text is read once into a
/// [`ShootEnvelope`], its head is checked as [`parse_str`] checks it, and the provider types the
/// config from what was read. Anything else — several documents (or a file that might hold them),
/// a Seed, another kind or provider, a parse error anywhere — is `None`, and [`parse_str`] reads
/// the file as before (split pass, head, typed pass), so every error and every other result is
/// exactly what that path gives; this path only ever returns a Shoot that path returns too.
fn one_pass_shoot(registry: &Registry, file: &Path, text: &str) -> Option<LoadedShoot> {
    if !plainly_one_document(text) {
        return None;
    }
    let envelope: ShootEnvelope = trellis_planner::yaml::from_str(text).ok()?;
    if (envelope.api_version.as_str(), envelope.kind.as_str()) != (SHOOT_API_VERSION, SHOOT_KIND) {
        return None;
    }
    let provider = registry.get(&envelope.spec.provider.type_).ok()?;
    // As [`Head::facts`] reads it: a string, else empty.
    let infra = &envelope.spec.provider.infrastructure_config;
    let type_meta = |key: &str| infra.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    if (type_meta("apiVersion"), type_meta("kind")) != provider.infrastructure_config_type() {
        return None;
    }
    let shoot = provider.shoot_from_envelope(envelope).ok()?;
    Some(LoadedShoot { file: file.to_path_buf(), doc_index: 0, provider, shoot })
}

/// Whether `text` holds at most one YAML document, seen from its lines alone: no line (YAML breaks
/// lines at `\n` and at `\r`) starts with a document marker (`---`, `...`), a directive (`%`) or a
/// byte order mark, except a first line that is only `---`. A `false` says nothing: the split pass
/// decides then.
fn plainly_one_document(text: &str) -> bool {
    text.split(['\n', '\r']).enumerate().all(|(i, line)| {
        let marker = line.starts_with("---") || line.starts_with("...") || line.starts_with(['%', '\u{feff}']);
        !marker || (i == 0 && line.trim_end_matches([' ', '\t']) == "---")
    })
}

fn typed<T: DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    trellis_planner::yaml::from_str(text)
}

/// A deserialization error as `file:line:col: what`, in words for the user: serde-saphyr's
/// message, except a wrong scalar names the value (and a quoted one for a boolean or integer field
/// says to drop the quotes), and a duplicate key drops the developer hint.
fn parse_error(file: &Path, text: &str, doc: Option<usize>, err: serde_saphyr::Error, offset: u64) -> ManifestError {
    // `offset`: the error is in a document parsed alone that starts `offset` lines into the file.
    let (line, mut column) = err.location().map(|l| (l.line() + offset, l.column())).unwrap_or((0, 0));
    let message = match err.without_snippet() {
        serde_saphyr::Error::InvalidScalar { ty, .. } => match scalar_at(text, line, column) {
            Some(v) if v.starts_with(['"', '\'']) => format!("invalid value {v}: expected {}", expected_in_words(ty)),
            Some(v) => format!("invalid value \"{v}\": expected {}", expected_in_words(ty)),
            None => format!("invalid value: expected {}", expected_in_words(ty)),
        },
        // A list or a mapping where a bool or integer belongs: said as such (the value after the key
        // is not one scalar to quote, and serde-saphyr may place the error inside the collection).
        serde_saphyr::Error::SerdeInvalidType { unexpected, expected, .. }
            if (expected.starts_with("a boolean") || expected.starts_with("an integer"))
                && (unexpected == "sequence" || unexpected == "map") =>
        {
            let found = if unexpected == "map" { "a mapping" } else { "a list" };
            format!("expected {expected}, found {found}")
        }
        // A bool or integer field ([`crate::strict`]) got something else; serde-saphyr places the
        // error at the field's key, the message points at the value after it.
        serde_saphyr::Error::SerdeInvalidType { expected, .. }
        | serde_saphyr::Error::SerdeInvalidValue { expected, .. }
            if expected.starts_with("a boolean") || expected.starts_with("an integer") =>
        {
            match value_after_key(text, line, column) {
                Some((at, v)) if v.starts_with(['"', '\'']) => {
                    column = at;
                    format!("invalid value {v}: expected {expected}, not a quoted string; write the value without quotes (Kubernetes reads a quoted value as a string)")
                }
                Some((at, v)) => {
                    column = at;
                    format!("invalid value \"{v}\": expected {expected}")
                }
                None => format!("invalid value: expected {expected}"),
            }
        }
        serde_saphyr::Error::DuplicateMappingKey { key: Some(k), .. } => format!("duplicate key {k:?}"),
        serde_saphyr::Error::DuplicateMappingKey { key: None, .. } => "duplicate key".to_string(),
        other => trellis_planner::yaml::message(other),
    };
    ManifestError::Parse { file: file.to_path_buf(), line, column, doc, message }
}

/// The value written after the mapping key that starts at `line:column` (1-based), if it is on the
/// same line: its column and its text as written (a quoted value with its quotes; a plain one up to a
/// comment, or up to the end of a flow collection).
fn value_after_key(text: &str, line: u64, column: u64) -> Option<(u64, String)> {
    let l = yaml_line(text, line)?;
    let chars: Vec<char> = l.chars().collect();
    let mut i = usize::try_from(column).ok()?.checked_sub(1)?;
    // The key: quoted up to its closing quote, or plain up to the `:` that ends it.
    match chars.get(i)? {
        q @ ('"' | '\'') => i += 1 + closing_quote(&chars[i + 1..], *q)? + 1,
        _ => {
            while i < chars.len() && !(chars[i] == ':' && chars.get(i + 1).is_none_or(|c| c.is_whitespace())) {
                i += 1;
            }
        }
    }
    if chars.get(i) != Some(&':') {
        return None;
    }
    i += 1;
    while chars.get(i).is_some_and(|c| *c == ' ' || *c == '\t') {
        i += 1;
    }
    let start = i;
    let value: String = match chars.get(i)? {
        '#' => return None,
        q @ ('"' | '\'') => chars[i..=i + 1 + closing_quote(&chars[i + 1..], *q)?].iter().collect(),
        _ => {
            let rest: String = chars[i..].iter().collect();
            let rest = rest.split(" #").next().unwrap_or("");
            rest.split([',', '}', ']']).next().unwrap_or("").trim_end().to_string()
        }
    };
    (!value.is_empty()).then(|| (start as u64 + 1, value))
}

/// The index of the quote that closes a scalar quoted with `q`, in the text after the opening quote
/// (`\"` is escaped in double quotes, `''` in single quotes).
fn closing_quote(after: &[char], q: char) -> Option<usize> {
    let mut i = 0;
    while i < after.len() {
        match after[i] {
            '\\' if q == '"' => i += 2,
            c if c == q && q == '\'' && after.get(i + 1) == Some(&'\'') => i += 2,
            c if c == q => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The scalar at `line:column` (1-based) as written, up to the end of the line or a comment.
fn scalar_at(text: &str, line: u64, column: u64) -> Option<String> {
    let l = yaml_line(text, line)?;
    let rest: String = l.chars().skip(usize::try_from(column).ok()?.checked_sub(1)?).collect();
    let rest = rest.split(" #").next().unwrap_or("").trim_end();
    (!rest.is_empty()).then(|| rest.to_string())
}

/// The light pass: only what decides how to read the rest.
#[derive(Deserialize)]
struct Head {
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    spec: Option<HeadSpec>,
}

#[derive(Deserialize)]
struct HeadSpec {
    #[serde(default)]
    provider: Option<HeadProvider>,
}

#[derive(Default, Deserialize)]
struct HeadProvider {
    #[serde(default, rename = "type")]
    type_: Option<String>,
    /// Read as any YAML: its shape is the provider's business (the typed pass reads it).
    #[serde(default, rename = "infrastructureConfig")]
    infrastructure_config: Option<Opaque>,
}

/// What decides how a document is read: `apiVersion`, `kind`, `spec.provider.type` and the
/// `apiVersion`/`kind` of `spec.provider.infrastructureConfig` (each empty when absent or not a string).
#[derive(Clone, Debug, Default, PartialEq)]
struct HeadFacts {
    api_version: String,
    kind: String,
    provider_type: String,
    infrastructure_config_type: (String, String),
}

impl Head {
    fn facts(self) -> HeadFacts {
        let provider = self.spec.and_then(|s| s.provider).unwrap_or_default();
        // Any YAML here: another provider's config, or upstream's placeholder text, is not ours to read.
        let infra = provider.infrastructure_config.unwrap_or_default();
        let type_meta = |key: &str| infra.get(key).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        HeadFacts {
            api_version: self.api_version.unwrap_or_default(),
            kind: self.kind.unwrap_or_default(),
            provider_type: provider.type_.unwrap_or_default(),
            infrastructure_config_type: (type_meta("apiVersion"), type_meta("kind")),
        }
    }
}

/// Where a node of the head is: the mappings and strings [`HeadFacts`] is read from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum HeadPath {
    Root,
    Spec,
    Provider,
    Infra,
    /// Anywhere else: not read.
    Other,
}

/// A string of the head, read from the split pass's events.
#[derive(Clone, Copy, Debug, PartialEq)]
enum HeadField {
    ApiVersion,
    Kind,
    ProviderType,
    InfraApiVersion,
    InfraKind,
}

struct Frame {
    path: HeadPath,
    is_map: bool,
    /// In a mapping: the next node is a key.
    expecting_key: bool,
    /// The key whose value comes next.
    key: Option<String>,
    /// Hashes of the keys seen so far, to notice a duplicate (a collision only sends the document to
    /// the light pass).
    keys: Vec<u64>,
}

/// Reads [`HeadFacts`] from one document's events in the split pass, so that a document is parsed
/// twice (split, typed) instead of three times. It reads only the plain shape: the head's mappings
/// untagged, no duplicate, tagged or complex key anywhere, its strings quoted or plain words, no alias,
/// anchor or merge key (`<<`) anywhere, and a document far inside serde-saphyr's budget. Anything else (`unusual`) leaves the document to the light
/// pass ([`Head`]), which reads it as serde-saphyr does, errors included.
#[derive(Default)]
struct HeadScan {
    stack: Vec<Frame>,
    facts: HeadFacts,
    root_seen: bool,
    unusual: bool,
    events: usize,
    scalar_bytes: usize,
}

impl HeadScan {
    const MAX_EVENTS: usize = 100_000;
    const MAX_SCALAR_BYTES: usize = 4 << 20;
    const MAX_DEPTH: usize = 32;

    fn event(&mut self, event: &Event<'_>) {
        if self.unusual {
            return;
        }
        // Far inside serde-saphyr's budget; a document near a limit is left to the light pass, which
        // enforces the budget (and says which limit, in words). So are aliases, anchors and merge
        // keys anywhere (counted by the budget; none is needed by a plain manifest).
        self.events += 1;
        let anchored = match event {
            Event::Alias(..) => true,
            Event::Scalar(value, _, anchor, _) => {
                self.scalar_bytes += value.len();
                *anchor != 0 || value.as_ref() == "<<"
            }
            Event::MappingStart(_, anchor, _) | Event::SequenceStart(_, anchor, _) => *anchor != 0,
            _ => false,
        };
        if anchored
            || self.events > HeadScan::MAX_EVENTS
            || self.scalar_bytes > HeadScan::MAX_SCALAR_BYTES
            || self.stack.len() >= HeadScan::MAX_DEPTH
        {
            self.unusual = true;
            return;
        }
        match event {
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                return;
            }
            Event::Scalar(..) | Event::MappingStart(..) | Event::SequenceStart(..) | Event::Alias(..) => {}
            _ => return, // stream markers, comments, anchors' names
        }
        // A node: where is it?
        let (path, field) = match self.stack.last_mut() {
            None => {
                if self.root_seen {
                    self.unusual = true;
                    return;
                }
                self.root_seen = true;
                (HeadPath::Root, None)
            }
            Some(top) if !top.is_map => (HeadPath::Other, None),
            Some(top) if top.expecting_key => {
                top.expecting_key = false;
                // serde-saphyr refuses a duplicate key anywhere, also where the light pass ignores
                // the content: the light pass reports it. Keys are compared by their text.
                match event {
                    Event::Scalar(key, _, _, None) => {
                        let hash = key_hash(key);
                        if top.keys.contains(&hash) {
                            self.unusual = true;
                        } else {
                            top.keys.push(hash);
                            if top.path != HeadPath::Other {
                                top.key = Some(key.to_string());
                            }
                        }
                    }
                    _ => self.unusual = true, // a tagged or complex key
                }
                return;
            }
            Some(top) => {
                top.expecting_key = true;
                let key = top.key.take();
                match (top.path, key.as_deref()) {
                    (HeadPath::Root, Some("apiVersion")) => (HeadPath::Other, Some(HeadField::ApiVersion)),
                    (HeadPath::Root, Some("kind")) => (HeadPath::Other, Some(HeadField::Kind)),
                    (HeadPath::Root, Some("spec")) => (HeadPath::Spec, None),
                    (HeadPath::Spec, Some("provider")) => (HeadPath::Provider, None),
                    (HeadPath::Provider, Some("type")) => (HeadPath::Other, Some(HeadField::ProviderType)),
                    (HeadPath::Provider, Some("infrastructureConfig")) => (HeadPath::Infra, None),
                    (HeadPath::Infra, Some("apiVersion")) => (HeadPath::Other, Some(HeadField::InfraApiVersion)),
                    (HeadPath::Infra, Some("kind")) => (HeadPath::Other, Some(HeadField::InfraKind)),
                    (HeadPath::Other, _) => (HeadPath::Other, None),
                    // Another key of a head mapping: not read, but an alias in it could be anything.
                    (_, _) => {
                        if matches!(event, Event::Alias(..)) {
                            self.unusual = true;
                        }
                        (HeadPath::Other, None)
                    }
                }
            }
        };
        if let Some(field) = field {
            match event {
                Event::Scalar(value, style, _, None) if plain_string(value, *style) => {
                    let slot = match field {
                        HeadField::ApiVersion => &mut self.facts.api_version,
                        HeadField::Kind => &mut self.facts.kind,
                        HeadField::ProviderType => &mut self.facts.provider_type,
                        HeadField::InfraApiVersion => &mut self.facts.infrastructure_config_type.0,
                        HeadField::InfraKind => &mut self.facts.infrastructure_config_type.1,
                    };
                    *slot = value.to_string();
                }
                _ => self.unusual = true,
            }
            return;
        }
        match (path, event) {
            (HeadPath::Other, Event::MappingStart(..) | Event::SequenceStart(..)) => self.push(path, event),
            (HeadPath::Other, _) => {}
            (_, Event::MappingStart(_, _, None)) => self.push(path, event),
            // The root, `spec`, `spec.provider` or its infrastructureConfig is not a plain mapping.
            _ => self.unusual = true,
        }
    }

    fn push(&mut self, path: HeadPath, event: &Event<'_>) {
        let is_map = matches!(event, Event::MappingStart(..));
        self.stack.push(Frame { path, is_map, expecting_key: is_map, key: None, keys: Vec::new() });
    }

    /// The head, if the document was read to its end in the plain shape.
    fn finish(self) -> Option<HeadFacts> {
        (self.root_seen && !self.unusual && self.stack.is_empty()).then_some(self.facts)
    }
}

fn key_hash(key: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Whether a scalar is a string as every reader sees it: quoted, or a plain word (letters, digits,
/// `.`, `/`, `-`, `_`, starting with a letter) that YAML does not read as a null, a boolean or a number.
fn plain_string(value: &str, style: ScalarStyle) -> bool {
    match style {
        ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => true,
        ScalarStyle::Plain => {
            let word = value.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '-' | '_'));
            let special = ["null", "true", "false", "yes", "no", "on", "off", "y", "n"]
                .iter()
                .any(|w| value.eq_ignore_ascii_case(w));
            word && !special
        }
        _ => false,
    }
}

/// One YAML document of a file: its lines (1-based, inclusive) and whether its root is null.
#[derive(Debug)]
struct DocSpan {
    index: usize,
    first_line: usize,
    last_line: usize,
    is_null: bool,
    /// What decides how to read it, when the split pass could read it safely ([`HeadScan`]); else the
    /// light pass ([`Head`]) reads it.
    head: Option<HeadFacts>,
}

/// Finds the documents of `text` with the YAML parser (so `---` inside block scalars and the like
/// are handled as YAML does). Malformed YAML is reported with its location.
fn split_documents(file: &Path, text: &str) -> Result<Vec<DocSpan>, ManifestError> {
    let mut starts: Vec<(usize, bool, Option<HeadFacts>)> = Vec::new(); // (line, is_null, head)
    let mut expect_root = false;
    let mut scan = HeadScan::default();
    for event in Parser::new_from_str_with_options(text, trellis_planner::yaml::parser_options()) {
        let (event, span) = match event {
            Ok(ev) => ev,
            Err(scan) => {
                // Prefer serde-saphyr's wording for the same input; fall back to the scanner's.
                if let Err(e) = trellis_planner::yaml::from_multiple::<serde::de::IgnoredAny>(text) {
                    return Err(parse_error(file, text, None, e, 0));
                }
                return Err(ManifestError::Parse {
                    file: file.to_path_buf(),
                    line: scan.marker().line() as u64,
                    column: scan.marker().col() as u64 + 1,
                    doc: None,
                    message: scan.info(),
                });
            }
        };
        if !matches!(event, Event::DocumentStart(..) | Event::DocumentEnd) {
            scan.event(&event);
        }
        match event {
            Event::DocumentStart(..) => {
                starts.push((span.start.line(), false, None));
                expect_root = true;
                scan = HeadScan::default();
            }
            Event::Scalar(ref value, style, _, ref tag) if expect_root => {
                let null = tag.is_none()
                    && style == ScalarStyle::Plain
                    && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
                if let Some(last) = starts.last_mut() {
                    last.1 = null;
                }
                expect_root = false;
            }
            Event::DocumentEnd => {
                if let Some(last) = starts.last_mut() {
                    if expect_root {
                        last.1 = true;
                    }
                    last.2 = std::mem::take(&mut scan).finish();
                }
                expect_root = false;
            }
            Event::MappingStart(..) | Event::SequenceStart(..) | Event::Alias(..) => expect_root = false,
            _ => {} // comments, anchors, ends of collections and of the stream
        }
    }
    let starts_of_lines = yaml_line_starts(text);
    // A line break at the very end starts no line of its own.
    let n_lines = (starts_of_lines.len()
        - usize::from(starts_of_lines.len() > 1 && starts_of_lines.last() == Some(&text.len())))
    .max(1);
    let mut docs = Vec::with_capacity(starts.len());
    let next_starts: Vec<usize> = starts.iter().skip(1).map(|s| s.0).collect();
    for (i, (first_line, is_null, head)) in starts.into_iter().enumerate() {
        let last_line = next_starts.get(i).map(|next| next.saturating_sub(1)).unwrap_or(n_lines);
        docs.push(DocSpan { index: i, first_line, last_line: last_line.max(first_line), is_null, head });
    }
    Ok(docs)
}

/// The lines of `doc` alone. Errors add the document's first line back (see [`parse_error`]), so
/// every document is parsed once over its own text: loading a file of many documents stays linear.
/// Line `line` (1-based, as the parser numbers lines: see [`yaml_line_starts`]) without its line break.
fn yaml_line(text: &str, line: u64) -> Option<&str> {
    let starts = yaml_line_starts(text);
    let i = usize::try_from(line).ok()?.checked_sub(1)?;
    let start = *starts.get(i)?;
    let end = starts.get(i + 1).copied().unwrap_or(text.len());
    Some(text[start..end].trim_end_matches(['\n', '\r']))
}

/// Byte offset of every line start, with lines broken as YAML breaks them (and as the parser numbers
/// them): at `\n`, at `\r\n`, and at a lone `\r`. Counting `\n` only put every document after a lone
/// `\r` (in a comment, say) one line late, so its first line was cut off.
fn yaml_line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = vec![0];
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
            starts.push(i + 1);
        }
    }
    starts
}

fn document_text<'t>(text: &'t str, line_starts: &[usize], doc: &DocSpan) -> &'t str {
    let start = line_starts.get(doc.first_line - 1).copied().unwrap_or(text.len());
    let end = line_starts.get(doc.last_line).copied().unwrap_or(text.len());
    &text[start..end.max(start)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_longer_than_the_limit_is_refused_and_one_at_the_limit_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shoot.yaml");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_at_most(&path, 10).unwrap(), "0123456789");
        let e = read_at_most(&path, 9).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(e.to_string().starts_with("larger than 0 MiB"), "{e}");
        // Over the limit by a character cut in two: the size is the error.
        std::fs::write(&path, "0123456789é").unwrap();
        assert_eq!(read_at_most(&path, 10).unwrap_err().kind(), std::io::ErrorKind::FileTooLarge);
        std::fs::write(&path, b"\xff").unwrap();
        assert_eq!(read_at_most(&path, 10).unwrap_err().to_string(), "stream did not contain valid UTF-8");
        // An input that never ends stops at the limit too.
        let e = read_at_most(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().starts_with("larger than 1 MiB, the most trellis reads"), "{e}");
    }

    #[test]
    fn map_config_changes_only_the_infrastructure_config() {
        let mut shoot: Shoot<i32> = Shoot::default();
        shoot.metadata.name = "a".into();
        shoot.spec.region = "westeurope".into();
        shoot.spec.access_restrictions = Some(serde_json::json!([{"name": "eu-access-only"}]));
        shoot.spec.provider.type_ = "azure".into();
        shoot.spec.provider.infrastructure_config = 7;
        let mapped = shoot.clone().map_config(|n| u8::try_from(n).map(|n| n.to_string())).unwrap();
        let mut want = serde_json::to_value(&shoot).unwrap();
        want["spec"]["provider"]["infrastructureConfig"] = "7".into();
        assert_eq!(serde_json::to_value(&mapped).unwrap(), want);
        shoot.spec.provider.infrastructure_config = -1;
        assert!(shoot.map_config(u8::try_from).is_err(), "the mapping's error is the result");
    }

    /// The head as the light pass reads it, for every document of `text`, beside the split pass's.
    fn heads(text: &str) -> Vec<(Option<HeadFacts>, Result<HeadFacts, String>)> {
        let docs = split_documents(Path::new("t.yaml"), text).expect("splits");
        let line_starts = yaml_line_starts(text);
        docs.iter()
            .filter(|d| !d.is_null)
            .map(|d| {
                let light = trellis_planner::yaml::from_str::<Head>(document_text(text, &line_starts, d))
                    .map(Head::facts)
                    .map_err(|e| e.to_string());
                (d.head.clone(), light)
            })
            .collect()
    }

    /// Wherever the split pass reads the head, it reads what the light pass reads.
    fn assert_agree(text: &str) -> usize {
        let mut read = 0;
        for (scanned, light) in heads(text) {
            if let Some(scanned) = scanned {
                assert_eq!(Ok(scanned), light, "in:\n{text}");
                read += 1;
            }
        }
        read
    }

    /// Every manifest file the repository's tests, scenarios and examples use, with its text.
    fn repository_manifests() -> Vec<(PathBuf, String)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut dirs = vec![root.join("providers/tests/data"), root.join("tests/scenarios"), root.join("examples")];
        let mut files = Vec::new();
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    if let Ok(text) = std::fs::read_to_string(&path) {
                        files.push((path, text));
                    }
                }
            }
        }
        files.sort();
        files
    }

    /// Where the one pass reads a file, it reads what the general path reads from it.
    fn assert_one_pass_agrees(file: &Path, text: &str) -> bool {
        let Some(one) = one_pass_shoot(Registry::builtin(), file, text) else { return false };
        let general = parse_str_general(file, text).expect("the one pass read it, so it loads");
        assert!(general.seeds.is_empty() && general.shoots.len() == 1, "{}", file.display());
        let two = &general.shoots[0];
        assert_eq!((one.doc_index, one.provider_type()), (two.doc_index, two.provider_type()), "{}", file.display());
        assert_eq!(one.shoot.to_json().unwrap(), two.shoot.to_json().unwrap(), "{}", file.display());
        true
    }

    #[test]
    fn the_one_pass_reads_what_the_general_path_reads() {
        let files = repository_manifests();
        let read = files.iter().filter(|(path, text)| assert_one_pass_agrees(path, text)).count();
        assert!(files.len() > 20 && read > 20, "{} files, {read} read by the one pass", files.len());

        // Shapes left to the general path, or read the same by both.
        let a1 = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios/azure/A1-managed-no-nat/shoot.yaml"),
        )
        .unwrap();
        let p = Path::new("t.yaml");
        assert!(assert_one_pass_agrees(p, &a1));
        assert!(assert_one_pass_agrees(p, &format!("---\n{a1}")));
        for text in [
            format!("{a1}---\n{}", a1.replace("name: alpha", "name: beta")), // two documents
            format!("{a1}...\n"),
            format!("%YAML 1.2\n---\n{a1}"),
            format!("\u{feff}{a1}"),
            a1.replace('\n', "\r").replace("\rkind", "\r---\rkind"), // lines broken at \r alone
            a1.replace("zoned: false", "zoned: \"false\""),          // the typed pass's error, with its location
            a1.replace("zoned: false", "zoned: false\n      extra: 1"),
            a1.replace("cidr: 10.250.0.0/16", "cidr: 10"),
            a1.replace("kind: InfrastructureConfig", "kind: Other"),
            a1.replace("type: azure", "type: gcp"),
            a1.replace("kind: Shoot", "kind: Seed"),
            a1.replace("  name: alpha", "  name: alpha\n  name: beta"),
            String::new(),
            "# only a comment\n".to_string(),
        ] {
            assert!(!assert_one_pass_agrees(p, &text), "read by the one pass:\n{text}");
        }
        // Equal results where both read the file: aliases, merge keys, flow style, quoted strings.
        for text in [
            a1.replace("region: westeurope", "region: &r westeurope\n  seedName: *r"),
            a1.replace("kind: Shoot", "kind: \"Shoot\""),
            a1.replace("      zoned: false\n", "      zoned: true\n      identity: {name: id, resourceGroup: rg}\n"),
        ] {
            assert!(assert_one_pass_agrees(p, &text), "not read by the one pass:\n{text}");
        }
    }

    /// Tagged, quoted and YAML 1.1 scalars in the infrastructureConfig (typed from the envelope's
    /// JSON in the one pass): read alike by both paths, or left to the general one.
    #[test]
    fn scalars_of_every_style_in_the_infrastructure_config_read_alike() {
        let a1 = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios/azure/A1-managed-no-nat/shoot.yaml"),
        )
        .unwrap();
        let p = Path::new("t.yaml");
        for value in [
            "!!binary aGVsbG8=",
            "!!str 123",
            "!!str true",
            "'123'",
            "\"yes\"",
            "yes",
            "on",
            "~",
            "null",
            "123",
            "1e3",
            "0x1F",
            "0o17",
            ".inf",
            "!!int 5",
            "!!float 1",
            "|\n            block",
            ">-\n            folded",
            "[a]",
            "{a: b}",
            "\"\\u00e9\"",
            "!custom x",
            "2024-01-01",
        ] {
            for field in ["name", "cidr"] {
                let text = a1.replace(
                    "          cidr: 10.250.0.0/16",
                    &format!("          cidr: 10.250.0.0/16\n          {field}: {value}")
                        .replace("cidr: 10.250.0.0/16\n          cidr:", "cidr:"),
                );
                let general = parse_str_general(p, &text)
                    .map(|l| l.shoots.iter().map(|s| s.shoot.to_json().unwrap()).collect::<Vec<_>>())
                    .map_err(|e| e.to_string());
                let one = parse_str(p, &text)
                    .map(|l| l.shoots.iter().map(|s| s.shoot.to_json().unwrap()).collect::<Vec<_>>())
                    .map_err(|e| e.to_string());
                assert_eq!(one, general, "{field}: {value}");
            }
        }
    }

    /// Found by the hostile-readers property test: a plain scalar that spans lines (`kind:
    /// InfrastructureConfig`, a blank line, then an indented word) is `InfrastructureConfig\nwo`, and
    /// the refusal printed it raw — two lines. Values from the manifest are escaped in messages.
    #[test]
    fn regression_a_multi_line_kind_is_refused_in_one_line() {
        let text = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: dual\n  namespace: garden-platform\nspec:\n  region: europe-west1\n  provider:\n    type: gcp\n    infrastructureConfig:\n      apiVersion: gcp.provider.extensions.gardener.cloud/v1alpha1\n      kind: InfrastructureConfig\n   \n        wo\n";
        let err = parse_str(Path::new("shoot.yaml"), text).unwrap_err().to_string();
        assert!(!err.contains('\n'), "{err}");
        assert!(
            err.ends_with("found gcp.provider.extensions.gardener.cloud/v1alpha1 InfrastructureConfig\\nwo"),
            "{err}"
        );
        let text = text.replace("kind: Shoot", "kind: |\n  Shoot\n  Set");
        let err = parse_str(Path::new("shoot.yaml"), &text).unwrap_err().to_string();
        assert!(!err.contains('\n') && err.contains("Shoot\\nSet"), "{err}");
    }

    #[test]
    fn split_pass_reads_the_head_as_the_light_pass_does() {
        // Every manifest the repository's tests and scenarios use.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut dirs = vec![root.join("providers/tests/data"), root.join("tests/scenarios"), root.join("examples")];
        let (mut files, mut read) = (0, 0);
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    let Ok(text) = std::fs::read_to_string(&path) else { continue };
                    if split_documents(&path, &text).is_ok() {
                        files += 1;
                        read += assert_agree(&text);
                    }
                }
            }
        }
        assert!(files > 20 && read > 20, "{files} files, {read} heads read by the split pass");

        // Shapes the split pass leaves to the light pass, or reads the same.
        for text in [
            "apiVersion: \"core.gardener.cloud/v1beta1\"\nkind: 'Shoot'\nspec:\n  provider: {type: azure, infrastructureConfig: {apiVersion: a/v1, kind: K}}\n",
            "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nspec:\n  provider:\n    type: azure\n    infrastructureConfig: placeholder text\n",
            "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nspec:\n  provider:\n    type: azure\n    infrastructureConfig:\n      apiVersion: 12\n      kind: [a]\n",
            "kind: &k Shoot\napiVersion: *k\n",
            "apiVersion: v1\nkind: Shoot\nspec: null\n",
            "apiVersion: v1\nkind: Shoot\nspec:\n  provider:\n    type: true\n",
            "apiVersion: v1\nkind: Shoot\nextra: &x {type: gcp}\nspec:\n  provider:\n    <<: *x\n",
            "apiVersion: v1\nkind: Shoot\nspec:\n  provider:\n    type: |\n      azure\n",
            "apiVersion: v1\nkind: !!str Shoot\nmetadata: {name: a, labels: {kind: Seed}}\n",
            "? [complex]\n: key\napiVersion: v1\nkind: Shoot\n",
            "apiVersion: v1\nkind: Shoot\n---\napiVersion: v1\nkind: Seed\nspec:\n  provider:\n    type: azure\n",
            "- a\n- b\n",
        ] {
            assert_agree(text);
        }
        // Aliases, tags, merge keys, block scalars and non-strings are left to the light pass.
        for text in [
            "kind: &k Shoot\napiVersion: *k\n",
            "apiVersion: v1\nkind: !!str Shoot\n",
            "apiVersion: v1\nkind: Shoot\nmetadata:\n  name: a\n  name: b\n",
            "apiVersion: v1\nkind: Shoot\nmetadata: &m {name: a}\n",
            "apiVersion: v1\nkind: Shoot\nspec:\n  provider:\n    type: true\n",
            "apiVersion: v1\nkind: Shoot\nspec:\n  provider:\n    type: |\n      azure\n",
            "apiVersion: v1\nkind: Shoot\nspec: null\n",
        ] {
            assert!(heads(text).iter().all(|(scanned, _)| scanned.is_none()), "{text}");
        }
    }
}
