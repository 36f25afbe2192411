//! The GCP provider (issue #9), so far its API and admission validation:
//!
//! - [`api`]: InfrastructureConfig / InfrastructureStatus / InfrastructureState as upstream
//!   (`gcp.provider.extensions.gardener.cloud/v1alpha1`) plus the user-managed-egress spec's
//!   `subnetWorkers` / `subnetServices`; the mode ([`api::Mode`]) derived from `subnetWorkers` alone.
//! - [`validation`]: admission validation, create and update, with upstream's field paths and
//!   messages and the spec's C1–C12, C18 and D1–D6; [`validation::shoot`] is provider-gcp's Shoot
//!   validator (networking, workers) and [`validation::shoot::validate_shoot`] the webhook as a whole.
//!
//! Not registered in [`crate::registry`] yet: planning, discovery, the simulator and the client come
//! in later slices.

pub mod api;
pub mod validation;

/// `spec.provider.type` of a GCP Shoot.
pub const PROVIDER_TYPE: &str = "gcp";
