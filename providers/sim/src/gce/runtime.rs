//! Runtime writers: the controllers that write into a shoot's VPC after apply, simulated on
//! [`GceSim`] through [`CloudWrite`] (so every call is audited like any other):
//!
//! - the CCM route controller ([`GceSim::ccm_sync_routes`]): one `<technicalID>-<hash>` route per node
//!   (so `shoot--*`), `destRange` the node's pod CIDR, `nextHopInstance` the node's VM, tagged with the
//!   technical id; IPv4 only (IPv6 pod CIDRs get no route);
//! - the CCM service controller ([`GceSim::ccm_ensure_service`] / [`GceSim::ccm_delete_service`]): per
//!   Service type=LoadBalancer the firewall rules `k8s-fw-<h>-<svc>` (its ports, from
//!   `loadBalancerSourceRanges` or 0.0.0.0/0) and `k8s-<h>-hc` (the health-check port from Google's
//!   health-check ranges), both `targetTags: [<technicalID>]`; its frontend address is a reserved
//!   address `k8s-<h>-<svc>` — EXTERNAL, or for an internal load balancer INTERNAL in the workers
//!   subnet or the subnet named by the annotation [`ILB_SUBNET_ANNOTATION`] (the simulator has no
//!   forwarding rules; the address stands for the one the forwarding rule holds);
//! - the bastion controller ([`GceSim::bastion_ensure`] / [`GceSim::bastion_delete`]): the rules
//!   `<base>-allow-ssh` (ingress tcp/22 from the bastion's ingress CIDRs), `<base>-egress-worker`
//!   (egress tcp/22 to the workers subnet's range, read live from the subnet) and `<base>-deny-all`
//!   (egress, everything), all tag-scoped to the bastion VM's tag `<base>`, and the VM `<base>` whose
//!   NIC is in the workers subnet, with an external IP.
//!
//! `<h>` is the first 8 hex digits of sha256(`<namespace>/<name>`). Everything is idempotent: a
//! resource is written only when it is missing or differs; deleting what is gone writes nothing.

use super::GceSim;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};
use trellis_planner::ids::{GceIds, IdScheme};

/// The annotation that puts an internal load balancer's address into another subnet.
pub const ILB_SUBNET_ANNOTATION: &str = "networking.gke.io/internal-load-balancer-subnet";
/// Google's health-check source ranges.
pub const HEALTH_CHECK_RANGES: [&str; 4] = ["35.191.0.0/16", "130.211.0.0/22", "209.85.152.0/22", "209.85.204.0/22"];
/// The node port Google's health checks probe (kube-proxy's healthz).
pub const HEALTH_CHECK_PORT: &str = "10256";
/// The description the CCM gives its routes.
pub const ROUTE_DESCRIPTION: &str = "k8s-node-route";

/// Where a shoot lives in GCE, as trellis renders it for the CCM and the bastion controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShootNetwork {
    pub project: String,
    pub region: String,
    /// The VPC's name (the user's in user-managed egress).
    pub network: String,
    /// The workers subnet's name.
    pub workers_subnet: String,
    /// `shoot--<project>--<name>`: route prefix and the nodes' network tag.
    pub technical_id: String,
}

impl ShootNetwork {
    /// The VPC's URL, as GCE writes references (so a GET compares equal).
    fn network_url(&self) -> String {
        format!("{}projects/{}/global/networks/{}", super::COMPUTE_URL, self.project, self.network)
    }
    fn global(&self, collection: &str, name: &str) -> String {
        format!("projects/{}/global/{collection}/{name}", self.project)
    }
    fn regional(&self, collection: &str, name: &str) -> String {
        format!("projects/{}/regions/{}/{collection}/{name}", self.project, self.region)
    }
}

/// A node as the route controller sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub zone: String,
    /// The node's pod CIDRs (IPv4 and, dual-stack, IPv6).
    pub pod_cidrs: Vec<String>,
}

