//! The wire rules the real cloud clients (`trellis-azure-client`, `trellis-gcp-client`) share, so
//! that each holds in both by construction:
//!
//! - **No redirects** ([`client`]): a redirected request would carry its credential (a form body, a
//!   bearer token) to wherever the answer points; a 3xx is [`redirect_error`], naming `Location`.
//! - **Bounded answers** ([`read_capped`]): a response body larger than [`MAX_RESPONSE_BYTES`] is
//!   refused while it is read (never held whole), so a hostile or broken server cannot take the
//!   process' memory. The largest real ARM or GCE answer (a list page of 1,000 resources) is a few MB.
//! - **Redaction first** ([`redact`](fn@redact), [`snippet`]): every text that came from a server or a transport
//!   error is redacted before it is shortened, so a secret straddling the cut cannot be printed in
//!   part.
//! - **Waits a server asks for** ([`retry_after`]) are read here; the engine caps them
//!   (`trellis_planner::retry::RetryPolicy`).

#[cfg(feature = "fake")]
pub mod fake;
pub mod redact;

pub use redact::{redact, redact_error, REDACTED};

use reqwest::header::{HeaderMap, LOCATION, RETRY_AFTER};
use reqwest::StatusCode;
use std::time::{Duration, SystemTime};
use trellis_planner::cloud::CloudError;

/// The largest response body a client reads (32 MiB): far above any real resource or list page
/// (ARM pages hold at most 1,000 items, GCE pages 500), far below what would hurt the process.
pub const MAX_RESPONSE_BYTES: usize = 32 << 20;

/// How many characters of a body that is not the API's error JSON an error message quotes.
pub const SNIPPET_CHARS: usize = 300;

/// How long a client waits for a TCP (and TLS) connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client of every real cloud client and credential: rustls, a connect timeout, and no
/// redirects.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .user_agent(concat!("trellis/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| error_chain(&e))
}

/// A 3xx answer: an error naming where it pointed. `setting` is what the user would change (a flag
/// or an environment variable).
pub fn redirect_error(target: &str, status: u16, headers: &HeaderMap, setting: &str) -> CloudError {
    let location = headers.get(LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("(no Location header)");
    CloudError::Rejected {
        target: target.to_string(),
        status,
        code: "Redirected".to_string(),
        message: format!(
            "the server redirects to {location}; trellis follows no redirects, so that no credential goes to another address: set {setting} to the address that answers itself"
        ),
    }
}

/// Status, headers and body of an answer, the body read up to `limit` bytes (normally
/// [`MAX_RESPONSE_BYTES`]): a longer one (by `Content-Length` before reading, or while reading) is
/// refused as `Rejected { code: "ResponseTooLarge" }` without being held.
pub async fn read_capped(
    mut resp: reqwest::Response,
    target: &str,
    limit: usize,
) -> Result<(StatusCode, HeaderMap, Vec<u8>), CloudError> {
    let status = resp.status();
    let headers = resp.headers().clone();
    let too_large = || {
        CloudError::Rejected {
        target: target.to_string(),
        status: status.as_u16(),
        code: "ResponseTooLarge".to_string(),
        message: format!(
            "the answer is larger than {} MiB, trellis' limit for one response; no real resource or list page is that large: check the endpoint",
            limit >> 20
        ),
    }
    };
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| transport_error(target, &e))? {
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, headers, body))
}

/// A failure below HTTP: a timeout, or no answer at all (both transient).
pub fn transport_error(target: &str, e: &reqwest::Error) -> CloudError {
    if e.is_timeout() {
        return CloudError::Timeout { target: target.to_string() };
    }
    CloudError::Unreachable { target: target.to_string(), message: error_chain(e) }
}

/// An error with its sources, `outer: inner: innermost`.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// The start of a body, for messages: redacted (with the `known` secrets), then cut at
/// [`SNIPPET_CHARS`] characters.
pub fn snippet(text: &str, known: &[&str]) -> String {
    let text = redact(text.trim(), known);
    if text.is_empty() {
        return "(empty body)".to_string();
    }
    match text.char_indices().nth(SNIPPET_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// The wait a response asks for: `retry-after-ms`, `x-ms-retry-after-ms`, then `Retry-After`
/// (delay-seconds or an HTTP date). Uncapped: the caller bounds it.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    for name in ["retry-after-ms", "x-ms-retry-after-ms"] {
        if let Some(ms) = text(name).and_then(|v| v.parse::<u64>().ok()) {
            return Some(Duration::from_millis(ms));
        }
    }
    let value = text(RETRY_AFTER.as_str())?;
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_a_secret_across_the_cut_is_redacted_whole() {
        // The token starts before the 300th character and ends after it: cutting first printed
        // its first part, which no pattern recognises any more.
        let token = format!("eyJ{}.eyJ{}.{}", "a".repeat(20), "b".repeat(40), "c".repeat(40));
        let body = format!("{} you sent {token} in the header", "x".repeat(280));
        let out = snippet(&body, &[]);
        assert!(!out.contains("eyJ"), "{out}");
        assert!(out.contains(REDACTED), "{out}");
        // A literal known value (an opaque access token) likewise.
        let opaque = format!("ya29.{}", "z".repeat(60));
        let body = format!("{} token={opaque} end", "x".repeat(270));
        let out = snippet(&body, &[&opaque]);
        assert!(!out.contains("ya29"), "{out}");
    }

    #[test]
    fn snippets_cut_at_a_character_boundary_and_say_so() {
        let out = snippet(&"é".repeat(400), &[]);
        assert_eq!(out.chars().count(), SNIPPET_CHARS + 1);
        assert!(out.ends_with('…'));
        assert_eq!(snippet("  ", &[]), "(empty body)");
        assert_eq!(snippet("short", &[]), "short");
    }

    #[test]
    fn retry_after_prefers_milliseconds_then_seconds_then_dates() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("x-ms-retry-after-ms", "1500".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        h.insert("retry-after-ms", "20".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(20)));
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, "Sun, 06 Nov 1994 08:49:37 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
    }
}
