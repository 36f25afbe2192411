//! The plan nodes as a DAG: edges point from a dependency to its dependent ("must happen after").

use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::BTreeMap;
use std::time::Duration;
use trellis_plans::Node;

#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("dependency cycle in the plan through {0}; this is a bug in the provider's task graph, please report")]
    Cycle(String),
    #[error("two nodes of the plan have the address {0}; this is a bug in the provider's plan, please report")]
    Duplicate(String),
    #[error("node {node} depends on {missing}, which is not in the plan")]
    Missing { node: String, missing: String },
}

/// The DAG of a plan; node weights are indices into the plan's node list.
pub struct PlanGraph {
    pub graph: DiGraph<usize, ()>,
    /// A topological order of the node indices.
    pub order: Vec<usize>,
}

impl PlanGraph {
    pub fn build(nodes: &[Node]) -> Result<PlanGraph, GraphError> {
        let mut graph = DiGraph::new();
        let mut index: BTreeMap<&str, NodeIndex> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            if index.insert(&n.address, graph.add_node(i)).is_some() {
                return Err(GraphError::Duplicate(n.address.clone()));
            }
        }
        for (i, n) in nodes.iter().enumerate() {
            for dep in &n.depends_on {
                let from = *index
                    .get(dep.as_str())
                    .ok_or_else(|| GraphError::Missing { node: n.address.clone(), missing: dep.clone() })?;
                graph.add_edge(from, NodeIndex::new(i), ());
            }
        }
        let order = toposort(&graph, None)
            .map_err(|c| GraphError::Cycle(nodes[graph[c.node_id()]].address.clone()))?
            .into_iter()
            .map(|ix| graph[ix])
            .collect();
        Ok(PlanGraph { graph, order })
    }

    /// Indices of the nodes `i` depends on.
    pub fn dependencies(&self, i: usize) -> Vec<usize> {
        self.graph
            .neighbors_directed(NodeIndex::new(i), petgraph::Direction::Incoming)
            .map(|ix| self.graph[ix])
            .collect()
    }

    /// Indices of the nodes that depend on `i`.
    pub fn dependents(&self, i: usize) -> Vec<usize> {
        self.graph
            .neighbors_directed(NodeIndex::new(i), petgraph::Direction::Outgoing)
            .map(|ix| self.graph[ix])
            .collect()
    }

    /// The longest path through the DAG when node `i` takes `cost(i)`: the lower bound of any apply's
    /// wall time, however parallel.
    pub fn critical_path(&self, cost: impl Fn(usize) -> Duration) -> Duration {
        let mut finish: BTreeMap<usize, Duration> = BTreeMap::new();
        for &i in &self.order {
            let start = self.dependencies(i).iter().map(|d| finish[d]).max().unwrap_or_default();
            finish.insert(i, start + cost(i));
        }
        finish.values().copied().max().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_plans::{Kind, Operation, Reason, ReasonCode};

    fn node(address: &str, depends_on: &[&str]) -> Node {
        Node {
            address: address.to_string(),
            kind: Kind::new("route_table"),
            name: "rt".to_string(),
            scope: "rg".to_string(),
            id: Some(format!("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/{address}")),
            op: Operation::Create { patch: serde_json::json!({"location": "westeurope"}), changes: vec![] },
            reason: Reason::new(ReasonCode::Absent, "test"),
            depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
            observed: None,
        }
    }

    /// A plan the executor cannot order is refused naming the node, as a bug: two nodes with one
    /// address (which the index kept one of, so the apply failed as a cycle or ran one node twice), a
    /// cycle, a dependency on a node the plan does not have.
    #[test]
    fn a_plan_that_cannot_be_ordered_names_why() {
        let ok = PlanGraph::build(&[node("a", &[]), node("b", &["a"])]).unwrap();
        assert_eq!(ok.order, [0, 1]);
        let twice = PlanGraph::build(&[node("a", &[]), node("b", &["a"]), node("a", &["b"])]);
        assert_eq!(
            twice.err().unwrap().to_string(),
            "two nodes of the plan have the address a; this is a bug in the provider's plan, please report"
        );
        let cycle = PlanGraph::build(&[node("a", &["b"]), node("b", &["a"])]);
        assert!(matches!(cycle, Err(GraphError::Cycle(_))));
        let missing = PlanGraph::build(&[node("a", &["gone"])]);
        assert_eq!(missing.err().unwrap().to_string(), "node a depends on gone, which is not in the plan");
    }
}
