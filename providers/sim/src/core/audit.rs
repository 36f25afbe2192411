//! The audit log: every call a simulated cloud answered, failed and faulted ones included.
//!
//! A cloud keeps its calls in memory ([`AuditLog`]); a command that writes the cloud appends them to
//! the cloud's [`AuditFile`] (one JSON line per call) beside its database — not in it: the log only
//! grows, and kept in a sled tree every open of the state read its pages (sled's open is O(pages): a
//! fleet's 180,000 calls were a fifth of the one-shoot plan against 10,000 applied shoots, issue #27).
//! A log an earlier trellis kept in a tree is read from there and moved into the file by the first
//! append.

use crate::SimError;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use trellis_planner::cloud::Call;

const AUDIT_PREFIX: &str = "audit/";
/// Calls appended per `write` by [`AuditLog::persist`]: a fleet's tens of thousands of calls are not
/// rendered into one buffer.
const WRITE_CALLS: usize = 1_000;

/// The calls in memory, how many of them are written to the file, and the file each call is
/// written to as it is made ([`AuditLog::keep`]). Public so a cloud binding outside this crate keeps
/// its calls in the same form (`trellis sim audit` reads every binding's audit file alike).
#[derive(Default)]
pub struct AuditLog {
    calls: Vec<Call>,
    persisted: usize,
    /// [`AuditLog::keep`]'s file, open for appending.
    kept: Option<(File, PathBuf)>,
}

