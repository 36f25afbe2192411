//! The real clients end to end against `trellis sim serve`: the emulator serves the simulated clouds
//! of one state dir over HTTP, and `--cloud gcp --endpoint URL` (the google-cloud-compute-v1 client,
//! signed in with a service-account key) plans and applies a GCP shoot through it. Also what the
//! emulator promises on its own: an answered write survives `kill -9` and SIGTERM, its audit log is
//! kept in the state dir, and it answers only requests addressed to a loopback name.

use crate::common;

use common::{finish, Sandbox, BIN, PATIENCE};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running `trellis sim serve`, killed (SIGKILL) when dropped.
pub(crate) struct Emulator {
    child: Child,
    pub(crate) url: String,
    /// `127.0.0.1:PORT`.
    addr: String,
}

impl Emulator {
    /// Starts the emulator on `state` and waits (bounded) for the first line, which names its URL.
    fn start(state: &str) -> Emulator {
        Emulator::start_with(state, &[])
    }

    /// [`Emulator::start`] with more arguments for `trellis sim serve` (`--world FILE`).
    pub(crate) fn start_with(state: &str, args: &[&str]) -> Emulator {
        let mut child = Command::new(BIN)
            .args(["sim", "serve", "--listen", "127.0.0.1:0", "--state", state])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start trellis sim serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(PATIENCE) {
            Ok(line) => line,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("trellis sim serve printed no first line ({e})");
            }
        };
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("the URL on line 1: {line:?}"))
            .to_string();
        let addr = url.trim_start_matches("http://").to_string();
        Emulator { child, url, addr }
    }

    /// One request addressed to `127.0.0.1:PORT`, with a bearer token.
    pub(crate) fn call(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        http(&self.addr, &self.addr, method, path, &[("Authorization", "Bearer test-token")], body)
    }

    /// `kill -9`, and reaps it.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits (bounded) for the process to end; its exit code.
    pub(crate) fn terminate(mut self) -> i32 {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: kill(2) with a pid this test started and has not reaped yet.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "SIGTERM sent");
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code().unwrap_or_else(|| panic!("trellis sim serve was killed by SIGTERM: {status}"));
            }
            assert!(Instant::now() < deadline, "trellis sim serve did not stop after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request to `addr` with `Host: host` (`Connection: close`; socket timeouts bound
/// every wait); the status and the body.
fn http(addr: &str, host: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the emulator");
    stream.set_read_timeout(Some(PATIENCE)).expect("read timeout");
    stream.set_write_timeout(Some(PATIENCE)).expect("write timeout");
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).expect("send the request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{answer}"));
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// The ARM URL of resource group `name` in the emulator's subscription.
fn group(name: &str) -> String {
    format!("/subscriptions/{}/resourceGroups/{name}?api-version=2021-04-01", trellis_sim::DEFAULT_SUBSCRIPTION)
}

const NETWORKS: &str = "/compute/v1/projects/trellis-sim/global/networks";

pub(crate) fn key_file() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../providers/gcp-client/tests/data/throwaway-service-account.json");
    path.to_str().expect("UTF-8 path").to_string()
}

fn example(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gcp").join(rel);
    path.to_str().expect("UTF-8 path").to_string()
}

/// Found by this test: the simulator wrote GCE fingerprints in the standard base64 alphabet and IAM
/// etags in the URL-safe one, the opposite of the real APIs; the real client refused such answers
/// ("the answer is not GCE JSON"), so an apply through the emulator stopped half-way.
#[test]
fn regression_gcp_shoot_applies_and_replans_no_changes_through_the_real_client_and_the_emulator() {
    let sb = Sandbox::new();
    let emulator = Emulator::start(&sb.file("emulator-state"));
    let shoot = example("managed/shoot.yaml");
    let gcp = |args: &[&str]| {
        let mut cmd = sb.command(args);
        cmd.args(["--cloud", "gcp", "--project", "trellis-sim", "--endpoint", &emulator.url])
            .env("GOOGLE_APPLICATION_CREDENTIALS", key_file());
        finish(&mut cmd)
    };
    gcp(&["apply", "--auto-approve", "-f", &shoot]).code(0).stdout_has("apply complete");
    gcp(&["plan", "--detailed-exitcode", "-f", &shoot]).code(0).stdout_has("No changes");
    // The emulator kept the apply's calls, as an apply in process keeps them.
    assert_eq!(emulator.terminate(), 0);
    let audit = sb.run_raw(&["sim", "audit", "--writes", "--state", &sb.file("emulator-state")]).code(0);
    assert!(audit.stdout.lines().any(|l| l.starts_with("gce   POST   200 ")), "{}", audit.stdout);
}

#[test]
fn the_emulator_listens_on_loopback_only_and_endpoint_needs_a_real_cloud() {
    let sb = Sandbox::new();
    sb.run(&["sim", "serve", "--listen", "0.0.0.0:0"]).code(1).stderr_has("is not a loopback address");
    sb.run(&["plan", "--endpoint", "http://127.0.0.1:1", "-f", &example("managed/shoot.yaml")])
        .code(1)
        .stderr_has("--endpoint needs --cloud azure or --cloud gcp");
    let mut cmd = sb.command(&["plan", "--cloud", "gcp", "-f", &example("managed/shoot.yaml")]);
    cmd.env_remove("GOOGLE_CLOUD_PROJECT");
    finish(&mut cmd).code(1).stderr_has("--cloud gcp needs a project");
}

