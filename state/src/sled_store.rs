//! The embedded backend: one sled 0.34.7 database per state dir (see the crate docs for the layout,
//! the lock model, the durability model and the integrity checks).

use crate::dir::{self, Contents, Digest, DirLock, Seal, HOLDER_FILE, VERIFY};
use crate::group::{Flushed, Group, NotDurable};
use crate::integrity::{self, Head, Heads, Journal, Reading, Stored, WorkspaceMeta};
use crate::layout::{self, HeadValue};
use crate::{
    now_rfc3339, pid_alive, this_host, Acquired, ExportedWorkspace, HistoryEntry, Imported, LockInfo, LockRelease,
    StateError, StateStore, Workspace, WorkspaceSummary,
};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use sled::transaction::{ConflictableTransactionError, TransactionError, Transactional};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Whole workspaces, one value each, as state formats 1 to 3 stored them (read; each is moved to the
/// layout of format 4 by its next commit).
const WORKSPACES: &str = "workspaces";
/// Format 4: the head value of each workspace ([`HeadValue`]).
const WORKSPACE_HEADS: &str = "workspace_heads";
/// Format 4: the parts of each workspace, one key per resource record, outputs, provider state.
const WORKSPACE_PARTS: &str = "workspace_parts";
const LOCKS: &str = "locks";
const HISTORY: &str = "history";
/// Trees handed out by [`SledStore::tree`] live under this prefix.
const EXT_PREFIX: &str = "ext/";

/// State in a sled database in a local directory (`.trellis` by default). Only one process can have a
/// state dir open at a time; see [`SledStore::open`]. Dropping the store closes it like
/// [`SledStore::close`], ignoring errors.
pub struct SledStore {
    /// Writes others keep in memory until the state stores them ([`SledStore::store_with_commits`]).
    /// Declared first: they hold sled handles, dropped before the guard seals.
    pending: Mutex<Vec<Arc<dyn PendingWrites>>>,
    // Declared before `guard`: the sled handles are dropped first, then the guard seals and unlocks.
    h: Handles,
    guard: Guard,
    /// Groups concurrent commits into one transaction and one flush (see the crate docs, "Durability").
    group: Group<Staged>,
    /// The heads journal; appended by the leader of each commit group.
    journal: Mutex<Journal>,
    /// Workspaces this run committed: their backups are written when the store closes.
    committed: Mutex<BTreeSet<String>>,
    /// Held while the trees of format 4's layout are created (see [`SledStore::layout`]).
    creating_layout: Mutex<()>,
}

/// One write of [`PendingWrites`]: a key and its new value, `None` to remove it.
pub type PendingWrite = (sled::IVec, Option<sled::IVec>);

/// Writes another user of the database keeps in memory until the state stores them (the simulated ARM
/// cloud, whose calls write nothing to sled): a commit group stores them in its own transaction, so
/// they cost no synchronous write of their own (sled seals and writes its log buffer twice around every
/// batch or transaction: a batch of their own per group was two of its five writes, issue #27); a flush
/// without commits, and the close, store them in a batch. Registered with
/// [`SledStore::store_with_commits`].
pub trait PendingWrites: Send + Sync {
    /// The tree they go to (one of [`SledStore::tree`]'s).
    fn tree(&self) -> &sled::Tree;
    /// What is pending now. Reads of the tree must go on seeing these writes until [`PendingWrites::stored`].
    fn pending(&self) -> Vec<PendingWrite>;
    /// `writes` (an answer of [`PendingWrites::pending`]) are in the tree now: each that is still pending
    /// with the same value is forgotten (one written again since stays pending).
    fn stored(&self, writes: &[PendingWrite]);
}

/// sled's handles on the database.
struct Handles {
    db: sled::Db,
    workspaces: sled::Tree,
    locks: sled::Tree,
    history: sled::Tree,
    /// The trees of format 4's layout: opened when the database has them, else created by the first
    /// commit (so that a run that only reads a dir of an earlier format leaves its files as they are).
    layout: OnceLock<Layout>,
    /// A second handle on sled's data file, used only to `fsync` it (sled's own flush does not).
    db_file: File,
}

/// The trees of state format 4's layout (see the crate docs, "Storage layout").
struct Layout {
    heads: sled::Tree,
    parts: sled::Tree,
}

/// The stored version of a workspace, in either layout.
enum Current {
    Absent,
    /// Formats 1 to 3: the whole workspace as one value.
    Whole(sled::IVec),
    /// Format 4: the head value and the parts, full key -> value.
    Parts {
        head: sled::IVec,
        parts: BTreeMap<sled::IVec, sled::IVec>,
    },
}

/// How much of a stored version [`SledStore::read_verified`] reads and checks.
#[derive(Clone, Copy)]
enum Read {
    /// The head value and every part (a load): all of its bytes are checked.
    Whole,
    /// The head value only (a listing): its checksum is checked, not its parts.
    Head,
}

impl Current {
    /// The bytes its checksum is taken of: the whole workspace, or the head value (which covers the parts).
    fn raw(&self) -> Option<&sled::IVec> {
        match self {
            Current::Absent => None,
            Current::Whole(raw) | Current::Parts { head: raw, .. } => Some(raw),
        }
    }
}

impl SledStore {
    /// Where the state dir keeps backups (`<dir>/backups`): the version each command left of each
    /// workspace, and what `trellis state rm` removed ([`crate::removal_backup_file`]).
    pub fn backups_dir(&self) -> PathBuf {
        self.dir().join(dir::BACKUPS)
    }

    /// Opens the state dir, creating it if needed, for `operation` (recorded in `holder.json`).
    ///
    /// The directory must be new, empty, or a trellis state dir (it has `trellis-state.json`; a state dir
    /// of an earlier trellis without the marker is adopted — see the crate docs); anything else is
    /// [`StateError::NotStateDir`]. Another process holding the dir is [`StateError::DirInUse`], naming
    /// the holder recorded in `<dir>/holder.json`. A database that does not match what trellis last
    /// wrote is [`StateError::Damaged`], and is then left exactly as it was found. Any other problem
    /// (not a directory, permission denied) is [`StateError::Open`].
    pub fn open(dir: &Path, operation: &str) -> Result<SledStore, StateError> {
        match open_dir(dir, operation, true)? {
            Some(store) => Ok(store),
            None => Err(StateError::Open {
                dir: dir.to_path_buf(),
                detail: "it disappeared while it was being opened; try again".to_string(),
            }),
        }
    }

    /// Like [`SledStore::open`], for commands that only use existing state: never creates the dir nor
    /// makes an empty dir a state dir. `Ok(None)`: there is no state there (missing or empty dir).
    pub fn open_existing(dir: &Path, operation: &str) -> Result<Option<SledStore>, StateError> {
        open_dir(dir, operation, false)
    }

    /// Closes the store: sled's files are written and released, sealed (`seal.json`) so that the next
    /// open can tell they are exactly as trellis left them, `holder.json` is removed and the dir is
    /// unlocked. Trees handed out by [`SledStore::tree`] must be dropped first, or sled keeps its files
    /// open and they are not sealed (the next open then verifies them on a copy first).
    pub fn close(self) -> Result<(), StateError> {
        let deferred = self.write_deferred();
        let compacted = deferred.and(self.write_backups()).and(self.compact_journal());
        let SledStore { pending, h, mut guard, .. } = self;
        drop(pending);
        drop(h);
        let finished = guard.finish(Finish::Close);
        compacted.and(finished)
    }

    /// Writes the backup of every workspace this run committed: the version it leaves (see the crate
    /// docs, "Integrity"). Once per workspace and command, not per commit. One that fails does not stop
    /// the others; the first failure is reported. Written one after the other: they share a directory,
    /// whose lock serialises creating and renaming files anyway (on ext4, writers on two threads
    /// spun on it and took as long, with twice the CPU).
    fn write_backups(&self) -> Result<(), StateError> {
        let committed = std::mem::take(&mut *self.committed.lock().unwrap_or_else(PoisonError::into_inner));
        let write = |shoot: &String| -> Result<(), StateError> {
            match self.load(shoot)? {
                Some(ws) => {
                    integrity::write_backup(self.dir(), &ws).map_err(|e| self.io_error("writing a backup into", e))
                }
                None => Ok(()),
            }
        };
        committed.iter().map(write).fold(Ok(()), Result::and)
    }

    /// Compacts the heads journal if this run appended to it and it grew (see [`Journal::compact`]).
    fn compact_journal(&self) -> Result<(), StateError> {
        self.journal().compact().map_err(|e| self.io_error("compacting the heads journal of", e))
    }

    fn journal(&self) -> MutexGuard<'_, Journal> {
        // Every change to the journal's bookkeeping follows its write: a panic leaves it consistent.
        self.journal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// For a command that failed: if this open made the directory a state dir (it was new or empty) and
    /// nothing was recorded since (no workspace, no lock), removes what this open created — the
    /// directory itself if this process created it, else its contents — while still holding the lock,
    /// so no other process can be using it. Otherwise the same as [`SledStore::close`].
    pub fn discard(self) -> Result<(), StateError> {
        let unused = self.guard.fresh.is_some() && self.list().is_ok_and(|l| l.is_empty());
        let compacted =
            if unused { Ok(()) } else { self.write_deferred().and(self.write_backups()).and(self.compact_journal()) };
        let SledStore { pending, h, mut guard, .. } = self;
        drop(pending);
        drop(h);
        let finished = guard.finish(if unused { Finish::Discard } else { Finish::Close });
        compacted.and(finished)
    }

    /// A named sled tree in the same database, for the simulated cloud that lives next to the state.
    /// It is stored as `ext/<name>`, apart from the state's own trees. A tree keeps the database (and its
    /// files) open for as long as it lives, even after the `SledStore` is dropped.
    pub fn tree(&self, name: &str) -> Result<sled::Tree, StateError> {
        self.h
            .db
            .open_tree(format!("{EXT_PREFIX}{name}"))
            .map_err(|e| self.io_error(&format!("opening tree `{name}`"), e))
    }

    /// [`SledStore::tree`] `name` if the database has it (without creating it).
    pub fn existing_tree(&self, name: &str) -> Result<Option<sled::Tree>, StateError> {
        let full = format!("{EXT_PREFIX}{name}");
        if !self.h.db.tree_names().iter().any(|n| n == full.as_bytes()) {
            return Ok(None);
        }
        self.tree(name).map(Some)
    }

    /// Has the state store `pending`'s writes: in the transaction of every commit group, and in a batch
    /// of their own at a flush without commits and at the close (see [`PendingWrites`]).
    pub fn store_with_commits(&self, pending: Arc<dyn PendingWrites>) {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).push(pending);
    }

    fn pending_writes(&self) -> Vec<Arc<dyn PendingWrites>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Stores the pending writes ([`SledStore::store_with_commits`]) in a batch each.
    fn write_deferred(&self) -> Result<(), StateError> {
        let failed = |e: String| StateError::Io(format!("writing to state dir {}: {e}", self.dir().display()));
        for pending in self.pending_writes() {
            let writes = pending.pending();
            if writes.is_empty() {
                continue;
            }
            let mut batch = sled::Batch::default();
            for (key, value) in &writes {
                match value {
                    Some(value) => batch.insert(key.clone(), value.clone()),
                    None => batch.remove(key.clone()),
                }
            }
            pending.tree().apply_batch(batch).map_err(|e| failed(e.words()))?;
            pending.stored(&writes);
        }
        Ok(())
    }

    /// Writes everything written so far to disk: sled's `flush` (its log to the file), then an `fsync`
    /// of the file. Calls from several threads at once share one flush (see the crate docs, "Durability").
    pub fn flush(&self) -> Result<(), StateError> {
        self.make_durable(None)
    }

    /// Returns once everything written to sled before the call, and `head` (the head record of a
    /// version just stored), are durable. Concurrent callers are grouped: one flush of the database and
    /// one write of the group's head records covers all of them (see the crate docs, "Durability").
    fn make_durable(&self, head: Option<Head>) -> Result<(), StateError> {
        self.group.durable(head.map(Staged::Head), |staged| self.flush_group(staged)).map_err(|e| match e {
            NotDurable::Refused(detail) | NotDurable::Failed { message: detail, .. } => StateError::Io(detail),
        })
    }

    /// One group's flush: the versions its members staged stored in one transaction, then sled's
    /// flush, `fdatasync` of `db`, and the group's head records appended to the heads journal (one
    /// write, one `fdatasync`).
    fn flush_group(&self, staged: Vec<(u64, Staged)>) -> Flushed {
        let mut heads = Vec::new();
        let mut versions = Vec::new();
        for (ticket, staged) in staged {
            match staged {
                Staged::Head(head) => heads.push(head),
                Staged::Version(version) => versions.push((ticket, version)),
            }
        }
        let mut flushed = Flushed::default();
        // The writes others keep pending go into the group's transaction (below), or without commits
        // into a batch of their own first: a version stored by this flush implies them.
        if versions.is_empty() {
            if let Err(e) = self.write_deferred() {
                flushed.failed = Some((e.to_string(), false));
                return flushed;
            }
        }
        if !versions.is_empty() {
            // Every member created the layout's trees before staging its version.
            let Some(layout) = self.h.layout.get() else {
                let message = format!("committing to state dir {}: its trees are missing", self.dir().display());
                flushed.failed = Some((message, false));
                return flushed;
            };
            // The writes others keep pending go into the same transaction (see `PendingWrites`).
            let pending = self.pending_writes();
            let writes: Vec<Vec<PendingWrite>> = pending.iter().map(|p| p.pending()).collect();
            let mut trees = vec![&self.h.workspaces, &layout.heads, &layout.parts, &self.h.history];
            trees.extend(pending.iter().map(|p| p.tree()));
            let outcome = trees.as_slice().transaction(|tx| {
                for (tree, writes) in tx[4..].iter().zip(&writes) {
                    for (key, value) in writes {
                        match value {
                            Some(value) => drop(tree.insert(key.clone(), value.clone())?),
                            None => drop(tree.remove(key.clone())?),
                        }
                    }
                }
                let mut refused = Vec::new();
                for (ticket, version) in &versions {
                    if write_prepared((&tx[0], &tx[1], &tx[2], &tx[3]), version)?.is_err() {
                        refused.push(*ticket);
                    }
                }
                Ok::<_, ConflictableTransactionError<()>>(refused)
            });
            if outcome.is_ok() {
                for (pending, writes) in pending.iter().zip(&writes) {
                    pending.stored(writes);
                }
            }
            let refused = match outcome {
                Ok(refused) => refused,
                Err(e) => {
                    let e = match e {
                        TransactionError::Storage(e) => e.words(),
                        TransactionError::Abort(()) => "the transaction was aborted".to_string(),
                    };
                    flushed.failed = Some((format!("committing to state dir {}: {e}", self.dir().display()), false));
                    return flushed;
                }
            };
            let mut committed = self.committed.lock().unwrap_or_else(PoisonError::into_inner);
            for (ticket, version) in versions {
                if refused.contains(&ticket) {
                    let detail = "the stored workspace changed while it was being written".to_string();
                    flushed.refused.insert(ticket, detail);
                } else {
                    // Its backup is written when the store closes (once per run, not per commit).
                    committed.insert(version.shoot);
                    heads.push(version.head);
                }
            }
        }
        if let Err(e) = self.flush_heads(&heads) {
            flushed.failed = Some((e, true));
        }
        flushed
    }

    /// sled's flush, `fdatasync` of `db`, then `heads` appended to the heads journal.
    fn flush_heads(&self, heads: &[Head]) -> Result<(), String> {
        let dir = self.dir().display();
        self.h.db.flush().map_err(|e| format!("flushing state dir {dir}: {}", e.words()))?;
        self.h.db_file.sync_data().map_err(|e| format!("syncing state dir {dir}: {e}"))?;
        self.journal().append(heads).map_err(|e| format!("writing the heads journal of state dir {dir}: {e}"))
    }

    /// The directory the database lives in.
    pub fn dir(&self) -> &Path {
        &self.guard.dir
    }

    fn io_error(&self, what: &str, e: impl Words) -> StateError {
        StateError::Io(format!("{what} state dir {}: {}", self.dir().display(), e.words()))
    }

    fn read_lock(&self, shoot: &str) -> Result<Option<(sled::IVec, LockInfo)>, StateError> {
        match self.h.locks.get(shoot.as_bytes()).map_err(|e| self.io_error("reading lock of", e))? {
            None => Ok(None),
            Some(raw) => {
                let info = parse_lock(shoot, &raw)?;
                Ok(Some((raw, info)))
            }
        }
    }

    /// Reads the stored version of `next`'s workspace, lets `check` judge it, and prepares what storing
    /// `next` (whose serial is already the new one) writes: the changed parts, the head and the history
    /// entry (which names the checksums of the version it replaces and of `next`). Creates the layout's
    /// trees if needed.
    fn prepare_version(
        &self,
        next: &Workspace,
        operation: &str,
        check: impl Fn(Option<&WorkspaceMeta>) -> Result<(), StateError>,
    ) -> Result<Prepared, StateError> {
        let shoot = next.shoot.as_str();
        self.layout()?;
        let current = self.current(shoot)?;
        let stored = current.raw().map(|raw| parse_meta(shoot, raw)).transpose()?;
        check(stored.as_ref())?;
        let parts = layout::parts(next);
        let head_json = layout::head_value(next, &parts);
        let entry = HistoryEntry {
            serial: next.serial,
            operation: operation.to_string(),
            at: now_rfc3339(),
            resources: next.resources.len(),
            checksum: Some(integrity::checksum_bytes(&head_json)),
            previous: current.raw().map(|raw| integrity::checksum_bytes(raw)),
        };
        let entry_json = to_json(&entry).map_err(|e| self.io_error("encoding history entry for", e))?;
        // Only the parts that changed are written: a node commit writes one resource record and the head.
        let (expected_head, expected_whole, removed, written) = match current {
            Current::Absent => (None, None, Vec::new(), parts.into_iter().collect()),
            Current::Whole(raw) => (None, Some(raw), Vec::new(), parts.into_iter().collect()),
            Current::Parts { head, parts: old } => {
                let removed = old.keys().filter(|k| !parts.contains_key(k.as_ref())).cloned().collect();
                let written = parts
                    .into_iter()
                    .filter(|(k, v)| old.get(k.as_slice()).is_none_or(|o| o != v.as_slice()))
                    .collect();
                (Some(head), None, removed, written)
            }
        };
        Ok(Prepared {
            shoot: shoot.to_string(),
            head: Head::of(next, &head_json),
            expected_head,
            expected_whole,
            removed,
            written,
            head_json,
            entry_key: history_key(shoot, next.serial),
            entry_json,
        })
    }

    /// Stores `next` (whose serial is already the new one) if `check` accepts the stored version, in one
    /// transaction of its own with its history entry, and returns the bytes stored; the workspace's
    /// backup is written when the store closes. [`SledStore::seal_version`] must follow (see the crate
    /// docs, "Integrity"). Commits go through [`SledStore::commit`]'s group transaction instead.
    fn store_version(
        &self,
        next: &Workspace,
        operation: &str,
        check: impl Fn(Option<&WorkspaceMeta>) -> Result<(), StateError>,
    ) -> Result<Vec<u8>, StateError> {
        let shoot = next.shoot.as_str();
        let version = self.prepare_version(next, operation, &check)?;
        let layout = self.layout()?;
        let trees = (&self.h.workspaces, &layout.heads, &layout.parts, &self.h.history);
        let outcome = trees.transaction(|tx| {
            let Err(now) = write_prepared((&tx.0, &tx.1, &tx.2, &tx.3), &version)? else { return Ok(()) };
            // The version the history entry names as replaced must be the one replaced.
            let stored =
                now.map(|now| parse_meta(shoot, &now)).transpose().map_err(ConflictableTransactionError::Abort)?;
            check(stored.as_ref()).map_err(ConflictableTransactionError::Abort)?;
            Err(ConflictableTransactionError::Abort(StateError::Conflict {
                shoot: shoot.to_string(),
                detail: "the stored workspace changed while it was being written".to_string(),
            }))
        });
        match outcome {
            Ok(()) => {
                // Its backup is written when the store closes (once per run, not per commit).
                self.committed.lock().unwrap_or_else(PoisonError::into_inner).insert(shoot.to_string());
                Ok(version.head_json)
            }
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(self.io_error("committing to", e)),
        }
    }

    /// The trees of format 4's layout, created (after the marker says format 4, so that an earlier
    /// trellis refuses the dir as newer rather than as damaged) if the database does not have them yet.
    fn layout(&self) -> Result<&Layout, StateError> {
        if let Some(layout) = self.h.layout.get() {
            return Ok(layout);
        }
        // The first commits of a fleet arrive together: one of them writes the marker and makes the trees.
        let _creating = self.creating_layout.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(layout) = self.h.layout.get() {
            return Ok(layout);
        }
        dir::upgrade_marker(self.dir()).map_err(|e| self.io_error("writing the format marker of", e))?;
        let open =
            |name: &str| self.h.db.open_tree(name).map_err(|e| self.io_error(&format!("creating tree `{name}` in"), e));
        let layout = Layout { heads: open(WORKSPACE_HEADS)?, parts: open(WORKSPACE_PARTS)? };
        let _ = self.h.layout.set(layout);
        Ok(self.h.layout.get().expect("set above"))
    }

    /// The latest head record of `shoot` (read from the journal when first asked for: damage is found
    /// by the command that reads the workspace).
    fn head_record(&self, shoot: &str) -> Result<Option<Head>, StateError> {
        self.journal().head(shoot).map_err(|detail| damaged(self.dir(), detail))
    }

    /// The stored version of `shoot` (its head value only with [`Read::Head`]), checked against its
    /// head record (see the crate docs, "Integrity": each workspace is checked when it is read, not at
    /// open). The head record is read before and after the stored version, and the read starts over if
    /// a commit of this store moved it in between: a workspace has at most one commit between its
    /// transaction and its head record, so what is read is the head's version or the one after it.
    fn read_verified(&self, shoot: &str, read: Read) -> Result<Current, StateError> {
        loop {
            let before = self.head_record(shoot)?;
            let current = match read {
                Read::Whole => self.current(shoot)?,
                Read::Head => self.current_head(shoot)?,
            };
            let head = self.head_record(shoot)?;
            if head != before {
                continue;
            }
            if !self.check_layouts(shoot, &current)? {
                continue;
            }
            let dir = self.dir();
            let found = match &current {
                Current::Absent => None,
                Current::Whole(raw) => {
                    Some(stored_version(dir, shoot, raw, Ok(()), Some(&self.h.history), head.as_ref())?)
                }
                Current::Parts { head: raw, parts } => {
                    let parts = match read {
                        Read::Whole => {
                            let mut digest = layout::Digest::default();
                            for (key, value) in parts {
                                digest.add(key, value);
                            }
                            parts_match(shoot, raw, &digest)
                        }
                        Read::Head => Ok(()),
                    };
                    Some(stored_version(dir, shoot, raw, parts, Some(&self.h.history), head.as_ref())?)
                }
            };
            let removal = match (&found, &head) {
                (None, Some(head)) => removal_entry(dir, &self.h.history, shoot, head)?,
                _ => None,
            };
            integrity::check_one(dir, shoot, head.as_ref(), found.as_ref(), removal.as_ref())
                .map_err(|detail| damaged(dir, detail))?;
            return Ok(current);
        }
    }

    /// Damage that only the layouts' trees side by side show: a workspace stored both whole and in
    /// records, or records without their head. `Ok(false)`: a commit of this store wrote the workspace's
    /// first records and head since `current` was read; read again.
    fn check_layouts(&self, shoot: &str, current: &Current) -> Result<bool, StateError> {
        let read_error = |e| self.io_error("reading workspace from", e);
        let Some(layout) = self.h.layout.get() else { return Ok(true) };
        match current {
            Current::Parts { .. } if self.h.workspaces.get(shoot.as_bytes()).map_err(read_error)?.is_some() => {
                Err(damaged(self.dir(), format!("workspace {shoot} is stored twice, whole and in records")))
            }
            Current::Absent | Current::Whole(_)
                if layout
                    .parts
                    .scan_prefix(layout::prefix(shoot))
                    .next()
                    .transpose()
                    .map_err(read_error)?
                    .is_some() =>
            {
                if layout.heads.get(shoot.as_bytes()).map_err(read_error)?.is_some() {
                    return Ok(false);
                }
                Err(damaged(self.dir(), format!("records of workspace {shoot} are stored, but not its head")))
            }
            _ => Ok(true),
        }
    }

    /// Like [`SledStore::current`] without the parts: the head value (format 4) or the whole workspace.
    fn current_head(&self, shoot: &str) -> Result<Current, StateError> {
        let read_error = |e| self.io_error("reading workspace from", e);
        if let Some(layout) = self.h.layout.get() {
            if let Some(head) = layout.heads.get(shoot.as_bytes()).map_err(read_error)? {
                return Ok(Current::Parts { head, parts: BTreeMap::new() });
            }
        }
        Ok(match self.h.workspaces.get(shoot.as_bytes()).map_err(read_error)? {
            Some(raw) => Current::Whole(raw),
            None => Current::Absent,
        })
    }

    /// The stored version of `shoot`, in whichever layout it is stored.
    fn current(&self, shoot: &str) -> Result<Current, StateError> {
        let read_error = |e| self.io_error("reading workspace from", e);
        if let Some(layout) = self.h.layout.get() {
            // The head and its records are read by separate sled calls while other threads may commit
            // this workspace (each commit one transaction that changes the head, its serial at least):
            // the records belong to the head when the head reads the same after them; otherwise a
            // commit landed in between, and the read starts over.
            let mut head = layout.heads.get(shoot.as_bytes()).map_err(read_error)?;
            while let Some(read) = head {
                let mut parts = BTreeMap::new();
                for item in layout.parts.scan_prefix(layout::prefix(shoot)) {
                    let (key, value) = item.map_err(read_error)?;
                    parts.insert(key, value);
                }
                head = layout.heads.get(shoot.as_bytes()).map_err(read_error)?;
                if head.as_ref() == Some(&read) {
                    return Ok(Current::Parts { head: read, parts });
                }
            }
        }
        Ok(match self.h.workspaces.get(shoot.as_bytes()).map_err(read_error)? {
            Some(raw) => Current::Whole(raw),
            None => Current::Absent,
        })
    }

    /// After [`SledStore::store_version`]: makes the commit durable, then writes its head record (both
    /// shared with the commits of other workspaces made at the same time).
    fn seal_version(&self, next: &Workspace, stored: &[u8]) -> Result<(), StateError> {
        self.make_durable(Some(Head::of(next, stored)))
    }
}

