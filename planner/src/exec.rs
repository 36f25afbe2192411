//! The executor: walks the plan DAG with bounded parallelism.
//!
//! Per node: re-read the resource right before writing it, refuse if it moved since the plan, write
//! (through [`crate::write::Writer`]: under the re-read's etag, creates as creates, one write per
//! scope at a time), then hand the result to the [`Observer`] — which persists state — before any
//! dependent starts.
//! A failed node does not stop independent work; its dependents are skipped and say why.
//!
//! Architecture invariant: the executor dispatches on the node's [`Operation`]; `verify` and `read`
//! nodes run with a `&dyn CloudRead` only (no way to reach the write half); only create, update,
//! replace and delete of managed (or spec-sanctioned runtime) nodes touch [`CloudWrite`].
//! A failed node keeps the class of what went wrong ([`NodeError`]): the cloud error as the cloud
//! answered it, or the executor's own reason (stale since the plan, checks failed, state not committed).

use crate::cloud::{CloudError, CloudRead, CloudWrite};
use crate::diff::failed_checks;
use crate::graph::{GraphError, PlanGraph};
use crate::ids::IdScheme;
use crate::json;
use crate::retry::RetryPolicy;
use crate::write::{WriteLocks, Writer};
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::task::JoinSet;
use trellis_plans::{Action, Change, Check, Node, Operation};

#[derive(Clone, Debug)]
pub struct ExecOptions {
    /// Nodes of this plan in flight at once (Terraform's `-parallelism`, default 10).
    pub parallelism: usize,
    pub retry: RetryPolicy,
    /// A limit shared with other plans applied at the same time (a fleet): each node holds a permit
    /// while it runs, so the fleet as a whole never has more than that many nodes in flight.
    pub shared_limit: Option<Arc<tokio::sync::Semaphore>>,
    /// The per-scope write locks ([`crate::write`]); share one between plans applied together.
    pub write_locks: Arc<WriteLocks>,
}

impl ExecOptions {
    /// Ten nodes at a time, the default retries, no fleet-wide limit, write locks of the scheme `ids`
    /// (the provider's, [`crate::ids::IdScheme`]).
    pub fn new(ids: &'static dyn IdScheme) -> ExecOptions {
        ExecOptions {
            parallelism: 10,
            retry: RetryPolicy::default(),
            shared_limit: None,
            write_locks: Arc::new(WriteLocks::new(ids)),
        }
    }
}

/// How a node ended.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Written, verified or read.
    Done,
    /// Nothing to do (noop, skip).
    Unchanged,
    /// `error` (one line) and `failure` (its class and details), see [`NodeError`].
    Failed {
        #[serde(flatten)]
        error: NodeError,
    },
    /// Not run because something it depends on failed (or the apply was aborted).
    Skipped { because: String },
}

impl Outcome {
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Done | Outcome::Unchanged)
    }
}

/// Why a node failed. The apply report shows it as `"error"`, one line, and `"failure"`, an object
/// whose `class` a script can act on: the cloud's (`throttled`, `server`, `timeout`, `unreachable`,
/// `rejected` with ARM's `code`) or the executor's (`stale_since_plan`, `missing`, `verify_failed`,
/// `state_commit`, `refused`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NodeError {
    /// A cloud call failed (after retries, for the transient classes).
    #[error("{0}")]
    Cloud(#[from] CloudError),
    /// The live resource is not what the plan was made against; re-plan.
    #[error("{message}")]
    StaleSincePlan { message: String },
    /// A resource a verify or read node needs does not exist.
    #[error("{id} does not exist; {reason}")]
    Missing { id: String, reason: String },
    /// Checks of a verify node that the live resource fails, by message.
    #[error("{}", .failed.join("; "))]
    VerifyFailed { failed: Vec<String> },
    /// The node ran, but the state could not be persisted after it: the apply stops.
    #[error("state could not be persisted after this node: {message}")]
    StateCommit { message: String },
    /// The node was not run at all (a write without a cloud id).
    #[error("refusing to apply: {message}")]
    Refused { message: String },
    /// A create found a resource there that is not the one the plan creates (someone else's).
    #[error("{message}")]
    NotOurs { message: String },
}

