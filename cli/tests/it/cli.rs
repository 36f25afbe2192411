//! The `trellis` binary as users and scripts run it: exit codes, saved plans, approval, reports,
//! determinism, colour, `state` commands. Each test has its own temp state dir.

use crate::common;

use common::*;
use std::collections::BTreeSet;

const BRAVO: &str = "shoot--dev--bravo";
const ALPHA: &str = "shoot--dev--alpha";

#[test]
fn exit_codes_follow_the_contract() {
    let sb = Sandbox::new();
    let a2 = a2();

    // Changes, without --detailed-exitcode: success.
    sb.run(&["plan", "-f", &a2])
        .code(0)
        .stdout_has("Plan: 7 to create, 0 to update, 0 to replace, 0 to delete, 1 workspace to record.");
    // Changes, with --detailed-exitcode: 2 (also with JSON output).
    sb.run(&["plan", "-f", &a2, "--detailed-exitcode"]).code(2);
    sb.run(&["plan", "-f", &a2, "--detailed-exitcode", "--output", "json"]).code(2);
    // plan wrote no state.
    sb.assert_no_workspaces();

    sb.run(&["apply", "-f", &a2, "--auto-approve"]).code(0).stdout_has(&format!("{BRAVO}: apply complete."));
    // Nothing left to do: 0 even with --detailed-exitcode.
    sb.run(&["plan", "-f", &a2, "--detailed-exitcode"])
        .code(0)
        .stdout_has("No changes. Infrastructure matches the configuration.");

    // Errors are 1, with or without --detailed-exitcode; never 2.
    sb.run(&["plan", "-f", &sb.file("missing.yaml")]).code(1);
    sb.run(&["plan", "-f", &sb.file("missing.yaml"), "--detailed-exitcode"]).code(1);
    sb.run(&["plan", "-f", &data("bad-workers-cidr.yaml"), "--detailed-exitcode"]).code(1);
    sb.run(&["apply", sb.file("missing-plan.json").as_str()]).code(1).stderr_has("missing-plan.json");
}

#[test]
fn saved_plan_is_shown_applied_once_and_then_refused_as_stale() {
    let sb = Sandbox::new();
    let a2 = a2();
    let plan_file = sb.file("bravo.plan.json");

    let planned = sb.run(&["plan", "-f", &a2, "--out", &plan_file]).code(0).stderr_has(&format!(
        "Saved the plan to {plan_file}; apply it with `trellis apply {plan_file} --state {}`.",
        sb.state()
    ));
    let saved = std::fs::read_to_string(&plan_file).expect("plan file written");

    // `show` renders the same text `plan` printed, and `--output json` is the file, byte for byte,
    // which is also what `plan --output json` prints on the same inputs.
    let shown = sb.run_raw(&["show", &plan_file]).code(0);
    assert_eq!(shown.stdout, planned.stdout, "show PLAN renders what plan printed");
    let shown_json = sb.run_raw(&["show", &plan_file, "--output", "json"]).code(0);
    assert_eq!(shown_json.stdout, saved, "show PLAN --output json is the saved JSON");
    let plan_json = sb.run(&["plan", "-f", &a2, "--output", "json"]).code(0);
    assert_eq!(plan_json.stdout, saved, "plan --output json is what plan --out saves");
    let doc = shown_json.json();
    assert_eq!(doc["shoot"], BRAVO);
    assert_eq!(doc["prior"]["serial"], 0);
    sb.run_raw(&["show", &plan_file, "--output", "markdown"]).code(0).stdout_has(&format!("`{BRAVO}`"));
    sb.assert_no_workspaces();

    // apply PLAN executes it, without asking (the plan was reviewed).
    sb.run(&["apply", &plan_file]).code(0).stdout_has(&format!("{BRAVO}: apply complete."));
    assert_eq!(sb.resource_ids(BRAVO), plan_ids(&doc, "create"), "the state records exactly the planned creates");
    sb.run(&["plan", "-f", &a2, "--detailed-exitcode"]).code(0);

    // Applying the same plan again is refused as stale, and changes nothing.
    let before = sb.run(&["state", "list"]).code(0).stdout;
    let again = sb
        .run(&["apply", &plan_file])
        .code(1)
        .stderr_has("stale plan")
        .stderr_has("re-run `trellis plan`")
        // It says why that may be fine: a retried job (s43).
        .stderr_has("; a plan made now has no changes — if this plan was applied already (a retried job), there is nothing left to apply");
    assert!(again.stderr.contains(BRAVO), "the refusal names the shoot: {}", again.stderr);
    assert!(!again.stdout.contains("apply complete"), "{}", again.stdout);
    assert_eq!(sb.run(&["state", "list"]).code(0).stdout, before, "a refused apply changes no state");
}

