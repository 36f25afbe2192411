//! The plan's dependency graph as Graphviz DOT and as Mermaid (`show --output dot|mermaid`).
//!
//! Nodes are the plan's nodes, edges its `depends_on` (an edge runs from the dependency to the node
//! that waits for it). Both renderers colour a node by its action (one fill per [`Action`], shared by
//! every graph renderer: [`fill`]) and draw its border by ownership: managed solid, user-owned dashed,
//! runtime-owned dotted. Output is a pure function of the plan: nodes in plan order (sorted by
//! address), edges in node order, then in `depends_on` order. A dependency that is not a node of the
//! same plan is not drawn (plans never have one; a hand-edited file could).
//!
//! A fleet gets one subgraph per shoot ([`dot_set`], [`mermaid_set`]); node ids then carry the
//! shoot's index, so equal addresses in two shoots stay two nodes.

use crate::escape;
use crate::{Action, Node, Ownership, Plan, PlanSet};
use std::collections::HashMap;
use std::fmt::Write;

/// The fill colour of a node with this action (CSS hex), in every graph renderer.
pub fn fill(a: Action) -> &'static str {
    match a {
        Action::Create => "#b7ebb0",
        Action::Update => "#f3e39a",
        Action::Replace => "#f6b98a",
        Action::Delete => "#f19c9c",
        Action::Verify => "#bfe0f7",
        Action::Read => "#d9d0f2",
        Action::Noop => "#ffffff",
        Action::Skip => "#e6e6e6",
    }
}

/// The border of a node with this ownership: `solid`, `dashed` or `dotted` (Graphviz style names).
pub fn border(o: Ownership) -> &'static str {
    match o {
        Ownership::Managed => "solid",
        Ownership::User => "dashed",
        Ownership::Runtime => "dotted",
    }
}

/// A node's label: the action's symbol (none for a no-op) and the address.
pub fn label(n: &Node) -> String {
    match n.action() {
        Action::Noop => n.address.clone(),
        a => format!("{} {}", a.symbol(), n.address),
    }
}

/// The edges among `nodes` as index pairs (dependency, dependent), in node then `depends_on` order.
pub fn edges(nodes: &[&Node]) -> Vec<(usize, usize)> {
    let index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.address.as_str(), i)).collect();
    let mut out = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        for dep in &n.depends_on {
            if let Some(&d) = index.get(dep.as_str()) {
                out.push((d, i));
            }
        }
    }
    out
}

/// The nodes a graph draws: all of them, or only those applying writes (create, update, replace, delete).
fn selected(plan: &Plan, only_changed: bool) -> Vec<&Node> {
    plan.nodes.iter().filter(|n| !only_changed || n.action().is_write()).collect()
}

// ---------------------------------------------------------------------------------------------- DOT

/// One plan as a DOT digraph, every node drawn.
pub fn dot(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", dot_id(&plan.shoot));
    let _ =
        writeln!(out, "  label={};\n  labelloc=t;", dot_id(&format!("{} ({})", plan.shoot, plan.provider_and_mode())));
    dot_defaults(&mut out);
    dot_body(&mut out, plan, None, "  ");
    out.push_str("}\n");
    out
}

