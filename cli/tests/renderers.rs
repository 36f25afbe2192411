//! `trellis show PLAN --output text|markdown|terraform-json` and `trellis diff PLAN PLAN` snapshotted on every
//! bundled example of every provider (issue #11, Tests).

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// Every bundled example: (snapshot name, manifest files or dir, world file).
fn examples() -> Vec<(&'static str, Vec<PathBuf>, Option<PathBuf>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = Vec::new();
    for (name, dir) in [
        ("azure-byo-firewall", "azure-byo-firewall"),
        ("azure-byo-isolated", "azure-byo-isolated"),
        ("azure-byo-nat", "azure-byo-nat"),
        ("azure-byo-overlay", "azure-byo-overlay"),
        ("azure-managed", "azure-managed"),
        ("azure-managed-nat", "azure-managed-nat"),
        ("gcp-byo-dual-stack", "gcp/byo-dual-stack"),
        ("gcp-byo-ipv4", "gcp/byo-ipv4"),
        ("gcp-managed", "gcp/managed"),
    ] {
        let world = root.join(dir).join("world.yaml");
        out.push((name, vec![root.join(dir).join("shoot.yaml")], world.exists().then_some(world)));
    }
    // GEP-0066: the Shoot with its Seed — an infrastructure plan and a domains plan.
    let domains = root.join("domains");
    out.push((
        "domains",
        vec![domains.join("seed.yaml"), domains.join("shoot.yaml")],
        Some(domains.join("world.yaml")),
    ));
    out.push(("fleet", vec![root.join("fleet")], Some(root.join("fleet-world.yaml"))));
    out
}

/// Plans the example into a plan file in the sandbox and returns the file's path.
fn plan_file(sb: &Sandbox, manifests: &[PathBuf], world: Option<&Path>) -> String {
    let out = sb.file("plan.json");
    let mut args = vec!["plan", "--out", &out];
    for manifest in manifests {
        args.extend(["-f", manifest.to_str().expect("UTF-8 path")]);
    }
    if let Some(world) = world {
        args.extend(["--world", world.to_str().expect("UTF-8 path")]);
    }
    sb.run(&args).code(0);
    out
}

/// Replaces machine-specific paths (the examples root, the sandbox) with stable placeholders.
fn redact(text: &str, sb: &Sandbox) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = text.replace(root.to_str().expect("UTF-8 path"), "[EXAMPLES]");
    if let Ok(canon) = root.canonicalize() {
        out = out.replace(canon.to_str().expect("UTF-8 path"), "[EXAMPLES]");
    }
    out.replace(sb.path().to_str().expect("UTF-8 path"), "[SANDBOX]")
}

#[test]
fn text_markdown_terraform_json_and_self_diff_of_every_bundled_example() {
    for (name, manifest, world) in examples() {
        let sb = Sandbox::new();
        let plan = plan_file(&sb, &manifest, world.as_deref());

        let text = sb.run_raw(&["show", &plan, "--output", "text"]).code(0).stdout;
        assert!(!text.contains("\u{1b}["), "{name}: text output has colour codes");
        insta::assert_snapshot!(format!("text_{name}"), redact(&text, &sb));

        let markdown = sb.run_raw(&["show", &plan, "--output", "markdown"]).code(0).stdout;
        insta::assert_snapshot!(format!("markdown_{name}"), redact(&markdown, &sb));

        let tf = sb.run_raw(&["show", &plan, "--output", "terraform-json"]).code(0).stdout;
        insta::assert_snapshot!(format!("terraform_json_{name}"), redact(&tf, &sb));

        let diff = sb.run_raw(&["diff", &plan, &plan]).code(0).stdout;
        insta::assert_snapshot!(format!("self_diff_{name}"), redact(&diff, &sb));
    }
}

/// A Shoot planned with its Seed has two plans of one technical id; markdown told them apart from
/// nothing but the order ("2 of 2 shoots", two rows `shoot--platform--web`).
#[test]
fn regression_markdown_tells_a_shoots_domains_plan_from_its_infrastructure_plan() {
    let (_, manifests, world) = examples().into_iter().find(|e| e.0 == "domains").expect("the domains example");
    let sb = Sandbox::new();
    let plan = plan_file(&sb, &manifests, world.as_deref());
    let markdown = sb.run_raw(&["show", &plan, "--output", "markdown"]).code(0).stdout;
    assert!(markdown.starts_with("### trellis plan: 2 of 2 plans with changes\n"), "{markdown}");
    assert!(markdown.contains("| `shoot--platform--web` | 5 |"), "{markdown}");
    assert!(markdown.contains("| `shoot--platform--web` (domains) | 2 |"), "{markdown}");
    assert!(markdown.contains("<summary><code>shoot--platform--web</code> (domains): Plan: 2 to create"), "{markdown}");
}
