//! The world file's `gce:` section, and fixtures of real GCE response shapes (tests/data/gce/,
//! see its README for where each shape comes from).

use serde_json::{json, Value};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite};
use trellis_sim::{GceSim, Origin, Quotas, SimError, WorldFile};

const P: &str = "https://www.googleapis.com/compute/v1/projects/acme-shared";

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/data/gce/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The fixtures plus what they reference, as a world file (JSON is YAML).
fn fixture_world() -> WorldFile {
    let mut central = fixture("subnetwork-auto-default.json");
    central["selfLink"] = json!(format!("{P}/regions/us-central1/subnetworks/default"));
    central["region"] = json!(format!("{P}/regions/us-central1"));
    central["ipCidrRange"] = json!("10.128.0.0/20");
    central["gatewayAddress"] = json!("10.128.0.1");
    central["id"] = json!("2918470137623048299");
    let shared = json!({"selfLink": format!("{P}/global/networks/shared-vpc"), "autoCreateSubnetworks": false});
    let resources = json!([
        fixture("firewall-gke.json"),
        fixture("router-user-nat.json"),
        fixture("network-auto-mode.json"),
        fixture("subnetwork-auto-default.json"),
        central,
        shared,
        fixture("subnetwork-secondary-ranges.json"),
        fixture("address-nat.json"),
    ]);
    let text = serde_json::to_string(&json!({"gce": {"resources": resources}})).unwrap();
    WorldFile::parse("world.yaml", &text).unwrap()
}

/// Every field the fixture has, the simulator answers the same — but an auto-mode network's
/// `subnetworks`, which the fixture trims to two regions: the simulator lists those among the
/// subnetworks of every auto-mode region it has.
fn assert_shape(fixture: &Value, got: &Value) {
    for (k, v) in fixture.as_object().unwrap() {
        if k == "subnetworks" && fixture["autoCreateSubnetworks"] == json!(true) {
            let listed = got[k].as_array().unwrap();
            assert!(
                v.as_array().unwrap().iter().all(|s| listed.contains(s)),
                "field {k} of {}: got {got:#}",
                fixture["selfLink"]
            );
            continue;
        }
        assert_eq!(got.get(k), Some(v), "field {k} of {}: got {got:#}", fixture["selfLink"]);
    }
}

#[tokio::test]
async fn fixtures_of_real_gce_shapes_round_trip_through_a_world_file() {
    let sim = GceSim::in_memory();
    let report = sim.sync_world(&fixture_world()).unwrap();
    assert_eq!(report.added.len(), 8);
    for name in [
        "network-auto-mode.json",
        "subnetwork-auto-default.json",
        "subnetwork-secondary-ranges.json",
        "router-user-nat.json",
        "address-nat.json",
        "firewall-gke.json",
    ] {
        let f = fixture(name);
        let got = sim.get(f["selfLink"].as_str().unwrap()).await.unwrap().unwrap_or_else(|| panic!("{name} missing"));
        assert_shape(&f, &got);
        assert_eq!(sim.origin(f["selfLink"].as_str().unwrap()), Some(Origin::World));
    }
}

#[tokio::test]
async fn the_users_nat_keeps_its_address_and_network_from_being_deleted() {
    let sim = GceSim::in_memory();
    sim.sync_world(&fixture_world()).unwrap();
    let addr = format!("{P}/regions/europe-west1/addresses/egress-nat-1");
    let e = sim.delete(&addr).await.unwrap_err();
    assert!(
        matches!(&e, CloudError::Rejected { status: 400, code, .. } if code == "resourceInUseByAnotherResource"),
        "{e:?}"
    );
    let e = sim.delete(&format!("{P}/global/networks/shared-vpc")).await.unwrap_err();
    assert!(matches!(&e, CloudError::Rejected { status: 400, .. }), "{e:?}");
    // A shoot's routes go into the user's VPC; filters find them among the user's.
    for n in 0..2 {
        sim.create(&format!("projects/acme-shared/global/routes/shoot--p--s-{n}"), json!({"network": format!("{P}/global/networks/shared-vpc"), "destRange": format!("100.96.{n}.0/24"), "nextHopInstance": format!("zones/europe-west1-b/instances/node-{n}")})).await.unwrap();
    }
    let routes = sim.list("projects/acme-shared/global", "routes").await.unwrap();
    assert_eq!(routes.len(), 2);
    assert_eq!(routes[0]["nextHopInstance"], json!(format!("{P}/zones/europe-west1-b/instances/node-0")));
}

