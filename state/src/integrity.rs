//! Integrity of the workspaces: checksums, the head record and the backup kept beside the database
//! for every workspace, the document `trellis state pull` prints and `state push` reads, and the check
//! of the database against the head records (see the crate docs, "Integrity").

use crate::dir::{self, BACKUPS, HEADS, HEADS_LOG};
use crate::{HistoryEntry, StateError, Workspace};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Write as _};
use std::path::{Path, PathBuf};

/// `sha256:<hex>` of a workspace's canonical form (compact JSON, as it is stored).
pub(crate) fn checksum(ws: &Workspace) -> String {
    checksum_bytes(&canonical(ws))
}

/// The canonical form of a workspace: compact JSON, exactly the bytes the sled backend stores.
pub(crate) fn canonical(ws: &Workspace) -> Vec<u8> {
    // A `Workspace` is maps of strings and JSON values: serialising it cannot fail.
    serde_json::to_vec(ws).expect("a workspace serialises")
}

pub(crate) fn checksum_bytes(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// What the state dir says about the latest committed version of a workspace, outside the database.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct Head {
    pub shoot: String,
    pub lineage: String,
    pub serial: u64,
    pub checksum: String,
}

impl Head {
    pub(crate) fn of(ws: &Workspace, stored: &[u8]) -> Head {
        Head {
            shoot: ws.shoot.clone(),
            lineage: ws.lineage.clone(),
            serial: ws.serial,
            checksum: checksum_bytes(stored),
        }
    }

    /// The head record of a stored workspace, from its identifying fields and its bytes.
    pub(crate) fn of_stored(meta: &WorkspaceMeta, stored: &[u8]) -> Head {
        Head {
            shoot: meta.shoot.clone(),
            lineage: meta.lineage.clone(),
            serial: meta.serial,
            checksum: checksum_bytes(stored),
        }
    }
}

/// What the checks at open need of a stored workspace: who it is and which version. Reading only these
/// (serde skips the resources, outputs and provider state, checking only that they are well-formed
/// JSON) keeps an open from building every workspace of the fleet; the stored bytes are covered by the
/// checksum, and a workspace is read whole when it is loaded.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct WorkspaceMeta {
    pub shoot: String,
    pub lineage: String,
    pub serial: u64,
}

/// Every head record a state dir holds, as read by [`read_heads`], and where the heads journal ends.
pub(crate) struct Heads {
    /// The latest head record of each workspace, by shoot.
    map: BTreeMap<String, Record>,
    /// `heads.log` up to its last complete record, which [`Record::Line`]s point into.
    journal: Vec<u8>,
    /// Length of `heads.log` up to its last complete record (a torn record after it is ignored, and cut
    /// off before the next append).
    pub valid_len: u64,
    /// Complete records in `heads.log`.
    pub records: usize,
    /// `heads/` (one file per workspace, written by an earlier trellis) exists.
    pub legacy: bool,
    /// `heads.log`, for messages.
    path: PathBuf,
}

/// A head record: read, or the line of the journal that holds it, read when it is asked for.
enum Record {
    Read(Head),
    Line { number: usize, start: usize, end: usize },
}

/// How [`read_heads`] reads the journal's records.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Every record now (the check of a whole state dir: one that does not read is damage at once).
    Every,
    /// Only which shoot each record is of, where that is plain (a record that starts
    /// `{"shoot":"<name>"` without escapes, as trellis writes them); the rest of the latest record of
    /// a shoot when it is asked for ([`Heads::get`]), so an open costs what the command touches.
    /// Other records are read now.
    WhenAsked,
}

impl Heads {
    /// The latest head record of `shoot`, if it has one; `Err`: its record does not read (damage).
    pub(crate) fn get(&self, shoot: &str) -> Result<Option<Head>, String> {
        self.map.get(shoot).map(|record| self.read(record)).transpose()
    }

    /// Every latest head record, read; `Err`: one does not read.
    pub(crate) fn read_all(&self) -> Result<BTreeMap<String, Head>, String> {
        self.map.iter().map(|(shoot, record)| Ok((shoot.clone(), self.read(record)?))).collect()
    }

    fn read(&self, record: &Record) -> Result<Head, String> {
        match *record {
            Record::Read(ref head) => Ok(head.clone()),
            // The shoot it is filed under is the record's own `shoot` (serde refuses a second one).
            Record::Line { number, start, end } => parse_record(&self.journal[start..end], number, &self.path),
        }
    }

