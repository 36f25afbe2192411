//! The DNS simulator's rules, one test each.

use super::*;
use serde_json::json;
use trellis_planner::cloud::Precondition;

const OBJ: &str = "/seeds/aws-eu1/namespaces/shoot--dev--a/dnsrecords/a-external";
const OTHER: &str = "/seeds/aws-eu1/namespaces/shoot--dev--b/dnsrecords/b-external";

fn world(text: &str) -> WorldFile {
    WorldFile::parse("world.yaml", text).unwrap()
}

/// Zone example.com with a user's record, and its subzone dev.example.com.
fn sim() -> DnsSim {
    let sim = DnsSim::in_memory();
    sim.sync_world(&world(
        "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.example.com, type: A, ttl: 60, values: [192.0.2.9]}\n        - {name: api.taken.example.com, type: A, values: [192.0.2.8]}\n    - name: Dev.Example.com.\n",
    ))
    .unwrap();
    sim
}

fn record(namespace: &str, name: &str, dns_name: &str, values: &[&str]) -> Value {
    json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "DNSRecord",
        "metadata": {"name": name, "namespace": namespace, "labels": {"role": "external", "gardener.cloud/role": "controlplane"}},
        "spec": {"type": "aws-route53", "name": dns_name, "recordType": "A", "values": values},
    })
}

fn body() -> Value {
    record("shoot--dev--a", "a-external", "api.a.dev.example.com", &["10.0.0.1"])
}

fn writes(sim: &DnsSim) -> Vec<(String, String, u16)> {
    sim.calls().into_iter().filter(|c| c.op == Op::Write).map(|c| (c.method, c.target, c.status)).collect()
}

#[tokio::test]
async fn a_dnsrecord_write_creates_its_record_in_the_longest_suffix_zone() {
    let sim = sim();
    let created = sim.create(OBJ, body()).await.unwrap();
    assert_eq!(created["metadata"]["resourceVersion"], json!("1"));
    assert_eq!(created["etag"], json!("1"));
    let rec = "/dns/zones/dev.example.com/records/api.a.dev.example.com/A";
    assert_eq!(
        sim.get(rec).await.unwrap(),
        Some(json!({"name": "api.a.dev.example.com", "type": "A", "ttl": 120, "values": ["10.0.0.1"], "owner": OBJ}))
    );
    assert_eq!(writes(&sim), vec![("PUT".into(), OBJ.into(), 201), ("PUT".into(), rec.into(), 201)]);
    assert_eq!(sim.get(OBJ).await.unwrap(), Some(created));
}

#[tokio::test]
async fn spec_zone_chooses_the_zone_and_must_hold_the_name() {
    let sim = sim();
    let mut b = body();
    b["spec"]["zone"] = json!("example.com");
    sim.create(OBJ, b.clone()).await.unwrap();
    assert!(sim.get_now("/dns/zones/example.com/records/api.a.dev.example.com/A").is_some());
    assert!(sim.get_now("/dns/zones/dev.example.com/records/api.a.dev.example.com/A").is_none());

    let mut c = record("shoot--dev--c", "c-external", "api.c.dev.example.com", &["10.0.0.3"]);
    c["spec"]["zone"] = json!("other.org");
    let e = sim.create("/seeds/aws-eu1/namespaces/shoot--dev--c/dnsrecords/c-external", c).await.unwrap_err();
    assert!(e.to_string().contains("no DNS zone \"other.org\""), "{e}");
}

#[tokio::test]
async fn a_write_with_no_zone_is_refused_and_changes_nothing() {
    let sim = sim();
    let b = record("shoot--dev--a", "a-external", "api.a.example.org", &["10.0.0.1"]);
    let e = sim.create(OBJ, b).await.unwrap_err();
    let CloudError::Rejected { status: 400, message, .. } = &e else { panic!("{e:?}") };
    assert!(message.contains("no DNS zone for api.a.example.org"), "{message}");
    assert!(message.contains("example.com"), "names the loaded zones: {message}");
    assert!(sim.objects().is_empty());
    assert_eq!(sim.records().len(), 2, "only the world's records");
}

#[tokio::test]
async fn a_record_someone_else_owns_is_never_overwritten() {
    let sim = sim();
    // The world file's record.
    let b = record("shoot--dev--a", "a-external", "api.taken.example.com", &["10.0.0.1"]);
    let e = sim.create(OBJ, b).await.unwrap_err();
    let CloudError::Rejected { status: 409, message, .. } = &e else { panic!("{e:?}") };
    assert!(message.contains("owned by someone else (declared in the world file"), "{message}");
    assert_eq!(
        sim.get_now("/dns/zones/example.com/records/api.taken.example.com/A").unwrap()["values"],
        json!(["192.0.2.8"])
    );
    // Another DNSRecord's record.
    sim.create(OBJ, body()).await.unwrap();
    let b = record("shoot--dev--b", "b-external", "api.a.dev.example.com", &["10.0.0.2"]);
    let e = sim.create(OTHER, b).await.unwrap_err();
    assert!(e.to_string().contains(&format!("owned by DNSRecord {OBJ}")), "{e}");
    assert!(sim.get_now(OTHER).is_none());
    assert_eq!(
        sim.get_now("/dns/zones/dev.example.com/records/api.a.dev.example.com/A").unwrap()["values"],
        json!(["10.0.0.1"])
    );
}