#[test]
fn the_gce_section_declares_resources_and_quotas() {
    let text = r#"
gce:
  quotas: {routesPerNetwork: 250}
  resources:
    - selfLink: projects/p/global/networks/vpc
    - selfLink: projects/p/regions/europe-west1/subnetworks/workers
      network: projects/p/global/networks/vpc
      ipCidrRange: 10.250.0.0/16
    - name: projects/p/serviceAccounts/user-sa@p.iam.gserviceaccount.com
      displayName: the user's account
"#;
    let world = WorldFile::parse("world.yaml", text).unwrap();
    let sim = GceSim::in_memory();
    let report = sim.sync_world(&world).unwrap();
    assert_eq!(
        report.added,
        [
            "projects/p/global/networks/vpc",
            "projects/p/regions/europe-west1/subnetworks/workers",
            "projects/p/serviceAccounts/user-sa@p.iam.gserviceaccount.com"
        ]
    );
    assert_eq!(sim.quotas(), Quotas { routes_per_network: 250, firewalls_per_project: 200 });
    let s = sim.get_now("projects/p/regions/europe-west1/subnetworks/workers").unwrap();
    assert_eq!(s["gatewayAddress"], "10.250.0.1", "declared resources get GCE's defaults");
    assert!(sim.calls().is_empty(), "world writes are not audited");

    // Re-syncing the same world changes nothing; dropping a resource removes it.
    assert!(sim.sync_world(&world).unwrap().is_empty());
    let fewer =
        WorldFile::parse("world.yaml", "gce:\n  resources:\n    - selfLink: projects/p/global/networks/vpc\n").unwrap();
    let report = sim.sync_world(&fewer).unwrap();
    assert_eq!(report.removed.len(), 2, "{report:?}");
}

#[test]
fn a_wrong_gce_section_reports_every_problem_on_its_own_line() {
    let e = WorldFile::parse("w.yaml", "gce:\n  resourcez: []\n").unwrap_err();
    assert!(matches!(e, SimError::WorldParse { line: 2, .. }), "{e:?}");
    let text = "gce:\n  resources:\n    - {name: x}\n    - selfLink: projects/p/global/widgets/w\n    - selfLink: projects/p/global/networks/a\n    - selfLink: projects/p/global/networks/a\n";
    let e = WorldFile::parse("w.yaml", text).unwrap_err();
    let SimError::WorldInvalid { problems, .. } = &e else { panic!("{e:?}") };
    assert_eq!(problems.len(), 3, "{e}");
    assert!(problems[0].contains("gce.resources[0]") && problems[0].contains("no `selfLink`"), "{}", problems[0]);
    assert!(problems[1].contains("not a GCE resource"), "{}", problems[1]);
    assert!(problems[2].contains("declared twice"), "{}", problems[2]);

    // Rule violations are found at sync, all at once, and change nothing.
    let text = "gce:\n  resources:\n    - selfLink: projects/p/regions/r/subnetworks/s\n      network: projects/p/global/networks/missing\n      ipCidrRange: 10.0.0.0/24\n    - selfLink: projects/p/global/networks/Bad\n";
    let world = WorldFile::parse("w.yaml", text).unwrap();
    let sim = GceSim::in_memory();
    let e = sim.sync_world(&world).unwrap_err();
    let SimError::WorldInvalid { problems, .. } = &e else { panic!("{e:?}") };
    assert_eq!(problems.len(), 2, "{e}");
    assert!(problems.iter().any(|p| p.contains("networks/missing") && p.contains("was not found")), "{e}");
    assert!(problems.iter().any(|p| p.contains("networks/Bad") && p.contains("RFC 1035")), "{e}");
    assert!(sim.snapshot().is_empty());
}

fn world(text: &str) -> WorldFile {
    WorldFile::parse("w.yaml", text).unwrap()
}

