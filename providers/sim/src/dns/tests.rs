//! The DNS simulator's rules, one test each.

use super::*;
use serde_json::json;
use trellis_planner::cloud::{Op, Precondition};

const OBJ: &str = "/seeds/aws-eu1/namespaces/shoot--dev--a/dnsrecords/a-external";
const OTHER: &str = "/seeds/aws-eu1/namespaces/shoot--dev--b/dnsrecords/b-external";
/// A record set in the subzone dev.example.com.
const SET: &str = "/dns/zones/dev.example.com/records/api.a.dev.example.com/A";
/// The world's record sets in example.com.
const WWW: &str = "/dns/zones/example.com/records/www.example.com/A";
const TAKEN: &str = "/dns/zones/example.com/records/api.taken.example.com/A";

fn world(text: &str) -> WorldFile {
    WorldFile::parse("world.yaml", text).unwrap()
}

const WORLD: &str = "dns:\n  zones:\n    - name: example.com\n      azure: {subscription: 6d3a9c1e-0000-4000-8000-000000000001, resourceGroup: DNS-rg}\n      gcp: {project: my-project, managedZone: example}\n      records:\n        - {name: www.example.com, type: A, ttl: 60, values: [192.0.2.9]}\n        - {name: api.taken.example.com, type: A, values: [192.0.2.8]}\n    - name: Dev.Example.com.\n";

