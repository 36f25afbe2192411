//! The engine between the providers and the binary: everything `trellis` runs besides parsing flags
//! and printing, so the scenario tests drive exactly what users run.
//!
//! - [`registry`]: the providers the engine plans with, each paired with its cloud binding
//!   ([`binding::CloudBinding`]: its simulated cloud, its real client, its flags; the built-in ones in
//!   [`bindings`]).
//! - [`backend`]: where state and the simulated clouds live (a sled dir, or PostgreSQL + a sim dir).
//! - [`ops`]: sessions (state + the registry's clouds), loading the inputs, the fleet planner
//!   ([`ops::plan_fleet_streaming`], and [`ops::plan_files`] collecting it), the fleet-wide checks,
//!   saved plans, and the apply → state protocol ([`ops::apply`](mod@ops::apply)).
//! - [`shard`]: `--shard I/N`, which shoots a shard takes.

pub mod backend;
pub mod binding;
pub mod bindings;
pub mod ops;
pub mod registry;
pub mod shard;
