//! A provider without modes and without a CCM (domains) fits the plan document: no `mode`, no CCM
//! artifacts, its own artifacts by name.

mod common;

use common::*;
use serde_json::json;
use std::collections::BTreeMap;
use trellis_plans::render::{self, TextOptions};
use trellis_plans::*;

const PLAIN: TextOptions = TextOptions { color: false, verbose: false };

/// A domains plan: one DNS record created, the record set and the API server's SANs as artifacts.
fn domains_plan(sans: &[&str]) -> Plan {
    let mut record = node(
        "domains.dns_record.shoot--dev--alpha.api",
        Kind::DnsRecord,
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
    let artifacts = Artifacts {
        infrastructure_status: serde_json::Value::Null,
        egress_cidrs: None,
        named: BTreeMap::from([
            ("apiserver_sans".to_string(), json!(sans)),
            ("dns_record_set".to_string(), json!({"api.alpha.dev": "A"})),
        ]),
        ..Artifacts::default()
    };
    Plan {
        format_version: FORMAT_VERSION,
        shoot: "shoot--dev--alpha".to_string(),
        provider: Provider::Domains,
        mode: None,
        prior: Prior::default(),
        digest: body_digest(&nodes, &artifacts),
        summary: Summary::of(&nodes),
        nodes,
        artifacts,
        warnings: vec![],
        source: None,
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
    assert_eq!(keys, ["infrastructure_status", "egress_cidrs", "named"]);
    assert_eq!(v["artifacts"]["named"]["apiserver_sans"], json!(["api.alpha.dev"]));
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
    assert_eq!(first_difference(&saved, &now).as_deref(), Some("artifact named.apiserver_sans differs"));
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
