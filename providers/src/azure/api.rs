//! The Azure provider's API types as upstream's `pkg/apis/azure/v1alpha1/types_infrastructure.go`
//! (JSON names as upstream; `omitempty` is `skip_serializing_if`), plus the additions of the
//! user-managed-egress spec: `networks.subnet` ([`SubnetReference`]), the status value
//! [`OutboundAccessType::UserManaged`] and the optional `resourceGroup` on [`RouteTable`] and
//! [`SecurityGroup`].
//!
//! A missing field parses to its empty value (as Go's zero values), so that validation reports it;
//! an unknown field is a parse error (`deny_unknown_fields`).

use serde::{Deserialize, Serialize};

/// `apiVersion` of the provider config and status.
pub const API_VERSION: &str = "azure.provider.extensions.gardener.cloud/v1alpha1";
/// `kind` of the provider config (`spec.provider.infrastructureConfig`).
pub const INFRASTRUCTURE_CONFIG_KIND: &str = "InfrastructureConfig";
/// `kind` of the infrastructure status.
pub const INFRASTRUCTURE_STATUS_KIND: &str = "InfrastructureStatus";
/// `kind` of the infrastructure state.
pub const INFRASTRUCTURE_STATE_KIND: &str = "InfrastructureState";

/// Shoot annotation `ShootSkipAllowEgressDeployment`: `"true"` skips the allow-egress Services.
pub const SHOOT_SKIP_ALLOW_EGRESS_DEPLOYMENT: &str = "azure.provider.extensions.gardener.cloud/skip-allow-egress";
/// Infrastructure annotation `NetworkLayoutZoneMigrationAnnotation`: the zone a single-subnet
/// layout was migrated to.
pub const NETWORK_LAYOUT_ZONE_MIGRATION_ANNOTATION: &str = "migration.azure.provider.extensions.gardener.cloud/zone";
/// Shoot annotation `DisableDefaultOutboundAccessAnnotation`: subnets get `defaultOutboundAccess=false`.
pub const DISABLE_DEFAULT_OUTBOUND_ACCESS_ANNOTATION: &str =
    "azure.provider.extensions.gardener.cloud/disable-default-outbound-access";

/// NAT gateway SKU `Standard` (the default).
pub const NAT_GATEWAY_SKU_STANDARD: &str = "Standard";
/// NAT gateway SKU `StandardV2` (zone-redundant).
pub const NAT_GATEWAY_SKU_STANDARD_V2: &str = "StandardV2";
/// `armnetwork.PossibleNatGatewaySKUNameValues()`.
pub const NAT_GATEWAY_SKUS: [&str; 2] = [NAT_GATEWAY_SKU_STANDARD, NAT_GATEWAY_SKU_STANDARD_V2];

fn is_false(b: &bool) -> bool {
    !*b
}

/// `InfrastructureConfig`: `spec.provider.infrastructureConfig` of an Azure shoot.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InfrastructureConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Deprecated; validation rejects it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<ResourceGroup>,
    #[serde(default)]
    pub networks: NetworkConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityConfig>,
    #[serde(default, deserialize_with = "crate::strict::bool", skip_serializing_if = "is_false")]
    pub zoned: bool,
}

impl InfrastructureConfig {
    /// The spec's `IsUsingUserManagedEgress()`: `networks.subnet` is set.
    pub fn is_using_user_managed_egress(&self) -> bool {
        is_user_managed_egress(self)
    }
}

/// `ResourceGroup`: an existing resource group (config) / the cluster resource group (status).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceGroup {
    #[serde(default)]
    pub name: String,
}

/// `NetworkConfig`: `networks`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkConfig {
    #[serde(default)]
    pub vnet: VNet,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat_gateway: Option<NatGatewayConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_endpoints: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<Zone>,
    /// The spec's addition: a BYO subnet inside the BYO VNet; its presence alone means
    /// user-managed egress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubnetReference>,
}

/// `SubnetReference` (spec): a subnet of `networks.vnet`, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubnetReference {
    #[serde(default)]
    pub name: String,
}

/// `NatGatewayConfig`: `networks.natGateway` (single-subnet layout).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NatGatewayConfig {
    #[serde(default, deserialize_with = "crate::strict::bool")]
    pub enabled: bool,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub idle_connection_timeout_minutes: Option<i32>,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub zone: Option<i32>,
    /// `Standard` | `StandardV2`; `Standard` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sku: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_addresses: Vec<PublicIPReference>,
}

impl NatGatewayConfig {
    /// The SKU with upstream's default (`Standard`).
    pub fn effective_sku(&self) -> &str {
        self.sku.as_deref().unwrap_or(NAT_GATEWAY_SKU_STANDARD)
    }
}

/// `PublicIPReference`: a user public IP for the single-subnet NAT gateway.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PublicIPReference {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub resource_group: String,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub zone: Option<i32>,
}

/// `Zone`: one entry of `networks.zones` (multi-subnet layout).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Zone {
    #[serde(default, deserialize_with = "crate::strict::int")]
    pub name: i32,
    #[serde(default)]
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_endpoints: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat_gateway: Option<ZonedNatGatewayConfig>,
}

