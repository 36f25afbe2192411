//! Shared helpers for scenario tests.
