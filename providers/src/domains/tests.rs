//! Plans of the domains provider over an in-memory DNSRecord store (no simulator): the flows of
//! GEP-0066, the validation rules with the gate on and off, the phase refusals, determinism.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use trellis_planner::discover::Observed;
use trellis_planner::ids::{DnsIds, IdScheme};
use trellis_plans::{Action, Plan};
use trellis_state::{StoredResource, Workspace};

use super::api::DomainsShoot;
use super::provider::{discovery, plan_with, stored_state};
use super::state::DomainsState;
use super::*;
use crate::provider::Planned;

const TN: &str = "shoot--dev--a";
const SEED: &str = "aws-eu1";
const REC: &str = "/seeds/aws-eu1/namespaces/shoot--dev--a/dnsrecords/";

/// The zones of the DNS every test world holds (`World::new`).
const ZONES: [&str; 2] = ["example.com", "dev.example.com"];

fn seed_doc(internal: Option<&str>, internal_domains: &[&str], enabled: Option<bool>) -> Seed {
    // The internal domains' records go into the zone whose name is the longest suffix; the default
    // domain names its zone (aws-route53: by its DNS name).
    let cfg =
        |d: &str| json!({"type": "aws-route53", "domain": d, "credentialsRef": {"kind": "Secret", "name": "int"}});
    let mut dns = json!({
        "defaults": [{"type": "aws-route53", "domain": "dev.example.com", "zone": "dev.example.com", "credentialsRef": {"kind": "Secret", "name": "ext"}}],
    });
    if let Some(i) = internal {
        dns["internal"] = cfg(i);
    }
    if !internal_domains.is_empty() {
        dns["internalDomains"] = json!(internal_domains.iter().map(|d| cfg(d)).collect::<Vec<_>>());
    }
    if let Some(e) = enabled {
        dns["internalDomainEnabled"] = json!(e);
    }
    serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed",
        "metadata": {"name": SEED, "annotations": {"trellis.gardener.cloud/api-server-address": "203.0.113.10"}},
        "spec": {"dns": dns, "provider": {"type": "aws", "region": "eu-west-1"}},
    }))
    .unwrap()
}

fn shoot_doc(domain: Option<&str>, annotations: &[(&str, &str)]) -> Value {
    let mut s = json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
        "metadata": {"name": "a", "namespace": "garden-dev",
            "annotations": annotations.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()},
        "spec": {"seedName": SEED, "provider": {"type": "aws", "workers": [{"name": "w", "minimum": 1, "maximum": 2}]},
                 "region": "eu-west-1", "networking": {"type": "calico"}},
    });
    if let Some(d) = domain {
        s["spec"]["dns"] = json!({"domain": d});
    }
    s
}

fn paired(shoot: &Value, seed: &Seed, gate: bool) -> DomainsShoot {
    let boxed = pair(shoot, seed, Features { mutable_shoot_domains: gate }, Path::new("shoot.yaml")).unwrap();
    boxed.downcast_ref::<DomainsShoot>().unwrap().clone()
}

/// The DNSRecord objects "in the seed", the zones and their record sets, the seeds' ingresses, and
/// the workspace: what an apply leaves.
struct World {
    /// DNSRecord objects, record sets and seeds by id key.
    cloud: BTreeMap<String, Value>,
    /// The zone list (`/dns` `zones`).
    zones: Vec<Value>,
    ws: Workspace,
    /// Every id read by the last [`World::observe`], in order.
    reads: std::cell::RefCell<Vec<String>>,
}

fn zone(name: &str) -> Value {
    json!({"id": format!("/dns/zones/{name}"), "name": name})
}

impl World {
    fn new() -> World {
        World {
            cloud: BTreeMap::new(),
            zones: ZONES.iter().map(|z| zone(z)).collect(),
            ws: Workspace::new(TN),
            reads: Default::default(),
        }
    }

    /// Runs the plan's discovery rounds against the world, as the pipeline does.
    fn observe(&self, ds: &DomainsShoot) -> Result<Observed, ProviderError> {
        let mut observed = Observed::new(&DnsIds);
        self.reads.borrow_mut().clear();
        for round in 0.. {
            let Some((ids, lists)) = discovery(ds, &self.ws, round, &observed)? else { break };
            for id in ids {
                self.reads.borrow_mut().push(id.clone());
                observed.insert(&id, self.cloud.get(&DnsIds.key(&id)).cloned());
            }
            for l in lists {
                assert_eq!((l.parent.as_str(), l.rtype.as_str()), ("/dns", "zones"), "{l:?}");
                self.reads.borrow_mut().push("LIST /dns/zones".to_string());
                let unlisted = observed.answer(&l, self.zones.clone());
                assert!(unlisted.is_empty(), "zone lists are whole: {unlisted:?}");
            }
        }
        Ok(observed)
    }

    fn plan(&self, ds: &DomainsShoot) -> Result<Planned, ProviderError> {
        plan_with(ds, &self.ws, &self.observe(ds)?)
    }

    /// A record set someone else created.
    fn foreign(&mut self, zone: &str, fqdn: &str, rtype: &str, values: &[&str]) {
        let id = format!("/dns/zones/{zone}/records/{fqdn}/{rtype}");
        self.cloud.insert(
            DnsIds.key(&id),
            json!({"name": fqdn, "type": rtype, "ttl": 60, "values": values, "etag": "e0", "zone": zone}),
        );
    }

    fn apply(&mut self, p: &Planned) {
        for n in &p.plan.nodes {
            let id = n.id.clone().unwrap();
            match n.action() {
                Action::Create | Action::Update | Action::Replace => {
                    let mut body = n.patch().unwrap().clone();
                    if n.kind == kind::DNS_RECORD_SET {
                        body["etag"] = json!(format!("e{}", self.ws.serial));
                        body["zone"] = json!(n.scope);
                    }
                    self.cloud.insert(DnsIds.key(&id), body);
                    self.ws.record_resource(
                        &n.address,
                        StoredResource { kind: n.kind, id, ownership: Ownership::Managed },
                    );
                }
                Action::Delete => {
                    self.cloud.remove(&DnsIds.key(&id));
                    self.ws.forget_resource(&n.address, &id);
                }
                _ => {}
            }
        }
        for (a, id) in &p.forget {
            self.ws.forget_resource(a, id);
        }
        self.ws.provider_state = Some(p.state.clone());
        self.ws.serial += 1;
    }

    fn state(&self) -> DomainsState {
        stored_state(&self.ws).unwrap()
    }
}

use trellis_state::Ownership;

fn action_name(a: Action) -> &'static str {
    match a {
        Action::Create => "create",
        Action::Update => "update",
        Action::Replace => "replace",
        Action::Delete => "delete",
        Action::Noop => "noop",
        _ => "other",
    }
}

/// The plan's DNSRecord nodes as (object name, action).
fn actions(plan: &Plan) -> Vec<(String, &'static str)> {
    plan.nodes
        .iter()
        .filter(|n| n.kind == kind::DNS_RECORD)
        .map(|n| (n.id.as_deref().unwrap().trim_start_matches(REC).to_string(), action_name(n.action())))
        .collect()
}

/// The plan's record-set nodes as (id, action).
fn set_actions(plan: &Plan) -> Vec<(String, &'static str)> {
    plan.nodes
        .iter()
        .filter(|n| n.kind == kind::DNS_RECORD_SET)
        .map(|n| (n.id.clone().unwrap(), action_name(n.action())))
        .collect()
}

fn node<'a>(plan: &'a Plan, address: &str) -> &'a trellis_plans::Node {
    plan.nodes.iter().find(|n| n.address == address).unwrap_or_else(|| panic!("no node {address}"))
}

