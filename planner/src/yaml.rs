//! YAML parse errors in words, for every reader of YAML (manifests, world files).
//!
//! serde-saphyr's default messages are good, except that a tripped resource limit prints Rust Debug
//! text (`budget breached: Nodes { nodes: 250001 }`) and a value of the wrong shape names parser
//! events (`expected mapping start`). [`message`] says instead which limit a file exceeds and what
//! to do, and what the field needs against what the file has (`expected a mapping (`key: value`
//! entries), found a single value or a list`).
//!
//! Every reader parses with [`options`] (serde-saphyr) or [`parser_options`] (its event parser):
//! the library's defaults and resource budget. serde-saphyr is built without its `comments` feature
//! (workspace Cargo.toml), so comments are never emitted as events. Nothing reads comments, and an
//! emitted comment after a key with no value is buffered while the parser looks ahead, up to a
//! fixed number (32 in serde-saphyr 2.2, 96 in its parser): Gardener's own `example/90-shoot.yaml`
//! has about 200 such lines after `kubernetes:` and failed with "too many buffered comments while
//! looking ahead". Comments are still scanned and checked as YAML, so a comment block of any length
//! parses, and every other limit stays in force. (Without the feature the parser also does not keep
//! comment text at all: ~4 % of a fleet plan's CPU, issue #9.)

use serde::Deserialize;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser;
use serde_saphyr::MessageFormatter as _;

/// serde-saphyr's default options (and budget), with comment events off (see the module docs).
pub fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {}
}

/// The event parser's default options, with comment events off (see the module docs).
pub fn parser_options() -> granit_parser::Options {
    granit_parser::Options::default()
}

/// `serde_saphyr::from_str` with [`options`]: one YAML document into `T`.
pub fn from_str<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, options())
}

/// `serde_saphyr::from_multiple` with [`options`]: every document of `text` into `T`.
pub fn from_multiple<'de, T: Deserialize<'de>>(text: &'de str) -> Result<Vec<T>, serde_saphyr::Error> {
    serde_saphyr::from_multiple_with_options(text, options())
}

/// What a field of Rust type `ty` expects, in words: `an integer (u64)`, `a boolean (true or false)`
/// (manifests' and world files' parse errors say it so; `strict` re-exports it).
pub fn expected_in_words(ty: &str) -> String {
    match ty {
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => format!("an integer ({ty})"),
        "f32" | "f64" => "a number".to_string(),
        "bool" => "a boolean (true or false)".to_string(),
        _ => ty.to_string(),
    }
}

/// The message of a YAML error, without its location and source snippet (callers put the location in
/// front as `file:line:column:`).
pub fn message(err: &serde_saphyr::Error) -> String {
    let err = err.without_snippet();
    let text = match err {
        serde_saphyr::Error::Budget { breach, .. } => budget(breach),
        // The parser's event names ("expected mapping start"): in the words of what the file holds.
        serde_saphyr::Error::Unexpected { expected: "mapping start", .. } => {
            "expected a mapping (`key: value` entries), found a single value or a list".to_string()
        }
        serde_saphyr::Error::Unexpected { expected: "sequence start", .. } => {
            "expected a list (`- item` entries, or `[a, b]`), found a single value or a mapping".to_string()
        }
        serde_saphyr::Error::Unexpected { expected: "string scalar", .. } => {
            "expected a single value (a string), found a list or a mapping".to_string()
        }
        serde_saphyr::Error::InvalidScalar { ty, .. } => format!("invalid value: expected {}", expected_in_words(ty)),
        serde_saphyr::Error::TaggedScalarCannotDeserializeIntoString { .. } => {
            "a value with a YAML tag (`!!float 1`) is not a string here; write the value without the tag".to_string()
        }
        // The library's messages for the people who wrote the file (`null is not allowed here`, `value
        // `.nan` is not a finite number`), not its developer's (`…; use Option<String>`).
        other => serde_saphyr::UserMessageFormatter.format_message(other).into_owned(),
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
    /// serde-saphyr names the parser's events; the message names what the field needs and what the
    /// file has there instead.
    #[test]
    fn a_value_of_the_wrong_shape_is_said_in_words() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Doc {
            map: std::collections::BTreeMap<String, String>,
            list: Vec<String>,
            name: String,
        }
        let cases = [
            (
                "map: 5\nlist: []\nname: x\n",
                "expected a mapping (`key: value` entries), found a single value or a list",
            ),
            (
                "map: {}\nlist: x\nname: x\n",
                "expected a list (`- item` entries, or `[a, b]`), found a single value or a mapping",
            ),
            ("map: {}\nlist: []\nname: [a]\n", "expected a single value (a string), found a list or a mapping"),
            (
                "map: {}\nlist: []\nname: !!float 1\n",
                "a value with a YAML tag (`!!float 1`) is not a string here; write the value without the tag",
            ),
            ("map: {}\nlist: []\nname: null\n", "null is not allowed here"),
        ];
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Numbers {
            n: u64,
        }
        let err = super::from_str::<Numbers>("n: abc\n").unwrap_err();
        assert_eq!(super::message(&err), "invalid value: expected an integer (u64)");
        let err = super::from_str::<serde_json::Value>("n: .nan\n").unwrap_err();
        assert_eq!(super::message(&err), "value `.nan` is not a finite number");
        for (yaml, want) in cases {
            let err = super::from_str::<Doc>(yaml).unwrap_err();
            assert_eq!(super::message(&err), want, "{yaml}");
            assert!(err.location().is_some(), "the location stays for the caller to put in front: {yaml}");
        }
    }

    #[test]
    fn a_tripped_limit_is_said_in_words() {
        let yaml = format!("x: [{}]", vec!["1"; 300_000].join(","));
        let err = serde_saphyr::from_str::<serde_json::Value>(&yaml).unwrap_err();
        let msg = super::message(&err);
        assert!(msg.starts_with("the document is too large or too complex to read safely ("), "{msg}");
        assert!(!msg.contains('{') && !msg.contains("Nodes"), "no Debug text: {msg}");
    }
}