/// A version of a workspace ready to be stored ([`SledStore::prepare_version`]).
struct Prepared {
    shoot: String,
    /// Its head record, once stored.
    head: Head,
    /// What must be stored when it is written: the head value (format 4) or the whole workspace
    /// (formats 1 to 3), or nothing.
    expected_head: Option<sled::IVec>,
    expected_whole: Option<sled::IVec>,
    /// Parts keys to remove, and parts to write (those that changed).
    removed: Vec<sled::IVec>,
    written: Vec<(Vec<u8>, Vec<u8>)>,
    head_json: Vec<u8>,
    entry_key: Vec<u8>,
    entry_json: Vec<u8>,
}

/// What a member of a commit group hands to the group's flush.
enum Staged {
    /// A version to store in the group's transaction (a commit).
    Version(Box<Prepared>),
    /// The head record of a version stored already (a push).
    Head(Head),
}

type Trees<'t> = (
    &'t sled::transaction::TransactionalTree,
    &'t sled::transaction::TransactionalTree,
    &'t sled::transaction::TransactionalTree,
    &'t sled::transaction::TransactionalTree,
);

/// Writes `version` in a transaction over (workspaces, heads, parts, history) if what is stored is
/// still what it was prepared against; otherwise writes nothing and answers what is stored now.
#[allow(clippy::type_complexity)]
fn write_prepared(
    (workspaces, heads, parts, history): Trees<'_>,
    version: &Prepared,
) -> Result<Result<(), Option<sled::IVec>>, sled::transaction::UnabortableTransactionError> {
    let shoot = version.shoot.as_bytes();
    let now_head = heads.get(shoot)?;
    let now_whole = workspaces.get(shoot)?;
    if now_head != version.expected_head || now_whole != version.expected_whole {
        return Ok(Err(now_head.or(now_whole)));
    }
    if version.expected_whole.is_some() {
        workspaces.remove(shoot)?;
    }
    for key in &version.removed {
        parts.remove(key)?;
    }
    for (key, value) in &version.written {
        parts.insert(key.as_slice(), value.as_slice())?;
    }
    heads.insert(shoot, version.head_json.as_slice())?;
    history.insert(version.entry_key.as_slice(), version.entry_json.as_slice())?;
    Ok(Ok(()))
}

