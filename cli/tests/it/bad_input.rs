//! Bad input: each mistake is exit 1, a clear message on stderr, and nothing written.

use crate::common;

use common::*;

/// `plan` and `apply -f … --auto-approve` of `file` both fail with exit 1 and leave no workspace.
/// Returns the plan's run.
#[track_caller]
fn refused(sb: &Sandbox, file: &str) -> Run {
    let plan = sb.run(&["plan", "-f", file]).code(1);
    assert_eq!(plan.stdout, "", "no plan is printed for bad input");
    let apply = sb.run(&["apply", "-f", file, "--auto-approve"]).code(1);
    assert!(!apply.stdout.contains("apply complete"), "{apply:?}");
    assert_eq!(apply.stderr, plan.stderr, "apply reports the same error as plan");
    sb.assert_no_workspaces();
    plan
}

/// Asserts stderr is exactly one `error: …` line and returns it.
#[track_caller]
fn one_error_line(run: &Run) -> &str {
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{}", run.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    lines[0]
}

#[test]
fn malformed_yaml_names_file_line_and_column() {
    let sb = Sandbox::new();
    let file = data("malformed.yaml");
    let (line, col) = position_of(&file, "[westeurope");
    let run = refused(&sb, &file);
    let msg = one_error_line(&run);
    assert!(msg.contains(&format!("{file}:{line}:{col}: ")), "file:line:col of the unclosed bracket: {msg}");
    assert!(msg.contains("unclosed bracket"), "{msg}");
    sb.run(&["validate", "-f", &file]).code(1).stderr_has(&format!("{file}:{line}:{col}: "));
}

#[test]
fn unknown_infrastructure_config_field_names_file_line_and_column() {
    let sb = Sandbox::new();
    let file = data("unknown-field.yaml");
    let (line, col) = position_of(&file, "bogusField");
    let run = refused(&sb, &file);
    let msg = one_error_line(&run);
    assert!(msg.contains(&format!("{file}:{line}:{col}: unknown field `bogusField`")), "{msg}");
}

#[test]
fn wrong_kind_or_api_version_is_refused() {
    let sb = Sandbox::new();
    for (fixture, found) in [
        ("wrong-kind.yaml", "found core.gardener.cloud/v1beta1 Shoots"),
        ("wrong-api-version.yaml", "found core.gardener.cloud/v1alpha1 Shoot"),
    ] {
        let file = data(fixture);
        let run = refused(&sb, &file);
        let msg = one_error_line(&run);
        assert!(msg.contains(&file), "names the file: {msg}");
        assert!(msg.contains("expected apiVersion core.gardener.cloud/v1beta1, kind Shoot"), "{msg}");
        assert!(msg.contains(found), "{msg}");
    }
    let file = data("wrong-infra-api-version.yaml");
    let run = refused(&sb, &file);
    let msg = one_error_line(&run);
    assert!(msg.contains("spec.provider.infrastructureConfig"), "{msg}");
    assert!(msg.contains("found azure.provider.extensions.gardener.cloud/v1beta9 InfrastructureConfig"), "{msg}");
}

#[test]
fn invalid_workers_cidr_is_the_upstream_field_error() {
    let sb = Sandbox::new();
    let file = data("bad-workers-cidr.yaml");
    let run = refused(&sb, &file);
    let lines = run.stderr_lines();
    assert!(
        lines.contains(&"networks.workers: Invalid value: \"10.250.0.0/33\": invalid CIDR address: 10.250.0.0/33"),
        "{}",
        run.stderr
    );
    assert!(
        lines.iter().any(|l| l.contains("shoot--dev--alpha") && l.contains("1 validation error(s)")),
        "{}",
        run.stderr
    );
    assert_eq!(lines.len(), 2, "a header and the one error:\n{}", run.stderr);

    let validated = sb.run(&["validate", "-f", &file]).code(1);
    assert!(
        validated
            .stderr_lines()
            .contains(&"networks.workers: Invalid value: \"10.250.0.0/33\": invalid CIDR address: 10.250.0.0/33"),
        "{}",
        validated.stderr
    );
}

