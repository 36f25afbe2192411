//! Runtime writers: the two controllers that write into the cloud after `trellis apply`, simulated.
//!
//! - [`Ccm`]: the Azure cloud-controller-manager's Service type=LoadBalancer reconcile
//!   (`EnsureLoadBalancer` / `EnsureLoadBalancerDeleted`, with `reconcileSecurityGroup` steps 1–6 of
//!   the spec's "NSG mutation contract") and its route controller (per-node pod-CIDR routes, only
//!   with `--configure-cloud-routes=true`).
//! - [`Bastion`]: the provider's bastion controller (4 IP-scoped NSG rules, VM, NIC, OS disk and
//!   public IP in the cluster resource group).
//!
//! Both are configured only from what trellis renders: the azure.json values
//! (`artifacts.cloud_provider_config.values`, see [`CloudConfig`]) and the CCM flag
//! `configure-cloud-routes`. They act only through
//! [`CloudWrite`](trellis_planner::cloud::CloudWrite), so every call lands in the
//! simulator's audit log as the real controllers' ARM calls would. Everything is idempotent: a
//! resource is written only when it is missing or differs, and deleting what is gone writes nothing.
//!
//! # Names
//! With `h` = the first 8 hex digits of sha256(`<namespace>/<name>`) of the Service:
//!
//! | what | name / id |
//! |---|---|
//! | cluster load balancer (Standard SKU), in `resourceGroup` | `kubernetes` |
//! | its backend pool | `kubernetes` |
//! | the Service's frontend IP configuration | `<h>` |
//! | the Service's public IP, in `resourceGroup` | `kubernetes-<h>` |
//! | load-balancing rule and health probe per port | `<h>-<TCP\|UDP>-<port>` |
//! | NSG allow rule per source (`Internet`, or each `loadBalancerSourceRanges` entry, `/` and `:` → `_`) | `k8s-azure-lb_<h>-<TCP\|UDP>-<port>-<source>` |
//! | per-node route, in `routeTableName` / `routeTableResourceGroup` | `<node name>` (upstream kubenet naming) |
//! | bastion VM / NIC / OS disk / public IP, in `resourceGroup` | `<bastion>`, `<bastion>-nic`, `<bastion>-disk`, `<bastion>-public-ip` |
//! | bastion NSG rules | `<bastion>-allow-ssh-ipv4`, `<bastion>-allow-ssh-ipv6`, `<bastion>-egress-worker`, `<bastion>-deny-all` |
//!
//! # How the NSG is written
//! Both controllers write the NSG the way upstream does: GET the NSG, change its `securityRules`
//! array, PUT the whole NSG back — and only when the array changed (step 6). With the Service
//! annotation `service.beta.kubernetes.io/azure-disable-load-balancer-nsg-rule: "true"` the CCM
//! skips step 3 (no rules for that Service); step 4 (sweep `k8s-azure-lb_*` rules whose frontend no
//! longer exists on the cluster load balancer) still runs, so on an NSG without stale rules the CCM's
//! NSG interaction is exactly one GET. Rules an annotated Service had before are kept (its frontend
//! still exists, so step 4 does not sweep them).
//!
//! The bastion's two SSH-in rules split the operator CIDRs by address family; the rule of a family
//! without operator CIDRs is still written, with an empty `sourceAddressPrefixes` (admits nothing), so
//! the footprint is always the 4 rules of the spec. Priorities: first free in the rule's direction
//! from 400 (SSH-in), 401 (egress-worker), 1000 (deny-all), from 500 for the CCM.
//!
//! # Routes
//! The route controller writes each route as a resource of its own (`…/routeTables/{rt}/routes/{node}`),
//! GET first, PUT only when missing or different; the user's own routes are never part of a request.
//! The next hop is the node's IP, derived from the node name inside the worker subnet's prefix (one
//! GET of the subnet). With `configure-cloud-routes=false` node add/remove make no call at all.
//!
//! What they leave behind after a failed teardown is reported by trellis' orphan report
//! (`trellis_providers::azure::orphans`), which reads it through the normal cloud interface.

mod bastion;
mod ccm;
mod helpers;
#[cfg(test)]
mod tests;

pub use bastion::{Bastion, BastionStatus};
pub use ccm::{service_hash, Ccm, ServiceStatus};
pub use helpers::rule_id;

use serde_json::{Map, Value};
use trellis_planner::cloud::CloudError;

