//! provider-gcp's name filters (`pkg/apis/gcp/validation/filter.go`): `validateGcpResourceName`,
//! i.e. RFC 1035 (`^[a-z]([-a-z0-9]*[a-z0-9])?$`) and 1 to 63 characters, each filter reporting on
//! its own, in upstream's order (regex, minimum, maximum).
//!
//! Upstream quirks kept: the regex filter lets "" through (the minimum-length filter reports it);
//! the length filters count characters but print the length in bytes (`len(name)`).

use std::sync::LazyLock;

use regex::Regex;

use crate::field::{ErrorList, FieldError, Path};

/// Upstream's `Rfc1035Regex`.
pub const RFC1035_REGEX: &str = "^[a-z]([-a-z0-9]*[a-z0-9])?$";

static RFC1035: LazyLock<Regex> = LazyLock::new(|| Regex::new(RFC1035_REGEX).expect("RFC 1035 regex compiles"));

/// `validateGcpResourceName(name, fld)`.
pub fn validate_gcp_resource_name(name: &str, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if !name.is_empty() && !RFC1035.is_match(name) {
        errs.push(FieldError::invalid(fld, name, format!("does not match expected regex {RFC1035_REGEX}")));
    }
    let chars = name.chars().count();
    if chars < 1 {
        errs.push(FieldError::invalid(fld, name, format!("must not be fewer than 1 characters, got {}", name.len())));
    }
    if chars > 63 {
        errs.push(FieldError::invalid(fld, name, format!("must not be more than 63 characters, got {}", name.len())));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str) -> Vec<String> {
        validate_gcp_resource_name(name, &Path::new("n")).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn names_follow_rfc1035_and_length_as_upstream() {
        assert!(check("my-vpc-1").is_empty());
        assert!(check("a").is_empty());
        assert!(check(&"a".repeat(63)).is_empty());
        assert_eq!(check(""), [r#"n: Invalid value: "": must not be fewer than 1 characters, got 0"#]);
        assert_eq!(
            check("invalid-VPC-name"),
            [r#"n: Invalid value: "invalid-VPC-name": does not match expected regex ^[a-z]([-a-z0-9]*[a-z0-9])?$"#]
        );
        assert_eq!(check("1abc").len(), 1);
        assert_eq!(check("abc-").len(), 1);
        assert_eq!(check("abc\n").len(), 1);
        let long = "a".repeat(64);
        assert_eq!(
            check(&long),
            [format!(r#"n: Invalid value: "{long}": must not be more than 63 characters, got 64"#)]
        );
        // Characters are counted, bytes printed (upstream's `len`).
        let wide = "ä".repeat(64);
        assert_eq!(
            check(&wide)[1],
            format!(r#"n: Invalid value: "{wide}": must not be more than 63 characters, got 128"#)
        );
    }
}
