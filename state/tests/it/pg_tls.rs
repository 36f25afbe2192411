//! PostgreSQL over TLS: `sslmode` and `sslrootcert` as libpq reads them, against a throwaway server with
//! `ssl=on` whose certificate (for `localhost`) a test CA signed. Whether a session is encrypted is asked
//! of the server (`pg_stat_ssl`), not assumed.

use crate::common;

use std::sync::{Arc, Mutex, Weak};
use trellis_pgtest::PgServer;
use trellis_state::{LockInfo, PgStore, PgUrl, StateError, StateStore, Workspace};

/// A CA certificate (PEM) and a server certificate it signed for `names`, with the server's key.
fn ca_and_server(names: &[&str]) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().expect("a CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, format!("trellis test CA for {}", names[0]));
    let ca_cert = ca.self_signed(&ca_key).expect("a CA certificate");
    let key = KeyPair::generate().expect("a server key");
    let mut server = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).expect("params");
    server.distinguished_name.push(DnType::CommonName, names[0]);
    let cert = server.signed_by(&key, &ca_cert, &ca_key).expect("a server certificate");
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

struct Tls {
    server: PgServer,
    dir: tempfile::TempDir,
}

/// The TLS server the tests running at the same time share (stopped when the last of them drops its
/// handle), and a directory holding `ca.pem` (its authority) and `other-ca.pem` (an authority that
/// signed nothing of it).
fn tls() -> Arc<Tls> {
    static SHARED: Mutex<Weak<Tls>> = Mutex::new(Weak::new());
    let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(tls) = slot.upgrade() {
        return tls;
    }
    let (ca, cert, key) = ca_and_server(&["localhost"]);
    let (other_ca, _, _) = ca_and_server(&["elsewhere.example"]);
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("ca.pem"), ca).unwrap();
    std::fs::write(dir.path().join("other-ca.pem"), other_ca).unwrap();
    let server = PgServer::start_with_tls(&cert, &key).unwrap_or_else(|e| panic!("{e}"));
    let tls = Arc::new(Tls { server, dir });
    *slot = Arc::downgrade(&tls);
    tls
}

/// A new database on the TLS server, its URL on `host` with `options` appended (`{dir}` is the
/// directory of the CA files).
fn url(t: &Tls, host: &str, options: &str) -> (String, String) {
    static SERIAL: Mutex<u32> = Mutex::new(0);
    let n = {
        let mut n = SERIAL.lock().unwrap();
        *n += 1;
        *n
    };
    let created = t.server.create_database(&format!("tls_{n}")).unwrap_or_else(|e| panic!("{e}"));
    let db = created.rsplit('/').next().unwrap().to_string();
    let options = options.replace("{dir}", &t.dir.path().display().to_string());
    let sep = if options.is_empty() { "" } else { "?" };
    (format!("postgres://trellis@{host}:{}/{db}{sep}{options}", t.server.port()), db)
}

/// Whether every session of database `db` is encrypted, as the server sees them (and that there is one).
fn sessions_encrypted(t: &Tls, db: &str) -> bool {
    let sql = format!(
        "SELECT count(*) FILTER (WHERE s.ssl) || '/' || count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.datname = '{db}'"
    );
    let out = t.server.psql("postgres", &sql).unwrap_or_else(|e| panic!("{e}"));
    let (encrypted, all) = out.split_once('/').expect("n/m");
    assert_ne!(all, "0", "no session of {db} is open");
    encrypted == all
}

/// Connects, commits a workspace and reads it back: the store works over this connection.
fn round_trip(url: &str) -> PgStore {
    let url: PgUrl = url.parse().unwrap_or_else(|e| panic!("{e}"));
    let store = PgStore::connect(&url, "test").unwrap_or_else(|e| panic!("connect: {e}"));
    let mut ws = common::behaviour::workspace_with_one_resource();
    store.lock(&ws.shoot, &LockInfo::here("apply")).unwrap();
    store.commit(&mut ws, "apply").unwrap();
    let loaded: Workspace = store.load(&ws.shoot).unwrap().expect("committed");
    assert_eq!(loaded.resources, ws.resources);
    store
}

