//! The semantic plan diff.

use crate::common;

use common::*;
use serde_json::json;
use trellis_plans::diff::{diff, diff_markdown, render_diff, ArtifactDiff, Delta, TextDiff};
use trellis_plans::{Artifact, Change, Operation, Plan, PlanSet, Prior};

fn one(p: Plan) -> PlanSet {
    set(vec![p])
}

/// The same shoot planned again after a later run: a new state, nothing else.
fn replanned(mut p: Plan) -> Plan {
    p.prior = Prior { lineage: Some(LINEAGE.to_string()), serial: p.prior.serial + 1 };
    p
}

/// The managed shoot after its worker maximum grew to 20: the azure.json rate limits follow Σ maximum.
fn grown(tn: &str) -> Plan {
    let mut p = replanned(azure_managed_plan(tn));
    let entries =
        azure_json_entries(tn, "worker_route_table", &format!("{tn}-workers"), &format!("{tn}-nodes"), tn, &[], 20);
    p.artifacts.set(Artifact::CloudProviderConfig(azure_json(&entries)));
    p.digest = p.body_digest();
    p
}

#[test]
fn identical_plans_have_no_diff() {
    for s in [
        one(azure_managed_plan("shoot--dev--alpha")),
        set(vec![azure_user_managed_plan("shoot--dev--beta"), azure_drifted_plan("shoot--dev--alpha")]),
    ] {
        let d = diff(&s, &s.clone());
        assert!(d.is_empty(), "{d:?}");
        assert!(d.changed.is_empty());
        assert_eq!(render_diff(&d, false), "No semantic differences between the plans.\n");
    }
}

#[test]
fn prior_is_only_a_state_line() {
    let old = one(azure_managed_plan("shoot--dev--alpha"));
    let new = one(replanned(azure_managed_plan("shoot--dev--alpha")));
    let d = diff(&old, &new);
    assert!(d.is_empty(), "{d:?}");
    let text = render_diff(&d, false);
    assert!(text.starts_with("No semantic differences between the plans.\n"), "{text}");
    assert!(text.contains("shoot--dev--alpha: state: prior "), "{text}");
    assert!(text.contains(&format!("prior new workspace -> lineage {LINEAGE}, serial 1 (not compared)")), "{text}");
}

#[test]
fn azure_json_change_shows_a_unified_diff() {
    let old = one(azure_managed_plan("shoot--dev--alpha"));
    let new = one(grown("shoot--dev--alpha"));
    let d = diff(&old, &new);
    assert!(!d.is_empty());
    let shoot = &d.changed[0];
    assert!(shoot.nodes_changed.is_empty() && shoot.nodes_added.is_empty() && shoot.nodes_removed.is_empty());
    let Some(ArtifactDiff::CloudProviderConfig(TextDiff { name, unified })) =
        shoot.artifacts.get("cloud_provider_config")
    else {
        panic!("azure.json differs: {:?}", shoot.artifacts)
    };
    assert_eq!(name, "azure.json");
    assert!(unified.contains("\n-cloudProviderRateLimitQPS: 10\n+cloudProviderRateLimitQPS: 20\n"), "{unified}");
    assert!(unified.starts_with("--- old/azure.json\n+++ new/azure.json\n@@ "), "{unified}");
    assert!(shoot.artifacts.get("infrastructure_status").is_none());

    let text = render_diff(&d, false);
    assert!(
        text.contains("        -cloudProviderRateLimitQPS: 10\n        +cloudProviderRateLimitQPS: 20\n"),
        "{text}"
    );
    insta::assert_snapshot!("diff_azure_json", text);
    insta::assert_snapshot!("diff_azure_json_markdown", diff_markdown(&d));

    let coloured = render_diff(&d, true);
    assert!(coloured.contains("\x1b[32m+cloudProviderRateLimitQPS: 20\x1b[0m"), "{coloured}");
    assert!(!text.contains('\x1b'));
}

