//! Azure's cloud binding: the simulated ARM cloud (`ArmSim`, trees `sim/azure` and
//! `sim/azure-audit`, the world file's `azure:` section), the ARM REST client for `--cloud azure`
//! (`--subscription`, credentials from the environment), ARM REST for `trellis sim serve`, and the
//! simulated ARM cloud's runtime writers, `trellis sim ccm|bastion …`: the CCM and the bastion
//! controller, configured from what `trellis apply` rendered for a shoot (`Workspace.outputs`: the
//! azure.json values and `--configure-cloud-routes`).

use crate::backend::Backend;
use crate::binding::{
    parse_annotations, Chosen, CloudBinding, CloudChoice, ExportedSection, Read, ServeOptions, Served, ServiceRef,
    Shows, SimCtx, SimOutput, SimTrees, Simulator,
};
use crate::ops::Session;
use anyhow::{bail, Context as _, Result};
use clap::{Args, FromArgMatches as _, Subcommand};
use serde_json::{Map, Value};
use std::sync::Arc;
use trellis_planner::cloud::{Call, CloudRead, CloudWrite};
use trellis_plans::{escape, Artifacts};
use trellis_providers::azure::prefixes::SubnetPrefixes;
use trellis_sim::runtime::{Bastion, Ccm};
use trellis_sim::{ArmSim, AzureWorld, Faults, SharedFlush, SimError, SyncReport, WorldFile, WorldSection};
use trellis_state::StateStore as _;

/// Azure's binding.
pub struct Azure;

/// Azure's binding, as the registry holds it.
pub static AZURE: Azure = Azure;

impl Simulator for ArmSim {
    fn cloud(&self) -> Arc<dyn CloudWrite> {
        Arc::new(self.clone())
    }

    /// The simulated ARM cloud leaves its flushes to the state's altogether: a call's write is
    /// neither flushed nor written to sled; every commit group of the database stores the writes made
    /// before it in its own transaction (`store_with_commits`; a flush without commits and the close in
    /// a batch), so the state commit of a node (begun after its write) makes the write durable, in the
    /// same transaction, before the node counts as done (see `Persist::record`).
    fn share_flush(&self, flush: SharedFlush, store: &Backend) -> Result<(), SimError> {
        let deferred = self.leave_flushes_to_owner(flush)?;
        if deferred.tree().is_some() {
            store.store_with_commits(Arc::new(ArmPending(deferred)));
        }
        Ok(())
    }

    fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        ArmSim::sync_world(self, world)
    }

    fn persist_audit(&self, file: &trellis_sim::AuditFile) -> Result<usize, SimError> {
        ArmSim::persist_audit(self, file)
    }

    fn keep_audit(&self, file: trellis_sim::AuditFile) -> Result<usize, SimError> {
        ArmSim::keep_audit(self, file)
    }

    fn calls(&self) -> Vec<Call> {
        ArmSim::calls(self)
    }

    fn get_now(&self, id: &str) -> Option<Value> {
        ArmSim::get_now(self, id)
    }

    fn set_faults(&self, faults: Faults) {
        ArmSim::set_faults(self, faults)
    }
}

