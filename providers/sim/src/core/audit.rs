//! The audit log: every call a simulated cloud answered, failed and faulted ones included.

use crate::SimError;
use trellis_planner::cloud::Call;

const AUDIT_PREFIX: &str = "audit/";
/// Calls written per sled batch by [`AuditLog::persist`].
const AUDIT_BATCH: usize = 1_000;

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
    /// [`Call`] as JSON) in batches of [`AUDIT_BATCH`], and flushes them. Returns how many calls were written.
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
        // In batches of a bounded size: sled keeps every version of a node a batch replaces until the
        // batch ends, so one batch of a fleet's tens of thousands of calls doubled the apply's peak memory.
        for (n, chunk) in calls.chunks(AUDIT_BATCH).enumerate() {
            let mut batch = sled::Batch::default();
            for (i, call) in chunk.iter().enumerate() {
                let key = format!("{AUDIT_PREFIX}{:020}", next + (n * AUDIT_BATCH + i) as u64);
                batch.insert(key.as_bytes(), serde_json::to_vec(call).expect("a call serialises"));
            }
            tree.apply_batch(batch)?;
        }
        tree.flush()?;
        let n = calls.len();
        self.persisted += n;
        Ok(n)
    }
}

/// The calls [`AuditLog::persist`] wrote to `tree`, oldest first; a value that is not a call is
/// [`SimError::Corrupt`] naming its key.
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

    /// A fleet's audit log is written in several batches (bounded memory): every call, in order, under
    /// consecutive keys, and a later persist continues after the last one.
    #[test]
    fn calls_persisted_in_several_batches_keep_their_order_and_numbering() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("audit").unwrap();
        let mut log = AuditLog::default();
        let first = 2 * AUDIT_BATCH + 7;
        (0..first).for_each(|n| log.push(call(n)));
        assert_eq!(log.persist(&tree).unwrap(), first);
        (first..first + 3).for_each(|n| log.push(call(n)));
        assert_eq!(log.persist(&tree).unwrap(), 3);
        let stored: Vec<(String, String)> = tree
            .iter()
            .map(|item| {
                let (k, v) = item.unwrap();
                let call: serde_json::Value = serde_json::from_slice(&v).unwrap();
                (String::from_utf8(k.to_vec()).unwrap(), call["target"].as_str().unwrap().to_string())
            })
            .collect();
        assert_eq!(stored.len(), first + 3);
        assert_eq!(persisted(&tree).unwrap(), log.calls(), "read back as written, in order");
        for (n, (key, target)) in stored.iter().enumerate() {
            assert_eq!(key, &format!("audit/{n:020}"));
            assert_eq!(target, &format!("/t/{n}"));
        }
    }
}
