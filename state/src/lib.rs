//! trellis state: what trellis remembers about each shoot between runs, behind the [`StateStore`] trait,
//! with an embedded sled backend ([`SledStore`]) and a PostgreSQL backend ([`PgStore`]).
//!
//! # Backends
//!
//! [`StateLocation`] is where state lives (`--state` / `TRELLIS_STATE`): a value starting with
//! `postgres://` or `postgresql://` is a PostgreSQL database ([`PgStore`], see "PostgreSQL" below),
//! anything else a state dir ([`SledStore`], the default: one person, one machine). Both keep the same
//! workspaces, lineage/serial compare-and-swap, history and locks, with the same semantics, and the
//! checksum of a version is the same in both (the `sha256:` of its head value in the sled layout), so
//! [`migrate`] (`trellis state migrate`) moves workspaces with their history between them unchanged
//! ([`StateStore::export`] / [`StateStore::import`]). Locks are not migrated: they belong to running
//! processes. Where they differ: the sled dir is held by one process at a time (a process-level lock),
//! a database by any number of processes on any number of machines (only workspace locks); the sled
//! backend's integrity machinery (head records, seal, backups) is replaced in PostgreSQL by a checksum per
//! stored version and the full versions kept in the history table.
//!
//! # Workspaces, lineage and serial
//!
//! There is one [`Workspace`] per shoot, keyed by the shoot's technical id (`shoot--<project>--<name>`).
//! It holds the resources trellis knows about (with who owns them: the provider deletes managed
//! resources the configuration no longer wants because they are recorded here), the outputs of the
//! last successful apply and the provider's own state — the configuration as last applied and the
//! decisions of earlier plans — typed and versioned by the provider, with migrations from older
//! versions ([`ProviderState`], [`VersionedState`]; see the `provider` module). Two numbers identify a
//! version of a workspace:
//!
//! * the **lineage**, a UUID v4 made once when the workspace is created ([`Workspace::new`]). A
//!   workspace that was deleted and created again has a different lineage, so a plan made against the
//!   old one can never be applied to the new one;
//! * the **serial**, 0 for a workspace that was never committed and incremented by every commit.
//!
//! # Compare-and-swap
//!
//! [`StateStore::commit`] is a compare-and-swap on (lineage, serial): it succeeds only if the stored
//! workspace has the lineage and the serial of the value being committed (a workspace that is not stored
//! yet counts as serial 0 with any lineage). It then stores the workspace with `serial + 1`, appends a
//! [`HistoryEntry`] and updates the caller's `serial`. If someone else committed in between, the caller
//! gets [`StateError::Conflict`] and nothing is written: the caller must re-read the state and re-plan.
//! This is what makes a stale plan file refusable (design invariant 3).
//!
//! # Locks
//!
//! There are two levels of locking.
//!
//! * **Process level.** Every [`SledStore::open`] takes an exclusive `flock(2)` on the state dir itself
//!   (not on a file in it, so that nothing is created in a directory before it is known to be a state
//!   dir), and records itself in `<dir>/holder.json` (a [`LockInfo`]), which closing removes. A second
//!   process — or a second open in the same process, since `flock` locks belong to the open file
//!   description — fails and reads that file to report who holds the dir ([`StateError::DirInUse`]).
//!   The OS releases the `flock` when the holder dies, so this lock can never go stale; `holder.json` of
//!   a crashed process is ignored (its pid is gone) and overwritten by the next open. An open that finds
//!   the lock held but no live holder recorded (the holder has just taken it, or is letting it go)
//!   retries for up to 3 seconds before reporting the dir as in use. sled additionally locks `<dir>/db`
//!   while it has the database open.
//!
//!   Everything that changes a state dir happens under this lock, including removing it again: a command
//!   that fails removes what *its own* open created ([`SledStore::discard`]: the directory if the
//!   process created it and then made it a state dir, and only if nothing was recorded), while holding
//!   the lock. A process that got the lock on a directory that was removed meanwhile notices (the locked
//!   directory is no longer the one at the path) and starts again. So two concurrent first applies end
//!   with one applying and the other refused as "in use", never with the winner's state removed.
//! * **Workspace level.** [`StateStore::lock`] stores a [`LockInfo`] record for a shoot with a
//!   compare-and-swap from "no lock". The record lives in the database, so it survives the process and
//!   also protects a workspace across processes that open the dir one after the other, and across backends
//!   shared by several machines. A lock held by a process that no longer exists would block the shoot
//!   forever, so a lock whose holder ran on *this* host with a pid that is no longer alive
//!   (`kill(pid, 0)` finds no such process, or `/proc/<pid>/stat` shows a zombie) is taken over and
//!   reported as [`Acquired::BrokeStale`]. A lock from another host cannot be checked and is always
//!   respected; `trellis state unlock` ([`StateStore::force_unlock`]) removes it.
//!
//! Neither level waits: a held lock is refused at once, naming its holder. Waiting is the caller's
//! choice (`--lock-timeout`, as Terraform's `-lock-timeout`), made in one place for every lock —
//! a state dir's, a sim dir's, a workspace's in either backend: [`LockWait::acquire`] repeats the
//! attempt (an open, a [`StateStore::lock`]) while it fails with [`StateError::DirInUse`] or a
//! PostgreSQL [`StateError::Locked`], pausing 100 ms doubling to 1 s, and tells its callback who holds the lock
//! when it starts waiting and every ten seconds after ([`Waiting`]). A lock still held at the deadline
//! is [`StateError::LockTimeout`]: the last refusal, and how long was waited. Polling rather than
//! blocking (`flock` without `LOCK_NB`, `pg_advisory_lock`) keeps the deadline, the progress line with
//! the current holder, a holder that dies (a stale sled record is taken over on the next attempt), and
//! one code path for the three kinds of lock; a released lock is taken within a second. A waiter is not
//! queued: whichever process tries first after the release gets the lock. A sled workspace lock record
//! is refused at once even so: a live holder of it also holds the dir, and otherwise only `trellis
//! state unlock` removes it — which needs the dir the waiting process holds.
//!
//! # Durability
//!
//! Design invariant 4 says that killing trellis at any moment loses nothing. sled 0.34.7 writes to its
//! log in memory and flushes it every 500 ms in the background, so every commit ends with a flush
//! ([`SledStore::flush`]) before returning. Locks and unlocks do not: a workspace lock is made durable
//! by the next flush — at the latest the first commit made under it, so a killed run whose lock was
//! lost had committed nothing under it —, an unlock by the next flush or the store's close (a run
//! killed right after an unlock may leave the lock of a gone process, which the next apply takes
//! over, as after any killed run). The state dir itself is locked by one process at a time, so a
//! workspace lock only tells the next run about a killed one. Its caveats, and what this crate does
//! about them:
//!
//! * sled's `Db::flush` writes the log to the file but syncs it with `sync_file_range(2)`, which does
//!   not persist file metadata (sled issue #1452, "Data is not written durably"); only sled's background
//!   flusher and its `Drop` call `fsync`. That is enough against a killed process (the data is in the
//!   kernel), not against a power loss. [`SledStore::flush`] therefore also calls `fdatasync` on `<dir>/db`
//!   itself.
//! * Values larger than about 128 KiB (a quarter of sled's 512 KiB segment) are written by sled to
//!   separate files under `<dir>/blobs/` that sled never `fsync`s; a very large workspace is only as
//!   durable as the kernel's page cache until the background flusher's next `fsync` of the log.
//! * sled describes itself as beta and its on-disk format may change before 1.0; open reports of
//!   corruption after unclean shutdowns exist (#1533, #1509). Damage is detected (see "Integrity"), not
//!   repaired: keep a backup of the state dir.
//!
//! **Group commit.** A flush makes durable everything written to sled before it, whoever wrote it, so
//! commits made at the same time (the shoots of a fleet apply each commit after every node, from
//! their own threads) share one: a commit stores its version in a sled transaction, then waits for
//! durability. If no flush is running, it runs one at once for itself and every commit that joined;
//! if one is running, it waits for it to end and then for the next, which the first of the waiting
//! commits runs. Before it flushes, that leader waits (up to 1 ms) for the commits on their way — begun
//! ([`StateStore::commit`] has taken its workspace) but not staged yet — so that they join its group
//! rather than wait for the next flush. One flush is sled's flush, an `fdatasync` of `db` (which, unlike `fsync`, skips the
//! timestamps; the file's length is still synced), then the head record of every workspace
//! committed in the group appended to the heads journal `heads.log` in one write, and one `fdatasync` of
//! it (no file is created or renamed per commit: a new inode per commit was what made thousands of
//! shoots slow). A
//! commit returns only after the flush that covers it, so when [`StateStore::commit`] returns, the
//! commit and its head record are durable, as without grouping. A workspace has at most one commit
//! between its transaction and its durable head record (a second commit of the same workspace waits
//! before its transaction), so the crash rule below holds per workspace whatever a group holds; a kill
//! in the middle of a group's head writes leaves each workspace's head at its new version or the one
//! right before it. A failed flush fails every commit of its group. Other writes to the database made
//! before a flush (locks, the simulated cloud's writes) are made durable by it too, without a head
//! record. A lone commit costs what it did: one flush, its head.
//!
//! # State dir
//!
//! A directory passed as the state dir must be new, empty, or a trellis state dir; trellis never takes
//! over anything else ([`StateError::NotStateDir`], nothing in the directory is touched). It holds:
//!
//! | path                      | what                                                                    |
//! |---------------------------|-------------------------------------------------------------------------|
//! | `trellis-state.json`      | marker: `{"kind": "trellis-state", "format_version": 4}`                |
//! | `db`, `conf`, `blobs/`, `snap.*` | sled's files                                                     |
//! | `heads.log`               | heads journal: one line (compact JSON: shoot, lineage, serial, checksum) per commit |
//! | `heads/<shoot>.json`      | head record of each workspace, as format 1 wrote them (read; removed when the journal is compacted) |
//! | `backups/<shoot>.json`    | each workspace as the last command that changed it and closed left it (a [`WorkspaceFile`]) |
//! | `seal.json`               | how trellis left sled's files: `open`, or `closed` with each file's length, BLAKE3 (`blake3`; `sha256` in format 2) and stamp (`stat`: inode, mtime, ctime) |
//! | `holder.json`             | the process holding the dir (only while it does)                        |
//! | `audit/<cloud>.jsonl`     | the simulated clouds' audit logs, one JSON line per call (written by the engine's session, not by this crate; not state: not sealed, not checked) |
//! | `.verify/`                | scratch copy of sled's files while they are verified (only during an open) |
//!
//! Shoot names in file names are percent-encoded outside `[A-Za-z0-9_-]`. A format newer than this
//! trellis reads is refused. Format 3 differs from format 4 only in how sled holds a workspace (one
//! value, the whole workspace; see "Storage layout"): it is read as it is, a run that only reads leaves
//! it byte for byte, and the first commit of each workspace moves it to format 4's records in the
//! commit's transaction (after the marker says format 4). Format 2 differs from format 3 only in its seal (SHA-256 instead of
//! BLAKE3): it is verified as it is, a run that only reads leaves it, and a run that changed sled's
//! files writes the marker of format 3 and then a BLAKE3 seal (so a trellis of format 2 refuses the dir
//! as newer rather than as damaged). Format 1 (head records in `heads/`, no journal) is read as it is: the
//! first append to the journal writes the marker of format 3 first, and the compaction at the end of
//! that run moves the records of `heads/` into the journal and removes `heads/`. A directory without the marker that holds exactly what an earlier trellis
//! left — sled's `conf` with the settings trellis uses, `db`, `blobs/`, maybe `snap.*` and `holder.json` —
//! and whose database has a `workspaces` tree is adopted: head records are made from the workspaces as
//! they are (nothing older can be checked), then the marker is written. Commands that only read use
//! [`SledStore::open_existing`], which never creates or marks a directory.
//!
//! # Integrity
//!
//! sled 0.34 checks every record it reads with a CRC, but when it finds a damaged or truncated log it
//! often just stops reading there and opens "successfully" with older data (a silent rollback), and it
//! writes to its files while it opens them, damaged or not. Three things make damage visible and keep
//! trellis from making it permanent:
//!
//! * **Head records and checksums.** Every commit writes, after the database commit and its flush, the
//!   workspace's head record (lineage, serial, `sha256:` of the stored JSON — the head value, whose
//!   digest covers the workspace's parts; see "Storage layout") durably: a line appended to
//!   `heads.log` and `fsync`ed (once for all the head records of a commit group, see "Durability"); the
//!   latest line of a shoot is its head. A kill in the middle of an append leaves a last line without
//!   its newline: it is ignored (its commits had not returned; the crash rule below covers them) and cut
//!   off before this store's first append; any complete line that does not parse is damage. An open
//!   reads of each line only which shoot it is of (lines as trellis writes them start
//!   `{"shoot":"<name>"`), and the rest of a shoot's latest line when that workspace is read, so a
//!   garbled record is found by the command that reads its workspace (issue #27); the check of a whole
//!   dir after an unclean stop reads every line. A run that
//!   appended rewrites the journal at its clean close (temporary file, `fsync`, `rename`, `fsync` of the
//!   directory) with one line per workspace when it holds more than twice that many. The commit's [`HistoryEntry`],
//!   stored in the same sled transaction as the workspace, names the checksum of the version it stored
//!   and of the version it replaced. A workspace is checked against its head record when a command
//!   reads it — [`StateStore::load`] checks all of its bytes (the head value's checksum, the digest of
//!   its parts), [`StateStore::list`] the head value's checksum of each — and not at open: a command
//!   costs what it touches (issue #27), and a workspace that is never read cannot be used damaged.
//!   (After an unclean stop the open checks every workspace, on a copy: see "The seal".)
//!   A kill between the database commit and the head write leaves the head naming the version before;
//!   that — and only that — is accepted, when the stored version's history entry says it replaced
//!   exactly the head's version and produced exactly the stored bytes (a rollback can only bring back
//!   an older version, whose entry names an even older predecessor). A workspace without a head record is
//!   accepted only when its entry says it is a first version. The next commit rewrites the head.
//!   Anything else — a workspace behind its head (rollback), missing, garbled, of another lineage, or a
//!   head that is not its immediate predecessor — is [`StateError::Damaged`].
//! * **Backups.** When a store that committed closes ([`SledStore::close`], or [`SledStore::discard`]
//!   of a failed command that recorded something), the version it leaves of each workspace it committed
//!   is written to `backups/<shoot>.json` (a [`WorkspaceFile`]; replaced atomically, not synced: it is
//!   for restoring by hand, not part of the check). Once per workspace and command, not per commit: an
//!   apply commits after every node, and a file per commit cost a new inode each. A backup that
//!   cannot be written does not stop the others; the close reports the first that failed. A run that
//!   was killed writes none, so the backups then hold the versions the run found.
//! * **The seal.** sled would rewrite a damaged database while opening it, so it must not open one in
//!   place. Before sled opens the files, `seal.json` is set to `open`; when the store closes and sled
//!   has let go of its files (its file lock on `db` can be taken), the length and hash of each of
//!   sled's files are written as `closed`, under the name of the algorithm: `blake3` (several times
//!   faster than the `sha256` of format 2, whose seals still verify with SHA-256). (If the run changed the files, sled opens them once more
//!   first, so that the sealed files are at rest: sled finishes a log it has not recovered yet — takes
//!   a snapshot, extends its segment — on its next open, which would otherwise make the next plan
//!   change them.) On open: files that match a `closed` seal are opened in place; files that differ from
//!   a `closed` seal were changed by something other than trellis and are refused as damaged without
//!   being opened; after an unclean stop (seal `open` or missing), sled first opens a *copy* of the files
//!   in `.verify/`, in which every workspace is checked against the head records, and only if it passes
//!   are the originals opened. So a damaged state dir is refused and left byte for byte as it was found.
//!   That check reads of each stored workspace only what identifies its version (shoot, lineage, serial;
//!   the rest must be well-formed JSON, and all of its bytes are covered by the checksum).
//!
//!   **Stamps.** Hashing every file at every open and close made each command cost the whole state
//!   (issue #27). So each sealed file also carries its *stamp* (`stat`: inode, modification and change
//!   time, nanoseconds), and a file whose stamp and length are the ones sealed is not read: a write moves
//!   `mtime` and `ctime`, `ctime` cannot be set back from user space, and a file put in its place has
//!   another inode. Only a file whose stamp moved is hashed and compared (a copied or restored dir is
//!   hashed once, then sealed with its new stamps). A change time without nanoseconds in the last two
//!   seconds is not recorded (a file system that keeps whole seconds could hide a second write in the
//!   same second): such a file is hashed. sled's open writes to `db` even when it changes nothing — its
//!   recovery rewrites the tail of the active segment after the recovered tip with the bytes the open
//!   that settled the files already wrote there —, so after an open of a cleanly sealed dir the stamps
//!   are taken again; a run that writes nothing more (a plan) closes without hashing and seals the same
//!   hashes under the new stamps (`seal.json` is the one file such a run changes, and only in `stat`).
//!   A run that changed the files hashes those whose stamp moved.
//! * **Restoring.** [`WorkspaceFile`] is what `trellis state pull` prints (the workspace and its
//!   checksum) and what `trellis state push` reads (the checksum, when present, must match);
//!   [`StateStore::push`] refuses another lineage or an older serial unless forced, and stores the
//!   workspace at a serial above both, so every plan made against either is stale. To recover a damaged
//!   state dir, move it aside and push each workspace's backup (or a pulled copy) into a new one.
//!
//! * **Removing.** [`StateStore::remove`] (`trellis state rm SHOOT`) deletes a workspace on purpose: in
//!   one transaction its head (or whole value) and parts go, and its history moves to
//!   [`removed_name`] followed by an entry of operation [`REMOVE_OPERATION`] at the next serial, without a
//!   checksum and naming the removed version's checksum as the one it replaced; after the flush, the
//!   heads journal is rewritten without the shoot (atomically, as the compaction does). A kill between
//!   the two leaves a head record without its workspace: accepted only when that entry, looked up
//!   under the removed name of exactly the head's lineage and serial, proves the removal of exactly the
//!   head's version; any other head without its workspace stays damage. The CLI writes the backup (a
//!   [`WorkspaceFile`], [`removal_backup_file`], never overwritten, synced) before it removes anything;
//!   the removal then deletes `backups/<shoot>.json`, so that `backups/` holds one such file per stored
//!   workspace (what a recovery pushes back) besides the backups of removals.
//!
//! What this does not cover: lock records and history entries have no head records (a damaged lock is
//! reported when it is read; history entries are checked only as the link described above), and after
//! an unclean stop, damage to the simulated cloud's trees is not detected (they are not state), nor is a
//! damaged workspace until a command reads it. Costs: an open reads the heads journal (which shoot each line is of) and stats sled's
//! files; a run that changed them hashes the files it changed and opens sled a second time at its end;
//! every load checks the workspace it reads; every commit group adds one append and `fsync` of
//! `heads.log`, and a run one backup per workspace it changed.
//!
//! # Storage layout (sled backend)
//!
//! | tree              | key                                       | value                              |
//! |-------------------|-------------------------------------------|------------------------------------|
//! | `workspace_heads` | shoot                                     | head: shoot, lineage, serial, resource count, `parts` digest (JSON) |
//! | `workspace_parts` | shoot, `0xFF`, `r`, resource address      | [`StoredResource`] as JSON         |
//! |                   | shoot, `0xFF`, `o`                        | the outputs (JSON), if any         |
//! |                   | shoot, `0xFF`, `p`                        | the [`ProviderState`] JSON, if any |
//! |                   | shoot, `0xFF`, `m`                        | the applied manifest (JSON), if any ([`Workspace::applied_manifest`]; a trellis before it refuses the part as unknown) |
//! | `workspaces`      | shoot                                     | [`Workspace`] as JSON (formats 1–3; moved to the two trees above by the workspace's next commit) |
//! | `locks`           | shoot                                     | [`LockInfo`] as JSON               |
//! | `history`         | shoot, byte `0xFF`, serial (u64, BE)      | [`HistoryEntry`] JSON              |
//!
//! `0xFF` never occurs in UTF-8, so a shoot's history (and its parts) are exactly the keys that start
//! with its name followed by `0xFF`, in serial order. A workspace is stored as parts (state format 4) so
//! that a commit — an apply commits after every node, which changes one resource record — writes, in one
//! transaction, only the parts that changed, the head and the history entry, instead of the whole
//! workspace. The head's `parts` digest is the XOR of the BLAKE3 hashes of every part (each hashed
//! with its key's length, its key and its value), so it does not depend on the order of the parts and
//! any part changed, added or removed changes it; the checksum a head record and a history entry name
//! is the `sha256:` of the head value, so it covers every part. [`StateStore::load`] compares the digest
//! of the workspace's parts with its head (and the check on a copy after an unclean stop every
//! workspace's, in one pass over the tree). The trees of format 4 are created by the first commit, so a run that only reads a
//! dir of format 3 does not change its files. Trees handed out by [`SledStore::tree`] are stored under
//! `ext/<name>` so they can never collide with these.