/// Found in the hardening review: the emulator left its ARM writes to a flush that only its stop
/// made, so a resource group answered 201 (and read back 200) was gone after `kill -9` and a
/// restart, while the client's state recorded it.
#[test]
fn regression_sim_serve_keeps_an_answered_write_through_kill_9() {
    let sb = Sandbox::new();
    let state = sb.file("emulator-state");
    let emulator = Emulator::start(&state);
    let (status, body) = emulator.call("POST", NETWORKS, r#"{"name": "vpc-kept"}"#);
    assert_eq!(status, 200, "{body}");
    // The last write before the kill (a GCE write's flush would make the ARM writes before it durable).
    let (status, body) = emulator.call("PUT", &group("rg-kept"), r#"{"location": "westeurope"}"#);
    assert_eq!(status, 201, "{body}");
    assert_eq!(emulator.call("GET", &group("rg-kept"), "").0, 200);
    emulator.kill();

    let emulator = Emulator::start(&state);
    let (status, body) = emulator.call("GET", &group("rg-kept"), "");
    assert_eq!(status, 200, "the resource group answered 201 is still there after kill -9: {body}");
    let (status, body) = emulator.call("GET", &format!("{NETWORKS}/vpc-kept"), "");
    assert_eq!(status, 200, "the network is still there after kill -9: {body}");
}

/// Found in the hardening review: SIGTERM (what a CI runner or a service manager sends) ended the
/// emulator without its graceful stop, losing what it had not flushed; it stops as on Ctrl-C.
#[test]
fn regression_sim_serve_stops_on_sigterm_as_on_ctrl_c() {
    let sb = Sandbox::new();
    let state = sb.file("emulator-state");
    let emulator = Emulator::start(&state);
    assert_eq!(emulator.call("PUT", &group("rg-term"), r#"{"location": "westeurope"}"#).0, 201);
    assert_eq!(emulator.terminate(), 0, "SIGTERM is a graceful stop");
    let emulator = Emulator::start(&state);
    assert_eq!(emulator.call("GET", &group("rg-term"), "").0, 200);
}

/// Found in the hardening review: the emulator never kept its audit log (`trellis sim audit
/// --writes` said "No writes kept" after an apply through it). Its calls are kept in the state dir
/// as an apply's, and a write's entry is durable before the write is answered.
#[test]
fn regression_sim_serve_keeps_its_audit_log_through_kill_9() {
    let sb = Sandbox::new();
    let state = sb.file("emulator-state");
    let emulator = Emulator::start(&state);
    assert_eq!(emulator.call("POST", NETWORKS, r#"{"name": "vpc-audited"}"#).0, 200);
    assert_eq!(emulator.call("PUT", &group("rg-audited"), r#"{"location": "westeurope"}"#).0, 201);
    emulator.kill();
    let audit = sb.run_raw(&["sim", "audit", "--writes", "--state", &state]).code(0);
    let lines: Vec<&str> = audit.stdout.lines().collect();
    assert!(lines.iter().any(|l| l.starts_with("azure PUT    201 ") && l.ends_with("/rg-audited")), "{}", audit.stdout);
    assert!(lines.iter().any(|l| l.starts_with("gce   POST   200 ") && l.contains("networks")), "{}", audit.stdout);
}

/// Found in the hardening review: the emulator answered any `Host` and built its operation URLs
/// from it (DNS rebinding), and the GCE side answered calls without a token.
#[test]
fn regression_sim_serve_answers_only_loopback_hosts_and_gce_calls_need_a_token() {
    let sb = Sandbox::new();
    let emulator = Emulator::start(&sb.file("emulator-state"));
    let bearer = [("Authorization", "Bearer test-token")];
    let body = r#"{"location": "westeurope"}"#;
    let (status, answer) = http(&emulator.addr, "attacker.example", "PUT", &group("rg-x"), &bearer, body);
    assert_eq!(status, 421, "{answer}");
    assert_eq!(answer.lines().count(), 1, "one line: {answer}");
    assert!(answer.contains("\"code\":\"MisdirectedRequest\"") && answer.contains("attacker.example"), "{answer}");
    let (status, answer) = http(&emulator.addr, "attacker.example:80", "GET", NETWORKS, &bearer, "");
    assert_eq!(status, 421, "{answer}");
    assert!(answer.contains("\"code\":421"), "GCE's error shape: {answer}");
    for host in ["localhost", "127.0.0.1", "[::1]"] {
        let port = emulator.addr.rsplit(':').next().expect("a port");
        let (status, answer) = http(&emulator.addr, &format!("{host}:{port}"), "GET", NETWORKS, &bearer, "");
        assert_eq!(status, 200, "{host}: {answer}");
    }
    let (status, answer) = http(&emulator.addr, &emulator.addr, "GET", NETWORKS, &[], "");
    assert_eq!(status, 401, "no token: {answer}");
}