/// Found replaying a CI job: re-running the apply job of a plan its first run applied (a retry after
/// a runner died at the end) said only `stale plan: … (something was applied since); re-run trellis
/// plan`, which reads as if someone else had changed the shoot. The refusal now adds, when the plan
/// made now has no changes, that a plan applied already leaves nothing to do — and only then.
#[test]
fn regression_a_stale_plan_says_when_a_plan_made_now_has_nothing_left_to_do() {
    let sb = Sandbox::new();
    let a2 = a2();
    let plan_file = sb.file("bravo.plan.json");
    sb.run(&["plan", "-f", &a2, "--out", &plan_file]).code(0);
    // Something else was applied since: the shoot with another NAT idle timeout. The saved plan
    // (timeout 4) would change it back: stale, and no "applied already".
    let other = sb.file("bravo-timeout-9.yaml");
    let text = std::fs::read_to_string(&a2).unwrap();
    assert!(text.contains("idleConnectionTimeoutMinutes: 4"), "the A2 fixture changed");
    std::fs::write(&other, text.replace("idleConnectionTimeoutMinutes: 4", "idleConnectionTimeoutMinutes: 9")).unwrap();
    sb.run(&["apply", "-f", &other, "--auto-approve"]).code(0);
    let changed = sb.run(&["apply", &plan_file]).code(1).stderr_has("stale plan");
    assert!(!changed.stderr.contains("applied already"), "{}", changed.stderr);
    // The saved plan's configuration applied since (as its own apply would have): the hint.
    sb.run(&["apply", "-f", &a2, "--auto-approve"]).code(0);
    let r = sb
        .run(&["apply", &plan_file])
        .code(1)
        .stderr_has("stale plan")
        .stderr_has("if this plan was applied already (a retried job), there is nothing left to apply");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
}

#[test]
fn saved_plan_is_refused_when_the_cloud_changed_since() {
    let sb = Sandbox::new();
    let shoot = scenario("A3-byo-vnet-nat-user-ips/shoot.yaml");
    let world = scenario("A3-byo-vnet-nat-user-ips/world.yaml");
    let changed = scenario("A3-byo-vnet-nat-user-ips/world-ip-changed.yaml");
    let plan_file = sb.file("charlie.plan.json");

    sb.run(&["plan", "-f", &shoot, "--world", &world, "--out", &plan_file]).code(0);
    // Someone changes the user's public IP out of band (the world file re-syncs the simulated cloud).
    sb.run(&["plan", "-f", &shoot, "--world", &changed]).code(0);
    sb.run(&["apply", &plan_file])
        .code(1)
        .stderr_has("shoot--dev--charlie: stale plan: ")
        .stderr_has("the cloud changed since the plan was made")
        .stderr_has("re-run `trellis plan`");
    sb.assert_no_workspaces();
}

/// Reads a plan file, lets `edit` change the plan, and writes it back with a matching summary and
/// digest, as a careful attacker would.
fn tamper(path: &str, edit: impl FnOnce(&mut trellis_plans::Plan)) {
    let mut plan: trellis_plans::Plan = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut plan);
    plan.summary = plan.expected_summary();
    plan.digest = plan.body_digest();
    std::fs::write(path, trellis_plans::PlanSet::new(vec![plan]).to_json()).unwrap();
}

