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
//! `configure-cloud-routes`. They act only through [`CloudWrite`], so every call lands in the
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

use crate::arm::ArmId;
use serde::Serialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use trellis_planner::cloud::{CloudError, CloudWrite};

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

/// The simulated Azure cloud-controller-manager.
pub struct Ccm {
    pub config: CloudConfig,
    /// `--configure-cloud-routes`.
    pub configure_cloud_routes: bool,
    cloud: Arc<dyn CloudWrite>,
}

/// What [`Ccm::ensure_load_balancer_service`] left in place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceStatus {
    /// `status.loadBalancer.ingress[0].ip`: the frontend public IP's address.
    pub ingress_ip: String,
    /// The Service hash `h` the names are built from.
    pub hash: String,
    pub load_balancer_id: String,
    pub public_ip_id: String,
    /// The NSG rules the Service has now (empty with the disable annotation, unless it had some).
    pub security_rules: Vec<String>,
}

/// What [`Bastion::create`] left in place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BastionStatus {
    pub vm_id: String,
    pub nic_id: String,
    pub disk_id: String,
    pub public_ip_id: String,
    /// The bastion's public address (what the operator connects to).
    pub public_ip: String,
    /// The NIC's address in the worker subnet.
    pub private_ip: String,
    pub security_rules: Vec<String>,
}

/// The Service's names, from its hash.
struct ServiceNames {
    hash: String,
    pip_name: String,
    proto_upper: &'static str,
    proto_arm: &'static str,
    port: u16,
}

impl ServiceNames {
    fn new(namespace: &str, name: &str, port: u16, protocol: &str) -> Result<ServiceNames, RuntimeError> {
        let (proto_upper, proto_arm) = match protocol.to_ascii_uppercase().as_str() {
            "TCP" => ("TCP", "Tcp"),
            "UDP" => ("UDP", "Udp"),
            _ => {
                return Err(RuntimeError::Invalid(format!(
                    "protocol '{protocol}' is not supported by Azure load balancers; use TCP or UDP"
                )))
            }
        };
        if namespace.is_empty() || name.is_empty() {
            return Err(RuntimeError::Invalid("a Service needs a namespace and a name".into()));
        }
        let hash = service_hash(namespace, name);
        Ok(ServiceNames { pip_name: format!("{CLUSTER_LB_NAME}-{hash}"), hash, proto_upper, proto_arm, port })
    }

    /// `<h>-TCP-443`: the load-balancing rule and the probe.
    fn lb_rule(&self) -> String {
        format!("{}-{}-{}", self.hash, self.proto_upper, self.port)
    }

    fn nsg_rule(&self, source: &str) -> String {
        format!("{CCM_RULE_PREFIX}{}-{}-{}-{}", self.hash, self.proto_upper, self.port, source.replace(['/', ':'], "_"))
    }
}

/// The Service hash: the first 8 hex digits of sha256(`<namespace>/<name>`).
pub fn service_hash(namespace: &str, name: &str) -> String {
    hex8(format!("{namespace}/{name}").as_bytes())
}

fn hex8(data: &[u8]) -> String {
    Sha256::digest(data)[..4].iter().map(|b| format!("{b:02x}")).collect()
}

impl Ccm {
    /// A CCM configured from the rendered azure.json values and `--configure-cloud-routes`.
    pub fn new(
        cloud: Arc<dyn CloudWrite>,
        values: &Map<String, Value>,
        configure_cloud_routes: bool,
    ) -> Result<Ccm, RuntimeError> {
        Ok(Ccm { config: CloudConfig::from_values(values)?, configure_cloud_routes, cloud })
    }

