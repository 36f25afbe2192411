//! Desired × observed → plan nodes.
//!
//! The diff is generic: a managed resource's patch is compared leaf by leaf with the live resource
//! (`crate::json::changes`); a difference in a ForceNew attribute replaces the resource. User-owned
//! resources become `verify`/`read`/`skip` nodes (their [`Desired`] variants carry no patch).
//!
//! Only a resource that discovery looked up and found absent is created (or its delete dropped): a
//! managed or deleted resource that was never fetched is a [`FetchBug`], never a create.

use crate::discover::{FetchBug, NotFetched, Observed};
use crate::ids::IdScheme;
use crate::json;
use crate::model::Desired;
use trellis_plans::{Change, Check, DeleteOwnership, Node, Operation, Reason, ReasonCode};

/// Turns what the provider wants into plan nodes, sorted by address. Dependencies on addresses that
/// are not part of the plan are dropped. A managed or deleted resource whose id discovery never
/// fetched is a [`FetchBug`] naming the id.
pub fn plan_nodes(desired: Vec<Desired>, observed: &Observed) -> Result<Vec<Node>, FetchBug> {
    plan_nodes_replacing(desired, observed, &|_| false)
}

/// [`plan_nodes`], replacing the managed resources whose address `replace` takes (`--replace`) as
/// a ForceNew difference would: deleted and created from the patch, the references to them detached
/// first and re-attached after (the provider's referrers), with the code
/// [`ReasonCode::ReplaceRequested`]. Only a resource that exists and that the provider can replace (it
/// names an attribute that forces a replacement, and with it the references a replace must detach)
/// is; any other node is planned as without it, and the caller refuses the request.
pub fn plan_nodes_replacing(
    desired: Vec<Desired>,
    observed: &Observed,
    replace: &dyn Fn(&str) -> bool,
) -> Result<Vec<Node>, FetchBug> {
    let mut nodes = Vec::new();
    for d in desired {
        nodes.extend(node_for(d, observed, replace).map_err(|e| e.in_stage("diff"))?);
    }
    nodes.sort_by(|a, b| a.address.cmp(&b.address));
    let addresses: std::collections::BTreeSet<String> = nodes.iter().map(|n| n.address.clone()).collect();
    for n in &mut nodes {
        n.depends_on.retain(|d| addresses.contains(d) && *d != n.address);
        n.depends_on.sort();
        n.depends_on.dedup();
    }
    Ok(nodes)
}

