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
    /// `sslmode` and `sslrootcert` as libpq reads them (the client library knows neither
    /// `verify-ca`/`verify-full` nor `sslrootcert`: trellis takes them out of the URL it is given).
    tls: TlsPolicy,
}

/// `sslmode`, as libpq reads it. The default is `prefer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, else plaintext.
    Prefer,
    /// TLS or nothing.
    Require,
    /// TLS, the server's certificate signed by a trusted authority.
    VerifyCa,
    /// TLS, the server's certificate signed by a trusted authority and issued for the host connected to.
    VerifyFull,
}

/// Where the trusted authorities' certificates come from (`sslrootcert`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootCerts {
    /// Not given: `~/.postgresql/root.crt` when it exists (as libpq), else the system's roots.
    Default,
    /// `sslrootcert=system`: the system's roots.
    System,
    /// `sslrootcert=FILE`: the PEM certificates in that file.
    File(PathBuf),
}

/// How the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Not at all (the connection is encrypted, the server not authenticated).
    Nothing,
    /// Signed by a trusted authority.
    Chain,
    /// Signed by a trusted authority and issued for the host name (or IP address) connected to.
    ChainAndHost,
}

/// TLS to the server: `sslmode` and `sslrootcert` of the URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsPolicy {
    pub mode: SslMode,
    pub roots: RootCerts,
}

impl TlsPolicy {
    /// How the server's certificate is checked, as libpq does: `verify-ca` and `verify-full` as named;
    /// `prefer` and `require` check the authority only when one is given (`sslrootcert`, or the default
    /// `~/.postgresql/root.crt` existing), else nothing.
    pub fn verify(&self, default_root_exists: bool) -> Verify {
        match self.mode {
            SslMode::VerifyFull => Verify::ChainAndHost,
            SslMode::VerifyCa => Verify::Chain,
            SslMode::Disable | SslMode::Prefer | SslMode::Require => match self.roots {
                RootCerts::File(_) | RootCerts::System => Verify::Chain,
                RootCerts::Default if default_root_exists => Verify::Chain,
                RootCerts::Default => Verify::Nothing,
            },
        }
    }
}

/// `url` without the TLS options the client library does not know, and the TLS policy they make:
/// `sslrootcert` is taken out, `sslmode=verify-ca|verify-full` handed on as `require`.
fn take_tls_options(url: &str) -> Result<(String, TlsPolicy), String> {
    let mut tls = TlsPolicy { mode: SslMode::Prefer, roots: RootCerts::Default };
    let Some((head, query)) = url.split_once('?') else {
        return Ok((url.to_string(), tls));
    };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
        match key {
            "sslrootcert" if value.is_empty() => return Err("sslrootcert is empty; give a PEM file or `system`".into()),
            "sslrootcert" if value == "system" => tls.roots = RootCerts::System,
            "sslrootcert" => tls.roots = RootCerts::File(PathBuf::from(value.as_ref())),
            // The client library does not know them either, and would only say "invalid connection string".
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" => {
                return Err(format!(
                    "{key}: client certificates are not supported by trellis yet; authenticate with a password (in TRELLIS_STATE) and leave {key} out"
                ))
            }
            "sslmode" => {
                tls.mode = match value.as_ref() {
                    "disable" => SslMode::Disable,
                    "prefer" => SslMode::Prefer,
                    "require" => SslMode::Require,
                    "verify-ca" => SslMode::VerifyCa,
                    "verify-full" => SslMode::VerifyFull,
                    other => {
                        return Err(format!(
                            "sslmode={other} is not one trellis knows; use disable, prefer, require, verify-ca or verify-full"
                        ))
                    }
                };
                kept.push(match tls.mode {
                    SslMode::VerifyCa | SslMode::VerifyFull => "sslmode=require",
                    _ => pair,
                });
            }
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() { head.to_string() } else { format!("{head}?{}", kept.join("&")) };
    Ok((url, tls))
}

