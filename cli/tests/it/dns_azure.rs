//! Domains plans applied to Azure DNS through the real ARM client: `trellis sim serve` serves the
//! simulated DNS as Azure DNS (beside ARM), and `--cloud azure --endpoint URL` sends the record sets
//! (`/dns/…`) there while the seed's `DNSRecord` objects stay in the local simulated seed. What the
//! served cloud did is read back over ARM and from its audit log (`trellis sim audit` of the
//! emulator's state dir).

use crate::common;
use crate::emulator::Emulator;

use common::{finish, Run, Sandbox};
use serde_json::Value;
use std::path::Path;

/// The subscription the shoots live in (the emulator's, `trellis_sim::DEFAULT_SUBSCRIPTION`).
const SUB: &str = trellis_sim::DEFAULT_SUBSCRIPTION;
const API: &str = "api-version=2018-05-01";

/// The seed's zones in two resource groups, and someone else's record set (www).
pub(crate) const WORLD: &str = "dns:
  zones:
    - name: internal.example.com
      azure: {resourceGroup: seed-internal-rg}
    - name: platform.example.com
      azure: {resourceGroup: dns-rg}
      records:
        - {name: www.platform.example.com, type: CNAME, ttl: 300, values: [lb.platform.example.net]}
";

/// `tests/scenarios/domains/M1-external-domain-change-with-internal/<name>`.
fn m1(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/scenarios/domains/M1-external-domain-change-with-internal")
        .join(name);
    assert!(path.exists(), "missing {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

/// `trellis ARGS --state local --cloud azure …` against `emulator`, signed in as a service principal
/// at the emulator's token endpoint, under the gate.
fn azure(sb: &Sandbox, emulator: &Emulator, args: &[&str]) -> Run {
    let mut cmd = sb.raw_command(args);
    cmd.args(["--state", &sb.file("local"), "--cloud", "azure", "--subscription", SUB, "--endpoint", &emulator.url]);
    cmd.args(["--feature-gates", "MutableShootDomains=true"]);
    for (name, _) in std::env::vars() {
        if name.starts_with("AZURE_") || name.starts_with("IDENTITY_") || name.starts_with("MSI_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("AZURE_TENANT_ID", "tenant")
        .env("AZURE_CLIENT_ID", "client")
        .env("AZURE_CLIENT_SECRET", "dns-test-secret")
        .env("AZURE_AUTHORITY_HOST", &emulator.url);
    finish(&mut cmd)
}

/// The record set `{TYPE}/{name}` of zone `zone` in resource group `rg`, over ARM: its status and body.
fn record_set(emulator: &Emulator, rg: &str, zone: &str, rtype: &str, name: &str) -> (u16, Value) {
    let path = format!(
        "/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.Network/dnszones/{zone}/{rtype}/{name}?{API}"
    );
    let (status, body) = emulator.call("GET", &path, "");
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn a_records(set: &Value) -> Vec<String> {
    set["properties"]["ARecords"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["ipv4Address"].as_str()).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The served DNS's audit log after the emulator stopped: `(method, status, target)` lines.
fn served_dns_audit(sb: &Sandbox) -> Vec<(String, u16, String)> {
    let audit = sb.run_raw(&["sim", "audit", "--state", &sb.file("emu")]).code(0);
    audit
        .stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "dns").then_some(())?;
            let method = w.next()?.to_string();
            let status = w.next()?.parse().ok()?;
            Some((method, status, w.next()?.to_string()))
        })
        .collect()
}

fn start(sb: &Sandbox, world: &str) -> Emulator {
    let file = sb.file("world.yaml");
    std::fs::write(&file, world).unwrap();
    Emulator::start_with(&sb.file("emu"), &["--world", &file])
}

#[test]
fn an_external_domain_change_is_prepared_and_completed_in_azure_dns_through_the_arm_client() {
    let sb = Sandbox::new();
    let emulator = start(&sb, WORLD);
    let (seed, shoot, start_, complete) =
        (m1("seed.yaml"), m1("shoot.yaml"), m1("shoot-start.yaml"), m1("shoot-complete.yaml"));

    azure(&sb, &emulator, &["apply", "--auto-approve", "-f", &seed, "-f", &shoot])
        .code(0)
        .stdout_has("shoot--platform--web+domains: apply complete.");
    // Each record set in its zone's resource group: the internal zone lives in another one.
    let (status, internal) = record_set(&emulator, "seed-internal-rg", "internal.example.com", "A", "api.web.platform");
    assert_eq!((status, a_records(&internal)), (200, vec!["203.0.113.10".to_string()]), "{internal}");
    let (status, external) = record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web");
    assert_eq!((status, a_records(&external)), (200, vec!["203.0.113.10".to_string()]), "{external}");
    // The DNSRecord objects stay in the local simulated seed.
    sb.run_raw(&[
        "sim",
        "show",
        "/seeds/azure-eu1/namespaces/shoot--platform--web/dnsrecords/web-external",
        "--state",
        &sb.file("local"),
    ])
    .code(0);
    azure(&sb, &emulator, &["plan", "-f", &seed, "-f", &shoot, "--detailed-exitcode"]).code(0);

    // Prepare: the new name beside the old one.
    azure(&sb, &emulator, &["apply", "--auto-approve", "-f", &seed, "-f", &start_]).code(0);
    assert_eq!(record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web2").0, 200);
    assert_eq!(record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web").0, 200);
    azure(&sb, &emulator, &["plan", "-f", &seed, "-f", &start_, "--detailed-exitcode"]).code(0);

    // Complete: the old name leaves.
    azure(&sb, &emulator, &["apply", "--auto-approve", "-f", &seed, "-f", &complete]).code(0);
    assert_eq!(record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web").0, 404);
    assert_eq!(record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web2").0, 200);
    azure(&sb, &emulator, &["plan", "-f", &seed, "-f", &complete, "--detailed-exitcode"]).code(0);
    let (status, theirs) = record_set(&emulator, "dns-rg", "platform.example.com", "CNAME", "www");
    assert_eq!((status, theirs["properties"]["CNAMERecord"]["cname"].as_str()), (200, Some("lb.platform.example.net")));

    assert_eq!(emulator.terminate(), 0);
    let audit = served_dns_audit(&sb);
    // The first apply writes its two record sets in parallel: compared in a stable order.
    let mut writes: Vec<(&str, u16, &str)> = audit
        .iter()
        .filter(|(m, _, _)| m == "PUT" || m == "DELETE")
        .map(|(m, s, t)| (m.as_str(), *s, t.as_str()))
        .collect();
    writes.sort();
    assert_eq!(
        writes,
        [
            ("DELETE", 200, "/dns/zones/platform.example.com/records/api.web.platform.example.com/A"),
            ("PUT", 201, "/dns/zones/internal.example.com/records/api.web.platform.internal.example.com/A"),
            ("PUT", 201, "/dns/zones/platform.example.com/records/api.web.platform.example.com/A"),
            ("PUT", 201, "/dns/zones/platform.example.com/records/api.web2.platform.example.com/A"),
        ],
        "only trellis's record sets were written, once each; never someone else's: {audit:#?}"
    );
}

#[test]
fn a_record_set_someone_else_has_at_the_name_is_refused_at_plan_time() {
    let sb = Sandbox::new();
    let world =
        format!("{WORLD}        - {{name: api.web.platform.example.com, type: A, ttl: 60, values: [198.51.100.7]}}\n");
    let emulator = start(&sb, &world);
    let run = azure(&sb, &emulator, &["plan", "-f", &m1("seed.yaml"), "-f", &m1("shoot.yaml")]).code(1).stderr_has(
        "record set api.web.platform.example.com A in zone platform.example.com exists and was not created by this shoot's domains plan (values 198.51.100.7)",
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let (_, theirs) = record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web");
    assert_eq!(a_records(&theirs), ["198.51.100.7"]);
}

/// A record set created by someone else between plan and apply: the apply of the saved plan reads
/// it again and refuses before any write (the create would carry `If-None-Match: *` besides: the
/// adaptor's tests), theirs stands; once they removed it, the apply converges.
#[test]
fn an_apply_failed_on_a_record_set_made_after_the_plan_leaves_theirs_and_converges_on_re_run() {
    let sb = Sandbox::new();
    let emulator = start(&sb, WORLD);
    let (seed, shoot) = (m1("seed.yaml"), m1("shoot.yaml"));
    let plan = sb.file("plan.json");
    azure(&sb, &emulator, &["plan", "-f", &seed, "-f", &shoot, "--out", &plan]).code(0);
    let theirs = format!(
        "/subscriptions/{SUB}/resourceGroups/dns-rg/providers/Microsoft.Network/dnszones/platform.example.com/A/api.web?{API}"
    );
    let (status, _) =
        emulator.call("PUT", &theirs, r#"{"properties": {"TTL": 60, "ARecords": [{"ipv4Address": "198.51.100.7"}]}}"#);
    assert_eq!(status, 201);

    let failed = azure(&sb, &emulator, &["apply", &plan]);
    assert_ne!(failed.code, 0, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("record set api.web.platform.example.com A in zone platform.example.com exists and was not created by this shoot's domains plan (values 198.51.100.7)"),
        "{}",
        failed.stderr
    );
    assert!(!failed.stderr.contains("panicked"), "{}", failed.stderr);
    let (_, set) = record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web");
    assert_eq!(a_records(&set), ["198.51.100.7"], "theirs stands");

    let (status, _) = emulator.call("DELETE", &theirs, "");
    assert_eq!(status, 200);
    azure(&sb, &emulator, &["apply", "--auto-approve", "-f", &seed, "-f", &shoot]).code(0);
    let (_, set) = record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web");
    assert_eq!(a_records(&set), ["203.0.113.10"]);
    azure(&sb, &emulator, &["plan", "-f", &seed, "-f", &shoot, "--detailed-exitcode"]).code(0);
}

/// Azure DNS throttles the first record-set writes (429 with `Retry-After`, the emulator's
/// `--throttle`): the engine's retries carry the apply through, and each set is written once.
#[test]
fn throttled_record_set_writes_converge() {
    let sb = Sandbox::new();
    let file = sb.file("world.yaml");
    std::fs::write(&file, WORLD).unwrap();
    let emulator = Emulator::start_with(&sb.file("emu"), &["--world", &file, "--throttle", "PUT:/dns/zones/:2"]);
    let (seed, shoot) = (m1("seed.yaml"), m1("shoot.yaml"));
    azure(&sb, &emulator, &["apply", "--auto-approve", "-f", &seed, "-f", &shoot])
        .code(0)
        .stdout_has("shoot--platform--web+domains: apply complete.");
    assert_eq!(record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web").0, 200);
    azure(&sb, &emulator, &["plan", "-f", &seed, "-f", &shoot, "--detailed-exitcode"]).code(0);
    assert_eq!(emulator.terminate(), 0);
    let puts: Vec<u16> = served_dns_audit(&sb).into_iter().filter(|(m, _, _)| m == "PUT").map(|(_, s, _)| s).collect();
    assert_eq!(puts.iter().filter(|s| **s == 429).count(), 2, "{puts:?}");
    assert_eq!(puts.iter().filter(|s| **s == 201).count(), 2, "each record set created once: {puts:?}");
}

#[test]
fn a_bad_throttle_rule_is_refused_in_one_line() {
    let sb = Sandbox::new();
    for (rule, says) in [
        ("PATCH:/dns/:1", "METHOD \"PATCH\" is not one of GET, LIST, PUT, DELETE"),
        ("PUT:/dns/:0", "expected METHOD:TEXT:TIMES, e.g. PUT:/dns/:2"),
        ("PUT", "expected METHOD:TEXT:TIMES"),
    ] {
        let run =
            sb.run_raw(&["sim", "serve", "--throttle", rule, "--state", &sb.file("emu")]).code(1).stderr_has(says);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    assert!(!Path::new(&sb.file("emu")).exists(), "a bad flag touches nothing");
}

/// `tests/scenarios/domains/V12-seed-names-api-server-address/<name>`.
fn v12(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/scenarios/domains/V12-seed-names-api-server-address")
        .join(name);
    assert!(path.exists(), "missing {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

/// Where seed azure-eu1's API-server records point: a world file of what stays simulated only.
const SEEDS_ONLY: &str = "seeds:\n  - name: azure-eu1\n    ingress: {ip: 198.51.100.20}\n";

/// A Seed without the address annotation, with Azure DNS: `--world` holding only `seeds:` (the
/// seeds stay simulated beside the real DNS) gives it its ingress — planned and applied, the record
/// sets in Azure DNS point at it. A world file with a section the real clients read (`dns:`,
/// `azure:`) is refused before anything is read, naming the section.
#[test]
fn a_seeds_only_world_file_gives_a_verbatim_seed_its_ingress_with_azure_dns() {
    let sb = Sandbox::new();
    let emulator = start(&sb, WORLD);
    let (bare, shoot) = (v12("seed-bare.yaml"), v12("shoot.yaml"));
    let seeds = sb.file("seeds.yaml");
    std::fs::write(&seeds, SEEDS_ONLY).unwrap();

    azure(&sb, &emulator, &["plan", "-f", &bare, "-f", &shoot])
        .code(1)
        .stderr_has("Seed azure-eu1 has no API-server address: declare its ingress in the world file's seeds: section");
    let plan = azure(&sb, &emulator, &["plan", "--world", &seeds, "-f", &bare, "-f", &shoot, "--output", "json"])
        .code(0)
        .json();
    let domains = plan["plans"].as_array().unwrap().iter().find(|p| p["provider"] == "domains").expect("domains");
    let set = domains["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "api.web.platform.example.com/A")
        .unwrap_or_else(|| panic!("no record set: {domains:#}"));
    assert_eq!(set["patch"]["values"], serde_json::json!(["198.51.100.20"]), "{set:#}");

    azure(&sb, &emulator, &["apply", "--auto-approve", "--world", &seeds, "-f", &bare, "-f", &shoot])
        .code(0)
        .stdout_has("shoot--platform--web+domains: apply complete.");
    let (status, external) = record_set(&emulator, "dns-rg", "platform.example.com", "A", "api.web");
    assert_eq!((status, a_records(&external)), (200, vec!["198.51.100.20".to_string()]), "{external}");
    azure(&sb, &emulator, &["plan", "--world", &seeds, "-f", &bare, "-f", &shoot, "--detailed-exitcode"]).code(0);

    // What the real clients read may not come from a world file.
    let both = v12("world-seeds.yaml");
    let run = azure(&sb, &emulator, &["plan", "--world", &both, "-f", &bare, "-f", &shoot]).code(1).stderr_has(
        "with --cloud azure a world file may hold only what stays simulated (`seeds:`), but it holds `dns:`, which --cloud azure reads from the cloud itself; remove that section or plan with --cloud sim",
    );
    assert_eq!(run.stderr_lines().len(), 1, "one line: {}", run.stderr);
    let mixed = sb.file("mixed.yaml");
    std::fs::write(&mixed, format!("azure:\n  resources: []\n{WORLD}{SEEDS_ONLY}")).unwrap();
    azure(&sb, &emulator, &["plan", "--world", &mixed, "-f", &bare, "-f", &shoot]).code(1).stderr_has(
        "but it holds `azure:`, `dns:`, which --cloud azure reads from the cloud itself; remove those sections",
    );
}