    /// Upstream `EnsureLoadBalancer` for a Service type=LoadBalancer with one port: public IP, the
    /// cluster load balancer's frontend / rule / probe for the Service, then `reconcileSecurityGroup`.
    pub async fn ensure_load_balancer_service(
        &self,
        namespace: &str,
        name: &str,
        port: u16,
        protocol: &str,
        annotations: &BTreeMap<String, String>,
        source_ranges: Vec<String>,
    ) -> Result<ServiceStatus, RuntimeError> {
        let svc = ServiceNames::new(namespace, name, port, protocol)?;
        let cfg = &self.config;

        // Public IP of the frontend (reconcilePublicIP): created once, then left alone.
        let pip_id = cfg.cluster_resource_id("Microsoft.Network/publicIPAddresses", &svc.pip_name);
        let pip = match self.cloud.get(&pip_id).await? {
            Some(pip) => pip,
            None => {
                let body = json!({
                    "location": cfg.location,
                    "sku": {"name": "Standard", "tier": "Regional"},
                    "tags": {
                        "k8s-azure-service": format!("{namespace}/{name}"),
                        "k8s-azure-cluster-name": CLUSTER_LB_NAME,
                    },
                    "properties": {"publicIPAllocationMethod": "Static", "publicIPAddressVersion": "IPv4"},
                });
                self.cloud.put(&pip_id, body).await?
            }
        };
        let ingress_ip = pip.pointer("/properties/ipAddress").and_then(Value::as_str).unwrap_or_default().to_string();

        // The cluster load balancer (reconcileLoadBalancer).
        let lb_id = cfg.cluster_resource_id("Microsoft.Network/loadBalancers", CLUSTER_LB_NAME);
        let existing = self.cloud.get(&lb_id).await?;
        let mut props = lb_properties(existing.as_ref());
        let frontend_id = format!("{lb_id}/frontendIPConfigurations/{}", svc.hash);
        let pool_id = format!("{lb_id}/backendAddressPools/{CLUSTER_LB_NAME}");
        let probe_id = format!("{lb_id}/probes/{}", svc.lb_rule());
        let is_frontend = |n: &str| n == svc.hash;
        let own_prefix = format!("{}-", svc.hash);
        let is_own = |n: &str| n.starts_with(&own_prefix);
        upsert(
            &mut props,
            "frontendIPConfigurations",
            is_frontend,
            vec![json!({"name": svc.hash, "id": frontend_id, "properties": {"publicIPAddress": {"id": pip_id}}})],
        );
        if !array(&props, "backendAddressPools").iter().any(|p| name_of(p) == CLUSTER_LB_NAME) {
            array_mut(&mut props, "backendAddressPools").push(json!({"name": CLUSTER_LB_NAME, "id": pool_id}));
        }
        upsert(
            &mut props,
            "probes",
            is_own,
            vec![json!({"name": svc.lb_rule(), "id": probe_id, "properties": {
                "protocol": "Tcp", "port": node_port(&svc.hash), "intervalInSeconds": 5, "numberOfProbes": 2,
            }})],
        );
        let mut rule = json!({
            "frontendIPConfiguration": {"id": frontend_id},
            "backendAddressPool": {"id": pool_id},
            "probe": {"id": probe_id},
            "protocol": svc.proto_arm,
            "frontendPort": port,
            "backendPort": port,
            "enableFloatingIP": true,
            "idleTimeoutInMinutes": 4,
            "loadDistribution": "Default",
            "disableOutboundSnat": cfg.disable_outbound_snat,
        });
        if svc.proto_arm == "Tcp" {
            rule["enableTcpReset"] = Value::Bool(true);
        }
        upsert(
            &mut props,
            "loadBalancingRules",
            is_own,
            vec![json!({
                "name": svc.lb_rule(),
                "id": format!("{lb_id}/loadBalancingRules/{}", svc.lb_rule()),
                "properties": rule,
            })],
        );
        let frontends: BTreeSet<String> =
            array(&props, "frontendIPConfigurations").iter().map(|f| name_of(f).to_string()).collect();
        if existing.as_ref().map(|lb| lb_properties(Some(lb))) != Some(props.clone()) {
            let body = json!({
                "location": cfg.location,
                "sku": {"name": "Standard", "tier": "Regional"},
                "properties": props,
            });
            self.cloud.put(&lb_id, body).await?;
        }

        // reconcileSecurityGroup. Step 1: GET.
        let nsg_id = cfg.nsg_id();
        let nsg = self.get_nsg(&nsg_id).await?;
        let mut rules = security_rules(&nsg);
        let before = rules.clone();
        let own = format!("{CCM_RULE_PREFIX}{}-", svc.hash);
        let disabled =
            annotations.get(DISABLE_NSG_RULE_ANNOTATION).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        if !disabled {
            // Step 3: one allow rule per source, to the frontend IP, on the Service port.
            let sources = if source_ranges.is_empty() { vec!["Internet".to_string()] } else { source_ranges };
            let desired: Vec<(String, Value)> = sources
                .iter()
                .map(|source| {
                    let props = json!({
                        "protocol": svc.proto_arm,
                        "sourcePortRange": "*",
                        "sourceAddressPrefix": source,
                        "destinationPortRange": port.to_string(),
                        "destinationAddressPrefix": ingress_ip,
                        "access": "Allow",
                        "direction": "Inbound",
                    });
                    (svc.nsg_rule(source), props)
                })
                .collect();
            let wanted: BTreeSet<&str> = desired.iter().map(|(n, _)| n.as_str()).collect();
            rules.retain(|r| !name_of(r).starts_with(&own) || wanted.contains(name_of(r)));
            for (rule_name, props) in desired {
                put_rule(&mut rules, &rule_name, props, CCM_MIN_PRIORITY)?;
            }
        }
        // Step 4: sweep CCM rules whose frontend is gone from the cluster load balancer.
        rules.retain(|r| ccm_rule_hash(name_of(r)).is_none_or(|h| frontends.contains(h)));
        // Step 5 is a no-op for Gardener (no Tags in azure.json). Step 6: write back iff changed.
        if rules != before {
            self.put_nsg(&nsg_id, nsg, rules.clone()).await?;
        }
        Ok(ServiceStatus {
            ingress_ip,
            hash: svc.hash,
            load_balancer_id: lb_id,
            public_ip_id: pip_id,
            security_rules: rules.iter().map(name_of).filter(|n| n.starts_with(&own)).map(str::to_string).collect(),
        })
    }

    /// Upstream `EnsureLoadBalancerDeleted`: the Service's NSG rules (step 2), its frontend, rules and
    /// probes on the cluster load balancer (the load balancer goes when no rule is left), its public IP.
    pub async fn ensure_load_balancer_deleted(&self, namespace: &str, name: &str) -> Result<(), RuntimeError> {
        if namespace.is_empty() || name.is_empty() {
            return Err(RuntimeError::Invalid("a Service needs a namespace and a name".into()));
        }
        let cfg = &self.config;
        let hash = service_hash(namespace, name);

        let nsg_id = cfg.nsg_id();
        if let Some(nsg) = self.cloud.get(&nsg_id).await? {
            let mut rules = security_rules(&nsg);
            let before = rules.len();
            rules.retain(|r| ccm_rule_hash(name_of(r)) != Some(hash.as_str()));
            if rules.len() != before {
                self.put_nsg(&nsg_id, nsg, rules).await?;
            }
        }

        let lb_id = cfg.cluster_resource_id("Microsoft.Network/loadBalancers", CLUSTER_LB_NAME);
        if let Some(lb) = self.cloud.get(&lb_id).await? {
            let old = lb_properties(Some(&lb));
            let mut props = old.clone();
            let own_prefix = format!("{hash}-");
            upsert(&mut props, "frontendIPConfigurations", |n| n == hash, Vec::new());
            upsert(&mut props, "loadBalancingRules", |n| n.starts_with(&own_prefix), Vec::new());
            upsert(&mut props, "probes", |n| n.starts_with(&own_prefix), Vec::new());
            if array(&props, "loadBalancingRules").is_empty() {
                self.cloud.delete(&lb_id).await?;
            } else if props != old {
                let mut body = lb.clone();
                body["properties"] = Value::Object(props);
                self.cloud.put(&lb_id, body).await?;
            }
        }

        let pip_id =
            cfg.cluster_resource_id("Microsoft.Network/publicIPAddresses", &format!("{CLUSTER_LB_NAME}-{hash}"));
        if self.cloud.get(&pip_id).await?.is_some() {
            self.cloud.delete(&pip_id).await?;
        }
        Ok(())
    }

    /// The route controller's `CreateRoute`: route `<node>` → `pod_cidr` via the node's IP. Returns
    /// the route id, or `None` (and makes no call) with `--configure-cloud-routes=false`.
    pub async fn add_node(&self, node: &str, pod_cidr: &str) -> Result<Option<String>, RuntimeError> {
        if !self.configure_cloud_routes {
            return Ok(None);
        }
        let route_id = self.route_id(node)?;
        if !pod_cidr.contains('/') {
            return Err(RuntimeError::Invalid(format!("pod CIDR '{pod_cidr}' is not a CIDR (e.g. 100.96.1.0/24)")));
        }
        let node_ip = self.subnet_address(&format!("node/{node}")).await?;
        let desired =
            json!({"addressPrefix": pod_cidr, "nextHopType": "VirtualAppliance", "nextHopIpAddress": node_ip});
        let current = self.cloud.get(&route_id).await?;
        if current.as_ref().map(props_without_state) != Some(desired.clone()) {
            self.cloud.put(&route_id, json!({"properties": desired})).await?;
        }
        Ok(Some(route_id))
    }

