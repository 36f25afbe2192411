//! `trellis sim …` end to end: apply B1, then run the simulated CCM and bastion controller against the
//! simulated cloud in the state directory.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SHOOT: &str = "shoot--platform--byo-b1";
const HUB: &str = "/subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub-network";

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios/azure/B1-byo-nsg-rt-in-vnet-rg")
}

fn nsg_id() -> String {
    format!("{HUB}/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg")
}

/// A fresh directory for one test's state, removed when the test is done.
struct StateDir(PathBuf);

impl StateDir {
    fn new(test: &str) -> StateDir {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sim_cmd-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        StateDir(dir)
    }

    fn state(&self) -> PathBuf {
        self.0.join("state")
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn trellis(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(args)
        .arg("--state")
        .arg(state)
        .env("NO_COLOR", "1")
        .output()
        .expect("run trellis")
}

fn ok(state: &Path, args: &[&str]) -> String {
    let out = trellis(state, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "trellis {args:?} failed:\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn apply_b1(state: &Path) {
    let dir = scenario();
    let (shoot, world) = (dir.join("shoot.yaml"), dir.join("world.yaml"));
    ok(state, &["apply", "-f", shoot.to_str().unwrap(), "--world", world.to_str().unwrap(), "--auto-approve"]);
}

fn rule_names(state: &Path) -> Vec<String> {
    let nsg: Value = serde_json::from_str(&ok(state, &["sim", "show", &nsg_id()])).unwrap();
    nsg.pointer("/properties/securityRules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().filter_map(|r| r["name"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

#[test]
fn ccm_service_create_adds_a_k8s_azure_lb_rule_and_delete_removes_it() {
    let dir = StateDir::new("service");
    let state = dir.state();
    apply_b1(&state);
    assert!(rule_names(&state).is_empty(), "B1's NSG starts without rules");

    let out =
        ok(&state, &["sim", "ccm", "service", "create", "--shoot", SHOOT, "--namespace", "default", "--name", "web"]);
    assert!(out.contains(&format!("PUT {} (200)", nsg_id())), "{out}");
    assert!(
        out.contains("/resourceGroups/shoot--platform--byo-b1/providers/Microsoft.Network/loadBalancers/kubernetes"),
        "{out}"
    );
    let rules = rule_names(&state);
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert!(rules[0].starts_with("k8s-azure-lb_") && rules[0].ends_with("-TCP-443-Internet"), "{rules:?}");

    // Idempotent: nothing is written the second time.
    let again = ok(&state, &["sim", "ccm", "service", "create", "--shoot", SHOOT, "--name", "web"]);
    assert!(!again.contains("PUT ") && again.contains("No cloud writes"), "{again}");

    let out =
        ok(&state, &["sim", "ccm", "service", "delete", "--shoot", SHOOT, "--namespace", "default", "--name", "web"]);
    assert!(out.contains(&format!("PUT {} (200)", nsg_id())), "{out}");
    assert!(rule_names(&state).is_empty());
}

#[test]
fn annotated_service_never_writes_the_nsg_and_bastion_rules_come_and_go() {
    let dir = StateDir::new("annotated");
    let state = dir.state();
    apply_b1(&state);
    let out = ok(
        &state,
        &[
            "sim",
            "ccm",
            "service",
            "create",
            "--shoot",
            SHOOT,
            "--name",
            "internal",
            "--annotation",
            "service.beta.kubernetes.io/azure-disable-load-balancer-nsg-rule=true",
        ],
    );
    assert!(!out.contains("networkSecurityGroups"), "no NSG write: {out}");
    assert!(rule_names(&state).is_empty());

    ok(
        &state,
        &["sim", "bastion", "create", "--shoot", SHOOT, "--name", "cli-abc", "--operator-cidr", "203.0.113.7/32"],
    );
    assert_eq!(
        rule_names(&state),
        ["cli-abc-allow-ssh-ipv4", "cli-abc-allow-ssh-ipv6", "cli-abc-egress-worker", "cli-abc-deny-all"]
    );
    ok(&state, &["sim", "bastion", "delete", "--shoot", SHOOT, "--name", "cli-abc"]);
    assert!(rule_names(&state).is_empty());
}

#[test]
fn sim_needs_an_applied_shoot() {
    let dir = StateDir::new("unapplied");
    let state = dir.state();
    let out = trellis(&state, &["sim", "ccm", "service", "create", "--shoot", SHOOT, "--name", "web"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("trellis apply"), "{stderr}");
}

/// Issue #7 item 1: the worker subnet of the I7-1 scenario is shown with `addressPrefixes` (two
/// prefixes). The bastion's default worker CIDRs are every prefix of it, not an error asking for
/// `--worker-cidr`.
#[test]
fn regression_bastion_defaults_to_every_prefix_of_a_subnet_shown_with_address_prefixes() {
    let dir = StateDir::new("prefixes");
    let state = dir.state();
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios/azure/I7-1-byo-subnet-address-prefixes");
    let (shoot, world) = (scenario.join("shoot.yaml"), scenario.join("world.yaml"));
    ok(&state, &["apply", "-f", shoot.to_str().unwrap(), "--world", world.to_str().unwrap(), "--auto-approve"]);
    let shoot = "shoot--platform--prefixes";
    ok(
        &state,
        &["sim", "bastion", "create", "--shoot", shoot, "--name", "cli-abc", "--operator-cidr", "203.0.113.7/32"],
    );
    let nsg = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/test-nsg";
    let nsg: Value = serde_json::from_str(&ok(&state, &["sim", "show", nsg])).unwrap();
    let egress = nsg["properties"]["securityRules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "cli-abc-egress-worker")
        .expect("egress rule")
        .clone();
    assert_eq!(egress["properties"]["destinationAddressPrefixes"], serde_json::json!(["10.0.0.0/28", "10.0.1.0/28"]));
}

/// `trellis sim audit`: the calls kept in the state dir, oldest first. B1 (BYO) is applied: its
/// writes are the shoot's own resource group's, none under the user's hub network; then the simulated
/// CCM's write to the user's NSG appears, as text and JSON; `--writes` leaves out the reads; a plan
/// adds nothing (its reads are not kept).
#[test]
fn sim_audit_lists_the_kept_calls_of_each_simulated_cloud() {
    let dir = StateDir::new("audit");
    let state = dir.state();
    let rg = "/resourceGroups/shoot--platform--byo-b1";
    let empty = "No calls kept: nothing has written the simulated clouds of this state yet.\n";
    let (shoot, world) = (scenario().join("shoot.yaml"), scenario().join("world.yaml"));
    ok(&state, &["plan", "-f", shoot.to_str().unwrap(), "--world", world.to_str().unwrap()]);
    assert_eq!(ok(&state, &["sim", "audit"]), empty, "a plan keeps none of its calls");
    apply_b1(&state);
    let all = ok(&state, &["sim", "audit"]);
    assert_ne!(all, empty);
    assert!(all.lines().any(|l| l.starts_with("azure GET    200 ") && l.contains(HUB)), "{all}");
    let writes = ok(&state, &["sim", "audit", "--writes"]);
    assert!(!writes.is_empty(), "{writes}");
    for line in writes.lines() {
        assert!(line.starts_with("azure PUT") && line.contains(rg) && !line.contains(HUB), "{writes}");
    }
    ok(&state, &["plan", "-f", shoot.to_str().unwrap()]);
    assert_eq!(ok(&state, &["sim", "audit"]), all, "a plan's reads are not kept");

    ok(&state, &["sim", "ccm", "service", "create", "--shoot", SHOOT, "--name", "web"]);
    let after = ok(&state, &["sim", "audit", "--writes"]);
    let ccm: Vec<&str> = after.strip_prefix(writes.as_str()).expect("appended").lines().collect();
    assert!(ccm.iter().any(|l| l.starts_with("azure PUT") && l.ends_with(&nsg_id())), "{after}");
    let json: Value = serde_json::from_str(&ok(&state, &["sim", "audit", "--writes", "--output", "json"])).unwrap();
    let azure = json["azure"].as_array().expect("the ARM simulator's calls");
    assert_eq!(azure.len(), after.lines().count());
    assert!(azure.iter().all(|c| c["op"] == "write"), "{json}");
    assert_eq!((json["gce"].as_array().map(Vec::len), json["dns"].as_array().map(Vec::len)), (Some(0), Some(0)));
}

/// `trellis sim serve --page-size N` (or `TRELLIS_SIM_PAGE_SIZE`) is range-checked before anything is
/// opened or served: one `error: ` line naming the flag.
#[test]
fn sim_serve_refuses_a_page_size_out_of_range() {
    use crate::common::{finish, Sandbox};
    let sb = Sandbox::new();
    for bad in ["0", "100001", "ten", "-1"] {
        let arg = format!("--page-size={bad}");
        let run = sb.run(&["sim", "serve", "--listen", "127.0.0.1:0", &arg]).code(1).stderr_has("--page-size");
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    }
    let mut cmd = sb.command(&["sim", "serve", "--listen", "127.0.0.1:0"]);
    let run = finish(cmd.env("TRELLIS_SIM_PAGE_SIZE", "0")).code(1).stderr_has("--page-size");
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    assert!(!sb.path().join("state").exists(), "nothing was opened");
}

/// `trellis sim` (serve among its commands) works on the simulated clouds only: the flags that choose
/// or reach a real cloud mean nothing to it and are refused in one line naming them, before anything
/// is opened or served; `--project` (the simulated project's name) and `--world` still work.
#[test]
fn regression_sim_commands_refuse_the_real_clouds_flags() {
    let sb = crate::common::Sandbox::new();
    for (args, named) in [
        (vec!["sim", "serve", "--cloud", "azure"], "--cloud azure means nothing to `trellis sim`"),
        (vec!["sim", "serve", "--endpoint", "http://127.0.0.1:1"], "--endpoint means nothing"),
        (vec!["sim", "audit", "--accept-drift", "--subscription", "x"], "--accept-drift, --subscription mean nothing"),
        (vec!["sim", "serve", "--dns-project", "p"], "--dns-project means nothing"),
    ] {
        sb.run(&args).code(1).stderr_has(named);
    }
    assert!(!std::path::Path::new(sb.state()).exists(), "nothing was opened");
}

/// The flags `trellis sim` refuses are not offered in its help (s32's note: `sim serve --help` listed
/// `--cloud`, `--endpoint`, `--accept-drift` and the account flags, each then refused), while the
/// other commands still offer them and `--project` and `--world` stay.
#[test]
fn regression_sim_help_offers_no_flag_it_refuses() {
    let sb = crate::common::Sandbox::new();
    let refused = ["--cloud", "--endpoint", "--accept-drift", "--subscription", "--dns-project"];
    let flags = |help: &str| -> Vec<String> {
        help.lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.starts_with("--"))
            .map(String::from)
            .collect()
    };
    for args in [vec!["sim", "--help"], vec!["sim", "serve", "--help"], vec!["sim", "audit", "--help"]] {
        let offered = flags(&sb.run(&args).code(0).stdout);
        for flag in refused {
            assert!(!offered.iter().any(|f| f == flag), "{args:?} offers {flag}: {offered:?}");
        }
        for flag in ["--project", "--world", "--state"] {
            assert!(offered.iter().any(|f| f == flag), "{args:?} lost {flag}: {offered:?}");
        }
    }
    let offered = flags(&sb.run(&["plan", "--help"]).code(0).stdout);
    for flag in refused {
        assert!(offered.iter().any(|f| f == flag), "plan lost {flag}: {offered:?}");
    }
}
