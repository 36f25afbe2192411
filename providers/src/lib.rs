//! trellis providers.
//!
//! - [`manifest`]: Gardener `Shoot` manifests (core.gardener.cloud/v1beta1) parsed into typed objects.
//! - [`metadata`]: Gardener's rules for a Shoot's name and namespace (the technical id is made of them).
//! - [`networking`]: Gardener's rules for a Shoot's `spec.networking` (CIDRs, IP families, CNI type).
//! - [`field`]: Kubernetes-style field errors (`field.path: Type: detail`).
//! - [`strict`]: booleans and integers decoded as Kubernetes decodes them (a quoted value is a string).
//! - [`azure`]: the Azure provider (api, validation, preflight, desired, render).

pub mod azure;
pub mod field;
pub mod manifest;
pub mod metadata;
pub mod networking;
pub mod strict;
