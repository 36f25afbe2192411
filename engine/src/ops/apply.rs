//! Apply: the executor over a fleet's plans, the workspace committed after every node.

use crate::backend::Backend;
use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use trellis_planner::cloud::{Audited, Call, CloudWrite};
use trellis_planner::exec::{self, ExecOptions, NodeResult, Observer};
use trellis_planner::write::WriteLocks;
use trellis_plans::{Action, Node, Plan};
use trellis_providers::provider::Orphan;
use trellis_state::{Acquired, LockInfo, LockTarget, LockWait, StateStore, StoredResource, Workspace};

use super::*;

/// What an apply run does: carry out plans (and record what they applied), or carry out destroy plans
/// (and empty the shoots' workspaces). Named in the report, the state's history and its locks.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ApplyOp {
    Apply,
    Destroy,
}

impl ApplyOp {
    /// The name the report, the history and the locks give it (`apply`, `destroy`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyOp::Apply => "apply",
            ApplyOp::Destroy => "destroy",
        }
    }
}

/// What `apply --output json` prints.
#[derive(Serialize, Debug)]
pub struct ApplyReport {
    pub operation: ApplyOp,
    pub shoots: Vec<ShootReport>,
    /// Every cloud call made, in order.
    pub calls: Vec<Call>,
    pub ok: bool,
}

#[derive(Serialize, Debug)]
pub struct ShootReport {
    pub shoot: String,
    /// What was done to it: its plan's apply, or destroy (a destroy, or a pruned shoot's in an apply).
    pub operation: ApplyOp,
    pub ok: bool,
    /// What became of the shoot: applied (every node done), failed, or skipped (not started).
    pub status: ShootStatus,
    /// Why the shoot failed or was skipped, when no node's error says it (its plan was refused, its
    /// workspace moved on, its lock is held, an earlier shoot failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub nodes: Vec<NodeResult>,
    pub calls: Vec<Call>,
    /// Artifacts rendered from the cloud as it is after the apply (null for destroy or on failure).
    pub artifacts: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// After a destroy in user-managed-egress mode: what the CCM and bastion controller left on the
    /// user's NSG and route table (never deleted by trellis), with the command to prune each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub orphans: Vec<Orphan>,
}

/// What became of one shoot of an apply or destroy.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ShootStatus {
    /// Every node completed and the workspace records it.
    Applied,
    /// A node failed, or the shoot could not be started (its [`ShootReport::error`] says why).
    Failed,
    /// Not started: an earlier shoot failed and the run was not told to keep going
    /// ([`ApplyOptions::keep_going`]).
    Skipped,
}

impl ShootReport {
    /// A shoot that was not applied: refused before any node ran (`Failed`) or never started (`Skipped`).
    pub fn not_applied(shoot: String, operation: ApplyOp, status: ShootStatus, error: String) -> ShootReport {
        ShootReport {
            shoot,
            operation,
            ok: false,
            status,
            error: Some(error),
            nodes: Vec::new(),
            calls: Vec::new(),
            artifacts: None,
            warnings: Vec::new(),
            orphans: Vec::new(),
        }
    }
}

/// Called for every node as it starts and ends, for progress display.
pub trait Progress: Send {
    fn start(&mut self, _shoot: &str, _node: &Node) {}
    fn finish(&mut self, _shoot: &str, _node: &Node, _result: &NodeResult) {}
    fn message(&mut self, _line: &str) {}
}

/// No progress output.
pub struct Quiet;
impl Progress for Quiet {}

/// Persists state after every node, then tells the progress display.
struct Persist<'a> {
    store: &'a Backend,
    ws: &'a mut Workspace,
    operation: &'a str,
    progress: &'a mut dyn Progress,
}

impl Observer for Persist<'_> {
    fn started(&mut self, node: &Node) {
        self.progress.start(&self.ws.shoot, node);
    }

    fn finished(&mut self, node: &Node, result: &NodeResult) -> Result<(), String> {
        // State first: once a line says "created", the state has it.
        let committed = self.record(node, result);
        self.progress.finish(&self.ws.shoot, node, result);
        committed
    }
}

