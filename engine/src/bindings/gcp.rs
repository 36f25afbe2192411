//! GCP's cloud binding: the simulated GCE cloud (`GceSim`, trees `sim/gce` and `sim/gce-audit`, the
//! world file's `gcp:` section, alias `gce:`; its shoots live in the world file's `gcp.project`, else
//! in the simulated project `trellis-sim`, unless `--project` names another), the GCE client for `--cloud gcp` (`--project`, the service-account key
//! from the environment), GCE REST for `trellis sim serve`, and the simulated GCE cloud's runtime
//! writers, `trellis sim gce …` (CCM routes and Services, the bastion controller), configured from
//! the shoot's applied network in state.

use crate::backend::Backend;
use crate::binding::{
    parse_annotations, Chosen, CloudBinding, CloudChoice, ExportedSection, Read, ServeOptions, Served, ServiceRef,
    SimCtx, SimOutput, SimTrees, Simulator,
};
use crate::ops::Session;
use anyhow::{bail, Context as _, Result};
use clap::{FromArgMatches as _, Subcommand};
use serde_json::Value;
use std::sync::Arc;
use trellis_planner::cloud::{Call, CloudRead, CloudWrite};
use trellis_plans::Artifacts;
use trellis_providers::gcp::state::GcpState;
use trellis_sim::gce::runtime::{BastionSpec, LbService, Node as GceNode, ShootNetwork};
use trellis_sim::{Faults, GceSim, SharedFlush, SimError, SyncReport, WorldFile, WorldSection};
use trellis_state::StateStore as _;

/// GCP's binding.
pub struct Gcp;

/// GCP's binding, as the registry holds it.
pub static GCP: Gcp = Gcp;

/// The GCP project of the shoots planned against the simulated GCE cloud (world files declare their
/// resources in it: `projects/trellis-sim/…`), unless the world file's `gcp.project` or `--project`
/// names another.
pub const SIM_PROJECT: &str = "trellis-sim";

impl Simulator for GceSim {
    fn cloud(&self) -> Arc<dyn CloudWrite> {
        Arc::new(self.clone())
    }

    fn share_flush(&self, flush: SharedFlush, _store: &Backend) -> Result<(), SimError> {
        GceSim::share_flush(self, flush);
        Ok(())
    }

    fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        GceSim::sync_world(self, world)
    }

    fn persist_audit(&self, file: &trellis_sim::AuditFile) -> Result<usize, SimError> {
        GceSim::persist_audit(self, file)
    }

    fn keep_audit(&self, file: trellis_sim::AuditFile) -> Result<usize, SimError> {
        GceSim::keep_audit(self, file)
    }

    fn calls(&self) -> Vec<Call> {
        GceSim::calls(self)
    }

    fn get_now(&self, id: &str) -> Option<Value> {
        GceSim::get_now(self, id)
    }

    fn set_faults(&self, faults: Faults) {
        GceSim::set_faults(self, faults)
    }
}

