//! Integrity of the workspaces: checksums, the head record and the backup kept beside the database
//! for every workspace, the document `trellis state pull` prints and `state push` reads, and the check
//! of the database against the head records (see the crate docs, "Integrity").

use crate::dir::{self, BACKUPS, HEADS};
use crate::{StateError, Workspace};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::Path;

/// `sha256:<hex>` of a workspace's canonical form (compact JSON, as it is stored).
pub fn checksum(ws: &Workspace) -> String {
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

pub(crate) fn write_head(dir: &Path, head: &Head) -> io::Result<()> {
    fs::create_dir_all(dir.join(HEADS))?;
    dir::write_atomic(&dir::workspace_file(dir, HEADS, &head.shoot), &dir::to_pretty(head)?)
}

/// Writes the backup of a workspace: the version that is about to be replaced.
pub(crate) fn write_backup(dir: &Path, ws: &Workspace) -> io::Result<()> {
    fs::create_dir_all(dir.join(BACKUPS))?;
    let file = WorkspaceFile::new(ws.clone());
    dir::write_atomic(&dir::workspace_file(dir, BACKUPS, &ws.shoot), &dir::to_pretty(&file)?)
}

/// The backup of a workspace, if there is one that reads and matches its own checksum.
fn read_backup(dir: &Path, shoot: &str) -> Option<Workspace> {
    let path = dir::workspace_file(dir, BACKUPS, shoot);
    let text = fs::read_to_string(&path).ok()?;
    WorkspaceFile::parse(&path.display().to_string(), &text).ok()
}

/// The document `trellis state pull` prints and `trellis state push` reads; backups have this form too.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceFile {
    /// `sha256:<hex>` of the workspace's canonical form ([`checksum`]). Optional when reading, so that an
    /// edited workspace can be pushed without it; when present it must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    pub workspace: Workspace,
}

impl WorkspaceFile {
    pub fn new(workspace: Workspace) -> WorkspaceFile {
        WorkspaceFile { checksum: Some(checksum(&workspace)), workspace }
    }

    /// Reads a document written by [`WorkspaceFile::new`] (or by hand); `source` names it in errors. A
    /// checksum that does not match the workspace means the file was damaged or edited.
    pub fn parse(source: &str, text: &str) -> Result<Workspace, StateError> {
        let invalid = |detail: String| StateError::InvalidFile { file: source.to_string(), detail };
        let file: WorkspaceFile = serde_json::from_str(text).map_err(|e| {
            invalid(format!(
                "{e}; expected the JSON that `trellis state pull` prints: {{\"checksum\": …, \"workspace\": {{…}}}}"
            ))
        })?;
        if let Some(expected) = &file.checksum {
            let actual = checksum(&file.workspace);
            if &actual != expected {
                return Err(invalid(format!(
                    "its checksum {expected} does not match its workspace ({actual}): the file is damaged or was \
                     edited; if you edited it on purpose, remove the \"checksum\" field"
                )));
            }
        }
        Ok(file.workspace)
    }
}

/// A stored workspace as [`check`] sees it: the raw bytes, and what they parse to.
pub(crate) struct Stored {
    pub raw: Vec<u8>,
    pub parsed: Result<Workspace, String>,
}

/// Checks the stored workspaces against the head records in `dir`. Every workspace must match its
/// head (lineage, serial, checksum), with one exception that a crash can leave: the commit of serial
/// `n + 1` went through but its head record was not written yet. That is accepted only when the head
/// says serial `n` and the backup — written before the commit — is exactly that version `n` (same
/// checksum). A workspace without a head record is accepted only at serial 1 without a backup (its
/// first commit was interrupted the same way). Anything else is damage: `Err(detail)`.
pub(crate) fn check(dir: &Path, stored: &BTreeMap<String, Stored>) -> Result<(), String> {
    let heads = read_heads(dir)?;
    let mut problems = Vec::new();
    for (shoot, head) in &heads {
        let file = dir::workspace_file(dir, HEADS, shoot);
        let Some(found) = stored.get(shoot) else {
            problems.push(format!(
                "workspace {shoot} is missing from the database, but its head record {} says serial {}",
                file.display(),
                head.serial
            ));
            continue;
        };
        let ws = match &found.parsed {
            Ok(ws) => ws,
            Err(e) => {
                problems.push(format!("the stored record of workspace {shoot} does not parse ({e})"));
                continue;
            }
        };
        let sum = checksum_bytes(&found.raw);
        if ws.lineage == head.lineage && ws.serial == head.serial && sum == head.checksum {
            continue;
        }
        if ws.lineage == head.lineage && head.serial.checked_add(1) == Some(ws.serial) && backup_is(dir, head) {
            continue; // the head write after the last commit was interrupted
        }
        problems.push(format!(
            "workspace {shoot} is stored at serial {} (lineage {}, {sum}), but its head record {} says serial {} \
             (lineage {}, {})",
            ws.serial,
            ws.lineage,
            file.display(),
            head.serial,
            head.lineage,
            head.checksum
        ));
    }
    for (shoot, found) in stored {
        if heads.contains_key(shoot) {
            continue;
        }
        let first_commit = matches!(&found.parsed, Ok(ws) if ws.serial == 1) && read_backup(dir, shoot).is_none();
        if !first_commit {
            problems.push(format!(
                "workspace {shoot} is stored but has no head record {}",
                dir::workspace_file(dir, HEADS, shoot).display()
            ));
        }
    }
    match problems.len() {
        0 => Ok(()),
        1 => Err(problems.remove(0)),
        n => Err(format!("{} (and {} more problem(s))", problems.remove(0), n - 1)),
    }
}

/// Whether the backup of `head.shoot` is exactly the version the head describes.
fn backup_is(dir: &Path, head: &Head) -> bool {
    read_backup(dir, &head.shoot)
        .is_some_and(|b| b.lineage == head.lineage && b.serial == head.serial && checksum(&b) == head.checksum)
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
