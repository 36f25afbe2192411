//! The embedded backend: one sled 0.34.7 database per state dir (see the crate docs for the layout,
//! the lock model and the durability model).

use crate::{
    now_rfc3339, pid_alive, this_host, Acquired, HistoryEntry, LockInfo, StateError, StateStore, Workspace,
    WorkspaceSummary, HOLDER_FILE,
};
use serde::Serialize;
use sled::transaction::{ConflictableTransactionError, TransactionError, Transactional};
use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WORKSPACES: &str = "workspaces";
const LOCKS: &str = "locks";
const HISTORY: &str = "history";
/// Trees handed out by [`SledStore::tree`] live under this prefix.
const EXT_PREFIX: &str = "ext/";

/// State in a sled database in a local directory (`.trellis` by default). Only one process can have a
/// state dir open at a time; see [`SledStore::open`].
pub struct SledStore {
    dir: PathBuf,
    db: sled::Db,
    workspaces: sled::Tree,
    locks: sled::Tree,
    history: sled::Tree,
    /// A second handle on sled's data file, used only to `fsync` it (sled's own flush does not).
    db_file: File,
}

impl SledStore {
    /// Opens (creating if needed) the state dir.
    ///
    /// sled takes an OS-level exclusive lock on the database, so this fails while another process has
    /// the dir open: that is [`StateError::DirInUse`], naming the holder recorded in `<dir>/holder.json`
    /// (which every successful open writes, with `LockInfo::here(operation)`, and `Drop` removes). Any
    /// other problem (not a directory, permission denied, a corrupt database) is [`StateError::Open`].
    pub fn open(dir: &Path, operation: &str) -> Result<SledStore, StateError> {
        let open_error = |detail: String| StateError::Open { dir: dir.to_path_buf(), detail };

        match fs::metadata(dir) {
            Ok(meta) if !meta.is_dir() => {
                return Err(open_error(
                    "it exists but is not a directory; pass a directory as the state dir \
                     (it is created if missing)"
                        .to_string(),
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {
                fs::create_dir_all(dir).map_err(|e| {
                    open_error(format!(
                        "cannot create it ({e}); check the permissions of its parent directory \
                         or choose another state dir"
                    ))
                })?;
            }
            Err(e) => {
                return Err(open_error(format!("cannot read it ({e}); check its permissions")));
            }
        }

        let db = open_db(dir)?;

        let open_tree = |name: &str| {
            db.open_tree(name).map_err(|e| {
                open_error(format!("cannot open its `{name}` tree ({e}); restore the state dir from a backup"))
            })
        };
        let workspaces = open_tree(WORKSPACES)?;
        let locks = open_tree(LOCKS)?;
        let history = open_tree(HISTORY)?;
        let db_file = File::open(dir.join("db")).map_err(|e| {
            open_error(format!("cannot open {} ({e}); check its permissions", dir.join("db").display()))
        })?;

        // Last, so that a failed open leaves no holder file behind.
        let holder = LockInfo::here(operation);
        write_holder(dir, &holder).map_err(|e| {
            open_error(format!(
                "cannot write {} ({e}); check that the state dir is writable",
                dir.join(HOLDER_FILE).display()
            ))
        })?;

        Ok(SledStore { dir: dir.to_path_buf(), db, workspaces, locks, history, db_file })
    }

    /// A named sled tree in the same database, for the simulated cloud that lives next to the state.
    /// It is stored as `ext/<name>`, apart from the state's own trees. A tree keeps the database (and its
    /// file lock) open for as long as it lives, even after the `SledStore` is dropped.
    pub fn tree(&self, name: &str) -> Result<sled::Tree, StateError> {
        self.db
            .open_tree(format!("{EXT_PREFIX}{name}"))
            .map_err(|e| self.io_error(&format!("opening tree `{name}`"), e))
    }

    /// Writes everything to disk: sled's `flush` (its log to the file), then an `fsync` of the file.
    pub fn flush(&self) -> Result<(), StateError> {
        self.db.flush().map_err(|e| self.io_error("flushing", e))?;
        self.db_file.sync_all().map_err(|e| self.io_error("syncing", e))?;
        Ok(())
    }

    fn io_error(&self, what: &str, e: impl std::fmt::Display) -> StateError {
        StateError::Io(format!("{what} state dir {}: {e}", self.dir.display()))
    }

    fn read_lock(&self, shoot: &str) -> Result<Option<(sled::IVec, LockInfo)>, StateError> {
        match self.locks.get(shoot.as_bytes()).map_err(|e| self.io_error("reading lock of", e))? {
            None => Ok(None),
            Some(raw) => {
                let info = parse_lock(shoot, &raw)?;
                Ok(Some((raw, info)))
            }
        }
    }
}

impl Drop for SledStore {
    /// Removes `<dir>/holder.json`. This runs before the fields (and so sled's file lock) are dropped,
    /// so no other process can have opened the dir and written its own holder file yet.
    fn drop(&mut self) {
        let _ = fs::remove_file(self.dir.join(HOLDER_FILE));
    }
}

impl StateStore for SledStore {
    fn list(&self) -> Result<Vec<WorkspaceSummary>, StateError> {
        let mut out = Vec::new();
        // sled iterates in key order; UTF-8 byte order is the order of the shoot names.
        for item in self.workspaces.iter() {
            let (key, raw) = item.map_err(|e| self.io_error("listing workspaces in", e))?;
            let shoot = String::from_utf8_lossy(&key).into_owned();
            let ws = parse_workspace(&shoot, &raw)?;
            let locked_by = self.read_lock(&shoot)?.map(|(_, info)| info);
            out.push(WorkspaceSummary {
                shoot: ws.shoot,
                lineage: ws.lineage,
                serial: ws.serial,
                resources: ws.resources.len(),
                locked_by,
            });
        }
        // A shoot locked by an apply that never committed (killed early) has a lock but no workspace.
        for item in self.locks.iter() {
            let (key, _) = item.map_err(|e| self.io_error("listing locks in", e))?;
            let shoot = String::from_utf8_lossy(&key).into_owned();
            if out.iter().any(|w| w.shoot == shoot) {
                continue;
            }
            let locked_by = self.read_lock(&shoot)?.map(|(_, info)| info);
            out.push(WorkspaceSummary { shoot, lineage: String::new(), serial: 0, resources: 0, locked_by });
        }
        out.sort_by(|a, b| a.shoot.cmp(&b.shoot));
        Ok(out)
    }

    fn load(&self, shoot: &str) -> Result<Option<Workspace>, StateError> {
        match self.workspaces.get(shoot.as_bytes()).map_err(|e| self.io_error("reading workspace from", e))? {
            None => Ok(None),
            Some(raw) => parse_workspace(shoot, &raw).map(Some),
        }
    }

    fn commit(&self, ws: &mut Workspace, operation: &str) -> Result<(), StateError> {
        let shoot = ws.shoot.as_str();
        let expected = ws.serial;
        let next_serial = expected.checked_add(1).ok_or_else(|| StateError::Corrupt {
            shoot: shoot.to_string(),
            detail: "its serial cannot be incremented any further".to_string(),
        })?;

        // Everything the transaction writes is prepared outside it: sled may run the closure more than once.
        let mut next = ws.clone();
        next.serial = next_serial;
        let ws_json = to_json(&next).map_err(|e| self.io_error("encoding workspace for", e))?;
        let entry = HistoryEntry {
            serial: next_serial,
            operation: operation.to_string(),
            at: now_rfc3339(),
            resources: ws.resources.len(),
        };
        let entry_json = to_json(&entry).map_err(|e| self.io_error("encoding history entry for", e))?;
        let entry_key = history_key(shoot, next_serial);
        let lineage = ws.lineage.as_str();

        let outcome = (&self.workspaces, &self.history).transaction(|(workspaces, history)| {
            let conflict = |detail: String| {
                ConflictableTransactionError::Abort(StateError::Conflict { shoot: shoot.to_string(), detail })
            };
            match workspaces.get(shoot.as_bytes())? {
                Some(raw) => {
                    let stored = parse_workspace(shoot, &raw).map_err(ConflictableTransactionError::Abort)?;
                    if stored.lineage != lineage {
                        return Err(conflict(format!(
                            "the stored workspace has lineage {} but this change was made for lineage {lineage} \
                             (the workspace was deleted and created again)",
                            stored.lineage
                        )));
                    }
                    if stored.serial != expected {
                        return Err(conflict(format!(
                            "the stored serial is {} but this change was made against serial {expected} \
                             (another run committed in between)",
                            stored.serial
                        )));
                    }
                }
                None if expected != 0 => {
                    return Err(conflict(format!(
                        "the workspace is not stored but this change was made against serial {expected}"
                    )));
                }
                None => {}
            }
            workspaces.insert(shoot.as_bytes(), ws_json.as_slice())?;
            history.insert(entry_key.as_slice(), entry_json.as_slice())?;
            Ok(())
        });
        match outcome {
            Ok(()) => {}
            Err(TransactionError::Abort(e)) => return Err(e),
            Err(TransactionError::Storage(e)) => return Err(self.io_error("committing to", e)),
        }

        // The commit is now in the database (in memory); the caller's copy must follow it even if the
        // flush below fails, or its next commit would conflict with itself.
        ws.serial = next_serial;
        self.flush()
    }

    fn history(&self, shoot: &str) -> Result<Vec<HistoryEntry>, StateError> {
        let mut out = Vec::new();
        for item in self.history.scan_prefix(history_prefix(shoot)) {
            let (_, raw) = item.map_err(|e| self.io_error("reading history from", e))?;
            let entry: HistoryEntry = serde_json::from_slice(&raw).map_err(|e| StateError::Corrupt {
                shoot: shoot.to_string(),
                detail: format!("a history entry does not parse ({e}); restore the state dir from a backup"),
            })?;
            out.push(entry);
        }
        Ok(out)
    }

    fn lock(&self, shoot: &str, info: &LockInfo) -> Result<Acquired, StateError> {
        let key = shoot.as_bytes();
        let new = to_json(info).map_err(|e| self.io_error("encoding lock for", e))?;
        let here = this_host();
        // Loops only if another thread of this process changes the lock between our read and our swap.
        loop {
            let swapped = self
                .locks
                .compare_and_swap(key, None as Option<&[u8]>, Some(new.as_slice()))
                .map_err(|e| self.io_error("writing lock to", e))?;
            let current = match swapped {
                Ok(()) => {
                    self.flush()?;
                    return Ok(Acquired::Fresh);
                }
                Err(cas) => match cas.current {
                    Some(current) => current,
                    None => continue, // released in between: try again from "no lock"
                },
            };
            let holder = parse_lock(shoot, &current)?;
            if holder.id == info.id {
                return Ok(Acquired::Fresh);
            }
            if holder.host != here || pid_alive(holder.pid) {
                return Err(StateError::Locked { shoot: shoot.to_string(), holder });
            }
            // The holder ran on this host and is gone: take the lock over, unless it changed meanwhile.
            let swapped = self
                .locks
                .compare_and_swap(key, Some(&current), Some(new.as_slice()))
                .map_err(|e| self.io_error("writing lock to", e))?;
            if swapped.is_ok() {
                self.flush()?;
                return Ok(Acquired::BrokeStale(holder));
            }
        }
    }

    fn unlock(&self, shoot: &str, lock_id: &str) -> Result<(), StateError> {
        loop {
            let Some((current, holder)) = self.read_lock(shoot)? else {
                return Ok(());
            };
            if holder.id != lock_id {
                return Err(StateError::Locked { shoot: shoot.to_string(), holder });
            }
            let swapped = self
                .locks
                .compare_and_swap(shoot.as_bytes(), Some(&current), None as Option<&[u8]>)
                .map_err(|e| self.io_error("removing lock from", e))?;
            if swapped.is_ok() {
                return self.flush();
            }
        }
    }

    fn force_unlock(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        let removed = self.locks.remove(shoot.as_bytes()).map_err(|e| self.io_error("removing lock from", e))?;
        self.flush()?;
        match removed {
            None => Ok(None),
            Some(raw) => serde_json::from_slice(&raw).map(Some).map_err(|e| StateError::Corrupt {
                shoot: shoot.to_string(),
                detail: format!("its lock record did not parse ({e}); it has been removed"),
            }),
        }
    }

    fn lock_holder(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        Ok(self.read_lock(shoot)?.map(|(_, info)| info))
    }
}

/// How long [`open_db`] waits for a database this process has just closed to release its file lock.
const RELEASE_WAIT: Duration = Duration::from_secs(3);

/// `sled::open`, waiting briefly for a database that is still being released.
///
/// Dropping a sled 0.34.7 `Db` does not release its file lock at once: jobs on sled's internal thread pool
/// keep the file open for a moment after the last handle is gone, so closing and reopening a state dir in
/// one process (tests, or the engine between stages) can see "could not acquire lock". A store being
/// released has already removed `holder.json`, so while the lock is held *and* no holder is recorded, the
/// open is retried for up to [`RELEASE_WAIT`]. A recorded holder is reported at once.
fn open_db(dir: &Path) -> Result<sled::Db, StateError> {
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        let err = match sled::Config::new().path(dir).open() {
            Ok(db) => return Ok(db),
            Err(e) => open_failure(dir, e),
        };
        match err {
            StateError::DirInUse { holder: None, .. } if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => return Err(err),
        }
    }
}

/// Maps a failed `sled::open` to a user-facing error.
fn open_failure(dir: &Path, e: sled::Error) -> StateError {
    let detail = match &e {
        // sled 0.34.7 (config.rs `try_lock`) reports a held file lock only as this message.
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
            return StateError::DirInUse { dir: dir.to_path_buf(), holder: read_holder(dir) };
        }
        sled::Error::Io(io) if io.kind() == ErrorKind::PermissionDenied => {
            format!("{io}; make the state dir readable and writable for this user")
        }
        sled::Error::Corruption { .. } => {
            format!("the database is corrupt ({e}); restore the state dir from a backup")
        }
        _ => format!("{e}; check that it is a trellis state dir (or an empty directory)"),
    };
    StateError::Open { dir: dir.to_path_buf(), detail }
}

/// Who holds the dir, according to `<dir>/holder.json`; `None` if it is missing or unreadable.
fn read_holder(dir: &Path) -> Option<LockInfo> {
    let raw = fs::read(dir.join(HOLDER_FILE)).ok()?;
    serde_json::from_slice(&raw).ok()
}

/// Writes `<dir>/holder.json` through a temporary file and a rename, so a reader never sees half of it.
fn write_holder(dir: &Path, holder: &LockInfo) -> std::io::Result<()> {
    let tmp = dir.join(format!("{HOLDER_FILE}.tmp"));
    let json = serde_json::to_vec_pretty(holder).map_err(std::io::Error::other)?;
    fs::write(&tmp, json)?;
    fs::rename(&tmp, dir.join(HOLDER_FILE))
}

fn to_json<T: Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(value)
}

