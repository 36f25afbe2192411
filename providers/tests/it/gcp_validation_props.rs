//! Properties of the GCP admission validation over random configurations (managed and BYO, any
//! stack, any old config): it never panics, every error is one line, the mode decides which rules
//! run, and a mode switch on update is reported alone.

use proptest::prelude::*;

use trellis_providers::field::Path;
use trellis_providers::gcp::api::{
    CloudNat, CloudRouter, EndpointIndependentMapping, FlowLogs, InfrastructureConfig, NatIpName, NetworkConfig,
    SubnetReference, Vpc,
};
use trellis_providers::gcp::validation::{
    validate_infrastructure_config, validate_infrastructure_config_stack_migration,
    validate_infrastructure_config_update, ShootContext,
};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("my-vpc".to_string()),
        Just("shared".to_string()),
        Just("Bad_Name".to_string()),
        Just("a\nb\"c".to_string()),
        Just("x".repeat(70)),
        Just("10.250.0.0/16".to_string()),
        Just("10.250.0.1/24".to_string()),
        Just("10.10.0.0/24".to_string()),
        Just("2001:db8::/64".to_string()),
        Just("not-a-cidr".to_string()),
        Just("10.0.0.0/33".to_string()),
        ".{0,12}",
    ]
}

fn int() -> impl Strategy<Value = i32> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(64),
        Just(100),
        Just(1460),
        Just(9000),
        Just(i32::MIN),
        Just(i32::MAX),
        any::<i32>()
    ]
}

fn subnet() -> impl Strategy<Value = SubnetReference> {
    (text(), proptest::option::of(text()))
        .prop_map(|(name, pod_secondary_range_name)| SubnetReference { name, pod_secondary_range_name })
}

fn config() -> impl Strategy<Value = InfrastructureConfig> {
    let vpc = proptest::option::of(
        (text(), proptest::option::of(text().prop_map(|name| CloudRouter { name })))
            .prop_map(|(name, cloud_router)| Vpc { name, cloud_router }),
    );
    let nat = proptest::option::of(
        (
            proptest::option::of(int()),
            proptest::option::of(int()),
            any::<bool>(),
            proptest::option::of(any::<bool>()),
            proptest::option::of(proptest::collection::vec(text(), 0..3)),
        )
            .prop_map(|(min, max, dynamic, eim, names)| CloudNat {
                min_ports_per_vm: min,
                max_ports_per_vm: max,
                enable_dynamic_port_allocation: dynamic,
                endpoint_independent_mapping: eim.map(|enabled| EndpointIndependentMapping { enabled }),
                nat_ip_names: names.map(|n| n.into_iter().map(|name| NatIpName { name }).collect()),
                ..Default::default()
            }),
    );
    let flow_logs = proptest::option::of(
        (proptest::option::of(text()), proptest::option::of(-2.0f32..2.0), proptest::option::of(text())).prop_map(
            |(aggregation_interval, flow_sampling, metadata)| FlowLogs {
                aggregation_interval,
                flow_sampling,
                metadata,
            },
        ),
    );
    (
        vpc,
        nat,
        proptest::option::of(text()),
        text(),
        text(),
        flow_logs,
        proptest::option::of(int()),
        proptest::option::of(subnet()),
        proptest::option::of(subnet()),
    )
        .prop_map(
            |(vpc, cloud_nat, internal, worker, workers, flow_logs, mtu, subnet_workers, subnet_services)| {
                InfrastructureConfig {
                    networks: NetworkConfig {
                        vpc,
                        cloud_nat,
                        internal,
                        worker,
                        workers,
                        flow_logs,
                        mtu,
                        subnet_workers,
                        subnet_services,
                    },
                    ..Default::default()
                }
            },
        )
}

fn families() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        Just(vec![]),
        Just(vec!["IPv4".to_string()]),
        Just(vec!["IPv4".to_string(), "IPv6".to_string()]),
        Just(vec!["IPv6".to_string()]),
    ]
}

/// Messages only the managed rules produce.
const MANAGED_ONLY: [&str; 6] = [
    "must specify the network range for the worker network",
    "cloud router must be defined when reusing a VPC",
    "mtu must be between",
    "nat IP names cannot be empty.",
    "must be a subset of",
    "at least one VPC flow log parameter",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn validation_never_panics_and_reports_one_line_per_error(
        new in config(),
        old in config(),
        nodes in proptest::option::of(text()),
        pods in proptest::option::of(text()),
        new_families in families(),
        old_families in families(),
    ) {
        let shoot = ShootContext { nodes: nodes.as_deref(), pods: pods.as_deref(), services: None, ip_families: &new_families };
        let create = validate_infrastructure_config(&new, shoot);
        let update = validate_infrastructure_config_update(&old, &new);
        let migration = validate_infrastructure_config_stack_migration(&new, &old_families, &new_families, &Path::new("spec.networking"));
        for e in create.iter().chain(&update).chain(&migration) {
            let line = e.to_string();
            prop_assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
        }

        // The mode decides which rules run (upstream's early return).
        if new.networks.subnet_workers.is_some() {
            for e in &create {
                let line = e.to_string();
                prop_assert!(MANAGED_ONLY.iter().all(|m| !line.contains(m)), "managed rule in BYO mode: {line}");
            }
        }
        // A mode switch is the one error of an update.
        if old.networks.subnet_workers.is_some() != new.networks.subnet_workers.is_some() {
            prop_assert_eq!(update.len(), 1);
            prop_assert_eq!(update[0].field.as_str(), "networks.subnetWorkers");
        }
        // An unchanged config has no update error.
        prop_assert!(validate_infrastructure_config_update(&new, &new).is_empty());
        // Stack migration only ever concerns BYO shoots.
        if new.networks.subnet_workers.is_none() {
            prop_assert!(migration.is_empty());
        }
    }
}
