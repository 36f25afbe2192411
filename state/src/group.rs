//! Group commit: the commits of several workspaces made durable by one flush (see the crate docs,
//! "Durability").
//!
//! A committer stores its version in sled (in memory), then calls [`Group::durable`] with the head
//! record of that version. Commits that arrive while a flush is running wait for the next one; that
//! flush — sled's flush and `fsync` of `db`, then the head records of every workspace of the group
//! appended to the heads journal — is done by the first of them to find no flush running (the leader),
//! and makes all of them durable. Every committer returns only after the flush that covers it.
//!
//! The head records a flush appends are synced by the next flush, at the same time as its `fsync` of
//! `db` (or when the store closes): a commit waits for one device flush, not two in a row. A crash
//! before that sync can lose those head records, which the crash rule accepts for the version right
//! after a workspace's head, and only for that one. So each workspace may have at most one commit
//! whose head record is not durable: a committer takes its workspace with [`Group::begin`] before its
//! transaction, which waits while an earlier commit of it is between its transaction and its durable
//! head record, and, when that commit has returned and only its head record's sync is missing, has the
//! committer run (or join) a flush first ([`Taken::needs_sync`]). So the sync of a workspace's head
//! record is never in the same flush as the `fsync` that makes its next version durable.

use crate::integrity::Head;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex, MutexGuard};

#[derive(Default)]
pub(crate) struct Group {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Number of the group collecting commits now. Groups below `done` are durable (or failed); when
    /// no flush runs, `done == collecting`, and while one runs, it flushes group `collecting - 1`.
    collecting: u64,
    done: u64,
    flushing: bool,
    /// Head records of the collecting group.
    heads: Vec<Head>,
    /// Workspaces with a commit between [`Group::begin`] and its return.
    busy: BTreeSet<String>,
    /// Workspaces whose last commit returned with its head record appended to the journal but not
    /// synced yet; the next flush syncs it.
    unsynced: BTreeSet<String>,
    /// The `unsynced` workspaces the running flush is syncing.
    syncing: BTreeSet<String>,
    /// Groups whose flush failed, with what went wrong.
    failed: BTreeMap<u64, String>,
}

/// A workspace taken with [`Group::begin`]; dropping it lets the next commit of the workspace go on.
pub(crate) struct Taken<'g> {
    group: &'g Group,
    shoot: String,
    /// The previous commit of the workspace returned, but its head record is not synced yet.
    pub(crate) needs_sync: bool,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        let mut st = self.group.lock();
        st.busy.remove(&self.shoot);
        drop(st);
        self.group.changed.notify_all();
    }
}