impl PgUrl {
    /// The client library's configuration (holds the password).
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// `sslmode` and `sslrootcert`.
    pub fn tls(&self) -> &TlsPolicy {
        &self.tls
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
        let (for_client, tls) = take_tls_options(s).map_err(invalid)?;
        let config: tokio_postgres::Config = for_client.parse().map_err(|e: tokio_postgres::Error| {
            // The client's parse errors name the offending part, never the password; redact anyway.
            invalid(format!("{}; the form is postgres://USER@HOST:PORT/DATABASE", redact_in(&e.to_string(), s)))
        })?;
        if config.get_hosts().is_empty() {
            return Err(invalid("it names no host; the form is postgres://USER@HOST:PORT/DATABASE".to_string()));
        }
        if config.get_dbname().is_none() {
            return Err(invalid("it names no database; the form is postgres://USER@HOST:PORT/DATABASE".to_string()));
        }
        Ok(PgUrl { config: Box::new(config), redacted, tls })
    }
}

impl PartialEq for PgUrl {
    fn eq(&self, other: &PgUrl) -> bool {
        self.config == other.config && self.tls == other.tls
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

    /// `sslmode` and `sslrootcert` as libpq reads them: `verify-ca`/`verify-full` (which the client
    /// library refuses) and `sslrootcert` (which it does not know) are trellis' to read.
    #[test]
    fn tls_options_are_read_as_libpq_reads_them() {
        let policy = |url: &str| url.parse::<PgUrl>().map(|u| u.tls().clone());
        let default = policy("postgres://u@h:5432/db").unwrap();
        assert_eq!(default, TlsPolicy { mode: SslMode::Prefer, roots: RootCerts::Default });
        assert_eq!(default.verify(false), Verify::Nothing);
        assert_eq!(
            default.verify(true),
            Verify::Chain,
            "libpq checks the authority when ~/.postgresql/root.crt exists"
        );
        let full = policy("postgres://u:pw@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem").unwrap();
        assert_eq!(full, TlsPolicy { mode: SslMode::VerifyFull, roots: RootCerts::File("/etc/ca.pem".into()) });
        assert_eq!(full.verify(false), Verify::ChainAndHost);
        let ca = policy("postgres://u@h/db?sslrootcert=system&sslmode=verify-ca").unwrap();
        assert_eq!(
            (ca.mode, ca.roots.clone(), ca.verify(false)),
            (SslMode::VerifyCa, RootCerts::System, Verify::Chain)
        );
        let require = policy("postgres://u@h/db?sslmode=require").unwrap();
        assert_eq!(require.verify(false), Verify::Nothing);
        assert_eq!(
            policy("postgres://u@h/db?sslmode=require&sslrootcert=ca.pem").unwrap().verify(false),
            Verify::Chain
        );
        // The client library is given `require` for the verifying modes, and no sslrootcert.
        let url: PgUrl = "postgres://u@h/db?sslmode=verify-full&sslrootcert=ca.pem&connect_timeout=3".parse().unwrap();
        assert_eq!(url.config().get_ssl_mode(), tokio_postgres::config::SslMode::Require);
        assert_eq!(url.config().get_connect_timeout(), Some(&std::time::Duration::from_secs(3)));
        assert_eq!(url.to_string(), "postgres://u@h/db?sslmode=verify-full&sslrootcert=ca.pem&connect_timeout=3");
    }

    #[test]
    fn unknown_or_empty_tls_options_are_one_line_errors_without_the_password() {
        for (bad, says) in [
            ("postgres://u:hunter2@h/db?sslmode=allow", "sslmode=allow is not one trellis knows"),
            ("postgres://u:hunter2@h/db?sslrootcert=", "sslrootcert is empty"),
            ("postgres://u:hunter2@h/db?sslcert=c.pem", "sslcert: client certificates are not supported"),
            ("postgres://u:hunter2@h/db?sslmode=require&sslkey=k.pem", "sslkey: client certificates are not supported"),
        ] {
            let err = bad.parse::<StateLocation>().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
            assert!(!err.contains("hunter2") && !err.contains('\n'), "{err}");
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