/// What the guard does when the store ends.
enum Finish {
    /// Seal sled's files (if the store was opened and verified), remove `holder.json`, unlock.
    Close,
    /// Remove what this open created, then unlock.
    Discard,
}

/// Everything a store holds apart from sled: the dir lock and what to do when the store ends. It is
/// dropped after sled's handles, so it can wait for sled to let go of its files.
struct Guard {
    dir: PathBuf,
    lock: Option<DirLock>,
    /// `Some(made_dir)`: this open made the directory a state dir (it was new, or empty); `made_dir`:
    /// this process also created the directory itself.
    fresh: Option<bool>,
    holder_written: bool,
    /// The database was opened in place and verified: closing seals it.
    seal_on_close: bool,
    /// sled's files as they were found, before sled opened them, hashed by `digest`, with their stamps:
    /// a file whose stamp is the same at close was not written (a plan), and is not hashed again.
    opened_with: Option<Vec<dir::SealedFile>>,
    /// The hash of the seal found (SHA-256 in a seal of state format 2), BLAKE3 without one.
    digest: Digest,
    finished: bool,
}

impl Guard {
    fn finish(&mut self, how: Finish) -> Result<(), StateError> {
        self.finished = true;
        let dir = self.dir.clone();
        let io = |what: &str, e: std::io::Error| StateError::Io(format!("{what} state dir {}: {e}", dir.display()));
        let released = wait_for_release(&dir.join("db"));
        let mut result = Ok(());
        match (how, self.fresh) {
            (Finish::Discard, Some(made_dir)) if released => {
                result = if made_dir { fs::remove_dir_all(&dir) } else { dir::empty_dir(&dir) }
                    .map_err(|e| io("removing what this run created in", e));
                self.holder_written = false;
            }
            _ if self.seal_on_close && released => {
                result = self.seal().map_err(|e| io("sealing", e));
            }
            _ => {}
        }
        if self.holder_written {
            let _ = fs::remove_file(dir.join(HOLDER_FILE));
        }
        self.lock = None;
        result
    }

