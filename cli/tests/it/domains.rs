//! GEP-0066 (mutable shoot domains) through the CLI: `--feature-gates` on the commands that plan, and
//! the simulated DNS kept in the state dir (tree `sim/dns`), synced from a `--world` file's `dns:`
//! section.

use crate::common;

use common::{a1, Sandbox};
use std::path::Path;

#[test]
fn feature_gates_are_taken_by_validate_plan_apply_and_destroy() {
    let sb = Sandbox::new();
    let shoot = a1();
    sb.run(&["validate", "-f", &shoot, "--feature-gates", "MutableShootDomains=true"]).code(0);
    sb.run(&["plan", "-f", &shoot, "--feature-gates", "MutableShootDomains=false"]).code(0);
    sb.run(&["apply", "--auto-approve", "-f", &shoot, "--feature-gates", "MutableShootDomains=true"]).code(0);
    sb.run(&["destroy", "--auto-approve", "-f", &shoot, "--feature-gates", "MutableShootDomains=true"]).code(0);
}

#[test]
fn an_unknown_or_malformed_feature_gate_is_one_line_and_touches_nothing() {
    let sb = Sandbox::new();
    let shoot = a1();
    for (gates, says) in [
        ("MutableShootDomain=true", "unknown feature gate \"MutableShootDomain\": trellis knows MutableShootDomains"),
        ("MutableShootDomains=yes", "feature gate MutableShootDomains: invalid value \"yes\": use true or false"),
        ("MutableShootDomains", "is not of the form Name=true|false"),
    ] {
        for cmd in [&["validate"][..], &["plan"], &["apply", "--auto-approve"], &["destroy", "--auto-approve"]] {
            let mut args = cmd.to_vec();
            args.extend(["-f", &shoot, "--feature-gates", gates]);
            let run = sb.run(&args).code(1).stderr_has(says);
            assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
            assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        }
    }
    assert!(!Path::new(sb.state()).exists(), "a bad flag touches nothing");
}

#[test]
fn the_worlds_dns_section_syncs_into_the_state_dir_and_a_bad_one_is_refused() {
    let sb = Sandbox::new();
    let world = sb.file("world.yaml");
    std::fs::write(
        &world,
        "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.example.com, type: A, values: [192.0.2.1]}\n",
    )
    .unwrap();
    let shoot = a1();
    sb.run(&["plan", "-f", &shoot, "--world", &world]).code(0).stderr_has("world: 2 added, 0 updated, 0 removed");
    // Kept in the state dir: the same world again changes nothing.
    sb.run(&["plan", "-f", &shoot, "--world", &world]).code(0).stderr_has("world: 0 added, 0 updated, 0 removed");

    let bad = sb.file("bad.yaml");
    std::fs::write(&bad, "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.other.org, type: A, values: [192.0.2.1]}\n").unwrap();
    sb.run(&["plan", "-f", &shoot, "--world", &bad])
        .code(1)
        .stderr_has("dns.zones[0].records[0].name: www.other.org is not in zone example.com");
}

#[test]
fn the_worlds_seeds_section_is_kept_with_the_dns_and_a_bad_one_is_refused() {
    let sb = Sandbox::new();
    let world = sb.file("world.yaml");
    std::fs::write(
        &world,
        "dns:\n  zones:\n    - name: example.com\n      azure: {resourceGroup: dns-rg}\nseeds:\n  - name: aws-eu1\n    ingress: {ip: 203.0.113.10}\n",
    )
    .unwrap();
    let shoot = a1();
    sb.run(&["plan", "-f", &shoot, "--world", &world]).code(0).stderr_has("world: 2 added, 0 updated, 0 removed");
    let seed = sb.run(&["sim", "show", "/seeds/aws-eu1"]).code(0).json();
    assert_eq!(seed, serde_json::json!({"name": "aws-eu1", "ingress": {"ip": "203.0.113.10"}}));
    let zone = sb.run(&["sim", "show", "/dns/zones/example.com"]).code(0).json();
    assert_eq!(zone["azure"], serde_json::json!({"resourceGroup": "dns-rg"}), "{zone}");
    assert_eq!(zone["gcp"], serde_json::json!({"managedZone": "example-com"}), "{zone}");
    sb.run(&["sim", "show", "/seeds/gcp-eu1"]).code(1).stderr_has("not found in the simulated DNS");

    let bad = sb.file("bad.yaml");
    std::fs::write(&bad, "seeds:\n  - name: aws-eu1\n    ingress: {ip: 203.0.113.10, hostname: lb.example.net}\n")
        .unwrap();
    sb.run(&["plan", "-f", &shoot, "--world", &bad]).code(1).stderr_has(
        "seeds[0].ingress: give exactly one of ip (the load balancer's address) and hostname (its DNS name)",
    );
}