impl Persist<'_> {
    fn record(&mut self, node: &Node, result: &NodeResult) -> Result<(), String> {
        if !result.outcome.is_ok() {
            return Ok(());
        }
        let id = node.id.clone().unwrap_or_default();
        let changed = match node.action() {
            Action::Create | Action::Update | Action::Replace | Action::Verify | Action::Read | Action::Noop => {
                let kept = StoredResource { kind: node.kind, id, ownership: node.ownership() };
                self.ws.record_resource(&node.address, kept)
            }
            Action::Delete => self.ws.forget_resource(&node.address, &id),
            Action::Skip => false,
        };
        if changed {
            // Returns once the commit is durable; commits of other shoots made meanwhile share its flush,
            // and so do the simulated cloud's writes made before it (this node's among them).
            blocking(|| self.store.commit(self.ws, self.operation).map_err(|e| e.to_string()))?;
        } else if node.action().is_write() {
            // Nothing new to record, but the node wrote to the cloud: its writes are durable before the
            // node counts as done (the simulated cloud leaves its flushes to the state's).
            blocking(|| self.store.flush().map_err(|e| e.to_string()))?;
        }
        Ok(())
    }
}

/// Runs `f`, which blocks on the state store (a commit waits for the flush that makes it durable),
/// without holding up the other shoots: on a multi-threaded runtime (the binary's) the worker thread
/// first hands its other tasks to another thread (`block_in_place`), so the shoots' commits wait
/// together and share a flush; on a current-thread runtime it just runs.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Options for apply and destroy.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    pub parallelism: usize,
    /// What the command does; each shoot's plan says whether it is a destroy ([`Plan::destroy`]: an
    /// apply may carry the destroy plans of pruned shoots).
    pub operation: ApplyOp,
    /// Start every shoot even after one failed (`--keep-going`); otherwise no shoot starts after the
    /// first failure (those in flight finish) and the rest are reported skipped.
    pub keep_going: bool,
    /// Where the plans were made: in this run (`apply -f`) or read from a saved plan file; says what
    /// a workspace that moved on since its plan means.
    pub planned: PlannedIn,
}

impl ApplyOptions {
    /// `operation` with `parallelism`, stopping at the first failure, of plans made in this run.
    pub fn new(parallelism: usize, operation: ApplyOp) -> ApplyOptions {
        ApplyOptions { parallelism, operation, keep_going: false, planned: PlannedIn::ThisRun }
    }
}

/// Where the plans an apply carries out were made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlannedIn {
    /// By this command (`apply -f`, `destroy`), moments before.
    ThisRun,
    /// Read from a plan file (`apply PLAN`).
    SavedPlan,
}

