//! A provider without modes and without a CCM (domains) fits the plan document: no `mode`, no CCM
//! artifacts, exactly its own artifacts, by name at the top level of `artifacts`; and a plan file written
//! when a domains plan carried `infrastructure_status: null`, `egress_cidrs: null` and its artifacts under
//! `named` still loads, verifies, renders and compares as the same plan.

use crate::common;

use common::*;
use serde_json::json;
use trellis_plans::render::{self, TextOptions};
use trellis_plans::*;

const PLAIN: TextOptions = TextOptions { color: false, verbose: false };

/// A domains plan: one DNS record created, the record set and the API server's SANs as artifacts.
fn domains_plan(sans: &[&str]) -> Plan {
    let mut record = node(
        "domains.dns_record.shoot--dev--alpha.api",
        Kind::new("dns_record"),
        "shoot--dev--alpha",
        "api",
        Action::Create,
        Ownership::Managed,
    );
    record.id = Some("dns://example.com/api.alpha.dev".to_string());
    record.op = Operation::Create {
        patch: json!({"type": "A", "ttl": 120}),
        changes: vec![Change { path: "/ttl".into(), before: None, after: Some(json!(120)) }],
    };
    record.reason = trellis_plans::Reason::new(trellis_plans::ReasonCode::Absent, "the API server's record");
    let nodes = vec![record];
    let artifacts = Artifacts::new()
        .with(Artifact::value("apiserver_sans", json!(sans)).unwrap())
        .with(Artifact::value("dns_record_set", json!({"api.alpha.dev": "A"})).unwrap());
    Plan {
        format_version: FORMAT_VERSION,
        shoot: "shoot--dev--alpha".to_string(),
        provider: Provider::new("domains"),
        mode: None,
        prior: Prior::default(),
        digest: body_digest(&nodes, &artifacts),
        summary: Summary::of(&nodes),
        nodes,
        artifacts,
        warnings: vec![],
        source: None,
        record: Vec::new(),
        applied_artifacts: None,
        destroy: false,
        targets: Vec::new(),
    }
}

#[test]
fn a_plan_without_mode_or_ccm_has_neither_in_its_json() {
    let set = PlanSet::new(vec![domains_plan(&["api.alpha.dev"])]);
    let text = set.to_json();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v.get("mode").is_none(), "{text}");
    let artifacts = v["artifacts"].as_object().unwrap();
    let keys: Vec<&str> = artifacts.keys().map(String::as_str).collect();
    assert_eq!(keys, ["apiserver_sans", "dns_record_set"], "exactly the provider's artifacts, no nulls: {text}");
    assert_eq!(v["artifacts"]["apiserver_sans"], json!(["api.alpha.dev"]));
    let back = PlanSet::from_json("domains.tfplan", &text).unwrap();
    assert_eq!(back, set);
    assert_eq!(back.to_json(), text);
}

#[test]
fn renderers_show_the_named_artifacts_and_no_mode() {
    let set = PlanSet::new(vec![domains_plan(&["api.alpha.dev"])]);
    let text = render::text(&set, &PLAIN);
    assert!(text.contains("provider: domains  prior:"), "{text}");
    assert!(text.contains("  apiserver_sans: [\"api.alpha.dev\"]\n"), "{text}");
    assert!(!text.contains("allow-egress"), "{text}");
    let md = render::markdown(&set);
    assert!(md.contains("Provider `domains`, ") && !md.contains("mode `"), "{md}");
    assert!(md.contains("- dns_record_set: `{\"api.alpha.dev\":\"A\"}`"), "{md}");
    assert!(render::dot(&set.plans[0]).contains("shoot--dev--alpha (domains)"));
}

#[test]
fn a_named_artifact_that_moved_is_a_difference() {
    let saved = domains_plan(&["api.alpha.dev"]);
    let now = domains_plan(&["api.alpha.dev", "api.internal.alpha.dev"]);
    assert_eq!(first_difference(&saved, &now).as_deref(), Some("artifact apiserver_sans differs"));
    let d = diff::diff(&PlanSet::new(vec![saved]), &PlanSet::new(vec![now]));
    let text = diff::render_diff(&d, false);
    assert!(text.contains("+  \"api.internal.alpha.dev\""), "{text}");
}

/// A plan of a provider with a mode next to one without: the mode is a difference.
#[test]
fn a_mode_that_appears_is_a_difference() {
    let saved = domains_plan(&[]);
    let mut now = domains_plan(&[]);
    now.mode = Some(Mode::Managed);
    assert_eq!(
        first_difference(&saved, &now).as_deref(),
        Some(
            "the plan file is for shoot--dev--alpha (domains), trellis plans shoot--dev--alpha (domains, managed) now"
        )
    );
}

