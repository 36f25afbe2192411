//! Snapshots and properties of the human renderers.

use crate::common;

use common::*;
use trellis_plans::render::{self, TextOptions};
use trellis_plans::{Action, PlanSet};

const PLAIN: TextOptions = TextOptions { color: false, verbose: false };
const COLOR: TextOptions = TextOptions { color: true, verbose: false };

fn fleet() -> PlanSet {
    set(vec![azure_user_managed_plan("shoot--dev--beta"), azure_managed_plan("shoot--dev--alpha")])
}

#[test]
fn text_managed_plan() {
    let s = set(vec![azure_managed_plan("shoot--dev--alpha")]);
    insta::assert_snapshot!("text_managed", render::text(&s, &PLAIN));
}

#[test]
fn text_user_managed_egress_plan() {
    let s = set(vec![azure_user_managed_plan("shoot--dev--beta")]);
    insta::assert_snapshot!("text_user_managed", render::text(&s, &PLAIN));
}

#[test]
fn text_every_action() {
    let s = set(vec![azure_drifted_plan("shoot--dev--alpha")]);
    insta::assert_snapshot!("text_drifted", render::text(&s, &PLAIN));
}

#[test]
fn text_fleet() {
    insta::assert_snapshot!("text_fleet", render::text(&fleet(), &PLAIN));
}

#[test]
fn markdown_fleet() {
    insta::assert_snapshot!("markdown_fleet", render::markdown(&fleet()));
}

#[test]
fn markdown_every_action() {
    let s = set(vec![azure_drifted_plan("shoot--dev--alpha")]);
    insta::assert_snapshot!("markdown_drifted", render::markdown(&s));
}

#[test]
fn dot_graph() {
    insta::assert_snapshot!("dot_drifted", render::dot(&azure_drifted_plan("shoot--dev--alpha")));
}

#[test]
fn counts_line_comes_first() {
    let managed = set(vec![azure_managed_plan("shoot--dev--alpha")]);
    let first = render::text(&managed, &PLAIN).lines().next().unwrap().to_string();
    assert_eq!(first, "Plan: 5 to create, 0 to update, 0 to replace, 0 to delete.");

    let byo = set(vec![azure_user_managed_plan("shoot--dev--beta")]);
    let first = render::text(&byo, &PLAIN).lines().next().unwrap().to_string();
    assert_eq!(first, "No changes. Infrastructure matches the configuration. 2 to verify, 2 to read, 3 skipped.");

    // In a fleet a shoot with changes gets its block (its counts line first), a shoot without one line;
    // the fleet's totals come last, in Terraform's words.
    let text = render::text(&fleet(), &PLAIN);
    assert!(
        text.starts_with("Plan: 5 to create, 0 to update, 0 to replace, 0 to delete.\nShoot: shoot--dev--alpha "),
        "{text}"
    );
    assert!(
        text.contains("\n\nshoot--dev--beta (azure, user-managed-egress): no changes; 1 unchanged, 2 to verify, 2 to read, 3 skipped.\n"),
        "{text}"
    );
    assert!(!text.contains("Shoot: shoot--dev--beta "), "{text}");
    let last: Vec<&str> = text.trim_end().lines().rev().take(2).collect();
    assert_eq!(
        last,
        [
            "Plan: 5 to add, 0 to change, 0 to destroy; 2 to verify, 2 to read, 3 skipped.",
            "Fleet: 2 shoots, 1 with changes."
        ]
    );

    // --verbose prints every shoot's block.
    let verbose = render::text(&fleet(), &render::TextOptions { color: false, verbose: true });
    assert!(
        verbose.contains("\n\nNo changes. Infrastructure matches the configuration. 2 to verify, 2 to read, 3 skipped.\nShoot: shoot--dev--beta "),
        "{verbose}"
    );
}

