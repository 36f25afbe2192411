//! The plan as one self-contained HTML page (`show --output html`): summary, the DAG as SVG (laid out
//! by `layout-rs`), each node's reason and attribute changes, warnings and artifacts.
//!
//! No network: no scripts, fonts or images; the CSS is inline. Every string from the plan is
//! HTML-escaped ([`escape::html`]); the SVG's labels are escaped by `layout-rs` after control
//! characters are made visible ([`escape::text`]). Each graph node is an SVG group
//! `<g class="node action-<action> own-<ownership>">`, one per plan node.

use crate::escape;
use crate::graphs::{self, fill};
use crate::render::{change_text, check_text, counts_line};
use crate::{Node, Plan, PlanSet, Summary};
use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::style::StyleAttr;
use layout::std_shapes::render::get_shape_size;
use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
use layout::topo::layout::VisualGraph;
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0 auto;padding:1rem;max-width:72rem;line-height:1.4}\
h1{font-size:1.4rem}h2{font-size:1.2rem;border-bottom:1px solid #ccc}\
.graph{overflow:auto;border:1px solid #ddd;padding:.5rem}.graph svg{width:100%;height:auto;min-width:36rem}\
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
    let _ = writeln!(out, "<h1>{}</h1>\n<p>{}</p>", escape::html(&title), escape::html(&counts_line(&total)));
    for plan in &set.plans {
        plan_html(&mut out, plan);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn plan_html(out: &mut String, plan: &Plan) {
    let _ = writeln!(
        out,
        "<section>\n<h2>{} ({})</h2>",
        escape::html(&plan.shoot),
        escape::html(&plan.provider_and_mode())
    );
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
    let _ = writeln!(out, "<div class=\"graph\">{}</div>", svg(plan));
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

/// The DAG as an SVG drawing, one group per node.
pub fn svg(plan: &Plan) -> String {
    if plan.nodes.is_empty() {
        return "<p>No nodes.</p>".to_string();
    }
    let dir = Orientation::TopToBottom;
    let mut vg = VisualGraph::new(dir);
    let nodes: Vec<&Node> = plan.nodes.iter().collect();
    let handles: Vec<_> = nodes
        .iter()
        .map(|n| {
            let shape = ShapeKind::new_box(&svg_label(n));
            let look = StyleAttr::new(Color::fast("black"), 1, Color::from_name(fill(n.action())), 4, FONT_SIZE);
            let size = get_shape_size(dir, &shape, FONT_SIZE, false);
            let class = format!("class=\"node action-{} own-{}\"", n.action().as_str(), n.ownership().as_str());
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
    match svg.find("<svg") {
        Some(start) => svg[start..].to_string(),
        None => svg,
    }
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
