//! Latency and injected faults.
//!
//! Each call is checked against the fault rules in order when it arrives. Every rule counts the calls
//! it matches; a rule fires on a matching call when it has matched at least `nth` calls (1-based;
//! `None` means from the first) and has fired fewer than `times` times, unless an earlier rule already
//! fired on that call. Counting starts when the faults are installed ([`crate::ArmSim::set_faults`]
//! resets it), so `Faults::fail_call(n, …)` fails the n-th call made after that, exactly once.

use std::time::Duration;
use trellis_planner::cloud::{CloudError, Op};

/// What an injected fault does to a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 429 with a `Retry-After`; the request is not applied.
    Throttle { retry_after: Duration },
    /// HTTP 500; the request is not applied.
    ServerError,
    /// HTTP 403 `AuthorizationFailed`: the caller lost the permission (e.g. revoked mid-life); not applied.
    Forbidden,
    /// The caller sees a timeout; the request is not applied (audit status 408).
    Timeout,
    /// The request is applied (a write takes effect) but the caller sees a timeout; the audit log
    /// records the status the cloud answered.
    TimeoutAfterApply,
    /// A long-running operation (a resource-group delete, which removes one resource per step) is
    /// accepted, and its caller stops waiting after `after_steps` steps and sees a timeout (audit
    /// status 408) — as when trellis is interrupted while waiting. The simulated cloud advances an
    /// operation only while its caller waits, so it is left half done (a resource group `Deleting`
    /// with resources left), persisted as such; a later call resumes it. On any other call it acts
    /// as [`Fault::TimeoutAfterApply`].
    Interrupted { after_steps: usize },
}

/// How a simulated cloud words the faults it answers in its own API's terms (ARM, GCE, DNS differ
/// only in these).
#[derive(Clone, Copy, Debug)]
pub struct FaultWording {
    /// The status and message of [`Fault::ServerError`].
    pub server_status: u16,
    pub server_message: &'static str,
    /// The code and message of [`Fault::Forbidden`] (status 403).
    pub forbidden_code: &'static str,
    pub forbidden_message: &'static str,
}

impl Fault {
    /// The answer of a fault that keeps the request from being applied, with its audit status;
    /// `None` for the faults that let the request through ([`Fault::TimeoutAfterApply`],
    /// [`Fault::Interrupted`]).
    pub fn refusal(&self, target: &str, wording: &FaultWording) -> Option<(CloudError, u16)> {
        let target = target.to_string();
        match self {
            Fault::Throttle { retry_after } => {
                Some((CloudError::Throttled { target, retry_after: Some(*retry_after) }, 429))
            }
            Fault::ServerError => Some((
                CloudError::Server {
                    target,
                    status: wording.server_status,
                    message: wording.server_message.to_string(),
                },
                wording.server_status,
            )),
            Fault::Forbidden => Some((
                CloudError::Rejected {
                    target,
                    status: 403,
                    code: wording.forbidden_code.to_string(),
                    message: wording.forbidden_message.to_string(),
                },
                403,
            )),
            Fault::Timeout => Some((CloudError::Timeout { target }, 408)),
            Fault::TimeoutAfterApply | Fault::Interrupted { .. } => None,
        }
    }
}

/// Which calls a rule applies to; `None` fields match anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matcher {
    /// `GET`, `PUT`, `DELETE` or `LIST` (case-insensitive).
    pub method: Option<String>,
    /// A substring of the call's target, compared case-insensitively (ARM ids are).
    pub target_contains: Option<String>,
    pub op: Option<Op>,
}

impl Matcher {
    /// Matches every call.
    pub fn any() -> Matcher {
        Matcher::default()
    }

    pub fn method(method: &str) -> Matcher {
        Matcher { method: Some(method.to_string()), ..Matcher::default() }
    }

    pub fn target_contains(fragment: &str) -> Matcher {
        Matcher { target_contains: Some(fragment.to_string()), ..Matcher::default() }
    }

    pub fn op(op: Op) -> Matcher {
        Matcher { op: Some(op), ..Matcher::default() }
    }

    pub fn matches(&self, method: &str, target: &str, op: Op) -> bool {
        self.method.as_deref().is_none_or(|m| m.eq_ignore_ascii_case(method))
            && self
                .target_contains
                .as_deref()
                .is_none_or(|f| target.to_ascii_lowercase().contains(&f.to_ascii_lowercase()))
            && self.op.is_none_or(|o| o == op)
    }
}