#[test]
fn colour_only_when_asked() {
    for s in [fleet(), set(vec![azure_drifted_plan("shoot--dev--alpha")])] {
        let plain = render::text(&s, &PLAIN);
        assert!(!plain.contains('\x1b'), "escape code without colour:\n{plain}");
        let coloured = render::text(&s, &COLOR);
        assert!(coloured.contains("\x1b["), "no escape code with colour");
        // Stripping the codes gives the plain rendering back.
        assert_eq!(console::strip_ansi_codes(&coloured), plain);
    }
    let drifted = render::text(&set(vec![azure_drifted_plan("shoot--dev--alpha")]), &COLOR);
    assert!(drifted.contains("\x1b[31m-/+ azure.route_table."), "replace is red");
    assert!(drifted.contains("\x1b[31m  - azure.nat_gateway."), "delete is red");
    assert!(drifted.contains("\x1b[33m  ~ azure.subnet."), "update is yellow");
    let byo = render::text(&set(vec![azure_user_managed_plan("shoot--dev--beta")]), &COLOR);
    assert!(byo.contains("\x1b[36m  ? azure.subnet.hub-network.shoot-beta-workers (user)"), "verify is cyan");
    assert!(byo.contains("\x1b[2m  # azure.route_table.shoot--dev--beta.worker_route_table"), "skip is dim");
    let managed = render::text(&set(vec![azure_managed_plan("shoot--dev--alpha")]), &COLOR);
    assert!(managed.contains("\x1b[32m  + azure.subnet."), "create is green");
    // Markdown and dot never carry escape codes.
    assert!(!render::markdown(&fleet()).contains('\x1b'));
}

#[test]
fn verbose_lists_unchanged_nodes() {
    let s = set(vec![azure_drifted_plan("shoot--dev--alpha")]);
    let short = render::text(&s, &PLAIN);
    assert!(short.contains("\n    3 unchanged\n"), "{short}");
    assert!(!short.contains("azure.resource_group.shoot--dev--alpha\n"));
    let long = render::text(&s, &TextOptions { color: false, verbose: true });
    assert!(!long.contains("unchanged\n"), "{long}");
    for n in s.plans[0].nodes.iter().filter(|n| n.action() == Action::Noop) {
        assert!(
            long.contains(&format!("\n    {}\n      # [in-sync] matches the configuration\n", n.address)),
            "{long}"
        );
    }
}

#[test]
fn groups_follow_apply_order() {
    let text = render::text(&set(vec![azure_drifted_plan("shoot--dev--alpha")]), &PLAIN);
    let pos = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} missing:\n{text}"));
    assert!(pos("  - azure.nat_gateway.") < pos("-/+ azure.route_table."));
    assert!(pos("-/+ azure.route_table.") < pos("  ~ azure.subnet."));
    assert!(pos("  ~ azure.subnet.") < pos(" <= azure.route."));
    assert!(pos(" <= azure.route.") < pos("3 unchanged"));
}

#[test]
fn renderers_are_deterministic() {
    let a = fleet();
    let b = fleet();
    assert_eq!(render::text(&a, &PLAIN), render::text(&b, &PLAIN));
    assert_eq!(render::text(&a, &COLOR), render::text(&a, &COLOR));
    assert_eq!(render::markdown(&a), render::markdown(&b));
    for p in &a.plans {
        assert_eq!(render::dot(p), render::dot(p));
    }
    // The renderers read the document, not the order the caller built the fleet in.
    let reversed = set(vec![azure_managed_plan("shoot--dev--alpha"), azure_user_managed_plan("shoot--dev--beta")]);
    assert_eq!(render::markdown(&a), render::markdown(&reversed));
}

#[test]
fn markdown_escapes_table_cells() {
    assert_eq!(render::md_cell("a | b <tn>-nodes `<tn>-workers`\nnext"), "a \\| b &lt;tn>-nodes `<tn>-workers` next");
}

/// A fleet of hostile plans (every string carries `payload`): one with every kind of change and a
/// lineage, one with verify checks, one without changes.
fn hostile_fleet(payload: &str) -> PlanSet {
    let mut unchanged = azure_user_managed_plan("shoot--dev--gamma");
    unchanged.prior = trellis_plans::Prior { lineage: Some(LINEAGE.to_string()), serial: 2 };
    set(vec![
        hostile(&azure_drifted_plan("shoot--dev--alpha"), payload),
        hostile(&byo_first_plan(), payload),
        hostile(&unchanged, payload),
    ])
}

