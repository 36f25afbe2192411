//! Writing a plan file one plan at a time ([`PlanSetWriter`]), so a fleet's plans need not all be held
//! in memory before the first byte is written.
//!
//! The bytes are exactly those of [`PlanSet::write_json`](crate::PlanSet::write_json) for the same plans in
//! the same order: a single plan is written as the plan object itself, several as
//! `{format_version, plans: […]}`. As the count is known only at the end, the first plan is held
//! (as its rendered JSON) until a second one arrives or the writer is finished.

use std::io::{self, Write};

use crate::{Plan, FORMAT_VERSION};

/// One plan's JSON, rendered on its own and indented as an element of a fleet's `plans`. Rendering is
/// the expensive part and needs only the plan, so it runs on any thread; the writer only copies (a
/// single plan, written as the whole file, has the element's indentation taken out again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedPlan(Vec<u8>);

impl RenderedPlan {
    /// `plan` rendered; a plan without its digest yet ([`Plan::undigested`]) is written with the digest
    /// its body has, computed while rendering ([`RenderedPlan::of_filling`]).
    pub fn of(plan: &Plan) -> RenderedPlan {
        if plan.digest.is_empty() {
            return RenderedPlan::digesting(plan).0;
        }
        // An A1 shoot's plan is ~12 KB: one allocation instead of growing from serde_json's 128 bytes.
        let mut json = Vec::with_capacity(16 << 10);
        let mut ser = serde_json::Serializer::with_formatter(&mut json, Nested::default());
        serde::Serialize::serialize(plan, &mut ser).expect("a plan serialises to JSON");
        RenderedPlan(json)
    }

    /// `plan` rendered, its digest filled in first if it has none ([`Plan::undigested`]): the body is
    /// hashed while it is written (`Digesting`) instead of being serialised a second time for the
    /// digest ([`crate::targeted_body_digest`]); the bytes are [`RenderedPlan::of`]'s of the digested plan.
    pub fn of_filling(plan: &mut Plan) -> RenderedPlan {
        if !plan.digest.is_empty() {
            return RenderedPlan::of(plan);
        }
        let (rendered, digest) = RenderedPlan::digesting(plan);
        plan.digest = digest;
        rendered
    }

    /// A plan without its digest rendered, with the digest of its body (hashed as it is written)
    /// put in the empty `"digest": ""` it was written with.
    fn digesting(plan: &Plan) -> (RenderedPlan, String) {
        use sha2::Digest as _;
        let mut json = Vec::with_capacity(16 << 10);
        let mut body = Vec::with_capacity(8 << 10);
        let formatter = Digesting {
            nested: Nested::default(),
            depth: 0,
            in_key: false,
            key: Vec::new(),
            in_body: false,
            body: &mut body,
        };
        let mut ser = serde_json::Serializer::with_formatter(&mut json, formatter);
        serde::Serialize::serialize(plan, &mut ser).expect("a plan serialises to JSON");
        body.push(b'}');
        let digest = hex::encode(sha2::Sha256::digest(&body));
        // The plan's own keys are the only lines indented by exactly one level (strings hold no raw
        // line break), and `digest` comes before the body: the first such line is the field.
        let field = [b"\n".as_slice(), NESTED, b"  \"digest\": \""].concat();
        let at = memchr::memmem::find(&json, &field).expect("a plan's JSON has its digest field") + field.len();
        json.splice(at..at, digest.bytes());
        (RenderedPlan(json), digest)
    }

    /// The JSON text, as a single-plan file holds it (without the final newline).
    pub fn standalone_json(&self) -> Vec<u8> {
        standalone(&self.0)
    }
}

/// Writes plans in the order they are pushed; see the module docs.
pub struct PlanSetWriter<W: Write> {
    out: W,
    /// The first plan, until it is known whether the file holds one plan or several.
    held: Option<RenderedPlan>,
    pushed: usize,
}

/// Indentation of a plan inside `plans` (two levels of serde_json's pretty printer).
const NESTED: &[u8] = b"    ";

impl<W: Write> PlanSetWriter<W> {
    pub fn new(out: W) -> PlanSetWriter<W> {
        PlanSetWriter { out, held: None, pushed: 0 }
    }

