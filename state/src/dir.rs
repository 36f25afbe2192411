//! The state dir on disk, apart from sled's own files: the marker that makes a directory a trellis
//! state dir, the process-level lock on it, the seal that says how trellis left sled's files, and
//! atomic file writes. See the crate docs ("State dir", "Integrity") for why each exists.

use crate::StateError;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::fs::{self, File};
use std::io::{self, ErrorKind, Read as _, Write as _};
use std::path::{Path, PathBuf};

/// Marks a directory as a trellis state dir and names its format.
pub(crate) const MARKER: &str = "trellis-state.json";
/// How trellis left sled's files: [`Seal`].
pub(crate) const SEAL: &str = "seal.json";
/// One head record per workspace (`heads/<shoot>.json`), as format 1 (an earlier trellis) wrote them.
pub(crate) const HEADS: &str = "heads";
/// The heads journal: head records appended once per commit group (format 2).
pub(crate) const HEADS_LOG: &str = "heads.log";
/// The previous version of each workspace (`backups/<shoot>.json`).
pub(crate) const BACKUPS: &str = "backups";
/// Scratch copy of sled's files, verified before the originals are opened after an unclean stop.
pub(crate) const VERIFY: &str = ".verify";
/// The file in a state dir that names the process holding it open.
pub(crate) const HOLDER_FILE: &str = "holder.json";

/// The state format this trellis writes: 4, workspaces stored as one sled key per resource record
/// (see the `layout` module), head records in `heads.log` and seals that name their hash ([`Digest`]:
/// BLAKE3). It also reads format 3 (each workspace one value), format 2 (format 3 with SHA-256 seals)
/// and format 1 (head records in `heads/`), and writes the marker of format 4 before the first record
/// of the journal, before the first commit in format 4's layout and before the first BLAKE3 seal.
pub(crate) const FORMAT_VERSION: u32 = 4;
/// The oldest state format this trellis reads.
const OLDEST_FORMAT: u32 = 1;
const MARKER_KIND: &str = "trellis-state";

/// What sled 0.34 writes to `conf` with its default configuration (trellis never changes it), before
/// the 4-byte CRC. Used to recognise a state dir made by a trellis that did not write the marker yet.
const SLED_CONF: &[u8] = b"segment_size: 524288\nuse_compression: false\nversion: 0.34\n";

#[derive(Serialize, Deserialize)]
struct Marker {
    kind: String,
    format_version: u32,
}

/// What a directory passed as the state dir holds.
#[derive(Debug, PartialEq)]
pub(crate) enum Contents {
    /// Nothing at all: trellis may make it a state dir.
    Empty,
    /// A trellis state dir of this format.
    Marked,
    /// No marker, but exactly what an earlier trellis left: sled's `conf` (with trellis' settings), `db`
    /// and `blobs/`, maybe `snap.*`, `holder.json` and `heads/` or `heads.log` of an adoption that was
    /// interrupted.
    /// Adopted if the database also holds a `workspaces` tree.
    Legacy,
}