/// Zone example.com (in a resource group and a project of its own) with a user's record sets, and
/// its subzone dev.example.com (default cloud blocks).
fn sim() -> DnsSim {
    let sim = DnsSim::in_memory();
    sim.sync_world(&world(WORLD)).unwrap();
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

fn set(name: &str, rtype: &str, values: &[&str]) -> Value {
    json!({"name": name, "type": rtype, "ttl": 120, "values": values})
}

fn writes(sim: &DnsSim) -> Vec<(String, String, u16)> {
    sim.calls().into_iter().filter(|c| c.op == Op::Write).map(|c| (c.method, c.target, c.status)).collect()
}

/// The refusal's status and code (`Rejected` only).
fn rejected(e: &CloudError) -> (u16, &str, &str) {
    match e {
        CloudError::Rejected { status, code, message, .. } => (*status, code.as_str(), message.as_str()),
        other => panic!("not a refusal: {other:?}"),
    }
}

#[tokio::test]
async fn a_dnsrecord_write_writes_the_object_and_nothing_else() {
    let sim = sim();
    let before = sim.records();
    let created = sim.create(OBJ, body()).await.unwrap();
    assert!(created["metadata"]["resourceVersion"].is_string(), "{created}");
    assert_eq!(created["etag"], created["metadata"]["resourceVersion"]);
    assert_eq!(sim.get(OBJ).await.unwrap(), Some(created));
    assert_eq!(sim.records(), before, "no record set is written for it");
    assert_eq!(sim.get(SET).await.unwrap(), None);
    assert_eq!(writes(&sim), vec![("PUT".into(), OBJ.into(), 201)]);
    // Its name needs no zone either: the object is the seed's, not the DNS's.
    let elsewhere = record("shoot--dev--b", "b-external", "api.b.example.org", &["10.0.0.2"]);
    sim.create(OTHER, elsewhere).await.unwrap();
}

#[tokio::test]
async fn deleting_a_dnsrecord_removes_the_object_only() {
    let sim = sim();
    sim.create(OBJ, body()).await.unwrap();
    sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.1"])).await.unwrap();
    sim.remove(OBJ, &Precondition::None).await.unwrap();
    assert!(sim.get_now(OBJ).is_none());
    assert!(sim.get_now(SET).is_some(), "the record set written for it stays");
    assert_eq!(
        writes(&sim),
        vec![("PUT".into(), OBJ.into(), 201), ("PUT".into(), SET.into(), 201), ("DELETE".into(), OBJ.into(), 200)]
    );
    // Gone already: fine without a precondition, stale with one.
    sim.remove(OBJ, &Precondition::None).await.unwrap();
    let e = sim.remove(OBJ, &Precondition::IfMatch("1".into())).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
}

#[tokio::test]
async fn a_dnsrecord_update_is_versioned_and_name_and_type_are_immutable() {
    let sim = sim();
    let created = sim.create(OBJ, body()).await.unwrap();
    let mut b = created.clone();
    b["spec"]["values"] = json!(["10.0.0.7"]);
    let pre = Precondition::of(&created);
    let updated = sim.update(OBJ, b.clone(), &pre).await.unwrap();
    assert_ne!(updated["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
    let e = sim.update(OBJ, b, &pre).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");

    let mut b = updated.clone();
    b["spec"]["name"] = json!("api.new.dev.example.com");
    let e = sim.update(OBJ, b, &Precondition::None).await.unwrap_err();
    assert!(e.to_string().contains("spec.name: Invalid value: \"api.new.dev.example.com\": field is immutable"), "{e}");
    let mut b = updated;
    b["spec"]["recordType"] = json!("CNAME");
    let e = sim.update(OBJ, b, &Precondition::None).await.unwrap_err();
    assert!(e.to_string().contains("spec.recordType: Invalid value: \"CNAME\": field is immutable"), "{e}");
}

#[tokio::test]
async fn an_invalid_dnsrecord_is_refused_with_every_problem() {
    let sim = sim();
    let b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"},
                   "spec": {"recordType": "MX", "values": [], "ttl": -1, "zone": 7}});
    let e = sim.create(OBJ, b).await.unwrap_err();
    let text = e.to_string();
    for part in [
        "apiVersion/kind: expected extensions.gardener.cloud/v1alpha1 DNSRecord",
        "metadata.name: Invalid value: \"other\"",
        "spec.type: Required value",
        "spec.name: Required value",
        "spec.recordType: Unsupported value: \"MX\"",
        "spec.values: Required value",
        "spec.ttl: Invalid value: -1",
        "spec.zone: Invalid value: 7",
    ] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
    assert!(!text.contains('\n'), "one line: {text}");
    let e = sim.create("/not/a/dns/id", body()).await.unwrap_err();
    assert!(e.to_string().contains("is not a DNS id"), "{e}");
}

#[tokio::test]
async fn a_record_set_create_answers_the_body_with_etag_and_zone_and_is_one_audited_call() {
    let sim = sim();
    let created = sim.create(SET, set("api.a.dev.example.com", "A", &["203.0.113.10"])).await.unwrap();
    let etag = created["etag"].as_str().unwrap().to_string();
    assert!(!etag.is_empty());
    assert_eq!(
        created,
        json!({"name": "api.a.dev.example.com", "type": "A", "ttl": 120, "values": ["203.0.113.10"], "etag": etag, "zone": "dev.example.com"})
    );
    assert_eq!(sim.get(SET).await.unwrap(), Some(created.clone()));
    // Any spelling of the id is the same set.
    assert_eq!(sim.get("/dns/zones/DEV.example.com./records/API.a.dev.example.com./a").await.unwrap(), Some(created));
    assert_eq!(writes(&sim), vec![("PUT".into(), SET.into(), 201)]);
    // `name` and `type` may be left out (the id says them).
    let txt = "/dns/zones/dev.example.com/records/api.a.dev.example.com/TXT";
    let t = sim.create(txt, json!({"ttl": 0, "values": ["v=spf1 -all"]})).await.unwrap();
    assert_eq!(
        (t["name"].clone(), t["type"].clone(), t["ttl"].clone()),
        (json!("api.a.dev.example.com"), json!("TXT"), json!(0))
    );
}

#[tokio::test]
async fn a_record_set_in_a_missing_zone_is_404_naming_the_zone() {
    let sim = sim();
    let id = "/dns/zones/example.org/records/api.example.org/A";
    let e = sim.create(id, set("api.example.org", "A", &["192.0.2.1"])).await.unwrap_err();
    let (status, code, message) = rejected(&e);
    assert_eq!((status, code), (404, "NotFound"), "{e}");
    assert!(message.contains("DNS zone example.org does not exist"), "{message}");
    let e = sim.update(id, set("api.example.org", "A", &["192.0.2.1"]), &Precondition::None).await.unwrap_err();
    assert_eq!(rejected(&e).0, 404);
    let e = sim.remove(id, &Precondition::None).await.unwrap_err();
    assert_eq!(rejected(&e).0, 404);
    assert_eq!(sim.get(id).await.unwrap(), None, "a GET finds nothing");
    let e = sim.list("/dns/zones/example.org", "records").await.unwrap_err();
    assert_eq!(rejected(&e).0, 404);
}

#[tokio::test]
async fn a_record_set_outside_its_zone_is_refused() {
    let sim = sim();
    for id in [
        "/dns/zones/dev.example.com/records/api.example.com/A",
        "/dns/zones/dev.example.com/records/xdev.example.com/A",
    ] {
        let name = id.split('/').nth(5).unwrap();
        let e = sim.create(id, set(name, "A", &["192.0.2.1"])).await.unwrap_err();
        let (status, code, message) = rejected(&e);
        assert_eq!((status, code), (400, "BadRequest"), "{e}");
        assert!(message.contains(&format!("the record name {name} is not in zone dev.example.com")), "{message}");
    }
    assert!(sim.list("/dns/zones/dev.example.com", "records").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_cname_is_alone_at_its_name_in_both_orders() {
    let sim = sim();
    let cname = "/dns/zones/example.com/records/www.example.com/CNAME";
    // www.example.com has the world's A: no CNAME beside it.
    let e = sim.create(cname, set("www.example.com", "CNAME", &["lb.example.net"])).await.unwrap_err();
    let (status, code, message) = rejected(&e);
    assert_eq!((status, code), (409, "Conflict"), "{e}");
    assert!(message.contains("The CNAME record could not be created because another record with the same name already exists in this zone (www.example.com: A in zone example.com)"), "{message}");
    assert!(sim.get_now(cname).is_none());
    // A CNAME first: no other type beside it.
    let alias = "/dns/zones/example.com/records/alias.example.com/CNAME";
    sim.create(alias, set("alias.example.com", "CNAME", &["lb.example.net."])).await.unwrap();
    for t in ["A", "AAAA", "TXT"] {
        let value = match t {
            "A" => "192.0.2.1",
            "AAAA" => "2001:db8::1",
            _ => "hello",
        };
        let id = format!("/dns/zones/example.com/records/alias.example.com/{t}");
        let e = sim.create(&id, set("alias.example.com", t, &[value])).await.unwrap_err();
        let (status, code, message) = rejected(&e);
        assert_eq!((status, code), (409, "Conflict"), "{e}");
        assert!(
            message.contains(&format!(
                "The {t} record could not be created because a CNAME record with the same name already exists"
            )),
            "{message}"
        );
    }
    // Replacing the CNAME itself is fine.
    sim.update(alias, set("alias.example.com", "CNAME", &["other.example.net"]), &Precondition::None).await.unwrap();
}

#[tokio::test]
async fn a_cname_at_the_zone_apex_is_refused() {
    let sim = sim();
    let e = sim
        .create("/dns/zones/example.com/records/example.com/CNAME", set("example.com", "CNAME", &["lb.example.net"]))
        .await
        .unwrap_err();
    let (status, _, message) = rejected(&e);
    assert_eq!(status, 400);
    assert!(message.contains("a CNAME record set cannot be at the zone apex (example.com)"), "{message}");
    // Other types are fine at the apex.
    sim.create("/dns/zones/example.com/records/example.com/A", set("example.com", "A", &["192.0.2.1"])).await.unwrap();
}

#[tokio::test]
async fn a_ttl_out_of_range_or_missing_is_refused() {
    let sim = sim();
    for (ttl, says) in [
        (json!(2_147_483_648_u64), "ttl: 2147483648 is out of range: an integer from 0 to 2147483647"),
        (json!(-1), "ttl: -1 is out of range"),
        (json!("60"), "ttl: \"60\" is out of range"),
        (json!(null), "ttl: required, an integer from 0 to 2147483647"),
    ] {
        let mut b = set("api.a.dev.example.com", "A", &["192.0.2.1"]);
        b["ttl"] = ttl;
        let e = sim.create(SET, b).await.unwrap_err();
        let (status, _, message) = rejected(&e);
        assert_eq!(status, 400, "{e}");
        assert!(message.contains(says), "{says} missing from {message}");
    }
    let mut b = set("api.a.dev.example.com", "A", &["192.0.2.1"]);
    b["ttl"] = json!(MAX_TTL);
    sim.create(SET, b).await.unwrap();
}

#[tokio::test]
async fn values_invalid_for_the_type_are_refused_with_every_problem_in_one_line() {
    let sim = sim();
    let id = |t: &str| format!("/dns/zones/dev.example.com/records/x.dev.example.com/{t}");
    for (t, values, says) in [
        (
            "A",
            json!(["192.0.2.1", "300.1.1.1", "2001:db8::1"]),
            vec!["\"300.1.1.1\" is not an IPv4 address", "\"2001:db8::1\" is not an IPv4 address"],
        ),
        ("AAAA", json!(["192.0.2.1"]), vec!["\"192.0.2.1\" is not an IPv6 address"]),
        ("CNAME", json!(["a.example.net", "b.example.net"]), vec!["a CNAME record set holds exactly one value, not 2"]),
        ("CNAME", json!(["not a host!"]), vec!["\"not a host!\" is not a host name"]),
        ("TXT", json!([""]), vec!["\"\" is empty"]),
        ("A", json!([]), vec!["values: required, a non-empty list"]),
        ("A", json!([7]), vec!["values: every value must be a string"]),
    ] {
        let e = sim.create(&id(t), json!({"ttl": 60, "values": values})).await.unwrap_err();
        let (status, code, message) = rejected(&e);
        assert_eq!((status, code), (400, "BadRequest"), "{e}");
        for part in says {
            assert!(message.contains(part), "{part} missing from {message}");
        }
        assert!(message.starts_with(&format!("record set {}: ", id(t))), "names the id: {message}");
    }
    // Everything wrong at once: one line.
    let e = sim
        .create(
            &id("A"),
            json!({"name": "y.dev.example.com", "type": "AAAA", "ttl": -5, "values": ["nope"], "owner": "me"}),
        )
        .await
        .unwrap_err();
    let message = rejected(&e).2.to_string();
    for part in [
        "owner: unknown field",
        "name: \"y.dev.example.com\" does not match the id's record name x.dev.example.com",
        "type: \"AAAA\" does not match the id's record type A",
        "ttl: -5 is out of range",
        "values: \"nope\" is not an IPv4 address",
    ] {
        assert!(message.contains(part), "{part} missing from {message}");
    }
    assert!(!message.contains('\n'), "{message}");
    assert!(sim.list("/dns/zones/dev.example.com", "records").await.unwrap().is_empty(), "nothing written");
}

#[tokio::test]
async fn a_create_of_an_existing_set_is_already_exists_and_changes_nothing() {
    let sim = sim();
    // The world's set.
    let e = sim.create(TAKEN, set("api.taken.example.com", "A", &["10.0.0.1"])).await.unwrap_err();
    assert!(matches!(e, CloudError::AlreadyExists { status: 409, .. }), "{e:?}");
    assert_eq!(sim.get_now(TAKEN).unwrap()["values"], json!(["192.0.2.8"]));
    // One written through the API.
    sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.1"])).await.unwrap();
    let before = sim.get_now(SET).unwrap();
    let e = sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.2"])).await.unwrap_err();
    assert!(matches!(e, CloudError::AlreadyExists { .. }), "{e:?}");
    assert_eq!(sim.get_now(SET).unwrap(), before);
}

#[tokio::test]
async fn update_and_remove_honour_the_etag() {
    let sim = sim();
    let created = sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.1"])).await.unwrap();
    let pre = Precondition::of(&created);
    assert_eq!(pre, Precondition::IfMatch(created["etag"].as_str().unwrap().to_string()));
    // A GET's answer, read-only fields and all, is a valid body.
    let mut b = created.clone();
    b["values"] = json!(["10.0.0.7"]);
    let updated = sim.update(SET, b.clone(), &pre).await.unwrap();
    assert_eq!(updated["values"], json!(["10.0.0.7"]));
    assert_ne!(updated["etag"], created["etag"], "a write gives a new etag");
    // The old etag is stale now: refused, nothing changes.
    let e = sim.update(SET, set("api.a.dev.example.com", "A", &["10.0.0.9"]), &pre).await.unwrap_err();
    assert!(matches!(&e, CloudError::PreconditionFailed { expected, .. } if *expected == created["etag"]), "{e:?}");
    let e = sim.remove(SET, &pre).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
    assert_eq!(sim.get_now(SET).unwrap(), updated);
    // The current one works.
    sim.remove(SET, &Precondition::of(&updated)).await.unwrap();
    assert!(sim.get_now(SET).is_none());
    // Absent: a conditional update or remove is refused, an unconditional remove is fine (404),
    // an unconditional update creates it (a PUT).
    let e = sim.update(SET, b.clone(), &pre).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
    let e = sim.remove(SET, &pre).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
    sim.remove(SET, &Precondition::None).await.unwrap();
    let any = Precondition::IfMatch("*".into());
    let e = sim.update(SET, b.clone(), &any).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "`*` needs the set to exist: {e:?}");
    sim.update(SET, b.clone(), &Precondition::None).await.unwrap();
    // `*` matches whatever etag it has.
    sim.update(SET, b, &any).await.unwrap();
    sim.remove(SET, &any).await.unwrap();
    let statuses: Vec<u16> = sim.calls().iter().filter(|c| c.op == Op::Write).map(|c| c.status).collect();
    assert_eq!(statuses, vec![201, 200, 412, 412, 200, 412, 412, 404, 412, 201, 200, 200]);
}

#[tokio::test]
async fn zones_cannot_be_written() {
    let sim = sim();
    let e = sim.create("/dns/zones/new.org", json!({"name": "new.org"})).await.unwrap_err();
    assert_eq!(rejected(&e).0, 405);
    let e = sim.remove("/dns/zones/example.com", &Precondition::None).await.unwrap_err();
    assert_eq!(rejected(&e).0, 405);
    assert!(sim.get_now("/dns/zones/example.com").is_some());
}

#[tokio::test]
async fn zones_show_their_cloud_blocks_declared_or_default() {
    let sim = sim();
    let example = json!({"id": "/dns/zones/example.com", "name": "example.com",
        "azure": {"subscription": "6d3a9c1e-0000-4000-8000-000000000001", "resourceGroup": "DNS-rg"},
        "gcp": {"project": "my-project", "managedZone": "example"}});
    let dev = json!({"id": "/dns/zones/dev.example.com", "name": "dev.example.com",
        "azure": {"resourceGroup": "dns"}, "gcp": {"managedZone": "dev-example-com"}});
    assert_eq!(sim.list("/dns", "zones").await.unwrap(), vec![dev.clone(), example.clone()]);
    assert_eq!(sim.zones(), vec![dev.clone(), example.clone()]);
    assert_eq!(sim.get("/dns/zones/Example.com.").await.unwrap(), Some(example.clone()));

    // Azure: resource group and subscription case-insensitively; an absent subscription is any.
    assert_eq!(sim.azure_zone("6D3A9C1E-0000-4000-8000-000000000001", "dns-RG", "EXAMPLE.com"), Some(example.clone()));
    assert_eq!(sim.azure_zone("6d3a9c1e-0000-4000-8000-000000000002", "dns-rg", "example.com"), None);
    assert_eq!(sim.azure_zone("6d3a9c1e-0000-4000-8000-000000000001", "dns", "example.com"), None);
    assert_eq!(sim.azure_zone("any", "dns", "dev.example.com"), Some(dev.clone()));
    // GCP: exactly; an absent project is any.
    assert_eq!(sim.gcp_zone("my-project", "example"), Some(example));
    assert_eq!(sim.gcp_zone("other-project", "example"), None);
    assert_eq!(sim.gcp_zone("other-project", "dev-example-com"), Some(dev));
    assert_eq!(sim.gcp_zone("my-project", "Example"), None);
    assert!(
        sim.calls().iter().all(|c| c.method != "GET" || c.target.starts_with("/dns/zones/Example")),
        "lookups are not audited"
    );
}

#[tokio::test]
async fn lists_of_a_namespace_a_zone_and_the_zones() {
    let sim = sim();
    sim.create(OBJ, body()).await.unwrap();
    let objs = sim.list("/seeds/aws-eu1/namespaces/shoot--dev--a", "dnsrecords").await.unwrap();
    assert_eq!(objs.len(), 1);
    assert!(sim.list("/seeds/aws-eu1/namespaces/shoot--dev--b", "dnsrecords").await.unwrap().is_empty());
    sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.1"])).await.unwrap();
    let recs = sim.list("/dns/zones/example.com", "records").await.unwrap();
    let names: Vec<&Value> = recs.iter().map(|r| &r["name"]).collect();
    assert_eq!(names, vec!["api.taken.example.com", "www.example.com"], "the subzone's set is not in the parent zone");
    assert!(recs.iter().all(|r| r["zone"] == "example.com" && r["etag"].is_string()), "{recs:?}");
    let e = sim.list("/dns/zones/nope.org", "records").await.unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
}

#[tokio::test]
async fn faults_apply_and_a_refused_call_is_audited() {
    use crate::core::faults::{Fault, FaultRule, Matcher};
    let sim =
        sim().with_faults(Faults::none().with_rule(FaultRule::once_at(Matcher::method("PUT"), 1, Fault::ServerError)));
    let e = sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.1"])).await.unwrap_err();
    assert!(matches!(e, CloudError::Server { .. }), "{e:?}");
    assert!(sim.get_now(SET).is_none());
    sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.1"])).await.unwrap();
    sim.create(OBJ, body()).await.unwrap();
    assert_eq!(
        writes(&sim),
        vec![("PUT".into(), SET.into(), 500), ("PUT".into(), SET.into(), 201), ("PUT".into(), OBJ.into(), 201)]
    );
}

#[tokio::test]
async fn the_store_persists_in_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    let db = sled::open(dir.path()).unwrap();
    let kept = "/dns/zones/example.com/records/api.a.example.com/A";
    let (set_before, zone_before) = {
        let sim = DnsSim::open(db.open_tree("sim/dns").unwrap()).unwrap();
        sim.sync_world(&world("dns:\n  zones: [{name: example.com, gcp: {managedZone: ex}}]\n")).unwrap();
        sim.create(OBJ, record("shoot--dev--a", "a-external", "api.a.example.com", &["10.0.0.1"])).await.unwrap();
        sim.create(OTHER, record("shoot--dev--b", "b-external", "api.b.example.com", &["10.0.0.2"])).await.unwrap();
        sim.remove(OTHER, &Precondition::None).await.unwrap();
        let s = sim.create(kept, set("api.a.example.com", "A", &["10.0.0.1"])).await.unwrap();
        let gone = "/dns/zones/example.com/records/api.b.example.com/A";
        sim.create(gone, set("api.b.example.com", "A", &["10.0.0.2"])).await.unwrap();
        sim.remove(gone, &Precondition::None).await.unwrap();
        (s, sim.get_now("/dns/zones/example.com").unwrap())
    };
    let sim = DnsSim::open(db.open_tree("sim/dns").unwrap()).unwrap();
    assert_eq!(sim.objects().len(), 1);
    assert_eq!(sim.records(), vec![set_before.clone()]);
    assert_eq!(sim.get_now("/dns/zones/example.com").unwrap(), zone_before);
    assert_eq!(zone_before["gcp"], json!({"managedZone": "ex"}));
    // The etag read before the reopen still names the set; the clock goes on.
    let o = sim.update(OBJ, sim.get_now(OBJ).unwrap(), &Precondition::None).await.unwrap();
    assert_eq!(o["metadata"]["resourceVersion"], json!("7"));
    let s = sim.update(kept, set_before.clone(), &Precondition::of(&set_before)).await.unwrap();
    assert_ne!(s["etag"], set_before["etag"]);
    // A sync keeps a set written through the API, even when its zone's section no longer lists it.
    sim.sync_world(&world("dns:\n  zones: []\n")).unwrap();
    assert!(sim.get_now(kept).is_some());
    assert!(sim.get_now("/dns/zones/example.com").is_some(), "the zone holding it stays");
}

#[tokio::test]
async fn records_of_the_dns_controller_are_upgraded_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = sled::open(dir.path()).unwrap();
    let tree = db.open_tree("sim/dns").unwrap();
    tree.insert("#meta", br#"{"clock":4}"#.as_slice()).unwrap();
    tree.insert("z example.com", br#"{"name":"example.com"}"#.as_slice()).unwrap();
    let old = json!({"value": {"name": "api.example.com", "type": "A", "ttl": 120, "values": ["10.0.0.1"], "owner": OBJ}, "origin": "api"});
    tree.insert("r /dns/zones/example.com/records/api.example.com/a", serde_json::to_vec(&old).unwrap()).unwrap();
    let sim = DnsSim::open(tree).unwrap();
    let rec = sim.get_now("/dns/zones/example.com/records/api.example.com/A").unwrap();
    assert_eq!(
        rec,
        json!({"name": "api.example.com", "type": "A", "ttl": 120, "values": ["10.0.0.1"], "etag": store::etag(5), "zone": "example.com"})
    );
    let zone = sim.get_now("/dns/zones/example.com").unwrap();
    assert_eq!(zone["gcp"], json!({"managedZone": "example-com"}));
}

#[test]
fn the_world_section_reports_every_problem() {
    let e = WorldFile::parse(
        "w.yaml",
        "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.other.org, type: A, values: [1.2.3.4]}\n        - {name: a.example.com, type: MX, values: []}\n        - {name: b.example.com, type: A, values: [192.0.2.1]}\n        - {name: B.example.com., type: A, values: [192.0.2.2]}\n        - {name: c.example.com, type: A, ttl: 2147483648, values: [192.0.2.3]}\n    - name: 'bad name'\n    - name: EXAMPLE.com\n    - name: a.org\n      azure: {subscription: not-a-guid, resourceGroup: 'rg.'}\n      gcp: {project: P, managedZone: 1zone}\n    - name: b.org\n      gcp: {managedZone: example-com}\n",
    )
    .unwrap_err();
    let SimError::WorldInvalid { problems, .. } = &e else { panic!("{e:?}") };
    let text = problems.join("\n");
    for part in [
        "dns.zones[0].records[0].name: www.other.org is not in zone example.com",
        "dns.zones[0].records[1].type: \"MX\" is not one of A, AAAA, CNAME, TXT",
        "dns.zones[0].records[1].values: at least one value",
        "dns.zones[0].records[3]: record b.example.com A is declared twice",
        "dns.zones[0].records[4].ttl: 2147483648 is out of range",
        "dns.zones[1].name: \"bad name\" is not a valid DNS zone name",
        "dns.zones[2].name: zone example.com is declared twice",
        "dns.zones[2].gcp.managedZone: managed zone example-com is also dns.zones[0]'s in the same project",
        "dns.zones[3].azure.subscription: \"not-a-guid\" is not a subscription id",
        "dns.zones[3].azure.resourceGroup: \"rg.\" ends with a period",
        "dns.zones[3].gcp.project: \"P\" is not a project id",
        "dns.zones[3].gcp.managedZone: \"1zone\" is not a managed zone name",
        "dns.zones[4].gcp.managedZone: managed zone example-com is also dns.zones[0]'s in the same project",
    ] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }
    assert_eq!(problems.len(), 13, "{text}");
    let e = WorldFile::parse("w.yaml", "dns:\n  zones: [{name: a.com, extra: 1}]\n").unwrap_err();
    assert!(e.to_string().contains("extra"), "{e}");
    let e = WorldFile::parse("w.yaml", "dns:\n  zones: [{name: a.com, azure: {resourceGroup: rg, location: x}}]\n")
        .unwrap_err();
    assert!(e.to_string().contains("location"), "{e}");
    let e = WorldFile::parse("w.yaml", "dns:\n  zones: [{name: a.com, gcp: {project: my-project}}]\n").unwrap_err();
    assert!(e.to_string().contains("managedZone"), "{e}");
    // What exists keeps the clouds' rules: values valid for the type, a CNAME alone and not at the apex.
    let e = WorldFile::parse(
        "w.yaml",
        "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: a.example.com, type: A, values: [x]}\n        - {name: a.example.com, type: CNAME, values: [lb.example.net]}\n        - {name: example.com, type: CNAME, values: [lb.example.net]}\n        - {name: c.example.com, type: CNAME, values: [a.example.net, b.example.net]}\n        - {name: d.example.com, type: AAAA, values: [192.0.2.1]}\n",
    )
    .unwrap_err();
    let SimError::WorldInvalid { problems, .. } = &e else { panic!("{e:?}") };
    let text = problems.join("\n");
    for part in [
        "dns.zones[0].records[0].values: \"x\" is not an IPv4 address",
        "dns.zones[0].records[1]: the CNAME a.example.com is not the only record set at its name: A (records[0])",
        "dns.zones[0].records[2]: a CNAME record set cannot be at the zone apex (example.com)",
        "dns.zones[0].records[3].values: a CNAME record set holds exactly one value, not 2",
        "dns.zones[0].records[4].values: \"192.0.2.1\" is not an IPv6 address",
    ] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }
    assert_eq!(problems.len(), 5, "{text}");
    // One managed zone in two projects is fine.
    WorldFile::parse(
        "w.yaml",
        "dns:\n  zones:\n    - {name: a.org, gcp: {project: project-a, managedZone: z}}\n    - {name: b.org, gcp: {project: project-b, managedZone: z}}\n",
    )
    .unwrap();
}

