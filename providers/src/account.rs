//! A shoot's infrastructure lives in one cloud account: an Azure subscription, a GCP project.
//!
//! The account a plan is made for comes from the command (`--subscription`, `--project`, or the
//! simulated cloud's), not from the Shoot. Planned in another account than the one its workspace
//! records, a shoot would be built a second time there — and on Azure, whose addresses do not name
//! the subscription, the resources recorded in the old one would be planned for deletion under the
//! same addresses as the new ones (a plan whose apply cannot order them). [`check`] refuses such a
//! plan before anything is read: the likely cause is a wrong account in the environment (a CI job's
//! `AZURE_SUBSCRIPTION_ID`), and a move is two explicit steps (destroy there, apply here).

use trellis_plans::Ownership;
use trellis_state::Workspace;

/// How a provider names its accounts, for [`AccountMoved`]'s words.
pub struct Account {
    /// `subscription`, `project`.
    pub word: &'static str,
    /// How a plan chooses the account (the flag, and the simulated cloud's way).
    pub chosen_by: &'static str,
    /// The account of a cloud id, if the id names one (read by the provider's id parser).
    pub of: fn(&str) -> Option<String>,
    /// Whether two accounts are the same (ARM compares case-insensitively).
    pub same: fn(&str, &str) -> bool,
}

/// A plan for another account than the one that holds what the workspace records.
#[derive(Debug, thiserror::Error)]
#[error(
    "the workspace records the resources trellis created for this shoot in {word} {recorded} (e.g. {example}), \
     and this plan is for {word} {now}: trellis does not move a shoot to another {word} (it would build the \
     shoot a second time there); plan for {word} {recorded} ({chosen_by}), or destroy the shoot in {word} \
     {recorded} first"
)]
pub struct AccountMoved {
    pub word: &'static str,
    pub chosen_by: &'static str,
    pub recorded: String,
    pub example: String,
    pub now: String,
}

/// Refuses a plan for account `now` when `ws` records managed resources and none of them is in
/// `now` (a workspace without any — a new shoot, one destroyed — may be planned anywhere). Resources
/// recorded as the user's are not looked at: a user's route table may well sit in another
/// subscription.
pub fn check(ws: &Workspace, now: &str, account: &Account) -> Result<(), AccountMoved> {
    let managed: Vec<(&str, String)> = ws
        .resources
        .values()
        .filter(|r| r.ownership == Ownership::Managed)
        .filter_map(|r| Some((r.id.as_str(), (account.of)(&r.id)?)))
        .collect();
    if managed.is_empty() || managed.iter().any(|(_, a)| (account.same)(a, now)) {
        return Ok(());
    }
    let (example, recorded) = &managed[0];
    Err(AccountMoved {
        word: account.word,
        chosen_by: account.chosen_by,
        recorded: recorded.clone(),
        example: example.to_string(),
        now: now.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_plans::Kind;
    use trellis_state::StoredResource;

    const PROJECT: Account = Account {
        word: "project",
        chosen_by: "--project",
        of: |id| trellis_planner::ids::GceIds::project(id).map(str::to_string),
        same: |a, b| a == b,
    };

    fn ws(resources: &[(&str, Ownership)]) -> Workspace {
        let mut ws = Workspace::new("shoot--p--s");
        for (i, (id, ownership)) in resources.iter().enumerate() {
            ws.resources.insert(
                format!("gcp.firewall.x.f{i}"),
                StoredResource { kind: Kind::new("firewall"), id: id.to_string(), ownership: *ownership },
            );
        }
        ws
    }

    #[test]
    fn only_a_workspace_whose_managed_resources_are_all_elsewhere_is_refused() {
        let empty = ws(&[]);
        assert!(check(&empty, "b", &PROJECT).is_ok(), "a new shoot is planned anywhere");
        let in_a = ws(&[("projects/a/global/firewalls/f", Ownership::Managed)]);
        assert!(check(&in_a, "a", &PROJECT).is_ok());
        let err = check(&in_a, "b", &PROJECT).unwrap_err().to_string();
        assert_eq!(
            err,
            "the workspace records the resources trellis created for this shoot in project a (e.g. \
             projects/a/global/firewalls/f), and this plan is for project b: trellis does not move a shoot to \
             another project (it would build the shoot a second time there); plan for project a (--project), or \
             destroy the shoot in project a first"
        );
        // A user's resource in the plan's project does not make the move one.
        let users = ws(&[
            ("projects/a/global/firewalls/f", Ownership::Managed),
            ("projects/b/global/networks/vpc", Ownership::User),
        ]);
        assert!(check(&users, "b", &PROJECT).is_err());
        // One managed resource in the plan's project: the workspace spans both, which is not a move.
        let both = ws(&[
            ("projects/a/global/firewalls/f", Ownership::Managed),
            ("projects/b/global/firewalls/g", Ownership::Managed),
        ]);
        assert!(check(&both, "b", &PROJECT).is_ok());
    }
}
