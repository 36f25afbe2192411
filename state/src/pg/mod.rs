//! The PostgreSQL backend ([`PgStore`]): workspaces, history and locks in a shared database (see the
//! crate docs, "PostgreSQL").
//!
//! The [`StateStore`] trait is synchronous and is called from inside the CLI's tokio runtime, from
//! `spawn_blocking` threads and from plain threads; the client is async. The store therefore owns a
//! private multi-thread runtime: every call spawns its work there and waits for the answer on a plain
//! channel, so no caller ever runs `block_on` inside another runtime.

mod schema;
mod tls;

use crate::layout;
use crate::location::PgUrl;
use crate::sled_store::already_there;
use crate::{
    integrity, now_rfc3339, Acquired, ExportedWorkspace, HistoryEntry, Imported, LockInfo, LockRelease, StateError,
    StateStore, Workspace, WorkspaceSummary,
};
use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod};
use sha2::{Digest as _, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long a call retries transient failures (connection lost or refused, server shutting down,
/// serialization failure) before it reports them.
const RETRY_FOR: Duration = Duration::from_secs(30);
/// The same for the first connection of [`PgStore::connect`]: a server that has never answered is more
/// likely a wrong URL than a restart, and the user should hear about it soon.
const CONNECT_RETRY_FOR: Duration = Duration::from_secs(10);
/// Connections the store keeps for reads and commits (locks have one of their own).
const POOL_SIZE: usize = 8;

/// State in a PostgreSQL database (`--state postgres://…`). Any number of processes on any number
/// of machines can use one database at once; workspace locks are what keeps two runs off one shoot.
/// Dropping the store without [`PgStore::close`] closes its connections, which releases its locks.
pub struct PgStore {
    inner: Arc<Inner>,
    /// The store's private runtime; `None` only while it is being shut down.
    rt: Option<tokio::runtime::Runtime>,
    calls: AtomicU64,
    busy_nanos: AtomicU64,
}

/// Calls a [`PgStore`] made and the wall time callers spent waiting for them (summed over the calling
/// threads, so with concurrent callers it can exceed the elapsed time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PgStats {
    pub calls: u64,
    pub busy: Duration,
}

struct Inner {
    url: PgUrl,
    /// The URL without its password: what every message names.
    location: String,
    pool: Pool,
    /// TLS as the URL's `sslmode` and `sslrootcert` say ([`tls`]).
    tls: MakeRustlsConnect,
    locks: tokio::sync::Mutex<LockConn>,
    /// Notified when the lock connection ends (see [`keep_locks`]).
    lock_conn_ended: Arc<tokio::sync::Notify>,
    /// Set by [`PgStore::close`]: the lock connection is ending on purpose.
    closing: AtomicBool,
}

/// Runs for the store's life: when the lock connection ends (a dropped connection, a server restart),
/// reconnects at once and takes every lock the store held again, so another session has as little
/// time as possible to take one over. (The next lock call or commit of a locked shoot would do the
/// same; a lock another session took meanwhile is marked lost, see [`Hold::Lost`].)
async fn keep_locks(inner: Arc<Inner>) {
    loop {
        inner.lock_conn_ended.notified().await;
        if inner.closing.load(Ordering::Relaxed) {
            return;
        }
        // A failure is left to the next call, which tries again and reports it.
        let _ = inner.retry("taking the workspace locks again", || Box::pin(inner.lock_conn_ready())).await;
    }
}

/// The one long-lived connection that holds this store's session advisory locks, and what it holds.
#[derive(Default)]
struct LockConn {
    client: Option<(Client, LockStatements)>,
    held: BTreeMap<String, Held>,
}

/// The lock connection's statements, prepared once per connection: taking and releasing a lock is one
/// round trip each.
struct LockStatements {
    /// ($1 shoot, $2 key, $3 lock id, $4 holder) -> (advisory lock taken, the record found before, if
    /// any). Takes the advisory lock and, only if it got it, records the holder.
    take: Statement,
    /// ($1 shoot, $2 lock id, $3 key): removes this lock's record and releases its advisory lock.
    release: Statement,
}

/// See [`LockStatements::take`]. Every part sees the table as it was before the statement, so `old`
/// is the record the insert replaces. `got` is materialized: the advisory lock is tried exactly once.
const TAKE_LOCK: &str = "WITH got AS MATERIALIZED (SELECT pg_try_advisory_lock($2) AS ok), \
     old AS (SELECT holder FROM trellis_locks WHERE shoot = $1), \
     ins AS (INSERT INTO trellis_locks (shoot, key, lock_id, holder) SELECT $1, $2, $3, $4 FROM got WHERE ok \
             ON CONFLICT (shoot) DO UPDATE SET key = EXCLUDED.key, lock_id = EXCLUDED.lock_id, holder = EXCLUDED.holder \
             RETURNING 1) \
     SELECT (SELECT ok FROM got), (SELECT holder FROM old), (SELECT count(*) FROM ins)";

/// See [`LockStatements::release`].
const RELEASE_LOCK: &str = "WITH d AS (DELETE FROM trellis_locks WHERE shoot = $1 AND lock_id = $2 RETURNING 1) \
     SELECT pg_advisory_unlock($3), (SELECT count(*) FROM d)";

/// A workspace lock this store took.
struct Held {
    info: LockInfo,
    hold: Hold,
}

/// Whether this store still holds a lock it took.
#[derive(Clone, PartialEq)]
enum Hold {
    Kept,
    /// The lock connection dropped and, when it came back, another session had taken the lock: `to`
    /// is its holder, if it recorded itself. The next commit of the shoot is refused.
    Lost {
        to: Option<LockInfo>,
    },
}

impl Held {
    fn kept(&self) -> bool {
        self.hold == Hold::Kept
    }
}

/// A failed attempt: worth retrying, or final.
enum Failure {
    Transient(String),
    Final(StateError),
}

type Attempt<'a, T> = Pin<Box<dyn Future<Output = Result<T, Failure>> + Send + 'a>>;

impl PgStore {
    /// Connects, applies the embedded schema migrations if needed (versioned, under an advisory lock
    /// so two first uses don't race), and returns the store. `operation` names the command in the
    /// connection's `application_name`.
    pub fn connect(url: &PgUrl, operation: &str) -> Result<PgStore, StateError> {
        let location = url.redacted().to_string();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("trellis-pg")
            .enable_all()
            .build()
            .map_err(|e| StateError::Database {
                location: location.clone(),
                detail: format!("cannot start the database client's threads ({e})"),
            })?;
        let mut config = url.config().clone();
        config.application_name(format!("trellis {operation}"));
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        let url = PgUrl::from_config(url, config);
        let built = {
            let (url, loc) = (url.clone(), location.clone());
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            rt.spawn(async move {
                let _ = tx.send(Inner::connect(url, loc).await);
            });
            rx.recv().unwrap_or_else(|_| Err(task_ended(&location)))
        };
        match built {
            Ok(inner) => {
                let inner = Arc::new(inner);
                rt.spawn(keep_locks(inner.clone()));
                Ok(PgStore { inner, rt: Some(rt), calls: AtomicU64::new(0), busy_nanos: AtomicU64::new(0) })
            }
            Err(e) => {
                rt.shutdown_background();
                Err(e)
            }
        }
    }

    /// Releases this store's workspace locks (their records are removed), then closes its connections.
    pub fn close(mut self) -> Result<(), StateError> {
        let inner = self.inner.clone();
        inner.closing.store(true, Ordering::Relaxed);
        let released = self.run(async move { inner.release_all().await });
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
        released
    }

    /// Calls made so far and the time spent waiting for the database.
    pub fn stats(&self) -> PgStats {
        PgStats {
            calls: self.calls.load(Ordering::Relaxed),
            busy: Duration::from_nanos(self.busy_nanos.load(Ordering::Relaxed)),
        }
    }

    /// Runs `work` on the store's runtime and waits for it on this thread (which may be a thread of
    /// another runtime: it only blocks on a channel).
    fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StateError>> + Send + 'static,
    ) -> Result<T, StateError> {
        let started = Instant::now();
        let Some(rt) = &self.rt else {
            return Err(task_ended(&self.inner.location));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(work.await);
        });
        let out = rx.recv().unwrap_or_else(|_| Err(task_ended(&self.inner.location)));
        self.calls.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos.fetch_add(nanos, Ordering::Relaxed);
        out
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Never drops a runtime in place (that panics inside another runtime): its tasks and
        // connections are dropped in the background, which ends the sessions and frees their locks.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

fn task_ended(location: &str) -> StateError {
    StateError::Database {
        location: location.to_string(),
        detail: "the database client stopped unexpectedly; run the command again".to_string(),
    }
}

impl PgUrl {
    /// `url` with another client configuration (same redacted form).
    fn from_config(url: &PgUrl, config: tokio_postgres::Config) -> PgUrl {
        let mut out = url.clone();
        out.set_config(config);
        out
    }
}

/// The advisory lock key of a shoot's workspace lock: the first 8 bytes (big-endian) of
/// SHA-256(`trellis-workspace-lock:` + shoot). Stable across versions and machines; two shoots whose
/// keys collide would only share one lock.
pub(crate) fn lock_key(shoot: &str) -> i64 {
    let digest = Sha256::digest(format!("trellis-workspace-lock:{shoot}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// The checksum of a version of a workspace, the same in both backends: `sha256:` of its head value
/// in the sled layout, which covers every resource record, the outputs and the provider state.
pub(crate) fn version_checksum(ws: &Workspace) -> String {
    integrity::checksum_bytes(&layout::head_value(ws, &layout::parts(ws)))
}

fn to_i64(shoot: &str, serial: u64) -> Result<i64, Failure> {
    i64::try_from(serial).map_err(|_| {
        Failure::Final(StateError::Corrupt {
            shoot: shoot.to_string(),
            detail: format!("serial {serial} is too large for the database"),
        })
    })
}

fn to_u64(serial: i64) -> u64 {
    u64::try_from(serial).unwrap_or(0)
}

impl Inner {
    async fn connect(url: PgUrl, location: String) -> Result<Inner, StateError> {
        let tls =
            tls::connector(url.tls()).map_err(|detail| StateError::Database { location: location.clone(), detail })?;
        let mgr = Manager::from_config(
            url.config().clone(),
            tls.clone(),
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(mgr).max_size(POOL_SIZE).runtime(deadpool_postgres::Runtime::Tokio1).build().map_err(
            |e| StateError::Database {
                location: location.clone(),
                detail: format!("cannot set up the connection pool ({e})"),
            },
        )?;
        let inner = Inner {
            url,
            location,
            pool,
            tls,
            locks: tokio::sync::Mutex::new(LockConn::default()),
            lock_conn_ended: Arc::default(),
            closing: AtomicBool::new(false),
        };
        inner.retry_for(CONNECT_RETRY_FOR, "connecting", || Box::pin(inner.migrate())).await?;
        inner.retry("connecting", || Box::pin(inner.lock_conn_ready())).await?;
        Ok(inner)
    }

    fn error(&self, detail: String) -> StateError {
        StateError::Database { location: self.location.clone(), detail }
    }

    /// Runs `attempt` until it succeeds, fails for good, or transient failures have lasted [`RETRY_FOR`].
    async fn retry<'a, T>(&'a self, what: &str, attempt: impl FnMut() -> Attempt<'a, T>) -> Result<T, StateError> {
        self.retry_for(RETRY_FOR, what, attempt).await
    }

    async fn retry_for<'a, T>(
        &'a self,
        window: Duration,
        what: &str,
        mut attempt: impl FnMut() -> Attempt<'a, T>,
    ) -> Result<T, StateError> {
        let deadline = Instant::now() + window;
        let mut delay = Duration::from_millis(50);
        loop {
            match attempt().await {
                Ok(v) => return Ok(v),
                Err(Failure::Final(e)) => return Err(e),
                Err(Failure::Transient(detail)) if Instant::now() >= deadline => {
                    return Err(self.error(format!(
                        "{what}: {detail} (retried for {} s); check that the database is up and reachable, then \
                         run the command again",
                        window.as_secs()
                    )));
                }
                Err(Failure::Transient(_)) => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// A client error as a [`Failure`]: lost or refused connections, shutdowns and serialization
    /// failures are transient; anything else is final, in words (never the password).
    fn classify(&self, e: tokio_postgres::Error) -> Failure {
        const TRANSIENT: &[SqlState] = &[
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::CONNECTION_EXCEPTION,
            SqlState::CONNECTION_FAILURE,
            SqlState::SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
        ];
        let words = self.words(&e);
        if tls::tls_error(&e).is_some() {
            return Failure::Final(self.error(format!(
                "{words}; check the URL's sslmode and sslrootcert (the PEM file of the authority that signed the \
                 server's certificate; verify-full also needs the certificate issued for the host in the URL)"
            )));
        }
        if let Some(db) = e.as_db_error() {
            if TRANSIENT.contains(db.code()) {
                return Failure::Transient(words);
            }
            let hint = match *db.code() {
                SqlState::INVALID_PASSWORD | SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
                    "; check the user and password of the URL"
                }
                SqlState::INSUFFICIENT_PRIVILEGE => {
                    "; the role needs CONNECT on the database, CREATE on the schema for the first run's migrations, \
                     then SELECT, INSERT, UPDATE and DELETE on trellis' tables"
                }
                SqlState::INVALID_CATALOG_NAME => "; create the database first (`createdb`)",
                _ => "",
            };
            return Failure::Final(self.error(format!("{words}{hint}")));
        }
        let io = std::error::Error::source(&e).is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
        if e.is_closed() || io || words.contains("timed out") {
            Failure::Transient(words)
        } else {
            Failure::Final(self.error(words))
        }
    }

    /// The client's error and its causes in one line, without the password.
    fn words(&self, e: &tokio_postgres::Error) -> String {
        let mut text = match e.as_db_error() {
            Some(db) => format!("{}: {}", db.severity(), db.message()),
            None => e.to_string(),
        };
        let mut source = std::error::Error::source(e);
        if e.as_db_error().is_none() {
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
        }
        self.url.hide_password(&text)
    }

    fn pool_failure(&self, e: PoolError) -> Failure {
        match e {
            PoolError::Backend(e) => self.classify(e),
            PoolError::Timeout(_) => Failure::Transient("timed out waiting for a connection".to_string()),
            other => Failure::Final(self.error(format!("connection pool: {other}"))),
        }
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, Failure> {
        self.pool.get().await.map_err(|e| self.pool_failure(e))
    }

    /// Applies the embedded migrations this database lacks (see [`schema`]), on a connection of its own
    /// that holds the migration advisory lock while it does.
    async fn migrate(&self) -> Result<(), Failure> {
        let (client, connection) = self.url.config().connect(self.tls.clone()).await.map_err(|e| self.classify(e))?;
        let conn = tokio::spawn(connection);
        let result = schema::migrate(&client, &self.location).await;
        drop(client);
        let _ = conn.await;
        result.map_err(|e| match e {
            schema::Error::Client(e) => self.classify(e),
            schema::Error::State(e) => Failure::Final(e),
        })
    }

    // ---- workspaces ----

    /// The stored version of `shoot`, checked against its checksum and against the history: a row
    /// behind its history, or a history without a row, is refused ([`StateError::BehindHistory`]), so
    /// that a plan is never made against a workspace whose row was deleted or changed by hand.
    async fn load(&self, shoot: &str) -> Result<Option<Workspace>, Failure> {
        let client = self.client().await?;
        // One round trip: the row, if any, and the newest serial of the history (an index lookup).
        let select = client
            .prepare_cached(
                "SELECT w.serial, w.document, w.checksum, \
                 (SELECT max(h.serial) FROM trellis_history h WHERE h.shoot = $1) \
                 FROM (VALUES (1)) AS one LEFT JOIN trellis_workspaces w ON w.shoot = $1",
            )
            .await
            .map_err(|e| self.classify(e))?;
        let row = client.query_one(&select, &[&shoot]).await.map_err(|e| self.classify(e))?;
        let stored: Option<i64> = row.get(0);
        let newest: Option<i64> = row.get(3);
        let stored = stored.map(to_u64);
        if let Some(newest) = newest.map(to_u64).filter(|newest| stored.is_none_or(|s| s < *newest)) {
            return Err(Failure::Final(self.behind_history(shoot, stored, newest)));
        }
        let (Some(serial), Some(document), Some(checksum)) = (stored, row.get(1), row.get(2)) else {
            return Ok(None);
        };
        let ws = self.check_version(shoot, serial, document, checksum).map_err(Failure::Final)?;
        Ok(Some(ws))
    }

    fn behind_history(&self, shoot: &str, stored: Option<u64>, newest: u64) -> StateError {
        StateError::BehindHistory { location: self.location.clone(), shoot: shoot.to_string(), stored, newest }
    }

    /// The newest serial in the history of `shoot`, if it has any.
    async fn newest_in_history(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        shoot: &str,
    ) -> Result<Option<u64>, Failure> {
        let newest = tx
            .prepare_cached("SELECT max(serial) FROM trellis_history WHERE shoot = $1")
            .await
            .map_err(|e| self.classify(e))?;
        let row = tx.query_one(&newest, &[&shoot]).await.map_err(|e| self.classify(e))?;
        Ok(row.get::<_, Option<i64>>(0).map(to_u64))
    }

    /// When a workspace's row is created, in the transaction that creates it (after the row's insert):
    /// a history without a row means the row was deleted by hand. The workspace existed; it is not
    /// started again.
    async fn refuse_history_without_row(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        shoot: &str,
    ) -> Result<(), Failure> {
        match self.newest_in_history(tx, shoot).await? {
            Some(newest) => Err(Failure::Final(self.behind_history(shoot, None, newest))),
            None => Ok(()),
        }
    }

    /// Adds a version to the history of `shoot`. A serial the history holds already is never
    /// overwritten: the statement cannot (`DO NOTHING`), and the commit is refused naming the newest
    /// version ([`StateError::BehindHistory`]; `stored`: the row's serial before this write).
    #[allow(clippy::too_many_arguments)]
    async fn insert_history(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        shoot: &str,
        serial: i64,
        entry: &str,
        document: Option<&str>,
        checksum: Option<&str>,
        stored: Option<u64>,
    ) -> Result<(), Failure> {
        let insert = tx
            .prepare_cached(
                "INSERT INTO trellis_history (shoot, serial, entry, document, checksum) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (shoot, serial) DO NOTHING",
            )
            .await
            .map_err(|e| self.classify(e))?;
        let written = tx
            .execute(&insert, &[&shoot, &serial, &entry, &document, &checksum])
            .await
            .map_err(|e| self.classify(e))?;
        if written == 1 {
            return Ok(());
        }
        let newest = self.newest_in_history(tx, shoot).await?.unwrap_or(to_u64(serial));
        Err(Failure::Final(self.behind_history(shoot, stored, newest)))
    }

    /// Parses a stored version and checks it against its checksum.
    fn check_version(&self, shoot: &str, serial: u64, document: &str, checksum: &str) -> Result<Workspace, StateError> {
        let damaged = |detail: String| StateError::DamagedVersion {
            location: self.location.clone(),
            shoot: shoot.to_string(),
            serial,
            detail,
        };
        let ws: Workspace =
            serde_json::from_str(document).map_err(|e| damaged(format!("its document does not parse ({e})")))?;
        if ws.shoot != shoot || ws.serial != serial {
            return Err(damaged(format!("its document is that of {} at serial {}", ws.shoot, ws.serial)));
        }
        let actual = version_checksum(&ws);
        if actual != checksum {
            return Err(damaged(format!("its checksum is {actual}, but {checksum} was stored with it")));
        }
        Ok(ws)
    }

    async fn history(&self, shoot: &str) -> Result<Vec<(HistoryEntry, Option<Workspace>)>, Failure> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT serial, entry, document, checksum FROM trellis_history WHERE shoot = $1 ORDER BY serial",
                &[&shoot],
            )
            .await
            .map_err(|e| self.classify(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let serial = to_u64(row.get(0));
            let entry: HistoryEntry = serde_json::from_str(row.get(1)).map_err(|e| {
                Failure::Final(StateError::DamagedVersion {
                    location: self.location.clone(),
                    shoot: shoot.to_string(),
                    serial,
                    detail: format!("its history entry does not parse ({e})"),
                })
            })?;
            let document: Option<&str> = row.get(2);
            let checksum: Option<&str> = row.get(3);
            // The history of a removed workspace ([`crate::removed_name`]) holds the versions of its shoot.
            let owner = crate::removed_owner(shoot).unwrap_or(shoot);
            let version = match (document, checksum) {
                (Some(document), Some(checksum)) => {
                    Some(self.check_version(owner, serial, document, checksum).map_err(Failure::Final)?)
                }
                _ => None,
            };
            out.push((entry, version));
        }
        Ok(out)
    }

    /// One attempt at a commit: `next` (already at its new serial) replaces the stored version at
    /// `expected` serial of `lineage`, with its history entry, in one transaction.
    async fn try_commit(
        &self,
        next: &Workspace,
        expected: u64,
        operation: &str,
        checksum: &str,
    ) -> Result<(), Failure> {
        let shoot = next.shoot.as_str();
        let conflict = |detail: String| Failure::Final(StateError::Conflict { shoot: shoot.to_string(), detail });
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.classify(e))?;
        let select = tx
            .prepare_cached("SELECT lineage, serial, checksum FROM trellis_workspaces WHERE shoot = $1 FOR UPDATE")
            .await
            .map_err(|e| self.classify(e))?;
        let row = tx.query_opt(&select, &[&shoot]).await.map_err(|e| self.classify(e))?;
        let previous: Option<String> = match &row {
            Some(row) => {
                let (lineage, serial): (&str, i64) = (row.get(0), row.get(1));
                if lineage != next.lineage {
                    return Err(conflict(format!(
                        "the stored workspace has lineage {lineage} but this change was made for lineage {} (the \
                         workspace was deleted and created again)",
                        next.lineage
                    )));
                }
                if to_u64(serial) != expected {
                    return Err(conflict(format!(
                        "the stored serial is {serial} but this change was made against serial {expected} (another \
                         run committed in between)"
                    )));
                }
                Some(row.get(2))
            }
            None if expected != 0 => {
                return Err(conflict(format!(
                    "the workspace is not stored but this change was made against serial {expected}"
                )))
            }
            None => None,
        };
        let entry = HistoryEntry {
            serial: next.serial,
            operation: operation.to_string(),
            at: now_rfc3339(),
            resources: next.resources.len(),
            checksum: Some(checksum.to_string()),
            previous,
        };
        let stored = row.as_ref().map(|row| to_u64(row.get(1)));
        self.write_version(&tx, next, checksum, stored, &entry).await?;
        tx.commit().await.map_err(|e| self.classify(e))
    }

    /// Writes `ws` as the stored version (an update of the row at serial `stored`, or the row's insert)
    /// and its history entry, in `tx`. Neither overwrites history: a row is not created for a shoot
    /// that has a history, and a history entry is never replaced.
    async fn write_version(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        ws: &Workspace,
        checksum: &str,
        stored: Option<u64>,
        entry: &HistoryEntry,
    ) -> Result<(), Failure> {
        let shoot = ws.shoot.as_str();
        let document = serde_json::to_string(ws).expect("a workspace serialises");
        let serial = to_i64(shoot, ws.serial)?;
        let resources = i64::try_from(ws.resources.len()).unwrap_or(i64::MAX);
        let update = stored.is_some();
        let sql = if update {
            "UPDATE trellis_workspaces SET lineage = $2, serial = $3, resources = $4, document = $5, checksum = $6 \
             WHERE shoot = $1"
        } else {
            "INSERT INTO trellis_workspaces (shoot, lineage, serial, resources, document, checksum) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (shoot) DO NOTHING"
        };
        let write = tx.prepare_cached(sql).await.map_err(|e| self.classify(e))?;
        let written = tx
            .execute(&write, &[&shoot, &ws.lineage, &serial, &resources, &document, &checksum])
            .await
            .map_err(|e| self.classify(e))?;
        if written != 1 {
            return Err(Failure::Final(StateError::Conflict {
                shoot: shoot.to_string(),
                detail: "another run stored the workspace while this one was writing it".to_string(),
            }));
        }
        if !update {
            // After the row's insert, which another run creating it at the same time waits for: a
            // history found now was not written by such a run, but is a row deleted by hand.
            self.refuse_history_without_row(tx, shoot).await?;
        }
        let entry_json = serde_json::to_string(entry).expect("a history entry serialises");
        self.insert_history(tx, shoot, serial, &entry_json, Some(&document), Some(checksum), stored).await
    }

    /// Whether the stored version of `shoot` is `lineage` at `serial` with `checksum`: after a failure
    /// whose outcome is unknown (the connection dropped around `COMMIT`), this tells whether it committed.
    async fn is_stored(&self, shoot: &str, lineage: &str, serial: u64, checksum: &str) -> Result<bool, Failure> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT lineage, serial, checksum FROM trellis_workspaces WHERE shoot = $1", &[&shoot])
            .await
            .map_err(|e| self.classify(e))?;
        Ok(row.is_some_and(|row| {
            row.get::<_, &str>(0) == lineage && to_u64(row.get(1)) == serial && row.get::<_, &str>(2) == checksum
        }))
    }

    /// A commit, retried through dropped connections; a commit whose `COMMIT` may have gone through is
    /// looked up before it is tried again, so it is never reported as failed when it was committed.
    async fn commit(&self, next: Workspace, expected: u64, operation: String) -> Result<(), StateError> {
        self.check_lock_kept(&next.shoot).await?;
        let checksum = version_checksum(&next);
        self.write_retried("committing", &next, &checksum, || {
            Box::pin(self.try_commit(&next, expected, &operation, &checksum))
        })
        .await
    }

    /// Stores the version `next` (checksum `checksum`) with `attempt`, retried through dropped
    /// connections. Once an attempt may have reached `COMMIT`, the next one first looks the version
    /// up, so a write that went through is never reported as failed, nor made twice.
    async fn write_retried<'a>(
        &'a self,
        what: &str,
        next: &'a Workspace,
        checksum: &'a str,
        attempt: impl Fn() -> Attempt<'a, ()>,
    ) -> Result<(), StateError> {
        let mut unsure = false;
        self.retry(what, || {
            let was_unsure = std::mem::replace(&mut unsure, true);
            let write = attempt();
            Box::pin(async move {
                if was_unsure && self.is_stored(&next.shoot, &next.lineage, next.serial, checksum).await? {
                    return Ok(());
                }
                write.await
            })
        })
        .await
    }

    async fn list(&self) -> Result<Vec<WorkspaceSummary>, Failure> {
        let client = self.client().await?;
        let rows = client
            .query("SELECT shoot, lineage, serial, resources FROM trellis_workspaces", &[])
            .await
            .map_err(|e| self.classify(e))?;
        let locks = self.live_locks(&client, None).await?;
        let mut out: Vec<WorkspaceSummary> = rows
            .iter()
            .map(|row| {
                let shoot: String = row.get(0);
                WorkspaceSummary {
                    locked_by: locks.get(&shoot).cloned(),
                    lineage: row.get(1),
                    serial: to_u64(row.get(2)),
                    resources: usize::try_from(row.get::<_, i64>(3)).unwrap_or(0),
                    shoot,
                }
            })
            .collect();
        // A shoot locked by a run that has not committed yet has a lock but no workspace.
        let stored: BTreeSet<String> = out.iter().map(|w| w.shoot.clone()).collect();
        for (shoot, holder) in locks {
            if !stored.contains(&shoot) {
                out.push(WorkspaceSummary {
                    shoot,
                    lineage: String::new(),
                    serial: 0,
                    resources: 0,
                    locked_by: Some(holder),
                });
            }
        }
        out.sort_by(|a, b| a.shoot.cmp(&b.shoot));
        Ok(out)
    }

    // ---- locks ----

    /// The lock records whose advisory lock is held by some session now: a record whose lock is free
    /// was left by a process that died, and holds nothing.
    async fn live_locks(&self, client: &Client, shoot: Option<&str>) -> Result<BTreeMap<String, LockInfo>, Failure> {
        let classify = |e| self.classify(e);
        let records = match shoot {
            Some(shoot) => {
                client.query("SELECT shoot, key, holder FROM trellis_locks WHERE shoot = $1", &[&shoot]).await
            }
            None => client.query("SELECT shoot, key, holder FROM trellis_locks", &[]).await,
        }
        .map_err(classify)?;
        if records.is_empty() {
            return Ok(BTreeMap::new());
        }
        // The advisory locks held in this database, read once (not once per record): a bigint key is
        // shown as classid (high 32 bits) and objid (low 32 bits), objsubid 1.
        let held: BTreeSet<i64> = client
            .query(
                "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted \
                 AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                &[],
            )
            .await
            .map_err(classify)?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let mut out = BTreeMap::new();
        for row in records {
            let shoot: String = row.get(0);
            if held.contains(&row.get::<_, i64>(1)) {
                let holder = parse_holder(&shoot, row.get(2)).map_err(Failure::Final)?;
                out.insert(shoot, holder);
            }
        }
        Ok(out)
    }

    /// The lock connection, connected (again) if needed. After a reconnect every lock this store held
    /// is taken again; one another session took meanwhile is marked lost.
    async fn lock_conn<'g>(&self, lc: &'g mut LockConn) -> Result<(&'g Client, &'g LockStatements), Failure> {
        let alive = lc.client.as_ref().is_some_and(|(c, _)| !c.is_closed());
        if !alive {
            lc.client = None;
            let classify = |e| self.classify(e);
            let (client, connection) = self.url.config().connect(self.tls.clone()).await.map_err(classify)?;
            let ended = self.lock_conn_ended.clone();
            tokio::spawn(async move {
                let _ = connection.await;
                ended.notify_one();
            });
            // Lock records name holders; the advisory locks are the locks. A server crash ends every
            // session and so frees every advisory lock, which makes every record stale anyway: the
            // records need not wait for the WAL flush (a lock costs one round trip, not a disk sync).
            client.batch_execute("SET synchronous_commit = off").await.map_err(classify)?;
            let statements = LockStatements {
                take: client.prepare(TAKE_LOCK).await.map_err(classify)?,
                release: client.prepare(RELEASE_LOCK).await.map_err(classify)?,
            };
            for (shoot, held) in lc.held.iter_mut().filter(|(_, h)| h.kept()) {
                let (got, old) = take(&client, &statements, shoot, &held.info).await.map_err(classify)?;
                if !got {
                    held.hold = Hold::Lost { to: old };
                }
            }
            lc.client = Some((client, statements));
        }
        let (client, statements) = lc.client.as_ref().expect("connected above");
        Ok((client, statements))
    }

    async fn lock_conn_ready(&self) -> Result<(), Failure> {
        let mut lc = self.locks.lock().await;
        self.lock_conn(&mut lc).await.map(drop)
    }

    /// Refuses a commit of a shoot whose lock this store took and lost (see [`Hold::Lost`]).
    async fn check_lock_kept(&self, shoot: &str) -> Result<(), StateError> {
        let hold = self
            .retry("checking the workspace lock", || {
                Box::pin(async move {
                    let mut lc = self.locks.lock().await;
                    if !lc.held.contains_key(shoot) {
                        return Ok(None);
                    }
                    self.lock_conn(&mut lc).await?;
                    Ok(lc.held.get(shoot).map(|h| h.hold.clone()))
                })
            })
            .await?;
        match hold {
            None | Some(Hold::Kept) => Ok(()),
            Some(Hold::Lost { to: Some(holder) }) => {
                Err(StateError::Locked { shoot: shoot.to_string(), holder, release: LockRelease::Session })
            }
            Some(Hold::Lost { to: None }) => Err(self.error(format!(
                "the lock of workspace {shoot} was lost when the connection dropped, and another session holds it \
                 now; nothing more was committed; run the command again"
            ))),
        }
    }

    async fn try_lock(&self, shoot: &str, info: &LockInfo) -> Result<Acquired, Failure> {
        let mut lc = self.locks.lock().await;
        if let Some(held) = lc.held.get(shoot) {
            if held.kept() {
                if held.info.id == info.id {
                    return Ok(Acquired::Fresh);
                }
                return Err(Failure::Final(StateError::Locked {
                    shoot: shoot.to_string(),
                    holder: held.info.clone(),
                    release: LockRelease::Session,
                }));
            }
            lc.held.remove(shoot); // lost: try to take it again
        }
        let (client, statements) = self.lock_conn(&mut lc).await?;
        let classify = |e| self.classify(e);
        // A session that has just taken the lock records itself right after: wait for it a moment.
        let mut tries = 0;
        let stale = loop {
            let (got, old) = take(client, statements, shoot, info).await.map_err(classify)?;
            if got {
                break old;
            }
            if let Some(holder) = old {
                return Err(Failure::Final(StateError::Locked {
                    shoot: shoot.to_string(),
                    holder,
                    release: LockRelease::Session,
                }));
            }
            tries += 1;
            if tries == 20 {
                return Err(Failure::Final(self.error(format!(
                    "workspace {shoot} is locked by a database session that did not record itself (a trellis that \
                     is starting, or one whose lock key collides); wait for it to finish"
                ))));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        // The advisory lock is ours: a record that was there is a crashed process's.
        lc.held.insert(shoot.to_string(), Held { info: info.clone(), hold: Hold::Kept });
        Ok(match stale {
            Some(old) if old.id != info.id => Acquired::BrokeStale(old),
            _ => Acquired::Fresh,
        })
    }

    async fn try_unlock(&self, shoot: &str, lock_id: &str) -> Result<(), Failure> {
        let mut lc = self.locks.lock().await;
        let held = lc.held.get(shoot).map(|h| (h.info.id.clone(), h.kept()));
        let (client, statements) = self.lock_conn(&mut lc).await?;
        if held.as_ref().is_some_and(|(id, kept)| id == lock_id && *kept) {
            // Ours: its record and its advisory lock go in one round trip.
            client
                .query_one(&statements.release, &[&shoot, &lock_id, &lock_key(shoot)])
                .await
                .map_err(|e| self.classify(e))?;
            lc.held.remove(shoot);
            return Ok(());
        }
        if let Some(holder) = read_holder(client, shoot).await.map_err(|e| self.classify(e))? {
            if holder.id != lock_id {
                return Err(Failure::Final(StateError::Locked {
                    shoot: shoot.to_string(),
                    holder,
                    release: LockRelease::Session,
                }));
            }
            client
                .execute("DELETE FROM trellis_locks WHERE shoot = $1 AND lock_id = $2", &[&shoot, &lock_id])
                .await
                .map_err(|e| self.classify(e))?;
        }
        if let Some((id, kept)) = held {
            if id == lock_id {
                if kept {
                    advisory_unlock(client, shoot).await.map_err(|e| self.classify(e))?;
                }
                lc.held.remove(shoot);
            }
        }
        Ok(())
    }

    async fn try_force_unlock(&self, shoot: &str) -> Result<Option<LockInfo>, Failure> {
        let mut lc = self.locks.lock().await;
        let ours = lc.held.get(shoot).is_some_and(Held::kept);
        let (client, _) = self.lock_conn(&mut lc).await?;
        // Another session's live lock is the lock, not its record: removing the record would leave the
        // lock in force and hide who holds it. It ends with that session.
        if !ours {
            if let Some(holder) = self.live_locks(client, Some(shoot)).await?.remove(shoot) {
                return Err(Failure::Final(StateError::Locked {
                    shoot: shoot.to_string(),
                    holder,
                    release: LockRelease::Session,
                }));
            }
        }
        let row = client
            .query_opt("DELETE FROM trellis_locks WHERE shoot = $1 RETURNING holder", &[&shoot])
            .await
            .map_err(|e| self.classify(e))?;
        if ours {
            advisory_unlock(client, shoot).await.map_err(|e| self.classify(e))?;
        }
        lc.held.remove(shoot);
        row.map(|row| parse_holder(shoot, row.get(0))).transpose().map_err(Failure::Final)
    }

    async fn lock_holder(&self, shoot: &str) -> Result<Option<LockInfo>, Failure> {
        let client = self.client().await?;
        Ok(self.live_locks(&client, Some(shoot)).await?.remove(shoot))
    }

    /// Releases every lock this store holds (records removed, advisory locks released).
    async fn release_all(&self) -> Result<(), StateError> {
        let mut lc = self.locks.lock().await;
        let held = std::mem::take(&mut lc.held);
        let Some((client, statements)) = lc.client.take().filter(|(c, _)| !c.is_closed()) else {
            return Ok(()); // the session is gone, and its advisory locks with it
        };
        for (shoot, held) in held.into_iter().filter(|(_, h)| h.kept()) {
            client
                .query_one(&statements.release, &[&shoot, &held.info.id, &lock_key(&shoot)])
                .await
                .map_err(|e| self.error(format!("releasing the lock of workspace {shoot}: {}", self.words(&e))))?;
        }
        Ok(())
    }

    // ---- remove ----

    /// [`StateStore::remove`]: one transaction — the row compared and deleted, the removal's history
    /// entry added, the history renamed to [`crate::removed_name`] (never deleted) —, retried through
    /// dropped connections; after a failure whose outcome is unknown, the removal's entry is looked up
    /// first, so a removal that went through is never reported as failed.
    async fn remove(&self, shoot: String, lineage: String, serial: u64) -> Result<String, StateError> {
        self.check_lock_kept(&shoot).await?;
        let name = crate::removed_name(&shoot, &lineage, serial);
        let next = serial.checked_add(1).ok_or_else(|| StateError::Corrupt {
            shoot: shoot.clone(),
            detail: "its serial cannot be incremented any further".to_string(),
        })?;
        let mut unsure = false;
        self.retry("removing the workspace", || {
            let was_unsure = std::mem::replace(&mut unsure, true);
            let (shoot, lineage, name) = (&shoot, &lineage, &name);
            Box::pin(async move {
                if was_unsure && self.is_removed(name, next).await? {
                    return Ok(());
                }
                self.try_remove(shoot, lineage, serial, name).await
            })
        })
        .await?;
        Ok(name)
    }

    async fn try_remove(&self, shoot: &str, lineage: &str, serial: u64, name: &str) -> Result<(), Failure> {
        let conflict = |detail: String| Failure::Final(StateError::Conflict { shoot: shoot.to_string(), detail });
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.classify(e))?;
        let row = tx
            .query_opt(
                "SELECT lineage, serial, checksum FROM trellis_workspaces WHERE shoot = $1 FOR UPDATE",
                &[&shoot],
            )
            .await
            .map_err(|e| self.classify(e))?;
        let Some(row) = row else {
            return Err(conflict("the workspace is not stored (another run removed it)".to_string()));
        };
        let (stored_lineage, stored_serial): (&str, i64) = (row.get(0), row.get(1));
        if stored_lineage != lineage || to_u64(stored_serial) != serial {
            return Err(conflict(format!(
                "the stored workspace is at serial {stored_serial} of lineage {stored_lineage}, not at serial \
                 {serial} of lineage {lineage} (another run committed in between)"
            )));
        }
        let taken = tx
            .query_opt("SELECT 1 FROM trellis_history WHERE shoot = $1 LIMIT 1", &[&name])
            .await
            .map_err(|e| self.classify(e))?;
        if taken.is_some() {
            return Err(Failure::Final(StateError::RemoveRefused {
                shoot: shoot.to_string(),
                detail: format!(
                    "trellis_history holds versions under {name} already (an earlier removal of this version); \
                     commit a change first, or rename those rows"
                ),
            }));
        }
        let entry = HistoryEntry {
            serial: serial + 1,
            operation: crate::REMOVE_OPERATION.to_string(),
            at: now_rfc3339(),
            resources: 0,
            checksum: None,
            previous: Some(row.get::<_, String>(2)),
        };
        let entry_json = serde_json::to_string(&entry).expect("a history entry serialises");
        let next = to_i64(shoot, serial + 1)?;
        self.insert_history(&tx, shoot, next, &entry_json, None, None, Some(serial)).await?;
        tx.execute("UPDATE trellis_history SET shoot = $2 WHERE shoot = $1", &[&shoot, &name])
            .await
            .map_err(|e| self.classify(e))?;
        tx.execute("DELETE FROM trellis_workspaces WHERE shoot = $1", &[&shoot]).await.map_err(|e| self.classify(e))?;
        tx.commit().await.map_err(|e| self.classify(e))
    }

    /// Whether the removal entry at `serial` is stored under `name` (the removal committed).
    async fn is_removed(&self, name: &str, serial: u64) -> Result<bool, Failure> {
        let client = self.client().await?;
        let serial = to_i64(name, serial)?;
        let row = client
            .query_opt("SELECT 1 FROM trellis_history WHERE shoot = $1 AND serial = $2", &[&name, &serial])
            .await
            .map_err(|e| self.classify(e))?;
        Ok(row.is_some())
    }

    // ---- push, export, import ----

    async fn push(&self, ws: Workspace, force: bool) -> Result<u64, StateError> {
        let shoot = ws.shoot.clone();
        let refused = |detail: String| StateError::PushRefused { shoot: shoot.clone(), detail };
        // The stored version's (lineage, serial). A forced push is how a damaged version is replaced, so
        // it reads them from the row's columns when the document does not match its checksum.
        let current = match self.retry("reading the workspace", || Box::pin(self.load(&shoot))).await {
            Ok(current) => current.map(|stored| (stored.lineage, stored.serial)),
            Err(StateError::DamagedVersion { .. }) if force => {
                self.retry("reading the workspace", || Box::pin(self.stored_version(&shoot))).await?
            }
            Err(e) => return Err(e),
        };
        if let (Some((lineage, serial)), false) = (&current, force) {
            if *lineage != ws.lineage {
                return Err(refused(format!(
                    "the stored workspace has lineage {lineage} but the file has lineage {}: it belongs to another \
                     life of the workspace; pass --force to replace the stored one anyway",
                    ws.lineage
                )));
            }
            if ws.serial < *serial {
                return Err(refused(format!(
                    "the file is at serial {} but the stored workspace is at serial {serial}: pushing it would roll \
                     the state back; pass --force to do that on purpose",
                    ws.serial
                )));
            }
        }
        let mut next = ws.clone();
        next.serial = current
            .as_ref()
            .map_or(0, |(_, serial)| *serial)
            .max(ws.serial)
            .checked_add(1)
            .ok_or_else(|| refused("its serial cannot be incremented any further".to_string()))?;
        // A compare-and-swap against the version read above, under the stored lineage.
        let (lineage, expected) = current.unwrap_or_else(|| (next.lineage.clone(), 0));
        let checksum = version_checksum(&next);
        self.write_retried("pushing", &next, &checksum, || {
            Box::pin(self.try_push(&next, &lineage, expected, &checksum))
        })
        .await?;
        Ok(next.serial)
    }

    /// The (lineage, serial) columns of the stored row, without reading its document.
    async fn stored_version(&self, shoot: &str) -> Result<Option<(String, u64)>, Failure> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT lineage, serial FROM trellis_workspaces WHERE shoot = $1", &[&shoot])
            .await
            .map_err(|e| self.classify(e))?;
        Ok(row.map(|row| (row.get(0), to_u64(row.get(1)))))
    }

    async fn try_push(&self, next: &Workspace, lineage: &str, expected: u64, checksum: &str) -> Result<(), Failure> {
        let shoot = next.shoot.as_str();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.classify(e))?;
        let row = tx
            .query_opt(
                "SELECT lineage, serial, checksum FROM trellis_workspaces WHERE shoot = $1 FOR UPDATE",
                &[&shoot],
            )
            .await
            .map_err(|e| self.classify(e))?;
        let unchanged = match &row {
            None => expected == 0,
            Some(row) => row.get::<_, &str>(0) == lineage && to_u64(row.get(1)) == expected,
        };
        if !unchanged {
            return Err(Failure::Final(StateError::Conflict {
                shoot: shoot.to_string(),
                detail: "the stored workspace changed while it was being replaced".to_string(),
            }));
        }
        let entry = HistoryEntry {
            serial: next.serial,
            operation: "push".to_string(),
            at: now_rfc3339(),
            resources: next.resources.len(),
            checksum: Some(checksum.to_string()),
            previous: row.as_ref().map(|row| row.get(2)),
        };
        let stored = row.as_ref().map(|row| to_u64(row.get(1)));
        self.write_version(&tx, next, checksum, stored, &entry).await?;
        tx.commit().await.map_err(|e| self.classify(e))
    }

    async fn export(&self, shoot: &str) -> Result<Option<ExportedWorkspace>, Failure> {
        let Some(workspace) = self.load(shoot).await? else { return Ok(None) };
        let history = self.history(shoot).await?.into_iter().map(|(entry, _)| entry).collect();
        Ok(Some(ExportedWorkspace { workspace, history }))
    }

    async fn try_import(&self, exported: &ExportedWorkspace) -> Result<Imported, Failure> {
        let ws = &exported.workspace;
        let shoot = ws.shoot.as_str();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.classify(e))?;
        let row = tx
            .query_opt("SELECT lineage, serial FROM trellis_workspaces WHERE shoot = $1 FOR UPDATE", &[&shoot])
            .await
            .map_err(|e| self.classify(e))?;
        if let Some(row) = row {
            return already_there(row.get(0), to_u64(row.get(1)), ws).map_err(Failure::Final);
        }
        let checksum = version_checksum(ws);
        let document = serde_json::to_string(ws).expect("a workspace serialises");
        let serial = to_i64(shoot, ws.serial)?;
        let resources = i64::try_from(ws.resources.len()).unwrap_or(i64::MAX);
        let written = tx
            .execute(
                "INSERT INTO trellis_workspaces (shoot, lineage, serial, resources, document, checksum) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (shoot) DO NOTHING",
                &[&shoot, &ws.lineage, &serial, &resources, &document, &checksum],
            )
            .await
            .map_err(|e| self.classify(e))?;
        if written != 1 {
            // Stored by someone else meanwhile: the next attempt compares with it.
            return Err(Failure::Transient(format!("workspace {shoot} was stored while it was being imported")));
        }
        self.refuse_history_without_row(&tx, shoot).await?;
        for entry in &exported.history {
            let entry_serial = to_i64(shoot, entry.serial)?;
            let entry_json = serde_json::to_string(entry).expect("a history entry serialises");
            // Full versions are kept for the versions this database stored; of an imported history only
            // the current version's document is known.
            let (doc, sum) = if entry.serial == ws.serial {
                (Some(document.as_str()), Some(checksum.as_str()))
            } else {
                (None, entry.checksum.as_deref())
            };
            self.insert_history(&tx, shoot, entry_serial, &entry_json, doc, sum, None).await?;
        }
        tx.commit().await.map_err(|e| self.classify(e))?;
        Ok(Imported::Created)
    }

    /// [`StateStore::removed_histories`]: the names in `trellis_history` that hold removed workspaces'
    /// histories ([`crate::removed_name`]), sorted by bytes as sled's are (not by the database's collation).
    async fn removed_histories(&self) -> Result<Vec<String>, Failure> {
        let client = self.client().await?;
        // `.` and `-` are literal in a `LIKE` pattern: it chooses exactly the names `removed_owner` takes.
        let pattern = format!("%{}%", crate::REMOVED_MARK);
        let rows = client
            .query("SELECT DISTINCT shoot FROM trellis_history WHERE shoot LIKE $1", &[&pattern])
            .await
            .map_err(|e| self.classify(e))?;
        let mut names: Vec<String> = rows.iter().map(|row| row.get::<_, String>(0)).collect();
        names.sort();
        Ok(names)
    }

    /// One attempt at [`StateStore::import_removed_history`], in one transaction.
    async fn try_import_removed(&self, name: &str, history: &[HistoryEntry]) -> Result<Imported, Failure> {
        let stored: Vec<HistoryEntry> = self.history(name).await?.into_iter().map(|(entry, _)| entry).collect();
        if !stored.is_empty() {
            return crate::same_removed_history(name, &stored, history).map_err(Failure::Final);
        }
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.classify(e))?;
        for entry in history {
            let serial = to_i64(name, entry.serial)?;
            let json = serde_json::to_string(entry).expect("a history entry serialises");
            // Of an imported history only the checksums are known, not the versions' documents.
            if let Err(e) = self.insert_history(&tx, name, serial, &json, None, entry.checksum.as_deref(), None).await {
                // Stored by someone else meanwhile: the next attempt compares with it.
                return Err(match e {
                    Failure::Final(StateError::BehindHistory { .. }) => {
                        Failure::Transient(format!("history {name} was stored while it was being imported"))
                    }
                    other => other,
                });
            }
        }
        tx.commit().await.map_err(|e| self.classify(e))?;
        Ok(Imported::Created)
    }
}

