//! The PostgreSQL backend's schema: embedded, versioned migrations, applied in order on connect.
//!
//! Version N of the schema is the state after the first N entries of [`MIGRATIONS`]; which versions
//! a database has is recorded in `trellis_schema_migrations`. A migration is never changed once
//! released: a change to the schema is a new entry at the end.

use crate::StateError;
use tokio_postgres::Client;

/// Key of the advisory lock held while migrations are applied (so two first uses don't race):
/// "trellis" + "mig" as bytes.
const MIGRATION_LOCK: i64 = 0x7472_656c_6c69_736d;

/// The migrations, in order: (version, SQL).
pub(crate) const MIGRATIONS: &[(i32, &str)] = &[(
    1,
    "CREATE TABLE trellis_workspaces (
        shoot     text    PRIMARY KEY,
        lineage   text    NOT NULL,
        serial    bigint  NOT NULL,
        resources bigint  NOT NULL,
        document  text    NOT NULL,
        checksum  text    NOT NULL
    );
    CREATE TABLE trellis_history (
        shoot    text   NOT NULL,
        serial   bigint NOT NULL,
        entry    text   NOT NULL,
        document text,
        checksum text,
        PRIMARY KEY (shoot, serial)
    );
    CREATE TABLE trellis_locks (
        shoot   text   PRIMARY KEY,
        key     bigint NOT NULL,
        lock_id text   NOT NULL,
        holder  text   NOT NULL
    );",
)];

/// The newest schema version this trellis knows.
pub(crate) fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |(v, _)| *v)
}

pub(crate) enum Error {
    Client(tokio_postgres::Error),
    State(StateError),
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Error {
        Error::Client(e)
    }
}

/// Brings the database to [`latest`] under the migration advisory lock (held by `client`'s session,
/// which the caller ends afterwards). A database at a newer version is refused.
pub(crate) async fn migrate(client: &Client, location: &str) -> Result<(), Error> {
    // Without the lock first: a database that is up to date needs no CREATE privilege and no waiting.
    if current(client).await? == Some(latest()) {
        return Ok(());
    }
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK]).await?;
    let result = migrate_locked(client, location).await;
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]).await;
    result?;
    unlocked?;
    Ok(())
}

async fn migrate_locked(client: &Client, location: &str) -> Result<(), Error> {
    let version = match current(client).await? {
        Some(version) => version,
        None => {
            client
                .batch_execute(
                    "CREATE TABLE IF NOT EXISTS trellis_schema_migrations (
                        version    integer     PRIMARY KEY,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )",
                )
                .await?;
            0
        }
    };
    if version > latest() {
        return Err(Error::State(StateError::NewerSchema {
            location: location.to_string(),
            version,
            supported: latest(),
        }));
    }
    for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > version) {
        client.batch_execute("BEGIN").await?;
        let applied = async {
            client.batch_execute(sql).await?;
            client.execute("INSERT INTO trellis_schema_migrations (version) VALUES ($1)", &[v]).await?;
            client.batch_execute("COMMIT").await
        }
        .await;
        if let Err(e) = applied {
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(e.into());
        }
    }
    Ok(())
}

/// The schema version of the database; `None` when it has no migrations table yet.
async fn current(client: &Client) -> Result<Option<i32>, Error> {
    let exists: bool =
        client.query_one("SELECT to_regclass('trellis_schema_migrations') IS NOT NULL", &[]).await?.get(0);
    if !exists {
        return Ok(None);
    }
    let version: Option<i32> =
        client.query_one("SELECT max(version) FROM trellis_schema_migrations", &[]).await?.get(0);
    Ok(Some(version.unwrap_or(0)))
}