//!
//! # PostgreSQL
//!
//! [`PgStore::connect`] takes a [`PgUrl`] (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?OPTIONS]`,
//! as libpq reads it; the password is never shown: every message prints the URL with `***` in its
//! place). TLS follows the URL's `sslmode` / `sslrootcert` as libpq reads them (`prefer` by default;
//! see `pg::tls`). The client is tokio-postgres on a runtime the store owns, so the store can be
//! used from any thread, inside a tokio runtime or not.
//!
//! **Schema.** Embedded, versioned migrations, applied on connect when the database lacks them, under
//! an advisory lock so two first uses don't race; `trellis_schema_migrations (version, applied_at)`
//! records them. A database migrated by a newer trellis is refused ([`StateError::NewerSchema`]:
//! "upgrade trellis"). The tables (in the role's default schema, all prefixed `trellis_` so they can
//! share a database):
//!
//! | table                | columns                                                                    |
//! |----------------------|----------------------------------------------------------------------------|
//! | `trellis_workspaces` | `shoot` (PK), `lineage`, `serial`, `resources`, `document` (the [`Workspace`] as compact JSON text), `checksum` |
//! | `trellis_history`    | `shoot`, `serial` (PK together), `entry` ([`HistoryEntry`] JSON), `document` and `checksum` of that version |
//! | `trellis_locks`      | `shoot` (PK), `key` (its advisory lock key), `lock_id`, `holder` ([`LockInfo`] JSON) |
//!
//! The history keeps every version this database stored in full, so it is also the backup: `SELECT
//! document FROM trellis_history WHERE shoot = … AND serial = …` is a workspace `trellis state push`
//! can restore. Of a history imported by `state migrate`, only the current version's document is known.
//! [`StateStore::remove`] deletes the row and, in the same transaction, adds the removal's history
//! entry and renames the shoot's history rows to [`removed_name`] (never deleting them); `history` of
//! that name checks its documents as the shoot's.
//!
//! **Commits** are one transaction each: `SELECT … FOR UPDATE` of the workspace's row, the lineage and
//! serial compared as in sled ([`StateError::Conflict`]), then the row and the history entry written.
//! A commit is durable when `COMMIT` returns (as the server's `synchronous_commit` makes it). Commits
//! from several threads run in parallel on a pool of 8 connections; the server groups their WAL flushes.
//!
//! **Locks.** [`StateStore::lock`] takes `pg_try_advisory_lock(key)` on one long-lived connection the
//! store keeps for locks, then records the holder in `trellis_locks`. `key` is the first 8 bytes
//! (big-endian) of SHA-256 of `trellis-workspace-lock:` + the shoot id: stable across machines and
//! versions; two shoots whose keys collide would only share one lock. The advisory lock is the truth:
//! it is a session lock, so PostgreSQL releases it when the session ends — a killed or crashed process's
//! locks are free at once, and nothing stale needs unlocking by hand. A refusal reads the holder record
//! ([`StateError::Locked`] names pid, host, operation and time). A record whose advisory lock is free
//! was left by a process that died: the next `lock` takes it over ([`Acquired::BrokeStale`]), and
//! `list`/`lock_holder` do not report it. The same lock id again in the same store is
//! [`Acquired::Fresh`]; another session is refused even with the same id. Taking and releasing a lock is
//! one round trip each, and the lock session writes its records with `synchronous_commit = off`: a
//! server crash ends every session and so frees every advisory lock, which makes the records stale
//! anyway, so they need not wait for a WAL flush. `unlock` releases both;
//! [`PgStore::close`] releases every lock the store holds. `force_unlock` (`trellis state unlock`) from
//! another session can only delete the record: if the holder is still running, its session keeps the
//! advisory lock, and the next `lock` is still refused until that process ends.
//!
//! **Dropped connections.** A transient failure — a connection closed or refused, the server shutting
//! down or restarting, a serialization failure — is retried with backoff (50 ms doubling to 2 s) for 30
//! seconds (10 seconds for the first connection of [`PgStore::connect`]: a server that never answered is
//! more likely a wrong URL), silently, then reported with what to check ([`StateError::Database`]). A failure whose
//! outcome is unknown (the connection dropped around `COMMIT`) is resolved by reading the row back first,
//! so a commit is never reported as failed when it was committed. When the lock connection drops, its
//! advisory locks are gone: the store reconnects at once, in the background (and, should that fail, on
//! its next lock call or commit of a locked shoot), and takes every lock it held again; if another
//! session took one meanwhile, the next commit of that shoot is refused naming the new holder (nothing committed before is lost, and the compare-and-swap prevents
//! a lost update in any case).
//!
//! **Integrity.** Every stored version carries its checksum; [`StateStore::load`] and
//! [`StateStore::export`] (which also checks every full version in the history) verify it, and a
//! mismatch is [`StateError::DamagedVersion`], naming the shoot and serial and how to restore: the
//! message gives the `psql` query that prints the previous version from `trellis_history` as a
//! `state push` file, and `trellis state push --force` replaces the damaged version (a forced push
//! reads only the row's lineage and serial, not its damaged document; without `--force` it is refused).
//! History is never overwritten: its insert is `ON CONFLICT DO NOTHING` and a serial already there
//! refuses the write. A shoot whose history goes beyond its row — trellis deletes a row only in
//! [`StateStore::remove`], which renames the history in the same transaction, so the row was deleted or
//! set back by hand — is damage, as a workspace missing behind its head record is in
//! sled: [`StateStore::load`] (which reads the newest history serial in the same round trip), commit,
//! push (even forced) and import refuse it with [`StateError::BehindHistory`], whose message gives the
//! SQL that restores the row from the newest version in the history, and the SQL that starts the shoot
//! over on purpose, keeping its old history under another name.
//!
//! **What the role needs:** `CONNECT` on the database; `CREATE` on the schema for the first run (which
//! creates the tables), and for a later trellis that adds a migration; then `SELECT`, `INSERT`, `UPDATE`
//! and `DELETE` on the `trellis_*` tables. Advisory locks and `pg_locks` need no grant.
//!
//! [`PgStore::stats`] counts the store's calls and the wall time callers spent waiting for them.

