//! The integration tests of trellis-sim in one binary (one link instead of one per file).

mod common;

mod another_operation_in_progress;
mod arm_rules;
mod arm_surface;
mod faults;
mod gce_faults;
mod gce_nat;
mod gce_persistence;
mod gce_rules;
mod gce_runtime;
mod gce_world;
mod if_match;
mod persistence;
mod preconditions;
mod resource_group_deletion;
mod storage_failure;
mod vnet_put_replaces_subnets;
mod world;
mod world_flattened;