/// Looks at the directory (which exists) without changing anything in it.
pub(crate) fn classify(dir: &Path) -> Result<Contents, StateError> {
    let unreadable = |e: io::Error| StateError::Open {
        dir: dir.to_path_buf(),
        detail: format!("cannot list it ({e}); check its permissions"),
    };
    let mut names: Vec<String> = Vec::new();
    for entry in fs::read_dir(dir).map_err(unreadable)? {
        names.push(entry.map_err(unreadable)?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    if names.iter().any(|n| n == MARKER) {
        check_marker(dir)?;
        return Ok(Contents::Marked);
    }
    if names.is_empty() {
        return Ok(Contents::Empty);
    }
    if looks_like_legacy(dir, &names) {
        return Ok(Contents::Legacy);
    }
    let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
    let more = if names.len() > 3 { format!(" and {} more", names.len() - 3) } else { String::new() };
    Err(StateError::NotStateDir {
        dir: dir.to_path_buf(),
        detail: format!(
            "it is not empty (it holds {}{more}) and has no {MARKER}; trellis does not take over a directory it \
             did not create — pass a new or empty directory with --state",
            shown.join(", ")
        ),
    })
}

fn check_marker(dir: &Path) -> Result<(), StateError> {
    let path = dir.join(MARKER);
    let damaged = |detail: String| StateError::Damaged { dir: dir.to_path_buf(), detail };
    let text = fs::read(&path).map_err(|e| damaged(format!("{} cannot be read ({e})", path.display())))?;
    let marker: Marker =
        serde_json::from_slice(&text).map_err(|e| damaged(format!("{} does not parse ({e})", path.display())))?;
    if marker.kind != MARKER_KIND {
        return Err(damaged(format!("{} names kind {:?}, not {MARKER_KIND:?}", path.display(), marker.kind)));
    }
    if marker.format_version > FORMAT_VERSION {
        return Err(StateError::NotStateDir {
            dir: dir.to_path_buf(),
            detail: format!(
                "it was written by a newer trellis (state format {}; this trellis reads format {FORMAT_VERSION}); \
                 use that trellis",
                marker.format_version
            ),
        });
    }
    if marker.format_version < OLDEST_FORMAT {
        return Err(damaged(format!(
            "{} names state format {}, which no trellis ever wrote",
            path.display(),
            marker.format_version
        )));
    }
    Ok(())
}

fn looks_like_legacy(dir: &Path, names: &[String]) -> bool {
    let known = |n: &str| {
        matches!(n, "conf" | "db" | "blobs" | HOLDER_FILE | "holder.json.tmp" | HEADS | HEADS_LOG | "heads.log.tmp")
            || n.starts_with("snap.")
    };
    if !names.iter().all(|n| known(n)) {
        return false;
    }
    let conf_ok = fs::read(dir.join("conf")).is_ok_and(|c| c.len() == SLED_CONF.len() + 4 && c.starts_with(SLED_CONF));
    conf_ok && dir.join("db").is_file() && dir.join("blobs").is_dir()
}

/// Writes the marker (atomically): from now on the directory is a trellis state dir.
pub(crate) fn write_marker(dir: &Path) -> io::Result<()> {
    let marker = Marker { kind: MARKER_KIND.to_string(), format_version: FORMAT_VERSION };
    write_atomic(&dir.join(MARKER), &to_pretty(&marker)?)
}

/// Writes the marker of this trellis' format unless the marker already names it (or a newer one).
pub(crate) fn upgrade_marker(dir: &Path) -> io::Result<()> {
    let current = fs::read(dir.join(MARKER))
        .ok()
        .and_then(|text| serde_json::from_slice::<Marker>(&text).ok())
        .map(|m| m.format_version);
    match current {
        Some(version) if version >= FORMAT_VERSION => Ok(()),
        _ => write_marker(dir),
    }
}

/// Writes `bytes` to `path` so that a reader (or a crash, or a power loss) sees either the old or the
/// new content: a temporary file beside it, `fsync`, `rename`, `fsync` of the directory.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_via_rename(path, bytes, true)?;
    sync_dir(parent_of(path))
}

/// Like [`write_atomic`] without the `fsync`s: a reader or a killed process sees the old or the new
/// content; after a power loss it may be the old one.
pub(crate) fn write_replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_via_rename(path, bytes, false)
}

/// `fsync` of a directory: the renames done in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn write_via_rename(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = parent_of(path).join(tmp_name);
    {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
    }
    fs::rename(&tmp, path)
}

fn parent_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

pub(crate) fn to_pretty<T: Serialize>(value: &T) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// trellis' exclusive lock on a state dir: `flock(2)` on the directory itself, so that taking it
/// creates nothing inside a directory that may turn out not to be a state dir. The OS releases it when
/// the process dies, so it never goes stale.
pub(crate) struct DirLock {
    file: File,
}

impl DirLock {
    /// `Ok(None)`: another open file description holds it (another process, or another open in this one).
    pub(crate) fn try_acquire(dir: &Path) -> io::Result<Option<DirLock>> {
        let file = File::open(dir)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(DirLock { file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Whether the locked directory is still the one at `dir`. A process that cleans up a state dir it
    /// created removes it while holding the lock; whoever gets the lock next holds a removed directory
    /// and must start again.
    pub(crate) fn is_at(&self, dir: &Path) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            match (self.file.metadata(), fs::metadata(dir)) {
                (Ok(locked), Ok(now)) => locked.dev() == now.dev() && locked.ino() == now.ino(),
                _ => false,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = &self.file;
            dir.is_dir()
        }
    }
}

/// How trellis left sled's files, in `seal.json`. `Open` is written before sled opens the files in
/// place, `Closed` after sled has let go of them at the end of a run (see the crate docs, "Integrity").
#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum Seal {
    Open,
    Closed { files: Vec<SealedFile> },
}

/// One of sled's files as trellis left it: its length and the hash of its content, under the name of
/// the hash's algorithm (`blake3`; `sha256` in seals of state format 2, which still verify), and what
/// the file system said of it then ([`Stamp`]; absent in seals of an earlier trellis, and where it
/// could not vouch for the content).
#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
pub(crate) struct SealedFile {
    /// Path relative to the state dir, `/`-separated.
    pub name: String,
    pub len: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<Stamp>,
}

impl SealedFile {
    /// The hash the seal records, whichever algorithm made it.
    fn hash(&self) -> &str {
        self.blake3.as_deref().or(self.sha256.as_deref()).unwrap_or("")
    }

