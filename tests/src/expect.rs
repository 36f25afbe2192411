//! Scenarios as data: the `expect.yaml` of a scenario directory and the one driver that runs it.
//!
//! A scenario is a directory `tests/scenarios/<provider>/<ID>-<slug>/` holding its inputs (Shoot
//! manifests, `world.yaml` for the simulated cloud) and `expect.yaml`: a list of steps, each an
//! operation (what the CLI does: plan, apply, destroy, or an out-of-band change of the cloud) and
//! what must then be true. A new provider or acceptance ID adds a directory, not test code.
//!
//! ```yaml
//! # Spec acceptance A1: managed VNet and subnet, no NAT gateway.
//! world: world.yaml            # optional; default: world.yaml when the directory has one
//! steps:
//!   - plan: [shoot.yaml]       # plan these manifests as one fleet
//!     snapshot: plan           # text rendering == snapshots/<name>.snap (insta)
//!     summary: {create: 5}     # subset of the fleet's summary
//!     every_node: {ownership: managed}
//!     nodes:                   # by address suffix (exactly one node matches), JSON subset
//!       .shoot--dev--alpha-nodes: {action: create}
//!     artifacts: {allow_egress: true}
//!   - apply: [shoot.yaml]
//!     ok: true
//!     writes: 5                # cloud writes the step made
//!   - plan: [shoot.yaml]
//!     no_changes: true
//!     writes: 0
//! ```
//!
//! Besides plan, plan_destroy, apply, destroy and world, a step may be `runtime:` (a runtime writer of
//! the simulated cloud acting on the last applied shoot: `service`, `service_deleted`, `node`,
//! `node_deleted`, `bastion`, `bastion_deleted`; its status is matched by `report`; for a GCP shoot
//! the GCE writers of `trellis sim gce`, where `node` and `bastion` take a `zone:`) or
//! `forbid_writes: [substring]` (a revoked permission: such writes get 403 from then on) or
//! `latency: {call_ms, write_ms}` (the simulated cloud's answers take that long from then on).
//!
//! Domains (GEP-0066) scenarios pass Seeds beside their Shoots (`plan: [seed.yaml, shoot.yaml]`), say
//! `feature_gates: MutableShootDomains=true` at the top (the gates of every step), pick a shoot's
//! domains plan with `shoot: <technical id>+domains`, and read the simulated DNS: `cloud:`, `gone:` and
//! `unchanged:` take DNS ids (`/dns/zones/Z/records/NAME/TYPE`, `/seeds/S/namespaces/NS/dnsrecords/N`),
//! and a step's calls include its record-set writes (each a call of its own).
//!
//! Every step may say `error: [..]` (the step must fail, its error containing each string; a failed
//! plan must write nothing), `no_state: true` (no shoot was recorded in state), `writes: N`, `reads: N`,
//! `no_status: [http status]` (no call of the step was answered so),
//! `writes_only_to: [substring]` (every write's target contains one), `cloud: {id: subset}` (live
//! resources after the step; an id starting at `/resourceGroups/` is in the scenario's subscription),
//! `gone: [id]`, `none_exist: [substring]` (no live resource's id or GCE selfLink path contains one), `unchanged: [id]` (byte-identical before and after the
//! step, etag included) and `preserved_except: substring` (every resource that existed before the
//! step and whose id lacks the substring still exists and was never written). Plan steps add
//! `summary`, `no_changes`, `document` (subset of each plan document), `every_node`, `node_rules: [{when: subset, then: subset}]`, `nodes`,
//! `absent_nodes`, `artifacts` (the first plan's, or `shoot: NAME` picks one), `warnings` (substrings,
//! each found in some warning) and `snapshot`. Apply and destroy steps add `ok`, `writes_to` (id
//! suffixes that must be written), `no_writes_to_user_resources` (no write to any resource the
//! previous plan calls user-owned) and `report` (subset of `apply --output json`).
//!
//! JSON subsets: an object matches when each expected key matches; an array when it has the same
//! length and each element matches; anything else when equal. An object with one `$`-key is a
//! matcher: `{$ends_with: s}`, `{$contains: s}`, `{$in_order: [s, ..]}` (substrings of a string, in
//! that order), `{$len: n}` (array length), `{$some: v}` (some element matches v), `{$all: [v, ..]}`
//! (matches each), `{$not: v}` (does not match v). Names are the plan JSON's
//! (the contract users see), so expectations survive refactorings of the Rust types.

use crate::Scenario;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use trellis_planner::cloud::{Call, Op};

