//! Where a command's state and simulated clouds live: `--state DIR|URL` (or `TRELLIS_STATE`) picks the
//! state backend ([`Store`]: a sled dir or PostgreSQL), `--sim-dir` the simulated clouds' own sled dir
//! ([`SimPlace`]). [`Backend`] is the two opened together for a command that plans or applies.
//!
//! The simulated cloud is not state. With a sled `--state` and no `--sim-dir` it lives in the state dir
//! itself, as it always has: its writes then join the state's grouped flushes. Otherwise it lives in a
//! sled dir of its own, flushed before every state commit, so that a cloud write is durable before the
//! state records it (as with a real cloud).

// `StateError` is the state crate's error, returned as it is (the state crate allows the same lint).
#![allow(clippy::result_large_err)]

use anyhow::Result;
use std::path::{Path, PathBuf};
use trellis_state::{
    Acquired, HistoryEntry, LockInfo, LockTarget, LockWait, SledStore, StateError, StateStore, Workspace,
    WorkspaceSummary,
};

pub use trellis_state::StateLocation;

/// The state of a command: a sled dir or a PostgreSQL database.
pub enum Store {
    /// Boxed: a sled store is large, and a store is made once per command.
    Sled(Box<SledStore>),
    Postgres(trellis_state::PgStore),
}

impl Store {
    /// Opens the state at `location` for `operation`, creating a sled dir if needed (a database must exist;
    /// its tables are created on first use). A sled dir another process holds is waited for as `wait`
    /// says (a database has no process lock: its workspaces are locked one by one).
    pub fn open(location: &StateLocation, operation: &str, wait: &LockWait) -> Result<Store, StateError> {
        Ok(match location {
            StateLocation::Dir(dir) => {
                let store = wait.acquire(&LockTarget::StateDir(dir.clone()), || SledStore::open(dir, operation))?;
                Store::Sled(Box::new(store))
            }
            StateLocation::Postgres(url) => Store::Postgres(trellis_state::PgStore::connect(url, operation)?),
        })
    }

    /// For commands that only read existing state: a sled dir is never created (`None`: there is none).
    pub fn open_existing(
        location: &StateLocation,
        operation: &str,
        wait: &LockWait,
    ) -> Result<Option<Store>, StateError> {
        Ok(match location {
            StateLocation::Dir(dir) => wait
                .acquire(&LockTarget::StateDir(dir.clone()), || SledStore::open_existing(dir, operation))?
                .map(|s| Store::Sled(Box::new(s))),
            StateLocation::Postgres(url) => Some(Store::Postgres(trellis_state::PgStore::connect(url, operation)?)),
        })
    }

    /// Ends the command: a sled dir is sealed and released, a database's locks and connections closed.
    pub fn close(self) -> Result<(), StateError> {
        match self {
            Store::Sled(s) => (*s).close(),
            Store::Postgres(s) => s.close(),
        }
    }

    /// Ends a command that failed: a sled dir this command created and recorded nothing in is removed
    /// again ([`SledStore::discard`]); a database is closed as by [`Store::close`].
    pub fn discard(self) -> Result<(), StateError> {
        match self {
            Store::Sled(s) => (*s).discard(),
            Store::Postgres(s) => s.close(),
        }
    }

    /// The time spent waiting on the database, for `--timings` (`None` for a sled dir).
    pub fn stats(&self) -> Option<trellis_state::PgStats> {
        match self {
            Store::Sled(_) => None,
            Store::Postgres(s) => Some(s.stats()),
        }
    }

    fn inner(&self) -> &dyn StateStore {
        match self {
            Store::Sled(s) => s.as_ref(),
            Store::Postgres(s) => s,
        }
    }
}

/// Every method as the backend's own.
impl StateStore for Store {
    fn list(&self) -> Result<Vec<WorkspaceSummary>, StateError> {
        self.inner().list()
    }
    fn load(&self, shoot: &str) -> Result<Option<Workspace>, StateError> {
        self.inner().load(shoot)
    }
    fn commit(&self, ws: &mut Workspace, operation: &str) -> Result<(), StateError> {
        self.inner().commit(ws, operation)
    }
    fn history(&self, shoot: &str) -> Result<Vec<HistoryEntry>, StateError> {
        self.inner().history(shoot)
    }
    fn lock(&self, shoot: &str, info: &LockInfo) -> Result<Acquired, StateError> {
        self.inner().lock(shoot, info)
    }
    fn unlock(&self, shoot: &str, lock_id: &str) -> Result<(), StateError> {
        self.inner().unlock(shoot, lock_id)
    }
    fn force_unlock(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        self.inner().force_unlock(shoot)
    }
    fn lock_holder(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        self.inner().lock_holder(shoot)
    }
    fn push(&self, ws: &Workspace, force: bool) -> Result<u64, StateError> {
        self.inner().push(ws, force)
    }
    fn remove(&self, shoot: &str, lineage: &str, serial: u64) -> Result<String, StateError> {
        self.inner().remove(shoot, lineage, serial)
    }
    fn export(&self, shoot: &str) -> Result<Option<trellis_state::ExportedWorkspace>, StateError> {
        self.inner().export(shoot)
    }
    fn import(&self, exported: &trellis_state::ExportedWorkspace) -> Result<trellis_state::Imported, StateError> {
        self.inner().import(exported)
    }
    fn removed_histories(&self) -> Result<Vec<String>, StateError> {
        self.inner().removed_histories()
    }
    fn import_removed_history(
        &self,
        name: &str,
        history: &[HistoryEntry],
    ) -> Result<trellis_state::Imported, StateError> {
        self.inner().import_removed_history(name, history)
    }
}