/// The plan-time refusals of a plan, one line each.
fn refused(r: Result<Planned, ProviderError>) -> Vec<String> {
    match r {
        Err(ProviderError::Preflight(e)) => e.iter().map(|e| e.to_string()).collect(),
        Err(e) => panic!("not a pre-flight error: {e}"),
        Ok(p) => panic!("planned: {:?}", set_actions(&p.plan)),
    }
}

fn named<'a>(plan: &'a Plan, name: &str) -> &'a Value {
    plan.artifacts.value(name).unwrap_or_else(|| panic!("no artifact {name}: {:?}", plan.artifacts))
}

fn invalid(r: Result<Planned, ProviderError>) -> Vec<String> {
    match r {
        Err(ProviderError::Invalid(e)) => e.iter().map(|e| e.to_string()).collect(),
        Err(e) => panic!("not a validation error: {e}"),
        Ok(p) => panic!("planned: {:?}", actions(&p.plan)),
    }
}

fn ok(r: Result<Planned, ProviderError>) -> Planned {
    match r {
        Ok(p) => p,
        Err(ProviderError::Invalid(e)) => panic!("{:?}", e.iter().map(|e| e.to_string()).collect::<Vec<_>>()),
        Err(ProviderError::Preflight(e)) => panic!("{:?}", e.iter().map(|e| e.to_string()).collect::<Vec<_>>()),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn pair_refuses_a_shoot_of_another_seed_or_none_and_round_trips_through_json() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut other = shoot_doc(Some("a.dev.dev.example.com"), &[]);
    other["spec"]["seedName"] = json!("gcp-eu1");
    let e = pair(&other, &seed, Features::default(), Path::new("s.yaml")).unwrap_err().to_string();
    assert_eq!(e, "s.yaml: Shoot garden-dev/a is scheduled on seed \"gcp-eu1\" (spec.seedName), not on the Seed \"aws-eu1\" it was paired with; pass the Seed it names");
    other["spec"].as_object_mut().unwrap().remove("seedName");
    let e = pair(&other, &seed, Features::default(), Path::new("s.yaml")).unwrap_err().to_string();
    assert!(e.contains("has no spec.seedName"), "{e}");
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let back = DOMAINS.shoot_from_json(&crate::provider::ProviderShoot::to_json(&ds).unwrap()).unwrap();
    assert_eq!(back.downcast_ref::<DomainsShoot>(), Some(&ds));
    assert_eq!(DOMAINS.type_name(), "domains");
    assert!(crate::registry::Registry::builtin().get("domains").is_err(), "not dispatched by spec.provider.type");
}

use crate::provider::Provider;

#[test]
fn a_first_plan_creates_the_external_and_internal_records_with_upstreams_names_labels_and_artifacts() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, false);
    let w = World::new();
    let p = ok(w.plan(&ds));
    assert_eq!(actions(&p.plan), vec![("a-external".into(), "create"), ("a-internal".into(), "create")]);
    let ext = p.plan.nodes[0].patch().unwrap();
    assert_eq!(
        ext,
        &json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "DNSRecord",
            "metadata": {"name": "a-external", "namespace": TN, "labels": {"role": "external", "gardener.cloud/role": "controlplane"}},
            "spec": {"type": "aws-route53", "name": "api.a.dev.dev.example.com", "recordType": "A", "values": ["203.0.113.10"], "ttl": 120, "zone": "dev.example.com"}})
    );
    assert_eq!(p.plan.nodes[1].patch().unwrap()["spec"]["name"], "api.a.dev.internal.int.example.com");
    assert_eq!(
        named(&p.plan, "apiserver_sans"),
        &json!([TN, "api.a.dev.internal.int.example.com", "a.dev.dev.example.com", "api.a.dev.dev.example.com"])
    );
    assert_eq!(
        named(&p.plan, "advertised_addresses"),
        &json!([
            {"name": "external", "url": "https://api.a.dev.dev.example.com"},
            {"name": "internal", "url": "https://api.a.dev.internal.int.example.com"},
            {"name": "service-account-issuer", "url": "https://api.a.dev.internal.int.example.com"},
        ])
    );
    assert_eq!(named(&p.plan, "kubeconfig_server"), "https://api.a.dev.dev.example.com");
    assert_eq!(named(&p.plan, "service_account_issuer")["issuer"], "https://api.a.dev.internal.int.example.com");
    assert!(
        !p.plan.warnings.iter().any(|w| w.starts_with("planned under feature gates")),
        "no gate set, no gate warning: {:?}",
        p.plan.warnings
    );
}

#[test]
fn external_domain_change_prepare_prepared_complete_without_an_internal_domain_migrates_the_issuer() {
    let seed = seed_doc(None, &[], Some(false));
    let mut w = World::new();
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let first = ok(w.plan(&ds));
    w.apply(&first);
    assert_eq!(actions(&first.plan), vec![("a-external".into(), "create")]);

    // Prepare: the new domain together with rotate-ca-start.
    let ds = paired(
        &shoot_doc(Some("b.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]),
        &seed,
        true,
    );
    let prep = ok(w.plan(&ds));
    assert_eq!(actions(&prep.plan), vec![("a-external".into(), "update"), ("a-external-migrated".into(), "create")]);
    assert_eq!(prep.plan.nodes[0].patch().unwrap()["metadata"]["labels"]["role"], "prior-external");
    assert_eq!(
        prep.plan.nodes[0].patch().unwrap()["spec"]["name"],
        "api.a.dev.dev.example.com",
        "the old object keeps its name"
    );
    assert_eq!(named(&prep.plan, "domains")["phase"], "Preparing");
    let sa = named(&prep.plan, "service_account_issuer");
    assert_eq!(sa["issuer"], "https://api.b.dev.dev.example.com");
    assert_eq!(sa["acceptedIssuers"], json!(["https://api.a.dev.dev.example.com"]));
    assert_eq!(
        named(&prep.plan, "advertised_addresses"),
        &json!([{"name": "external", "url": "https://api.b.dev.dev.example.com"}, {"name": "prior-external", "url": "https://api.a.dev.dev.example.com"}])
    );
    let acts = named(&prep.plan, "user_actions").to_string();
    assert!(acts.contains("they break at Completing"), "{acts}");
    w.apply(&prep);
    assert_eq!(w.state().phase, Some(phase::Phase::Prepared));

    // Prepared: the same manifest again is a no-op (the operation was consumed).
    let again = ok(w.plan(&ds));
    assert!(again.plan.nodes.iter().all(|n| n.action() == Action::Noop), "{:?}", actions(&again.plan));
    assert_eq!(named(&again.plan, "domains")["phase"], "Prepared");

    // Complete.
    let ds = paired(
        &shoot_doc(Some("b.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-complete")]),
        &seed,
        true,
    );
    let done = ok(w.plan(&ds));
    assert_eq!(actions(&done.plan), vec![("a-external".into(), "delete"), ("a-external-migrated".into(), "noop")]);
    assert_eq!(named(&done.plan, "service_account_issuer")["acceptedIssuers"], json!([]));
    assert!(named(&done.plan, "user_actions").to_string().contains("break now"));
    w.apply(&done);
    assert_eq!(w.state().phase, Some(phase::Phase::Completed));
    assert_eq!(w.state().roles.prior_external, None);
    // The prior record set went before its DNSRecord; the new object and its set are what is left.
    assert_eq!(
        set_actions(&done.plan),
        vec![
            ("/dns/zones/dev.example.com/records/api.a.dev.dev.example.com/A".into(), "delete"),
            ("/dns/zones/dev.example.com/records/api.b.dev.dev.example.com/A".into(), "noop"),
        ]
    );
    assert_eq!(
        node(&done.plan, "domains.dns_record.shoot--dev--a.a-external").depends_on,
        vec!["domains.dns_record_set.shoot--dev--a.dev.example.com/api.a.dev.dev.example.com/a"]
    );
    assert_eq!(
        w.cloud.keys().collect::<Vec<_>>(),
        [
            "/dns/zones/dev.example.com/records/api.b.dev.dev.example.com/a",
            "/seeds/aws-eu1/namespaces/shoot--dev--a/dnsrecords/a-external-migrated"
        ]
    );
}

#[test]
fn external_domain_change_with_an_internal_domain_keeps_the_internal_issuer() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true))));
    let ds = paired(
        &shoot_doc(Some("b.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]),
        &seed,
        true,
    );
    let prep = ok(w.plan(&ds));
    assert_eq!(
        actions(&prep.plan),
        vec![("a-external".into(), "update"), ("a-external-migrated".into(), "create"), ("a-internal".into(), "noop")]
    );
    assert_eq!(named(&prep.plan, "service_account_issuer")["acceptedIssuers"], json!([]));
    assert_eq!(
        named(&prep.plan, "apiserver_sans"),
        &json!([
            TN,
            "api.a.dev.internal.int.example.com",
            "b.dev.dev.example.com",
            "api.b.dev.dev.example.com",
            "a.dev.dev.example.com",
            "api.a.dev.dev.example.com"
        ])
    );
}

#[test]
fn internal_domain_migration_needs_the_confirmation_and_a_trigger_and_is_shown_as_a_constraint() {
    let mut w = World::new();
    let old_seed = seed_doc(Some("int.example.com"), &[], None);
    w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &old_seed, true))));
    let seed = seed_doc(Some("int2.example.com"), &["int2.example.com", "int.example.com"], None);
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let p = ok(w.plan(&ds));
    assert!(p.plan.nodes.iter().all(|n| n.action() == Action::Noop));
    assert_eq!(named(&p.plan, "constraints")[0]["type"], "InternalDomainUpToDate");
    assert_eq!(named(&p.plan, "constraints")[0]["status"], "False");

    let ann = [
        ("gardener.cloud/operation", "rotate-ca-start"),
        ("confirmation.gardener.cloud/migrate-internal-domain", "true"),
    ];
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &ann), &seed, true);
    let prep = ok(w.plan(&ds));
    assert_eq!(
        actions(&prep.plan),
        vec![("a-external".into(), "noop"), ("a-internal".into(), "update"), ("a-internal-migrated".into(), "create")]
    );
    let sa = named(&prep.plan, "service_account_issuer");
    assert_eq!(sa["issuer"], "https://api.a.dev.internal.int2.example.com");
    assert_eq!(sa["acceptedIssuers"], json!(["https://api.a.dev.internal.int.example.com"]));
    assert!(prep.plan.artifacts.get("constraints").is_none());
    w.apply(&prep);
    assert!(w.state().consumed_migrate_internal_confirmation);
    let ds = paired(
        &shoot_doc(Some("a.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-complete")]),
        &seed,
        true,
    );
    let done = ok(w.plan(&ds));
    assert_eq!(
        actions(&done.plan),
        vec![("a-external".into(), "noop"), ("a-internal".into(), "delete"), ("a-internal-migrated".into(), "noop")]
    );
}