/// `expect.yaml`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The world file synced into the simulated cloud before the first step.
    #[serde(default)]
    pub world: Option<String>,
    /// `--feature-gates` of every step (`MutableShootDomains=true`); default: every gate off.
    #[serde(default)]
    pub feature_gates: Option<String>,
    pub steps: Vec<Step>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Step {
    // --- the operation: exactly one ---
    #[serde(default)]
    pub plan: Option<Vec<String>>,
    /// Plans the deletion of the given shoots.
    #[serde(default)]
    pub plan_destroy: Option<Vec<String>>,
    #[serde(default)]
    pub apply: Option<Vec<String>>,
    #[serde(default)]
    pub destroy: Option<Vec<String>>,
    /// Syncs a world file into the simulated cloud: a change made outside trellis.
    #[serde(default)]
    pub world: Option<String>,
    /// Runs a simulated runtime writer of the cloud against the last applied shoot, configured from
    /// what that apply rendered (Azure: the CCM and the bastion controller; see [`Runtime`]).
    #[serde(default)]
    pub runtime: Option<Runtime>,
    /// From this step on, every write whose target contains one of these strings is refused with
    /// 403 (a revoked permission).
    #[serde(default)]
    pub forbid_writes: Option<Vec<String>>,
    /// From this step on, the simulated cloud answers every call after `call_ms` and takes
    /// `write_ms` more for every write (ARM's long-running operations).
    #[serde(default)]
    pub latency: Option<Latency>,

    // --- expectations ---
    #[serde(default)]
    pub error: Option<Vec<String>>,
    #[serde(default)]
    pub writes: Option<usize>,
    /// No cloud call of the step was answered with one of these HTTP statuses (e.g. 409: no
    /// `AnotherOperationInProgress`, not even one retried away).
    #[serde(default)]
    pub no_status: Vec<u16>,
    /// Cloud reads (GETs and lists) the step made.
    #[serde(default)]
    pub reads: Option<usize>,
    #[serde(default)]
    pub cloud: BTreeMap<String, Value>,
    #[serde(default)]
    pub gone: Vec<String>,
    /// No live resource's id contains any of these strings.
    #[serde(default)]
    pub none_exist: Vec<String>,
    /// Which shoot (technical id; a domains plan: `<technical id>+domains`) `artifacts`, `nodes`,
    /// `every_node`, `absent_nodes` and `warnings` look at; default: every planned shoot's nodes, the
    /// first shoot's artifacts.
    #[serde(default)]
    pub shoot: Option<String>,
    #[serde(default)]
    pub summary: Option<Value>,
    #[serde(default)]
    pub no_changes: Option<bool>,
    #[serde(default)]
    pub every_node: Option<Value>,
    #[serde(default)]
    pub node_rules: Vec<NodeRule>,
    /// Subset of the plan document itself (e.g. `mode`), of the chosen shoot(s).
    #[serde(default)]
    pub document: Option<Value>,
    #[serde(default)]
    pub no_state: bool,
    #[serde(default)]
    pub writes_only_to: Vec<String>,
    #[serde(default)]
    pub unchanged: Vec<String>,
    #[serde(default)]
    pub preserved_except: Option<String>,
    #[serde(default)]
    pub nodes: BTreeMap<String, Value>,
    #[serde(default)]
    pub absent_nodes: Vec<String>,
    #[serde(default)]
    pub artifacts: Option<Value>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default)]
    pub snapshot: Option<String>,
    #[serde(default)]
    pub ok: Option<bool>,
    #[serde(default)]
    pub writes_to: Vec<String>,
    #[serde(default)]
    pub no_writes_to_user_resources: bool,
    #[serde(default)]
    pub report: Option<Value>,
}

/// Simulated latency (`latency:` step).
#[derive(Deserialize, Debug, Default, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    #[serde(default)]
    pub call_ms: u64,
    #[serde(default)]
    pub write_ms: u64,
}

/// A runtime writer's action: Azure's or GCE's simulated CCM and bastion controller (`trellis sim`,
/// `trellis sim gce`), whichever cloud the last applied shoot lives in.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Runtime {
    /// A Service of type LoadBalancer (upstream `EnsureLoadBalancer`). GCE: `port` is the node port,
    /// the annotation `cloud.google.com/load-balancer-type: Internal` makes it an internal one.
    Service {
        name: String,
        #[serde(default = "default_namespace")]
        namespace: String,
        #[serde(default = "default_port")]
        port: u16,
        #[serde(default = "default_protocol")]
        protocol: String,
        #[serde(default)]
        annotations: BTreeMap<String, String>,
    },
    /// The Service deleted (upstream `EnsureLoadBalancerDeleted`).
    ServiceDeleted {
        name: String,
        #[serde(default = "default_namespace")]
        namespace: String,
    },
    /// A node joins: the route controller writes its pod-CIDR route. GCE needs the node's `zone`
    /// (its VM is the route's next hop).
    Node {
        name: String,
        pod_cidr: String,
        #[serde(default)]
        zone: Option<String>,
    },
    NodeDeleted {
        name: String,
    },
    /// A bastion. Azure: public IP, NIC in the worker subnet, four NSG rules (egress to `workers`),
    /// disk and VM. GCE: the VM in `zone` with its NIC in the workers subnet and three tag-scoped
    /// firewall rules (the workers' range is read live from the subnet, so `workers` stays empty).
    Bastion {
        name: String,
        ingress: Vec<String>,
        #[serde(default)]
        workers: Vec<String>,
        #[serde(default)]
        zone: Option<String>,
    },
    BastionDeleted {
        name: String,
        #[serde(default)]
        zone: Option<String>,
    },
}

fn default_namespace() -> String {
    "default".to_string()
}
fn default_port() -> u16 {
    443
}
fn default_protocol() -> String {
    "TCP".to_string()
}

/// Every node that matches `when` must match `then`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct NodeRule {
    pub when: Value,
    pub then: Value,
}