    /// The shoots that have a head record.
    pub(crate) fn shoots(&self) -> impl Iterator<Item = &String> {
        self.map.keys()
    }

    fn insert(&mut self, head: Head) {
        self.map.insert(head.shoot.clone(), Record::Read(head));
    }

    /// The journal with one line per workspace: the latest record of each, as it was written.
    fn compacted(&self) -> io::Result<Vec<u8>> {
        let mut buf = Vec::with_capacity(self.map.len() * 192);
        for record in self.map.values() {
            match record {
                Record::Read(head) => serde_json::to_writer(&mut buf, head).map_err(io::Error::other)?,
                &Record::Line { start, end, .. } => buf.extend_from_slice(&self.journal[start..end]),
            }
            buf.push(b'\n');
        }
        Ok(buf)
    }
}

/// Every head record in `dir`, by shoot: the files in `heads/` an earlier trellis wrote, then the
/// records of `heads.log` in order (a later record replaces an earlier one), read as `reading` says.
/// The last record of the journal without its newline was being appended when the process died: it is
/// ignored (its commits had not returned, so the crash rule covers them). Any other record or file
/// that does not read is damage: now, or — read [`Reading::WhenAsked`] — when its record is asked for.
pub(crate) fn read_heads(dir: &Path, reading: Reading) -> Result<Heads, String> {
    let path = dir.join(HEADS_LOG);
    let map = read_legacy_heads(dir)?.into_iter().map(|(shoot, head)| (shoot, Record::Read(head))).collect();
    let mut heads = Heads {
        map,
        journal: Vec::new(),
        valid_len: 0,
        records: 0,
        legacy: dir.join(HEADS).is_dir(),
        path: path.clone(),
    };
    let mut bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(heads),
        Err(e) => return Err(format!("{} cannot be read ({e})", path.display())),
    };
    let mut start = 0;
    let mut number = 0;
    while let Some(end) = newline_in(&bytes[start..]).map(|i| start + i) {
        number += 1;
        let line = &bytes[start..end];
        match plain_shoot(line).filter(|_| reading == Reading::WhenAsked) {
            Some(shoot) => {
                let record = Record::Line { number, start, end };
                match heads.map.get_mut(shoot) {
                    Some(slot) => *slot = record,
                    None => {
                        heads.map.insert(shoot.to_string(), record);
                    }
                }
            }
            None => {
                let head = parse_record(line, number, &path)?;
                heads.map.insert(head.shoot.clone(), Record::Read(head));
            }
        }
        heads.records += 1;
        start = end + 1;
    }
    bytes.truncate(start);
    heads.valid_len = start as u64;
    heads.journal = bytes;
    Ok(heads)
}