#[tokio::test]
async fn an_update_changes_the_owned_record_under_the_objects_version() {
    let sim = sim();
    let created = sim.create(OBJ, body()).await.unwrap();
    let mut b = created.clone();
    b["spec"]["values"] = json!(["10.0.0.7"]);
    b["spec"]["ttl"] = json!(60);
    let pre = Precondition::of(&created);
    let updated = sim.update(OBJ, b.clone(), &pre).await.unwrap();
    assert_eq!(updated["metadata"]["resourceVersion"], json!("2"));
    let rec = sim.get_now("/dns/zones/dev.example.com/records/api.a.dev.example.com/A").unwrap();
    assert_eq!((rec["values"].clone(), rec["ttl"].clone()), (json!(["10.0.0.7"]), json!(60)));
    // The old version is stale now.
    let e = sim.update(OBJ, b, &pre).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
    // The same body again changes no record: no controller write.
    let before = writes(&sim).len();
    sim.update(OBJ, updated.clone(), &Precondition::of(&updated)).await.unwrap();
    assert_eq!(writes(&sim).len(), before + 1, "only the object's PUT: {:?}", writes(&sim));
}

#[tokio::test]
async fn name_and_record_type_are_immutable() {
    let sim = sim();
    let created = sim.create(OBJ, body()).await.unwrap();
    let mut b = created.clone();
    b["spec"]["name"] = json!("api.new.dev.example.com");
    let e = sim.update(OBJ, b, &Precondition::None).await.unwrap_err();
    assert!(e.to_string().contains("spec.name: Invalid value: \"api.new.dev.example.com\": field is immutable"), "{e}");
    let mut b = created;
    b["spec"]["recordType"] = json!("CNAME");
    let e = sim.update(OBJ, b, &Precondition::None).await.unwrap_err();
    assert!(e.to_string().contains("spec.recordType: Invalid value: \"CNAME\": field is immutable"), "{e}");
}

#[tokio::test]
async fn deleting_a_dnsrecord_removes_the_record_it_owns_and_nothing_else() {
    let sim = sim();
    sim.create(OBJ, body()).await.unwrap();
    sim.create(OTHER, record("shoot--dev--b", "b-external", "api.b.dev.example.com", &["10.0.0.2"])).await.unwrap();
    sim.remove(OBJ, &Precondition::None).await.unwrap();
    assert!(sim.get_now(OBJ).is_none());
    let names: Vec<Value> = sim.records().iter().map(|r| r["name"].clone()).collect();
    assert_eq!(names, vec![json!("api.b.dev.example.com"), json!("api.taken.example.com"), json!("www.example.com")]);
    let deletes: Vec<_> = writes(&sim).into_iter().filter(|w| w.0 == "DELETE").collect();
    assert_eq!(
        deletes,
        vec![
            ("DELETE".into(), OBJ.into(), 200),
            ("DELETE".into(), "/dns/zones/dev.example.com/records/api.a.dev.example.com/A".into(), 200)
        ]
    );
    // Gone already: fine without a precondition, stale with one.
    sim.remove(OBJ, &Precondition::None).await.unwrap();
    let e = sim.remove(OBJ, &Precondition::IfMatch("1".into())).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
}

#[tokio::test]
async fn zone_records_and_zones_cannot_be_written_directly() {
    let sim = sim();
    let id = "/dns/zones/example.com/records/www.example.com/A";
    let e = sim.create(id, json!({"name": "www.example.com"})).await.unwrap_err();
    let CloudError::Rejected { status: 405, .. } = &e else { panic!("{e:?}") };
    let e = sim.remove(id, &Precondition::None).await.unwrap_err();
    let CloudError::Rejected { status: 405, .. } = &e else { panic!("{e:?}") };
    assert_eq!(sim.get_now(id).unwrap()["values"], json!(["192.0.2.9"]));
}

#[tokio::test]
async fn an_invalid_dnsrecord_is_refused_with_every_problem() {
    let sim = sim();
    let b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"},
                   "spec": {"recordType": "MX", "values": []}});
    let e = sim.create(OBJ, b).await.unwrap_err();
    let text = e.to_string();
    for part in [
        "apiVersion/kind: expected extensions.gardener.cloud/v1alpha1 DNSRecord",
        "metadata.name: Invalid value: \"other\"",
        "spec.type: Required value",
        "spec.name: Required value",
        "spec.recordType: Unsupported value: \"MX\"",
        "spec.values: Required value",
    ] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
    assert!(!text.contains('\n'), "one line: {text}");
    let e = sim.create("/not/a/dns/id", body()).await.unwrap_err();
    assert!(e.to_string().contains("is not a DNS id"), "{e}");
}