/// One scenario directory, ready to run.
pub struct ScenarioCase {
    pub dir: PathBuf,
    /// `<provider>/<ID>-<slug>`: the test's name.
    pub name: String,
}

impl ScenarioCase {
    pub fn all() -> Vec<ScenarioCase> {
        crate::all_scenario_dirs()
            .into_iter()
            .map(|dir| {
                let provider = dir.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
                let name = format!(
                    "{}/{}",
                    provider.unwrap_or_default(),
                    dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
                );
                ScenarioCase { dir, name }
            })
            .collect()
    }

    /// Runs every step; the first failed expectation is the error, naming the step.
    pub fn run(&self) -> Result<(), String> {
        let path = self.dir.join("expect.yaml");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} (every scenario directory needs an expect.yaml)", path.display()))?;
        let expect: Expect = trellis_planner::yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(self.run_steps(&expect))
    }

    async fn run_steps(&self, expect: &Expect) -> Result<(), String> {
        let world = match &expect.world {
            Some(w) => Some(self.dir.join(w)),
            None => Some(self.dir.join("world.yaml")).filter(|w| w.exists()),
        };
        let mut s = Scenario::with_world(self.dir.clone(), world);
        if let Some(gates) = &expect.feature_gates {
            s.session.features = gates.parse().map_err(|e| format!("feature_gates: {e}"))?;
        }
        let mut memo = Memo::default();
        for (i, step) in expect.steps.iter().enumerate() {
            let ctx = format!("step {} ({})", i + 1, step.describe());
            run_step(self, &s, step, &mut memo).await.map_err(|e| format!("{ctx}: {e}"))?;
        }
        Ok(())
    }
}

impl Step {
    fn describe(&self) -> String {
        let (op, files) = if let Some(f) = &self.plan {
            ("plan", f.join(" "))
        } else if let Some(f) = &self.plan_destroy {
            ("plan_destroy", f.join(" "))
        } else if let Some(f) = &self.apply {
            ("apply", f.join(" "))
        } else if let Some(f) = &self.destroy {
            ("destroy", f.join(" "))
        } else if let Some(w) = &self.world {
            ("world", w.clone())
        } else if let Some(r) = &self.runtime {
            ("runtime", format!("{r:?}"))
        } else if let Some(f) = &self.forbid_writes {
            ("forbid_writes", f.join(" "))
        } else if let Some(l) = &self.latency {
            ("latency", format!("{l:?}"))
        } else {
            ("?", String::new())
        };
        format!("{op} {files}")
    }