#[test]
fn with_the_gate_off_a_domain_change_is_todays_immutable_error() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, false))));
    let ds = paired(
        &shoot_doc(Some("b.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]),
        &seed,
        false,
    );
    assert_eq!(
        invalid(w.plan(&ds)),
        vec!["spec.dns.domain: Invalid value: \"b.dev.dev.example.com\": field is immutable"]
    );
}

#[test]
fn with_the_gate_on_a_domain_change_needs_a_start_trigger_and_out_of_order_phases_are_refused() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true))));
    let e = invalid(w.plan(&paired(&shoot_doc(Some("b.dev.dev.example.com"), &[]), &seed, true)));
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with(
            "spec.dns.domain: Forbidden: the domain may change only in the same update that starts a CA rotation"
        ),
        "{e:?}"
    );
    let e = invalid(w.plan(&paired(
        &shoot_doc(Some("a.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-complete")]),
        &seed,
        true,
    )));
    assert_eq!(e, vec!["metadata.annotations[gardener.cloud/operation]: Forbidden: cannot complete CA rotation if .status.credentials.rotation.certificateAuthorities.phase is not 'Prepared'"]);
    w.apply(&ok(w.plan(&paired(
        &shoot_doc(Some("a.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]),
        &seed,
        true,
    ))));
    let e = invalid(w.plan(&paired(
        &shoot_doc(Some("a.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-credentials-start")]),
        &seed,
        true,
    )));
    assert_eq!(e, vec!["metadata.annotations[gardener.cloud/operation]: Forbidden: cannot start rotation of all credentials if .status.credentials.rotation.certificateAuthorities.phase is not 'Completed'"]);
}

#[test]
fn validation_rules_accepted_and_rejected() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    // accepted: a shoot without a domain lives on the internal domain, with admission's default named.
    let mut w = World::new();
    w.zones.push(zone("other.org"));
    let p = ok(w.plan(&paired(&shoot_doc(None, &[]), &seed, true)));
    assert!(
        p.plan.warnings.iter().any(|w| w.contains("would default it to a.dev.dev.example.com")),
        "{:?}",
        p.plan.warnings
    );
    // rejected: no domain at all.
    let e = invalid(w.plan(&paired(&shoot_doc(None, &[]), &seed_doc(None, &[], None), true)));
    assert!(e[0].starts_with("spec.dns.domain: Required value: a shoot needs at least one valid domain"), "{e:?}");
    // rejected: internal disabled and no external domain.
    let e = invalid(w.plan(&paired(&shoot_doc(None, &[]), &seed_doc(Some("int.example.com"), &[], Some(false)), true)));
    assert!(e[0].contains("internalDomainEnabled: false): the shoot must have an external domain"), "{e:?}");
    // rejected: outside the seed's default domains without an own provider; accepted with one.
    let e = invalid(w.plan(&paired(&shoot_doc(Some("a.other.org"), &[]), &seed, true)));
    assert!(e[0].contains("must be a subdomain of one of the seed's default domains (dev.example.com)"), "{e:?}");
    let mut own = shoot_doc(Some("a.other.org"), &[]);
    own["spec"]["dns"]["providers"] = json!([{"type": "azure-dns", "primary": true}]);
    let p = ok(w.plan(&paired(&own, &seed, true)));
    assert_eq!(p.plan.nodes[0].patch().unwrap()["spec"]["type"], "azure-dns");
    // rejected: not a DNS subdomain; all errors at once.
    let e = invalid(w.plan(&paired(&shoot_doc(Some("A_B.other.org"), &[]), &seed, true)));
    assert_eq!(e.len(), 2, "{e:?}");
}

