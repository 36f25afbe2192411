//! The Azure provider.
//!
//! - [`api`]: InfrastructureConfig / InfrastructureStatus as upstream (serde, upstream JSON names).
//! - [`validation`]: admission validation, create and update, with upstream's field paths and messages.
//! - [`preflight`]: runtime rules against observed cloud state.
//! - [`desired`]: the upstream task graph (and the spec's task-gating matrix) as desired resources.
//! - [`render`]: InfrastructureStatus, azure.json, CCM flags, allow-egress, egress CIDRs.
//! - [`names`]: resource names and ARM id templates.

pub mod api;
pub mod names;
pub mod validation;
