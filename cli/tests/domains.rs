//! GEP-0066 (mutable shoot domains) through the CLI: `--feature-gates` on the commands that plan, and
//! the simulated DNS kept in the state dir (tree `sim/dns`), synced from a `--world` file's `dns:`
//! section.

mod common;

use common::{a1, Sandbox};
use std::path::Path;

#[test]
fn feature_gates_are_taken_by_validate_plan_apply_and_destroy() {
    let sb = Sandbox::new();
    let shoot = a1();
    sb.run(&["validate", "-f", &shoot, "--feature-gates", "MutableShootDomains=true"]).code(0);
    sb.run(&["plan", "-f", &shoot, "--feature-gates", "MutableShootDomains=false"]).code(0);
    sb.run(&["apply", "--auto-approve", "-f", &shoot, "--feature-gates", "MutableShootDomains=true"]).code(0);
    sb.run(&["destroy", "--auto-approve", "-f", &shoot, "--feature-gates", "MutableShootDomains=true"]).code(0);
}

#[test]
fn an_unknown_or_malformed_feature_gate_is_one_line_and_touches_nothing() {
    let sb = Sandbox::new();
    let shoot = a1();
    for (gates, says) in [
        ("MutableShootDomain=true", "unknown feature gate \"MutableShootDomain\": trellis knows MutableShootDomains"),
        ("MutableShootDomains=yes", "feature gate MutableShootDomains: invalid value \"yes\": use true or false"),
        ("MutableShootDomains", "is not of the form Name=true|false"),
    ] {
        for cmd in [&["validate"][..], &["plan"], &["apply", "--auto-approve"], &["destroy", "--auto-approve"]] {
            let mut args = cmd.to_vec();
            args.extend(["-f", &shoot, "--feature-gates", gates]);
            let run = sb.run(&args).code(1).stderr_has(says);
            assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
            assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        }
    }
    assert!(!Path::new(sb.state()).exists(), "a bad flag touches nothing");
}

#[test]
fn the_worlds_dns_section_syncs_into_the_state_dir_and_a_bad_one_is_refused() {
    let sb = Sandbox::new();
    let world = sb.file("world.yaml");
    std::fs::write(
        &world,
        "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.example.com, type: A, values: [192.0.2.1]}\n",
    )
    .unwrap();
    let shoot = a1();
    sb.run(&["plan", "-f", &shoot, "--world", &world]).code(0).stderr_has("world: 2 added, 0 updated, 0 removed");
    // Kept in the state dir: the same world again changes nothing.
    sb.run(&["plan", "-f", &shoot, "--world", &world]).code(0).stderr_has("world: 0 added, 0 updated, 0 removed");

    let bad = sb.file("bad.yaml");
    std::fs::write(&bad, "dns:\n  zones:\n    - name: example.com\n      records:\n        - {name: www.other.org, type: A, values: [192.0.2.1]}\n").unwrap();
    sb.run(&["plan", "-f", &shoot, "--world", &bad])
        .code(1)
        .stderr_has("dns.zones[0].records[0].name: www.other.org is not in zone example.com");
}