// `StateError::Locked`/`DirInUse` carry the holder's `LockInfo` by value (the CLI prints and matches it);
// errors are rare and every call does I/O, so the size of the `Err` variant does not matter here.
#![allow(clippy::result_large_err)]

mod dir;
mod group;
mod integrity;
mod layout;
mod location;
mod migrate;
mod pg;
mod provider;
mod sled_store;
mod wait;

pub use integrity::WorkspaceFile;
pub use location::{PgUrl, StateLocation};
pub use migrate::{migrate, MigrateReport};
pub use pg::{PgStats, PgStore};
pub use provider::{Migration, ProviderState, VersionedState, LEGACY_PROVIDER};
pub use sled_store::{PendingWrite, PendingWrites, SledStore};
pub use trellis_plans::{Kind, Ownership};
pub use wait::{parse_lock_timeout, show_duration, LockTarget, LockWait, Waiting, MAX_LOCK_TIMEOUT};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Everything trellis remembers about one shoot (technical id `shoot--<project>--<name>`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(from = "WorkspaceRepr")]
pub struct Workspace {
    /// The shoot's technical id; also the key the workspace is stored under.
    pub shoot: String,
    /// UUID v4 made when the workspace is created; never changes afterwards.
    pub lineage: String,
    /// 0 = never committed; incremented by every commit.
    pub serial: u64,
    /// Address -> resource trellis knows about. The provider's deletion of managed resources the
    /// configuration no longer wants is driven by these records.
    pub resources: BTreeMap<String, StoredResource>,
    /// Artifacts of the last successful apply.
    pub outputs: Option<serde_json::Value>,
    /// What the provider must remember between runs (the configuration as last applied, decisions of
    /// earlier plans), typed and versioned by the provider ([`VersionedState`]); `None` before the
    /// first apply and after a destroy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_state: Option<ProviderState>,
    /// The Shoot manifest as last applied (what a plan file's `source.shoot` holds, read back by the
    /// provider `provider_state` names): what planning the shoot's destroy needs once its manifest is
    /// gone from the inputs (`trellis plan -f DIR --prune`). `None` before the first apply, after a
    /// destroy, and for a workspace last applied by a trellis that did not keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_manifest: Option<serde_json::Value>,
}