#[test]
fn self_hosted_shoots_and_provider_changes_during_a_migration_are_denied() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    let mut sh = shoot_doc(Some("a.dev.dev.example.com"), &[]);
    sh["spec"]["provider"]["workers"][0]["controlPlane"] = json!({});
    w.apply(&ok(w.plan(&paired(&sh, &seed, true))));
    let mut moved = shoot_doc(Some("b.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]);
    moved["spec"]["provider"]["workers"][0]["controlPlane"] = json!({});
    moved["spec"]["dns"]["providers"] = json!([{"type": "aws-route53"}]);
    let e = invalid(w.plan(&paired(&moved, &seed, true)));
    assert_eq!(
        e,
        vec![
            "spec.dns.domain: Forbidden: changing the domains of a self-hosted shoot is not supported yet",
            "spec.dns.providers: Forbidden: the DNS providers must not change while a domain migration is requested or in progress",
        ]
    );
}

#[test]
fn check_seed_rules() {
    let gate = Features { mutable_shoot_domains: true };
    let mut used = shoot_doc(Some("a.dev.dev.example.com"), &[]);
    used["status"] =
        json!({"advertisedAddresses": [{"name": "internal", "url": "https://api.a.dev.internal.int.example.com"}]});
    let seed = seed_doc(Some("int2.example.com"), &["int2.example.com"], None);
    let ds = paired(&used, &seed, true);
    let e = check_seed(&seed, None, &[&ds], &[], gate).unwrap_err();
    let ProviderError::Invalid(e) = e else { panic!() };
    assert_eq!(e[0].to_string(), "spec.dns.internalDomains: Forbidden: the internal domain of api.a.dev.internal.int.example.com is still used by shoot(s) shoot--dev--a: keep its entry until they migrated");
    let kept = seed_doc(Some("int2.example.com"), &["int2.example.com", "int.example.com"], None);
    check_seed(&kept, None, &[&paired(&used, &kept, true)], &[], gate).unwrap();
    // Use read from the domains state (no status in the manifest): the same refusal, each shoot once.
    let bare = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let applied = [
        InternalInUse { shoot: "shoot--dev--a".into(), domain: "a.dev.internal.int.example.com".into() },
        InternalInUse { shoot: "shoot--dev--b".into(), domain: "b.dev.internal.int2.example.com".into() },
    ];
    let ProviderError::Invalid(e) = check_seed(&seed, None, &[&bare, &ds], &applied, gate).unwrap_err() else {
        panic!()
    };
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].to_string(), "spec.dns.internalDomains: Forbidden: the internal domain of api.a.dev.internal.int.example.com is still used by shoot(s) shoot--dev--a: keep its entry until they migrated");
    check_seed(&kept, None, &[&bare], &applied, gate).unwrap();
    let unsynced = seed_doc(Some("int.example.com"), &["int2.example.com", "int.example.com"], None);
    assert!(check_seed(&unsynced, None, &[], &[], gate).is_err());
    let disabled = seed_doc(Some("int.example.com"), &[], Some(false));
    let without = paired(&shoot_doc(None, &[]), &disabled, true);
    let ProviderError::Invalid(e) = check_seed(&disabled, None, &[&without], &[], gate).unwrap_err() else { panic!() };
    assert!(e[0].to_string().contains("without one: shoot--dev--a"), "{e:?}");
    let old = seed_doc(Some("int.example.com"), &[], None);
    let new = seed_doc(Some("int2.example.com"), &[], None);
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &new, false);
    let ProviderError::Invalid(e) = check_seed(&new, Some(&old), &[&ds], &[], Features::default()).unwrap_err() else {
        panic!()
    };
    assert_eq!(
        e[0].to_string(),
        "spec.dns.internal: Forbidden: internal domain must not be changed while shoots are still scheduled onto seed"
    );
}

/// Gate off, no Seed as last seen: the applied shoots' internal cluster domains tell whether the
/// Seed's internal domain changed; the shoots on another one are named, each once.
#[test]
fn regression_check_seed_gate_off_reads_the_applied_shoots() {
    let new = seed_doc(Some("int2.example.com"), &[], None);
    let applied = [
        InternalInUse { shoot: "shoot--dev--b".into(), domain: "b.dev.internal.int.example.com".into() },
        InternalInUse { shoot: "shoot--dev--a".into(), domain: "a.dev.internal.int.example.com".into() },
        InternalInUse { shoot: "shoot--dev--c".into(), domain: "c.dev.internal.int2.example.com".into() },
    ];
    let ProviderError::Invalid(e) = check_seed(&new, None, &[], &applied, Features::default()).unwrap_err() else {
        panic!()
    };
    assert_eq!(
        e.iter().map(ToString::to_string).collect::<Vec<_>>(),
        vec!["spec.dns.internal: Forbidden: internal domain must not be changed while shoots are still scheduled onto seed (applied on another internal domain: shoot--dev--a, shoot--dev--b)"]
    );
    check_seed(&new, None, &[], &applied[2..], Features::default()).unwrap();
    // The same without any shoot's internal domain (a Seed without an internal domain): changed.
    let none = seed_doc(None, &[], None);
    assert!(check_seed(&none, None, &[], &applied[2..], Features::default()).is_err());
}

#[test]
fn every_plan_is_deterministic() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let a = serde_json::to_string(&ok(w.plan(&ds)).plan).unwrap();
    assert_eq!(a, serde_json::to_string(&ok(w.plan(&ds)).plan).unwrap());
    w.apply(&ok(w.plan(&ds)));
    let ds = paired(
        &shoot_doc(Some("b.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]),
        &seed,
        true,
    );
    let a = serde_json::to_string(&ok(w.plan(&ds)).plan).unwrap();
    assert_eq!(a, serde_json::to_string(&ok(w.plan(&ds)).plan).unwrap());
}

#[test]
fn destroy_deletes_only_recorded_records() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    w.apply(&ok(w.plan(&ds)));
    // A record of someone else in the same namespace is not recorded: never deleted.
    w.cloud.insert(DnsIds.key(&format!("{REC}other")), json!({"metadata": {"name": "other"}}));
    let mut observed = Observed::new(&DnsIds);
    let rec: Vec<(String, String)> = w.ws.resources.iter().map(|(a, r)| (a.clone(), r.id.clone())).collect();
    for (_, id) in &rec {
        observed.insert(id, w.cloud.get(&DnsIds.key(id)).cloned());
    }
    let p = provider::destroy_with(&ds, &w.ws, &observed).unwrap();
    assert_eq!(actions(&p.plan), vec![("a-external".into(), "delete"), ("a-internal".into(), "delete")]);
    // The record sets go first: each DNSRecord's delete waits for them.
    let sets = set_actions(&p.plan);
    assert_eq!(
        sets,
        vec![
            ("/dns/zones/dev.example.com/records/api.a.dev.dev.example.com/A".into(), "delete"),
            ("/dns/zones/example.com/records/api.a.dev.internal.int.example.com/A".into(), "delete"),
        ]
    );
    let ext = node(&p.plan, "domains.dns_record.shoot--dev--a.a-external");
    assert_eq!(
        ext.depends_on,
        vec![
            "domains.dns_record_set.shoot--dev--a.dev.example.com/api.a.dev.dev.example.com/a",
            "domains.dns_record_set.shoot--dev--a.example.com/api.a.dev.internal.int.example.com/a"
        ]
    );
    assert_eq!(
        node(&p.plan, "domains.dns_record_set.shoot--dev--a.dev.example.com/api.a.dev.dev.example.com/a").reason.detail(),
        "destroy: the record set of DNSRecord a-external, recorded by trellis (domains.dns_record_set.shoot--dev--a.dev.example.com/api.a.dev.dev.example.com/a)"
    );
}

#[test]
fn seed_internal_domains_are_provider_configs_and_internal_domain_enabled_is_a_strict_bool() {
    let yaml = "apiVersion: core.gardener.cloud/v1beta1\nkind: Seed\nmetadata: {name: s}\nspec:\n  dns:\n    internal: {type: aws-route53, domain: int2.example.com, credentialsRef: {kind: Secret, name: i}}\n    internalDomains:\n    - {type: aws-route53, domain: int2.example.com, credentialsRef: {kind: Secret, name: i}}\n    - {type: aws-route53, domain: int.example.com, zone: Z1, credentialsRef: {kind: Secret, name: i}}\n    internalDomainEnabled: false\n";
    let seed: Seed = trellis_planner::yaml::from_str(yaml).unwrap();
    assert_eq!(seed.spec.dns.desired_internal().unwrap().domain, "int2.example.com");
    assert!(!seed.spec.dns.internal_domain_enabled());
    assert_eq!(seed.spec.dns.internal_by_domain("INT.example.com").unwrap().zone.as_deref(), Some("Z1"));
    let quoted = yaml.replace("internalDomainEnabled: false", "internalDomainEnabled: \"false\"");
    assert!(trellis_planner::yaml::from_str::<Seed>(&quoted).is_err());
    assert!(Seed::default().spec.dns.internal_domain_enabled(), "upstream's default is true");
}

