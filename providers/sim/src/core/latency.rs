//! Simulated latency: how long a call takes.

use crate::core::faults::Faults;
use std::time::Duration;
use trellis_planner::cloud::Op;

/// The delay of a call: `latency`, plus `write_latency` for a write (the long-running operation).
pub(crate) fn delay(faults: &Faults, op: Op) -> Duration {
    match op {
        Op::Read => faults.latency,
        Op::Write => faults.latency + faults.write_latency,
    }
}
