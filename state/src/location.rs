//! Where state lives: a sled state dir or a PostgreSQL database ([`StateLocation`], `--state` /
//! `TRELLIS_STATE`), and a validated PostgreSQL connection string whose password is never shown
//! ([`PgUrl`]).

use crate::StateError;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Where state lives: `--state` / `TRELLIS_STATE`. A value starting with `postgres://` or
/// `postgresql://` is a PostgreSQL database, anything else a state dir.
#[derive(Clone, Debug, PartialEq)]
pub enum StateLocation {
    Dir(PathBuf),
    Postgres(PgUrl),
}

impl FromStr for StateLocation {
    type Err = StateError;

    /// A malformed URL is [`StateError::InvalidUrl`], naming it with its password replaced by `***`.
    fn from_str(s: &str) -> Result<StateLocation, StateError> {
        if is_postgres_url(s) {
            s.parse().map(StateLocation::Postgres)
        } else {
            Ok(StateLocation::Dir(PathBuf::from(s)))
        }
    }
}

impl fmt::Display for StateLocation {
    /// The dir's path, or the URL with its password replaced by `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateLocation::Dir(dir) => write!(f, "{}", dir.display()),
            StateLocation::Postgres(url) => url.fmt(f),
        }
    }
}

fn is_postgres_url(s: &str) -> bool {
    let lower = s.get(..13).unwrap_or(s).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// A validated PostgreSQL connection URL (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?OPTIONS]`, the
/// forms libpq accepts). Its `Display` and `Debug` replace the password with `***`; the password is
/// only ever handed to the client library.
#[derive(Clone)]
pub struct PgUrl {
    /// Boxed: a `Config` is large, and a [`StateLocation`] is mostly a dir.
    config: Box<tokio_postgres::Config>,
    /// The URL as given, with its password replaced by `***`.
    redacted: String,
}

impl PgUrl {
    /// The client library's configuration (holds the password).
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    pub(crate) fn set_config(&mut self, config: tokio_postgres::Config) {
        *self.config = config;
    }

    /// `text` with this URL's password, if it appears in it, replaced by `***`.
    pub(crate) fn hide_password(&self, text: &str) -> String {
        match self.config.get_password().map(String::from_utf8_lossy) {
            Some(secret) if !secret.is_empty() => text.replace(secret.as_ref(), "***"),
            _ => text.to_string(),
        }
    }

    /// The URL with its password replaced by `***`: what every message shows.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }
}

impl FromStr for PgUrl {
    type Err = StateError;

    fn from_str(s: &str) -> Result<PgUrl, StateError> {
        let redacted = redact(s);
        let invalid = |detail: String| StateError::InvalidUrl { url: redacted.clone(), detail };
        if !is_postgres_url(s) {
            return Err(invalid("it must start with postgres:// or postgresql://".to_string()));
        }
        let config: tokio_postgres::Config = s.parse().map_err(|e: tokio_postgres::Error| {
            // The client's parse errors name the offending part, never the password; redact anyway.
            invalid(format!("{}; the form is postgres://USER@HOST:PORT/DATABASE", redact_in(&e.to_string(), s)))
        })?;
        if config.get_hosts().is_empty() {
            return Err(invalid("it names no host; the form is postgres://USER@HOST:PORT/DATABASE".to_string()));
        }
        if config.get_dbname().is_none() {
            return Err(invalid("it names no database; the form is postgres://USER@HOST:PORT/DATABASE".to_string()));
        }
        // trellis has no TLS client for PostgreSQL yet: `require` could only fail at connect time, as
        // "server does not support TLS" or "no TLS implementation configured" — neither says why.
        if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            return Err(invalid(
                "sslmode=require: trellis connects to PostgreSQL without TLS (not supported yet); reach the server over a private network or through a local TLS-terminating proxy (e.g. cloud-sql-proxy) and leave sslmode out".to_string(),
            ));
        }
        Ok(PgUrl { config: Box::new(config), redacted })
    }
}

impl PartialEq for PgUrl {
    fn eq(&self, other: &PgUrl) -> bool {
        self.config == other.config
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgUrl({})", self.redacted)
    }
}