/// Real inputs: a world's auto-mode network has, as on GCE, a subnetwork named after it in every
/// auto-mode region (the project's `default` network: subnet `default` in europe-west1, us-central1,
/// …) — declared by the world (user-owned), kept across re-syncs, gone with the network; a subnetwork
/// the world declares by that name stands in for the generated one.
#[test]
fn regression_world_auto_mode_network_has_its_subnet_in_every_region() {
    let sim = GceSim::in_memory();
    let auto =
        "gce:\n  resources:\n    - selfLink: projects/p/global/networks/default\n      autoCreateSubnetworks: true\n";
    sim.sync_world(&world(auto)).unwrap();
    let eu = "projects/p/regions/europe-west1/subnetworks/default";
    let subnet = sim.get_now(eu).expect("the europe-west1 default subnet");
    assert_eq!(subnet["ipCidrRange"], "10.132.0.0/20", "{subnet}");
    assert_eq!(sim.origin(eu), Some(Origin::World));
    assert_eq!(
        sim.get_now("projects/p/regions/us-central1/subnetworks/default").unwrap()["ipCidrRange"],
        "10.128.0.0/20"
    );
    // A re-sync of the same world keeps them.
    sim.sync_world(&world(auto)).unwrap();
    assert!(sim.get_now(eu).is_some());
    // Declared by name: the world's subnet, not the generated one.
    let declared = format!(
        "{auto}    - selfLink: {eu}\n      network: projects/p/global/networks/default\n      ipCidrRange: 10.132.0.0/20\n      secondaryIpRanges: [{{rangeName: pods, ipCidrRange: 100.96.0.0/11}}]\n"
    );
    sim.sync_world(&world(&declared)).unwrap();
    assert_eq!(sim.get_now(eu).unwrap()["secondaryIpRanges"][0]["rangeName"], "pods");
    // Back to the network alone, then without it: its subnets go with it.
    sim.sync_world(&world(auto)).unwrap();
    assert!(sim.get_now(eu).unwrap().get("secondaryIpRanges").is_none_or(|r| r.as_array().is_some_and(Vec::is_empty)));
    sim.sync_world(&world("gce:\n  resources: []\n")).unwrap();
    assert!(sim.get_now(eu).is_none());
    assert!(sim.get_now("projects/p/global/networks/default").is_none());
}

/// The recorded list responses of a real auto-mode VPC (tests/data/gce/auto-mode-vpc/): the
/// `default` network with a peering, its subnetworks in 28 regions (an aggregatedList, two regions
/// with the `NO_RESULTS_ON_PAGE` warning), its routes — the default internet route, a subnet route
/// per subnetwork (`nextHopNetwork` only) and a peering route (`nextHopPeering`) — and the four
/// `default-allow-*` firewall rules.
pub fn auto_mode_vpc_resources() -> Vec<Value> {
    let dir = format!("{}/tests/data/gce/auto-mode-vpc", env!("CARGO_MANIFEST_DIR"));
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/{name}")).unwrap()).unwrap()
    };
    let mut out = Vec::new();
    for list in ["networks-list.json", "routes-list.json", "firewalls-list.json"] {
        out.extend(read(list)["items"].as_array().unwrap().iter().cloned());
    }
    for (_, scoped) in read("subnetworks-aggregated-list.json")["items"].as_object().unwrap() {
        out.extend(scoped.get("subnetworks").and_then(Value::as_array).into_iter().flatten().cloned());
    }
    out
}

/// A world file holds what exists, and what GCE makes itself exists too: the routes of an
/// auto-mode VPC (subnet routes with only `nextHopNetwork`, a peering route with `nextHopPeering`)
/// were refused as inserts are ("a route needs exactly one next hop"), so recorded GCE responses of
/// a real project could not be loaded.
#[tokio::test]
async fn regression_recorded_responses_of_a_real_auto_mode_vpc_load_verbatim() {
    let resources = auto_mode_vpc_resources();
    assert_eq!(resources.len(), 1 + 30 + 4 + 28, "the fixture: network, routes, firewalls, subnetworks");
    let text = serde_json::to_string(&json!({"gcp": {"project": "acme-prod", "resources": resources}})).unwrap();
    let world = WorldFile::parse("world.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
    let sim = GceSim::in_memory();
    let report = sim.sync_world(&world).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.added.len(), resources.len());
    assert_eq!(sim.project().as_deref(), Some("acme-prod"));
    for r in &resources {
        let link = r["selfLink"].as_str().unwrap();
        let got = sim.get(link).await.unwrap().unwrap_or_else(|| panic!("{link} is there"));
        for (k, v) in r.as_object().unwrap() {
            if k == "subnetworks" {
                let mut want: Vec<&Value> = v.as_array().unwrap().iter().collect();
                let mut have: Vec<&Value> = got[k].as_array().unwrap().iter().collect();
                want.sort_by_key(|v| v.to_string());
                have.sort_by_key(|v| v.to_string());
                assert_eq!(have, want, "{link}: its subnetworks");
                continue;
            }
            assert_eq!(got.get(k), Some(v), "{link}: field {k} as recorded; got {got:#}");
        }
    }
    // GCE's own routes are listed as they were recorded, the peering route too.
    let routes = sim.list("projects/acme-prod/global", "routes").await.unwrap();
    assert_eq!(routes.len(), 30);
    assert_eq!(routes.iter().filter(|r| r.get("nextHopNetwork").is_some()).count(), 28);
    assert!(routes.iter().any(|r| r["nextHopPeering"] == "servicenetworking-googleapis-com"));
    // Re-syncing the same file changes nothing; the `gce:` alias reads the same section.
    assert!(sim.sync_world(&world).unwrap().is_empty());
    let alias = serde_json::to_string(&json!({"gce": {"project": "acme-prod", "resources": resources}})).unwrap();
    assert!(sim.sync_world(&WorldFile::parse("world.yaml", &alias).unwrap()).unwrap().is_empty());
    // Inserting such a route through the API is still refused: insert rules are for writes.
    let mut subnet_route = routes.iter().find(|r| r.get("nextHopNetwork").is_some()).unwrap().clone();
    subnet_route["name"] = json!("mine");
    let e = sim.insert("projects/acme-prod/global/routes", subnet_route).await.unwrap_err();
    assert!(matches!(e, CloudError::Rejected { status: 400, .. }), "{e:?}");
}