/// A workspace as stored, by this trellis or an earlier one: workspaces written before provider
/// state was versioned hold the Azure provider's facts at the top level, as `last_applied` and a
/// string map `memory`. They are read as version 1 of [`LEGACY_PROVIDER`]'s state; the next commit
/// writes `provider_state` instead.
#[derive(Deserialize)]
struct WorkspaceRepr {
    shoot: String,
    lineage: String,
    serial: u64,
    resources: BTreeMap<String, StoredResource>,
    outputs: Option<serde_json::Value>,
    #[serde(default)]
    provider_state: Option<ProviderState>,
    #[serde(default)]
    applied_manifest: Option<serde_json::Value>,
    #[serde(default)]
    last_applied: Option<serde_json::Value>,
    #[serde(default)]
    memory: BTreeMap<String, String>,
}

impl From<WorkspaceRepr> for Workspace {
    fn from(r: WorkspaceRepr) -> Workspace {
        let legacy = (r.last_applied.is_some() || !r.memory.is_empty()).then(|| ProviderState {
            provider: LEGACY_PROVIDER.to_string(),
            version: 1,
            data: serde_json::json!({"last_applied": r.last_applied, "memory": r.memory}),
        });
        Workspace {
            shoot: r.shoot,
            lineage: r.lineage,
            serial: r.serial,
            resources: r.resources,
            outputs: r.outputs,
            provider_state: r.provider_state.or(legacy),
            applied_manifest: r.applied_manifest,
        }
    }
}