impl NodeError {
    /// The class the report shows.
    pub fn class(&self) -> &'static str {
        match self {
            NodeError::Cloud(CloudError::Throttled { .. }) => "throttled",
            NodeError::Cloud(CloudError::Server { .. }) => "server",
            NodeError::Cloud(CloudError::Timeout { .. }) => "timeout",
            NodeError::Cloud(CloudError::Unreachable { .. }) => "unreachable",
            NodeError::Cloud(CloudError::Rejected { .. }) => "rejected",
            NodeError::Cloud(CloudError::PreconditionFailed { .. }) => "precondition_failed",
            NodeError::Cloud(CloudError::AlreadyExists { .. }) => "already_exists",
            NodeError::Cloud(CloudError::Conflict { .. }) => "conflict",
            NodeError::NotOurs { .. } => "not_ours",
            NodeError::StaleSincePlan { .. } => "stale_since_plan",
            NodeError::Missing { .. } => "missing",
            NodeError::VerifyFailed { .. } => "verify_failed",
            NodeError::StateCommit { .. } => "state_commit",
            NodeError::Refused { .. } => "refused",
        }
    }
}

/// The report's form of a [`NodeError`]: `{"error": "<one line>", "failure": {"class": …, …}}`.
impl Serialize for NodeError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Failure<'a> {
            class: &'static str,
            /// The cloud call's target (a resource id, or a list's parent and type).
            #[serde(skip_serializing_if = "Option::is_none")]
            target: Option<&'a str>,
            /// The HTTP status (408 for a client-side timeout, 0 for no answer at all).
            #[serde(skip_serializing_if = "Option::is_none")]
            status: Option<u16>,
            /// ARM's error code of a rejection.
            #[serde(skip_serializing_if = "Option::is_none")]
            code: Option<&'a str>,
            /// The cloud's message, or the reason in words.
            message: String,
            /// The messages of the failed checks (verify).
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            failed_checks: &'a [String],
        }
        #[derive(Serialize)]
        struct Report<'a> {
            error: String,
            failure: Failure<'a>,
        }
        let (target, code, message) = match self {
            NodeError::Cloud(CloudError::Rejected { target, code, message, .. }) => {
                (Some(target.as_str()), Some(code.as_str()), message.clone())
            }
            NodeError::Cloud(
                CloudError::Server { target, message, .. } | CloudError::Unreachable { target, message },
            ) => (Some(target.as_str()), None, message.clone()),
            NodeError::Cloud(CloudError::Conflict { target, code, message }) => {
                (Some(target.as_str()), Some(code.as_str()), message.clone())
            }
            NodeError::Cloud(
                e @ (CloudError::Throttled { target, .. }
                | CloudError::Timeout { target }
                | CloudError::PreconditionFailed { target, .. }
                | CloudError::AlreadyExists { target, .. }),
            ) => (Some(target.as_str()), None, e.to_string()),
            NodeError::StaleSincePlan { message }
            | NodeError::StateCommit { message }
            | NodeError::Refused { message }
            | NodeError::NotOurs { message } => (None, None, message.clone()),
            other => (None, None, other.to_string()),
        };
        let failure = Failure {
            class: self.class(),
            target,
            status: match self {
                NodeError::Cloud(e) => Some(e.status()),
                _ => None,
            },
            code,
            message,
            failed_checks: match self {
                NodeError::VerifyFailed { failed } => failed,
                _ => &[],
            },
        };
        Report { error: self.to_string(), failure }.serialize(serializer)
    }
}

