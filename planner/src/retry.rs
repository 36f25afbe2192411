//! Retry with exponential backoff for transient cloud errors (429, 5xx, timeouts), honouring Retry-After.

use crate::cloud::CloudError;
use std::future::Future;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { attempts: 6, initial_backoff: Duration::from_millis(200), max_backoff: Duration::from_secs(10) }
    }
}

impl RetryPolicy {
    /// No waiting between attempts (tests).
    pub fn immediate(attempts: u32) -> RetryPolicy {
        RetryPolicy { attempts, initial_backoff: Duration::ZERO, max_backoff: Duration::ZERO }
    }

    /// The wait before attempt `n + 1` after `n` failed attempts.
    pub fn backoff(&self, failed: u32, err: &CloudError) -> Duration {
        if let Some(after) = err.retry_after() {
            return after;
        }
        let factor = 2u32.saturating_pow(failed.saturating_sub(1));
        self.initial_backoff.saturating_mul(factor).min(self.max_backoff)
    }

    /// Runs `call` until it succeeds, fails for good, or the attempts are used up.
    pub async fn run<T, F, Fut>(&self, mut call: F) -> Result<T, CloudError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, CloudError>>,
    {
        let mut failed = 0;
        loop {
            match call().await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_transient() && failed + 1 < self.attempts => {
                    failed += 1;
                    let wait = self.backoff(failed, &e);
                    if !wait.is_zero() {
                        tokio::time::sleep(wait).await;
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}
