//! Shared helpers for the scenario tests: one scenario directory per acceptance ID under
//! `tests/scenarios/<provider>/<ID>-<slug>/` with `shoot.yaml` (or several manifests), an optional
//! `world.yaml` and `expect.yaml`, the steps and expectations the data-driven driver
//! (`tests/tests/scenarios.rs`, module [`expect`]) runs.
//!
//! A [`Scenario`] owns a fresh state dir with the simulated cloud inside, and drives exactly what
//! the CLI drives (`trellis_engine::ops`).

pub mod expect;

use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;
use trellis_engine::ops::{self, ApplyOp, ApplyOptions, ApplyReport, Quiet, Session, ShootPlan};
use trellis_planner::cloud::{Call, CloudWrite, Op};
use trellis_planner::retry::RetryPolicy;
use trellis_plans::{Node, Ownership, Plan, PlanSet};
use trellis_sim::{ArmSim, DnsSim, GceSim};

pub fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// Every scenario directory, `tests/scenarios/<provider>/<ID>-<slug>/`, sorted.
pub fn all_scenario_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for provider in sorted_dirs(&scenarios_dir()) {
        dirs.extend(sorted_dirs(&provider));
    }
    dirs
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found
}

/// The directory of a scenario, found by its ID prefix: `gcp/A1` under `gcp/`, a bare ID (`A1`) under
/// `azure/` (acceptance IDs repeat across the providers' specs).
pub fn scenario_dir(id: &str) -> PathBuf {
    let (provider, id) = id.split_once('/').unwrap_or(("azure", id));
    let prefix = format!("{id}-");
    let mut found: Vec<PathBuf> = sorted_dirs(&scenarios_dir().join(provider))
        .into_iter()
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    assert_eq!(found.len(), 1, "exactly one scenario directory for {id}: {found:?}");
    found.remove(0)
}

pub struct Scenario {
    pub dir: PathBuf,
    pub state: TempDir,
    pub session: Session,
}

impl Scenario {
    /// A fresh state dir; the scenario's `world.yaml`, if any, is synced into the simulated cloud.
    pub fn new(id: &str) -> Scenario {
        let dir = scenario_dir(id);
        let world = dir.join("world.yaml");
        Scenario::with_world(dir, world.exists().then_some(world))
    }

    pub fn with_world(dir: PathBuf, world: Option<PathBuf>) -> Scenario {
        let state = tempfile::tempdir().expect("temp dir");
        let (mut session, _) = Session::open(state.path(), "test", world.as_deref()).expect("open session");
        session.retry = RetryPolicy::immediate(4);
        Scenario { dir, state, session }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The simulated ARM cloud (Azure shoots).
    pub fn sim(&self) -> &ArmSim {
        self.session.sim::<ArmSim>().expect("the session has the simulated ARM cloud")
    }

    /// The simulated GCE cloud (GCP shoots).
    pub fn gce(&self) -> &GceSim {
        self.session.sim::<GceSim>().expect("the session has the simulated GCE cloud")
    }

    /// The simulated DNS (domains plans).
    pub fn dns(&self) -> &DnsSim {
        self.session.sim::<DnsSim>().expect("the session has the simulated DNS")
    }

    /// The cloud Azure shoots talk to (the simulated ARM cloud, unless replaced).
    pub fn azure_cloud(&self) -> Arc<dyn CloudWrite> {
        Arc::clone(self.session.cloud(trellis_providers::azure::PROVIDER_TYPE).expect("Azure is registered"))
    }

    /// Azure shoots talk to `cloud` instead (e.g. a wrapper of the simulated ARM cloud).
    pub fn use_azure_cloud(&mut self, cloud: Arc<dyn CloudWrite>) {
        self.session.use_cloud(trellis_providers::azure::PROVIDER_TYPE, cloud, None);
    }

    /// The account of Azure shoots: the simulated cloud's subscription.
    pub fn subscription(&self) -> &str {
        self.session.account(trellis_providers::azure::PROVIDER_TYPE).expect("Azure is registered")
    }

    /// Re-syncs a world file into the simulated clouds (an out-of-band change).
    pub fn sync_world(&self, file: &str) {
        let world = self.session.registry.load_world(&self.file(file)).expect("world file");
        self.session.sync_world(&world).expect("world syncs");
    }

    /// A resource as its simulated cloud returns it: a GCE selfLink path (`projects/…`) from the
    /// GCE simulator, a DNS id (`/dns/zones/…`, `/seeds/…/dnsrecords/…`) from the simulated DNS, an
    /// ARM id from the ARM one.
    pub fn get_now(&self, id: &str) -> Option<serde_json::Value> {
        if id.starts_with("projects/") {
            self.gce().get_now(id)
        } else if id.parse::<trellis_sim::dns::DnsId>().is_ok() {
            self.dns().get_now(id)
        } else {
            self.sim().get_now(id)
        }
    }

    pub async fn plan_files(&self, files: &[&str]) -> Result<Vec<ShootPlan>> {
        let paths: Vec<PathBuf> = files.iter().map(|f| self.file(f)).collect();
        Ok(ops::plan_files(&self.session, &paths, false, None).await?.plans)
    }

    /// Plans `shoot.yaml`.
    pub async fn plan(&self) -> Result<Plan> {
        self.plan_file("shoot.yaml").await
    }

    pub async fn plan_file(&self, file: &str) -> Result<Plan> {
        let mut plans = self.plan_files(&[file]).await?;
        Ok(plans.remove(0).planned.plan)
    }

    /// Plans and applies the given manifests.
    pub async fn apply_files(&self, files: &[&str]) -> Result<ApplyReport> {
        let plans = self.plan_files(files).await?;
        self.apply_plans(plans, ApplyOp::Apply).await
    }

    pub async fn apply(&self) -> Result<ApplyReport> {
        self.apply_files(&["shoot.yaml"]).await
    }

    pub async fn apply_plans(&self, plans: Vec<ShootPlan>, operation: ApplyOp) -> Result<ApplyReport> {
        let opts = ApplyOptions::new(10, operation);
        ops::apply(&self.session, plans, &opts, &mut Quiet).await
    }

    pub async fn destroy_files(&self, files: &[&str]) -> Result<ApplyReport> {
        let paths: Vec<PathBuf> = files.iter().map(|f| self.file(f)).collect();
        let plans = ops::plan_files(&self.session, &paths, true, None).await?.plans;
        self.apply_plans(plans, ApplyOp::Destroy).await
    }

    pub fn exists(&self, id: &str) -> bool {
        self.get_now(id).is_some()
    }
}

/// The node whose address ends with `suffix` (exactly one).
pub fn node<'a>(plan: &'a Plan, suffix: &str) -> &'a Node {
    let found: Vec<&Node> = plan.nodes.iter().filter(|n| n.address.ends_with(suffix)).collect();
    assert_eq!(
        found.len(),
        1,
        "one node ending in {suffix}, got {:?}",
        plan.nodes.iter().map(|n| &n.address).collect::<Vec<_>>()
    );
    found[0]
}

