//! `--target SHOOT|ADDRESS` (plan, apply, destroy) and `--replace ADDRESS` (plan, apply), as
//! Terraform's `-target` and `-replace`: a shoot target keeps that shoot of a fleet whole, an address
//! keeps its node and what it depends on (a destroy: what must be deleted before it), and the plan
//! says it is partial — in its warnings, its `targets` field and its digest; `--replace` plans a
//! managed resource's replacement, which apply carries out as a ForceNew replace.

use crate::common;

use common::*;
use serde_json::Value;
use std::collections::BTreeSet;

const PIP: &str = "azure.public_ip_address.shoot--dev--bravo.shoot--dev--bravo-nat-gateway-ip";
const RG: &str = "azure.resource_group.shoot--dev--bravo.shoot--dev--bravo";
const NAT: &str = "azure.nat_gateway.shoot--dev--bravo.shoot--dev--bravo-nat-gateway";
const ROUTE_TABLE: &str = "azure.route_table.shoot--dev--bravo.worker_route_table";
const BRAVO_RG_ID: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/shoot--dev--bravo";

fn addresses(plan: &Value) -> BTreeSet<String> {
    plan["nodes"].as_array().unwrap().iter().map(|n| n["address"].as_str().unwrap().to_string()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn shoots_of(report: &Value) -> Vec<String> {
    report["shoots"].as_array().unwrap().iter().map(|s| s["shoot"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_shoot_target_plans_and_applies_only_that_shoot_of_the_fleet() {
    let sb = Sandbox::new();
    let (a1, a2) = (a1(), a2());
    // By technical id: one whole plan (not partial), the other shoot left out and said so.
    let run = sb
        .run(&["plan", "-f", &a1, "-f", &a2, "--target", "shoot--dev--alpha", "--output", "json"])
        .code(0)
        .stderr_has("note: --target leaves out 1 plan(s) of the inputs: they are neither planned nor applied");
    let plan = run.json();
    assert_eq!(plan["shoot"], "shoot--dev--alpha");
    assert!(plan.get("targets").is_none(), "a targeted shoot is planned whole: {plan}");
    assert_eq!(plan["summary"]["create"], 5);
    // By the Shoot's name, as the manifest has it.
    let plan = sb.run(&["plan", "-f", &a1, "-f", &a2, "--target", "bravo", "--output", "json"]).code(0).json();
    assert_eq!(plan["shoot"], "shoot--dev--bravo");
    // apply -f applies only the targeted shoot.
    let report = sb
        .run(&["apply", "-f", &a1, "-f", &a2, "--target", "shoot--dev--bravo", "--auto-approve", "--output", "json"])
        .code(0)
        .json();
    assert_eq!(shoots_of(&report), ["shoot--dev--bravo"]);
    assert_eq!(sb.workspaces(), ["shoot--dev--bravo"], "the other shoot was neither applied nor recorded");
    assert!(!sb.workspace("shoot--dev--bravo")["outputs"].is_null(), "a whole shoot's apply records its artifacts");
}

/// With `--shard`, a target another shard plans is no error: this shard plans none of it.
#[test]
fn a_target_in_another_shard_plans_nothing_here() {
    let sb = Sandbox::new();
    let fleet = format!("{}/../examples/fleet", env!("CARGO_MANIFEST_DIR"));
    let world = format!("{}/../examples/fleet-world.yaml", env!("CARGO_MANIFEST_DIR"));
    // shoot--shop--dev is in shard 2 of 3 (see shard.rs).
    let plan = sb
        .run(&[
            "plan",
            "-f",
            &fleet,
            "--world",
            &world,
            "--shard",
            "2/3",
            "--target",
            "shoot--shop--dev",
            "--output",
            "json",
        ])
        .code(0)
        .json();
    assert_eq!(plan["shoot"], "shoot--shop--dev");
    let run = sb
        .run(&[
            "plan",
            "-f",
            &fleet,
            "--world",
            &world,
            "--shard",
            "3/3",
            "--target",
            "shoot--shop--dev",
            "--output",
            "json",
        ])
        .code(0);
    assert_eq!(run.json()["plans"], serde_json::json!([]), "shard 3 plans none of it");
    // A shoot that is in no shard is still unknown.
    sb.run(&["plan", "-f", &fleet, "--world", &world, "--shard", "3/3", "--target", "shoot--shop--nope"])
        .code(1)
        .stderr_has("error: --target shoot--shop--nope: no shoot of the inputs has this technical id or name");
}

#[test]
fn an_address_target_brings_its_dependencies_and_the_plan_says_it_is_partial() {
    let sb = Sandbox::new();
    let (a1, a2) = (a1(), a2());
    let whole = sb.run(&["plan", "-f", &a2, "--output", "json"]).code(0).json();
    assert_eq!(whole["nodes"].as_array().unwrap().len(), 7);

    // The public IP depends on the resource group only; the other shoot has no node at that address.
    let run = sb
        .run(&["plan", "-f", &a1, "-f", &a2, "--target", PIP, "--output", "json"])
        .code(0)
        .stderr_has("note: --target leaves out 1 plan(s)");
    let partial = run.json();
    assert_eq!(partial["shoot"], "shoot--dev--bravo");
    assert_eq!(addresses(&partial), set(&[PIP, RG]));
    assert_eq!(partial["targets"], serde_json::json!([PIP]));
    assert_eq!(partial["summary"]["create"], 2);
    assert!(partial["summary"].get("record").is_none(), "a partial plan records no workspace: {partial}");
    let warnings = partial["warnings"].to_string();
    assert!(warnings.contains("resource targeting is in effect (--target"), "{warnings}");
    assert!(warnings.contains("may not represent every change"), "{warnings}");
    assert_ne!(partial["digest"], whole["digest"]);

    // The worker subnet depends on everything else of the shoot: its target is the whole node set,
    // and still a partial plan, whose digest is not the whole plan's (the targets are part of it).
    let subnet = "azure.subnet.shoot--dev--bravo.shoot--dev--bravo/shoot--dev--bravo-nodes";
    let all = sb.run(&["plan", "-f", &a2, "--target", subnet, "--output", "json"]).code(0).json();
    assert_eq!(addresses(&all), addresses(&whole));
    assert_eq!(all["nodes"], whole["nodes"]);
    assert_ne!(all["digest"], whole["digest"], "a partial plan's digest is never the whole plan's");

    // Text and markdown say it too; Terraform's JSON calls the plan incomplete.
    sb.run(&["plan", "-f", &a2, "--target", PIP])
        .code(0)
        .stdout_has(&format!("Partial plan: --target {PIP} and what it depends on."))
        .stdout_has("Warning: resource targeting is in effect");
    sb.run(&["plan", "-f", &a2, "--target", PIP, "--output", "markdown"])
        .code(0)
        .stdout_has(&format!("**Partial plan:** --target `{PIP}` and what it depends on."));
    let file = sb.file("partial.json");
    sb.run(&["plan", "-f", &a2, "--target", PIP, "--out", &file]).code(0);
    let tf = sb.run_raw(&["show", &file, "--output", "terraform-json"]).code(0).json();
    assert_eq!(tf["complete"], false);

    // Applying it records the targeted resources only, and says the apply may be incomplete.
    sb.run(&["apply", "-f", &a2, "--target", PIP, "--auto-approve"])
        .code(0)
        .stdout_has("Warning: shoot--dev--bravo: applied changes may be incomplete");
    let ws = sb.workspace("shoot--dev--bravo");
    let recorded: BTreeSet<String> = ws["resources"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(recorded, set(&[PIP, RG]));
    assert!(ws["outputs"].is_null(), "a partial apply records no artifacts: {ws}");
    // The whole plan then has the rest to do, and the workspace's record.
    let rest = sb.run(&["plan", "-f", &a2, "--output", "json"]).code(0).json();
    assert_eq!(rest["summary"]["create"], 5);
    assert_eq!(rest["summary"]["noop"], 2);
    assert_eq!(rest["summary"]["record"], 1);
}

#[test]
fn a_saved_partial_plan_applies_as_made_and_cannot_pass_for_a_whole_plan() {
    let sb = Sandbox::new();
    let a2 = a2();
    let file = sb.file("partial.json");
    sb.run(&["plan", "-f", &a2, "--target", PIP, "--out", &file]).code(0);
    // Targets dropped from the file: the digest no longer matches.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc.as_object_mut().unwrap().remove("targets");
    let edited = sb.file("edited.json");
    std::fs::write(&edited, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    sb.run(&["apply", &edited]).code(1).stderr_has("do not match its digest");
    // A saved plan is applied as it was made: no --target or --replace beside it.
    let run = sb.run(&["apply", &file, "--target", "shoot--dev--bravo"]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    run.stderr_has("a saved plan is applied as it was made");
    sb.assert_no_workspaces();
    // As made: the two targeted writes.
    let report = sb.run(&["apply", &file, "--output", "json"]).code(0).json();
    let written: Vec<String> = writes(&report).into_iter().map(|(_, target)| target).collect();
    assert_eq!(written.len(), 2, "{written:?}");
    assert!(written.iter().all(|t| t.starts_with(BRAVO_RG_ID)), "{written:?}");
    assert!(written.iter().any(|t| t.ends_with("/publicIPAddresses/shoot--dev--bravo-nat-gateway-ip")));
}

#[test]
fn a_destroy_target_deletes_it_and_what_must_go_before_it_only() {
    let sb = Sandbox::new();
    let shoot = scenario("I7-9-managed-subnet-in-user-vnet/shoot.yaml");
    let world = scenario("I7-9-managed-subnet-in-user-vnet/world.yaml");
    sb.run(&["apply", "-f", &shoot, "--world", &world, "--auto-approve"]).code(0);
    let rg = "azure.resource_group.shoot--platform--vnet-ok.shoot--platform--vnet-ok";
    let subnet = "azure.subnet.rg1.test-vnet/shoot--platform--vnet-ok-nodes";
    // The resource group goes after the shoot's subnet in the user's VNet: targeting it brings the subnet.
    let plan = sb
        .run(&["plan", "--destroy", "-f", &shoot, "--world", &world, "--target", rg, "--output", "json"])
        .code(0)
        .json();
    assert_eq!(addresses(&plan), set(&[rg, subnet]));
    assert_eq!(plan["destroy"], true);
    assert!(plan["warnings"].to_string().contains("and what must be deleted before it"), "{}", plan["warnings"]);
    // The subnet alone: only it is deleted, and only its record forgotten.
    let report = sb
        .run(&["destroy", "-f", &shoot, "--world", &world, "--target", subnet, "--auto-approve", "--output", "json"])
        .code(0)
        .json();
    let written = writes(&report);
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(written[0].0, "DELETE");
    assert!(written[0].1.ends_with("/subnets/shoot--platform--vnet-ok-nodes"), "{written:?}");
    let ws = sb.workspace("shoot--platform--vnet-ok");
    let recorded: BTreeSet<String> = ws["resources"].as_object().unwrap().keys().cloned().collect();
    assert!(recorded.contains(rg) && !recorded.contains(subnet), "{recorded:?}");
    assert!(!ws["outputs"].is_null(), "a partial destroy leaves the workspace's record: {ws}");
}

#[test]
fn replace_plans_a_replace_of_a_managed_resource_and_apply_carries_it_out() {
    let sb = Sandbox::new();
    let a2 = a2();
    sb.run(&["apply", "-f", &a2, "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &a2, "--detailed-exitcode"]).code(0);
    // In sync, yet replaced on request: the NAT gateway's reference detached and re-attached, as for
    // a ForceNew difference.
    let plan = sb.run(&["plan", "-f", &a2, "--replace", PIP, "--output", "json"]).code(0).json();
    let nodes = plan["nodes"].as_array().unwrap();
    let pip = nodes.iter().find(|n| n["address"] == PIP).unwrap();
    assert_eq!(pip["action"], "replace");
    assert_eq!(pip["reason_code"], "replace-requested");
    assert!(pip["reason"].as_str().unwrap().contains("replace requested by --replace"), "{pip}");
    assert_eq!(pip["detach"][0]["path"], "/properties/publicIpAddresses");
    assert!(nodes.iter().filter(|n| n["address"] != PIP).all(|n| n["action"] == "noop"), "{plan}");
    // Targeted, the replace brings the NAT gateway whose reference it detaches (and what that needs).
    let both = sb.run(&["plan", "-f", &a2, "--replace", PIP, "--target", PIP, "--output", "json"]).code(0).json();
    assert_eq!(addresses(&both), set(&[PIP, RG, NAT]));
    let file = sb.file("replace.json");
    sb.run(&["plan", "-f", &a2, "--replace", PIP, "--out", &file]).code(0);
    let tf = sb.run_raw(&["show", &file, "--output", "terraform-json"]).code(0).json();
    let change = tf["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["change"]["actions"].to_string().contains("delete"))
        .unwrap();
    assert_eq!(change["action_reason"], "replace_by_request");

    // apply -f --replace: detach from the NAT gateway, delete, create, re-attach.
    let report = sb.run(&["apply", "-f", &a2, "--replace", PIP, "--auto-approve", "--output", "json"]).code(0).json();
    let written: Vec<(String, String)> = writes(&report);
    let kinds: Vec<(&str, &str)> =
        written.iter().map(|(m, t)| (m.as_str(), t.rsplit('/').nth(1).unwrap_or_default())).collect();
    assert_eq!(
        kinds,
        [("PUT", "natGateways"), ("DELETE", "publicIPAddresses"), ("PUT", "publicIPAddresses"), ("PUT", "natGateways")],
        "{written:?}"
    );
    // Converged: nothing left to do, the NAT gateway references the new address.
    sb.run(&["plan", "-f", &a2, "--detailed-exitcode"]).code(0);
    let after = sb.run(&["plan", "-f", &a2, "--verbose", "--output", "json"]).code(0).json();
    let nat = after["nodes"].as_array().unwrap().iter().find(|n| n["address"] == NAT).unwrap();
    assert!(nat["observed"]["properties"]["publicIpAddresses"].to_string().contains("nat-gateway-ip"), "{nat}");
}

#[test]
fn unknown_targets_and_refused_replacements_are_one_line_errors_and_gcp_replaces_a_firewall() {
    let sb = Sandbox::new();
    let (a1, a2) = (a1(), a2());
    let one_line = |run: Run, needle: &str| {
        let run = run.code(1).stderr_has(needle);
        // (A world file's sync note comes before.)
        let lines = run.stderr_lines().into_iter().filter(|l| !l.starts_with("world: ")).count();
        assert_eq!(lines, 1, "one line:\n{}", run.stderr);
    };
    // An unknown shoot lists the shoots; an unknown address says where the addresses are.
    one_line(
        sb.run(&["plan", "-f", &a1, "-f", &a2, "--target", "shoot--dev--nope"]),
        "error: --target shoot--dev--nope: no shoot of the inputs has this technical id or name; the shoots are: shoot--dev--alpha, shoot--dev--bravo",
    );
    one_line(
        sb.run(&["destroy", "-f", &a1, "--target", "azure.nope.x", "--auto-approve"]),
        "error: --target azure.nope.x: no plan of the inputs has a node at this address; `trellis plan` (without --target) prints every node's address",
    );
    one_line(
        sb.run(&["plan", "-f", &a2, "--replace", "azure.nope.x"]),
        "error: --replace azure.nope.x: no plan of the inputs has a node at this address",
    );
    // Nothing to replace yet.
    one_line(
        sb.run(&["plan", "-f", &a2, "--replace", PIP]),
        "does not exist: the plan creates it, there is nothing to replace",
    );
    one_line(
        sb.run(&["plan", "-f", &a2, "--destroy", "--replace", PIP]),
        "error: --replace does not go with --destroy",
    );
    sb.assert_no_workspaces();
    sb.run(&["apply", "-f", &a2, "--auto-approve"]).code(0);
    // A kind trellis never replaces (what deleting it breaks is not known), and a replace the targets leave out.
    one_line(
        sb.run(&["plan", "-f", &a2, "--replace", ROUTE_TABLE]),
        &format!("error: --replace {ROUTE_TABLE}: trellis cannot replace a route_table"),
    );
    one_line(
        sb.run(&["apply", "-f", &a2, "--replace", PIP, "--target", RG, "--auto-approve"]),
        "the resource is not among the --target resources and what they depend on",
    );
    // A user-owned resource is never written, so never replaced.
    let dir = format!("{}/../examples/azure-byo-nat", env!("CARGO_MANIFEST_DIR"));
    let (byo, world) = (format!("{dir}/shoot.yaml"), format!("{dir}/world.yaml"));
    one_line(
        sb.run(&[
            "plan",
            "-f",
            &byo,
            "--world",
            &world,
            "--replace",
            "azure.subnet.hub-network.hub-vnet/batch-workers",
        ]),
        "is your own resource (user-owned): trellis never writes it, so it cannot replace it",
    );
    // Nor a resource another one needs, which the replace does not detach (a Cloud NAT is its router's).
    let gcp = format!("{}/../tests/scenarios/gcp/A1-managed-default/shoot.yaml", env!("CARGO_MANIFEST_DIR"));
    sb.run(&["apply", "-f", &gcp, "--auto-approve"]).code(0);
    let router = "gcp.router.trellis-sim/europe-west1.shoot--platform--web-cloud-router";
    one_line(
        sb.run(&["plan", "-f", &gcp, "--replace", router]),
        &format!("error: --replace {router}: gcp.cloud_nat.trellis-sim/europe-west1/shoot--platform--web-cloud-router.shoot--platform--web-cloud-nat depends on it and a replace does not detach it"),
    );
    // A GCP firewall rule nothing depends on is replaced: deleted, then inserted again.
    let firewall = "gcp.firewall.trellis-sim.shoot--platform--web-allow-health-checks";
    let report =
        sb.run(&["apply", "-f", &gcp, "--replace", firewall, "--auto-approve", "--output", "json"]).code(0).json();
    let methods: Vec<String> = writes(&report).into_iter().map(|(m, _)| m).collect();
    assert_eq!(methods, ["DELETE", "PUT"]);
    assert_eq!(sb.workspaces(), ["shoot--dev--bravo", "shoot--platform--web"], "nothing refused was applied");
}