#[test]
fn node_and_artifact_changes() {
    let tn = "shoot--dev--alpha";
    let old = one(azure_managed_plan(tn));
    let mut p = grown(tn);
    // The nodes CIDR doubles; the route table is gone; a NAT gateway appears and the subnet waits for it.
    let nat = create(
        &format!("azure.nat_gateway.{tn}.{tn}-nat-gateway"),
        trellis_plans::Kind::new("nat_gateway"),
        tn,
        &format!("{tn}-nat-gateway"),
        arm(tn, &format!("natGateways/{tn}-nat-gateway")),
        &[("/location", json!(REGION)), ("/sku/name", json!("Standard"))],
        "managed mode: upstream task `ensure nat gateway` (networks.natGateway.enabled)",
    );
    let subnet = p.nodes.iter_mut().find(|n| n.kind == trellis_plans::Kind::new("subnet")).unwrap();
    let Operation::Create { changes, .. } = &mut subnet.op else { panic!("the subnet is created") };
    changes[0] = Change { path: "/properties/addressPrefix".into(), before: None, after: Some(json!("10.250.0.0/18")) };
    changes.push(Change { path: "/properties/natGateway/id".into(), before: None, after: Some(json!(nat.id)) });
    subnet.reason = trellis_plans::Reason::new(
        trellis_plans::ReasonCode::Absent,
        "managed mode: upstream task `ensure subnets` (networks.workers 10.250.0.0/18)",
    );
    subnet.depends_on.push(nat.address.clone());
    p.nodes.push(nat);
    p.nodes.retain(|n| n.kind != trellis_plans::Kind::new("route_table"));
    p.nodes.sort_by(|a, b| a.address.cmp(&b.address));
    p.summary = p.expected_summary();
    let mut status = p.artifacts.infrastructure_status().cloned().unwrap();
    status["networks"]["outboundAccessType"] = json!("NATGateway");
    p.artifacts.set(Artifact::InfrastructureStatus(status));
    p.artifacts.set(Artifact::EgressCidrs(Some(vec!["(known after apply)".into()])));
    p.artifacts.set(Artifact::AllowEgress(false));
    p.warnings
        .push("the NAT gateway's public IP is new: allow-lists that name the old egress address need updating".into());
    let new = one(p);

    let d = diff(&old, &new);
    let shoot = &d.changed[0];
    assert_eq!(shoot.nodes_added.len(), 1);
    assert_eq!(shoot.nodes_removed.len(), 1);
    assert_eq!(shoot.nodes_changed.len(), 1);
    assert_eq!(
        shoot.artifacts.get("allow_egress"),
        Some(&ArtifactDiff::AllowEgress(Delta { old: Some(true), new: Some(false) }))
    );
    insta::assert_snapshot!("diff_nodes_and_artifacts", render_diff(&d, false));
    insta::assert_snapshot!("diff_nodes_and_artifacts_markdown", diff_markdown(&d));
}

#[test]
fn fleet_diff_with_added_removed_and_mode_change() {
    let old = set(vec![
        azure_managed_plan("shoot--dev--alpha"),
        azure_managed_plan("shoot--dev--beta"),
        azure_managed_plan("shoot--dev--delta"),
    ]);
    let new = set(vec![
        replanned(azure_managed_plan("shoot--dev--alpha")),
        azure_user_managed_plan("shoot--dev--beta"),
        azure_user_managed_plan("shoot--dev--gamma"),
    ]);
    let d = diff(&old, &new);
    assert_eq!(d.added.iter().map(|s| s.shoot.as_str()).collect::<Vec<_>>(), ["shoot--dev--gamma"]);
    assert_eq!(d.removed.iter().map(|s| s.shoot.as_str()).collect::<Vec<_>>(), ["shoot--dev--delta"]);
    assert_eq!(d.changed.len(), 2, "alpha (state only) and beta");
    assert!(d.changed[0].is_empty() && d.changed[0].state.is_some());
    let text = render_diff(&d, false);
    assert!(text.starts_with("Plan diff: 1 shoot changed, 1 added, 1 removed.\n"), "{text}");
    assert!(text.contains("    mode: managed -> user-managed-egress\n"), "{text}");
    insta::assert_snapshot!("diff_fleet", text);
    insta::assert_snapshot!("diff_fleet_markdown", diff_markdown(&d));
    // Deterministic.
    assert_eq!(text, render_diff(&diff(&old, &new), false));
    assert_eq!(diff_markdown(&d), diff_markdown(&diff(&old, &new)));
}

