//! State written by an earlier trellis keeps working: the provider state without a version (the
//! Azure facts at the top level of a workspace) is read as version 1 and migrated; state newer than
//! this trellis is refused.

use crate::common;

use common::Sandbox;
use std::path::Path;

const FLEET: [&str; 3] = ["shoot--shop--checkout", "shoot--shop--dev", "shoot--shop--prod"];

fn examples(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(rel).to_str().expect("UTF-8 path").to_string()
}

/// Copies `src` into `dst` (a state dir: files and directories only).
fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// A sandbox whose state dir is a copy of `cli/tests/data/state-v1-fleet` (see its `.md`).
fn sandbox_with_v1_state() -> Sandbox {
    let sb = Sandbox::new();
    copy_dir(Path::new(&common::data("state-v1-fleet")), Path::new(sb.state()));
    sb
}

#[test]
fn regression_state_of_an_earlier_trellis_migrates_and_replans_no_changes() {
    let sb = sandbox_with_v1_state();
    let fleet = examples("fleet");
    // Read as version 1 and migrated in memory: the fleet is as applied.
    sb.run(&["plan", "-f", &fleet, "--detailed-exitcode"]).code(0).stdout_has("Fleet: 3 shoots, 0 with changes.");
    for shoot in FLEET {
        assert_eq!(sb.workspace(shoot)["provider_state"]["version"], 1, "{shoot}: a plan writes nothing");
    }
    // The next commit writes the current version, with every fact of version 1 kept.
    sb.run(&["apply", "-f", &fleet, "--auto-approve"]).code(0);
    for shoot in FLEET {
        let ws = sb.workspace(shoot);
        let state = &ws["provider_state"];
        assert_eq!((&state["provider"], &state["version"]), (&"azure".into(), &2.into()), "{shoot}: {ws}");
        assert!(ws.get("memory").is_none() && ws.get("last_applied").is_none(), "{shoot}: {ws}");
        assert!(state["data"]["last_applied"]["workers"].is_array(), "{shoot}: {ws}");
    }
    let checkout = sb.workspace("shoot--shop--checkout");
    let data = &checkout["provider_state"]["data"];
    assert_eq!(data["overlay"], false);
    assert_eq!(data["byo"]["subnet_cidr"], "10.250.0.0/20");
    assert!(data["byo"]["route_table_id"].as_str().unwrap().ends_with("/routeTables/checkout-rt"), "{data}");
    assert_eq!(sb.workspace("shoot--shop--prod")["provider_state"]["data"]["overlay"], true);
    sb.run(&["plan", "-f", &fleet, "--detailed-exitcode"]).code(0).stdout_has("Fleet: 3 shoots, 0 with changes.");
}

#[test]
fn regression_provider_state_newer_than_this_trellis_is_refused() {
    let sb = sandbox_with_v1_state();
    let shoot = "shoot--shop--dev";
    let mut ws = sb.workspace(shoot);
    ws["provider_state"] = serde_json::json!({"provider": "azure", "version": 99, "data": {"ca_rotation": "prepared"}});
    let file = sb.file("newer.json");
    std::fs::write(&file, serde_json::json!({"workspace": ws}).to_string()).unwrap();
    sb.run(&["state", "push", shoot, &file, "--force"]).code(0);
    let run = sb.run(&["plan", "-f", &examples("fleet/dev.yaml")]).code(1);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("error: ")
            && lines[0].contains(shoot)
            && lines[0].contains("azure provider state version 99")
            && lines[0].contains("upgrade trellis"),
        "{}",
        run.stderr
    );
}

/// An earlier trellis kept the simulated cloud's audit log in a tree of the state's database (every
/// open then read its pages: issue #27). `trellis sim audit` still lists those calls; the next command
/// that writes moves them into `audit/azure.jsonl` beside the database, before its own, each once.
#[test]
fn regression_the_audit_log_an_earlier_trellis_kept_in_the_database_moves_to_its_file() {
    let sb = sandbox_with_v1_state();
    let file = Path::new(sb.state()).join("audit/azure.jsonl");
    let before = sb.run(&["sim", "audit"]).code(0).stdout;
    assert_eq!(before.lines().count(), 64, "the calls of the apply that made the fixture: {before}");
    assert!(before.lines().all(|l| l.starts_with("azure ")), "{before}");
    assert!(!file.exists(), "reading moves nothing");
    sb.run(&["apply", "-f", &examples("fleet"), "--auto-approve"]).code(0);
    let after = sb.run(&["sim", "audit"]).code(0).stdout;
    let added = after.strip_prefix(before.as_str()).unwrap_or_else(|| panic!("the earlier calls first: {after}"));
    assert!(!added.is_empty() && added.lines().all(|l| l.starts_with("azure ")), "{added}");
    let kept = std::fs::read_to_string(&file).unwrap();
    assert_eq!(kept.lines().count(), after.lines().count(), "the file holds the whole log, each call once: {kept}");
    let again = sb.run(&["sim", "audit"]).code(0).stdout;
    assert_eq!(again, after, "read from the file alone, nothing twice");
}
