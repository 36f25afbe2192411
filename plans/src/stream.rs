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
    pub fn of(plan: &Plan) -> RenderedPlan {
        // An A1 shoot's plan is ~12 KB: one allocation instead of growing from serde_json's 128 bytes.
        let mut json = Vec::with_capacity(16 << 10);
        let mut ser = serde_json::Serializer::with_formatter(&mut json, Nested::default());
        serde::Serialize::serialize(plan, &mut ser).expect("a plan serialises to JSON");
        RenderedPlan(json)
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
