//! Issue #27, item 3: a no-op re-plan is bound by its reads. A fleet's discovery reads through
//! `trellis_planner::wide::FleetReads` (a subscription's or project's list answering many shoots'
//! reads, when calls cost round trips: here the simulated clouds' injected latency): counted
//! through the simulated cloud's audit, and the plans compared with the ones each shoot's own reads
//! give.

use std::collections::BTreeMap;
use trellis_planner::cloud::CloudWrite;
use trellis_plans::Action;
use trellis_sim::Faults;
use trellis_tests::Scenario;

/// A millisecond a call: the simulated clouds answer as a cloud over the network does, with a
/// round trip (`CloudRead::round_trips`).
fn round_trips() -> Faults {
    Faults::none().with_latency(std::time::Duration::from_millis(1), std::time::Duration::ZERO)
}

/// `n` copies of the scenario's `shoot.yaml`, named `{base}-NN`, written beside its state.
fn fleet(s: &Scenario, base: &str, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(s.file("shoot.yaml")).unwrap();
    let from = format!("  name: {base}\n");
    assert!(text.contains(&from));
    (1..=n)
        .map(|i| {
            let path = s.state.path().join(format!("{base}-{i:02}.yaml"));
            std::fs::write(&path, text.replacen(&from, &format!("  name: {base}-{i:02}\n"), 1)).unwrap();
            path.to_str().unwrap().to_string()
        })
        .collect()
}

/// The calls `plan_files(files)` makes: (method, target).
async fn calls_of_plan(s: &Scenario, files: &[&str]) -> (Vec<trellis_engine::ops::ShootPlan>, Vec<String>) {
    let before = s.session.sim_calls().len();
    let plans = s.plan_files(files).await.unwrap();
    let calls = s.session.sim_calls()[before..].iter().map(|c| format!("{} {}", c.method, c.target)).collect();
    (plans, calls)
}

/// Each shoot's plan JSON by workspace.
fn json_by_shoot(plans: &[trellis_engine::ops::ShootPlan]) -> BTreeMap<String, String> {
    plans.iter().map(|p| (p.workspace.shoot.clone(), serde_json::to_string_pretty(&p.planned.plan).unwrap())).collect()
}

/// Each file planned on its own (its shoot's own reads, no wide list), by workspace.
async fn planned_one_by_one(s: &Scenario, files: &[&str]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in files {
        let (plans, calls) = calls_of_plan(s, &[f]).await;
        assert!(
            calls.iter().all(|c| !c.contains("/providers/Microsoft") || c.contains("/resourceGroups/")),
            "{calls:?}"
        );
        out.extend(json_by_shoot(&plans));
    }
    out
}

fn no_changes(plans: &[trellis_engine::ops::ShootPlan]) {
    for p in plans {
        let changes = [Action::Create, Action::Update, Action::Replace, Action::Delete]
            .map(|a| p.planned.plan.nodes.iter().filter(|n| n.action() == a).count());
        assert_eq!(changes, [0; 4], "{}: a no-op re-plan", p.workspace.shoot);
    }
}

#[tokio::test]
async fn regression_a_no_op_replan_of_an_azure_fleet_costs_at_most_two_calls_a_shoot_and_plans_the_same() {
    let s = Scenario::new("A2");
    let files = fleet(&s, "bravo", 12);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    assert!(s.apply_files(&files).await.unwrap().ok);
    s.sim().set_faults(round_trips());

    let (plans, calls) = calls_of_plan(&s, &files).await;
    eprintln!("{} calls for {} shoots", calls.len(), files.len());
    no_changes(&plans);
    assert!(calls.len() <= 2 * files.len(), "{} calls for {} shoots: {calls:#?}", calls.len(), files.len());
    let mut seen = std::collections::BTreeSet::new();
    for c in &calls {
        assert!(seen.insert(c.to_ascii_lowercase()), "read twice: {c}");
    }
    assert!(
        calls
            .iter()
            .any(|c| c.ends_with("/subscriptions/00000000-0000-0000-0000-000000000000/Microsoft.Network/natGateways")),
        "the subscription's NAT gateways were listed once for the fleet: {calls:#?}"
    );
    assert_eq!(json_by_shoot(&plans), planned_one_by_one(&s, &files).await, "the same plans as each shoot's own reads");
}

#[tokio::test]
async fn regression_drift_found_through_a_subscription_list_is_planned_as_through_the_shoots_own_reads() {
    let s = Scenario::new("A2");
    let files = fleet(&s, "bravo", 16);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    assert!(s.apply_files(&files).await.unwrap().ok);
    let sub = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups";
    // Out of band: one shoot's NAT gateway gets another idle timeout (found through the
    // subscription's NAT gateways), another's public IP loses its tags (its public IPs), a third's
    // VNet gets another address range (its VNets).
    let res = |shoot: &str, rtype: &str, name: &str| {
        format!("{sub}/shoot--dev--{shoot}/providers/Microsoft.Network/{rtype}/shoot--dev--{shoot}{name}")
    };
    let nat = res("bravo-05", "natGateways", "-nat-gateway");
    let mut body = s.sim().get_now(&nat).expect("NAT gateway");
    body["properties"]["idleTimeoutInMinutes"] = serde_json::json!(30);
    s.sim().put(&nat, body).await.unwrap();
    let ip = res("bravo-07", "publicIPAddresses", "-nat-gateway-ip");
    let mut body = s.sim().get_now(&ip).expect("public IP");
    body.as_object_mut().unwrap().remove("tags");
    s.sim().put(&ip, body).await.unwrap();
    let vnet = res("bravo-02", "virtualNetworks", "");
    let mut body = s.sim().get_now(&vnet).expect("VNet");
    body["properties"]["addressSpace"]["addressPrefixes"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!("10.99.0.0/16"));
    s.sim().put(&vnet, body).await.unwrap();
    s.sim().set_faults(round_trips());

    let (plans, calls) = calls_of_plan(&s, &files).await;
    assert!(calls.len() <= 2 * files.len(), "{calls:#?}");
    let by_shoot = json_by_shoot(&plans);
    assert_eq!(by_shoot, planned_one_by_one(&s, &files).await, "the same plans as each shoot's own reads");
    let changed: Vec<&String> = plans
        .iter()
        .filter(|p| {
            p.planned
                .plan
                .nodes
                .iter()
                .any(|n| matches!(n.action(), Action::Create | Action::Update | Action::Replace | Action::Delete))
        })
        .map(|p| &p.workspace.shoot)
        .collect();
    assert_eq!(
        changed,
        ["shoot--dev--bravo-02", "shoot--dev--bravo-05", "shoot--dev--bravo-07"],
        "the drift is planned where it is"
    );
}

