//! Reviewing plans in pull requests (issue #11): `trellis diff` exit codes and JSON, plans that are
//! byte-identical in any checkout, Terraform's JSON plan representation. Every bundled example
//! (`examples/**`) of every provider is planned.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One bundled example: its manifest (a file, or the fleet directory) and its world file, if any.
struct Example {
    name: String,
    manifest: PathBuf,
    world: Option<PathBuf>,
}

/// Every example under `examples/`: each directory with a `shoot.yaml` (and a `world.yaml` beside it),
/// and the fleet directory with `examples/fleet-world.yaml`.
fn examples() -> Vec<Example> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut found = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            }
        }
        let shoot = dir.join("shoot.yaml");
        if shoot.exists() {
            let world = dir.join("world.yaml");
            let name = dir.strip_prefix(&root).unwrap().display().to_string();
            found.push(Example { name, manifest: shoot, world: world.exists().then_some(world) });
        }
    }
    found.push(Example {
        name: "fleet".to_string(),
        manifest: root.join("fleet"),
        world: Some(root.join("fleet-world.yaml")),
    });
    found.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(found.len() >= 10, "the examples were not found under {}", root.display());
    assert!(found.iter().any(|e| e.name.starts_with("gcp")), "no GCP example");
    found
}

/// Copies `from` (a file or a directory of files) to `to`.
fn copy(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            copy(&path, &to.join(path.file_name().unwrap()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Plans `example` into `plan.json` inside `sb` and returns the plan file's path. The inputs are
/// copied into the sandbox; with `absolute`, they are passed by absolute path, else relative to the
/// sandbox (the working directory).
fn plan_copy(sb: &Sandbox, example: &Example, absolute: bool) -> String {
    let manifest = if example.manifest.is_dir() { "fleet" } else { "shoot.yaml" };
    copy(&example.manifest, &sb.path().join(manifest));
    let mut args = vec!["plan".to_string(), "-f".to_string()];
    args.push(if absolute { sb.file(manifest) } else { format!("./{manifest}") });
    if let Some(world) = &example.world {
        copy(world, &sb.path().join("world.yaml"));
        args.push("--world".to_string());
        args.push(if absolute { sb.file("world.yaml") } else { "world.yaml".to_string() });
    }
    let plan = sb.file("plan.json");
    args.extend(["--out".to_string(), plan.clone()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.run(&args).code(0);
    plan
}

#[test]
fn regression_plans_of_the_same_inputs_are_byte_identical_in_any_checkout() {
    for example in examples() {
        // Two checkouts at different paths, one planned with absolute paths, one with relative ones.
        let (one, two) = (Sandbox::new(), Sandbox::new());
        let first = plan_copy(&one, &example, true);
        let second = plan_copy(&two, &example, false);
        let (a, b) = (std::fs::read(&first).unwrap(), std::fs::read(&second).unwrap());
        assert!(a == b, "{}: the plans differ:\n{}", example.name, one.run_raw(&["diff", &first, &second]).stdout);
        let doc: Value = serde_json::from_slice(&a).unwrap();
        let plans = doc.get("plans").and_then(Value::as_array).cloned().unwrap_or_else(|| vec![doc.clone()]);
        for plan in &plans {
            let file = plan["source"]["file"].as_str().unwrap();
            assert!(!file.starts_with('/') && !file.starts_with("./"), "{}: source file {file:?}", example.name);
        }
        // The diff of two plans of the same inputs is empty, and says so with exit 0.
        one.run_raw(&["diff", &first, &second]).code(0).stdout_has("No semantic differences between the plans.");
    }
}

#[test]
fn regression_diff_exits_2_when_the_plans_differ() {
    let sb = Sandbox::new();
    let (before, after) = (sb.file("before.json"), sb.file("after.json"));
    sb.run(&["plan", "-f", &a1(), "--out", &before]).code(0);
    sb.run(&["plan", "-f", &data("alpha-with-nat.yaml"), "--out", &after]).code(0);

    // Equal: 0; different: 2, in every output format.
    for output in ["text", "json", "markdown"] {
        sb.run_raw(&["diff", &before, &before, "--output", output]).code(0);
        sb.run_raw(&["diff", &before, &after, "--output", output]).code(2);
    }
    // An error: 1, one line naming the file.
    let missing = sb.file("missing.json");
    sb.run_raw(&["diff", &before, &missing]).code(1).stderr_has(&format!("cannot read plan file {missing}"));
    let junk = sb.file("junk.json");
    std::fs::write(&junk, "{").unwrap();
    let run = sb.run_raw(&["diff", &junk, &before]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(&junk), "{}", run.stderr);
}

#[test]
fn diff_json_lists_each_change_class() {
    let sb = Sandbox::new();
    let (before, after) = (sb.file("before.json"), sb.file("after.json"));
    sb.run(&["apply", "-f", &a1(), "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &a1(), "--out", &before]).code(0);
    sb.run(&["plan", "-f", &data("alpha-with-nat.yaml"), "--out", &after]).code(0);

    let same = sb.run_raw(&["diff", &before, &before, "--output", "json"]).code(0).json();
    assert_eq!(same["equal"], true, "{same:#}");
    assert_eq!(same["changed"], serde_json::json!([]), "{same:#}");

    let d = sb.run_raw(&["diff", &before, &after, "--output", "json"]).code(2).json();
    assert_eq!(d["format"], "trellis-plan-diff");
    assert_eq!(d["equal"], false);
    assert_eq!(d["headline"], "Plan diff: 1 shoot changed, 0 added, 0 removed.");
    let shoot = &d["changed"][0];
    assert_eq!(shoot["shoot"], "shoot--dev--alpha");
    // Nodes added, with their action.
    let added: Vec<&str> =
        shoot["nodes_added"].as_array().unwrap().iter().map(|n| n["address"].as_str().unwrap()).collect();
    assert!(added.iter().any(|a| a.starts_with("azure.nat_gateway.")), "{added:?}");
    // A node whose action changed, with the attribute change.
    let subnet = shoot["nodes_changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["address"].as_str().unwrap().starts_with("azure.subnet."))
        .unwrap();
    assert_eq!(subnet["action"], serde_json::json!({"old": "noop", "new": "update"}), "{subnet:#}");
    assert!(
        subnet["changes"].as_array().unwrap().iter().any(|c| c["path"] == "/properties/natGateway/id"),
        "{subnet:#}"
    );
    // An artifact as a text diff, and a plain artifact change.
    assert_eq!(shoot["artifacts"]["allow_egress"], serde_json::json!({"old": true, "new": false}));
    let status = &shoot["artifacts"]["infrastructure_status"];
    assert_eq!(status["name"], "status.json", "{status:#}");
    let unified = status["unified"].as_str().unwrap();
    assert!(
        unified.lines().any(|l| l.starts_with('+') && l.contains("\"outboundAccessType\": \"NATGateway\"")),
        "{status:#}"
    );
}

#[test]
fn diff_across_providers_and_fleets() {
    let sb = Sandbox::new();
    let examples = examples();
    let gcp = examples.iter().find(|e| e.name == "gcp/managed").unwrap();
    let fleet = examples.iter().find(|e| e.name == "fleet").unwrap();
    let plan_of = |e: &Example, out: &str| {
        let out = sb.file(out);
        let mut args = vec!["plan", "-f", s(&e.manifest), "--out", &out];
        if let Some(w) = &e.world {
            args.extend(["--world", s(w)]);
        }
        sb.run(&args).code(0);
        out
    };
    let azure = sb.file("azure.json");
    sb.run(&["plan", "-f", &a1(), "--out", &azure]).code(0);
    let gcp = plan_of(gcp, "gcp.json");
    let fleet = plan_of(fleet, "fleet.json");

    // Another provider's shoot: one removed, one added.
    sb.run_raw(&["diff", &azure, &gcp]).code(2).stdout_has("Plan diff: 0 shoots changed, 1 added, 1 removed.");
    sb.run_raw(&["diff", &gcp, &gcp]).code(0);
    // A fleet against itself, and against one shoot.
    sb.run_raw(&["diff", &fleet, &fleet]).code(0);
    let d = sb.run_raw(&["diff", &fleet, &azure, "--output", "json"]).code(2).json();
    assert_eq!(d["added"].as_array().unwrap().len(), 1, "{d:#}");
    assert!(d["removed"].as_array().unwrap().len() >= 2, "{d:#}");
}

/// The keys Terraform always writes, per object of its JSON plan representation (format_version
/// "1.2": `internal/command/jsonplan/plan.go` and `resource.go`, as documented in "JSON Output
/// Format"; see /work/shared/reference/plan-apply-anchors.md §1.8).
const TERRAFORM_REQUIRED_KEYS: &[(&str, &[&str])] = &[
    (
        "plan",
        &["format_version", "terraform_version", "planned_values", "resource_changes", "prior_state", "configuration"],
    ),
    ("planned_values", &["root_module"]),
    (
        "planned_values.root_module.resources[]",
        &["address", "mode", "type", "name", "provider_name", "schema_version", "values", "sensitive_values"],
    ),
    ("resource_changes[]", &["address", "module_address", "mode", "type", "name", "provider_name", "change"]),
    (
        "resource_changes[].change",
        &["actions", "before", "after", "after_unknown", "before_sensitive", "after_sensitive"],
    ),
];

/// Terraform's action lists (`plans.Action` as `jsonplan` spells them).
const TERRAFORM_ACTIONS: &[&[&str]] = &[
    &["no-op"],
    &["create"],
    &["read"],
    &["update"],
    &["delete", "create"],
    &["create", "delete"],
    &["delete"],
    &["forget"],
    &["create", "forget"],
];

#[track_caller]
fn assert_keys(what: &str, object: &Value, context: &str) {
    let keys = TERRAFORM_REQUIRED_KEYS.iter().find(|(name, _)| *name == what).unwrap().1;
    let object = object.as_object().unwrap_or_else(|| panic!("{context}: {what} is not an object: {object}"));
    for key in keys {
        assert!(object.contains_key(*key), "{context}: {what} lacks {key:?}: {}", Value::Object(object.clone()));
    }
}

#[test]
fn terraform_json_has_terraforms_field_set_for_every_example() {
    for example in examples() {
        let sb = Sandbox::new();
        let plan = plan_copy(&sb, &example, false);
        let trellis: Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
        let tf = sb.run_raw(&["show", &plan, "--output", "terraform-json"]).code(0).json();
        let ctx = &example.name;
        assert_keys("plan", &tf, ctx);
        assert_eq!(tf["format_version"], "1.2", "{ctx}");
        assert_keys("planned_values", &tf["planned_values"], ctx);
        // One child module per shoot, its resources under it.
        for module in tf["planned_values"]["root_module"]["child_modules"].as_array().unwrap() {
            assert!(module["address"].as_str().unwrap().starts_with("module.shoot--"), "{ctx}: {module}");
            for r in module["resources"].as_array().unwrap() {
                assert_keys("planned_values.root_module.resources[]", r, ctx);
            }
        }
        let changes = tf["resource_changes"].as_array().unwrap();
        for rc in changes {
            assert_keys("resource_changes[]", rc, ctx);
            assert_keys("resource_changes[].change", &rc["change"], ctx);
            let actions: Vec<&str> =
                rc["change"]["actions"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            assert!(TERRAFORM_ACTIONS.contains(&actions.as_slice()), "{ctx}: {actions:?}");
            assert!(["managed", "data"].contains(&rc["mode"].as_str().unwrap()), "{ctx}: {rc}");
        }
        // Every node but a skipped one, with its action mapped as reviewing-plans.md documents.
        let nodes: Vec<&Value> = trellis.get("plans").and_then(Value::as_array).map_or_else(
            || trellis["nodes"].as_array().unwrap().iter().collect(),
            |plans| plans.iter().flat_map(|p| p["nodes"].as_array().unwrap()).collect(),
        );
        let listed: Vec<&Value> = nodes.iter().copied().filter(|n| n["action"] != "skip").collect();
        assert_eq!(changes.len(), listed.len(), "{ctx}: one resource change per node that is not skipped");
        for node in listed {
            let rc = changes
                .iter()
                .find(|c| c["trellis_address"] == node["address"])
                .unwrap_or_else(|| panic!("{ctx}: {node}"));
            let expected = match node["action"].as_str().unwrap() {
                "create" => ("managed", vec!["create"]),
                "update" => ("managed", vec!["update"]),
                "replace" => ("managed", vec!["delete", "create"]),
                "delete" => ("managed", vec!["delete"]),
                "noop" => ("managed", vec!["no-op"]),
                "verify" | "read" => ("data", vec!["read"]),
                other => panic!("{ctx}: action {other}"),
            };
            assert_eq!(rc["mode"], expected.0, "{ctx}: {rc}");
            assert_eq!(rc["change"]["actions"], serde_json::json!(expected.1), "{ctx}: {rc}");
        }
    }
}

/// An update showed only the changed attributes (a policy on anything else saw nothing, checkov judged
/// it wrongly): `before` is the whole subnet as read, `after` the same with the patch merged in, and an
/// attribute the update does not change is on both sides.
#[test]
fn regression_terraform_json_shows_an_update_as_the_whole_object_before_and_after() {
    let sb = Sandbox::new();
    let plan = sb.file("nat.json");
    sb.run(&["apply", "-f", &a1(), "--auto-approve"]).code(0);
    sb.run(&["plan", "-f", &data("alpha-with-nat.yaml"), "--out", &plan]).code(0);
    let tf = sb.run_raw(&["show", &plan, "--output", "terraform-json"]).code(0).json();
    let subnet = tf["resource_changes"].as_array().unwrap().iter().find(|c| c["type"] == "azurerm_subnet").unwrap();
    assert_eq!(subnet["change"]["actions"], serde_json::json!(["update"]), "{subnet:#}");
    assert_eq!(subnet["provider_name"], "registry.terraform.io/hashicorp/azurerm");
    assert_eq!(subnet["module_address"], "module.shoot--dev--alpha");
    let (before, after) = (&subnet["change"]["before"], &subnet["change"]["after"]);
    assert!(before["properties"]["natGateway"].is_null(), "{subnet:#}");
    assert!(after["properties"]["natGateway"]["id"].as_str().unwrap().ends_with("-nat-gateway"), "{subnet:#}");
    // Unchanged attributes, on both sides: the name, the prefix, the route table.
    for side in [before, after] {
        assert_eq!(side["name"], "shoot--dev--alpha-nodes", "{subnet:#}");
        assert_eq!(side["properties"]["addressPrefix"], "10.250.0.0/19", "{subnet:#}");
        assert!(side["properties"]["routeTable"]["id"].is_string(), "{subnet:#}");
    }
    // ARM rewrites the etag on every write: unknown after the update.
    assert!(before["etag"].is_string() && after["etag"].is_null(), "{subnet:#}");
    assert_eq!(subnet["change"]["after_unknown"]["etag"], true, "{subnet:#}");
    // prior_state holds the subnet as read, planned_values as it will be.
    let module = |root: &Value| root["root_module"]["child_modules"][0]["resources"].clone();
    let find = |resources: Value| {
        resources.as_array().unwrap().iter().find(|r| r["address"] == subnet["address"]).cloned().unwrap()
    };
    assert_eq!(&find(module(&tf["prior_state"]["values"]))["values"], before);
    assert_eq!(&find(module(&tf["planned_values"]))["values"], after);
    assert_eq!(tf["applyable"], true);
}

/// Plan files written before nodes carried the object as read (`observed`) still load, show, verify
/// their digest and apply; their Terraform JSON shows the attributes their changes name, never a null
/// side of an update.
#[test]
fn a_plan_file_without_the_objects_as_read_shows_and_applies() {
    let sb = Sandbox::new();
    sb.run(&["apply", "-f", &a1(), "--auto-approve"]).code(0);
    let plan = sb.file("plan.json");
    sb.run(&["plan", "-f", &data("alpha-with-nat.yaml"), "--out", &plan]).code(0);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let mut stripped = 0;
    for node in doc["nodes"].as_array_mut().unwrap() {
        stripped += usize::from(node.as_object_mut().unwrap().remove("observed").is_some());
    }
    assert!(stripped > 0, "a plan made now carries the objects as read");
    let old: trellis_plans::Plan = serde_json::from_value(doc.clone()).unwrap();
    doc["digest"] = serde_json::json!(old.body_digest());
    let old_file = sb.file("old.json");
    std::fs::write(&old_file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();

    sb.run_raw(&["show", &old_file]).code(0);
    let tf = sb.run_raw(&["show", &old_file, "--output", "terraform-json", "--compact"]).code(0);
    assert_eq!(tf.stdout.lines().count(), 1, "--compact: one line");
    let tf = tf.json();
    let subnet = tf["resource_changes"].as_array().unwrap().iter().find(|c| c["type"] == "azurerm_subnet").unwrap();
    assert!(subnet["change"]["before"].is_object() && subnet["change"]["after"].is_object(), "{subnet:#}");
    let digest = doc["digest"].as_str().unwrap();
    sb.run(&["apply", &old_file, "--expect-digest", digest]).code(0);
}

/// As `terraform show -json`: one line when stdout is not a terminal (or with `--compact`), indented
/// on a terminal (util-linux's `script` gives the command one).
#[test]
fn terraform_json_is_one_line_unless_stdout_is_a_terminal() {
    let sb = Sandbox::new();
    let plan = sb.file("plan.json");
    sb.run(&["plan", "-f", &a1(), "--out", &plan]).code(0);
    let piped = sb.run_raw(&["show", &plan, "--output", "terraform-json"]).code(0).stdout;
    assert_eq!(piped.lines().count(), 1);
    let show = format!("{BIN} show {plan} --output terraform-json");
    let on_terminal = |extra: &str| {
        let out = std::process::Command::new("script")
            .args(["-qec", &format!("{show}{extra}"), "/dev/null"])
            .output()
            .expect("util-linux's script runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let pretty = on_terminal("");
    assert!(pretty.starts_with("{\r\n  \"format_version\": \"1.2\",\r\n"), "{pretty}");
    let compact = on_terminal(" --compact");
    assert_eq!(compact.trim_end().lines().count(), 1, "{compact}");
    let same = |text: &str| serde_json::from_str::<Value>(&text.replace("\r\n", "\n")).unwrap();
    assert_eq!(same(&pretty), same(&piped));
    assert_eq!(same(&compact), same(&piped));
}