#[test]
fn regression_tampered_plan_file_cannot_delete_a_user_vnet() {
    let sb = Sandbox::new();
    let shoot = scenario("B1-byo-nsg-rt-in-vnet-rg/shoot.yaml");
    let world = scenario("B1-byo-nsg-rt-in-vnet-rg/world.yaml");
    let plan_file = sb.file("b1.plan.json");
    let vnet = "azure.virtual_network.hub-network.hub-vnet";
    sb.run(&["plan", "-f", &shoot, "--world", &world, "--out", &plan_file]).code(0);
    tamper(&plan_file, |plan| {
        let node = plan.nodes.iter_mut().find(|n| n.address == vnet).expect("the user's VNet is in the plan");
        node.op =
            trellis_plans::Operation::Delete { ownership: trellis_plans::DeleteOwnership::Managed, changes: vec![] };
    });
    let refused = sb
        .run(&["apply", &plan_file])
        .code(1)
        .stderr_has(&format!("stale plan: node {vnet}: the action is `delete` in the plan file, `verify` now"));
    assert!(!refused.stdout.contains("apply complete"), "{}", refused.stdout);
    // The VNet is still there: a fresh plan verifies it as before.
    let doc = sb.run(&["plan", "-f", &shoot, "--output", "json"]).code(0).json();
    let node = doc["nodes"].as_array().unwrap().iter().find(|n| n["address"] == vnet).unwrap().clone();
    assert_eq!(node["action"], "verify", "{node}");
    sb.assert_no_workspaces();
}

#[test]
fn regression_apply_digest_pins_the_approved_plan() {
    let sb = Sandbox::new();
    let plan_file = sb.file("alpha.plan.json");
    let doc = sb.run(&["plan", "-f", &a1(), "--out", &plan_file, "--output", "json"]).code(0).json();
    let digest = doc["digest"].as_str().unwrap().to_string();
    sb.run_raw(&["show", &plan_file]).code(0).stdout_has(&format!("Digest: {digest}"));
    sb.run(&["plan", "-f", &a1()]).code(0).stdout_has(&format!("Digest: {digest}"));
    sb.run(&["apply", &plan_file, "--expect-digest", "abc"])
        .code(1)
        .stderr_has("expected the 64 hex digits of a plan digest");
    let other = "0".repeat(64);
    sb.run(&["apply", &plan_file, "--expect-digest", &other])
        .code(1)
        .stderr_has(&format!("{ALPHA}: its plan digest {digest} is not one of the approved --expect-digest values"));
    // `--digest`, the flag's older name, pins the same way.
    sb.run(&["apply", &plan_file, "--digest", &other]).code(1).stderr_has("is not one of the approved");
    sb.assert_no_workspaces();
    sb.run(&["apply", &plan_file, "--expect-digest", &digest.to_uppercase()]).code(0).stdout_has("apply complete.");
}

#[test]
fn diff_of_plans_before_and_after_a_config_change_shows_the_change() {
    let sb = Sandbox::new();
    let before = sb.file("before.json");
    let after = sb.file("after.json");
    sb.run(&["apply", "-f", &a1(), "--auto-approve"]).code(0);

    sb.run(&["plan", "-f", &a1(), "--out", &before]).code(0).stdout_has("No changes.");
    sb.run(&["plan", "-f", &data("alpha-with-nat.yaml"), "--out", &after])
        .code(0)
        .stdout_has("Plan: 2 to create, 1 to update, 0 to replace, 0 to delete, 1 workspace to record.");

    let d = sb.run_raw(&["diff", &before, &after]).code(2);
    for expected in [
        "Plan diff: 1 shoot changed, 0 added, 0 removed.",
        &format!("~ shoot {ALPHA}"),
        &format!("+ azure.nat_gateway.{ALPHA}.{ALPHA}-nat-gateway (create, managed)"),
        &format!("+ azure.public_ip_address.{ALPHA}.{ALPHA}-nat-gateway-ip (create, managed)"),
        &format!("~ azure.subnet.{ALPHA}.{ALPHA}/{ALPHA}-nodes"),
        "action: noop -> update",
        "change /properties/natGateway/id:",
        "-    \"outboundAccessType\": \"LoadBalancer\"",
        "+    \"outboundAccessType\": \"NATGateway\"",
    ] {
        assert!(d.stdout.contains(expected), "diff lacks {expected:?}:\n{}", d.stdout);
    }
    // Markdown for pull requests carries the same change.
    sb.run_raw(&["diff", &before, &after, "--output", "markdown"])
        .code(2)
        .stdout_has(&format!("- added node `azure.nat_gateway.{ALPHA}.{ALPHA}-nat-gateway` (create, managed)"));
    // A plan against itself: no differences.
    sb.run_raw(&["diff", &after, &after]).code(0).stdout_has("No semantic differences between the plans.");
}