/// Tries the advisory lock of `shoot` and, if it got it, records `info` as the holder, in one round
/// trip. Returns whether it got the lock and the record that was there before. A failure after the
/// advisory lock was taken (the record could not be written) lets go of it again.
async fn take(
    client: &Client,
    statements: &LockStatements,
    shoot: &str,
    info: &LockInfo,
) -> Result<(bool, Option<LockInfo>), tokio_postgres::Error> {
    let holder = serde_json::to_string(info).expect("a lock record serialises");
    match client.query_one(&statements.take, &[&shoot, &lock_key(shoot), &info.id, &holder]).await {
        // A record that does not parse names no one; a refusal is still refused by the advisory lock.
        Ok(row) => Ok((row.get(0), row.get::<_, Option<&str>>(1).and_then(|old| serde_json::from_str(old).ok()))),
        Err(e) => {
            let _ = advisory_unlock(client, shoot).await;
            Err(e)
        }
    }
}

async fn advisory_unlock(client: &Client, shoot: &str) -> Result<(), tokio_postgres::Error> {
    client.query_one("SELECT pg_advisory_unlock($1)", &[&lock_key(shoot)]).await.map(drop)
}

async fn read_holder(client: &Client, shoot: &str) -> Result<Option<LockInfo>, tokio_postgres::Error> {
    let row = client.query_opt("SELECT holder FROM trellis_locks WHERE shoot = $1", &[&shoot]).await?;
    // A record that does not parse names no one; the lock is still refused by its advisory lock.
    Ok(row.and_then(|row| serde_json::from_str(row.get(0)).ok()))
}

