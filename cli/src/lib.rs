//! The `trellis` binary's own pieces besides flags (`main.rs`): the progress display. Everything the
//! binary runs is `trellis-engine`'s; its modules are re-exported here under their old paths
//! (`trellis_cli::ops`, `::backend`, `::shard`) for code written against them.

pub mod progress;

pub use trellis_engine::{backend, ops, shard};
