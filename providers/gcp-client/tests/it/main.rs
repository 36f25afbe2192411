//! The integration tests of trellis-gcp-client in one binary (one link instead of one per file).

mod common;

mod clouddns;
mod emulator;
mod env_credentials;
mod hardening;
mod real_shapes;