/// A resource trellis knows about: its kind, its cloud id and who owns it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StoredResource {
    pub kind: Kind,
    pub id: String,
    pub ownership: Ownership,
}

impl Workspace {
    /// The version of this workspace a plan is made against: its lineage once it was committed, and
    /// its serial.
    pub fn prior(&self) -> trellis_plans::Prior {
        trellis_plans::Prior { lineage: (self.serial > 0).then(|| self.lineage.clone()), serial: self.serial }
    }

    /// Records `resource` under `address`: one resource, one address. Any other address that holds
    /// the same id (ARM ids compared case-insensitively, as ARM compares them) is dropped: the
    /// resource was recorded under an address spelled another way (before addresses were lowercased,
    /// or from a reference written in another casing). Returns whether anything changed.
    pub fn record_resource(&mut self, address: &str, resource: StoredResource) -> bool {
        let before = self.resources.len();
        self.resources.retain(|a, r| a == address || !r.id.eq_ignore_ascii_case(&resource.id));
        let merged = self.resources.len() != before;
        let replaced = self.resources.insert(address.to_string(), resource.clone());
        merged || replaced != Some(resource)
    }

    /// Forgets the resource at `address` and, under any other address, the resource with id `id`
    /// (compared case-insensitively). Returns whether anything was forgotten.
    pub fn forget_resource(&mut self, address: &str, id: &str) -> bool {
        let before = self.resources.len();
        let same_resource = |r: &StoredResource| !id.is_empty() && r.id.eq_ignore_ascii_case(id);
        self.resources.retain(|a, r| a != address && !same_resource(r));
        self.resources.len() != before
    }

    /// The address of the resource `address_or_id` names (`trellis state rm SHOOT ADDRESS`): a recorded
    /// address, or a recorded resource's cloud id (compared case-insensitively, as
    /// [`Workspace::record_resource`] compares them). `None`: the workspace records no such resource.
    pub fn resource_address(&self, address_or_id: &str) -> Option<&str> {
        if let Some((address, _)) = self.resources.get_key_value(address_or_id) {
            return Some(address);
        }
        let lower = address_or_id.to_ascii_lowercase();
        if let Some((address, _)) = self.resources.get_key_value(&lower) {
            return Some(address);
        }
        self.resources.iter().find(|(_, r)| r.id.eq_ignore_ascii_case(address_or_id)).map(|(a, _)| a.as_str())
    }

    /// A workspace that was never committed: a fresh lineage, serial 0, nothing known yet.
    pub fn new(shoot: &str) -> Workspace {
        Workspace {
            shoot: shoot.to_string(),
            lineage: uuid::Uuid::new_v4().to_string(),
            serial: 0,
            resources: BTreeMap::new(),
            outputs: None,
            provider_state: None,
            applied_manifest: None,
        }
    }
}

/// The operation of the history entry that records a removal ([`StateStore::remove`]).
pub const REMOVE_OPERATION: &str = "state rm";

/// The name the history of `shoot` is kept under once its workspace of `lineage` was removed at
/// `serial` ([`StateStore::remove`]): `<shoot>.removed-<serial>-<first 8 characters of the lineage>`. No
/// technical id holds a `.`, so it never names a workspace; the lineage keeps the removals of one shoot
/// at the same serial in different lives apart. Backups of a removal are named after it too.
pub fn removed_name(shoot: &str, lineage: &str, serial: u64) -> String {
    format!("{shoot}.{}", removed_suffix(lineage, serial))
}

/// The file name of the backup `trellis state rm` writes of `shoot` at `serial` of `lineage` (before the
/// workspace or a resource of it is removed): `<shoot, percent-encoded>.removed-<serial>-<lineage, 8
/// characters>.json` (see [`removed_name`]). Only a file name: the caller picks the directory
/// ([`SledStore::backups_dir`] for a state dir).
pub fn removal_backup_file(shoot: &str, lineage: &str, serial: u64) -> String {
    format!("{}.{}.json", dir::encode_shoot(shoot), removed_suffix(lineage, serial))
}

/// What separates the shoot from the rest of a [`removed_name`]: `.removed-`.
pub(crate) const REMOVED_MARK: &str = ".removed-";

fn removed_suffix(lineage: &str, serial: u64) -> String {
    let short: String = lineage.chars().take(8).collect();
    format!("{}{serial}-{short}", &REMOVED_MARK[1..])
}

/// Who holds a lock (a workspace lock, or a whole state dir), and since when.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LockInfo {
    /// UUID v4 of this lock; [`StateStore::unlock`] needs it.
    pub id: String,
    /// What the holder is doing: `plan`, `apply`, `destroy`, ...
    pub operation: String,
    pub pid: u32,
    pub host: String,
    pub user: String,
    /// RFC 3339 UTC with second precision, e.g. `2026-11-29T16:42:07Z`.
    pub created: String,
}