/// Applies planned shoots concurrently; at most `parallelism` nodes are in flight across the whole
/// fleet (one shared limit), so a fleet apply takes about as long as its busiest shoots, not their sum.
/// Each shoot runs as its own task (at most `parallelism` shoots at a time), so that the state commits
/// of concurrent shoots wait together and share one flush; their progress comes back here over a
/// channel, each node's end only after its state is durable. Reports come back in plan order.
pub async fn apply(
    session: &Session,
    plans: Vec<ShootPlan>,
    opts: &ApplyOptions,
    progress: &mut dyn Progress,
) -> Result<ApplyReport> {
    let parallelism = opts.parallelism.max(1);
    let ctx = ApplyCtx {
        store: Arc::clone(&session.store),
        clouds: Arc::new(session.clouds()),
        opts: opts.clone(),
        lock_wait: session.lock_wait.clone(),
        limit: Arc::new(tokio::sync::Semaphore::new(parallelism)),
        write_locks: Arc::new(
            session
                .registry
                .entries()
                .iter()
                .map(|e| (e.provider.type_name(), Arc::new(WriteLocks::new(e.provider.ids()))))
                .collect(),
        ),
    };
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let mut results: Vec<Option<ShootReport>> = plans.iter().map(|_| None).collect();
    let mut waiting = plans.into_iter().enumerate();
    let mut running = tokio::task::JoinSet::new();
    // The first shoot that failed, when the run stops at a failure: no shoot starts after it.
    let mut stopped: Option<String> = None;
    loop {
        while running.len() < parallelism && stopped.is_none() {
            let Some((i, p)) = waiting.next() else { break };
            let (ctx, mut shoot_progress) = (ctx.clone(), SendProgress(events.clone()));
            running.spawn(async move { (i, apply_one(&ctx, p, &mut shoot_progress).await) });
        }
        tokio::select! {
            biased;
            Some(event) = received.recv() => event.show(progress),
            joined = running.join_next() => match joined {
                None => break,
                Some(Ok((i, result))) => {
                    if !result.ok && !opts.keep_going && stopped.is_none() {
                        stopped = Some(result.shoot.clone());
                    }
                    results[i] = Some(result);
                }
                Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Some(Err(e)) => bail!("applying a shoot was interrupted: {e}"),
            },
        }
    }
    drop(events);
    while let Some(event) = received.recv().await {
        event.show(progress);
    }
    if let Some(first) = &stopped {
        for (i, p) in waiting {
            let why =
                format!("not started: {first} failed before it (--keep-going starts every shoot however others fare)");
            let operation = operation_of(&p, opts);
            results[i] = Some(ShootReport::not_applied(p.workspace.shoot, operation, ShootStatus::Skipped, why));
        }
    }
    let mut report = ApplyReport { operation: opts.operation, shoots: Vec::new(), calls: Vec::new(), ok: true };
    for shoot_report in results.into_iter().flatten() {
        report.ok &= shoot_report.ok;
        report.calls.extend(shoot_report.calls.iter().cloned());
        report.shoots.push(shoot_report);
    }
    Ok(report)
}

/// What applying one shoot needs from the session, owned, so that each shoot can run as its own task.
#[derive(Clone)]
struct ApplyCtx {
    store: Arc<Backend>,
    clouds: Arc<Clouds>,
    opts: ApplyOptions,
    /// `--lock-timeout`: how long each shoot waits for its workspace lock.
    lock_wait: LockWait,
    /// The fleet-wide limit of nodes in flight.
    limit: Arc<tokio::sync::Semaphore>,
    /// The fleet-wide write scopes, per provider (each under its provider's id scheme,
    /// [`Provider::ids`]): shoots may write subnets into one VNet, NATs into one router.
    write_locks: Arc<BTreeMap<&'static str, Arc<WriteLocks>>>,
}

/// A progress call of one shoot's task, shown by [`apply`] on the caller's display.
enum ProgressEvent {
    Start(String, Box<Node>),
    Finish(String, Box<Node>, Box<NodeResult>),
    Message(String),
}

impl ProgressEvent {
    fn show(self, progress: &mut dyn Progress) {
        match self {
            ProgressEvent::Start(shoot, node) => progress.start(&shoot, &node),
            ProgressEvent::Finish(shoot, node, result) => progress.finish(&shoot, &node, &result),
            ProgressEvent::Message(line) => progress.message(&line),
        }
    }
}

/// The progress display of one shoot's task: every call goes to [`apply`] in order. Sending fails
/// only when `apply` is gone, and then there is no display left to tell.
struct SendProgress(tokio::sync::mpsc::UnboundedSender<ProgressEvent>);

impl Progress for SendProgress {
    fn start(&mut self, shoot: &str, node: &Node) {
        let _ = self.0.send(ProgressEvent::Start(shoot.to_string(), Box::new(node.clone())));
    }
    fn finish(&mut self, shoot: &str, node: &Node, result: &NodeResult) {
        let event = ProgressEvent::Finish(shoot.to_string(), Box::new(node.clone()), Box::new(result.clone()));
        let _ = self.0.send(event);
    }
    fn message(&mut self, line: &str) {
        let _ = self.0.send(ProgressEvent::Message(line.to_string()));
    }
}