/// A plan file as DOT: one plan as [`dot`], a fleet as one digraph with a cluster per shoot.
pub fn dot_set(set: &PlanSet) -> String {
    if let [plan] = set.plans.as_slice() {
        return dot(plan);
    }
    let mut out = String::from("digraph \"fleet\" {\n");
    let _ = writeln!(out, "  label={};\n  labelloc=t;", dot_id(&format!("fleet of {} shoot(s)", set.plans.len())));
    dot_defaults(&mut out);
    for (i, plan) in set.plans.iter().enumerate() {
        let _ = writeln!(out, "  subgraph \"cluster_{i}\" {{");
        let _ = writeln!(out, "    label={};", dot_id(&format!("{} ({})", plan.shoot, plan.provider_and_mode())));
        dot_body(&mut out, plan, Some(i), "    ");
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

fn dot_defaults(out: &mut String) {
    out.push_str("  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n");
}

fn dot_body(out: &mut String, plan: &Plan, shoot: Option<usize>, indent: &str) {
    let id = |n: &Node| match shoot {
        None => dot_id(&n.address),
        Some(i) => dot_id(&format!("{i}/{}", n.address)),
    };
    let nodes = selected(plan, false);
    for n in &nodes {
        let _ = writeln!(
            out,
            "{indent}{} [label={}, style=\"rounded,filled,{}\", fillcolor=\"{}\"];",
            id(n),
            dot_id(&label(n)),
            border(n.ownership()),
            fill(n.action())
        );
    }
    for (from, to) in edges(&nodes) {
        let _ = writeln!(out, "{indent}{} -> {};", id(nodes[from]), id(nodes[to]));
    }
}

/// A quoted DOT id: control characters escaped as [`escape::text`], then `\` and `"`.
fn dot_id(s: &str) -> String {
    format!("\"{}\"", escape::text(s).replace('\\', "\\\\").replace('"', "\\\""))
}

// ------------------------------------------------------------------------------------------ Mermaid

/// One plan as a Mermaid flowchart (GitHub renders it in a ```` ```mermaid ```` block): every node,
/// or with `only_changed` only the nodes that write (and the edges among them). A plan without such
/// nodes gets one node saying so, as an empty flowchart renders as nothing.
pub fn mermaid(plan: &Plan, only_changed: bool) -> String {
    let mut out = String::from("flowchart LR\n");
    let used = mermaid_body(&mut out, plan, only_changed, "n", "  ");
    mermaid_classes(&mut out, &used);
    out
}

/// A plan file as Mermaid: one plan as [`mermaid`], a fleet with a subgraph per shoot.
pub fn mermaid_set(set: &PlanSet, only_changed: bool) -> String {
    if let [plan] = set.plans.as_slice() {
        return mermaid(plan, only_changed);
    }
    let mut out = String::from("flowchart LR\n");
    let mut used = Vec::new();
    for (i, plan) in set.plans.iter().enumerate() {
        let _ = writeln!(
            out,
            "  subgraph s{i}[\"{}\"]",
            mermaid_text(&format!("{} ({})", plan.shoot, plan.provider_and_mode()))
        );
        used.extend(mermaid_body(&mut out, plan, only_changed, &format!("s{i}n"), "    "));
        out.push_str("  end\n");
    }
    mermaid_classes(&mut out, &used);
    out
}

/// Writes the nodes and edges; returns each drawn node's id with its action and ownership.
fn mermaid_body(
    out: &mut String,
    plan: &Plan,
    only_changed: bool,
    prefix: &str,
    indent: &str,
) -> Vec<(String, Action, Ownership)> {
    let nodes = selected(plan, only_changed);
    if nodes.is_empty() {
        let what = if only_changed { "no changes" } else { "no nodes" };
        let _ = writeln!(out, "{indent}{prefix}none[\"{what}\"]");
        return Vec::new();
    }
    let mut used = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let id = format!("{prefix}{i}");
        let _ = writeln!(out, "{indent}{id}[\"{}\"]", mermaid_text(&label(n)));
        used.push((id, n.action(), n.ownership()));
    }
    for (from, to) in edges(&nodes) {
        let _ = writeln!(out, "{indent}{prefix}{from} --> {prefix}{to}");
    }
    used
}

/// One `classDef` per action and ownership in use, then the `class` lines, in a fixed order.
fn mermaid_classes(out: &mut String, used: &[(String, Action, Ownership)]) {
    for a in Action::ALL {
        let ids: Vec<&str> = used.iter().filter(|u| u.1 == a).map(|u| u.0.as_str()).collect();
        if !ids.is_empty() {
            let _ = writeln!(out, "  classDef {} fill:{},stroke:#333,color:#000", a.as_str(), fill(a));
            let _ = writeln!(out, "  class {} {}", ids.join(","), a.as_str());
        }
    }
    for (o, dash) in [(Ownership::User, "6 4"), (Ownership::Runtime, "2 3")] {
        let ids: Vec<&str> = used.iter().filter(|u| u.2 == o).map(|u| u.0.as_str()).collect();
        if !ids.is_empty() {
            let _ = writeln!(out, "  classDef {} stroke-dasharray:{dash}", o.as_str());
            let _ = writeln!(out, "  class {} {}", ids.join(","), o.as_str());
        }
    }
}

/// Text inside a quoted Mermaid label: control characters escaped as [`escape::text`]; every
/// character that Mermaid or GitHub's HTML labels could read as syntax (quotes, `#`, `<`, `>`, `&`,
/// brackets, backticks, `|`, `%`, `;`, `\`…) as a Mermaid entity code `#NN;`. Letters, digits, space
/// and `-_./:,+~?=@*!'()` stay as they are.
pub fn mermaid_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in escape::text(s).chars() {
        if c.is_alphanumeric() || " -_./:,+~?=@*!'()".contains(c) {
            out.push(c);
        } else {
            let _ = write!(out, "#{};", c as u32);
        }
    }
    out
}
