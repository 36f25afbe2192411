//! The GCP provider through the [`Provider`] trait, against the simulated GCE cloud ([`GceSim`]):
//! registry, plan (managed and BYO), pre-flight, update validation against the typed state, the
//! fleet check.

use std::path::Path;
use std::sync::Arc;

use trellis_planner::cloud::CloudWrite;
use trellis_planner::exec::{execute, ExecOptions, NodeResult, Observer};

use trellis_plans::{Action, Plan};
use trellis_providers::gcp::state::GcpState;
use trellis_providers::provider::{CloudCtx, FleetShoot, Provider, ProviderError, ProviderShoot};
use trellis_providers::registry::Registry;
use trellis_sim::{GceSim, WorldFile};
use trellis_state::Workspace;

const PROJECT: &str = "trellis-sim";

fn gcp() -> &'static dyn Provider {
    Registry::builtin().get("gcp").expect("gcp is registered")
}

/// A bundled example (`examples/gcp/<dir>/`).
fn example(dir: &str, file: &str) -> String {
    let path = format!("{}/../examples/gcp/{dir}/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn shoot(dir: &str) -> Box<dyn ProviderShoot> {
    gcp().parse_shoot(&example(dir, "shoot.yaml")).unwrap()
}

fn ctx() -> CloudCtx {
    CloudCtx {
        account: PROJECT.to_string(),
        retry: Default::default(),
        accept_drift: false,
        replace: Default::default(),
    }
}

/// The BYO IPv4 example's world (`examples/gcp/byo-ipv4/world.yaml`), or only its VPC.
fn byo_world(with_subnet: bool) -> GceSim {
    let text = if with_subnet {
        example("byo-ipv4", "world.yaml")
    } else {
        "gce:\n  resources:\n    - selfLink: projects/trellis-sim/global/networks/my-vpc\n      autoCreateSubnetworks: false\n".to_string()
    };
    let sim = GceSim::in_memory();
    sim.sync_world(&WorldFile::parse("world.yaml", &text).unwrap()).unwrap();
    sim
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

fn writes(plan: &Plan) -> Vec<String> {
    plan.nodes
        .iter()
        .filter(|n| matches!(n.action(), Action::Create | Action::Update | Action::Replace | Action::Delete))
        .map(|n| n.address.clone())
        .collect()
}

#[test]
fn regression_gcp_is_a_registered_provider() {
    let p = gcp();
    assert_eq!(p.type_name(), "gcp");
    assert_eq!(
        p.infrastructure_config_type(),
        ("gcp.provider.extensions.gardener.cloud/v1alpha1", "InfrastructureConfig")
    );
    assert_eq!(Registry::builtin().types(), vec!["azure", "gcp"]);
    // GCE selfLinks compare as written; ARM ids case-insensitively: each provider names its scheme.
    assert_ne!(p.ids().key("projects/p/global/networks/A"), p.ids().key("projects/p/global/networks/a"));
    let azure = Registry::builtin().get("azure").unwrap();
    assert_eq!(
        azure.ids().key("/subscriptions/S/resourceGroups/RG"),
        azure.ids().key("/subscriptions/s/resourcegroups/rg")
    );
}

/// Applies `plan` to `sim` with the provider's id scheme; every node must succeed.
fn apply(plan: &Plan, sim: &GceSim) {
    struct Quiet;
    impl Observer for Quiet {
        fn finished(&mut self, _: &trellis_plans::Node, _: &NodeResult) -> Result<(), String> {
            Ok(())
        }
    }
    let opts = ExecOptions::new(gcp().ids());
    let cloud: Arc<dyn CloudWrite> = Arc::new(sim.clone());
    let results = block_on(execute(&plan.nodes, cloud, &opts, &mut Quiet)).unwrap();
    let failed: Vec<_> = results.iter().filter(|r| !r.outcome.is_ok()).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn regression_gcp_managed_shoot_plans_applies_and_replans_no_changes_on_the_simulator() {
    let s = shoot("managed");
    let mut ws = Workspace::new(&s.technical_id());
    let sim = GceSim::in_memory();
    let planned = block_on(gcp().plan(s.as_ref(), &ws, &sim, &ctx())).unwrap();
    assert_eq!(planned.plan.provider, trellis_providers::gcp::PROVIDER);
    let creates = writes(&planned.plan);
    for want in ["network", "subnetwork", "router", "nat", "firewall", "service_account"] {
        assert!(creates.iter().any(|a| a.contains(want)), "no create of a {want} in {creates:?}");
    }
    assert!(planned.plan.artifacts.cloud_provider_config().is_some());
    // The typed, versioned provider state.
    assert_eq!((planned.state.provider.as_str(), planned.state.version), ("gcp", 1));
    let state: GcpState = planned.state.read(&s.technical_id()).unwrap();
    assert!(state.last_applied.is_some() && state.byo_workers_subnet.is_none());

    // The Cloud NAT is written into the router's nats[] (the sub-resource contract).
    apply(&planned.plan, &sim);
    let router =
        sim.get_now("projects/trellis-sim/regions/europe-west1/routers/shoot--platform--web-cloud-router").unwrap();
    assert_eq!(router["nats"][0]["name"], "shoot--platform--web-cloud-nat");
    ws.provider_state = Some(planned.state);
    let again = block_on(gcp().plan(s.as_ref(), &ws, &sim, &ctx())).unwrap();
    assert_eq!(writes(&again.plan), Vec::<String>::new(), "the re-plan after apply has no changes");
    let status = again.plan.artifacts.infrastructure_status().unwrap();
    assert!(status.to_string().contains("shoot--platform--web"), "{status}");

    // A managed shoot adds no facts to the fleet check.
    assert!(gcp().fleet_facts(&again.plan).is_none());

    // Destroy: every managed resource goes, and nothing is left behind.
    let destroy = block_on(gcp().plan_destroy(s.as_ref(), &ws, &sim, &ctx())).unwrap();
    apply(&destroy.plan, &sim);
    assert_eq!(sim.snapshot(), Vec::<serde_json::Value>::new(), "the destroy removed everything");
    assert!(block_on(gcp().orphans_after_destroy(s.as_ref(), &sim, &ctx())).unwrap().is_empty());
}

#[test]
fn regression_gcp_byo_shoot_plans_no_writes_to_the_users_network() {
    let s = shoot("byo-ipv4");
    let ws = Workspace::new(&s.technical_id());
    let planned = block_on(gcp().plan(s.as_ref(), &ws, &byo_world(true), &ctx())).unwrap();
    let user_writes: Vec<_> = planned
        .plan
        .nodes
        .iter()
        .filter(|n| n.ownership() == trellis_plans::Ownership::User && n.action() != Action::Noop)
        .filter(|n| matches!(n.action(), Action::Create | Action::Update | Action::Replace | Action::Delete))
        .map(|n| n.address.clone())
        .collect();
    assert!(user_writes.is_empty(), "{user_writes:?}");
    // The BYO branch schedules no write at all (upstream's early return).
    assert_eq!(writes(&planned.plan), Vec::<String>::new());
    assert_eq!(planned.plan.provider, trellis_providers::gcp::PROVIDER);
    let state: GcpState = planned.state.read(&s.technical_id()).unwrap();
    assert_eq!(
        state.byo_workers_subnet.as_deref(),
        Some("projects/trellis-sim/regions/europe-west1/subnetworks/my-workers")
    );
}

#[test]
fn regression_gcp_byo_missing_workers_subnet_is_a_preflight_error() {
    let s = shoot("byo-ipv4");
    let ws = Workspace::new(&s.technical_id());
    let err = block_on(gcp().plan(s.as_ref(), &ws, &byo_world(false), &ctx())).err().unwrap();
    let ProviderError::Preflight(errs) = err else { panic!("expected a pre-flight error, got {err}") };
    let text: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert!(text.iter().any(|e| e.contains("my-workers")), "{text:?}");
}

#[test]
fn regression_gcp_update_rules_read_the_last_applied_config_from_state() {
    let byo = shoot("byo-ipv4");
    let mut ws = Workspace::new(&byo.technical_id());
    let planned = block_on(gcp().plan(byo.as_ref(), &ws, &byo_world(true), &ctx())).unwrap();
    ws.provider_state = Some(planned.state);
    // The same shoot switched to managed mode (D1): refused against the last-applied BYO config.
    let managed = shoot("managed");
    let err = gcp().validate(managed.as_ref(), &ws).unwrap_err();
    let ProviderError::Invalid(errs) = err else { panic!("expected validation errors, got {err}") };
    assert!(
        errs.iter().any(|e| e.to_string().contains("cannot switch between BYO subnet mode and managed mode")),
        "{errs:?}"
    );
    // Without a last-applied config the managed shoot is valid.
    gcp().validate(managed.as_ref(), &Workspace::new(&managed.technical_id())).unwrap();
}

#[test]
fn regression_two_gcp_shoots_on_one_byo_workers_subnet_are_refused() {
    let a = shoot("byo-ipv4");
    let sim = byo_world(true);
    let plan_a = block_on(gcp().plan(a.as_ref(), &Workspace::new(&a.technical_id()), &sim, &ctx())).unwrap().plan;
    let mut plan_b = plan_a.clone();
    plan_b.shoot = "shoot--dev--other".to_string();
    let facts: Vec<Plan> = [plan_a.clone(), plan_b].into_iter().filter_map(|p| gcp().fleet_facts(&p)).collect();
    let fleet: Vec<FleetShoot<'_>> =
        facts.iter().map(|plan| FleetShoot { plan, file: Path::new("shoots.yaml") }).collect();
    let err = block_on(gcp().check_fleet(&fleet, &|| Ok(Vec::new()), &sim, &ctx())).unwrap_err().to_string();
    assert!(err.contains("subnetworks/my-workers is referenced by") && err.contains("shoot--dev--other"), "{err}");
    // One shoot alone is fine.
    block_on(gcp().check_fleet(&fleet[..1], &|| Ok(Vec::new()), &sim, &ctx())).unwrap();
    // Against a shoot applied in state on the same subnet.
    let mut applied = Workspace::new("shoot--dev--applied");
    let st = GcpState {
        byo_workers_subnet: Some("projects/trellis-sim/regions/europe-west1/subnetworks/my-workers".to_string()),
        ..Default::default()
    };
    applied.provider_state = Some(trellis_state::ProviderState::of(&st).unwrap());
    let err =
        block_on(gcp().check_fleet(&fleet[..1], &|| Ok(vec![applied.clone()]), &sim, &ctx())).unwrap_err().to_string();
    assert!(err.contains("shoot--dev--applied (applied, in state)"), "{err}");
}