impl LockInfo {
    /// A new lock for this process: a fresh id, this pid, host and user, created now.
    pub fn here(operation: &str) -> LockInfo {
        LockInfo {
            id: uuid::Uuid::new_v4().to_string(),
            operation: operation.to_string(),
            pid: std::process::id(),
            host: this_host(),
            user: std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "unknown".to_string()),
            created: now_rfc3339(),
        }
    }
}

impl fmt::Display for LockInfo {
    /// `apply by root@host (pid 4242) since 2026-11-29T16:42:07Z, lock id 1b2c…`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} by {}@{} (pid {}) since {}, lock id {}",
            self.operation, self.user, self.host, self.pid, self.created, self.id
        )
    }
}

/// One commit of a workspace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct HistoryEntry {
    /// The serial the commit produced.
    pub serial: u64,
    /// The operation that committed (`apply`, `destroy`, ...).
    pub operation: String,
    /// When, RFC 3339 UTC.
    pub at: String,
    /// How many resources the workspace held after the commit.
    pub resources: usize,
    /// Checksum (`sha256:` of the stored bytes) of the version the commit stored. Absent in entries of earlier trellis
    /// versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    /// Checksum of the version the commit replaced; `None` for a workspace's first version. Stored in
    /// the same transaction as the workspace, this is what proves, after a crash, that the stored
    /// version directly followed the one its head record names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

/// One line of `trellis state list`.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkspaceSummary {
    pub shoot: String,
    pub lineage: String,
    pub serial: u64,
    pub resources: usize,
    pub locked_by: Option<LockInfo>,
}

/// Outcome of taking a workspace lock.
#[derive(Clone, Debug, PartialEq)]
pub enum Acquired {
    /// Nobody held the lock (or the caller already held it with the same lock id).
    Fresh,
    /// The previous holder ran on this host and its pid is no longer alive: the lock was taken over.
    /// The caller should print a warning naming the dead holder.
    BrokeStale(LockInfo),
}

/// Where trellis keeps its state.
pub trait StateStore: Send + Sync {
    /// All stored (committed) workspaces, sorted by shoot, with their lock holders.
    fn list(&self) -> Result<Vec<WorkspaceSummary>, StateError>;
    /// The stored workspace of a shoot, or `None` if it was never committed.
    fn load(&self, shoot: &str) -> Result<Option<Workspace>, StateError>;
    /// Compare-and-swap on the serial: succeeds only if the stored serial equals `ws.serial` (absent counts
    /// as 0) and the stored lineage, if any, equals `ws.lineage`. Writes `ws` with serial + 1, updates
    /// `ws.serial`, appends a [`HistoryEntry`], then flushes to disk before returning. Lineage mismatch or
    /// a serial that moved -> [`StateError::Conflict`], and nothing is written.
    fn commit(&self, ws: &mut Workspace, operation: &str) -> Result<(), StateError>;
    /// The commits of a shoot, oldest first (empty if it was never committed).
    fn history(&self, shoot: &str) -> Result<Vec<HistoryEntry>, StateError>;
    /// Takes the workspace lock: "no lock" -> `info`. Held by a live holder, or by a holder on another
    /// host -> [`StateError::Locked`]. Held by a dead pid on this host -> taken over,
    /// [`Acquired::BrokeStale`]. Held with the same lock id -> [`Acquired::Fresh`] (idempotent).
    fn lock(&self, shoot: &str, info: &LockInfo) -> Result<Acquired, StateError>;
    /// Releases the workspace lock if its id is `lock_id`; a lock with another id is refused with
    /// [`StateError::Locked`]. Releasing a lock that is not held is not an error.
    fn unlock(&self, shoot: &str, lock_id: &str) -> Result<(), StateError>;
    /// Removes whatever lock the workspace has and returns it. PostgreSQL: a lock another live session
    /// holds is refused with [`StateError::Locked`] ([`LockRelease::Session`]) and kept — removing its
    /// record would not free it; a record whose session is gone is removed.
    fn force_unlock(&self, shoot: &str) -> Result<Option<LockInfo>, StateError>;
    /// Who holds the workspace lock, if anyone.
    fn lock_holder(&self, shoot: &str) -> Result<Option<LockInfo>, StateError>;
    /// Restores `ws` (`trellis state push`): stores it with a serial above both its own and the stored
    /// one, so that every plan made against either is stale, and returns that serial. Without `force`, a
    /// stored workspace of another lineage, or at a higher serial than `ws`, is
    /// [`StateError::PushRefused`]. The caller holds the workspace lock.
    fn push(&self, ws: &Workspace, force: bool) -> Result<u64, StateError>;
    /// Forgets the workspace of `shoot` (`trellis state rm SHOOT`), touching nothing but the state: a
    /// compare-and-swap on (`lineage`, `serial`) as [`StateStore::commit`] (the stored version must be
    /// exactly that one, else [`StateError::Conflict`]). The workspace is gone from `list` and `load`; its
    /// history is kept, under [`removed_name`], with one more entry at `serial + 1` that records the removal
    /// ([`REMOVE_OPERATION`], no checksum: nothing is stored at that serial). Returns that name. The next
    /// commit of the shoot starts it again (serial 0, any lineage), and `push` of a backup restores it.
    /// The caller holds the workspace lock.
    fn remove(&self, shoot: &str, lineage: &str, serial: u64) -> Result<String, StateError>;
    /// Everything stored for a shoot — the current workspace and its whole history —, integrity-checked
    /// as [`StateStore::load`] checks it. `None`: the shoot was never committed.
    fn export(&self, shoot: &str) -> Result<Option<ExportedWorkspace>, StateError>;
    /// Stores an exported workspace into this backend keeping its lineage, serial and history (entry
    /// for entry). A shoot that is not stored -> [`Imported::Created`]; the same lineage and serial
    /// already stored -> [`Imported::AlreadyThere`] (so an interrupted migrate can be re-run); anything
    /// else stored -> [`StateError::PushRefused`] naming it.
    fn import(&self, exported: &ExportedWorkspace) -> Result<Imported, StateError>;
    /// The names the histories of removed workspaces are kept under ([`removed_name`]), sorted:
    /// what `trellis state migrate` copies beside the workspaces.
    fn removed_histories(&self) -> Result<Vec<String>, StateError>;
    /// Stores `history`, the history of a removed workspace, under `name` ([`removed_name`]) entry for
    /// entry. Nothing stored under `name` -> [`Imported::Created`]; the same entries ->
    /// [`Imported::AlreadyThere`]; other entries -> [`StateError::PushRefused`] naming it.
    fn import_removed_history(&self, name: &str, history: &[HistoryEntry]) -> Result<Imported, StateError>;
}

/// The shoot whose removed workspace's history `name` is kept under ([`removed_name`]), or `None`
/// when `name` is not such a name (a workspace's own).
pub fn removed_owner(name: &str) -> Option<&str> {
    name.split_once(REMOVED_MARK).map(|(owner, _)| owner)
}

/// [`StateStore::import_removed_history`] of `history` under `name` when `stored` is there already:
/// the same entries are [`Imported::AlreadyThere`], anything else is refused. Shared by both backends.
pub(crate) fn same_removed_history(
    name: &str,
    stored: &[HistoryEntry],
    history: &[HistoryEntry],
) -> Result<Imported, StateError> {
    if stored == history {
        return Ok(Imported::AlreadyThere);
    }
    Err(StateError::PushRefused {
        shoot: name.to_string(),
        detail: format!(
            "the destination already holds another history of this removed workspace ({} entries, the source {}); \
             it cannot be merged: migrate into a state that does not hold it",
            stored.len(),
            history.len()
        ),
    })
}