/// `<repo>/examples/domains-world.yaml`: the example's world file, beside its directory (a fleet
/// directory's YAML files are all read as manifests).
fn world_example() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/domains-world.yaml");
    path.to_str().unwrap().to_string()
}

/// `<repo>/examples/domains/<name>`.
fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/domains").join(name);
    assert!(path.exists(), "missing example {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

#[test]
fn a_shoot_with_its_seed_gets_a_domains_plan_in_its_own_workspace_and_state_show_describes_it() {
    let sb = Sandbox::new();
    let (seed, shoot, world) = (example("seed.yaml"), example("shoot.yaml"), world_example());
    // Infrastructure plan first, then the domains plan, in every output.
    let plan = sb.run(&["plan", "-f", &seed, "-f", &shoot, "--world", &world, "--output", "json"]).code(0).json();
    let order: Vec<(String, String)> = plan["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["shoot"].as_str().unwrap().to_string(), p["provider"].as_str().unwrap().to_string()))
        .collect();
    let web = "shoot--platform--web".to_string();
    assert_eq!(order, vec![(web.clone(), "azure".to_string()), (web.clone(), "domains".to_string())]);
    // The Seed may come after the Shoot: the same plans.
    let again = sb.run(&["plan", "-f", &shoot, "-f", &seed, "--output", "json"]).code(0).json();
    assert_eq!(again, plan, "the same plans whatever the order of -f");

    sb.run(&["apply", "--auto-approve", "-f", &seed, "-f", &shoot])
        .code(0)
        .stdout_has("shoot--platform--web+domains: apply complete.");
    assert_eq!(sb.workspaces(), vec![web.clone(), "shoot--platform--web+domains".to_string()]);
    let shown = sb.run(&["state", "show", &web]).code(0);
    assert_eq!(shown.json()["provider_state"]["provider"], "azure");
    for line in [
        "domains (shoot--platform--web+domains):",
        "  phase: none (never rotated)",
        "  external: web.platform.example.com (DNSRecord web-external)",
        "  internal: web.platform.internal.example.com (DNSRecord web-internal)",
    ] {
        assert!(shown.stderr_lines().contains(&line), "{line:?} not in:\n{}", shown.stderr);
    }
    let ws = sb.run(&["state", "show", "shoot--platform--web+domains"]).code(0).json();
    assert_eq!(ws["provider_state"]["provider"], "domains", "{ws}");
    // The seed's DNSRecord is in the simulated DNS; writing it wrote no record set of its own (the
    // simulated DNS has no controller), and the world's record set is as declared.
    let web_external = "/seeds/azure-eu1/namespaces/shoot--platform--web/dnsrecords/web-external";
    let object = sb.run(&["sim", "show", web_external]).code(0).json();
    assert_eq!(object["spec"]["name"], "api.web.platform.example.com", "{object}");
    let theirs = sb
        .run(&["sim", "show", "/dns/zones/platform.example.com/records/www.platform.example.com/CNAME"])
        .code(0)
        .json();
    assert_eq!(
        theirs,
        serde_json::json!({"name": "www.platform.example.com", "type": "CNAME", "ttl": 300, "values": ["lb.platform.example.net"], "etag": theirs["etag"], "zone": "platform.example.com"})
    );
    assert!(theirs["etag"].is_string(), "{theirs}");
    sb.run(&["plan", "-f", &seed, "-f", &shoot, "--detailed-exitcode"]).code(0);
    // Destroy deletes the DNSRecords trellis recorded, and nothing of the world's.
    sb.run(&["destroy", "--auto-approve", "-f", &seed, "-f", &shoot]).code(0);
    sb.run(&["sim", "show", web_external]).code(1).stderr_has("not found in the simulated DNS");
    sb.run(&["sim", "show", "/dns/zones/platform.example.com/records/www.platform.example.com/CNAME"]).code(0);
}

#[test]
fn a_shoot_whose_seed_is_not_given_plans_its_infrastructure_only_with_a_note() {
    let sb = Sandbox::new();
    let seed = sb.file("other-seed.yaml");
    let text = std::fs::read_to_string(example("seed.yaml")).unwrap().replace("name: azure-eu1", "name: gcp-eu1");
    std::fs::write(&seed, text).unwrap();
    let run = sb.run(&["plan", "-f", &seed, "-f", &example("shoot.yaml"), "--output", "json"]).code(0);
    // One plan (written as the plan itself): the infrastructure's.
    assert_eq!(run.json()["provider"], "azure");
    run.stderr_has("note: shoot--platform--web (").stderr_has("spec.seedName \"azure-eu1\" names none of the given Seeds (gcp-eu1); no domains plan, its infrastructure plan only");
    // Without any Seed nothing is said.
    let run = sb.run(&["plan", "-f", &example("shoot.yaml")]).code(0);
    assert!(!run.stderr.contains("note:"), "{}", run.stderr);
}

#[test]
fn validate_checks_the_domains_inputs_and_the_seed_rules() {
    let sb = Sandbox::new();
    let (seed, shoot) = (example("seed.yaml"), example("shoot.yaml"));
    sb.run(&["validate", "-f", &seed, "-f", &shoot]).code(0).stdout_has("1 shoot(s) valid (1 with a domains plan).");
    // internal and internalDomains[0] disagree: the Seed rule, with upstream's field path.
    let bad = sb.file("seed.yaml");
    let text = std::fs::read_to_string(&seed).unwrap().replace(
        "    defaults:\n",
        "    internalDomains:\n      - {type: azure-dns, domain: other.example.com, credentialsRef: {apiVersion: v1, kind: Secret, name: x, namespace: garden}}\n    defaults:\n",
    );
    std::fs::write(&bad, text).unwrap();
    sb.run(&["validate", "-f", &bad, "-f", &shoot, "--feature-gates", "MutableShootDomains=true"])
        .code(1)
        .stderr_has("seed azure-eu1 (")
        .stderr_has("spec.dns.internal: Invalid value: \"internal.example.com\": must be the same as spec.dns.internalDomains[0]");
    assert!(!Path::new(sb.state()).exists(), "validate creates no state");
}

#[test]
fn a_saved_plan_with_a_domains_plan_applies_as_planned() {
    let sb = Sandbox::new();
    let (seed, shoot, world) = (example("seed.yaml"), example("shoot.yaml"), world_example());
    let plan = sb.file("plan.json");
    sb.run(&["plan", "-f", &seed, "-f", &shoot, "--world", &world, "--out", &plan]).code(0);
    sb.run(&["apply", &plan]).code(0).stdout_has("shoot--platform--web+domains: apply complete.");
    // Applied: the saved plan's prior no longer matches.
    sb.run(&["apply", &plan]).code(1).stderr_has("shoot--platform--web");
    sb.run(&["plan", "-f", &seed, "-f", &shoot, "--detailed-exitcode"]).code(0);
}

/// A plan file written when a domains plan carried `infrastructure_status: null`, `egress_cidrs: null`
/// and its artifacts under `named` (plans/tests/data: the bundled example, planned then): its digests
/// verify, it shows as it did, and `apply` finds it to be what trellis plans now (the same artifacts at
/// the top level).
#[test]
fn regression_a_saved_domains_plan_with_named_artifacts_still_applies() {
    let sb = Sandbox::new();
    let (seed, shoot, world) = (example("seed.yaml"), example("shoot.yaml"), world_example());
    // The world into the state dir, as when the file was planned.
    sb.run(&["plan", "-f", &seed, "-f", &shoot, "--world", &world]).code(0);
    let plan = sb.file("old.json");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/../plans/tests/data/domains-format1.json"), &plan).unwrap();
    let old_digest = "d12b0819ee7e96d2fa72d530180994811b2c57243b8b8b7e461237cae654ad7e";
    sb.run_raw(&["show", &plan])
        .code(0)
        .stdout_has(old_digest)
        .stdout_has("\n  kubeconfig_server: https://api.web.platform.example.com\n");
    let azure_digest = "b5c21f5b5f431b44e2f39fb27d4c446e734a3c617b5f4443fccf0dfadbe7756e";
    sb.run(&["apply", &plan, "--expect-digest", old_digest, "--expect-digest", azure_digest])
        .code(0)
        .stdout_has("shoot--platform--web+domains: apply complete.");
    sb.run(&["plan", "-f", &seed, "-f", &shoot, "--detailed-exitcode"]).code(0);
}

/// The example Seed with its internal domain moved to `other.example.com` and `internal.example.com`
/// dropped from `internalDomains`.
fn seed_without_the_old_internal_domain(sb: &Sandbox) -> String {
    let moved = sb.file("moved-seed.yaml");
    let text = std::fs::read_to_string(example("seed.yaml")).unwrap().replace(
        "    internal:\n      type: azure-dns\n      domain: internal.example.com\n      zone: internal.example.com\n",
        "    internalDomains:\n      - {type: azure-dns, domain: other.example.com, zone: other.example.com, credentialsRef: {apiVersion: v1, kind: Secret, name: internal-dns, namespace: garden}}\n    internal:\n      type: azure-dns\n      domain: other.example.com\n      zone: other.example.com\n",
    );
    assert!(text.contains("other.example.com"), "the example Seed changed: {text}");
    std::fs::write(&moved, text).unwrap();
    moved
}

/// Seed rule "no `internalDomains` entry removed while a shoot still uses it": the use is read from the
/// domains state of the applied shoots too (manifests rarely carry `status.advertisedAddresses`), for
/// shoots of the fleet and for applied shoots not in this run.
#[test]
fn regression_internal_domain_in_use_per_state_refuses_its_removal() {
    let sb = Sandbox::new();
    let (seed, shoot, world) = (example("seed.yaml"), example("shoot.yaml"), world_example());
    let gate = ["--feature-gates", "MutableShootDomains=true"];
    let mut args = vec!["apply", "--auto-approve", "-f", &seed, "-f", &shoot, "--world", &world];
    args.extend(gate);
    sb.run(&args).code(0).stdout_has("shoot--platform--web+domains: apply complete.");
    let moved = seed_without_the_old_internal_domain(&sb);
    let refusal = "spec.dns.internalDomains: Forbidden: the internal domain of api.web.platform.internal.example.com is still used by shoot(s) shoot--platform--web: keep its entry until they migrated";
    // The shoot in the fleet: plan and validate refuse, naming it.
    for cmd in [&["plan"][..], &["validate"]] {
        let mut args = cmd.to_vec();
        args.extend(["-f", &moved, "-f", &shoot]);
        args.extend(gate);
        sb.run(&args).code(1).stderr_has("seed azure-eu1 (").stderr_has(refusal);
    }
    // The shoot applied but not in this run: another shoot of the seed is planned with the Seed.
    let other = sb.file("api-shoot.yaml");
    let text = std::fs::read_to_string(&shoot)
        .unwrap()
        .replace("name: web\n", "name: api\n")
        .replace("domain: web.platform.example.com", "domain: api.platform.example.com");
    assert!(text.contains("domain: api.platform.example.com"), "the example Shoot changed: {text}");
    std::fs::write(&other, text).unwrap();
    // The Seed rules are not hidden behind what planning against the DNS refuses: with the moved
    // internal domain's zone missing (the other shoot's records cannot be placed) both are said.
    let mut args = vec!["plan", "-f", &moved, "-f", &other, "--world", &world];
    args.extend(gate);
    sb.run(&args).code(1).stderr_has(refusal).stderr_has("no DNS zone");
    // And with the zone there.
    let with_other_zone = sb.file("world-other.yaml");
    let zones =
        std::fs::read_to_string(&world).unwrap().replace("  zones:\n", "  zones:\n    - name: other.example.com\n");
    assert!(zones.contains("other.example.com"), "the example world changed: {zones}");
    std::fs::write(&with_other_zone, zones).unwrap();
    let mut args = vec!["plan", "-f", &moved, "-f", &other, "--world", &with_other_zone];
    args.extend(gate);
    sb.run(&args).code(1).stderr_has(refusal);
    // Kept in internalDomains: accepted.
    let kept = sb.file("kept-seed.yaml");
    let text = std::fs::read_to_string(&moved).unwrap().replace(
        "    internal:\n",
        "      - {type: azure-dns, domain: internal.example.com, zone: internal.example.com, credentialsRef: {apiVersion: v1, kind: Secret, name: internal-dns, namespace: garden}}\n    internal:\n",
    );
    std::fs::write(&kept, text).unwrap();
    let mut args = vec!["plan", "-f", &kept, "-f", &shoot];
    args.extend(gate);
    sb.run(&args).code(0);
}

/// An `aws` Shoot (no infrastructure provider in trellis) on the example Seed.
const AWS_SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: edge
  namespace: garden-platform
spec:
  seedName: azure-eu1
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

/// Issue #10 item 1: a Shoot gets a domains plan when its Seed is among the inputs, and an
/// infrastructure plan only when trellis has an infrastructure provider for it and it carries an
/// infrastructureConfig; one does not require the other. Without its Seed the old refusal stays.
#[test]
fn regression_a_shoot_without_an_infrastructure_plan_gets_its_domains_plan_with_its_seed() {
    let sb = Sandbox::new();
    let (seed, world) = (example("seed.yaml"), world_example());
    let aws = sb.file("aws.yaml");
    std::fs::write(&aws, AWS_SHOOT).unwrap();
    let edge = "shoot--platform--edge";
    let note = "note: shoot--platform--edge (";
    let why = "trellis has no infrastructure provider for spec.provider.type \"aws\"; no infrastructure plan is attempted (its infrastructure is not checked), its domains plan only";
    // Without its Seed: refused as before.
    sb.run(&["plan", "-f", &aws])
        .code(1)
        .stderr_has("document 1: spec.provider.type: unsupported provider type \"aws\"; trellis supports: azure, gcp");
    sb.run(&["validate", "-f", &aws]).code(1).stderr_has("unsupported provider type \"aws\"");
    // With its Seed (in either order): the domains plan only, with the note.
    let run = sb
        .run(&["plan", "-f", &aws, "-f", &seed, "--world", &world, "--output", "json"])
        .code(0)
        .stderr_has(note)
        .stderr_has(why);
    assert_eq!(run.json()["provider"], "domains", "{}", run.stdout);
    assert_eq!(run.json()["shoot"], edge, "{}", run.stdout);
    sb.run(&["validate", "-f", &seed, "-f", &aws]).code(0).stdout_has("1 shoot(s) valid (1 with a domains plan).");
    sb.run(&["apply", "--auto-approve", "-f", &seed, "-f", &aws])
        .code(0)
        .stderr_has(why)
        .stdout_has("shoot--platform--edge+domains: apply complete.");
    assert_eq!(sb.workspaces(), vec![format!("{edge}+domains")]);
    sb.run(&["sim", "show", "/seeds/azure-eu1/namespaces/shoot--platform--edge/dnsrecords/edge-external"]).code(0);
    sb.run(&["plan", "-f", &seed, "-f", &aws]).code(0).stdout_has("No changes.");

    // A Shoot of a provider trellis knows, without an infrastructureConfig: the same, beside a
    // Shoot with one (which gets both plans; a plan hands out the infrastructure plans first).
    let bare = sb.file("bare.yaml");
    // Its own domain: the edge shoot's record set is recorded by the edge shoot's workspace.
    let bare_shoot = AWS_SHOOT.replace("type: aws", "type: azure").replace("edge", "bare");
    std::fs::write(&bare, bare_shoot).unwrap();
    sb.run(&["plan", "-f", &bare])
        .code(1)
        .stderr_has("spec.provider.infrastructureConfig: expected apiVersion azure.provider.extensions.gardener.cloud/v1alpha1, kind InfrastructureConfig for provider azure; found none");
    let run = sb
        .run(&["plan", "-f", &seed, "-f", &bare, "-f", &example("shoot.yaml"), "--output", "json"])
        .code(0)
        .stderr_has("note: shoot--platform--bare (")
        .stderr_has("no spec.provider.infrastructureConfig; no infrastructure plan is attempted");
    let plans: Vec<(String, String)> = run.json()["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["shoot"].as_str().unwrap().to_string(), p["provider"].as_str().unwrap().to_string()))
        .collect();
    let (bare_id, web) = ("shoot--platform--bare".to_string(), "shoot--platform--web".to_string());
    assert_eq!(
        plans,
        vec![(web.clone(), "azure".into()), (web, "domains".into()), (bare_id, "domains".into())],
        "{}",
        run.stdout
    );
}

/// Gate off, upstream's rule "internal domain must not be changed while shoots are still scheduled
/// onto seed" (spec.dns.internal): trellis keeps no Seed in state, so the change is read from the
/// applied shoots' domains state (their internal cluster domain lies on another internal domain).
#[test]
fn regression_internal_domain_change_with_applied_shoots_refused_with_the_gate_off() {
    let sb = Sandbox::new();
    let (seed, shoot, world) = (example("seed.yaml"), example("shoot.yaml"), world_example());
    sb.run(&["apply", "--auto-approve", "-f", &seed, "-f", &shoot, "--world", &world])
        .code(0)
        .stdout_has("shoot--platform--web+domains: apply complete.");
    let moved = sb.file("moved-seed.yaml");
    let text = std::fs::read_to_string(&seed).unwrap().replace(
        "    internal:\n      type: azure-dns\n      domain: internal.example.com\n      zone: internal.example.com\n",
        "    internal:\n      type: azure-dns\n      domain: other.example.com\n      zone: other.example.com\n",
    );
    assert!(text.contains("other.example.com"), "the example Seed changed: {text}");
    std::fs::write(&moved, text).unwrap();
    let refusal = "spec.dns.internal: Forbidden: internal domain must not be changed while shoots are still scheduled onto seed (applied on another internal domain: shoot--platform--web)";
    for cmd in ["plan", "validate"] {
        sb.run(&[cmd, "-f", &moved, "-f", &shoot]).code(1).stderr_has("seed azure-eu1 (").stderr_has(refusal);
    }
    // Unchanged: accepted.
    sb.run(&["plan", "-f", &seed, "-f", &shoot]).code(0);
    // The Seed passed without any of its shoots (the run's one Shoot is on another seed): still
    // checked against the shoots applied on it.
    let elsewhere = sb.file("elsewhere.yaml");
    let text = std::fs::read_to_string(&shoot)
        .unwrap()
        .replace("name: web\n", "name: api\n")
        .replace("seedName: azure-eu1", "seedName: azure-eu2");
    assert!(text.contains("seedName: azure-eu2"), "the example Shoot changed: {text}");
    std::fs::write(&elsewhere, text).unwrap();
    for cmd in ["plan", "validate"] {
        sb.run(&[cmd, "-f", &moved, "-f", &elsewhere]).code(1).stderr_has("seed azure-eu1 (").stderr_has(refusal);
    }
    sb.run(&["plan", "-f", &seed, "-f", &elsewhere]).code(0);
}

#[test]
fn regression_destroy_without_the_seed_says_the_domains_workspace_and_its_records_stay() {
    let sb = Sandbox::new();
    let (seed, shoot, world) = (example("seed.yaml"), example("shoot.yaml"), world_example());
    sb.run(&["apply", "--auto-approve", "-f", &seed, "-f", &shoot, "--world", &world]).code(0);
    let domains = "shoot--platform--web+domains".to_string();
    let records = "/dns/zones/internal.example.com/records/api.web.platform.internal.example.com/A, /dns/zones/platform.example.com/records/api.web.platform.example.com/A, /seeds/azure-eu1/namespaces/shoot--platform--web/dnsrecords/web-external, /seeds/azure-eu1/namespaces/shoot--platform--web/dnsrecords/web-internal";

    // Without the Seed: the infrastructure goes, the domains workspace and its records stay, said in one line.
    let run = sb.run(&["destroy", "--auto-approve", "-f", &shoot]).code(0);
    let notes: Vec<&str> = run.stderr_lines().into_iter().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(
        notes,
        vec![format!(
            "note: shoot--platform--web ({shoot}): its Seed is not among the inputs, so this destroy leaves its domains workspace {domains} and the records it holds ({records}); destroy again with the Seed (-f seed.yaml) to delete them"
        )
        .as_str()],
        "{}",
        run.stderr
    );
    assert!(sb.workspaces().contains(&domains));
    sb.run(&["sim", "show", "/seeds/azure-eu1/namespaces/shoot--platform--web/dnsrecords/web-external"]).code(0);

    // With the Seed the domains plan destroys them; nothing is left to say afterwards.
    let run = sb.run(&["destroy", "--auto-approve", "-f", &seed, "-f", &shoot]).code(0);
    assert!(!run.stderr.contains("leaves its domains workspace"), "{}", run.stderr);
    sb.run(&["sim", "show", "/seeds/azure-eu1/namespaces/shoot--platform--web/dnsrecords/web-external"]).code(1);
    let run = sb.run(&["destroy", "--auto-approve", "-f", &shoot]).code(0);
    assert!(!run.stderr.contains("note:"), "{}", run.stderr);
}

/// `providers/tests/data/upstream/<name>` (Gardener's example manifests, each naming its source).
fn upstream(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/tests/data/upstream").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Gardener's example Seed (`example/50-seed.yaml`) with the address its shoots' API-server records
/// point at, and its example Shoot (`example/90-shoot.yaml`, as Azure) scheduled on it
/// (`seedName: my-seed`, commented out upstream); `providers` replaces the example's comment on
/// `spec.dns.providers` (the example's own commented entry, written out, has no `primary`).
fn upstream_pair(sb: &Sandbox, providers: &str) -> (String, String) {
    let seed = upstream("gardener-50-seed.yaml").replacen(
        "  name: my-seed\n",
        "  name: my-seed\n  annotations:\n    trellis.gardener.cloud/api-server-address: 203.0.113.10\n",
        1,
    );
    let shoot = upstream("gardener-90-shoot-azure.yaml")
        .replacen("# seedName: my-seed", "  seedName: my-seed", 1)
        .replacen("    # Provider configuration required if custom shoot domain is configured.\n", providers, 1);
    let (seed_file, shoot_file) = (sb.file("seed.yaml"), sb.file("shoot.yaml"));
    std::fs::write(&seed_file, seed).unwrap();
    std::fs::write(&shoot_file, shoot).unwrap();
    (seed_file, shoot_file)
}

/// A world holding the DNS zones of the example's domains (the seed's internal domain
/// `internal.dev.example.com`, the shoot's `crazy-botany.core.my-custom-domain.com`).
fn upstream_world(sb: &Sandbox) -> String {
    let world = sb.file("world.yaml");
    std::fs::write(&world, "dns:\n  zones:\n    - name: dev.example.com\n    - name: my-custom-domain.com\n").unwrap();
    world
}

#[test]
fn regression_gardeners_example_shoot_and_seed_plan_with_the_gate_off_as_gardener_admits_them() {
    let sb = Sandbox::new();
    let (seed, shoot) = upstream_pair(&sb, "");
    let world = upstream_world(&sb);
    // The example's domain lies in none of the Seed's default domains (it has none) and the Shoot names
    // no DNS provider: today's Gardener admits it; trellis plans it, with the warning.
    let plan = sb.run(&["plan", "--world", &world, "-f", &seed, "-f", &shoot, "--output", "json"]).code(0).json();
    let domains = &plan["plans"][1];
    assert_eq!(domains["shoot"], "shoot--dev--crazy-botany");
    assert_eq!(domains["provider"], "domains");
    let warnings = domains["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w.as_str().unwrap().starts_with("spec.dns.domain \"crazy-botany.core.my-custom-domain.com\" is not a subdomain of the seed's default domains (none) and spec.dns.providers names no DNS provider: Gardener admits the shoot")),
        "{warnings:?}"
    );
    let records: Vec<&str> = domains["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    // The internal DNSRecord and its record set, in the zone of the seed's internal domain.
    assert_eq!(records, ["crazy-botany-internal", "api.crazy-botany.dev.internal.dev.example.com/A"]);
    // GEP-0066's rule refuses it with the gate on.
    sb.run(&["plan", "-f", &seed, "-f", &shoot, "--feature-gates", "MutableShootDomains=true"])
        .code(1)
        .stderr_has("spec.dns.domain: Invalid value: \"crazy-botany.core.my-custom-domain.com\": domain must be a subdomain of one of the seed's default domains (the seed has none) unless the shoot sets its own primary DNS provider in spec.dns.providers");
}

#[test]
fn regression_gardeners_example_shoot_with_its_provider_entry_uses_it_as_primary() {
    let sb = Sandbox::new();
    // The example's commented entry, without `primary: true`: admission makes providers[0] primary.
    let providers = "    providers:\n    - type: aws-route53\n      credentialsRef:\n        apiVersion: v1\n        kind: Secret\n        name: my-custom-domain-secret\n";
    let (seed, shoot) = upstream_pair(&sb, providers);
    let world = upstream_world(&sb);
    for gate in ["MutableShootDomains=false", "MutableShootDomains=true"] {
        let plan = sb
            .run(&["plan", "--world", &world, "-f", &seed, "-f", &shoot, "--output", "json", "--feature-gates", gate])
            .code(0)
            .json();
        let domains = &plan["plans"][1];
        let external = domains["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == "crazy-botany-external")
            .unwrap_or_else(|| panic!("{gate}: no external record: {domains:#}"));
        assert_eq!(external["patch"]["spec"]["type"], "aws-route53", "{gate}");
        assert_eq!(external["patch"]["spec"]["name"], "api.crazy-botany.core.my-custom-domain.com", "{gate}");
        let warnings = domains["warnings"].as_array().unwrap();
        assert!(!warnings.iter().any(|w| w.as_str().unwrap().contains("gardenlet cannot reconcile")), "{warnings:?}");
    }
}

/// Gardener's example Seed taken verbatim (no `trellis.gardener.cloud/api-server-address`
/// annotation): its shoots' records point at the seed's ingress the world file's `seeds:` section
/// declares; without one the plan is refused in one line naming `seeds:`, and writes nothing.
#[test]
fn gardeners_example_seed_verbatim_plans_with_its_ingress_from_the_worlds_seeds_section() {
    let sb = Sandbox::new();
    let (_, shoot) = upstream_pair(&sb, "");
    let seed = sb.file("verbatim-seed.yaml");
    let verbatim = upstream("gardener-50-seed.yaml");
    assert!(!verbatim.contains("api-server-address"), "upstream's example names no address");
    std::fs::write(&seed, verbatim).unwrap();

    let zones_only = upstream_world(&sb);
    let run = sb.run(&["plan", "--world", &zones_only, "-f", &seed, "-f", &shoot]).code(1).stderr_has("Seed my-seed has no API-server address: declare its ingress in the world file's seeds: section (seeds: [{name: my-seed, ingress: {ip: …}}]) or annotate it with trellis.gardener.cloud/api-server-address");
    let errors: Vec<&str> = run.stderr_lines().into_iter().filter(|l| l.contains("API-server address")).collect();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    assert!(sb.workspaces().is_empty(), "a refused plan records nothing");

    let world = sb.file("world-seeds.yaml");
    let text =
        std::fs::read_to_string(&zones_only).unwrap() + "seeds:\n  - name: my-seed\n    ingress: {ip: 198.51.100.20}\n";
    std::fs::write(&world, text).unwrap();
    let plan = sb.run(&["plan", "--world", &world, "-f", &seed, "-f", &shoot, "--output", "json"]).code(0).json();
    let domains = &plan["plans"][1];
    assert_eq!(domains["provider"], "domains", "{plan:#}");
    let set = domains["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "api.crazy-botany.dev.internal.dev.example.com/A")
        .unwrap_or_else(|| panic!("no record set: {domains:#}"));
    assert_eq!(set["action"], "create", "{set:#}");
    assert_eq!(set["patch"]["values"], serde_json::json!(["198.51.100.20"]), "{set:#}");
    let record = domains["nodes"].as_array().unwrap().iter().find(|n| n["name"] == "crazy-botany-internal").unwrap();
    assert_eq!(record["patch"]["spec"]["values"], serde_json::json!(["198.51.100.20"]), "{record:#}");
}
