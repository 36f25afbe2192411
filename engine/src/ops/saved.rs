//! Saved plans: `apply PLAN` re-plans from the manifests a plan file carries and runs only what
//! trellis plans now.

use anyhow::{bail, Context as _, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use trellis_plans::{Plan, PlanSet};
use trellis_state::Workspace;

use crate::registry::Registry;

use super::*;

/// Refuses a plan made against another state than the one stored now.
pub(crate) fn check_prior(plan: &Plan, ws: &Workspace) -> Result<()> {
    let now_lineage = ws.prior().lineage;
    if plan.prior.lineage.is_some() && plan.prior.lineage != now_lineage {
        bail!(
            "{}: the plan was made against state lineage {}, but the state now has lineage {}; the workspace was recreated — re-run `trellis plan`",
            plan.shoot,
            plan.prior.lineage.as_deref().unwrap_or("(none)"),
            now_lineage.as_deref().unwrap_or("(none)")
        );
    }
    if plan.prior.serial != ws.serial {
        bail!(
            "{}: stale plan: it was made at state serial {}, but the state is at serial {} now (something was applied since); re-run `trellis plan`",
            plan.shoot,
            plan.prior.serial,
            ws.serial
        );
    }
    Ok(())
}

/// For `apply PLAN`: re-plans each shoot from the manifest saved in the plan, against the state and the
/// cloud as they are now (a partial plan: the same targets, [`trellis_plans::Plan::restrict`]; the
/// replacements it requested, [`Targeting::of_saved`]), and refuses unless the state has not moved and every node and artifact is
/// identical to the saved plan (naming the first difference). Returns the fresh plans: what runs is
/// always what trellis plans itself — ownership, actions, ids and patches come from the provider, never
/// from the file. A write by someone else that changes no planned node (a CCM's NSG rule, a route)
/// leaves the saved plan valid.
pub async fn check_saved_plan(session: &Session, saved: &PlanSet, shoots: Vec<ShootInput>) -> Result<Vec<ShootPlan>> {
    // Re-planned with the replacements the file's plans were made with (`--replace`), each then
    // restricted to its own targets (`--target`): a partial plan is compared with the same part. Each
    // shoot is planned again as its saved plan was: a destroy (`plan --destroy`, or a pruned shoot's
    // of `plan --prune`) or not.
    let targeting = Targeting::of_saved(saved);
    let destroys: std::collections::BTreeSet<String> =
        saved.plans.iter().filter(|p| p.destroy).map(|p| session.registry.plan_workspace(p)).collect();
    let (destroy, reconcile): (Vec<ShootInput>, Vec<ShootInput>) =
        shoots.into_iter().partition(|s| destroys.contains(&s.id()));
    let mut fresh: BTreeMap<String, ShootPlan> = BTreeMap::new();
    for (inputs, destroy) in [(reconcile, false), (destroy, true)] {
        if !inputs.is_empty() {
            let planned = plan_fleet_targeted(session, inputs, destroy, &targeting).await?;
            fresh.extend(planned.into_iter().map(|p| (p.workspace.shoot.clone(), p)));
        }
    }
    let mut out = Vec::new();
    for old in &saved.plans {
        let Some(mut p) = fresh.remove(&session.registry.plan_workspace(old)) else {
            bail!("{}: the plan's shoot is not in the manifests; re-run `trellis plan`", old.shoot);
        };
        if old.is_partial() {
            p.planned.plan.restrict(&old.targets);
        }
        if let Err(stale) = check_prior(old, &p.workspace) {
            // A retried CI job applies a plan that its first run applied already: say so, when the
            // plan made now has nothing left to do.
            if !p.planned.plan.has_changes() {
                bail!("{stale}; a plan made now has no changes — if this plan was applied already (a retried job), there is nothing left to apply");
            }
            return Err(stale);
        }
        if let Some(difference) = trellis_plans::first_difference(old, &p.planned.plan) {
            bail!(
                "{}: stale plan: {difference}: the cloud changed since the plan was made, or the plan file was edited — re-run `trellis plan`",
                old.shoot
            );
        }
        out.push(p);
    }
    Ok(out)
}

/// The shoots a saved plan was made from (each plan carries its manifest), read by the builtin
/// registry's providers ([`shoots_from_plan_with`]).
pub fn shoots_from_plan(saved: &PlanSet) -> Result<Vec<ShootInput>> {
    shoots_from_plan_with(&Registry::builtin(), saved)
}

/// The shoots a saved plan was made from, each read by the provider of `registry` its plan names.
pub fn shoots_from_plan_with(registry: &Registry, saved: &PlanSet) -> Result<Vec<ShootInput>> {
    saved
        .plans
        .iter()
        .map(|p| {
            let Some(source) = &p.source else {
                bail!("{}: the plan file carries no source manifest; re-run `trellis plan --out`", p.shoot);
            };
            let unreadable =
                || format!("{}: the plan's source manifest cannot be read; re-run `trellis plan --out`", p.shoot);
            // The provider the plan names reads its source (a domains plan carries its paired input,
            // `{shoot, seed, features}`).
            let provider = registry
                .entry(p.provider.as_str())
                .map(|e| e.provider)
                .ok_or_else(|| anyhow::anyhow!("{}: plan of provider {:?}, which this trellis does not know; plan again with a trellis that has it", p.shoot, p.provider.as_str()))?;
            let shoot = provider.shoot_from_json(&source.shoot).with_context(unreadable)?;
            // The technical id is made from the name: check it before anything uses it, as loading
            // a manifest does.
            let errs = trellis_providers::metadata::validate(shoot.metadata());
            if !errs.is_empty() {
                let head = format!(
                    "{}: the plan's source manifest ({}) has an invalid name; fix the manifest and re-run `trellis plan --out`",
                    p.shoot, source.file
                );
                return Err(Lines(std::iter::once(head).chain(errs.iter().map(|e| e.to_string())).collect()).into());
            }
            if shoot.technical_id() != p.shoot {
                bail!(
                    "{}: the plan carries the manifest of shoot {}; the plan file was edited — re-run `trellis plan --out`",
                    p.shoot,
                    shoot.technical_id()
                );
            }
            Ok(ShootInput::new(registry, PathBuf::from(&source.file), provider, shoot))
        })
        .collect()
}