    fn operations(&self) -> usize {
        [
            self.plan.is_some(),
            self.plan_destroy.is_some(),
            self.apply.is_some(),
            self.destroy.is_some(),
            self.world.is_some(),
            self.runtime.is_some(),
            self.forbid_writes.is_some(),
            self.latency.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }

    fn is_plan(&self) -> bool {
        self.plan.is_some() || self.plan_destroy.is_some()
    }
}

/// What a step produced, for its expectations.
enum Outcome {
    Plans(Vec<Value>),
    Report(Value),
    /// A runtime writer's status (JSON), matched by `report`.
    Runtime(Value),
    Synced,
}

/// What later steps need from earlier ones.
#[derive(Default)]
struct Memo {
    /// The plans of the last plan step (for `no_writes_to_user_resources`).
    plans: Vec<Value>,
    /// The last apply's report: the runtime writers are configured from its artifacts.
    applied: Option<Value>,
    forbidden: Vec<String>,
    latency: Latency,
    /// The nodes the GCE route controller knows (it syncs routes for all of them at once).
    gce_nodes: Vec<trellis_sim::gce::runtime::Node>,
}

async fn run_step(case: &ScenarioCase, s: &Scenario, step: &Step, memo: &mut Memo) -> Result<(), String> {
    if step.operations() != 1 {
        return Err(
            "a step is exactly one of plan, plan_destroy, apply, destroy, world, runtime, forbid_writes, latency"
                .to_string(),
        );
    }
    let unchanged_before: Vec<Option<Value>> = step.unchanged.iter().map(|id| s.get_now(&full_id(s, id))).collect();
    let preserved: Vec<String> = match &step.preserved_except {
        Some(except) => s
            .sim()
            .snapshot()
            .iter()
            .filter_map(|r| r["id"].as_str())
            .filter(|id| !id.contains(except.as_str()))
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    };
    let mark = s.sim().mark();
    let gce_mark = s.gce().calls().len();
    let dns_mark = s.dns().calls().len();
    let result: anyhow::Result<Outcome> = if let Some(files) = &step.plan {
        plan_json(s, files, false).await.map(Outcome::Plans)
    } else if let Some(files) = &step.plan_destroy {
        plan_json(s, files, true).await.map(Outcome::Plans)
    } else if let Some(files) = &step.apply {
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        s.apply_files(&files).await.map(|r| Outcome::Report(to_json(&r)))
    } else if let Some(files) = &step.destroy {
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        s.destroy_files(&files).await.map(|r| Outcome::Report(to_json(&r)))
    } else if let Some(runtime) = &step.runtime {
        let applied = memo.applied.as_ref().ok_or("runtime: needs an apply step before it")?;
        let applied = applied.clone();
        run_runtime(s, &applied, runtime, &mut memo.gce_nodes).await.map(Outcome::Runtime)
    } else if let Some(forbid) = &step.forbid_writes {
        memo.forbidden.extend(forbid.iter().cloned());
        s.sim().set_faults(faults(memo));
        Ok(Outcome::Synced)
    } else if let Some(latency) = step.latency {
        memo.latency = latency;
        s.sim().set_faults(faults(memo));
        Ok(Outcome::Synced)
    } else {
        let world = step.world.as_deref().unwrap_or_default();
        let world = s.session.registry.load_world(&s.file(world));
        world.and_then(|w| s.session.sync_world(&w)).map(|_| Outcome::Synced)
    };
    // The calls of every simulated cloud (a fleet may mix Azure and GCP shoots, and domains plans);
    // the simulated DNS's include its record-set writes.
    let mut calls = s.sim().calls_since(mark);
    calls.extend(s.gce().calls().into_iter().skip(gce_mark));
    calls.extend(s.dns().calls().into_iter().skip(dns_mark));
    let writes: Vec<&Call> = calls.iter().filter(|c| c.op == Op::Write).collect();

    let outcome = match (result, &step.error) {
        (Err(e), Some(want)) => {
            let msg = format!("{e:#}");
            for w in want {
                if !msg.contains(w.as_str()) {
                    return Err(format!("expected `{w}` in the error:\n{msg}"));
                }
            }
            if step.is_plan() && !writes.is_empty() {
                return Err(format!("a failed plan must write nothing, wrote {:?}", targets(&writes)));
            }
            None
        }
        (Err(e), None) => return Err(format!("failed: {e:#}")),
        (Ok(_), Some(want)) => return Err(format!("expected an error containing {want:?}, but the step succeeded")),
        (Ok(o), None) => Some(o),
    };

    if step.no_state {
        let stored = trellis_state::StateStore::list(&*s.session.store).map_err(|e| e.to_string())?;
        if !stored.is_empty() {
            return Err(format!("no_state: state holds {stored:?}"));
        }
    }
    if !step.writes_only_to.is_empty() {
        if let Some(c) = writes.iter().find(|c| !step.writes_only_to.iter().any(|w| c.target.contains(w.as_str()))) {
            return Err(format!("writes_only_to: unexpected write {} {}", c.method, c.target));
        }
    }
    for (id, before) in step.unchanged.iter().zip(&unchanged_before) {
        let after = s.get_now(&full_id(s, id));
        if after != *before {
            return Err(format!("unchanged: {id} changed:\nbefore: {before:?}\nafter:  {after:?}"));
        }
    }
    for id in &preserved {
        if !s.exists(id) {
            return Err(format!("preserved_except: {id} was deleted"));
        }
        if let Some(c) = writes.iter().find(|c| c.target.eq_ignore_ascii_case(id)) {
            return Err(format!("preserved_except: {id} was written ({})", c.method));
        }
    }
    if let Some(c) = calls.iter().find(|c| step.no_status.contains(&c.status)) {
        return Err(format!("no_status: {} {} answered {}", c.method, c.target, c.status));
    }
    if let Some(n) = step.reads {
        let reads: Vec<&Call> = calls.iter().filter(|c| c.op == Op::Read).collect();
        if reads.len() != n {
            return Err(format!("expected {n} cloud reads, got {}: {:?}", reads.len(), targets(&reads)));
        }
    }
    if let Some(n) = step.writes {
        if writes.len() != n {
            return Err(format!("expected {n} cloud writes, got {}: {:?}", writes.len(), targets(&writes)));
        }
    }
    match outcome {
        Some(Outcome::Plans(plans)) => {
            check_plans(case, step, &plans)?;
            memo.plans = plans;
        }
        Some(Outcome::Report(report)) => {
            check_report(step, &report, &writes, &memo.plans)?;
            if step.apply.is_some() && report["ok"] == Value::Bool(true) {
                memo.applied = Some(report);
            }
        }
        Some(Outcome::Runtime(status)) => {
            if let Some(want) = &step.report {
                subset(want, &status).map_err(|e| format!("report: {e}"))?;
            }
        }
        Some(Outcome::Synced) | None => {}
    }
    for (id, want) in &step.cloud {
        let live = s.get_now(&full_id(s, id)).ok_or_else(|| format!("cloud: {id} does not exist"))?;
        subset(want, &live).map_err(|e| format!("cloud: {id}: {e}"))?;
    }
    for id in &step.gone {
        if s.exists(&full_id(s, id)) {
            return Err(format!("gone: {id} still exists"));
        }
    }
    if !step.none_exist.is_empty() {
        // Both simulated clouds: ARM resources by id, GCE resources by selfLink path (`projects/…`;
        // a GCE `id` is a number).
        let arm = s.sim().snapshot().into_iter().map(|r| r["id"].as_str().unwrap_or_default().to_string());
        let gce = s.gce().snapshot().into_iter().map(|r| {
            let link = r["selfLink"].as_str().unwrap_or_default();
            link.find("projects/").map_or(link, |i| &link[i..]).to_string()
        });
        for id in arm.chain(gce) {
            if let Some(w) = step.none_exist.iter().find(|w| id.contains(w.as_str())) {
                return Err(format!("none_exist: {id} exists (contains `{w}`)"));
            }
        }
    }
    Ok(())
}

/// Runs one runtime writer's action, configured from the last apply's artifacts (azure.json values,
/// CCM flags), as `trellis sim` does; for a GCP shoot, from its applied network, as `trellis sim gce`
/// does.
async fn run_runtime(
    s: &Scenario,
    applied: &Value,
    runtime: &Runtime,
    gce_nodes: &mut Vec<trellis_sim::gce::runtime::Node>,
) -> anyhow::Result<Value> {
    use std::sync::Arc;
    use trellis_planner::cloud::CloudWrite;
    use trellis_sim::runtime::{Bastion, Ccm};
    let artifacts = &applied["shoots"][0]["artifacts"];
    let shoot = applied["shoots"][0]["shoot"].as_str().unwrap_or_default();
    if let Some(network) = gce_network(s, shoot)? {
        let routes = artifacts["ccm_flags"]["configure-cloud-routes"].as_bool().unwrap_or(true);
        return run_gce_runtime(s, &network, routes, runtime, gce_nodes).await;
    }
    let values = artifacts["cloud_provider_config"]["values"].as_object().cloned().unwrap_or_default();
    let routes = artifacts["ccm_flags"]["configure-cloud-routes"].as_bool().unwrap_or(false);
    let cloud: Arc<dyn CloudWrite> = Arc::new(s.sim().clone());
    let ccm = || Ccm::new(Arc::clone(&cloud), &values, routes);
    Ok(match runtime {
        Runtime::Service { name, namespace, port, protocol, annotations } => {
            let ccm = ccm()?;
            to_json(&ccm.ensure_load_balancer_service(namespace, name, *port, protocol, annotations, vec![]).await?)
        }
        Runtime::ServiceDeleted { name, namespace } => {
            ccm()?.ensure_load_balancer_deleted(namespace, name).await?;
            Value::Null
        }
        Runtime::Node { name, pod_cidr, .. } => to_json(&ccm()?.add_node(name, pod_cidr).await?),
        Runtime::NodeDeleted { name } => to_json(&ccm()?.remove_node(name).await?),
        Runtime::Bastion { name, ingress, workers, .. } => {
            let bastion = Bastion::new(Arc::clone(&cloud), &values)?;
            to_json(&bastion.create(name, ingress.clone(), workers).await?)
        }
        Runtime::BastionDeleted { name, .. } => {
            Bastion::new(Arc::clone(&cloud), &values)?.delete(name).await?;
            Value::Null
        }
    })
}

/// Where an applied GCP shoot lives (`None` for a shoot of another provider), from its workspace's
/// provider state, as `trellis sim gce` reads it.
fn gce_network(s: &Scenario, shoot: &str) -> anyhow::Result<Option<trellis_sim::gce::runtime::ShootNetwork>> {
    use trellis_providers::gcp::state::GcpState;
    use trellis_state::StateStore as _;
    let Some(ws) = s.session.store.load(shoot)? else { return Ok(None) };
    let Ok(Some(gcp)) = ws.provider_state::<GcpState>() else { return Ok(None) };
    let Some(net) = gcp.applied_network(shoot) else { return Ok(None) };
    Ok(Some(trellis_sim::gce::runtime::ShootNetwork {
        project: s.session.account(trellis_providers::gcp::PROVIDER_TYPE).unwrap_or_default().to_string(),
        region: net.region,
        network: net.network,
        workers_subnet: net.workers_subnet,
        technical_id: shoot.to_string(),
    }))
}

/// The GCE runtime writers (`trellis sim gce`): the CCM's routes and Service firewall rules, the
/// bastion controller.
async fn run_gce_runtime(
    s: &Scenario,
    network: &trellis_sim::gce::runtime::ShootNetwork,
    routes: bool,
    runtime: &Runtime,
    nodes: &mut Vec<trellis_sim::gce::runtime::Node>,
) -> anyhow::Result<Value> {
    use trellis_sim::gce::runtime::{BastionSpec, LbService, Node};
    let gce = s.gce();
    let zone = |zone: &Option<String>, what: &str| {
        zone.clone().ok_or_else(|| anyhow::anyhow!("runtime: a GCE {what} needs `zone:`"))
    };
    let service = |name: &str, namespace: &str| LbService {
        namespace: namespace.to_string(),
        name: name.to_string(),
        ..Default::default()
    };
    Ok(match runtime {
        Runtime::Service { name, namespace, port, protocol, annotations } => {
            let internal = annotations
                .get("cloud.google.com/load-balancer-type")
                .is_some_and(|t| t.eq_ignore_ascii_case("internal"));
            let svc = LbService {
                ports: vec![(protocol.to_ascii_uppercase(), *port)],
                internal,
                annotations: annotations.clone().into_iter().collect(),
                ..service(name, namespace)
            };
            let st = gce.ccm_ensure_service(network, &svc).await?;
            serde_json::json!({"ip": st.ip, "firewalls": st.firewalls, "address": st.address})
        }
        Runtime::ServiceDeleted { name, namespace } => {
            gce.ccm_delete_service(network, &service(name, namespace)).await?;
            Value::Null
        }
        Runtime::Node { name, pod_cidr, zone: z } => {
            nodes.retain(|n| n.name != *name);
            nodes.push(Node { name: name.clone(), zone: zone(z, "node")?, pod_cidrs: vec![pod_cidr.clone()] });
            if routes {
                gce.ccm_sync_routes(network, nodes).await?;
            }
            serde_json::json!({"routes": routes, "nodes": nodes.len()})
        }
        Runtime::NodeDeleted { name } => {
            nodes.retain(|n| n.name != *name);
            if routes {
                gce.ccm_sync_routes(network, nodes).await?;
            }
            serde_json::json!({"routes": routes, "nodes": nodes.len()})
        }
        Runtime::Bastion { name, ingress, workers, zone: z } => {
            if !workers.is_empty() {
                anyhow::bail!(
                    "runtime: a GCE bastion reads the workers' range from the workers subnet; drop `workers:`"
                );
            }
            let b = BastionSpec { name: name.clone(), zone: zone(z, "bastion")?, ingress: ingress.clone() };
            let st = gce.bastion_ensure(network, &b).await?;
            serde_json::json!({"external_ip": st.external_ip, "internal_ip": st.internal_ip})
        }
        Runtime::BastionDeleted { name, zone: z } => {
            let b = BastionSpec { name: name.clone(), zone: zone(z, "bastion")?, ingress: Vec::new() };
            gce.bastion_delete(network, &b).await?;
            Value::Null
        }
    })
}

/// The simulated cloud's faults as the steps so far set them: latency, and 403 for every write whose
/// target contains a forbidden string.
fn faults(memo: &Memo) -> trellis_sim::Faults {
    use std::time::Duration;
    use trellis_sim::{Fault, FaultRule, Faults, Matcher};
    Faults {
        latency: Duration::from_millis(memo.latency.call_ms),
        write_latency: Duration::from_millis(memo.latency.write_ms),
        rules: memo
            .forbidden
            .iter()
            .map(|t| FaultRule {
                matcher: Matcher { op: Some(Op::Write), ..Matcher::target_contains(t) },
                nth: None,
                times: usize::MAX,
                fault: Fault::Forbidden,
            })
            .collect(),
    }
}

/// A resource id; one that starts at `/resourceGroups/` is in the scenario's subscription.
fn full_id(s: &Scenario, id: &str) -> String {
    if id.starts_with("/resourceGroups/") {
        format!("/subscriptions/{}{id}", s.subscription())
    } else {
        id.to_string()
    }
}

async fn plan_json(s: &Scenario, files: &[String], destroy: bool) -> anyhow::Result<Vec<Value>> {
    let paths: Vec<PathBuf> = files.iter().map(|f| s.file(f)).collect();
    let plans = trellis_engine::ops::plan_files(&s.session, &paths, destroy, None).await?.plans;
    let plans = crate::plans_of(&plans);
    for p in &plans {
        crate::check_reason_codes(p)?;
    }
    Ok(plans.into_iter().map(|p| to_json(&p)).collect())
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("plans and reports serialise to JSON")
}

fn targets(calls: &[&Call]) -> Vec<String> {
    calls.iter().map(|c| format!("{} {}", c.method, c.target)).collect()
}

fn check_plans(case: &ScenarioCase, step: &Step, plans: &[Value]) -> Result<(), String> {
    let chosen: Vec<&Value> = match &step.shoot {
        Some(name) => {
            // A domains plan is picked by its workspace, `<technical id>+domains`.
            let workspace = |p: &Value| match p["provider"].as_str() {
                Some("domains") => format!("{}+domains", p["shoot"].as_str().unwrap_or_default()),
                _ => p["shoot"].as_str().unwrap_or_default().to_string(),
            };
            let p = plans.iter().find(|p| workspace(p) == *name).ok_or_else(|| format!("no plan for shoot {name}"))?;
            vec![p]
        }
        None => plans.iter().collect(),
    };
    let nodes: Vec<&Value> = chosen.iter().flat_map(|p| p["nodes"].as_array().into_iter().flatten()).collect();

    if let Some(want) = &step.summary {
        let mut sum = serde_json::Map::new();
        for p in plans {
            if let Some(obj) = p["summary"].as_object() {
                for (k, v) in obj {
                    let prev = sum.get(k).and_then(Value::as_u64).unwrap_or(0);
                    sum.insert(k.clone(), Value::from(prev + v.as_u64().unwrap_or(0)));
                }
            }
        }
        subset(want, &Value::Object(sum)).map_err(|e| format!("summary: {e}"))?;
    }
    if let Some(want) = step.no_changes {
        let changes = plans.iter().any(has_changes);
        if changes == want {
            return Err(format!(
                "expected {}, got:\n{}",
                if want { "no changes" } else { "changes" },
                plans.iter().map(text).collect::<String>()
            ));
        }
    }
    if let Some(want) = &step.document {
        for p in &chosen {
            subset(want, p).map_err(|e| format!("document of {}: {e}", p["shoot"]))?;
        }
    }
    if let Some(want) = &step.every_node {
        for n in &nodes {
            subset(want, n).map_err(|e| format!("every_node: {}: {e}", n["address"]))?;
        }
    }
    for rule in &step.node_rules {
        for n in nodes.iter().filter(|n| subset(&rule.when, n).is_ok()) {
            subset(&rule.then, n).map_err(|e| format!("node_rules: when {}: {}: {e}", rule.when, n["address"]))?;
        }
    }
    for (suffix, want) in &step.nodes {
        let found: Vec<&&Value> =
            nodes.iter().filter(|n| n["address"].as_str().is_some_and(|a| a.ends_with(suffix.as_str()))).collect();
        if found.len() != 1 {
            return Err(format!(
                "nodes: exactly one node ending in `{suffix}` expected, found {}; addresses: {:?}",
                found.len(),
                nodes.iter().map(|n| n["address"].as_str().unwrap_or_default()).collect::<Vec<_>>()
            ));
        }
        subset(want, found[0]).map_err(|e| format!("nodes: {suffix}: {e}"))?;
    }
    for suffix in &step.absent_nodes {
        if let Some(n) = nodes.iter().find(|n| n["address"].as_str().is_some_and(|a| a.ends_with(suffix.as_str()))) {
            return Err(format!("absent_nodes: {} is in the plan", n["address"]));
        }
    }
    if let Some(want) = &step.artifacts {
        let p = chosen.first().ok_or("artifacts: no plan")?;
        subset(want, &p["artifacts"]).map_err(|e| format!("artifacts: {e}"))?;
    }
    let warnings: Vec<&str> =
        chosen.iter().flat_map(|p| p["warnings"].as_array().into_iter().flatten()).filter_map(Value::as_str).collect();
    for w in &step.warnings {
        if !warnings.iter().any(|have| have.contains(w.as_str())) {
            return Err(format!("warnings: none contains `{w}`; warnings: {warnings:#?}"));
        }
    }
    if let Some(name) = &step.snapshot {
        let rendered: String = chosen.iter().map(|p| text(p)).collect();
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(case.dir.join("snapshots"));
        settings.set_prepend_module_to_snapshot(false);
        settings.set_input_file(case.dir.join("expect.yaml"));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            settings.bind(|| insta::assert_snapshot!(name.as_str(), rendered));
        }));
        if outcome.is_err() {
            return Err(format!("snapshot `{name}` differs (see the diff above; INSTA_UPDATE=always accepts it)"));
        }
    }
    Ok(())
}

