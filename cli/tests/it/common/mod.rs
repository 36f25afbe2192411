//! Helpers for the process-level tests: run the real `trellis` binary, each test in its own temp dir.
//!
//! Every command runs with the sandbox as its working directory and `--state <sandbox>/state`, so no
//! test ever touches the repository's `.trellis`. stdin is `/dev/null` and stdout/stderr are pipes,
//! so the binary never sees a terminal unless a test asks for one.

// Each test module uses a different subset of these helpers.
#![allow(dead_code)]

pub mod outside;

use serde_json::Value;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_trellis");

/// How long a test waits for a background process to reach a point before giving up. A guard
/// against hanging forever, not a timing assertion: it is far above what any run needs.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// `<repo>/tests/scenarios/azure/<rel>` (the acceptance scenarios' manifests).
pub fn scenario(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios/azure").join(rel);
    assert!(path.exists(), "missing scenario file {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

/// `cli/tests/data/<name>` (fixtures of these tests).
pub fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    assert!(path.exists(), "missing fixture {}", path.display());
    path.to_str().expect("UTF-8 path").to_string()
}

/// The A2 shoot (managed VNet + NAT gateway): 7 resources, shoot `shoot--dev--bravo`.
pub fn a2() -> String {
    scenario("A2-managed-nat/shoot.yaml")
}

/// The A1 shoot (managed VNet, no NAT): 5 resources, shoot `shoot--dev--alpha`.
pub fn a1() -> String {
    scenario("A1-managed-no-nat/shoot.yaml")
}

/// 1-based line and column of the first occurrence of `needle` in `file`.
pub fn position_of(file: &str, needle: &str) -> (usize, usize) {
    let text = std::fs::read_to_string(file).expect("read fixture");
    for (i, line) in text.lines().enumerate() {
        if let Some(col) = line.find(needle) {
            return (i + 1, col + 1);
        }
    }
    panic!("{needle:?} not in {file}");
}

/// What one finished `trellis` process did.
#[derive(Clone, Debug)]
pub struct Run {
    pub cmd: String,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code, printing everything the process said when it is wrong.
    #[track_caller]
    pub fn code(self, expected: i32) -> Run {
        assert_eq!(
            self.code, expected,
            "exit code of `{}`\n--- stdout\n{}\n--- stderr\n{}",
            self.cmd, self.stdout, self.stderr
        );
        self
    }

    /// Asserts that stderr contains `needle`.
    #[track_caller]
    pub fn stderr_has(self, needle: &str) -> Run {
        assert!(self.stderr.contains(needle), "stderr of `{}` lacks {needle:?}:\n{}", self.cmd, self.stderr);
        self
    }

    /// Asserts that stdout contains `needle`.
    #[track_caller]
    pub fn stdout_has(self, needle: &str) -> Run {
        assert!(self.stdout.contains(needle), "stdout of `{}` lacks {needle:?}:\n{}", self.cmd, self.stdout);
        self
    }

    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout of `{}` is not JSON ({e}):\n{}", self.cmd, self.stdout))
    }
}