fn node_for(desired: Desired, observed: &Observed, replace: &dyn Fn(&str) -> bool) -> Result<Option<Node>, NotFetched> {
    let node = match desired {
        Desired::Managed(m) => {
            let current = observed.get(&m.res.id)?;
            let changes = json::changes_in(observed.ids(), current, &m.patch);
            let forced: Vec<&Change> = changes.iter().filter(|c| m.force_new.iter().any(|p| c.path == *p)).collect();
            // Requested (`--replace`): only where the provider has a replace (a ForceNew attribute).
            let requested = !m.force_new.is_empty() && replace(&m.res.address);
            let detach = match m.referrers.as_slice() {
                [] => String::new(),
                refs => {
                    let names: Vec<&str> = refs.iter().map(|r| r.id.rsplit('/').next().unwrap_or(&r.id)).collect();
                    format!("; {} detached first and re-attached after", names.join(", "))
                }
            };
            let (op, reason) = match current {
                None => (
                    Operation::Create { patch: m.patch, changes },
                    Reason::new(ReasonCode::Absent, format!("{}; does not exist yet", m.why)),
                ),
                // As Terraform's `replace_by_request`, the request comes first (also when an attribute
                // forces the replace anyway).
                Some(_) if requested => {
                    let forced = match forced.as_slice() {
                        [] => String::new(),
                        f => {
                            let paths: Vec<&str> = f.iter().map(|c| c.path.as_str()).collect();
                            format!(" ({} cannot change in place either)", paths.join(", "))
                        }
                    };
                    let reason =
                        format!("{}; replace requested by --replace{forced}: delete, then create{detach}", m.why);
                    (
                        Operation::Replace { patch: m.patch, changes, detach: m.referrers },
                        Reason::new(ReasonCode::ReplaceRequested, reason),
                    )
                }
                Some(_) if !forced.is_empty() => {
                    let paths: Vec<&str> = forced.iter().map(|c| c.path.as_str()).collect();
                    let reason = format!(
                        "{}; {} cannot change in place (ForceNew): delete, then create{detach}",
                        m.why,
                        paths.join(", ")
                    );
                    (
                        Operation::Replace { patch: m.patch, changes, detach: m.referrers },
                        Reason::new(ReasonCode::ForceNew, reason),
                    )
                }
                Some(_) if !changes.is_empty() => {
                    let reason = format!("{}; {} attribute(s) differ from the live resource", m.why, changes.len());
                    (Operation::Update { patch: m.patch, changes }, Reason::new(ReasonCode::Differs, reason))
                }
                Some(_) => (
                    Operation::Noop { patch: Some(m.patch) },
                    Reason::new(ReasonCode::InSync, format!("{}; matches the live resource", m.why)),
                ),
            };
            Node {
                address: m.res.address,
                kind: m.res.kind,
                name: m.res.name,
                scope: m.res.scope,
                id: Some(m.res.id),
                op,
                reason,
                depends_on: m.depends_on,
                observed: current.map(as_read),
            }
        }
        // A user's or runtime's resource is read for its checks or values; one a stage chose not to
        // look up (none does today) simply has no object as read: the node is shown without one.
        Desired::Verify(v) => Node {
            observed: observed.get(&v.res.id).ok().flatten().map(as_read),
            address: v.res.address,
            kind: v.res.kind,
            name: v.res.name,
            scope: v.res.scope,
            id: Some(v.res.id),
            op: Operation::Verify { checks: v.checks },
            reason: v.why,
            depends_on: v.depends_on,
        },
        Desired::Read(r) => Node {
            observed: observed.get(&r.res.id).ok().flatten().map(as_read),
            address: r.res.address,
            kind: r.res.kind,
            name: r.res.name,
            scope: r.res.scope,
            id: Some(r.res.id),
            op: Operation::Read { ownership: r.ownership },
            reason: r.why,
            depends_on: r.depends_on,
        },
        Desired::Skip(s) => Node {
            address: s.address,
            kind: s.kind,
            name: s.name,
            scope: s.scope,
            id: s.id,
            op: Operation::Skip { ownership: s.ownership },
            reason: s.why,
            depends_on: Vec::new(),
            observed: None,
        },
        Desired::DeleteManaged { res, depends_on, why } => {
            return delete_node(res, depends_on, why, DeleteOwnership::Managed, observed)
        }
        Desired::DeleteRuntime { res, depends_on, rule } => {
            return delete_node(res, depends_on, rule, DeleteOwnership::Runtime, observed)
        }
    };
    Ok(Some(node))
}

/// A delete node, or nothing when the resource was looked up and is already gone.
fn delete_node(
    res: crate::model::Resource,
    depends_on: Vec<String>,
    why: Reason,
    ownership: DeleteOwnership,
    observed: &Observed,
) -> Result<Option<Node>, NotFetched> {
    let Some(current) = observed.get(&res.id)? else {
        return Ok(None);
    };
    let changes =
        vec![Change { path: "/id".to_string(), before: Some(serde_json::Value::String(res.id.clone())), after: None }];
    Ok(Some(Node {
        address: res.address,
        kind: res.kind,
        name: res.name,
        scope: res.scope,
        id: Some(res.id),
        op: Operation::Delete { ownership, changes },
        reason: why,
        depends_on,
        observed: Some(as_read(current)),
    }))
}

