//! Typed reasons: the code set's JSON names, plan files written before reasons had codes, the
//! renderers and Terraform's `action_reason`.

use crate::common;

use common::*;
use serde_json::Value;
use trellis_plans::diff::{diff, diff_json, render_diff};
use trellis_plans::{first_difference, terraform, Action, PlanSet, Reason, ReasonCode};

/// The digest `azure_managed_plan("shoot--dev--alpha")` had before reasons had codes (the
/// `render__text_managed` snapshot of that version): the body an earlier trellis wrote.
const DIGEST_BEFORE_CODES: &str = "1810d0b3c7793b00216527827ee786baeb74d2401a688fca51cb770da29867dc";

/// `json` as an earlier version wrote it: no `reason_code` line, and its digest.
/// A plan file as the version before reason codes wrote it: no `reason_code`s (nor the config file's
/// `file_name`, recorded since).
fn without_codes(json: &str) -> String {
    json.lines()
        .filter(|l| !l.trim_start().starts_with("\"reason_code\": ") && !l.trim_start().starts_with("\"file_name\": "))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn codes_are_written_in_kebab_case_as_documented() {
    for code in ReasonCode::ALL {
        let json = serde_json::to_value(code).unwrap();
        assert_eq!(json, Value::String(code.as_str().to_string()));
        assert_eq!(serde_json::from_value::<ReasonCode>(json).unwrap(), code);
        assert!(!code.actions().is_empty(), "{code}");
    }
    let names: Vec<&str> = ReasonCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        names,
        [
            "absent",
            "differs",
            "force-new",
            "in-sync",
            "byo-user-owned",
            "gated-out",
            "known-after-apply",
            "recorded-in-state",
            "found-by-name",
            "destroy",
            "runtime-owned",
            "replace-requested"
        ]
    );
    // The docs' table lists every code, with its Terraform action_reason.
    let docs = include_str!("../../../docs/usage/reviewing-plans.md");
    for code in ReasonCode::ALL {
        let tf = code.terraform_action_reason().map_or("—".to_string(), |r| format!("`{r}`"));
        assert!(docs.contains(&format!("| `{code}` |")), "docs/usage/reviewing-plans.md lacks {code}");
        let row = docs.lines().find(|l| l.starts_with(&format!("| `{code}` |"))).unwrap_or_default();
        assert!(row.ends_with(&format!("| {tf} |")), "{row}");
    }
}

#[test]
fn a_node_carries_its_code_beside_the_reason() {
    let s = set(vec![azure_drifted_plan("shoot--dev--alpha")]);
    let v: Value = serde_json::from_str(&s.to_json()).unwrap();
    let rt = v["nodes"].as_array().unwrap().iter().find(|n| n["action"] == "replace").unwrap();
    assert_eq!(rt["reason_code"], "force-new");
    assert_eq!(rt["reason"], "ForceNew attribute /location differs (created in northeurope): delete, then create");
    // Right after `reason`, so the rest of the node is where it was.
    let keys: Vec<&str> = rt.as_object().unwrap().keys().map(String::as_str).collect();
    let at = keys.iter().position(|k| *k == "reason").unwrap();
    assert_eq!(keys[at + 1], "reason_code", "{keys:?}");
}

#[test]
fn a_plan_file_without_codes_loads_verifies_and_is_written_back_as_it_was() {
    let now = set(vec![azure_managed_plan("shoot--dev--alpha")]);
    let fresh = now.to_json();
    let old = without_codes(&fresh).replace(&now.plans[0].digest, DIGEST_BEFORE_CODES);
    // A plan made now differs from the earlier version's only by the `reason_code` lines and the config
    // file's name (and so its digest).
    assert_eq!(
        fresh.lines().count() - old.lines().count(),
        now.plans[0].nodes.len() + 1,
        "one reason_code line per node"
    );
    let back = PlanSet::from_json("old.tfplan", &old).expect("an earlier version's plan file loads");
    let plan = &back.plans[0];
    assert_eq!(plan.digest, DIGEST_BEFORE_CODES);
    assert_eq!(plan.body_digest(), DIGEST_BEFORE_CODES, "the digest is over the body as it was written");
    assert!(plan.nodes.iter().all(|n| n.reason.code().is_none()));
    assert_eq!(back.to_json(), old, "written back byte for byte, without codes");
    // Its words are today's: applying it against a fresh plan finds no difference.
    assert_eq!(first_difference(plan, &now.plans[0]), None);
    // Rendered without a code.
    let text = trellis_plans::render::text(&back, &trellis_plans::render::TextOptions { color: false, verbose: false });
    assert!(text.contains("      # managed mode: upstream task `ensure vnet`"), "{text}");
    // `trellis diff` of the old file and a fresh plan: only the codes differ.
    let d = diff(&back, &now);
    assert!(!d.is_empty());
    let changed = &diff_json(&d)["changed"][0]["nodes_changed"];
    for n in changed.as_array().unwrap() {
        assert_eq!(n["reason_code"]["old"], Value::Null);
        assert_eq!(n["reason"], Value::Null, "the words are the same");
    }
    assert!(render_diff(&d, false).contains("reason code: (none) -> absent"));
}

