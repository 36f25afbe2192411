//! Google's official Python client for GCE (google-cloud-compute 1.57.0, REST transport) against
//! `trellis sim serve`: the program `tests/data/outside/gce_sdk.py` asserts what a real GCE answers —
//! routers, firewalls and networks patched as `get` answered them (no fingerprint), a subnetwork
//! patched only under its fingerprint, `aggregated_list` of subnetworks keyed by region and paged,
//! `.result()` and `wait` on operations, a firewall mixing IPv4 and IPv6 refused, NATs added and
//! removed by patching their router — and the emulator's audit log then shows each NAT write as the
//! router PATCH the client sent.

use crate::common::{outside, Sandbox};
use crate::emulator::Emulator;

#[test]
fn the_official_gce_client_works_against_sim_serve_and_nat_writes_are_router_patches_in_the_audit() {
    let sb = Sandbox::new();
    let serve = Emulator::start_with(sb.state(), &[]);
    let url = serve.url.clone();
    let program = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/outside/gce_sdk.py");
    let out = outside::sdk_python().arg(&program).args([url.as_str(), "sdk-proj"]).output().expect("run python");
    serve.terminate();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.lines().last() == Some("ok"),
        "the SDK program failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let audit = sb.run(&["sim", "audit", "--writes"]).code(0);
    let router = "projects/sdk-proj/regions/europe-west1/routers/sdk-router";
    let lines: Vec<&str> = audit.stdout.lines().collect();
    let patches = lines.iter().filter(|l| l.contains(" PATCH ") && l.ends_with(router)).count();
    assert_eq!(patches, 3, "the description patch, the NATs added, one NAT removed:\n{}", audit.stdout);
    assert!(lines.iter().all(|l| !l.contains("/nats")), "a NAT is never a resource of its own:\n{}", audit.stdout);
    // The refused writes are in the audit with their status: the subnetwork patches (400, 412), the
    // mixed firewall (400).
    assert!(lines.iter().any(|l| l.contains(" 412 ") && l.ends_with("subnetworks/sdk-a")), "{}", audit.stdout);
    assert!(lines.iter().any(|l| l.contains(" 400 ") && l.ends_with("firewalls/sdk-mixed")), "{}", audit.stdout);
}