/// One fault rule: see the module documentation for when it fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    pub matcher: Matcher,
    /// Fire from the n-th matching call on (1-based; 0 counts as 1); `None`: from the first.
    pub nth: Option<usize>,
    /// How many times the rule fires at most.
    pub times: usize,
    pub fault: Fault,
}

impl FaultRule {
    /// Fires on every matching call.
    pub fn always(matcher: Matcher, fault: Fault) -> FaultRule {
        FaultRule { matcher, nth: None, times: usize::MAX, fault }
    }

    /// Fires once, on the n-th matching call (1-based).
    pub fn once_at(matcher: Matcher, nth: usize, fault: Fault) -> FaultRule {
        FaultRule { matcher, nth: Some(nth), times: 1, fault }
    }

    /// The same rule, firing at most `times` times.
    pub fn times(self, times: usize) -> FaultRule {
        FaultRule { times, ..self }
    }
}

/// Latency and fault rules of a simulated cloud.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Added to every call (`tokio::time::sleep`, so paused test time skips it).
    pub latency: Duration,
    /// Added to every PUT and DELETE on top of `latency`: the long-running operation.
    pub write_latency: Duration,
    pub rules: Vec<FaultRule>,
}

impl Faults {
    /// No latency, no faults.
    pub fn none() -> Faults {
        Faults::default()
    }

    /// Fails the n-th call (1-based) made after these faults are installed, once.
    pub fn fail_call(n: usize, fault: Fault) -> Faults {
        Faults::none().with_rule(FaultRule::once_at(Matcher::any(), n, fault))
    }

    pub fn with_rule(mut self, rule: FaultRule) -> Faults {
        self.rules.push(rule);
        self
    }

    pub fn with_latency(self, latency: Duration, write_latency: Duration) -> Faults {
        Faults { latency, write_latency, ..self }
    }
}

/// The installed faults and their counters.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    faults: Faults,
    matched: Vec<usize>,
    fired: Vec<usize>,
}

impl FaultState {
    pub fn new(faults: Faults) -> FaultState {
        let n = faults.rules.len();
        FaultState { faults, matched: vec![0; n], fired: vec![0; n] }
    }

    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Counts the call and returns the fault to inject, if any.
    pub fn decide(&mut self, method: &str, target: &str, op: Op) -> Option<Fault> {
        let mut chosen = None;
        for (i, rule) in self.faults.rules.iter().enumerate() {
            if !rule.matcher.matches(method, target, op) {
                continue;
            }
            self.matched[i] += 1;
            if chosen.is_none() && self.matched[i] >= rule.nth.unwrap_or(1).max(1) && self.fired[i] < rule.times {
                self.fired[i] += 1;
                chosen = Some(rule.fault.clone());
            }
        }
        chosen
    }

    /// How many faults have been injected since these faults were installed.
    pub fn fired(&self) -> usize {
        self.fired.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_rule_fires_once_on_the_nth_matching_call() {
        let mut s = FaultState::new(Faults::none().with_rule(FaultRule::once_at(
            Matcher::method("put"),
            2,
            Fault::ServerError,
        )));
        let got: Vec<Option<Fault>> =
            ["GET", "PUT", "GET", "PUT", "PUT"].iter().map(|m| s.decide(m, "/x", Op::Read)).collect();
        assert_eq!(got, vec![None, None, None, Some(Fault::ServerError), None]);
        assert_eq!(s.fired(), 1);
    }

    #[test]
    fn earlier_rules_win_and_times_bounds_firing() {
        let faults = Faults::none()
            .with_rule(FaultRule::always(Matcher::target_contains("SUBNETS"), Fault::Timeout).times(2))
            .with_rule(FaultRule::always(Matcher::any(), Fault::ServerError).times(1));
        let mut s = FaultState::new(faults);
        assert_eq!(s.decide("GET", "/v/subnets/a", Op::Read), Some(Fault::Timeout));
        assert_eq!(s.decide("GET", "/v/subnets/a", Op::Read), Some(Fault::Timeout));
        assert_eq!(s.decide("GET", "/v/subnets/a", Op::Read), Some(Fault::ServerError));
        assert_eq!(s.decide("GET", "/v/subnets/a", Op::Read), None);
    }
}