#[tokio::test]
async fn a_sync_never_touches_record_sets_written_through_the_api() {
    let sim = sim();
    let www_etag = sim.get_now(WWW).unwrap()["etag"].clone();
    sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.1"])).await.unwrap();
    let mine = "/dns/zones/example.com/records/mine.example.com/TXT";
    sim.create(mine, set("mine.example.com", "TXT", &["hello"])).await.unwrap();
    let before = (sim.get_now(SET).unwrap(), sim.get_now(mine).unwrap());
    // The same world again: nothing changes, etags included.
    let report = sim.sync_world(&world(WORLD)).unwrap();
    assert!(report.is_empty(), "{report:?}");
    assert_eq!(sim.get_now(WWW).unwrap()["etag"], www_etag);
    // A world that changes www and drops the subzone and api.taken.
    let report = sim
        .sync_world(&world(
            "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.example.com, type: A, ttl: 60, values: [192.0.2.10]}\n",
        ))
        .unwrap();
    assert_eq!(report.updated, vec!["/dns/zones/example.com".to_string(), WWW.to_string()]);
    assert_eq!(report.removed, vec![TAKEN.to_string()], "the subzone still holds a set written through the API");
    assert_ne!(sim.get_now(WWW).unwrap()["etag"], www_etag, "someone else's change is a new version");
    assert_eq!((sim.get_now(SET).unwrap(), sim.get_now(mine).unwrap()), before, "ours untouched");
    assert!(sim.get_now("/dns/zones/dev.example.com").is_some());
    assert!(sim.calls().iter().all(|c| c.target != WWW), "a sync is not audited");
}

