//! The operator's lifecycle in CI (`plan --detailed-exitcode` decides whether `apply` runs): plans that
//! tell the truth about what applying records, artifacts that change shown before → after, fleets whose
//! unchanged shoots take one line and whose totals come last in Terraform's words.

use crate::common::{self, Sandbox};

fn gcp_scenario(rel: &str) -> String {
    common::scenario(&format!("../gcp/{rel}"))
}

/// A GCP BYO shoot writes nothing to the cloud on its first apply (its VPC and subnets are the user's),
/// but its workspace must be recorded: the fleet checks and update rules read it. Its first plan is a
/// change (exit 2, "1 workspace to record"), applied by `apply`; then the plan is empty (exit 0).
#[test]
fn regression_a_first_plan_without_cloud_writes_is_a_change_that_apply_records() {
    let sb = Sandbox::new();
    let (shoot, world) = (gcp_scenario("B1-byo-ipv4/shoot.yaml"), gcp_scenario("B1-byo-ipv4/world.yaml"));
    let plan = sb.run(&["plan", "-f", &shoot, "--world", &world, "--detailed-exitcode"]).code(2);
    let first = plan.stdout.lines().next().unwrap();
    assert_eq!(
        first,
        "Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 workspace to record, 2 to verify, 6 skipped."
    );
    assert!(
        plan.stdout.contains("Workspace to record: the shoot's first record (nothing applied yet).\n"),
        "{}",
        plan.stdout
    );
    // The documented warning of a GCP BYO plan: Gardener cannot know the egress CIDRs.
    assert!(
        plan.stdout.contains("Warning: user-managed egress: shoot.status.provider.egressCIDRs is empty — Gardener has no reliable way to know your egress IPs"),
        "{}",
        plan.stdout
    );
    let json = sb.run(&["plan", "-f", &shoot, "--world", &world, "--output", "json"]).code(0).json();
    assert_eq!(json["record"], serde_json::json!(["new-workspace"]), "{json:#}");
    assert_eq!(json["summary"]["record"], 1, "{json:#}");
    assert!(sb.workspaces().is_empty(), "a plan records nothing");

    sb.run(&["apply", "-f", &shoot, "--world", &world, "--auto-approve"]).code(0);
    assert_eq!(sb.workspaces().len(), 1, "the apply recorded the shoot");
    let again = sb.run(&["plan", "-f", &shoot, "--world", &world, "--detailed-exitcode"]).code(0);
    assert!(again.stdout.starts_with("No changes."), "{}", again.stdout);
    let json = sb.run(&["plan", "-f", &shoot, "--world", &world, "--output", "json"]).code(0).json();
    assert!(json.get("record").is_none() && json["summary"].get("record").is_none(), "{json:#}");
}