/// The annotation that keeps the CCM from adding NSG rules for a Service.
pub const DISABLE_NSG_RULE_ANNOTATION: &str = "service.beta.kubernetes.io/azure-disable-load-balancer-nsg-rule";
/// The cluster load balancer's name (and its backend pool's).
pub const CLUSTER_LB_NAME: &str = "kubernetes";
/// Prefix of every NSG rule the CCM writes.
pub const CCM_RULE_PREFIX: &str = "k8s-azure-lb_";
/// Suffixes of the 4 rules a bastion writes, after `<bastion name>`.
pub const BASTION_RULE_SUFFIXES: [&str; 4] = ["-allow-ssh-ipv4", "-allow-ssh-ipv6", "-egress-worker", "-deny-all"];
/// Lowest priority the CCM gives its rules (upstream `loadBalancerMinimumPriority`).
pub const CCM_MIN_PRIORITY: i64 = 500;
/// Highest NSG rule priority ARM accepts.
pub const MAX_PRIORITY: i64 = 4096;

const RULE_TYPE: &str = "Microsoft.Network/networkSecurityGroups/securityRules";

/// What can go wrong in a runtime writer.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The azure.json values lack something the controller needs.
    #[error("azure.json: {0}")]
    Config(String),
    /// A bad argument, or the cloud is not in a shape the controller can work with.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Cloud(#[from] CloudError),
}

/// The azure.json values the controllers read (upstream `cloud-provider-config` keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloudConfig {
    pub subscription_id: String,
    /// The cluster resource group (`resourceGroup`).
    pub resource_group: String,
    pub location: String,
    pub security_group_name: String,
    /// `securityGroupResourceGroup`, else `resourceGroup`.
    pub security_group_resource_group: String,
    /// Empty when azure.json has none.
    pub route_table_name: String,
    /// `routeTableResourceGroup`, else `resourceGroup`.
    pub route_table_resource_group: String,
    pub vnet_name: String,
    /// `vnetResourceGroup`, else `resourceGroup`.
    pub vnet_resource_group: String,
    pub subnet_name: String,
    /// `disableOutboundSNAT` (false when absent).
    pub disable_outbound_snat: bool,
}

impl CloudConfig {
    /// Reads the rendered azure.json values (`artifacts.cloud_provider_config.values`).
    pub fn from_values(values: &Map<String, Value>) -> Result<CloudConfig, RuntimeError> {
        let opt = |key: &str| -> Option<String> {
            match values.get(key) {
                Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
                _ => None,
            }
        };
        let req = |key: &str| -> Result<String, RuntimeError> {
            opt(key).ok_or_else(|| {
                RuntimeError::Config(format!("'{key}' is missing or empty; re-run `trellis apply` to render it"))
            })
        };
        let resource_group = req("resourceGroup")?;
        let disable_outbound_snat = match values.get("disableOutboundSNAT") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
            Some(other) => {
                return Err(RuntimeError::Config(format!("'disableOutboundSNAT' must be a boolean, not {other}")));
            }
        };
        Ok(CloudConfig {
            subscription_id: req("subscriptionId")?,
            location: req("location")?,
            security_group_name: req("securityGroupName")?,
            security_group_resource_group: opt("securityGroupResourceGroup").unwrap_or_else(|| resource_group.clone()),
            route_table_name: opt("routeTableName").unwrap_or_default(),
            route_table_resource_group: opt("routeTableResourceGroup").unwrap_or_else(|| resource_group.clone()),
            vnet_name: req("vnetName")?,
            vnet_resource_group: opt("vnetResourceGroup").unwrap_or_else(|| resource_group.clone()),
            subnet_name: req("subnetName")?,
            disable_outbound_snat,
            resource_group,
        })
    }

    /// The NSG the controllers write rules onto.
    pub fn nsg_id(&self) -> String {
        self.resource_id(
            &self.security_group_resource_group,
            "Microsoft.Network/networkSecurityGroups",
            &self.security_group_name,
        )
    }

    /// The route table of the route controller; `None` when azure.json names none.
    pub fn route_table_id(&self) -> Option<String> {
        (!self.route_table_name.is_empty()).then(|| {
            self.resource_id(&self.route_table_resource_group, "Microsoft.Network/routeTables", &self.route_table_name)
        })
    }

    /// The worker subnet.
    pub fn subnet_id(&self) -> String {
        format!(
            "{}/subnets/{}",
            self.resource_id(&self.vnet_resource_group, "Microsoft.Network/virtualNetworks", &self.vnet_name),
            self.subnet_name
        )
    }

    /// A resource in the cluster resource group.
    pub fn cluster_resource_id(&self, rtype: &str, name: &str) -> String {
        self.resource_id(&self.resource_group, rtype, name)
    }

    fn resource_id(&self, rg: &str, rtype: &str, name: &str) -> String {
        format!("/subscriptions/{}/resourceGroups/{rg}/providers/{rtype}/{name}", self.subscription_id)
    }
}
