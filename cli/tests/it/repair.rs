//! Targeted repair of the state and reading what the last apply recorded: `trellis state rm` (forget a
//! workspace, or one resource of it, never touching the cloud, with a backup `state push` restores) and
//! `trellis output` (the last applied artifacts: InfrastructureStatus, azure.json, the domains values).

use crate::common::{self, Sandbox};
use std::path::Path;

const ALPHA: &str = "shoot--dev--alpha";

/// The part of a `state rm` line between `undo with \`` and the closing backtick, as arguments.
fn undo_command(line: &str) -> Vec<String> {
    let start = line.find("undo with `trellis ").expect("the undo command") + "undo with `trellis ".len();
    let end = start + line[start..].find('`').expect("its closing backtick");
    line[start..end].split(' ').map(str::to_string).collect()
}

/// The backup file a `state rm` line names.
fn backup_of(line: &str) -> String {
    let start = line.find("Backup: ").expect("the backup") + "Backup: ".len();
    let end = start + line[start..].find("; undo").expect("the end of the backup's path");
    line[start..end].to_string()
}

/// Forgetting one resource: a new serial without it, the cloud untouched (the resource is still there),
/// a backup `state push --force` restores (the command printed works as printed). The next plan
/// finds the resource by its name as trellis' own — no change —, and the next apply records it again.
#[test]
fn state_rm_of_a_resource_forgets_it_and_the_next_apply_records_it_again() {
    let sb = Sandbox::new();
    let shoot = common::a1();
    sb.run(&["apply", "-f", &shoot, "--auto-approve"]).code(0);
    let before = sb.workspace(ALPHA);
    let serial = before["serial"].as_u64().unwrap();
    let (address, resource) = before["resources"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, r)| r["kind"] == "route_table")
        .map(|(a, r)| (a.clone(), r.clone()))
        .expect("a route table");
    let id = resource["id"].as_str().unwrap();

    // --dry-run says what would go and changes nothing.
    sb.run(&["state", "rm", ALPHA, id, "--dry-run"])
        .code(0)
        .stdout_has(&format!("Would remove {address} ({id}) from workspace {ALPHA}"));
    assert_eq!(sb.workspace(ALPHA), before);

    // By id (as the plan shows it); the address works the same.
    let rm = sb.run(&["state", "rm", ALPHA, id]).code(0);
    let line = rm.stdout.trim_end();
    assert_eq!(rm.stdout.lines().count(), 1, "{}", rm.stdout);
    assert!(line.starts_with(&format!("Removed {address} ({id}) from workspace {ALPHA}")), "{line}");
    assert!(line.contains(&format!("(now serial {})", serial + 1)), "{line}");
    assert!(line.contains("the cloud was not touched"), "{line}");
    let after = sb.workspace(ALPHA);
    assert_eq!(after["serial"], serial + 1);
    assert!(after["resources"].get(&address).is_none(), "{after:#}");
    assert_eq!(after["resources"].as_object().unwrap().len(), before["resources"].as_object().unwrap().len() - 1);
    sb.run(&["sim", "show", id]).code(0);

    // The backup is the workspace before, as `state pull` prints it, in <state>/backups/.
    let backup = backup_of(line);
    assert!(Path::new(&backup).starts_with(Path::new(sb.state()).join("backups")), "{backup}");
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&backup).unwrap()).unwrap();
    assert_eq!(file["workspace"], before);
    let undo = undo_command(line);
    assert_eq!(undo[..4], ["state", "push", ALPHA, backup.as_str()], "{line}");
    assert!(undo.contains(&"--force".to_string()), "the stored serial is above the backup's: {line}");

    // The planner sees the route table by its name as its own: nothing to change; apply records it again.
    sb.run(&["plan", "-f", &shoot, "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    sb.run(&["apply", "-f", &shoot, "--auto-approve"]).code(0);
    assert_eq!(sb.workspace(ALPHA)["resources"], before["resources"]);

    // Removed again, by address, then undone with the command printed.
    let rm = sb.run(&["state", "rm", ALPHA, &address]).code(0);
    let undo = undo_command(rm.stdout.trim_end());
    let args: Vec<&str> = undo.iter().map(String::as_str).collect();
    sb.run_raw(&args).code(0).stdout_has(&format!("Pushed {ALPHA} from"));
    assert_eq!(sb.workspace(ALPHA)["resources"], before["resources"]);
}

/// Forgetting a whole workspace: gone from `state list`, the cloud untouched; the next plan starts
/// from nothing (the workspace to record, the resources found by name as trellis' own); the backup in
/// <state>/backups/ restores it with the `state push` printed, and the plan is "No changes." again.
#[test]
fn state_rm_of_a_workspace_forgets_it_and_state_push_of_its_backup_restores_it() {
    let sb = Sandbox::new();
    let shoot = common::a1();
    sb.run(&["apply", "-f", &shoot, "--auto-approve"]).code(0);
    let before = sb.workspace(ALPHA);
    let serial = before["serial"].as_u64().unwrap();
    let resources = before["resources"].as_object().unwrap().len();

    sb.run(&["state", "rm", ALPHA, "--dry-run"]).code(0).stdout_has(&format!(
        "Would remove workspace {ALPHA} (serial {serial}, {resources} resource(s)) from {}; the cloud would not be touched.",
        sb.state()
    ));
    assert_eq!(sb.workspaces(), vec![ALPHA.to_string()]);

    let rm = sb.run(&["state", "rm", ALPHA]).code(0);
    let line = rm.stdout.trim_end();
    assert!(
        line.starts_with(&format!(
            "Removed workspace {ALPHA} (serial {serial}, {resources} resource(s)) from {}; the cloud was not touched",
            sb.state()
        )),
        "{line}"
    );
    assert!(sb.workspaces().is_empty(), "state list lacks it");
    let backup = backup_of(line);
    let lineage = before["lineage"].as_str().unwrap();
    assert_eq!(
        Path::new(&backup),
        Path::new(sb.state()).join("backups").join(format!("{ALPHA}.removed-{serial}-{}.json", &lineage[..8]))
    );
    assert!(line.ends_with(&format!("Its history is kept as {ALPHA}.removed-{serial}-{}.", &lineage[..8])), "{line}");
    let regular = Path::new(sb.state()).join("backups").join(format!("{ALPHA}.json"));
    assert!(!regular.exists(), "backups/ keeps a SHOOT.json only of what is stored");
    let rg = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/shoot--dev--alpha";
    sb.run(&["sim", "show", rg]).code(0);

    // The next plan starts from nothing: it records the workspace, and finds its resources unchanged.
    let plan = sb.run(&["plan", "-f", &shoot, "--output", "json"]).code(0).json();
    assert_eq!(plan["record"], serde_json::json!(["new-workspace"]), "{plan:#}");
    assert_eq!(plan["prior"]["serial"], 0, "{plan:#}");

    // Gone: a second rm is refused in one line; the undo printed restores it.
    let again = sb.run(&["state", "rm", ALPHA]).code(1);
    assert_eq!(
        again.stderr,
        format!("error: no workspace for {ALPHA} in {}; `trellis state list` shows the workspaces\n", sb.state())
    );
    let undo = undo_command(line);
    assert!(!undo.contains(&"--force".to_string()), "{line}");
    let args: Vec<&str> = undo.iter().map(String::as_str).collect();
    sb.run_raw(&args).code(0).stdout_has(&format!("the state now holds it at serial {}", serial + 1));
    assert!(regular.is_file(), "the push left its backup");
    let restored = sb.workspace(ALPHA);
    assert_eq!((&restored["lineage"], &restored["resources"]), (&before["lineage"], &before["resources"]));
    sb.run(&["plan", "-f", &shoot, "--detailed-exitcode"]).code(0).stdout_has("No changes.");
}

/// `state rm` refuses in one line what is not there, and never overwrites a backup; nothing changes.
#[test]
fn state_rm_refuses_what_is_not_in_state_in_one_line() {
    let sb = Sandbox::new();
    sb.run(&["state", "rm", ALPHA]).code(1).stderr_has("there is no state at");
    sb.run(&["apply", "-f", &common::a1(), "--auto-approve"]).code(0);
    let before = sb.workspace(ALPHA);
    for (args, needle) in [
        (vec!["state", "rm", "shoot--dev--nope"], "no workspace for shoot--dev--nope in ".to_string()),
        (
            vec!["state", "rm", ALPHA, "/subscriptions/x/resourceGroups/nope"],
            format!(
                "workspace {ALPHA} in {} records no resource /subscriptions/x/resourceGroups/nope; `trellis state show {ALPHA}` lists its resources",
                sb.state()
            ),
        ),
        (vec!["state", "rm", ALPHA, "azure.nothing.here", "--dry-run"], "records no resource azure.nothing.here".into()),
    ] {
        let run = sb.run(&args).code(1).stderr_has(&needle);
        assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    }
    let taken = sb.file("taken.json");
    std::fs::write(&taken, "keep me").unwrap();
    let run = sb.run(&["state", "rm", ALPHA, "--backup", &taken]).code(1);
    assert_eq!(
        run.stderr,
        format!(
            "error: not removing anything from workspace {ALPHA}: the backup file {taken} exists already; pass --backup FILE to write it elsewhere\n"
        )
    );
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "keep me");
    assert_eq!(sb.workspace(ALPHA), before, "nothing was removed");
    // --backup elsewhere: the file is written there.
    let elsewhere = sb.file("kept/alpha.json");
    sb.run(&["state", "rm", ALPHA, "--backup", &elsewhere]).code(0).stdout_has(&format!("Backup: {elsewhere};"));
    assert!(Path::new(&elsewhere).is_file());
    assert!(sb.workspaces().is_empty());
}

