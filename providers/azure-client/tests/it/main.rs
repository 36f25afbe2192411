//! The integration tests of trellis-azure-client in one binary (one link instead of one per file).

mod common;

mod arm_client;
mod credentials;
mod dns;
mod engine_e2e;
mod hardening;
mod preconditions;
