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
    TooMany,
    Internal,
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
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

/// One validation error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub kind: ErrorType,
    /// Dotted path with indices, e.g. `networks.zones[1].cidr`.
    pub field: String,
    /// The offending value exactly as upstream renders it after `Invalid value: ` (strings quoted
    /// as Go's `%q`, numbers and booleans bare, nil pointers as `null`, structs as Go's `%#v` or,
    /// in apimachinery ≥ 0.34, as JSON — see [`Value::json`]), if any.
    pub value: Option<String>,
    pub detail: String,
}

impl FieldError {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError { kind: ErrorType::Required, field: field.into(), value: None, detail: detail.into() }
    }
    /// An invalid string value; it is rendered quoted, as Go's `%q`.
    pub fn invalid(field: impl Into<String>, value: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError::invalid_value(field, Value::str(value), detail)
    }
    /// An invalid value of any kind (number, bool, null, struct).
    pub fn invalid_value(field: impl Into<String>, value: Value, detail: impl Into<String>) -> FieldError {
        FieldError { kind: ErrorType::Invalid, field: field.into(), value: Some(value.0), detail: detail.into() }
    }
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError { kind: ErrorType::Forbidden, field: field.into(), value: None, detail: detail.into() }
    }
    /// `supported` lists the allowed values; the detail reads `supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: impl Into<String>, supported: &[&str]) -> FieldError {
        FieldError::not_supported_value(field, Value::str(value), supported)
    }
    /// Like [`FieldError::not_supported`] for a value that is not a string (e.g. a zone number).
    pub fn not_supported_value(field: impl Into<String>, value: Value, supported: &[&str]) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        let detail = if list.is_empty() { String::new() } else { format!("supported values: {}", list.join(", ")) };
        FieldError { kind: ErrorType::NotSupported, field: field.into(), value: Some(value.0), detail }
    }
    pub fn duplicate(field: impl Into<String>, value: impl Into<String>) -> FieldError {
        FieldError::duplicate_value(field, Value::str(value))
    }
    /// A duplicate value of any kind (e.g. a typed string, rendered as JSON).
    pub fn duplicate_value(field: impl Into<String>, value: Value) -> FieldError {
        FieldError { kind: ErrorType::Duplicate, field: field.into(), value: Some(value.0), detail: String::new() }
    }
    /// apimachinery's `TooMany(field, actual, max)`: `Too many: <actual>: must have at most <max> items`.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> FieldError {
        let items = if max == 1 { "item" } else { "items" };
        FieldError {
            kind: ErrorType::TooMany,
            field: field.into(),
            value: Some(actual.to_string()),
            detail: format!("must have at most {max} {items}"),
        }
    }
    /// apimachinery's `InternalError(field, err)`: `Internal error: <err>` (the value is never printed).
    pub fn internal(field: impl Into<String>, err: impl Into<String>) -> FieldError {
        FieldError { kind: ErrorType::Internal, field: field.into(), value: None, detail: err.into() }
    }
}

impl fmt::Display for FieldError {
    /// `field.path: Type: detail`, with the value as upstream prints it (`Invalid value: "x": detail`),
    /// i.e. upstream's `field.Error.Error()`. Required and Forbidden never print a value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.kind.as_str())?;
        if let Some(v) = &self.value {
            if !matches!(self.kind, ErrorType::Required | ErrorType::Forbidden | ErrorType::Internal) {
                write!(f, ": {v}")?;
            }
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// apimachinery's `FieldImmutableErrorMsg` (`ValidateImmutableField`).
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";

/// All errors of one validation run; empty means valid.
pub type ErrorList = Vec<FieldError>;

/// A bad value rendered the way upstream's `field.Error.ErrorBody()` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value(pub String);

impl Value {
    /// A string, quoted as Go's `%q`.
    pub fn str(s: impl Into<String>) -> Value {
        Value(go_quote(&s.into()))
    }
    /// A number or boolean, printed bare (`%v`).
    pub fn display(v: impl fmt::Display) -> Value {
        Value(v.to_string())
    }
    /// A nil pointer.
    pub fn null() -> Value {
        Value("null".to_string())
    }
    /// An optional string (a Go `*string`): quoted, or `null`.
    pub fn opt_str(s: Option<&str>) -> Value {
        s.map_or_else(Value::null, Value::str)
    }
    /// Already rendered text (e.g. a struct as Go's `%#v`), used verbatim.
    pub fn raw(s: impl Into<String>) -> Value {
        Value(s.into())
    }
    /// A value that is not a plain string, number or boolean (a list, an object, a typed string),
    /// as apimachinery ≥ 0.34 renders it: Go's `json.Marshal` (which escapes `<`, `>`, `&`,
    /// U+2028 and U+2029 inside strings).
    pub fn json(v: &serde_json::Value) -> Value {
        Value(go_json(v))
    }
}

/// Go's `json.Marshal` of a decoded JSON value: compact, object keys in the order given, and
/// the HTML-safe escapes Go adds to serde_json's (`\u003c`, `\u003e`, `\u0026`, `\u2028`,
/// `\u2029`). Those characters only occur inside strings, so replacing them is exact.
pub fn go_json(v: &serde_json::Value) -> String {
    let mut out = String::new();
    for c in v.to_string().chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `strconv.Quote`: double quotes, `\"` and `\\`, the C escapes, `\xNN` for other ASCII
/// controls, `\uNNNN` / `\UNNNNNNNN` for non-printable characters; printable Unicode stays as is.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => push_escaped(&mut out, c),
        }
    }
    out.push('"');
    out
}

