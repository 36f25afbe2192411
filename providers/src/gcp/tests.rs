//! Table tests of the GCP planning functions over observed GCE state in compute v1 shapes
//! (`providers/tests/data/gcp/observed/`). Tests named by acceptance id prove that criterion.

use super::api::InfrastructureConfig;
use super::desired::{self, first_subnet};
use super::kind;
use super::{preflight, render, warnings, Ctx};
use serde_json::{json, Value};
use trellis_planner::diff::plan_nodes;
use trellis_planner::discover::Observed;
use trellis_planner::ids::GceIds;
use trellis_planner::model::Desired;
use trellis_plans::{Action, Node};

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/data/gcp/observed/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The fixture as discovery would have fetched it: every id and list discovery asks for must be in
/// the fixture (a fixture that misses one fails the test), lists answered with their covers; a
/// covered id a narrowed list leaves out is a GET, as in discovery (absent when the fixture's `get`
/// does not have it: its lists hold what the project has).
fn observed(name: &str, cfg: &InfrastructureConfig, ctx: &Ctx, destroy: bool) -> Observed {
    let f = fixture(name);
    let (ids, lists) = if destroy { desired::destroy_discovery(cfg, ctx) } else { desired::discovery(cfg, ctx) };
    let mut o = Observed::new(&GceIds);
    for id in &ids {
        let v = f["get"].get(id.as_str()).unwrap_or_else(|| panic!("fixture {name} lacks {id}"));
        o.insert(id, (!v.is_null()).then(|| v.clone()));
    }
    for req in &lists {
        let key = format!("{}|{}", req.parent, req.rtype);
        let items =
            f["lists"].get(&key).unwrap_or_else(|| panic!("fixture {name} lacks list {key}")).as_array().unwrap();
        for id in o.answer(req, items.clone()) {
            let v = f["get"].get(id.as_str()).filter(|v| !v.is_null()).cloned();
            o.insert(&id, v);
        }
    }
    o
}

fn cfg(v: Value) -> InfrastructureConfig {
    serde_json::from_value(v).unwrap()
}

fn ctx(dual: bool) -> Ctx {
    Ctx {
        tn: "shoot--p--n".into(),
        project: "prj".into(),
        region: "europe-west1".into(),
        zone: "europe-west1-b".into(),
        nodes: Some("10.100.0.0/16".into()),
        pods: Some("100.96.0.0/11".into()),
        services: Some("10.200.0.0/20".into()),
        ip_families: if dual { vec!["IPv4".into(), "IPv6".into()] } else { vec!["IPv4".into()] },
        overlay: false,
        max_nodes: 10,
    }
}

fn byo_ipv4() -> InfrastructureConfig {
    cfg(json!({"networks": {"vpc": {"name": "my-vpc"}, "subnetWorkers": {"name": "my-workers"}}}))
}

fn byo_dual() -> InfrastructureConfig {
    cfg(json!({"networks": {"vpc": {"name": "my-vpc"},
        "subnetWorkers": {"name": "my-workers", "podSecondaryRangeName": "my-pods"},
        "subnetServices": {"name": "my-services"}}}))
}

fn managed_default() -> InfrastructureConfig {
    cfg(json!({"networks": {"workers": "10.100.0.0/16"}}))
}

fn nodes(d: Vec<Desired>, o: &Observed) -> Vec<Node> {
    plan_nodes(d, o).unwrap()
}

fn actions(nodes: &[Node]) -> Vec<(String, Action)> {
    nodes.iter().map(|n| (n.address.clone(), n.action())).collect()
}

fn action_of(nodes: &[Node], address: &str) -> Option<Action> {
    nodes.iter().find(|n| n.address == address).map(Node::action)
}

/// Edits a fixture's resource.
fn with(mut o: Observed, id: &str, f: impl FnOnce(&mut Value)) -> Observed {
    let mut v = o.get(id).unwrap().cloned().unwrap();
    f(&mut v);
    o.insert(id, Some(v));
    o
}

const WORKERS: &str = "projects/prj/regions/europe-west1/subnetworks/my-workers";

// ---- names, ranges ----