/// Runs a prepared command to the end.
pub fn finish(cmd: &mut Command) -> Run {
    let shown = describe(cmd);
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run `{shown}`: {e}"));
    let code = out.status.code().unwrap_or_else(|| panic!("`{shown}` was killed by a signal: {}", out.status));
    Run {
        cmd: shown,
        code,
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

fn describe(cmd: &Command) -> String {
    let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    format!("trellis {}", args.join(" "))
}

/// A temp dir with a state dir path inside it (not created: trellis creates it).
pub struct Sandbox {
    dir: tempfile::TempDir,
    state: String,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = dir.path().join("state").to_str().expect("UTF-8 temp path").to_string();
        Sandbox { dir, state }
    }

    /// A sandbox whose commands pass `--state STATE` (e.g. a PostgreSQL database's URL).
    pub fn with_state(state: &str) -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        Sandbox { dir, state: state.to_string() }
    }

    /// Whether the state may hold something: a database always, a state dir once it exists.
    fn state_exists(&self) -> bool {
        self.state.starts_with("postgres") || Path::new(&self.state).exists()
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The state dir every [`Sandbox::run`] passes with `--state`.
    pub fn state(&self) -> &str {
        &self.state
    }

    /// A path inside the sandbox, as a string for argument lists.
    pub fn file(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().expect("UTF-8 temp path").to_string()
    }

    /// `trellis ARGS` without `--state` (the test passes its own), in the sandbox, stdin `/dev/null`,
    /// `NO_COLOR` unset.
    pub fn raw_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args).current_dir(self.dir.path()).stdin(Stdio::null()).env_remove("NO_COLOR");
        cmd
    }

    /// `trellis ARGS --state <sandbox state>`.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.raw_command(args);
        cmd.args(["--state", &self.state]);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        finish(&mut self.command(args))
    }

    pub fn run_raw(&self, args: &[&str]) -> Run {
        finish(&mut self.raw_command(args))
    }

    /// The shoots `trellis state list` knows.
    pub fn workspaces(&self) -> Vec<String> {
        if !self.state_exists() {
            return Vec::new();
        }
        let list = self.run(&["state", "list"]).code(0);
        if list.stdout.starts_with("No workspaces in ") {
            return Vec::new();
        }
        list.stdout.lines().map(|l| l.split_whitespace().next().expect("a shoot").to_string()).collect()
    }

    /// Asserts that the state holds no workspace (nothing was applied).
    #[track_caller]
    pub fn assert_no_workspaces(&self) {
        // A command that failed leaves no state dir behind at all, if it created it.
        if !self.state_exists() {
            return;
        }
        let list = self.run(&["state", "list"]).code(0);
        assert_eq!(list.stdout, format!("No workspaces in {}.\n", self.state), "state list");
    }

    /// `trellis state show SHOOT` as JSON.
    pub fn workspace(&self, shoot: &str) -> Value {
        self.run(&["state", "show", shoot]).code(0).json()
    }

    /// The resource ids a shoot's workspace records.
    pub fn resource_ids(&self, shoot: &str) -> BTreeSet<String> {
        let ws = self.workspace(shoot);
        let resources = ws["resources"].as_object().expect("resources is a map");
        resources.values().map(|r| r["id"].as_str().expect("resource id").to_string()).collect()
    }

    /// Starts `trellis ARGS --state …` in the background; stdout discarded, stderr collected by line.
    pub fn spawn(&self, args: &[&str]) -> Background {
        spawn(self.command(args))
    }

    /// [`Sandbox::spawn`] without `--state` (the test passes its own).
    pub fn spawn_raw(&self, args: &[&str]) -> Background {
        spawn(self.raw_command(args))
    }
}

/// Starts `cmd` in the background; stdout discarded, stderr collected by line.
fn spawn(mut cmd: Command) -> Background {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let shown = describe(&cmd);
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start `{shown}`: {e}"));
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Background { child: Some(child), lines: rx, seen: Vec::new() }
}

/// A `trellis` process running in the background; killed when dropped.
pub struct Background {
    child: Option<Child>,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Background {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Waits for a stderr line matching `pred` and returns it. Panics if the process ends first.
    #[track_caller]
    pub fn wait_for_line(&mut self, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no such stderr line yet; stderr so far:\n{}", self.seen.join("\n"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.as_mut().expect("running").wait();
                    panic!("the process ended ({status:?}) first; stderr:\n{}", self.seen.join("\n"))
                }
            }
        }
    }

    /// Waits for the process to end; returns its exit code and every stderr line it printed.
    #[track_caller]
    pub fn wait(&mut self) -> (i32, Vec<String>) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("the process did not end; stderr so far:\n{}", self.seen.join("\n"))
                }
            }
        }
        let mut child = self.child.take().expect("running");
        let status = child.wait().expect("wait");
        (status.code().unwrap_or_else(|| panic!("killed by a signal: {status}")), self.seen.clone())
    }

    /// SIGKILL, then reap it (so its pid is really gone).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `cond` until it holds. Panics after [`PATIENCE`] (a hang guard, not a timing assertion).
#[track_caller]
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "gave up waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `(method, target)` of every write in an apply/destroy `--output json` report, in order.
pub fn writes(report: &Value) -> Vec<(String, String)> {
    calls(report)
        .into_iter()
        .filter(|c| c["op"] == "write")
        .map(|c| (c["method"].as_str().unwrap().to_string(), c["target"].as_str().unwrap().to_string()))
        .collect()
}

