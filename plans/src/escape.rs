//! Escaping of the strings a plan carries, for every renderer: one place, used by [`crate::render`]
//! and [`crate::diff`].
//!
//! Everything in a plan document can come from a user: shoot names and manifest values, and a plan
//! file (`trellis show`, `trellis diff`) can hold any text at all. So every string a renderer did not
//! write itself goes through one of these functions:
//!
//! | context | function | what it does |
//! |---|---|---|
//! | terminal text | [`text`] | control characters (C0, DEL, C1, bidi overrides, line separators) become visible escapes |
//! | multi-line terminal text, fenced code | [`lines`] | [`text`] per line, the line breaks kept |
//! | markdown text (table cells, list items) | [`md_inline`] | one line; `\ \| < > & [ ]` escaped, code spans kept, stray backticks escaped |
//! | markdown code span | [`md_code`] | a code span that cannot be broken out of |
//! | HTML (inside `<summary>`) | [`html`] | `& < > " '` as entities |
//!
//! All markdown and HTML forms apply [`text`] first, so no raw control character reaches any output.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal raw: C0 and C1 controls and DEL (ESC starts terminal
/// sequences, CR rewrites the line), the bidi controls that reorder what is shown, and the Unicode
/// line and paragraph separators.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// Whether `s` holds a character [`is_unsafe`] refuses, decided on its UTF-8 bytes (a plan's text is
/// mostly ASCII with the odd `—`; decoding every character cost ~2 % of a fleet's text plan): each
/// unsafe character is a byte below 0x20 or 0x7f, or starts with 0xc2 (C1 controls), 0xd8 (U+061C)
/// or 0xe2 (the bidi controls and separators in U+2000–U+206F), whose next bytes tell.
fn has_unsafe(s: &str, newline_allowed: bool) -> bool {
    let b = s.as_bytes();
    // Printable ASCII, the common case, in one pass without early exit, which the compiler vectorises.
    if !b.iter().fold(false, |seen, x| seen | !(0x20..0x7f).contains(x)) {
        return false;
    }
    b.iter().enumerate().any(|(i, &x)| match x {
        b'\n' => !newline_allowed,
        0x00..=0x1f | 0x7f => true,
        0xc2 => b.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)),
        0xd8 => b.get(i + 1) == Some(&0x9c),
        0xe2 => matches!(b.get(i + 1), Some(0x80 | 0x81)) && s[i..].chars().next().is_some_and(is_unsafe),
        _ => false,
    })
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `s` for one line of terminal text: every control character (newlines included) as a visible
/// escape (`\n`, `\r`, `\t`, `\x1b`, `\u{202e}`); everything else unchanged.
pub fn text(s: &str) -> Cow<'_, str> {
    if !has_unsafe(s, false) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Multi-line text (an artifact's content, a unified diff): [`text`] on every line, the `\n` line
/// breaks kept (a `\r` before one is shown as `\r`).
pub fn lines(s: &str) -> Cow<'_, str> {
    if !has_unsafe(s, true) {
        return Cow::Borrowed(s);
    }
    let parts: Vec<Cow<'_, str>> = s.split('\n').map(text).collect();
    Cow::Owned(parts.join("\n"))
}

/// Where a markdown string lands: a table cell needs `|` escaped even inside code spans (GFM splits
/// the row first); elsewhere a `\|` inside a code span would show its backslash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Md {
    /// A GFM table cell.
    Cell,
    /// A paragraph, list item or heading.
    Inline,
}