#[test]
fn first_subnet_cuts_a_108_from_the_64_as_upstream() {
    assert_eq!(first_subnet("2600:1900:4041:b5f::/64", 108), "2600:1900:4041:b5f::/108");
    assert_eq!(first_subnet("2600:1900:4041:b5f:0:0:0:1/64", 108), "2600:1900:4041:b5f::/108");
    assert_eq!(first_subnet("not a cidr", 108), "not a cidr");
}

// ---- managed (group A) ----

#[test]
fn a1_managed_default_creates_the_upstream_graph() {
    let (c, x) = (managed_default(), ctx(false));
    let o = observed("managed-empty", &c, &x, false);
    assert!(preflight::check(&c, &x, &o).unwrap().is_empty());
    let n = nodes(desired::desired(&c, &x, &o).unwrap(), &o);
    assert_eq!(
        actions(&n),
        vec![
            ("gcp.cloud_nat.prj/europe-west1/shoot--p--n-cloud-router.shoot--p--n-cloud-nat".into(), Action::Create),
            ("gcp.firewall.prj.shoot--p--n-allow-health-checks".into(), Action::Create),
            ("gcp.firewall.prj.shoot--p--n-allow-internal-access".into(), Action::Create),
            ("gcp.network.prj.shoot--p--n".into(), Action::Create),
            ("gcp.router.prj/europe-west1.shoot--p--n-cloud-router".into(), Action::Create),
            ("gcp.service_account.prj.shoot--p--n".into(), Action::Create),
            ("gcp.subnetwork.prj/europe-west1.shoot--p--n-nodes".into(), Action::Create),
        ]
    );
    let fw = n.iter().find(|n| n.name == "shoot--p--n-allow-internal-access").unwrap();
    let patch = fw.patch().unwrap();
    assert_eq!(patch["sourceRanges"], json!(["100.96.0.0/11", "10.100.0.0/16"]), "pods, workers; not nodes");
    assert_eq!(patch["targetTags"], Value::Null, "untargeted");
    let nat = n.iter().find(|n| n.kind == kind::CLOUD_NAT).unwrap().patch().unwrap().clone();
    assert_eq!(nat["natIpAllocateOption"], "AUTO_ONLY");
    assert_eq!(
        nat["subnetworks"][0]["name"],
        "https://www.googleapis.com/compute/v1/projects/prj/regions/europe-west1/subnetworks/shoot--p--n-nodes"
    );
    assert_eq!((nat["minPortsPerVm"].clone(), nat["maxPortsPerVm"].clone()), (json!(2048), json!(65536)));
    // Status: auto-allocated NAT IPs are not reported (upstream), so no egress CIDRs.
    let a = render::artifacts(&c, &x, &o).unwrap();
    assert_eq!(a.egress_cidrs(), Some(Some(&[][..])));
    assert_eq!(
        a.infrastructure_status().unwrap()["networks"]["vpc"]["cloudRouter"]["name"],
        "shoot--p--n-cloud-router"
    );
    assert_eq!(a.infrastructure_status().unwrap()["serviceAccountEmail"], "shoot--p--n@prj.iam.gserviceaccount.com");
    assert!(a.ccm_flags().unwrap()["configure-cloud-routes"]);
}

#[test]
fn a1_managed_flow_logs_take_upstreams_defaults() {
    let c = cfg(json!({"networks": {"workers": "10.100.0.0/16", "flowLogs": {"flowSampling": 0.2}}}));
    let x = ctx(false);
    let o = observed("managed-empty", &c, &x, false);
    let n = nodes(desired::desired(&c, &x, &o).unwrap(), &o);
    let s = n.iter().find(|n| n.name == "shoot--p--n-nodes").unwrap().patch().unwrap().clone();
    assert_eq!(s["enableFlowLogs"], true);
    assert_eq!(s["logConfig"]["aggregationInterval"], "INTERVAL_5_MIN");
    assert_eq!(s["logConfig"]["metadata"], "EXCLUDE_ALL_METADATA");
    assert!((s["logConfig"]["flowSampling"].as_f64().unwrap() - 0.2).abs() < 1e-6);
}