#[test]
fn checks_and_ownership_changes() {
    let old = one(azure_user_managed_plan("shoot--dev--beta"));
    let mut p = azure_user_managed_plan("shoot--dev--beta");
    let subnet = p.nodes.iter_mut().find(|n| n.address == "azure.subnet.hub-network.shoot-beta-workers").unwrap();
    let Operation::Verify { checks } = &mut subnet.op else { panic!("the subnet is verified") };
    checks[0].expect = json!("10.250.0.0/18");
    let rt = p.nodes.iter_mut().find(|n| n.address == "azure.route_table.hub-network.hub-egress-rt").unwrap();
    rt.op = Operation::Read { ownership: trellis_plans::ReadOwnership::Runtime };
    let d = diff(&old, &one(p));
    let text = render_diff(&d, false);
    let expected = "\
  ~ azure.route_table.hub-network.hub-egress-rt
      ownership: user -> runtime
  ~ azure.subnet.hub-network.shoot-beta-workers
      check - /properties/addressPrefix == \"10.250.0.0/16\"
      check + /properties/addressPrefix == \"10.250.0.0/18\"
";
    assert!(text.contains(expected), "{text}");
    assert!(!text.contains("state:"), "same digest and prior: no state line\n{text}");
}

/// Old and new plan files with shoots added, removed, changed (nodes, artifacts, warnings, state) and
/// changed in state only; every string carries `payload`.
fn hostile_pair(payload: &str) -> (PlanSet, PlanSet) {
    let h = |p: Plan| hostile(&p, payload);
    let mut drifted = replanned(azure_drifted_plan("shoot--dev--alpha"));
    drifted.warnings.push("a warning that is new".into());
    let old = set(vec![
        h(azure_managed_plan("shoot--dev--alpha")),
        h(azure_user_managed_plan("shoot--dev--beta")),
        h(azure_user_managed_plan("shoot--dev--delta")),
    ]);
    let new = set(vec![
        h(drifted),
        h(azure_managed_plan("shoot--dev--gamma")),
        h(replanned(azure_user_managed_plan("shoot--dev--delta"))),
    ]);
    (old, new)
}

#[test]
fn regression_diff_renderers_escape_user_strings() {
    let (old, new) = hostile_pair(TERMINAL_ATTACK);
    let d = diff(&old, &new);
    for out in [render_diff(&d, false), diff_markdown(&d)] {
        assert_eq!(raw_controls(&out), Vec::<char>::new(), "raw control characters in:\n{out}");
        assert!(out.contains("BEGIN\\x1b]0;owned\\x07\\x1b[2J"), "{out}");
    }
    // With colour, the only escape sequences are the renderer's colours (`ESC [ digits m`).
    let coloured = render_diff(&d, true);
    for (i, _) in coloured.match_indices('\u{1b}') {
        let sgr =
            coloured[i + 1..].strip_prefix('[').map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit() || c == ';'));
        assert!(sgr.is_some_and(|r| r.starts_with('m')), "a raw escape sequence at {i}:\n{coloured}");
    }

    let (old, new) = hostile_pair(MARKDOWN_ATTACK);
    let md = diff_markdown(&diff(&old, &new));
    let (benign_old, benign_new) = hostile_pair("");
    assert_eq!(md_structure(&md), md_structure(&diff_markdown(&diff(&benign_old, &benign_new))), "{md}");
    let texts = md_texts(&md);
    let whole =
        texts.iter().filter(|t| t.contains("BEGIN")).all(|t| t.matches("BEGIN").count() == t.matches("END").count());
    assert!(whole, "a string was split:\n{}", texts.join("\n"));
}

/// A targeted plan (`--target`) carries out only part of its shoot: beside the whole plan it differs
/// and says so, even where the nodes agree (s32's note: `trellis diff` did not compare `targets`, so
/// the two read as equal). The JSON names the targets only when they differ.
#[test]
fn regression_targets_make_plans_differ_and_are_shown() {
    let whole = azure_managed_plan("shoot--dev--alpha");
    let address = whole.nodes[0].address.clone();
    let mut targeted = whole.clone();
    targeted.targets = vec![address.clone()];
    let d = diff(&one(whole.clone()), &one(targeted));
    assert!(!d.is_empty(), "{d:?}");
    assert_eq!(d.changed[0].targets, Some(Delta { old: vec![], new: vec![address.clone()] }));
    let text = render_diff(&d, false);
    assert!(text.contains(&format!("    targets: the whole shoot -> {address}\n")), "{text}");
    let md = diff_markdown(&d);
    assert!(md.contains(&format!("- targets: the whole shoot → `{address}`")), "{md}");
    let json = trellis_plans::diff::diff_json(&d);
    assert_eq!(json["changed"][0]["targets"], json!({"old": [], "new": [address]}));
    // The same targets: nothing said, no key in the JSON.
    let d = diff(&one(whole.clone()), &one(replanned(whole)));
    assert!(d.is_empty(), "{d:?}");
    assert!(trellis_plans::diff::diff_json(&d)["changed"][0].get("targets").is_none());
}
