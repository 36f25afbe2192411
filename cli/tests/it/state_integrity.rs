//! State integrity with the real binary: concurrent first applies, damaged databases, `state pull` /
//! `state push`, plans that write nothing, and directories that are not trellis state dirs.

use crate::common;

use common::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

const BRAVO: &str = "shoot--dev--bravo";

/// Every file under `dir`, relative path -> content.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), fs::read(&path).expect("read file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// `files` with the stamps left out of `seal.json` (what the file system says of sled's files: inode
/// and times, which sled's open of the database moves without changing a byte; every run seals them as
/// it leaves them).
fn unstamped(mut files: BTreeMap<PathBuf, Vec<u8>>) -> BTreeMap<PathBuf, Vec<u8>> {
    if let Some(seal) = files.get_mut(Path::new("seal.json")) {
        let mut value: serde_json::Value = serde_json::from_slice(seal).expect("seal.json parses");
        for file in value["files"].as_array_mut().into_iter().flatten() {
            file.as_object_mut().expect("a sealed file").remove("stat");
        }
        *seal = serde_json::to_vec(&value).unwrap();
    }
    files
}

/// Writes `files` (as returned by [`files`]) under `dir`.
fn write_files(dir: &Path, files: &BTreeMap<PathBuf, Vec<u8>>) {
    for (rel, bytes) in files {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
}

/// Asserts a one-line "damaged" refusal for the state dir `dir`.
#[track_caller]
fn assert_refused_as_damaged(run: Run, dir: &str) -> String {
    let run = run.code(1);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "one line from `{}`:\n{}", run.cmd, run.stderr);
    let line = lines[0].to_string();
    assert!(line.starts_with(&format!("error: state in {dir} is damaged: ")), "`{}`: {line}", run.cmd);
    assert!(!line.contains("backtrace") && !line.contains("offset None"), "no Debug text: {line}");
    assert!(
        line.contains(&format!("restore with `mv {dir} {dir}.damaged`"))
            && line.contains(&format!("`trellis state push SHOOT {dir}.damaged/backups/SHOOT.json --state {dir}`")),
        "`{}` says how to restore: {line}",
        run.cmd
    );
    line
}

/// Every command that reads the state, on the sandbox's state dir.
fn state_commands() -> Vec<Vec<String>> {
    let a2 = a2();
    [
        vec!["plan", "-f", &a2],
        vec!["apply", "-f", &a2, "--auto-approve"],
        vec!["destroy", "-f", &a2, "--auto-approve"],
        vec!["validate", "-f", &a2],
        vec!["state", "list"],
        vec!["state", "show", BRAVO],
        vec!["state", "pull", BRAVO],
        vec!["state", "unlock", BRAVO],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(str::to_string).collect())
    .collect()
}

fn run_strings(sb: &Sandbox, args: &[String]) -> Run {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.run(&args)
}

/// A world file with `n` resource groups that exist outside trellis. Reading it is what a run does
/// between starting and opening the state dir, as with any BYO shoot's world file.
fn world_with_resource_groups(sb: &Sandbox, n: usize) -> String {
    let sub = "0b7c3a52-6e4f-4b8e-9a51-2f1d8c9e7a10";
    let mut yaml = format!("azure:\n  subscriptionId: {sub}\n  resources:\n");
    for i in 0..n {
        yaml.push_str(&format!(
            "    - id: /subscriptions/{sub}/resourceGroups/outside-{i}\n      location: westeurope\n"
        ));
    }
    let path = sb.file("world.yaml");
    fs::write(&path, yaml).unwrap();
    path
}

#[test]
fn regression_two_concurrent_first_applies_keep_the_winners_state() {
    for round in 0..20 {
        let sb = Sandbox::new();
        let world = world_with_resource_groups(&sb, 1_000);
        let runs: Vec<Run> = std::thread::scope(|scope| {
            let both: Vec<_> = (0..2)
                .map(|_| scope.spawn(|| sb.run(&["apply", "-f", &a2(), "--auto-approve", "--world", &world])))
                .collect();
            both.into_iter().map(|h| h.join().expect("apply thread")).collect()
        });
        let mut applied = 0;
        for run in &runs {
            match run.code {
                0 => {
                    assert!(run.stdout.contains(&format!("{BRAVO}: apply complete.")), "round {round}: {run:?}");
                    applied += 1;
                }
                1 => {
                    let lines = run.stderr_lines();
                    assert_eq!(lines.len(), 1, "round {round}: one line: {}", run.stderr);
                    assert!(
                        lines[0].starts_with(&format!("error: state dir {} is in use by another", sb.state())),
                        "round {round}: a clear refusal: {}",
                        lines[0]
                    );
                }
                other => panic!("round {round}: exit code {other}: {run:?}"),
            }
        }
        assert!(applied >= 1, "round {round}: one of the applies ran: {runs:?}");
        // The winner's workspace is in the state, and it matches the cloud.
        let ws = sb.workspace(BRAVO);
        assert_eq!(ws["resources"].as_object().expect("resources").len(), 7, "round {round}: {ws}");
        assert!(ws["provider_state"]["data"]["last_applied"].is_object(), "round {round}: {ws}");
        sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0);
    }
}

