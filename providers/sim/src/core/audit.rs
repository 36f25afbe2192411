//! The audit log: every call a simulated cloud answered, failed and faulted ones included.

use crate::SimError;
use trellis_planner::cloud::Call;

const AUDIT_PREFIX: &str = "audit/";

/// The calls in memory, and how many of them [`AuditLog::persist`] has written.
#[derive(Default)]
pub(crate) struct AuditLog {
    calls: Vec<Call>,
    persisted: usize,
}

impl AuditLog {
    pub fn push(&mut self, call: Call) {
        self.calls.push(call);
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

    /// Appends the calls not persisted yet to `tree` (keys `audit/<20-digit sequence>`, values the
    /// [`Call`] as JSON) in one batch, and flushes it. Returns how many calls were written.
    pub fn persist(&mut self, tree: &sled::Tree) -> Result<usize, SimError> {
        let calls = &self.calls[self.persisted..];
        if calls.is_empty() {
            return Ok(0);
        }
        let next = match tree.scan_prefix(AUDIT_PREFIX).keys().next_back().transpose()? {
            Some(k) => {
                let text = String::from_utf8_lossy(&k[AUDIT_PREFIX.len()..]).into_owned();
                text.parse::<u64>().map_err(|e| SimError::Corrupt {
                    key: String::from_utf8_lossy(&k).into_owned(),
                    detail: format!("not an audit sequence number: {e}"),
                })? + 1
            }
            None => 0,
        };
        let mut batch = sled::Batch::default();
        for (i, call) in calls.iter().enumerate() {
            let key = format!("{AUDIT_PREFIX}{:020}", next + i as u64);
            batch.insert(key.as_bytes(), serde_json::to_vec(call).expect("a call serialises"));
        }
        tree.apply_batch(batch)?;
        tree.flush()?;
        let n = calls.len();
        self.persisted += n;
        Ok(n)
    }
}