/// The `calls[]` of an apply/destroy `--output json` report.
pub fn calls(report: &Value) -> Vec<&Value> {
    report["calls"].as_array().expect("calls[] in the report").iter().collect()
}

/// The ids of a plan's nodes with the given action (`plan --output json` of one shoot).
pub fn plan_ids(plan: &Value, action: &str) -> BTreeSet<String> {
    plan["nodes"]
        .as_array()
        .expect("nodes[]")
        .iter()
        .filter(|n| n["action"] == action)
        .map(|n| n["id"].as_str().expect("node id").to_string())
        .collect()
}

/// True if the text holds an ANSI escape sequence.
pub fn has_ansi(text: &str) -> bool {
    text.contains('\u{1b}')
}

/// Every bundled example (`examples/`), for the renderer tests: (snapshot name, manifest files or dir, world file).
pub fn bundled_examples() -> Vec<(&'static str, Vec<std::path::PathBuf>, Option<std::path::PathBuf>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
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
    // GEP-0066: the Shoot with its Seed (the directory: `-f examples/domains`) — an infrastructure plan
    // and a domains plan.
    out.push(("domains", vec![root.join("domains")], Some(root.join("domains-world.yaml"))));
    out.push(("fleet", vec![root.join("fleet")], Some(root.join("fleet-world.yaml"))));
    out
}

/// Plans the example into a plan file in the sandbox and returns the file's path.
pub fn plan_example(sb: &Sandbox, manifests: &[std::path::PathBuf], world: Option<&Path>) -> String {
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

/// The shoot of the A2 example.
pub const A2_SHOOT: &str = "shoot--dev--bravo";

/// The resources a workspace records: address -> {kind, id, ownership}.
pub fn recorded(sb: &Sandbox, shoot: &str) -> Value {
    sb.workspace(shoot)["resources"].clone()
}

/// What an uninterrupted `apply -f A2` records, in a sled state dir of its own (7 resources).
pub fn clean_a2_resources() -> Value {
    let clean = Sandbox::new();
    clean.run(&["apply", "-f", &a2(), "--auto-approve"]).code(0);
    let expected = recorded(&clean, A2_SHOOT);
    assert_eq!(expected.as_object().unwrap().len(), 7);
    expected
}

/// Kills a slow A2 apply once a second node has finished, and returns the address of the first. The
/// non-TTY progress prints one line per finished node, just before its commit: once a second line is
/// out, the first node's commit has certainly returned (killing on the very first line could race it).
pub fn kill_after_two_nodes(apply: &mut Background) -> String {
    let first = apply.wait_for_line(|l| l.ends_with(": created"));
    apply.wait_for_line(|l| l.ends_with(": created"));
    apply.kill();
    first.trim_end_matches(": created").to_string()
}

/// What an A2 apply killed early kept: the `first` node, not everything, each as a clean run records it.
#[track_caller]
pub fn assert_killed_early(kept: &serde_json::Map<String, Value>, first: &str, expected: &Value) {
    assert!(kept.contains_key(first), "{first} was committed before the kill: {kept:?}");
    assert!(kept.len() < 7, "the apply was killed early: {kept:?}");
    for (address, r) in kept {
        assert_eq!(&expected[address], r, "{address} is recorded as in a clean run");
    }
}

/// The apply that resumed a killed one wrote only what was missing: creates, none of what was kept.
#[track_caller]
pub fn assert_writes_only_missing(resumed: &Value, kept: &serde_json::Map<String, Value>) {
    assert_eq!(resumed["ok"], true);
    for (method, target) in writes(resumed) {
        assert_eq!(method, "PUT", "{target}");
        assert!(
            !kept.values().any(|r| r["id"] == target.as_str()),
            "{target} was applied before the kill and is written again"
        );
    }
}

/// No cloud resource is recorded under two addresses of a workspace.
#[track_caller]
pub fn assert_no_duplicates(ws: &Value) {
    let ids: Vec<&str> = ws["resources"].as_object().unwrap().values().map(|r| r["id"].as_str().unwrap()).collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "no resource is recorded twice: {ids:?}");
}