#[async_trait::async_trait]
impl CloudBinding for Gcp {
    fn provider_type(&self) -> &'static str {
        trellis_providers::gcp::PROVIDER_TYPE
    }

    fn sim_name(&self) -> &'static str {
        "gce"
    }

    fn trees(&self) -> SimTrees {
        SimTrees { cloud: "sim/gce", audit_file: "audit/gce.jsonl", legacy_audit: "sim/gce-audit" }
    }

    fn world_section(&self) -> Option<&'static dyn WorldSection> {
        Some(&trellis_sim::gce::world::SECTION)
    }

    fn open_sim(&self, tree: sled::Tree, _world: Option<&WorldFile>) -> Result<Arc<dyn Simulator>, SimError> {
        Ok(Arc::new(GceSim::open(tree)?))
    }

    /// The world file's `gcp.project` (kept in the simulated cloud), else `trellis-sim`.
    fn sim_account(&self, sim: &dyn Simulator) -> String {
        gce(sim).and_then(GceSim::project).unwrap_or_else(|| SIM_PROJECT.to_string())
    }

    fn real_cloud(&self) -> Option<&'static str> {
        Some("gcp")
    }

    fn args(&self) -> Vec<clap::Arg> {
        vec![clap::Arg::new("project")
            .long("project")
            .value_name("ID")
            .env("GOOGLE_CLOUD_PROJECT")
            .global(true)
            .help("The GCP project the shoots live in. With --cloud gcp, credentials come from the service-account key file named by GOOGLE_APPLICATION_CREDENTIALS; with the simulated cloud it names the simulated project (default trellis-sim)")]
    }

    /// `--project` names the simulated project too.
    fn sim_flags(&self) -> &'static [&'static str] {
        &["project"]
    }

    /// `--cloud gcp`: the GCE client (google-cloud-compute-v1) in `--project`, signed in with the
    /// service-account key file named by GOOGLE_APPLICATION_CREDENTIALS. With `--cloud sim`,
    /// `--project` names the simulated project.
    async fn choose(&self, choice: &CloudChoice<'_>) -> Result<Chosen> {
        use trellis_gcp_client::{Credentials, GcpClient, Url};
        let project = choice.flag("project").map(str::trim).unwrap_or_default();
        match choice.cloud {
            "gcp" => {}
            "sim" if !project.is_empty() => return Ok(Chosen::Sim(Some(project_id(project)?))),
            _ => return Ok(Chosen::Sim(None)),
        }
        if project.is_empty() {
            bail!("--cloud gcp needs a project: pass --project ID or set GOOGLE_CLOUD_PROJECT");
        }
        let project = project_id(project)?;
        let project = project.as_str();
        let endpoint = match choice.endpoint {
            Some(url) => Some(Url::parse(url.trim()).map_err(|e| {
                anyhow::anyhow!("--endpoint '{url}' is not a URL ({e}); pass e.g. https://compute.googleapis.com or http://127.0.0.1:PORT of an emulator")
            })?),
            None => None,
        };
        let client =
            GcpClient::new(project, endpoint, Credentials::FromEnv).await.context("--cloud gcp cannot sign in")?;
        Ok(Chosen::Real(Arc::new(client), project.to_string()))
    }

    /// The `gcp:` section: `project` and the resources (`export_gce`).
    async fn export_world(
        &self,
        read: Vec<Read>,
        cloud: &dyn CloudRead,
        account: &str,
    ) -> Result<Vec<ExportedSection>> {
        Ok(vec![export_gce(read, cloud, account).await?])
    }

    fn http_api(&self) -> Option<&'static str> {
        Some("GCE")
    }

    /// GCE pages by the request's `maxResults` (default 500), so `--page-size` is not its.
    fn serve(&self, sim: &dyn Simulator, _opts: &ServeOptions) -> Option<Served> {
        let router = trellis_sim_http::gce::GceServer::new(gce(sim)?.clone()).router();
        Some(Served { claims: Some(trellis_sim_http::is_gce_path), router })
    }

    fn sim_commands(&self) -> Vec<clap::Command> {
        GcpSim::augment_subcommands(clap::Command::new("sim")).get_subcommands().cloned().collect()
    }

    async fn run_sim(
        &self,
        session: &Session,
        _name: &str,
        matches: &clap::ArgMatches,
        ctx: &SimCtx<'_>,
    ) -> Result<SimOutput> {
        let GcpSim::Gce(command) = GcpSim::from_arg_matches(matches)?;
        let gce = session
            .sim_of(self.provider_type())
            .and_then(gce)
            .context("bug: the session has no simulated GCE cloud; please report")?;
        let command = match command {
            GceCommand::Write(write) => write,
            GceCommand::Show { id } => {
                let Some(value) = gce.get_now(&id) else {
                    bail!("{id}: not found in the simulated GCE cloud in {}", ctx.sim_where);
                };
                return Ok(SimOutput::Shown(serde_json::to_string_pretty(&value)?));
            }
        };
        let mark = gce.calls().len();
        let result = gce_write(session, gce, command, ctx.state).await;
        Ok(SimOutput::Wrote { calls: gce.calls().into_iter().skip(mark).collect(), result })
    }
}

/// The simulated GCE cloud behind `sim`.
fn gce(sim: &dyn Simulator) -> Option<&GceSim> {
    (sim as &dyn std::any::Any).downcast_ref()
}

/// `--project` (or GOOGLE_CLOUD_PROJECT), checked against GCP's rule for project ids: 6 to 30
/// lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen. With the
/// simulated cloud it names the simulated project (default `trellis-sim`).
pub(crate) fn project_id(project: &str) -> Result<String> {
    let ok = (6..=30).contains(&project.len())
        && project.starts_with(|c: char| c.is_ascii_lowercase())
        && !project.ends_with('-')
        && project.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        bail!("--project '{project}' is not a GCP project id (6 to 30 lowercase letters, digits and hyphens, starting with a letter, not ending with a hyphen), e.g. acme-prod");
    }
    Ok(project.to_string())
}

/// `trellis sim gce …`.
#[derive(Subcommand)]
enum GcpSim {
    /// The simulated GCE cloud's runtime writers (GCP shoots): CCM routes and Services, the bastion.
    #[command(subcommand)]
    Gce(GceCommand),
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
        /// The shoot's technical id, `shoot--<project>--<name>`.
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
        /// The shoot's technical id, `shoot--<project>--<name>`.
        #[arg(long, value_name = "ID")]
        shoot: String,
        /// The name it was created with.
        #[arg(long)]
        name: String,
        /// The zone of the bastion VM (e.g. europe-west1-b).
        #[arg(long)]
        zone: String,
        /// Who may SSH in. Repeatable.
        #[arg(long = "operator-cidr", value_name = "CIDR", required = true)]
        operator_cidrs: Vec<String>,
    },
    /// Delete a bastion: its rules and VM.
    Delete {
        /// The shoot's technical id, `shoot--<project>--<name>`.
        #[arg(long, value_name = "ID")]
        shoot: String,
        /// The name it was created with.
        #[arg(long)]
        name: String,
        /// The zone of the bastion VM (e.g. europe-west1-b).
        #[arg(long)]
        zone: String,
    },
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
        project: session.account(GCP.provider_type()).unwrap_or(SIM_PROJECT).to_string(),
        region: net.region,
        network: net.network,
        workers_subnet: net.workers_subnet,
        technical_id: shoot.to_string(),
    };
    Ok((network, routes))
}

