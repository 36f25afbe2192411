//! `--shard I/N` on plan, apply and destroy: each shard takes its shoots of the fleet (a fixed hash of
//! the technical id), says how many it took and left, and fleet-wide checks still see the shoots other
//! shards applied in the shared state.

use crate::common;

use common::*;
use std::collections::BTreeSet;

fn fleet() -> String {
    format!("{}/../examples/fleet", env!("CARGO_MANIFEST_DIR"))
}

fn fleet_world() -> String {
    format!("{}/../examples/fleet-world.yaml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn bad_shard_values_are_one_line_errors() {
    let sb = Sandbox::new();
    for (value, why) in [
        ("0/3", "I must be between 1 and N"),
        ("4/3", "I must be between 1 and N"),
        ("x", "not of the form I/N"),
        ("1/0", "N must be at least 1"),
    ] {
        for cmd in ["plan", "apply", "destroy"] {
            let run = sb
                .run(&[cmd, "-f", &a2(), "--shard", value, "--auto-approve"][..if cmd == "plan" { 5 } else { 6 }])
                .code(1);
            assert_eq!(run.stderr_lines().len(), 1, "{cmd} --shard {value}: one line:\n{}", run.stderr);
            run.stderr_has(&format!("error: --shard {value}: {why}; pass I/N"));
        }
    }
    sb.assert_no_workspaces();
}

#[test]
fn three_shards_apply_the_fleet_between_them_each_only_its_shoots() {
    // shoot--shop--dev is in shard 2 of 3, shoot--shop--prod and shoot--shop--checkout in shard 3 (the fixed
    // hash of their technical ids); shard 1 takes none.
    let sb = Sandbox::new();
    let (fleet, world) = (fleet(), fleet_world());
    let expected: [(&str, &[&str], usize); 3] = [
        ("1/3", &[], 3),
        ("2/3", &["shoot--shop--dev"], 2),
        ("3/3", &["shoot--shop--checkout", "shoot--shop--prod"], 1),
    ];
    let mut applied = BTreeSet::new();
    for (shard, shoots, left) in expected {
        let run = sb
            .run(&["apply", "-f", &fleet, "--world", &world, "--auto-approve", "--shard", shard, "--output", "json"])
            .code(0)
            .stderr_has(&format!(
                "shard {shard}: {} of the fleet's 3 shoot(s) here; {left} left to the other shards.",
                shoots.len()
            ));
        let report = run.json();
        let done: BTreeSet<String> =
            report["shoots"].as_array().unwrap().iter().map(|s| s["shoot"].as_str().unwrap().to_string()).collect();
        assert_eq!(done, shoots.iter().map(|s| s.to_string()).collect(), "shard {shard} applied only its shoots");
        assert!(applied.is_disjoint(&done), "no shoot is applied by two shards");
        applied.extend(done);
    }
    assert_eq!(sb.workspaces().into_iter().collect::<BTreeSet<_>>(), applied, "together they cover the fleet");
    assert_eq!(applied.len(), 3);
    // The whole fleet, unsharded, has nothing left to do; each shard's plan says the same.
    sb.run(&["plan", "-f", &fleet, "--detailed-exitcode"]).code(0).stdout_has("Fleet: 3 shoots, 0 with changes.");
    sb.run(&["plan", "-f", &fleet, "--shard", "3/3", "--detailed-exitcode"])
        .code(0)
        .stderr_has("shard 3/3: 2 of the fleet's 3 shoot(s) here; 1 left to the other shards.");
    // Destroy by shard too: shard 2 destroys only its shoot.
    sb.run(&["destroy", "-f", &fleet, "--auto-approve", "--shard", "2/3", "--output", "json"])
        .code(0)
        .stderr_has("shard 2/3: 1 of the fleet's 3 shoot(s) here; 2 left to the other shards.");
    let dev = sb.workspace("shoot--shop--dev");
    assert_eq!(dev["resources"].as_object().map(|r| r.len()), Some(0), "dev destroyed");
    let prod = sb.workspace("shoot--shop--prod");
    assert!(!prod["resources"].as_object().unwrap().is_empty(), "prod (shard 3) untouched");
}

#[test]
fn a_byo_subnet_used_by_shoots_of_two_shards_is_refused_by_the_shard_that_plans_second() {
    // shoot--platform--byo-x1a is in shard 3 of 3, shoot--platform--byo-x1b in shard 2: both use one subnet.
    let sb = Sandbox::new();
    let a = scenario("X1-fleet-shared-byo-subnet/shoot-a.yaml");
    let b = scenario("X1-fleet-shared-byo-subnet/shoot-b.yaml");
    let world = scenario("X1-fleet-shared-byo-subnet/world.yaml");
    sb.run(&["apply", "-f", &a, "-f", &b, "--world", &world, "--auto-approve", "--shard", "3/3"])
        .code(0)
        .stderr_has("shard 3/3: 1 of the fleet's 2 shoot(s) here; 1 left to the other shards.");
    assert_eq!(sb.workspaces(), vec!["shoot--platform--byo-x1a".to_string()]);
    // Shard 2 plans the other shoot: the shoot shard 3 applied is consulted from the state.
    for cmd in [
        &["plan", "-f", &a, "-f", &b, "--shard", "2/3"][..],
        &["apply", "-f", &a, "-f", &b, "--shard", "2/3", "--auto-approve"],
    ] {
        sb.run(cmd)
            .code(1)
            .stderr_has("shoot--platform--byo-x1b (")
            .stderr_has("shoot--platform--byo-x1a (applied, in state)");
    }
    assert_eq!(sb.workspaces(), vec!["shoot--platform--byo-x1a".to_string()], "shard 2 applied nothing");
}

#[test]
fn a_saved_plan_is_not_sharded_again() {
    let sb = Sandbox::new();
    let plan = sb.file("plan.json");
    sb.run(&["plan", "-f", &a2(), "--out", &plan]).code(0);
    let run = sb.run(&["apply", &plan, "--shard", "1/2", "--auto-approve"]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    run.stderr_has("--shard selects shoots from -f manifests; a saved plan is applied whole");
}