impl AuditLog {
    /// Records `call`; a kept log ([`AuditLog::keep`]) also appends it to its file (one `write`, not
    /// synced). A failed write stops keeping: the call stays in memory, for the next
    /// [`AuditLog::persist`].
    pub fn push(&mut self, call: Call) {
        self.calls.push(call);
        if let Some((file, path)) = self.kept.take() {
            if self.append(&file, &path).is_ok() {
                self.kept = Some((file, path));
            }
        }
    }

    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// The calls after position `mark` (see [`AuditLog::len`]).
    pub fn since(&self, mark: usize) -> Vec<Call> {
        self.calls.get(mark..).map(<[Call]>::to_vec).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Appends the calls not persisted yet to `file` (one JSON line each) and syncs it
    /// (also when the log is kept and nothing was left to write: the sync makes the kept calls
    /// durable). Returns how many calls were written.
    pub fn persist(&mut self, file: &AuditFile) -> Result<usize, SimError> {
        if self.persisted == self.calls.len() && self.kept.is_none() {
            return Ok(0);
        }
        let before = self.persisted;
        match self.kept.take() {
            Some((kept, path)) => {
                let written = self.append(&kept, &path).and_then(|()| sync(&kept, &path));
                self.kept = Some((kept, path));
                written?;
            }
            None => {
                let opened = file.open_append()?;
                self.append(&opened, &file.path)?;
                sync(&opened, &file.path)?;
            }
        }
        Ok(self.persisted - before)
    }

    /// Keeps the log in `file` from now on: the calls not persisted yet are written now, and every
    /// call as it is recorded ([`AuditLog::push`], under the cloud's lock, so before the call is
    /// answered) — one `write` each, so a killed process loses none; [`AuditLog::persist`] syncs.
    /// Returns how many calls were written now.
    pub fn keep(&mut self, file: AuditFile) -> Result<usize, SimError> {
        let before = self.persisted;
        let opened = file.open_append()?;
        self.append(&opened, &file.path)?;
        self.kept = Some((opened, file.path));
        Ok(self.persisted - before)
    }

    /// Writes the calls not persisted yet to the end of `file`, [`WRITE_CALLS`] to a `write` (not
    /// synced).
    fn append(&mut self, file: &File, path: &Path) -> Result<(), SimError> {
        let mut out = file;
        while self.persisted < self.calls.len() {
            let chunk = &self.calls[self.persisted..self.calls.len().min(self.persisted + WRITE_CALLS)];
            out.write_all(&lines(chunk)).map_err(|e| storage(path, "appending to", e))?;
            self.persisted += chunk.len();
        }
        Ok(())
    }
}

/// A simulated cloud's audit file: one JSON line per call, oldest first, only ever appended to.
/// `legacy` is the sled tree an earlier trellis kept the log in, if the database has it: the first
/// append moves its calls into the file. Its calls are read after the file's: both hold calls only
/// when an earlier trellis wrote the tree after a later one had moved it (then the tree's are newer).
pub struct AuditFile {
    path: PathBuf,
    legacy: Option<sled::Tree>,
}

impl AuditFile {
    pub fn new(path: PathBuf, legacy: Option<sled::Tree>) -> AuditFile {
        AuditFile { path, legacy }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every call kept, oldest first. A line torn by a killed process (the last, without its newline)
    /// is not a call; any other line that is not one is [`SimError::Corrupt`] naming the file and line.
    pub fn read(&self) -> Result<Vec<Call>, SimError> {
        let moving = self.moving();
        if moving.exists() {
            // A move that was stopped after the file holding the whole log was in place.
            return read_lines(&moving);
        }
        let mut calls = read_lines(&self.path)?;
        if let Some(tree) = &self.legacy {
            calls.extend(persisted(tree)?);
        }
        Ok(calls)
    }

    /// The file, open for appending: the log of an earlier trellis moved in first, a torn last line
    /// cut off (so the next line starts a line of its own).
    fn open_append(&self) -> Result<File, SimError> {
        self.move_legacy()?;
        let dir = parent_of(&self.path);
        let created = !self.path.exists();
        if created {
            fs::create_dir_all(dir).map_err(|e| storage(dir, "creating", e))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(|e| storage(&self.path, "opening", e))?;
        if created {
            sync_dir(dir)?;
        }
        let whole = complete_len(&mut file).map_err(|e| storage(&self.path, "reading", e))?;
        if file.metadata().map_err(|e| storage(&self.path, "reading", e))?.len() != whole {
            file.set_len(whole).map_err(|e| storage(&self.path, "cutting the torn last line of", e))?;
        }
        Ok(file)
    }

    /// Moves the calls of the legacy tree into the file, safely against a kill at any point: (1) the
    /// file's calls and then the tree's are written to a temporary file, synced and renamed to
    /// `<file>.moving` — from then on that file is the whole log (and [`AuditFile::read`] reads it);
    /// (2) the tree is emptied and flushed; (3) `<file>.moving` is renamed to the file. A run that
    /// finds `<file>.moving` resumes at (2).
    fn move_legacy(&self) -> Result<(), SimError> {
        let moving = self.moving();
        if !moving.exists() {
            let Some(tree) = self.legacy.as_ref().filter(|tree| !tree.is_empty()) else { return Ok(()) };
            let mut whole = read_complete(&self.path)?;
            whole.extend(lines(&persisted(tree)?));
            let dir = parent_of(&self.path);
            fs::create_dir_all(dir).map_err(|e| storage(dir, "creating", e))?;
            let tmp = with_suffix(&self.path, ".tmp");
            let written = File::create(&tmp).and_then(|mut f| f.write_all(&whole).and_then(|()| f.sync_all()));
            written.map_err(|e| storage(&tmp, "writing", e))?;
            fs::rename(&tmp, &moving).map_err(|e| storage(&moving, "writing", e))?;
            sync_dir(dir)?;
        }
        if let Some(tree) = &self.legacy {
            tree.clear()?;
            tree.flush()?;
        }
        fs::rename(&moving, &self.path).map_err(|e| storage(&self.path, "writing", e))?;
        sync_dir(parent_of(&self.path))
    }

    fn moving(&self) -> PathBuf {
        with_suffix(&self.path, ".moving")
    }
}

/// `calls` as JSON lines.
fn lines(calls: &[Call]) -> Vec<u8> {
    let mut out = Vec::with_capacity(calls.len() * 128);
    for call in calls {
        // A call is strings and numbers: serialising it cannot fail.
        serde_json::to_writer(&mut out, call).expect("a call serialises");
        out.push(b'\n');
    }
    out
}

/// The calls of the JSON lines file `path` (none if it does not exist).
fn read_lines(path: &Path) -> Result<Vec<Call>, SimError> {
    read_complete(path)?
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_slice(line).map_err(|e| SimError::Corrupt {
                key: format!("{} line {}", path.display(), i + 1),
                detail: format!("not an audited call: {e}"),
            })
        })
        .collect()
}

/// The bytes of `path` up to its last newline (empty if it does not exist): a torn last line is left out.
fn read_complete(path: &Path) -> Result<Vec<u8>, SimError> {
    let mut bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(storage(path, "reading", e)),
    };
    bytes.truncate(bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1));
    Ok(bytes)
}

