//! Group commit: the commits of several workspaces stored and made durable together (see the crate
//! docs, "Durability").
//!
//! A committer prepares its version (reads what is stored, checks it, computes the changed records),
//! then calls [`Group::durable`] with it. Commits that arrive while a flush is running wait for the
//! next one; that flush is run by the first of them to find no flush running (the leader): one sled
//! transaction stores the versions of every member of the group, then sled's flush and `fdatasync`
//! of `db`, then the head records of the group appended to `heads.log` in one write and one
//! `fdatasync`. sled seals and writes its log buffer (two synchronous writes) around every transaction
//! or batch, so one transaction per group instead of one per commit is what makes a group cheap.
//! Every committer returns only after the flush that covers its commit.
//!
//! The crash rule (a head may name only the version right before the stored one) needs each
//! workspace to have at most one commit between its sled transaction and its head record: a
//! committer takes its workspace with [`Group::begin`] before the transaction and lets go when its
//! commit is durable (or failed), so a second commit of the same workspace waits for the first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a leader waits at most for the committers on their way (see [`Group::durable`]): well
/// under what the flush costs (a sled flush and two `fdatasync`s, ~1.5 ms here), so a group that waits
/// in vain costs little, and one that gathers saves a whole flush per member.
const GATHER: Duration = Duration::from_millis(1);

pub(crate) struct Group<T> {
    state: Mutex<State<T>>,
    /// Signalled when a flush starts or ends: what committers waiting for their group's flush wait for.
    changed: Condvar,
    /// Signalled when a workspace is let go: what [`Group::begin`] waits for. Apart from `changed`, so
    /// that the end of every commit does not wake every committer waiting for a flush (a context
    /// switch each, ~100,000 of them for a 2,000-shoot apply).
    released: Condvar,
    /// Signalled, while a leader gathers its group, when a member stages or a workspace is let go.
    arrived: Condvar,
    /// How long a leader waits for the committers on their way: [`GATHER`].
    gather: Duration,
}

impl<T> Default for Group<T> {
    fn default() -> Self {
        Group {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            released: Condvar::new(),
            arrived: Condvar::new(),
            gather: GATHER,
        }
    }
}

struct State<T> {
    /// Number of the group collecting commits now. Groups below `done` are durable (or failed); when
    /// no flush runs, `done == collecting`, and while one runs, it flushes group `collecting - 1`.
    collecting: u64,
    done: u64,
    flushing: bool,
    /// A leader is waiting for the committers on their way before it flushes.
    gathering: bool,
    /// What the members of the collecting group hand to its flush, by ticket.
    staged: Vec<(u64, T)>,
    /// The ticket the next member gets.
    next_ticket: u64,
    /// Workspaces with a commit between its transaction and its head record.
    busy: BTreeSet<String>,
    /// Groups whose flush failed: what went wrong, and whether their members' versions were stored.
    failed: BTreeMap<u64, (String, bool)>,
    /// Members whose staged version the flush refused (it was not stored), by ticket, with the reason;
    /// each member takes its own entry out.
    refused: BTreeMap<u64, String>,
}

impl<T> Default for State<T> {
    fn default() -> Self {
        State {
            collecting: 0,
            done: 0,
            flushing: false,
            gathering: false,
            staged: Vec::new(),
            next_ticket: 0,
            busy: BTreeSet::new(),
            failed: BTreeMap::new(),
            refused: BTreeMap::new(),
        }
    }
}

/// What the flush of one group did.
#[derive(Debug, Default)]
pub(crate) struct Flushed {
    /// Staged members whose version was not stored, by ticket, with the reason.
    pub refused: BTreeMap<u64, String>,
    /// What went wrong for the whole group, and whether the versions it did not refuse were stored.
    pub failed: Option<(String, bool)>,
}

/// Why a member's commit is not durable.
#[derive(Debug, PartialEq)]
pub(crate) enum NotDurable {
    /// Its staged version was not stored (the flush refused it): nothing changed.
    Refused(String),
    /// Its group's flush failed; `stored`: its version is in the database (not necessarily durable).
    Failed { message: String, stored: bool },
}

/// A workspace taken with [`Group::begin`]; dropping it lets the next commit of the workspace go on.
pub(crate) struct Taken<'g, T> {
    group: &'g Group<T>,
    shoot: String,
}

