//! End to end: the trellis engine (what the CLI drives) plans and applies a shoot through the ARM
//! client against the simulated cloud served over HTTP, then plans again and finds nothing to do.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use trellis_azure_client::{ArmClient, ClientSecretCredential, Url};
use trellis_engine::ops::{self, ApplyOptions, Quiet, Session};
use trellis_planner::cloud::Op;
use trellis_planner::retry::RetryPolicy;
use trellis_plans::Action;
use trellis_sim::ArmSim;
use trellis_sim_http::{ServerOptions, SimServer};

const SUB: &str = "11111111-2222-3333-4444-555555555555";

/// A simulated ARM cloud served over HTTP (lists paged by `page_size`, a token required), and an engine
/// session on a fresh state dir whose Azure cloud is the ARM client against it.
struct Served {
    cloud: ArmSim,
    server: trellis_sim_http::Running,
    state: tempfile::TempDir,
    session: Session,
}

async fn served(page_size: usize) -> Served {
    let cloud = ArmSim::in_memory(SUB);
    let opts = ServerOptions {
        page_size: Some(page_size),
        required_token: Some("e2e-token".into()),
        issued_token: "e2e-token".into(),
        ..ServerOptions::default()
    };
    let server = SimServer::with_options(cloud.clone(), opts).spawn_local().await.expect("server starts");
    let url = Url::parse(&server.url()).unwrap();
    let cred = ClientSecretCredential::new("tenant", "client", "secret").unwrap().with_authority(url.clone()).unwrap();
    let client = ArmClient::new(url, Arc::new(cred))
        .unwrap()
        .with_lro_poll_cap(Duration::from_millis(20))
        .with_lro_timeout(Duration::from_secs(30));
    let state = tempfile::tempdir().unwrap();
    let (mut session, _) = Session::open(state.path(), "test", None).expect("session");
    session.retry = RetryPolicy::immediate(4);
    session.use_cloud("azure", Arc::new(client), Some(SUB.to_string()));
    Served { cloud, server, state, session }
}

fn a2() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/azure/A2-managed-nat/shoot.yaml")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_apply_replan_and_destroy_a2_through_the_arm_client() {
    let Served { cloud, server, state: _state, session } = served(2).await;

    let plans = ops::plan_files(&session, &[a2()], false, None).await.expect("plan").plans;
    let plan = &plans[0].planned.plan;
    assert!(plan.has_changes(), "a fresh shoot has resources to create");
    assert!(cloud.calls().iter().all(|c| c.op == Op::Read), "plan never writes");

    let opts = ApplyOptions::new(4, trellis_engine::ops::ApplyOp::Apply);
    let report = ops::apply(&session, plans, &opts, &mut Quiet).await.expect("apply");
    let failed: Vec<_> = report.shoots[0].nodes.iter().filter(|n| !n.outcome.is_ok()).collect();
    assert!(report.ok, "apply failed: {failed:?} {:?}", report.shoots[0].warnings);

    // The served simulator saw every write, and nothing went to the session's local simulator.
    let puts: Vec<String> =
        cloud.calls().into_iter().filter(|c| c.op == Op::Write && c.method == "PUT").map(|c| c.target).collect();
    for kind in ["resourceGroups/", "virtualNetworks/", "/subnets/", "natGateways/", "publicIPAddresses/"] {
        assert!(puts.iter().any(|t| t.contains(kind)), "no PUT of a {kind} in {puts:?}");
    }
    let local = session.sim::<ArmSim>().expect("the simulated ARM cloud");
    assert!(local.calls().is_empty(), "the local simulator was not used");
    let nat = cloud
        .snapshot()
        .into_iter()
        .find(|r| r["type"] == "Microsoft.Network/natGateways")
        .expect("the NAT gateway exists in the served cloud");
    assert_eq!(nat["properties"]["publicIpAddresses"].as_array().map(Vec::len), Some(1));

    // Plan again: nothing to do.
    let mark = cloud.mark();
    let again = ops::plan_files(&session, &[a2()], false, None).await.expect("re-plan").plans;
    let plan = &again[0].planned.plan;
    let pending: Vec<_> =
        plan.nodes.iter().filter(|n| n.action() != Action::Noop).map(|n| (&n.address, n.action())).collect();
    assert!(!plan.has_changes(), "the second plan has changes: {pending:?}");
    assert!(cloud.calls_since(mark).iter().all(|c| c.op == Op::Read));
    // Discovery went over HTTP, and the token was fetched once for the whole run.
    assert!(server
        .server
        .requests()
        .iter()
        .any(|r| r.path.contains("/providers/Microsoft.Network/") && r.status == 200));
    assert_eq!(server.server.tokens_issued(), 1);

    // Destroy: DELETEs through the client; the shoot's resources are gone.
    let plans = ops::plan_files(&session, &[a2()], true, None).await.expect("destroy plan").plans;
    let opts = ApplyOptions::new(4, trellis_engine::ops::ApplyOp::Destroy);
    let report = ops::apply(&session, plans, &opts, &mut Quiet).await.expect("destroy");
    assert!(report.ok, "destroy failed: {:?}", report.shoots[0].nodes);
    assert!(cloud.calls().iter().any(|c| c.method == "DELETE" && c.op == Op::Write));
    assert!(cloud.snapshot().is_empty(), "left behind: {:?}", cloud.snapshot());
}

/// A2's shoot as `n` shoots named `bravo-NN`, written into `dir`.
fn a2_fleet(dir: &std::path::Path, n: usize) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(a2()).unwrap();
    (1..=n)
        .map(|i| {
            let path = dir.join(format!("bravo-{i:02}.yaml"));
            std::fs::write(&path, text.replacen("  name: bravo\n", &format!("  name: bravo-{i:02}\n"), 1)).unwrap();
            path
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_fleet_is_replanned_through_the_arm_clients_subscription_lists_with_the_same_plans() {
    let Served { cloud, server, state, session } = served(5).await;
    let files = a2_fleet(state.path(), 8);
    let plans = ops::plan_files(&session, &files, false, None).await.expect("plan").plans;
    let report = ops::apply(&session, plans, &ApplyOptions::new(4, ops::ApplyOp::Apply), &mut Quiet).await.unwrap();
    assert!(report.ok, "apply failed");

    let mark = cloud.mark();
    let fleet = ops::plan_files(&session, &files, false, None).await.expect("re-plan").plans;
    let calls = cloud.calls_since(mark);
    // Six wide lists (resource groups, VNets, route tables, NSGs, NAT gateways, public IPs), each
    // asked for directly by the first shoots, then run once over its pages of five.
    let bound = 6 * (trellis_planner::wide::WIDE_AFTER + files.len().div_ceil(5));
    assert!(calls.len() <= bound, "{} calls for {} shoots: {calls:#?}", calls.len(), files.len());
    let direct_group_gets = calls.iter().filter(|c| c.method == "GET" && c.target.contains("/resourceGroups/")).count();
    assert!(direct_group_gets < 6 * trellis_planner::wide::WIDE_AFTER, "{calls:#?}");
    assert!(server.server.requests().iter().any(|r| r.path.ends_with("/providers/Microsoft.Network/natGateways")));
    for (i, file) in files.iter().enumerate() {
        let alone = ops::plan_files(&session, std::slice::from_ref(file), false, None).await.unwrap().plans;
        assert!(!fleet[i].planned.plan.has_changes());
        assert_eq!(
            serde_json::to_string(&fleet[i].planned.plan).unwrap(),
            serde_json::to_string(&alone[0].planned.plan).unwrap(),
            "{}: the same plan as its own reads give",
            file.display()
        );
    }
}