#[async_trait::async_trait]
impl CloudBinding for Azure {
    fn provider_type(&self) -> &'static str {
        trellis_providers::azure::PROVIDER_TYPE
    }

    fn sim_name(&self) -> &'static str {
        "azure"
    }

    fn trees(&self) -> SimTrees {
        SimTrees { cloud: "sim/azure", audit_file: "audit/azure.jsonl", legacy_audit: "sim/azure-audit" }
    }

    fn world_section(&self) -> Option<&'static dyn WorldSection> {
        Some(&trellis_sim::arm::world::SECTION)
    }

    /// The subscription is the world file's (`azure.subscriptionId`, stored), else the stored one.
    fn open_sim(&self, tree: sled::Tree, world: Option<&WorldFile>) -> Result<Arc<dyn Simulator>, SimError> {
        let subscription = match world {
            Some(world) => AzureWorld::of(world)?.and_then(|a| a.subscription_id),
            None => None,
        };
        Ok(Arc::new(ArmSim::open(tree, subscription)?))
    }

    /// The simulated cloud's subscription.
    fn sim_account(&self, sim: &dyn Simulator) -> String {
        arm(sim).map(ArmSim::subscription).unwrap_or_default()
    }

    fn real_cloud(&self) -> Option<&'static str> {
        Some("azure")
    }

    fn args(&self) -> Vec<clap::Arg> {
        vec![
            clap::Arg::new("subscription")
                .long("subscription")
                .value_name("ID")
                .env("AZURE_SUBSCRIPTION_ID")
                .global(true)
                .help("With --cloud azure: the subscription the shoots live in. Credentials come from the environment: AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (a service principal) or AZURE_FEDERATED_TOKEN_FILE (workload identity), or a managed identity"),
            clap::Arg::new("azure_endpoint")
                .long("azure-endpoint")
                .hide(true)
                .value_name("URL")
                .env("TRELLIS_AZURE_ENDPOINT")
                .default_value(trellis_azure_client::DEFAULT_ENDPOINT)
                .global(true)
                .help("With --cloud azure: the ARM endpoint"),
        ]
    }

    /// `--cloud azure`: the ARM REST client, signed in with the credential the environment selects (a
    /// service principal, workload identity or a managed identity; see `EnvCredential`).
    async fn choose(&self, choice: &CloudChoice<'_>) -> Result<Chosen> {
        if choice.cloud != "azure" {
            return Ok(Chosen::Sim(None));
        }
        let (client, subscription) = arm_client(choice)?;
        Ok(Chosen::Real(Arc::new(client), subscription))
    }

    /// The `azure:` section: `subscriptionId`, `otherSubscriptions` when a resource lives in
    /// another one, and the resources (`export_arm`).
    async fn export_world(
        &self,
        read: Vec<Read>,
        cloud: &dyn CloudRead,
        account: &str,
    ) -> Result<Vec<ExportedSection>> {
        Ok(vec![export_arm(read, cloud, account).await?])
    }

    fn http_api(&self) -> Option<&'static str> {
        Some("ARM")
    }

    fn serve(&self, sim: &dyn Simulator, opts: &ServeOptions) -> Option<Served> {
        let defaults = trellis_sim_http::ServerOptions::default();
        let page_size = opts.page_size.or(defaults.page_size);
        let server_opts = trellis_sim_http::ServerOptions { page_size, ..defaults };
        let router = trellis_sim_http::SimServer::with_options(arm(sim)?.clone(), server_opts).router();
        Some(Served { claims: None, router })
    }

    fn shows(&self, _id: &str) -> Shows {
        Shows::Otherwise("simulated cloud")
    }

    fn shows_help(&self) -> Option<&'static str> {
        Some("The ARM id")
    }

    fn sim_commands(&self) -> Vec<clap::Command> {
        ArmWrite::augment_subcommands(clap::Command::new("sim")).get_subcommands().cloned().collect()
    }

    async fn run_sim(
        &self,
        session: &Session,
        _name: &str,
        matches: &clap::ArgMatches,
        ctx: &SimCtx<'_>,
    ) -> Result<SimOutput> {
        let command = ArmWrite::from_arg_matches(matches)?;
        let sim = session_arm(session)?;
        let mark = sim.mark();
        let result = write(session, sim, command, ctx.state).await;
        Ok(SimOutput::Wrote { calls: sim.calls_since(mark), result })
    }
}

/// The ARM REST client of `--cloud azure` and its subscription, from the Azure binding's flags
/// (`--subscription`, `--azure-endpoint`), `--endpoint` and the credential the environment selects (a
/// service principal, workload identity or a managed identity; see `EnvCredential`). The domains
/// provider's binding builds its Azure DNS client with it too.
pub(crate) fn arm_client(choice: &CloudChoice<'_>) -> Result<(trellis_azure_client::ArmClient, String)> {
    use trellis_azure_client::{ArmClient, EnvCredential};
    let subscription = choice.flag("subscription").map(str::trim).unwrap_or_default();
    if subscription.is_empty() {
        bail!("--cloud azure needs a subscription: pass --subscription ID or set AZURE_SUBSCRIPTION_ID");
    }
    // ARM names a subscription by its GUID, hyphenated (`/subscriptions/{guid}/…`); anything else would
    // only fail later, at the first call, as a 404 or a malformed URL.
    if subscription.len() != 36 || uuid::Uuid::try_parse(subscription).is_err() {
        bail!(
                "--subscription '{}' is not a subscription id: expected its GUID, e.g. 00000000-0000-0000-0000-000000000000 (az account show --query id)",
                escape::text(subscription)
            );
    }
    let endpoint = match choice.endpoint {
        Some(url) => trellis_azure_client::parse_url("--endpoint", url)?,
        None => trellis_azure_client::parse_url(
            "--azure-endpoint",
            choice.flag("azure_endpoint").unwrap_or(trellis_azure_client::DEFAULT_ENDPOINT),
        )?,
    };
    let credential = EnvCredential::from_env().context("--cloud azure cannot sign in")?;
    let client = ArmClient::new(endpoint, Arc::new(credential))?;
    Ok((client, subscription.to_string()))
}

