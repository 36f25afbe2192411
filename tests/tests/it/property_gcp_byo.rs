//! Property test (issue #9, Tests): over random GCP user-managed-egress (BYO) configurations AND
//! worlds — the VPC present or not, the workers and services subnets present, in another region or
//! in another VPC, primary ranges that do or do not hold `networking.nodes`, single- or dual-stack
//! shoots on IPV4_ONLY or IPV4_IPV6 subnets, the pods' secondary range missing, matching or not, and
//! what other owners keep in the VPC (GKE's and other shoots' firewall rules, routes to an appliance,
//! a router with the user's own NAT):
//! - planning never panics, and a refusal is a pre-flight error naming the resource it is about;
//! - an accepted plan creates, updates and deletes nothing, applies without a single cloud write and
//!   re-plans to no changes;
//! - nothing is ever written to the cloud, whether the plan is accepted or refused (audit log).

use proptest::prelude::*;
use std::fmt::Write as _;
use trellis_planner::cloud::Op;
use trellis_plans::Action;
use trellis_tests::Scenario;

const REGION: &str = "europe-west1";

/// Where a subnet the shoot names is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Missing,
    /// In the user's VPC, in the shoot's region: where it must be.
    Here,
    OtherRegion,
    OtherVpc,
}

/// The workers subnet's secondary range `my-pods` (dual-stack: must equal `networking.pods`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pods {
    Missing,
    Matching,
    Other,
}

#[derive(Clone, Debug)]
struct Case {
    vpc: bool,
    workers: Place,
    workers_prefix: u8,
    nodes_prefix: u8,
    dual_stack: bool,
    workers_ipv6: bool,
    pods: Pods,
    services: Place,
    services_ipv6: bool,
    other_rules: usize,
    user_routes: usize,
    user_nat: bool,
}

fn place() -> impl Strategy<Value = Place> {
    prop_oneof![3 => Just(Place::Here), 1 => Just(Place::Missing), 1 => Just(Place::OtherRegion), 1 => Just(Place::OtherVpc)]
}

fn case() -> impl Strategy<Value = Case> {
    (
        (prop::bool::weighted(0.85), place(), 16u8..=24, 16u8..=24),
        (
            any::<bool>(),
            prop::bool::weighted(0.8),
            prop_oneof![3 => Just(Pods::Matching), 1 => Just(Pods::Missing), 1 => Just(Pods::Other)],
        ),
        (place(), prop::bool::weighted(0.8)),
        (0usize..4, 0usize..3, any::<bool>()),
    )
        .prop_map(
            |(
                (vpc, workers, workers_prefix, nodes_prefix),
                (dual_stack, workers_ipv6, pods),
                (services, services_ipv6),
                (other_rules, user_routes, user_nat),
            )| Case {
                vpc,
                workers,
                workers_prefix,
                nodes_prefix,
                dual_stack,
                workers_ipv6,
                pods,
                services,
                services_ipv6,
                other_rules,
                user_routes,
                user_nat,
            },
        )
}

/// Whether upstream's rules and the spec's pre-flight accept the case.
fn acceptable(c: &Case) -> bool {
    let ipv4 = c.vpc && c.workers == Place::Here && c.nodes_prefix >= c.workers_prefix;
    ipv4 && (!c.dual_stack
        || (c.workers_ipv6 && c.pods == Pods::Matching && c.services == Place::Here && c.services_ipv6))
}

/// The VPC a subnet of the case lives in: the user's `my-vpc`, or `other-vpc` (always there) when it
/// is placed there or when the user's VPC is missing.
fn network_of(c: &Case, place: Place) -> &'static str {
    if place == Place::OtherVpc || !c.vpc {
        "other-vpc"
    } else {
        "my-vpc"
    }
}

