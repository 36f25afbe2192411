//! The integration tests of trellis-providers in one binary (one link instead of one per file).

mod common;

mod azure_validation;
mod gcp_provider;
mod gcp_shoot_validation;
mod gcp_validation;
mod gcp_validation_props;
mod manifest;
mod observed;
mod recorded_deletion;
mod registry;
mod shoot_admission;
mod shoot_validation;
mod terraform_kinds;
