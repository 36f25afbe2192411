//! Redaction of secrets and tokens from text the client did not write itself: error bodies of the
//! token endpoint, the managed identity endpoint and ARM, and transport errors (which name URLs).
//!
//! A server may echo the request in its error (a proxy, a misconfigured authority): the form body
//! with `client_secret=…`, the `Authorization: Bearer …` header. Every error text built from a
//! response or a transport error goes through [`redact`] before it leaves this crate, so no message,
//! log line or file that trellis writes carries a credential.

use regex::Regex;
use std::sync::LazyLock;
use trellis_planner::cloud::CloudError;

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Known values shorter than this are not replaced literally: they would mangle ordinary words, and
/// no credential Azure issues is that short (client secrets have 40 characters, tokens are JWTs,
/// `IDENTITY_HEADER` is a GUID). The patterns below still apply to them.
pub const MIN_LITERAL_LEN: usize = 8;

/// Fields whose value is a credential, in form bodies, query strings and JSON.
const FIELDS: &str = "client_secret|client_assertion|access_token|refresh_token|id_token";

static PATTERNS: LazyLock<[(Regex, &'static str); 7]> = LazyLock::new(|| {
    let re = |s: &str| Regex::new(s).expect("a valid redaction pattern");
    [
        // A PEM private key (a service-account key file's `private_key`), with real or JSON-escaped
        // line breaks; without its END line (a cut text), up to the end.
        (re(r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)"), "<redacted>"),
        // `client_secret=…` up to the next `&`, whitespace or quote.
        (re(&format!(r#"(?i)\b({FIELDS})=[^&\s"'<>,;]+"#)), "${1}=<redacted>"),
        // `"access_token": "…"` in JSON.
        (re(&format!(r#"(?i)("(?:{FIELDS})"\s*:\s*)"(?:[^"\\]|\\.)*""#)), r#"${1}"<redacted>""#),
        // The same in JSON quoted inside a JSON string: `\"access_token\": \"…\"`.
        (re(&format!(r#"(?i)(\\"(?:{FIELDS})\\"\s*:\s*)\\"(?:[^"\\]|\\[^"])*\\""#)), r#"${1}\"<redacted>\""#),
        // `Bearer …` (an Authorization header, a WWW-Authenticate challenge).
        (re(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*"), "${1} <redacted>"),
        // A JWT anywhere (access tokens, federated tokens): `eyJ….….…`.
        (re(r"\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"), "<redacted>"),
        // A password in a URL: `scheme://user:password@host`.
        (re(r"(?i)\b([a-z][a-z0-9+.-]*://[^/@\s:]*):[^/@\s]*@"), "${1}:<redacted>@"),
    ]
});

/// `text` without credentials: PEM private keys, the values of `client_secret=`, `client_assertion=`,
/// `access_token`/`refresh_token`/`id_token` (form or JSON), `Bearer` tokens, JWTs, passwords in
/// URLs, and each of the `known` values (literally and form-encoded) of at least
/// [`MIN_LITERAL_LEN`] characters.
pub fn redact(text: &str, known: &[&str]) -> String {
    let mut out = text.to_string();
    for secret in known.iter().map(|s| s.trim()).filter(|s| s.len() >= MIN_LITERAL_LEN) {
        let encoded: String = form_urlencoded::byte_serialize(secret.as_bytes()).collect();
        for spelling in [secret, encoded.as_str()] {
            if out.contains(spelling) {
                out = out.replace(spelling, REDACTED);
            }
        }
    }
    for (pattern, replacement) in PATTERNS.iter() {
        out = pattern.replace_all(&out, *replacement).into_owned();
    }
    out
}

/// The error with every text field redacted.
pub fn redact_error(e: CloudError, known: &[&str]) -> CloudError {
    let r = |s: String| redact(&s, known);
    match e {
        CloudError::Throttled { target, retry_after } => CloudError::Throttled { target: r(target), retry_after },
        CloudError::Server { target, status, message } => {
            CloudError::Server { target: r(target), status, message: r(message) }
        }
        CloudError::Timeout { target } => CloudError::Timeout { target: r(target) },
        CloudError::Unreachable { target, message } => {
            CloudError::Unreachable { target: r(target), message: r(message) }
        }
        CloudError::Rejected { target, status, code, message } => {
            CloudError::Rejected { target: r(target), status, code: r(code), message: r(message) }
        }
        CloudError::PreconditionFailed { target, expected } => {
            CloudError::PreconditionFailed { target: r(target), expected: r(expected) }
        }
        CloudError::AlreadyExists { target, status } => CloudError::AlreadyExists { target: r(target), status },
        CloudError::Conflict { target, code, message } => {
            CloudError::Conflict { target: r(target), code: r(code), message: r(message) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_and_query_fields() {
        let text = "got grant_type=client_credentials&client_id=app&client_secret=abc%2Bdef&scope=x \
                    and client_assertion=eyJx.eyJy.sig&client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
        let out = redact(text, &[]);
        assert_eq!(
            out,
            "got grant_type=client_credentials&client_id=app&client_secret=<redacted>&scope=x \
             and client_assertion=<redacted>&client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        );
        assert_eq!(
            redact("?access_token=abc&x=1 refresh_token=def", &[]),
            "?access_token=<redacted>&x=1 refresh_token=<redacted>"
        );
    }

    #[test]
    fn json_fields_also_quoted_inside_strings() {
        let out = redact(r#"{"access_token": "abc", "refresh_token":"d\"ef", "token_type": "Bearer"}"#, &[]);
        assert_eq!(out, r#"{"access_token": "<redacted>", "refresh_token":"<redacted>", "token_type": "Bearer"}"#);
        let nested = r#"{"message": "{\"client_secret\": \"abc\", \"ok\": 1}"}"#;
        assert_eq!(redact(nested, &[]), r#"{"message": "{\"client_secret\": \"<redacted>\", \"ok\": 1}"}"#);
    }

    #[test]
    fn bearer_tokens_jwts_and_url_passwords() {
        assert_eq!(redact("authorization: Bearer abc.def-ghi", &[]), "authorization: Bearer <redacted>");
        assert_eq!(redact("AUTHORIZATION: bearer xyz==, next", &[]), "AUTHORIZATION: bearer <redacted>, next");
        assert_eq!(redact("token eyJhbGciOi.eyJzdWIi.c2ln here", &[]), "token <redacted> here");
        assert_eq!(
            redact("error sending request for url (https://user:pa55@proxy:8080/x)", &[]),
            "error sending request for url (https://user:<redacted>@proxy:8080/x)"
        );
    }

    #[test]
    fn pem_private_keys_whole_or_cut() {
        let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASC\nBKgwggSkAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n";
        assert_eq!(redact(&format!("key {pem} end"), &[]), "key <redacted>\n end");
        // As a JSON string (escaped line breaks), and an RSA key cut before its END line.
        let escaped = pem.replace('\n', "\\n");
        assert_eq!(redact(&format!(r#"{{"private_key": "{escaped}"}}"#), &[]), r#"{"private_key": "<redacted>\n"}"#);
        assert_eq!(redact("x -----BEGIN RSA PRIVATE KEY-----\nMIIEow", &[]), "x <redacted>");
        assert_eq!(redact("-----BEGIN CERTIFICATE-----", &[]), "-----BEGIN CERTIFICATE-----");
    }

    #[test]
    fn known_values_literally_and_form_encoded() {
        let secret = "Qx8Q~aB3.d+/=";
        let text = "secret Qx8Q~aB3.d+/= or Qx8Q%7EaB3.d%2B%2F%3D";
        assert_eq!(redact(text, &[secret]), "secret <redacted> or <redacted>");
        // Short values are left alone (they would mangle words); the patterns still apply.
        assert_eq!(redact("a short s", &["s"]), "a short s");
    }

    #[test]
    fn ordinary_messages_are_unchanged() {
        for text in [
            "ResourceGroupNotFound: Resource group 'rg' could not be found.",
            "AADSTS7000215: Invalid client secret provided.",
            "https://login.microsoftonline.com/t/oauth2/v2.0/token",
            "client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        ] {
            assert_eq!(redact(text, &["not-in-the-text"]), text);
        }
    }
}
