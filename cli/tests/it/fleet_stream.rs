//! `trellis plan` of a fleet streams its plans: in input order, byte-stable, and a fleet that fails a
//! fleet-wide check leaves no plan file.

use crate::common;

use common::*;
use serde_json::Value;

fn shoots(plan: &Value) -> Vec<String> {
    plan["plans"]
        .as_array()
        .expect("a fleet's plans")
        .iter()
        .map(|p| p["shoot"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn regression_fleet_plan_is_written_in_input_order() {
    let sb = Sandbox::new();
    // Paths as given: bravo (A2) before alpha (A1), the reverse of their technical ids' order.
    let (a1, a2) = (a1(), a2());
    let first = sb.run(&["plan", "-f", &a2, "-f", &a1, "--output", "json"]).code(0);
    assert_eq!(shoots(&first.json()), ["shoot--dev--bravo", "shoot--dev--alpha"]);
    // Stable across runs.
    let again = sb.run(&["plan", "-f", &a2, "-f", &a1, "--output", "json"]).code(0);
    assert_eq!(again.stdout, first.stdout);

    // A directory's files in name order, whatever the shoots are called.
    let dir = sb.file("fleet");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(&a2, format!("{dir}/1-first.yaml")).unwrap();
    std::fs::copy(&a1, format!("{dir}/2-second.yaml")).unwrap();
    let out = sb.file("plan.json");
    let run = sb.run(&["plan", "-f", &dir, "--output", "json", "--out", &out]).code(0);
    assert_eq!(shoots(&run.json()), ["shoot--dev--bravo", "shoot--dev--alpha"]);
    // The plan file holds the same bytes as stdout, and the text output the same order.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), run.stdout);
    let text = sb.run(&["plan", "-f", &dir]).code(0).stdout;
    let (bravo, alpha) = (text.find("shoot--dev--bravo").unwrap(), text.find("shoot--dev--alpha").unwrap());
    assert!(bravo < alpha, "{text}");
    // A plan file in input order applies as any other.
    sb.run(&["apply", &out]).code(0);
    assert_eq!(sb.workspaces(), ["shoot--dev--alpha", "shoot--dev--bravo"]);
}

#[test]
fn fleet_with_a_duplicate_shoot_fails_with_its_message_and_writes_no_plan_file() {
    let sb = Sandbox::new();
    let dir = sb.file("fleet");
    std::fs::create_dir(&dir).unwrap();
    // The duplicate comes after other shoots were planned (and streamed).
    std::fs::copy(a1(), format!("{dir}/1.yaml")).unwrap();
    std::fs::copy(a2(), format!("{dir}/2.yaml")).unwrap();
    std::fs::copy(a1(), format!("{dir}/3.yaml")).unwrap();
    let out = sb.file("plan.json");
    for output in ["json", "text"] {
        let run = sb.run(&["plan", "-f", &dir, "--out", &out, "--output", output]).code(1);
        let last = run.stderr_lines().last().copied().unwrap_or_default().to_string();
        assert_eq!(
            last,
            format!("error: duplicate shoot shoot--dev--alpha: defined in {dir}/1.yaml and in {dir}/3.yaml"),
            "{}",
            run.stderr
        );
        assert!(!std::path::Path::new(&out).exists(), "no plan file after a failed plan");
        // Nothing is left behind beside it either (the temporary file is removed).
        let left: Vec<_> = std::fs::read_dir(sb.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.iter().all(|n| n != "plan.json" && !n.to_string_lossy().starts_with(".tmp")), "{left:?}");
    }
}

/// Found probing how CI jobs pass manifests: `-f shoots -f shoots/web.yaml` (the fleet, plus the file
/// a change touched) or one file twice failed with `duplicate shoot …: defined in shoots/web.yaml and
/// in shoots/web.yaml`. A file reached twice is read once, where it is first reached; two files
/// holding one shoot are still refused.
#[test]
fn regression_a_file_reached_twice_is_read_once() {
    let sb = Sandbox::new();
    let dir = sb.file("fleet");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(a2(), format!("{dir}/1.yaml")).unwrap();
    std::fs::copy(a1(), format!("{dir}/2.yaml")).unwrap();
    let (one, two) = (format!("{dir}/1.yaml"), format!("{dir}/2.yaml"));
    let respelled = format!("{dir}/../fleet/./2.yaml");
    // 1.yaml is bravo, 2.yaml alpha; each file is planned where it is first reached.
    let (bravo_first, alpha_first) =
        (["shoot--dev--bravo", "shoot--dev--alpha"], ["shoot--dev--alpha", "shoot--dev--bravo"]);
    for (args, expected) in [
        (vec!["-f", &dir, "-f", &two], bravo_first),
        (vec!["-f", &two, "-f", &dir], alpha_first),
        (vec!["-f", &one, "-f", &two, "-f", &one], bravo_first),
        (vec!["-f", &dir, "-f", &respelled, "-f", &dir], bravo_first),
    ] {
        let run = sb.run(&[&["plan", "--output", "json"][..], &args[..]].concat()).code(0);
        assert_eq!(shoots(&run.json()), expected, "{args:?}");
    }
    // A copy is another file: still a duplicate.
    std::fs::copy(a1(), format!("{dir}/3.yaml")).unwrap();
    sb.run(&["plan", "-f", &dir, "-f", &two])
        .code(1)
        .stderr_has(&format!("error: duplicate shoot shoot--dev--alpha: defined in {dir}/2.yaml and in {dir}/3.yaml"));
}

#[test]
fn fleet_with_a_shared_byo_subnet_fails_with_its_message_and_writes_no_plan_file() {
    let sb = Sandbox::new();
    let (a, b) =
        (scenario("X1-fleet-shared-byo-subnet/shoot-a.yaml"), scenario("X1-fleet-shared-byo-subnet/shoot-b.yaml"));
    let world = scenario("X1-fleet-shared-byo-subnet/world.yaml");
    let out = sb.file("plan.json");
    let run = sb.run(&["plan", "-f", &b, "-f", &a, "--world", &world, "--out", &out, "--output", "json"]).code(1);
    // The shoots named in technical-id order, as before, whatever the input order.
    run.stderr_has("shoot--platform--byo-x1a (")
        .stderr_has(" and shoot--platform--byo-x1b (")
        .stderr_has("must be dedicated to one shoot");
    assert!(!std::path::Path::new(&out).exists(), "no plan file after a failed plan");
}

#[test]
fn streamed_plan_checks_a_byo_subnet_against_shoots_applied_in_state() {
    let sb = Sandbox::new();
    let (a, b) =
        (scenario("X1-fleet-shared-byo-subnet/shoot-a.yaml"), scenario("X1-fleet-shared-byo-subnet/shoot-b.yaml"));
    let world = scenario("X1-fleet-shared-byo-subnet/world.yaml");
    sb.run(&["apply", "-f", &a, "--world", &world, "--auto-approve"]).code(0);
    // The applied shoot in the fleet again is not "another shoot in state".
    sb.run(&["plan", "-f", &a, "--output", "json"]).code(0);
    // Another shoot on its subnet is refused, naming the applied one.
    let out = sb.file("plan.json");
    sb.run(&["plan", "-f", &b, "--out", &out, "--output", "json"])
        .code(1)
        .stderr_has("shoot--platform--byo-x1b (")
        .stderr_has("shoot--platform--byo-x1a (applied, in state)");
    assert!(!std::path::Path::new(&out).exists(), "no plan file after a failed plan");
}

/// The fleet's files are read and parsed while the state opens (issue #9's speed): a state that cannot
/// be opened is still the command's one error, not a broken manifest found meanwhile, and nothing is
/// printed on stdout.
#[test]
fn a_state_that_cannot_open_is_the_error_even_when_a_manifest_is_broken() {
    let sb = Sandbox::new();
    let dir = sb.file("fleet");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..40 {
        std::fs::copy(a1(), format!("{dir}/{i:02}.yaml")).unwrap();
    }
    std::fs::write(format!("{dir}/00-broken.yaml"), "kind: [\n").unwrap();
    let not_a_dir = sb.file("state-file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let run = sb.run_raw(&["plan", "-f", &dir, "--state", &not_a_dir, "--output", "json"]).code(1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    let run = run.stderr_has("it exists but is not a directory");
    assert!(!run.stderr.contains("00-broken.yaml"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    // With a state that opens, the broken file is the error.
    sb.run(&["plan", "-f", &dir, "--output", "json"]).code(1).stderr_has("00-broken.yaml");
}

/// A fleet's text is written plan by plan as the shoots are planned (issue #9: 10,000 shoots held
/// ~560 MB to render the text at the end); it is the same text `show` renders of the saved plan, the
/// fleet's total line included.
#[test]
fn streamed_fleet_text_is_what_show_renders_of_the_saved_plan() {
    let sb = Sandbox::new();
    let out = sb.file("plan.json");
    let (a1, a2) = (a1(), a2());
    let planned = sb.run(&["plan", "-f", &a2, "-f", &a1, "--out", &out]).code(0);
    let shown = sb.run_raw(&["show", &out]).code(0);
    assert_eq!(planned.stdout, shown.stdout);
    let text = &planned.stdout;
    let (bravo, alpha) =
        (text.find("Shoot: shoot--dev--bravo").unwrap(), text.find("Shoot: shoot--dev--alpha").unwrap());
    assert!(bravo < alpha, "{text}");
    assert!(
        text.ends_with(
            "\n\nFleet: 2 shoots, 2 with changes.\nPlan: 12 to add, 0 to change, 0 to destroy; 2 workspaces to record.\n"
        ),
        "{text}"
    );
}

/// Item 12 of the third hardening round: a fleet failing a fleet check printed its whole text plan
/// first (3.8 MB for 1,000 shoots), while markdown printed nothing. On a failure the text and markdown
/// outputs print only the errors; JSON, which streams, is never a complete document then.
#[test]
fn regression_a_failed_fleet_prints_its_errors_and_no_plan() {
    let sb = Sandbox::new();
    let (a, b) =
        (scenario("X1-fleet-shared-byo-subnet/shoot-a.yaml"), scenario("X1-fleet-shared-byo-subnet/shoot-b.yaml"));
    let world = scenario("X1-fleet-shared-byo-subnet/world.yaml");
    for output in ["text", "markdown"] {
        let run = sb.run(&["plan", "-f", &a, "-f", &b, "--world", &world, "--output", output]).code(1);
        assert_eq!(run.stdout, "", "--output {output} printed a plan of a failed fleet");
        run.stderr_has("must be dedicated to one shoot");
    }
    // JSON streams (a fleet of 10,000 into a pipe must not wait for the end): what a failed fleet
    // wrote is no plan document a reader could take for one.
    let run = sb.run(&["plan", "-f", &a, "-f", &b, "--world", &world, "--output", "json"]).code(1);
    assert!(serde_json::from_str::<serde_json::Value>(&run.stdout).is_err(), "{}", run.stdout);
    run.stderr_has("must be dedicated to one shoot");
    // A duplicate found after other shoots were planned (and written) likewise.
    let dir = sb.file("fleet");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(a1(), format!("{dir}/1.yaml")).unwrap();
    std::fs::copy(a2(), format!("{dir}/2.yaml")).unwrap();
    std::fs::copy(a1(), format!("{dir}/3.yaml")).unwrap();
    let run = sb.run(&["plan", "-f", &dir, "--output", "text"]).code(1);
    assert_eq!(run.stdout, "");
    run.stderr_has("duplicate shoot shoot--dev--alpha");
    let run = sb.run(&["plan", "-f", &dir, "--output", "json"]).code(1);
    assert!(serde_json::from_str::<serde_json::Value>(&run.stdout).is_err(), "{}", run.stdout);
    // A fleet that plans prints its plans as before.
    let run = sb.run(&["plan", "-f", &a, "--world", &world]).code(0);
    assert!(run.stdout.contains("shoot--platform--byo-x1a"), "{}", run.stdout);
}