#[test]
fn apply_and_destroy_without_auto_approve_are_refused_when_not_interactive() {
    let sb = Sandbox::new();
    let a2 = a2();
    let planned = sb.run(&["plan", "-f", &a2, "--output", "json"]).code(0).stdout;

    // stdin is /dev/null: not a terminal.
    let refused = sb.run(&["apply", "-f", &a2]).code(1).stderr_has("--auto-approve");
    assert!(!refused.stdout.contains("apply complete"), "{}", refused.stdout);
    sb.assert_no_workspaces();
    // The cloud is unchanged: the same plan as before (everything still to create).
    assert_eq!(sb.run(&["plan", "-f", &a2, "--output", "json"]).code(0).stdout, planned);

    // destroy likewise: after a real apply, a refused destroy deletes nothing.
    sb.run(&["apply", "-f", &a2, "--auto-approve"]).code(0);
    let state = sb.workspace(BRAVO);
    sb.run(&["destroy", "-f", &a2]).code(1).stderr_has("--auto-approve");
    assert_eq!(sb.workspace(BRAVO), state, "a refused destroy changes no state");
    sb.run(&["plan", "-f", &a2, "--detailed-exitcode"]).code(0);
}

#[test]
fn apply_json_report_lists_every_cloud_call_and_writes_exactly_the_created_resources() {
    let sb = Sandbox::new();
    let a2 = a2();
    let plan = sb.run(&["plan", "-f", &a2, "--output", "json"]).code(0).json();
    let to_create = plan_ids(&plan, "create");
    assert_eq!(to_create.len(), 7);

    let applied = sb.run(&["apply", "-f", &a2, "--auto-approve", "--output", "json"]).code(0);
    assert_eq!(applied.stderr, "", "--output json prints no progress");
    let report = applied.json();
    assert_eq!(report["operation"], "apply");
    assert_eq!(report["ok"], true);
    let all_calls = calls(&report);
    assert!(!all_calls.is_empty());
    for (i, c) in all_calls.iter().enumerate() {
        let op = c["op"].as_str().expect("op");
        let method = c["method"].as_str().expect("method");
        let target = c["target"].as_str().expect("target");
        assert!(target.starts_with("/subscriptions/"), "call {i} target is a resource id: {c}");
        match op {
            "read" => assert!(matches!(method, "GET" | "LIST"), "call {i}: {c}"),
            "write" => {
                assert!(matches!(method, "PUT" | "PATCH" | "POST" | "DELETE"), "call {i}: {c}");
                // Invariant: each resource is re-read right before it is written.
                assert!(
                    all_calls[..i].iter().any(|p| p["op"] == "read" && p["target"] == target),
                    "write {c} has no read of its target before it"
                );
            }
            other => panic!("call {i}: op {other:?} is neither read nor write"),
        }
    }
    let apply_writes = writes(&report);
    assert!(apply_writes.iter().all(|(m, _)| m == "PUT"), "an apply of new resources only creates: {apply_writes:?}");
    let written: Vec<String> = apply_writes.into_iter().map(|(_, t)| t).collect();
    let written_set: BTreeSet<String> = written.iter().cloned().collect();
    assert_eq!(written.len(), written_set.len(), "each resource is written once: {written:?}");
    assert_eq!(written_set, to_create, "the writes are exactly the planned creates");
    assert_eq!(sb.resource_ids(BRAVO), to_create, "the state records the created resources");

    let shoots = report["shoots"].as_array().expect("shoots[]");
    assert_eq!(shoots.len(), 1);
    assert_eq!(shoots[0]["shoot"], BRAVO);
    assert_eq!(shoots[0]["ok"], true);
    assert_eq!(shoots[0]["calls"], report["calls"], "one shoot: its calls are all the calls");
    let nodes = shoots[0]["nodes"].as_array().expect("nodes[]");
    assert_eq!(nodes.len(), 7);
    assert!(nodes.iter().all(|n| n["action"] == "create" && n["status"] == "done"), "{nodes:?}");

    // destroy: the upstream delete graph deletes the resource group, and nothing else is written.
    let destroyed = sb.run(&["destroy", "-f", &a2, "--auto-approve", "--output", "json"]).code(0);
    let report = destroyed.json();
    assert_eq!(report["operation"], "destroy");
    assert_eq!(report["ok"], true);
    let rg = format!("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{BRAVO}");
    assert!(to_create.contains(&rg), "the resource group was created: {to_create:?}");
    assert_eq!(writes(&report), vec![("DELETE".to_string(), rg)]);
    assert!(calls(&report).iter().all(|c| matches!(c["op"].as_str(), Some("read" | "write"))));
    assert!(sb.resource_ids(BRAVO).is_empty(), "the state forgets the destroyed resources");
    // Everything is gone from the cloud: the next plan creates it all again.
    let replan = sb.run(&["plan", "-f", &a2, "--output", "json", "--detailed-exitcode"]).code(2).json();
    assert_eq!(plan_ids(&replan, "create"), to_create);
}

