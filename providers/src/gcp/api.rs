//! The GCP provider's API types as upstream's `pkg/apis/gcp/v1alpha1/types_infrastructure.go`
//! (`gcp.provider.extensions.gardener.cloud/v1alpha1`; JSON names as upstream, `omitempty` is
//! `skip_serializing_if`), plus the user-managed-egress spec's `networks.subnetWorkers` and
//! `networks.subnetServices` ([`SubnetReference`], as provider-gcp PR #1493 has them).
//!
//! The mode is derived from `networks.subnetWorkers` alone ([`InfrastructureConfig::mode`]): a
//! [`Mode`], not a bool.
//!
//! A missing field parses to its empty value (as Go's zero values), so that validation reports it;
//! an unknown field is a parse error (`deny_unknown_fields`, as upstream's admission decodes with
//! `serializer.EnableStrict`). Booleans, integers and numbers are taken only as such, never from a
//! quoted string (as the API server decodes JSON; see [`crate::strict`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// `apiVersion` of the provider config and status.
pub const API_VERSION: &str = "gcp.provider.extensions.gardener.cloud/v1alpha1";
/// `kind` of the provider config (`spec.provider.infrastructureConfig`).
pub const INFRASTRUCTURE_CONFIG_KIND: &str = "InfrastructureConfig";
/// `kind` of the infrastructure status.
pub const INFRASTRUCTURE_STATUS_KIND: &str = "InfrastructureStatus";
/// `kind` of the infrastructure state.
pub const INFRASTRUCTURE_STATE_KIND: &str = "InfrastructureState";

fn is_false(b: &bool) -> bool {
    !*b
}

/// `InfrastructureConfig`: `spec.provider.infrastructureConfig` of a GCP shoot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InfrastructureConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default)]
    pub networks: NetworkConfig,
}

/// How the shoot's network egress is run, derived from `networks.subnetWorkers` alone (the spec's
/// `IsUserManagedEgress()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode<'a> {
    /// No `subnetWorkers`: Gardener creates the subnets, the Cloud Router, the Cloud NAT and the
    /// firewall rules (in its own VPC or the user's, `networks.vpc`).
    Managed,
    /// `subnetWorkers` set: the user's VPC and subnets are referenced, nothing network-layer is
    /// created, egress is the user's.
    UserManagedEgress {
        /// `networks.subnetWorkers`.
        workers: &'a SubnetReference,
        /// `networks.subnetServices` (dual-stack only).
        services: Option<&'a SubnetReference>,
    },
}

impl InfrastructureConfig {
    /// The mode: user-managed egress exactly when `networks.subnetWorkers` is set.
    pub fn mode(&self) -> Mode<'_> {
        match &self.networks.subnet_workers {
            None => Mode::Managed,
            Some(workers) => Mode::UserManagedEgress { workers, services: self.networks.subnet_services.as_ref() },
        }
    }
}

/// `NetworkConfig`: `networks`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkConfig {
    /// An existing VPC (and Cloud Router) to use instead of creating one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc: Option<Vpc>,
    #[serde(default, rename = "cloudNAT", skip_serializing_if = "Option::is_none")]
    pub cloud_nat: Option<CloudNat>,
    /// The internal subnet's CIDR (internal load balancers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal: Option<String>,
    /// Deprecated: use `workers`. Upstream writes it always (`json:"worker"`).
    #[serde(default)]
    pub worker: String,
    /// The workers subnet's CIDR. Upstream writes it always (`json:"workers"`).
    #[serde(default)]
    pub workers: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_logs: Option<FlowLogs>,
    /// The VPC's MTU (a Gardener-managed VPC only), 1300..=8896.
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i32>,
    /// The spec's BYO workers subnet in `vpc`; its presence alone means user-managed egress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_workers: Option<SubnetReference>,
    /// The spec's BYO services subnet (dual-stack user-managed egress only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_services: Option<SubnetReference>,
}

/// `SubnetReference` (spec): a subnetwork of `networks.vpc` in the shoot's region, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubnetReference {
    #[serde(default)]
    pub name: String,
    /// The workers subnet's secondary range for pod IPs (dual-stack only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_secondary_range_name: Option<String>,
}

/// `VPC`: `networks.vpc` in the config, the VPC in the status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Vpc {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_router: Option<CloudRouter>,
}

/// `CloudRouter`: an existing Cloud Router of the VPC.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloudRouter {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// `CloudNAT`: `networks.cloudNAT`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloudNat {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_independent_mapping: Option<EndpointIndependentMapping>,
    #[serde(default, rename = "minPortsPerVM", deserialize_with = "crate::strict::opt_int")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ports_per_vm: Option<i32>,
    #[serde(default, rename = "maxPortsPerVM", deserialize_with = "crate::strict::opt_int")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ports_per_vm: Option<i32>,
    #[serde(default, deserialize_with = "crate::strict::bool", skip_serializing_if = "is_false")]
    pub enable_dynamic_port_allocation: bool,
    /// `None` when absent; `Some(vec![])` for an explicit empty list, which validation refuses
    /// (upstream tells a nil slice from an empty one here).
    #[serde(default, rename = "natIPNames", deserialize_with = "opt_list", skip_serializing_if = "Option::is_none")]
    pub nat_ip_names: Option<Vec<NatIpName>>,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub icmp_idle_timeout_sec: Option<i32>,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub tcp_established_idle_timeout_sec: Option<i32>,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub tcp_time_wait_timeout_sec: Option<i32>,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub tcp_transitory_idle_timeout_sec: Option<i32>,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub udp_idle_timeout_sec: Option<i32>,
}