/// The object as read, as the plan keeps it: the same object with its keys sorted at every level. Key
/// order means nothing in JSON, but clouds and their clients answer the same object in different
/// orders (a resource created through the API, or loaded from a world file an export wrote), and a
/// plan must not differ by it: the same world gives the same plan, byte for byte.
fn as_read(value: &serde_json::Value) -> serde_json::Value {
    // A copy sorted in place: the copy keeps each key's hash, so sorting rebuilds the maps' indexes
    // without hashing a key again (collecting the keys in order into new maps hashed each one).
    let mut read = value.clone();
    read.sort_all_objects();
    read
}

/// Evaluates a verify node's checks against a live resource; returns the messages of the failed ones.
pub fn failed_checks(ids: &dyn IdScheme, checks: &[Check], live: &serde_json::Value) -> Vec<String> {
    checks
        .iter()
        .filter(|c| {
            let actual = live.pointer(&c.path);
            match (&c.expect, actual) {
                (serde_json::Value::Null, None) => false,
                (serde_json::Value::Null, Some(v)) => !v.is_null(),
                (expect, Some(v)) => !json::same_value_in(ids, &c.path, expect, v),
                (_, None) => true,
            }
        })
        .map(|c| c.message.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ManagedSpec, Resource, SkipSpec, VerifySpec};
    use serde_json::json;
    use trellis_plans::{Action, Kind, Ownership};

    fn res(name: &str) -> Resource {
        Resource {
            address: format!("azure.nat_gateway.rg.{name}"),
            kind: Kind::new("nat_gateway"),
            name: name.into(),
            scope: "rg".into(),
            id: format!("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/natGateways/{name}"),
        }
    }

    fn managed(name: &str, patch: serde_json::Value) -> Desired {
        Desired::Managed(ManagedSpec {
            res: res(name),
            patch,
            force_new: vec!["/sku/name"],
            depends_on: vec!["azure.resource_group.rg".into(), "azure.not.in.plan".into()],
            why: "managed".into(),
            referrers: vec![],
        })
    }

    #[test]
    fn actions_follow_the_live_resource() {
        let mut observed = Observed::new(&crate::ids::ArmIds);
        observed.insert(&res("same").id, Some(json!({"sku": {"name": "Standard"}})));
        observed.insert(
            &res("differs").id,
            Some(json!({"sku": {"name": "Standard"}, "properties": {"idleTimeoutInMinutes": 4}})),
        );
        observed.insert(&res("forced").id, Some(json!({"sku": {"name": "Standard"}})));
        observed.insert(&res("new").id, None);
        let desired = vec![
            managed("new", json!({"sku": {"name": "Standard"}})),
            managed("same", json!({"sku": {"name": "Standard"}})),
            managed("differs", json!({"sku": {"name": "Standard"}, "properties": {"idleTimeoutInMinutes": 10}})),
            managed("forced", json!({"sku": {"name": "StandardV2"}})),
        ];
        let nodes = plan_nodes(desired, &observed).unwrap();
        let actions: Vec<(&str, Action)> = nodes.iter().map(|n| (n.name.as_str(), n.action())).collect();
        assert_eq!(
            actions,
            vec![
                ("differs", Action::Update),
                ("forced", Action::Replace),
                ("new", Action::Create),
                ("same", Action::Noop)
            ]
        );
        assert!(nodes.iter().all(|n| n.depends_on.is_empty()), "dependencies outside the plan are dropped");
        let codes: Vec<Option<ReasonCode>> = nodes.iter().map(|n| n.reason.code()).collect();
        assert_eq!(
            codes,
            [ReasonCode::Differs, ReasonCode::ForceNew, ReasonCode::Absent, ReasonCode::InSync].map(Some).to_vec(),
            "the diff gives a managed node the code of what it found"
        );
        assert!(nodes[1].reason.detail().contains("/sku/name cannot change in place (ForceNew)"));
    }

    /// A node keeps the resource as read with its keys sorted at every level (inside arrays too), so
    /// the same cloud answered in another key order gives the same plan, byte for byte.
    #[test]
    fn the_resource_as_read_is_kept_with_its_keys_sorted_at_every_level() {
        let read = |value: serde_json::Value| {
            let mut observed = Observed::new(&crate::ids::ArmIds);
            observed.insert(&res("gw").id, Some(value));
            let nodes = plan_nodes(vec![managed("gw", json!({"sku": {"name": "Standard"}}))], &observed).unwrap();
            serde_json::to_string(nodes[0].observed.as_ref().unwrap()).unwrap()
        };
        let one = read(json!({"sku": {"name": "Standard", "tier": "Regional"},
            "properties": {"zones": [{"b": 1, "a": 2}], "idle": 4}, "id": "x"}));
        let other = read(json!({"id": "x", "properties": {"idle": 4, "zones": [{"a": 2, "b": 1}]},
            "sku": {"tier": "Regional", "name": "Standard"}}));
        assert_eq!(one, other);
        assert_eq!(
            one,
            r#"{"id":"x","properties":{"idle":4,"zones":[{"a":2,"b":1}]},"sku":{"name":"Standard","tier":"Regional"}}"#
        );
    }

    /// `--replace`: a managed resource that exists is replaced with its referrers detached, whatever
    /// the diff found; one the provider has no replace for (no ForceNew attribute), or that does not
    /// exist, is planned as without the request.
    #[test]
    fn a_requested_replace_replaces_what_exists_and_can_be_replaced() {
        let mut observed = Observed::new(&crate::ids::ArmIds);
        for name in ["same", "differs", "forced", "fixed"] {
            observed.insert(&res(name).id, Some(json!({"sku": {"name": "Standard"}})));
        }
        observed.insert(&res("new").id, None);
        let referrer = trellis_plans::Detach { id: "/subnet".into(), path: "/properties/natGateway".into() };
        let mut desired = vec![
            managed("new", json!({"sku": {"name": "Standard"}})),
            managed("same", json!({"sku": {"name": "Standard"}})),
            managed("differs", json!({"sku": {"name": "Standard"}, "properties": {"idleTimeoutInMinutes": 10}})),
            managed("forced", json!({"sku": {"name": "StandardV2"}})),
            managed("fixed", json!({"sku": {"name": "Standard"}})),
        ];
        for d in &mut desired {
            let Desired::Managed(m) = d else { unreachable!() };
            m.referrers = vec![referrer.clone()];
            if m.res.name == "fixed" {
                m.force_new = vec![];
            }
        }
        let nodes = plan_nodes_replacing(desired, &observed, &|_| true).unwrap();
        let got: Vec<(&str, Action, Option<ReasonCode>)> =
            nodes.iter().map(|n| (n.name.as_str(), n.action(), n.reason.code())).collect();
        assert_eq!(
            got,
            vec![
                ("differs", Action::Replace, Some(ReasonCode::ReplaceRequested)),
                ("fixed", Action::Noop, Some(ReasonCode::InSync)),
                ("forced", Action::Replace, Some(ReasonCode::ReplaceRequested)),
                ("new", Action::Create, Some(ReasonCode::Absent)),
                ("same", Action::Replace, Some(ReasonCode::ReplaceRequested)),
            ]
        );
        let same = &nodes[4];
        assert_eq!(same.detach(), [referrer], "the referrers are detached as for a ForceNew replace");
        assert!(
            same.reason.detail().contains("replace requested by --replace: delete, then create"),
            "{}",
            same.reason
        );
        assert!(nodes[2].reason.detail().contains("(/sku/name cannot change in place either)"), "{}", nodes[2].reason);
    }

    #[test]
    fn user_resources_never_carry_a_patch() {
        let desired = vec![
            Desired::Verify(VerifySpec {
                res: res("byo"),
                checks: vec![],
                depends_on: vec![],
                why: Reason::new(ReasonCode::ByoUserOwned, "byo"),
            }),
            Desired::Skip(SkipSpec {
                address: "azure.route_table.rg.worker_route_table".into(),
                kind: Kind::new("route_table"),
                name: "worker_route_table".into(),
                scope: "rg".into(),
                id: None,
                ownership: Ownership::Managed,
                why: Reason::new(ReasonCode::GatedOut, "gated"),
            }),
        ];
        for n in plan_nodes(desired, &Observed::new(&crate::ids::ArmIds)).unwrap() {
            assert!(n.patch().is_none());
            assert!(!n.action().is_write());
        }
    }

    #[test]
    fn delete_of_a_resource_already_gone_is_dropped() {
        let desired = vec![Desired::DeleteManaged {
            res: res("gone"),
            depends_on: vec![],
            why: Reason::new(ReasonCode::RecordedInState, "orphan"),
        }];
        let mut observed = Observed::new(&crate::ids::ArmIds);
        observed.insert(&res("gone").id, None);
        assert!(plan_nodes(desired, &observed).unwrap().is_empty());
    }

    /// A provider pipeline that forgets to fetch a resource it manages: the plan is refused as a bug
    /// naming the id, not a create of a resource that may well exist.
    #[test]
    fn regression_forgotten_fetch_is_a_bug_not_a_create() {
        let mut observed = Observed::new(&crate::ids::ArmIds);
        observed.insert(&res("fetched").id, None);
        let desired = vec![
            managed("fetched", json!({"sku": {"name": "Standard"}})),
            managed("forgotten", json!({"sku": {"name": "Standard"}})),
        ];
        let err = plan_nodes(desired, &observed).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("bug: {} was never fetched before planning (stage: diff); please report", res("forgotten").id)
        );
    }

    /// Likewise a delete of a resource never fetched: not "already gone", a bug.
    #[test]
    fn regression_forgotten_fetch_of_a_delete_is_a_bug_not_already_gone() {
        for desired in [
            Desired::DeleteManaged {
                res: res("leftover"),
                depends_on: vec![],
                why: Reason::new(ReasonCode::RecordedInState, "orphan"),
            },
            Desired::DeleteRuntime {
                res: res("leftover"),
                depends_on: vec![],
                rule: Reason::new(ReasonCode::RuntimeOwned, "ccm"),
            },
        ] {
            let err = plan_nodes(vec![desired], &Observed::new(&crate::ids::ArmIds)).unwrap_err();
            assert_eq!(err.missing, crate::discover::NotFetched::Resource(res("leftover").id));
        }
    }

    #[test]
    fn failed_checks_name_what_is_wrong() {
        let checks = vec![
            Check {
                path: "/properties/addressPrefix".into(),
                expect: json!("10.0.0.0/16"),
                message: "cidr moved".into(),
            },
            Check { path: "/properties/networkSecurityGroup/id".into(), expect: json!("/A"), message: "nsg".into() },
        ];
        let live = json!({"properties": {"addressPrefix": "10.1.0.0/16", "networkSecurityGroup": {"id": "/a"}}});
        assert_eq!(failed_checks(&crate::ids::ArmIds, &checks, &live), vec!["cidr moved".to_string()]);
    }

    /// Regression: a verify check compared references as ARM does (case-insensitively) for every
    /// provider, so a GCE reference differing only in case passed; it compares as the provider's ids do.
    #[test]
    fn regression_failed_checks_compare_references_as_the_providers_ids_do() {
        let checks = vec![Check {
            path: "/network/id".into(),
            expect: json!("projects/p/global/networks/VPC"),
            message: "vpc".into(),
        }];
        let live = json!({"network": {"id": "projects/p/global/networks/vpc"}});
        assert_eq!(failed_checks(&crate::ids::GceIds, &checks, &live), vec!["vpc".to_string()]);
        assert!(failed_checks(&crate::ids::ArmIds, &checks, &live).is_empty());
    }
}