    /// The route controller's `DeleteRoute`. Returns the route id, or `None` (and makes no call) with
    /// `--configure-cloud-routes=false`.
    pub async fn remove_node(&self, node: &str) -> Result<Option<String>, RuntimeError> {
        if !self.configure_cloud_routes {
            return Ok(None);
        }
        let route_id = self.route_id(node)?;
        if self.cloud.get(&route_id).await?.is_some() {
            self.cloud.delete(&route_id).await?;
        }
        Ok(Some(route_id))
    }

    fn route_id(&self, node: &str) -> Result<String, RuntimeError> {
        let Some(rt) = self.config.route_table_id() else {
            return Err(RuntimeError::Config(
                "'routeTableName' is empty, but the CCM runs with --configure-cloud-routes=true: the route \
                 controller has no route table to write per-node routes into (attach a route table to the subnet, \
                 or use an overlay CNI so that configure-cloud-routes is false)"
                    .into(),
            ));
        };
        check_name("node", node)?;
        Ok(format!("{rt}/routes/{node}"))
    }

    async fn get_nsg(&self, nsg_id: &str) -> Result<Value, RuntimeError> {
        get_nsg(self.cloud.as_ref(), nsg_id).await
    }

    async fn put_nsg(&self, nsg_id: &str, nsg: Value, rules: Vec<Value>) -> Result<(), RuntimeError> {
        put_nsg(self.cloud.as_ref(), nsg_id, nsg, rules).await
    }

    /// An address in the worker subnet for `seed` (GET of the subnet).
    async fn subnet_address(&self, seed: &str) -> Result<String, RuntimeError> {
        subnet_address(self.cloud.as_ref(), &self.config.subnet_id(), seed).await
    }
}

/// The simulated bastion controller of the Azure provider extension.
pub struct Bastion {
    pub config: CloudConfig,
    cloud: Arc<dyn CloudWrite>,
}

impl Bastion {
    /// A bastion controller configured from the rendered azure.json values.
    pub fn new(cloud: Arc<dyn CloudWrite>, values: &Map<String, Value>) -> Result<Bastion, RuntimeError> {
        Ok(Bastion { config: CloudConfig::from_values(values)?, cloud })
    }

    /// Ids of the bastion's VM, NIC, OS disk and public IP (in the cluster resource group).
    pub fn resource_ids(&self, name: &str) -> [String; 4] {
        let c = &self.config;
        [
            c.cluster_resource_id("Microsoft.Compute/virtualMachines", name),
            c.cluster_resource_id("Microsoft.Network/networkInterfaces", &format!("{name}-nic")),
            c.cluster_resource_id("Microsoft.Compute/disks", &format!("{name}-disk")),
            c.cluster_resource_id("Microsoft.Network/publicIPAddresses", &format!("{name}-public-ip")),
        ]
    }

    /// Reconciles a bastion: public IP, NIC in the worker subnet, the 4 NSG rules, OS disk, VM.
    ///
    /// Rules (priorities: first free per direction from the base): `<name>-allow-ssh-ipv4` (inbound,
    /// TCP 22 from the IPv4 operator CIDRs to the bastion's private IP, base 400),
    /// `<name>-allow-ssh-ipv6` (the same from the IPv6 operator CIDRs; an empty list, which admits
    /// nothing, when there are none), `<name>-egress-worker` (outbound TCP 22 from the bastion to
    /// `worker_cidrs` — every prefix of the worker subnet, as upstream's `WorkersCIDR` list —, base 401),
    /// `<name>-deny-all` (outbound deny everything from the bastion, base 1000): the bastion has no
    /// internet egress.
    pub async fn create(
        &self,
        name: &str,
        operator_cidrs: Vec<String>,
        worker_cidrs: &[String],
    ) -> Result<BastionStatus, RuntimeError> {
        check_name("bastion", name)?;
        if operator_cidrs.is_empty() {
            return Err(RuntimeError::Invalid(format!(
                "bastion {name}: give at least one operator CIDR (the addresses allowed to SSH into the bastion)"
            )));
        }
        if worker_cidrs.is_empty() {
            return Err(RuntimeError::Invalid(format!(
                "bastion {name}: give at least one worker CIDR (where the bastion may SSH to)"
            )));
        }
        if let Some(bad) = operator_cidrs.iter().chain(worker_cidrs).find(|c| !c.contains('/')) {
            return Err(RuntimeError::Invalid(format!("bastion {name}: '{bad}' is not a CIDR (e.g. 203.0.113.7/32)")));
        }
        let cfg = &self.config;
        let [vm_id, nic_id, disk_id, pip_id] = self.resource_ids(name);
        let tags = json!({"Name": name, "Type": "gardenctl"});

        let pip = match self.cloud.get(&pip_id).await? {
            Some(pip) => pip,
            None => {
                let body = json!({
                    "location": cfg.location,
                    "sku": {"name": "Standard"},
                    "tags": tags,
                    "properties": {"publicIPAllocationMethod": "Static", "publicIPAddressVersion": "IPv4"},
                });
                self.cloud.put(&pip_id, body).await?
            }
        };
        let public_ip = pip.pointer("/properties/ipAddress").and_then(Value::as_str).unwrap_or_default().to_string();

        let nic = match self.cloud.get(&nic_id).await? {
            Some(nic) => nic,
            None => {
                let subnet_id = cfg.subnet_id();
                let private_ip = subnet_address(self.cloud.as_ref(), &subnet_id, &format!("bastion/{name}")).await?;
                let body = json!({
                    "location": cfg.location,
                    "tags": tags,
                    "properties": {"ipConfigurations": [{
                        "name": "ipConfig1",
                        "properties": {
                            "subnet": {"id": subnet_id},
                            "privateIPAllocationMethod": "Dynamic",
                            "privateIPAddress": private_ip,
                            "privateIPAddressVersion": "IPv4",
                            "publicIPAddress": {"id": pip_id},
                            "primary": true,
                        },
                    }]},
                });
                self.cloud.put(&nic_id, body).await?
            }
        };
        let Some(private_ip) =
            nic.pointer("/properties/ipConfigurations/0/properties/privateIPAddress").and_then(Value::as_str)
        else {
            return Err(RuntimeError::Invalid(format!("{nic_id} has no private IP address in ipConfigurations[0]")));
        };
        let private_ip = private_ip.to_string();

        let (v6, v4): (Vec<String>, Vec<String>) = operator_cidrs.into_iter().partition(|c| c.contains(':'));
        let desired = [
            (format!("{name}-allow-ssh-ipv4"), 400, ssh_in(&v4, &private_ip)),
            (format!("{name}-allow-ssh-ipv6"), 400, ssh_in(&v6, &private_ip)),
            (
                format!("{name}-egress-worker"),
                401,
                json!({
                    "protocol": "Tcp", "sourceAddressPrefix": private_ip, "sourcePortRange": "*",
                    "destinationAddressPrefixes": worker_cidrs, "destinationPortRange": "22",
                    "access": "Allow", "direction": "Outbound", "description": "Allow Bastion egress to Shoot workers ipv4",
                }),
            ),
            (
                format!("{name}-deny-all"),
                1000,
                json!({
                    "protocol": "*", "sourceAddressPrefix": private_ip, "sourcePortRange": "*",
                    "destinationAddressPrefix": "*", "destinationPortRange": "*",
                    "access": "Deny", "direction": "Outbound", "description": "Bastion egress deny ipv4",
                }),
            ),
        ];
        let nsg_id = cfg.nsg_id();
        let nsg = get_nsg(self.cloud.as_ref(), &nsg_id).await?;
        let mut rules = security_rules(&nsg);
        let before = rules.clone();
        for (rule_name, base, props) in &desired {
            put_rule(&mut rules, rule_name, props.clone(), *base)?;
        }
        if rules != before {
            put_nsg(self.cloud.as_ref(), &nsg_id, nsg, rules).await?;
        }

        if self.cloud.get(&disk_id).await?.is_none() {
            let body = json!({
                "location": cfg.location,
                "sku": {"name": "Standard_LRS"},
                "tags": tags,
                "properties": {"osType": "Linux", "diskSizeGB": 32, "creationData": {"createOption": "FromImage"}},
            });
            self.cloud.put(&disk_id, body).await?;
        }
        if self.cloud.get(&vm_id).await?.is_none() {
            let body = json!({
                "location": cfg.location,
                "tags": tags,
                "properties": {
                    "hardwareProfile": {"vmSize": "Standard_B1s"},
                    "storageProfile": {"osDisk": {
                        "name": format!("{name}-disk"), "createOption": "FromImage", "diskSizeGB": 32,
                        "managedDisk": {"id": disk_id},
                    }},
                    "osProfile": {
                        "computerName": name, "adminUsername": "gardener",
                        "linuxConfiguration": {"disablePasswordAuthentication": true},
                    },
                    "networkProfile": {"networkInterfaces": [{"id": nic_id, "properties": {"primary": true}}]},
                },
            });
            self.cloud.put(&vm_id, body).await?;
        }
        Ok(BastionStatus {
            vm_id,
            nic_id,
            disk_id,
            public_ip_id: pip_id,
            public_ip,
            private_ip,
            security_rules: desired.into_iter().map(|(n, _, _)| n).collect(),
        })
    }