/// `EndpointIndependentMapping`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EndpointIndependentMapping {
    #[serde(default, deserialize_with = "crate::strict::bool")]
    pub enabled: bool,
}

/// `NatIPName`: a user's static external address for the Cloud NAT, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NatIpName {
    #[serde(default)]
    pub name: String,
}

/// `FlowLogs`: `networks.flowLogs`, the subnets' VPC flow log settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FlowLogs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation_interval: Option<String>,
    /// `*float32` in v1alpha1 (the internal type, which validation sees, is a float64 of it).
    #[serde(default, deserialize_with = "opt_f32", skip_serializing_if = "Option::is_none")]
    pub flow_sampling: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
}

/// An optional list whose explicit `null` is `None` (as Go decodes `null` into a nil slice).
fn opt_list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    Option::<Vec<T>>::deserialize(d)
}

struct F32Visitor;

impl<'de> Visitor<'de> for F32Visitor {
    type Value = Option<f32>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number or null")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        let f = v as f32;
        if f.is_finite() {
            Ok(Some(f))
        } else {
            Err(E::custom(format!("{v} does not fit a 32-bit float")))
        }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.visit_f64(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.visit_f64(v as f64)
    }
}

/// An optional `float32` field: a number or null, never a (quoted) string.
fn opt_f32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
    d.deserialize_any(F32Visitor)
}

/// `InfrastructureStatus`: what the reconcile reports (`status.providerStatus` of the Infrastructure).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InfrastructureStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default)]
    pub networks: NetworkStatus,
    /// Empty in user-managed-egress mode (no service account is created).
    #[serde(default)]
    pub service_account_email: String,
}

/// `NetworkStatus`: `networks` of the status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkStatus {
    #[serde(default)]
    pub vpc: Vpc,
    #[serde(default)]
    pub subnets: Vec<Subnet>,
    #[serde(default, rename = "natIPs", skip_serializing_if = "Vec::is_empty")]
    pub nat_ips: Vec<NatIp>,
    /// Upstream's JSON name is all lower case (`json:"ipfamilies"`).
    #[serde(default, rename = "ipfamilies", skip_serializing_if = "Vec::is_empty")]
    pub ip_families: Vec<String>,
}

/// `SubnetPurpose`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Purpose {
    /// `PurposeNodes`: the workers subnet.
    #[default]
    #[serde(rename = "nodes")]
    Nodes,
    /// `PurposeInternal`: the internal load balancers' subnet.
    #[serde(rename = "internal")]
    Internal,
    /// `PurposeServices`: the dual-stack services subnet.
    #[serde(rename = "services")]
    Services,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Nodes => "nodes",
            Purpose::Internal => "internal",
            Purpose::Services => "services",
        }
    }
}

/// `Subnet` of the status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Subnet {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub purpose: Purpose,
}

/// `NatIP`: a user's external address used by the Cloud NAT.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NatIp {
    #[serde(default)]
    pub ip: String,
}

/// `InfrastructureState`: the flow state upstream keeps on the Infrastructure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InfrastructureState {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
}

