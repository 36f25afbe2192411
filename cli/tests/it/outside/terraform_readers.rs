//! Terraform's plan readers on `trellis show PLAN --output terraform-json` (issue #24, item 1): HashiCorp's
//! terraform-json Go types decode every kind of plan and its invariants hold (program:
//! `cli/tests/data/outside/tfjson/main.go`); terraform-compliance loads it and a feature on a NAT
//! gateway's SKU passes on a create, an update and a replace (`data/outside/terraform-compliance/`);
//! checkov's custom policies judge whole objects (`data/outside/checkov/`); terraform-plan-summary
//! lists each resource of a fleet once. Every tool runs without a `terraform` binary on its PATH (CI
//! machines have none) and without network.

use crate::common::{self, outside, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

/// A PATH with the tool's own venv and the system's basics, and no `/usr/local/bin` (where a
/// `terraform` binary may be installed on a developer's machine): the readers must not need one.
fn without_terraform(tool: &Path) -> String {
    let venv_bin = tool.parent().expect("a venv's bin dir").display().to_string();
    let path = format!("{venv_bin}:/usr/bin:/bin");
    for dir in path.split(':') {
        assert!(!Path::new(dir).join("terraform").exists(), "a terraform binary is on the test PATH in {dir}");
    }
    path
}

fn data_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/outside").join(name)
}

/// One plan made in its own sandbox, shown as Terraform JSON (stdout is not a terminal: one line).
struct Doc {
    name: &'static str,
    path: String,
    /// The sandbox the document lives in.
    _sb: Rc<Sandbox>,
}

fn show(sb: &Rc<Sandbox>, name: &'static str, plan: &str) -> Doc {
    let tf = sb.run_raw(&["show", plan, "--output", "terraform-json"]).code(0).stdout;
    assert_eq!(tf.lines().count(), 1, "{name}: stdout is not a terminal, so the document is one line");
    let path = sb.file(&format!("{name}.tf.json"));
    std::fs::write(&path, tf).unwrap();
    Doc { name, path, _sb: Rc::clone(sb) }
}

fn plan(sb: &Sandbox, files: &[&str], world: Option<&str>) -> String {
    let out = sb.file("plan.json");
    let mut args = vec!["plan", "--out", &out];
    for f in files {
        args.extend(["-f", f]);
    }
    if let Some(w) = world {
        args.extend(["--world", w]);
    }
    sb.run(&args).code(0);
    out
}

/// The A2 shoot with another NAT idle timeout: an in-place update of the NAT gateway that leaves its
/// SKU as it is.
fn a2_idle_timeout(sb: &Sandbox) -> String {
    let text = std::fs::read_to_string(common::a2()).unwrap();
    let changed = text.replace("idleConnectionTimeoutMinutes: 4", "idleConnectionTimeoutMinutes: 10");
    assert_ne!(text, changed, "the A2 shoot sets idleConnectionTimeoutMinutes: 4");
    let path = sb.file("a2-idle-10.yaml");
    std::fs::write(&path, changed).unwrap();
    path
}

/// A NAT gateway created, updated in place (idle timeout) and replaced (zone), as three documents.
fn nat_gateway_docs() -> Vec<Doc> {
    let sb = Rc::new(Sandbox::new());
    let create = show(&sb, "create", &plan(&sb, &[&common::a2()], None));
    sb.run(&["apply", "-f", &common::a2(), "--auto-approve"]).code(0);
    let update = show(&sb, "update", &plan(&sb, &[&a2_idle_timeout(&sb)], None));
    let zone2 = common::scenario("A2-managed-nat/shoot-zone2.yaml");
    let replace = show(&sb, "replace", &plan(&sb, &[&zone2], None));
    vec![create, update, replace]
}

/// Every kind of plan: create, update, replace (NAT gateway), delete, no-op, verify (BYO), a fleet,
/// GCP (managed and BYO), domains.
fn every_kind() -> Vec<(Doc, &'static [&'static str])> {
    let mut docs: Vec<(Doc, &'static [&'static str])> = Vec::new();
    let mut nat = nat_gateway_docs().into_iter();
    docs.push((nat.next().unwrap(), &["create"]));
    docs.push((nat.next().unwrap(), &["update", "no-op"]));
    docs.push((nat.next().unwrap(), &["delete,create", "no-op"]));

    // Delete: the NAT gateway and its IP applied, then a shoot without them planned.
    let sb = Rc::new(Sandbox::new());
    sb.run(&["apply", "-f", &common::data("alpha-with-nat.yaml"), "--auto-approve"]).code(0);
    let delete = show(&sb, "delete", &plan(&sb, &[&common::a1()], None));
    docs.push((delete, &["delete", "update"]));

    // No-op: applied and planned again.
    let sb = Rc::new(Sandbox::new());
    sb.run(&["apply", "-f", &common::a1(), "--auto-approve"]).code(0);
    let noop = show(&sb, "noop", &plan(&sb, &[&common::a1()], None));
    docs.push((noop, &["no-op"]));

    for (name, wanted) in [
        ("azure-byo-nat", &["read"][..]),
        ("fleet", &["create", "read"][..]),
        ("gcp-managed", &["create"][..]),
        ("gcp-byo-ipv4", &["read"][..]),
        ("domains", &["create"][..]),
    ] {
        let (_, manifests, world) =
            common::bundled_examples().into_iter().find(|e| e.0 == name).unwrap_or_else(|| panic!("example {name}"));
        let sb = Rc::new(Sandbox::new());
        let files: Vec<&str> = manifests.iter().map(|m| m.to_str().unwrap()).collect();
        let p = plan(&sb, &files, world.as_deref().map(|w| w.to_str().unwrap()));
        let doc = show(&sb, name, &p);
        docs.push((doc, wanted));
    }
    docs
}

