//! `--target` and `--replace`, as Terraform's `-target` and `-replace`: which shoots and resources a
//! plan covers (`Targeting::select`: a shoot whole, or a resource with what it depends on, the plan
//! marked partial by [`trellis_plans::Plan::restrict`]), and which managed resources it replaces on
//! request (the diff does, [`trellis_planner::diff::plan_nodes_replacing`]; refused here where it
//! cannot: [`replace_refusal`]).

use std::collections::BTreeSet;
use std::sync::Mutex;

use anyhow::{bail, Result};
use trellis_plans::escape::text;
use trellis_plans::{Operation, Plan, PlanSet, ReasonCode};

/// What `--target` and `--replace` ask of a plan. Empty: everything, nothing replaced.
#[derive(Clone, Debug, Default)]
pub struct Targeting {
    /// Shoots (technical id `shoot--project--name`, or the Shoot's name) and resource addresses (as a
    /// plan prints them), as given. A target with a `.` is an address (every address has one; no
    /// shoot name or technical id does).
    pub targets: Vec<String>,
    /// Addresses of managed resources to replace.
    pub replace: BTreeSet<String>,
}

/// Whether `target` is a resource address rather than a shoot.
pub fn is_address(target: &str) -> bool {
    target.contains('.')
}

impl Targeting {
    pub fn new(targets: Vec<String>, replace: Vec<String>) -> Targeting {
        let mut unique = BTreeSet::new();
        let targets = targets.into_iter().filter(|t| unique.insert(t.clone())).collect();
        Targeting { targets, replace: replace.into_iter().collect() }
    }

    /// What applying a saved plan re-plans with: no target (the saved plans are restricted one by one
    /// to their own, [`super::check_saved_plan`]) and the replacements its nodes were planned with.
    pub fn of_saved(saved: &PlanSet) -> Targeting {
        let replace = saved
            .plans
            .iter()
            .flat_map(|p| &p.nodes)
            .filter(|n| n.reason.code() == Some(ReasonCode::ReplaceRequested))
            .map(|n| n.address.clone())
            .collect();
        Targeting { targets: Vec::new(), replace }
    }

    /// Whether `--target` restricts the fleet.
    pub fn is_targeted(&self) -> bool {
        !self.targets.is_empty()
    }

    fn addresses(&self) -> impl Iterator<Item = &String> {
        self.targets.iter().filter(|t| is_address(t))
    }

    /// The shoot targets `id` (named `name`) answers to.
    fn shoot_targets<'a>(&'a self, id: &'a str, name: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.targets.iter().filter(move |t| !is_address(t) && (*t == id || *t == name))
    }

    /// Whether shoot `id` (named `name`) is planned at all: it is targeted whole, or an address may be
    /// among its nodes.
    pub fn plans(&self, id: &str, name: &str) -> bool {
        !self.is_targeted() || self.addresses().next().is_some() || self.shoot_targets(id, name).next().is_some()
    }
}

/// The targets a fleet's plans answered to, for [`Matched::check`] once the whole fleet is planned.
#[derive(Default)]
pub struct Matched {
    inner: Mutex<MatchedInner>,
}

#[derive(Default)]
struct MatchedInner {
    targets: BTreeSet<String>,
    replace: BTreeSet<String>,
    /// Every shoot of the inputs, as `(technical id, name)`, for the error naming an unknown shoot.
    shoots: BTreeSet<(String, String)>,
    /// Shoots `--target` left out.
    left_out: usize,
}

impl Matched {
    fn lock(&self) -> std::sync::MutexGuard<'_, MatchedInner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes a shoot of the inputs (only while targeting: the error's list of shoots).
    pub fn shoot(&self, targeting: &Targeting, id: &str, name: &str) {
        if targeting.is_targeted() {
            let mut m = self.lock();
            m.shoots.insert((id.to_string(), name.to_string()));
            m.targets.extend(targeting.shoot_targets(id, name).cloned());
        }
    }

    /// Notes a shoot `--target` left out.
    pub fn left_out(&self) {
        self.lock().left_out += 1;
    }

    /// How many shoots `--target` left out.
    pub fn left_out_count(&self) -> usize {
        self.lock().left_out
    }

    /// Every target and every replacement answered to by some shoot, or the first that was not, as
    /// one line naming it and what there is. `elsewhere`: shoots of the inputs were left to other
    /// shards (`--shard`), so an address not found here may be one of theirs and is no error.
    pub fn check(&self, targeting: &Targeting, elsewhere: bool) -> Result<()> {
        let m = self.lock();
        let found = |t: &&String| m.targets.contains(*t) || (elsewhere && is_address(t));
        let unknown = |t: &&String| !found(t);
        if let Some(t) = targeting.targets.iter().find(unknown) {
            if is_address(t) {
                bail!(
                    "--target {}: no plan of the inputs has a node at this address; `trellis plan` (without --target) prints every node's address",
                    text(t)
                );
            }
            const SHOWN: usize = 10;
            let mut ids: Vec<&str> = m.shoots.iter().map(|(id, _)| id.as_str()).collect();
            ids.dedup();
            let more = ids.len().saturating_sub(SHOWN);
            let mut list = ids.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
            if more > 0 {
                list.push_str(&format!(" and {more} more"));
            }
            bail!(
                "--target {}: no shoot of the inputs has this technical id or name; the shoots are: {}",
                text(t),
                if list.is_empty() { "none".to_string() } else { text(&list).into_owned() }
            );
        }
        if let Some(r) = targeting.replace.iter().find(|r| !m.replace.contains(*r) && !elsewhere) {
            bail!(
                "--replace {}: no plan of the inputs has a node at this address; `trellis plan` prints every node's address",
                text(r)
            );
        }
        Ok(())
    }
}