const SEEDS: &str = "seeds:\n  - name: aws-eu1\n    ingress: {ip: 203.0.113.10}\n  - name: gcp-eu1\n    ingress: {hostname: lb.example.net}\n";

#[tokio::test]
async fn a_seed_answers_where_its_ingress_is_and_cannot_be_written() {
    let sim = sim();
    let report = sim.sync_world(&world(SEEDS)).unwrap();
    assert_eq!(report.added, vec!["/seeds/aws-eu1".to_string(), "/seeds/gcp-eu1".to_string()]);
    assert!(sim.get_now(WWW).is_some(), "a file without dns: leaves the zones as they are");
    assert_eq!(
        sim.get("/seeds/aws-eu1").await.unwrap(),
        Some(json!({"name": "aws-eu1", "ingress": {"ip": "203.0.113.10"}}))
    );
    assert_eq!(
        sim.get("/seeds/gcp-eu1/").await.unwrap(),
        Some(json!({"name": "gcp-eu1", "ingress": {"hostname": "lb.example.net"}}))
    );
    assert_eq!(sim.get("/seeds/azure-eu1").await.unwrap(), None, "undeclared: not found");
    assert_eq!(sim.get_now("/Seeds/AWS-EU1").unwrap()["name"], "aws-eu1", "ids compare in lowercase");
    let e = sim.create("/seeds/other", json!({"name": "other"})).await.unwrap_err();
    assert_eq!(rejected(&e).0, 405);
    let e = sim.update("/seeds/aws-eu1", json!({}), &Precondition::None).await.unwrap_err();
    assert_eq!(rejected(&e).0, 405);
    let e = sim.remove("/seeds/aws-eu1", &Precondition::None).await.unwrap_err();
    assert_eq!(rejected(&e).0, 405);
    assert!(sim.get_now("/seeds/aws-eu1").is_some());
    // A DNSRecord id under the seed is still an object id.
    sim.create(OBJ, body()).await.unwrap();
    // A resync holds exactly the declared seeds.
    let report = sim.sync_world(&world("seeds:\n  - name: aws-eu1\n    ingress: {ip: '2001:db8::10'}\n")).unwrap();
    assert_eq!(
        (report.updated, report.removed),
        (vec!["/seeds/aws-eu1".to_string()], vec!["/seeds/gcp-eu1".to_string()])
    );
    assert_eq!(sim.get_now("/seeds/aws-eu1").unwrap()["ingress"], json!({"ip": "2001:db8::10"}));
    assert!(sim.get_now("/seeds/gcp-eu1").is_none());
    assert!(sim
        .sync_world(&world("seeds:\n  - name: aws-eu1\n    ingress: {ip: '2001:db8::10'}\n"))
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn seeds_persist_in_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let db = sled::open(dir.path()).unwrap();
    DnsSim::open(db.open_tree("sim/dns").unwrap()).unwrap().sync_world(&world(SEEDS)).unwrap();
    let sim = DnsSim::open(db.open_tree("sim/dns").unwrap()).unwrap();
    assert_eq!(sim.get_now("/seeds/gcp-eu1").unwrap()["ingress"], json!({"hostname": "lb.example.net"}));
}

#[test]
fn the_seeds_section_reports_every_problem() {
    let e = WorldFile::parse(
        "w.yaml",
        "seeds:\n  - {name: Aws_EU1, ingress: {ip: 203.0.113.10}}\n  - {name: a, ingress: {ip: 203.0.113.300}}\n  - {name: b, ingress: {hostname: 'not a host'}}\n  - {name: c, ingress: {ip: 203.0.113.10, hostname: lb.example.net}}\n  - {name: d, ingress: {}}\n  - {name: a, ingress: {ip: 203.0.113.11}}\n",
    )
    .unwrap_err();
    let SimError::WorldInvalid { problems, .. } = &e else { panic!("{e:?}") };
    let text = problems.join("\n");
    for part in [
        "w.yaml: seeds[0].name: \"Aws_EU1\" is not a Seed name",
        "w.yaml: seeds[1].ingress.ip: \"203.0.113.300\" is not an IPv4 or IPv6 address",
        "w.yaml: seeds[2].ingress.hostname: \"not a host\" is not a host name",
        "w.yaml: seeds[3].ingress: give exactly one of ip (the load balancer's address) and hostname (its DNS name)",
        "w.yaml: seeds[4].ingress: give exactly one of ip",
        "w.yaml: seeds[5].name: seed a is declared twice (seeds[1] and seeds[5])",
    ] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }
    assert_eq!(problems.len(), 6, "{text}");
    let e = WorldFile::parse("w.yaml", "seeds:\n  - {name: a, ingress: {ip: 203.0.113.10}, zone: x}\n").unwrap_err();
    assert!(e.to_string().contains("unknown field `zone`"), "{e}");
    let e = WorldFile::parse("w.yaml", "seeds:\n  - {name: a, ingress: {address: 203.0.113.10}}\n").unwrap_err();
    assert!(e.to_string().contains("unknown field `address`"), "{e}");
}

