//! The integration tests of trellis-cli in one binary (one link instead of one per file).

mod common;

mod arm_shapes;
mod azure_credentials;
mod bad_input;
mod cli;
mod contract;
mod dns_azure;
mod dns_gcp;
mod domains;
mod emulator;
mod fleet_stream;
mod gcp;
mod graphs;
mod hostile;
mod lifecycle;
mod lock_timeout;
mod outside;
mod pg;
mod processes;
mod real_inputs;
mod renderers;
mod repair;
mod review;
mod shard;
mod shoot_validation;
mod sim_cmd;
mod sim_dir;
mod state_integrity;
mod state_migration;
mod targeting;
mod world_export;