/// What happened to one node.
#[derive(Serialize, Clone, Debug)]
pub struct NodeResult {
    pub address: String,
    pub action: Action,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Sees every node start and finish. `finished` runs before any dependent of the node starts; an
/// error from it (state could not be persisted) aborts the apply: nothing new starts.
pub trait Observer: Send {
    fn started(&mut self, _node: &Node) {}
    fn finished(&mut self, node: &Node, result: &NodeResult) -> Result<(), String>;
}

/// Applies `nodes` (one plan) and returns a result per node, in plan order.
pub async fn execute(
    nodes: &[Node],
    cloud: Arc<dyn CloudWrite>,
    opts: &ExecOptions,
    observer: &mut dyn Observer,
) -> Result<Vec<NodeResult>, GraphError> {
    let graph = PlanGraph::build(nodes)?;
    let mut waiting: Vec<usize> = (0..nodes.len()).map(|i| graph.dependencies(i).len()).collect();
    let mut results: Vec<Option<NodeResult>> = vec![None; nodes.len()];
    let mut ready: VecDeque<usize> = (0..nodes.len()).filter(|&i| waiting[i] == 0).collect();
    let mut running = JoinSet::new();
    let mut aborted: Option<String> = None;

    loop {
        while aborted.is_none() && running.len() < opts.parallelism.max(1) {
            let Some(i) = ready.pop_front() else { break };
            observer.started(&nodes[i]);
            let node = nodes[i].clone();
            let cloud = Arc::clone(&cloud);
            let retry = opts.retry.clone();
            let limit = opts.shared_limit.clone();
            let locks = Arc::clone(&opts.write_locks);
            running.spawn(async move {
                let _permit = match limit {
                    Some(limit) => Some(limit.acquire_owned().await.expect("the fleet limit is never closed")),
                    None => None,
                };
                (i, run_node(&node, cloud.as_ref(), &retry, &locks).await)
            });
        }
        let Some(joined) = running.join_next().await else { break };
        let (i, mut result) = match joined {
            Ok(done) => done,
            Err(e) => panic!("an executor task panicked: {e}"),
        };
        if let Err(e) = observer.finished(&nodes[i], &result) {
            aborted = Some(format!("apply aborted: state could not be persisted after {}: {e}", nodes[i].address));
            // What the node did is not in the state: the node did not complete.
            result.outcome = Outcome::Failed { error: NodeError::StateCommit { message: e } };
        }
        let ok = result.outcome.is_ok();
        results[i] = Some(result);
        if ok {
            for d in graph.dependents(i) {
                waiting[d] -= 1;
                if waiting[d] == 0 {
                    insert_sorted(&mut ready, d);
                }
            }
        } else {
            skip_dependents(&graph, nodes, i, &mut results, observer);
        }
    }

    let because = aborted.unwrap_or_else(|| "not reached".to_string());
    Ok(results
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            r.unwrap_or_else(|| NodeResult {
                address: nodes[i].address.clone(),
                action: nodes[i].action(),
                outcome: Outcome::Skipped { because: because.clone() },
            })
        })
        .collect())
}

fn insert_sorted(ready: &mut VecDeque<usize>, i: usize) {
    let pos = ready.iter().position(|&r| r > i).unwrap_or(ready.len());
    ready.insert(pos, i);
}

/// Marks every transitive dependent of a failed node as skipped.
fn skip_dependents(
    graph: &PlanGraph,
    nodes: &[Node],
    failed: usize,
    results: &mut [Option<NodeResult>],
    observer: &mut dyn Observer,
) {
    let mut stack = graph.dependents(failed);
    while let Some(d) = stack.pop() {
        if results[d].is_some() {
            continue;
        }
        let result = NodeResult {
            address: nodes[d].address.clone(),
            action: nodes[d].action(),
            outcome: Outcome::Skipped {
                because: format!("depends on {}, which did not complete", nodes[failed].address),
            },
        };
        // A skipped node changed nothing; the observer only records it.
        let _ = observer.finished(&nodes[d], &result);
        results[d] = Some(result);
        stack.extend(graph.dependents(d));
    }
}

async fn run_node(node: &Node, cloud: &dyn CloudWrite, retry: &RetryPolicy, locks: &WriteLocks) -> NodeResult {
    let outcome = step(node, cloud, retry, locks).await.unwrap_or_else(|error| Outcome::Failed { error });
    NodeResult { address: node.address.clone(), action: node.action(), outcome }
}