/// Everything a backend stores for one shoot ([`StateStore::export`]): what `trellis state migrate`
/// copies.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportedWorkspace {
    pub workspace: Workspace,
    /// Its commits, oldest first.
    pub history: Vec<HistoryEntry>,
}

/// Outcome of [`StateStore::import`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Imported {
    /// The shoot was not stored: it is now, with its lineage, serial and history.
    Created,
    /// The same lineage and serial were stored already: nothing was written.
    AlreadyThere,
}

/// What went wrong with the state. Every message says what, where (dir or shoot) and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot open state dir {}: {detail}", .dir.display())]
    Open { dir: PathBuf, detail: String },
    #[error("{}", dir_in_use_message(.dir, .holder.as_ref()))]
    DirInUse { dir: PathBuf, holder: Option<LockInfo> },
    /// `release` says how the lock goes away, and so what the message tells the user to do.
    #[error("workspace {shoot} is locked: {holder}. {}", locked_advice(.shoot, *.release))]
    Locked { shoot: String, holder: LockInfo, release: LockRelease },
    /// A lock still held when `--lock-timeout` ran out ([`LockWait`]): the last refusal
    /// ([`StateError::DirInUse`] or [`StateError::Locked`]) and how long the command waited.
    #[error("{refusal} (waited {})", show_duration(*.waited))]
    LockTimeout { waited: std::time::Duration, refusal: Box<StateError> },
    #[error("state of workspace {shoot} changed since it was read: {detail}; re-run `trellis plan`")]
    Conflict { shoot: String, detail: String },
    /// The workspace was applied as a shoot of another provider: the same technical id (project and
    /// name) now names a shoot of `wanted`. Not damage: a shoot cannot change its provider.
    #[error("workspace {shoot} is recorded with provider type {stored}, but the manifest says {wanted}; a shoot cannot change its provider: destroy the {stored} shoot first (`trellis destroy -f` its manifest), or use another --state for this one")]
    ProviderChanged { shoot: String, stored: String, wanted: String },
    /// `detail` says what is unreadable and what to do about it.
    #[error("state of workspace {shoot} is corrupt: {detail}")]
    Corrupt { shoot: String, detail: String },
    /// The database does not match what trellis last wrote (see the crate docs, "Integrity"). Nothing
    /// was written to it.
    #[error("{}", damaged_message(.dir, .detail))]
    Damaged { dir: PathBuf, detail: String },
    /// The directory is not a trellis state dir (or one of a newer format); it was left alone.
    #[error("{} is not a trellis state dir: {detail}", .dir.display())]
    NotStateDir { dir: PathBuf, detail: String },
    /// `trellis state push` would lose or replace something; `detail` says what and how to force it.
    #[error("not pushing workspace {shoot}: {detail}")]
    PushRefused { shoot: String, detail: String },
    /// `trellis state rm` would lose something; `detail` says what and what to do.
    #[error("not removing workspace {shoot}: {detail}")]
    RemoveRefused { shoot: String, detail: String },
    /// A workspace document (`state push` input) that cannot be used.
    #[error("{file}: {detail}")]
    InvalidFile { file: String, detail: String },
    /// The workspace's provider state was written by a newer trellis (see [`VersionedState`]).
    #[error(
        "state of workspace {shoot} was written by a newer trellis ({provider} provider state version {version}; \
         this trellis reads up to version {supported}); upgrade trellis"
    )]
    NewerProviderState { shoot: String, provider: String, version: u32, supported: u32 },
    #[error("state I/O error: {0}")]
    Io(String),
    /// A `--state postgres://…` value that is not a usable connection URL (password shown as `***`).
    #[error("invalid PostgreSQL URL {url}: {detail}")]
    InvalidUrl { url: String, detail: String },
    /// The PostgreSQL database cannot be used: `location` is its URL without the password, `detail` what
    /// failed and what to do.
    #[error("state database {location}: {detail}")]
    Database { location: String, detail: String },
    /// A stored version of a workspace in the PostgreSQL database does not match its checksum.
    #[error("{}", damaged_version_message(.location, .shoot, *.serial, .detail))]
    DamagedVersion { location: String, shoot: String, serial: u64, detail: String },
    /// PostgreSQL: `trellis_history` holds versions of a workspace up to serial `newest` that its row in
    /// `trellis_workspaces` does not (`stored`: the row's serial, `None` when there is no row) — the row
    /// was deleted or changed by hand. Nothing was written: history is never overwritten.
    #[error("{}", behind_history_message(.location, .shoot, *.stored, *.newest))]
    BehindHistory { location: String, shoot: String, stored: Option<u64>, newest: u64 },
    /// The database's schema was migrated by a newer trellis.
    #[error(
        "state database {location} has schema version {version}, but this trellis knows versions up to \
         {supported}; upgrade trellis"
    )]
    NewerSchema { location: String, version: i32, supported: i32 },
}

fn damaged_message(dir: &Path, detail: &str) -> String {
    let d = dir.display();
    format!(
        "state in {d} is damaged: {detail}; restore with `mv {d} {d}.damaged` and, for each shoot, \
         `trellis state push SHOOT {d}.damaged/backups/SHOOT.json --state {d}` (a backup is the workspace before \
         its last change; nothing was written to the damaged state; see \"Damaged state\" in the trellis usage docs)"
    )
}

fn damaged_version_message(location: &str, shoot: &str, serial: u64, detail: &str) -> String {
    format!(
        "state of workspace {shoot} at serial {serial} in {location} is damaged: {detail}; nothing was written. \
         Restore an earlier version from the history the database keeps: `psql '{location}' -Atc \"SELECT \
         json_build_object('workspace', document::json) FROM trellis_history WHERE shoot = '{shoot}' AND serial = \
         {previous}\" > {shoot}.json`, then `trellis state push {shoot} {shoot}.json --force --state '{location}'`",
        previous = serial.saturating_sub(1)
    )
}

fn behind_history_message(location: &str, shoot: &str, stored: Option<u64>, newest: u64) -> String {
    let row = match stored {
        None => "has no row in trellis_workspaces".to_string(),
        Some(serial) => format!("is stored at serial {serial}"),
    };
    format!(
        "workspace {shoot} in {location} {row}, but trellis_history holds its versions up to serial {newest}: its \
         row was deleted or changed by hand (trellis never does either); nothing was written, and history is never \
         overwritten. Restore the row from its newest version: `psql '{location}' -c \"DELETE FROM trellis_workspaces \
         WHERE shoot = '{shoot}'; INSERT INTO trellis_workspaces (shoot, lineage, serial, resources, document, \
         checksum) SELECT shoot, document::json->>'lineage', serial, (entry::json->>'resources')::bigint, document, \
         checksum FROM trellis_history WHERE shoot = '{shoot}' AND document IS NOT NULL ORDER BY serial DESC LIMIT \
         1\"`; or, to start {shoot} over on purpose (trellis then knows none of its resources), keep its old \
         history under another name first: `psql '{location}' -c \"DELETE FROM trellis_workspaces WHERE shoot = \
         '{shoot}'; UPDATE trellis_history SET shoot = shoot || '.deleted-' || to_char(now(), 'YYYYMMDD-HH24MISS') \
         WHERE shoot = '{shoot}'\"`"
    )
}

