//! Helpers shared by the state tests: the backend checks every store must pass ([`behaviour`]), and for
//! the PostgreSQL tests one throwaway server per test process, shared by the
//! tests running in it at the same time, a database per test.
#![allow(dead_code)]

use std::sync::Arc;
use trellis_pgtest::PgServer;
use trellis_state::{PgStore, PgUrl};

/// The server the tests of this process share ([`PgServer::shared`]).
pub fn server() -> Arc<PgServer> {
    PgServer::shared()
}

/// A test's own database on the shared server: (server, URL).
pub fn database(name: &str) -> (Arc<PgServer>, PgUrl) {
    let server = server();
    let url = server.create_database(name).unwrap_or_else(|e| panic!("{e}"));
    (server, url.parse().expect("a valid URL"))
}

/// The database name of a URL made by [`database`].
pub fn db_name(url: &PgUrl) -> String {
    url.to_string().rsplit('/').next().expect("a database").to_string()
}

pub fn connect(url: &PgUrl) -> PgStore {
    PgStore::connect(url, "test").unwrap_or_else(|e| panic!("connect: {e}"))
}

pub mod behaviour;