#[test]
fn a2_managed_in_user_vpc_verifies_vpc_and_router_and_adds_the_nat_to_the_router() {
    let c = cfg(
        json!({"networks": {"vpc": {"name": "my-vpc", "cloudRouter": {"name": "my-router"}}, "workers": "10.100.0.0/16"}}),
    );
    let x = ctx(false);
    let o = observed("managed-user-vpc", &c, &x, false);
    assert!(preflight::check(&c, &x, &o).unwrap().is_empty());
    let n = nodes(desired::desired(&c, &x, &o).unwrap(), &o);
    assert_eq!(action_of(&n, "gcp.network.prj.my-vpc"), Some(Action::Verify));
    assert_eq!(action_of(&n, "gcp.router.prj/europe-west1.my-router"), Some(Action::Verify));
    assert_eq!(action_of(&n, "gcp.cloud_nat.prj/europe-west1/my-router.shoot--p--n-cloud-nat"), Some(Action::Create));
    assert_eq!(action_of(&n, "gcp.subnetwork.prj/europe-west1.shoot--p--n-nodes"), Some(Action::Create));
    let render = render::cloud_provider_config(&c, &x);
    assert!(render.content.contains("network-name=\"my-vpc\"\n"));
    assert!(!render.content.contains("subnetwork-name"), "no internal subnet: the line is left out");
}

#[test]
fn a2_managed_preflight_names_a_missing_user_vpc_and_router() {
    let c = cfg(
        json!({"networks": {"vpc": {"name": "my-vpc", "cloudRouter": {"name": "my-router"}}, "workers": "10.100.0.0/16"}}),
    );
    let x = ctx(false);
    let mut o = observed("managed-user-vpc", &c, &x, false);
    o.insert("projects/prj/global/networks/my-vpc", None);
    o.insert("projects/prj/regions/europe-west1/routers/my-router", None);
    let errs: Vec<String> = preflight::check(&c, &x, &o).unwrap().iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].starts_with("networks.vpc.name: VPC my-vpc not found in project prj"), "{}", errs[0]);
    assert!(errs[1].contains("Cloud Router my-router not found in project prj region europe-west1"), "{}", errs[1]);
}

#[test]
fn a3_user_nat_ips_are_verified_used_manually_and_are_the_egress_cidrs() {
    let c = cfg(
        json!({"networks": {"vpc": {"name": "my-vpc", "cloudRouter": {"name": "my-router"}}, "workers": "10.100.0.0/16",
        "cloudNAT": {"natIPNames": [{"name": "nat-ip-1"}, {"name": "nat-ip-2"}]}}}),
    );
    let x = ctx(false);
    let o = observed("managed-user-vpc", &c, &x, false);
    assert!(preflight::check(&c, &x, &o).unwrap().is_empty(), "nat-ip-2 is used by the shoot's router only");
    let n = nodes(desired::desired(&c, &x, &o).unwrap(), &o);
    assert_eq!(action_of(&n, "gcp.address.prj/europe-west1.nat-ip-1"), Some(Action::Verify));
    let nat = n.iter().find(|n| n.kind == kind::CLOUD_NAT).unwrap().patch().unwrap().clone();
    assert_eq!(nat["natIpAllocateOption"], "MANUAL_ONLY");
    assert_eq!(
        nat["natIps"][1],
        "https://www.googleapis.com/compute/v1/projects/prj/regions/europe-west1/addresses/nat-ip-2"
    );
    let a = render::artifacts(&c, &x, &o).unwrap();
    assert_eq!(a.egress_cidrs(), Some(Some(&["34.76.10.11/32".to_string(), "34.76.10.12/32".to_string()][..])));
    assert_eq!(
        a.infrastructure_status().unwrap()["networks"]["natIPs"],
        json!([{"ip": "34.76.10.11"}, {"ip": "34.76.10.12"}])
    );
}

#[test]
fn a3_preflight_refuses_a_missing_nat_ip_and_one_used_by_another() {
    let c = cfg(
        json!({"networks": {"vpc": {"name": "my-vpc", "cloudRouter": {"name": "my-router"}}, "workers": "10.100.0.0/16",
        "cloudNAT": {"natIPNames": [{"name": "nat-ip-2"}]}}}),
    );
    let x = ctx(false);
    let mut o = with(
        observed("managed-user-vpc", &c, &x, false),
        "projects/prj/regions/europe-west1/addresses/nat-ip-2",
        |a| {
            a["users"] =
                json!(["https://www.googleapis.com/compute/v1/projects/prj/zones/europe-west1-b/instances/vm-1"])
        },
    );
    let errs: Vec<String> = preflight::check(&c, &x, &o).unwrap().iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("networks.cloudNAT.natIPNames[0].name: Invalid value: \"nat-ip-2\": external IP address is already in use by vm-1"),
        "{}",
        errs[0]
    );
    o.insert("projects/prj/regions/europe-west1/addresses/nat-ip-2", None);
    let errs: Vec<String> = preflight::check(&c, &x, &o).unwrap().iter().map(ToString::to_string).collect();
    assert!(errs[0].starts_with("networks.cloudNAT.natIPNames[0].name: Not found: \"nat-ip-2\""), "{}", errs[0]);
    assert!(errs[0].contains("project prj region europe-west1"));
}

