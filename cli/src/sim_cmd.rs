//! `trellis sim …`: run the simulated runtime writers (the CCM and the bastion controller) against
//! the simulated cloud in the state directory, configured from what `trellis apply` rendered for a
//! shoot (`Workspace.outputs`: the azure.json values and `--configure-cloud-routes`).
//!
//! Every cloud write is printed on a line of its own (`PUT|DELETE <id> (<status>)`), so the commands
//! double as a way to see what the real controllers would do to the user's NSG and route table.

use super::{open, Env, ReportOutput};
use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use trellis_cli::ops::Session;
use trellis_planner::cloud::{Call, CloudWrite, Op};
use trellis_plans::Artifacts;
use trellis_providers::azure::prefixes::SubnetPrefixes;
use trellis_providers::gcp::state::GcpState;
use trellis_sim::gce::runtime::{BastionSpec, LbService, Node as GceNode, ShootNetwork};
use trellis_sim::runtime::{Bastion, Ccm};
use trellis_sim::ArmSim;
use trellis_state::StateStore;

#[derive(Args)]
pub struct SimArgs {
    #[command(subcommand)]
    command: SimCommand,
    #[command(flatten)]
    env: Env,
}

#[derive(Subcommand)]
enum SimCommand {
    /// The simulated ARM cloud's runtime writers.
    #[command(flatten)]
    Write(ArmWrite),
    /// Print a resource's JSON as the simulated cloud returns it (a GET, not audited).
    Show {
        /// The ARM id, or a DNS id of the simulated DNS (`/dns/zones/ZONE/records/NAME/TYPE`,
        /// `/seeds/SEED/namespaces/NS/dnsrecords/NAME`).
        id: String,
    },
    /// The simulated GCE cloud's runtime writers (GCP shoots): CCM routes and Services, the bastion.
    #[command(subcommand)]
    Gce(GceCommand),
    /// Print the calls the simulated clouds answered for the commands that write (`apply`, `destroy`,
    /// `trellis sim …`), oldest first, as the state dir keeps them (a plan's reads are not kept):
    /// what trellis and the runtime writers did to the simulated cloud.
    Audit {
        /// Only the writes (PUT, POST, PATCH, DELETE), refused ones included.
        #[arg(long)]
        writes: bool,
        /// text: one call a line (`cloud method status target`); json: `{"azure": […], "gce": […], "dns": […]}`.
        #[arg(long, value_enum, default_value_t = ReportOutput::Text)]
        output: ReportOutput,
    },
    /// Serve the simulated clouds of the state dir over HTTP, ARM REST and GCE REST on one port, for
    /// the real clients (`--cloud azure|gcp --endpoint URL`); until Ctrl-C.
    Serve {
        /// The address to listen on; a loopback address, since the clients send credentials over
        /// plain http only to loopback. Port 0 picks a free port (printed on the first line).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
    },
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
enum GceCommand {
    /// The simulated GCE cloud's runtime writers.
    #[command(flatten)]
    Write(GceWrite),
    /// Print a resource's JSON as the simulated GCE cloud returns it (a GET, not audited).
    Show {
        /// The selfLink (`projects/P/global/networks/N`, …).
        id: String,
    },
}

/// The runtime writers of the simulated GCE cloud (`trellis sim gce routes|service|bastion …`).
#[derive(Subcommand)]
enum GceWrite {
    /// The CCM route controller: exactly one `<technicalID>-<hash>` route per node (with
    /// --configure-cloud-routes); routes of nodes not given are deleted.
    Routes {
        #[arg(long, value_name = "ID")]
        shoot: String,
        /// A node: NAME,ZONE,POD_CIDR. Repeatable; none deletes every route of the shoot.
        #[arg(long = "node", value_name = "NAME,ZONE,POD_CIDR")]
        nodes: Vec<String>,
    },
    /// The CCM service controller: a Service type=LoadBalancer (firewall rules k8s-fw-*, k8s-*-hc and
    /// its address), tag-scoped to the shoot.
    #[command(subcommand)]
    Service(GceServiceCommand),
    /// The bastion controller: 3 tag-scoped firewall rules and the bastion VM in the workers subnet.
    #[command(subcommand)]
    Bastion(GceBastionCommand),
}

#[derive(Subcommand)]
enum GceServiceCommand {
    /// Create or update the Service.
    Create {
        #[command(flatten)]
        service: ServiceRef,
        /// PROTOCOL:NODE_PORT, e.g. TCP:30080. Repeatable.
        #[arg(long = "port", value_name = "PROTOCOL:NODE_PORT", required = true)]
        ports: Vec<String>,
        /// spec.loadBalancerSourceRanges entry. Repeatable; none means 0.0.0.0/0.
        #[arg(long = "source-range", value_name = "CIDR")]
        source_ranges: Vec<String>,
        /// An internal load balancer (its address in the workers subnet).
        #[arg(long)]
        internal: bool,
        /// A Service annotation, e.g. networking.gke.io/internal-load-balancer-subnet=NAME. Repeatable.
        #[arg(long = "annotation", value_name = "KEY=VALUE")]
        annotations: Vec<String>,
    },
    /// Delete the Service's firewall rules and address.
    Delete(ServiceRef),
}

#[derive(Subcommand)]
enum GceBastionCommand {
    /// Create or update a bastion.
    Create {
        #[arg(long, value_name = "ID")]
        shoot: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        zone: String,
        /// Who may SSH in. Repeatable.
        #[arg(long = "operator-cidr", value_name = "CIDR", required = true)]
        operator_cidrs: Vec<String>,
    },
    /// Delete a bastion: its rules and VM.
    Delete {
        #[arg(long, value_name = "ID")]
        shoot: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        zone: String,
    },
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
struct ServiceRef {
    /// The shoot's technical id, `shoot--<project>--<name>`.
    #[arg(long, value_name = "ID")]
    shoot: String,
    #[arg(long, default_value = "default")]
    namespace: String,
    #[arg(long)]
    name: String,
}

#[derive(Args)]
struct ServiceCreate {
    #[command(flatten)]
    service: ServiceRef,
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
        #[arg(long, value_name = "ID")]
        shoot: String,
        /// The node name (also the route name).
        #[arg(long)]
        name: String,
        #[arg(long, value_name = "CIDR")]
        pod_cidr: String,
    },
    /// A node left: its route goes (upstream DeleteRoute).
    Remove {
        #[arg(long, value_name = "ID")]
        shoot: String,
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand)]
enum BastionCommand {
    /// Create or update a bastion.
    Create {
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
        #[arg(long, value_name = "ID")]
        shoot: String,
        #[arg(long)]
        name: String,
    },
}

/// What `trellis sim` does once the state dir is open (`serve` opens it itself).
enum Step {
    Write(ArmWrite),
    Gce(GceCommand),
    Show(String),
    Audit { writes: bool, output: ReportOutput },
}

/// The audit logs the state dir keeps, by simulated cloud (the names `trellis sim audit` prints).
const AUDIT_LOGS: [(&str, &str); 3] = [
    ("azure", trellis_cli::ops::SIM_AUDIT_TREE),
    ("gce", trellis_cli::ops::SIM_GCE_AUDIT_TREE),
    ("dns", trellis_cli::ops::DNS_SIM_AUDIT_TREE),
];

/// `trellis sim audit`: the kept calls of each simulated cloud (see [`SimCommand::Audit`]).
fn audit(session: Session, writes: bool, output: ReportOutput) -> Result<u8> {
    let mut logs = Vec::new();
    for (cloud, tree) in AUDIT_LOGS {
        let calls = trellis_sim::persisted_audit(&session.store.tree(tree)?)?;
        logs.push((cloud, calls.into_iter().filter(|c| !writes || c.op == Op::Write).collect::<Vec<Call>>()));
    }
    session.close()?;
    let out = match output {
        ReportOutput::Json => {
            let logs: BTreeMap<&str, &Vec<Call>> = logs.iter().map(|(cloud, calls)| (*cloud, calls)).collect();
            serde_json::to_string_pretty(&logs)? + "\n"
        }
        ReportOutput::Text => {
            let lines: Vec<String> = logs
                .iter()
                .flat_map(|(cloud, calls)| calls.iter().map(move |c| (cloud, c)))
                .map(|(cloud, c)| {
                    format!("{cloud:<5} {:<6} {} {}\n", c.method, c.status, trellis_plans::escape::text(&c.target))
                })
                .collect();
            if lines.is_empty() {
                let what = if writes { "writes" } else { "calls" };
                format!("No {what} kept: nothing has written the simulated clouds of this state yet.\n")
            } else {
                lines.concat()
            }
        }
    };
    print!("{out}");
    Ok(0)
}

pub async fn run(args: SimArgs) -> Result<u8> {
    let env = &args.env;
    let command = match args.command {
        SimCommand::Serve { listen } => return serve(env, listen).await,
        SimCommand::Write(write) => Step::Write(write),
        SimCommand::Gce(gce) => Step::Gce(gce),
        SimCommand::Show { id } => Step::Show(id),
        SimCommand::Audit { writes, output } => Step::Audit { writes, output },
    };
    let location = env.location()?;
    if let trellis_cli::backend::StateLocation::Dir(dir) = &location {
        if !dir.exists() {
            bail!(
                "state directory {} does not exist; run `trellis apply -f <shoot.yaml> --state {}` first",
                dir.display(),
                dir.display()
            );
        }
    }
    let session = open(env, "sim").await?;
    let sim = &session.sim;
    let state = location.to_string();
    let state = state.as_str();
    let sim_where = env.sim_shown(&location);
    let command = match command {
        Step::Write(write) => write,
        Step::Gce(command) => return gce(session, command, state, &sim_where).await,
        Step::Audit { writes, output } => return audit(session, writes, output),
        Step::Show(id) => {
            // A DNS id (`/dns/zones/…`, `/seeds/…/dnsrecords/…`): the simulated DNS.
            if id.parse::<trellis_sim::dns::DnsId>().is_ok() {
                let Some(value) = session.dns.get_now(&id) else {
                    bail!("{id}: not found in the simulated DNS in {sim_where}");
                };
                println!("{}", serde_json::to_string_pretty(&value)?);
                return Ok(0);
            }
            let Some(value) = sim.get_now(&id) else {
                bail!("{id}: not found in the simulated cloud in {sim_where}");
            };
            println!("{}", serde_json::to_string_pretty(&value)?);
            return Ok(0);
        }
    };

    let mark = sim.mark();
    let result = write(&session, command, state).await;
    let calls = sim.calls_since(mark);
    report(session, calls, result)
}

/// Prints the writes a `trellis sim …` command made — also when a later call failed, as the audit log
/// keeps them — closes the session, then the command's summary or its error.
fn report(session: Session, calls: Vec<Call>, result: Result<String>) -> Result<u8> {
    let writes: Vec<_> = calls.into_iter().filter(|c| c.op == Op::Write).collect();
    for c in &writes {
        println!("{} {} ({})", c.method, c.target, c.status);
    }
    session.close()?;
    let summary = result?;
    if writes.is_empty() {
        println!("No cloud writes: everything was already in place.");
    }
    println!("{summary}");
    Ok(0)
}

/// Runs a controller command; returns its summary line.
async fn write(session: &Session, command: ArmWrite, state: &str) -> Result<String> {
    let sim = &session.sim;
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

fn parse_annotations(raw: &[String]) -> Result<BTreeMap<String, String>> {
    raw.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => bail!("--annotation '{a}': expected KEY=VALUE"),
        })
        .collect()
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

/// `trellis sim gce …`: the GCE runtime writers, against the simulated GCE cloud in the state dir.
async fn gce(session: Session, command: GceCommand, state: &str, sim_where: &str) -> Result<u8> {
    let gce = session.gce.clone();
    let command = match command {
        GceCommand::Write(write) => write,
        GceCommand::Show { id } => {
            let Some(value) = gce.get_now(&id) else {
                bail!("{id}: not found in the simulated GCE cloud in {sim_where}");
            };
            println!("{}", serde_json::to_string_pretty(&value)?);
            return Ok(0);
        }
    };
    let mark = gce.calls().len();
    let result = gce_write(&session, command, state).await;
    let calls = gce.calls().into_iter().skip(mark).collect();
    report(session, calls, result)
}

/// Where an applied GCP shoot lives, from its workspace's provider state.
fn gce_network(session: &Session, shoot: &str, state: &str) -> Result<(ShootNetwork, bool)> {
    let hint = format!("run `trellis apply -f <shoot.yaml> --state {}` first", state);
    let Some(ws) = session.store.load(shoot)? else {
        bail!("no workspace for {shoot} in {} (`trellis state list` shows them); {hint}", state);
    };
    let Some(gcp) = ws.provider_state::<GcpState>().with_context(|| format!("{shoot}: not a GCP shoot"))? else {
        bail!("{shoot} has nothing applied in {}; {hint}", state);
    };
    let Some(net) = gcp.applied_network(shoot) else {
        bail!("{shoot} has nothing applied in {}; {hint}", state);
    };
    let routes = ws
        .outputs
        .and_then(|o| serde_json::from_value::<Artifacts>(o).ok())
        .and_then(|a| a.ccm_flags().and_then(|f| f.get("configure-cloud-routes").copied()))
        .unwrap_or(true);
    let network = ShootNetwork {
        project: session.project.clone(),
        region: net.region,
        network: net.network,
        workers_subnet: net.workers_subnet,
        technical_id: shoot.to_string(),
    };
    Ok((network, routes))
}

async fn gce_write(session: &Session, command: GceWrite, state: &str) -> Result<String> {
    let gce = &session.gce;
    Ok(match command {
        GceWrite::Routes { shoot, nodes } => {
            let (net, routes) = gce_network(session, &shoot, state)?;
            if !routes {
                return Ok(format!("--configure-cloud-routes=false for {shoot}: the CCM writes no routes"));
            }
            let nodes = nodes
                .iter()
                .map(|n| match n.split(',').collect::<Vec<_>>()[..] {
                    [name, zone, pod] if !name.is_empty() && !zone.is_empty() => {
                        Ok(GceNode { name: name.to_string(), zone: zone.to_string(), pod_cidrs: vec![pod.to_string()] })
                    }
                    _ => bail!("--node '{n}': expected NAME,ZONE,POD_CIDR"),
                })
                .collect::<Result<Vec<_>>>()?;
            gce.ccm_sync_routes(&net, &nodes).await?;
            format!("{shoot}: {} node route(s) in place", nodes.len())
        }
        GceWrite::Service(GceServiceCommand::Create { service, ports, source_ranges, internal, annotations }) => {
            let (net, _) = gce_network(session, &service.shoot, state)?;
            let ports = ports
                .iter()
                .map(|p| match p.split_once(':') {
                    Some((proto, port)) => match port.parse::<u16>() {
                        Ok(port) => Ok((proto.to_ascii_uppercase(), port)),
                        Err(_) => bail!("--port '{p}': the node port must be a number 1-65535"),
                    },
                    None => bail!("--port '{p}': expected PROTOCOL:NODE_PORT, e.g. TCP:30080"),
                })
                .collect::<Result<Vec<_>>>()?;
            let svc = LbService {
                namespace: service.namespace.clone(),
                name: service.name.clone(),
                ports,
                source_ranges,
                internal,
                annotations: parse_annotations(&annotations)?.into_iter().collect(),
            };
            let st = gce.ccm_ensure_service(&net, &svc).await?;
            format!(
                "service {}/{}: address {}; firewall rules: {}",
                svc.namespace,
                svc.name,
                st.ip,
                st.firewalls.join(", ")
            )
        }
        GceWrite::Service(GceServiceCommand::Delete(s)) => {
            let (net, _) = gce_network(session, &s.shoot, state)?;
            let svc = LbService { namespace: s.namespace.clone(), name: s.name.clone(), ..Default::default() };
            gce.ccm_delete_service(&net, &svc).await?;
            format!("service {}/{}: deleted", s.namespace, s.name)
        }
        GceWrite::Bastion(GceBastionCommand::Create { shoot, name, zone, operator_cidrs }) => {
            let (net, _) = gce_network(session, &shoot, state)?;
            let b = BastionSpec { name: name.clone(), zone, ingress: operator_cidrs };
            let st = gce.bastion_ensure(&net, &b).await?;
            format!("bastion {name}: external IP {}, internal IP {}", st.external_ip, st.internal_ip)
        }
        GceWrite::Bastion(GceBastionCommand::Delete { shoot, name, zone }) => {
            let (net, _) = gce_network(session, &shoot, state)?;
            let b = BastionSpec { name: name.clone(), zone, ingress: Vec::new() };
            gce.bastion_delete(&net, &b).await?;
            format!("bastion {name}: deleted")
        }
    })
}

/// `trellis sim serve`: both simulated clouds of the state dir (with `--world` synced in) behind one
/// HTTP listener until Ctrl-C or SIGTERM; the audit log of what the clients did is kept as for
/// `trellis sim …`.
///
/// Durability: the simulated ARM cloud leaves its flushes to the state dir (as in process, where the
/// node's state commit flushes); here the answer acknowledges a write, so every request that may
/// write is answered after the state dir's grouped flush ([`trellis_sim_http::flush_before_answer`]).
/// The served clouds' audit logs are kept in the state dir's audit trees as the calls are made
/// (`keep_audit`), so that flush makes a write's entry durable with it; a read's entry is made
/// durable by the next write's flush, or the stop.
async fn serve(env: &Env, listen: std::net::SocketAddr) -> Result<u8> {
    if !listen.ip().is_loopback() {
        bail!("--listen {listen} is not a loopback address; the emulator serves plain http, so listen on 127.0.0.1 (the real clients send credentials over http only to loopback)");
    }
    let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("the listener has no address")?;
    // Before anything is answered: a stop signal from then on is a graceful stop.
    let stop = stop_signal()?;
    let session = open(env, "sim serve").await?;
    let kept = keep_audit(&session);
    if let Err(e) = kept {
        return session.finish(Err(e));
    }
    let store = Arc::downgrade(&session.store);
    let flush: trellis_sim::SharedFlush = Arc::new(move || match store.upgrade() {
        Some(store) => store.flush().map_err(|e| e.to_string()),
        None => Err("the state dir was closed".to_string()),
    });
    let router = trellis_sim_http::flush_before_answer(
        trellis_sim_http::both(
            trellis_sim_http::SimServer::new(session.sim.clone()),
            trellis_sim_http::gce::GceServer::new(session.gce.clone()),
        ),
        flush,
    );
    println!(
        "serving the simulated clouds of {} on http://{addr} (ARM and GCE REST); Ctrl-C or SIGTERM stops",
        env.sim_shown(&env.location()?)
    );
    let served = axum::serve(listener, router).with_graceful_shutdown(stop).await.context("the emulator stopped");
    let audited = served.and_then(|()| {
        // Writes what a failed keep left in memory, and flushes the reads' entries.
        session.sim.persist_audit(&session.store.tree(trellis_cli::ops::SIM_AUDIT_TREE)?)?;
        session.gce.persist_audit(&session.store.tree(trellis_cli::ops::SIM_GCE_AUDIT_TREE)?)?;
        Ok(())
    });
    session.finish(audited.map(|()| 0))
}

/// Keeps the served clouds' audit logs in the state dir's audit trees as the calls are made (the
/// trees `trellis sim audit` reads; see [`trellis_sim::ArmSim::keep_audit`]).
fn keep_audit(session: &Session) -> Result<()> {
    session.sim.keep_audit(session.store.tree(trellis_cli::ops::SIM_AUDIT_TREE)?)?;
    session.gce.keep_audit(session.store.tree(trellis_cli::ops::SIM_GCE_AUDIT_TREE)?)?;
    Ok(())
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM, which both stop the emulator gracefully. The handlers
/// are installed when this is called, so a signal that arrives before the future is polled counts.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle Ctrl-C (SIGINT)")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}