/// A Service type=LoadBalancer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LbService {
    pub namespace: String,
    pub name: String,
    /// `(protocol, node port)`, e.g. `("TCP", 30080)`.
    pub ports: Vec<(String, u16)>,
    pub source_ranges: Vec<String>,
    pub internal: bool,
    pub annotations: Vec<(String, String)>,
}

/// What the CCM wrote for a Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceStatus {
    /// The load balancer's address.
    pub ip: String,
    /// `k8s-fw-<h>-<svc>`, `k8s-<h>-hc`.
    pub firewalls: [String; 2],
    pub address: String,
}

/// A bastion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BastionSpec {
    /// The base name of its resources.
    pub name: String,
    pub zone: String,
    /// CIDRs SSH is allowed from.
    pub ingress: Vec<String>,
}

/// What the bastion controller wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BastionStatus {
    pub external_ip: String,
    pub internal_ip: String,
}

fn hash8(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect()
}

/// A GCE name from `text`: at most 63 characters, not ending in a hyphen.
fn name63(text: &str) -> String {
    let cut: String = text.chars().take(63).collect();
    cut.trim_end_matches('-').to_string()
}

/// The Service's `<h>`.
pub fn service_hash(namespace: &str, name: &str) -> String {
    hash8(&format!("{namespace}/{name}"))
}

/// A route's name for a node: `<technicalID>-<hash of the node name>`.
pub fn route_name(technical_id: &str, node: &str) -> String {
    name63(&format!("{technical_id}-{}", hash8(node)))
}

/// Fields of `want` that `have` lacks or has otherwise.
fn differs(have: &Value, want: &Value) -> bool {
    want.as_object().is_some_and(|w| w.iter().any(|(k, v)| k != "name" && have.get(k) != Some(v)))
}

impl GceSim {
    /// Creates `id` with `want`, or rewrites it under the version read (a firewall's content
    /// version: it has no fingerprint) when it differs; returns it.
    async fn ensure(&self, id: &str, want: Value) -> Result<Value, CloudError> {
        match self.get(id).await? {
            None => self.create(id, want).await,
            Some(have) if differs(&have, &want) => self.update(id, want, &GceIds.precondition(&have)).await,
            Some(have) => Ok(have),
        }
    }

    /// Deletes `id` if it exists.
    async fn ensure_gone(&self, id: &str) -> Result<(), CloudError> {
        if self.get(id).await?.is_some() {
            self.remove(id, &Precondition::None).await?;
        }
        Ok(())
    }

    /// The CCM route controller: makes the shoot's routes exactly one per node with an IPv4 pod CIDR;
    /// routes of nodes that are gone are deleted. Other routes (the user's, other shoots') are
    /// never touched: one filtered LIST finds the shoot's.
    pub async fn ccm_sync_routes(&self, shoot: &ShootNetwork, nodes: &[Node]) -> Result<(), CloudError> {
        let filter = format!(
            r#"(name eq "{}-[0-9a-f]{{8}}") (description eq "{ROUTE_DESCRIPTION}")"#,
            regex::escape(&shoot.technical_id)
        );
        let collection = format!("projects/{}/global/routes", shoot.project);
        let mut existing: Vec<Value> = Vec::new();
        let mut query = super::ListQuery { filter: Some(filter), ..Default::default() };
        loop {
            let page = self.list_page(&collection, &query).await?;
            existing.extend(page["items"].as_array().cloned().unwrap_or_default());
            match page.get("nextPageToken").and_then(Value::as_str) {
                Some(t) => query.page_token = Some(t.to_string()),
                None => break,
            }
        }
        let network_url = shoot.network_url();
        existing.retain(|r| r["network"] == json!(network_url));
        let mut wanted = Vec::new();
        for node in nodes {
            let Some(cidr) = node.pod_cidrs.iter().find(|c| c.parse::<ipnet::Ipv4Net>().is_ok()) else { continue };
            let name = route_name(&shoot.technical_id, &node.name);
            let want = json!({
                "name": name,
                "network": network_url,
                "destRange": cidr,
                "nextHopInstance": format!("{}projects/{}/zones/{}/instances/{}", super::COMPUTE_URL, shoot.project, node.zone, node.name),
                "priority": 1000,
                "description": ROUTE_DESCRIPTION,
                "tags": [shoot.technical_id],
            });
            let id = shoot.global("routes", &name);
            match existing.iter().find(|r| r["name"] == json!(name)) {
                Some(have) if !differs(have, &want) => {}
                // Routes are immutable: a changed one is deleted and inserted again.
                Some(_) => {
                    self.remove(&id, &Precondition::None).await?;
                    self.create(&id, want).await?;
                }
                None => {
                    self.create(&id, want).await?;
                }
            }
            wanted.push(name);
        }
        for r in existing {
            let name = r["name"].as_str().unwrap_or_default();
            if !wanted.iter().any(|w| w == name) {
                self.remove(&shoot.global("routes", name), &Precondition::None).await?;
            }
        }
        Ok(())
    }