#[test]
fn regression_damaged_state_db_is_refused() {
    let applied = Sandbox::new();
    applied.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let clean = files(Path::new(applied.state()));
    let len = clean[Path::new("db")].len();
    let overwrites = [0, 4_096, 16_384, len / 2, len - 16];
    let truncations = [0, 1_000, 20_000, len / 2, len - 1];
    let damages = overwrites
        .iter()
        .map(|&at| (format!("16 bytes overwritten at {at}"), Some(at), None))
        .chain(truncations.iter().map(|&to| (format!("truncated to {to} bytes"), None, Some(to))));
    for (what, overwrite, truncate) in damages {
        let sb = Sandbox::new();
        write_files(Path::new(sb.state()), &clean);
        let db = Path::new(sb.state()).join("db");
        let mut bytes = fs::read(&db).unwrap();
        if let Some(at) = overwrite {
            bytes[at..at + 16].copy_from_slice(b"XXXXXXXXXXXXXXXX");
        }
        if let Some(to) = truncate {
            bytes.truncate(to);
        }
        fs::write(&db, &bytes).unwrap();
        let damaged = files(Path::new(sb.state()));

        for args in state_commands() {
            let line = assert_refused_as_damaged(run_strings(&sb, &args), sb.state());
            assert!(line.contains("db changed after trellis last closed it"), "{what}: {line}");
        }
        assert_eq!(files(Path::new(sb.state())), damaged, "{what}: nothing rewrote the damaged state dir");
    }
}

#[test]
fn regression_a_rolled_back_db_after_a_killed_run_is_refused() {
    let sb = Sandbox::new();
    let state = Path::new(sb.state());
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let serial_8: BTreeMap<PathBuf, Vec<u8>> = files(state)
        .into_iter()
        .filter(|(rel, _)| ["db", "conf"].contains(&rel.to_str().unwrap()) || rel.starts_with("blobs"))
        .collect();
    // One more commit (serial 9).
    let pulled = sb.file("bravo.json");
    fs::write(&pulled, sb.run(&["state", "pull", BRAVO]).code(0).stdout).unwrap();
    sb.run(&["state", "push", BRAVO, &pulled]).code(0);
    // The database falls back to serial 8 (sled drops a damaged tail of its log), after a run that was
    // killed (so sled's files were not sealed): the head record catches it.
    for snap in fs::read_dir(state).unwrap().map(|e| e.unwrap().path()) {
        if snap.file_name().unwrap().to_string_lossy().starts_with("snap.") {
            fs::remove_file(snap).unwrap();
        }
    }
    write_files(state, &serial_8);
    fs::write(state.join("seal.json"), r#"{"state": "open"}"#).unwrap();
    let before = files(state);
    for args in state_commands() {
        let line = assert_refused_as_damaged(run_strings(&sb, &args), sb.state());
        assert!(line.contains(&format!("workspace {BRAVO} is stored at serial 8")), "{line}");
        assert!(line.contains("says serial 9"), "{line}");
    }
    assert_eq!(files(state), before, "verified on a copy: nothing rewrote the state dir");
}

#[test]
fn regression_a_damaged_state_is_restored_from_its_backup_with_state_push() {
    let sb = Sandbox::new();
    let state = sb.state().to_string();
    let moved = format!("{state}.damaged");
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let latest = sb.workspace(BRAVO);
    let pulled = sb.run(&["state", "pull", BRAVO]).code(0).json();
    assert_eq!(pulled["workspace"], latest, "state pull prints the workspace");
    let checksum = pulled["checksum"].as_str().expect("a checksum");
    assert!(checksum.starts_with("sha256:") && checksum.len() == "sha256:".len() + 64, "{checksum}");

    fs::write(Path::new(&state).join("db"), b"").unwrap();
    assert_refused_as_damaged(sb.run(&["plan", "-f", &a2()]), &state);

    // The recovery the message names: move the damaged dir aside, push the backup into a new one.
    fs::rename(&state, &moved).unwrap();
    let backup = format!("{moved}/backups/{BRAVO}.json");
    sb.run(&["state", "push", BRAVO, &backup])
        .code(0)
        .stdout_has(&format!("Pushed {BRAVO} from {backup}: the state now holds it at serial 9"));
    let restored = sb.workspace(BRAVO);
    assert_eq!(restored["lineage"], latest["lineage"]);
    assert_eq!(restored["serial"], 9, "above the backup's serial 8");
    assert_eq!(restored["resources"], latest["resources"], "the backup holds every resource");
    assert_eq!(
        restored["provider_state"]["data"]["last_applied"], latest["provider_state"]["data"]["last_applied"],
        "the backup is the version the apply left"
    );

    // The simulated cloud was in the damaged dir too: apply creates it again and records it all.
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0).stdout_has(&format!("{BRAVO}: apply complete."));
    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    assert_eq!(
        sb.workspace(BRAVO)["provider_state"]["data"]["last_applied"],
        latest["provider_state"]["data"]["last_applied"]
    );

    // An older file is refused unless forced; a file whose checksum does not match is refused.
    sb.run(&["state", "push", BRAVO, &backup])
        .code(1)
        .stderr_has(&format!("error: not pushing workspace {BRAVO}: the file is at serial 8"))
        .stderr_has("pass --force");
    let edited = sb.file("edited.json");
    fs::write(&edited, serde_json::to_string(&pulled).unwrap().replace("\"serial\":8", "\"serial\":80")).unwrap();
    sb.run(&["state", "push", BRAVO, &edited]).code(1).stderr_has(&format!("error: {edited}: its checksum sha256:"));
    let pulled_file = sb.file("pulled.json");
    fs::write(&pulled_file, pulled.to_string()).unwrap();
    sb.run(&["state", "push", "shoot--dev--alpha", &pulled_file])
        .code(1)
        .stderr_has(&format!("error: {pulled_file} holds the workspace of {BRAVO}, not of shoot--dev--alpha"));
    sb.run(&["state", "push", BRAVO, &backup, "--force"]).code(0);
}