#[tokio::test]
async fn regression_a_no_op_replan_of_a_gcp_fleet_costs_at_most_two_calls_a_shoot_and_plans_the_same() {
    let s = Scenario::new("gcp/A1");
    let files = fleet(&s, "web", 20);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    assert!(s.apply_files(&files).await.unwrap().ok);
    s.gce().set_faults(round_trips());

    let (plans, calls) = calls_of_plan(&s, &files).await;
    eprintln!("{} calls for {} shoots", calls.len(), files.len());
    no_changes(&plans);
    assert!(calls.len() <= 2 * files.len(), "{} calls for {} shoots: {calls:#?}", calls.len(), files.len());
    let firewall_lists = calls.iter().filter(|c| c.starts_with("LIST") && c.ends_with("/global/firewalls")).count();
    assert!(
        firewall_lists <= 1 + trellis_planner::wide::WIDE_AFTER,
        "the project's firewalls listed once for the fleet: {calls:#?}"
    );
    assert_eq!(json_by_shoot(&plans), planned_one_by_one(&s, &files).await, "the same plans as each shoot's own reads");
}

#[tokio::test]
async fn with_own_reads_each_shoot_reads_only_what_it_asks_for() {
    // `trellis world export` plans so: its world file holds the shoots' own resources, never a
    // subscription's wide lists.
    let s = Scenario::new("A2");
    let files = fleet(&s, "bravo", 8);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    assert!(s.apply_files(&files).await.unwrap().ok);
    s.sim().set_faults(round_trips());
    let paths: Vec<std::path::PathBuf> = files.iter().map(std::path::PathBuf::from).collect();
    let before = s.session.sim_calls().len();
    let opts = trellis_engine::ops::StreamOptions { own_reads: true, ..Default::default() };
    trellis_engine::ops::plan_files_with_options(&s.session, &paths, opts, |_| {}).await.unwrap();
    let calls = &s.session.sim_calls()[before..];
    assert_eq!(calls.len(), 6 * files.len(), "{calls:#?}");
    assert!(calls.iter().all(|c| c.target.contains("/resourceGroups/")), "no subscription list: {calls:#?}");
}

#[tokio::test]
async fn a_cloud_in_this_process_without_latency_is_read_as_each_shoot_asks() {
    // No round trip to save: the account's lists would cost more than the shoots' own reads.
    let s = Scenario::new("A2");
    let files = fleet(&s, "bravo", 8);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    assert!(s.apply_files(&files).await.unwrap().ok);
    let (plans, calls) = calls_of_plan(&s, &files).await;
    no_changes(&plans);
    assert_eq!(calls.len(), 6 * files.len(), "{calls:#?}");
    assert!(calls.iter().all(|c| c.contains("/resourceGroups/")), "no subscription list: {calls:#?}");
}

/// A GCE firewall rule's name is the project's: a static rule's name taken by a rule in another
/// network is that rule, which the plan shows replaced into the shoot's VPC (as when the project's
/// whole list was read). Read through the VPC's narrowed list alone, it was "absent": the plan
/// created it and GCE refused the apply (409 alreadyExists).
#[tokio::test]
async fn regression_a_static_rule_name_taken_in_another_network_is_read_not_taken_for_absent() {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("world.yaml");
    std::fs::write(
        &world,
        "gcp:\n  project: trellis-sim\n  resources:\n\
         \x20   - selfLink: projects/trellis-sim/global/networks/other-vpc\n\
         \x20     autoCreateSubnetworks: false\n\
         \x20   - selfLink: projects/trellis-sim/global/firewalls/shoot--platform--web-allow-internal-access\n\
         \x20     network: projects/trellis-sim/global/networks/other-vpc\n\
         \x20     direction: INGRESS\n\
         \x20     sourceRanges: [10.9.0.0/16]\n\
         \x20     allowed: [{IPProtocol: tcp, ports: [\"22\"]}]\n",
    )
    .unwrap();
    let s = Scenario::with_world(trellis_tests::scenario_dir("gcp/A1"), Some(world));
    let plan = s.plan().await.unwrap();
    let rule = trellis_tests::node(&plan, ".shoot--platform--web-allow-internal-access");
    assert_eq!(rule.action(), Action::Replace, "{rule:#?}");
    let observed = rule.observed.as_ref().expect("the rule as read");
    assert!(observed["network"].as_str().unwrap().ends_with("/networks/other-vpc"), "{observed}");
    let health = trellis_tests::node(&plan, ".shoot--platform--web-allow-health-checks");
    assert_eq!(health.action(), Action::Create, "no rule of that name anywhere");
}