#[test]
fn a4_managed_dual_stack_creates_services_subnet_and_ipv6_rules_once_ranges_are_known() {
    let (c, x) = (managed_default(), ctx(true));
    let o = observed("managed-empty", &c, &x, false);
    let n = nodes(desired::desired(&c, &x, &o).unwrap(), &o);
    let s = n.iter().find(|n| n.name == "shoot--p--n-nodes").unwrap().patch().unwrap().clone();
    assert_eq!(s["stackType"], "IPV4_IPV6");
    assert_eq!(s["secondaryIpRanges"], json!([{"rangeName": "ipv4-pod-cidr", "ipCidrRange": "100.96.0.0/11"}]));
    assert_eq!(action_of(&n, "gcp.subnetwork.prj/europe-west1.shoot--p--n-services"), Some(Action::Create));
    assert_eq!(
        action_of(&n, "gcp.firewall.prj.shoot--p--n-allow-internal-access-ipv6"),
        Some(Action::Skip),
        "ranges unknown yet"
    );
    assert!(!render::configure_cloud_routes(&c, &x), "dual-stack: alias IPs");
    // After the apply GCE has assigned the /64s: the IPv6 mirrors are planned.
    let prefix = |p: &str| json!({"name": "s", "network": "https://www.googleapis.com/compute/v1/projects/prj/global/networks/shoot--p--n", "externalIpv6Prefix": p});
    let mut o = o;
    o.insert(
        "projects/prj/regions/europe-west1/subnetworks/shoot--p--n-nodes",
        Some(prefix("2600:1900:4041:a00::/64")),
    );
    o.insert(
        "projects/prj/regions/europe-west1/subnetworks/shoot--p--n-services",
        Some(prefix("2600:1900:4041:a01::/64")),
    );
    let n = nodes(desired::desired(&c, &x, &o).unwrap(), &o);
    let fw6 = n.iter().find(|n| n.name == "shoot--p--n-allow-internal-access-ipv6").unwrap();
    assert_eq!(fw6.action(), Action::Create);
    assert_eq!(fw6.patch().unwrap()["sourceRanges"], json!(["2600:1900:4041:a00::/64", "2600:1900:4041:a01::/64"]));
    assert_eq!(fw6.patch().unwrap()["allowed"][0]["IPProtocol"], "58");
}

// ---- BYO (group B, E) ----

#[test]
fn b1_byo_ipv4_verifies_and_creates_nothing() {
    let (c, x) = (byo_ipv4(), ctx(false));
    let o = observed("byo-ipv4", &c, &x, false);
    assert!(preflight::check(&c, &x, &o).unwrap().is_empty());
    let n = nodes(desired::desired(&c, &x, &o).unwrap(), &o);
    assert!(n.iter().all(|n| matches!(n.action(), Action::Verify | Action::Skip)), "{:?}", actions(&n));
    assert_eq!(action_of(&n, "gcp.network.prj.my-vpc"), Some(Action::Verify));
    assert_eq!(action_of(&n, "gcp.subnetwork.prj/europe-west1.my-workers"), Some(Action::Verify));
    assert!(n
        .iter()
        .filter(|n| n.action() == Action::Skip)
        .all(|n| n.reason.detail().contains("upstream's BYO branch does not schedule")));
    assert!(render::configure_cloud_routes(&c, &x), "BYO IPv4: per-node routes (spec)");
}