#[test]
fn a_plan_file_with_an_unknown_code_is_refused() {
    let json = set(vec![azure_managed_plan("shoot--dev--alpha")]).to_json();
    let edited = json.replacen("\"reason_code\": \"absent\"", "\"reason_code\": \"because-i-said-so\"", 1);
    assert_ne!(edited, json);
    let err = PlanSet::from_json("edited.tfplan", &edited).unwrap_err().to_string();
    assert!(err.contains("because-i-said-so"), "{err}");
}

#[test]
fn regression_a_newline_in_an_unknown_value_is_refused_in_one_line() {
    // serde's "unknown variant" message quotes the value as read: a `\n` in the file's string became
    // a line of its own in the error (found by the hostile-readers property test, 1 run in 4).
    let json = set(vec![azure_managed_plan("shoot--dev--alpha")]).to_json();
    for (from, to) in [
        ("\"reason_code\": \"absent\"", "\"reason_code\": \"abs\\nNo changes.\""),
        ("\"action\": \"create\"", "\"action\": \"cre\\nNo changes.\""),
    ] {
        let edited = json.replacen(from, to, 1);
        assert_ne!(edited, json, "{from}");
        let err = PlanSet::from_json("edited\nplan.json", &edited).unwrap_err().to_string();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("edited\\nplan.json: ") && err.contains("\\nNo changes."), "{err}");
    }
}

#[test]
fn a_changed_code_is_a_difference_when_applying_a_saved_plan() {
    let saved = azure_drifted_plan("shoot--dev--alpha");
    let mut now = saved.clone();
    let nat = now.nodes.iter_mut().find(|n| n.action() == Action::Delete).unwrap();
    nat.reason = Reason::new(ReasonCode::FoundByName, nat.reason.detail());
    let why = first_difference(&saved, &now).unwrap();
    assert!(why.contains("the reason code is `recorded-in-state` in the plan file, `found-by-name` now"), "{why}");
}

fn resource_change<'a>(tf: &'a Value, address_part: &str) -> &'a Value {
    tf["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["trellis_address"].as_str().unwrap().contains(address_part))
        .unwrap()
}

#[test]
fn terraform_action_reason_comes_from_the_code() {
    let mut plan = azure_drifted_plan("shoot--dev--alpha");
    let tf = terraform::plan_json(&set(vec![plan.clone()]), "test", &terraform::Unmapped);
    // A force-new replace: Terraform's "cannot update".
    let rt = resource_change(&tf, "azure.route_table.");
    assert_eq!(rt["change"]["actions"], serde_json::json!(["delete", "create"]));
    assert_eq!(rt["action_reason"], "replace_because_cannot_update");
    // Recorded in state, no longer configured: Terraform's "no resource config".
    assert_eq!(resource_change(&tf, "nat_gateway")["action_reason"], "delete_because_no_resource_config");
    // An update, a read: Terraform has no reason, and writes none.
    assert!(resource_change(&tf, "azure.subnet.").get("action_reason").is_none());
    assert!(resource_change(&tf, "azure.route.").get("action_reason").is_none());

    // A destroy's delete has none either (as in `terraform plan -destroy`).
    let nat = plan.nodes.iter_mut().find(|n| n.action() == Action::Delete).unwrap();
    nat.reason = Reason::new(ReasonCode::Destroy, "the shoot is destroyed");
    let tf = terraform::plan_json(&set(vec![plan]), "test", &terraform::Unmapped);
    assert!(resource_change(&tf, "nat_gateway").get("action_reason").is_none());
}

#[test]
fn terraform_action_reason_of_a_plan_without_codes_follows_the_action() {
    let json = without_codes(&set(vec![azure_drifted_plan("shoot--dev--alpha")]).to_json());
    let mut v: Value = serde_json::from_str(&json).unwrap();
    let body = serde_json::json!({"nodes": v["nodes"], "artifacts": v["artifacts"]});
    v["digest"] = serde_json::json!(trellis_plans::sha256_hex(serde_json::to_string(&body).unwrap().as_bytes()));
    let old = PlanSet::from_json("old.tfplan", &serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let tf = terraform::plan_json(&old, "test", &terraform::Unmapped);
    assert_eq!(resource_change(&tf, "azure.route_table.")["action_reason"], "replace_because_cannot_update");
    assert_eq!(resource_change(&tf, "nat_gateway")["action_reason"], "delete_because_no_resource_config");
}

#[test]
fn renderers_show_the_code() {
    let s = set(vec![azure_drifted_plan("shoot--dev--alpha")]);
    let text = trellis_plans::render::text(&s, &trellis_plans::render::TextOptions { color: false, verbose: false });
    assert!(text.contains("      # [force-new] ForceNew attribute /location differs"), "{text}");
    let md = trellis_plans::render::markdown(&s);
    assert!(
        md.contains(
            "| replace | `azure.route_table.shoot--dev--alpha.worker_route_table` | managed | `force-new` ForceNew"
        ),
        "{md}"
    );
    let html = trellis_plans::html::html(&s);
    assert!(html.contains("<code class=\"reason-code\">force-new</code> ForceNew attribute"), "{html}");
}