fn parse_holder(shoot: &str, raw: &str) -> Result<LockInfo, StateError> {
    serde_json::from_str(raw).map_err(|e| StateError::Corrupt {
        shoot: shoot.to_string(),
        detail: format!("its lock record does not parse ({e}); `trellis state unlock {shoot}` removes it"),
    })
}

impl StateStore for PgStore {
    fn list(&self) -> Result<Vec<WorkspaceSummary>, StateError> {
        let inner = self.inner.clone();
        self.run(async move { inner.retry("listing workspaces", || Box::pin(inner.list())).await })
    }

    fn load(&self, shoot: &str) -> Result<Option<Workspace>, StateError> {
        let (inner, shoot) = (self.inner.clone(), shoot.to_string());
        self.run(async move { inner.retry("reading the workspace", || Box::pin(inner.load(&shoot))).await })
    }

    fn commit(&self, ws: &mut Workspace, operation: &str) -> Result<(), StateError> {
        let mut next = ws.clone();
        next.serial = ws.serial.checked_add(1).ok_or_else(|| StateError::Corrupt {
            shoot: ws.shoot.clone(),
            detail: "its serial cannot be incremented any further".to_string(),
        })?;
        let (inner, expected, operation) = (self.inner.clone(), ws.serial, operation.to_string());
        let serial = next.serial;
        self.run(async move { inner.commit(next, expected, operation).await })?;
        ws.serial = serial;
        Ok(())
    }

