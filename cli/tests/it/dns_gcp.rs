//! The domains plan through Cloud DNS: `--cloud gcp --endpoint URL` writes the record sets with the
//! real Cloud DNS client (google-cloud-dns-v1) into `trellis sim serve`'s simulated DNS served as
//! Cloud DNS v1, while the seed's `DNSRecord` objects stay in the simulated seed of the state dir.
//! An internal-domain migration: prepare without and with the confirmation annotation, complete,
//! and never a write to a record set trellis did not create.

use crate::common;
use crate::emulator::{key_file, Emulator};

use common::{finish, plan_ids, Run, Sandbox};
use serde_json::Value;

pub(crate) const SEED: &str = "apiVersion: core.gardener.cloud/v1beta1
kind: Seed
metadata:
  name: gcp-eu1
  annotations:
    trellis.gardener.cloud/api-server-address: 203.0.113.10
spec:
  provider:
    type: gcp
    region: europe-west1
  networks:
    pods: 10.241.128.0/17
    services: 10.241.0.0/17
  dns:
    provider:
      type: google-clouddns
      credentialsRef: {apiVersion: v1, kind: Secret, name: dns, namespace: garden}
    internal:
      type: google-clouddns
      domain: internal.example.com
      credentialsRef: {apiVersion: v1, kind: Secret, name: internal-dns, namespace: garden}
    defaults:
      - type: google-clouddns
        domain: platform.example.com
        credentialsRef: {apiVersion: v1, kind: Secret, name: external-dns, namespace: garden}
";

/// The internal domain moved to other.example.com, the old one kept in `internalDomains`.
const MOVED: &str = "    internal:
      type: google-clouddns
      domain: other.example.com
      credentialsRef: {apiVersion: v1, kind: Secret, name: internal-dns, namespace: garden}
    internalDomains:
      - {type: google-clouddns, domain: other.example.com, credentialsRef: {apiVersion: v1, kind: Secret, name: internal-dns, namespace: garden}}
      - {type: google-clouddns, domain: internal.example.com, credentialsRef: {apiVersion: v1, kind: Secret, name: internal-dns, namespace: garden}}
";

const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: edge
  namespace: garden-platform
ANNOTATIONS
spec:
  seedName: gcp-eu1
  dns:
    domain: edge.platform.example.com
  region: eu-west-1
  provider:
    type: aws
    workers:
      - name: worker
        machine:
          type: m5.large
        minimum: 1
        maximum: 2
";

/// The zones before trellis runs, each with someone else's record set.
const WORLD: &str = "dns:
  zones:
    - name: internal.example.com
      records:
        - {name: legacy.internal.example.com, type: A, ttl: 300, values: [192.0.2.50]}
    - name: other.example.com
      records:
        - {name: txt.other.example.com, type: TXT, ttl: 300, values: [owner=dns-team]}
    - name: platform.example.com
      records:
        - {name: www.platform.example.com, type: CNAME, ttl: 300, values: [lb.platform.example.net]}
";

const OLD_INTERNAL: &str = "/dns/zones/internal.example.com/records/api.edge.platform.internal.example.com/A";
/// Gardener puts `internal.` before an internal domain that does not start with it.
const NEW_INTERNAL: &str = "/dns/zones/other.example.com/records/api.edge.platform.internal.other.example.com/A";
const EXTERNAL: &str = "/dns/zones/platform.example.com/records/api.edge.platform.example.com/A";
const GATE: [&str; 2] = ["--feature-gates", "MutableShootDomains=true"];

fn shoot(sb: &Sandbox, name: &str, annotations: &[(&str, &str)]) -> String {
    let block = if annotations.is_empty() {
        String::new()
    } else {
        let lines: Vec<String> = annotations.iter().map(|(k, v)| format!("    {k}: \"{v}\"\n")).collect();
        format!("  annotations:\n{}", lines.concat())
    };
    let path = sb.file(name);
    std::fs::write(&path, SHOOT.replace("ANNOTATIONS\n", &block)).unwrap();
    path
}

