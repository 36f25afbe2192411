//! The wiring behind the `trellis` binary: sessions (state + cloud), plan, apply, destroy.
//!
//! The binary (`main.rs`) parses flags and prints; everything it runs lives here so the scenario tests
//! drive exactly what users run.

pub mod backend;
pub mod ops;
pub mod progress;
pub mod shard;