    /// Writes the seal of sled's files as they are now. sled finishes a log it has not recovered yet
    /// (takes a snapshot, extends its segment) the next time it opens it, so when this run changed the
    /// files, sled opens them once more first: the sealed files are then at rest, and a command that only
    /// reads (a plan) leaves them byte for byte as they were.
    fn seal(&self) -> std::io::Result<()> {
        let opened_with = self.opened_with.as_deref().unwrap_or_default();
        let mut files = dir::fingerprint(&self.dir, self.digest, opened_with)?;
        if self.opened_with.is_none() || !dir::same_content(opened_with, &files) {
            let settled = sled::Config::new().path(&self.dir).open().map(drop).is_ok();
            if !(settled && wait_for_release(&self.dir.join("db"))) {
                return Ok(()); // left unsealed: the next open verifies the files on a copy first
            }
            // Changed files are sealed with BLAKE3, which a trellis of state format 2 cannot check:
            // the marker says format 3 first, so that trellis refuses the dir as newer, not as damaged.
            dir::upgrade_marker(&self.dir)?;
            files = dir::fingerprint(&self.dir, Digest::Blake3, &files)?;
        }
        dir::write_seal(&self.dir, &Seal::Closed { files })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.finish(Finish::Close);
        }
    }
}

/// Waits (up to [`RELEASE_WAIT`]) until no one holds sled's file lock on `db`, i.e. sled has closed it
/// and will not write it again. A missing file counts as released.
fn wait_for_release(db: &Path) -> bool {
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        let file = match File::open(db) {
            Ok(file) => file,
            Err(e) => return e.kind() == ErrorKind::NotFound,
        };
        match file.try_lock() {
            Ok(()) => return true,
            Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
}

/// Opens `dir`; `create`: create it and make an empty dir a state dir, else `Ok(None)` for no state.
fn open_dir(dir: &Path, operation: &str, create: bool) -> Result<Option<SledStore>, StateError> {
    let Some((lock, made_dir)) = lock_dir(dir, create)? else {
        return Ok(None);
    };
    let contents = dir::classify(dir)?;
    let fresh = match contents {
        Contents::Empty if !create => return Ok(None),
        Contents::Empty => Some(made_dir),
        Contents::Marked | Contents::Legacy => None,
    };
    let mut guard = Guard {
        dir: dir.to_path_buf(),
        lock: Some(lock),
        fresh,
        holder_written: false,
        seal_on_close: false,
        opened_with: None,
        digest: Digest::Blake3,
        finished: false,
    };
    let opened = open_locked(&mut guard, contents, operation);
    match opened {
        Ok((h, heads)) => {
            guard.seal_on_close = true;
            let journal = Mutex::new(Journal::new(dir, heads));
            Ok(Some(SledStore {
                pending: Mutex::default(),
                h,
                guard,
                group: Group::default(),
                journal,
                committed: Mutex::default(),
                creating_layout: Mutex::default(),
            }))
        }
        Err(e) => {
            // A fresh dir is removed again; anything else is left exactly as it was (never sealed).
            let _ = guard.finish(Finish::Discard);
            Err(e)
        }
    }
}

/// The part of opening that happens under the dir lock.
fn open_locked(guard: &mut Guard, contents: Contents, operation: &str) -> Result<(Handles, Heads), StateError> {
    let dir = guard.dir.clone();
    let open_error = |what: &str, e: std::io::Error| StateError::Open {
        dir: dir.clone(),
        detail: format!("cannot write {what} ({e}); check that the state dir is writable"),
    };
    if contents == Contents::Empty {
        dir::write_marker(&dir).map_err(|e| open_error(dir::MARKER, e))?;
    }
    write_holder(&dir, &LockInfo::here(operation)).map_err(|e| open_error(HOLDER_FILE, e))?;
    guard.holder_written = true;
    if contents == Contents::Legacy {
        return adopt(&dir);
    }

    dir::remove_dir_if_present(&dir.join(VERIFY)).map_err(|e| open_error(VERIFY, e))?;
    let seal = dir::read_seal(&dir)?;
    guard.digest = match &seal {
        Some(Seal::Closed { files }) => Digest::of(files),
        _ => Digest::Blake3,
    };
    // Only files whose stamp moved since the seal are hashed (see the crate docs, "Integrity").
    let sealed = match &seal {
        Some(Seal::Closed { files }) => files.as_slice(),
        _ => &[],
    };
    let found = dir::fingerprint(&dir, guard.digest, sealed).map_err(|e| StateError::Open {
        dir: dir.clone(),
        detail: format!("cannot read sled's files ({e}); check their permissions"),
    })?;
    match &seal {
        // Exactly as trellis left them.
        Some(Seal::Closed { files }) if dir::same_content(files, &found) => {}
        // Changed after a clean close: not by trellis.
        Some(Seal::Closed { files }) => {
            return Err(StateError::Damaged {
                dir: dir.clone(),
                detail: dir::describe_difference(&dir, files, &found),
            });
        }
        // A new state dir: nothing to verify yet.
        _ if found.is_empty() => {}
        // The last run did not close (killed, crashed): sled may have to recover, which writes. Prove
        // on a copy that what sled recovers matches the head records before letting it touch the files.
        _ => verify_on_copy(&dir)?,
    }
    let clean = matches!(&seal, Some(Seal::Closed { .. }));
    dir::write_seal(&dir, &Seal::Open).map_err(|e| open_error(dir::SEAL, e))?;
    guard.opened_with = Some(found);
    let h = open_handles(&dir, open_db(&dir, &dir)?)?;
    if clean {
        // sled's open of files it closed cleanly rewrites the tail of its active segment with the bytes
        // that are there already (its recovery "shreds" the segment after the recovered tip, as the open
        // that settled the files before the seal did): the content is the one checked, under new stamps.
        // A run that writes nothing more then closes without hashing (see the crate docs, "Integrity").
        let checked = guard.opened_with.take().unwrap_or_default();
        guard.opened_with = Some(dir::restamp(&dir, &checked).map_err(|e| StateError::Open {
            dir: dir.clone(),
            detail: format!("cannot read sled's files ({e}); check their permissions"),
        })?);
    }
    // Each workspace is checked against its head record when it is loaded (`SledStore::load`), not
    // here: an open costs what the command touches.
    let heads = integrity::read_heads(&dir, Reading::WhenAsked).map_err(|detail| damaged(&dir, detail))?;
    Ok((h, heads))
}

/// Opens a copy of sled's files in `<dir>/.verify` and checks it against the head records.
fn verify_on_copy(dir: &Path) -> Result<(), StateError> {
    let copy = dir.join(VERIFY);
    let io = |e: std::io::Error| {
        StateError::Io(format!("copying the database of state dir {} to verify it: {e}", dir.display()))
    };
    dir::copy_sled_files(dir, &copy).map_err(io)?;
    let result = open_db(&copy, dir).and_then(|db| {
        let tree = |name: &str| -> Result<Option<sled::Tree>, StateError> {
            if !db.tree_names().iter().any(|n| n == name.as_bytes()) {
                return Ok(None);
            }
            db.open_tree(name).map(Some).map_err(|e| damaged(dir, format!("its `{name}` tree cannot be read ({e})")))
        };
        let history = tree(HISTORY)?;
        let parts = match (tree(WORKSPACE_HEADS)?, tree(WORKSPACE_PARTS)?) {
            (Some(heads), Some(parts)) => Some(Layout { heads, parts }),
            (None, None) => None,
            _ => {
                return Err(damaged(dir, "one of the trees `workspace_heads` and `workspace_parts` is missing".into()))
            }
        };
        let heads = integrity::read_heads(dir, Reading::Every).and_then(|heads| heads.read_all());
        let with_heads = history.as_ref().map(|tree| (tree, heads.as_ref().ok()));
        let stored = read_stored(dir, tree(WORKSPACES)?.as_ref(), parts.as_ref(), with_heads)?;
        let heads = heads.map_err(|detail| damaged(dir, detail))?;
        let removals = read_removals(dir, history.as_ref(), &heads, &stored)?;
        integrity::check(dir, &heads, &stored, &removals).map_err(|detail| damaged(dir, detail))
    });
    wait_for_release(&copy.join("db"));
    let _ = dir::remove_dir_if_present(&copy);
    result
}

/// For each head record whose workspace is not stored: the history entry that would record its removal
/// (under [`crate::removed_name`] of the head, at the serial after it), if there is one. One lookup per
/// such head; none when every head has its workspace.
fn read_removals(
    dir: &Path,
    history: Option<&sled::Tree>,
    heads: &BTreeMap<String, Head>,
    stored: &BTreeMap<String, Stored>,
) -> Result<BTreeMap<String, HistoryEntry>, StateError> {
    let mut out = BTreeMap::new();
    let Some(history) = history else { return Ok(out) };
    for (shoot, head) in heads.iter().filter(|(shoot, _)| !stored.contains_key(*shoot)) {
        if let Some(entry) = removal_entry(dir, history, shoot, head)? {
            out.insert(shoot.clone(), entry);
        }
    }
    Ok(out)
}

/// The history entry that would record the removal of the version `head` names (under
/// [`crate::removed_name`] of the head, at the serial after it), if there is one.
fn removal_entry(
    dir: &Path,
    history: &sled::Tree,
    shoot: &str,
    head: &Head,
) -> Result<Option<HistoryEntry>, StateError> {
    let Some(next) = head.serial.checked_add(1) else { return Ok(None) };
    let key = history_key(&crate::removed_name(shoot, &head.lineage, head.serial), next);
    let raw = history.get(key).map_err(|e| damaged(dir, format!("its history cannot be read ({e})")))?;
    Ok(raw.and_then(|raw| serde_json::from_slice::<HistoryEntry>(&raw).ok()))
}

/// What [`integrity::check`] needs of one stored version: its bytes, what they identify, whether its
/// parts match (`parts`), and — only when `head` does not name exactly these bytes — the history entry of
/// its serial (a random `get` per workspace was most of an open's reads of `history`, issue #8).
fn stored_version(
    dir: &Path,
    shoot: &str,
    raw: &[u8],
    parts: Result<(), String>,
    history: Option<&sled::Tree>,
    head: Option<&Head>,
) -> Result<Stored, StateError> {
    let parsed = parse_meta(shoot, raw).map_err(|e| e.to_string());
    let vouched = |ws: &WorkspaceMeta| {
        head.is_some_and(|head| {
            head.lineage == ws.lineage && head.serial == ws.serial && head.checksum == integrity::checksum_bytes(raw)
        })
    };
    let entry = match (&parsed, history) {
        (Ok(ws), Some(_)) if vouched(ws) => None,
        (Ok(ws), Some(history)) => history
            .get(history_key(shoot, ws.serial))
            .map_err(|e| damaged(dir, format!("its workspaces cannot be read ({e})")))?
            .and_then(|raw| serde_json::from_slice(&raw).ok()),
        _ => None,
    };
    Ok(Stored { raw: raw.to_vec(), parsed, entry, parts })
}

/// Whether the parts of `shoot`, whose digest is `digest`, are those its head value `raw` names.
fn parts_match(shoot: &str, raw: &[u8], digest: &layout::Digest) -> Result<(), String> {
    match parse_head(shoot, raw) {
        Ok(head) if head.parts == digest.hex() => Ok(()),
        Ok(head) => Err(format!(
            "the records of workspace {shoot} do not match its head (digest {} instead of {}): a record was \
             changed, added or removed",
            digest.hex(),
            head.parts
        )),
        Err(_) => Ok(()), // reported as a head that does not parse
    }
}

/// Every stored workspace, in either layout, with the history entry of its serial; a workspace stored
/// in parts also with the check of its parts against the digest in its head value.
///
/// With the head records (`history.1`), the history entry is read only for a workspace whose head
/// record does not name exactly its stored version (lineage, serial, checksum): [`integrity::check`]
/// reads the entry of no other, and a random `get` per workspace was most of an open's reads of
/// `history` (issue #8: a one-shoot plan against 2,000 applied shoots).
fn read_stored(
    dir: &Path,
    workspaces: Option<&sled::Tree>,
    parts: Option<&Layout>,
    history: Option<(&sled::Tree, Option<&BTreeMap<String, Head>>)>,
) -> Result<BTreeMap<String, Stored>, StateError> {
    let unreadable = |e: sled::Error| damaged(dir, format!("its workspaces cannot be read ({e})"));
    let head_of = |shoot: &str| history.and_then(|(_, heads)| heads).and_then(|heads| heads.get(shoot));
    let history = history.map(|(tree, _)| tree);
    let mut out = BTreeMap::new();
    for item in workspaces.into_iter().flat_map(|tree| tree.iter()) {
        let (key, raw) = item.map_err(unreadable)?;
        let shoot = String::from_utf8_lossy(&key).into_owned();
        let stored = stored_version(dir, &shoot, &raw, Ok(()), history, head_of(&shoot))?;
        out.insert(shoot, stored);
    }
    let Some(layout) = parts else {
        return Ok(out);
    };
    // One pass over every part: the digest of each workspace's parts.
    let mut digests: BTreeMap<String, layout::Digest> = BTreeMap::new();
    for item in layout.parts.iter() {
        let (key, value) = item.map_err(unreadable)?;
        let shoot = layout::shoot_of(&key)
            .ok_or_else(|| damaged(dir, format!("a workspace record has a key trellis never writes ({key:?})")))?;
        digests.entry(shoot.to_string()).or_default().add(&key, &value);
    }
    for item in layout.heads.iter() {
        let (key, raw) = item.map_err(unreadable)?;
        let shoot = String::from_utf8_lossy(&key).into_owned();
        let digest = digests.remove(&shoot).unwrap_or_default();
        let parts = parts_match(&shoot, &raw, &digest);
        let stored = stored_version(dir, &shoot, &raw, parts, history, head_of(&shoot))?;
        if out.insert(shoot.clone(), stored).is_some() {
            return Err(damaged(dir, format!("workspace {shoot} is stored twice, whole and in records")));
        }
    }
    if let Some(shoot) = digests.keys().next() {
        return Err(damaged(dir, format!("records of workspace {shoot} are stored, but not its head")));
    }
    Ok(out)
}

/// Takes over a state dir of an earlier trellis (no marker): its database must hold trellis' workspaces.
/// The head records are made from the workspaces as they are; the marker is written last, so an
/// interrupted adoption is simply done again.
fn adopt(dir: &Path) -> Result<(Handles, Heads), StateError> {
    let db = open_db(dir, dir)?;
    if !db.tree_names().iter().any(|n| n == WORKSPACES.as_bytes()) {
        return Err(StateError::NotStateDir {
            dir: dir.to_path_buf(),
            detail: format!(
                "it holds a sled database without trellis' workspaces and has no {}; pass a new or empty \
                 directory with --state",
                dir::MARKER
            ),
        });
    }
    let h = open_handles(dir, db)?;
    let write_error =
        |what: &str, e: std::io::Error| StateError::Io(format!("{what} state dir {}: {e}", dir.display()));
    let heads = read_stored(dir, Some(&h.workspaces), h.layout.get(), None)?
        .into_iter()
        .map(|(shoot, stored)| {
            let meta = stored.parsed.and_then(|meta| stored.parts.map(|()| meta));
            let meta = meta.map_err(|detail| StateError::Corrupt { shoot, detail })?;
            Ok(Head::of_stored(&meta, &stored.raw))
        })
        .collect::<Result<Vec<_>, StateError>>()?;
    // The whole journal at once, atomically; `heads/` of an adoption by an earlier trellis goes with it.
    integrity::write_journal(dir, heads.iter()).map_err(|e| write_error("adopting", e))?;
    dir::remove_dir_if_present(&dir.join(dir::HEADS)).map_err(|e| write_error("adopting", e))?;
    dir::write_marker(dir).map_err(|e| write_error("adopting", e))?;
    let heads = integrity::read_heads(dir, Reading::WhenAsked).map_err(|detail| damaged(dir, detail))?;
    Ok((h, heads))
}

fn open_handles(dir: &Path, db: sled::Db) -> Result<Handles, StateError> {
    let open_tree =
        |name: &str| db.open_tree(name).map_err(|e| damaged(dir, format!("its `{name}` tree cannot be opened ({e})")));
    let workspaces = open_tree(WORKSPACES)?;
    let locks = open_tree(LOCKS)?;
    let history = open_tree(HISTORY)?;
    let layout = OnceLock::new();
    let names = db.tree_names();
    if names.iter().any(|n| n == WORKSPACE_HEADS.as_bytes()) || names.iter().any(|n| n == WORKSPACE_PARTS.as_bytes()) {
        let _ = layout.set(Layout { heads: open_tree(WORKSPACE_HEADS)?, parts: open_tree(WORKSPACE_PARTS)? });
    }
    let db_file = File::open(dir.join("db")).map_err(|e| StateError::Open {
        dir: dir.to_path_buf(),
        detail: format!("cannot open {} ({e}); check its permissions", dir.join("db").display()),
    })?;
    Ok(Handles { db, workspaces, locks, history, layout, db_file })
}

fn damaged(dir: &Path, detail: String) -> StateError {
    StateError::Damaged { dir: dir.to_path_buf(), detail }
}

impl StateStore for SledStore {
    fn list(&self) -> Result<Vec<WorkspaceSummary>, StateError> {
        // Every stored workspace and every head record; each checked against the other as it is read
        // (the head value's checksum, not its parts: a load checks those).
        let mut shoots: BTreeSet<String> = self.journal().shoots().into_iter().collect();
        let trees = std::iter::once(&self.h.workspaces).chain(self.h.layout.get().map(|l| &l.heads));
        for tree in trees {
            for item in tree.iter().keys() {
                let key = item.map_err(|e| self.io_error("listing workspaces in", e))?;
                shoots.insert(String::from_utf8_lossy(&key).into_owned());
            }
        }
        let mut out = Vec::new();
        for shoot in shoots {
            let (lineage, serial, resources) = match self.read_verified(&shoot, Read::Head)? {
                // A head record of a removal whose journal rewrite was interrupted (checked above).
                Current::Absent => continue,
                Current::Whole(raw) => {
                    let ws = parse_summary(&shoot, &raw)?;
                    (ws.lineage, ws.serial, ws.resources.0)
                }
                Current::Parts { head, .. } => {
                    let head = parse_head(&shoot, &head)?;
                    (head.lineage, head.serial, head.resources)
                }
            };
            let locked_by = self.read_lock(&shoot)?.map(|(_, info)| info);
            out.push(WorkspaceSummary { shoot, lineage, serial, resources, locked_by });
        }
        // A shoot locked by an apply that never committed (killed early) has a lock but no workspace.
        for item in self.h.locks.iter() {
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
        match self.read_verified(shoot, Read::Whole)? {
            Current::Absent => Ok(None),
            Current::Whole(raw) => parse_workspace(shoot, &raw).map(Some),
            Current::Parts { head, parts } => {
                let head = parse_head(shoot, &head)?;
                layout::assemble(&head, parts).map(Some).map_err(|detail| StateError::Corrupt {
                    shoot: shoot.to_string(),
                    detail: format!("{detail}; restore the state dir from a backup"),
                })
            }
        }
    }

    fn commit(&self, ws: &mut Workspace, operation: &str) -> Result<(), StateError> {
        let shoot = ws.shoot.as_str();
        let expected = ws.serial;
        let lineage = ws.lineage.as_str();
        let mut next = ws.clone();
        // One commit of a workspace at a time, from its transaction until its head record is durable.
        let _taken = self.group.begin(shoot);
        next.serial = expected.checked_add(1).ok_or_else(|| StateError::Corrupt {
            shoot: shoot.to_string(),
            detail: "its serial cannot be incremented any further".to_string(),
        })?;
        let version = self.prepare_version(&next, operation, |stored| {
            let conflict = |detail: String| StateError::Conflict { shoot: shoot.to_string(), detail };
            match stored {
                Some(stored) if stored.lineage != lineage => Err(conflict(format!(
                    "the stored workspace has lineage {} but this change was made for lineage {lineage} \
                     (the workspace was deleted and created again)",
                    stored.lineage
                ))),
                Some(stored) if stored.serial != expected => Err(conflict(format!(
                    "the stored serial is {} but this change was made against serial {expected} \
                     (another run committed in between)",
                    stored.serial
                ))),
                None if expected != 0 => Err(conflict(format!(
                    "the workspace is not stored but this change was made against serial {expected}"
                ))),
                _ => Ok(()),
            }
        })?;
        // Stored by the leader of its group, in one transaction with the versions of the other members,
        // then made durable with them.
        match self.group.durable(Some(Staged::Version(Box::new(version))), |staged| self.flush_group(staged)) {
            Ok(()) => {
                ws.serial = next.serial;
                Ok(())
            }
            Err(NotDurable::Refused(detail)) => Err(StateError::Conflict { shoot: shoot.to_string(), detail }),
            Err(NotDurable::Failed { message, stored }) => {
                // The commit is in the database (in memory): the caller's copy must follow it, or its next
                // commit would conflict with itself.
                if stored {
                    ws.serial = next.serial;
                }
                Err(StateError::Io(message))
            }
        }
    }

    fn push(&self, ws: &Workspace, force: bool) -> Result<u64, StateError> {
        let shoot = ws.shoot.as_str();
        let refused = |detail: String| StateError::PushRefused { shoot: shoot.to_string(), detail };
        let current = self.load(shoot)?;
        if let (Some(stored), false) = (&current, force) {
            if stored.lineage != ws.lineage {
                return Err(refused(format!(
                    "the stored workspace has lineage {} but the file has lineage {}: it belongs to another \
                     life of the workspace; pass --force to replace the stored one anyway",
                    stored.lineage, ws.lineage
                )));
            }
            if ws.serial < stored.serial {
                return Err(refused(format!(
                    "the file is at serial {} but the stored workspace is at serial {}: pushing it would roll \
                     the state back; pass --force to do that on purpose",
                    ws.serial, stored.serial
                )));
            }
        }
        // A new serial above both, so that every plan made against either is stale.
        let mut next = ws.clone();
        next.serial = current
            .as_ref()
            .map_or(0, |s| s.serial)
            .max(ws.serial)
            .checked_add(1)
            .ok_or_else(|| refused("its serial cannot be incremented any further".to_string()))?;
        let expected = current.as_ref().map(|s| (s.lineage.clone(), s.serial));
        let _taken = self.group.begin(shoot);
        let stored = self.store_version(&next, "push", |stored| match (stored, &expected) {
            (None, None) => Ok(()),
            (Some(s), Some((lineage, serial))) if &s.lineage == lineage && s.serial == *serial => Ok(()),
            _ => Err(StateError::Conflict {
                shoot: shoot.to_string(),
                detail: "the stored workspace changed while it was being replaced".to_string(),
            }),
        })?;
        self.seal_version(&next, &stored)?;
        Ok(next.serial)
    }

    fn remove(&self, shoot: &str, lineage: &str, serial: u64) -> Result<String, StateError> {
        // No commit of the workspace in between: a commit changes its head, which the transaction compares.
        let _taken = self.group.begin(shoot);
        let conflict = |detail: String| StateError::Conflict { shoot: shoot.to_string(), detail };
        let layout = self.layout()?;
        let current = self.current(shoot)?;
        let Some(raw) = current.raw() else {
            return Err(conflict("the workspace is not stored (another run removed it)".to_string()));
        };
        let meta = parse_meta(shoot, raw)?;
        if meta.lineage != lineage || meta.serial != serial {
            return Err(conflict(format!(
                "the stored workspace is at serial {} of lineage {}, not at serial {serial} of lineage {lineage} \
                 (another run committed in between)",
                meta.serial, meta.lineage
            )));
        }
        let next = serial.checked_add(1).ok_or_else(|| StateError::Corrupt {
            shoot: shoot.to_string(),
            detail: "its serial cannot be incremented any further".to_string(),
        })?;
        let name = crate::removed_name(shoot, lineage, serial);
        // The history moves to its new name, followed by the entry of the removal: the proof, after a
        // kill before the journal is rewritten, that the missing workspace was removed on purpose.
        let entry = HistoryEntry {
            serial: next,
            operation: crate::REMOVE_OPERATION.to_string(),
            at: now_rfc3339(),
            resources: 0,
            checksum: None,
            previous: Some(integrity::checksum_bytes(raw)),
        };
        let entry_json = to_json(&entry).map_err(|e| self.io_error("encoding history entry for", e))?;
        let mut moved = Vec::new();
        for item in self.h.history.scan_prefix(history_prefix(shoot)) {
            let (key, value) = item.map_err(|e| self.io_error("reading history from", e))?;
            let Some(entry_serial) = key.get(key.len().saturating_sub(8)..).and_then(|b| <[u8; 8]>::try_from(b).ok())
            else {
                continue;
            };
            moved.push((Some(key.clone()), history_key(&name, u64::from_be_bytes(entry_serial)), value.to_vec()));
        }
        moved.push((None, history_key(&name, next), entry_json));
        let (expected_head, expected_whole, parts) = match &current {
            Current::Absent => (None, None, Vec::new()),
            Current::Whole(raw) => (None, Some(raw.clone()), Vec::new()),
            Current::Parts { head, parts } => (Some(head.clone()), None, parts.keys().cloned().collect()),
        };
        let trees = (&self.h.workspaces, &layout.heads, &layout.parts, &self.h.history);
        let outcome = trees.transaction(|(workspaces, heads, parts_tree, history)| {
            let key = shoot.as_bytes();
            if heads.get(key)? != expected_head || workspaces.get(key)? != expected_whole {
                return Err(ConflictableTransactionError::Abort(conflict(
                    "the stored workspace changed while it was being removed".to_string(),
                )));
            }
            workspaces.remove(key)?;
            heads.remove(key)?;
            for part in &parts {
                parts_tree.remove(part)?;
            }
            for (old, new, value) in &moved {
                if let Some(old) = old {
                    history.remove(old)?;
                }
                if history.insert(new.as_slice(), value.as_slice())?.is_some() {
                    return Err(ConflictableTransactionError::Abort(StateError::RemoveRefused {
                        shoot: shoot.to_string(),
                        detail: format!(
                            "the history of an earlier removal of this version is kept as {name} already; \
                             commit a change first (or restore it elsewhere with `trellis state pull`/`push`)"
                        ),
                    }));
                }
            }
            Ok(())
        });
        match outcome {
            Ok(()) => {}
            Err(TransactionError::Abort(e)) => return Err(e),
            Err(TransactionError::Storage(e)) => return Err(self.io_error("removing a workspace from", e)),
        }
        // Nothing of it is left to back up at close.
        self.committed.lock().unwrap_or_else(PoisonError::into_inner).remove(shoot);
        self.make_durable(None)?;
        self.journal().forget(shoot).map_err(|e| self.io_error("rewriting the heads journal of", e))?;
        // `backups/` keeps one file per stored workspace (what a recovery pushes back): the removed one's
        // goes (the caller's backup of the removal holds the version it had, or a newer one).
        let backup = dir::workspace_file(self.dir(), dir::BACKUPS, shoot);
        match fs::remove_file(&backup) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(self.io_error("removing a backup from", e)),
            _ => {}
        }
        Ok(name)
    }

    fn history(&self, shoot: &str) -> Result<Vec<HistoryEntry>, StateError> {
        let mut out = Vec::new();
        for item in self.h.history.scan_prefix(history_prefix(shoot)) {
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
                .h
                .locks
                .compare_and_swap(key, None as Option<&[u8]>, Some(new.as_slice()))
                .map_err(|e| self.io_error("writing lock to", e))?;
            let current = match swapped {
                // Not flushed here: the next flush (its first commit's) makes it durable (crate docs, "Durability").
                Ok(()) => return Ok(Acquired::Fresh),
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
                return Err(StateError::Locked { shoot: shoot.to_string(), holder, release: LockRelease::Unlock });
            }
            // The holder ran on this host and is gone: take the lock over, unless it changed meanwhile.
            let swapped = self
                .h
                .locks
                .compare_and_swap(key, Some(&current), Some(new.as_slice()))
                .map_err(|e| self.io_error("writing lock to", e))?;
            if swapped.is_ok() {
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
                return Err(StateError::Locked { shoot: shoot.to_string(), holder, release: LockRelease::Unlock });
            }
            let swapped = self
                .h
                .locks
                .compare_and_swap(shoot.as_bytes(), Some(&current), None as Option<&[u8]>)
                .map_err(|e| self.io_error("removing lock from", e))?;
            if swapped.is_ok() {
                // Not flushed here either: the next flush, or closing the store, makes it durable.
                return Ok(());
            }
        }
    }

    fn force_unlock(&self, shoot: &str) -> Result<Option<LockInfo>, StateError> {
        let removed = self.h.locks.remove(shoot.as_bytes()).map_err(|e| self.io_error("removing lock from", e))?;
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

    fn export(&self, shoot: &str) -> Result<Option<ExportedWorkspace>, StateError> {
        // `load` checks the parts against the head; the open checked the head against its head record.
        let Some(workspace) = self.load(shoot)? else {
            return Ok(None);
        };
        let history = self.history(shoot)?;
        Ok(Some(ExportedWorkspace { workspace, history }))
    }

    fn import(&self, exported: &ExportedWorkspace) -> Result<Imported, StateError> {
        let ws = &exported.workspace;
        let shoot = ws.shoot.as_str();
        let _taken = self.group.begin(shoot);
        if let Some(stored) = self.load(shoot)? {
            return already_there(&stored.lineage, stored.serial, ws);
        }
        let layout = self.layout()?;
        let parts = layout::parts(ws);
        let head_json = layout::head_value(ws, &parts);
        let mut entries = Vec::with_capacity(exported.history.len());
        for entry in &exported.history {
            let json = to_json(entry).map_err(|e| self.io_error("encoding history entry for", e))?;
            entries.push((history_key(shoot, entry.serial), json));
        }
        let trees = (&self.h.workspaces, &layout.heads, &layout.parts, &self.h.history);
        let outcome = trees.transaction(|(workspaces, heads, parts_tree, history)| {
            if heads.get(shoot.as_bytes())?.is_some() || workspaces.get(shoot.as_bytes())?.is_some() {
                return Ok(false); // stored meanwhile
            }
            for (key, value) in &parts {
                parts_tree.insert(key.as_slice(), value.as_slice())?;
            }
            heads.insert(shoot.as_bytes(), head_json.as_slice())?;
            for (key, value) in &entries {
                history.insert(key.as_slice(), value.as_slice())?;
            }
            Ok::<_, ConflictableTransactionError<()>>(true)
        });
        match outcome {
            Ok(true) => {}
            Ok(false) => {
                return match self.load(shoot)? {
                    Some(stored) => already_there(&stored.lineage, stored.serial, ws),
                    None => Err(self.io_error("importing into", std::io::Error::other("the workspace vanished"))),
                }
            }
            Err(TransactionError::Abort(())) => {
                return Err(self.io_error("importing into", std::io::Error::other("the transaction was aborted")))
            }
            Err(TransactionError::Storage(e)) => return Err(self.io_error("importing into", e)),
        }
        self.committed.lock().unwrap_or_else(PoisonError::into_inner).insert(shoot.to_string());
        self.make_durable(Some(Head::of(ws, &head_json)))?;
        Ok(Imported::Created)
    }

    fn removed_histories(&self) -> Result<Vec<String>, StateError> {
        let mut names = BTreeSet::new();
        for item in self.h.history.iter().keys() {
            let key = item.map_err(|e| self.io_error("reading history from", e))?;
            let Some(end) = key.iter().position(|&b| b == 0xFF) else { continue };
            let name = String::from_utf8_lossy(&key[..end]);
            if crate::removed_owner(&name).is_some() {
                names.insert(name.into_owned());
            }
        }
        Ok(names.into_iter().collect())
    }

    fn import_removed_history(&self, name: &str, history: &[HistoryEntry]) -> Result<Imported, StateError> {
        // No commit ever names a removed workspace's history, and the dir lock keeps other processes
        // out: nothing to serialise with (`group.begin` would also hold the flush's leader for its
        // `GATHER`, waiting for a version this write never stages).
        let stored = self.history(name)?;
        if !stored.is_empty() {
            return crate::same_removed_history(name, &stored, history);
        }
        let mut batch = sled::Batch::default();
        for entry in history {
            let json = to_json(entry).map_err(|e| self.io_error("encoding history entry for", e))?;
            batch.insert(history_key(name, entry.serial), json);
        }
        self.h.history.apply_batch(batch).map_err(|e| self.io_error("importing into", e))?;
        self.make_durable(None)?;
        Ok(Imported::Created)
    }
}

/// [`StateStore::import`] of `ws` when `stored` is stored already: the same lineage and serial are
/// [`Imported::AlreadyThere`], anything else is refused. Shared by both backends.
pub(crate) fn already_there(lineage: &str, serial: u64, ws: &Workspace) -> Result<Imported, StateError> {
    if lineage == ws.lineage && serial == ws.serial {
        return Ok(Imported::AlreadyThere);
    }
    Err(StateError::PushRefused {
        shoot: ws.shoot.clone(),
        detail: format!(
            "the destination already holds it at lineage {} serial {}, but the source has lineage {} serial {}; \
             remove one of them (or `trellis state push --force` the one to keep) and migrate again",
            lineage, serial, ws.lineage, ws.serial
        ),
    })
}

/// How long an open waits for a state dir that is being released (or whose holder has not recorded
/// itself yet), and how long closing waits for sled to let go of its files.
const RELEASE_WAIT: Duration = Duration::from_secs(3);

/// Takes the dir lock; `create`: creates the directory first if it is missing. Returns the lock and
/// whether this call created the directory; `Ok(None)` without `create` when there is no directory.
///
/// The lock is held by another process (or another open in this one): if that holder has recorded itself
/// in `holder.json`, [`StateError::DirInUse`] names it at once; otherwise it has just taken the lock or is
/// letting go of it, so this retries for up to [`RELEASE_WAIT`]. A directory that was removed or
/// replaced while the lock was being taken (its creator cleaned it up) is looked up again.
fn lock_dir(dir: &Path, create: bool) -> Result<Option<(DirLock, bool)>, StateError> {
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        let made_dir = match ensure_dir(dir, create)? {
            Some(made_dir) => made_dir,
            None => return Ok(None),
        };
        match DirLock::try_acquire(dir) {
            Ok(Some(lock)) if lock.is_at(dir) => return Ok(Some((lock, made_dir))),
            Ok(Some(_)) => {} // removed or replaced meanwhile: look again
            Ok(None) => {
                if let Some(holder) = live_holder(dir) {
                    return Err(StateError::DirInUse { dir: dir.to_path_buf(), holder: Some(holder) });
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {} // removed meanwhile: look again
            Err(e) => {
                return Err(StateError::Open {
                    dir: dir.to_path_buf(),
                    detail: format!("cannot lock it ({e}); check its permissions"),
                })
            }
        }
        if Instant::now() >= deadline {
            return Err(StateError::DirInUse { dir: dir.to_path_buf(), holder: live_holder(dir) });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `Some(created)` when `dir` is (now) a directory; `None` when it is missing and `create` is false.
fn ensure_dir(dir: &Path, create: bool) -> Result<Option<bool>, StateError> {
    let open_error = |detail: String| StateError::Open { dir: dir.to_path_buf(), detail };
    let not_a_dir = || {
        open_error(
            "it exists but is not a directory; pass a directory as the state dir (it is created if missing)"
                .to_string(),
        )
    };
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(Some(false)),
        Ok(_) => return Err(not_a_dir()),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(open_error(format!("cannot read it ({e}); check its permissions"))),
    }
    if !create {
        return Ok(None);
    }
    let cannot_create = |e: std::io::Error| {
        open_error(format!(
            "cannot create it ({e}); check the permissions of its parent directory or choose another state dir"
        ))
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(cannot_create)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => Ok(Some(true)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists && dir.is_dir() => Ok(Some(false)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(not_a_dir()),
        Err(e) => Err(cannot_create(e)),
    }
}

/// The holder recorded in `holder.json`, unless it is a process of this host that is gone (a crashed
/// holder's file stays behind until the next open overwrites it).
fn live_holder(dir: &Path) -> Option<LockInfo> {
    read_holder(dir).filter(|h| h.host != this_host() || pid_alive(h.pid))
}

/// `sled::open` of the files in `files`; errors name the state dir `dir`.
///
/// Under the dir lock, sled's own file lock on `db` can only be held by a store of this process that is
/// still being released (jobs on sled's thread pool keep the file open for a moment after the last
/// handle is gone), or by a trellis too old to take the dir lock; the open is retried for up to
/// [`RELEASE_WAIT`].
fn open_db(files: &Path, dir: &Path) -> Result<sled::Db, StateError> {
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        let err = match sled::Config::new().path(files).open() {
            Ok(db) => return Ok(db),
            Err(e) => open_failure(dir, e),
        };
        match err {
            StateError::DirInUse { .. } if Instant::now() < deadline => {
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
            return StateError::DirInUse { dir: dir.to_path_buf(), holder: None };
        }
        sled::Error::Io(io) if io.kind() == ErrorKind::PermissionDenied => {
            format!("{io}; make the state dir readable and writable for this user")
        }
        sled::Error::Corruption { .. } => {
            return damaged(dir, "the database does not open: sled finds corrupted data".to_string());
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

/// What `list` needs of a stored workspace: its identity and how many resources it holds.
#[derive(Deserialize)]
struct SummaryRepr {
    shoot: String,
    lineage: String,
    serial: u64,
    resources: Count,
}

/// The number of entries of a JSON object, counted without building them.
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Count, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of resources")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

fn parse_summary(shoot: &str, raw: &[u8]) -> Result<SummaryRepr, StateError> {
    let summary: SummaryRepr = serde_json::from_slice(raw).map_err(|e| StateError::Corrupt {
        shoot: shoot.to_string(),
        detail: format!("its stored record does not parse ({e}); restore the state dir from a backup"),
    })?;
    if summary.shoot != shoot {
        return Err(StateError::Corrupt {
            shoot: shoot.to_string(),
            detail: format!(
                "its stored record belongs to shoot {}; restore the state dir from a backup",
                summary.shoot
            ),
        });
    }
    Ok(summary)
}

/// Like [`parse_workspace`], reading only the fields that identify the version ([`WorkspaceMeta`]).
fn parse_meta(shoot: &str, raw: &[u8]) -> Result<WorkspaceMeta, StateError> {
    let meta: WorkspaceMeta = serde_json::from_slice(raw).map_err(|e| StateError::Corrupt {
        shoot: shoot.to_string(),
        detail: format!("its stored record does not parse ({e}); restore the state dir from a backup"),
    })?;
    if meta.shoot != shoot {
        return Err(StateError::Corrupt {
            shoot: shoot.to_string(),
            detail: format!("its stored record belongs to shoot {}; restore the state dir from a backup", meta.shoot),
        });
    }
    Ok(meta)
}

/// A head value of format 4's layout ([`HeadValue`]).
fn parse_head(shoot: &str, raw: &[u8]) -> Result<HeadValue, StateError> {
    let head: HeadValue = serde_json::from_slice(raw).map_err(|e| StateError::Corrupt {
        shoot: shoot.to_string(),
        detail: format!("its stored head does not parse ({e}); restore the state dir from a backup"),
    })?;
    if head.shoot != shoot {
        return Err(StateError::Corrupt {
            shoot: shoot.to_string(),
            detail: format!("its stored head belongs to shoot {}; restore the state dir from a backup", head.shoot),
        });
    }
    Ok(head)
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

/// An error as words for a user. sled's own text for corruption is Rust Debug output
/// (`Read corrupted data at file offset None backtrace ()`).
trait Words {
    fn words(&self) -> String;
}

impl Words for sled::Error {
    fn words(&self) -> String {
        match self {
            sled::Error::Corruption { .. } => "the database is corrupt".to_string(),
            other => other.to_string(),
        }
    }
}

impl Words for std::io::Error {
    fn words(&self) -> String {
        self.to_string()
    }
}

impl Words for serde_json::Error {
    fn words(&self) -> String {
        self.to_string()
    }
}

#[cfg(test)]
mod pending_writes_tests {
    use super::*;

    /// A user's writes kept in memory (as the simulated ARM cloud keeps them).
    struct Kept {
        tree: sled::Tree,
        writes: Mutex<BTreeMap<sled::IVec, Option<sled::IVec>>>,
    }

    impl PendingWrites for Kept {
        fn tree(&self) -> &sled::Tree {
            &self.tree
        }
        fn pending(&self) -> Vec<PendingWrite> {
            self.writes.lock().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        }
        fn stored(&self, writes: &[PendingWrite]) {
            let mut kept = self.writes.lock().unwrap();
            for (k, v) in writes {
                if kept.get(k) == Some(v) {
                    kept.remove(k);
                }
            }
        }
    }

    /// Issue #27: pending writes are stored by the next commit group, in its transaction (no batch of
    /// their own: the group's flush is the one synchronous write), and forgotten once stored; a flush
    /// without commits and the close store them too.
    #[test]
    fn regression_pending_writes_are_stored_in_the_commit_groups_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let store = SledStore::open(&state, "apply").unwrap();
        let kept = Arc::new(Kept { tree: store.tree("sim").unwrap(), writes: Mutex::default() });
        store.store_with_commits(kept.clone());
        let put = |key: &str, value: Option<&str>| {
            kept.writes.lock().unwrap().insert(key.as_bytes().into(), value.map(|v| v.as_bytes().into()));
        };
        put("a", Some("1"));
        put("gone", Some("x"));
        let mut ws = Workspace::new("shoot--dev--a");
        store.commit(&mut ws, "apply").unwrap();
        assert_eq!(kept.tree.get("a").unwrap().as_deref(), Some(&b"1"[..]), "stored by the commit");
        assert!(kept.writes.lock().unwrap().is_empty(), "and forgotten");

        put("gone", None);
        store.flush().unwrap();
        assert!(!kept.tree.contains_key("gone").unwrap(), "a removal, stored by a flush without commits");

        put("b", Some("2"));
        drop(kept); // the store holds the only handle now, and lets go of it before it seals
        store.close().unwrap();
        let store = SledStore::open(&state, "plan").unwrap();
        let tree = store.tree("sim").unwrap();
        assert_eq!(tree.get("b").unwrap().as_deref(), Some(&b"2"[..]), "stored by the close");
        assert_eq!(tree.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    }
}