#[test]
fn plan_json_is_byte_identical_across_fresh_state_dirs() {
    let byo = scenario("A3-byo-vnet-nat-user-ips/shoot.yaml");
    let world = scenario("A3-byo-vnet-nat-user-ips/world.yaml");
    let (a2, a4) = (a2(), scenario("A4-multi-zone/shoot.yaml"));
    let cases: [Vec<&str>; 3] = [
        vec!["plan", "-f", &a2, "--output", "json"],
        vec!["plan", "-f", &byo, "--world", &world, "--output", "json"],
        vec!["plan", "-f", &a4, "-f", &a2, "--output", "json"],
    ];
    for args in cases {
        let first = Sandbox::new().run(&args).code(0);
        let second = Sandbox::new().run(&args).code(0);
        assert!(first.stdout.starts_with('{'), "{}", first.stdout);
        assert!(first.stdout == second.stdout, "`{}` differs between two fresh state dirs", first.cmd);
    }
}

#[test]
fn output_has_no_colour_when_piped_or_with_no_color() {
    let sb = Sandbox::new();
    let a2 = a2();
    let plan_file = sb.file("p.json");
    let many = data("many-mistakes.yaml");
    let state = sb.state();
    for no_color in [None, Some("1")] {
        for (args, code) in [
            (vec!["plan", "-f", &a2, "--state", state], 0),
            (vec!["plan", "-f", &a2, "--state", state, "--out", &plan_file, "--output", "markdown"], 0),
            (vec!["show", &plan_file], 0),
            (vec!["diff", &plan_file, &plan_file], 0),
            (vec!["validate", "-f", &a2], 0),
            (vec!["validate", "-f", &many], 1),
            (vec!["plan", "-f", &many, "--state", state], 1),
        ] {
            let mut cmd = sb.raw_command(&args);
            if let Some(v) = no_color {
                cmd.env("NO_COLOR", v);
            }
            let r = finish(&mut cmd).code(code);
            assert!(
                !has_ansi(&r.stdout) && !has_ansi(&r.stderr),
                "ANSI escapes in `{}` (NO_COLOR={no_color:?}): {r:?}",
                r.cmd
            );
        }
    }
    // apply's progress on a non-terminal stderr: plain lines, one per finished node.
    let applied = sb.run(&["apply", "-f", &a2, "--auto-approve"]).code(0);
    assert!(!has_ansi(&applied.stdout) && !has_ansi(&applied.stderr), "{applied:?}");
    let created = applied.stderr_lines().into_iter().filter(|l| l.ends_with(": created")).count();
    assert_eq!(created, 7, "one progress line per created resource:\n{}", applied.stderr);
}