fn parse_workspace(shoot: &str, raw: &[u8]) -> Result<Workspace, StateError> {
    let ws: Workspace = serde_json::from_slice(raw).map_err(|e| StateError::Corrupt {
        shoot: shoot.to_string(),
        detail: format!("its stored record does not parse ({e}); restore the state dir from a backup"),
    })?;
    if ws.shoot != shoot {
        return Err(StateError::Corrupt {
            shoot: shoot.to_string(),
            detail: format!("its stored record belongs to shoot {}; restore the state dir from a backup", ws.shoot),
        });
    }
    Ok(ws)
}

fn parse_lock(shoot: &str, raw: &[u8]) -> Result<LockInfo, StateError> {
    serde_json::from_slice(raw).map_err(|e| StateError::Corrupt {
        shoot: shoot.to_string(),
        detail: format!("its lock record does not parse ({e}); `trellis state unlock {shoot}` removes it"),
    })
}

/// `shoot ++ 0xFF`: the byte 0xFF never occurs in UTF-8, so no other shoot's keys start with this.
fn history_prefix(shoot: &str) -> Vec<u8> {
    let mut key = shoot.as_bytes().to_vec();
    key.push(0xFF);
    key
}

/// `shoot ++ 0xFF ++ serial (big-endian)`, so a prefix scan returns a shoot's history in serial order.
fn history_key(shoot: &str, serial: u64) -> Vec<u8> {
    let mut key = history_prefix(shoot);
    key.extend_from_slice(&serial.to_be_bytes());
    key
}
