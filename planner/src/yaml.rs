//! YAML parse errors in words, for every reader of YAML (manifests, world files).
//!
//! serde-saphyr's default messages are good, except that a tripped resource limit prints Rust Debug
//! text (`budget breached: Nodes { nodes: 250001 }`). [`message`] says instead which limit a file
//! exceeds and what to do.

use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::MessageFormatter as _;

/// The message of a YAML error, without its location and source snippet (callers put the location in
/// front as `file:line:column:`).
pub fn message(err: &serde_saphyr::Error) -> String {
    let err = err.without_snippet();
    let text = match err {
        serde_saphyr::Error::Budget { breach, .. } => budget(breach),
        other => serde_saphyr::DefaultMessageFormatter.format_message(other).into_owned(),
    };
    // The library may append the location itself; it is already in front.
    match err.location() {
        Some(l) => match text.strip_suffix(&format!(" at line {}, column {}", l.line(), l.column())) {
            Some(stripped) => stripped.to_string(),
            None => text,
        },
        None => text,
    }
}

/// Which parser limit a document exceeds, in words.
fn budget(breach: &BudgetBreach) -> String {
    let what = match breach {
        BudgetBreach::Events { events } => format!("more than {events} YAML parser events"),
        BudgetBreach::Aliases { aliases } => format!("{aliases} aliases (*ref)"),
        BudgetBreach::Anchors { anchors } => format!("{anchors} anchors (&ref)"),
        BudgetBreach::Depth { depth } => format!("nesting {depth} levels deep"),
        BudgetBreach::Documents { documents } => format!("{documents} documents"),
        BudgetBreach::Nodes { nodes } => format!("{nodes} values (lists, maps and scalars)"),
        BudgetBreach::ScalarBytes { total_scalar_bytes } => format!("{total_scalar_bytes} bytes of scalar values"),
        BudgetBreach::MergeKeys { merge_keys } => format!("{merge_keys} merge keys (<<)"),
        BudgetBreach::AliasAnchorRatio { aliases, anchors } => {
            format!("{aliases} aliases for {anchors} anchors (an alias bomb)")
        }
        BudgetBreach::SequenceUnbalanced => "an unbalanced structure (truncated input)".to_string(),
        BudgetBreach::InputBytes { input_bytes } => format!("{input_bytes} bytes"),
        _ => "more than the YAML parser's limits allow".to_string(),
    };
    format!("the document is too large or too complex to read safely ({what}); split it or remove what is not needed")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tripped_limit_is_said_in_words() {
        let yaml = format!("x: [{}]", vec!["1"; 300_000].join(","));
        let err = serde_saphyr::from_str::<serde_json::Value>(&yaml).unwrap_err();
        let msg = super::message(&err);
        assert!(msg.starts_with("the document is too large or too complex to read safely ("), "{msg}");
        assert!(!msg.contains('{') && !msg.contains("Nodes"), "no Debug text: {msg}");
    }
}
