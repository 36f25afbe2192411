//! The plan document: stable JSON round trip and the checks `from_json` makes.

use crate::common;

use common::*;
use trellis_plans::{Action, Ownership, PlanFileError, PlanSet, Summary, FORMAT_VERSION};

#[test]
fn json_round_trip_single_plan() {
    let s = set(vec![azure_managed_plan("shoot--dev--alpha")]);
    let json = s.to_json();
    // A single plan is written as the plan object itself.
    assert!(json.starts_with("{\n  \"format_version\": 1,\n  \"shoot\": \"shoot--dev--alpha\""), "{json}");
    let back = PlanSet::from_json("alpha.tfplan", &json).unwrap();
    assert_eq!(back, s);
    assert_eq!(back.to_json(), json, "byte-identical after a round trip");
}

#[test]
fn json_round_trip_fleet() {
    let s = set(vec![
        azure_user_managed_plan("shoot--dev--beta"),
        azure_drifted_plan("shoot--dev--alpha"),
        azure_managed_plan("shoot--dev--gamma"),
    ]);
    let json = s.to_json();
    assert!(json.starts_with("{\n  \"format_version\": 1,\n  \"plans\": ["), "{json}");
    let back = PlanSet::from_json("fleet.tfplan", &json).unwrap();
    assert_eq!(back, s);
    assert_eq!(back.to_json(), json);
    // Same inputs, same bytes.
    let again = set(vec![
        azure_managed_plan("shoot--dev--gamma"),
        azure_drifted_plan("shoot--dev--alpha"),
        azure_user_managed_plan("shoot--dev--beta"),
    ]);
    assert_eq!(again.to_json(), json);
}

