//! Waiting for a lock another process holds (`--lock-timeout`, as Terraform's `-lock-timeout`): the
//! state dir, a workspace, the simulated clouds' dir. [`LockWait::acquire`] is the one loop every lock
//! acquisition goes through; what it prints is left to the caller's callback.

use crate::{LockInfo, LockRelease, StateError};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The first pause between two attempts; each pause doubles up to [`LAST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between two attempts: a released lock is taken within a second.
const LAST_PAUSE: Duration = Duration::from_secs(1);
/// How often the waiting line is repeated while the lock stays held.
const REPORT_EVERY: Duration = Duration::from_secs(10);
/// The longest `--lock-timeout`: a day (a longer wait is a hung pipeline, not a busy lock).
pub const MAX_LOCK_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// A lock a command may wait for, as the waiting line and the refusal name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockTarget {
    /// A sled state dir's process lock.
    StateDir(PathBuf),
    /// The simulated clouds' own sled dir (`--sim-dir`).
    SimDir(PathBuf),
    /// A shoot's workspace lock (sled record or PostgreSQL advisory lock).
    Workspace(String),
}

/// What the callback of [`LockWait`] is told when a command starts waiting (and every ten seconds
/// while it still waits). Its `Display` is the line to print.
#[derive(Debug)]
pub struct Waiting<'a> {
    pub target: &'a LockTarget,
    /// Who holds the lock, if it is known.
    pub holder: Option<&'a LockInfo>,
    /// `--lock-timeout`: how long the command waits in all.
    pub timeout: Duration,
}

impl fmt::Display for Waiting<'_> {
    /// `Waiting for the lock on workspace shoot--a--b (held by apply by root@host (pid 1234) since
    /// 2026-11-29T16:42:07Z; --lock-timeout 30s)…`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let holder = match self.holder {
            Some(h) => format!("held by {} by {}@{} (pid {}) since {}", h.operation, h.user, h.host, h.pid, h.created),
            None => "held by another process".to_string(),
        };
        let timeout = show_duration(self.timeout);
        match self.target {
            LockTarget::StateDir(dir) => {
                write!(f, "Waiting for state dir {} ({holder}; --lock-timeout {timeout})…", dir.display())
            }
            LockTarget::SimDir(dir) => {
                write!(f, "Waiting for simulated cloud dir {} ({holder}; --lock-timeout {timeout})…", dir.display())
            }
            LockTarget::Workspace(shoot) => {
                write!(f, "Waiting for the lock on workspace {shoot} ({holder}; --lock-timeout {timeout})…")
            }
        }
    }
}