/// Writes in `calls` whose target is (or is inside) one of `ids`.
pub fn writes_to<'a>(calls: &'a [Call], ids: &[String]) -> Vec<&'a Call> {
    calls
        .iter()
        .filter(|c| c.op == Op::Write)
        .filter(|c| {
            let t = c.target.to_ascii_lowercase();
            ids.iter().any(|id| {
                let id = id.to_ascii_lowercase();
                t == id || t.starts_with(&format!("{id}/"))
            })
        })
        .collect()
}

/// The ids of every user-owned node in the plans.
pub fn user_owned(plans: &[&Plan]) -> Vec<String> {
    plans
        .iter()
        .flat_map(|p| p.nodes.iter())
        .filter(|n| n.ownership() == Ownership::User)
        .filter_map(|n| n.id.clone())
        .collect()
}

/// Text rendering without colour, for snapshots; the workspace lineage (a random UUID) reads `<lineage>`.
pub fn text(plan: &Plan) -> String {
    let mut plan = plan.clone();
    if plan.prior.lineage.is_some() {
        plan.prior.lineage = Some("<lineage>".to_string());
        // After an apply, the objects as read carry the versions (etags) the cloud gave the apply's
        // writes, numbered in the order a parallel apply happened to make them: the digest shown is
        // that of the rest of the body, which the same inputs always give.
        for n in &mut plan.nodes {
            n.observed = None;
        }
        plan.digest = plan.body_digest();
    }
    trellis_plans::render::text(
        &PlanSet::new(vec![plan]),
        &trellis_plans::render::TextOptions { color: false, verbose: true },
    )
}

/// The plans of a fleet, in the order they were planned.
pub fn plans_of(plans: &[ShootPlan]) -> Vec<&Plan> {
    plans.iter().map(|p| &p.planned.plan).collect()
}

/// Every node of a plan trellis makes has a reason code, one its action may carry
/// (`ReasonCode::actions`, the table in docs/usage/reviewing-plans.md). The scenario driver checks
/// it on every plan and destroy plan of every scenario.
pub fn check_reason_codes(plan: &Plan) -> anyhow::Result<()> {
    for n in &plan.nodes {
        let Some(code) = n.reason.code() else {
            anyhow::bail!("plan of {}: node {} has no reason code ({:?})", plan.shoot, n.address, n.reason.detail());
        };
        if !code.actions().contains(&n.action()) {
            anyhow::bail!(
                "plan of {}: node {} is `{}` with reason code `{code}`, which only {:?} carry",
                plan.shoot,
                n.address,
                n.action().as_str(),
                code.actions()
            );
        }
    }
    Ok(())
}