#[test]
fn the_state_describes_the_phase_and_each_roles_domain() {
    let seed = seed_doc(None, &[], Some(false));
    let mut w = World::new();
    w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true))));
    let ds = paired(
        &shoot_doc(Some("b.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]),
        &seed,
        true,
    );
    w.apply(&ok(w.plan(&ds)));
    assert_eq!(
        w.state().describe(),
        vec![
            "phase: Prepared",
            "external: b.dev.dev.example.com (DNSRecord a-external-migrated)",
            "prior-external: a.dev.dev.example.com (DNSRecord a-external)",
        ]
    );
}

#[test]
fn regression_a_refused_start_does_not_also_report_the_domain_change_as_untriggered() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true))));
    w.apply(&ok(w.plan(&paired(
        &shoot_doc(Some("a.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]),
        &seed,
        true,
    ))));
    // Prepared: a second domain change with a new start is refused for the phase only.
    let ds = paired(
        &shoot_doc(Some("c.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start;reconcile")]),
        &seed,
        true,
    );
    assert_eq!(
        invalid(w.plan(&ds)),
        vec!["metadata.annotations[gardener.cloud/operation]: Forbidden: cannot start CA rotation if .status.credentials.rotation.certificateAuthorities.phase is not 'Completed'"]
    );
}

#[test]
fn without_workers_rollout_waits_for_the_workers_then_is_prepared() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true))));
    let op = [("gardener.cloud/operation", "rotate-credentials-start-without-workers-rollout")];
    let ds = paired(&shoot_doc(Some("b.dev.dev.example.com"), &op), &seed, true);
    let p = ok(w.plan(&ds));
    assert_eq!(named(&p.plan, "domains")["phase"], "PreparingWithoutWorkersRollout");
    assert!(p.plan.nodes.iter().any(|n| n.id.as_deref() == Some(&format!("{REC}a-external-migrated")[..])));
    w.apply(&p);
    assert_eq!(w.state().phase, Some(phase::Phase::WaitingForWorkersRollout));
    let wait = ok(w.plan(&ds));
    assert!(named(&wait.plan, "user_actions").to_string().contains("roll out your worker pools"));
    let e = invalid(w.plan(&paired(
        &shoot_doc(Some("b.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-complete")]),
        &seed,
        true,
    )));
    assert!(e[0].ends_with("is not 'Prepared'"), "{e:?}");
    w.apply(&wait);
    assert_eq!(w.state().phase, Some(phase::Phase::Prepared));
}

#[test]
fn disabling_the_internal_domain_moves_the_issuer_to_the_external_domain() {
    let mut w = World::new();
    let seed = seed_doc(Some("int.example.com"), &[], None);
    w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true))));
    let disabled = seed_doc(Some("int.example.com"), &["int.example.com"], Some(false));
    let ann = [
        ("gardener.cloud/operation", "rotate-ca-start"),
        ("confirmation.gardener.cloud/migrate-internal-domain", "true"),
    ];
    let p = ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &ann), &disabled, true)));
    assert_eq!(actions(&p.plan), vec![("a-external".into(), "noop"), ("a-internal".into(), "update")]);
    assert_eq!(p.plan.nodes[1].patch().unwrap()["metadata"]["labels"]["role"], "prior-internal");
    let sa = named(&p.plan, "service_account_issuer");
    assert_eq!(sa["issuer"], "https://api.a.dev.dev.example.com");
    assert_eq!(sa["acceptedIssuers"], json!(["https://api.a.dev.internal.int.example.com"]));
    w.apply(&p);
    let done = ok(w.plan(&paired(
        &shoot_doc(Some("a.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-complete")]),
        &disabled,
        true,
    )));
    assert_eq!(actions(&done.plan), vec![("a-external".into(), "noop"), ("a-internal".into(), "delete")]);
    assert_eq!(named(&done.plan, "kubeconfig_server"), "https://api.a.dev.dev.example.com");
}

#[test]
fn a_ca_rotation_without_a_domain_change_moves_no_record_and_the_gate_off_never_adds_prior_roles() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    for gate in [true, false] {
        let mut w = World::new();
        w.apply(&ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, gate))));
        let p = ok(w.plan(&paired(
            &shoot_doc(Some("a.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]),
            &seed,
            gate,
        )));
        assert!(p.plan.nodes.iter().all(|n| n.action() == Action::Noop), "{:?}", actions(&p.plan));
        assert_eq!(named(&p.plan, "domains")["phase"], "Preparing");
        assert!(p.plan.artifacts.get("user_actions").is_none());
    }
}

#[test]
fn record_types_follow_the_address_and_unmanaged_domains_get_no_record() {
    assert_eq!(model::record_type("203.0.113.10"), "A");
    assert_eq!(model::record_type("2001:db8::1"), "AAAA");
    assert_eq!(model::record_type("lb.seed.example.com"), "CNAME");
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut sh = shoot_doc(Some("a.own.org"), &[]);
    sh["spec"]["dns"]["providers"] = json!([{"type": "unmanaged", "primary": true}]);
    let p = ok(World::new().plan(&paired(&sh, &seed, true)));
    assert_eq!(actions(&p.plan), vec![("a-internal".into(), "create")]);
    assert_eq!(named(&p.plan, "kubeconfig_server"), "https://api.a.dev.internal.int.example.com");
}

#[test]
fn regression_an_empty_ca_rotation_phase_reads_as_never_rotated() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut sh = shoot_doc(Some("a.dev.dev.example.com"), &[("gardener.cloud/operation", "rotate-ca-start")]);
    sh["status"] = json!({"credentials": {"rotation": {"certificateAuthorities": {"phase": ""}}}});
    let p = ok(World::new().plan(&paired(&sh, &seed, true)));
    assert_eq!(named(&p.plan, "domains")["phase"], "Preparing");
}

/// The Seed-pairing hook's Seed rules ([`check_seeds`], what the engine calls for the domains entry):
/// the inputs grouped by the Seed each was paired with, a Seed of the run without any of them checked
/// too, the applied workspaces read only when some Seed is checked and their use of internal domains
/// taken from their domains state; a refusal names `seed NAME` and the file of its first shoot.
#[test]
fn check_seeds_groups_by_seed_and_reads_the_applied_workspaces_only_when_needed() {
    let gate = Features { mutable_shoot_domains: true };
    let seed = seed_doc(Some("int.example.com"), &["int.example.com"], None);
    // Applied on the seed: the shoot's internal role is on int.example.com.
    let mut w = World::new();
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    w.apply(&ok(w.plan(&ds)));
    assert_eq!(w.state().internal_in_use(), vec!["a.dev.internal.int.example.com"]);
    let reads = std::cell::Cell::new(0);
    let applied = || {
        reads.set(reads.get() + 1);
        Ok(vec![(TN.to_string(), w.ws.clone())])
    };
    let file = Path::new("shoot.yaml");
    // Nothing to check: state is not read.
    assert!(check_seeds(&[], &[], gate, &applied).unwrap().is_empty());
    assert_eq!(reads.get(), 0);
    // The Seed kept its internal domain: accepted.
    assert!(check_seeds(&[(&ds as &dyn ProviderShoot, file)], &[], gate, &applied).unwrap().is_empty());
    assert_eq!(reads.get(), 1);
    // A Seed of the run without any shoot of this run, which dropped the applied shoot's internal
    // domain: refused, naming the shoot from its domains state and the Seed's own file.
    let moved = seed_doc(Some("int2.example.com"), &["int2.example.com"], None);
    let loaded = LoadedSeed { file: "seed.yaml".into(), doc_index: 0, seed: moved.clone() };
    let failures = check_seeds(&[], std::slice::from_ref(&loaded), gate, &applied).unwrap();
    assert_eq!(failures.len(), 1);
    let (subject, at, ProviderError::Invalid(e)) = &failures[0] else { panic!("{failures:?}") };
    assert_eq!((subject.as_str(), at.as_path()), ("seed aws-eu1", Path::new("seed.yaml")));
    assert_eq!(e[0].to_string(), "spec.dns.internalDomains: Forbidden: the internal domain of api.a.dev.internal.int.example.com is still used by shoot(s) shoot--dev--a: keep its entry until they migrated");
    // The same Seed with a shoot of this run on it: checked as that shoot's, at its file; the loaded
    // Seed is not checked a second time.
    let on_moved = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &moved, true);
    let failures =
        check_seeds(&[(&on_moved as &dyn ProviderShoot, file)], std::slice::from_ref(&loaded), gate, &applied).unwrap();
    assert_eq!(failures.iter().map(|f| (f.0.as_str(), f.1.as_path())).collect::<Vec<_>>(), [("seed aws-eu1", file)]);
    // An input the domains provider did not make is a bug in the caller, not skipped.
    let other: Box<dyn ProviderShoot> = Box::new(crate::manifest::ShootEnvelope::default());
    assert!(matches!(
        check_seeds(&[(other.as_ref(), file)], &[], gate, &applied),
        Err(ProviderError::WrongShoot { .. })
    ));
}

