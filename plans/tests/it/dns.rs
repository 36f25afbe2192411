//! A domains plan with DNS record sets (`dns_record_set` nodes beside the `DNSRecord` objects they are
//! written for) in every renderer: the text and markdown name the record set each node writes (the
//! reasons), the HTML page carries them, and Terraform's JSON is told which nodes a record set is
//! linked to (`related`: the `DNSRecord` it depends on in a create, the `DNSRecord` delete that
//! depends on it in a destroy), so a provider can type it by the `DNSRecord`'s DNS provider.

use crate::common::*;
use serde_json::{json, Value};
use std::cell::RefCell;
use trellis_plans::render::{self, TextOptions};
use trellis_plans::terraform::{self, TerraformKind, TerraformKinds, TerraformType};
use trellis_plans::*;

const PLAIN: TextOptions = TextOptions { color: false, verbose: false };
const TN: &str = "shoot--dev--a";
const RECORD: Kind = Kind::new("dns_record");
const RECORD_SET: Kind = Kind::new("dns_record_set");

fn record_body(name: &str, fqdn: &str) -> Value {
    json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "DNSRecord",
        "metadata": {"name": name, "namespace": TN, "labels": {"role": "external"}},
        "spec": {"type": "azure-dns", "name": fqdn, "recordType": "A", "values": ["203.0.113.10"], "ttl": 120}})
}

fn set_body(fqdn: &str) -> Value {
    json!({"name": fqdn, "type": "A", "ttl": 120, "values": ["203.0.113.10"]})
}

