//! Integrity of the workspaces: checksums, the head record and the backup kept beside the database
//! for every workspace, the document `trellis state pull` prints and `state push` reads, and the check
//! of the database against the head records (see the crate docs, "Integrity").

use crate::dir::{self, BACKUPS, HEADS};
use crate::{HistoryEntry, StateError, Workspace};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::Path;

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
}

/// Writes the head records of one commit group (at most one per workspace), each atomically (temporary
/// file, `fsync`, `rename`), then `fsync`s `heads/` once: when this returns, all of them are durable.
pub(crate) fn write_heads(dir: &Path, heads: &[Head]) -> io::Result<()> {
    if heads.is_empty() {
        return Ok(());
    }
    let folder = dir.join(HEADS);
    fs::create_dir_all(&folder)?;
    let files = heads
        .iter()
        .map(|head| Ok((dir::workspace_file(dir, HEADS, &head.shoot), dir::to_pretty(head)?)))
        .collect::<io::Result<Vec<_>>>()?;
    if let [(path, bytes)] = files.as_slice() {
        dir::write_synced_rename(path, bytes)?;
    } else {
        // The file systems' journals group `fsync`s that run at the same time, so the files of a
        // group are written by threads of their own (a few per thread) and synced together.
        let per_thread = files.len().div_ceil(MAX_SYNC_THREADS);
        std::thread::scope(|s| {
            let writers: Vec<_> = files
                .chunks(per_thread)
                .map(|chunk| {
                    s.spawn(move || chunk.iter().try_for_each(|(path, bytes)| dir::write_synced_rename(path, bytes)))
                })
                .collect();
            writers.into_iter().try_for_each(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        })?;
    }
    dir::sync_dir(&folder)
}

/// At most this many threads write the head records of one group.
const MAX_SYNC_THREADS: usize = 16;

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

    /// Reads a document written by [`WorkspaceFile::new`] (or by hand); `source` names it in errors. A
    /// checksum that does not match the workspace means the file was damaged or edited.
    pub fn parse(source: &str, text: &str) -> Result<Workspace, StateError> {
        let invalid = |detail: String| StateError::InvalidFile { file: source.to_string(), detail };
        let expected_json = |e: serde_json::Error| {
            invalid(format!(
                "{e}; expected the JSON that `trellis state pull` prints: {{\"checksum\": …, \"workspace\": {{…}}}}"
            ))
        };
        // The checksum covers the workspace as it was written, which for a file of an earlier trellis is
        // not the form this one would write (see `WorkspaceRepr`): check it on the JSON as read.
        let file: RawWorkspaceFile = serde_json::from_str(text).map_err(expected_json)?;
        if let Some(expected) = &file.checksum {
            let actual = checksum_bytes(&serde_json::to_vec(&file.workspace).map_err(expected_json)?);
            if &actual != expected {
                return Err(invalid(format!(
                    "its checksum {expected} does not match its workspace ({actual}): the file is damaged or was \
                     edited; if you edited it on purpose, remove the \"checksum\" field"
                )));
            }
        }
        serde_json::from_value(file.workspace).map_err(expected_json)
    }
}

/// A stored workspace as [`check`] sees it: the raw bytes, what they parse to, and the history entry
/// of its serial (committed in the same transaction).
pub(crate) struct Stored {
    pub raw: Vec<u8>,
    pub parsed: Result<Workspace, String>,
    pub entry: Option<HistoryEntry>,
}

/// Checks the stored workspaces against the head records in `dir`. Every workspace must match its
/// head (lineage, serial, checksum), with one exception that a crash can leave: the commit of a new
/// version went through but its head record was not written yet. That is accepted only when the
/// history entry of the stored version — committed in the same transaction — says it replaced exactly
/// the version the head names (same checksum) and produced exactly the stored bytes. A workspace without
/// a head record is accepted only when its history entry says it is the first version (its first commit
/// was interrupted the same way). Anything else is damage: `Err(detail)`.
pub(crate) fn check(dir: &Path, stored: &BTreeMap<String, Stored>) -> Result<(), String> {
    let heads = read_heads(dir)?;
    let mut problems = Vec::new();
    for (shoot, found) in stored {
        let file = dir::workspace_file(dir, HEADS, shoot);
        let ws = match &found.parsed {
            Ok(ws) => ws,
            Err(e) => {
                problems.push(format!("the stored record of workspace {shoot} does not parse ({e})"));
                continue;
            }
        };
        let sum = checksum_bytes(&found.raw);
        // What the stored version's own history entry says it replaced, if it vouches for these bytes.
        let replaced = found
            .entry
            .as_ref()
            .filter(|e| e.serial == ws.serial && e.checksum.as_ref() == Some(&sum))
            .map(|e| e.previous.as_ref());
        match heads.get(shoot) {
            Some(head) if head.lineage == ws.lineage && head.serial == ws.serial && head.checksum == sum => {}
            Some(head) if replaced == Some(Some(&head.checksum)) => {} // the head write was interrupted
            None if replaced == Some(None) => {}                       // the first head write was interrupted
            Some(head) => problems.push(format!(
                "workspace {shoot} is stored at serial {} (lineage {}, {sum}), but its head record {} says serial \
                 {} (lineage {}, {})",
                ws.serial,
                ws.lineage,
                file.display(),
                head.serial,
                head.lineage,
                head.checksum
            )),
            None => problems.push(format!("workspace {shoot} is stored but has no head record {}", file.display())),
        }
    }
    for (shoot, head) in &heads {
        if !stored.contains_key(shoot) {
            problems.push(format!(
                "workspace {shoot} is missing from the database, but its head record {} says serial {}",
                dir::workspace_file(dir, HEADS, shoot).display(),
                head.serial
            ));
        }
    }
    match problems.len() {
        0 => Ok(()),
        1 => Err(problems.remove(0)),
        n => Err(format!("{} (and {} more problem(s))", problems.remove(0), n - 1)),
    }
}

/// Every head record in `dir`, by shoot. An unreadable one is damage.
fn read_heads(dir: &Path) -> Result<BTreeMap<String, Head>, String> {
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