#[test]
fn validate_prints_every_error_one_per_line() {
    let sb = Sandbox::new();
    let file = data("many-mistakes.yaml");
    let run = sb.run(&["validate", "-f", &file]).code(1);
    assert_eq!(run.stdout, "");
    let expected = [
        "networks.vnet.cidr: Invalid value: \"10.250.0.0/33\": invalid CIDR address: 10.250.0.0/33",
        "networks.workers: Invalid value: \"10.300.0.0/19\": invalid CIDR address: 10.300.0.0/19",
        "networks.natGateway.idleConnectionTimeoutMinutes: Invalid value: 500: idleConnectionTimeoutMinutes values must range between 4 and 120",
        "networks.natGateway.sku: Unsupported value: \"Premium\": supported values: \"Standard\", \"StandardV2\"",
        "identity.resourceGroup: Required value: must not be empty",
        "identity.name: Invalid value: \"\": must not be fewer than 3 characters, got 0",
        "spec.provider.workers[0].volume: Required value: must not be nil",
    ];
    let lines = run.stderr_lines();
    assert_eq!(lines[0], format!("error: shoot--dev--many ({file}): {} validation error(s):", expected.len()));
    assert_eq!(&lines[1..], &expected, "every error, one per line, in field order");
    // Each is `field.path: Type: detail`.
    let types = ["Required value", "Invalid value", "Forbidden", "Unsupported value", "Duplicate value"];
    for line in &lines[1..] {
        let mut parts = line.splitn(3, ": ");
        let (path, ty, detail) = (parts.next().unwrap(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        assert!(!path.is_empty() && path.chars().all(|c| c.is_ascii_alphanumeric() || ".[]".contains(c)), "{line}");
        assert!(types.contains(&ty), "{line}");
        assert!(!detail.is_empty(), "{line}");
    }

    // validate needs no cloud and no state: it does not even create the state dir.
    assert!(!std::path::Path::new(sb.state()).exists());
    // plan reports the same errors and writes nothing.
    let plan = sb.run(&["plan", "-f", &file]).code(1);
    for e in expected {
        assert!(plan.stderr_lines().contains(&e), "plan lacks {e:?}:\n{}", plan.stderr);
    }
    sb.assert_no_workspaces();

    // A valid shoot validates.
    sb.run(&["validate", "-f", &a1()]).code(0).stdout_has("1 shoot(s) valid.");
}

#[test]
fn world_file_with_a_missing_parent_names_both_ids() {
    let sb = Sandbox::new();
    let world = data("world-missing-parent.yaml");
    let shoot = scenario("A3-byo-vnet-nat-user-ips/shoot.yaml");
    let sub = "/subscriptions/7f3c2a10-4b5e-4d8f-9a61-0c2e8b7d5f31";
    let vnet =
        format!("{sub}/resourceGroups/platform-network/providers/Microsoft.Network/virtualNetworks/platform-vnet");
    let rg = format!("{sub}/resourceGroups/platform-network");
    for args in [
        vec!["plan", "-f", &shoot, "--world", &world],
        vec!["apply", "-f", &shoot, "--world", &world, "--auto-approve"],
    ] {
        let run = sb.run(&args).code(1);
        let msg = one_error_line(&run);
        assert!(msg.contains(&world), "names the world file: {msg}");
        assert!(msg.contains(&format!("resource {vnet} ")), "names the child: {msg}");
        assert!(msg.contains(&format!("references missing parent {rg};")), "names the parent: {msg}");
    }
    sb.assert_no_workspaces();
}

#[test]
fn state_dir_that_is_a_regular_file_is_named() {
    let sb = Sandbox::new();
    let not_a_dir = sb.file("not-a-dir");
    std::fs::write(&not_a_dir, "keep me\n").unwrap();
    for args in [
        vec!["plan", "-f", &a1(), "--state", &not_a_dir],
        vec!["apply", "-f", &a1(), "--auto-approve", "--state", &not_a_dir],
        vec!["state", "list", "--state", &not_a_dir],
    ] {
        let run = sb.run_raw(&args).code(1);
        let msg = one_error_line(&run);
        assert!(msg.contains(&format!("state dir {not_a_dir}")), "names the path: {msg}");
        assert!(msg.contains("not a directory"), "{msg}");
    }
    assert_eq!(std::fs::read_to_string(&not_a_dir).unwrap(), "keep me\n", "the file is left alone");
}

#[test]
fn missing_manifest_path_is_named() {
    let sb = Sandbox::new();
    let missing = sb.file("no-such-shoot.yaml");
    let missing_dir = sb.file("no-such-fleet");
    for path in [&missing, &missing_dir] {
        for args in
            [vec!["validate", "-f", path], vec!["plan", "-f", path], vec!["apply", "-f", path, "--auto-approve"]]
        {
            let run = sb.run(&args).code(1);
            let msg = one_error_line(&run);
            assert!(msg.contains(path.as_str()), "names the path: {msg}");
            assert!(msg.contains("No such file or directory"), "{msg}");
            assert!(msg.starts_with("error: cannot read ") && msg.ends_with("; check the path given with -f"), "{msg}");
        }
    }
    // No -f at all.
    let run = sb.run(&["plan"]).code(1);
    assert!(one_error_line(&run).contains("no manifests given; pass -f FILE"), "{}", run.stderr);
    sb.assert_no_workspaces();
}

#[test]
fn regression_fleet_dir_with_unreadable_entries_is_refused_naming_each() {
    let sb = Sandbox::new();
    let fleet = sb.path().join("fleet");
    std::fs::create_dir(&fleet).unwrap();
    std::fs::copy(a1(), fleet.join("a.yaml")).unwrap();
    std::fs::copy(a2(), fleet.join("b.yaml")).unwrap();
    std::os::unix::fs::symlink(fleet.join("gone.yaml"), fleet.join("c.yaml")).unwrap();
    std::fs::create_dir(fleet.join("d.yaml")).unwrap();
    let dir = fleet.to_str().unwrap();
    let run = refused(&sb, dir);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 2, "one line per unreadable entry:\n{}", run.stderr);
    assert!(
        lines[0]
            .starts_with(&format!("error: {dir}/c.yaml: cannot read it: it is a symbolic link to {dir}/gone.yaml: ")),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with(&format!("{dir}/d.yaml: is a directory, not a manifest file")), "{}", lines[1]);
    sb.run(&["validate", "-f", dir]).code(1).stderr_has(&format!("{dir}/c.yaml: cannot read it"));
}

#[test]
fn regression_quoted_boolean_or_integer_is_refused_with_file_line_column() {
    let sb = Sandbox::new();
    for (scenario, plain, quoted, expected) in [
        (a2(), "zoned: true", "zoned: \"true\"", "a boolean (true or false)"),
        (a2(), "zoned: true", "zoned: 'yes'", "a boolean (true or false)"),
        (a1(), "maximum: 5", "maximum: \"5\"", "an integer (i32)"),
    ] {
        let text = std::fs::read_to_string(&scenario).unwrap();
        assert!(text.contains(plain), "{scenario} has {plain}");
        let file = sb.file("shoot.yaml");
        std::fs::write(&file, text.replacen(plain, quoted, 1)).unwrap();
        let (line, col) = position_of(&file, quoted);
        let value = quoted.split_once(": ").unwrap().1;
        let run = refused(&sb, &file);
        let msg = one_error_line(&run);
        assert_eq!(
            msg,
            format!(
                "error: {file}:{line}:{}: invalid value {value}: expected {expected}, not a quoted string; write the value without quotes (Kubernetes reads a quoted value as a string)",
                col + quoted.find(": ").unwrap() + 2
            )
        );
        sb.run(&["validate", "-f", &file]).code(1).stderr_has(&format!("{file}:{line}:"));
    }
}

const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

#[test]
fn regression_invalid_shoot_name_is_refused_before_anything_uses_it() {
    let sb = Sandbox::new();
    let file = sb.file("shoot.yaml");
    let text = std::fs::read_to_string(a1()).unwrap();
    // Upper case, two hyphens, and bytes that would clear the screen and rewrite the line.
    let text = text.replacen("  name: alpha\n", "  name: \"Al--pha\\e[2J\\rok\"\n", 1);
    std::fs::write(&file, text).unwrap();
    let run = refused(&sb, &file);
    assert!(!has_ansi(&run.stderr) && !run.stderr.contains('\r'), "no raw control characters: {:?}", run.stderr);
    assert_eq!(
        run.stderr_lines(),
        vec![
            format!("error: {file}: 2 validation error(s) in the shoot's name:"),
            format!("metadata.name: Invalid value: \"Al--pha\\x1b[2J\\rok\": {LABEL_MSG}"),
            "metadata.name: Invalid value: \"Al--pha\\x1b[2J\\rok\": name may not contain two consecutive hyphens"
                .to_string(),
        ]
    );
    let validated = sb.run(&["validate", "-f", &file]).code(1);
    assert_eq!(validated.stderr, run.stderr);
    // Nothing was created for the shoot, not even a state dir.
    assert!(!std::path::Path::new(sb.state()).exists());
}

#[test]
fn regression_new_shoot_whose_project_and_name_exceed_21_characters_is_refused() {
    let sb = Sandbox::new();
    let file = sb.file("shoot.yaml");
    // Project `dev` (3) + 19 = 22.
    let text = std::fs::read_to_string(a1()).unwrap().replacen("  name: alpha\n", "  name: alpha-with-long-name\n", 1);
    std::fs::write(&file, text).unwrap();
    let expected = "metadata.name: Invalid value: \"alpha-with-long-name\": the length of the shoot name and the project name must not exceed 21 characters (project: dev; shoot: alpha-with-long-name)";
    let validated = sb.run(&["validate", "-f", &file]).code(1);
    assert_eq!(
        validated.stderr_lines(),
        vec![format!("error: shoot--dev--alpha-with-long-name ({file}): 1 validation error(s):"), expected.to_string()]
    );
    let run = refused(&sb, &file);
    assert!(run.stderr_lines().contains(&expected), "{}", run.stderr);
}

#[test]
fn regression_plan_file_whose_source_has_an_invalid_name_is_refused() {
    let sb = Sandbox::new();
    let plan = sb.file("plan.json");
    sb.run(&["plan", "-f", &a1(), "--out", &plan]).code(0);
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    // A plan file of one shoot is that shoot's plan.
    doc["source"]["shoot"]["metadata"]["name"] = "alpha/../../x\u{1b}[2J".into();
    std::fs::write(&plan, serde_json::to_string(&doc).unwrap()).unwrap();
    let run = sb.run(&["apply", &plan]).code(1);
    assert!(!has_ansi(&run.stderr), "{:?}", run.stderr);
    let lines = run.stderr_lines();
    assert!(lines[0].starts_with("error: shoot--dev--alpha: the plan's source manifest ("), "{}", run.stderr);
    assert!(
        lines[0].ends_with(") has an invalid name; fix the manifest and re-run `trellis plan --out`"),
        "{}",
        run.stderr
    );
    assert_eq!(lines[1..], [format!("metadata.name: Invalid value: \"alpha/../../x\\x1b[2J\": {LABEL_MSG}")]);
    sb.assert_no_workspaces();
}
