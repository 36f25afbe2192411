//! HTTP preconditions on writes (`If-Match`, `If-None-Match: *`), checked against a resource's etag.

use crate::core::ApiError;

/// A write's precondition. The default is none (the write is unconditional).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Precondition {
    /// `If-Match`: the etag the resource must have (`*`: the resource must exist).
    pub if_match: Option<String>,
    /// `If-None-Match: *`: the resource must not exist (a create that must not overwrite).
    pub if_none_match_any: bool,
}

impl Precondition {
    pub fn none() -> Precondition {
        Precondition::default()
    }

    /// `If-Match: <etag>`.
    pub fn if_match(etag: &str) -> Precondition {
        Precondition { if_match: Some(etag.to_string()), ..Precondition::default() }
    }

    /// `If-None-Match: *`.
    pub fn if_none_match_any() -> Precondition {
        Precondition { if_none_match_any: true, ..Precondition::default() }
    }
}

/// Whether a write to `id` may go ahead. `current` is `None` when the resource does not exist, else
/// its etag (`None` for a resource without one, such as an ARM resource group). A failed precondition
/// is 412 `PreconditionFailed`.
pub(crate) fn check(id: &str, current: Option<Option<&str>>, p: &Precondition) -> Result<(), ApiError> {
    let failed = |message: String| Err(ApiError::new(412, "PreconditionFailed", message));
    if p.if_none_match_any && current.is_some() {
        return failed(format!(
            "The resource {id} already exists and the request has if-none-match: *; read it and update it with if-match instead."
        ));
    }
    match (p.if_match.as_deref(), current) {
        (None, _) => Ok(()),
        (Some(wanted), None) => failed(format!(
            "Etag provided in if-match header {wanted} cannot match: the resource {id} does not exist."
        )),
        (Some("*"), Some(_)) => Ok(()),
        (Some(wanted), Some(Some(etag))) if wanted == etag => Ok(()),
        (Some(wanted), Some(Some(etag))) => failed(format!(
            "Etag provided in if-match header {wanted} does not match etag {etag} of resource {id}; read the resource again and retry with its current etag."
        )),
        (Some(wanted), Some(None)) => failed(format!(
            "Etag provided in if-match header {wanted} does not match: the resource {id} has no etag."
        )),
    }
}