#[tokio::test]
async fn a_sync_that_would_break_the_cname_rule_beside_a_set_written_through_the_api_is_refused() {
    let sim = sim();
    sim.create(SET, set("api.a.dev.example.com", "A", &["10.0.0.1"])).await.unwrap();
    let alias = "/dns/zones/example.com/records/alias.example.com/CNAME";
    sim.create(alias, set("alias.example.com", "CNAME", &["lb.example.net"])).await.unwrap();
    let clash = world(
        "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: alias.example.com, type: TXT, values: [x]}\n    - name: dev.example.com\n      records:\n        - {name: api.a.dev.example.com, type: CNAME, values: [lb.example.net]}\n",
    );
    let e = sim.sync_world(&clash).unwrap_err();
    let SimError::WorldInvalid { problems, .. } = &e else { panic!("{e:?}") };
    assert_eq!(
        problems,
        &vec![
            format!("world.yaml: dns.zones[0].records[0]: alias.example.com TXT cannot exist beside the CNAME record set {alias} written through the API (a CNAME is the only record set at its name); drop it from the file or delete that record set first"),
            format!("world.yaml: dns.zones[1].records[0]: api.a.dev.example.com CNAME cannot exist beside the A record set {SET} written through the API (a CNAME is the only record set at its name); drop it from the file or delete that record set first"),
        ]
    );
    // Nothing changed: the world's sets are still there.
    assert!(sim.get_now(WWW).is_some() && sim.get_now(TAKEN).is_some());
    assert!(sim.get_now("/dns/zones/example.com/records/alias.example.com/TXT").is_none());
    // The file may replace a set written through the API under its own name and type.
    sim.sync_world(&world("dns:\n  zones:\n    - name: dev.example.com\n      records:\n        - {name: api.a.dev.example.com, type: A, values: [192.0.2.50]}\n")).unwrap();
    assert_eq!(sim.get_now(SET).unwrap()["values"], json!(["192.0.2.50"]));
}

