//! The graph renderers (DOT, Mermaid): styling, fleets, determinism and hostile names.

use crate::common;

use common::*;
use trellis_plans::graphs;
use trellis_plans::{Action, PlanSet};

fn fleet() -> PlanSet {
    set(vec![azure_user_managed_plan("shoot--dev--beta"), azure_managed_plan("shoot--dev--alpha")])
}

#[test]
fn dot_of_every_action_and_ownership() {
    insta::assert_snapshot!("graphs_dot_drifted", graphs::dot(&azure_drifted_plan("shoot--dev--alpha")));
}

#[test]
fn dot_of_a_fleet_has_one_cluster_per_shoot() {
    let dot = graphs::dot_set(&fleet());
    assert_eq!(dot.matches("subgraph \"cluster_").count(), 2, "{dot}");
    insta::assert_snapshot!("graphs_dot_fleet", dot);
}

#[test]
fn mermaid_of_every_action_and_ownership() {
    insta::assert_snapshot!("graphs_mermaid_drifted", graphs::mermaid(&azure_drifted_plan("shoot--dev--alpha"), false));
}

#[test]
fn mermaid_of_a_fleet_has_one_subgraph_per_shoot() {
    let m = graphs::mermaid_set(&fleet(), false);
    assert_eq!(m.matches("\n  subgraph ").count(), 2, "{m}");
    assert_eq!(m.matches("\n  end\n").count(), 2, "{m}");
    insta::assert_snapshot!("graphs_mermaid_fleet", m);
}

#[test]
fn mermaid_only_changed_draws_only_writes() {
    let plan = azure_drifted_plan("shoot--dev--alpha");
    let m = graphs::mermaid(&plan, true);
    let writes = plan.nodes.iter().filter(|n| n.action().is_write()).count();
    assert!(writes > 0 && writes < plan.nodes.len());
    assert_eq!(node_lines(&m).len(), writes, "{m}");
    for n in plan.nodes.iter().filter(|n| !n.action().is_write()) {
        assert!(!m.contains(&graphs::mermaid_text(&n.address)), "{} drawn:\n{m}", n.address);
    }
    let unchanged = azure_managed_plan("shoot--dev--alpha");
    let mut noop = unchanged.clone();
    noop.nodes.retain(|n| !n.action().is_write());
    assert_eq!(graphs::mermaid(&noop, true), "flowchart LR\n  nnone[\"no changes\"]\n");
}

#[test]
fn every_node_and_edge_is_drawn_once() {
    let plan = azure_user_managed_plan("shoot--dev--beta");
    let edges: usize = plan.nodes.iter().map(|n| n.depends_on.len()).sum();
    assert!(edges > 0);
    let m = graphs::mermaid(&plan, false);
    assert_eq!(node_lines(&m).len(), plan.nodes.len());
    assert_eq!(m.matches(" --> ").count(), edges);
    let dot = graphs::dot(&plan);
    assert_eq!(dot.matches("fillcolor=").count(), plan.nodes.len());
    assert_eq!(dot.matches(" -> ").count(), edges);
    for a in Action::ALL {
        let count = plan.nodes.iter().filter(|n| n.action() == a).count();
        assert_eq!(dot.matches(&format!("fillcolor=\"{}\"", graphs::fill(a))).count(), count, "{a:?}");
    }
}

/// The label lines of a Mermaid flowchart: `ID["…"]`.
fn node_lines(m: &str) -> Vec<&str> {
    m.lines().filter(|l| l.trim_start().starts_with('n') && l.contains("[\"")).collect()
}

/// Mermaid reads a quoted label up to the next `"`; GitHub renders labels as HTML. A hostile address
/// must stay inside its label: no quote, bracket, angle bracket, backtick, pipe, raw `&` or line break
/// in it, and every `#` starts an entity code.
#[test]
fn mermaid_labels_of_hostile_names_stay_labels() {
    for payload in [MARKDOWN_ATTACK, TERMINAL_ATTACK, "\"]) --> x[\"<b>#quot;%%{init}%% ;end"] {
        let plan = hostile(&azure_drifted_plan("shoot--dev--alpha"), payload);
        let m = graphs::mermaid_set(&set(vec![plan.clone(), plan.clone()]), false);
        assert_eq!(m.matches(" --> ").count(), 2 * plan.nodes.iter().map(|n| n.depends_on.len()).sum::<usize>());
        for line in m.lines() {
            assert!(raw_controls(line).is_empty(), "{line:?}");
            let Some(open) = line.find("[\"") else { continue };
            assert!(line.ends_with("\"]"), "{line}");
            let inner = &line[open + 2..line.len() - 2];

            assert!(entities_only(inner), "{line}");
        }
    }
}