    fn history(&self, shoot: &str) -> Result<Vec<HistoryEntry>, StateError> {
        let (inner, shoot) = (self.inner.clone(), shoot.to_string());
        let history =
            self.run(async move { inner.retry("reading the history", || Box::pin(inner.history(&shoot))).await })?;
        Ok(history.into_iter().map(|(entry, _)| entry).collect())
    }

    fn lock(&self, shoot: &str, info: &LockInfo) -> Result<Acquired, StateError> {
        let (inner, shoot, info) = (self.inner.clone(), shoot.to_string(), info.clone());
        self.run(async move { inner.retry("locking the workspace", || Box::pin(inner.try_lock(&shoot, &info))).await })
    }

    fn unlock(&self, shoot: &str, lock_id: &str) -> Result<(), StateError> {
        let (inner, shoot, id) = (self.inner.clone(), shoot.to_string(), lock_id.to_string());
        self.run(
            async move { inner.retry("unlocking the workspace", || Box::pin(inner.try_unlock(&shoot, &id))).await },
        )
    }

    fn force_unlock(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        let (inner, shoot) = (self.inner.clone(), shoot.to_string());
        self.run(async move {
            inner.retry("removing the workspace lock", || Box::pin(inner.try_force_unlock(&shoot))).await
        })
    }