/// `trellis output`: the last applied artifacts as the apply reported them — all as text under their
/// names, as one JSON object, or one by name (a file byte for byte, so `> azure.json` is the file;
/// JSON as JSON); an unknown name lists the names there are; no shoot or no state is one line.
#[test]
fn output_prints_the_last_applied_artifacts_by_name_as_text_or_json() {
    let sb = Sandbox::new();
    sb.run(&["output", ALPHA]).code(1).stderr_has("there is no state at");
    let report = sb.run(&["apply", "-f", &common::a1(), "--auto-approve", "--output", "json"]).code(0).json();
    let applied = &report["shoots"][0]["artifacts"];
    let config = applied["cloud_provider_config"]["content"].as_str().unwrap();

    let file = sb.run(&["output", ALPHA, "azure.json"]).code(0);
    assert_eq!(file.stdout, config, "the file byte for byte");
    assert_eq!(sb.run(&["output", ALPHA, "cloud_provider_config"]).code(0).stdout, config);
    let status = sb.run(&["output", ALPHA, "infrastructure_status"]).code(0).json();
    assert_eq!(status, applied["infrastructure_status"]);
    assert_eq!(sb.run(&["output", ALPHA, "allow_egress"]).code(0).stdout, format!("{}\n", applied["allow_egress"]));

    let all = sb.run(&["output", ALPHA, "--output", "json"]).code(0).json();
    let names: Vec<&str> = all.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(names, ["infrastructure_status", "egress_cidrs", "azure.json", "ccm_flags", "allow_egress"]);
    assert_eq!(all["azure.json"], config);
    assert_eq!(all["infrastructure_status"], applied["infrastructure_status"]);
    assert_eq!(all["ccm_flags"], applied["ccm_flags"]);
    assert_eq!(sb.run(&["output", ALPHA, "azure.json", "--output", "json"]).code(0).json(), config);

    let text = sb.run(&["output", ALPHA]).code(0).stdout;
    assert!(text.starts_with("infrastructure_status:\n  {\n"), "{text}");
    assert!(text.contains("\nazure.json:\n  aadClientId: "), "{text}");
    assert!(text.contains("\nallow_egress:\n  true\n"), "{text}");

    let unknown = sb.run(&["output", ALPHA, "kubeconfig"]).code(1);
    assert_eq!(
        unknown.stderr,
        format!(
            "error: {ALPHA} has no artifact \"kubeconfig\" in {}; its artifacts are infrastructure_status, egress_cidrs, azure.json, ccm_flags, allow_egress\n",
            sb.state()
        )
    );
    let missing = sb.run(&["output", "shoot--dev--nope"]).code(1);
    assert_eq!(
        missing.stderr,
        format!(
            "error: no workspace for shoot--dev--nope in {}; `trellis state list` shows the workspaces\n",
            sb.state()
        )
    );
    // Destroyed: the workspace is kept, its artifacts are not.
    sb.run(&["destroy", "-f", &common::a1(), "--auto-approve"]).code(0);
    sb.run(&["output", ALPHA]).code(1).stderr_has(&format!("{ALPHA} has no applied artifacts in {}", sb.state()));
}

