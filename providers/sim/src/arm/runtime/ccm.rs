//! The simulated cloud-controller-manager: LoadBalancer Services and per-node routes.

use super::helpers::*;
use super::*;
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use trellis_planner::cloud::CloudWrite;

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