    /// Removes the bastion (upstream order): VM, NIC, public IP, disk, then its 4 NSG rules.
    pub async fn delete(&self, name: &str) -> Result<(), RuntimeError> {
        check_name("bastion", name)?;
        let [vm_id, nic_id, disk_id, pip_id] = self.resource_ids(name);
        for id in [vm_id, nic_id, pip_id, disk_id] {
            if self.cloud.get(&id).await?.is_some() {
                self.cloud.delete(&id).await?;
            }
        }
        let nsg_id = self.config.nsg_id();
        if let Some(nsg) = self.cloud.get(&nsg_id).await? {
            let names: BTreeSet<String> = BASTION_RULE_SUFFIXES.iter().map(|s| format!("{name}{s}")).collect();
            let mut rules = security_rules(&nsg);
            let before = rules.len();
            rules.retain(|r| !names.contains(name_of(r)));
            if rules.len() != before {
                put_nsg(self.cloud.as_ref(), &nsg_id, nsg, rules).await?;
            }
        }
        Ok(())
    }
}

fn ssh_in(sources: &[String], private_ip: &str) -> Value {
    json!({
        "protocol": "Tcp", "sourceAddressPrefixes": sources, "sourcePortRange": "*",
        "destinationAddressPrefix": private_ip, "destinationPortRange": "22",
        "access": "Allow", "direction": "Inbound", "description": "SSH access for Bastion",
    })
}

/// The Service hash in a CCM rule name (`k8s-azure-lb_<h>-…`).
fn ccm_rule_hash(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(CCM_RULE_PREFIX)?;
    Some(rest.split_once('-').map_or(rest, |(h, _)| h))
}

fn check_name(what: &str, name: &str) -> Result<(), RuntimeError> {
    if name.is_empty() || name.contains('/') || name.trim() != name {
        return Err(RuntimeError::Invalid(format!(
            "{what} name '{name}' cannot be used in an ARM id (empty, '/' or surrounding spaces)"
        )));
    }
    Ok(())
}

async fn get_nsg(cloud: &dyn CloudWrite, nsg_id: &str) -> Result<Value, RuntimeError> {
    cloud.get(nsg_id).await?.ok_or_else(|| {
        RuntimeError::Invalid(format!(
            "the network security group {nsg_id} (securityGroupName / securityGroupResourceGroup in azure.json) does not exist"
        ))
    })
}

/// Step 6: writes the NSG as it was read, with `rules` as its `securityRules`.
async fn put_nsg(cloud: &dyn CloudWrite, nsg_id: &str, mut nsg: Value, rules: Vec<Value>) -> Result<(), RuntimeError> {
    let props = nsg.as_object_mut().map(|o| o.entry("properties").or_insert_with(|| json!({})));
    match props {
        Some(Value::Object(p)) => {
            p.insert("securityRules".into(), Value::Array(rules));
        }
        _ => return Err(RuntimeError::Invalid(format!("{nsg_id}: the NSG read back has no properties object"))),
    }
    cloud.put(nsg_id, nsg).await?;
    Ok(())
}

/// An IPv4 address inside the subnet's prefix, derived from `seed` (skips the 4 addresses Azure
/// reserves at the start and the broadcast address).
async fn subnet_address(cloud: &dyn CloudWrite, subnet_id: &str, seed: &str) -> Result<String, RuntimeError> {
    let Some(subnet) = cloud.get(subnet_id).await? else {
        return Err(RuntimeError::Invalid(format!(
            "the worker subnet {subnet_id} (vnetName / vnetResourceGroup / subnetName in azure.json) does not exist"
        )));
    };
    let prefix = subnet
        .pointer("/properties/addressPrefix")
        .and_then(Value::as_str)
        .or_else(|| subnet.pointer("/properties/addressPrefixes/0").and_then(Value::as_str))
        .unwrap_or_default();
    host_in(prefix, seed).ok_or_else(|| {
        RuntimeError::Invalid(format!("{subnet_id}: address prefix '{prefix}' is not an IPv4 CIDR with room for hosts"))
    })
}