/// The simulated ARM cloud behind `sim`.
fn arm(sim: &dyn Simulator) -> Option<&ArmSim> {
    (sim as &dyn std::any::Any).downcast_ref()
}

/// The session's simulated ARM cloud.
fn session_arm(session: &Session) -> Result<&ArmSim> {
    session
        .sim_of(AZURE.provider_type())
        .and_then(arm)
        .context("bug: the session has no simulated ARM cloud; please report")
}

/// The runtime writers of the simulated ARM cloud (`trellis sim ccm|bastion …`).
#[derive(Subcommand)]
enum ArmWrite {
    /// The cloud-controller-manager: Service type=LoadBalancer (SLB, public IP, NSG rules) and per-node routes.
    #[command(subcommand)]
    Ccm(CcmCommand),
    /// The bastion controller: 4 NSG rules plus VM, NIC, disk and public IP in the cluster resource group.
    #[command(subcommand)]
    Bastion(BastionCommand),
}

#[derive(Subcommand)]
enum CcmCommand {
    /// A Service type=LoadBalancer.
    #[command(subcommand)]
    Service(ServiceCommand),
    /// A node (the route controller writes its pod-CIDR route when --configure-cloud-routes is true).
    #[command(subcommand)]
    Node(NodeCommand),
}

#[derive(Subcommand)]
enum ServiceCommand {
    /// Create or update the Service (upstream EnsureLoadBalancer).
    Create(ServiceCreate),
    /// Delete the Service (upstream EnsureLoadBalancerDeleted).
    Delete(ServiceRef),
}

#[derive(Args)]
struct ServiceCreate {
    #[command(flatten)]
    service: ServiceRef,
    /// The Service's port (the load balancer's frontend port and its NSG rule).
    #[arg(long, default_value_t = 443)]
    port: u16,
    /// TCP or UDP.
    #[arg(long, default_value = "TCP")]
    protocol: String,
    /// A Service annotation, e.g. service.beta.kubernetes.io/azure-disable-load-balancer-nsg-rule=true. Repeatable.
    #[arg(long = "annotation", value_name = "KEY=VALUE")]
    annotations: Vec<String>,
    /// spec.loadBalancerSourceRanges entry. Repeatable; none means the Internet service tag.
    #[arg(long = "source-range", value_name = "CIDR")]
    source_ranges: Vec<String>,
}

#[derive(Subcommand)]
enum NodeCommand {
    /// A node joined: route `<node>` → its pod CIDR (upstream CreateRoute).
    Add {
        /// The shoot's technical id, `shoot--<project>--<name>`.
        #[arg(long, value_name = "ID")]
        shoot: String,
        /// The node name (also the route name).
        #[arg(long)]
        name: String,
        /// The node's pod CIDR (the route's destination).
        #[arg(long, value_name = "CIDR")]
        pod_cidr: String,
    },
    /// A node left: its route goes (upstream DeleteRoute).
    Remove {
        /// The shoot's technical id, `shoot--<project>--<name>`.
        #[arg(long, value_name = "ID")]
        shoot: String,
        /// The name it was created with.
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand)]
enum BastionCommand {
    /// Create or update a bastion.
    Create {
        /// The shoot's technical id, `shoot--<project>--<name>`.
        #[arg(long, value_name = "ID")]
        shoot: String,
        /// The bastion instance name; the prefix of its rules and resources.
        #[arg(long)]
        name: String,
        /// Who may SSH in. Repeatable; IPv4 and IPv6 go to separate rules.
        #[arg(long = "operator-cidr", value_name = "CIDR", required = true)]
        operator_cidrs: Vec<String>,
        /// Where the bastion may SSH to. Repeatable; default: every address prefix of the worker subnet
        /// (`addressPrefix`, or each of `addressPrefixes`).
        #[arg(long = "worker-cidr", value_name = "CIDR")]
        worker_cidrs: Vec<String>,
    },
    /// Delete a bastion: its 4 rules and its VM, NIC, disk and public IP.
    Delete {
        /// The shoot's technical id, `shoot--<project>--<name>`.
        #[arg(long, value_name = "ID")]
        shoot: String,
        /// The name it was created with.
        #[arg(long)]
        name: String,
    },
}

