//! The integration tests of trellis-plans in one binary (one link instead of one per file).

mod common;

mod diff;
mod dns;
mod document;
mod graphs;
mod node_shape;
mod provider_neutral;
mod reasons;
mod render;
mod stream;
mod terraform;
