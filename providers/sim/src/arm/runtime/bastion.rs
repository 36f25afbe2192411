//! The simulated bastion controller: VM, NIC, OS disk, public IP and four NSG rules.

use super::helpers::*;
use super::*;
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use trellis_planner::cloud::CloudWrite;

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
