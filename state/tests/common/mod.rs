//! Helpers shared by the state tests: the backend checks every store must pass ([`behaviour`]), and for
//! the PostgreSQL tests one throwaway server per test binary, shared by the
//! tests running at the same time, a database per test.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, Weak};
use trellis_pgtest::PgServer;
use trellis_state::{PgStore, PgUrl};

static SERVER: Mutex<Weak<PgServer>> = Mutex::new(Weak::new());

/// The shared server: started by the first test that needs it, stopped when the last test using it
/// drops its handle. A missing PostgreSQL fails the test with the one line saying what to install.
pub fn server() -> Arc<PgServer> {
    let mut slot = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(server) = slot.upgrade() {
        return server;
    }
    let server = Arc::new(PgServer::start().unwrap_or_else(|e| panic!("{e}")));
    *slot = Arc::downgrade(&server);
    server
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