#[test]
fn regression_plan_leaves_the_state_untouched() {
    let sb = Sandbox::new();
    let state = Path::new(sb.state());
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let before = files(state);
    let plan_file = sb.file("saved.plan");
    for args in [
        vec!["plan", "-f", &a2()],
        vec!["plan", "-f", &a2(), "--output", "json"],
        vec!["plan", "-f", &a2(), "--out", &plan_file],
        vec!["validate", "-f", &a2()],
        vec!["state", "list"],
        vec!["state", "pull", BRAVO],
    ] {
        sb.run(&args).code(0);
        assert_eq!(
            unstamped(files(state)),
            unstamped(before.clone()),
            "`trellis {}` wrote to the state dir",
            args.join(" ")
        );
    }
}

#[test]
fn regression_a_foreign_directory_is_not_taken_over() {
    let sb = Sandbox::new();
    let state = Path::new(sb.state());
    fs::create_dir(state).unwrap();
    fs::write(state.join("db"), "the user's own database").unwrap();
    fs::write(state.join("notes.txt"), "keep me").unwrap();
    let before = files(state);
    let pulled = sb.file("bravo.json");
    fs::write(&pulled, serde_json::json!({"workspace": {"shoot": BRAVO, "lineage": "l", "serial": 1, "last_applied": null, "resources": {}, "outputs": null, "memory": {}}}).to_string()).unwrap();
    let mut commands = state_commands();
    commands.push(["state", "push", BRAVO, &pulled].iter().map(|s| s.to_string()).collect());
    for args in commands {
        let run = run_strings(&sb, &args).code(1);
        let lines = run.stderr_lines();
        assert_eq!(lines.len(), 1, "one line from `{}`:\n{}", run.cmd, run.stderr);
        assert!(
            lines[0].starts_with(&format!("error: {} is not a trellis state dir: it is not empty", sb.state())),
            "`{}`: {}",
            run.cmd,
            lines[0]
        );
        assert!(lines[0].contains("pass a new or empty directory with --state"), "{}", lines[0]);
    }
    assert_eq!(files(state), before, "the directory is left exactly as it was");
}

#[test]
fn regression_a_state_dir_of_an_earlier_trellis_is_adopted() {
    let sb = Sandbox::new();
    let state = Path::new(sb.state());
    sb.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let ws = sb.workspace(BRAVO);
    // What the previous version of trellis left: sled's files (and no marker, seal, heads, backups or
    // audit files).
    fs::remove_file(state.join("trellis-state.json")).unwrap();
    fs::remove_file(state.join("seal.json")).unwrap();
    fs::remove_file(state.join("heads.log")).unwrap();
    fs::remove_dir_all(state.join("backups")).unwrap();
    fs::remove_dir_all(state.join("audit")).unwrap();

    sb.run(&["plan", "-f", &a2(), "--detailed-exitcode"]).code(0).stdout_has("No changes.");
    assert!(state.join("trellis-state.json").is_file(), "adopted: the marker is written");
    let journal = fs::read_to_string(state.join("heads.log")).unwrap();
    assert!(journal.contains(&format!("\"shoot\":\"{BRAVO}\"")), "adopted: the head record is written");
    assert_eq!(sb.workspace(BRAVO), ws);
}