fn newline_in(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// The shoot of a record as trellis writes it — `{"shoot":"<name>",…` with no escape in the name —
/// without reading the rest; `None` for any other record.
fn plain_shoot(line: &[u8]) -> Option<&str> {
    let rest = line.strip_prefix(br#"{"shoot":""#)?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

fn parse_record(line: &[u8], number: usize, path: &Path) -> Result<Head, String> {
    serde_json::from_slice(line)
        .map_err(|e| format!("record {number} of the heads journal {} does not parse ({e})", path.display()))
}

/// The heads journal of an open store: appends the head records of each commit group as one write and
/// one `fsync` (see the crate docs, "Integrity").
pub(crate) struct Journal {
    dir: PathBuf,
    /// Open for appending once this run appended (the torn tail of a killed run cut off first).
    file: Option<File>,
    heads: Heads,
    appended: bool,
}

impl Journal {
    pub(crate) fn new(dir: &Path, heads: Heads) -> Journal {
        Journal { dir: dir.to_path_buf(), file: None, heads, appended: false }
    }

    /// The latest head record of `shoot`, if it has one; `Err`: its record does not read (damage).
    pub(crate) fn head(&self, shoot: &str) -> Result<Option<Head>, String> {
        self.heads.get(shoot)
    }

    /// The shoots that have a head record.
    pub(crate) fn shoots(&self) -> Vec<String> {
        self.heads.shoots().cloned().collect()
    }

    /// Appends `heads` (the head records of one commit group) and syncs the journal: when this
    /// returns, all of them are durable.
    pub(crate) fn append(&mut self, heads: &[Head]) -> io::Result<()> {
        if heads.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(HEADS_LOG);
        let created = self.file.is_none() && !path.exists();
        if self.file.is_none() {
            if created {
                // The journal is format 2: an earlier trellis must refuse the dir as newer, not as damaged.
                dir::write_marker(&self.dir)?;
            }
            let file = OpenOptions::new().create(true).append(true).open(&path)?;
            // A record torn by a killed run is cut off, so the next record starts on a line of its own.
            file.set_len(self.heads.valid_len)?;
            self.file = Some(file);
        }
        let mut buf = Vec::with_capacity(heads.len() * 192);
        for head in heads {
            serde_json::to_writer(&mut buf, head).map_err(io::Error::other)?;
            buf.push(b'\n');
        }
        let file = self.file.as_mut().expect("opened above");
        file.write_all(&buf)?;
        file.sync_data()?;
        if created {
            dir::sync_dir(&self.dir)?;
        }
        self.heads.valid_len += buf.len() as u64;
        self.heads.records += heads.len();
        for head in heads {
            self.heads.insert(head.clone());
        }
        self.appended = true;
        Ok(())
    }

    /// Drops the head record of `shoot`, whose workspace was removed (durably, before this): the journal
    /// is rewritten without it, atomically and durably (and `heads/` of an earlier trellis removed, its
    /// records being in the journal then).
    pub(crate) fn forget(&mut self, shoot: &str) -> io::Result<()> {
        if self.heads.map.remove(shoot).is_none() && !self.heads.legacy {
            return Ok(());
        }
        self.file = None;
        dir::upgrade_marker(&self.dir)?;
        self.heads.valid_len = self.rewrite()?;
        if self.heads.legacy {
            dir::remove_dir_if_present(&self.dir.join(HEADS))?;
            self.heads.legacy = false;
        }
        Ok(())
    }

    /// At the end of a run that appended: rewrites the journal with one record per workspace when it
    /// holds more than twice that many, or when `heads/` of an earlier trellis is still there (which is
    /// then removed). Atomic and durable (temporary file, `fsync`, `rename`, `fsync` of the dir).
    pub(crate) fn compact(&mut self) -> io::Result<()> {
        let long = self.heads.records > 2 * self.heads.map.len();
        if !self.appended || !(long || self.heads.legacy) {
            return Ok(());
        }
        self.file = None;
        self.heads.valid_len = self.rewrite()?;
        if self.heads.legacy {
            dir::remove_dir_if_present(&self.dir.join(HEADS))?;
            self.heads.legacy = false;
        }
        Ok(())
    }
}

/// Writes `heads.log` with exactly `heads`, atomically and durably; returns its length.
pub(crate) fn write_journal<'a>(dir: &Path, heads: impl Iterator<Item = &'a Head>) -> io::Result<u64> {
    let mut buf = Vec::new();
    for head in heads {
        serde_json::to_writer(&mut buf, head).map_err(io::Error::other)?;
        buf.push(b'\n');
    }
    dir::write_atomic(&dir.join(HEADS_LOG), &buf)?;
    Ok(buf.len() as u64)
}

impl Journal {
    /// Rewrites `heads.log` with the latest record of each workspace, atomically and durably (a record
    /// not read yet is copied as it is: damage stays where a load finds it); returns its length.
    fn rewrite(&mut self) -> io::Result<u64> {
        let buf = self.heads.compacted()?;
        dir::write_atomic(&self.dir.join(HEADS_LOG), &buf)?;
        self.heads.records = self.heads.map.len();
        self.heads.journal = buf;
        // Every record's line moved: read them all from the new journal when asked.
        let mut start = 0;
        for (number, record) in self.heads.map.values_mut().enumerate() {
            let end = start + newline_in(&self.heads.journal[start..]).expect("one line per record");
            if let Record::Line { .. } = record {
                *record = Record::Line { number: number + 1, start, end };
            }
            start = end + 1;
        }
        Ok(start as u64)
    }
}

/// Writes the backup of a workspace: the version that is about to be replaced. It is for restoring by
/// hand (`trellis state push`), not part of the integrity check, so it is replaced atomically but not
/// synced to disk.
pub(crate) fn write_backup(dir: &Path, ws: &Workspace) -> io::Result<()> {
    fs::create_dir_all(dir.join(BACKUPS))?;
    let file = WorkspaceFile::new(ws.clone());
    dir::write_replace(&dir::workspace_file(dir, BACKUPS, &ws.shoot), &dir::to_pretty(&file)?)
}

/// The document `trellis state pull` prints and `trellis state push` reads; backups have this form too.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceFile {
    /// `sha256:<hex>` of the workspace's canonical form (as it is stored). Optional when reading, so that an
    /// edited workspace can be pushed without it; when present it must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    pub workspace: Workspace,
}

/// A [`WorkspaceFile`] with the workspace as JSON, to check its checksum before reading it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkspaceFile {
    #[serde(default)]
    checksum: Option<String>,
    workspace: serde_json::Value,
}