    /// Same name, length and hash (the stamps aside).
    pub(crate) fn same_content(&self, other: &SealedFile) -> bool {
        self.name == other.name && self.len == other.len && self.blake3 == other.blake3 && self.sha256 == other.sha256
    }

    fn hashed_with(&self, digest: Digest) -> bool {
        match digest {
            Digest::Blake3 => self.blake3.is_some(),
            Digest::Sha256 => self.sha256.is_some(),
        }
    }
}

/// Whether two file lists name the same files with the same lengths and hashes.
pub(crate) fn same_content(a: &[SealedFile], b: &[SealedFile]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.same_content(b))
}

/// The hash a seal uses for sled's files. BLAKE3 (what this trellis writes) hashes several times faster
/// than SHA-256 (what format 2 wrote), and the seal of an applied fleet's database is hashed at every
/// open and close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Digest {
    Blake3,
    Sha256,
}

impl Digest {
    /// The algorithm of a sealed file list: SHA-256 if it was written so (format 2), else BLAKE3.
    pub(crate) fn of(files: &[SealedFile]) -> Digest {
        if files.iter().any(|f| f.blake3.is_none() && f.sha256.is_some()) {
            Digest::Sha256
        } else {
            Digest::Blake3
        }
    }
}

/// `Ok(None)`: there is no seal.
pub(crate) fn read_seal(dir: &Path) -> Result<Option<Seal>, StateError> {
    let path = dir.join(SEAL);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| StateError::Damaged {
            dir: dir.to_path_buf(),
            detail: format!("{} does not parse ({e})", path.display()),
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StateError::Open {
            dir: dir.to_path_buf(),
            detail: format!("cannot read {} ({e}); check its permissions", path.display()),
        }),
    }
}

pub(crate) fn write_seal(dir: &Path, seal: &Seal) -> io::Result<()> {
    write_atomic(&dir.join(SEAL), &to_pretty(seal)?)
}