/// Every `#` and `;` of `s` belongs to an entity code `#123;`, and nothing else is syntax.
fn entities_only(s: &str) -> bool {
    let mut rest = s;
    while let Some(i) = rest.find(['#', ';', '"', '[', ']', '<', '>', '`', '|', '{', '}', '&', '\\', '%']) {
        if !rest[i..].starts_with('#') {
            return false;
        }
        let after = &rest[i + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || !after[digits..].starts_with(';') {
            return false;
        }
        rest = &after[digits + 1..];
    }
    true
}

#[test]
fn dot_ids_of_hostile_names_stay_quoted() {
    let plan = hostile(&azure_drifted_plan("shoot--dev--alpha"), "\" -> evil [label=\"x\"]; \\\"\n}");
    let dot = graphs::dot(&plan);
    for line in dot.lines() {
        assert!(raw_controls(line).is_empty(), "{line:?}");
    }
    // Outside quoted ids, no line holds more than the renderer's own syntax.
    for line in dot.lines() {
        let mut unquoted = String::new();
        let mut quoted = false;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '\\') => {
                    chars.next();
                }
                (_, '"') => quoted = !quoted,
                (false, c) => unquoted.push(c),
                _ => {}
            }
        }
        assert!(!quoted, "unbalanced quotes: {line}");
        assert!(!unquoted.contains("evil"), "{line}");
    }
}

#[test]
fn mermaid_text_keeps_plain_addresses() {
    assert_eq!(graphs::mermaid_text("+ azure.subnet.rg-1.nodes"), "+ azure.subnet.rg-1.nodes");
    assert_eq!(graphs::mermaid_text("a\"<b>#&"), "a#34;#60;b#62;#35;#38;");
    assert_eq!(graphs::mermaid_text("x\ny"), "x#92;ny");
}

#[test]
fn html_report_of_hostile_names_stays_one_page() {
    for payload in [MARKDOWN_ATTACK, TERMINAL_ATTACK, "<script>alert(1)</script><svg onload=alert(2)>"] {
        let plan = hostile(&azure_drifted_plan("shoot--dev--alpha"), payload);
        let html = trellis_plans::html::html(&set(vec![plan.clone(), plan.clone()]));
        assert!(raw_controls(&html.replace('\n', "")).is_empty());
        for injected in ["<script", "<img", "<svg onload", "<details open>", "</summary></details>"] {
            assert!(!html.contains(injected), "{injected:?} in the page");
        }
        assert_eq!(html.matches("<g class=\"node ").count(), 2 * plan.nodes.len());
        assert_eq!(html.matches("<svg ").count(), 2);
        assert_eq!(html.matches("<details>").count(), 2 * (plan.nodes.len() + 1));
    }
}

#[test]
fn html_report_is_deterministic() {
    let s = fleet();
    assert_eq!(trellis_plans::html::html(&s), trellis_plans::html::html(&s));
}

#[test]
fn html_report_anchors_are_safe_and_unique() {
    let names = ["shoot--dev--alpha", "shoot--dev--alpha", "a\"b<c> d#é.x", "", "top", "shoot--dev--alpha-2"];
    let s = set(names.iter().map(|n| azure_drifted_plan(n)).collect());
    let anchors = trellis_plans::html::anchors(&s);
    // The set sorts its plans by shoot.
    assert_eq!(
        anchors,
        ["shoot", "a_b_c__d___x", "shoot--dev--alpha", "shoot--dev--alpha-2", "shoot--dev--alpha-2-2", "top-2"]
    );
    let html = trellis_plans::html::html(&s);
    for a in &anchors {
        assert_eq!(html.matches(&format!(" id=\"{a}\"")).count(), 1, "{a}");
        assert_eq!(html.matches(&format!(" href=\"#{a}\"")).count(), 1, "{a}");
    }
    // One summary row per plan; a single plan's page has none.
    assert_eq!(html.matches("<tr><td><a href=\"#").count(), names.len());
    assert!(!trellis_plans::html::html(&set(vec![azure_drifted_plan("shoot--dev--alpha")])).contains("<table"));
}
