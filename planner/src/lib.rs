//! The trellis engine, generic over providers.
//!
//! - [`cloud`]: the traits every cloud (simulated or real) implements; reads and writes are separate
//!   traits so that code holding only a [`cloud::CloudRead`] cannot write.
//! - [`model`]: desired resources, typed by ownership, so a write to a user-owned resource cannot be
//!   expressed.
//! - [`discover`]: concurrent, read-only discovery into an [`discover::Observed`] snapshot.
//! - [`diff`]: desired × observed → plan nodes (create/update/replace/delete/verify/read/noop/skip).
//! - [`graph`]: the plan nodes as a petgraph DAG (cycle check, critical path).
//! - [`exec`]: the executor that walks the DAG with bounded parallelism.
//! - [`write`](mod@write): how the executor writes: preconditions, "already exists", per-scope serialisation.
//! - [`ids`]: id schemes ([`ids::IdScheme`]): ARM's case-insensitive ids, GCE's case-sensitive
//!   selfLinks; [`ids::ArmId`] is the workspace's one ARM id parser.
//! - [`yaml`]: YAML parse errors in words, shared by the manifest loader and the simulator's world files.

pub mod cloud;
pub mod diff;
pub mod discover;
pub mod exec;
pub mod graph;
pub mod ids;
pub mod json;
pub mod model;
pub mod retry;
pub mod wide;
pub mod write;
pub mod yaml;