/// The plan's DNSRecord nodes as (object name, `spec.type`).
fn record_types(plan: &Plan) -> Vec<(String, String)> {
    plan.nodes
        .iter()
        .filter(|n| n.kind == kind::DNS_RECORD)
        .map(|n| {
            let name = n.id.as_deref().unwrap().trim_start_matches(REC).to_string();
            (name, n.patch().map_or(String::new(), |p| p["spec"]["type"].as_str().unwrap_or_default().to_string()))
        })
        .collect()
}

#[test]
fn regression_with_the_gate_off_a_domain_outside_the_seeds_defaults_is_admitted_as_gardener_does() {
    // Gardener's `plugin/pkg/shoot/dns` admission refuses no external domain outside the seed's
    // default domains; GEP-0066's rule applies with MutableShootDomains=true only.
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let shoot = shoot_doc(Some("a.other.org"), &[]);
    let p = ok(World::new().plan(&paired(&shoot, &seed, false)));
    // Nothing serves the domain (no default domain, no provider): no external record, and a warning
    // says the gardenlet cannot reconcile it.
    assert_eq!(record_types(&p.plan), vec![("a-internal".to_string(), "aws-route53".to_string())]);
    assert!(
        p.plan.warnings.iter().any(|w| w.starts_with("spec.dns.domain \"a.other.org\" is not a subdomain of the seed's default domains (dev.example.com) and spec.dns.providers names no DNS provider: Gardener admits the shoot, but its gardenlet cannot reconcile it (\"unable to figure out which secret should be used for dns\")")),
        "{:?}",
        p.plan.warnings
    );
    let e = invalid(World::new().plan(&paired(&shoot, &seed, true)));
    assert_eq!(
        e,
        vec!["spec.dns.domain: Invalid value: \"a.other.org\": domain must be a subdomain of one of the seed's default domains (dev.example.com) unless the shoot sets its own primary DNS provider in spec.dns.providers"]
    );
}

#[test]
fn regression_a_provider_without_primary_is_primary_when_admission_makes_it_so() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let providers = json!([
        {"type": "azure-dns", "credentialsRef": {"apiVersion": "v1", "kind": "Secret", "name": "own"}},
        {"type": "google-clouddns", "credentialsRef": {"apiVersion": "v1", "kind": "Secret", "name": "other"}},
    ]);
    // A domain that is not a default domain: `setPrimaryDNSProvider` makes providers[0] primary, with
    // the gate on and off.
    let mut own = shoot_doc(Some("a.other.org"), &[]);
    own["spec"]["dns"]["providers"] = providers.clone();
    let mut world = World::new();
    world.zones.push(zone("other.org"));
    for gate in [false, true] {
        let p = ok(world.plan(&paired(&own, &seed, gate)));
        assert_eq!(
            record_types(&p.plan),
            vec![
                ("a-external".to_string(), "azure-dns".to_string()),
                ("a-internal".to_string(), "aws-route53".to_string())
            ],
            "gate {gate}"
        );
        assert!(!p.plan.warnings.iter().any(|w| w.contains("gardenlet cannot reconcile")), "{:?}", p.plan.warnings);
    }
    // A default domain: no primary is set, the seed's default domain serves it.
    let mut default = shoot_doc(Some("a.dev.dev.example.com"), &[]);
    default["spec"]["dns"]["providers"] = providers.clone();
    let p = ok(World::new().plan(&paired(&default, &seed, true)));
    assert_eq!(record_types(&p.plan)[0], ("a-external".to_string(), "aws-route53".to_string()));
    assert_eq!(p.plan.nodes[0].patch().unwrap()["spec"]["zone"], "dev.example.com");
    // `primary: true` on a later entry wins over providers[0].
    let mut second = own.clone();
    second["spec"]["dns"]["providers"][1]["primary"] = json!(true);
    let p = ok(world.plan(&paired(&second, &seed, true)));
    assert_eq!(record_types(&p.plan)[0], ("a-external".to_string(), "google-clouddns".to_string()));
}

#[test]
fn the_primary_provider_follows_upstreams_admit() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let defaults = &seed.spec.dns.defaults;
    let view = |dns: Value| -> api::ShootView {
        let mut s = shoot_doc(None, &[]);
        s["spec"]["dns"] = dns;
        serde_json::from_value(s).unwrap()
    };
    let a = json!({"type": "azure-dns", "credentialsRef": {"kind": "Secret", "name": "a"}});
    let b = json!({"type": "google-clouddns", "credentialsRef": {"kind": "Secret", "name": "b"}});
    let typ = |v: &api::ShootView, old: Option<&state::LastApplied>| {
        model::primary_provider_type(v, defaults, old).map(str::to_string)
    };
    // No domain on a seed with default domains: admission assigns a default domain, so no primary.
    assert_eq!(typ(&view(json!({"providers": [a]})), None), None);
    // No domain on a seed without default domains: providers[0].
    let bare: Vec<crate::seed::SeedDnsProviderConfig> = Vec::new();
    assert_eq!(model::primary_provider_type(&view(json!({"providers": [a]})), &bare, None), Some("azure-dns"));
    // No providers: none.
    assert_eq!(typ(&view(json!({"domain": "a.other.org"})), None), None);
    // An update: the old object's primary provider is re-added by type and credentialsRef, even when
    // it is no longer the first entry.
    let old = state::LastApplied {
        domain: Some("a.other.org".to_string()),
        providers: Some(json!([b.clone()])),
        seed_name: Some(SEED.to_string()),
    };
    let now = view(json!({"domain": "a.other.org", "providers": [a, b]}));
    assert_eq!(typ(&now, Some(&old)), Some("google-clouddns".to_string()));
    assert_eq!(typ(&now, None), Some("azure-dns".to_string()));
}

const EXT_SET: &str = "/dns/zones/dev.example.com/records/api.a.dev.dev.example.com/A";
const INT_SET: &str = "/dns/zones/example.com/records/api.a.dev.internal.int.example.com/A";
const EXT_SET_ADDRESS: &str = "domains.dns_record_set.shoot--dev--a.dev.example.com/api.a.dev.dev.example.com/a";

