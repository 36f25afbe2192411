//! Property test: over random user-managed-egress configurations and worlds,
//! - nothing user-owned is ever written (audit log), whether the plan is accepted or refused;
//! - plans are deterministic (same inputs twice → identical JSON);
//! - an accepted plan applies and converges to a no-op plan.

use proptest::prelude::*;
use std::fmt::Write as _;
use trellis_planner::cloud::Op;
use trellis_plans::PlanSet;
use trellis_tests::{writes_to, Scenario};

const SUB: &str = "6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17";

#[derive(Clone, Debug)]
struct Case {
    nsg_rg: &'static str,
    rt_rg: &'static str,
    has_nsg: bool,
    has_rt: bool,
    overlay: bool,
    subnet_prefix: u8,
    nodes_prefix: u8,
    pods: &'static str,
    user_rules: usize,
    user_routes: usize,
    max_nodes: u32,
}

fn case() -> impl Strategy<Value = Case> {
    let rg = prop_oneof![Just("hub-network"), Just("security-team-rg"), Just("network-team-rg")];
    (
        rg.clone(),
        rg,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        18u8..=22,
        16u8..=20,
        prop_oneof![Just("100.96.0.0/11"), Just("10.250.0.0/22")],
        0usize..3,
        0usize..3,
        1u32..500,
    )
        .prop_map(
            |(
                nsg_rg,
                rt_rg,
                has_nsg,
                has_rt,
                overlay,
                subnet_prefix,
                nodes_prefix,
                pods,
                user_rules,
                user_routes,
                max_nodes,
            )| {
                Case {
                    nsg_rg,
                    rt_rg,
                    has_nsg,
                    has_rt,
                    overlay,
                    subnet_prefix,
                    nodes_prefix,
                    pods,
                    user_rules,
                    user_routes,
                    max_nodes,
                }
            },
        )
}

fn net(rg: &str, rest: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{rg}/providers/Microsoft.Network/{rest}")
}

fn world(c: &Case) -> String {
    let mut w = format!("azure:\n  subscriptionId: {SUB}\n  resources:\n");
    for rg in ["hub-network", "security-team-rg", "network-team-rg"] {
        let _ = writeln!(w, "    - id: /subscriptions/{SUB}/resourceGroups/{rg}\n      location: westeurope");
    }
    let _ = writeln!(
        w,
        "    - id: {}\n      location: westeurope\n      properties: {{addressSpace: {{addressPrefixes: [10.250.0.0/16]}}}}",
        net("hub-network", "virtualNetworks/hub-vnet")
    );
    let nsg = net(c.nsg_rg, "networkSecurityGroups/workers-nsg");
    let rt = net(c.rt_rg, "routeTables/workers-rt");
    let _ = writeln!(w, "    - id: {nsg}\n      location: westeurope\n      properties:\n        securityRules:");
    for i in 0..c.user_rules {
        let _ = writeln!(
            w,
            "          - {{name: user-{i}, properties: {{priority: {}, access: Allow, direction: Inbound, protocol: Tcp, sourceAddressPrefix: '*', sourcePortRange: '*', destinationAddressPrefix: '*', destinationPortRange: '{}'}}}}",
            100 + i,
            8000 + i
        );
    }
    if c.user_rules == 0 {
        w.push_str("          []\n");
    }
    let _ = writeln!(w, "    - id: {rt}\n      location: westeurope\n      properties:\n        routes:");
    for i in 0..c.user_routes {
        let _ = writeln!(
            w,
            "          - {{name: user-{i}, properties: {{addressPrefix: 192.168.{i}.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.250.255.4}}}}"
        );
    }
    if c.user_routes == 0 {
        w.push_str("          []\n");
    }
    let _ = write!(
        w,
        "    - id: {}/subnets/workers\n      properties:\n        addressPrefix: 10.250.0.0/{}\n",
        net("hub-network", "virtualNetworks/hub-vnet"),
        c.subnet_prefix
    );
    if c.has_nsg {
        let _ = writeln!(w, "        networkSecurityGroup: {{id: {nsg}}}");
    }
    if c.has_rt {
        let _ = writeln!(w, "        routeTable: {{id: {rt}}}");
    }
    w
}

fn shoot(c: &Case) -> String {
    format!(
        r#"apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: prop
  namespace: garden-platform
spec:
  region: westeurope
  networking:
    type: cilium
    providerConfig:
      overlay:
        enabled: {overlay}
    nodes: 10.250.0.0/{nodes}
    pods: {pods}
    services: 100.64.0.0/13
  provider:
    type: azure
    infrastructureConfig:
      apiVersion: azure.provider.extensions.gardener.cloud/v1alpha1
      kind: InfrastructureConfig
      zoned: true
      networks:
        vnet:
          name: hub-vnet
          resourceGroup: hub-network
        subnet:
          name: workers
    workers:
      - name: worker
        minimum: 1
        maximum: {max}
        volume:
          type: StandardSSD_LRS
          size: 50Gi
        zones: ["1", "2", "3"]
"#,
        overlay = c.overlay,
        nodes = c.nodes_prefix,
        pods = c.pods,
        max = c.max_nodes
    )
}

fn run(c: &Case) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("world.yaml"), world(c)).unwrap();
    std::fs::write(dir.path().join("shoot.yaml"), shoot(c)).unwrap();
    let s = Scenario::with_world(dir.path().to_path_buf(), Some(dir.path().join("world.yaml")));
    let user = vec![
        net("hub-network", "virtualNetworks/hub-vnet"),
        net(c.nsg_rg, "networkSecurityGroups/workers-nsg"),
        net(c.rt_rg, "routeTables/workers-rt"),
    ];
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let first = s.plan().await;
        let expect_ok =
            c.has_nsg && (c.has_rt || c.overlay) && c.nodes_prefix <= c.subnet_prefix && c.pods == "100.96.0.0/11";
        match first {
            Err(e) => {
                prop_assert!(!expect_ok, "an acceptable configuration was refused: {e:#}");
                prop_assert!(s.sim().calls().iter().all(|call| call.op == Op::Read));
            }
            Ok(plan) => {
                prop_assert!(expect_ok, "an unacceptable configuration was planned");
                let again = s.plan().await.unwrap();
                prop_assert_eq!(PlanSet::new(vec![plan.clone()]).to_json(), PlanSet::new(vec![again]).to_json());
                let report = s.apply().await.unwrap();
                prop_assert!(report.ok, "{:?}", report);
                prop_assert!(writes_to(&report.calls, &user).is_empty());
                let after = s.plan().await.unwrap();
                prop_assert!(!after.has_changes());
                prop_assert_eq!(after.artifacts.ccm_flags().unwrap()["configure-cloud-routes"], !c.overlay);
            }
        }
        prop_assert!(writes_to(&s.sim().calls(), &user).is_empty(), "a user-owned resource was written");
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn byo_never_writes_user_resources_and_converges(c in case()) {
        run(&c)?;
    }
}