/// Where the simulated clouds live for one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimPlace {
    /// In the sled state dir, beside the state (a sled `--state` without `--sim-dir`).
    InState,
    /// In a sled dir of their own (`--sim-dir`; `.trellis/sim` by default with PostgreSQL).
    Dir(PathBuf),
    /// In a temporary dir removed at the end (PostgreSQL with `--endpoint` and no `--sim-dir`: the
    /// shoots' cloud is behind the endpoint; only the simulated DNS of domains plans is kept here, for the run).
    Temporary,
}

impl SimPlace {
    /// The place for `--state`, `--sim-dir` and whether `--endpoint` serves the cloud.
    pub fn choose(state: &StateLocation, sim_dir: Option<&Path>, endpoint: bool) -> SimPlace {
        match (state, sim_dir) {
            (_, Some(dir)) => SimPlace::Dir(dir.to_path_buf()),
            (StateLocation::Dir(_), None) => SimPlace::InState,
            (StateLocation::Postgres(_), None) if endpoint => SimPlace::Temporary,
            (StateLocation::Postgres(_), None) => SimPlace::Dir(PathBuf::from(DEFAULT_SIM_DIR)),
        }
    }
}

/// Where the simulated clouds live with a PostgreSQL `--state` and no `--sim-dir`.
pub const DEFAULT_SIM_DIR: &str = ".trellis/sim";

/// The simulated clouds' own sled dir.
pub struct SimDir {
    store: SledStore,
    /// A [`SimPlace::Temporary`] dir, removed when dropped (after `store`).
    _temp: Option<tempfile::TempDir>,
}

/// The state and the simulated clouds of a command that plans, applies or runs the simulator.
pub enum Backend {
    /// A sled state dir that also holds the simulated clouds.
    Sled(SledStore),
    /// The state (sled or PostgreSQL), and the simulated clouds in their own sled dir.
    Split { state: Store, sim: SimDir },
}

impl Backend {
    /// Opens the state and the simulated clouds' dir, waiting for a dir another process holds as `wait`
    /// says. A sim dir that stays held is refused naming the holder and saying how runners share a
    /// simulated cloud.
    pub fn open(state: &StateLocation, sim: &SimPlace, operation: &str, wait: &LockWait) -> Result<Backend> {
        let (state, dir, temp) = match (state, sim) {
            (StateLocation::Dir(dir), SimPlace::InState) => {
                let store = wait.acquire(&LockTarget::StateDir(dir.clone()), || SledStore::open(dir, operation))?;
                return Ok(Backend::Sled(store));
            }
            (StateLocation::Postgres(_), SimPlace::InState) => {
                anyhow::bail!("bug: the simulated cloud cannot live in a PostgreSQL database; please report")
            }
            (state, SimPlace::Dir(dir)) => (state, dir.clone(), None),
            (state, SimPlace::Temporary) => {
                let temp = tempfile::tempdir().map_err(|e| {
                    anyhow::anyhow!("cannot make a temporary dir for the simulated DNS: {e}; pass --sim-dir DIR")
                })?;
                (state, temp.path().join("sim"), Some(temp))
            }
        };
        if let StateLocation::Dir(state_dir) = state {
            if same_dir(state_dir, &dir) {
                anyhow::bail!(
                    "--sim-dir {} is the state dir; leave --sim-dir out to keep the simulated cloud in the state dir, or pass another dir",
                    dir.display()
                );
            }
        }
        let state = Store::open(state, operation, wait)?;
        let sim = match wait.acquire(&LockTarget::SimDir(dir.clone()), || SledStore::open(&dir, operation)) {
            Ok(store) => store,
            Err(e) => {
                let _ = state.discard();
                return Err(sim_dir_error(e));
            }
        };
        Ok(Backend::Split { state, sim: SimDir { store: sim, _temp: temp } })
    }

    /// A named sled tree of the simulated clouds' database.
    pub fn tree(&self, name: &str) -> Result<sled::Tree, StateError> {
        self.sim_store().tree(name)
    }

    /// [`Backend::tree`] `name` if the simulated clouds' database has it (without creating it).
    pub fn existing_tree(&self, name: &str) -> Result<Option<sled::Tree>, StateError> {
        self.sim_store().existing_tree(name)
    }

    /// The directory of the simulated clouds' database (the state dir, or the sim dir), which also
    /// holds their audit logs.
    pub fn sim_dir(&self) -> &std::path::Path {
        self.sim_store().dir()
    }

    /// Makes every write of the simulated clouds so far durable.
    pub fn flush(&self) -> Result<(), StateError> {
        self.sim_store().flush()
    }