    fn lock_holder(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        let (inner, shoot) = (self.inner.clone(), shoot.to_string());
        self.run(async move { inner.retry("reading the workspace lock", || Box::pin(inner.lock_holder(&shoot))).await })
    }

    fn push(&self, ws: &Workspace, force: bool) -> Result<u64, StateError> {
        let (inner, ws) = (self.inner.clone(), ws.clone());
        self.run(async move { inner.push(ws, force).await })
    }

    fn remove(&self, shoot: &str, lineage: &str, serial: u64) -> Result<String, StateError> {
        let (inner, shoot, lineage) = (self.inner.clone(), shoot.to_string(), lineage.to_string());
        self.run(async move { inner.remove(shoot, lineage, serial).await })
    }

    fn export(&self, shoot: &str) -> Result<Option<ExportedWorkspace>, StateError> {
        let (inner, shoot) = (self.inner.clone(), shoot.to_string());
        self.run(async move { inner.retry("exporting the workspace", || Box::pin(inner.export(&shoot))).await })
    }

    fn import(&self, exported: &ExportedWorkspace) -> Result<Imported, StateError> {
        let (inner, exported) = (self.inner.clone(), exported.clone());
        self.run(async move { inner.retry("importing the workspace", || Box::pin(inner.try_import(&exported))).await })
    }

    fn removed_histories(&self) -> Result<Vec<String>, StateError> {
        let inner = self.inner.clone();
        self.run(async move {
            inner.retry("listing the histories of removed workspaces", || Box::pin(inner.removed_histories())).await
        })
    }

    fn import_removed_history(&self, name: &str, history: &[HistoryEntry]) -> Result<Imported, StateError> {
        let (inner, name, history) = (self.inner.clone(), name.to_string(), history.to_vec());
        self.run(async move {
            inner
                .retry("importing the history of a removed workspace", || {
                    Box::pin(inner.try_import_removed(&name, &history))
                })
                .await
        })
    }
}