impl<T> Drop for Taken<'_, T> {
    fn drop(&mut self) {
        let mut st = self.group.lock();
        st.busy.remove(&self.shoot);
        let gathering = st.gathering;
        drop(st);
        self.group.released.notify_all();
        if gathering {
            self.group.arrived.notify_one();
        }
    }
}

impl<T> Group<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A committer that panicked left the state consistent (every change is a single step).
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(&self, st: MutexGuard<'a, State<T>>) -> MutexGuard<'a, State<T>> {
        self.changed.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes `shoot` for one commit, waiting while an earlier commit of it is not durable yet.
    pub(crate) fn begin(&self, shoot: &str) -> Taken<'_, T> {
        let mut st = self.lock();
        while st.busy.contains(shoot) {
            st = self.released.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        st.busy.insert(shoot.to_string());
        Taken { group: self, shoot: shoot.to_string() }
    }

    /// Returns once `staged` (a version to store, or a head record of one stored already) and
    /// everything written to sled before the call are durable. `flush` is called by the leader of a
    /// group with everything its members staged; it stores and flushes them all at once, and its
    /// failure is every member's.
    pub(crate) fn durable(
        &self,
        staged: Option<T>,
        flush: impl FnOnce(Vec<(u64, T)>) -> Flushed,
    ) -> Result<(), NotDurable> {
        let mut st = self.lock();
        let mine = st.collecting;
        let ticket = staged.map(|staged| {
            let ticket = st.next_ticket;
            st.next_ticket += 1;
            st.staged.push((ticket, staged));
            ticket
        });
        if st.gathering {
            self.arrived.notify_one();
        }
        let mut flush = Some(flush);
        loop {
            if st.done > mine {
                if let Some(reason) = ticket.and_then(|t| st.refused.remove(&t)) {
                    return Err(NotDurable::Refused(reason));
                }
                return match st.failed.get(&mine) {
                    Some((message, stored)) => Err(NotDurable::Failed { message: message.clone(), stored: *stored }),
                    None => Ok(()),
                };
            }
            if !st.flushing {
                // No flush runs, so `done == collecting == mine`: this committer leads its own group.
                // Committers on their way — they have begun a commit (`Group::begin`) but not staged
                // it yet — join it rather than wait for the next flush, for at most `GATHER`: with
                // `--parallelism` N, a group holds up to N commits instead of those that happened to
                // arrive during the previous flush (issue #27: a flush per group is the apply's cost).
                st.flushing = true;
                st.gathering = true;
                let deadline = Instant::now() + self.gather;
                while st.busy.len() > st.staged.len() {
                    let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
                    st = self.arrived.wait_timeout(st, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
                }
                st.gathering = false;
                let staged = std::mem::take(&mut st.staged);
                st.collecting += 1;
                drop(st);
                let flush = flush.take().expect("a committer leads at most one group: its own");
                // A panic in the flush would leave `flushing` set and every later commit waiting.
                let flushed =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flush(staged))).unwrap_or_else(|_| {
                        Flushed {
                            refused: BTreeMap::new(),
                            failed: Some((
                                "writing the state dir to disk failed unexpectedly; plan and apply again".to_string(),
                                false,
                            )),
                        }
                    });
                st = self.lock();
                st.flushing = false;
                st.done = mine + 1;
                st.refused.extend(flushed.refused);
                if let Some(failed) = flushed.failed {
                    st.failed.insert(mine, failed);
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

    fn failed(message: &str) -> Flushed {
        Flushed { refused: BTreeMap::new(), failed: Some((message.to_string(), true)) }
    }

    fn shoots(staged: &[(u64, &'static str)]) -> Vec<&'static str> {
        let mut shoots: Vec<&str> = staged.iter().map(|(_, s)| *s).collect();
        shoots.sort();
        shoots
    }

    /// A second commit of a workspace waits until the first lets it go (and is woken then, by its own
    /// condvar); commits of other workspaces and flushes go on meanwhile.
    #[test]
    fn a_second_commit_of_a_workspace_waits_for_the_first_to_let_go() {
        let group = Group::<&str>::default();
        let first = group.begin("a");
        let second_began = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let second = s.spawn(|| {
                let taken = group.begin("a");
                second_began.fetch_add(1, Ordering::SeqCst);
                drop(taken);
            });
            let other = group.begin("b");
            assert_eq!(group.durable(Some("b"), |_| Flushed::default()), Ok(()));
            drop(other);
            assert_eq!(second_began.load(Ordering::SeqCst), 0, "the second commit of `a` waits");
            drop(first);
            second.join().unwrap();
        });
        assert_eq!(second_began.load(Ordering::SeqCst), 1);
        assert!(group.lock().busy.is_empty());
    }

    /// Issue #27: a committer that has begun its commit when the leader starts its flush is in that
    /// flush (one transaction, one sync for both), not in the next one.
    #[test]
    fn regression_a_leader_gathers_the_committers_on_their_way_into_its_group() {
        let group = Group::<&str> { gather: Duration::from_secs(60), ..Group::default() };
        let flushes = Mutex::new(Vec::new());
        let on_its_way = group.begin("b");
        std::thread::scope(|s| {
            let leader = s.spawn(|| {
                let _taken = group.begin("a");
                group.durable(Some("a"), |staged| {
                    flushes.lock().unwrap().push(shoots(&staged));
                    Flushed::default()
                })
            });
            while !group.lock().gathering {
                std::thread::yield_now();
            }
            let joined = group.durable(Some("b"), |staged| {
                flushes.lock().unwrap().push(shoots(&staged));
                Flushed::default()
            });
            assert_eq!(joined, Ok(()));
            drop(on_its_way);
            assert_eq!(leader.join().unwrap(), Ok(()));
        });
        assert_eq!(*flushes.lock().unwrap(), [vec!["a", "b"]], "one flush of both");
    }

    #[test]
    fn a_flush_that_panics_is_an_error_and_later_commits_go_on() {
        let group = Group::<&str>::default();
        let failed = group.durable(Some("a"), |_| panic!("boom"));
        assert!(
            matches!(failed, Err(NotDurable::Failed { message, stored: false }) if message.contains("failed unexpectedly"))
        );
        assert_eq!(group.durable(Some("a"), |_| Flushed::default()), Ok(()));
    }

    #[test]
    fn a_refused_member_gets_its_reason_and_the_others_are_durable() {
        let group = Group::<&str>::default();
        let refused = group.durable(Some("a"), |staged| Flushed {
            refused: staged.iter().map(|(t, _)| (*t, "changed".to_string())).collect(),
            failed: None,
        });
        assert_eq!(refused, Err(NotDurable::Refused("changed".to_string())));
        assert_eq!(group.durable(Some("b"), |_| Flushed::default()), Ok(()));
    }

    #[test]
    fn a_failed_flush_fails_every_member_of_its_group_only() {
        let group = Group::<&str>::default();
        let disk_full = Err(NotDurable::Failed { message: "disk full".to_string(), stored: true });
        assert_eq!(group.durable(Some("a"), |_| failed("disk full")), disk_full);
        let flushes = AtomicUsize::new(0);
        let ok = group.durable(Some("b"), |staged| {
            assert_eq!(shoots(&staged), ["b"]);
            flushes.fetch_add(1, Ordering::SeqCst);
            Flushed::default()
        });
        assert_eq!(ok, Ok(()));
        assert_eq!(flushes.load(Ordering::SeqCst), 1);

        // Two commits that arrive while a flush runs form the next group: one flush (one transaction)
        // of both versions, whose error both of them get.
        std::thread::scope(|s| {
            let leader = s.spawn(|| {
                group.durable(Some("c"), |_| {
                    while group.lock().staged.len() < 2 {
                        std::thread::yield_now();
                    }
                    Flushed::default()
                })
            });
            while !group.lock().flushing {
                std::thread::yield_now();
            }
            let members: Vec<_> = ["d", "e"]
                .map(|shoot| {
                    let (group, flushes) = (&group, &flushes);
                    s.spawn(move || {
                        group.durable(Some(shoot), |staged| {
                            assert_eq!(shoots(&staged), ["d", "e"]);
                            flushes.fetch_add(1, Ordering::SeqCst);
                            failed("disk full")
                        })
                    })
                })
                .into_iter()
                .collect();
            assert_eq!(leader.join().unwrap(), Ok(()));
            for member in members {
                assert_eq!(member.join().unwrap(), disk_full);
            }
        });
        assert_eq!(flushes.load(Ordering::SeqCst), 2, "one flush for the group of two");
    }
}