/// What a refused certificate's message says to do (the URL in the message names `sslrootcert` too, so
/// the advice itself is what is looked for).
const HINT: &str = "check the URL's sslmode and sslrootcert";

fn refused(url: &str) -> String {
    let url: PgUrl = url.parse().unwrap_or_else(|e| panic!("{e}"));
    let err = PgStore::connect(&url, "test").err().expect("the connection is refused");
    assert!(matches!(err, StateError::Database { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    msg
}

#[test]
fn pg_tls_verify_full_with_the_servers_authority_is_encrypted() {
    let t = tls();
    let (url, db) = url(&t, "localhost", "sslmode=verify-full&sslrootcert={dir}/ca.pem");
    let store = round_trip(&url);
    assert!(sessions_encrypted(&t, &db));
    store.close().unwrap();
}

#[test]
fn pg_tls_verify_full_refuses_a_certificate_for_another_host() {
    let t = tls();
    // The certificate is for localhost, the URL names 127.0.0.1.
    let (url, _) = url(&t, "127.0.0.1", "sslmode=verify-full&sslrootcert={dir}/ca.pem");
    let msg = refused(&url);
    assert!(msg.contains(r#"certificate not valid for name "127.0.0.1""#), "{msg}");
    assert!(msg.contains(HINT), "{msg}");
    assert!(msg.contains("verify-full also needs the certificate issued for the host"), "{msg}");
}

#[test]
fn pg_tls_verify_ca_checks_the_authority_and_not_the_host() {
    let t = tls();
    let (good, db) = url(&t, "127.0.0.1", "sslmode=verify-ca&sslrootcert={dir}/ca.pem");
    let store = round_trip(&good);
    assert!(sessions_encrypted(&t, &db));
    store.close().unwrap();
    let (wrong_ca, _) = url(&t, "127.0.0.1", "sslmode=verify-ca&sslrootcert={dir}/other-ca.pem");
    let msg = refused(&wrong_ca);
    assert!(msg.contains("invalid peer certificate: UnknownIssuer") && msg.contains(HINT), "{msg}");
}

#[test]
fn pg_tls_require_and_prefer_encrypt_without_an_authority_and_disable_does_not() {
    let t = tls();
    for (options, encrypted) in
        [("sslmode=require", true), ("", true), ("sslmode=prefer", true), ("sslmode=disable", false)]
    {
        let (url, db) = url(&t, "127.0.0.1", options);
        let store = round_trip(&url);
        assert_eq!(sessions_encrypted(&t, &db), encrypted, "{options:?}");
        store.close().unwrap();
    }
}

#[test]
fn pg_tls_require_with_sslrootcert_checks_the_authority_as_libpq_does() {
    let t = tls();
    let (url, _) = url(&t, "127.0.0.1", "sslmode=require&sslrootcert={dir}/other-ca.pem");
    assert!(refused(&url).contains("invalid peer certificate"));
}

#[test]
fn pg_tls_an_unreadable_sslrootcert_is_one_error_naming_the_file() {
    let t = tls();
    let (missing_file, _) = url(&t, "localhost", "sslmode=verify-full&sslrootcert={dir}/missing.pem");
    let msg = refused(&missing_file);
    let missing = t.dir.path().join("missing.pem");
    assert!(msg.contains(&format!("sslrootcert {}: cannot read it", missing.display())), "{msg}");
    let (a_dir, _) = url(&t, "localhost", "sslmode=verify-full&sslrootcert={dir}");
    let msg = refused(&a_dir);
    assert!(msg.contains(&format!("sslrootcert {}: cannot read it", t.dir.path().display())), "{msg}");
    // A path that never ends is read up to its limit, not until memory runs out.
    let (endless, _) = url(&t, "localhost", "sslmode=verify-full&sslrootcert=/dev/zero");
    let msg = refused(&endless);
    assert!(msg.contains("sslrootcert /dev/zero: larger than 16 MiB"), "{msg}");
}