#[test]
fn e2_e3_byo_plans_no_router_nat_or_static_firewall_rules() {
    for (c, x, fixture) in [(byo_ipv4(), ctx(false), "byo-ipv4"), (byo_dual(), ctx(true), "byo-dual")] {
        let o = observed(fixture, &c, &x, false);
        let n = nodes(desired::desired(&c, &x, &o).unwrap(), &o);
        for name in [
            "shoot--p--n-cloud-router",
            "shoot--p--n-cloud-nat",
            "shoot--p--n-allow-internal-access",
            "shoot--p--n-allow-health-checks",
        ] {
            let node = n.iter().find(|n| n.name == name).unwrap_or_else(|| panic!("{name} is shown as skipped"));
            assert_eq!(node.action(), Action::Skip, "{name}");
        }
        let skipped_v6 = n.iter().any(|n| n.name == "shoot--p--n-allow-internal-access-ipv6");
        assert_eq!(skipped_v6, x.dual_stack(), "IPv6 mirrors shown in dual-stack only");
    }
}

/// cloudprovider.conf is compared with upstream's template
/// (`charts/internal/cloud-provider-config/templates/cloud-provider-config.yaml`, b10c0b5) rendered
/// by hand: the `cloudprovider.conf: |` block with its 4-space indent removed, `{{ .Values.x }}`
/// replaced by `getConfigChartValues`' values (projectID = the project, networkName = the status
/// VPC, subNetworkName = the BYO workers subnet by the fallback, zone = controlPlaneConfig.zone,
/// nodeTags = the seed namespace = the technical id); `{{- if … }}`/`{{- end }}` trim the newline
/// before them, so the subnetwork line stands on its own line.
#[test]
fn e4_b1_cloudprovider_conf_names_the_byo_workers_subnet_byte_for_byte() {
    let conf = render::cloud_provider_config(&byo_ipv4(), &ctx(false));
    let upstream = "[Global]\nproject-id=\"prj\"\nnetwork-name=\"my-vpc\"\nsubnetwork-name=\"my-workers\"\nmultizone=true\nlocal-zone=\"europe-west1-b\"\ntoken-url=nil\nnode-tags=\"shoot--p--n\"\n";
    assert_eq!(conf.content, upstream);
    assert_eq!(conf.values["subnetwork-name"], "my-workers");
    // Managed with an internal subnet: subnetwork-name is the internal subnet.
    let c = cfg(json!({"networks": {"workers": "10.100.0.0/16", "internal": "10.101.0.0/24"}}));
    let conf = render::cloud_provider_config(&c, &ctx(false));
    assert_eq!(
        conf.content,
        "[Global]\nproject-id=\"prj\"\nnetwork-name=\"shoot--p--n\"\nsubnetwork-name=\"shoot--p--n-internal\"\nmultizone=true\nlocal-zone=\"europe-west1-b\"\ntoken-url=nil\nnode-tags=\"shoot--p--n\"\n"
    );
}

#[test]
fn e9_byo_status_has_the_users_network_and_no_egress() {
    let (c, x) = (byo_dual(), ctx(true));
    let o = observed("byo-dual", &c, &x, false);
    let a = render::artifacts(&c, &x, &o).unwrap();
    assert_eq!(a.egress_cidrs(), Some(None), "E9: Gardener cannot know the user's egress");
    assert_eq!(
        a.infrastructure_status().unwrap(),
        &json!({"apiVersion": "gcp.provider.extensions.gardener.cloud/v1alpha1", "kind": "InfrastructureStatus",
            "networks": {"vpc": {"name": "my-vpc"},
                "subnets": [{"name": "my-workers", "purpose": "nodes"}, {"name": "my-services", "purpose": "services"}],
                "ipfamilies": ["IPv4", "IPv6"]},
            "serviceAccountEmail": ""})
    );
    // ensureIPv6CIDRs: nodes and pods get the workers subnet's /64, services the /108 of the services subnet's.
    assert_eq!(
        a.value("status_networking").unwrap(),
        &json!({"nodes": ["10.100.0.0/16", "2600:1900:4041:b5e::/64"], "pods": ["100.96.0.0/11", "2600:1900:4041:b5e::/64"],
               "services": ["10.200.0.0/20", "2600:1900:4041:b5f::/108"]})
    );
    assert!(!render::BYO_EGRESS_WARNING.contains('\n'));
}

// ---- pre-flight (C13–C17) ----

fn errors(c: &InfrastructureConfig, x: &Ctx, o: &Observed) -> Vec<(String, String)> {
    preflight::check(c, x, o).unwrap().into_iter().map(|e| (e.rule.to_string(), e.to_string())).collect()
}