    /// The CCM service controller's reconcile of a Service type=LoadBalancer.
    pub async fn ccm_ensure_service(&self, shoot: &ShootNetwork, svc: &LbService) -> Result<ServiceStatus, CloudError> {
        let h = service_hash(&svc.namespace, &svc.name);
        let address_name = name63(&format!("k8s-{h}-{}", svc.name));
        let address_id = shoot.regional("addresses", &address_name);
        let address_body = if svc.internal {
            let subnet = svc
                .annotations
                .iter()
                .find(|(k, _)| k == ILB_SUBNET_ANNOTATION)
                .map_or(shoot.workers_subnet.as_str(), |(_, v)| v.as_str());
            json!({"addressType": "INTERNAL", "subnetwork": format!("regions/{}/subnetworks/{subnet}", shoot.region), "description": format!("{{\"kubernetes.io/service-name\":\"{}/{}\"}}", svc.namespace, svc.name)})
        } else {
            json!({"addressType": "EXTERNAL", "description": format!("{{\"kubernetes.io/service-name\":\"{}/{}\"}}", svc.namespace, svc.name)})
        };
        let address = match self.get(&address_id).await? {
            Some(a) => a,
            None => self.create(&address_id, address_body).await?,
        };
        let ip = address["address"].as_str().unwrap_or_default().to_string();
        let mut allowed: Vec<Value> = Vec::new();
        for proto in ["TCP", "UDP"] {
            let ports: Vec<String> =
                svc.ports.iter().filter(|(p, _)| p.eq_ignore_ascii_case(proto)).map(|(_, n)| n.to_string()).collect();
            if !ports.is_empty() {
                allowed.push(json!({"IPProtocol": proto.to_ascii_lowercase(), "ports": ports}));
            }
        }
        let sources =
            if svc.source_ranges.is_empty() { vec!["0.0.0.0/0".to_string()] } else { svc.source_ranges.clone() };
        let network = shoot.network_url();
        let fw = name63(&format!("k8s-fw-{h}-{}", svc.name));
        let hc = format!("k8s-{h}-hc");
        let description = format!(
            "{{\"kubernetes.io/service-name\":\"{}/{}\", \"kubernetes.io/service-ip\":\"{ip}\"}}",
            svc.namespace, svc.name
        );
        self.ensure(
            &shoot.global("firewalls", &fw),
            json!({"network": network, "direction": "INGRESS", "priority": 1000, "sourceRanges": sources, "allowed": allowed, "targetTags": [shoot.technical_id], "description": description}),
        )
        .await?;
        self.ensure(
            &shoot.global("firewalls", &hc),
            json!({"network": network, "direction": "INGRESS", "priority": 1000, "sourceRanges": HEALTH_CHECK_RANGES, "allowed": [{"IPProtocol": "tcp", "ports": [HEALTH_CHECK_PORT]}], "targetTags": [shoot.technical_id], "description": description}),
        )
        .await?;
        Ok(ServiceStatus { ip, firewalls: [fw, hc], address: address_name })
    }