#[test]
fn each_dnsrecord_gets_its_record_set_after_it_in_the_zone_chosen_at_plan_time() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let mut w = World::new();
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let p = ok(w.plan(&ds));
    // The default domain names its zone; the internal record goes into the longest suffix.
    assert_eq!(set_actions(&p.plan), vec![(EXT_SET.into(), "create"), (INT_SET.into(), "create")]);
    let ext = node(&p.plan, EXT_SET_ADDRESS);
    assert_eq!(
        ext.patch().unwrap(),
        &json!({"name": "api.a.dev.dev.example.com", "type": "A", "ttl": 120, "values": ["203.0.113.10"]})
    );
    assert_eq!((ext.name.as_str(), ext.scope.as_str()), ("api.a.dev.dev.example.com/A", "dev.example.com"));
    assert_eq!(ext.depends_on, vec!["domains.dns_record.shoot--dev--a.a-external"]);
    assert_eq!(
        ext.reason.detail(),
        "GEP-0066: the record set DNSRecord a-external asks for, written as its DNS provider aws-route53 does (external, no CA rotation): A api.a.dev.dev.example.com (TTL 120) → 203.0.113.10 in zone dev.example.com; does not exist yet"
    );
    // The DNSRecord's reason names the record set it writes.
    assert_eq!(
        node(&p.plan, "domains.dns_record.shoot--dev--a.a-internal").reason.detail(),
        "GEP-0066: the internal DNS record of the shoot's API server (no CA rotation): writes A api.a.dev.internal.int.example.com (TTL 120) → 203.0.113.10 in zone example.com; does not exist yet"
    );
    // Discovery: the objects, the zone list, then the record sets; no seed (the annotation names the address).
    assert_eq!(
        *w.reads.borrow(),
        vec![
            format!("{REC}a-external"),
            format!("{REC}a-internal"),
            "LIST /dns/zones".to_string(),
            EXT_SET.to_string(),
            INT_SET.to_string()
        ]
    );
    // Applied, the sets are trellis's (recorded): the same plan again changes nothing.
    w.apply(&p);
    let again = ok(w.plan(&ds));
    assert!(again.plan.nodes.iter().all(|n| n.action() == Action::Noop), "{:?}", set_actions(&again.plan));
    assert_eq!(w.ws.resources[EXT_SET_ADDRESS].kind, kind::DNS_RECORD_SET);
    // A set changed by someone else since is put back under its etag (an update, not a refusal).
    w.cloud.get_mut(&DnsIds.key(EXT_SET)).unwrap()["values"] = json!(["198.51.100.7"]);
    assert_eq!(set_actions(&ok(w.plan(&ds)).plan)[0], (EXT_SET.into(), "update"));
}

#[test]
fn a_record_set_that_exists_and_was_not_created_by_trellis_is_refused_at_plan_time() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let mut w = World::new();
    w.foreign("dev.example.com", "api.a.dev.dev.example.com", "A", &["198.51.100.7"]);
    assert_eq!(
        refused(w.plan(&ds)),
        vec!["record set api.a.dev.dev.example.com A in zone dev.example.com exists and was not created by this shoot's domains plan (values 198.51.100.7): trellis never writes or deletes a record set it did not create for this shoot; if another shoot's domains plan wrote it, that shoot owns the name (`trellis state list` shows the +domains workspaces), otherwise delete it yourself or choose another domain"]
    );
    // Even one holding exactly what trellis would write, while trellis never wrote its DNSRecord.
    w.foreign("dev.example.com", "api.a.dev.dev.example.com", "A", &["203.0.113.10"]);
    w.cloud.get_mut(&DnsIds.key(EXT_SET)).unwrap()["ttl"] = json!(120);
    assert_eq!(refused(w.plan(&ds)).len(), 1);
    // Another type at the name is another record set: not refused here (the cloud's CNAME rule is the
    // cloud's to enforce).
    let mut w = World::new();
    w.foreign("dev.example.com", "api.a.dev.dev.example.com", "TXT", &["v=1"]);
    ok(w.plan(&ds));
}

/// trellis's own create whose commit was lost (a crash between the cloud's answer and the state
/// commit), or the set the simulated DNS wrote for a DNSRecord before record sets were planned: the
/// workspace records the DNSRecord, and the set holds exactly what the plan writes — taken over as a
/// no-op (and recorded by the apply); the same set with other values is refused.
#[test]
fn a_set_of_a_recorded_dnsrecord_holding_exactly_the_planned_body_is_taken_over() {
    let seed = seed_doc(None, &[], Some(false));
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let mut w = World::new();
    let first = ok(w.plan(&ds));
    w.apply(&first);
    // The set's record is lost from the workspace, the set stays.
    w.ws.forget_resource(EXT_SET_ADDRESS, EXT_SET);
    let p = ok(w.plan(&ds));
    assert_eq!(set_actions(&p.plan), vec![(EXT_SET.into(), "noop")]);
    w.cloud.get_mut(&DnsIds.key(EXT_SET)).unwrap()["values"] = json!(["198.51.100.7"]);
    assert_eq!(
        refused(w.plan(&ds)),
        vec!["record set api.a.dev.dev.example.com A in zone dev.example.com exists and was not created by this shoot's domains plan (values 198.51.100.7): trellis never writes or deletes a record set it did not create for this shoot; if another shoot's domains plan wrote it, that shoot owns the name (`trellis state list` shows the +domains workspaces), otherwise delete it yourself or choose another domain"]
    );
}

#[test]
fn no_zone_for_a_record_or_two_zones_of_one_name_are_refused_naming_them() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let mut w = World::new();
    w.zones = vec![zone("dev.example.com")];
    assert_eq!(
        refused(w.plan(&ds)),
        vec!["no DNS zone for api.a.dev.internal.int.example.com (DNSRecord shoot--dev--a/a-internal): the listed zones are dev.example.com; create the zone or declare it in the world file's dns: section"]
    );
    // The same DNS name in two resource groups: which one is the record's cannot be told.
    w.zones = vec![
        zone("dev.example.com"),
        json!({"id": "/dns/zones/example.com", "name": "example.com", "azure": {"resourceGroup": "dns-a"}}),
        json!({"id": "/dns/zones/example.com", "name": "example.com", "azure": {"resourceGroup": "dns-b"}}),
    ];
    assert_eq!(
        refused(w.plan(&ds)),
        vec!["api.a.dev.internal.int.example.com (DNSRecord shoot--dev--a/a-internal): two listed zones are named example.com, example.com (resource group dns-a) and example.com (resource group dns-b); name one in the Seed's DNS config (spec.zone of the DNSRecord: azure-dns {resourceGroup}/{zoneName}, google-clouddns the managed zone's name)"]
    );
    // azure-dns names one as {resourceGroup}/{zoneName}.
    let mut picked = seed_doc(None, &[], None);
    picked.spec.dns.internal =
        serde_json::from_value(json!({"type": "azure-dns", "domain": "int.example.com", "zone": "dns-b/example.com"}))
            .unwrap();
    let p = ok(w.plan(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &picked, true)));
    assert_eq!(set_actions(&p.plan)[1], (INT_SET.into(), "create"));
    assert_eq!(
        node(&p.plan, "domains.dns_record.shoot--dev--a.a-internal").patch().unwrap()["spec"]["zone"],
        "dns-b/example.com"
    );
}