#[tokio::test]
async fn lists_of_a_namespace_a_zone_and_the_zones() {
    let sim = sim();
    sim.create(OBJ, body()).await.unwrap();
    let objs = sim.list("/seeds/aws-eu1/namespaces/shoot--dev--a", "dnsrecords").await.unwrap();
    assert_eq!(objs.len(), 1);
    assert!(sim.list("/seeds/aws-eu1/namespaces/shoot--dev--b", "dnsrecords").await.unwrap().is_empty());
    let recs = sim.list("/dns/zones/example.com", "records").await.unwrap();
    assert_eq!(recs.len(), 2, "the subzone's record is not in the parent zone: {recs:?}");
    let zones = sim.list("/dns", "zones").await.unwrap();
    assert_eq!(
        zones,
        vec![
            json!({"name": "dev.example.com", "id": "/dns/zones/dev.example.com"}),
            json!({"name": "example.com", "id": "/dns/zones/example.com"})
        ]
    );
    let e = sim.list("/dns/zones/nope.org", "records").await.unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
}

#[tokio::test]
async fn faults_apply_and_a_refused_call_is_audited() {
    use crate::core::faults::{Fault, FaultRule, Matcher};
    let sim =
        sim().with_faults(Faults::none().with_rule(FaultRule::once_at(Matcher::method("PUT"), 1, Fault::ServerError)));
    let e = sim.create(OBJ, body()).await.unwrap_err();
    assert!(matches!(e, CloudError::Server { .. }), "{e:?}");
    assert!(sim.get_now(OBJ).is_none());
    sim.create(OBJ, body()).await.unwrap();
    let statuses: Vec<u16> = sim.calls().iter().map(|c| c.status).collect();
    assert_eq!(statuses, vec![500, 201, 201]);
}

#[tokio::test]
async fn the_store_persists_in_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    let db = sled::open(dir.path()).unwrap();
    {
        let sim = DnsSim::open(db.open_tree("sim/dns").unwrap()).unwrap();
        sim.sync_world(&world("dns:\n  zones: [{name: example.com}]\n")).unwrap();
        sim.create(OBJ, record("shoot--dev--a", "a-external", "api.a.example.com", &["10.0.0.1"])).await.unwrap();
        sim.create(OTHER, record("shoot--dev--b", "b-external", "api.b.example.com", &["10.0.0.2"])).await.unwrap();
        sim.remove(OTHER, &Precondition::None).await.unwrap();
    }
    let sim = DnsSim::open(db.open_tree("sim/dns").unwrap()).unwrap();
    assert_eq!(sim.objects().len(), 1);
    assert_eq!(
        sim.records(),
        vec![json!({"name": "api.a.example.com", "type": "A", "ttl": 120, "values": ["10.0.0.1"], "owner": OBJ})]
    );
    // The clock goes on: the next write is a new version.
    let o = sim.update(OBJ, sim.get_now(OBJ).unwrap(), &Precondition::None).await.unwrap();
    assert_eq!(o["metadata"]["resourceVersion"], json!("4"));
}

#[test]
fn the_world_section_reports_every_problem() {
    let e = WorldFile::parse(
        "w.yaml",
        "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.other.org, type: A, values: [1.2.3.4]}\n        - {name: a.example.com, type: MX, values: []}\n        - {name: b.example.com, type: A, values: [x]}\n        - {name: B.example.com., type: A, values: [y]}\n    - name: 'bad name'\n    - name: EXAMPLE.com\n",
    )
    .unwrap_err();
    let SimError::WorldInvalid { problems, .. } = &e else { panic!("{e:?}") };
    let text = problems.join("\n");
    for part in [
        "dns.zones[0].records[0].name: www.other.org is not in zone example.com",
        "dns.zones[0].records[1].type: \"MX\" is not one of A, AAAA, CNAME, TXT",
        "dns.zones[0].records[1].values: at least one value",
        "dns.zones[0].records[3]: record b.example.com A is declared twice",
        "dns.zones[1].name: \"bad name\" is not a valid DNS zone name",
        "dns.zones[2].name: zone example.com is declared twice",
    ] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }
    assert_eq!(problems.len(), 6, "{text}");
    let e = WorldFile::parse("w.yaml", "dns:\n  zones: [{name: a.com, extra: 1}]\n").unwrap_err();
    assert!(e.to_string().contains("extra"), "{e}");
}

#[tokio::test]
async fn a_resync_removes_undeclared_world_records_and_keeps_owned_ones() {
    let sim = sim();
    sim.create(OBJ, body()).await.unwrap();
    let report = sim.sync_world(&world("dns:\n  zones:\n    - name: example.com\n")).unwrap();
    assert_eq!(
        report.removed,
        vec![
            "/dns/zones/example.com/records/api.taken.example.com/A".to_string(),
            "/dns/zones/example.com/records/www.example.com/A".to_string()
        ],
        "the subzone still holds trellis' record, so it stays"
    );
    assert!(sim.get_now("/dns/zones/dev.example.com/records/api.a.dev.example.com/A").is_some());
    assert!(sim.calls().iter().all(|c| c.target != "/dns/zones/example.com/records/www.example.com/A"), "not audited");
}