    /// The CCM's cleanup when the Service is deleted (or no longer a load balancer).
    pub async fn ccm_delete_service(&self, shoot: &ShootNetwork, svc: &LbService) -> Result<(), CloudError> {
        let h = service_hash(&svc.namespace, &svc.name);
        self.ensure_gone(&shoot.global("firewalls", &name63(&format!("k8s-fw-{h}-{}", svc.name)))).await?;
        self.ensure_gone(&shoot.global("firewalls", &format!("k8s-{h}-hc"))).await?;
        self.ensure_gone(&shoot.regional("addresses", &name63(&format!("k8s-{h}-{}", svc.name)))).await
    }

    /// The bastion controller's reconcile: three tag-scoped rules and the VM.
    pub async fn bastion_ensure(&self, shoot: &ShootNetwork, b: &BastionSpec) -> Result<BastionStatus, CloudError> {
        let subnet_id = shoot.regional("subnetworks", &shoot.workers_subnet);
        let subnet = self.get(&subnet_id).await?.ok_or_else(|| CloudError::Rejected {
            target: subnet_id.clone(),
            status: 404,
            code: "notFound".into(),
            message: format!(
                "the workers subnet '{}' does not exist; the bastion's egress rule needs its range",
                shoot.workers_subnet
            ),
        })?;
        let workers = subnet["ipCidrRange"].clone();
        let network = shoot.network_url();
        let tag = b.name.clone();
        self.ensure(
            &shoot.global("firewalls", &format!("{}-allow-ssh", b.name)),
            json!({"network": network, "direction": "INGRESS", "priority": 50, "sourceRanges": b.ingress, "allowed": [{"IPProtocol": "tcp", "ports": ["22"]}], "targetTags": [tag]}),
        )
        .await?;
        self.ensure(
            &shoot.global("firewalls", &format!("{}-egress-worker", b.name)),
            json!({"network": network, "direction": "EGRESS", "priority": 60, "destinationRanges": [workers], "allowed": [{"IPProtocol": "tcp", "ports": ["22"]}], "targetTags": [tag]}),
        )
        .await?;
        self.ensure(
            &shoot.global("firewalls", &format!("{}-deny-all", b.name)),
            json!({"network": network, "direction": "EGRESS", "priority": 1000, "destinationRanges": ["0.0.0.0/0"], "denied": [{"IPProtocol": "all"}], "targetTags": [tag]}),
        )
        .await?;
        let vm_id = format!("projects/{}/zones/{}/instances/{}", shoot.project, b.zone, b.name);
        let vm = match self.get(&vm_id).await? {
            Some(vm) => vm,
            None => {
                self.create(
                    &vm_id,
                    json!({"machineType": "e2-small", "networkInterfaces": [{"subnetwork": format!("regions/{}/subnetworks/{}", shoot.region, shoot.workers_subnet), "accessConfigs": [{"type": "ONE_TO_ONE_NAT"}]}], "tags": {"items": [tag]}}),
                )
                .await?
            }
        };
        let nic = &vm["networkInterfaces"][0];
        Ok(BastionStatus {
            external_ip: nic["accessConfigs"][0]["natIP"].as_str().unwrap_or_default().to_string(),
            internal_ip: nic["networkIP"].as_str().unwrap_or_default().to_string(),
        })
    }

    /// The bastion controller's cleanup: the VM, then its rules.
    pub async fn bastion_delete(&self, shoot: &ShootNetwork, b: &BastionSpec) -> Result<(), CloudError> {
        self.ensure_gone(&format!("projects/{}/zones/{}/instances/{}", shoot.project, b.zone, b.name)).await?;
        for suffix in ["-allow-ssh", "-egress-worker", "-deny-all"] {
            self.ensure_gone(&shoot.global("firewalls", &format!("{}{suffix}", b.name))).await?;
        }
        Ok(())
    }
}