#[test]
fn c13_byo_workers_subnet_that_does_not_exist_is_refused() {
    let (c, x) = (byo_ipv4(), ctx(false));
    let mut o = observed("byo-ipv4", &c, &x, false);
    o.insert(WORKERS, None);
    let e = errors(&c, &x, &o);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "C13");
    assert_eq!(
        e[0].1,
        "networks.subnetWorkers.name: user-managed nodes subnet \"my-workers\" not found in project prj region europe-west1; create it in VPC my-vpc in that region, or name an existing one"
    );
}

#[test]
fn c13_byo_workers_subnet_of_another_vpc_is_refused() {
    let (c, x) = (byo_ipv4(), ctx(false));
    let o = with(observed("byo-ipv4", &c, &x, false), WORKERS, |s| {
        s["network"] = json!("https://www.googleapis.com/compute/v1/projects/prj/global/networks/default")
    });
    let e = errors(&c, &x, &o);
    assert_eq!(e[0].0, "C13");
    assert!(e[0].1.contains("belongs to network \"https://www.googleapis.com/compute/v1/projects/prj/global/networks/default\", not to the configured VPC \"my-vpc\""), "{}", e[0].1);
}

#[test]
fn c13_byo_missing_vpc_is_one_error() {
    let (c, x) = (byo_ipv4(), ctx(false));
    let mut o = observed("byo-ipv4", &c, &x, false);
    o.insert("projects/prj/global/networks/my-vpc", None);
    let e = errors(&c, &x, &o);
    assert_eq!(e.len(), 1);
    assert!(e[0].1.starts_with("networks.vpc.name: VPC my-vpc not found in project prj"));
}

#[test]
fn c14_byo_workers_subnet_must_contain_nodes_and_not_overlap_pods_or_services() {
    let (c, x) = (byo_ipv4(), ctx(false));
    let o = with(observed("byo-ipv4", &c, &x, false), WORKERS, |s| s["ipCidrRange"] = json!("10.100.0.0/24"));
    let e = errors(&c, &x, &o);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "C14");
    assert!(e[0].1.contains("networking.nodes: Invalid value: \"10.100.0.0/16\": must be a subset of \"networks.subnetWorkers\" (\"10.100.0.0/24\")"), "{}", e[0].1);
    assert!(e[0].1.contains("project prj, region europe-west1"));
    let o = with(o, WORKERS, |s| s["ipCidrRange"] = json!("0.0.0.0/0"));
    let e = errors(&c, &x, &o);
    assert!(e[0].1.contains("networking.pods: Invalid value: \"100.96.0.0/11\": must not overlap with \"networks.subnetWorkers\" (\"0.0.0.0/0\")"), "{}", e[0].1);
    assert!(e[0].1.contains("networking.services"), "{}", e[0].1);
    assert!(!e[0].1.contains('\n'));
}

#[test]
fn c15_dual_stack_byo_subnet_with_ipv4_only_is_refused() {
    let (c, x) = (byo_dual(), ctx(true));
    let o = with(observed("byo-dual", &c, &x, false), WORKERS, |s| {
        s["stackType"] = json!("IPV4_ONLY");
        s.as_object_mut().unwrap().remove("externalIpv6Prefix");
    });
    let e = errors(&c, &x, &o);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, "C15");
    assert!(e[0].1.contains("user-managed nodes subnet \"my-workers\" in project prj region europe-west1 has stackType IPV4_ONLY and no external IPv6 range"), "{}", e[0].1);
    let o =
        with(o, "projects/prj/regions/europe-west1/subnetworks/my-services", |s| s["stackType"] = json!("IPV4_ONLY"));
    let e = errors(&c, &x, &o);
    assert!(
        e.iter().any(|(r, m)| r == "C15"
            && m.starts_with("networks.subnetServices.name: user-managed services subnet \"my-services\"")),
        "{e:?}"
    );
}

#[test]
fn c16_dual_stack_byo_pod_range_that_does_not_exist_is_refused() {
    let c = cfg(json!({"networks": {"vpc": {"name": "my-vpc"},
        "subnetWorkers": {"name": "my-workers", "podSecondaryRangeName": "pods-missing"}, "subnetServices": {"name": "my-services"}}}));
    let x = ctx(true);
    let o = observed("byo-dual", &c, &x, false);
    let e = errors(&c, &x, &o);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "C16");
    assert!(e[0].1.starts_with("networks.subnetWorkers.podSecondaryRangeName: user-managed nodes subnet \"my-workers\" does not have a secondary IP range named \"pods-missing\""), "{}", e[0].1);
}