/// A plan file `trellis plan` wrote before artifacts were top level: the bundled domains example (its
/// Azure plan and its domains plan, whose artifacts are `infrastructure_status: null`, `egress_cidrs:
/// null` and `named`).
fn format1_file() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/domains-format1.json");
    std::fs::read_to_string(path).unwrap()
}

/// `plan` with its artifacts as a domains plan has them now: each shown value at the top level.
fn top_level(plan: &Plan) -> Plan {
    let artifacts: Artifacts = plan
        .artifacts
        .shown()
        .into_iter()
        .map(|s| match s {
            Shown::Value(name, value) => Artifact::value(name, value.clone()).unwrap(),
            other => panic!("a domains plan shows only values: {other:?}"),
        })
        .collect();
    Plan { digest: body_digest(&plan.nodes, &artifacts), artifacts, ..plan.clone() }
}

#[test]
fn regression_a_domains_plan_file_with_named_artifacts_loads_verifies_and_is_written_back_byte_for_byte() {
    let text = format1_file();
    let set = PlanSet::from_json("domains-format1.json", &text).expect("the old shape loads and its digests verify");
    let domains = set.plans.iter().find(|p| p.provider == Provider::new("domains")).unwrap();
    let keys: Vec<&str> = domains.artifacts.iter().map(Artifact::name).collect();
    assert_eq!(keys, ["infrastructure_status", "egress_cidrs", "named"], "read as written");
    assert_eq!(domains.digest, "d12b0819ee7e96d2fa72d530180994811b2c57243b8b8b7e461237cae654ad7e");
    assert_eq!(set.to_json(), text, "written back byte for byte");
    assert_eq!(
        domains.artifacts.value("kubeconfig_server"),
        Some(&json!("https://api.web.platform.example.com")),
        "the named artifacts are the plan's values"
    );
}

#[test]
fn regression_a_domains_plan_with_named_artifacts_shows_and_compares_as_the_top_level_shape() {
    let set = PlanSet::from_json("domains-format1.json", &format1_file()).unwrap();
    let old = set.plans.iter().find(|p| p.provider == Provider::new("domains")).unwrap().clone();
    let new = top_level(&old);
    let v: serde_json::Value = serde_json::from_str(&PlanSet::new(vec![new.clone()]).to_json()).unwrap();
    let keys: Vec<&str> = v["artifacts"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["advertised_addresses", "apiserver_sans", "domains", "kubeconfig_server", "service_account_issuer"]
    );
    assert_ne!(new.digest, old.digest, "the body moved");

    // `apply PLAN`: the saved old-shape plan is what trellis plans now.
    assert_eq!(first_difference(&old, &new), None);
    assert_eq!(first_difference(&new, &old), None);
    // `diff`: only the digest moved.
    let (o, n) = (PlanSet::new(vec![old.clone()]), PlanSet::new(vec![new.clone()]));
    let d = diff::diff(&o, &n);
    assert!(d.is_empty(), "{d:?}");
    // The renderers: the same, but for the digest.
    let same = |a: String, b: String| assert_eq!(a.replace(&old.digest, "DIGEST"), b.replace(&new.digest, "DIGEST"));
    same(render::text(&o, &PLAIN), render::text(&n, &PLAIN));
    same(render::markdown(&o), render::markdown(&n));
    assert!(render::text(&n, &PLAIN).contains("\nArtifacts:\n  advertised_addresses: [{"));

    // A value that moved is still a difference across the shapes.
    let mut moved = new.clone();
    moved.artifacts.set_value("kubeconfig_server", json!("https://elsewhere")).unwrap();
    assert_eq!(first_difference(&old, &moved).as_deref(), Some("artifact kubeconfig_server differs"));
    // So is a value only one of them has.
    let mut more = new;
    more.artifacts.set_value("user_actions", json!(["rotate"])).unwrap();
    assert_eq!(first_difference(&old, &more).as_deref(), Some("artifact user_actions differs"));
}

#[test]
fn a_value_artifact_cannot_take_a_typed_artifacts_name_and_a_name_is_written_once() {
    for name in Artifact::NAMES {
        assert_eq!(Artifact::value(name, json!(1)), Err(ReservedArtifactName(name.to_string())));
    }
    let mut a = Artifacts::new();
    a.set_value("x", json!(1)).unwrap();
    a.set(Artifact::AllowEgress(true));
    a.set_value("x", json!(2)).unwrap();
    assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"x":2,"allow_egress":true}"#, "replaced in its place");
    let twice = serde_json::from_str::<Artifacts>(r#"{"x":1,"x":2}"#).unwrap_err();
    assert!(twice.to_string().contains("artifact `x` twice"), "{twice}");
    let typed = serde_json::from_str::<Artifacts>(r#"{"allow_egress":"yes"}"#);
    assert!(typed.is_err(), "a typed artifact's value is checked: {typed:?}");
}