/// Accepting drift (the user swapped the BYO subnet's NSG) writes nothing to the cloud but changes
/// `azure.json`'s `securityGroupName`: the plan shows the artifact before → after (text and markdown),
/// counts it as a change, and after the apply the plan is empty again.
#[test]
fn regression_accepted_drift_shows_the_changed_artifacts_and_is_a_change() {
    let sb = Sandbox::new();
    let shoot = common::scenario("B1-byo-nsg-rt-in-vnet-rg/shoot.yaml");
    let world = common::scenario("B1-byo-nsg-rt-in-vnet-rg/world.yaml");
    let swapped = common::scenario("B1-byo-nsg-rt-in-vnet-rg/world-nsg-swapped.yaml");
    sb.run(&["apply", "-f", &shoot, "--world", &world, "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &shoot, "--world", &world, "--detailed-exitcode"]).code(0);

    let plan = sb.run(&["plan", "-f", &shoot, "--world", &swapped, "--accept-drift", "--detailed-exitcode"]).code(2);
    let text = &plan.stdout;
    assert!(
        text.starts_with("Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 workspace to record"),
        "{text}"
    );
    assert!(
        text.contains("Workspace to record: the last-applied configuration changes; the artifacts change.\n"),
        "{text}"
    );
    let changed = text.find("Artifacts changed since the last apply:\n").expect("the artifacts' changes");
    let rest = &text[changed..];
    assert!(rest.contains("\n    -securityGroupName: \"shoot-a-nsg\"\n"), "{rest}");
    assert!(rest.contains("\n    +securityGroupName: \"shoot-a-nsg-2\"\n"), "{rest}");

    let md = sb.run(&["plan", "-f", &shoot, "--world", &swapped, "--accept-drift", "--output", "markdown"]).code(0);
    assert!(md.stdout.contains("Artifacts changed since the last apply:"), "{}", md.stdout);
    assert!(md.stdout.contains("+securityGroupName: \"shoot-a-nsg-2\""), "{}", md.stdout);

    sb.run(&["apply", "-f", &shoot, "--world", &swapped, "--accept-drift", "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &shoot, "--world", &swapped, "--detailed-exitcode"]).code(0);
}

/// A fleet's text plan: a shoot without changes is one line (its block with `--verbose`), the totals
/// come last in Terraform's words, and a shoot's domains plan is not another shoot.
#[test]
fn a_fleet_text_plan_scales_unchanged_shoots_are_one_line_and_totals_come_last() {
    let sb = Sandbox::new();
    let fleet = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fleet");
    let fleet = fleet.to_str().unwrap();
    let world = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fleet-world.yaml");
    let world = world.to_str().unwrap();
    let first = sb.run(&["plan", "-f", fleet, "--world", world]).code(0);
    let last: Vec<&str> = first.stdout.trim_end().lines().rev().take(2).collect();
    assert_eq!(last[1], "Fleet: 3 shoots, 3 with changes.", "{}", first.stdout);
    assert_eq!(
        last[0], "Plan: 13 to add, 0 to change, 0 to destroy; 3 workspaces to record; 4 to verify, 3 skipped.",
        "{}",
        first.stdout
    );
    sb.run(&["apply", "-f", fleet, "--world", world, "--auto-approve"]).code(0);

    let again = sb.run(&["plan", "-f", fleet, "--world", world]).code(0);
    let lines: Vec<&str> = again.stdout.lines().collect();
    assert!(lines.contains(&"shoot--shop--dev (azure, managed): no changes; 5 unchanged."), "{}", again.stdout);
    assert!(!again.stdout.contains("Shoot: shoot--shop--dev"), "no block for an unchanged shoot:\n{}", again.stdout);
    assert!(!again.stdout.contains("Artifacts:"), "{}", again.stdout);
    assert_eq!(lines.last().copied(), Some("Plan: 0 to add, 0 to change, 0 to destroy; 4 to verify, 3 skipped."));
    let verbose = sb.run(&["plan", "-f", fleet, "--world", world, "--verbose"]).code(0);
    assert!(verbose.stdout.contains("Shoot: shoot--shop--dev"), "{}", verbose.stdout);
}

/// The hints work where they are printed: `apply it with …` carries the `--state`/`--sim-dir` of the
/// plan (run as printed, it applies); a manifest given to `apply` without `-f` says so; a BYO shoot
/// whose resources the simulated cloud lacks (no `--world`) hints at `--world`; a Shoot whose
/// infrastructureConfig is another provider's names the apiVersion found.
#[test]
fn hints_work_where_they_are_printed() {
    let sb = Sandbox::new();
    let a1 = common::a1();
    let out = sb.file("plan.json");
    let sim = sb.file("my sim");
    let planned = sb.run(&["plan", "-f", &a1, "--out", &out, "--sim-dir", &sim]).code(0);
    let hint = format!("apply it with `trellis apply {out} --state {} --sim-dir '{sim}'`.", sb.state());
    assert!(planned.stderr.contains(&hint), "{hint:?} in\n{}", planned.stderr);
    // Run as printed (run_raw: no --state added by the sandbox), it applies.
    sb.run_raw(&["apply", &out, "--state", sb.state(), "--sim-dir", &sim]).code(0);
    assert_eq!(sb.workspaces(), ["shoot--dev--alpha"]);

    sb.run(&["apply", &a1])
        .code(1)
        .stderr_has(&format!("error: {a1} is a manifest, not a plan file (`trellis apply` takes a file written by `trellis plan --out`); to plan and apply manifests, pass them with -f: `trellis apply -f {a1}`"));
    sb.run_raw(&["show", &a1]).code(1).stderr_has(&format!("to see the plan of manifests, run `trellis plan -f {a1}`"));

    let byo = common::scenario("B1-byo-nsg-rt-in-vnet-rg/shoot.yaml");
    let refused = sb.run(&["plan", "-f", &byo]).code(1);
    assert!(refused.stderr.contains("user vnet not found"), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("hint: the simulated cloud holds only what trellis applied and what a world file declared"),
        "{}",
        refused.stderr
    );
    let world = common::scenario("B1-byo-nsg-rt-in-vnet-rg/world.yaml");
    sb.run(&["plan", "-f", &byo, "--world", &world]).code(0);

    let gcp_config = std::fs::read_to_string(&a1).unwrap().replace(
        "azure.provider.extensions.gardener.cloud/v1alpha1",
        "gcp.provider.extensions.gardener.cloud/v1alpha1",
    );
    let wrong = sb.file("wrong.yaml");
    std::fs::write(&wrong, gcp_config).unwrap();
    sb.run(&["plan", "-f", &wrong]).code(1).stderr_has(
        "expected apiVersion azure.provider.extensions.gardener.cloud/v1alpha1, kind InfrastructureConfig for provider azure; found gcp.provider.extensions.gardener.cloud/v1alpha1 InfrastructureConfig",
    );

    // A pre-flight failure that is not about a resource of the user's gets no world hint: the
    // applied alpha moved to another region finds its own resource group in the old location.
    let moved = sb.file("moved.yaml");
    std::fs::write(&moved, std::fs::read_to_string(&a1).unwrap().replace("region: westeurope", "region: northeurope"))
        .unwrap();
    let refused = sb.run(&["plan", "-f", &moved, "--sim-dir", &sim]).code(1);
    assert!(
        refused.stderr.contains("exists in location westeurope, but the shoot's region is northeurope"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains("hint:"), "a hint that does not apply: {}", refused.stderr);
    // GCP's missing VPC gets it, as Azure's missing VNet above.
    let in_byo_vpc = gcp_scenario("A2-managed-subnet-in-byo-vpc/shoot.yaml");
    let refused = sb.run(&["plan", "-f", &in_byo_vpc]).code(1);
    assert!(refused.stderr.contains("not found in project"), "{}", refused.stderr);
    assert!(
        refused.stderr.trim_end().lines().last().unwrap().starts_with("hint: the simulated cloud holds only"),
        "{}",
        refused.stderr
    );
}

/// An apply that changes nothing does not commit: the serial stays, and a plan saved before it is
/// still current.
#[test]
fn regression_a_no_op_apply_does_not_bump_the_serial() {
    let sb = Sandbox::new();
    let a1 = common::a1();
    sb.run(&["apply", "-f", &a1, "--auto-approve"]).code(0);
    let serial = sb.workspace("shoot--dev--alpha")["serial"].clone();
    let saved = sb.file("plan.json");
    sb.run(&["plan", "-f", &a1, "--out", &saved, "--detailed-exitcode"]).code(0);
    sb.run(&["apply", "-f", &a1, "--auto-approve"]).code(0);
    assert_eq!(sb.workspace("shoot--dev--alpha")["serial"], serial, "a no-op apply commits nothing");
    sb.run(&["apply", &saved]).code(0);
    assert_eq!(sb.workspace("shoot--dev--alpha")["serial"], serial);
}

/// `--version` names the commit; completions for the shells and a man page come from the clap
/// definitions, so they list every command and flag there is.
#[test]
fn version_names_the_commit_and_completions_and_man_page_cover_every_command() {
    let sb = Sandbox::new();
    let version = sb.run_raw(&["--version"]).code(0).stdout;
    // `trellis 0.1.0 (3f2a9c1d0b7e)`: a commit of this repository (not necessarily HEAD: the binary may
    // have been built before the last commit).
    let prefix = format!("trellis {} (", env!("CARGO_PKG_VERSION"));
    let commit =
        version.trim().strip_prefix(&prefix).and_then(|r| r.strip_suffix(')')).unwrap_or_else(|| panic!("{version}"));
    assert!(commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()), "{version}");
    let known =
        std::process::Command::new("git").args(["cat-file", "-e", &format!("{commit}^{{commit}}")]).status().unwrap();
    assert!(known.success(), "{commit} is not a commit of this repository");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = sb.run_raw(&["completions", shell]).code(0).stdout;
        for word in ["plan", "apply", "destroy", "world", "detailed-exitcode", "feature-gates"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    sb.run_raw(&["completions", "tcsh"]).code(1).stderr_has("invalid value 'tcsh'");
    let man = sb.run_raw(&["man"]).code(0).stdout;
    assert!(man.contains(".TH trellis 1"), "{man}");
    for command in ["validate", "plan", "apply", "destroy", "show", "diff", "state", "sim", "world"] {
        assert!(man.contains(&format!("trellis\\-{command}(1)")), "man page lacks {command}:\n{man}");
        let page = sb.run_raw(&["man", command]).code(0).stdout;
        assert!(page.contains(&format!(".TH trellis-{command} 1")), "{page}");
    }
    let plan = sb.run_raw(&["man", "plan"]).code(0).stdout;
    assert!(plan.contains("detailed\\-exitcode"), "{plan}");
    sb.run_raw(&["man", "nope"])
        .code(1)
        .stderr_has("trellis has no command \"nope\"; its commands are validate, plan,");
}

/// Destroys are plans: `plan --destroy --out PLAN` is reviewed (show, markdown, diff, the digest) and
/// `apply PLAN` executes exactly it, as `destroy` does; an apply plan and a destroy plan never pass for
/// each other.
#[test]
fn a_destroy_plan_is_reviewed_and_applied_like_any_plan() {
    let sb = Sandbox::new();
    let a1 = common::a1();
    sb.run(&["apply", "-f", &a1, "--auto-approve"]).code(0);
    let out = sb.file("destroy.json");
    let planned = sb.run(&["plan", "--destroy", "-f", &a1, "--out", &out, "--detailed-exitcode"]).code(2);
    assert!(
        planned.stdout.starts_with("Plan: 0 to create, 0 to update, 0 to replace, 1 to delete."),
        "{}",
        planned.stdout
    );
    assert!(
        planned.stdout.contains("Destroy plan: applying it deletes what trellis manages for the shoot"),
        "{}",
        planned.stdout
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(json["destroy"], true, "{json:#}");
    let md = sb.run_raw(&["show", &out, "--output", "markdown"]).code(0).stdout;
    assert!(md.contains("This plan deletes or replaces resources"), "{md}");
    // Its digest pins it as any plan's does.
    let digest = json["digest"].as_str().unwrap().to_string();
    sb.run(&["apply", &out, "--expect-digest", &"0".repeat(64)]).code(1).stderr_has("digest");
    // A plan of the apply is not the destroy plan.
    let apply_plan = sb.file("apply.json");
    sb.run(&["plan", "-f", &a1, "--out", &apply_plan]).code(0);
    sb.run_raw(&["diff", &apply_plan, &out]).code(2);

    sb.run(&["apply", &out, "--expect-digest", &digest]).code(0).stdout_has("destroy complete");
    let ws = sb.workspace("shoot--dev--alpha");
    assert_eq!(ws["resources"], serde_json::json!({}), "{ws}");
    // Applied once, the destroy plan is stale (the workspace moved on).
    sb.run(&["apply", &out]).code(1);
    sb.run(&["plan", "-f", &a1, "--detailed-exitcode"]).code(2);
}

/// A fleet directory `fleet/` in the sandbox holding copies of `manifests` (name → file).
fn fleet_dir(sb: &Sandbox, manifests: &[(&str, &str)]) -> String {
    let dir = sb.path().join("fleet");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, from) in manifests {
        std::fs::copy(from, dir.join(name)).unwrap();
    }
    dir.to_str().unwrap().to_string()
}

/// A shoot whose manifest is removed from the fleet directory stays in state: `plan -f DIR` names it
/// (and what it holds) and plans nothing for it; `--prune` plans its destroy in the same plan file
/// (a change, digest-pinned, marked as pruned), `apply PLAN` carries it out and the shoots still in
/// the directory are left as they are; then the directory and the state agree again.
#[test]
fn regression_a_shoot_gone_from_the_fleet_directory_is_reported_and_pruned_by_a_reviewable_plan() {
    let sb = Sandbox::new();
    let dir = fleet_dir(&sb, &[("alpha.yaml", &common::a1()), ("bravo.yaml", &common::a2())]);
    sb.run(&["apply", "-f", &dir, "--auto-approve"]).code(0);
    std::fs::remove_file(sb.path().join("fleet/alpha.yaml")).unwrap();

    let plan = sb.run(&["plan", "-f", &dir, "--detailed-exitcode"]).code(0);
    assert!(
        plan.stderr.contains(
            "in state, not in the inputs: shoot--dev--alpha, 5 resources; `--prune` plans its destroy, `trellis state rm` forgets it"
        ),
        "{}",
        plan.stderr
    );
    assert!(plan.stdout.starts_with("No changes."), "{}", plan.stdout);
    // A single manifest is not the fleet: nothing is said about the other shoots in state.
    let one = sb.run(&["plan", "-f", &format!("{dir}/bravo.yaml")]).code(0);
    assert!(!one.stderr.contains("not in the inputs"), "{}", one.stderr);
    // --prune needs the directory.
    sb.run(&["plan", "-f", &format!("{dir}/bravo.yaml"), "--prune"])
        .code(1)
        .stderr_has("--prune needs a fleet directory among -f");

    let out = sb.file("prune.json");
    let pruned = sb.run(&["plan", "-f", &dir, "--prune", "--out", &out, "--detailed-exitcode"]).code(2);
    assert!(
        pruned.stderr.contains("shoot--dev--alpha, 5 resources; its destroy is planned (--prune)"),
        "{}",
        pruned.stderr
    );
    let set: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let plans = set["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 2, "{set:#}");
    let alpha = plans.iter().find(|p| p["shoot"] == "shoot--dev--alpha").unwrap();
    assert_eq!(alpha["destroy"], true, "{alpha:#}");
    assert_eq!(alpha["summary"]["delete"], 1, "the resource group, with everything in it: {alpha:#}");
    assert!(alpha["warnings"][0].as_str().unwrap().starts_with("pruned: shoot--dev--alpha is in state"), "{alpha:#}");
    let bravo = plans.iter().find(|p| p["shoot"] == "shoot--dev--bravo").unwrap();
    assert!(bravo.get("destroy").is_none() || bravo["destroy"] == false, "{bravo:#}");
    let shown = sb.run_raw(&["show", &out]).code(0);
    assert!(shown.stdout.contains("pruned: shoot--dev--alpha"), "{}", shown.stdout);

    let digest =
        set["plans"].as_array().unwrap().iter().map(|p| p["digest"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    let mut args = vec!["apply", &out as &str];
    for d in &digest {
        args.extend(["--expect-digest", d]);
    }
    let applied = sb.run(&args).code(0);
    assert!(applied.stdout.contains("shoot--dev--alpha: destroy complete."), "{}", applied.stdout);
    assert!(applied.stdout.contains("shoot--dev--bravo: apply complete."), "{}", applied.stdout);
    assert!(sb.resource_ids("shoot--dev--alpha").is_empty());
    assert_eq!(sb.resource_ids("shoot--dev--bravo").len(), 7);
    let after = sb.run(&["plan", "-f", &dir, "--detailed-exitcode"]).code(0);
    assert!(!after.stderr.contains("not in the inputs"), "{}", after.stderr);
}

/// `apply -f DIR --prune` destroys the orphans in the same run, as the plan showed.
#[test]
fn apply_with_prune_destroys_the_shoots_gone_from_the_directory() {
    let sb = Sandbox::new();
    let dir = fleet_dir(&sb, &[("alpha.yaml", &common::a1()), ("bravo.yaml", &common::a2())]);
    sb.run(&["apply", "-f", &dir, "--auto-approve"]).code(0);
    std::fs::remove_file(sb.path().join("fleet/bravo.yaml")).unwrap();
    let run = sb.run(&["apply", "-f", &dir, "--prune", "--auto-approve"]).code(0);
    assert!(run.stdout.contains("shoot--dev--bravo: destroy complete."), "{}", run.stdout);
    assert!(sb.resource_ids("shoot--dev--bravo").is_empty());
    assert_eq!(sb.resource_ids("shoot--dev--alpha").len(), 5);
}

/// `--keep-going`: a shoot the provider refuses (a BYO subnet that does not exist) does not stop the
/// fleet: the others are applied, the end lists each shoot (applied / failed: why), exit 1. Without
/// it the refusal stops the run before anything is applied.
#[test]
fn regression_keep_going_applies_the_others_and_lists_every_shoot() {
    let sb = Sandbox::new();
    let dir = fleet_dir(
        &sb,
        &[("alpha.yaml", &common::a1()), ("c8.yaml", &common::scenario("C8-byo-subnet-missing/shoot.yaml"))],
    );
    let stopped = sb.run(&["apply", "-f", &dir, "--auto-approve"]).code(1);
    assert!(stopped.stderr.contains("shoot--platform--byo-c8"), "{}", stopped.stderr);
    assert!(sb.workspaces().is_empty(), "without --keep-going nothing is applied");

    let run = sb.run(&["apply", "-f", &dir, "--auto-approve", "--keep-going"]).code(1);
    assert!(run.stdout.contains("shoot--dev--alpha: apply complete."), "{}", run.stdout);
    let failed = run
        .stdout
        .lines()
        .find(|l| l.starts_with("shoot--platform--byo-c8: failed: refused at planning"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(failed.contains("c8.yaml"), "{failed}");
    assert_eq!(sb.resource_ids("shoot--dev--alpha").len(), 5);

    let json = sb.run(&["apply", "-f", &dir, "--auto-approve", "--keep-going", "--output", "json"]).code(1).json();
    let statuses: Vec<(String, String)> = json["shoots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["shoot"].as_str().unwrap().to_string(), s["status"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("shoot--dev--alpha".to_string(), "applied".to_string()),
            ("shoot--platform--byo-c8".to_string(), "failed".to_string())
        ]
    );
}

/// `destroy --detailed-exitcode` exits 2 when it destroyed something and 0 when there was nothing to
/// destroy; `--output markdown` prints the plan and a table of the shoots' outcomes.
#[test]
fn destroy_has_a_detailed_exitcode_and_a_markdown_report() {
    let sb = Sandbox::new();
    let a1 = common::a1();
    sb.run(&["apply", "-f", &a1, "--auto-approve"]).code(0);
    let md = sb.run(&["destroy", "-f", &a1, "--auto-approve", "--output", "markdown", "--detailed-exitcode"]).code(2);
    assert!(
        md.stdout.contains("| shoot | outcome |\n|---|---|\n| `shoot--dev--alpha` | destroy complete. |"),
        "{}",
        md.stdout
    );
    assert!(md.stdout.contains("delete"), "the plan comes first: {}", md.stdout);
    sb.run(&["destroy", "-f", &a1, "--auto-approve", "--detailed-exitcode"]).code(0);
    // apply has them too.
    sb.run(&["apply", "-f", &a1, "--auto-approve", "--detailed-exitcode"]).code(2);
    sb.run(&["apply", "-f", &a1, "--auto-approve", "--detailed-exitcode"]).code(0);
}

/// The NAT's public IP replaced (the user's IP changed address): the shoot's egress CIDRs change, so
/// the plan is a change, shows the old address → the new one, and warns that allow-lists naming the
/// old address break.
#[test]
fn regression_a_replaced_nat_ip_warns_that_the_egress_cidrs_change_and_shows_the_old_address() {
    let sb = Sandbox::new();
    let (shoot, world) = (
        common::scenario("A3-byo-vnet-nat-user-ips/shoot.yaml"),
        common::scenario("A3-byo-vnet-nat-user-ips/world.yaml"),
    );
    let changed = common::scenario("A3-byo-vnet-nat-user-ips/world-ip-changed.yaml");
    sb.run(&["apply", "-f", &shoot, "--world", &world, "--auto-approve"]).code(0);
    let plan = sb.run(&["plan", "-f", &shoot, "--world", &changed, "--detailed-exitcode"]).code(2);
    assert!(
        plan.stdout
            .contains("Artifacts changed since the last apply:\n  egress CIDRs: 51.105.20.7/32 -> 51.105.20.99/32\n"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("Warning: the shoot's egress CIDRs change from 51.105.20.7/32 to 51.105.20.99/32: allow-lists that name the old addresses"),
        "{}",
        plan.stdout
    );
    let md = sb.run(&["plan", "-f", &shoot, "--world", &changed, "--output", "markdown"]).code(0);
    assert!(md.stdout.contains("51.105.20.7/32") && md.stdout.contains("51.105.20.99/32"), "{}", md.stdout);
}

/// What `apply` prints before it asks is the plan `plan` prints for the same fleet, byte for byte, as
/// text and as markdown (apply renders the plans it is about to apply, not a copy of them); the
/// apply's own report follows it.
#[test]
fn apply_prints_the_plan_that_plan_prints_for_the_same_fleet() {
    let sb = Sandbox::new();
    let (a1, a2) = (common::a1(), common::a2());
    for output in ["text", "markdown"] {
        let plan = sb.run(&["plan", "-f", &a1, "-f", &a2, "--output", output]).code(0).stdout;
        assert!(plan.contains("shoot--dev--alpha") && plan.contains("shoot--dev--bravo"), "{plan}");
        let apply = sb.run(&["apply", "-f", &a1, "-f", &a2, "--auto-approve", "--output", output]).code(0).stdout;
        assert!(apply.starts_with(&plan), "{output}: apply printed\n{apply}\nplan printed\n{plan}");
        assert!(apply.len() > plan.len(), "{output}: the apply's report follows the plan: {apply}");
        sb.run(&["destroy", "-f", &a1, "-f", &a2, "--auto-approve"]).code(0);
    }
}

/// A fleet given out of shoot order (bravo's file, then alpha's): `plan` prints it in input order, and
/// so must the apply and the destroy that print their plan before they ask (they printed by shoot,
/// alpha first).
#[test]
fn regression_apply_and_destroy_print_a_fleet_in_input_order_as_plan_does() {
    let sb = Sandbox::new();
    let (a1, a2) = (common::a1(), common::a2());
    for output in ["text", "markdown"] {
        for (command, plan_flags) in [("apply", &[][..]), ("destroy", &["--destroy"][..])] {
            let mut plan_args = vec!["plan", "-f", &a2, "-f", &a1, "--output", output];
            plan_args.extend(plan_flags);
            let plan = sb.run(&plan_args).code(0).stdout;
            let (bravo, alpha) = (plan.find("shoot--dev--bravo").unwrap(), plan.find("shoot--dev--alpha").unwrap());
            assert!(bravo < alpha, "{output}: plan prints the inputs in their order: {plan}");
            let run = sb.run(&[command, "-f", &a2, "-f", &a1, "--auto-approve", "--output", output]).code(0).stdout;
            assert!(run.starts_with(&plan), "{output}: {command} printed\n{run}\nplan printed\n{plan}");
        }
    }
}

/// A shoot applied in one subscription and planned in another (a CI job's `AZURE_SUBSCRIPTION_ID`
/// pointing elsewhere; with the simulator, a world file of another subscription) is refused before
/// anything is read, in one line naming both subscriptions and what to do. It was planned as five
/// deletes and five creates under the same addresses, and its apply failed with "dependency cycle in
/// the plan …; this is a bug in the provider's task graph".
#[test]
fn regression_a_shoot_planned_in_another_subscription_or_project_is_refused() {
    let sb = Sandbox::new();
    let alpha = common::a1();
    sb.run(&["apply", "-f", &alpha, "--auto-approve"]).code(0);
    let elsewhere = common::scenario("B1-byo-nsg-rt-in-vnet-rg/world.yaml");
    for args in [
        vec!["plan", "-f", &alpha, "--world", &elsewhere],
        vec!["apply", "-f", &alpha, "--world", &elsewhere, "--auto-approve"],
        vec!["destroy", "-f", &alpha, "--world", &elsewhere, "--auto-approve"],
    ] {
        let run = sb.run(&args).code(1);
        let errors: Vec<&str> = run.stderr_lines().into_iter().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(errors.len(), 1, "{}", run.stderr);
        for needle in [
            "shoot--dev--alpha",
            "in subscription 00000000-0000-0000-0000-000000000000 (e.g. /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/shoot--dev--alpha",
            "this plan is for subscription 6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17",
            "trellis does not move a shoot to another subscription",
            "plan for subscription 00000000-0000-0000-0000-000000000000 (--subscription; with the simulated cloud, a world file's azure.subscriptionId)",
        ] {
            assert!(errors[0].contains(needle), "{needle:?} in {}", errors[0]);
        }
        assert!(!run.stdout.contains("to delete"), "no plan is printed: {}", run.stdout);
    }
    // Back in its subscription, nothing changed.
    let own = sb.file("own-subscription.yaml");
    std::fs::write(&own, "azure:\n  subscriptionId: 00000000-0000-0000-0000-000000000000\n").unwrap();
    sb.run(&["plan", "-f", &alpha, "--world", &own, "--detailed-exitcode"]).code(0).stdout_has("No changes.");

    // GCP: the project comes from --project; the shoot was built a second time in the other one.
    let sb = Sandbox::new();
    let web = gcp_scenario("A1-managed-default/shoot.yaml");
    sb.run(&["apply", "-f", &web, "--auto-approve"]).code(0);
    let run = sb.run(&["plan", "-f", &web, "--project", "other-project"]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("in project trellis-sim (e.g. projects/trellis-sim/")
            && run.stderr.contains("this plan is for project other-project")
            && run.stderr.contains("plan for project trellis-sim (--project)"),
        "{}",
        run.stderr
    );
    sb.run(&["plan", "-f", &web, "--detailed-exitcode"]).code(0).stdout_has("No changes.");
}