/// A shoot with its domains plan: `output SHOOT` gives the shoot's artifacts, then its domains plan's
/// values (its own workspace, `SHOOT+domains`); GCP's cloud-provider config is `cloudprovider.conf`.
#[test]
fn output_of_a_shoot_includes_its_domains_values_and_gcp_names_its_config_file() {
    let sb = Sandbox::new();
    let example = |rel: &str| format!("{}/../examples/{rel}", env!("CARGO_MANIFEST_DIR"));
    let (seed, shoot, world) =
        (example("domains/seed.yaml"), example("domains/shoot.yaml"), example("domains-world.yaml"));
    sb.run(&["apply", "--auto-approve", "-f", &seed, "-f", &shoot, "--world", &world]).code(0);
    let web = "shoot--platform--web";
    let all = sb.run(&["output", web, "--output", "json"]).code(0).json();
    let names: Vec<&str> = all.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(names[..3], ["infrastructure_status", "egress_cidrs", "azure.json"], "{names:?}");
    assert!(names.contains(&"domains") && names.contains(&"apiserver_sans"), "{names:?}");
    let domains = sb.run(&["output", web, "domains"]).code(0).json();
    assert_eq!(domains["roles"]["external"], "web.platform.example.com", "{domains:#}");
    // The domains workspace alone.
    let own = sb.run(&["output", &format!("{web}+domains"), "--output", "json"]).code(0).json();
    assert_eq!(own["domains"], domains);
    assert!(own.get("azure.json").is_none(), "{own:#}");
    // Removing the shoot's workspace keeps its domains workspace, and says so.
    let rm = sb.run(&["state", "rm", web]).code(0);
    let note = format!(
        "note: the domains workspace {web}+domains is kept; `trellis state rm {web}+domains --state {}` removes it too.",
        sb.state()
    );
    assert_eq!(rm.stdout.lines().nth(1), Some(note.as_str()), "{}", rm.stdout);
    let left = sb.run(&["output", web, "--output", "json"]).code(0).json();
    assert_eq!(left, own, "the domains values are what is left");

    let sb = Sandbox::new();
    let gcp = common::scenario("../gcp/A1-managed-default/shoot.yaml");
    let report = sb.run(&["apply", "-f", &gcp, "--auto-approve", "--output", "json"]).code(0).json();
    let id = sb.workspaces().remove(0);
    let conf = sb.run(&["output", &id, "cloudprovider.conf"]).code(0).stdout;
    assert_eq!(conf, report["shoots"][0]["artifacts"]["cloud_provider_config"]["content"].as_str().unwrap());
}