/// `Route`: a cluster route upstream remembers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Route {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instance_name: String,
    #[serde(default, rename = "destinationCIDR", skip_serializing_if = "String::is_empty")]
    pub destination_cidr: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub zone: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<InfrastructureConfig, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }

    #[test]
    fn config_round_trips_with_upstream_names() {
        let json = r#"{"apiVersion":"gcp.provider.extensions.gardener.cloud/v1alpha1","kind":"InfrastructureConfig",
            "networks":{"vpc":{"name":"v","cloudRouter":{"name":"r"}},
            "cloudNAT":{"endpointIndependentMapping":{"enabled":true},"minPortsPerVM":64,"maxPortsPerVM":128,
              "enableDynamicPortAllocation":true,"natIPNames":[{"name":"a"}],"icmpIdleTimeoutSec":1,
              "tcpEstablishedIdleTimeoutSec":2,"tcpTimeWaitTimeoutSec":3,"tcpTransitoryIdleTimeoutSec":4,"udpIdleTimeoutSec":5},
            "internal":"10.1.0.0/24","worker":"","workers":"10.0.0.0/16",
            "flowLogs":{"aggregationInterval":"INTERVAL_5_SEC","flowSampling":0.5,"metadata":"INCLUDE_ALL_METADATA"},
            "mtu":1460}}"#;
        let cfg = parse(json).unwrap();
        assert_eq!(cfg.mode(), Mode::Managed);
        assert_eq!(cfg.networks.cloud_nat.as_ref().unwrap().nat_ip_names.as_ref().unwrap()[0].name, "a");
        let back: InfrastructureConfig = serde_json::from_str(&serde_json::to_string(&cfg).unwrap()).unwrap();
        assert_eq!(back, cfg);
        let expected: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_value(&cfg).unwrap(), expected);
    }

    #[test]
    fn mode_is_derived_from_subnet_workers_alone() {
        let cfg = parse(r#"{"networks":{"subnetServices":{"name":"s"}}}"#).unwrap();
        assert_eq!(cfg.mode(), Mode::Managed);
        let cfg = parse(r#"{"networks":{"subnetWorkers":{"name":"w","podSecondaryRangeName":"pods"}}}"#).unwrap();
        let Mode::UserManagedEgress { workers, services } = cfg.mode() else { panic!("not BYO") };
        assert_eq!((workers.name.as_str(), workers.pod_secondary_range_name.as_deref()), ("w", Some("pods")));
        assert_eq!(services, None);
        // An empty reference is still the mode (validation reports the empty name).
        let cfg = parse(r#"{"networks":{"subnetWorkers":{}}}"#).unwrap();
        assert!(matches!(cfg.mode(), Mode::UserManagedEgress { .. }));
    }

    #[test]
    fn parsing_is_strict() {
        assert!(parse(r#"{"networks":{"dualStack":{"enabled":true}}}"#)
            .unwrap_err()
            .contains("unknown field `dualStack`"));
        assert!(parse(r#"{"networks":{"subnetWorkers":{"name":"w","secondary":"x"}}}"#).is_err());
        assert!(parse(r#"{"networks":{"mtu":"1460"}}"#).unwrap_err().contains("expected an integer (i32)"));
        assert!(parse(r#"{"networks":{"flowLogs":{"flowSampling":"0.5"}}}"#).unwrap_err().contains("a number or null"));
        assert!(parse(r#"{"networks":{"cloudNAT":{"enableDynamicPortAllocation":"true"}}}"#).is_err());
        assert!(parse(r#"{"networks":{"flowLogs":{"flowSampling":1e300}}}"#).is_err());
        let cfg = parse(r#"{"networks":{"flowLogs":{"flowSampling":1}},"kind":"InfrastructureConfig"}"#).unwrap();
        assert_eq!(cfg.networks.flow_logs.unwrap().flow_sampling, Some(1.0));
    }

    #[test]
    fn nat_ip_names_tell_absent_null_and_empty_apart() {
        let nat = |s: &str| parse(s).unwrap().networks.cloud_nat.unwrap().nat_ip_names;
        assert_eq!(nat(r#"{"networks":{"cloudNAT":{}}}"#), None);
        assert_eq!(nat(r#"{"networks":{"cloudNAT":{"natIPNames":null}}}"#), None);
        assert_eq!(nat(r#"{"networks":{"cloudNAT":{"natIPNames":[]}}}"#), Some(vec![]));
    }

    #[test]
    fn status_serializes_with_upstream_names() {
        let status = InfrastructureStatus {
            api_version: API_VERSION.into(),
            kind: INFRASTRUCTURE_STATUS_KIND.into(),
            networks: NetworkStatus {
                vpc: Vpc { name: "shoot--p--n".into(), cloud_router: Some(CloudRouter { name: "r".into() }) },
                subnets: vec![
                    Subnet { name: "shoot--p--n-nodes".into(), purpose: Purpose::Nodes },
                    Subnet { name: "shoot--p--n-services".into(), purpose: Purpose::Services },
                ],
                nat_ips: vec![NatIp { ip: "1.2.3.4".into() }],
                ip_families: vec!["IPv4".into(), "IPv6".into()],
            },
            service_account_email: "a@b.iam.gserviceaccount.com".into(),
        };
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": API_VERSION, "kind": "InfrastructureStatus",
                "networks": {
                    "vpc": {"name": "shoot--p--n", "cloudRouter": {"name": "r"}},
                    "subnets": [{"name": "shoot--p--n-nodes", "purpose": "nodes"},
                                {"name": "shoot--p--n-services", "purpose": "services"}],
                    "natIPs": [{"ip": "1.2.3.4"}],
                    "ipfamilies": ["IPv4", "IPv6"]
                },
                "serviceAccountEmail": "a@b.iam.gserviceaccount.com"
            })
        );
        assert_eq!(serde_json::from_value::<InfrastructureStatus>(json).unwrap(), status);
        // BYO: no router, no NAT IPs, no service account.
        let byo = InfrastructureStatus::default();
        assert_eq!(
            serde_json::to_value(&byo).unwrap(),
            serde_json::json!({"networks": {"vpc": {}, "subnets": []}, "serviceAccountEmail": ""})
        );
        let state = InfrastructureState {
            routes: vec![Route {
                instance_name: "i".into(),
                destination_cidr: "100.96.0.0/24".into(),
                zone: "z".into(),
            }],
            ..Default::default()
        };
        let json = serde_json::to_value(&state).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"routes": [{"instanceName": "i", "destinationCIDR": "100.96.0.0/24", "zone": "z"}]})
        );
        assert_eq!(serde_json::from_value::<InfrastructureState>(json).unwrap(), state);
    }
}