/// Runs a controller command; returns its summary line.
async fn write(session: &Session, sim: &ArmSim, command: ArmWrite, state: &str) -> Result<String> {
    let cloud: Arc<dyn CloudWrite> = Arc::new(sim.clone());
    Ok(match command {
        ArmWrite::Ccm(CcmCommand::Service(ServiceCommand::Create(c))) => {
            let (values, routes) = applied(session, &c.service.shoot, state)?;
            let annotations = parse_annotations(&c.annotations)?;
            let ccm = Ccm::new(cloud, &values, routes)?;
            let (ns, name) = (&c.service.namespace, &c.service.name);
            let st =
                ccm.ensure_load_balancer_service(ns, name, c.port, &c.protocol, &annotations, c.source_ranges).await?;
            let rules = if st.security_rules.is_empty() { "none".to_string() } else { st.security_rules.join(", ") };
            format!("service {ns}/{name}: ingress IP {}; NSG rules: {rules}", st.ingress_ip)
        }
        ArmWrite::Ccm(CcmCommand::Service(ServiceCommand::Delete(s))) => {
            let (values, routes) = applied(session, &s.shoot, state)?;
            Ccm::new(cloud, &values, routes)?.ensure_load_balancer_deleted(&s.namespace, &s.name).await?;
            format!("service {}/{}: deleted", s.namespace, s.name)
        }
        ArmWrite::Ccm(CcmCommand::Node(NodeCommand::Add { shoot, name, pod_cidr })) => {
            let (values, routes) = applied(session, &shoot, state)?;
            match Ccm::new(cloud, &values, routes)?.add_node(&name, &pod_cidr).await? {
                Some(id) => format!("node {name}: route {id}"),
                None => {
                    format!("node {name}: --configure-cloud-routes=false for {shoot}: the route table is not touched")
                }
            }
        }
        ArmWrite::Ccm(CcmCommand::Node(NodeCommand::Remove { shoot, name })) => {
            let (values, routes) = applied(session, &shoot, state)?;
            match Ccm::new(cloud, &values, routes)?.remove_node(&name).await? {
                Some(id) => format!("node {name}: route {id} removed"),
                None => {
                    format!("node {name}: --configure-cloud-routes=false for {shoot}: the route table is not touched")
                }
            }
        }
        ArmWrite::Bastion(BastionCommand::Create { shoot, name, operator_cidrs, worker_cidrs }) => {
            let (values, _) = applied(session, &shoot, state)?;
            let bastion = Bastion::new(cloud, &values)?;
            let worker_cidrs =
                if worker_cidrs.is_empty() { subnet_prefixes(sim, &bastion.config.subnet_id())? } else { worker_cidrs };
            let st = bastion.create(&name, operator_cidrs, &worker_cidrs).await?;
            format!(
                "bastion {name}: public IP {}, private IP {}; NSG rules: {}",
                st.public_ip,
                st.private_ip,
                st.security_rules.join(", ")
            )
        }
        ArmWrite::Bastion(BastionCommand::Delete { shoot, name }) => {
            let (values, _) = applied(session, &shoot, state)?;
            Bastion::new(cloud, &values)?.delete(&name).await?;
            format!("bastion {name}: deleted")
        }
    })
}

/// The azure.json values and `--configure-cloud-routes` that `trellis apply` recorded for `shoot`.
fn applied(session: &Session, shoot: &str, state: &str) -> Result<(Map<String, Value>, bool)> {
    let hint = format!("run `trellis apply -f <shoot.yaml> --state {}` first", state);
    let Some(ws) = session.store.load(shoot)? else {
        bail!("no workspace for {shoot} in {} (`trellis state list` shows them); {hint}", state);
    };
    let Some(outputs) = ws.outputs else {
        bail!("{shoot} has no applied artifacts in {}; {hint}", state);
    };
    let artifacts: Artifacts = serde_json::from_value(outputs)
        .with_context(|| format!("{shoot}: the applied artifacts in the state cannot be read; {hint}"))?;
    let routes = artifacts.ccm_flags().and_then(|f| f.get("configure-cloud-routes")).copied().unwrap_or(true);
    let Some(config) = artifacts.cloud_provider_config().cloned() else {
        bail!("{shoot}: the applied artifacts in {} have no cloud-provider config; {hint}", state);
    };
    Ok((config.values, routes))
}

/// Every address prefix of the worker subnet, in whichever shape ARM shows them.
fn subnet_prefixes(sim: &ArmSim, subnet_id: &str) -> Result<Vec<String>> {
    let subnet = sim
        .get_now(subnet_id)
        .with_context(|| format!("the worker subnet {subnet_id} is not in the simulated cloud; pass --worker-cidr"))?;
    SubnetPrefixes::of(&subnet).map(|p| p.prefixes).with_context(|| {
        format!("{subnet_id} has neither properties.addressPrefix nor properties.addressPrefixes; pass --worker-cidr")
    })
}