/// Runs one node: dispatches on its operation. Verify and read get the read half of the cloud only;
/// writes go through the [`Writer`] (preconditions, "already exists", per-scope serialisation).
async fn step(
    node: &Node,
    cloud: &dyn CloudWrite,
    retry: &RetryPolicy,
    locks: &WriteLocks,
) -> Result<Outcome, NodeError> {
    if matches!(node.op, Operation::Noop { .. } | Operation::Skip { .. }) {
        return Ok(Outcome::Unchanged);
    }
    let Some(id) = node.id.as_deref() else {
        return Err(NodeError::Refused { message: format!("action `{}` without a cloud id", node.action().as_str()) });
    };
    let writer = Writer { cloud, retry, locks };
    match &node.op {
        Operation::Noop { .. } | Operation::Skip { .. } => Ok(Outcome::Unchanged),
        Operation::Verify { checks } => verify(node, id, checks, cloud, retry, locks.ids()).await,
        Operation::Read { .. } => read_existing(cloud, retry, node, id).await.map(|_| Outcome::Done),
        Operation::Create { patch, changes } | Operation::Update { patch, changes } => {
            let current = writer.get(id).await?;
            check_unchanged_since_plan(id, node.action(), patch, changes, current.as_ref(), locks.ids())?;
            match current {
                Some(current) => {
                    let mut body = current.clone();
                    json::merge_patch(&mut body, patch);
                    writer.update(id, &body, &current, Some(patch)).await?;
                }
                None => {
                    let mut body = Value::Object(Default::default());
                    json::merge_patch(&mut body, patch);
                    writer.create(id, &body, patch).await?;
                }
            }
            Ok(Outcome::Done)
        }
        Operation::Replace { patch, changes, detach } => {
            let current = writer.get(id).await?;
            check_unchanged_since_plan(id, node.action(), patch, changes, current.as_ref(), locks.ids())?;
            let Some(mut current) = current else {
                return Err(NodeError::StaleSincePlan {
                    message: format!("{id} no longer exists; re-run `trellis plan`"),
                });
            };
            // Azure refuses to delete a resource that is still referenced: detach the references the
            // plan names (held by managed resources of the same plan), replace, then re-attach them.
            let mut detached = Vec::new();
            for d in detach {
                let Some(read) = writer.get(&d.id).await? else {
                    continue;
                };
                let mut holder = read.clone();
                let removed = detach_reference(&mut holder, &d.path, id, locks.ids());
                if removed != Reference::Absent {
                    writer.update(&d.id, &holder, &read, None).await?;
                    detached.push((d, removed));
                }
            }
            if !detached.is_empty() {
                // Detaching may have changed the resource's version (back-references): delete the
                // version as it is after our own writes.
                match writer.get(id).await? {
                    Some(now) => current = now,
                    None => {
                        return Err(NodeError::StaleSincePlan {
                            message: format!(
                                "{id} was deleted by someone else during its replacement; re-run `trellis plan`"
                            ),
                        })
                    }
                }
            }
            writer.delete(id, &current).await?;
            let mut body = Value::Object(Default::default());
            json::merge_patch(&mut body, patch);
            writer.create(id, &body, patch).await?;
            for (d, removed) in detached {
                let Some(read) = writer.get(&d.id).await? else {
                    continue;
                };
                let mut holder = read.clone();
                restore_reference(&mut holder, &d.path, id, removed);
                writer.update(&d.id, &holder, &read, None).await?;
            }
            Ok(Outcome::Done)
        }
        Operation::Delete { .. } => {
            // Re-read first: a resource already gone (deleted by a previous, interrupted run) is done.
            if let Some(current) = writer.get(id).await? {
                writer.delete(id, &current).await?;
            }
            Ok(Outcome::Done)
        }
    }
}

/// A verify node: read the resource and check it. Holds only the read half of the cloud.
async fn verify(
    node: &Node,
    id: &str,
    checks: &[Check],
    cloud: &dyn CloudRead,
    retry: &RetryPolicy,
    ids: &dyn IdScheme,
) -> Result<Outcome, NodeError> {
    let live = read_existing(cloud, retry, node, id).await?;
    let failed = failed_checks(ids, checks, &live);
    if failed.is_empty() {
        Ok(Outcome::Done)
    } else {
        Err(NodeError::VerifyFailed { failed })
    }
}

/// What a detached reference looked like, to put it back the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reference {
    Absent,
    /// `{"id": …}` at the path.
    Object,
    /// An element `{"id": …}` of the array at the path.
    Element,
}

/// Removes the reference to `target` at `path` in `holder`.
fn detach_reference(holder: &mut Value, path: &str, target: &str, ids: &dyn IdScheme) -> Reference {
    let is_target = |v: &Value| v.get("id").and_then(Value::as_str).is_some_and(|id| ids.same(id, target));
    let (parent, key) = path.rsplit_once('/').unwrap_or(("", path));
    let Some(Value::Object(parent)) = holder.pointer_mut(parent) else { return Reference::Absent };
    match parent.get_mut(key) {
        Some(Value::Array(items)) if items.iter().any(is_target) => {
            items.retain(|v| !is_target(v));
            Reference::Element
        }
        Some(v) if is_target(v) => {
            parent.remove(key);
            Reference::Object
        }
        _ => Reference::Absent,
    }
}

