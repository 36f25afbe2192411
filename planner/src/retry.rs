//! Retry with exponential backoff for transient cloud errors (429, 5xx, timeouts), honouring
//! Retry-After within bounds.
//!
//! Exponential waits have full jitter (each drawn at random between zero and its bound, as AWS'
//! "Exponential Backoff And Jitter" describes), so the shoots of a throttled fleet do not retry in
//! lockstep. Every wait is bounded: an exponential backoff by [`RetryPolicy::max_backoff`], a server's
//! Retry-After by [`RetryPolicy::max_retry_after`] (and never shorter than the first backoff, so a
//! `Retry-After: 0` storm is not retried in a tight loop); and one call's waits together by
//! [`RetryPolicy::budget`]. When the next wait would go past the budget, or the attempts are used
//! up, the call fails with its last answer.

use crate::cloud::CloudError;
use std::future::Future;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// The longest wait a server's `Retry-After` is obeyed for; a longer one waits this long.
    pub max_retry_after: Duration,
    /// The most time one call spends waiting between its attempts, all waits together.
    pub budget: Duration,
    /// Draw each exponential wait at random below its bound ([`RetryPolicy::backoff`]); a server's
    /// `Retry-After` is obeyed as it is.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    /// 6 attempts, backoff 200 ms doubling to 10 s, `Retry-After` obeyed up to 60 s, at most 2 min
    /// of waiting per call.
    fn default() -> Self {
        RetryPolicy {
            attempts: 6,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(60),
            budget: Duration::from_secs(120),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// No waiting between attempts (tests).
    pub fn immediate(attempts: u32) -> RetryPolicy {
        RetryPolicy {
            attempts,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            max_retry_after: Duration::ZERO,
            budget: Duration::ZERO,
            jitter: false,
        }
    }

    /// The longest wait before attempt `n + 1` after `n` failed attempts: the server's `Retry-After`
    /// between [`RetryPolicy::initial_backoff`] and [`RetryPolicy::max_retry_after`], else the
    /// exponential backoff up to [`RetryPolicy::max_backoff`].
    pub fn backoff(&self, failed: u32, err: &CloudError) -> Duration {
        if let Some(after) = err.retry_after() {
            return after.min(self.max_retry_after).max(self.initial_backoff.min(self.max_retry_after));
        }
        let factor = 2u32.saturating_pow(failed.saturating_sub(1));
        self.initial_backoff.saturating_mul(factor).min(self.max_backoff)
    }

    /// The wait before attempt `n + 1`: a server's `Retry-After` as [`RetryPolicy::backoff`] bounds
    /// it; an exponential backoff drawn uniformly between zero and its bound when
    /// [`RetryPolicy::jitter`] is set.
    pub fn wait(&self, failed: u32, err: &CloudError) -> Duration {
        let bound = self.backoff(failed, err);
        if self.jitter && err.retry_after().is_none() {
            bound.mul_f64(fastrand::f64())
        } else {
            bound
        }
    }

    /// Runs `call` until it succeeds, fails for good, the attempts are used up, or the next wait
    /// would take its waiting past the budget; then the last answer is the error.
    pub async fn run<T, F, Fut>(&self, mut call: F) -> Result<T, CloudError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, CloudError>>,
    {
        let mut failed = 0;
        let mut waited = Duration::ZERO;
        loop {
            match call().await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_transient() && failed + 1 < self.attempts => {
                    failed += 1;
                    let wait = self.wait(failed, &e);
                    if waited + wait > self.budget {
                        return Err(e);
                    }
                    waited += wait;
                    if !wait.is_zero() {
                        tokio::time::sleep(wait).await;
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::time::Instant;

    fn throttled(after: u64) -> CloudError {
        CloudError::Throttled { target: "rg".into(), retry_after: Some(Duration::from_secs(after)) }
    }

    /// Runs a call that always fails with `err` under `policy` (in paused time), returning the
    /// attempts made, the time spent and the error.
    async fn storm(policy: &RetryPolicy, err: impl Fn() -> CloudError) -> (u32, Duration, CloudError) {
        let calls = AtomicU32::new(0);
        let start = Instant::now();
        let e = policy
            .run(|| {
                calls.fetch_add(1, Ordering::SeqCst);
                let e = err();
                async move { Err::<(), _>(e) }
            })
            .await
            .unwrap_err();
        (calls.load(Ordering::SeqCst), start.elapsed(), e)
    }

    #[tokio::test(start_paused = true)]
    async fn regression_a_huge_retry_after_is_capped_and_the_call_fails_with_its_last_answer() {
        // `Retry-After: 100000` made a plan sleep ~28 hours.
        let policy = RetryPolicy::default();
        let (calls, spent, err) = storm(&policy, || throttled(100_000)).await;
        assert_eq!(policy.backoff(1, &throttled(100_000)), policy.max_retry_after);
        assert!(spent <= policy.budget, "waited {spent:?}, budget {:?}", policy.budget);
        assert_eq!(calls, 3, "60 s + 60 s fit the 120 s budget, a third wait does not");
        assert!(err.to_string().starts_with("rg: throttled (HTTP 429)"), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_storm_of_server_errors_ends_within_the_attempts_and_the_budget() {
        let policy = RetryPolicy::default();
        let five = || CloudError::Server { target: "rg".into(), status: 503, message: "busy".into() };
        let (calls, spent, err) = storm(&policy, five).await;
        assert_eq!(calls, policy.attempts);
        assert!(spent <= policy.budget);
        assert!(matches!(err, CloudError::Server { status: 503, .. }));
        // A budget smaller than the backoffs cuts the attempts short.
        let tight = RetryPolicy { budget: Duration::from_millis(700), jitter: false, ..RetryPolicy::default() };
        let (calls, spent, _) = storm(&tight, five).await;
        assert_eq!((calls, spent), (3, Duration::from_millis(600)), "200 ms + 400 ms, then 800 ms would pass 700 ms");
    }

    #[test]
    fn exponential_waits_are_spread_below_their_bound_and_retry_after_is_not() {
        let policy = RetryPolicy::default();
        let five = CloudError::Server { target: "rg".into(), status: 503, message: "busy".into() };
        let waits: Vec<Duration> = (0..200).map(|_| policy.wait(3, &five)).collect();
        assert!(waits.iter().all(|w| *w <= Duration::from_millis(800)), "{waits:?}");
        let distinct: std::collections::BTreeSet<Duration> = waits.iter().copied().collect();
        assert!(distinct.len() > 100, "200 shoots retrying at once must not wait alike: {} distinct", distinct.len());
        assert!(
            waits.iter().any(|w| *w < Duration::from_millis(400))
                && waits.iter().any(|w| *w > Duration::from_millis(400))
        );
        assert_eq!(policy.wait(1, &throttled(5)), Duration::from_secs(5));
        let fixed = RetryPolicy { jitter: false, ..RetryPolicy::default() };
        assert_eq!(fixed.wait(3, &five), Duration::from_millis(800));
    }

    #[test]
    fn regression_retry_after_zero_still_waits_the_first_backoff() {
        // A 429 storm answering `Retry-After: 0` was retried in a tight loop.
        let policy = RetryPolicy::default();
        assert_eq!(policy.backoff(1, &throttled(0)), policy.initial_backoff);
        assert_eq!(policy.backoff(1, &throttled(5)), Duration::from_secs(5));
        assert_eq!(RetryPolicy::immediate(3).backoff(1, &throttled(5)), Duration::ZERO);
    }
}
