//! GCP shoots end to end through the CLI against the simulated GCE cloud (kept in the state dir,
//! tree `sim/gce`): plan, apply, the re-plan after apply, destroy; a `--world` file's `gce:`
//! section; a fleet mixing Azure and GCP shoots.

use crate::common;

use common::{writes, Sandbox};
use std::path::Path;

/// `<repo>/examples/gcp/<rel>`.
fn example(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gcp").join(rel);
    assert!(path.exists(), "missing example {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

#[test]
fn regression_gcp_managed_shoot_plans_applies_replans_no_changes_and_destroys_through_the_cli() {
    let sb = Sandbox::new();
    let shoot = example("managed/shoot.yaml");
    sb.run(&["plan", "-f", &shoot]).code(0).stdout_has("provider: gcp").stdout_has("gcp.cloud_nat.");
    let report = sb.run(&["apply", "--auto-approve", "-f", &shoot, "--output", "json"]).code(0).json();
    let written: Vec<String> = writes(&report).into_iter().map(|(_, t)| t).collect();
    assert!(
        written
            .iter()
            .any(|t| t.ends_with("/routers/shoot--platform--web-cloud-router/nats/shoot--platform--web-cloud-nat")),
        "{written:?}"
    );
    // Another process: the simulated GCE cloud and the state were kept in the state dir.
    sb.run(&["plan", "-f", &shoot]).code(0).stdout_has("No changes.");
    assert_eq!(sb.workspaces(), vec!["shoot--platform--web".to_string()]);
    let ws = sb.workspace("shoot--platform--web");
    assert_eq!(ws["provider_state"]["provider"], "gcp", "{ws}");
    sb.run(&["destroy", "--auto-approve", "-f", &shoot]).code(0).stdout_has("destroy complete");
    sb.run(&["plan", "-f", &shoot]).code(0).stdout_has("gcp.network.trellis-sim.shoot--platform--web");
}

#[test]
fn regression_gcp_byo_world_gce_section_is_verified_and_never_written() {
    let sb = Sandbox::new();
    let (shoot, world) = (example("byo-ipv4/shoot.yaml"), example("byo-ipv4/world.yaml"));
    sb.run(&["plan", "-f", &shoot, "--world", &world])
        .code(0)
        .stdout_has("mode: user-managed-egress")
        .stdout_has("? gcp.subnetwork.trellis-sim/europe-west1.my-workers (user)");
    let report =
        sb.run(&["apply", "--auto-approve", "-f", &shoot, "--world", &world, "--output", "json"]).code(0).json();
    assert_eq!(writes(&report), Vec::<(String, String)>::new());
    // Without the world file the user's network is still there (kept in the state dir).
    sb.run(&["plan", "-f", &shoot]).code(0).stdout_has("No changes.");
    let report = sb.run(&["destroy", "--auto-approve", "-f", &shoot, "--output", "json"]).code(0).json();
    assert_eq!(writes(&report), Vec::<(String, String)>::new());
    // The user's subnet is missing: a pre-flight error naming it (C13).
    let only_vpc = sb.file("vpc-only.yaml");
    std::fs::write(
        &only_vpc,
        "gce:\n  resources:\n    - selfLink: projects/trellis-sim/global/networks/my-vpc\n      autoCreateSubnetworks: false\n",
    )
    .unwrap();
    let sb2 = Sandbox::new();
    sb2.run(&["plan", "-f", &shoot, "--world", &only_vpc]).code(1).stderr_has("my-workers");
}

#[test]
fn regression_a_fleet_may_mix_azure_and_gcp_shoots_each_in_its_own_cloud() {
    let sb = Sandbox::new();
    let fleet = sb.file("fleet");
    std::fs::create_dir(&fleet).unwrap();
    std::fs::copy(example("managed/shoot.yaml"), Path::new(&fleet).join("gcp.yaml")).unwrap();
    std::fs::copy(common::a1(), Path::new(&fleet).join("azure.yaml")).unwrap();
    let report = sb.run(&["apply", "--auto-approve", "-f", &fleet, "--output", "json"]).code(0).json();
    let targets: Vec<String> = writes(&report).into_iter().map(|(_, t)| t).collect();
    assert!(targets.iter().any(|t| t.starts_with("/subscriptions/")), "ARM writes: {targets:?}");
    assert!(targets.iter().any(|t| t.starts_with("projects/trellis-sim/")), "GCE writes: {targets:?}");
    sb.run(&["plan", "-f", &fleet, "--detailed-exitcode"]).code(0).stdout_has("Fleet: 2 shoots, 0 with changes.");
    assert_eq!(sb.workspaces(), vec!["shoot--dev--alpha".to_string(), "shoot--platform--web".to_string()]);
}

#[test]
fn regression_trellis_sim_gce_drives_the_runtime_writers_and_destroy_removes_what_they_wrote() {
    let sb = Sandbox::new();
    let (shoot, world) = (example("byo-ipv4/shoot.yaml"), example("byo-ipv4/world.yaml"));
    sb.run(&["apply", "--auto-approve", "-f", &shoot, "--world", &world]).code(0);
    let tn = "shoot--platform--payments";
    let node = format!("{tn}-worker-a-z1-abcde,europe-west1-b,100.96.0.0/24");
    sb.run(&["sim", "gce", "routes", "--shoot", tn, "--node", &node])
        .code(0)
        .stdout_has("POST projects/trellis-sim/global/routes/shoot--platform--payments-");
    sb.run(&["sim", "gce", "service", "create", "--shoot", tn, "--name", "web", "--port", "TCP:30080"])
        .code(0)
        .stdout_has("firewalls/k8s-fw-");
    // Idempotent: the same routes again write nothing.
    sb.run(&["sim", "gce", "routes", "--shoot", tn, "--node", &node]).code(0).stdout_has("No cloud writes");
    sb.run(&["sim", "gce", "show", "projects/trellis-sim/global/networks/my-vpc"])
        .code(0)
        .stdout_has("\"name\": \"my-vpc\"");
    // The destroy's safety nets remove the CCM's route and firewall rules, and nothing of the user's.
    let report = sb.run(&["destroy", "--auto-approve", "-f", &shoot, "--output", "json"]).code(0).json();
    let deleted: Vec<String> = writes(&report).into_iter().map(|(_, t)| t).collect();
    assert!(deleted.iter().any(|t| t.contains("/routes/shoot--platform--payments-")), "{deleted:?}");
    assert!(deleted.iter().any(|t| t.contains("/firewalls/k8s-fw-")), "{deleted:?}");
    assert!(
        !deleted.iter().any(|t| t.contains("my-vpc") || t.contains("my-workers") || t.contains("payments-allow")),
        "{deleted:?}"
    );
    // A shoot never applied: a one-line error saying what to do.
    sb.run(&["sim", "gce", "routes", "--shoot", "shoot--dev--nope"]).code(1).stderr_has("trellis apply");
}

/// `<repo>/tests/scenarios/gcp/<rel>`.
fn gcp_scenario(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios/gcp").join(rel);
    assert!(path.exists(), "missing scenario file {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

/// GCP spec acceptance F3: two shoots share one BYO VPC; deleting one removes its CCM routes and
/// `k8s-fw-*` rules and leaves the other shoot's untouched.
#[test]
fn regression_f3_deleting_one_of_two_shoots_in_a_shared_vpc_leaves_the_others_runtime_resources() {
    let sb = Sandbox::new();
    let (a, b, world) = (
        gcp_scenario("B5-byo-shoots-share-a-vpc/shoot-a.yaml"),
        gcp_scenario("B5-byo-shoots-share-a-vpc/shoot-b.yaml"),
        gcp_scenario("B5-byo-shoots-share-a-vpc/world.yaml"),
    );
    sb.run(&["apply", "--auto-approve", "-f", &a, "-f", &b, "--world", &world]).code(0);
    for (tn, pod) in [("shoot--platform--payments", "100.96.0.0/24"), ("shoot--platform--billing", "100.96.1.0/24")] {
        let node = format!("{tn}-worker-a-z1-abcde,europe-west1-b,{pod}");
        sb.run(&["sim", "gce", "routes", "--shoot", tn, "--node", &node]).code(0);
        sb.run(&["sim", "gce", "service", "create", "--shoot", tn, "--name", tn, "--port", "TCP:30080"]).code(0);
    }
    let report = sb.run(&["destroy", "--auto-approve", "-f", &a, "--output", "json"]).code(0).json();
    let deleted: Vec<String> = writes(&report).into_iter().map(|(_, t)| t).collect();
    assert!(deleted.iter().any(|t| t.contains("/routes/shoot--platform--payments-")), "{deleted:?}");
    assert!(deleted.iter().any(|t| t.contains("/firewalls/k8s-fw-") && t.contains("payments")), "{deleted:?}");
    assert!(!deleted.iter().any(|t| t.contains("billing")), "the other shoot's resources: {deleted:?}");
    assert_eq!(deleted.len(), 3, "the route, k8s-fw and k8s-hc rules of the deleted shoot: {deleted:?}");
    // The other shoot still plans no changes, and its route is still there.
    sb.run(&["plan", "-f", &b]).code(0).stdout_has("No changes.");
}

/// The bundled Azure and GCP examples share a technical id (`shoot--platform--web`): planning the GCP
/// one in a state dir where the Azure one was applied said the state was "corrupt" — it is not; a
/// shoot cannot change its provider, and the message now says so and what to do.
#[test]
fn regression_a_shoot_that_changes_its_provider_is_refused_as_such_not_as_corrupt_state() {
    let sb = Sandbox::new();
    let azure = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/azure-managed/shoot.yaml");
    sb.run(&["apply", "--auto-approve", "-f", azure.to_str().expect("UTF-8 path")]).code(0);
    let run = sb
        .run(&["plan", "-f", &example("managed/shoot.yaml")])
        .code(1)
        .stderr_has("workspace shoot--platform--web is recorded with provider type azure, but the manifest says gcp")
        .stderr_has("destroy the azure shoot first");
    assert_eq!(run.stderr_lines().len(), 1, "{:?}", run.stderr_lines());
    assert!(!run.stderr_lines()[0].contains("corrupt"), "{:?}", run.stderr_lines());
    // `validate` says so too (it said "1 shoot(s) valid.": errors other than rule violations were dropped).
    let run = sb
        .run(&["validate", "-f", &example("managed/shoot.yaml")])
        .code(1)
        .stderr_has("workspace shoot--platform--web is recorded with provider type azure, but the manifest says gcp");
    assert!(!run.stdout.contains("valid"), "{}", run.stdout);
}

/// B5 (issue #9 item 10) through the streaming `plan`: the fleet checks' warnings are known only once
/// every shoot is planned, after the shoots' plans went out — text lists them after the plans, each
/// naming its shoot, before the fleet's total line; `--out` writes them into the plan file (and `show`
/// shows them in the shoots' plans); `--output json` prints them on stderr.
#[test]
fn regression_gcp_fleet_warning_reaches_text_plan_file_and_json_output() {
    let sb = Sandbox::new();
    let file = |name: &str| common::scenario(&format!("../gcp/B5-byo-shared-vpc-untargeted-rule-warns/{name}"));
    let (a, b, world) = (file("shoot-a.yaml"), file("shoot-b.yaml"), file("world.yaml"));
    let flag = "firewall rule my-vpc-allow-internal of VPC my-vpc in project trellis-sim has no target tags";
    let text = sb.run(&["plan", "-f", &a, "-f", &b, "--world", &world]).code(0).stdout;
    let fleet_line = text.find("\nFleet: 2 shoots").expect("the fleet's total line");
    let last_plan = text.rfind("Shoot: shoot--platform--").expect("the plans");
    for shoot in ["payments", "billing"] {
        let warning = format!("\nWarning: shoot--platform--{shoot}: user-managed egress: {flag}");
        let at = text.find(&warning).unwrap_or_else(|| panic!("{warning:?} in\n{text}"));
        assert!(last_plan < at && at < fleet_line, "after the plans, before the total:\n{text}");
        assert!(text.contains(&format!("--target-tags=shoot--platform--{shoot}")), "{text}");
    }
    let out = sb.file("plan.json");
    sb.run(&["plan", "-f", &a, "-f", &b, "--world", &world, "--out", &out]).code(0);
    sb.run_raw(&["show", &out]).code(0).stdout_has(&format!("Warning: user-managed egress: {flag}"));
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for plan in saved["plans"].as_array().expect("two plans") {
        let warnings = plan["warnings"].as_array().unwrap();
        assert!(warnings.iter().any(|w| w.as_str().unwrap().contains(flag)), "{plan}");
    }
    // The saved plan still applies (the warnings are not part of its digest); nothing is written.
    let report = sb.run(&["apply", &out, "--output", "json"]).code(0).json();
    assert_eq!(writes(&report), Vec::<(String, String)>::new());
    let run = sb.run(&["plan", "-f", &a, "-f", &b, "--world", &world, "--output", "json"]).code(0);
    assert_eq!(run.json()["plans"].as_array().map(Vec::len), Some(2));
    let lines = run.stderr_lines();
    for shoot in ["shoot--platform--billing", "shoot--platform--payments"] {
        assert!(lines.iter().any(|l| l.starts_with(&format!("warning: {shoot}: ")) && l.contains(flag)), "{lines:?}");
    }
}

/// `--project` names the simulated GCE project too (default `trellis-sim`): the shoot's ids and the
/// fleet's messages are in that project; an id that is not a GCP project id is refused in one line.
#[test]
fn regression_sim_project_flag_names_the_simulated_project() {
    let sb = Sandbox::new();
    let shoot = example("byo-ipv4/shoot.yaml");
    let world = sb.file("acme-world.yaml");
    let text = std::fs::read_to_string(example("byo-ipv4/world.yaml"))
        .unwrap()
        .replace("projects/trellis-sim/", "projects/acme-prod/");
    std::fs::write(&world, text).unwrap();
    sb.run(&["plan", "-f", &shoot, "--world", &world, "--project", "acme-prod"])
        .code(0)
        .stdout_has("gcp.subnetwork.acme-prod/europe-west1.my-workers (user)");
    // The same world in the default project has no such VPC: the pre-flight names the project.
    sb.run(&["plan", "-f", &shoot, "--world", &world]).code(1).stderr_has("trellis-sim");
    let report = sb
        .run(&[
            "apply",
            "--auto-approve",
            "-f",
            &shoot,
            "--world",
            &world,
            "--project",
            "acme-prod",
            "--output",
            "json",
        ])
        .code(0)
        .json();
    assert_eq!(writes(&report), Vec::<(String, String)>::new());
    sb.run(&["plan", "-f", &shoot, "--project", "acme-prod"]).code(0).stdout_has("No changes.");
    sb.run(&["sim", "gce", "show", "projects/acme-prod/global/networks/my-vpc"]).code(0).stdout_has("my-vpc");
    let run = sb.run(&["plan", "-f", &shoot, "--project", "Acme_Prod"]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{:?}", run.stderr_lines());
    run.stderr_has("--project 'Acme_Prod' is not a GCP project id");
}

/// The recorded GCE responses of a real auto-mode VPC (providers/sim/tests/data/gce/auto-mode-vpc/)
/// as a world file's `gcp:` section with its `project:`, as an export writes it.
fn auto_mode_world(sb: &Sandbox, section: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/sim/tests/data/gce/auto-mode-vpc");
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
    };
    let mut resources = Vec::new();
    for list in ["networks-list.json", "routes-list.json", "firewalls-list.json"] {
        resources.extend(read(list)["items"].as_array().unwrap().iter().cloned());
    }
    for (_, scoped) in read("subnetworks-aggregated-list.json")["items"].as_object().unwrap() {
        resources.extend(scoped.get("subnetworks").and_then(|s| s.as_array()).into_iter().flatten().cloned());
    }
    let world = sb.file(&format!("{section}-world.yaml"));
    let body = serde_json::json!({ section: {"project": "acme-prod", "resources": resources} });
    std::fs::write(&world, serde_json::to_string_pretty(&body).unwrap()).unwrap();
    world
}

/// A GCP BYO shoot plans against recorded GCE responses of a real auto-mode VPC: its subnet and
/// peering routes were refused as inserts ("a route needs exactly one next hop"), the `gcp:` section
/// was an unknown field, and its project needed `--project`. Now the world's `project:` is the
/// shoots' project, kept in the simulated cloud for later commands.
#[test]
fn regression_a_byo_shoot_plans_against_recorded_responses_of_an_auto_mode_vpc_without_project_flag() {
    let sb = Sandbox::new();
    let shoot = common::data("gcp-auto-mode-shoot.yaml");
    let world = auto_mode_world(&sb, "gcp");
    sb.run(&["plan", "-f", &shoot, "--world", &world])
        .code(0)
        .stdout_has("mode: user-managed-egress")
        .stdout_has("gcp.network.acme-prod.default (user)")
        .stdout_has("gcp.subnetwork.acme-prod/europe-west1.default (user)");
    let report =
        sb.run(&["apply", "--auto-approve", "-f", &shoot, "--world", &world, "--output", "json"]).code(0).json();
    assert_eq!(writes(&report), Vec::<(String, String)>::new(), "nothing of the user's is written");
    // Later commands without --world nor --project: the project is the one the world file named.
    sb.run(&["plan", "-f", &shoot]).code(0).stdout_has("No changes.");
    sb.run(&["sim", "gce", "show", "projects/acme-prod/global/routes/peering-route-2ffc1d06387ef8bb"])
        .code(0)
        .stdout_has("servicenetworking-googleapis-com");
    // `gce:`, the section's earlier name, reads the same.
    let sb2 = Sandbox::new();
    let alias = auto_mode_world(&sb2, "gce");
    sb2.run(&["plan", "-f", &shoot, "--world", &alias]).code(0).stdout_has("gcp.network.acme-prod.default (user)");
}

/// A Bastion not deleted before the shoot leaves its three tag-scoped firewall rules in the user's
/// VPC: the destroy never deletes them (upstream leaves them to the bastion controller), and names
/// each with the command that prunes it, as Azure's destroy names what is left on the user's NSG.
#[test]
fn regression_gcp_destroy_names_what_the_bastion_left_in_the_users_vpc() {
    let sb = Sandbox::new();
    let (shoot, world) = (example("byo-ipv4/shoot.yaml"), example("byo-ipv4/world.yaml"));
    sb.run(&["apply", "--auto-approve", "-f", &shoot, "--world", &world]).code(0);
    let tn = "shoot--platform--payments";
    sb.run(&[
        "sim",
        "gce",
        "bastion",
        "create",
        "--shoot",
        tn,
        "--name",
        "ops-bastion",
        "--zone",
        "europe-west1-b",
        "--operator-cidr",
        "203.0.113.0/24",
    ])
    .code(0);
    let out = sb.run(&["destroy", "--auto-approve", "-f", &shoot]).code(0);
    assert!(
        out.stdout.contains(&format!("{tn}: 3 artifact(s) of the CCM and bastion controller remain in your network; trellis does not delete them. To prune:")),
        "{}",
        out.stdout
    );
    for rule in ["ops-bastion-allow-ssh", "ops-bastion-deny-all", "ops-bastion-egress-worker"] {
        assert!(
            out.stdout.contains(&format!(
                "  gcloud compute firewall-rules delete {rule} --project=trellis-sim  # bastion controller"
            )),
            "{rule}: {}",
            out.stdout
        );
    }
    let json = sb.run(&["sim", "gce", "show", "projects/trellis-sim/global/firewalls/ops-bastion-deny-all"]).code(0);
    assert!(json.stdout.contains("ops-bastion-deny-all"), "still there: {}", json.stdout);
}