fn has_changes(plan: &Value) -> bool {
    let sum = &plan["summary"];
    ["create", "update", "replace", "delete"].iter().any(|k| sum[*k].as_u64().unwrap_or(0) > 0)
}

/// The plan's text rendering without colour; the random lineage reads `<lineage>`.
fn text(plan: &Value) -> String {
    let plan: trellis_plans::Plan = serde_json::from_value(plan.clone()).expect("a plan's JSON reads back");
    crate::text(&plan)
}

fn check_report(step: &Step, report: &Value, writes: &[&Call], last_plans: &[Value]) -> Result<(), String> {
    if let Some(want) = step.ok {
        if report["ok"] != Value::Bool(want) {
            return Err(format!("expected ok: {want}, report: {report:#}"));
        }
    }
    for suffix in &step.writes_to {
        if !writes.iter().any(|c| c.target.to_ascii_lowercase().ends_with(&suffix.to_ascii_lowercase())) {
            return Err(format!("writes_to: nothing written to `…{suffix}`; writes: {:?}", targets(writes)));
        }
    }
    if step.no_writes_to_user_resources {
        let user: Vec<String> = last_plans
            .iter()
            .flat_map(|p| p["nodes"].as_array().into_iter().flatten())
            .filter(|n| n["ownership"] == "user")
            .filter_map(|n| n["id"].as_str().map(str::to_ascii_lowercase))
            .collect();
        let hit: Vec<&&Call> = writes.iter().filter(|c| user.contains(&c.target.to_ascii_lowercase())).collect();
        if !hit.is_empty() {
            return Err(format!(
                "no_writes_to_user_resources: wrote {:?}",
                hit.iter().map(|c| &c.target).collect::<Vec<_>>()
            ));
        }
    }
    if let Some(want) = &step.report {
        subset(want, report).map_err(|e| format!("report: {e}"))?;
    }
    Ok(())
}

