//! The fake servers of the hardening tests: trellis-http's (feature `fake`), shared with the ARM
//! client's tests.

#![allow(unused_imports)]

pub use trellis_http::fake::*;