impl WorkspaceFile {
    pub fn new(workspace: Workspace) -> WorkspaceFile {
        WorkspaceFile { checksum: Some(checksum(&workspace)), workspace }
    }

    /// Writes `ws` as a new file at `path` (its directory created if needed), durably, as `state pull`
    /// prints it; an existing file is never replaced (`ErrorKind::AlreadyExists`). What `trellis state
    /// rm` keeps of what it removes.
    pub fn write_new(path: &Path, ws: &Workspace) -> io::Result<()> {
        dir::write_new(path, &dir::to_pretty(&WorkspaceFile::new(ws.clone()))?)
    }

    /// Reads a document written by [`WorkspaceFile::new`] (or by hand); `source` names it in errors. A
    /// checksum that does not match the workspace means the file was damaged or edited.
    pub fn parse(source: &str, text: &str) -> Result<Workspace, StateError> {
        let invalid = |detail: String| StateError::InvalidFile { file: source.to_string(), detail };
        let expected_json = |e: &dyn std::fmt::Display| {
            invalid(format!(
                "{e}; expected the JSON that `trellis state pull` prints: {{\"checksum\": …, \"workspace\": {{…}}}}"
            ))
        };
        // The checksum covers the workspace as it was written, which for a file of an earlier trellis is
        // not the form this one would write (see `WorkspaceRepr`): check it on the JSON as read.
        let file: RawWorkspaceFile = serde_json::from_str(text).map_err(|e| expected_json(&e))?;
        if let Some(expected) = &file.checksum {
            let actual = checksum_bytes(&serde_json::to_vec(&file.workspace).map_err(|e| expected_json(&e))?);
            if &actual != expected {
                return Err(invalid(format!(
                    "its checksum {expected} does not match its workspace ({actual}): the file is damaged or was \
                     edited; if you edited it on purpose, remove the \"checksum\" field"
                )));
            }
        }
        // Read from a `Value`, serde_json's message has no line or column: name the field instead.
        serde_path_to_error::deserialize(file.workspace).map_err(|e| match e.path().to_string() {
            p if p == "." => expected_json(&format_args!("workspace: {}", e.inner())),
            p => expected_json(&format_args!("workspace.{p}: {}", e.inner())),
        })
    }
}

/// A stored workspace as [`check`] sees it: the raw bytes, what they parse to, and the history entry
/// of its serial (committed in the same transaction).
pub(crate) struct Stored {
    pub raw: Vec<u8>,
    pub parsed: Result<WorkspaceMeta, String>,
    pub entry: Option<HistoryEntry>,
    /// For a workspace stored in parts (format 4): whether its parts match the digest in its head value
    /// (which `raw` is). Always `Ok` for a workspace stored whole.
    pub parts: Result<(), String>,
}