/// Applies one shoot under its workspace lock. A shoot that cannot be started or recorded (its lock
/// held, its workspace moved on, the state unreadable) is a failed shoot of the report, not the end
/// of the run: the other shoots' reports are kept.
async fn apply_one(ctx: &ApplyCtx, p: ShootPlan, progress: &mut dyn Progress) -> ShootReport {
    let (shoot, operation) = (p.workspace.shoot.clone(), operation_of(&p, &ctx.opts));
    match apply_one_locked(ctx, p, progress).await {
        Ok(report) => report,
        Err(e) => {
            let line = format!("{shoot}: {}", error_line(&e));
            progress.message(&line);
            ShootReport::not_applied(shoot, operation, ShootStatus::Failed, error_line(&e))
        }
    }
}

/// `e` on one line: its messages, outermost first, each once.
fn error_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(text.as_str())) {
            parts.push(text);
        }
    }
    parts.join(": ").replace('\n', "; ")
}

// The lock attempt returns the state crate's `StateError` as it is (the state crate allows the same lint).
#[allow(clippy::result_large_err)]
async fn apply_one_locked(ctx: &ApplyCtx, p: ShootPlan, progress: &mut dyn Progress) -> Result<ShootReport> {
    let shoot = p.workspace.shoot.clone();
    let store: &dyn StateStore = ctx.store.as_ref();
    let lock = LockInfo::here(operation_of(&p, &ctx.opts).as_str());
    let mut warnings = Vec::new();
    let target = LockTarget::Workspace(shoot.clone());
    let locked = blocking(|| ctx.lock_wait.acquire(&target, || store.lock(&shoot, &lock)).map_err(anyhow::Error::from));
    if let Acquired::BrokeStale(dead) = locked? {
        let line = format!("{shoot}: took over a stale lock from a process that is gone ({dead})");
        progress.message(&line);
        warnings.push(line);
    }
    let result = apply_locked(ctx, p, progress, warnings).await;
    blocking(|| store.unlock(&shoot, &lock.id).map_err(anyhow::Error::from))?;
    result
}

