//! Hostile input over every subcommand (issue 6, items 9–11): absurd numbers, wrong kinds of files,
//! garbage, control characters. No input, flag or file may make trellis panic or print a backtrace;
//! every refusal starts with one `error: ` line and exits 1.

use crate::common;

use common::*;

/// Runs `args` and checks the invariants every run must keep, whatever it was given.
#[track_caller]
fn no_panic(sb: &Sandbox, args: &[&str]) -> Run {
    let mut cmd = sb.command(args);
    cmd.env("RUST_BACKTRACE", "1");
    let run = finish(&mut cmd);
    assert_ne!(run.code, 101, "`{}` panicked:\n{}", run.cmd, run.stderr);
    for word in ["panicked", "backtrace", "RUST_BACKTRACE", "\u{1b}"] {
        assert!(!run.stderr.contains(word), "`{}` printed {word:?}:\n{}", run.cmd, run.stderr);
    }
    if run.code != 0 {
        assert_eq!(run.code, 1, "`{}`: a refusal exits 1:\n{}", run.cmd, run.stderr);
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("error: "), "`{}`: the first line is `error: …`:\n{}", run.cmd, run.stderr);
        assert!(!first.contains("error: error"), "one `error:` prefix: {first}");
    }
    run
}

/// Files a clumsy user or an attacker might pass where a manifest, world or plan file is expected.
fn hostile_files(sb: &Sandbox) -> Vec<String> {
    let write = |name: &str, bytes: &[u8]| {
        let path = sb.file(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let wide = format!("x: [{}]\n", vec!["1"; 300_000].join(","));
    let control = std::fs::read_to_string(a1()).unwrap().replace("name: alpha", "name: \"al\\e[2Jpha\\r\"");
    let dir = sb.file("a-dir.yaml");
    std::fs::create_dir_all(&dir).unwrap();
    vec![
        sb.file("does-not-exist.yaml"),
        dir,
        "/dev/null".to_string(),
        write("empty.yaml", b""),
        write("binary.yaml", &[0xff, 0xfe, 0x00, 0x01, 0x9f]),
        write("nul.yaml", b"apiVersion: core.gardener.cloud/v1beta1\0\nkind: Shoot\n"),
        write("deep.json", deep.as_bytes()),
        write("wide.yaml", wide.as_bytes()),
        write("control.yaml", control.as_bytes()),
        write("plan-v9.json", br#"{"format_version": 9, "plans": []}"#),
        write("plan-bad.json", br#"{"format_version": 1, "plans": [{"x": 1}]}"#),
        write("number.json", b"{\"format_version\": 1e400}"),
    ]
}

#[test]
fn regression_hostile_files_never_panic_any_subcommand() {
    let sb = Sandbox::new();
    let good_plan = sb.file("good.plan.json");
    sb.run(&["plan", "-f", &a1(), "--out", &good_plan]).code(0);
    for file in hostile_files(&sb) {
        let f = file.as_str();
        for args in [
            vec!["validate", "-f", f],
            vec!["plan", "-f", f],
            vec!["plan", "-f", &a1(), "--world", f],
            vec!["apply", "-f", f, "--auto-approve"],
            vec!["apply", f],
            vec!["destroy", "-f", f, "--auto-approve"],
            vec!["show", f],
            vec!["show", f, "--output", "markdown"],
            vec!["diff", f, &good_plan],
            vec!["diff", &good_plan, f],
            vec!["world", "export", "-f", f],
            vec!["world", "export", "-f", &a1(), "--out", f],
        ] {
            no_panic(&sb, &args);
        }
    }
}

/// A path that names something that never ends (`/dev/zero`; a pipe, a device) where a manifest, world,
/// plan or workspace file is expected: every reader stops at its limit (1 GiB) with one line naming the
/// path, where each read on until the system killed the process for its memory (5 GiB in 8 s). Slow
/// (reads 1 GiB a run): on the slow list of .config/nextest.toml.
#[test]
fn regression_an_input_that_never_ends_is_refused_at_the_limit() {
    let sb = Sandbox::new();
    let zero = "/dev/zero";
    // One command a reader: `validate -f` reads as `plan -f` does, `apply PLAN` and `diff` as `show`.
    for (args, with_state) in [
        (vec!["plan", "-f", zero], true),
        (vec!["plan", "-f", &a1(), "--world", zero], true),
        (vec!["show", zero], false),
        (vec!["state", "push", "shoot--dev--alpha", zero], true),
    ] {
        let run = if with_state { sb.run(&args) } else { sb.run_raw(&args) };
        assert_eq!(run.code, 1, "`{}`: {}", run.cmd, run.stderr);
        let lines = run.stderr_lines();
        assert_eq!(lines.len(), 1, "`{}`: one line: {}", run.cmd, run.stderr);
        assert!(lines[0].contains(zero) && lines[0].contains("larger than 1024 MiB"), "`{}`: {}", run.cmd, lines[0]);
    }
    sb.assert_no_workspaces();
}

#[test]
fn regression_hostile_flags_never_panic_any_subcommand() {
    let sb = Sandbox::new();
    let a1 = a1();
    let huge = "2305843009213693952";
    let cases: Vec<Vec<&str>> = vec![
        vec!["apply", "-f", &a1, "--auto-approve", "--parallelism", huge],
        vec!["apply", "-f", &a1, "--auto-approve", "--parallelism", "0"],
        vec!["apply", "-f", &a1, "--auto-approve", "--parallelism", "-1"],
        vec!["apply", "-f", &a1, "--auto-approve", "--parallelism", "many"],
        vec!["destroy", "-f", &a1, "--auto-approve", "--parallelism", huge],
        vec!["plan", "-f", &a1, "--sim-latency-ms", "18446744073709551615"],
        vec!["plan", "-f", &a1, "--sim-write-latency-ms", "99999999999"],
        vec!["plan", "-f", &a1, "--lock-timeout", "99999999999999999999999h"],
        vec!["plan", "-f", &a1, "--lock-timeout", "\u{1b}[2J"],
        vec!["state", "list", "--lock-timeout", "P99999999999Y"],
        vec!["plan", "-f", &a1, "--output", "yaml"],
        vec!["plan", "-f", &a1, "--cloud", "gcp"],
        vec!["plan", "-f", &a1, "--cloud", "azure"],
        vec!["plan", "-f", &a1, "--cloud", "azure", "--subscription", "../../x?y"],
        vec!["plan", "-f", &a1, "--cloud", "azure", "--subscription", "s", "--azure-endpoint", "not a url"],
        vec!["plan"],
        vec!["plan", "-f", ""],
        vec!["world", "export"],
        vec!["world", "export", "-f", &a1, "--cloud", "azure"],
        vec!["world", "export", "-f", &a1, "--cloud", "gcp", "--project", "NOT a project"],
        vec!["world", "export", "-f", &a1, "--out", ""],
        vec!["state", "show", ""],
        vec!["state", "show", "../../etc/passwd"],
        vec!["state", "unlock", "\u{1b}[2J"],
        vec!["state", "rm", "../../etc/passwd"],
        vec!["state", "rm", "shoot--dev--alpha", "\u{1b}[2J", "--backup", ""],
        vec!["state", "rm", "shoot--dev--alpha", "--backup", "/proc/nope/x.json"],
        vec!["output", ""],
        vec!["output", "shoot--dev--alpha", "\u{1b}[2J"],
        vec!["sim", "service", "create", "--shoot", "x", "--name", "web", "--port", "0"],
        vec!["sim", "service", "create", "--shoot", "x", "--name", "web", "--port", "70000"],
        vec!["sim", "node", "add", "--shoot", "x", "--name", "n", "--pod-cidr", "10.0.0.0/99"],
        vec!["sim", "bastion", "create", "--shoot", "x", "--name", "b", "--operator-cidr", "nope"],
        vec!["apply", "--digest", "zz"],
        vec!["diff", "a"],
        vec!["frobnicate"],
    ];
    for args in &cases {
        no_panic(&sb, args);
    }
    // With a state in place, the same again against it.
    sb.run(&["apply", "-f", &a1, "--auto-approve"]).code(0);
    for args in &cases {
        no_panic(&sb, args);
    }
}

#[test]
fn regression_parallelism_out_of_range_is_a_usage_error() {
    let sb = Sandbox::new();
    for value in ["2305843009213693952", "0", "1001"] {
        sb.run(&["apply", "-f", &a1(), "--auto-approve", "--parallelism", value])
            .code(1)
            .stderr_has(&format!("error: invalid value '{value}' for '--parallelism <PARALLELISM>'"))
            .stderr_has("1..=1000");
    }
    sb.assert_no_workspaces();
}

#[test]
fn regression_absurd_sim_latency_is_refused_not_a_hang() {
    let sb = Sandbox::new();
    sb.run(&["plan", "-f", &a1(), "--sim-latency-ms", "18446744073709551615"])
        .code(1)
        .stderr_has("error: invalid value '18446744073709551615' for '--sim-latency-ms <SIM_LATENCY_MS>'");
}

#[test]
fn regression_out_must_not_overwrite_an_input_manifest() {
    let sb = Sandbox::new();
    let manifest = sb.file("shoot.yaml");
    std::fs::copy(a1(), &manifest).unwrap();
    let before = std::fs::read(&manifest).unwrap();
    sb.run(&["plan", "-f", &manifest, "--out", &manifest])
        .code(1)
        .stderr_has(&format!("error: --out {manifest}: is the manifest of shoot shoot--dev--alpha"));
    // Through a directory input, and spelled differently, too.
    sb.run(&["plan", "-f", sb.path().to_str().unwrap(), "--out", "./shoot.yaml"])
        .code(1)
        .stderr_has("is the manifest of shoot");
    assert_eq!(std::fs::read(&manifest).unwrap(), before, "the manifest is untouched");
    sb.run(&["plan", "-f", &manifest, "--out", sb.path().to_str().unwrap()]).code(1).stderr_has("is a directory");
}

/// Found probing `--out`: a plan file in a directory that does not exist failed with `cannot write
/// plan file …/p.json: No such file or directory (os error 2) at path "…/.tmpWmeXVK"` — the random
/// name of a temporary file the user never asked for — and `world export --out` found it only at the
/// end of its export, where its context said `cannot write world file …: cannot write plan file …`.
/// Now `--out`'s directory is checked before anything is planned or read, naming the directory.
#[test]
fn regression_out_in_a_directory_that_does_not_exist_is_refused_up_front_naming_it() {
    let sb = Sandbox::new();
    let missing = sb.file("no-such-dir");
    let out = format!("{missing}/plan.json");
    let r = sb.run(&["plan", "-f", &a1(), "--out", &out]).code(1).stderr_has(&format!(
        "error: --out {out}: cannot use its directory {missing}: No such file or directory (os error 2); create the directory first (mkdir -p {missing}) or name a file in an existing one"
    ));
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(!r.stderr.contains("at path"), "no temporary file named: {}", r.stderr);
    assert!(!std::path::Path::new(sb.state()).exists(), "refused before the state is opened");
    // A file where the directory should be.
    let file = sb.file("a-file");
    std::fs::write(&file, "x").unwrap();
    sb.run(&["plan", "-f", &a1(), "--out", &format!("{file}/plan.json")])
        .code(1)
        .stderr_has(&format!("error: --out {file}/plan.json: {file} is not a directory"));
    // `world export` checks it before it reads the cloud.
    sb.run(&["world", "export", "-f", &a1(), "--cloud", "azure", "--subscription", "s", "--out", &out])
        .code(1)
        .stderr_has(&format!("error: --out {out}: cannot use its directory {missing}"));
}

#[test]
fn regression_plan_file_parse_errors_say_the_cause_once() {
    let sb = Sandbox::new();
    let bad = sb.file("bad.json");
    std::fs::write(&bad, br#"{"format_version": 1, "plans": [{"x": 1}]}"#).unwrap();
    let run = sb.run_raw(&["show", &bad]).code(1);
    assert_eq!(run.stderr.matches("missing field").count(), 1, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn regression_field_is_immutable_is_said_once() {
    let sb = Sandbox::new();
    sb.run(&["apply", "-f", &a1(), "--auto-approve"]).code(0);
    let changed = sb.file("alpha-workers-changed.yaml");
    let text = std::fs::read_to_string(a1()).unwrap();
    assert!(text.contains("workers: 10.250.0.0/19"), "A1 has a single workers CIDR");
    std::fs::write(&changed, text.replace("workers: 10.250.0.0/19", "workers: 10.250.32.0/19")).unwrap();
    for command in ["validate", "plan"] {
        let run = sb.run(&[command, "-f", &changed]).code(1);
        assert_eq!(run.stderr.matches("field is immutable").count(), 1, "{command}:\n{}", run.stderr);
        assert!(run.stderr.starts_with("error: "), "{command}:\n{}", run.stderr);
    }
}

#[test]
fn regression_control_characters_never_reach_the_terminal() {
    let sb = Sandbox::new();
    let file = sb.file("control.yaml");
    let text = std::fs::read_to_string(a1()).unwrap().replace("name: alpha", "name: \"al\\e[2Jpha\\r\"");
    std::fs::write(&file, text).unwrap();
    for args in [vec!["validate", "-f", &file], vec!["plan", "-f", &file]] {
        let run = no_panic(&sb, &args);
        assert!(!run.stdout.contains('\u{1b}') && !run.stdout.contains('\r'), "{}", run.stdout);
        assert!(!run.stderr.contains('\r'), "{}", run.stderr);
    }
}

#[test]
fn regression_yaml_limits_are_said_in_words_not_debug_text() {
    let sb = Sandbox::new();
    let wide = sb.file("wide.yaml");
    std::fs::write(&wide, format!("x: [{}]\n", vec!["1"; 300_000].join(","))).unwrap();
    let world = sb.file("wide-world.yaml");
    std::fs::write(
        &world,
        format!(
            "azure:\n  subscriptionId: 0b7c3a52-6e4f-4b8e-9a51-2f1d8c9e7a10\n  resources: [{}]\n",
            vec!["1"; 300_000].join(",")
        ),
    )
    .unwrap();
    for run in [sb.run(&["validate", "-f", &wide]), sb.run(&["plan", "-f", &a1(), "--world", &world])] {
        let run = run.code(1).stderr_has("the document is too large or too complex to read safely (");
        assert!(!run.stderr.contains("Nodes {") && !run.stderr.contains("budget breached"), "{}", run.stderr);
    }
}

#[test]
fn regression_state_list_escapes_lock_holders() {
    use trellis_state::{LockInfo, SledStore, StateStore};
    let sb = Sandbox::new();
    sb.run(&["apply", "-f", &a1(), "--auto-approve"]).code(0);
    // A lock taken on another machine whose user name carries terminal escapes.
    let store = SledStore::open(std::path::Path::new(sb.state()), "test").unwrap();
    let holder = LockInfo { user: "ev\u{1b}[2Jil\r".into(), host: "elsewhere".into(), ..LockInfo::here("apply") };
    store.lock("shoot--dev--alpha", &holder).unwrap();
    store.close().unwrap();
    let list = sb.run(&["state", "list"]).code(0).stdout_has("locked: apply by ev\\x1b[2Jil\\r@elsewhere");
    assert!(!list.stdout.contains('\u{1b}') && !list.stdout.contains('\r'), "{}", list.stdout);
}

/// `apply`/`destroy --output markdown|dot|mermaid|html` printed the text report as if nothing was
/// asked: a report of what was done has no such rendering, so the value is refused before anything
/// runs, naming the two there are.
#[test]
fn regression_apply_and_destroy_refuse_plan_only_outputs() {
    let sb = Sandbox::new();
    for command in ["apply", "destroy"] {
        // Markdown is a report too (the plan and a table of outcomes); graphs and HTML are the plan's.
        for output in ["dot", "mermaid", "html"] {
            sb.run(&[command, "-f", &a1(), "--auto-approve", "--output", output])
                .code(1)
                .stderr_has(&format!("error: invalid value '{output}' for '--output <OUTPUT>'"))
                .stderr_has("[possible values: text, json, markdown]");
        }
    }
    sb.assert_no_workspaces();
}

/// Item 10 of the third hardening round: a value quoted in an error (a world-file id, an `-f` path,
/// a `state show` id, a plan-file path, an `--expect-digest` value) printed its newline raw, so a
/// forged line ("No changes.") could appear on its own. Every error is one line per fact; a value's
/// newline is shown as `\n`.
#[test]
fn regression_a_newline_in_a_quoted_value_cannot_forge_a_line() {
    let sb = Sandbox::new();
    let forged = "No changes. Your infrastructure matches the configuration.";
    let evil = format!("x\n{forged}");
    let world = sb.file("world.yaml");
    let id = format!("/subscriptions/0b7c3a52-6e4f-4b8e-9a51-2f1d8c9e7a10/resourceGroups/a\n{forged}/not-an-id");
    std::fs::write(&world, format!("azure:\n  subscriptionId: 0b7c3a52-6e4f-4b8e-9a51-2f1d8c9e7a10\n  resources:\n    - id: {}\n      location: westeurope\n", serde_json::json!(id)))
        .unwrap();
    let plan = sb.file("good.plan.json");
    sb.run(&["plan", "-f", &a1(), "--out", &plan]).code(0);
    let missing_plan = sb.file(&format!("missing{evil}.json"));
    let missing_manifest = sb.file(&format!("missing{evil}.yaml"));
    let digest = format!("{}\n{forged}", "a".repeat(64));
    let runs = [
        vec!["plan".to_string(), "-f".into(), a1(), "--world".into(), world.clone()],
        vec!["plan".into(), "-f".into(), missing_manifest.clone()],
        vec!["validate".into(), "-f".into(), missing_manifest],
        vec!["state".into(), "show".into(), evil.clone()],
        vec!["state".into(), "rm".into(), evil.clone()],
        vec!["output".into(), evil.clone()],
        vec!["apply".into(), missing_plan.clone()],
        vec!["apply".into(), plan.clone(), "--expect-digest".into(), digest],
        vec!["plan".into(), "-f".into(), a1(), "--target".into(), evil.clone()],
        vec!["plan".into(), "-f".into(), a1(), "--target".into(), format!("azure.{evil}")],
        vec!["plan".into(), "-f".into(), a1(), "--replace".into(), evil.clone()],
    ];
    let show = finish(&mut sb.raw_command(&["show", &missing_plan]));
    for (args, run) in runs
        .iter()
        .map(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            (args.join(" "), no_panic(&sb, &args))
        })
        .chain([("show".to_string(), show)])
    {
        let _ = args;
        assert_eq!(run.code, 1, "`{}` is refused:\n{}", run.cmd, run.stderr);
        assert!(
            !run.stderr.lines().chain(run.stdout.lines()).any(|l| l.trim_start().starts_with("No changes")),
            "`{}` printed a forged line:\n{}",
            run.cmd,
            run.stderr
        );
        assert!(run.stderr.contains("\\nNo changes"), "`{}`: the newline is shown as \\n:\n{}", run.cmd, run.stderr);
    }
}
