//! The executor: walks the plan DAG with bounded parallelism.
//!
//! Per node: re-read the resource right before writing it, refuse if it moved since the plan, write
//! (through [`crate::write::Writer`]: under the re-read's etag, creates as creates, one write per
//! scope at a time), then hand the result to the [`Observer`] — which persists state — before any
//! dependent starts.
//! A failed node does not stop independent work; its dependents are skipped and say why.
//!
//! Architecture invariant: `verify` and `read` nodes run against a `&dyn CloudRead`; only create,
//! update, replace and delete of managed (or spec-sanctioned runtime) nodes touch [`CloudWrite`].

use crate::cloud::{CloudRead, CloudWrite};
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
use trellis_plans::{node_problem, Action, Node};

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

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            parallelism: 10,
            retry: RetryPolicy::default(),
            shared_limit: None,
            write_locks: Arc::new(WriteLocks::default()),
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
    Failed {
        error: String,
    },
    /// Not run because something it depends on failed (or the apply was aborted).
    Skipped {
        because: String,
    },
}

impl Outcome {
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Done | Outcome::Unchanged)
    }
}

/// What happened to one node.
#[derive(Serialize, Clone, Debug)]
pub struct NodeResult {
    pub address: String,
    pub action: Action,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The resource as the cloud returned it after the node (writes, reads, verifies).
    #[serde(skip)]
    pub live: Option<Value>,
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
        let (i, result) = match joined {
            Ok(done) => done,
            Err(e) => panic!("an executor task panicked: {e}"),
        };
        if let Err(e) = observer.finished(&nodes[i], &result) {
            aborted = Some(format!("apply aborted: state could not be persisted after {}: {e}", nodes[i].address));
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
                action: nodes[i].action,
                outcome: Outcome::Skipped { because: because.clone() },
                live: None,
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
            action: nodes[d].action,
            outcome: Outcome::Skipped {
                because: format!("depends on {}, which did not complete", nodes[failed].address),
            },
            live: None,
        };
        // A skipped node changed nothing; the observer only records it.
        let _ = observer.finished(&nodes[d], &result);
        results[d] = Some(result);
        stack.extend(graph.dependents(d));
    }
}

async fn run_node(node: &Node, cloud: &dyn CloudWrite, retry: &RetryPolicy, locks: &WriteLocks) -> NodeResult {
    let (outcome, live) = match step(node, cloud, retry, locks).await {
        Ok((outcome, live)) => (outcome, live),
        Err(error) => (Outcome::Failed { error }, None),
    };
    NodeResult { address: node.address.clone(), action: node.action, outcome, live }
}

async fn step(
    node: &Node,
    cloud: &dyn CloudWrite,
    retry: &RetryPolicy,
    locks: &WriteLocks,
) -> Result<(Outcome, Option<Value>), String> {
    if let Some(problem) = node_problem(node) {
        return Err(format!("refusing to apply: {problem}"));
    }
    let id = node.id.as_deref().unwrap_or_default();
    match node.action {
        Action::Noop | Action::Skip => Ok((Outcome::Unchanged, None)),
        Action::Verify => {
            let live = read_existing(cloud, retry, node).await?;
            let failed = failed_checks(node, &live);
            if failed.is_empty() {
                Ok((Outcome::Done, Some(live)))
            } else {
                Err(failed.join("; "))
            }
        }
        Action::Read => Ok((Outcome::Done, Some(read_existing(cloud, retry, node).await?))),
        Action::Create | Action::Update => {
            let writer = Writer { cloud, retry, locks };
            let patch = node.patch.as_ref().expect("checked by node_problem");
            let current = writer.get(id).await?;
            check_unchanged_since_plan(node, current.as_ref(), locks.ids())?;
            let live = match current {
                Some(current) => {
                    let mut body = current.clone();
                    json::merge_patch(&mut body, patch);
                    writer.update(id, &body, &current, Some(patch)).await?
                }
                None => {
                    let mut body = Value::Object(Default::default());
                    json::merge_patch(&mut body, patch);
                    writer.create(id, &body, patch).await?
                }
            };
            Ok((Outcome::Done, Some(live)))
        }
        Action::Replace => {
            let writer = Writer { cloud, retry, locks };
            let current = writer.get(id).await?;
            check_unchanged_since_plan(node, current.as_ref(), locks.ids())?;
            let Some(mut current) = current else {
                return Err(format!("{id} no longer exists; re-run `trellis plan`"));
            };
            // Azure refuses to delete a resource that is still referenced: detach the references the
            // plan names (held by managed resources of the same plan), replace, then re-attach them.
            let mut detached = Vec::new();
            for d in &node.detach {
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
                        return Err(format!(
                            "{id} was deleted by someone else during its replacement; re-run `trellis plan`"
                        ))
                    }
                }
            }
            writer.delete(id, &current).await?;
            let patch = node.patch.as_ref().expect("checked by node_problem");
            let mut body = Value::Object(Default::default());
            json::merge_patch(&mut body, patch);
            let live = writer.create(id, &body, patch).await?;
            for (d, removed) in detached {
                let Some(read) = writer.get(&d.id).await? else {
                    continue;
                };
                let mut holder = read.clone();
                restore_reference(&mut holder, &d.path, id, removed);
                writer.update(&d.id, &holder, &read, None).await?;
            }
            Ok((Outcome::Done, Some(live)))
        }
        Action::Delete => {
            // Re-read first: a resource already gone (deleted by a previous, interrupted run) is done.
            let writer = Writer { cloud, retry, locks };
            if let Some(current) = writer.get(id).await? {
                writer.delete(id, &current).await?;
            }
            Ok((Outcome::Done, None))
        }
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
async fn read_existing(cloud: &dyn CloudRead, retry: &RetryPolicy, node: &Node) -> Result<Value, String> {
    let id = node.id.as_deref().unwrap_or_default();
    match retry.run(|| cloud.get(id)).await {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(format!("{id} does not exist; {}", node.reason)),
        Err(e) => Err(e.to_string()),
    }
}

/// Refuses a write when the live resource no longer looks as it did at plan time.
fn check_unchanged_since_plan(node: &Node, current: Option<&Value>, ids: &dyn IdScheme) -> Result<(), String> {
    let id = node.id.as_deref().unwrap_or_default();
    match (node.action, current) {
        (Action::Create, Some(_)) => {
            return Err(format!("{id} exists now but did not when the plan was made; re-run `trellis plan`"))
        }
        (Action::Update | Action::Replace, None) => {
            return Err(format!("{id} no longer exists; it was deleted since the plan was made; re-run `trellis plan`"))
        }
        _ => {}
    }
    if let (Some(current), Some(patch)) = (current, node.patch.as_ref()) {
        let now = json::changes_in(ids, Some(current), patch);
        let moved: Vec<&str> = node
            .changes
            .iter()
            .filter(|planned| !now.iter().any(|c| c.path == planned.path && c.before == planned.before))
            .map(|c| c.path.as_str())
            .collect();
        if !moved.is_empty() {
            return Err(format!("{id} changed since the plan was made ({}); re-run `trellis plan`", moved.join(", ")));
        }
    }
    Ok(())
}