    /// Has the simulated clouds' database store `pending` (the ARM simulator's deferred writes) in the
    /// transaction of each commit group; see [`trellis_state::PendingWrites`].
    pub fn store_with_commits(&self, pending: std::sync::Arc<dyn trellis_state::PendingWrites>) {
        self.sim_store().store_with_commits(pending)
    }

    /// The time spent waiting on the database, for `--timings` (`None` for a sled state dir).
    pub fn stats(&self) -> Option<trellis_state::PgStats> {
        match self {
            Backend::Sled(_) => None,
            Backend::Split { state, .. } => state.stats(),
        }
    }

    /// See [`Store::close`]; the simulated clouds' dir is closed (kept) too.
    pub fn close(self) -> Result<(), StateError> {
        match self {
            Backend::Sled(s) => s.close(),
            Backend::Split { state, sim } => {
                let sim = sim.store.close();
                state.close().and(sim)
            }
        }
    }

    /// See [`Store::discard`]. The simulated clouds' dir is kept (closed): a failed apply may have
    /// written to the cloud, and the cloud keeps what was written.
    pub fn discard(self) -> Result<(), StateError> {
        match self {
            Backend::Sled(s) => s.discard(),
            Backend::Split { state, sim } => {
                let sim = sim.store.close();
                state.discard().and(sim)
            }
        }
    }

    fn sim_store(&self) -> &SledStore {
        match self {
            Backend::Sled(s) => s,
            Backend::Split { sim, .. } => &sim.store,
        }
    }

    fn state(&self) -> &dyn StateStore {
        match self {
            Backend::Sled(s) => s,
            Backend::Split { state, .. } => state,
        }
    }
}

/// The state of the command; a commit first makes the simulated clouds' writes durable (with a
/// split sim dir), so the state never records a cloud write that could still be lost.
impl StateStore for Backend {
    fn list(&self) -> Result<Vec<WorkspaceSummary>, StateError> {
        self.state().list()
    }
    fn load(&self, shoot: &str) -> Result<Option<Workspace>, StateError> {
        self.state().load(shoot)
    }
    fn commit(&self, ws: &mut Workspace, operation: &str) -> Result<(), StateError> {
        if let Backend::Split { sim, .. } = self {
            sim.store.flush()?;
        }
        self.state().commit(ws, operation)
    }
    fn history(&self, shoot: &str) -> Result<Vec<HistoryEntry>, StateError> {
        self.state().history(shoot)
    }
    fn lock(&self, shoot: &str, info: &LockInfo) -> Result<Acquired, StateError> {
        self.state().lock(shoot, info)
    }
    fn unlock(&self, shoot: &str, lock_id: &str) -> Result<(), StateError> {
        self.state().unlock(shoot, lock_id)
    }
    fn force_unlock(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        self.state().force_unlock(shoot)
    }
    fn lock_holder(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        self.state().lock_holder(shoot)
    }
    fn push(&self, ws: &Workspace, force: bool) -> Result<u64, StateError> {
        self.state().push(ws, force)
    }
    fn remove(&self, shoot: &str, lineage: &str, serial: u64) -> Result<String, StateError> {
        self.state().remove(shoot, lineage, serial)
    }
    fn export(&self, shoot: &str) -> Result<Option<trellis_state::ExportedWorkspace>, StateError> {
        self.state().export(shoot)
    }
    fn import(&self, exported: &trellis_state::ExportedWorkspace) -> Result<trellis_state::Imported, StateError> {
        self.state().import(exported)
    }
    fn removed_histories(&self) -> Result<Vec<String>, StateError> {
        self.state().removed_histories()
    }
    fn import_removed_history(
        &self,
        name: &str,
        history: &[HistoryEntry],
    ) -> Result<trellis_state::Imported, StateError> {
        self.state().import_removed_history(name, history)
    }
}

/// A sim dir that cannot be opened, in words: who holds it, and how runners share a simulated cloud.
/// A sim dir held past `--lock-timeout` says so at the end: `(waited 30s)`.
fn sim_dir_error(e: StateError) -> anyhow::Error {
    let (refusal, waited) = match e {
        StateError::LockTimeout { waited, refusal } => (*refusal, Some(waited)),
        other => (other, None),
    };
    match refusal {
        StateError::DirInUse { dir, holder } => {
            let who = match holder {
                Some(h) => format!("another trellis process: {h}"),
                None => "another process".to_string(),
            };
            let waited = waited.map(|w| format!(" (waited {})", trellis_state::show_duration(w))).unwrap_or_default();
            anyhow::anyhow!(
                "simulated cloud dir {} is in use by {who}; give each runner its own --sim-dir, or share one simulated cloud: `trellis sim serve --sim-dir DIR` and `--cloud azure|gcp --endpoint URL` on every runner{waited}",
                dir.display()
            )
        }
        other => {
            let other = match waited {
                Some(waited) => StateError::LockTimeout { waited, refusal: Box::new(other) },
                None => other,
            };
            anyhow::Error::from(other).context("cannot open the simulated cloud dir (--sim-dir)")
        }
    }
}

/// Whether two paths name one directory (compared as given when either does not exist yet).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
