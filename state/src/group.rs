//! Group commit: the commits of several workspaces made durable by one flush (see the crate docs,
//! "Durability").
//!
//! A committer stores its version in sled (in memory), then calls [`Group::durable`] with the head
//! record of that version. Commits that arrive while a flush is running wait for the next one; that
//! flush — sled's flush and `fsync` of `db`, then the head records of every workspace of the group and
//! one `fsync` of `heads/` — is done by the first of them to find no flush running (the leader), and
//! makes all of them durable. Every committer returns only after the flush that covers its commit.
//!
//! The crash rule (a head may name only the version right before the stored one) needs each
//! workspace to have at most one commit between its sled transaction and its head record: a
//! committer takes its workspace with [`Group::begin`] before the transaction and lets go when its
//! commit is durable (or failed), so a second commit of the same workspace waits for the first.

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
    /// Workspaces with a commit between its transaction and its head record.
    busy: BTreeSet<String>,
    /// Groups whose flush failed, with what went wrong.
    failed: BTreeMap<u64, String>,
}

/// A workspace taken with [`Group::begin`]; dropping it lets the next commit of the workspace go on.
pub(crate) struct Taken<'g> {
    group: &'g Group,
    shoot: String,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        let mut st = self.group.lock();
        st.busy.remove(&self.shoot);
        drop(st);
        self.group.changed.notify_all();
    }
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A committer that panicked left the state consistent (every change is a single step).
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes `shoot` for one commit, waiting while an earlier commit of it is not durable yet.
    pub(crate) fn begin(&self, shoot: &str) -> Taken<'_> {
        let mut st = self.lock();
        while st.busy.contains(shoot) {
            st = self.wait(st);
        }
        st.busy.insert(shoot.to_string());
        Taken { group: self, shoot: shoot.to_string() }
    }

    /// Returns once everything written to sled before the call, and `head`, are durable. `flush` is
    /// called by the leader of a group with the group's head records; its error is every member's.
    pub(crate) fn durable(
        &self,
        head: Option<Head>,
        flush: impl Fn(&[Head]) -> Result<(), String>,
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
                let heads = std::mem::take(&mut st.heads);
                st.collecting += 1;
                st.flushing = true;
                drop(st);
                // A panic in the flush would leave `flushing` set and every later commit waiting.
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flush(&heads))).unwrap_or_else(|_| {
                        Err("writing the state dir to disk failed unexpectedly; plan and apply again".to_string())
                    });
                st = self.lock();
                st.flushing = false;
                st.done = mine + 1;
                if let Err(e) = result {
                    st.failed.insert(mine, e);
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
        let ok = group.durable(Some(head("b")), |heads| {
            assert_eq!(heads, &[head("b")]);
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
                        group.durable(Some(head(shoot)), |heads| {
                            let mut shoots: Vec<&str> = heads.iter().map(|h| h.shoot.as_str()).collect();
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
}
