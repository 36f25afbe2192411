//! `trellis show PLAN --output text|markdown|terraform-json` and `trellis diff PLAN PLAN` snapshotted on every
//! bundled example of every provider (issue #11, Tests).

use crate::common;

use common::*;
use std::path::Path;

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
    for (name, manifest, world) in bundled_examples() {
        let sb = Sandbox::new();
        let plan = plan_example(&sb, &manifest, world.as_deref());

        let text = sb.run_raw(&["show", &plan, "--output", "text"]).code(0).stdout;
        assert!(!text.contains("\u{1b}["), "{name}: text output has colour codes");
        insta::assert_snapshot!(format!("text_{name}"), redact(&text, &sb));

        let markdown = sb.run_raw(&["show", &plan, "--output", "markdown"]).code(0).stdout;
        insta::assert_snapshot!(format!("markdown_{name}"), redact(&markdown, &sb));

        // One line (stdout is not a terminal), snapshotted indented so a change reads as a diff.
        let tf = sb.run_raw(&["show", &plan, "--output", "terraform-json"]).code(0).json();
        insta::assert_snapshot!(format!("terraform_json_{name}"), redact(&format!("{tf:#}\n"), &sb));

        let diff = sb.run_raw(&["diff", &plan, &plan]).code(0).stdout;
        insta::assert_snapshot!(format!("self_diff_{name}"), redact(&diff, &sb));
    }
}

/// A Shoot planned with its Seed has two plans of one technical id; markdown told them apart from
/// nothing but the order ("2 of 2 shoots", two rows `shoot--platform--web`).
#[test]
fn regression_markdown_tells_a_shoots_domains_plan_from_its_infrastructure_plan() {
    let (_, manifests, world) = bundled_examples().into_iter().find(|e| e.0 == "domains").expect("the domains example");
    let sb = Sandbox::new();
    let plan = plan_example(&sb, &manifests, world.as_deref());
    let markdown = sb.run_raw(&["show", &plan, "--output", "markdown"]).code(0).stdout;
    assert!(markdown.starts_with("### trellis plan: 2 of 2 plans with changes\n"), "{markdown}");
    assert!(markdown.contains("| `shoot--platform--web` | 5 |"), "{markdown}");
    // Two DNSRecord objects and the record set of each.
    assert!(markdown.contains("| `shoot--platform--web` (domains) | 4 |"), "{markdown}");
    assert!(markdown.contains("<summary><code>shoot--platform--web</code> (domains): Plan: 4 to create"), "{markdown}");
}