fn seed(sb: &Sandbox, moved: bool) -> String {
    let path = sb.file(if moved { "moved-seed.yaml" } else { "seed.yaml" });
    let text = if moved {
        let old = "    internal:\n      type: google-clouddns\n      domain: internal.example.com\n      credentialsRef: {apiVersion: v1, kind: Secret, name: internal-dns, namespace: garden}\n";
        assert!(SEED.contains(old));
        SEED.replace(old, MOVED)
    } else {
        SEED.to_string()
    };
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs trellis with `--cloud gcp` against the emulator.
fn gcp(sb: &Sandbox, emulator: &Emulator, args: &[&str]) -> Run {
    let mut cmd = sb.command(args);
    cmd.args(["--cloud", "gcp", "--project", "trellis-sim", "--endpoint", &emulator.url])
        .args(GATE)
        .env("GOOGLE_APPLICATION_CREDENTIALS", key_file());
    finish(&mut cmd)
}

/// The record set `id` (a neutral id) as the emulator serves it through Cloud DNS v1, `None` on 404.
fn served(emulator: &Emulator, id: &str) -> Option<Value> {
    let parts: Vec<&str> = id.split('/').collect();
    let [_, "dns", "zones", zone, "records", fqdn, rtype] = parts.as_slice() else { panic!("{id}") };
    let path = format!("/dns/v1/projects/trellis-sim/managedZones/{}/rrsets/{fqdn}./{rtype}", zone.replace('.', "-"));
    match emulator.call("GET", &path, "") {
        (200, body) => Some(serde_json::from_str(&body).unwrap()),
        (404, _) => None,
        (status, body) => panic!("GET {path}: {status} {body}"),
    }
}

/// The domains plan's node ids with `action` (`plan --output json`: one plan, or `plans[]`).
fn domains_ids(plan: &Value, action: &str) -> std::collections::BTreeSet<String> {
    let domains = match plan["plans"].as_array() {
        Some(plans) => {
            plans.iter().find(|p| p["provider"] == "domains").unwrap_or_else(|| panic!("a domains plan: {plan}"))
        }
        None => plan,
    };
    assert_eq!(domains["provider"], "domains", "{plan}");
    plan_ids(domains, action)
}

#[test]
fn an_internal_domain_migration_goes_through_cloud_dns_and_touches_no_foreign_record_set() {
    let sb = Sandbox::new();
    let world = sb.file("world.yaml");
    std::fs::write(&world, WORLD).unwrap();
    let emulator_state = sb.file("emulator-state");
    let emulator = Emulator::start_with(&emulator_state, &["--world", &world]);
    let (seed1, plain) = (seed(&sb, false), shoot(&sb, "shoot.yaml", &[]));

    // 1. The shoot's first records: its record sets in Cloud DNS.
    gcp(&sb, &emulator, &["apply", "--auto-approve", "-f", &seed1, "-f", &plain])
        .code(0)
        .stdout_has("shoot--platform--edge+domains: apply complete.");
    let old = served(&emulator, OLD_INTERNAL).expect("the internal record set in Cloud DNS");
    assert_eq!(
        (old["ttl"].clone(), old["rrdatas"].clone()),
        (serde_json::json!(120), serde_json::json!(["203.0.113.10"]))
    );
    assert!(served(&emulator, EXTERNAL).is_some());
    // The record sets are not in the state dir's simulated DNS; the DNSRecord objects are.
    sb.run(&["sim", "show", OLD_INTERNAL]).code(1);
    sb.run(&["sim", "show", "/seeds/gcp-eu1/namespaces/shoot--platform--edge/dnsrecords/edge-internal"]).code(0);
    gcp(&sb, &emulator, &["plan", "--detailed-exitcode", "-f", &seed1, "-f", &plain]).code(0);

    // 2. The seed moves its internal domain; without the confirmation the shoot stays on the old one.
    let moved = seed(&sb, true);
    let unconfirmed = shoot(&sb, "unconfirmed.yaml", &[("gardener.cloud/operation", "rotate-ca-start")]);
    let plan = gcp(&sb, &emulator, &["plan", "-f", &moved, "-f", &unconfirmed, "--output", "json"]).code(0).json();
    for action in ["create", "update", "delete"] {
        let ids = domains_ids(&plan, action);
        assert!(!ids.iter().any(|id| id.starts_with("/dns/zones/other.example.com/")), "{action}: {ids:?}");
    }
    assert!(plan.to_string().contains("InternalDomainMigrationRequired"), "{plan}");

    // 3. Confirmed: prepare creates the new internal record set beside the old one.
    let confirmed = shoot(
        &sb,
        "prepare.yaml",
        &[
            ("gardener.cloud/operation", "rotate-ca-start"),
            ("confirmation.gardener.cloud/migrate-internal-domain", "true"),
        ],
    );
    let plan = gcp(&sb, &emulator, &["plan", "-f", &moved, "-f", &confirmed, "--output", "json"]).code(0).json();
    assert!(domains_ids(&plan, "create").contains(NEW_INTERNAL), "{:?}", domains_ids(&plan, "create"));
    gcp(&sb, &emulator, &["apply", "--auto-approve", "-f", &moved, "-f", &confirmed]).code(0);
    assert!(served(&emulator, NEW_INTERNAL).is_some(), "the new internal record set");
    assert!(served(&emulator, OLD_INTERNAL).is_some(), "the old one serves until completion");

    // 4. Complete: the old internal record set goes, the new one stays.
    let complete = shoot(
        &sb,
        "complete.yaml",
        &[
            ("gardener.cloud/operation", "rotate-ca-complete"),
            ("confirmation.gardener.cloud/migrate-internal-domain", "true"),
        ],
    );
    gcp(&sb, &emulator, &["apply", "--auto-approve", "-f", &moved, "-f", &complete]).code(0);
    assert!(served(&emulator, OLD_INTERNAL).is_none(), "the old internal record set is deleted");
    assert!(served(&emulator, NEW_INTERNAL).is_some());
    assert!(served(&emulator, EXTERNAL).is_some());

    // Someone else's record sets are as declared, and were never written.
    for foreign in [
        "/dns/zones/internal.example.com/records/legacy.internal.example.com/A",
        "/dns/zones/other.example.com/records/txt.other.example.com/TXT",
        "/dns/zones/platform.example.com/records/www.platform.example.com/CNAME",
    ] {
        assert!(served(&emulator, foreign).is_some(), "{foreign}");
    }
    assert_eq!(emulator.terminate(), 0);
    let audit = sb.run_raw(&["sim", "audit", "--writes", "--state", &emulator_state]).code(0);
    let writes: Vec<&str> = audit.stdout.lines().filter(|l| l.starts_with("dns")).collect();
    assert!(!writes.is_empty(), "the record sets were written through the emulator: {}", audit.stdout);
    for line in &writes {
        assert!(
            !line.contains("legacy.internal") && !line.contains("txt.other") && !line.contains("www.platform"),
            "a write to someone else's record set: {line}"
        );
    }
}

#[test]
fn a_foreign_record_set_in_cloud_dns_refuses_the_plan_naming_it() {
    let sb = Sandbox::new();
    let world = sb.file("world.yaml");
    // Someone already holds the shoot's external name.
    let taken = WORLD.replace(
        "        - {name: www.platform.example.com, type: CNAME, ttl: 300, values: [lb.platform.example.net]}\n",
        "        - {name: api.edge.platform.example.com, type: A, ttl: 300, values: [198.51.100.7]}\n",
    );
    std::fs::write(&world, taken).unwrap();
    let emulator = Emulator::start_with(&sb.file("emulator-state"), &["--world", &world]);
    let (seed1, plain) = (seed(&sb, false), shoot(&sb, "shoot.yaml", &[]));
    gcp(&sb, &emulator, &["plan", "-f", &seed1, "-f", &plain])
        .code(1)
        .stderr_has("api.edge.platform.example.com A in zone platform.example.com exists and was not created by this shoot's domains plan (values 198.51.100.7)");
    let theirs = served(&emulator, EXTERNAL).unwrap();
    assert_eq!(theirs["rrdatas"], serde_json::json!(["198.51.100.7"]));
}

#[test]
fn zones_of_a_dns_project_are_used_with_dns_project() {
    let sb = Sandbox::new();
    let world = sb.file("world.yaml");
    // The external zone lives in the landscape's DNS project only.
    let shared = WORLD.replace(
        "    - name: platform.example.com\n",
        "    - name: platform.example.com\n      gcp: {project: dns-shared, managedZone: platform}\n",
    );
    assert_ne!(shared, WORLD);
    std::fs::write(&world, shared).unwrap();
    let emulator = Emulator::start_with(&sb.file("emulator-state"), &["--world", &world]);
    let (seed1, plain) = (seed(&sb, false), shoot(&sb, "shoot.yaml", &[]));
    // In --project only, the zone is not there: refused at plan time, naming the record.
    gcp(&sb, &emulator, &["plan", "-f", &seed1, "-f", &plain]).code(1).stderr_has("api.edge.platform.example.com");
    let mut cmd = sb.command(&["apply", "--auto-approve", "-f", &seed1, "-f", &plain]);
    cmd.args([
        "--cloud",
        "gcp",
        "--project",
        "trellis-sim",
        "--dns-project",
        "dns-shared",
        "--endpoint",
        &emulator.url,
    ])
    .args(GATE)
    .env("GOOGLE_APPLICATION_CREDENTIALS", key_file());
    finish(&mut cmd).code(0).stdout_has("shoot--platform--edge+domains: apply complete.");
    let path = "/dns/v1/projects/dns-shared/managedZones/platform/rrsets/api.edge.platform.example.com./A";
    let (status, body) = emulator.call("GET", path, "");
    assert_eq!(status, 200, "{body}");
    // A project id that is not one is refused before anything is opened.
    let mut cmd = sb.command(&["plan", "-f", &seed1, "-f", &plain]);
    cmd.args([
        "--cloud",
        "gcp",
        "--project",
        "trellis-sim",
        "--dns-project",
        "Not_A_Project",
        "--endpoint",
        &emulator.url,
    ])
    .env("GOOGLE_APPLICATION_CREDENTIALS", key_file());
    finish(&mut cmd).code(1).stderr_has("--dns-project 'Not_A_Project' is not a GCP project id");
}