/// On a terminal the plan is coloured, and `NO_COLOR=1` turns that off. Needs util-linux `script` for
/// a pseudo-terminal; skipped without it.
#[test]
fn no_color_turns_colour_off_on_a_terminal() {
    if !std::process::Command::new("script").arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: util-linux `script` is not installed (needed for a pseudo-terminal)");
        return;
    }
    let sb = Sandbox::new();
    let quote = |s: &str| {
        assert!(!s.contains('\''), "{s}");
        format!("'{s}'")
    };
    let inner = [BIN, "plan", "-f", &a2(), "--state", sb.state()].map(quote).join(" ");
    let on_tty = |no_color: Option<&str>| {
        let mut cmd = std::process::Command::new("script");
        cmd.args(["-qec", &inner, "/dev/null"]).current_dir(sb.path()).stdin(std::process::Stdio::null());
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        finish(&mut cmd).code(0)
    };
    let coloured = on_tty(None);
    assert!(coloured.stdout.contains("Plan: 7 to create"), "{coloured:?}");
    assert!(has_ansi(&coloured.stdout), "a terminal gets colour: {coloured:?}");
    let plain = on_tty(Some("1"));
    assert!(plain.stdout.contains("Plan: 7 to create"), "{plain:?}");
    assert!(!has_ansi(&plain.stdout), "NO_COLOR=1 turns colour off: {plain:?}");
}

#[test]
fn state_list_show_and_unlock() {
    let sb = Sandbox::new();
    sb.assert_no_workspaces();

    sb.run(&["apply", "-f", &a1(), "--auto-approve"]).code(0);
    let list = sb.run(&["state", "list"]).code(0);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", list.stdout);
    assert!(lines[0].starts_with(&format!("{ALPHA}  serial ")), "{}", lines[0]);
    assert!(lines[0].contains("  5 resource(s)  lineage "), "{}", lines[0]);
    assert!(!lines[0].contains("locked"), "no lock after a finished apply: {}", lines[0]);

    let ws = sb.workspace(ALPHA);
    assert_eq!(ws["shoot"], ALPHA);
    assert!(lines[0].contains(ws["lineage"].as_str().expect("lineage")), "list and show agree on the lineage");
    assert!(lines[0].contains(&format!("serial {}  ", ws["serial"])), "list and show agree on the serial");
    let resources = ws["resources"].as_object().expect("resources");
    assert_eq!(resources.len(), 5);
    assert!(resources.keys().all(|a| a.starts_with("azure.") && a.contains(ALPHA)), "{resources:?}");
    assert!(resources.values().all(|r| r["ownership"] == "managed"));
    assert_eq!(
        ws["provider_state"]["data"]["last_applied"]["infrastructureConfig"]["networks"]["workers"],
        "10.250.0.0/19"
    );

    // Unknown shoot: exit 1 and a hint where to look.
    sb.run(&["state", "show", "shoot--dev--nope"])
        .code(1)
        .stderr_has("no workspace for shoot--dev--nope")
        .stderr_has("`trellis state list`");

    // Unlocking a shoot nobody holds says so and changes nothing.
    sb.run(&["state", "unlock", ALPHA]).code(0).stdout_has(&format!("{ALPHA} was not locked."));
    assert_eq!(sb.workspace(ALPHA), ws);
}

