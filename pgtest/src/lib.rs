//! A throwaway PostgreSQL server for tests: `initdb` and `postgres` from the machine's PostgreSQL
//! binaries, on a temporary directory and a free loopback port, stopped and removed when dropped.
//!
//! One server per test process is enough: [`PgServer::create_database`] gives each test a database of
//! its own. nextest runs each test in a process of its own, so a server is started per PostgreSQL test:
//! its cluster is a copy of one made by `initdb` once per machine (`PgServer::template`), which makes a
//! start ~0.3 s instead of ~2 s; each server is still stopped and removed when the last handle to it
//! drops. The server runs with `fsync` on, like a real one. `initdb` refuses to run as root: as
//! root, the server's commands run as `nobody` (through `runuser`), and the directory is handed to it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The user the server's database superuser is called.
const SUPERUSER: &str = "trellis";

/// How every cluster is made (see [`PgServer::template`]).
const INITDB_ARGS: [&str; 6] = ["-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync"];

/// A running PostgreSQL server on 127.0.0.1.
pub struct PgServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// Run the server's commands as `nobody` (this process is root).
    as_nobody: bool,
    running: bool,
    /// TLS on (`ssl=on` with `server.crt` and `server.key` in the data directory).
    tls: bool,
}

static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The server the tests of one test process share ([`PgServer::shared`]).
static SHARED: Mutex<Weak<PgServer>> = Mutex::new(Weak::new());

impl PgServer {
    /// The server shared by the tests of this test process that run at the same time: started by the
    /// first that needs it, stopped when the last one using it drops its handle. A missing PostgreSQL
    /// fails the test with the one line saying what to install.
    pub fn shared() -> Arc<PgServer> {
        let mut slot = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = slot.upgrade() {
            return server;
        }
        let server = Arc::new(PgServer::start().unwrap_or_else(|e| panic!("{e}")));
        *slot = Arc::downgrade(&server);
        server
    }

    /// Makes a new cluster in a temporary directory and starts it on a free loopback port. `Err`: one
    /// line saying what is missing or what failed.
    pub fn start() -> Result<PgServer, String> {
        PgServer::start_with(None)
    }

    /// [`PgServer::start`] with TLS on: the server presents `cert_pem` (a PEM certificate chain, the
    /// server's first) with its private key `key_pem`, and still accepts plaintext sessions.
    pub fn start_with_tls(cert_pem: &str, key_pem: &str) -> Result<PgServer, String> {
        PgServer::start_with(Some((cert_pem, key_pem)))
    }