    /// How many plans were pushed.
    pub fn len(&self) -> usize {
        self.pushed
    }

    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// Renders and appends a plan.
    pub fn push(&mut self, plan: &Plan) -> io::Result<()> {
        self.push_rendered(RenderedPlan::of(plan))
    }

    /// Appends a plan rendered with [`RenderedPlan::of`].
    pub fn push_rendered(&mut self, plan: RenderedPlan) -> io::Result<()> {
        self.pushed += 1;
        match self.pushed {
            1 => self.held = Some(plan),
            2 => {
                write!(self.out, "{{\n  \"format_version\": {FORMAT_VERSION},\n  \"plans\": [\n")?;
                self.out.write_all(NESTED)?;
                let first = self.held.take().expect("the first plan is held until the second");
                self.out.write_all(&first.0)?;
                self.out.write_all(b",\n    ")?;
                self.out.write_all(&plan.0)?;
            }
            _ => {
                self.out.write_all(b",\n    ")?;
                self.out.write_all(&plan.0)?;
            }
        }
        Ok(())
    }

    /// Ends the document (with its final newline) and hands back the output.
    pub fn finish(mut self) -> io::Result<W> {
        match self.pushed {
            0 => write!(self.out, "{{\n  \"format_version\": {FORMAT_VERSION},\n  \"plans\": []\n}}")?,
            1 => {
                let only = self.held.take().expect("a single plan is held until the end");
                self.out.write_all(&only.standalone_json())?;
            }
            _ => self.out.write_all(b"\n  ]\n}")?,
        }
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// serde_json's pretty printer (two spaces a level), with every line after the first indented two
/// levels more: a plan's JSON as an element of a fleet's `plans`, written in one pass.
#[derive(Default)]
struct Nested {
    /// Levels below the plan's own object.
    depth: usize,
    /// Whether the array or object being written has an element yet (an empty one stays `[]`, `{}`).
    has_value: bool,
}

impl Nested {
    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        // A newline and the indentation in one write (a plan is at most a dozen levels deep).
        const LINE: &[u8] = b"\n                                                                ";
        let width = 1 + NESTED.len() + 2 * self.depth;
        match LINE.get(..width) {
            Some(line) => w.write_all(line),
            None => {
                w.write_all(LINE)?;
                (LINE.len()..width).try_for_each(|_| w.write_all(b" "))
            }
        }
    }

    fn begin<W: ?Sized + Write>(&mut self, w: &mut W, open: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(open)
    }

    fn end<W: ?Sized + Write>(&mut self, w: &mut W, close: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(close)
    }

    /// Before an element of an array or a key of an object.
    fn element<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }
}

impl serde_json::ser::Formatter for Nested {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.element(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.element(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// The keys of a plan that make its body, in the order the plan writes them: what the digest covers
/// (`{"nodes":[…],"artifacts":{…},"targets":[…]}`, compact, `targets` only when it is written).
const BODY_KEYS: [&[u8]; 3] = [b"nodes", b"artifacts", b"targets"];

/// [`Nested`], which also writes the plan's body compactly into `body` as it goes (what
/// [`crate::targeted_body_digest`] hashes), so the body is serialised once for both.
struct Digesting<'a> {
    nested: Nested,
    /// How many arrays and objects are open (1: inside the plan's own object).
    depth: usize,
    /// Writing one of the plan's own keys (collected in `key`).
    in_key: bool,
    /// The plan's key being written.
    key: Vec<u8>,
    /// Writing the value of one of [`BODY_KEYS`] (decided once per key of the plan, not per token).
    in_body: bool,
    /// The compact body so far (`{"nodes":…`, without its closing brace).
    body: &'a mut Vec<u8>,
}

impl Digesting<'_> {
    /// Whether the value being written is (part of) the body.
    fn capturing(&self) -> bool {
        self.in_body
    }
}

/// A value's bytes go to the output as [`Nested`] writes them and, inside the body, to the body as
/// serde_json's compact formatter writes them (the same bytes: only structure differs).
macro_rules! tee {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $name<W: ?Sized + Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> io::Result<()> {
            if self.capturing() {
                serde_json::ser::CompactFormatter.$name(&mut *self.body $(, $arg)*)?;
            }
            self.nested.$name(w $(, $arg)*)
        }
    )*};
}