#[test]
fn cloud_azure_without_its_settings_is_a_clear_error() {
    // The ARM client itself is tested against the served simulator in providers/azure-client.
    let sb = Sandbox::new();
    let run = |args: &[&str]| {
        let mut cmd = sb.command(args);
        for (name, _) in std::env::vars() {
            if name.starts_with("AZURE_") || name.starts_with("IDENTITY_") || name.starts_with("MSI_") {
                cmd.env_remove(name);
            }
        }
        finish(&mut cmd)
    };
    let sub = "00000000-0000-0000-0000-000000000001";
    let world = sb.file("world.yaml");
    std::fs::write(&world, "azure:\n  resources: []\n").unwrap();
    for (args, says) in [
        (vec!["plan", "-f", &a1(), "--cloud", "azure"], "--cloud azure needs a subscription"),
        (
            vec!["apply", "-f", &a1(), "--auto-approve", "--cloud", "azure"],
            "--subscription ID or set AZURE_SUBSCRIPTION_ID",
        ),
        (
            vec!["plan", "-f", &a1(), "--cloud", "azure", "--subscription", sub],
            "--cloud azure cannot sign in: no Azure credentials in the environment: set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET",
        ),
        (
            vec!["plan", "-f", &a1(), "--cloud", "azure", "--subscription", sub, "--world", &world],
            "with --cloud azure a world file may hold only what stays simulated (`seeds:`), but it holds `azure:`, which --cloud azure reads from the cloud itself; remove that section or plan with --cloud sim",
        ),
        // Not a GUID: refused before any call (ARM would answer 404 for a subscription name).
        (
            vec!["plan", "-f", &a1(), "--cloud", "azure", "--subscription", "my-subscription"],
            "--subscription 'my-subscription' is not a subscription id: expected its GUID",
        ),
        (
            vec!["plan", "-f", &a1(), "--cloud", "azure", "--subscription", "00000000000000000000000000000001"],
            "is not a subscription id",
        ),
        (
            vec!["plan", "-f", &a1(), "--cloud", "azure", "--subscription", "sub\u{1b}[2J"],
            "--subscription 'sub\\x1b[2J' is not a subscription id",
        ),
    ] {
        let r = run(&args).code(1).stderr_has(says);
        assert_eq!(r.stderr_lines().len(), 1, "one line: {}", r.stderr);
        assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
    }
    assert!(!std::path::Path::new(sb.state()).exists(), "no state dir is created when the cloud cannot be set up");
}

/// Found probing the flags: `--subscription X` with the simulated cloud (the default) was silently
/// ignored — the plan was made in the simulated subscription, which the user never sees in the
/// text output — where `--endpoint` with `--cloud sim` is refused. A flag that configures a real
/// client only is now refused on the command line with `--cloud sim`, naming the `--cloud` it needs;
/// its environment variable is still left alone (a CI job's environment serves both), and
/// `--project`, which names the simulated project, still works.
#[test]
fn regression_a_real_client_flag_with_the_simulated_cloud_is_refused_not_ignored() {
    let sb = Sandbox::new();
    let sub = "11111111-1111-1111-1111-111111111111";
    for (args, says) in [
        (
            vec!["plan", "-f", &a1(), "--subscription", sub],
            "error: --subscription needs --cloud azure: it configures the real client, and the simulated cloud (--cloud sim, the default) does not use it (a world file names the simulated accounts); drop --subscription, or add --cloud azure",
        ),
        (vec!["apply", "-f", &a1(), "--auto-approve", "--cloud", "sim", "--subscription", sub], "drop --subscription,"),
        (
            vec!["plan", "-f", &a1(), "--dns-project", "acme-dns", "--subscription", sub],
            "drop --subscription and --dns-project, or add --cloud azure",
        ),
        (vec!["destroy", "-f", &a1(), "--auto-approve", "--dns-project", "acme-dns"], "--dns-project needs --cloud azure or --cloud gcp"),
    ] {
        let r = sb.run(&args).code(1).stderr_has(says);
        assert_eq!(r.stderr_lines().len(), 1, "one line: {}", r.stderr);
    }
    assert!(!std::path::Path::new(sb.state()).exists(), "refused before the state is opened");
    // From the environment: left alone, the plan is the simulated cloud's.
    let mut cmd = sb.command(&["plan", "-f", &a1()]);
    cmd.env("AZURE_SUBSCRIPTION_ID", sub);
    finish(&mut cmd).code(0).stdout_has("5 to create");
    // `--project` names the simulated project.
    let gcp = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gcp/managed/shoot.yaml");
    sb.run(&["plan", "-f", gcp.to_str().expect("UTF-8 path"), "--project", "acme-dev", "--output", "json"])
        .code(0)
        .stdout_has("projects/acme-dev/");
}

