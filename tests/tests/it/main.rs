//! The integration tests of trellis-tests in one binary (one link instead of one per file); the
//! acceptance scenarios keep their own data-driven binary (`tests/scenarios.rs`, harness = false).

mod a2_replaced_public_ip;
mod arm_in_use;
mod arm_rewrites;
mod arm_shapes;
mod beyond_spec;
mod engine;
mod hostile_readers;
mod property_byo;
mod property_gcp_byo;
mod replan_reads;
mod saved_plans;
mod scenario_driver;
mod sim_behaves_like_arm;
mod state_driven_deletion;
mod toy_provider;
mod write_model;