    fn start_with(tls: Option<(&str, &str)>) -> Result<PgServer, String> {
        let bin = find_bin()?;
        let dir = tempfile::Builder::new().prefix("trellis-pg-").tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let as_nobody = euid_is_root();
        if as_nobody {
            run(Command::new("chown").arg("nobody").arg(dir.path()))?;
        }
        let mut server = PgServer { bin, dir, port: 0, as_nobody, running: false, tls: tls.is_some() };
        let template = server.template()?;
        run(Command::new("cp").arg("-a").arg(&template).arg(server.data()))?;
        if let Some((cert, key)) = tls {
            server.install_tls_files(cert, key)?;
        }
        // A port that was free when we looked may be taken before the server binds it: try again.
        let mut last = String::new();
        for _ in 0..5 {
            server.port = free_port()?;
            match server.pg_start() {
                Ok(()) => return Ok(server),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// URL of database `name` on this server (it need not exist).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates a new database with a name made from `name` (unique in this process) and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        let n = DATABASES.fetch_add(1, Ordering::Relaxed);
        let clean: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
            .take(40)
            .collect();
        let db = format!("{clean}_{n}");
        self.psql("postgres", &format!("CREATE DATABASE \"{db}\""))?;
        Ok(self.url(&db))
    }

    /// Runs `sql` in database `db` as the superuser; returns what `psql` printed (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = run(Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", SUPERUSER])
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-d")
            .arg(db)
            .arg("-c")
            .arg(sql))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Ends every session connected to database `db` (`pg_terminate_backend`, waiting up to 10 s for
    /// each to be gone): what a dropped connection or a killed client looks like to the server. When it
    /// returns, the sessions' locks are released and their clients have been told.
    pub fn kill_connections(&self, db: &str) -> Result<usize, String> {
        let out = self.psql(
            "postgres",
            &format!(
                "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE datname = '{}' AND pid <> \
                 pg_backend_pid()",
                db.replace('\'', "''")
            ),
        )?;
        out.parse().map_err(|e| format!("pg_terminate_backend count {out:?}: {e}"))
    }

    /// Stops the server (fast shutdown: sessions are ended) and starts it again on the same port.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop()?;
        self.pg_start()
    }

    /// Stops the server (fast shutdown). [`PgServer::start_again`] starts it again.
    pub fn stop(&mut self) -> Result<(), String> {
        if self.running {
            let data = self.data();
            self.run_pg("pg_ctl", |c| {
                c.arg("-D").arg(&data).args(["-m", "fast", "-w", "stop"]);
            })?;
            self.running = false;
        }
        Ok(())
    }

    /// Starts a stopped server again on its port.
    pub fn start_again(&mut self) -> Result<(), String> {
        self.pg_start()
    }

    fn pg_start(&mut self) -> Result<(), String> {
        let data = self.data();
        let log = self.dir.path().join("log");
        let mut opts = format!("-p {} -k '' -c listen_addresses=127.0.0.1 -c max_connections=200", self.port);
        if self.tls {
            opts.push_str(" -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key");
        }
        self.run_pg("pg_ctl", |c| {
            c.arg("-D").arg(&data).arg("-o").arg(&opts).arg("-l").arg(&log).args(["-w", "-t", "30", "start"]);
        })
        .map_err(|e| {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let last = log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            format!("{e}; server log: {last}")
        })?;
        self.running = true;
        Ok(())
    }

    /// The cluster every server of this machine starts from, made once by `initdb` and copied (`cp -a`,
    /// ~0.1 s) into each server's directory: `initdb` takes ~1.5 s, and under nextest, which runs every
    /// test in a process of its own, each PostgreSQL test starts a server of its own. Kept in the
    /// temporary directory under a name that changes with the PostgreSQL binaries and the `initdb`
    /// options; a process that finds none makes one beside it and renames it into place, so concurrent
    /// processes never see half a cluster (the loser of a race drops its copy). It is only files: no
    /// server runs on it.
    fn template(&self) -> Result<PathBuf, String> {
        use std::hash::{Hash, Hasher};
        let initdb = self.bin.join("initdb");
        let modified =
            std::fs::metadata(&initdb).and_then(|m| m.modified()).map_err(|e| format!("{}: {e}", initdb.display()))?;
        let mut key = std::collections::hash_map::DefaultHasher::new();
        (&self.bin, modified, INITDB_ARGS, self.as_nobody).hash(&mut key);
        let template = std::env::temp_dir().join(format!("trellis-pg-template-{:016x}", key.finish()));
        if template.join("data/global/pg_control").is_file() {
            return Ok(template.join("data"));
        }
        let fresh = tempfile::Builder::new()
            .prefix("trellis-pg-template-new-")
            .tempdir_in(std::env::temp_dir())
            .map_err(|e| format!("temp dir: {e}"))?;
        if self.as_nobody {
            run(Command::new("chown").arg("nobody").arg(fresh.path()))?;
        }
        let data = fresh.path().join("data");
        self.run_pg("initdb", |c| {
            c.current_dir(fresh.path()).arg("-D").arg(&data).args(INITDB_ARGS);
        })?;
        let fresh = fresh.keep();
        if let Err(e) = std::fs::rename(&fresh, &template) {
            // Another process put its template in place first: use that one.
            let _ = std::fs::remove_dir_all(&fresh);
            if !template.join("data/global/pg_control").is_file() {
                return Err(format!("{}: not a PostgreSQL cluster ({e}): remove it", template.display()));
            }
        }
        Ok(template.join("data"))
    }

    /// Writes the server's certificate and key into the data directory, owned by the server's user, the
    /// key readable by it alone (the server refuses a key others can read).
    fn install_tls_files(&self, cert: &str, key: &str) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt as _;
        let data = self.data();
        for (name, text, mode) in [("server.crt", cert, 0o644), ("server.key", key, 0o600)] {
            let path = data.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if self.as_nobody {
                run(Command::new("chown").arg("nobody").arg(&path))?;
            }
        }
        Ok(())
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs one of the server's commands (as `nobody` when this process is root).
    fn run_pg(&self, name: &str, args: impl FnOnce(&mut Command)) -> Result<Output, String> {
        let exe = self.bin.join(name);
        let mut cmd = if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.current_dir(self.dir.path());
        args(&mut cmd);
        run(&mut cmd)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            let data = self.data();
            let _ = self.run_pg("pg_ctl", |c| {
                c.arg("-D").arg(&data).args(["-m", "immediate", "-w", "stop"]);
            });
        }
        // The temporary directory is removed by `TempDir`'s own drop.
    }
}

