//! The plan as one self-contained HTML page (`show --output html`): summary, the DAG as SVG (laid out
//! by `layout-rs`), each node's reason and attribute changes, warnings and artifacts.
//!
//! No network: no scripts, fonts or images; the CSS is inline. Every string from the plan is
//! HTML-escaped ([`escape::html`]); the SVG's labels are escaped by `layout-rs` after control
//! characters are made visible ([`escape::text`]). Each graph node is an SVG group
//! `<g class="node action-<action> own-<ownership>">`, one per plan node, holding its box and a
//! `<title>` (the tooltip: the node's address and cloud id); the label on the box is short, the
//! kind and the name.
//!
//! The graph is drawn at its natural size (1 SVG unit = 1 CSS px, labels in a 15 px monospace
//! font, every box as wide as its longest label line) inside a box that scrolls: a big graph — a
//! BYO shoot's verified and skipped resources — scrolls instead of shrinking its labels.
//!
//! A fleet (more than one plan) starts with a summary table, one row per shoot linking to its
//! section: the page's table of contents. Section anchors derive from the shoot's technical id
//! ([`anchors`]).

use crate::escape;
use crate::graphs::{self, fill};
use crate::render::{change_text, check_text, counts_line};
use crate::{Node, Plan, PlanSet, Summary};
use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::geometry::Point;
use layout::core::style::StyleAttr;
use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
use layout::topo::layout::VisualGraph;
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0 auto;padding:1rem;max-width:72rem;line-height:1.4}\
h1{font-size:1.4rem}h2{font-size:1.2rem;border-bottom:1px solid #ccc}\
.graph{overflow:auto;border:1px solid #ddd;padding:.5rem}.graph svg{display:block;max-width:none}\
.graph svg text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,\"DejaVu Sans Mono\",\"Liberation Mono\",monospace;pointer-events:none}\
table.shoots{border-collapse:collapse;margin:.5rem 0}table.shoots th,table.shoots td{padding:.2rem .6rem;border-bottom:1px solid #ddd;text-align:right}\
table.shoots th:nth-child(-n+2),table.shoots td:nth-child(-n+2){text-align:left}table.shoots tfoot td{font-weight:bold}\
pre{overflow:auto;background:#f6f6f6;padding:.5rem;white-space:pre-wrap;word-break:break-all}\
code{word-break:break-all}ul{padding-left:1.2rem}.warn{color:#8a4b00}\
g.own-user rect{stroke-dasharray:6 4}g.own-runtime rect{stroke-dasharray:2 3}\
@media (max-width:600px){body{padding:.5rem}}";

/// The whole page.
pub fn html(set: &PlanSet) -> String {
    let mut total = Summary::default();
    for p in &set.plans {
        total.add(&p.summary);
    }
    let mut out = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let title = match set.plans.as_slice() {
        [plan] => format!("trellis plan: {}", plan.shoot),
        plans => format!("trellis plan: fleet of {} shoot(s)", plans.len()),
    };
    let _ = writeln!(out, "<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>", escape::html(&title));
    let _ =
        writeln!(out, "<h1 id=\"top\">{}</h1>\n<p>{}</p>", escape::html(&title), escape::html(&counts_line(&total)));
    let anchors = anchors(set);
    if set.plans.len() > 1 {
        summary_table(&mut out, set, &anchors, &total);
    }
    for (plan, anchor) in set.plans.iter().zip(&anchors) {
        plan_html(&mut out, plan, anchor, set.plans.len() > 1);
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// A fleet's summary: one row per plan, its shoot linking to its section, and the totals — the
/// page's table of contents.
fn summary_table(out: &mut String, set: &PlanSet, anchors: &[String], total: &Summary) {
    out.push_str(
        "<nav aria-label=\"Shoots\">\n<table class=\"shoots\">\n<thead><tr><th>shoot</th><th>provider, mode</th>",
    );
    out.push_str("<th>create</th><th>update</th><th>replace</th><th>delete</th><th>verify</th><th>skip</th><th>warnings</th></tr></thead>\n<tbody>\n");
    for (plan, anchor) in set.plans.iter().zip(anchors) {
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#{anchor}\"><code>{}</code></a></td><td>{}</td>{}<td>{}</td></tr>",
            escape::html(&plan.shoot),
            escape::html(&plan.provider_and_mode()),
            count_cells(&plan.summary),
            plan.warnings.len()
        );
    }
    let warnings: usize = set.plans.iter().map(|p| p.warnings.len()).sum();
    let _ = writeln!(
        out,
        "</tbody>\n<tfoot><tr><td>total</td><td></td>{}<td>{warnings}</td></tr></tfoot>\n</table>\n</nav>",
        count_cells(total)
    );
}

fn count_cells(s: &Summary) -> String {
    [s.create, s.update, s.replace, s.delete, s.verify, s.skip].map(|n| format!("<td>{n}</td>")).concat()
}

/// Each plan's section anchor, unique in the page: the shoot's technical id with every character
/// but ASCII letters, digits, `-` and `_` replaced by `_` (so an id never needs escaping in
/// `href="#…"`), a derived plan's provider appended (a shoot's two plans), and `-2`, `-3`, … on a
/// repeat. No anchor holds a `.`: the ids inside a plan's graph are its anchor, a `.` and the
/// drawing's own id.
pub fn anchors(set: &PlanSet) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(set.plans.len());
    for plan in &set.plans {
        let mut base: String = plan
            .shoot
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') { c } else { '_' })
            .collect();
        if base.is_empty() {
            base.push_str("shoot");
        }
        if plan.is_derived() {
            let _ = write!(base, "-{}", plan.provider.as_str());
        }
        let mut anchor = base.clone();
        let mut n = 1;
        while anchor == "top" || out.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        out.push(anchor);
    }
    out
}

fn plan_html(out: &mut String, plan: &Plan, anchor: &str, fleet: bool) {
    let _ = writeln!(
        out,
        "<section>\n<h2 id=\"{anchor}\">{} ({})</h2>",
        escape::html(&plan.shoot),
        escape::html(&plan.provider_and_mode())
    );
    if fleet {
        out.push_str("<p><a href=\"#top\">back to the summary</a></p>\n");
    }
    let _ = writeln!(
        out,
        "<p>{}<br>digest <code>{}</code></p>",
        escape::html(&counts_line(&plan.summary)),
        escape::html(&plan.digest)
    );
    if !plan.warnings.is_empty() {
        out.push_str("<h3>Warnings</h3>\n<ul class=\"warn\">\n");
        for w in &plan.warnings {
            let _ = writeln!(out, "<li>{}</li>", escape::html(w));
        }
        out.push_str("</ul>\n");
    }
    let _ = writeln!(out, "<div class=\"graph\">{}</div>", svg(plan, &format!("{anchor}.")));
    out.push_str("<h3>Nodes</h3>\n");
    for n in &plan.nodes {
        node_html(out, n);
    }
    let artifacts = serde_json::to_string_pretty(&plan.artifacts).unwrap_or_default();
    let _ = writeln!(out, "<details><summary>Artifacts</summary>\n<pre>{}</pre>\n</details>", html_lines(&artifacts));
    out.push_str("</section>\n");
}

fn node_html(out: &mut String, n: &Node) {
    let _ = writeln!(
        out,
        "<details><summary><code>{}</code> ({}, {})</summary>\n<p>{}{}</p>",
        escape::html(&graphs::label(n)),
        n.action().as_str(),
        n.ownership().as_str(),
        n.reason.code().map(|c| format!("<code class=\"reason-code\">{c}</code> ")).unwrap_or_default(),
        escape::html(n.reason.detail())
    );
    // A delete names what goes by its id, as the text and markdown do (its changes are empty).
    let gone = (n.action() == crate::Action::Delete)
        .then(|| n.id.as_ref().map(|id| format!("id: {}", escape::text(id))))
        .flatten();
    let lines: Vec<String> =
        gone.into_iter().chain(n.changes().iter().map(change_text)).chain(n.checks().iter().map(check_text)).collect();
    if !lines.is_empty() {
        out.push_str("<ul>\n");
        for l in lines {
            let _ = writeln!(out, "<li><code>{}</code></li>", escape::html(&l));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</details>\n");
}

/// The DAG as an SVG drawing, one group per node; every `id` in it (arrow markers, edge paths) starts
/// with `prefix`, so the graphs of one page share none.
pub fn svg(plan: &Plan, prefix: &str) -> String {
    if plan.nodes.is_empty() {
        return "<p>No nodes.</p>".to_string();
    }
    // Left to right, as the DOT graph: a BYO shoot's many unconnected (verified, skipped) nodes
    // stack in a column the page scrolls down, not in a row wider than the page.
    let dir = Orientation::LeftToRight;
    let mut vg = VisualGraph::new(dir);
    let nodes: Vec<&Node> = plan.nodes.iter().collect();
    let handles: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let label = svg_label(n);
            let size = box_size(&label);
            let shape = ShapeKind::new_box(&label);
            let look = StyleAttr::new(Color::fast("black"), 1, Color::from_name(fill(n.action())), 4, FONT_SIZE);
            // `data-node` marks the group for its tooltip (below).
            let class = format!(
                "class=\"node action-{} own-{}\" data-node=\"{i}\"",
                n.action().as_str(),
                n.ownership().as_str()
            );
            vg.add_node(Element::create_with_properties(shape, look, dir, size, class))
        })
        .collect();
    for (from, to) in graphs::edges(&nodes) {
        vg.add_edge(Arrow::simple(""), handles[from], handles[to]);
    }
    let mut writer = SVGWriter::new();
    vg.do_it(false, false, false, &mut writer);
    let svg = writer.finalize();
    // Inline SVG in HTML has no XML prolog.
    let mut svg = match svg.find("<svg") {
        Some(start) => svg[start..].to_string(),
        None => svg,
    };
    // The writer sizes the drawing by guesses (a label's length grows its height); the boxes, and
    // the connectors long edges pass through, bound it.
    let (mut width, mut height) = (0f64, 0f64);
    for h in vg.iter_nodes() {
        let (_, bottom_right) = vg.pos(h).bbox(false);
        width = width.max(bottom_right.x);
        height = height.max(bottom_right.y);
    }
    let (width, height) = ((width + MARGIN).ceil(), (height + MARGIN).ceil());
    if let Some(end) = svg.find('>') {
        svg.replace_range(
            ..end,
            &format!("<svg width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\""),
        );
    }
    // The writer's ids are the same in every drawing. Its labels escape `"`: these patterns are markup.
    svg = svg
        .replace(" id=\"", &format!(" id=\"{prefix}"))
        .replace("href=\"#", &format!("href=\"#{prefix}"))
        .replace("=\"url(#", &format!("=\"url(#{prefix}"));
    // Each node's tooltip: its address and, when known, its cloud id (the label is only kind and name).
    for (i, n) in nodes.iter().enumerate() {
        let title = match &n.id {
            Some(id) => format!("{}\n{}", escape::text(&n.address), escape::text(id)),
            None => escape::text(&n.address).to_string(),
        };
        svg = svg.replacen(&format!(" data-node=\"{i}\">"), &format!("><title>{}</title>", escape::html(&title)), 1);
    }
    svg
}

/// Room around the drawing (`layout-rs` starts it at 30, 30).
const MARGIN: f64 = 30.0;

/// A node box's size: as wide as its longest label line in the page's monospace font (0.6 em a
/// character; 0.65 em counted, for fonts a little wider) plus padding, and its lines high.
fn box_size(label: &str) -> Point {
    let chars = label.lines().map(|l| l.chars().count()).max().unwrap_or(0).max(1);
    let lines = label.lines().count().max(1);
    let font = FONT_SIZE as f64;
    Point::new((chars as f64 * font * 0.65 + 2.0 * font).ceil(), lines as f64 * font + font)
}

/// The labels' font size: the same as `layout-rs` gives edge labels, so the SVG holds one font class
/// (the writer keeps its font classes in a hash map: two would be written in a random order).
const FONT_SIZE: usize = 15;

/// Multi-line text for a `<pre>`: [`escape::html`] on each line, the line breaks kept.
fn html_lines(s: &str) -> String {
    s.split('\n').map(escape::html).collect::<Vec<_>>().join("\n")
}

/// A graph node's label: the action's symbol and the kind on one line, the name on the next (the full
/// address is in the node list below the graph); control characters made visible.
fn svg_label(n: &Node) -> String {
    let symbol = n.action().symbol();
    let head = if symbol.is_empty() { n.kind.as_str().to_string() } else { format!("{symbol} {}", n.kind.as_str()) };
    format!("{head}\n{}", escape::text(&n.name))
}