/// What the leader of a group is asked to do: sync the head records earlier flushes appended (if
/// `sync_heads`), flush the database, and append `heads`.
pub(crate) struct Flush<'a> {
    pub(crate) heads: &'a [Head],
    pub(crate) sync_heads: bool,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A committer that panicked left the state consistent (every change is a single step).
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes `shoot` for one commit, waiting while an earlier commit of it has not returned. When the
    /// head record of the earlier commit is not synced yet, [`Taken::needs_sync`] is set: the caller
    /// must make it durable ([`Group::durable`] without a head) before its transaction.
    pub(crate) fn begin(&self, shoot: &str) -> Taken<'_> {
        let mut st = self.lock();
        while st.busy.contains(shoot) {
            st = self.wait(st);
        }
        let needs_sync = st.unsynced.contains(shoot) || st.syncing.contains(shoot);
        st.busy.insert(shoot.to_string());
        Taken { group: self, shoot: shoot.to_string(), needs_sync }
    }

    /// Returns once everything written to sled before the call is durable and `head` is appended to
    /// the journal (synced by the next flush). `flush` is called by the leader of a group; its error is
    /// every member's.
    pub(crate) fn durable(
        &self,
        head: Option<Head>,
        flush: impl Fn(Flush<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut st = self.lock();
        let mine = st.collecting;
        if let Some(head) = head {
            st.heads.push(head);
        }
        loop {
            if st.done > mine {
                return match st.failed.get(&mine) {
                    Some(e) => Err(e.clone()),
                    None => Ok(()),
                };
            }
            if !st.flushing {
                // No flush runs, so `done == collecting == mine`: this committer leads its own group.
                // Every head record appended so far was appended by an earlier flush: this one syncs it.
                let heads = std::mem::take(&mut st.heads);
                st.syncing = std::mem::take(&mut st.unsynced);
                let sync_heads = !st.syncing.is_empty();
                st.collecting += 1;
                st.flushing = true;
                drop(st);
                // A panic in the flush would leave `flushing` set and every later commit waiting.
                let job = Flush { heads: &heads, sync_heads };
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flush(job))).unwrap_or_else(|_| {
                        Err("writing the state dir to disk failed unexpectedly; plan and apply again".to_string())
                    });
                st = self.lock();
                st.flushing = false;
                st.done = mine + 1;
                let synced = std::mem::take(&mut st.syncing);
                match result {
                    // This group's committers return with their head records appended, not synced.
                    Ok(()) => st.unsynced.extend(heads.into_iter().map(|h| h.shoot)),
                    Err(e) => {
                        // Not known to be synced, nor whether this group's head records were appended:
                        // the next flush syncs the journal.
                        st.unsynced.extend(synced);
                        st.unsynced.extend(heads.into_iter().map(|h| h.shoot));
                        st.failed.insert(mine, e);
                    }
                }
                self.changed.notify_all();
                continue;
            }
            st = self.wait(st);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn head(shoot: &str) -> Head {
        Head { shoot: shoot.into(), lineage: "l".into(), serial: 1, checksum: "c".into() }
    }

    #[test]
    fn a_flush_that_panics_is_an_error_and_later_commits_go_on() {
        let group = Group::default();
        let failed = group.durable(Some(head("a")), |_| panic!("boom"));
        assert!(failed.is_err_and(|e| e.contains("failed unexpectedly")));
        assert_eq!(group.durable(Some(head("a")), |_| Ok(())), Ok(()));
    }

    #[test]
    fn a_failed_flush_fails_every_member_of_its_group_only() {
        let group = Group::default();
        assert_eq!(group.durable(Some(head("a")), |_| Err("disk full".to_string())), Err("disk full".to_string()));
        let flushes = AtomicUsize::new(0);
        let ok = group.durable(Some(head("b")), |job| {
            assert_eq!(job.heads, &[head("b")]);
            flushes.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        assert_eq!(ok, Ok(()));
        assert_eq!(flushes.load(Ordering::SeqCst), 1);

        // Two commits that arrive while a flush runs form the next group: one flush of both head
        // records, whose error both of them get.
        std::thread::scope(|s| {
            let leader = s.spawn(|| {
                group.durable(Some(head("c")), |_| {
                    while group.lock().heads.len() < 2 {
                        std::thread::yield_now();
                    }
                    Ok(())
                })
            });
            while !group.lock().flushing {
                std::thread::yield_now();
            }
            let members: Vec<_> = ["d", "e"]
                .map(|shoot| {
                    let (group, flushes) = (&group, &flushes);
                    s.spawn(move || {
                        group.durable(Some(head(shoot)), |job| {
                            let mut shoots: Vec<&str> = job.heads.iter().map(|h| h.shoot.as_str()).collect();
                            shoots.sort();
                            assert_eq!(shoots, ["d", "e"]);
                            flushes.fetch_add(1, Ordering::SeqCst);
                            Err("disk full".to_string())
                        })
                    })
                })
                .into_iter()
                .collect();
            assert_eq!(leader.join().unwrap(), Ok(()));
            for member in members {
                assert_eq!(member.join().unwrap(), Err("disk full".to_string()));
            }
        });
        assert_eq!(flushes.load(Ordering::SeqCst), 2, "one flush for the group of two");
    }

    #[test]
    fn regression_a_commit_waits_for_one_device_flush_and_the_next_flush_syncs_its_head_record() {
        let group = Group::default();
        let jobs = Mutex::new(Vec::new());
        let flush = |job: Flush<'_>| {
            let shoots: Vec<String> = job.heads.iter().map(|h| h.shoot.clone()).collect();
            jobs.lock().unwrap().push((shoots, job.sync_heads));
            Ok(())
        };
        // A commit of `a` returns after a flush that appends its head record, without a second sync.
        let taken = group.begin("a");
        assert!(!taken.needs_sync);
        group.durable(Some(head("a")), flush).unwrap();
        drop(taken);
        assert_eq!(jobs.lock().unwrap().pop(), Some((vec!["a".to_string()], false)));

        // Its next commit must have that head record synced before its transaction.
        let taken = group.begin("a");
        assert!(taken.needs_sync);
        drop(taken);
        // Any flush syncs it (here a commit of `b`, at the same time as the flush of `b`'s version).
        group.durable(Some(head("b")), flush).unwrap();
        assert_eq!(jobs.lock().unwrap().pop(), Some((vec!["b".to_string()], true)));
        let taken = group.begin("a");
        assert!(!taken.needs_sync, "synced by the flush of b");
        drop(taken);
        assert!(group.begin("b").needs_sync);

        // A failed flush leaves every head record it had to sync or append to the next flush.
        let failed = group.durable(Some(head("c")), |_| Err("disk full".to_string()));
        assert_eq!(failed, Err("disk full".to_string()));
        assert!(group.begin("b").needs_sync);
        assert!(group.begin("c").needs_sync);
        group.durable(None, flush).unwrap();
        assert_eq!(jobs.lock().unwrap().pop(), Some((vec![], true)));
        assert!(!group.begin("b").needs_sync);
        assert!(!group.begin("c").needs_sync);
    }
}