/// Checks the stored workspaces against the head records in `dir`. Every workspace must match its
/// head (lineage, serial, checksum), with one exception that a crash can leave: the commit of a new
/// version went through but its head record was not written yet. That is accepted only when the
/// history entry of the stored version — committed in the same transaction — says it replaced exactly
/// the version the head names (same checksum) and produced exactly the stored bytes. A workspace without
/// a head record is accepted only when its history entry says it is the first version (its first commit
/// was interrupted the same way). A head record without a workspace is accepted only when `removals`
/// holds the entry of its removal ([`is_removal_of`]): the removal went through but the journal was not
/// rewritten yet. Anything else is damage: `Err(detail)`.
pub(crate) fn check(
    dir: &Path,
    heads: &BTreeMap<String, Head>,
    stored: &BTreeMap<String, Stored>,
    removals: &BTreeMap<String, HistoryEntry>,
) -> Result<(), String> {
    let mut problems = Vec::new();
    for (shoot, found) in stored {
        if let Err(problem) = check_one(dir, shoot, heads.get(shoot), Some(found), None) {
            problems.push(problem);
        }
    }
    for (shoot, head) in heads.iter().filter(|(shoot, _)| !stored.contains_key(*shoot)) {
        if let Err(problem) = check_one(dir, shoot, Some(head), None, removals.get(shoot)) {
            problems.push(problem);
        }
    }
    match problems.len() {
        0 => Ok(()),
        1 => Err(problems.remove(0)),
        n => Err(format!("{} (and {} more problem(s))", problems.remove(0), n - 1)),
    }
}

/// [`check`] of one workspace: what is stored of `shoot` (if anything) against its head record (if
/// any); `removal` is the entry that would record its removal, looked up when a head has no workspace.
pub(crate) fn check_one(
    dir: &Path,
    shoot: &str,
    head: Option<&Head>,
    found: Option<&Stored>,
    removal: Option<&HistoryEntry>,
) -> Result<(), String> {
    let file = dir.join(HEADS_LOG);
    let Some(found) = found else {
        return match head {
            Some(head) if !removal.is_some_and(|entry| is_removal_of(entry, head)) => Err(format!(
                "workspace {shoot} is missing from the database, but its head record in {} says serial {}",
                file.display(),
                head.serial
            )),
            _ => Ok(()),
        };
    };
    let ws = match &found.parsed {
        Ok(ws) => ws,
        Err(e) => return Err(format!("the stored record of workspace {shoot} does not parse ({e})")),
    };
    found.parts.clone()?;
    let sum = checksum_bytes(&found.raw);
    // What the stored version's own history entry says it replaced, if it vouches for these bytes.
    let replaced = found
        .entry
        .as_ref()
        .filter(|e| e.serial == ws.serial && e.checksum.as_ref() == Some(&sum))
        .map(|e| e.previous.as_ref());
    match head {
        Some(head) if head.lineage == ws.lineage && head.serial == ws.serial && head.checksum == sum => Ok(()),
        Some(head) if replaced == Some(Some(&head.checksum)) => Ok(()), // the head write was interrupted
        None if replaced == Some(None) => Ok(()),                       // the first head write was interrupted
        Some(head) => Err(format!(
            "workspace {shoot} is stored at serial {} (lineage {}, {sum}), but its head record in {} says serial {} \
             (lineage {}, {})",
            ws.serial,
            ws.lineage,
            file.display(),
            head.serial,
            head.lineage,
            head.checksum
        )),
        None => Err(format!("workspace {shoot} is stored but has no head record in {}", file.display())),
    }
}

/// Whether `entry` (found under [`crate::removed_name`] of the head) records the removal of exactly the
/// version `head` names: `trellis state rm` wrote it in the transaction that removed the workspace.
pub(crate) fn is_removal_of(entry: &HistoryEntry, head: &Head) -> bool {
    entry.operation == crate::REMOVE_OPERATION
        && entry.checksum.is_none()
        && head.serial.checked_add(1) == Some(entry.serial)
        && entry.previous.as_ref() == Some(&head.checksum)
}

/// The head records in `heads/`, one file per workspace, as an earlier trellis wrote them. An unreadable
/// one is damage.
fn read_legacy_heads(dir: &Path) -> Result<BTreeMap<String, Head>, String> {
    let heads_dir = dir.join(HEADS);
    let entries = match fs::read_dir(&heads_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("{} cannot be listed ({e})", heads_dir.display())),
    };
    let mut heads = BTreeMap::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{} cannot be listed ({e})", heads_dir.display()))?.path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue; // a temporary file of an interrupted write
        }
        let bytes = fs::read(&path).map_err(|e| format!("head record {} cannot be read ({e})", path.display()))?;
        let head: Head = serde_json::from_slice(&bytes)
            .map_err(|e| format!("head record {} does not parse ({e})", path.display()))?;
        if dir::workspace_file(dir, HEADS, &head.shoot) != path {
            return Err(format!("head record {} names another shoot, {}", path.display(), head.shoot));
        }
        heads.insert(head.shoot.clone(), head);
    }
    Ok(heads)
}