impl serde_json::ser::Formatter for Digesting<'_> {
    tee! {
        write_null();
        write_bool(value: bool);
        write_i8(value: i8);
        write_i16(value: i16);
        write_i32(value: i32);
        write_i64(value: i64);
        write_i128(value: i128);
        write_u8(value: u8);
        write_u16(value: u16);
        write_u32(value: u32);
        write_u64(value: u64);
        write_u128(value: u128);
        write_f32(value: f32);
        write_f64(value: f64);
        write_number_str(value: &str);
        begin_string();
        end_string();
        write_byte_array(value: &[u8]);
        write_raw_fragment(fragment: &str);
        begin_array_value(first: bool);
        end_array_value();
        end_object_key();
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        // Written once (at most `\uXXXX`), then copied where it goes.
        let mut bytes = Vec::with_capacity(6);
        self.nested.write_char_escape(&mut bytes, escape)?;
        if self.in_key {
            self.key.extend_from_slice(&bytes);
        } else if self.capturing() {
            self.body.extend_from_slice(&bytes);
        }
        w.write_all(&bytes)
    }

    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        if self.in_key {
            self.key.extend_from_slice(fragment.as_bytes());
        } else if self.capturing() {
            self.body.extend_from_slice(fragment.as_bytes());
        }
        self.nested.write_string_fragment(w, fragment)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.capturing() {
            self.body.push(b'[');
        }
        self.depth += 1;
        self.nested.begin_array(w)
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        if self.capturing() {
            self.body.push(b']');
        }
        self.nested.end_array(w)
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.capturing() {
            self.body.push(b'{');
        }
        self.depth += 1;
        self.nested.begin_object(w)
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        if self.capturing() {
            self.body.push(b'}');
        }
        self.nested.end_object(w)
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if self.depth == 1 {
            // One of the plan's own keys: its name is collected, and nothing of it is the body's.
            self.in_key = true;
            self.key.clear();
        } else if self.capturing() && !first {
            self.body.push(b',');
        }
        self.nested.begin_object_key(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.depth == 1 {
            self.in_key = false;
            self.in_body = BODY_KEYS.contains(&self.key.as_slice());
            if self.in_body {
                self.body.push(if self.body.is_empty() { b'{' } else { b',' });
                self.body.push(b'"');
                self.body.extend_from_slice(&self.key);
                self.body.extend_from_slice(b"\":");
            }
        } else if self.capturing() {
            self.body.push(b':');
        }
        self.nested.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.depth == 1 {
            self.in_body = false;
        }
        self.nested.end_object_value(w)
    }
}

/// [`Nested`] undone: the indentation after each newline taken out.
fn standalone(nested: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(nested.len());
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', nested) {
        out.extend_from_slice(&nested[start..=end]);
        start = end + 1 + NESTED.len();
    }
    out.extend_from_slice(&nested[start.min(nested.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// [`Nested`] writes serde_json's pretty JSON with every line after the first indented by
    /// [`NESTED`], for every shape: empty and nested arrays and objects, escaped strings, numbers.
    #[test]
    fn nested_is_pretty_json_indented_two_levels() {
        let values = [
            json!({}),
            json!([]),
            json!({"a": [], "b": {}, "c": [[], [{}], {"d": [1, 2.5, -3]}], "e": null, "f": true}),
            json!([{"x": "line\nbreak \"quoted\" \u{1b} tab\t"}, [], {}, [[[]]]]),
            json!({"nodes": [{"address": "a", "changes": [{"path": "/p", "before": null, "after": {"k": ["v"]}}]}]}),
            // Deeper than the one-write indentation.
            (0..40).fold(json!(["bottom", {}]), |inner, i| json!({ format!("level{i}"): [inner, i] })),
            json!("just a string"),
            json!(42),
        ];
        for v in values {
            let mut nested = Vec::new();
            serde::Serialize::serialize(
                &v,
                &mut serde_json::Serializer::with_formatter(&mut nested, Nested::default()),
            )
            .unwrap();
            let pretty = serde_json::to_string_pretty(&v).unwrap().replace('\n', "\n    ");
            assert_eq!(String::from_utf8(nested).unwrap(), pretty, "{v}");
        }
    }
}