/// The completion of an external-domain migration as the domains provider plans it: the new domain's
/// DNSRecord and its record set created, the prior ones deleted (the set first).
fn dns_plan() -> Plan {
    let new_record = format!("domains.dns_record.{TN}.a-external-migrated");
    let old_set = format!("domains.dns_record_set.{TN}.example.com/api.a.example.com/a");
    let mut created = create(
        &new_record,
        RECORD,
        &format!("azure-eu1/{TN}"),
        "a-external-migrated",
        format!("/seeds/azure-eu1/namespaces/{TN}/dnsrecords/a-external-migrated"),
        &[("/spec/name", json!("api.b.example.com")), ("/spec/values", json!(["203.0.113.10"]))],
        "GEP-0066: the external DNS record of the shoot's API server (Completing): writes A api.b.example.com (TTL 120) → 203.0.113.10 in zone example.com; does not exist yet",
    );
    created.op = Operation::Create {
        patch: record_body("a-external-migrated", "api.b.example.com"),
        changes: created.changes().to_vec(),
    };
    let mut set = create(
        &format!("domains.dns_record_set.{TN}.example.com/api.b.example.com/a"),
        RECORD_SET,
        "example.com",
        "api.b.example.com/A",
        "/dns/zones/example.com/records/api.b.example.com/A".to_string(),
        &[
            ("/name", json!("api.b.example.com")),
            ("/ttl", json!(120)),
            ("/type", json!("A")),
            ("/values", json!(["203.0.113.10"])),
        ],
        "GEP-0066: the record set DNSRecord a-external-migrated asks for, written as its DNS provider azure-dns does (external, Completing): A api.b.example.com (TTL 120) → 203.0.113.10 in zone example.com; does not exist yet",
    );
    set.depends_on = vec![new_record.clone()];
    let mut gone_set =
        node(&old_set, RECORD_SET, "example.com", "api.a.example.com/A", Action::Delete, Ownership::Managed);
    gone_set.id = Some("/dns/zones/example.com/records/api.a.example.com/A".to_string());
    gone_set.reason = Reason::new(ReasonCode::RecordedInState, format!("GEP-0066: the record set of DNSRecord a-external, recorded by trellis ({old_set}) and no longer wanted (Completing): the old name leaves its zone"));
    let mut observed = set_body("api.a.example.com");
    observed["etag"] = json!("e1");
    observed["zone"] = json!("example.com");
    gone_set.observed = Some(observed);
    let mut gone_record = node(
        &format!("domains.dns_record.{TN}.a-external"),
        RECORD,
        &format!("azure-eu1/{TN}"),
        "a-external",
        Action::Delete,
        Ownership::Managed,
    );
    gone_record.id = Some(format!("/seeds/azure-eu1/namespaces/{TN}/dnsrecords/a-external"));
    gone_record.reason = Reason::new(
        ReasonCode::RecordedInState,
        "GEP-0066: recorded by trellis and no longer wanted (Completing): the old name leaves",
    );
    gone_record.depends_on = vec![old_set];
    gone_record.observed = Some(record_body("a-external", "api.a.example.com"));
    let mut nodes = vec![created, set, gone_set, gone_record];
    nodes.sort_by(|a, b| a.address.cmp(&b.address));
    let artifacts = Artifacts::new();
    Plan {
        format_version: FORMAT_VERSION,
        shoot: TN.to_string(),
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
fn text_and_markdown_say_which_record_set_each_node_writes() {
    let s = set(vec![dns_plan()]);
    insta::assert_snapshot!("dns_text", render::text(&s, &PLAIN));
    insta::assert_snapshot!("dns_markdown", render::markdown(&s));
    let html = trellis_plans::html::html(&s);
    for shown in [
        "writes A api.b.example.com (TTL 120) → 203.0.113.10 in zone example.com",
        "domains.dns_record_set.shoot--dev--a.example.com/api.b.example.com/a",
        "/dns/zones/example.com/records/api.a.example.com/A",
    ] {
        assert!(html.contains(shown), "{shown}: {html}");
    }
}

/// Records what each call was handed; types a record set by the `spec.type` of a related DNSRecord.
struct Recording(RefCell<Vec<(String, Vec<Value>)>>);

impl TerraformKinds for Recording {
    fn terraform_kind(
        &self,
        _: Provider,
        kind: Kind,
        id: Option<&str>,
        _: Option<&Value>,
        related: &[&Value],
    ) -> TerraformKind {
        self.0.borrow_mut().push((id.unwrap_or_default().to_string(), related.iter().map(|v| (*v).clone()).collect()));
        let azure = related.iter().any(|r| r.pointer("/spec/type") == Some(&json!("azure-dns")));
        TerraformKind {
            resource_type: (kind == RECORD_SET && azure).then_some(TerraformType {
                name: "azurerm_dns_a_record",
                source: "registry.terraform.io/hashicorp/azurerm",
            }),
            computed: &["/etag", "/zone"],
            rewritten: &["/etag"],
            known_on_create: vec![],
        }
    }
}

#[test]
fn terraform_is_told_the_nodes_a_record_set_is_linked_to_in_a_create_and_in_a_delete() {
    let kinds = Recording(RefCell::new(Vec::new()));
    let tf = terraform::plan_json(&set(vec![dns_plan()]), "test", &kinds);
    let calls = kinds.0.into_inner();
    let related = |id: &str| -> Vec<Value> { calls.iter().find(|(i, _)| i == id).unwrap().1.clone() };
    // A create: the DNSRecord it depends on; a delete: the DNSRecord delete that depends on it.
    assert_eq!(
        related("/dns/zones/example.com/records/api.b.example.com/A"),
        vec![record_body("a-external-migrated", "api.b.example.com")]
    );
    assert_eq!(
        related("/dns/zones/example.com/records/api.a.example.com/A"),
        vec![record_body("a-external", "api.a.example.com")]
    );
    // And the other way round.
    assert_eq!(
        related(&format!("/seeds/azure-eu1/namespaces/{TN}/dnsrecords/a-external-migrated")),
        vec![set_body("api.b.example.com")]
    );
    let types: Vec<(&str, &str)> = tf["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["change"]["actions"][0].as_str().unwrap()))
        .collect();
    assert_eq!(
        types,
        [
            ("domains_dns_record", "delete"),
            ("domains_dns_record", "create"),
            ("azurerm_dns_a_record", "delete"),
            ("azurerm_dns_a_record", "create")
        ]
    );
    // The etag and zone are unknown after a create.
    let created = &tf["resource_changes"][3]["change"];
    assert_eq!(created["after_unknown"]["etag"], json!(true));
    assert_eq!(created["after"]["values"], json!(["203.0.113.10"]));
}