/// A declared record's `etag` (what `trellis world export` read) is the version a GET answers; a
/// sync of the same declaration changes nothing, and a write made afterwards gets a newer version.
#[tokio::test]
async fn a_declared_etag_is_the_version_read_and_never_given_again() {
    let sim = DnsSim::in_memory();
    let declared = "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.example.com, type: A, ttl: 60, values: [192.0.2.9], etag: 00000000-0000-0000-0000-000000000040}\n";
    sim.sync_world(&world(declared)).unwrap();
    assert_eq!(sim.get_now(WWW).unwrap()["etag"], "00000000-0000-0000-0000-000000000040");
    assert!(sim.sync_world(&world(declared)).unwrap().is_empty(), "as declared already");
    let api = "/dns/zones/example.com/records/api.example.com/A";
    sim.create(api, set("api.example.com", "A", &["192.0.2.1"])).await.unwrap();
    let tick = |id: &str| {
        let etag = sim.get_now(id).unwrap()["etag"].as_str().unwrap().to_string();
        u64::from_str_radix(etag.rsplit('-').next().unwrap(), 16).unwrap()
    };
    assert!(tick(api) > 0x40, "a later write is a newer version");
    // Another declared etag is a change.
    let other = declared.replace("000000000040", "000000000041");
    assert_eq!(sim.sync_world(&world(&other)).unwrap().updated, [WWW]);
    assert_eq!(tick(WWW), 0x41);
}