/// `s` without the SGR colour sequences (`ESC [ digits ; m`) the renderer writes.
fn strip_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let params = after.chars().take_while(|c| c.is_ascii_digit() || *c == ';').count();
        if after[params..].starts_with('m') {
            rest = &after[params + 1..];
        } else {
            // Not a colour: keep the ESC, so the caller sees it.
            out.push('\x1b');
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn regression_text_renderer_escapes_control_characters_of_user_strings() {
    let fleet = hostile_fleet(TERMINAL_ATTACK);
    let shown = "BEGIN\\x1b]0;owned\\x07\\x1b[2J\\rforged line\\x9b31m\\u{202e}reversed\\x7f\\nEND";
    for opts in [PLAIN, TextOptions { color: false, verbose: true }] {
        let out = render::text(&fleet, &opts);
        assert_eq!(raw_controls(&out), Vec::<char>::new(), "raw control characters in:\n{out}");
        // Shown, visibly, where the names, reasons, values, warnings and artifacts are.
        assert!(out.contains(&format!("Shoot: shoot--dev--alpha{shown}  provider: azure")), "{out}");
        assert!(out.matches(shown).count() > 20, "{out}");
    }
    // With colour, the only escape sequences are the renderer's own colours.
    let coloured = render::text(&fleet, &COLOR);
    assert_eq!(raw_controls(&strip_sgr(&coloured)), Vec::<char>::new(), "{coloured}");
    assert_eq!(strip_sgr(&coloured), render::text(&fleet, &PLAIN));
}

#[test]
fn regression_markdown_renderer_keeps_user_strings_inside_their_cells() {
    let benign = hostile_fleet("");
    let fleet = hostile_fleet(MARKDOWN_ATTACK);
    let md = render::markdown(&fleet);
    // Same tables, rows, cells, list items, sections and HTML tags as without the attack: nothing
    // was injected, nothing was closed early.
    assert_eq!(md_structure(&md), md_structure(&render::markdown(&benign)), "{md}");
    assert!(!md_structure(&md).iter().any(|s| s.contains("Link") || s.contains("Image") || s.contains("<img")), "{md}");
    // Every string arrived whole, as text, in the cell or item it was put in.
    let texts = md_texts(&md);
    let whole =
        texts.iter().filter(|t| t.contains("BEGIN")).all(|t| t.matches("BEGIN").count() == t.matches("END").count());
    assert!(whole, "a string was split:\n{}", texts.join("\n"));
    // Names and addresses are code spans: shown literally, the line breaks as `\n`.
    let literal = MARKDOWN_ATTACK.replace('\n', "\\n");
    assert!(texts.iter().any(|t| t.contains(&format!("shoot--dev--alpha{literal}"))), "{}", texts.join("\n"));
    // And no raw control character either.
    let md = render::markdown(&hostile_fleet(TERMINAL_ATTACK));
    assert_eq!(raw_controls(&md), Vec::<char>::new(), "{md}");
}

#[test]
fn regression_dot_renderer_escapes_control_characters_of_user_strings() {
    let plan = hostile(&azure_drifted_plan("shoot--dev--alpha"), TERMINAL_ATTACK);
    let dot = render::dot(&plan);
    assert_eq!(raw_controls(&dot), Vec::<char>::new(), "{dot}");
}

/// The first plan of a user-managed-egress shoot: the cluster resource group is created, the user's
/// resources are verified and read.
fn byo_first_plan() -> trellis_plans::Plan {
    let mut p = azure_user_managed_plan("shoot--dev--beta");
    let rg = p.nodes.iter_mut().find(|n| n.action() == Action::Noop).unwrap();
    *rg = create(
        &rg.address,
        rg.kind,
        &rg.scope,
        &rg.name,
        rg.id.clone().unwrap(),
        &[("/location", serde_json::json!(REGION))],
        "managed in both modes: upstream task `ensure resource group`",
    );
    p.prior = trellis_plans::Prior::default();
    p.summary = p.expected_summary();
    p
}

#[test]
fn markdown_lists_verify_checks() {
    let md = render::markdown(&set(vec![byo_first_plan()]));
    assert!(md.contains("\n**Checks** (re-read at apply; apply fails if one breaks)\n\n"), "{md}");
    assert!(md.contains("| skip | `azure.subnet.shoot--dev--beta.shoot--dev--beta-nodes` | managed | `gated-out` skipped: user-managed egress — `EnsureUserSubnet` verifies the BYO subnet instead of creating &lt;tn>-nodes |"), "{md}");
    insta::assert_snapshot!("markdown_user_managed_first_plan", md);
}

/// `>` in markdown text is shown as `>`: `noop -> update`, not `noop -&gt; update` (an entity is noise
/// in the raw comment and is shown literally wherever it lands in code); a leading `>` still cannot
/// open a block quote, and `<` still cannot open HTML.
#[test]
fn regression_markdown_does_not_escape_gt_needlessly() {
    use pulldown_cmark::{Event, Parser, Tag};
    use trellis_plans::escape::{md_inline, Md};
    assert_eq!(md_inline("action: noop -> update", Md::Inline), "action: noop -> update");
    assert_eq!(md_inline("a > b", Md::Cell), "a > b");
    let quoted = md_inline("> quoted <b>", Md::Inline);
    assert_eq!(quoted, "\\> quoted &lt;b>");
    let item = format!("- {quoted}\n");
    let events: Vec<Event> = Parser::new(&item).collect();
    assert!(!events.iter().any(|e| matches!(e, Event::Start(Tag::BlockQuote(_)))), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, Event::Html(_) | Event::InlineHtml(_))), "{events:?}");
    let text: String =
        events.iter().filter_map(|e| if let Event::Text(t) = e { Some(t.to_string()) } else { None }).collect();
    assert_eq!(text, "> quoted <b>");
}