/// Applies `targeting` to the plan of a shoot (`id`, named `name`) the planner made whole, noting in
/// `matched` what it answered to: the plan is kept whole when the shoot is targeted (or nothing
/// is), restricted to the targeted addresses among its nodes ([`Plan::restrict`]), or dropped
/// (`Ok(false)`) when it has none. With `check_replace`, a `--replace` address among its nodes that
/// was not planned as a requested replace is refused ([`replace_refusal`]), as is one the targets
/// leave out.
pub fn select(
    targeting: &Targeting,
    matched: &Matched,
    plan: &mut Plan,
    id: &str,
    name: &str,
    check_replace: bool,
) -> Result<bool> {
    let whole = !targeting.is_targeted() || targeting.shoot_targets(id, name).next().is_some();
    let replaced: Vec<&String> =
        targeting.replace.iter().filter(|r| plan.nodes.iter().any(|n| &&n.address == r)).collect();
    if check_replace {
        for r in &replaced {
            if let Some(refusal) = plan.node(r).and_then(|node| replace_refusal(plan, node)) {
                bail!("--replace {}: {refusal}", text(r));
            }
        }
    }
    let keep = if whole {
        let inside = targeting.addresses().filter(|a| plan.node(a).is_some()).cloned();
        matched.lock().targets.extend(inside);
        true
    } else {
        let addresses: Vec<String> = targeting.addresses().cloned().collect();
        let missing = plan.restrict(&addresses);
        let found: Vec<String> = addresses.into_iter().filter(|a| !missing.contains(a)).collect();
        matched.lock().targets.extend(found.iter().cloned());
        !found.is_empty()
    };
    if keep && check_replace {
        if let Some(r) = replaced.iter().find(|r| plan.node(r).is_none()) {
            bail!(
                "--replace {}: the resource is not among the --target resources and what they depend on; target it too (--target {})",
                text(r),
                text(r)
            );
        }
    }
    if keep {
        matched.lock().replace.extend(replaced.into_iter().cloned());
    }
    Ok(keep)
}

/// Why `--replace` cannot replace `node` of `plan` (planned with the request), in words; `None` when
/// the node is the requested replace and nothing else of the plan needs the resource but what the
/// replace detaches and re-attaches (deleting it would break or take along any other dependent: a
/// router's NAT, a network's subnets).
pub fn replace_refusal(plan: &Plan, node: &trellis_plans::Node) -> Option<String> {
    use trellis_plans::{Action, DeleteOwnership, Ownership, ReadOwnership};
    let what = format!("{} {}", node.kind.as_str(), text(node.id.as_deref().unwrap_or(&node.name)));
    let refusal = match &node.op {
        Operation::Replace { detach, .. } if node.reason.code() == Some(ReasonCode::ReplaceRequested) => {
            let detached = |n: &trellis_plans::Node| {
                n.id.as_deref().is_some_and(|id| detach.iter().any(|d| d.id.eq_ignore_ascii_case(id)))
            };
            let broken = plan.nodes.iter().find(|n| {
                n.depends_on.contains(&node.address)
                    && n.ownership() == Ownership::Managed
                    && n.action() != Action::Delete
                    && !detached(n)
            })?;
            format!(
                "{} depends on it and a replace does not detach it: deleting {what} would break it or take it along; only a resource nothing else of the shoot needs (but references trellis detaches) is replaced on request",
                text(&broken.address)
            )
        }
        Operation::Verify { .. }
        | Operation::Read { ownership: ReadOwnership::User }
        | Operation::Skip { ownership: Ownership::User } => {
            format!("{what} is your own resource (user-owned): trellis never writes it, so it cannot replace it")
        }
        Operation::Read { ownership: ReadOwnership::Runtime }
        | Operation::Delete { ownership: DeleteOwnership::Runtime, .. }
        | Operation::Skip { ownership: Ownership::Runtime } => format!(
            "{what} is written by another controller at run time (runtime-owned): trellis does not replace it"
        ),
        Operation::Create { .. } => format!("{what} does not exist: the plan creates it, there is nothing to replace"),
        Operation::Delete { .. } => {
            format!("{what} is no longer wanted: the plan deletes it, there is nothing to replace")
        }
        Operation::Skip { .. } => format!("{what} is not planned ({}): trellis does not touch it", node.reason),
        Operation::Update { .. } | Operation::Noop { .. } | Operation::Replace { .. } => format!(
            "trellis cannot replace a {}: nothing of it forces a replacement, so trellis has no replace for it (it does not know what deleting it would break); it is only ever updated in place",
            node.kind.as_str()
        ),
    };
    Some(refusal)
}