/// Runs `cmd`; `Err` names it with its stderr when it fails.
fn run(cmd: &mut Command) -> Result<Output, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stderr = stderr.lines().filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join(" / ");
        return Err(format!("{:?} failed ({}): {stderr}", cmd.get_program(), out.status));
    }
    Ok(out)
}

/// The directory holding `initdb`, `pg_ctl`, `postgres` and `psql`: on PATH, else the newest
/// `/usr/lib/postgresql/*/bin`.
fn find_bin() -> Result<PathBuf, String> {
    find_bin_in(std::env::var_os("PATH"), Path::new("/usr/lib/postgresql"))
}

fn find_bin_in(path: Option<std::ffi::OsString>, lib: &Path) -> Result<PathBuf, String> {
    let has_all = |dir: &Path| ["initdb", "pg_ctl", "postgres", "psql"].iter().all(|b| dir.join(b).is_file());
    if let Some(path) = path {
        if let Some(dir) = std::env::split_paths(&path).find(|d| has_all(d)) {
            return Ok(dir);
        }
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(lib)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            has_all(&bin).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: install PostgreSQL 15 (Debian: apt-get \
         install postgresql-15) or put its bin dir on PATH"
            .to_string()
    })
}

fn euid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let uid = s.lines().find(|l| l.starts_with("Uid:"))?.split_whitespace().nth(2)?.to_string();
            Some(uid == "0")
        })
        .unwrap_or(false)
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free loopback port: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| format!("no free loopback port: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_binaries_are_one_line_saying_what_to_install() {
        let empty = tempfile::tempdir().unwrap();
        let err = find_bin_in(Some(empty.path().into()), &empty.path().join("none")).unwrap_err();
        assert_eq!(
            err,
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: install PostgreSQL 15 (Debian: \
             apt-get install postgresql-15) or put its bin dir on PATH"
        );
    }

    #[test]
    fn the_newest_installed_version_is_used_when_path_has_none() {
        let lib = tempfile::tempdir().unwrap();
        for version in ["13", "15", "9"] {
            let bin = lib.path().join(version).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            for b in ["initdb", "pg_ctl", "postgres", "psql"] {
                std::fs::write(bin.join(b), "").unwrap();
            }
        }
        assert_eq!(find_bin_in(None, lib.path()).unwrap(), lib.path().join("15/bin"));
    }

    #[test]
    fn a_server_starts_gives_databases_and_restarts() {
        let mut pg = PgServer::start().unwrap();
        let url = pg.create_database("first test").unwrap();
        assert!(url.starts_with(&format!("postgres://trellis@127.0.0.1:{}/first_test_", pg.port())));
        let db = url.rsplit('/').next().unwrap();
        assert_eq!(pg.psql(db, "SELECT 40 + 2").unwrap(), "42");
        pg.restart().unwrap();
        assert_eq!(pg.psql(db, "SELECT 1").unwrap(), "1");
        let dir = pg.dir.path().to_path_buf();
        drop(pg);
        assert!(!dir.exists());
    }
}