/// The callback told of each wait ([`Waiting`]).
type Report = Arc<dyn Fn(&Waiting<'_>) + Send + Sync>;

/// How long a command waits for a lock another process holds, and whom it tells. The default refuses
/// at once (Terraform's `-lock-timeout=0s`).
#[derive(Clone, Default)]
pub struct LockWait {
    timeout: Duration,
    report: Option<Report>,
    /// The first and the longest pause between attempts ([`FIRST_PAUSE`], [`LAST_PAUSE`]; shorter in
    /// this module's tests).
    pauses: Option<(Duration, Duration)>,
}

impl fmt::Debug for LockWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockWait").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl LockWait {
    /// Waits up to `timeout` (at most [`MAX_LOCK_TIMEOUT`]) for each lock, calling `report` when it
    /// starts waiting and every ten seconds after.
    pub fn new(timeout: Duration, report: impl Fn(&Waiting<'_>) + Send + Sync + 'static) -> LockWait {
        LockWait { timeout: timeout.min(MAX_LOCK_TIMEOUT), report: Some(Arc::new(report)), pauses: None }
    }

    /// How long a lock is waited for.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs `attempt` until it does not fail for a lock someone else holds ([`StateError::DirInUse`],
    /// [`StateError::Locked`]) or the timeout has passed, pausing between attempts (100 ms doubling
    /// to 1 s, never past the deadline). Any other error is returned at once; so is a held lock when
    /// the timeout is zero. A lock still held at the deadline is [`StateError::LockTimeout`] wrapping
    /// the last refusal.
    pub fn acquire<T>(
        &self,
        target: &LockTarget,
        mut attempt: impl FnMut() -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        let (first, last) = self.pauses.unwrap_or((FIRST_PAUSE, LAST_PAUSE));
        let start = Instant::now();
        let mut pause = first;
        let mut reported: Option<Instant> = None;
        loop {
            let refusal = match attempt() {
                Ok(acquired) => return Ok(acquired),
                Err(e) => e,
            };
            let Some(holder) = refusal.lock_holder() else { return Err(refusal) };
            if self.timeout.is_zero() {
                return Err(refusal);
            }
            let waited = start.elapsed();
            let Some(left) = self.timeout.checked_sub(waited).filter(|left| !left.is_zero()) else {
                return Err(StateError::LockTimeout { waited: self.timeout, refusal: Box::new(refusal) });
            };
            if reported.is_none_or(|at| at.elapsed() >= REPORT_EVERY) {
                if let Some(report) = &self.report {
                    report(&Waiting { target, holder, timeout: self.timeout });
                }
                reported = Some(Instant::now());
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(last);
        }
    }
}

impl StateError {
    /// `Some(holder)` when this is a refusal because someone else holds a lock that goes away when its
    /// holder is done (`Some(None)`: who is not known): what [`LockWait::acquire`] waits out. A sled
    /// workspace lock record ([`LockRelease::Unlock`]) is not: only `trellis state unlock` removes it,
    /// and that needs the state dir the waiting process holds, so waiting could only time out.
    pub fn lock_holder(&self) -> Option<Option<&LockInfo>> {
        match self {
            StateError::DirInUse { holder, .. } => Some(holder.as_ref()),
            StateError::Locked { holder, release: LockRelease::Session, .. } => Some(Some(holder)),
            _ => None,
        }
    }
}

/// A duration as `--lock-timeout` takes it: `30s`, `2m`, `1h 30m`, `1s 500ms`.
pub fn show_duration(d: Duration) -> String {
    match jiff::SignedDuration::try_from(d) {
        Ok(d) if !d.is_zero() => format!("{d:#}"),
        _ => "0s".to_string(),
    }
}

/// Parses a `--lock-timeout` value: a duration with its unit (`30s`, `2m`, `1h30m`, `500ms`; `0` or
/// `0s` for no waiting), at most a day.
pub fn parse_lock_timeout(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let parsed: jiff::SignedDuration =
        text.parse().map_err(|_| format!("'{text}' is not a duration; give one with its unit, e.g. 30s, 2m or 1h"))?;
    let d = Duration::try_from(parsed).map_err(|_| format!("'{text}' is negative; give 0s (the default) or more"))?;
    if d > MAX_LOCK_TIMEOUT {
        return Err(format!("'{text}' is longer than a day; give at most 24h"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn holder() -> LockInfo {
        LockInfo {
            id: "id-1".into(),
            operation: "apply".into(),
            pid: 1234,
            host: "box".into(),
            user: "ci".into(),
            created: "2026-12-02T13:02:11Z".into(),
        }
    }

    fn locked() -> StateError {
        StateError::Locked { shoot: "shoot--a--b".into(), holder: holder(), release: LockRelease::Session }
    }

    /// A wait of `timeout` that records every line it would print, with short pauses.
    fn recording(timeout: Duration) -> (LockWait, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&lines);
        let mut wait = LockWait::new(timeout, move |w| kept.lock().unwrap().push(w.to_string()));
        wait.pauses = Some((Duration::from_millis(1), Duration::from_millis(5)));
        (wait, lines)
    }

    #[test]
    fn a_lock_released_while_waiting_is_taken_after_one_waiting_line() {
        let (wait, lines) = recording(Duration::from_secs(60));
        let mut attempts = 0;
        let target = LockTarget::Workspace("shoot--a--b".into());
        let got = wait.acquire(&target, || {
            attempts += 1;
            if attempts < 4 {
                Err(locked())
            } else {
                Ok("mine")
            }
        });
        assert_eq!(got.unwrap(), "mine");
        assert_eq!(attempts, 4);
        let lines = lines.lock().unwrap();
        assert_eq!(
            *lines,
            ["Waiting for the lock on workspace shoot--a--b (held by apply by ci@box (pid 1234) since \
              2026-12-02T13:02:11Z; --lock-timeout 1m)…"]
        );
    }

    #[test]
    fn without_a_timeout_a_held_lock_is_refused_at_the_first_attempt() {
        let (mut wait, lines) = recording(Duration::ZERO);
        let mut attempts = 0;
        let err = wait.acquire(&LockTarget::StateDir(".trellis".into()), || -> Result<(), _> {
            attempts += 1;
            Err(StateError::DirInUse { dir: ".trellis".into(), holder: None })
        });
        assert!(matches!(err, Err(StateError::DirInUse { .. })), "{err:?}");
        assert_eq!(attempts, 1);
        assert!(lines.lock().unwrap().is_empty());
        wait = LockWait::default();
        assert!(wait.acquire(&LockTarget::Workspace("s".into()), || Err::<(), _>(locked())).is_err());
    }

    #[test]
    fn a_sled_workspace_lock_record_is_not_waited_out() {
        let (wait, lines) = recording(Duration::from_secs(60));
        let mut attempts = 0;
        let err = wait.acquire(&LockTarget::Workspace("shoot--a--b".into()), || -> Result<(), _> {
            attempts += 1;
            Err(StateError::Locked { shoot: "shoot--a--b".into(), holder: holder(), release: LockRelease::Unlock })
        });
        assert!(matches!(err, Err(StateError::Locked { .. })), "{err:?}");
        assert_eq!(attempts, 1, "only `state unlock`, which needs the dir this process holds, removes it");
        assert!(lines.lock().unwrap().is_empty());
    }

    #[test]
    fn other_errors_are_not_waited_out() {
        let (wait, lines) = recording(Duration::from_secs(60));
        let mut attempts = 0;
        let err = wait.acquire(&LockTarget::SimDir("sim".into()), || -> Result<(), _> {
            attempts += 1;
            Err(StateError::Io("disk full".into()))
        });
        assert!(matches!(err, Err(StateError::Io(_))), "{err:?}");
        assert_eq!(attempts, 1);
        assert!(lines.lock().unwrap().is_empty());
    }

    #[test]
    fn a_lock_held_past_the_timeout_is_the_last_refusal_saying_how_long_it_waited() {
        let (wait, lines) = recording(Duration::from_millis(30));
        let err = wait
            .acquire(&LockTarget::SimDir("sim".into()), || -> Result<(), _> {
                Err(StateError::DirInUse { dir: "sim".into(), holder: Some(holder()) })
            })
            .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("state dir sim is in use by another trellis process: apply by ci@box"), "{text}");
        assert!(text.ends_with("; wait for it to finish (waited 30ms)"), "{text}");
        assert!(
            matches!(&err, StateError::LockTimeout { refusal, .. } if matches!(**refusal, StateError::DirInUse { .. }))
        );
        assert_eq!(err.lock_holder(), None, "a timeout is not waited out again");
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1, "one line, not one per attempt: {lines:?}");
        assert_eq!(
            lines[0],
            "Waiting for simulated cloud dir sim (held by apply by ci@box (pid 1234) since 2026-12-02T13:02:11Z; \
             --lock-timeout 30ms)…"
        );
    }

    #[test]
    fn lock_timeouts_parse_as_terraform_writes_them() {
        for (text, secs) in [("0", 0), ("0s", 0), ("30s", 30), ("2m", 120), ("1h", 3600), ("1m30s", 90), ("24h", 86400)]
        {
            assert_eq!(parse_lock_timeout(text), Ok(Duration::from_secs(secs)), "{text}");
        }
        assert_eq!(parse_lock_timeout("500ms"), Ok(Duration::from_millis(500)));
        for bad in ["", "10", "soon", "-5s", "25h", "99999999999999999999h"] {
            assert!(parse_lock_timeout(bad).is_err(), "{bad:?} must be refused");
        }
        assert_eq!(show_duration(Duration::from_secs(30)), "30s");
        assert_eq!(show_duration(Duration::from_secs(120)), "2m");
        assert_eq!(show_duration(Duration::ZERO), "0s");
    }
}