/// `plan`'s JSON after `edit`, with the digest of the edited body (as if `trellis plan` had written it).
fn edited(plan: &trellis_plans::Plan, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v = serde_json::to_value(plan).unwrap();
    edit(&mut v);
    let body = serde_json::json!({"nodes": v["nodes"], "artifacts": v["artifacts"]});
    v["digest"] = serde_json::json!(trellis_plans::sha256_hex(serde_json::to_string(&body).unwrap().as_bytes()));
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn from_json_refuses_a_write_to_a_user_owned_node() {
    let plan = azure_user_managed_plan("shoot--dev--beta");
    let i = plan.nodes.iter().position(|n| n.ownership() == Ownership::User && n.action() == Action::Verify).unwrap();
    let address = plan.nodes[i].address.clone();
    let json = edited(&plan, |v| {
        let node = &mut v["nodes"][i];
        node["action"] = serde_json::json!("update");
        node.as_object_mut().unwrap().remove("checks");
        node["patch"] = serde_json::json!({"properties": {"routeTable": null}});
        v["summary"]["verify"] = serde_json::json!(1);
        v["summary"]["update"] = serde_json::json!(1);
    });
    match PlanSet::from_json("edited.tfplan", &json) {
        Err(e @ PlanFileError::Invalid { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&address), "{msg}");
            assert!(msg.contains("user-owned resource with write action `update`"), "{msg}");
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn from_json_refuses_another_format_version() {
    let s = set(vec![azure_managed_plan("shoot--dev--alpha"), azure_user_managed_plan("shoot--dev--beta")]);
    for json in [set(vec![azure_managed_plan("shoot--dev--alpha")]).to_json(), s.to_json()] {
        let newer = json.replacen("\"format_version\": 1", &format!("\"format_version\": {}", FORMAT_VERSION + 1), 1);
        match PlanSet::from_json("newer.tfplan", &newer) {
            Err(e @ PlanFileError::Version { found: 2, .. }) => {
                assert!(e.to_string().starts_with("newer.tfplan: plan format_version 2 is not supported"), "{e}");
            }
            other => panic!("expected Version, got {other:?}"),
        }
    }
    assert!(matches!(PlanSet::from_json("x", "{}"), Err(PlanFileError::Version { found: 0, .. })));
    assert!(matches!(PlanSet::from_json("x", "not json"), Err(PlanFileError::Parse { .. })));
}

/// A value of the wrong type is refused naming where it is: the field path in the file and, inside a
/// node, the node's address (serde_json's own message has no position once the file is a `Value`).
#[test]
fn regression_a_value_of_the_wrong_type_is_refused_naming_its_field_path() {
    let plan = azure_managed_plan("shoot--dev--alpha");
    let address = plan.nodes[1].address.clone();
    let single = edited(&plan, |v| v["nodes"][1]["depends_on"] = serde_json::json!([-1]));
    let err = PlanSet::from_json("one.tfplan", &single).unwrap_err();
    assert!(matches!(err, PlanFileError::Parse { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "one.tfplan: not a trellis plan file: nodes[1].depends_on[0] (node {address}): invalid type: integer `-1`, \
             expected a string; a plan file is what `trellis plan --out` writes — re-run it"
        )
    );
    // In a fleet, the plan's index comes first; outside the nodes there is no address.
    let fleet = set(vec![azure_managed_plan("shoot--dev--alpha"), azure_user_managed_plan("shoot--dev--beta")]);
    let mut v: serde_json::Value = serde_json::from_str(&fleet.to_json()).unwrap();
    v["plans"][1]["summary"]["create"] = serde_json::json!("three");
    let msg = PlanSet::from_json("fleet.tfplan", &v.to_string()).unwrap_err().to_string();
    assert!(
        msg.starts_with(
            "fleet.tfplan: not a trellis plan file: plans[1].summary.create: invalid type: string \"three\""
        ),
        "{msg}"
    );
    let mut v: serde_json::Value = serde_json::from_str(&fleet.to_json()).unwrap();
    v["plans"][0]["nodes"][2]["action"] = serde_json::json!("explode");
    let address = fleet.plans[0].nodes[2].address.clone();
    let msg = PlanSet::from_json("fleet.tfplan", &v.to_string()).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!(
            "fleet.tfplan: not a trellis plan file: plans[0].nodes[2].action (node {address}): unknown variant `explode`"
        )),
        "{msg}"
    );
    // A syntax error keeps serde_json's line and column.
    let msg = PlanSet::from_json("cut.tfplan", &single[..single.len() / 2]).unwrap_err().to_string();
    assert!(msg.starts_with("cut.tfplan: not a trellis plan file: EOF while parsing"), "{msg}");
    assert!(msg.contains(" at line "), "{msg}");
}

#[test]
fn fleet_summary_adds_up() {
    let s = set(vec![azure_drifted_plan("shoot--dev--alpha"), azure_user_managed_plan("shoot--dev--beta")]);
    let total = s.summary();
    let expected =
        Summary { create: 0, update: 1, replace: 1, delete: 1, verify: 2, read: 3, noop: 4, skip: 3, record: 0 };
    assert_eq!(total, expected);
}

#[test]
fn from_json_refuses_a_replace_that_detaches_a_reference_held_by_a_user_resource() {
    let mut plan = azure_user_managed_plan("shoot--dev--beta");
    let user_id = plan.nodes.iter().find(|n| n.ownership() == Ownership::User).and_then(|n| n.id.clone()).unwrap();
    let managed = plan.nodes.iter_mut().find(|n| n.ownership() == Ownership::Managed && n.id.is_some()).unwrap();
    managed.op = trellis_plans::Operation::Replace {
        patch: serde_json::json!({"location": "westeurope"}),
        changes: vec![],
        detach: vec![trellis_plans::Detach { id: user_id.clone(), path: "/properties/routeTable".into() }],
    };
    plan.summary = plan.expected_summary();
    plan.digest = plan.body_digest();
    let json = set(vec![plan]).to_json();
    let err = PlanSet::from_json("edited.tfplan", &json).unwrap_err().to_string();
    assert!(err.contains(&format!("detaches a reference held by {user_id}, which is not a managed resource")), "{err}");
}

#[test]
fn from_json_refuses_a_summary_that_does_not_match_the_nodes() {
    let mut plan = azure_managed_plan("shoot--dev--alpha");
    plan.summary.create += 1;
    let err = PlanSet::from_json("edited.tfplan", &set(vec![plan]).to_json()).unwrap_err().to_string();
    // The plan's, named as a plan (it once read "node shoot--dev--alpha: …", as if the shoot were a node).
    assert_eq!(
        err,
        "edited.tfplan: plan of shoot--dev--alpha: its summary does not match its nodes; the plan file was edited \
         or corrupted — re-run `trellis plan --out`"
    );
}

#[test]
fn source_file_is_recorded_relative_to_the_working_directory() {
    use std::path::Path;
    use trellis_plans::Source;
    let cwd = Some(Path::new("/ci/checkout"));
    assert_eq!(Source::file_of(Path::new("/ci/checkout/shoots/a.yaml"), cwd), "shoots/a.yaml");
    assert_eq!(Source::file_of(Path::new("./shoots/a.yaml"), cwd), "shoots/a.yaml");
    assert_eq!(Source::file_of(Path::new("shoots/./a.yaml"), cwd), "shoots/a.yaml");
    // Outside the working directory, or without one: as given.
    assert_eq!(Source::file_of(Path::new("/elsewhere/a.yaml"), cwd), "/elsewhere/a.yaml");
    assert_eq!(Source::file_of(Path::new("../a.yaml"), cwd), "../a.yaml");
    assert_eq!(Source::file_of(Path::new("/ci/checkout/a.yaml"), None), "/ci/checkout/a.yaml");
}