/// Text for markdown, on one line: white space runs (newlines included) become one space, control
/// characters are escaped as in [`text`], `\`, `|`, `<`, `&`, `[` and `]` are escaped so that
/// no HTML (`<details>`), no entity, no table cell and no link or image can be injected. `>` starts
/// nothing after the first character (HTML and autolinks need a `<`), so it stays as it is (`a -> b`,
/// not `a -&gt; b`, which reads as noise in the raw comment); only a leading `>`, which would open a
/// block quote in a list item, is escaped as `\>`.
///
/// Code spans the text contains (`` `<tn>-nodes` ``, as trellis writes reasons) are kept, closed
/// exactly as CommonMark closes them (a backtick run of the same length); a backtick that opens no
/// code span is escaped. Inside a code span nothing is interpreted, so only `|` is escaped there,
/// in table cells.
pub fn md_inline(s: &str, at: Md) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = text(&flat);
    let chars: Vec<char> = flat.chars().collect();
    let mut out = String::with_capacity(flat.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            let run = backtick_run(&chars, i);
            match closing_run(&chars, i + run, run) {
                Some(close) => {
                    // The whole code span, delimiters included.
                    for &d in &chars[i..close + run] {
                        if d == '|' && at == Md::Cell {
                            out.push_str("\\|");
                        } else {
                            out.push(d);
                        }
                    }
                    i = close + run;
                }
                None => {
                    for _ in 0..run {
                        out.push_str("\\`");
                    }
                    i += run;
                }
            }
            continue;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' if i == 0 => out.push_str("\\>"),
            '&' => out.push_str("&amp;"),
            '[' => out.push_str("\\["),
            ']' => out.push_str("\\]"),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// The length of the backtick run starting at `i`.
fn backtick_run(chars: &[char], i: usize) -> usize {
    chars[i..].iter().take_while(|&&c| c == '`').count()
}

/// The start of the first backtick run of exactly `len` backticks at or after `from`.
fn closing_run(chars: &[char], from: usize, len: usize) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = backtick_run(chars, i);
            if run == len {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

/// `s` as a markdown code span that shows it literally: control characters escaped as in [`text`],
/// delimited by a backtick run longer than any in `s` (padded with a space where `s` starts or ends
/// with a backtick or a space, which CommonMark would otherwise take away); in a table cell `|` is
/// escaped.
pub fn md_code(s: &str, at: Md) -> String {
    let mut body = text(s).into_owned();
    if at == Md::Cell {
        body = body.replace('|', "\\|");
    }
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if body.starts_with(['`', ' ']) || body.ends_with(['`', ' ']) { " " } else { "" };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// `s` for HTML text (the `<summary>` of a collapsed section): control characters escaped as in
/// [`text`], then `&`, `<`, `>`, `"` and `'` as entities.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in text(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A backtick fence for a fenced code block: longer than any backtick run in `content`, at least three.
pub fn fence_for(content: &str) -> String {
    let longest = content.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-level check agrees with [`is_unsafe`] on every character up to U+30000, alone and
    /// between others (with newlines allowed too, as [`lines`] checks).
    #[test]
    fn has_unsafe_agrees_with_is_unsafe_on_every_character() {
        for c in (0..0x30000).filter_map(char::from_u32) {
            for s in [c.to_string(), format!("a—{c}é"), format!("{c}x")] {
                assert_eq!(has_unsafe(&s, false), s.chars().any(is_unsafe), "{:?}", c as u32);
                assert_eq!(has_unsafe(&s, true), s.chars().any(|c| c != '\n' && is_unsafe(c)), "{:?}", c as u32);
            }
        }
    }

    #[test]
    fn text_leaves_ordinary_text_alone() {
        assert!(matches!(text("shoot--dev--alpha grüße <tn>"), Cow::Borrowed(_)));
    }

    #[test]
    fn text_escapes_every_control_character() {
        assert_eq!(
            text("a\x1b[2Jb\rc\nd\te\u{7f}\u{9b}f\u{202e}g\u{2028}"),
            "a\\x1b[2Jb\\rc\\nd\\te\\x7f\\x9bf\\u{202e}g\\u{2028}"
        );
    }

    #[test]
    fn lines_keep_line_breaks() {
        assert_eq!(lines("a: 1\r\nb: \x1b[31m\n"), "a: 1\\r\nb: \\x1b[31m\n");
    }

    #[test]
    fn md_inline_keeps_code_spans_and_escapes_the_rest() {
        assert_eq!(
            md_inline("a | b <tn>-nodes `<tn>-workers`\nnext", Md::Cell),
            "a \\| b &lt;tn>-nodes `<tn>-workers` next"
        );
        assert_eq!(md_inline("`a|b`", Md::Cell), "`a\\|b`");
        assert_eq!(md_inline("`a|b`", Md::Inline), "`a|b`");
        // A backtick that opens nothing cannot hide HTML from the escaping.
        assert_eq!(md_inline("x ` <details><summary>y", Md::Inline), "x \\` &lt;details>&lt;summary>y");
        // Runs close only on a run of the same length.
        assert_eq!(md_inline("``a`b`` <c>", Md::Inline), "``a`b`` &lt;c>");
        assert_eq!(md_inline("``a` <c>", Md::Inline), "\\`\\`a\\` &lt;c>");
        assert_eq!(md_inline("a\\b & c", Md::Inline), "a\\\\b &amp; c");
        assert_eq!(md_inline("![x](http://y) zones[1]", Md::Inline), "!\\[x\\](http://y) zones\\[1\\]");
    }

    #[test]
    fn md_code_cannot_be_broken_out_of() {
        assert_eq!(md_code("shoot--dev--alpha", Md::Cell), "`shoot--dev--alpha`");
        assert_eq!(md_code("a`b", Md::Inline), "``a`b``");
        assert_eq!(md_code("`x", Md::Inline), "`` `x ``");
        assert_eq!(md_code("a|b\n", Md::Cell), "`a\\|b\\n`");
    }

    #[test]
    fn html_escapes_markup() {
        assert_eq!(
            html("</summary><img src=x onerror='y'>&"),
            "&lt;/summary&gt;&lt;img src=x onerror=&#39;y&#39;&gt;&amp;"
        );
    }
}
