//! Why a node is in the plan: a [`ReasonCode`] policy tools match on, and the words a reviewer reads.
//!
//! The code set is small and stable (docs/usage/reviewing-plans.md has the table): a code is never
//! renamed or given another meaning; a new one is an addition. In the JSON the words stay the node's
//! `reason` string and the code is `reason_code` beside it. A plan written before codes existed has no
//! `reason_code`; it is read back without one (and written back without one, so its digest verifies).

use crate::Action;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of reason a node has, as policy tools match on it. Serialized in kebab-case.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ReasonCode {
    /// Managed, wanted, and looked up and found absent: created.
    Absent,
    /// Managed, wanted, exists, and some managed attribute differs from the live resource: updated.
    Differs,
    /// Managed, wanted, and an attribute that cannot change in place (ForceNew) differs: replaced.
    ForceNew,
    /// Managed, wanted, and matches the live resource: nothing to do.
    InSync,
    /// The user's own resource (bring-your-own): read or verified, never written, never deleted.
    ByoUserOwned,
    /// A task the configuration gates out (e.g. user-managed egress): shown, never touched.
    GatedOut,
    /// Not planned yet: it needs a value the cloud assigns during the apply; plan again after it.
    KnownAfterApply,
    /// trellis created it for this shoot (the state records it) and the configuration no longer asks
    /// for it: deleted.
    RecordedInState,
    /// Named after this shoot but not recorded in state (an earlier trellis or upstream made it), and
    /// the configuration no longer asks for it: deleted, as upstream's name scan deletes it.
    FoundByName,
    /// Part of destroying the shoot's infrastructure (`trellis destroy`): deleted.
    Destroy,
    /// Written at run time by another controller (the CCM, the bastion controller): reported when read,
    /// deleted only where a named spec rule says so (the safety nets on destroy).
    RuntimeOwned,
    /// Managed, wanted and existing, and the user asked for its replacement (`--replace ADDRESS`):
    /// deleted and created again, whatever the diff found.
    ReplaceRequested,
}

impl ReasonCode {
    pub const ALL: [ReasonCode; 12] = [
        ReasonCode::Absent,
        ReasonCode::Differs,
        ReasonCode::ForceNew,
        ReasonCode::InSync,
        ReasonCode::ByoUserOwned,
        ReasonCode::GatedOut,
        ReasonCode::KnownAfterApply,
        ReasonCode::RecordedInState,
        ReasonCode::FoundByName,
        ReasonCode::Destroy,
        ReasonCode::RuntimeOwned,
        ReasonCode::ReplaceRequested,
    ];

    /// The name as the plan JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::Absent => "absent",
            ReasonCode::Differs => "differs",
            ReasonCode::ForceNew => "force-new",
            ReasonCode::InSync => "in-sync",
            ReasonCode::ByoUserOwned => "byo-user-owned",
            ReasonCode::GatedOut => "gated-out",
            ReasonCode::KnownAfterApply => "known-after-apply",
            ReasonCode::RecordedInState => "recorded-in-state",
            ReasonCode::FoundByName => "found-by-name",
            ReasonCode::Destroy => "destroy",
            ReasonCode::RuntimeOwned => "runtime-owned",
            ReasonCode::ReplaceRequested => "replace-requested",
        }
    }

    /// The actions a node with this code has (the table in docs/usage/reviewing-plans.md).
    pub fn actions(self) -> &'static [Action] {
        match self {
            ReasonCode::Absent => &[Action::Create],
            ReasonCode::Differs => &[Action::Update],
            ReasonCode::ForceNew | ReasonCode::ReplaceRequested => &[Action::Replace],
            ReasonCode::InSync => &[Action::Noop],
            ReasonCode::ByoUserOwned => &[Action::Verify, Action::Read, Action::Skip],
            ReasonCode::GatedOut | ReasonCode::KnownAfterApply => &[Action::Skip],
            ReasonCode::RecordedInState | ReasonCode::FoundByName | ReasonCode::Destroy => &[Action::Delete],
            ReasonCode::RuntimeOwned => &[Action::Read, Action::Delete],
        }
    }

    /// Terraform's `action_reason` (JSON plan representation) where one means the same; `None` where
    /// Terraform has none (it then leaves the field out, as for a create or a destroy).
    pub fn terraform_action_reason(self) -> Option<&'static str> {
        match self {
            ReasonCode::ForceNew => Some("replace_because_cannot_update"),
            ReasonCode::ReplaceRequested => Some("replace_by_request"),
            // In state, not in the configuration: Terraform's "no resource config".
            ReasonCode::RecordedInState | ReasonCode::FoundByName => Some("delete_because_no_resource_config"),
            _ => None,
        }
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a node is in the plan: its code and the words (the rule behind it).
///
/// Built only with a code ([`Reason::new`]). A node read from a plan file written before codes
/// existed has none ([`Reason::code`] is `None`) and is written back without one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reason {
    code: Option<ReasonCode>,
    detail: String,
}

impl Reason {
    pub fn new(code: ReasonCode, detail: impl Into<String>) -> Reason {
        Reason { code: Some(code), detail: detail.into() }
    }

    /// A reason as a plan file holds it (`reason_code` is absent in files of earlier versions).
    pub(crate) fn from_file(code: Option<ReasonCode>, detail: String) -> Reason {
        Reason { code, detail }
    }

    /// The code; `None` only for a node read from a plan file written before codes existed.
    pub fn code(&self) -> Option<ReasonCode> {
        self.code
    }

    /// The words: the node's `reason` in the JSON.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

/// `[code] detail`, or the detail alone for a reason without a code. Not escaped.
impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "[{code}] {}", self.detail),
            None => f.write_str(&self.detail),
        }
    }
}