async fn apply_locked(
    ctx: &ApplyCtx,
    p: ShootPlan,
    progress: &mut dyn Progress,
    mut warnings: Vec<String>,
) -> Result<ShootReport> {
    let plan = &p.planned.plan;
    let opts = &ctx.opts;
    let operation = operation_of(&p, opts);
    let destroy = operation == ApplyOp::Destroy;
    let store: &dyn StateStore = ctx.store.as_ref();
    let workspace = p.workspace.shoot.clone();
    let mut ws = store.load(&workspace)?.unwrap_or_else(|| Workspace::new(&workspace));
    match opts.planned {
        PlannedIn::SavedPlan => check_prior(plan, &ws)?,
        PlannedIn::ThisRun => check_moved_on(plan, &ws, operation)?,
    }
    if !destroy {
        // Every commit of this apply carries the manifest it applies: a shoot whose manifest is later
        // removed from the inputs can still be destroyed from state (`--prune`).
        ws.applied_manifest = plan.source.as_ref().map(|s| s.shoot.clone());
    }
    let (provider_cloud, cloud_ctx) = ctx.clouds.of(p.provider)?;
    let write_locks = match ctx.write_locks.get(p.provider.type_name()) {
        Some(locks) => Arc::clone(locks),
        None => bail!("bug: no write locks for provider {}; please report", p.provider.type_name()),
    };
    let audited = Arc::new(Audited::new(Arc::clone(provider_cloud)));
    let cloud: Arc<dyn CloudWrite> = audited.clone();
    let exec_opts = ExecOptions {
        parallelism: opts.parallelism,
        retry: cloud_ctx.retry.clone(),
        shared_limit: Some(Arc::clone(&ctx.limit)),
        write_locks,
    };
    let results = {
        let mut persist = Persist { store: ctx.store.as_ref(), ws: &mut ws, operation: operation.as_str(), progress };
        exec::execute(&plan.nodes, cloud, &exec_opts, &mut persist).await?
    };
    let mut ok = results.iter().all(|r| r.outcome.is_ok());
    let mut artifacts = None;
    let mut orphans = Vec::new();
    if ok && plan.is_partial() {
        // `--target`: as Terraform, only the targeted resources' records changed (each node's, as it
        // ran); the artifacts, the provider state and the workspace as a whole stay as they were.
        warnings.push(format!(
            "{}: applied changes may be incomplete: the plan was made with --target ({}), so changes the configuration asks for may have been left out, and the artifacts and the last-applied configuration were not recorded; run `trellis plan` to see what is left",
            plan.shoot,
            plan.targets.join(", ")
        ));
    } else if ok && destroy {
        match p.provider.orphans_after_destroy(p.shoot.as_ref(), audited.as_ref(), cloud_ctx).await {
            Ok(found) => orphans = found,
            Err(e) => warnings.push(format!("{}: the orphan report could not be made: {e}", plan.shoot)),
        }
    }
    if ok && plan.is_partial() {
        // Recorded node by node already.
    } else if ok && destroy && ws.serial == 0 {
        // Nothing was ever applied for this shoot: no workspace to empty.
    } else if ok && destroy {
        ws.resources.clear();
        ws.outputs = None;
        ws.provider_state = None;
        ws.applied_manifest = None;
        blocking(|| store.commit(&mut ws, operation.as_str()).map_err(anyhow::Error::from))?;
    } else if ok {
        // The resources are in place; the artifacts are re-rendered from the cloud as it is now
        // (public IP addresses are known only after apply). If that read fails, the state keeps the
        // resources but not the new config, so the next apply re-reads and records it.
        let after =
            p.provider.artifacts_after_apply(p.shoot.as_ref(), &p.planned.state, audited.as_ref(), cloud_ctx).await;
        match after {
            Ok(after) => {
                let value = serde_json::to_value(&after)?;
                let same = ws.outputs.as_ref() == Some(&value) && ws.provider_state.as_ref() == Some(&p.planned.state);
                ws.outputs = Some(value.clone());
                ws.provider_state = Some(p.planned.state.clone());
                let mut forgot = false;
                for (address, id) in &p.planned.forget {
                    forgot |= ws.forget_resource(address, id);
                }
                // A workspace left as it was is not committed: a no-op apply does not bump the serial
                // (which would make every saved plan of the shoot stale for nothing).
                if ws.serial == 0 || forgot || !same {
                    blocking(|| store.commit(&mut ws, operation.as_str()).map_err(anyhow::Error::from))?;
                }
                artifacts = Some(value);
            }
            Err(e) => {
                ok = false;
                warnings.push(format!(
                    "{}: every resource was applied, but reading the artifacts back failed: {e}; run `trellis apply` again to record them",
                    plan.shoot
                ));
            }
        }
    }
    let status = if ok { ShootStatus::Applied } else { ShootStatus::Failed };
    Ok(ShootReport {
        shoot: workspace,
        operation,
        ok,
        status,
        error: None,
        nodes: results,
        calls: audited.calls(),
        artifacts,
        warnings,
        orphans,
    })
}

/// What applying `p` does: its plan's destroy (a destroy, or a pruned shoot's in an apply) or apply.
fn operation_of(p: &ShootPlan, opts: &ApplyOptions) -> ApplyOp {
    if p.planned.plan.destroy || opts.operation == ApplyOp::Destroy {
        ApplyOp::Destroy
    } else {
        ApplyOp::Apply
    }
}

/// For plans made by this run: the workspace must be the version it planned against. Another trellis
/// run that committed to it between this run's plan and its lock (it applied, destroyed or repaired
/// the shoot) is said as such: nothing of this shoot's plan runs.
fn check_moved_on(plan: &Plan, ws: &Workspace, operation: ApplyOp) -> Result<()> {
    let moved =
        plan.prior.serial != ws.serial || (plan.prior.lineage.is_some() && plan.prior.lineage != ws.prior().lineage);
    if moved {
        bail!(
            "its workspace moved on while this run planned it: another trellis run committed to it (serial {} when planned, {} now), so nothing of this shoot was {}; run the command again to plan against what that run left",
            plan.prior.serial,
            ws.serial,
            if operation == ApplyOp::Destroy { "destroyed" } else { "applied" }
        );
    }
    Ok(())
}