#[test]
fn c17_dual_stack_byo_pod_range_must_equal_pods() {
    let (c, x) = (byo_dual(), ctx(true));
    let o = observed("byo-dual", &c, &x, false);
    assert!(errors(&c, &x, &o).is_empty(), "the fixture's range equals pods");
    let mut x2 = x.clone();
    x2.pods = Some("100.64.0.0/11".into());
    let e = errors(&c, &x2, &o);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "C17");
    assert!(e[0].1.contains("secondary IP range \"my-pods\" of user-managed nodes subnet \"my-workers\" (project prj, region europe-west1) is 100.96.0.0/11, but spec.networking.pods is 100.64.0.0/11"), "{}", e[0].1);
}

#[test]
fn preflight_messages_stay_one_line_whatever_the_cloud_answers() {
    let (c, x) = (byo_dual(), ctx(true));
    let o = with(observed("byo-dual", &c, &x, false), WORKERS, |s| {
        s["network"] = json!("projects/prj/global/networks/x\ny");
        s["stackType"] = json!("IPV4\nONLY");
    });
    for (_, m) in errors(&c, &x, &o) {
        assert!(!m.contains('\n'), "{m}");
    }
}

// ---- destroy (F) ----

#[test]
fn f3_byo_destroy_deletes_only_this_shoots_ccm_routes_and_firewall_rules() {
    let (c, x) = (byo_ipv4(), ctx(false));
    let o = observed("byo-ipv4", &c, &x, true);
    let n = nodes(desired::destroy(&c, &x, &o).unwrap(), &o);
    let deleted: Vec<&str> = n.iter().filter(|n| n.action() == Action::Delete).map(|n| n.name.as_str()).collect();
    assert_eq!(
        deleted,
        vec![
            "k8s-a8f1e2d3c4b5a6978-hc",
            "k8s-fw-a8f1e2d3c4b5a6978",
            "shoot--p--n-6a0b7c8d-1e2f-4a5b-8c9d-0e1f2a3b4c5d"
        ],
        "not shoot--p--n2's route or rule, not the user's shoot-p-n-allow-internal, not another VPC's, not GKE's"
    );
    assert!(n
        .iter()
        .filter(|n| n.action() == Action::Delete)
        .all(|n| n.ownership() == trellis_plans::Ownership::Runtime));
    assert_eq!(action_of(&n, "gcp.network.prj.my-vpc"), Some(Action::Skip));
    assert_eq!(action_of(&n, "gcp.subnetwork.prj/europe-west1.my-workers"), Some(Action::Skip));
}

#[test]
fn managed_destroy_follows_upstreams_delete_graph() {
    let c = cfg(
        json!({"networks": {"vpc": {"name": "my-vpc", "cloudRouter": {"name": "my-router"}}, "workers": "10.100.0.0/16"}}),
    );
    let x = ctx(false);
    let mut o = observed("managed-user-vpc", &c, &x, true);
    o.insert(
        "projects/prj/regions/europe-west1/subnetworks/shoot--p--n-nodes",
        Some(json!({"name": "shoot--p--n-nodes"})),
    );
    o.insert(
        "projects/prj/regions/europe-west1/routers/my-router/nats/shoot--p--n-cloud-nat",
        Some(json!({"name": "shoot--p--n-cloud-nat"})),
    );
    let n = nodes(desired::destroy(&c, &x, &o).unwrap(), &o);
    assert_eq!(
        actions(&n),
        vec![
            ("gcp.cloud_nat.prj/europe-west1/my-router.shoot--p--n-cloud-nat".into(), Action::Delete),
            ("gcp.network.prj.my-vpc".into(), Action::Skip),
            ("gcp.router.prj/europe-west1.my-router".into(), Action::Skip),
            ("gcp.subnetwork.prj/europe-west1.shoot--p--n-nodes".into(), Action::Delete),
        ]
    );
    let subnet = n.iter().find(|n| n.name == "shoot--p--n-nodes").unwrap();
    assert_eq!(subnet.depends_on, vec!["gcp.cloud_nat.prj/europe-west1/my-router.shoot--p--n-cloud-nat".to_string()]);
}