fn subnet(w: &mut String, c: &Case, name: &str, place: Place, range: &str, ipv6: Option<&str>, pods: Pods) {
    let region = if place == Place::OtherRegion { "europe-west4" } else { REGION };
    let _ = write!(
        w,
        "    - selfLink: projects/trellis-sim/regions/{region}/subnetworks/{name}\n      network: projects/trellis-sim/global/networks/{}\n      ipCidrRange: {range}\n",
        network_of(c, place)
    );
    if let Some(prefix) = ipv6 {
        let _ = write!(
            w,
            "      stackType: IPV4_IPV6\n      ipv6AccessType: EXTERNAL\n      externalIpv6Prefix: {prefix}\n"
        );
    }
    match pods {
        Pods::Missing => {}
        Pods::Matching => w.push_str("      secondaryIpRanges: [{rangeName: my-pods, ipCidrRange: 100.96.0.0/11}]\n"),
        Pods::Other => w.push_str("      secondaryIpRanges: [{rangeName: my-pods, ipCidrRange: 100.128.0.0/11}]\n"),
    }
}

fn world(c: &Case) -> String {
    let mut w = String::from("gce:\n  resources:\n");
    w.push_str("    - selfLink: projects/trellis-sim/global/networks/other-vpc\n      autoCreateSubnetworks: false\n");
    if c.vpc {
        w.push_str("    - selfLink: projects/trellis-sim/global/networks/my-vpc\n      autoCreateSubnetworks: false\n");
    }
    let vpc = if c.vpc { "my-vpc" } else { "other-vpc" };
    if c.workers != Place::Missing {
        let range = format!("10.100.0.0/{}", c.workers_prefix);
        let ipv6 = c.workers_ipv6.then_some("2600:1900:4000:1::/64");
        subnet(&mut w, c, "my-workers", c.workers, &range, ipv6, c.pods);
    }
    if c.dual_stack && c.services != Place::Missing {
        let ipv6 = c.services_ipv6.then_some("2600:1900:4000:2::/64");
        subnet(&mut w, c, "my-services", c.services, "10.101.0.0/24", ipv6, Pods::Missing);
    }
    for i in 0..c.other_rules {
        // GKE's node rule, another shoot's CCM rule, an ingress controller's: all target-tagged.
        let tag = ["gke-prod-1a2b3c4d-node", "shoot--other--cluster", "ingress-nginx"][i % 3];
        let _ = write!(
            w,
            "    - selfLink: projects/trellis-sim/global/firewalls/other-owner-{i}\n      network: projects/trellis-sim/global/networks/{vpc}\n      direction: INGRESS\n      sourceRanges: [0.0.0.0/0]\n      targetTags: [{tag}]\n      allowed: [{{IPProtocol: tcp, ports: [\"80\", \"443\"]}}]\n"
        );
    }
    for i in 0..c.user_routes {
        let _ = write!(
            w,
            "    - selfLink: projects/trellis-sim/global/routes/user-route-{i}\n      network: projects/trellis-sim/global/networks/{vpc}\n      destRange: 192.168.{i}.0/24\n      priority: 900\n      nextHopIp: 10.100.255.4\n"
        );
    }
    if c.user_nat {
        let _ = write!(
            w,
            "    - selfLink: projects/trellis-sim/regions/{REGION}/routers/user-router\n      network: projects/trellis-sim/global/networks/{vpc}\n      nats:\n        - name: user-nat\n          natIpAllocateOption: AUTO_ONLY\n          sourceSubnetworkIpRangesToNat: ALL_SUBNETWORKS_ALL_IP_RANGES\n"
        );
    }
    w
}

fn shoot(c: &Case) -> String {
    let (families, overlay, byo) = if c.dual_stack {
        (
            "[IPv4, IPv6]",
            "false",
            "        subnetWorkers:\n          name: my-workers\n          podSecondaryRangeName: my-pods\n        subnetServices:\n          name: my-services\n",
        )
    } else {
        ("[IPv4]", "true", "        subnetWorkers:\n          name: my-workers\n")
    };
    format!(
        r#"apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: prop
  namespace: garden-platform
spec:
  cloudProfileName: gcp
  region: {REGION}
  secretBindingName: gcp-platform
  kubernetes:
    version: "1.31.5"
  networking:
    type: calico
    ipFamilies: {families}
    providerConfig:
      overlay:
        enabled: {overlay}
    nodes: 10.100.0.0/{nodes}
    pods: 100.96.0.0/11
    services: 100.64.0.0/13
  provider:
    type: gcp
    infrastructureConfig:
      apiVersion: gcp.provider.extensions.gardener.cloud/v1alpha1
      kind: InfrastructureConfig
      networks:
        vpc:
          name: my-vpc
{byo}    controlPlaneConfig:
      apiVersion: gcp.provider.extensions.gardener.cloud/v1alpha1
      kind: ControlPlaneConfig
      zone: {REGION}-b
    workers:
    - name: worker-a
      machine:
        type: n1-standard-4
      volume:
        size: 50Gi
        type: pd-standard
      minimum: 1
      maximum: 3
      zones:
      - {REGION}-b
"#,
        nodes = c.nodes_prefix
    )
}