#[test]
fn without_the_annotation_the_records_point_at_the_seeds_ingress_read_at_plan_time() {
    let mut seed = seed_doc(Some("int.example.com"), &[], None);
    seed.metadata.annotations.clear();
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let mut w = World::new();
    assert_eq!(
        refused(w.plan(&ds)),
        vec!["Seed aws-eu1 has no API-server address: declare its ingress in the world file's seeds: section (seeds: [{name: aws-eu1, ingress: {ip: …}}]) or annotate it with trellis.gardener.cloud/api-server-address"]
    );
    assert!(w.reads.borrow().contains(&"/seeds/aws-eu1".to_string()), "{:?}", w.reads.borrow());
    // The world declares the seed's ingress: a hostname, so CNAME records.
    w.cloud.insert("/seeds/aws-eu1".into(), json!({"name": SEED, "ingress": {"hostname": "lb.seed.example.net"}}));
    let p = ok(w.plan(&ds));
    assert_eq!(
        set_actions(&p.plan),
        vec![
            ("/dns/zones/dev.example.com/records/api.a.dev.dev.example.com/CNAME".into(), "create"),
            ("/dns/zones/example.com/records/api.a.dev.internal.int.example.com/CNAME".into(), "create"),
        ]
    );
    assert_eq!(
        node(&p.plan, "domains.dns_record.shoot--dev--a.a-external").patch().unwrap()["spec"]["values"],
        json!(["lb.seed.example.net"])
    );
    // The annotation overrides the ingress.
    let annotated =
        paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed_doc(Some("int.example.com"), &[], None), true);
    assert_eq!(set_actions(&ok(w.plan(&annotated)).plan)[0].0, EXT_SET);
    // A shoot with unmanaged DNS only and no internal domain writes no record: no address needed,
    // the seed is not read.
    let mut bare = seed_doc(None, &[], None);
    bare.metadata.annotations.clear();
    let mut sh = shoot_doc(Some("a.own.org"), &[]);
    sh["spec"]["dns"]["providers"] = json!([{"type": "unmanaged", "primary": true}]);
    w.cloud.clear();
    let p = ok(w.plan(&paired(&sh, &bare, true)));
    assert!(p.plan.nodes.is_empty());
    assert!(w.reads.borrow().is_empty(), "{:?}", w.reads.borrow());
}

#[test]
fn a_record_moving_to_another_zone_deletes_the_old_set_beside_the_new_one() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let mut w = World::new();
    w.apply(&ok(w.plan(&ds)));
    // A zone for the internal domain appears: the longest suffix now.
    w.zones.push(zone("int.example.com"));
    let p = ok(w.plan(&ds));
    let moved = "/dns/zones/int.example.com/records/api.a.dev.internal.int.example.com/A";
    assert_eq!(
        set_actions(&p.plan),
        vec![(EXT_SET.into(), "noop"), (INT_SET.into(), "delete"), (moved.into(), "create")]
    );
    assert!(actions(&p.plan).iter().all(|(_, a)| *a == "noop"), "{:?}", actions(&p.plan));
    let old = node(&p.plan, "domains.dns_record_set.shoot--dev--a.example.com/api.a.dev.internal.int.example.com/a");
    assert_eq!(
        old.reason.detail(),
        "GEP-0066: the record set of DNSRecord a-internal, recorded by trellis (domains.dns_record_set.shoot--dev--a.example.com/api.a.dev.internal.int.example.com/a) and no longer wanted (no CA rotation): the old name leaves its zone"
    );
    w.apply(&p);
    assert!(!w.cloud.contains_key(&DnsIds.key(INT_SET)));
    // A recorded set already gone is forgotten, not deleted.
    w.cloud.remove(&DnsIds.key(moved));
    w.zones.pop();
    let p = ok(w.plan(&ds));
    assert_eq!(set_actions(&p.plan)[1], (INT_SET.into(), "create"));
    assert_eq!(
        p.forget,
        vec![(
            "domains.dns_record_set.shoot--dev--a.int.example.com/api.a.dev.internal.int.example.com/a".to_string(),
            moved.to_string()
        )]
    );
}

/// The domains provider's Terraform facts, as the registry hands them to the Terraform writer.
struct DomainsKinds;

impl trellis_plans::terraform::TerraformKinds for DomainsKinds {
    fn terraform_kind(
        &self,
        _: trellis_plans::Provider,
        kind: trellis_plans::Kind,
        id: Option<&str>,
        body: Option<&Value>,
        related: &[&Value],
    ) -> trellis_plans::terraform::TerraformKind {
        DOMAINS.terraform_kind(kind, id, body, related)
    }
}

/// (Terraform address, actions) of every resource change.
fn terraform_changes(plan: &Plan) -> Vec<(String, String)> {
    let set = trellis_plans::PlanSet::new(vec![plan.clone()]);
    let tf = trellis_plans::terraform::plan_json(&set, "test", &DomainsKinds);
    tf["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["address"].as_str().unwrap().to_string(), c["change"]["actions"].to_string()))
        .collect()
}

/// A record set is its DNS provider's Terraform type (the provider its DNSRecord names, found through
/// the plan's dependency between the two, in a create and in a destroy alike); the DNSRecord object
/// is a Kubernetes object (`kubernetes_manifest`).
#[test]
fn terraform_json_shows_record_sets_as_the_dns_providers_record_types() {
    let seed = seed_doc(None, &[], Some(false));
    let mut sh = shoot_doc(Some("a.other.org"), &[]);
    sh["spec"]["dns"]["providers"] = json!([{"type": "azure-dns", "primary": true}]);
    let ds = paired(&sh, &seed, true);
    let mut w = World::new();
    w.zones.push(zone("other.org"));
    let p = ok(w.plan(&ds));
    assert_eq!(
        terraform_changes(&p.plan),
        vec![
            ("module.shoot--dev--a.kubernetes_manifest.a-external".to_string(), "[\"create\"]".to_string()),
            ("module.shoot--dev--a.azurerm_dns_a_record.api_a_other_org_A".to_string(), "[\"create\"]".to_string()),
        ]
    );
    // The zone a set goes into is known before the create (it is in the set's id); only the etag is
    // computed by the cloud.
    let tf =
        trellis_plans::terraform::plan_json(&trellis_plans::PlanSet::new(vec![p.plan.clone()]), "test", &DomainsKinds);
    let set = tf["resource_changes"].as_array().unwrap().iter().find(|c| c["type"] == "azurerm_dns_a_record").unwrap();
    assert_eq!(set["change"]["after"]["zone"], "other.org", "{set:#}");
    assert_eq!(set["change"]["after_unknown"], json!({"values": [false], "etag": true}), "{set:#}");
    w.apply(&p);
    let mut observed = Observed::new(&DnsIds);
    for r in w.ws.resources.values() {
        observed.insert(&r.id, w.cloud.get(&DnsIds.key(&r.id)).cloned());
    }
    let gone = provider::destroy_with(&ds, &w.ws, &observed).unwrap();
    assert_eq!(
        terraform_changes(&gone.plan),
        vec![
            ("module.shoot--dev--a.kubernetes_manifest.a-external".to_string(), "[\"delete\"]".to_string()),
            ("module.shoot--dev--a.azurerm_dns_a_record.api_a_other_org_A".to_string(), "[\"delete\"]".to_string()),
        ]
    );
}

/// A stage asking for what discovery never read is a bug, never "no zone" or "no address".
#[test]
fn regression_a_zone_list_or_seed_never_read_is_a_bug_not_a_refusal() {
    let seed = seed_doc(Some("int.example.com"), &[], None);
    let ds = paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &seed, true);
    let w = World::new();
    let mut observed = Observed::new(&DnsIds);
    for id in [format!("{REC}a-external"), format!("{REC}a-internal")] {
        observed.insert(&id, None);
    }
    let e = plan_with(&ds, &w.ws, &observed).err().unwrap().to_string();
    assert_eq!(
        e,
        "bug: the list of zones under /dns was never run before planning (stage: domains records); please report"
    );
    let mut bare = seed.clone();
    bare.metadata.annotations.clear();
    let e = plan_with(&paired(&shoot_doc(Some("a.dev.dev.example.com"), &[]), &bare, true), &w.ws, &observed)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "bug: /seeds/aws-eu1 was never fetched before planning (stage: domains records); please report"
    );
}