/// Text embedded in a message as it is (Go's error texts do so, e.g. `invalid CIDR address: <s>`),
/// with the characters [`go_quote`] would escape that are not printable shown escaped the same way:
/// an error stays one line, and printable text is upstream's message unchanged.
pub fn escape_unprintable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    out
}

/// One character as `strconv.Quote` writes it (`"` and `\` excepted: the caller decides).
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if is_go_printable(c) => out.push(c),
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// An approximation of Go's `strconv.IsPrint`: ASCII space is printable; controls, other white
/// space and the common format characters (zero-width and bidi marks, BOM) are not.
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(c as u32, 0xad | 0x600..=0x605 | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0xfeff | 0xfff9..=0xfffb)
}

/// A field path, as upstream's `field.Path`: `networks.zones[1].cidr`.
///
/// [`Path::root`] is upstream's nil path (the unit tests' `providerPath`): its children render
/// without a prefix, so errors read `networks.vnet.cidr`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Path(String);

impl Path {
    /// The empty (nil) path.
    pub fn root() -> Path {
        Path(String::new())
    }
    /// `field.NewPath(name)`; `name` may contain dots (`field.NewPath("networks.zones")`).
    pub fn new(name: &str) -> Path {
        Path(name.to_string())
    }
    /// `p.Child(name)`.
    pub fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }
    /// `p.Index(i)`.
    pub fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Path> for String {
    fn from(p: Path) -> String {
        p.0
    }
}

impl From<&Path> for String {
    fn from(p: &Path) -> String {
        p.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_as_upstream_field_error() {
        let e = FieldError::invalid(
            "networks.vnet.cidr",
            "10.0.0.0/8",
            "specifying a cidr for an existing vnet is not possible",
        );
        assert_eq!(
            e.to_string(),
            r#"networks.vnet.cidr: Invalid value: "10.0.0.0/8": specifying a cidr for an existing vnet is not possible"#
        );
        let e = FieldError::invalid_value("zoned", Value::display(true), "field is immutable");
        assert_eq!(e.to_string(), "zoned: Invalid value: true: field is immutable");
        let e = FieldError::invalid_value("networks.vnet.cidr", Value::null(), "vnet cidr need to be specified");
        assert_eq!(e.to_string(), "networks.vnet.cidr: Invalid value: null: vnet cidr need to be specified");
        let e = FieldError::not_supported("networks.natGateway.sku", "Basic", &["Standard", "StandardV2"]);
        assert_eq!(
            e.to_string(),
            r#"networks.natGateway.sku: Unsupported value: "Basic": supported values: "Standard", "StandardV2""#
        );
        let e = FieldError::required("identity.name", "must not be empty");
        assert_eq!(e.to_string(), "identity.name: Required value: must not be empty");
        let e = FieldError::forbidden("networks.workers", "either workers or zones must be specified");
        assert_eq!(e.to_string(), "networks.workers: Forbidden: either workers or zones must be specified");
        assert_eq!(FieldError::duplicate("a[1]", "x").to_string(), r#"a[1]: Duplicate value: "x""#);
    }

    #[test]
    fn renders_json_values_too_many_and_internal_errors_as_apimachinery() {
        let v = serde_json::json!(["IPv4", "<&>\u{2028}", {"a": null}]);
        assert_eq!(go_json(&v), r#"["IPv4","\u003c\u0026\u003e\u2028",{"a":null}]"#);
        let e = FieldError::invalid_value("spec.networking.ipFamilies", Value::json(&serde_json::json!(["IPv6"])), "x");
        assert_eq!(e.to_string(), r#"spec.networking.ipFamilies: Invalid value: ["IPv6"]: x"#);
        let e = FieldError::too_many("w[0].dataVolumes", 65, 64);
        assert_eq!(e.to_string(), "w[0].dataVolumes: Too many: 65: must have at most 64 items");
        assert_eq!(FieldError::too_many("x", 2, 1).detail, "must have at most 1 item");
        let e = FieldError::internal("spec.networking.providerConfig", "json: cannot unmarshal string");
        assert_eq!(e.to_string(), "spec.networking.providerConfig: Internal error: json: cannot unmarshal string");
        let e = FieldError::duplicate_value("f[1]", Value::json(&serde_json::json!("IPv4")));
        assert_eq!(e.to_string(), r#"f[1]: Duplicate value: "IPv4""#);
    }

    #[test]
    fn quotes_as_go() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(go_quote("\u{0}\u{7f}"), r#""\x00\x7f""#);
        assert_eq!(go_quote("grüße"), "\"grüße\"");
        assert_eq!(go_quote("\u{a0}\u{200b}"), r#""\u00a0\u200b""#);
    }

    #[test]
    fn unprintable_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_unprintable("10.0.0.0/8 \"x\" \\ ä"), "10.0.0.0/8 \"x\" \\ ä");
        assert_eq!(escape_unprintable("a\nb\r\u{1b}[2J\u{2028}"), r"a\nb\r\x1b[2J\u2028");
    }

    #[test]
    fn paths_render_like_field_path() {
        let root = Path::root();
        assert_eq!(root.child("networks").child("zones").index(1).child("cidr").as_str(), "networks.zones[1].cidr");
        let p = Path::new("spec.provider.infrastructureConfig");
        assert_eq!(p.child("resourceGroup.name").to_string(), "spec.provider.infrastructureConfig.resourceGroup.name");
    }
}