/// Forgetting a resource of yours (a BYO NSG, `user`): the cloud is untouched, the next plan reads it
/// again from the manifest's reference (no change) and the next apply records it again, still as yours.
#[test]
fn state_rm_of_a_user_resource_is_recorded_again_by_the_next_apply() {
    let sb = Sandbox::new();
    let (shoot, world) = (
        common::scenario("B1-byo-nsg-rt-in-vnet-rg/shoot.yaml"),
        common::scenario("B1-byo-nsg-rt-in-vnet-rg/world.yaml"),
    );
    sb.run(&["apply", "-f", &shoot, "--world", &world, "--auto-approve"]).code(0);
    let id = sb.workspaces().remove(0);
    let before = sb.workspace(&id);
    let (address, _) = before["resources"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(a, r)| r["ownership"] == "user" && a.contains("network_security_group"))
        .expect("the BYO NSG");
    sb.run(&["state", "rm", &id, address])
        .code(0)
        .stdout_has("if the configuration still wants the resource, the next plan finds it as before");
    assert!(sb.workspace(&id)["resources"].get(address).is_none());
    sb.run(&["plan", "-f", &shoot, "--world", &world, "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    sb.run(&["apply", "-f", &shoot, "--world", &world, "--auto-approve"]).code(0);
    assert_eq!(sb.workspace(&id)["resources"], before["resources"]);
}