/// `s` with the password of its user info (`scheme://user:PASSWORD@…`) and any `password=` query
/// option replaced by `***`. Works on malformed URLs too, so an error can name what was given.
pub(crate) fn redact(s: &str) -> String {
    let mut out = s.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..].find(['/', '?']).map_or(out.len(), |i| rest_start + i);
        // The user info ends at the last `@` of the authority (a password may contain `@` only encoded).
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let at = rest_start + at;
            if let Some(colon) = out[rest_start..at].find(':') {
                out.replace_range(rest_start + colon + 1..at, "***");
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query = query
            .split('&')
            .map(|kv| if kv.to_ascii_lowercase().starts_with("password=") { "password=***" } else { kv })
            .collect::<Vec<_>>()
            .join("&");
        out = format!("{head}{query}");
    }
    out
}

/// `text` (an error message about `url`) with `url`'s password, if it appears, replaced by `***`.
pub(crate) fn redact_in(text: &str, url: &str) -> String {
    let mut text = text.to_string();
    for secret in passwords(url) {
        if !secret.is_empty() {
            text = text.replace(&secret, "***");
        }
    }
    text
}

/// The password parts of `url` as written (user info and `password=` options).
fn passwords(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
        if let Some(at) = authority.rfind('@') {
            if let Some(colon) = authority[..at].find(':') {
                out.push(authority[colon + 1..at].to_string());
            }
        }
    }
    if let Some(q) = url.find('?') {
        for kv in url[q + 1..].split('&') {
            if kv.to_ascii_lowercase().starts_with("password=") {
                out.push(kv[9..].to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_selects_postgres_and_anything_else_a_dir() {
        let pg: StateLocation = "postgres://trellis:s3cret@db.example:5433/state".parse().unwrap();
        assert!(matches!(pg, StateLocation::Postgres(_)));
        assert_eq!(pg.to_string(), "postgres://trellis:***@db.example:5433/state");
        assert!(!format!("{pg:?}").contains("s3cret"));
        let pg: StateLocation = "postgresql://ci@10.0.0.1/trellis".parse().unwrap();
        assert_eq!(pg.to_string(), "postgresql://ci@10.0.0.1/trellis");
        let dir: StateLocation = ".trellis".parse().unwrap();
        assert_eq!(dir, StateLocation::Dir(PathBuf::from(".trellis")));
        let dir: StateLocation = "/var/lib/postgres-state".parse().unwrap();
        assert!(matches!(dir, StateLocation::Dir(_)));
    }

    #[test]
    fn a_malformed_url_is_one_error_without_the_password() {
        for bad in [
            "postgres://u:hunter2@host:notaport/db",
            "postgres://u:hunter2@host:5432/db?sslmode=bogus",
            "postgres://u:hunter2@host:5432",
            "postgres://u:x?password=hunter2",
        ] {
            let err = bad.parse::<StateLocation>().unwrap_err().to_string();
            assert!(!err.contains("hunter2"), "{err}");
            assert!(err.contains("***"), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    /// `sslmode=require` failed only at connect time, with the client library's "server does not support
    /// TLS" (trellis has no TLS client): refused at parse time, saying so and what to do.
    #[test]
    fn regression_sslmode_require_is_refused_up_front() {
        let err = "postgres://u:hunter2@db.example.com:5432/trellis?sslmode=require"
            .parse::<StateLocation>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("sslmode=require: trellis connects to PostgreSQL without TLS"), "{err}");
        assert!(err.contains("postgres://u:***@db.example.com:5432/trellis?sslmode=require"), "{err}");
        assert!(!err.contains("hunter2") && !err.contains('\n'), "{err}");
        for fine in ["disable", "prefer"] {
            let url = format!("postgres://u@h:5432/db?sslmode={fine}");
            assert!(url.parse::<StateLocation>().is_ok(), "{url}");
        }
    }

    #[test]
    fn redaction_covers_the_query_password_too() {
        assert_eq!(
            redact("postgres://u@h/db?password=pw&sslmode=disable"),
            "postgres://u@h/db?password=***&sslmode=disable"
        );
        assert_eq!(redact("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }
}
