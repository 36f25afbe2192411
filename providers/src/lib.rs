//! trellis providers.
//!
//! - [`provider`]: the [`provider::Provider`] trait every provider implements, and the
//!   provider-neutral shoot ([`provider::ProviderShoot`]) the engine and the CLI hold.
//! - [`stages`]: the pipeline every provider's plan runs through ([`stages::Stages`], [`stages::plan_shoot`]),
//!   and [`stages::Staged`], the [`provider::Provider`] a provider's stages make.
//! - [`registry`]: the providers by `spec.provider.type` ([`registry::Registry::builtin`]).
//! - [`manifest`]: Gardener `Shoot` and `Seed` manifests (core.gardener.cloud/v1beta1) parsed into typed
//!   objects; Shoots dispatched by `spec.provider.type` through the registry.
//! - [`seed`]: Gardener `Seed` manifests (returned by the loader beside the Shoots; not planned yet).
//! - [`metadata`]: Gardener's rules for a Shoot's name and namespace (the technical id is made of them).
//! - [`networking`]: Gardener's rules for a Shoot's `spec.networking` (CIDRs, IP families, CNI type).
//! - [`features`]: Gardener feature gates (`--feature-gates`, e.g. `MutableShootDomains`).
//! - [`field`]: Kubernetes-style field errors (`field.path: Type: detail`).
//! - [`cidr`]: Gardener's CIDR checks (`pkg/utils/validation/cidr`), shared by the providers' validation.
//! - [`workers`]: Gardener-level worker rules the providers' Shoot validators share (`ValidateWorkersUpdate`).
//! - [`nodes`]: skip nodes and verify checks, the provider-neutral part of a desired state.
//! - [`strict`]: booleans and integers decoded as Kubernetes decodes them (a quoted value is a string).
//! - [`azure`]: the Azure provider (api, validation, preflight, desired, render).
//! - [`gcp`]: the GCP provider's API types and admission validation (not registered yet).
//! - [`domains`]: the GEP-0066 `domains` provider (mutable shoot domains): model, validation, CA-rotation
//!   phases, DNSRecord objects and artifacts; registered by the engine as a derived provider (its
//!   inputs made by [`domains::pair`], its Seed rules [`domains::check_seeds`]).

pub mod account;
pub mod azure;
pub mod cidr;
pub mod domains;
pub mod features;
pub mod field;
pub mod gcp;
pub mod manifest;
pub mod metadata;
pub mod networking;
pub mod nodes;
pub mod provider;
pub mod registry;
pub mod seed;
pub mod stages;
pub mod strict;
pub mod workers;
