//! Google's official Python client for Cloud DNS (google-cloud-dns 0.37.2) against `trellis sim
//! serve`: the program `tests/data/outside/clouddns_sdk.py` asserts what a real Cloud DNS answers —
//! the project's zones, record sets with fully qualified names, changes polled until `done`, an
//! existing set's addition refused (409), a stale deletion refused (412) — and the emulator's audit
//! log then shows writes to the client's record set only, never to the world's.

use crate::common::{outside, Sandbox};
use crate::emulator::Emulator;

const WORLD: &str = "dns:
  zones:
    - name: example.com
      records:
        - {name: www.example.com, type: A, ttl: 60, values: [192.0.2.9]}
";

#[test]
fn the_official_cloud_dns_client_works_against_sim_serve_and_writes_only_its_own_record_set() {
    let sb = Sandbox::new();
    let world = sb.file("world.yaml");
    std::fs::write(&world, WORLD).unwrap();
    let serve = Emulator::start_with(sb.state(), &["--world", &world]);
    let url = serve.url.clone();
    let program = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/outside/clouddns_sdk.py");
    let out = outside::sdk_python().arg(&program).args([url.as_str(), "sdk-proj"]).output().expect("run python");
    serve.terminate();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.lines().last() == Some("ok"),
        "the SDK program failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let audit = sb.run(&["sim", "audit", "--writes"]).code(0);
    let dns: Vec<&str> = audit.stdout.lines().filter(|l| l.starts_with("dns")).collect();
    let ours = "/dns/zones/example.com/records/sdk.example.com/A";
    assert!(dns.iter().any(|l| l.ends_with(ours)), "{}", audit.stdout);
    assert!(dns.iter().all(|l| l.ends_with(ours)), "a write to another record set:\n{}", audit.stdout);
}
