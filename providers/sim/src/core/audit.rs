//! The audit log: every call a simulated cloud answered, failed and faulted ones included.

use crate::SimError;
use trellis_planner::cloud::Call;

const AUDIT_PREFIX: &str = "audit/";
/// Calls written per sled batch by [`AuditLog::persist`].
const AUDIT_BATCH: usize = 1_000;

/// The calls in memory, how many of them are written to a tree, and the tree each call is written
/// to as it is made ([`AuditLog::keep`]). Public so a cloud binding outside this crate keeps its
/// calls in the same form (`trellis sim audit` reads every binding's audit tree alike).
#[derive(Default)]
pub struct AuditLog {
    calls: Vec<Call>,
    persisted: usize,
    /// [`AuditLog::keep`]'s tree and the sequence number of the next call written to it.
    kept: Option<(sled::Tree, u64)>,
}

impl AuditLog {
    /// Records `call`; a kept log ([`AuditLog::keep`]) also writes it to its tree (not flushed). A
    /// failed write stops keeping: the call stays in memory, for the next [`AuditLog::persist`].
    pub fn push(&mut self, call: Call) {
        self.calls.push(call);
        if let Some((tree, next)) = self.kept.take() {
            if let Ok(next) = self.write(&tree, next) {
                self.kept = Some((tree, next));
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

    /// Appends the calls not persisted yet to `tree` (keys `audit/<20-digit sequence>`, values the
    /// [`Call`] as JSON) in batches of `AUDIT_BATCH`, and flushes them (also when the log is kept
    /// and nothing was left to write: the flush makes the kept calls durable). Returns how many calls
    /// were written.
    pub fn persist(&mut self, tree: &sled::Tree) -> Result<usize, SimError> {
        if self.persisted == self.calls.len() && self.kept.is_none() {
            return Ok(0);
        }
        let before = self.persisted;
        self.write(tree, next_sequence(tree)?)?;
        tree.flush()?;
        Ok(self.persisted - before)
    }

    /// Keeps the log in `tree` from now on: the calls not persisted yet are written now, and every
    /// call as it is recorded ([`AuditLog::push`], under the cloud's lock, so before the call's own
    /// write is flushed), without a flush of its own — a flush of the database makes them durable.
    /// Returns how many calls were written now.
    pub fn keep(&mut self, tree: sled::Tree) -> Result<usize, SimError> {
        let before = self.persisted;
        let next = self.write(&tree, next_sequence(&tree)?)?;
        self.kept = Some((tree, next));
        Ok(self.persisted - before)
    }

    /// Writes the calls not persisted yet to `tree` from sequence number `next` on, in batches of
    /// [`AUDIT_BATCH`] (not flushed); the sequence number after them.
    fn write(&mut self, tree: &sled::Tree, next: u64) -> Result<u64, SimError> {
        // In batches of a bounded size: sled keeps every version of a node a batch replaces until the
        // batch ends, so one batch of a fleet's tens of thousands of calls doubled the apply's peak memory.
        let mut next = next;
        while self.persisted < self.calls.len() {
            let chunk = &self.calls[self.persisted..self.calls.len().min(self.persisted + AUDIT_BATCH)];
            let mut batch = sled::Batch::default();
            for (i, call) in chunk.iter().enumerate() {
                let key = format!("{AUDIT_PREFIX}{:020}", next + i as u64);
                batch.insert(key.as_bytes(), serde_json::to_vec(call).expect("a call serialises"));
            }
            tree.apply_batch(batch)?;
            next += chunk.len() as u64;
            self.persisted += chunk.len();
        }
        Ok(next)
    }
}

/// The sequence number after the last call kept in `tree` (0 for none).
fn next_sequence(tree: &sled::Tree) -> Result<u64, SimError> {
    match tree.scan_prefix(AUDIT_PREFIX).keys().next_back().transpose()? {
        Some(k) => {
            let text = String::from_utf8_lossy(&k[AUDIT_PREFIX.len()..]).into_owned();
            let last = text.parse::<u64>().map_err(|e| SimError::Corrupt {
                key: String::from_utf8_lossy(&k).into_owned(),
                detail: format!("not an audit sequence number: {e}"),
            })?;
            Ok(last + 1)
        }
        None => Ok(0),
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

    /// A kept log (`trellis sim serve`) writes each call to the tree as it is recorded, after what
    /// the tree held, so a flush of the database — not the end of the command — makes it durable; a
    /// later persist writes nothing twice.
    #[test]
    fn a_kept_log_writes_each_call_as_it_is_recorded() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("audit").unwrap();
        let mut earlier = AuditLog::default();
        earlier.push(call(0));
        earlier.persist(&tree).unwrap();
        let mut log = AuditLog::default();
        log.push(call(1));
        assert_eq!(log.keep(tree.clone()).unwrap(), 1, "what was recorded before is written at once");
        log.push(call(2));
        assert_eq!(persisted(&tree).unwrap(), [call(0), call(1), call(2)], "written as recorded, in order");
        assert_eq!(log.persist(&tree).unwrap(), 0, "nothing written twice");
        assert_eq!(persisted(&tree).unwrap().len(), 3);
    }
}