fn no_writes(s: &Scenario) -> bool {
    s.gce().calls().iter().all(|call| call.op == Op::Read)
}

fn run(c: &Case) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("world.yaml"), world(c)).unwrap();
    std::fs::write(dir.path().join("shoot.yaml"), shoot(c)).unwrap();
    let s = Scenario::with_world(dir.path().to_path_buf(), Some(dir.path().join("world.yaml")));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        match s.plan().await {
            Err(e) => {
                let message = format!("{e:#}");
                prop_assert!(!message.contains("panicked"), "planning panicked: {message}");
                prop_assert!(!acceptable(c), "an acceptable configuration was refused: {message}");
                prop_assert!(message.contains("pre-flight error"), "not a pre-flight refusal: {message}");
                let names = ["my-vpc", "my-workers", "my-services", "my-pods"];
                for line in message.lines().skip(1).filter(|l| !l.trim().is_empty()) {
                    prop_assert!(names.iter().any(|n| line.contains(n)), "a refusal names no resource: {line}");
                }
            }
            Ok(plan) => {
                prop_assert!(acceptable(c), "an unacceptable configuration was planned: {:?}", plan.summary);
                let writing: Vec<&str> = plan
                    .nodes
                    .iter()
                    .filter(|n| {
                        matches!(n.action(), Action::Create | Action::Update | Action::Replace | Action::Delete)
                    })
                    .map(|n| n.address.as_str())
                    .collect();
                prop_assert!(writing.is_empty(), "a BYO plan writes: {writing:?}");
                let report = s.apply().await.unwrap();
                prop_assert!(report.ok, "{:?}", report);
                let after = s.plan().await.unwrap();
                prop_assert!(!after.has_changes());
            }
        }
        prop_assert!(
            no_writes(&s),
            "the cloud was written: {:?}",
            s.gce().calls().iter().filter(|c| c.op == Op::Write).collect::<Vec<_>>()
        );
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn gcp_byo_plans_never_write_and_refusals_name_the_resource(c in case()) {
        run(&c)?;
    }
}

/// The corner cases the random ones are drawn around, each once: both verdicts of the oracle are
/// exercised whatever the random draw.
#[test]
fn gcp_byo_property_corner_cases() {
    let ok = Case {
        vpc: true,
        workers: Place::Here,
        workers_prefix: 16,
        nodes_prefix: 16,
        dual_stack: false,
        workers_ipv6: true,
        pods: Pods::Matching,
        services: Place::Here,
        services_ipv6: true,
        other_rules: 3,
        user_routes: 2,
        user_nat: true,
    };
    let dual = Case { dual_stack: true, ..ok.clone() };
    let cases = [
        ok.clone(),
        dual.clone(),
        Case { vpc: false, ..ok.clone() },
        Case { workers: Place::Missing, ..ok.clone() },
        Case { workers: Place::OtherRegion, ..ok.clone() },
        Case { workers: Place::OtherVpc, ..ok.clone() },
        Case { workers_prefix: 20, nodes_prefix: 16, ..ok.clone() },
        Case { workers_ipv6: false, ..dual.clone() },
        Case { pods: Pods::Missing, ..dual.clone() },
        Case { pods: Pods::Other, ..dual.clone() },
        Case { services: Place::Missing, ..dual.clone() },
        Case { services: Place::OtherVpc, ..dual.clone() },
        Case { services_ipv6: false, ..dual },
    ];
    for c in &cases {
        if let Err(e) = run(c) {
            panic!("{c:?}: {e}");
        }
    }
    assert_eq!(cases.iter().filter(|c| acceptable(c)).count(), 2);
}
