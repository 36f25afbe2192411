//! GCE's list `filter`, for the expressions the planner uses.
//!
//! Two forms, not mixed in one filter (as GCE has it):
//! - the regex form: `name eq "shoot--.*"`, `network ne ".*/vpc-a"`: `eq`/`ne` with an RE2 regular
//!   expression that must match the whole field value; several comparisons, each optionally in
//!   parentheses, must all hold: `(name eq "k8s-.*") (network eq ".*/vpc-a")`;
//! - the AIP-160 form: `name = "x"`, `name != "x"`, joined by `AND`.
//!
//! A field is a top-level or dotted field of the resource (`logConfig.enable`); a list field matches
//! when one of its elements does. `OR`, `NOT`, `:` and other operators are refused (400 `invalid`).

use regex::Regex;
use serde_json::Value;
use std::borrow::Cow;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    RegexEq,
    RegexNe,
    Eq,
    Ne,
}

#[derive(Clone, Debug)]
struct Term {
    field: String,
    op: Op,
    value: String,
    regex: Option<Regex>,
}

/// A parsed filter: every term must hold.
#[derive(Clone, Debug)]
pub struct Filter {
    terms: Vec<Term>,
}

#[derive(Debug, PartialEq)]
enum Token {
    Open,
    Close,
    Word(String),
    Quoted(String),
}

fn tokens(s: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' => {
                chars.next();
                out.push(Token::Open);
            }
            ')' => {
                chars.next();
                out.push(Token::Close);
            }
            '"' | '\'' => {
                chars.next();
                let mut text = String::new();
                loop {
                    match chars.next() {
                        Some('\\') => match chars.next() {
                            Some(n) if n == c => text.push(n),
                            Some(n) => {
                                text.push('\\');
                                text.push(n);
                            }
                            None => return Err("the filter ends inside a quoted value".into()),
                        },
                        Some(n) if n == c => break,
                        Some(n) => text.push(n),
                        None => return Err("a quoted value is not closed".into()),
                    }
                }
                out.push(Token::Quoted(text));
            }
            _ => {
                let mut word = String::new();
                while let Some(&n) = chars.peek() {
                    if n.is_whitespace() || n == '(' || n == ')' || n == '"' || n == '\'' {
                        break;
                    }
                    word.push(n);
                    chars.next();
                }
                out.push(Token::Word(word));
            }
        }
    }
    Ok(out)
}

impl Filter {
    /// Parses a filter; the error says what is not supported.
    pub fn parse(s: &str) -> Result<Filter, String> {
        let toks: Vec<Token> = tokens(s)?.into_iter().filter(|t| !matches!(t, Token::Open | Token::Close)).collect();
        let mut terms = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            if toks[i] == Token::Word("AND".into()) {
                i += 1;
                continue;
            }
            let Token::Word(field) = &toks[i] else {
                return Err("expected a field name, such as name or network".into());
            };
            if matches!(field.as_str(), "OR" | "NOT") || field.starts_with('-') {
                return Err(format!("'{field}' is not supported; use comparisons that must all hold"));
            }
            let op = match toks.get(i + 1) {
                Some(Token::Word(w)) => match w.as_str() {
                    "eq" => Op::RegexEq,
                    "ne" => Op::RegexNe,
                    "=" => Op::Eq,
                    "!=" => Op::Ne,
                    other => return Err(format!("operator '{other}' is not supported; use eq, ne, = or !=")),
                },
                _ => return Err(format!("field '{field}' needs an operator (eq, ne, = or !=) and a value")),
            };
            let value = match toks.get(i + 2) {
                Some(Token::Word(v) | Token::Quoted(v)) => v.clone(),
                _ => return Err(format!("field '{field}' needs a value after its operator")),
            };
            let regex = match op {
                Op::RegexEq | Op::RegexNe => Some(Regex::new(&format!("^(?:{value})$")).map_err(|e| {
                    format!("'{value}' is not a valid regular expression: {}", one_line(&e.to_string()))
                })?),
                _ => None,
            };
            terms.push(Term { field: field.clone(), op, value, regex });
            i += 3;
        }
        if terms.is_empty() {
            return Err("the filter has no comparison".into());
        }
        let regex_form = terms.iter().any(|t| t.regex.is_some());
        let aip_form = terms.iter().any(|t| t.regex.is_none());
        if regex_form && aip_form {
            return Err("eq/ne and =/!= cannot be mixed in one filter".into());
        }
        Ok(Filter { terms })
    }

    /// Whether the filter holds only for resources whose `field` is a value `accepts` passes: `None`
    /// when no `eq`/`=` term is on `field` (a list may then narrow its candidates by `field` first).
    pub fn on(&self, field: &str) -> Option<impl Fn(&str) -> bool + '_> {
        let terms: Vec<&Term> =
            self.terms.iter().filter(|t| t.field == field && matches!(t.op, Op::RegexEq | Op::Eq)).collect();
        if terms.is_empty() {
            return None;
        }
        Some(move |value: &str| {
            terms.iter().all(|t| match &t.regex {
                Some(re) => re.is_match(value),
                None => value == t.value,
            })
        })
    }

    /// The last path segment every value of `field` the filter holds for ends in, when one of its
    /// terms pins it: `eq ".*/<literal>"` (the form a list narrowed to a network sends) or `= "…/<name>"`.
    /// A list may look its candidates up by it (a network by its name) before [`Filter::on`] checks them.
    pub fn last_segment_of(&self, field: &str) -> Option<String> {
        self.terms.iter().filter(|t| t.field == field).find_map(|t| match t.op {
            Op::Eq => t.value.rsplit('/').next().map(str::to_string),
            Op::RegexEq => literal(t.value.strip_prefix(".*/")?).filter(|s| !s.contains('/')),
            Op::RegexNe | Op::Ne => None,
        })
    }

    /// Whether `resource` passes every term.
    pub fn matches(&self, resource: &Value) -> bool {
        self.terms.iter().all(|t| {
            let values = field_values(resource, &t.field);
            let hit = values.iter().any(|v| match &t.regex {
                Some(re) => re.is_match(v),
                None => *v == t.value,
            });
            match t.op {
                Op::RegexEq | Op::Eq => hit,
                Op::RegexNe | Op::Ne => !hit,
            }
        })
    }
}