/// Puts back a reference removed by [`detach_reference`].
fn restore_reference(holder: &mut Value, path: &str, target: &str, removed: Reference) {
    let reference = serde_json::json!({ "id": target });
    let (parent, key) = path.rsplit_once('/').unwrap_or(("", path));
    let Some(Value::Object(parent)) = holder.pointer_mut(parent) else { return };
    match removed {
        Reference::Absent => {}
        Reference::Object => {
            parent.insert(key.to_string(), reference);
        }
        Reference::Element => match parent.get_mut(key) {
            Some(Value::Array(items)) => items.push(reference),
            _ => {
                parent.insert(key.to_string(), Value::Array(vec![reference]));
            }
        },
    }
}

/// GET through the read-only interface; a missing resource is an error.
async fn read_existing(cloud: &dyn CloudRead, retry: &RetryPolicy, node: &Node, id: &str) -> Result<Value, NodeError> {
    match retry.run(|| cloud.get(id)).await? {
        Some(v) => Ok(v),
        None => Err(NodeError::Missing { id: id.to_string(), reason: node.reason.detail().to_string() }),
    }
}

/// Refuses a write when the live resource no longer looks as it did at plan time.
fn check_unchanged_since_plan(
    id: &str,
    action: Action,
    patch: &Value,
    changes: &[Change],
    current: Option<&Value>,
    ids: &dyn IdScheme,
) -> Result<(), NodeError> {
    let stale = |message: String| Err(NodeError::StaleSincePlan { message });
    match (action, current) {
        (Action::Create, Some(_)) => {
            return stale(format!("{id} exists now but did not when the plan was made; re-run `trellis plan`"))
        }
        (Action::Update | Action::Replace, None) => {
            return stale(format!(
                "{id} no longer exists; it was deleted since the plan was made; re-run `trellis plan`"
            ))
        }
        _ => {}
    }
    if let Some(current) = current {
        let now = json::changes_in(ids, Some(current), patch);
        let moved: Vec<&str> = changes
            .iter()
            .filter(|planned| !now.iter().any(|c| c.path == planned.path && c.before == planned.before))
            .map(|c| c.path.as_str())
            .collect();
        if !moved.is_empty() {
            return stale(format!(
                "{id} changed since the plan was made ({}); re-run `trellis plan`",
                moved.join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use trellis_plans::{DeleteOwnership, Kind, ReadOwnership};

    /// A cloud of resources by id whose writes can be made to fail; counts its writes.
    #[derive(Default)]
    struct Fake {
        resources: Mutex<BTreeMap<String, Value>>,
        refuse_writes: Option<CloudError>,
        writes: Mutex<usize>,
    }

    #[async_trait]
    impl CloudRead for Fake {
        async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
            Ok(self.resources.lock().unwrap().get(id).cloned())
        }
        async fn list(&self, _parent: &str, _rtype: &str) -> Result<Vec<Value>, CloudError> {
            Ok(vec![])
        }
    }

    #[async_trait]
    impl CloudWrite for Fake {
        async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
            self.update(id, body, &crate::cloud::Precondition::None).await
        }
        async fn update(&self, id: &str, body: Value, _pre: &crate::cloud::Precondition) -> Result<Value, CloudError> {
            *self.writes.lock().unwrap() += 1;
            if let Some(e) = &self.refuse_writes {
                return Err(e.clone());
            }
            self.resources.lock().unwrap().insert(id.to_string(), body.clone());
            Ok(body)
        }
        async fn remove(&self, id: &str, _pre: &crate::cloud::Precondition) -> Result<(), CloudError> {
            *self.writes.lock().unwrap() += 1;
            self.resources.lock().unwrap().remove(id);
            Ok(())
        }
    }

    /// Records results; fails to persist after the nodes named in `refuse`.
    #[derive(Default)]
    struct Record {
        refuse: Vec<String>,
    }

    impl Observer for Record {
        fn finished(&mut self, node: &Node, _result: &NodeResult) -> Result<(), String> {
            match self.refuse.contains(&node.address) {
                true => Err("disk full".to_string()),
                false => Ok(()),
            }
        }
    }

    const ID: &str = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/natGateways/nat";

    fn node(address: &str, op: Operation, depends_on: &[&str]) -> Node {
        Node {
            address: address.to_string(),
            kind: Kind::new("nat_gateway"),
            name: "nat".to_string(),
            scope: "rg".to_string(),
            id: Some(ID.to_string()),
            op,
            reason: trellis_plans::Reason::new(trellis_plans::ReasonCode::Absent, "test"),
            depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
            observed: None,
        }
    }

    fn create(address: &str) -> Node {
        node(address, Operation::Create { patch: json!({"location": "westeurope"}), changes: vec![] }, &[])
    }

    async fn run(nodes: &[Node], cloud: Fake, observer: &mut Record) -> (Vec<Value>, usize) {
        let cloud = Arc::new(cloud);
        let results = execute(nodes, cloud.clone(), &ExecOptions::new(&crate::ids::ArmIds), observer).await.unwrap();
        let writes = *cloud.writes.lock().unwrap();
        (results.iter().map(|r| serde_json::to_value(r).unwrap()).collect(), writes)
    }

    #[tokio::test]
    async fn regression_a_failed_node_reports_the_class_of_the_cloud_error() {
        let refused = CloudError::Rejected {
            target: ID.to_string(),
            status: 409,
            code: "AnotherOperationInProgress".to_string(),
            message: "Another operation on this resource is in progress".to_string(),
        };
        let cloud = Fake { refuse_writes: Some(refused.clone()), ..Fake::default() };
        let (results, _) = run(&[create("a")], cloud, &mut Record::default()).await;
        assert_eq!(results[0]["status"], "failed");
        assert_eq!(results[0]["error"], json!(refused.to_string()), "the one-line text stays");
        assert_eq!(
            results[0]["failure"],
            json!({
                "class": "rejected",
                "target": ID,
                "status": 409,
                "code": "AnotherOperationInProgress",
                "message": "Another operation on this resource is in progress"
            })
        );
    }

    #[tokio::test]
    async fn regression_a_failed_verify_reports_its_checks() {
        let cloud = Fake::default();
        cloud.resources.lock().unwrap().insert(ID.to_string(), json!({"location": "northeurope"}));
        let checks =
            vec![Check { path: "/location".into(), expect: json!("westeurope"), message: "wrong region".into() }];
        let verify = node("v", Operation::Verify { checks }, &[]);
        let (results, writes) = run(&[verify], cloud, &mut Record::default()).await;
        assert_eq!(results[0]["error"], "wrong region");
        assert_eq!(results[0]["failure"]["class"], "verify_failed");
        assert_eq!(results[0]["failure"]["failed_checks"], json!(["wrong region"]));
        assert_eq!(writes, 0);
    }

    #[tokio::test]
    async fn regression_a_write_stale_since_the_plan_reports_its_class() {
        let cloud = Fake::default();
        cloud.resources.lock().unwrap().insert(ID.to_string(), json!({"location": "westeurope"}));
        let (results, writes) = run(&[create("a")], cloud, &mut Record::default()).await;
        assert_eq!(results[0]["failure"]["class"], "stale_since_plan");
        assert!(results[0]["error"].as_str().unwrap().contains("exists now but did not when the plan was made"));
        assert_eq!(writes, 0, "nothing is written over a resource that moved");
    }

    /// The state could not be persisted after a node: the node did not complete (its write is not in the
    /// state), and the report says so with the class `state_commit` instead of `done`.
    #[tokio::test]
    async fn regression_a_node_whose_state_was_not_committed_is_failed() {
        let mut observer = Record { refuse: vec!["a".to_string()] };
        let (results, _) = run(&[create("a")], Fake::default(), &mut observer).await;
        assert_eq!(results[0]["status"], "failed");
        assert_eq!(results[0]["failure"]["class"], "state_commit");
        assert_eq!(results[0]["error"], "state could not be persisted after this node: disk full");
    }

    #[tokio::test]
    async fn read_and_delete_dispatch_on_the_operation() {
        let cloud = Fake::default();
        cloud.resources.lock().unwrap().insert(ID.to_string(), json!({"location": "westeurope"}));
        let nodes = [
            node("a-read", Operation::Read { ownership: ReadOwnership::User }, &[]),
            node("b-delete", Operation::Delete { ownership: DeleteOwnership::Managed, changes: vec![] }, &["a-read"]),
        ];
        let (results, writes) = run(&nodes, cloud, &mut Record::default()).await;
        assert_eq!((results[0]["status"].as_str(), results[1]["status"].as_str()), (Some("done"), Some("done")));
        assert_eq!(writes, 1);
    }
}