fn host_in(prefix: &str, seed: &str) -> Option<String> {
    let (addr, len) = prefix.split_once('/')?;
    let len: u32 = len.parse().ok().filter(|l| *l <= 29)?;
    let ip: std::net::Ipv4Addr = addr.parse().ok()?;
    let size = 1u64 << (32 - len);
    let base = u64::from(u32::from(ip)) & !(size - 1);
    let h = Sha256::digest(seed.as_bytes());
    let n = u64::from(u32::from_be_bytes([h[0], h[1], h[2], h[3]]));
    let offset = 4 + n % (size - 5);
    Some(std::net::Ipv4Addr::from((base + offset) as u32).to_string())
}

/// A node port for the Service's health probe, from its hash.
fn node_port(hash: &str) -> u16 {
    30000 + (u32::from_str_radix(hash, 16).unwrap_or(0) % 2768) as u16
}

fn name_of(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or_default()
}

fn security_rules(nsg: &Value) -> Vec<Value> {
    nsg.pointer("/properties/securityRules").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// `properties` without `provisioningState`.
fn props_without_state(v: &Value) -> Value {
    let mut p = v.get("properties").cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = p.as_object_mut() {
        m.remove("provisioningState");
    }
    p
}

/// The load balancer's properties as written (no `provisioningState`), or empty for a new one.
fn lb_properties(lb: Option<&Value>) -> Map<String, Value> {
    match lb.map(props_without_state) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

fn array<'a>(props: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    props.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn array_mut<'a>(props: &'a mut Map<String, Value>, key: &str) -> &'a mut Vec<Value> {
    let slot = props.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut().expect("made an array above")
}

/// Replaces the items of `props[key]` whose name matches with `items`, at the position of the first
/// match (at the end when none matched), so that re-applying the same items changes nothing.
fn upsert(props: &mut Map<String, Value>, key: &str, matches: impl Fn(&str) -> bool, items: Vec<Value>) {
    let list = array_mut(props, key);
    let at = list.iter().position(|v| matches(name_of(v))).unwrap_or(list.len());
    list.retain(|v| !matches(name_of(v)));
    let at = at.min(list.len());
    list.splice(at..at, items);
}

/// Adds or replaces the rule `name` with `props` (+ a priority): an equal rule is kept as is, a
/// changed one keeps its priority, a new one gets the first priority from `base` that no rule of the
/// same direction uses.
fn put_rule(rules: &mut Vec<Value>, name: &str, props: Value, base: i64) -> Result<(), RuntimeError> {
    let priority_of = |r: &Value| r.pointer("/properties/priority").and_then(Value::as_i64);
    let without_priority = |r: &Value| {
        let mut p = props_without_state(r);
        if let Some(m) = p.as_object_mut() {
            m.remove("priority");
        }
        p
    };
    let existing = rules.iter().position(|r| name_of(r) == name);
    if let Some(i) = existing {
        if without_priority(&rules[i]) == props && priority_of(&rules[i]).is_some() {
            return Ok(());
        }
    }
    let direction = props.get("direction").and_then(Value::as_str).unwrap_or("Inbound");
    let priority = match existing.and_then(|i| priority_of(&rules[i])) {
        Some(p) => p,
        None => {
            let used: BTreeSet<i64> = rules
                .iter()
                .filter(|r| {
                    r.pointer("/properties/direction")
                        .and_then(Value::as_str)
                        .unwrap_or("Inbound")
                        .eq_ignore_ascii_case(direction)
                })
                .filter_map(priority_of)
                .collect();
            (base..=MAX_PRIORITY).find(|p| !used.contains(p)).ok_or_else(|| {
                RuntimeError::Invalid(format!(
                    "no free {direction} priority from {base} to {MAX_PRIORITY} for rule {name}"
                ))
            })?
        }
    };
    let mut props = props;
    props["priority"] = json!(priority);
    let rule = json!({"name": name, "type": RULE_TYPE, "properties": props});
    match existing {
        Some(i) => rules[i] = rule,
        None => rules.push(rule),
    }
    Ok(())
}

/// The id of the NSG rule `rule` on `nsg_id` (for messages and tests).
pub fn rule_id(nsg_id: &str, rule: &str) -> String {
    ArmId::parse(nsg_id)
        .map(|id| id.child("securityRules", rule).to_string())
        .unwrap_or_else(|_| format!("{nsg_id}/securityRules/{rule}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArmSim, Origin, WorldFile};
    use trellis_planner::cloud::Op;

    const SUB: &str = "6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17";
    const CLUSTER_RG: &str = "shoot--platform--byo-b1";
    const HUB: &str = "/subscriptions/6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17/resourceGroups/hub-network";

    fn world() -> WorldFile {
        let text = format!(
            r#"
azure:
  subscriptionId: {SUB}
  resources:
    - id: /subscriptions/{SUB}/resourceGroups/{CLUSTER_RG}
      location: westeurope
    - id: {HUB}
      location: westeurope
    - id: {HUB}/providers/Microsoft.Network/virtualNetworks/hub-vnet
      location: westeurope
      properties:
        addressSpace:
          addressPrefixes: [10.250.0.0/16]
    - id: {HUB}/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg
      location: westeurope
      properties:
        securityRules:
          - name: deny-vnet-inbound
            properties: {{protocol: "*", sourcePortRange: "*", destinationPortRange: "*", sourceAddressPrefix: VirtualNetwork, destinationAddressPrefix: "*", access: Deny, direction: Inbound, priority: 500}}
    - id: {HUB}/providers/Microsoft.Network/routeTables/shoot-a-rt
      location: westeurope
      properties:
        routes:
          - name: default-to-firewall
            properties: {{addressPrefix: 0.0.0.0/0, nextHopType: VirtualAppliance, nextHopIpAddress: 10.250.255.4}}
    - id: {HUB}/providers/Microsoft.Network/virtualNetworks/hub-vnet/subnets/shoot-a-workers
      properties:
        addressPrefix: 10.250.0.0/19
        networkSecurityGroup: {{id: {HUB}/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg}}
        routeTable: {{id: {HUB}/providers/Microsoft.Network/routeTables/shoot-a-rt}}
"#
        );
        WorldFile::parse("world.yaml", &text).unwrap()
    }

    /// azure.json values as trellis renders them for B1 (user-managed egress).
    fn values(disable_snat: bool) -> Map<String, Value> {
        let v = json!({
            "subscriptionId": SUB,
            "location": "westeurope",
            "resourceGroup": CLUSTER_RG,
            "routeTableName": "shoot-a-rt",
            "securityGroupName": "shoot-a-nsg",
            "subnetName": "shoot-a-workers",
            "vnetName": "hub-vnet",
            "vnetResourceGroup": "hub-network",
            "routeTableResourceGroup": "hub-network",
            "securityGroupResourceGroup": "hub-network",
            "loadBalancerSku": "standard",
            "disableOutboundSNAT": disable_snat,
        });
        v.as_object().unwrap().clone()
    }

    fn sim() -> ArmSim {
        let sim = ArmSim::in_memory(SUB);
        sim.sync_world(&world()).unwrap();
        sim
    }

    fn ccm(sim: &ArmSim, routes: bool) -> Ccm {
        Ccm::new(Arc::new(sim.clone()), &values(true), routes).unwrap()
    }

    fn nsg_id() -> String {
        format!("{HUB}/providers/Microsoft.Network/networkSecurityGroups/shoot-a-nsg")
    }

    fn rt_id() -> String {
        format!("{HUB}/providers/Microsoft.Network/routeTables/shoot-a-rt")
    }

    fn cluster(rtype: &str, name: &str) -> String {
        format!("/subscriptions/{SUB}/resourceGroups/{CLUSTER_RG}/providers/{rtype}/{name}")
    }

    fn rule_names(sim: &ArmSim) -> Vec<String> {
        security_rules(&sim.get_now(&nsg_id()).unwrap()).iter().map(|r| name_of(r).to_string()).collect()
    }

    fn route_names(sim: &ArmSim) -> Vec<String> {
        let rt = sim.get_now(&rt_id()).unwrap();
        rt.pointer("/properties/routes").unwrap().as_array().unwrap().iter().map(|r| name_of(r).to_string()).collect()
    }

    fn writes_to(sim: &ArmSim, mark: usize, fragment: &str) -> Vec<String> {
        sim.calls_since(mark)
            .into_iter()
            .filter(|c| c.op == Op::Write && c.target.to_ascii_lowercase().contains(&fragment.to_ascii_lowercase()))
            .map(|c| format!("{} {}", c.method, c.target))
            .collect()
    }

    fn no_annotations() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    #[tokio::test]
    async fn e10_service_creates_lb_pip_and_nsg_rule_with_outbound_snat_disabled() {
        let sim = sim();
        let ccm = ccm(&sim, true);
        let st =
            ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
        let h = service_hash("default", "web");
        assert_eq!(st.hash, h);
        assert_eq!(h.len(), 8);

        let pip = sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", &format!("kubernetes-{h}"))).unwrap();
        let ip = pip.pointer("/properties/ipAddress").unwrap().as_str().unwrap();
        assert_eq!(st.ingress_ip, ip);

        let lb = sim.get_now(&cluster("Microsoft.Network/loadBalancers", "kubernetes")).unwrap();
        assert_eq!(lb["sku"]["name"], "Standard");
        let rule = &lb.pointer("/properties/loadBalancingRules/0").unwrap();
        assert_eq!(rule["name"], format!("{h}-TCP-443"));
        assert_eq!(rule.pointer("/properties/disableOutboundSnat"), Some(&json!(true)));
        assert_eq!(rule.pointer("/properties/frontendPort"), Some(&json!(443)));

        let name = format!("k8s-azure-lb_{h}-TCP-443-Internet");
        assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string(), name.clone()]);
        assert_eq!(st.security_rules, vec![name.clone()]);
        let nsg_rule = sim.get_now(&rule_id(&nsg_id(), &name)).unwrap();
        let p = &nsg_rule["properties"];
        assert_eq!(p["sourceAddressPrefix"], "Internet");
        assert_eq!(p["destinationAddressPrefix"], ip);
        assert_eq!(p["destinationPortRange"], "443");
        assert_eq!(p["access"], "Allow");
        assert_eq!(p["priority"], 501, "500 is taken by the user's inbound rule");

        // Idempotent: a second reconcile reads, never writes.
        let mark = sim.mark();
        ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
        assert!(writes_to(&sim, mark, "").is_empty(), "{:?}", sim.calls_since(mark));

        // Without disableOutboundSNAT in azure.json (managed mode) the LB rule keeps SNAT.
        let mut v = values(false);
        v.remove("disableOutboundSNAT");
        let managed = Ccm::new(Arc::new(sim.clone()), &v, true).unwrap();
        managed.ensure_load_balancer_service("default", "api", 80, "tcp", &no_annotations(), vec![]).await.unwrap();
        let lb = sim.get_now(&cluster("Microsoft.Network/loadBalancers", "kubernetes")).unwrap();
        let api = format!("{}-TCP-80", service_hash("default", "api"));
        let rules = lb.pointer("/properties/loadBalancingRules").unwrap().as_array().unwrap();
        let api_rule = rules.iter().find(|r| r["name"] == api.as_str()).unwrap();
        assert_eq!(api_rule.pointer("/properties/disableOutboundSnat"), Some(&json!(false)));
    }

    #[tokio::test]
    async fn source_ranges_give_one_rule_each_and_a_port_change_replaces_the_rules() {
        let sim = sim();
        let ccm = ccm(&sim, true);
        let ranges = vec!["203.0.113.0/24".to_string(), "198.51.100.7/32".to_string()];
        ccm.ensure_load_balancer_service("prod", "gw", 443, "TCP", &no_annotations(), ranges).await.unwrap();
        let h = service_hash("prod", "gw");
        let mut want = vec![
            "deny-vnet-inbound".to_string(),
            format!("k8s-azure-lb_{h}-TCP-443-203.0.113.0_24"),
            format!("k8s-azure-lb_{h}-TCP-443-198.51.100.7_32"),
        ];
        assert_eq!(rule_names(&sim), want);
        let r = sim.get_now(&rule_id(&nsg_id(), &want[2])).unwrap();
        assert_eq!(r["properties"]["sourceAddressPrefix"], "198.51.100.7/32");
        assert_eq!(r["properties"]["priority"], 502);

        ccm.ensure_load_balancer_service("prod", "gw", 8443, "TCP", &no_annotations(), vec![]).await.unwrap();
        want.truncate(1);
        want.push(format!("k8s-azure-lb_{h}-TCP-8443-Internet"));
        assert_eq!(rule_names(&sim), want);
        let lb = sim.get_now(&cluster("Microsoft.Network/loadBalancers", "kubernetes")).unwrap();
        let names: Vec<&str> =
            lb.pointer("/properties/loadBalancingRules").unwrap().as_array().unwrap().iter().map(name_of).collect();
        assert_eq!(names, vec![format!("{h}-TCP-8443")]);
    }

    #[tokio::test]
    async fn e11_disable_nsg_rule_annotation_reads_the_nsg_once_and_never_writes_it() {
        let sim = sim();
        let ccm = ccm(&sim, true);
        let mark = sim.mark();
        let annotations = BTreeMap::from([(DISABLE_NSG_RULE_ANNOTATION.to_string(), "true".to_string())]);
        let st = ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &annotations, vec![]).await.unwrap();
        assert!(st.security_rules.is_empty());
        let nsg_calls: Vec<_> = sim
            .calls_since(mark)
            .into_iter()
            .filter(|c| c.target.to_ascii_lowercase().contains("networksecuritygroups"))
            .collect();
        assert_eq!(nsg_calls.len(), 1, "{nsg_calls:?}");
        assert_eq!((nsg_calls[0].method.as_str(), nsg_calls[0].op), ("GET", Op::Read));
        assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string()]);
        // The SLB and its public IP are there all the same.
        assert!(sim.get_now(&cluster("Microsoft.Network/loadBalancers", "kubernetes")).is_some());
        let h = service_hash("default", "web");
        assert!(sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", &format!("kubernetes-{h}"))).is_some());
    }

    #[tokio::test]
    async fn e12_service_delete_removes_rules_lb_and_public_ip() {
        let sim = sim();
        let ccm = ccm(&sim, true);
        ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &no_annotations(), vec![]).await.unwrap();
        ccm.ensure_load_balancer_service("default", "api", 80, "TCP", &no_annotations(), vec![]).await.unwrap();
        let (web, api) = (service_hash("default", "web"), service_hash("default", "api"));
        let lb_id = cluster("Microsoft.Network/loadBalancers", "kubernetes");

        ccm.ensure_load_balancer_deleted("default", "web").await.unwrap();
        assert_eq!(
            rule_names(&sim),
            vec!["deny-vnet-inbound".to_string(), format!("k8s-azure-lb_{api}-TCP-80-Internet")]
        );
        assert!(sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", &format!("kubernetes-{web}"))).is_none());
        let lb = sim.get_now(&lb_id).expect("the LB stays while another Service has rules on it");
        let fes: Vec<&str> = lb
            .pointer("/properties/frontendIPConfigurations")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(name_of)
            .collect();
        assert_eq!(fes, vec![api.as_str()]);

        ccm.ensure_load_balancer_deleted("default", "api").await.unwrap();
        assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string()]);
        assert!(sim.get_now(&lb_id).is_none(), "no rule left: the LB is deleted");
        assert!(sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", &format!("kubernetes-{api}"))).is_none());
        // The user's own rule was never part of a change.
        assert_eq!(sim.origin(&rule_id(&nsg_id(), "deny-vnet-inbound")), Some(Origin::World));

        // Idempotent: deleting again only reads.
        let mark = sim.mark();
        ccm.ensure_load_balancer_deleted("default", "api").await.unwrap();
        assert!(writes_to(&sim, mark, "").is_empty());
    }

    #[tokio::test]
    async fn step4_sweeps_ccm_rules_whose_frontend_is_gone() {
        let sim = sim();
        let ccm = ccm(&sim, true);
        let stale = rule_id(&nsg_id(), "k8s-azure-lb_deadbeef-TCP-80-Internet");
        sim.put(
            &stale,
            json!({"properties": {"protocol": "Tcp", "access": "Allow", "direction": "Inbound", "priority": 600}}),
        )
        .await
        .unwrap();
        let annotations = BTreeMap::from([(DISABLE_NSG_RULE_ANNOTATION.to_string(), "true".to_string())]);
        ccm.ensure_load_balancer_service("default", "web", 443, "TCP", &annotations, vec![]).await.unwrap();
        assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string()]);
    }

    #[tokio::test]
    async fn b4_b5_routes_written_only_with_configure_cloud_routes_and_user_route_preserved() {
        let sim = sim();
        let on = ccm(&sim, true);
        let id = on.add_node("shoot--platform--byo-b1-worker-z1-abc", "100.96.1.0/24").await.unwrap().unwrap();
        assert_eq!(route_names(&sim), vec!["default-to-firewall", "shoot--platform--byo-b1-worker-z1-abc"]);
        let route = sim.get_now(&id).unwrap();
        assert_eq!(route.pointer("/properties/addressPrefix"), Some(&json!("100.96.1.0/24")));
        assert_eq!(route.pointer("/properties/nextHopType"), Some(&json!("VirtualAppliance")));
        let hop = route.pointer("/properties/nextHopIpAddress").unwrap().as_str().unwrap();
        assert!(hop.starts_with("10.250."), "{hop} lies in the worker subnet 10.250.0.0/19");
        let user = sim.get_now(&format!("{}/routes/default-to-firewall", rt_id())).unwrap();
        assert_eq!(user.pointer("/properties/nextHopIpAddress"), Some(&json!("10.250.255.4")));

        // Idempotent.
        let mark = sim.mark();
        on.add_node("shoot--platform--byo-b1-worker-z1-abc", "100.96.1.0/24").await.unwrap();
        assert!(writes_to(&sim, mark, "").is_empty());

        // Route controller off (overlay CNI): no call at all.
        let off = ccm(&sim, false);
        let mark = sim.mark();
        assert_eq!(off.add_node("n2", "100.96.2.0/24").await.unwrap(), None);
        assert_eq!(off.remove_node("shoot--platform--byo-b1-worker-z1-abc").await.unwrap(), None);
        assert!(sim.calls_since(mark).is_empty());

        on.remove_node("shoot--platform--byo-b1-worker-z1-abc").await.unwrap();
        assert_eq!(route_names(&sim), vec!["default-to-firewall"]);
        assert_eq!(sim.origin(&format!("{}/routes/default-to-firewall", rt_id())), Some(Origin::World));
        let mark = sim.mark();
        on.remove_node("shoot--platform--byo-b1-worker-z1-abc").await.unwrap();
        assert!(writes_to(&sim, mark, "").is_empty());
    }

    #[tokio::test]
    async fn empty_route_table_name_is_a_clear_error_only_when_routes_are_on() {
        let sim = sim();
        let mut v = values(true);
        v.insert("routeTableName".into(), json!(""));
        let on = Ccm::new(Arc::new(sim.clone()), &v, true).unwrap();
        let err = on.add_node("n1", "100.96.1.0/24").await.unwrap_err().to_string();
        assert!(err.contains("routeTableName") && err.contains("configure-cloud-routes"), "{err}");
        let off = Ccm::new(Arc::new(sim.clone()), &v, false).unwrap();
        assert_eq!(off.add_node("n1", "100.96.1.0/24").await.unwrap(), None);
    }

    #[tokio::test]
    async fn e13_e14_bastion_rules_and_resources_appear_and_disappear() {
        let sim = sim();
        let bastion = Bastion::new(Arc::new(sim.clone()), &values(true)).unwrap();
        let st = bastion
            .create("cli-abc", vec!["203.0.113.7/32".into(), "2001:db8::/64".into()], &["10.250.0.0/19".into()])
            .await
            .unwrap();
        let names = ["cli-abc-allow-ssh-ipv4", "cli-abc-allow-ssh-ipv6", "cli-abc-egress-worker", "cli-abc-deny-all"]
            .map(String::from);
        let mut want = vec!["deny-vnet-inbound".to_string()];
        want.extend(names.iter().cloned());
        assert_eq!(rule_names(&sim), want);
        assert_eq!(st.security_rules, names.to_vec());

        let rule = |n: &str| sim.get_now(&rule_id(&nsg_id(), n)).unwrap()["properties"].clone();
        assert_eq!(rule("cli-abc-allow-ssh-ipv4")["sourceAddressPrefixes"], json!(["203.0.113.7/32"]));
        assert_eq!(rule("cli-abc-allow-ssh-ipv6")["sourceAddressPrefixes"], json!(["2001:db8::/64"]));
        assert_eq!(rule("cli-abc-allow-ssh-ipv4")["destinationAddressPrefix"], json!(st.private_ip));
        assert_eq!(rule("cli-abc-egress-worker")["destinationAddressPrefixes"], json!(["10.250.0.0/19"]));
        assert_eq!(rule("cli-abc-egress-worker")["direction"], "Outbound");
        assert_eq!(rule("cli-abc-deny-all")["access"], "Deny");
        assert_eq!(rule("cli-abc-deny-all")["direction"], "Outbound");
        assert!(rule("cli-abc-egress-worker")["priority"].as_i64() < rule("cli-abc-deny-all")["priority"].as_i64());

        let vm = sim.get_now(&cluster("Microsoft.Compute/virtualMachines", "cli-abc")).unwrap();
        assert_eq!(vm["type"], "Microsoft.Compute/virtualMachines");
        assert_eq!(vm.pointer("/properties/networkProfile/networkInterfaces/0/id"), Some(&json!(st.nic_id)));
        let nic = sim.get_now(&st.nic_id).unwrap();
        assert_eq!(nic["type"], "Microsoft.Network/networkInterfaces");
        assert_eq!(
            nic.pointer("/properties/ipConfigurations/0/properties/subnet/id"),
            Some(&json!(format!("{HUB}/providers/Microsoft.Network/virtualNetworks/hub-vnet/subnets/shoot-a-workers")))
        );
        assert!(nic.pointer("/properties/networkSecurityGroup").is_none(), "inherits the subnet's NSG");
        assert_eq!(sim.get_now(&st.disk_id).unwrap()["type"], "Microsoft.Compute/disks");
        let pip = sim.get_now(&cluster("Microsoft.Network/publicIPAddresses", "cli-abc-public-ip")).unwrap();
        assert_eq!(pip.pointer("/properties/ipAddress"), Some(&json!(st.public_ip)));
        for id in bastion.resource_ids("cli-abc") {
            assert!(id.contains(&format!("/resourceGroups/{CLUSTER_RG}/")), "{id} is in the cluster RG");
        }

        // Idempotent.
        let mark = sim.mark();
        bastion
            .create("cli-abc", vec!["203.0.113.7/32".into(), "2001:db8::/64".into()], &["10.250.0.0/19".into()])
            .await
            .unwrap();
        assert!(writes_to(&sim, mark, "").is_empty());

        bastion.delete("cli-abc").await.unwrap();
        assert_eq!(rule_names(&sim), vec!["deny-vnet-inbound".to_string()]);
        for id in bastion.resource_ids("cli-abc") {
            assert!(sim.get_now(&id).is_none(), "{id} is gone");
        }
        let mark = sim.mark();
        bastion.delete("cli-abc").await.unwrap();
        assert!(writes_to(&sim, mark, "").is_empty());
    }

    #[test]
    fn config_falls_back_to_the_cluster_resource_group() {
        let v = json!({
            "subscriptionId": "s", "location": "westeurope", "resourceGroup": "shoot--p--n",
            "routeTableName": "worker_route_table", "securityGroupName": "shoot--p--n-workers",
            "subnetName": "shoot--p--n-nodes", "vnetName": "shoot--p--n",
        });
        let c = CloudConfig::from_values(v.as_object().unwrap()).unwrap();
        let rg = "/subscriptions/s/resourceGroups/shoot--p--n/providers";
        assert_eq!(c.nsg_id(), format!("{rg}/Microsoft.Network/networkSecurityGroups/shoot--p--n-workers"));
        assert_eq!(
            c.route_table_id().unwrap(),
            "/subscriptions/s/resourceGroups/shoot--p--n/providers/Microsoft.Network/routeTables/worker_route_table"
        );
        assert_eq!(
            c.subnet_id(),
            format!("{rg}/Microsoft.Network/virtualNetworks/shoot--p--n/subnets/shoot--p--n-nodes")
        );
        assert!(!c.disable_outbound_snat);
        let mut missing = v.as_object().unwrap().clone();
        missing.remove("securityGroupName");
        let err = CloudConfig::from_values(&missing).unwrap_err().to_string();
        assert!(err.contains("securityGroupName"), "{err}");
    }

    #[test]
    fn derived_addresses_stay_inside_the_prefix() {
        for seed in ["a", "b", "node/x", "bastion/y"] {
            let ip: std::net::Ipv4Addr = host_in("10.250.0.0/19", seed).unwrap().parse().unwrap();
            let o = ip.octets();
            assert_eq!((o[0], o[1]), (10, 250));
            assert!(o[2] < 32);
            assert!(!(o[2] == 0 && o[3] < 4));
        }
        assert_eq!(host_in("10.0.0.0/30", "a"), None);
        assert_eq!(host_in("fd00::/64", "a"), None);
    }
}