#[test]
fn markdown_of_a_large_fleet_stays_under_the_comment_limit_and_keeps_the_summary() {
    let plans: Vec<_> = (0..400).map(|i| azure_managed_plan(&format!("shoot--fleet--s{i:03}"))).collect();
    let s = set(plans);
    let md = render::markdown(&s);
    assert!(md.len() <= render::MARKDOWN_BUDGET, "{} bytes", md.len());
    // The summary, whole: heading, verdict of the whole file.
    assert!(
        md.starts_with("### trellis plan: 400 of 400 shoots with changes\n\n**Plan: 2000 to create,"),
        "{}",
        &md[..300]
    );
    // Detail was left out, and the notice says so, last.
    let notice = md.lines().last().unwrap();
    assert!(notice.starts_with("**Truncated:** ") && notice.contains("trellis show PLAN"), "{notice}");
    // Each part is whole: every section that was started is closed.
    assert_eq!(md.matches("<details>").count(), md.matches("</details>").count());
    // A small plan is never truncated.
    let small = render::markdown(&fleet());
    assert!(!small.contains("Truncated"), "{small}");
    // A budget smaller than the summary still writes the summary.
    let tiny = render::markdown_within(&s, 10);
    assert!(tiny.contains("**Plan: 2000 to create,") && tiny.contains("**Truncated:** "), "{tiny}");
}

#[test]
fn markdown_shows_the_graph_of_changed_nodes_and_user_resources_as_never_written() {
    use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};
    let md = render::markdown(&fleet());
    let graphs: Vec<String> = Parser::new(&md)
        .filter_map(|e| match e {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => Some(info.to_string()),
            _ => None,
        })
        .filter(|info| info == "mermaid")
        .collect();
    // One graph: the shoot with changes (the other has none to draw).
    assert_eq!(graphs.len(), 1, "{md}");
    assert!(md.contains("```mermaid\nflowchart LR\n"), "{md}");
    // A user-owned resource trellis checks says that it is never written.
    let byo = render::markdown(&set(vec![byo_first_plan()]));
    assert!(
        byo.contains("| verify | `azure.subnet.hub-network.shoot-beta-workers` | user: verified, never written |"),
        "{byo}"
    );
}
