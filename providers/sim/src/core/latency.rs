//! Simulated time: how long a call takes, and which writes are in flight meanwhile.

use crate::core::faults::Faults;
use std::collections::BTreeMap;
use std::time::Duration;
use trellis_planner::cloud::Op;

/// The delay of a call: `latency`, plus `write_latency` for a write (the long-running operation).
pub(crate) fn delay(faults: &Faults, op: Op) -> Duration {
    match op {
        Op::Read => faults.latency,
        Op::Write => faults.latency + faults.write_latency,
    }
}

/// The writes in flight (between arrival and completion, i.e. during their latency), by
/// serialisation scope: a cloud module names the scope a write locks (ARM: the VNet of a VNet or
/// subnet write); a second write into a busy scope is refused by the module's rule.
#[derive(Default)]
pub(crate) struct InFlight {
    /// scope → the number of the operation holding it.
    busy: BTreeMap<String, u64>,
    /// Operations started so far (numbers the operations, for messages).
    started: u64,
}

impl InFlight {
    /// The operation holding `scope`, if any.
    pub fn holder(&self, scope: &str) -> Option<u64> {
        self.busy.get(scope).copied()
    }

    /// Marks `scope` busy; returns the new operation's number.
    pub fn start(&mut self, scope: &str) -> u64 {
        self.started += 1;
        self.busy.insert(scope.to_string(), self.started);
        self.started
    }

    pub fn finish(&mut self, scope: &str) {
        self.busy.remove(scope);
    }
}