#[test]
fn the_gcp_section_names_its_project_and_gce_is_its_alias_but_not_both() {
    let w = world("gcp:\n  project: acme-prod\n  resources: []\n");
    let gcp = trellis_sim::GceWorld::of(&w).unwrap().unwrap();
    assert_eq!((gcp.section, gcp.project.as_deref()), ("gcp", Some("acme-prod")));
    let w = world("gce:\n  resources: []\n");
    assert_eq!(trellis_sim::GceWorld::of(&w).unwrap().unwrap().section, "gce");
    let e = WorldFile::parse("w.yaml", "gcp:\n  resources: []\ngce:\n  resources: []\n").unwrap_err();
    let SimError::WorldParse { line, message, .. } = &e else { panic!("{e:?}") };
    assert_eq!(*line, 3, "{e}");
    assert!(message.contains("`gcp` and `gce` are one section"), "{message}");
    let e = WorldFile::parse("w.yaml", "gcp:\n  project: Not_A_Project\n").unwrap_err();
    assert!(e.to_string().contains("gcp.project: 'Not_A_Project' is not a GCP project id"), "{e}");
}

/// A router a world file declares with a `fingerprint` (kept verbatim, as a state dir of an earlier
/// trellis kept one) is written under the version the write model reads from it — the simulator
/// compared that fingerprint with the router's content version and refused every update.
#[tokio::test]
async fn regression_a_router_declared_with_a_fingerprint_is_updated_under_it() {
    use trellis_planner::ids::{GceIds, IdScheme};
    let sim = GceSim::in_memory();
    let text = "gcp:\n  resources:\n    - selfLink: projects/p/global/networks/vpc\n    - selfLink: projects/p/regions/r1/routers/rtr\n      network: projects/p/global/networks/vpc\n      fingerprint: AAAAAAAAAAA=\n";
    sim.sync_world(&world(text)).unwrap();
    let id = "projects/p/regions/r1/routers/rtr";
    let read = sim.get(id).await.unwrap().unwrap();
    assert_eq!(read["fingerprint"], "AAAAAAAAAAA=", "kept as declared");
    let mut body = read.clone();
    body["description"] = json!("ours");
    let written = sim.update(id, body, &GceIds.precondition(&read)).await.unwrap();
    assert_eq!(written["description"], "ours");
}

/// The design contract's example declares a resource by `kind`, `name` and `region` under the
/// section's `project:`, without a selfLink: it loads, found where GCE would have it.
#[tokio::test]
async fn a_resource_declared_by_kind_name_and_region_under_the_project_loads() {
    let text = "gcp:\n  project: acme-prod\n  resources:\n    - {kind: 'compute#network', name: my-vpc, autoCreateSubnetworks: false}\n    - {kind: 'compute#subnetwork', name: my-workers, region: europe-west1, network: global/networks/my-vpc, ipCidrRange: 10.100.0.0/16}\n";
    let sim = GceSim::in_memory();
    sim.sync_world(&world(text)).unwrap_or_else(|e| panic!("{e}"));
    let s = sim.get("projects/acme-prod/regions/europe-west1/subnetworks/my-workers").await.unwrap().unwrap();
    assert_eq!(s["network"], "https://www.googleapis.com/compute/v1/projects/acme-prod/global/networks/my-vpc");
    assert_eq!(s["region"], "https://www.googleapis.com/compute/v1/projects/acme-prod/regions/europe-west1");
    // Without the project (or the region), it cannot be placed: one line saying what to add.
    let e =
        WorldFile::parse("w.yaml", "gcp:\n  resources:\n    - {kind: 'compute#network', name: my-vpc}\n").unwrap_err();
    assert!(e.to_string().contains("has no `selfLink`") && e.to_string().contains("`project:`"), "{e}");
}