/// `v` with `payload` appended to every string but the enum fields of a plan.
fn append_everywhere(v: &mut serde_json::Value, payload: &str) {
    match v {
        serde_json::Value::String(s) => s.push_str(payload),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| append_everywhere(i, payload)),
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let fixed = [
                    "format_version",
                    "action",
                    "ownership",
                    "reason_code",
                    "kind",
                    "provider",
                    "mode",
                    "format",
                    "source",
                    "record",
                ];
                if !fixed.contains(&k.as_str()) {
                    append_everywhere(v, payload);
                }
            }
        }
        _ => {}
    }
}

/// Control characters a terminal would act on (a line break is the renderer's own).
fn raw_controls(s: &str) -> Vec<char> {
    s.chars().filter(|&c| c != '\n' && (c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c))).collect()
}

#[test]
fn regression_show_and_diff_escape_hostile_plan_files() {
    let sb = Sandbox::new();
    let plan = sb.file("plan.json");
    sb.run(&["plan", "-f", &a2(), "--out", &plan]).code(0);
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let payload = "BEGIN\u{1b}]0;owned\u{7}\u{1b}[2J\r\u{202e}` | </code></summary></details><details open><summary>x</summary>\n| a | b |\n<img src=x>END";
    // A plan file of one shoot is that shoot's plan.
    append_everywhere(&mut doc, payload);
    doc["warnings"] = serde_json::json!([payload]);
    // The body changed: give it its digest, or the file does not read back at all.
    let edited: trellis_plans::Plan = serde_json::from_value(doc.clone()).unwrap();
    doc["digest"] = serde_json::json!(edited.body_digest());
    let hostile = sb.file("hostile.json");
    std::fs::write(&hostile, serde_json::to_string(&doc).unwrap()).unwrap();

    let text = sb.run_raw(&["show", &hostile]).code(0);
    assert_eq!(raw_controls(&text.stdout), Vec::<char>::new(), "{}", text.stdout);
    assert!(
        text.stdout.contains("Shoot: shoot--dev--bravoBEGIN\\x1b]0;owned\\x07\\x1b[2J\\r\\u{202e}`"),
        "{}",
        text.stdout
    );
    // As GitHub reads the comment: the only HTML is the renderer's own collapsed section.
    let md = sb.run_raw(&["show", &hostile, "--output", "markdown"]).code(0).stdout;
    assert_eq!(raw_controls(&md), Vec::<char>::new(), "{md}");
    assert_eq!(html_tags(&md), ["<details>", "<summary>", "<code>", "</code>", "</summary>", "</details>"], "{md}");

    let out = sb.run_raw(&["diff", &plan, &hostile]).code(2).stdout;
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out}");
    assert!(out.contains("+ shoot shoot--dev--bravoBEGIN\\x1b]0;owned"), "{out}");
    let md = sb.run_raw(&["diff", &plan, &hostile, "--output", "markdown"]).code(2).stdout;
    assert_eq!(raw_controls(&md), Vec::<char>::new(), "{md}");
    assert_eq!(html_tags(&md), Vec::<String>::new(), "{md}");
}

/// The HTML tags a CommonMark + GFM-tables reader finds in `md`, in order (text and code spans
/// that merely show `<tags>` are not HTML).
fn html_tags(md: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Options, Parser};
    let mut tags = Vec::new();
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        if let Event::Html(html) | Event::InlineHtml(html) = event {
            let mut rest = html.as_ref();
            while let Some(i) = rest.find('<') {
                let end = rest[i..].find('>').map_or(rest.len(), |e| i + e + 1);
                tags.push(rest[i..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    tags
}