/// How a refused workspace lock goes away: what [`StateError::Locked`] advises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockRelease {
    /// A lock record that can outlive its process (sled; a lock from another host cannot be checked):
    /// `trellis state unlock` removes it once that process is known to be gone.
    Unlock,
    /// A PostgreSQL session advisory lock: held only while its process's session lives, freed by the
    /// database when the process ends, even if killed. There is nothing to unlock by hand.
    Session,
}

fn locked_advice(shoot: &str, release: LockRelease) -> String {
    match release {
        LockRelease::Unlock => format!("If that process is gone, run `trellis state unlock {shoot}`"),
        LockRelease::Session => "That process's database session holds the lock, and PostgreSQL frees it when the process ends (even if killed): wait for it to finish, then run again; there is nothing to unlock by hand".to_string(),
    }
}

fn dir_in_use_message(dir: &Path, holder: Option<&LockInfo>) -> String {
    match holder {
        Some(h) => {
            format!("state dir {} is in use by another trellis process: {h}; wait for it to finish", dir.display())
        }
        None => format!(
            "state dir {} is in use by another process (it did not record itself in {}); \
             wait for it to finish, or find it with `fuser -v {}`",
            dir.display(),
            dir.join(dir::HOLDER_FILE).display(),
            dir.display()
        ),
    }
}

/// This machine's name: `/etc/hostname`, else `$HOSTNAME`, else `localhost`.
fn this_host() -> String {
    if let Ok(name) = std::fs::read_to_string("/etc/hostname") {
        let name = name.trim();
        if !name.is_empty() {
            return name.to_string();
        }
    }
    match std::env::var("HOSTNAME") {
        Ok(name) if !name.trim().is_empty() => name.trim().to_string(),
        _ => "localhost".to_string(),
    }
}

/// Whether a process with this pid exists on this host: `kill(pid, 0)` through rustix (no such
/// process: dead; one we may not signal, another user's: alive). A zombie (exited, not yet reaped) is
/// dead too, which `kill` does not tell and rustix has no call for: its state letter is read from
/// `/proc/{pid}/stat` where there is one. When it cannot be told the answer is `true`, so that a lock
/// is never broken on a guess.
#[cfg(unix)]
fn pid_alive(pid: u32) -> bool {
    use rustix::io::Errno;
    // A pid beyond i32 (or 0, the caller's process group) names no process.
    let Some(target) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
    match rustix::process::test_kill_process(target) {
        Err(Errno::SRCH) => false,
        Ok(()) | Err(Errno::PERM) => !is_zombie(pid),
        Err(_) => true,
    }
}

/// Not on Unix: no way to tell, so alive.
#[cfg(not(unix))]
fn pid_alive(_pid: u32) -> bool {
    true
}

/// Whether `/proc/{pid}/stat` shows the process as a zombie (`Z`, or `X`: being reaped). Unreadable
/// (no `/proc`, or another user's process hidden by `hidepid`): not known to be one.
#[cfg(unix)]
fn is_zombie(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // `pid (comm) S ...`: the state letter follows the last `)` (comm may itself contain `)`).
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].trim_start().chars().next());
    matches!(state, Some('Z') | Some('X'))
}

/// Now as RFC 3339 UTC with second precision.
fn now_rfc3339() -> String {
    // A clock before 1970 is a broken machine; print the epoch rather than fail.
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    rfc3339_utc(secs)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC, by jiff). jiff's range ends in the
/// year 9999: a later instant is shown as jiff's last one.
fn rfc3339_utc(secs: u64) -> String {
    let ts =
        i64::try_from(secs).ok().and_then(|s| jiff::Timestamp::from_second(s).ok()).unwrap_or(jiff::Timestamp::MAX);
    format!("{ts:.0}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_resource_is_recorded_under_one_address() {
        let nsg = |id: &str| StoredResource {
            kind: Kind::new("network_security_group"),
            id: id.into(),
            ownership: Ownership::User,
        };
        let mut ws = Workspace::new("shoot--p--s");
        assert!(
            ws.record_resource("azure.network_security_group.RG1.TESTNSG", nsg("/s/x/resourceGroups/RG1/n/TESTNSG"))
        );
        assert!(
            !ws.record_resource("azure.network_security_group.RG1.TESTNSG", nsg("/s/x/resourceGroups/RG1/n/TESTNSG"))
        );
        // The same resource under its lowercase address replaces the old spelling.
        assert!(
            ws.record_resource("azure.network_security_group.rg1.testnsg", nsg("/s/x/resourceGroups/rg1/n/testnsg"))
        );
        assert_eq!(ws.resources.keys().collect::<Vec<_>>(), vec!["azure.network_security_group.rg1.testnsg"]);
        ws.record_resource("azure.network_security_group.RG1.TESTNSG", nsg("/s/x/resourceGroups/RG1/n/TESTNSG"));
        assert!(ws.forget_resource("azure.network_security_group.rg1.testnsg", "/S/X/resourceGroups/rg1/n/testnsg"));
        assert!(ws.resources.is_empty());
        assert!(!ws.forget_resource("azure.network_security_group.rg1.testnsg", ""));
    }

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z"); // leap day of a 400-year leap
        assert_eq!(rfc3339_utc(1_709_164_799), "2024-02-28T23:59:59Z");
        assert_eq!(rfc3339_utc(1_709_251_200), "2024-03-01T00:00:00Z");
        assert_eq!(rfc3339_utc(4_102_444_800), "2100-01-01T00:00:00Z"); // 2100 is not a leap year
        assert_eq!(rfc3339_utc(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(rfc3339_utc(1_796_056_927), "2026-11-30T16:42:07Z");
        assert_eq!(rfc3339_utc(u64::MAX), "9999-12-30T22:00:00Z", "past jiff's range: its last instant");
    }

    #[test]
    fn lock_info_here_describes_this_process() {
        let info = LockInfo::here("apply");
        assert_eq!(info.pid, std::process::id());
        assert_eq!(info.operation, "apply");
        assert!(!info.host.is_empty());
        assert_eq!(info.created.len(), "2026-11-29T16:42:07Z".len());
        let shown = info.to_string();
        assert!(shown.starts_with(&format!("apply by {}@{} (pid {})", info.user, info.host, info.pid)));
        assert!(shown.ends_with(&format!("lock id {}", info.id)));
    }

    #[test]
    fn this_process_is_alive() {
        assert!(pid_alive(std::process::id()));
    }

    /// A child that exited is dead while it is a zombie (not yet reaped) and after it was reaped.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_exited_child_is_dead_as_a_zombie_and_once_reaped() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !is_zombie(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(is_zombie(pid), "the child did not exit");
        assert!(!pid_alive(pid), "a zombie is dead");
        child.wait().unwrap();
        assert!(!pid_alive(pid), "a reaped child is dead");
        assert!(!pid_alive(0) && !pid_alive(u32::MAX), "no process has these pids");
    }
}