/// HashiCorp's terraform-json types decode every kind of plan, and what Terraform's readers rely on
/// holds: `(module_address, mode, type, name, index)` unique, addresses in Terraform's grammar, names
/// identifiers, updates and replaces with whole objects on both sides, deletes with their whole
/// object before, `prior_state` / `planned_values` / `configuration` consistent with the changes,
/// every type a hashicorp provider's. The format versions are checked against terraform-json's
/// current constraint (">= 0.1, < 2.0") by the program, since Debian's v0.5.0 accepts "0.1" only.
#[test]
fn terraform_json_types_decode_every_kind_of_plan() {
    let docs = every_kind();
    let cache = tempfile::tempdir().unwrap();
    let mut go = outside::go(cache.path());
    go.arg("run").arg(data_dir("tfjson").join("main.go")).arg("-mapped");
    go.args(docs.iter().map(|(d, _)| &d.path));
    let out = go.output().expect("go runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "terraform-json refused a document:\n{}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summaries: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(summaries.len(), docs.len(), "{stdout}");
    for ((doc, wanted), summary) in docs.iter().zip(&summaries) {
        for action in *wanted {
            assert!(
                summary["actions"][*action].as_u64().unwrap_or(0) > 0,
                "{}: no {action} change: {summary}",
                doc.name
            );
        }
    }
    let types = |name: &str| -> Vec<String> {
        let (i, _) = docs.iter().enumerate().find(|(_, (d, _))| d.name == name).unwrap();
        serde_json::from_value(summaries[i]["types"].clone()).unwrap()
    };
    assert!(types("create").contains(&"azurerm_nat_gateway".to_string()));
    assert!(types("create").contains(&"azurerm_public_ip".to_string()));
    assert!(types("gcp-managed").contains(&"google_compute_router_nat".to_string()), "{:?}", types("gcp-managed"));
    assert!(types("gcp-managed").contains(&"google_service_account".to_string()));
    assert!(types("domains").contains(&"azurerm_dns_a_record".to_string()), "{:?}", types("domains"));
}

/// The program is not a test that cannot fail: a document with a duplicate resource, or an update
/// holding only its changed attributes, is refused.
#[test]
fn terraform_json_checks_refuse_what_terraform_never_writes() {
    let docs = nat_gateway_docs();
    let update = &docs[1];
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&update.path).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, v: &Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let mut duplicate = doc.clone();
    let first = duplicate["resource_changes"][0].clone();
    duplicate["resource_changes"].as_array_mut().unwrap().push(first);
    let mut partial = doc.clone();
    let nat = partial["resource_changes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["type"] == "azurerm_nat_gateway")
        .unwrap();
    nat["change"]["before"] = serde_json::json!({"properties": {"idleTimeoutInMinutes": 4}});
    let mut old_version = doc.clone();
    old_version["format_version"] = serde_json::json!("2.0");
    for (name, bad, says) in [
        ("duplicate", duplicate, "are both"),
        ("partial", partial, "before is not the whole object"),
        ("version", old_version, "outside terraform-json's"),
    ] {
        let cache = tempfile::tempdir().unwrap();
        let out = outside::go(cache.path())
            .arg("run")
            .arg(data_dir("tfjson").join("main.go"))
            .arg(write(name, &bad))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{name}: {stderr}");
    }
}

/// Runs terraform-compliance on `plan` with the features in `features`; its exit code and output.
fn terraform_compliance(plan: &str, features: &Path) -> (bool, String) {
    let tool = outside::tool("tfc", "terraform-compliance");
    let out = Command::new(&tool)
        .args(["-p", plan, "-f"])
        .arg(features)
        .arg("--no-ansi")
        .env_clear()
        .env("PATH", without_terraform(&tool))
        .env("HOME", Path::new(plan).parent().unwrap())
        .output()
        .expect("terraform-compliance runs");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// terraform-compliance could not load trellis's document at all (it reads a one-line document, and
/// refuses a `terraform_version` it does not know); now it loads it, and a feature on the NAT gateway's
/// SKU passes on a create, an update (of the idle timeout only) and a replace — and a feature wanting
/// another SKU fails on each, so the SKU is really what it judged.
#[test]
fn regression_terraform_compliance_loads_trellis_plans_and_judges_the_nat_gateway_sku() {
    let features = data_dir("terraform-compliance/nat-sku");
    let wrong = tempfile::tempdir().unwrap();
    let feature = std::fs::read_to_string(features.join("nat_gateway_sku.feature")).unwrap();
    std::fs::write(wrong.path().join("basic.feature"), feature.replace("must be Standard", "must be Basic")).unwrap();
    for doc in nat_gateway_docs() {
        let (ok, out) = terraform_compliance(&doc.path, &features);
        assert!(ok && out.contains("1 features (1 passed)"), "{}: {out}", doc.name);
        let (ok, out) = terraform_compliance(&doc.path, wrong.path());
        assert!(!ok && out.contains("1 features (0 passed, 1 failed)"), "{}: {out}", doc.name);
    }
}

/// checkov's result of each custom check on each resource: (check id, resource address, passed).
fn checkov(plan: &str) -> Vec<(String, String, bool)> {
    let tool = outside::tool("checkov", "checkov");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(&tool)
        .args(["-f", plan, "--framework", "terraform_plan", "--external-checks-dir"])
        .arg(data_dir("checkov"))
        .args(["-c", "TRELLIS_NAT_1,TRELLIS_NAT_2", "-o", "json", "--skip-download"])
        .env_clear()
        .env("PATH", without_terraform(&tool))
        .env("HOME", home.path())
        .output()
        .expect("checkov runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("checkov wrote no JSON ({e}): {stdout}{}", String::from_utf8_lossy(&out.stderr)));
    let results = &report["results"];
    let mut found = Vec::new();
    for (list, passed) in [("passed_checks", true), ("failed_checks", false)] {
        for r in results[list].as_array().unwrap() {
            found.push((
                r["check_id"].as_str().unwrap().to_string(),
                r["resource"].as_str().unwrap().to_string(),
                passed,
            ));
        }
    }
    found.sort();
    found
}

/// checkov judged updates wrongly: an update held only the changed attributes, so a policy on an
/// attribute the update does not change (the NAT gateway's SKU, when only its idle timeout changes)
/// saw nothing. Now each check sees the whole object: Standard passes, Basic fails, on a create, an
/// update and a replace alike.
#[test]
fn regression_checkov_custom_policies_see_whole_objects() {
    let nat = "module.shoot--dev--bravo.azurerm_nat_gateway.shoot--dev--bravo-nat-gateway";
    for doc in nat_gateway_docs() {
        assert_eq!(
            checkov(&doc.path),
            [
                ("TRELLIS_NAT_1".to_string(), nat.to_string(), true),
                ("TRELLIS_NAT_2".to_string(), nat.to_string(), false)
            ],
            "{}",
            doc.name
        );
    }
}

/// terraform-plan-summary printed a fleet's resources twice (the same `type.name` in every shoot, all
/// in the root module); each shoot is a module now, and every resource is listed once, under it.
#[test]
fn regression_plan_summary_lists_each_resource_of_a_fleet_once() {
    let (_, manifests, world) = common::bundled_examples().into_iter().find(|e| e.0 == "fleet").unwrap();
    let sb = Rc::new(Sandbox::new());
    let files: Vec<&str> = manifests.iter().map(|m| m.to_str().unwrap()).collect();
    let doc = show(&sb, "fleet", &plan(&sb, &files, world.as_deref().map(|w| w.to_str().unwrap())));
    let tf: Value = serde_json::from_str(&std::fs::read_to_string(&doc.path).unwrap()).unwrap();
    let changed: Vec<&Value> = tf["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["change"]["actions"] != serde_json::json!(["no-op"]))
        .collect();
    let modules: std::collections::BTreeSet<&str> =
        changed.iter().map(|c| c["module_address"].as_str().unwrap()).collect();
    assert!(modules.len() >= 3, "the fleet example has three shoots: {modules:?}");

    let tool = outside::tool("sdk", "terraform-plan-summary");
    let out = Command::new(&tool)
        .arg(&doc.path)
        .env_clear()
        .env("PATH", without_terraform(&tool))
        .output()
        .expect("terraform-plan-summary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // Its tree: `root_module`, then per module its name and its resources, `<symbol> type.name`.
    let ansi = console::strip_ansi_codes(&stdout).into_owned();
    let mut listed = Vec::new();
    let mut module = String::new();
    for line in ansi.lines() {
        let item = line.trim_start_matches(|c: char| " │├└─".contains(c));
        if let Some(m) = modules.iter().find(|m| item == m.trim_start_matches("module.")) {
            module = m.to_string();
        } else if let Some((_, resource)) = item.split_once(' ') {
            listed.push(format!("{module}.{resource}"));
        }
    }
    // The tool names a resource `type.name` (a data source too, marked `?`).
    let mut expected: Vec<String> = changed
        .iter()
        .map(|c| {
            format!(
                "{}.{}.{}",
                c["module_address"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["name"].as_str().unwrap()
            )
        })
        .collect();
    expected.sort();
    listed.sort();
    let mut once = listed.clone();
    once.dedup();
    assert_eq!(once.len(), listed.len(), "a resource listed twice:\n{ansi}");
    assert_eq!(listed, expected, "each changed resource once, under its shoot's module:\n{ansi}");
}