/// Whether `actual` has everything `expected` says (see the module docs).
pub fn subset(expected: &Value, actual: &Value) -> Result<(), String> {
    let mut path = String::new();
    subset_at(expected, actual, &mut path).map_err(|e| if path.is_empty() { e } else { format!("at {path}: {e}") })
}

fn subset_at(expected: &Value, actual: &Value, path: &mut String) -> Result<(), String> {
    if let Some((op, arg)) = matcher(expected) {
        return match_op(op, arg, actual, path);
    }
    match (expected, actual) {
        (Value::Object(want), Value::Object(have)) => {
            for (k, w) in want {
                let len = path.len();
                let _ = write!(path, "/{k}");
                let h = have.get(k).unwrap_or(&Value::Null);
                subset_at(w, h, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        (Value::Array(want), Value::Array(have)) => {
            if want.len() != have.len() {
                return Err(format!("expected {} elements, got {}: {}", want.len(), have.len(), compact(actual)));
            }
            for (i, (w, h)) in want.iter().zip(have).enumerate() {
                let len = path.len();
                let _ = write!(path, "/{i}");
                subset_at(w, h, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        (w, h) if w == h => Ok(()),
        (w, h) => Err(format!("expected {}, got {}", compact(w), compact(h))),
    }
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 400 {
        format!("{}…", &s[..s.char_indices().nth(400).map(|(i, _)| i).unwrap_or(s.len())])
    } else {
        s
    }
}

/// `{"$op": arg}`: a matcher instead of a value.
fn matcher(v: &Value) -> Option<(&str, &Value)> {
    let obj = v.as_object()?;
    if obj.len() != 1 {
        return None;
    }
    let (k, arg) = obj.iter().next()?;
    k.strip_prefix('$').map(|op| (op, arg))
}

fn match_op(op: &str, arg: &Value, actual: &Value, path: &mut String) -> Result<(), String> {
    let text = || actual.as_str().ok_or_else(|| format!("${op}: expected a string, got {}", compact(actual)));
    let want = || arg.as_str().ok_or_else(|| format!("${op} takes a string"));
    match op {
        "ends_with" => {
            let (have, w) = (text()?, want()?);
            have.ends_with(w).then_some(()).ok_or_else(|| format!("expected …{w}, got {have:?}"))
        }
        "contains" => {
            let (have, w) = (text()?, want()?);
            have.contains(w).then_some(()).ok_or_else(|| format!("expected {w:?} in {have:?}"))
        }
        "in_order" => {
            let have = text()?;
            let mut rest = have;
            for w in arg.as_array().ok_or("$in_order takes a list of strings")? {
                let w = w.as_str().ok_or("$in_order takes a list of strings")?;
                let at = rest.find(w).ok_or_else(|| format!("expected {w:?} (in this order) in {have:?}"))?;
                rest = &rest[at + w.len()..];
            }
            Ok(())
        }
        "len" => {
            let n = arg.as_u64().ok_or("$len takes a number")?;
            let have = actual.as_array().map(Vec::len);
            (have == Some(n as usize))
                .then_some(())
                .ok_or_else(|| format!("expected {n} elements, got {}", compact(actual)))
        }
        "some" => {
            let items = actual.as_array().ok_or_else(|| format!("$some: expected a list, got {}", compact(actual)))?;
            items
                .iter()
                .any(|item| subset_at(arg, item, &mut String::new()).is_ok())
                .then_some(())
                .ok_or_else(|| format!("no element matches {}: {}", compact(arg), compact(actual)))
        }
        "all" => {
            for m in arg.as_array().ok_or("$all takes a list")? {
                subset_at(m, actual, path)?;
            }
            Ok(())
        }
        "not" => match subset_at(arg, actual, path) {
            Ok(()) => Err(format!("expected anything but {}", compact(arg))),
            Err(_) => Ok(()),
        },
        _ => Err(format!("unknown matcher ${op} (known: $ends_with, $contains, $in_order, $len, $some, $all, $not)")),
    }
}

#[cfg(test)]
mod tests {
    use super::subset;
    use serde_json::json;

    #[test]
    fn objects_match_on_the_keys_they_name_and_arrays_on_every_element() {
        let have = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}});
        assert!(subset(&json!({"b": {"d": "x"}}), &have).is_ok());
        assert!(subset(&json!({"b": {"c": [1, 2]}}), &have).is_ok());
        let err = subset(&json!({"b": {"c": [1]}}), &have).unwrap_err();
        assert!(err.contains("at /b/c: expected 1 elements, got 2"), "{err}");
        let err = subset(&json!({"a": 2}), &have).unwrap_err();
        assert_eq!(err, "at /a: expected 2, got 1");
        // A key the actual value lacks reads as null.
        assert!(subset(&json!({"z": null}), &have).is_ok());
        assert!(subset(&json!({"z": 0}), &have).is_err());
    }

    #[test]
    fn matchers() {
        let have = json!({"id": "/a/b/c", "list": [1, 2, 3], "text": "k1: v\nk2: v\n"});
        assert!(subset(&json!({"id": {"$ends_with": "/b/c"}}), &have).is_ok());
        assert!(subset(&json!({"id": {"$ends_with": "/b"}}), &have).is_err());
        assert!(subset(&json!({"id": {"$contains": "/b/"}}), &have).is_ok());
        assert!(subset(&json!({"list": {"$len": 3}}), &have).is_ok());
        assert!(subset(&json!({"list": {"$len": 2}}), &have).is_err());
        assert!(subset(&json!({"text": {"$in_order": ["k1:", "k2:"]}}), &have).is_ok());
        assert!(subset(&json!({"text": {"$in_order": ["k2:", "k1:"]}}), &have).is_err());
        assert!(subset(&json!({"list": {"$some": 2}}), &have).is_ok());
        assert!(subset(&json!({"list": {"$some": 4}}), &have).is_err());
        assert!(subset(&json!({"id": {"$not": "/x"}}), &have).is_ok());
        assert!(subset(&json!({"id": {"$not": "/a/b/c"}}), &have).is_err());
        let err = subset(&json!({"id": {"$nope": 1}}), &have).unwrap_err();
        assert!(err.contains("unknown matcher $nope"), "{err}");
    }
}