/// The length of `file` up to its last newline, read from the end.
fn complete_len(file: &mut File) -> io::Result<u64> {
    let mut end = file.metadata()?.len();
    let mut chunk = vec![0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(part)?;
        if let Some(i) = part.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

fn sync(file: &File, path: &Path) -> Result<(), SimError> {
    file.sync_data().map_err(|e| storage(path, "syncing", e))
}

fn sync_dir(dir: &Path) -> Result<(), SimError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| storage(dir, "syncing", e))
}

fn parent_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

fn storage(path: &Path, what: &str, e: io::Error) -> SimError {
    SimError::Storage(format!(
        "{what} the audit log {}: {e}; check the directory's permissions and free space",
        path.display()
    ))
}

/// The calls an earlier trellis kept in `tree` (keys `audit/<20-digit sequence>`, values the
/// [`Call`] as JSON), oldest first; a value that is not a call is [`SimError::Corrupt`] naming its key.
pub fn persisted(tree: &sled::Tree) -> Result<Vec<Call>, SimError> {
    tree.scan_prefix(AUDIT_PREFIX)
        .map(|item| {
            let (key, value) = item?;
            serde_json::from_slice(&value).map_err(|e| SimError::Corrupt {
                key: String::from_utf8_lossy(&key).into_owned(),
                detail: format!("not an audited call: {e}"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_planner::cloud::Op;

    fn call(n: usize) -> Call {
        Call { op: Op::Read, method: "GET".into(), target: format!("/t/{n}"), status: 200 }
    }

    fn calls(range: std::ops::Range<usize>) -> Vec<Call> {
        range.map(call).collect()
    }

    /// Appends call `n` to `file` as a command that made it would; how many calls were written.
    fn persist_one(file: &AuditFile, n: usize) -> usize {
        let mut log = AuditLog::default();
        log.push(call(n));
        log.persist(file).unwrap()
    }

    /// The log of an earlier trellis, in a tree as it kept it.
    fn legacy_tree(db: &sled::Db, range: std::ops::Range<usize>) -> sled::Tree {
        let tree = db.open_tree("audit").unwrap();
        for n in range {
            tree.insert(format!("{AUDIT_PREFIX}{n:020}"), serde_json::to_vec(&call(n)).unwrap()).unwrap();
        }
        tree
    }

    /// Every call is appended once, in order, as one JSON line; a later persist continues after the
    /// last one, and the file reads back as written.
    #[test]
    fn calls_are_appended_once_in_order_as_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let file = AuditFile::new(dir.path().join("audit/azure.jsonl"), None);
        let mut log = AuditLog::default();
        (0..2_007).for_each(|n| log.push(call(n)));
        assert_eq!(log.persist(&file).unwrap(), 2_007);
        (2_007..2_010).for_each(|n| log.push(call(n)));
        assert_eq!(log.persist(&file).unwrap(), 3);
        assert_eq!(log.persist(&file).unwrap(), 0, "nothing written twice");
        assert_eq!(file.read().unwrap(), calls(0..2_010));
        let text = fs::read_to_string(file.path()).unwrap();
        assert_eq!(text.lines().count(), 2_010);
        assert_eq!(text.lines().next().unwrap(), r#"{"op":"read","method":"GET","target":"/t/0","status":200}"#);
    }

    /// A kept log (`trellis sim serve`) appends each call as it is recorded, after what the file held,
    /// so a killed process loses none; a later persist writes nothing twice.
    #[test]
    fn a_kept_log_appends_each_call_as_it_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut earlier = AuditLog::default();
        earlier.push(call(0));
        earlier.persist(&AuditFile::new(path.clone(), None)).unwrap();
        let mut log = AuditLog::default();
        log.push(call(1));
        assert_eq!(
            log.keep(AuditFile::new(path.clone(), None)).unwrap(),
            1,
            "what was recorded before is written at once"
        );
        log.push(call(2));
        let file = AuditFile::new(path, None);
        assert_eq!(file.read().unwrap(), calls(0..3), "written as recorded, in order");
        assert_eq!(log.persist(&file).unwrap(), 0, "nothing written twice");
        assert_eq!(file.read().unwrap().len(), 3);
    }

    /// A state dir of an earlier trellis keeps its log in a tree: it is read, and the first append
    /// moves it into the file, before the new calls, and empties the tree.
    #[test]
    fn the_log_an_earlier_trellis_kept_in_a_tree_is_read_and_moved_by_the_first_append() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = legacy_tree(&db, 0..5);
        let path = dir.path().join("audit/azure.jsonl");
        let file = AuditFile::new(path.clone(), Some(tree.clone()));
        assert_eq!(file.read().unwrap(), calls(0..5), "read from the tree");
        assert_eq!(persist_one(&file, 5), 1);
        assert!(tree.is_empty(), "the tree was emptied");
        assert_eq!(AuditFile::new(path, None).read().unwrap(), calls(0..6), "the file holds the whole log");
        assert_eq!(file.read().unwrap(), calls(0..6));
    }

    /// A move killed after the whole log was in place as `<file>.moving` but before the tree was
    /// emptied: that file is the log (read alone, nothing twice), and the next append finishes the move.
    #[test]
    fn a_move_killed_halfway_is_read_once_and_finished_by_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = legacy_tree(&db, 2..6);
        let path = dir.path().join("azure.jsonl");
        fs::write(&path, lines(&calls(0..2))).unwrap();
        fs::write(with_suffix(&path, ".moving"), lines(&calls(0..6))).unwrap();
        let file = AuditFile::new(path.clone(), Some(tree.clone()));
        assert_eq!(file.read().unwrap(), calls(0..6), "the moving file alone: nothing twice");
        persist_one(&file, 6);
        assert!(tree.is_empty());
        assert!(!with_suffix(&path, ".moving").exists());
        assert_eq!(file.read().unwrap(), calls(0..7));
    }

    /// An earlier trellis that opened the dir after the move kept its calls in the tree again: they
    /// are the newer ones, read after the file's and moved after them.
    #[test]
    fn calls_an_earlier_trellis_kept_after_the_move_are_read_and_moved_after_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = legacy_tree(&db, 2..4);
        let path = dir.path().join("azure.jsonl");
        fs::write(&path, lines(&calls(0..2))).unwrap();
        let file = AuditFile::new(path, Some(tree.clone()));
        assert_eq!(file.read().unwrap(), calls(0..4));
        persist_one(&file, 4);
        assert!(tree.is_empty());
        assert_eq!(file.read().unwrap(), calls(0..5));
    }

    /// The last line torn by a killed process is not a call: it is not read, and it is cut off before
    /// the next append, so the next call starts a line of its own. Any other bad line is damage,
    /// named by file and line.
    #[test]
    fn a_torn_last_line_is_ignored_and_cut_off_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gce.jsonl");
        let mut bytes = lines(&calls(0..2));
        bytes.extend_from_slice(br#"{"op":"read","meth"#);
        fs::write(&path, &bytes).unwrap();
        let file = AuditFile::new(path.clone(), None);
        assert_eq!(file.read().unwrap(), calls(0..2));
        persist_one(&file, 2);
        assert_eq!(file.read().unwrap(), calls(0..3));
        fs::write(&path, b"{\"op\":\"read\"}\n").unwrap();
        let err = file.read().unwrap_err().to_string();
        assert!(err.contains(&format!("{} line 1", path.display())) && err.contains("not an audited call"), "{err}");
    }
}