/// The text a regular expression matches when it matches that one text only (regex's parser says:
/// its whole expression is a literal); `None` for anything else.
fn literal(pattern: &str) -> Option<String> {
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    match hir.kind() {
        regex_syntax::hir::HirKind::Literal(regex_syntax::hir::Literal(bytes)) => {
            String::from_utf8(bytes.to_vec()).ok()
        }
        _ => None,
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The field's value(s) as text; a list gives its elements.
fn field_values<'a>(resource: &'a Value, field: &str) -> Vec<Cow<'a, str>> {
    let mut v = resource;
    for part in field.split('.') {
        match v.get(part) {
            Some(next) => v = next,
            None => return Vec::new(),
        }
    }
    // A string is matched where it lies (a list's filter runs over a whole collection).
    let text = |v: &'a Value| match v {
        Value::String(s) => Some(Cow::Borrowed(s.as_str())),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(Cow::Owned(b.to_string())),
        _ => None,
    };
    match v {
        Value::Array(a) => a.iter().filter_map(text).collect(),
        other => text(other).into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What a list may narrow its candidates by: the `eq`/`=` terms on a field, all of them; a
    /// filter without one on the field says nothing (`ne` and `!=` terms never narrow).
    #[test]
    fn a_filter_says_which_values_of_a_field_it_can_hold_for() {
        let f = Filter::parse(r#"(network eq ".*/vpc\-a") (name ne "x")"#).unwrap();
        let on = f.on("network").expect("an eq term on network");
        assert!(on("https://x/projects/p/global/networks/vpc-a"));
        assert!(!on("https://x/projects/p/global/networks/vpc-a2"));
        assert!(f.on("name").is_none(), "a ne term does not narrow");
        let exact = Filter::parse(r#"network = "projects/p/global/networks/a""#).unwrap();
        assert!(exact.on("network").is_some_and(|on| on("projects/p/global/networks/a") && !on("a")));
        assert!(Filter::parse(r#"name eq "k8s-.*""#).unwrap().on("network").is_none());
    }

    #[test]
    fn a_filter_names_the_last_segment_it_pins() {
        let seg = |f: &str| Filter::parse(f).unwrap().last_segment_of("network");
        assert_eq!(seg(r#"(network eq ".*/shoot\-\-p\-\-a\.b") (name ne "x")"#).as_deref(), Some("shoot--p--a.b"));
        assert_eq!(seg(r#"network = "projects/p/global/networks/a""#).as_deref(), Some("a"));
        for open in
            [r#"network eq ".*/vpc-.*""#, r#"network eq ".*/a|b""#, r#"network eq ".*vpc""#, r#"network ne ".*/a""#]
        {
            assert_eq!(seg(open), None, "{open}");
        }
        assert_eq!(seg(r#"network eq ".*/a\d""#), None, "a class");
        assert_eq!(seg(r#"network eq ".*/(?i)vpc""#), None, "any case: not one text");
        assert_eq!(seg(r#"network eq ".*/vpc\x2Da""#).as_deref(), Some("vpc-a"), "a hex escape is its character");
        assert_eq!(seg(r#"network eq ".*/x/a""#), None, "not one segment");
    }

    #[test]
    fn regex_form_matches_whole_values() {
        let f = Filter::parse(r#"name eq "shoot--.*""#).unwrap();
        assert!(f.matches(&json!({"name": "shoot--p--s-pods"})));
        assert!(!f.matches(&json!({"name": "x-shoot--p"})));
        let f = Filter::parse(r#"(name eq "k8s-.*") (network eq ".*/vpc-a")"#).unwrap();
        assert!(f.matches(&json!({"name": "k8s-fw-a", "network": "https://x/global/networks/vpc-a"})));
        assert!(!f.matches(&json!({"name": "k8s-fw-a", "network": "https://x/global/networks/vpc-b"})));
    }

    #[test]
    fn aip_form_and_refusals() {
        let f = Filter::parse(r#"name = "a" AND targetTags = "t""#).unwrap();
        assert!(f.matches(&json!({"name": "a", "targetTags": ["s", "t"]})));
        assert!(Filter::parse(r#"name eq "a" name = "b""#).unwrap_err().contains("cannot be mixed"));
        assert!(Filter::parse("name eq").is_err());
        assert!(Filter::parse(r#"name eq "a" OR name eq "b""#).is_err());
        assert!(Filter::parse(r#"name eq "(""#).unwrap_err().contains("not a valid regular expression"));
    }
}