// ---- warnings (issue item 10) ----

#[test]
fn byo_warns_of_missing_firewall_equivalents_with_the_gcloud_command() {
    let (c, x) = (byo_ipv4(), ctx(false));
    let o = observed("byo-ipv4", &c, &x, false);
    let w = warnings::warnings(&c, &x, &o).unwrap();
    // The user's shoot-p-n-allow-internal covers the nodes; no rule covers the health checks on the node
    // ports (the CCM's k8s-…-hc lets only its own port through; the ingress rule targets GKE's nodes).
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("no firewall rule equivalent to shoot--p--n-allow-health-checks"), "{}", w[0]);
    let (c2, x2) = (byo_dual(), ctx(true));
    let o2 = observed("byo-dual", &c2, &x2, false);
    let w = warnings::warnings(&c2, &x2, &o2).unwrap();
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(w[0].ends_with("gcloud compute firewall-rules create shoot--p--n-allow-internal --project=prj --network=my-vpc --direction=INGRESS --priority=1000 --source-ranges=10.100.0.0/16 --target-tags=shoot--p--n --rules=icmp,ipip,tcp:1-65535,udp:1-65535"), "{}", w[0]);
    assert!(w[1].contains("--source-ranges=35.191.0.0/16,130.211.0.0/22,209.85.152.0/22,209.85.204.0/22 --target-tags=shoot--p--n --rules=tcp:30000-32767,udp:30000-32767"));
    assert!(w[2].contains("create shoot--p--n-allow-internal-ipv6 --project=prj --network=my-vpc --direction=INGRESS --priority=1000 --source-ranges=2600:1900:4041:b5e::/64,2600:1900:4041:b5f::/64 --target-tags=shoot--p--n --rules=ipv6-icmp,ipip,tcp:1-65535,udp:1-65535"), "{}", w[2]);
    assert!(w[3].contains("--source-ranges=2600:2d00:1:b029::/64,2600:2d00:1:1::/64,2600:1901:8001::/48"));
    assert!(w.iter().all(|w| !w.contains('\n')));
}

#[test]
fn byo_ipv4_warns_when_routes_approach_the_vpc_quota() {
    let (c, mut x) = (byo_ipv4(), ctx(false));
    let o = observed("byo-ipv4", &c, &x, false);
    assert!(warnings::warnings(&c, &x, &o).unwrap().iter().all(|w| !w.contains("quota")));
    x.max_nodes = 320;
    let w = warnings::warnings(&c, &x, &o).unwrap();
    let q: Vec<&String> = w.iter().filter(|w| w.contains("quota")).collect();
    assert_eq!(q.len(), 1);
    assert!(q[0].contains("VPC my-vpc in project prj has 3 routes"), "{}", q[0]);
}

// ---- Ctx from a Shoot ----

#[test]
fn ctx_reads_the_shoot_as_upstream_uses_it() {
    let path = format!("{}/tests/data/gcp/user-managed-egress-ipv4-shoot.yaml", env!("CARGO_MANIFEST_DIR"));
    let shoot: super::GcpShoot = trellis_planner::yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let x = Ctx::new(&shoot, "prj");
    assert_eq!(
        (x.tn.as_str(), x.region.as_str(), x.zone.as_str()),
        ("shoot--dev--johndoe-gcp", "europe-west1", "europe-west1-b")
    );
    assert_eq!(x.ip_families, vec!["IPv4".to_string()]);
    assert_eq!(x.max_nodes, 2);
    let conf = render::cloud_provider_config(&shoot.spec.provider.infrastructure_config, &x);
    assert_eq!(
        conf.content,
        "[Global]\nproject-id=\"prj\"\nnetwork-name=\"my-vpc\"\nsubnetwork-name=\"my-workers\"\nmultizone=true\nlocal-zone=\"europe-west1-b\"\ntoken-url=nil\nnode-tags=\"shoot--dev--johndoe-gcp\"\n"
    );
    let mut no_families = shoot.clone();
    no_families.spec.networking.ip_families.clear();
    assert_eq!(Ctx::new(&no_families, "prj").ip_families, vec!["IPv4".to_string()], "Gardener's default");
}