/// `ZonedNatGatewayConfig`: `networks.zones[i].natGateway`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ZonedNatGatewayConfig {
    #[serde(default, deserialize_with = "crate::strict::bool")]
    pub enabled: bool,
    #[serde(default, deserialize_with = "crate::strict::opt_int", skip_serializing_if = "Option::is_none")]
    pub idle_connection_timeout_minutes: Option<i32>,
    /// Only `Standard` is allowed per zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sku: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_addresses: Vec<ZonedPublicIPReference>,
}

impl ZonedNatGatewayConfig {
    /// The SKU with upstream's default (`Standard`).
    pub fn effective_sku(&self) -> &str {
        self.sku.as_deref().unwrap_or(NAT_GATEWAY_SKU_STANDARD)
    }
}

/// `ZonedPublicIPReference`: a user public IP for a zone's NAT gateway.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ZonedPublicIPReference {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub resource_group: String,
}

/// `VNet`: `networks.vnet`; name + resourceGroup reference an existing VNet, cidr sizes a managed one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VNet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    #[serde(default, rename = "ddosProtectionPlanID", skip_serializing_if = "Option::is_none")]
    pub ddos_protection_plan_id: Option<String>,
}

/// `IdentityConfig`: `identity`, an existing user-assigned managed identity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IdentityConfig {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub resource_group: String,
    #[serde(
        default,
        rename = "acrAccess",
        deserialize_with = "crate::strict::opt_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub acr_access: Option<bool>,
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
    #[serde(default)]
    pub resource_group: ResourceGroup,
    #[serde(default)]
    pub route_tables: Vec<RouteTable>,
    #[serde(default)]
    pub security_groups: Vec<SecurityGroup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentityStatus>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub zoned: bool,
}

/// `NetworkStatus`: `networks` of the status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetworkStatus {
    #[serde(default)]
    pub vnet: VNetStatus,
    #[serde(default)]
    pub subnets: Vec<Subnet>,
    #[serde(default)]
    pub layout: NetworkLayout,
    #[serde(default)]
    pub outbound_access_type: OutboundAccessType,
}

/// `Purpose` of a subnet, route table or security group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Purpose {
    /// `PurposeNodes`.
    #[default]
    #[serde(rename = "nodes")]
    Nodes,
    /// `PurposeInternal`.
    #[serde(rename = "internal")]
    Internal,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Nodes => "nodes",
            Purpose::Internal => "internal",
        }
    }
}

/// `NetworkLayout`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum NetworkLayout {
    /// `SingleSubnetLayout`: no `networks.zones`.
    #[default]
    SingleSubnet,
    /// `MultipleSubnetLayout`: one subnet per zone.
    MultipleSubnet,
}

impl NetworkLayout {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkLayout::SingleSubnet => "SingleSubnet",
            NetworkLayout::MultipleSubnet => "MultipleSubnet",
        }
    }
}

/// `OutboundAccessType` of the status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum OutboundAccessType {
    /// `OutboundAccessTypeNatGateway`: every subnet has a NAT gateway.
    #[serde(rename = "NATGateway")]
    NatGateway,
    /// `OutboundAccessTypeLoadBalancer` (upstream's default): egress via the load balancer.
    #[default]
    LoadBalancer,
    /// The spec's `OutboundAccessTypeUserManaged`: a BYO subnet without a Gardener NAT gateway.
    UserManaged,
}

impl OutboundAccessType {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboundAccessType::NatGateway => "NATGateway",
            OutboundAccessType::LoadBalancer => "LoadBalancer",
            OutboundAccessType::UserManaged => "UserManaged",
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub migrated: bool,
    #[serde(default, rename = "natGatewayId", skip_serializing_if = "Option::is_none")]
    pub nat_gateway_id: Option<String>,
}

/// `RouteTable` of the status (+ the spec's optional `resourceGroup`, set in BYO mode).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RouteTable {
    #[serde(default)]
    pub purpose: Purpose,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
}

/// `SecurityGroup` of the status (+ the spec's optional `resourceGroup`, set in BYO mode).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SecurityGroup {
    #[serde(default)]
    pub purpose: Purpose,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
}

/// `VNetStatus`: `resourceGroup` only for a user VNet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VNetStatus {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
}

/// `IdentityStatus`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityStatus {
    #[serde(default)]
    pub id: String,
    #[serde(default, rename = "clientID")]
    pub client_id: String,
    #[serde(default, rename = "acrAccess")]
    pub acr_access: bool,
}

/// `InfrastructureState`: the flow state upstream keeps on the Infrastructure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InfrastructureState {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub data: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_items: Vec<AzureResource>,
}

/// `AzureResource`: one managed item of the state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureResource {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub id: String,
}

/// `helper.IsUsingSingleSubnetLayout`: no `networks.zones`.
pub fn is_using_single_subnet_layout(cfg: &InfrastructureConfig) -> bool {
    cfg.networks.zones.is_empty()
}

