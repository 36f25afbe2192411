//! `trellis state migrate`: copies every workspace of one backend into another.

use crate::{Imported, StateError, StateStore};

/// What [`migrate`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MigrateReport {
    /// Workspaces that were not in `to` and were copied.
    pub created: usize,
    /// Workspaces `to` already held at the same lineage and serial (an earlier, interrupted migrate).
    pub already_there: usize,
    /// Histories of removed workspaces ([`crate::removed_name`]) copied, or already there entry for entry.
    pub removed_histories: usize,
}

/// Copies every workspace of `from` into `to`: export from `from` (integrity-checked), import into
/// `to`, export again from `to` and compare, so a workspace counts as migrated only once it reads back
/// exactly as it was (lineage, serial, content and every history entry); then the histories kept for
/// removed workspaces ([`crate::removed_name`]), each read back and compared too. Calls `progress` once
/// per shoot, in shoot order, then once per removed workspace's history, by name. Idempotent: a
/// workspace `to` already holds at the same lineage and serial is [`Imported::AlreadyThere`] (and
/// compared too), so is a removed workspace's history it holds entry for entry. Stops at the first
/// error, which names the shoot; what was copied before stays copied. Locks are not copied: a lock
/// belongs to a running process.
pub fn migrate(
    from: &dyn StateStore,
    to: &dyn StateStore,
    progress: &mut dyn FnMut(&str, Imported),
) -> Result<MigrateReport, StateError> {
    let mut report = MigrateReport::default();
    for summary in from.list()? {
        // A shoot locked by a run that never committed has a lock record but no workspace.
        let Some(exported) = from.export(&summary.shoot)? else {
            continue;
        };
        let outcome = to.import(&exported)?;
        let back = to.export(&summary.shoot)?;
        if back.as_ref() != Some(&exported) {
            let what = match back {
                None => "it is missing".to_string(),
                Some(back) if back.workspace != exported.workspace => format!(
                    "the workspace reads back differently (serial {} instead of {})",
                    back.workspace.serial, exported.workspace.serial
                ),
                Some(back) => format!(
                    "its history reads back differently ({} entries instead of {})",
                    back.history.len(),
                    exported.history.len()
                ),
            };
            return Err(StateError::Corrupt {
                shoot: summary.shoot,
                detail: format!(
                    "after migrating it, the destination does not hold what the source holds: {what}; nothing was \
                     removed from the source"
                ),
            });
        }
        match outcome {
            Imported::Created => report.created += 1,
            Imported::AlreadyThere => report.already_there += 1,
        }
        progress(&summary.shoot, outcome);
    }
    for name in from.removed_histories()? {
        let history = from.history(&name)?;
        let outcome = to.import_removed_history(&name, &history)?;
        let back = to.history(&name)?;
        if back != history {
            return Err(StateError::Corrupt {
                shoot: name,
                detail: format!(
                    "after migrating this removed workspace's history, the destination holds {} entries where \
                     the source holds {}; nothing was removed from the source",
                    back.len(),
                    history.len()
                ),
            });
        }
        report.removed_histories += 1;
        progress(&name, outcome);
    }
    Ok(report)
}