/// `trellis world export`'s `azure:` section: every resource read (by its `id`; the last answer of a
/// resource read twice), as ARM returned it, sorted by id (case-insensitively, as ARM compares ids);
/// completed, through `cloud`, with what a world file needs besides: each resource's parent (a
/// subnet's VNet, a resource's resource group) and what it references (a subnet's — also one nested
/// in its VNet — route table, NSG and NAT gateway; a NAT gateway's public IPs), until nothing is
/// missing. A reference that reads as absent is left as it is (loading the file then names it).
async fn export_arm(read: Vec<Read>, cloud: &dyn CloudRead, subscription: &str) -> Result<ExportedSection> {
    use std::collections::{BTreeMap, BTreeSet};
    use trellis_planner::ids::ArmId;
    let arm_id = |v: &Value| v.get("id").and_then(Value::as_str).and_then(|id| ArmId::parse(id).ok());
    let mut found: BTreeMap<String, Value> = BTreeMap::new();
    for r in read {
        if let Some(id) = arm_id(&r.value) {
            found.insert(id.key(), r.value);
        }
    }
    let mut absent: BTreeSet<String> = BTreeSet::new();
    loop {
        let mut missing: BTreeMap<String, (ArmId, String)> = BTreeMap::new();
        for value in found.values() {
            let Some(id) = arm_id(value) else { continue };
            for needed in arm_needs(&id, value) {
                let key = needed.key();
                if !found.contains_key(&key) && !absent.contains(&key) {
                    missing.entry(key).or_insert_with(|| (needed, id.as_str().to_string()));
                }
            }
        }
        if missing.is_empty() {
            break;
        }
        for (key, (id, by)) in missing {
            match cloud.get(id.as_str()).await {
                Ok(Some(value)) => {
                    found.insert(key, value);
                }
                Ok(None) => {
                    absent.insert(key);
                }
                Err(e) => bail!("cannot read {id}, which the world file needs for {by}: {e}"),
            }
        }
    }
    let mut others: BTreeSet<String> = BTreeSet::new();
    for value in found.values() {
        if let Some(id) = arm_id(value).filter(|id| !id.subscription().eq_ignore_ascii_case(subscription)) {
            others.insert(id.subscription().to_ascii_lowercase());
        }
    }
    let mut body = Map::new();
    body.insert("subscriptionId".to_string(), Value::String(subscription.to_string()));
    if !others.is_empty() {
        body.insert("otherSubscriptions".to_string(), others.into_iter().map(Value::String).collect());
    }
    let resources = found.len();
    body.insert("resources".to_string(), Value::Array(found.into_values().collect()));
    Ok(ExportedSection { key: "azure", body: Value::Object(body), resources })
}

/// What an ARM resource needs declared beside it in a world file: its parent (a resource group needs
/// none), and the resources it, or a subnet nested in it, references.
fn arm_needs(id: &trellis_planner::ids::ArmId, value: &Value) -> Vec<trellis_planner::ids::ArmId> {
    use trellis_planner::ids::ArmId;
    let mut out: Vec<ArmId> = id.parent().filter(|p| p.depth() >= 4).into_iter().collect();
    let mut refs = |v: &Value| {
        let props = v.get("properties");
        for link in ["routeTable", "networkSecurityGroup", "natGateway"] {
            out.extend(
                props
                    .and_then(|p| p.pointer(&format!("/{link}/id")))
                    .and_then(Value::as_str)
                    .and_then(|i| ArmId::parse(i).ok()),
            );
        }
        let ips = props.and_then(|p| p.get("publicIpAddresses")).and_then(Value::as_array);
        out.extend(
            ips.into_iter().flatten().filter_map(|ip| ip.get("id")?.as_str()).filter_map(|i| ArmId::parse(i).ok()),
        );
    };
    refs(value);
    let nested = value.pointer("/properties/subnets").and_then(Value::as_array);
    for subnet in nested.into_iter().flatten() {
        refs(subnet);
    }
    out
}

/// The simulated ARM cloud's deferred writes as the state stores them: in the transaction of each
/// commit group (see `trellis_state::PendingWrites`).
struct ArmPending(Arc<trellis_sim::DeferredWrites>);

impl trellis_state::PendingWrites for ArmPending {
    fn tree(&self) -> &sled::Tree {
        self.0.tree().expect("registered only for a cloud kept in the state dir")
    }

    fn pending(&self) -> Vec<trellis_state::PendingWrite> {
        self.0.pending()
    }

    fn stored(&self, writes: &[trellis_state::PendingWrite]) {
        self.0.stored(writes)
    }
}