/// The spec's derived mode: `networks.subnet` is set ⇒ user-managed egress.
pub fn is_user_managed_egress(cfg: &InfrastructureConfig) -> bool {
    cfg.networks.subnet.is_some()
}

/// `helper.InfrastructureZoneToString`: `fmt.Sprintf("%d", z)`.
pub fn infrastructure_zone_to_string(zone: i32) -> String {
    zone.to_string()
}

/// `helper.FindSubnetByPurposeAndZone`: the first subnet with `purpose` (and `zone`, when given).
pub fn find_subnet_by_purpose_and_zone<'a>(
    subnets: &'a [Subnet],
    purpose: Purpose,
    zone: Option<&str>,
) -> Option<&'a Subnet> {
    subnets.iter().find(|s| s.purpose == purpose && zone.is_none_or(|z| s.zone.as_deref() == Some(z)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_serializes_with_upstream_names() {
        let status = InfrastructureStatus {
            api_version: API_VERSION.into(),
            kind: INFRASTRUCTURE_STATUS_KIND.into(),
            networks: NetworkStatus {
                vnet: VNetStatus { name: "hub-vnet".into(), resource_group: Some("hub-network".into()) },
                subnets: vec![Subnet {
                    name: "shoot--p--s-nodes".into(),
                    purpose: Purpose::Nodes,
                    zone: None,
                    migrated: false,
                    nat_gateway_id: Some("/subscriptions/x/nat".into()),
                }],
                layout: NetworkLayout::SingleSubnet,
                outbound_access_type: OutboundAccessType::NatGateway,
            },
            resource_group: ResourceGroup { name: "shoot--p--s".into() },
            route_tables: vec![RouteTable {
                purpose: Purpose::Nodes,
                name: "worker_route_table".into(),
                resource_group: None,
            }],
            security_groups: vec![SecurityGroup {
                purpose: Purpose::Nodes,
                name: "user-nsg".into(),
                resource_group: Some("sec-rg".into()),
            }],
            identity: Some(IdentityStatus { id: "id".into(), client_id: "cid".into(), acr_access: true }),
            zoned: true,
        };
        let json = serde_json::to_string(&status).unwrap();
        assert_eq!(
            json,
            r#"{"apiVersion":"azure.provider.extensions.gardener.cloud/v1alpha1","kind":"InfrastructureStatus","networks":{"vnet":{"name":"hub-vnet","resourceGroup":"hub-network"},"subnets":[{"name":"shoot--p--s-nodes","purpose":"nodes","natGatewayId":"/subscriptions/x/nat"}],"layout":"SingleSubnet","outboundAccessType":"NATGateway"},"resourceGroup":{"name":"shoot--p--s"},"routeTables":[{"purpose":"nodes","name":"worker_route_table"}],"securityGroups":[{"purpose":"nodes","name":"user-nsg","resourceGroup":"sec-rg"}],"identity":{"id":"id","clientID":"cid","acrAccess":true},"zoned":true}"#
        );
        let back: InfrastructureStatus = serde_json::from_str(&json).unwrap();
        assert_eq!(back, status);
        assert_eq!(serde_json::to_string(&OutboundAccessType::UserManaged).unwrap(), r#""UserManaged""#);
    }

    #[test]
    fn config_round_trips_and_rejects_unknown_fields() {
        let json = r#"{"apiVersion":"azure.provider.extensions.gardener.cloud/v1alpha1","kind":"InfrastructureConfig","networks":{"vnet":{"name":"hub-vnet","resourceGroup":"hub-network","ddosProtectionPlanID":"x"},"natGateway":{"enabled":true,"idleConnectionTimeoutMinutes":4,"zone":1,"ipAddresses":[{"name":"ip","resourceGroup":"rg","zone":1}]},"subnet":{"name":"workers"}},"identity":{"name":"id","resourceGroup":"rg","acrAccess":true},"zoned":true}"#;
        let cfg: InfrastructureConfig = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&cfg).unwrap(), json);
        assert!(is_user_managed_egress(&cfg) && cfg.is_using_user_managed_egress());
        assert!(is_using_single_subnet_layout(&cfg));
        let err = serde_json::from_str::<InfrastructureConfig>(r#"{"networks":{"vnett":{}}}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `vnett`"), "{err}");
    }

    #[test]
    fn helpers_follow_upstream() {
        assert_eq!(infrastructure_zone_to_string(2), "2");
        let subnets = vec![
            Subnet { name: "a".into(), purpose: Purpose::Nodes, zone: Some("1".into()), ..Default::default() },
            Subnet { name: "b".into(), purpose: Purpose::Nodes, zone: Some("2".into()), ..Default::default() },
        ];
        assert_eq!(find_subnet_by_purpose_and_zone(&subnets, Purpose::Nodes, None).unwrap().name, "a");
        assert_eq!(find_subnet_by_purpose_and_zone(&subnets, Purpose::Nodes, Some("2")).unwrap().name, "b");
        assert!(find_subnet_by_purpose_and_zone(&subnets, Purpose::Internal, None).is_none());
        assert_eq!(OutboundAccessType::default(), OutboundAccessType::LoadBalancer);
    }
}
