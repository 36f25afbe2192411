//! The integration tests of trellis-state in one binary (one link instead of one per file).

mod common;

mod integrity;
mod migrate;
mod pg_store;
mod pg_tls;
mod sled_store;