/// sled's files in `dir` (`db`, `conf`, `snap.*`, `blobs/*`), relative, sorted.
pub(crate) fn sled_files(dir: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "db" || name == "conf" || name.starts_with("snap.") {
            out.push(name);
        } else if name == "blobs" && entry.file_type()?.is_dir() {
            for blob in fs::read_dir(entry.path())? {
                out.push(format!("blobs/{}", blob?.file_name().to_string_lossy()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Length and hash (by `digest`) of each of sled's files, with its [`Stamp`]. A file whose stamp is
/// the one `known` records for it (same name and length, hashed by `digest`) is not read: its entry is
/// taken as it is (see the crate docs, "Integrity": the seal's check costs what changed).
pub(crate) fn fingerprint(dir: &Path, digest: Digest, known: &[SealedFile]) -> io::Result<Vec<SealedFile>> {
    // Large reads: BLAKE3 hashes the 1 KiB chunks of one update in parallel (SIMD).
    let mut buf = Vec::new();
    sled_files(dir)?
        .into_iter()
        .map(|name| {
            let path = dir.join(&name);
            // Taken before the content is read: a write during the read moves it, so the next check hashes.
            let (len, stat) = stamp(&path)?;
            let unchanged = known.iter().find(|k| {
                k.name == name && k.len == len && k.hashed_with(digest) && k.stat.is_some() && k.stat == stat
            });
            if let Some(entry) = unchanged {
                return Ok(entry.clone());
            }
            if buf.is_empty() {
                buf = vec![0u8; 256 * 1024];
            }
            let mut file = File::open(&path)?;
            let mut blake = blake3::Hasher::new();
            let mut sha = Sha256::new();
            let mut len = 0u64;
            loop {
                let n = match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                match digest {
                    Digest::Blake3 => {
                        blake.update(&buf[..n]);
                    }
                    Digest::Sha256 => sha.update(&buf[..n]),
                }
                len += n as u64;
            }
            let (blake3, sha256) = match digest {
                Digest::Blake3 => (Some(blake.finalize().to_hex().to_string()), None),
                Digest::Sha256 => (None, Some(hex::encode(sha.finalize()))),
            };
            Ok(SealedFile { name, len, blake3, sha256, stat })
        })
        .collect()
}

/// `files` (as checked a moment ago) with the stamps their files have now, where their length is the
/// same: for a moment when the only write since the check is one known not to change the content
/// (sled's open of a database it closed cleanly, see the crate docs, "Integrity").
pub(crate) fn restamp(dir: &Path, files: &[SealedFile]) -> io::Result<Vec<SealedFile>> {
    files
        .iter()
        .map(|file| {
            let (len, stat) = stamp(&dir.join(&file.name))?;
            Ok(if len == file.len { SealedFile { stat, ..file.clone() } } else { file.clone() })
        })
        .collect()
}

/// What the file system says of one of sled's files besides its length: inode, modification and
/// change times (seconds, nanoseconds). A file whose stamp is the same at two moments was not written
/// in between: a write moves `mtime` and `ctime`, `ctime` cannot be set back from user space, and a
/// file put in its place has another inode.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub inode: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

/// The length of the file at `path` and its stamp: `None` where the platform has no inode and change
/// time, and where the stamp could not tell a later write apart — a change time in the last two
/// seconds without nanoseconds (a file system that keeps whole seconds: another write in the same
/// second would leave the same stamp). Without a stamp the file is hashed at every check.
fn stamp(path: &Path) -> io::Result<(u64, Option<Stamp>)> {
    let m = fs::metadata(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(i64::MAX);
        let coarse = m.ctime_nsec() == 0 && now.saturating_sub(m.ctime()) < 2;
        let stamp = Stamp { inode: m.ino(), mtime: (m.mtime(), m.mtime_nsec()), ctime: (m.ctime(), m.ctime_nsec()) };
        Ok((m.len(), (!coarse).then_some(stamp)))
    }
    #[cfg(not(unix))]
    {
        Ok((m.len(), None))
    }
}

/// The first difference between the files as sealed and as found, for the "damaged" message.
pub(crate) fn describe_difference(dir: &Path, sealed: &[SealedFile], found: &[SealedFile]) -> String {
    let shown = |f: &SealedFile| {
        let (algorithm, hash) = match f.blake3.as_deref() {
            Some(hash) => ("blake3", hash),
            None => ("sha256", f.hash()),
        };
        format!("{} bytes, {algorithm} {}", f.len, &hash[..16.min(hash.len())])
    };
    for s in sealed {
        match found.iter().find(|f| f.name == s.name) {
            None => return format!("{} is missing", dir.join(&s.name).display()),
            Some(f) if !f.same_content(s) => {
                return format!(
                    "{} changed after trellis last closed it (then: {}; now: {})",
                    dir.join(&s.name).display(),
                    shown(s),
                    shown(f)
                )
            }
            Some(_) => {}
        }
    }
    match found.iter().find(|f| !sealed.iter().any(|s| s.name == f.name)) {
        Some(f) => format!("{} appeared after trellis last closed the state dir", dir.join(&f.name).display()),
        None => "sled's files changed after trellis last closed them".to_string(),
    }
}

/// Copies sled's files into `to` (which must not exist), for a verification that must not touch them.
pub(crate) fn copy_sled_files(dir: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir(to)?;
    fs::create_dir_all(to.join("blobs"))?;
    for name in sled_files(dir)? {
        fs::copy(dir.join(&name), to.join(&name))?;
    }
    Ok(())
}

/// Removes `path` if it exists.
pub(crate) fn remove_dir_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Removes every entry of `dir` (not `dir` itself).
pub(crate) fn empty_dir(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            fs::remove_dir_all(entry.path())?;
        } else {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// `<dir>/<sub>/<shoot, percent-encoded>.json`. Shoot ids are `[a-z0-9-]`, which stay readable; anything
/// else (including `.` and `/`) is encoded, so a name can never leave the directory.
pub(crate) fn workspace_file(dir: &Path, sub: &str, shoot: &str) -> PathBuf {
    dir.join(sub).join(format!("{}.json", encode_shoot(shoot)))
}

/// A shoot id as a file name's stem: percent-encoded outside `[A-Za-z0-9_-]` (see [`workspace_file`]).
pub(crate) fn encode_shoot(shoot: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_');
    percent_encoding::utf8_percent_encode(shoot, KEEP).to_string()
}

/// Writes `bytes` as the new file `path` (its directory created if needed), durably, and never over an
/// existing file: a temporary file beside it, `fsync`, a hard link to `path` (which fails if `path`
/// exists), the temporary removed, `fsync` of the directory. A crash leaves no partial `path`.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = parent_of(path);
    fs::create_dir_all(parent)?;
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = parent.join(tmp_name);
    {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    linked?;
    sync_dir(parent)
}