async fn gce_write(session: &Session, gce: &GceSim, command: GceWrite, state: &str) -> Result<String> {
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

/// `trellis world export`'s `gcp:` section (the design contract's name; `project` is the account):
/// every resource read, as GCE (or IAM) returned it, one entry a resource (by its `selfLink`, a
/// service account by its `name`; the last answer of one read twice), sorted by that path. A Cloud
/// NAT is read as an entry of its router and declared there: the router is the resource. Completed,
/// through `cloud`, with what the resources reference (a subnetwork's, router's, firewall's or
/// route's network, an address's subnetwork, a NAT's addresses and subnetworks, a NAT's router),
/// until nothing is missing; one that reads as absent is left as it is.
async fn export_gce(read: Vec<Read>, cloud: &dyn CloudRead, project: &str) -> Result<ExportedSection> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut found: BTreeMap<String, Value> = BTreeMap::new();
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    for r in read {
        if let Some(router) = r.asked.as_deref().and_then(|a| gce_path(a)?.split_once("/nats/")).map(|(r, _)| r) {
            wanted.insert(router.to_string());
            continue;
        }
        if let Some(key) = gce_key(&r.value) {
            found.insert(key, r.value);
        }
    }
    let mut absent: BTreeSet<String> = BTreeSet::new();
    loop {
        let mut missing: BTreeMap<String, String> = BTreeMap::new();
        for path in &wanted {
            missing.insert(path.clone(), path.clone());
        }
        wanted.clear();
        for (key, value) in &found {
            for needed in gce_needs(value) {
                missing.entry(needed).or_insert_with(|| key.clone());
            }
        }
        missing.retain(|k, _| !found.contains_key(k) && !absent.contains(k));
        if missing.is_empty() {
            break;
        }
        for (path, by) in missing {
            match cloud.get(&path).await {
                Ok(Some(value)) => {
                    found.insert(gce_key(&value).unwrap_or_else(|| path.clone()), value);
                    // An answer under another path than asked: the asked one is not read again.
                    absent.insert(path);
                }
                Ok(None) => {
                    absent.insert(path);
                }
                Err(e) => bail!("cannot read {path}, which the world file needs for {by}: {e}"),
            }
        }
    }
    let mut body = serde_json::Map::new();
    body.insert("project".to_string(), Value::String(project.to_string()));
    let resources = found.len();
    body.insert("resources".to_string(), Value::Array(found.into_values().collect()));
    Ok(ExportedSection { key: "gcp", body: Value::Object(body), resources })
}

/// The path of a GCE reference or selfLink from `projects/` on (a full URL's host and API version
/// dropped), `None` when it names no project's resource.
fn gce_path(link: &str) -> Option<&str> {
    if let Some(rest) = link.strip_prefix("projects/") {
        return Some(link).filter(|_| !rest.is_empty());
    }
    link.find("/projects/").map(|i| &link[i + 1..])
}

/// A GCE resource's path (`selfLink`), or a service account's `name`.
fn gce_key(value: &Value) -> Option<String> {
    let link = value.get("selfLink").and_then(Value::as_str);
    let sa = value.get("name").and_then(Value::as_str).filter(|n| n.contains("/serviceAccounts/"));
    link.or(sa).and_then(gce_path).map(str::to_string)
}

/// The resources a GCE resource references, which a world file declares beside it.
fn gce_needs(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut one = |v: Option<&Value>| {
        out.extend(v.and_then(Value::as_str).and_then(gce_path).map(str::to_string));
    };
    one(value.get("network"));
    one(value.get("subnetwork"));
    // A network lists the subnetworks in it (GCE computes the list from what exists): each is
    // declared too, so the network reads back offline as GCE answered it.
    if value.get("kind").and_then(Value::as_str) == Some("compute#network") {
        for subnet in value.get("subnetworks").and_then(Value::as_array).into_iter().flatten() {
            one(Some(subnet));
        }
    }
    for nat in value.get("nats").and_then(Value::as_array).into_iter().flatten() {
        for ip in nat.get("natIps").and_then(Value::as_array).into_iter().flatten() {
            one(Some(ip));
        }
        for subnet in nat.get("subnetworks").and_then(Value::as_array).into_iter().flatten() {
            one(subnet.get("name"));
        }
    }
    out
}
