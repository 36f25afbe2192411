//! Kubernetes-style field errors, as upstream's `field.ErrorList`: `field.path: Type: detail`.

use std::fmt;

/// The error types of k8s.io/apimachinery/pkg/util/validation/field, with upstream's wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    Forbidden,
    NotSupported,
    Duplicate,
}

impl ErrorType {
    /// Upstream's `ErrorType.String()`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Duplicate => "Duplicate value",
        }
    }
}

/// One validation error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub kind: ErrorType,
    /// Dotted path with indices, e.g. `networks.zones[1].cidr`.
    pub field: String,
    /// The offending value, rendered as upstream does (Invalid, NotSupported, Duplicate), if any.
    pub value: Option<String>,
    pub detail: String,
}

impl FieldError {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError { kind: ErrorType::Required, field: field.into(), value: None, detail: detail.into() }
    }
    pub fn invalid(field: impl Into<String>, value: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError { kind: ErrorType::Invalid, field: field.into(), value: Some(value.into()), detail: detail.into() }
    }
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError { kind: ErrorType::Forbidden, field: field.into(), value: None, detail: detail.into() }
    }
    /// `supported` lists the allowed values; the detail reads `supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: impl Into<String>, supported: &[&str]) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        FieldError {
            kind: ErrorType::NotSupported,
            field: field.into(),
            value: Some(value.into()),
            detail: format!("supported values: {}", list.join(", ")),
        }
    }
    pub fn duplicate(field: impl Into<String>, value: impl Into<String>) -> FieldError {
        FieldError { kind: ErrorType::Duplicate, field: field.into(), value: Some(value.into()), detail: String::new() }
    }
}

impl fmt::Display for FieldError {
    /// `field.path: Type: detail`, with the value as upstream prints it (`Invalid value: "x": detail`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.kind.as_str())?;
        if let Some(v) = &self.value {
            write!(f, ": {v:?}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// All errors of one validation run; empty means valid.
pub type ErrorList = Vec<FieldError>;
