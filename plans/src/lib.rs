//! The plan document: what `trellis plan` shows, what reviewers diff and what `trellis apply` executes.
//!
//! This crate knows nothing about clouds. It holds the serialisable document ([`Plan`]), its stable
//! JSON form, the human renderers ([`render`]), the semantic diff of two plans ([`diff`]) and the
//! escaping every renderer applies to the strings it prints ([`escape`]).
//!
//! Architecture invariant: the JSON of a plan is a pure function of its inputs. Nothing in here reads a
//! clock, a random number generator or the environment (the text renderer's colour switch is passed in).

pub mod artifact;
pub mod diff;
pub mod escape;
pub mod graphs;
pub mod html;
pub mod ident;
pub mod merge;
pub mod reason;
pub mod render;
pub mod stream;
pub mod terraform;

pub use artifact::{Artifact, ArtifactName, Artifacts, CloudProviderConfig, ConfigFormat, ReservedArtifactName, Shown};
pub use ident::{Kind, Provider};
pub use reason::{Reason, ReasonCode};
pub use stream::{PlanSetWriter, RenderedPlan};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Bumped whenever a reader of an older document could misread a newer one.
pub const FORMAT_VERSION: u32 = 1;

/// What happens to one node when the plan is applied.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The resource does not exist and will be created.
    Create,
    /// The resource exists; some managed attributes differ and are written in place.
    Update,
    /// A ForceNew attribute differs: the resource is deleted and created again.
    Replace,
    /// The resource is managed by trellis but no longer desired.
    Delete,
    /// Read and check invariants; apply fails if one is broken. Never writes.
    Verify,
    /// Discovery that feeds values (e.g. a managed identity's client id). Never writes.
    Read,
    /// Desired and observed agree.
    Noop,
    /// Gated out by the configuration (the reason says which rule).
    Skip,
}

impl Action {
    pub const ALL: [Action; 8] = [
        Action::Create,
        Action::Update,
        Action::Replace,
        Action::Delete,
        Action::Verify,
        Action::Read,
        Action::Noop,
        Action::Skip,
    ];

    /// Whether applying this action writes to the cloud.
    pub fn is_write(self) -> bool {
        matches!(self, Action::Create | Action::Update | Action::Replace | Action::Delete)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Replace => "replace",
            Action::Delete => "delete",
            Action::Verify => "verify",
            Action::Read => "read",
            Action::Noop => "noop",
            Action::Skip => "skip",
        }
    }

    /// The symbol the human renderers print before a node, Terraform-like where Terraform has one:
    /// `+` create, `~` update, `-/+` replace, `-` delete, `<=` read; trellis adds `?` verify and `#` skip
    /// (a comment: nothing happens). A no-op has no symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Action::Create => "+",
            Action::Update => "~",
            Action::Replace => "-/+",
            Action::Delete => "-",
            Action::Verify => "?",
            Action::Read => "<=",
            Action::Noop => "",
            Action::Skip => "#",
        }
    }
}

/// Who owns a resource, and so what trellis may do to it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Ownership {
    /// trellis creates, updates and deletes it.
    Managed,
    /// Bring-your-own: trellis only reads and verifies it. It is never written.
    User,
    /// Written by other controllers at run time (CCM routes and LB rules, bastion rules).
    Runtime,
}

impl Ownership {
    pub fn as_str(self) -> &'static str {
        match self {
            Ownership::Managed => "managed",
            Ownership::User => "user",
            Ownership::Runtime => "runtime",
        }
    }
}

/// The mode a shoot is reconciled in. Derived from the configuration, never an input.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Gardener creates the network resources (today's behaviour).
    Managed,
    /// The user brought the worker subnet (Azure `networks.subnet`, GCP `networks.subnetWorkers`).
    UserManagedEgress,
}

impl Mode {
    /// The name as the plan JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Managed => "managed",
            Mode::UserManagedEgress => "user-managed-egress",
        }
    }
}

/// The state the plan was made against. `apply` refuses the plan when either moved.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Prior {
    /// The state workspace's lineage (a UUID made when the workspace was created); `None` for a new shoot.
    pub lineage: Option<String>,
    /// The workspace's serial at plan time (0 for a new shoot).
    pub serial: u64,
}

/// One changed attribute: `path` is a JSON pointer into the resource's REST JSON.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Change {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

/// One invariant a `verify` node checks against the live resource.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Check {
    /// JSON pointer into the resource's REST JSON.
    pub path: String,
    /// The value the attribute must have. `null` means: must be absent.
    pub expect: Value,
    /// What is wrong when the check fails, in words a user can act on.
    pub message: String,
}

/// Who owns a resource a plan deletes: trellis itself, or the runtime when a spec rule says so (e.g.
/// the GCP BYO delete safety net). A user-owned resource is never deleted, so it has no variant here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeleteOwnership {
    Managed,
    Runtime,
}

/// Who owns a resource that is only read. A managed resource is never merely read: it is written or
/// found to match (`noop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadOwnership {
    User,
    Runtime,
}

/// What applying a node does, with exactly the data that operation needs.
///
/// Architecture invariant: the ownership is part of the operation, so a write to a resource trellis
/// does not own cannot be built: `create`, `update`, `replace` and `noop` are managed, `verify` is
/// user-owned, `read` is user- or runtime-owned, `delete` is managed or (by a named rule) runtime-owned.
/// A patch exists only on writes (and on a no-op, which says what was compared), checks only on a
/// verify, references to detach only on a replace.
#[derive(Clone, Debug, PartialEq)]
pub enum Operation {
    /// The resource does not exist: PUT the patch onto an empty body.
    Create { patch: Value, changes: Vec<Change> },
    /// Some managed attributes differ: merge the patch into the live resource and PUT it.
    Update { patch: Value, changes: Vec<Change> },
    /// A ForceNew attribute differs: detach the references, delete, create from the patch, re-attach.
    Replace { patch: Value, changes: Vec<Change>, detach: Vec<Detach> },
    /// No longer desired; `changes` shows what goes (`/id` before, nothing after).
    Delete { ownership: DeleteOwnership, changes: Vec<Change> },
    /// A user-owned resource read and checked; apply fails when a check fails.
    Verify { checks: Vec<Check> },
    /// A resource read for its values.
    Read { ownership: ReadOwnership },
    /// A managed resource that matches its patch.
    Noop { patch: Option<Value> },
    /// Gated out by the configuration; never touched.
    Skip { ownership: Ownership },
}

impl Operation {
    /// The action this operation is listed under.
    pub fn action(&self) -> Action {
        match self {
            Operation::Create { .. } => Action::Create,
            Operation::Update { .. } => Action::Update,
            Operation::Replace { .. } => Action::Replace,
            Operation::Delete { .. } => Action::Delete,
            Operation::Verify { .. } => Action::Verify,
            Operation::Read { .. } => Action::Read,
            Operation::Noop { .. } => Action::Noop,
            Operation::Skip { .. } => Action::Skip,
        }
    }

    /// Who owns the resource.
    pub fn ownership(&self) -> Ownership {
        match self {
            Operation::Create { .. }
            | Operation::Update { .. }
            | Operation::Replace { .. }
            | Operation::Noop { .. } => Ownership::Managed,
            Operation::Delete { ownership: DeleteOwnership::Managed, .. } => Ownership::Managed,
            Operation::Delete { ownership: DeleteOwnership::Runtime, .. } => Ownership::Runtime,
            Operation::Verify { .. } => Ownership::User,
            Operation::Read { ownership: ReadOwnership::User } => Ownership::User,
            Operation::Read { ownership: ReadOwnership::Runtime } => Ownership::Runtime,
            Operation::Skip { ownership } => *ownership,
        }
    }
}

/// One resource of the plan.
///
/// The JSON form is flat (`action`, `ownership`, `changes`, `patch`, `checks`, `detach` next to the
/// other fields, in that order); reading it back refuses every combination an [`Operation`] cannot
/// hold (see [`NodeShapeError`]).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "NodeJsonOwned")]
pub struct Node {
    /// Stable, unique, human-readable id, e.g. `azure.route_table.shoot--foo--bar.worker_route_table`.
    pub address: String,
    pub kind: Kind,
    pub name: String,
    /// Azure: the resource group; GCP: project/region; domains: the seed or shoot.
    pub scope: String,
    /// The cloud id (ARM id, GCE selfLink) when known. Every node but a skip has one.
    pub id: Option<String>,
    pub op: Operation,
    /// Why: a code policy tools match on, and words a reviewer understands, with the rule behind it.
    /// The JSON keeps the words as `reason` and adds the code as `reason_code`.
    pub reason: Reason,
    pub depends_on: Vec<String>,
    /// The whole object as discovery read it, for a node that acts on an existing resource (update,
    /// replace, delete, no-op, verify, read); `None` for a create or a skip, and in plan files written
    /// before trellis recorded it. Shown (Terraform JSON's `before` and `prior_state`), covered by the
    /// digest, never compared by `apply` (the resource is re-read right before it is written, and
    /// attributes trellis does not manage — a CCM's route — may move without making a plan stale).
    pub observed: Option<Value>,
}

impl Node {
    pub fn action(&self) -> Action {
        self.op.action()
    }

    pub fn ownership(&self) -> Ownership {
        self.op.ownership()
    }

    /// Before/after of each changed attribute (create: after only; delete: before only).
    pub fn changes(&self) -> &[Change] {
        match &self.op {
            Operation::Create { changes, .. }
            | Operation::Update { changes, .. }
            | Operation::Replace { changes, .. }
            | Operation::Delete { changes, .. } => changes,
            _ => &[],
        }
    }

    /// For create/update/replace (and a no-op): the JSON merge patch (RFC 7386) of the managed attributes.
    pub fn patch(&self) -> Option<&Value> {
        match &self.op {
            Operation::Create { patch, .. } | Operation::Update { patch, .. } | Operation::Replace { patch, .. } => {
                Some(patch)
            }
            Operation::Noop { patch } => patch.as_ref(),
            _ => None,
        }
    }

    /// For verify: the invariants re-checked at apply time.
    pub fn checks(&self) -> &[Check] {
        match &self.op {
            Operation::Verify { checks } => checks,
            _ => &[],
        }
    }

    /// For replace: references to this resource from other managed resources of the plan, removed
    /// before the delete and restored after the create (Azure refuses to delete a referenced resource).
    pub fn detach(&self) -> &[Detach] {
        match &self.op {
            Operation::Replace { detach, .. } => detach,
            _ => &[],
        }
    }
}

/// A node as the plan JSON spells it: flat, every field of every operation optional. Only used to
/// read and write [`Node`] (borrowed when writing, owned when reading); the field order is the document's.
#[derive(Serialize, Deserialize)]
struct NodeJson<'a> {
    address: Cow<'a, str>,
    kind: Kind,
    name: Cow<'a, str>,
    scope: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<Cow<'a, str>>,
    action: Action,
    ownership: Ownership,
    reason: Cow<'a, str>,
    /// Absent in plan files written before reasons had codes; such a node is written back without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason_code: Option<ReasonCode>,
    #[serde(default)]
    depends_on: Cow<'a, [String]>,
    #[serde(default)]
    changes: Cow<'a, [Change]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    patch: Option<Cow<'a, Value>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    checks: Cow<'a, [Check]>,
    #[serde(default, skip_serializing_if = "is_empty")]
    detach: Cow<'a, [Detach]>,
    /// Absent in plan files written before nodes carried the object as read; written back without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed: Option<Cow<'a, Value>>,
}

fn is_empty<T>(items: &[T]) -> bool {
    items.is_empty()
}

type NodeJsonOwned = NodeJson<'static>;

impl Serialize for Node {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        NodeJson {
            address: Cow::Borrowed(&self.address),
            kind: self.kind,
            name: Cow::Borrowed(&self.name),
            scope: Cow::Borrowed(&self.scope),
            id: self.id.as_deref().map(Cow::Borrowed),
            action: self.action(),
            ownership: self.ownership(),
            reason: Cow::Borrowed(self.reason.detail()),
            reason_code: self.reason.code(),
            depends_on: Cow::Borrowed(&self.depends_on),
            changes: Cow::Borrowed(self.changes()),
            patch: self.patch().map(Cow::Borrowed),
            checks: Cow::Borrowed(self.checks()),
            detach: Cow::Borrowed(self.detach()),
            observed: self.observed.as_ref().map(Cow::Borrowed),
        }
        .serialize(serializer)
    }
}

/// A node in a plan file that no plan could contain: a write to a resource trellis does not own, or a
/// field its operation does not have (a verify with a patch, a create without one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node {address}: {problem}")]
pub struct NodeShapeError {
    pub address: String,
    pub problem: String,
}

impl TryFrom<NodeJsonOwned> for Node {
    type Error = NodeShapeError;

    fn try_from(n: NodeJsonOwned) -> Result<Node, NodeShapeError> {
        let action = n.action.as_str();
        let refuse = |problem: String| NodeShapeError { address: n.address.to_string(), problem };
        if n.id.is_none() && n.action != Action::Skip {
            return Err(refuse(format!("action `{action}` without a cloud id")));
        }
        let carries = |field: &str| match n.action {
            Action::Create | Action::Update => matches!(field, "patch" | "changes"),
            Action::Replace => matches!(field, "patch" | "changes" | "detach"),
            Action::Delete => field == "changes",
            Action::Verify => field == "checks",
            Action::Noop => field == "patch",
            Action::Read | Action::Skip => false,
        };
        // A create's resource does not exist yet, a skip is never looked at: neither has an object as read.
        if n.observed.is_some() && matches!(n.action, Action::Create | Action::Skip) {
            return Err(refuse(format!("action `{action}` with an object as read (`observed`)")));
        }
        let present = [
            ("patch", "a patch", n.patch.is_some()),
            ("changes", "attribute changes", !n.changes.is_empty()),
            ("checks", "checks", !n.checks.is_empty()),
            ("detach", "references to detach", !n.detach.is_empty()),
        ];
        if let Some((_, words, _)) = present.iter().find(|(field, _, set)| *set && !carries(field)) {
            return Err(refuse(format!("action `{action}` with {words}")));
        }
        let patch =
            || n.patch.clone().map(Cow::into_owned).ok_or_else(|| refuse(format!("action `{action}` without a patch")));
        let runtime = n.ownership == Ownership::Runtime;
        let changes = n.changes.into_owned();
        let op = match n.action {
            Action::Create => Operation::Create { patch: patch()?, changes },
            Action::Update => Operation::Update { patch: patch()?, changes },
            Action::Replace => Operation::Replace { patch: patch()?, changes, detach: n.detach.into_owned() },
            Action::Delete => Operation::Delete {
                ownership: if runtime { DeleteOwnership::Runtime } else { DeleteOwnership::Managed },
                changes,
            },
            Action::Verify => Operation::Verify { checks: n.checks.into_owned() },
            Action::Read => {
                Operation::Read { ownership: if runtime { ReadOwnership::Runtime } else { ReadOwnership::User } }
            }
            Action::Noop => Operation::Noop { patch: n.patch.map(Cow::into_owned) },
            Action::Skip => Operation::Skip { ownership: n.ownership },
        };
        // The operation decides who may own the resource; the file must agree.
        if op.ownership() != n.ownership {
            let owner = match n.ownership {
                Ownership::Managed => "managed resource",
                Ownership::User => "user-owned resource",
                Ownership::Runtime => "runtime-owned resource",
            };
            let write = if n.action.is_write() { "write " } else { "" };
            return Err(refuse(format!("{owner} with {write}action `{action}`")));
        }
        Ok(Node {
            address: n.address.into_owned(),
            kind: n.kind,
            name: n.name.into_owned(),
            scope: n.scope.into_owned(),
            id: n.id.map(Cow::into_owned),
            op,
            reason: Reason::from_file(n.reason_code, n.reason.into_owned()),
            depends_on: n.depends_on.into_owned(),
            observed: n.observed.map(Cow::into_owned),
        })
    }
}

/// A reference to a replaced resource, held by another managed resource of the same plan.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Detach {
    /// The cloud id of the resource holding the reference.
    pub id: String,
    /// JSON pointer of the reference: an object `{"id": …}`, or an array of such objects.
    pub path: String,
}

/// Counts per action.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Summary {
    pub create: usize,
    pub update: usize,
    pub replace: usize,
    pub delete: usize,
    pub verify: usize,
    pub read: usize,
    pub noop: usize,
    pub skip: usize,
    /// Workspaces applying records beyond its resources (0 or 1 a plan; [`Plan::record`]): a plan whose
    /// only change is its workspace — the first record of a shoot, a changed last-applied configuration or
    /// phase, changed artifacts — is a change (`--detailed-exitcode` exits 2) that `apply` records.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub record: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Why applying a plan changes its workspace beyond the resources of its nodes ([`Plan::record`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum RecordReason {
    /// Nothing was ever applied for the shoot: the apply makes its workspace.
    NewWorkspace,
    /// What the provider keeps between runs changes: the last-applied configuration, a decision, a phase.
    ProviderState,
    /// The artifacts differ from the last applied ones ([`Plan::applied_artifacts`] shows them before).
    Artifacts,
}

impl RecordReason {
    /// As the plan JSON and the text say it.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordReason::NewWorkspace => "the shoot's first record (nothing applied yet)",
            RecordReason::ProviderState => "the last-applied configuration changes",
            RecordReason::Artifacts => "the artifacts change",
        }
    }
}

impl Summary {
    /// The sum of `plans`' summaries: a plan file's totals.
    pub fn total<'a>(plans: impl IntoIterator<Item = &'a Plan>) -> Summary {
        let mut total = Summary::default();
        for plan in plans {
            total.add(&plan.summary);
        }
        total
    }

    pub fn of(nodes: &[Node]) -> Summary {
        let mut s = Summary::default();
        for n in nodes {
            *s.slot(n.action()) += 1;
        }
        s
    }

    fn slot(&mut self, a: Action) -> &mut usize {
        match a {
            Action::Create => &mut self.create,
            Action::Update => &mut self.update,
            Action::Replace => &mut self.replace,
            Action::Delete => &mut self.delete,
            Action::Verify => &mut self.verify,
            Action::Read => &mut self.read,
            Action::Noop => &mut self.noop,
            Action::Skip => &mut self.skip,
        }
    }

    pub fn count(&self, a: Action) -> usize {
        match a {
            Action::Create => self.create,
            Action::Update => self.update,
            Action::Replace => self.replace,
            Action::Delete => self.delete,
            Action::Verify => self.verify,
            Action::Read => self.read,
            Action::Noop => self.noop,
            Action::Skip => self.skip,
        }
    }

    /// Whether applying would change anything: a cloud write, or its workspace ([`Summary::record`]).
    pub fn has_changes(&self) -> bool {
        self.has_writes() || self.record > 0
    }

    /// Whether applying would write to the cloud.
    pub fn has_writes(&self) -> bool {
        self.create + self.update + self.replace + self.delete > 0
    }

    /// Adds another summary's counts to this one (fleet totals).
    pub fn add(&mut self, other: &Summary) {
        for a in Action::ALL {
            *self.slot(a) += other.count(a);
        }
        self.record += other.record;
    }
}

/// The plan of one shoot.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Plan {
    pub format_version: u32,
    /// Technical id, `shoot--<project>--<name>`.
    pub shoot: String,
    pub provider: Provider,
    /// How the provider reconciles this shoot; absent for a provider without modes (domains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    pub prior: Prior,
    /// sha256 (hex) of the plan body — its nodes and artifacts ([`body_digest`]). `PlanSet::from_json`
    /// refuses a file whose body does not match it, so a reviewer can pin exactly what was approved
    /// (`trellis apply PLAN --expect-digest …`).
    pub digest: String,
    /// Sorted by address.
    pub nodes: Vec<Node>,
    pub artifacts: Artifacts,
    #[serde(default)]
    pub warnings: Vec<String>,
    pub summary: Summary,
    /// The manifest the plan was made from, so `trellis apply PLAN` needs nothing else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Why applying changes the workspace beyond the nodes' resources (empty: it does not); counted
    /// in [`Summary::record`]. Like `prior`, a fact of the workspace the plan was made against, not
    /// covered by the digest (`apply` refuses a plan whose workspace moved on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub record: Vec<RecordReason>,
    /// The artifacts of the last apply, when this plan's differ from them (the renderers show each
    /// change before → after); `None` when they are the same or nothing was applied yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_artifacts: Option<Artifacts>,
    /// A destroy plan (`trellis plan --destroy`, the provider's delete graph): `apply PLAN` executes it
    /// as `destroy` does and empties the workspace. Not covered by the digest: `apply` re-plans the
    /// same operation and refuses any difference, so a flipped flag is a stale plan.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub destroy: bool,
    /// A partial plan (`--target ADDRESS`): the addresses it was restricted to, sorted; it holds only
    /// their nodes and what they depend on ([`Plan::restrict`]). Covered by the digest (a saved partial
    /// plan cannot be passed off as a whole one); empty for a whole plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
}

/// Where a plan came from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Source {
    /// The manifest file, relative to the working directory when it is inside it ([`Source::file_of`]).
    pub file: String,
    /// The Shoot, as parsed (JSON).
    pub shoot: Value,
}

impl Source {
    /// How a plan records the manifest file `path`: relative to the working directory `cwd` when it is
    /// inside it (`/ci/checkout/shoots/a.yaml` and `./shoots/a.yaml` from `/ci/checkout` are both
    /// `shoots/a.yaml`), so the same inputs give byte-identical plans in any checkout; a path outside
    /// the working directory is kept as given. `/`-separated on every system.
    pub fn file_of(path: &std::path::Path, cwd: Option<&std::path::Path>) -> String {
        let inside = path.is_absolute().then(|| cwd.and_then(|cwd| path.strip_prefix(cwd).ok())).flatten();
        let path = inside.unwrap_or(path);
        let parts: Vec<String> = path
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .map(|c| match c {
                std::path::Component::RootDir => String::new(),
                other => other.as_os_str().to_string_lossy().into_owned(),
            })
            .collect();
        match parts.as_slice() {
            [] => ".".to_string(),
            [root] if root.is_empty() => "/".to_string(),
            _ => parts.join("/"),
        }
    }
}

impl Plan {
    /// Whether this is a plan derived from a Shoot besides its infrastructure plan (the domains plan of a
    /// Shoot whose Seed is among the inputs): a plan without a [`Mode`], since every infrastructure
    /// provider reconciles in one. Renderers tell a shoot's two plans apart by it.
    pub fn is_derived(&self) -> bool {
        self.mode.is_none()
    }

    /// This plan with only `nodes` (a provider's fleet facts, `Provider::fleet_facts` in
    /// trellis-providers): its artifacts, warnings and source left out, the rest copied. Copies no
    /// node of its own, so a reduced plan costs what it keeps.
    pub fn reduced_to(&self, nodes: Vec<Node>) -> Plan {
        Plan {
            format_version: self.format_version,
            shoot: self.shoot.clone(),
            provider: self.provider,
            mode: self.mode,
            prior: self.prior.clone(),
            digest: self.digest.clone(),
            nodes,
            artifacts: Artifacts::default(),
            warnings: Vec::new(),
            summary: self.summary.clone(),
            source: None,
            record: self.record.clone(),
            applied_artifacts: self.applied_artifacts.clone(),
            destroy: self.destroy,
            targets: self.targets.clone(),
        }
    }

    /// The plan document of one shoot, with its derived parts (digest, summary) computed from its body;
    /// `source` is filled in by the caller, which knows the manifest file.
    pub fn new(
        shoot: String,
        provider: Provider,
        mode: Option<Mode>,
        prior: Prior,
        nodes: Vec<Node>,
        artifacts: Artifacts,
        warnings: Vec<String>,
    ) -> Plan {
        let mut plan = Plan::undigested(shoot, provider, mode, prior, nodes, artifacts, warnings);
        plan.fill_digest();
        plan
    }

    /// [`Plan::new`] with its `digest` left empty, for a caller that renders the plan's JSON anyway:
    /// [`RenderedPlan::of_filling`] hashes the body while it writes it (instead of serialising the body a
    /// second time for the digest) and fills the digest in; [`Plan::fill_digest`] computes it otherwise.
    /// A plan must not be used before either ran.
    pub fn undigested(
        shoot: String,
        provider: Provider,
        mode: Option<Mode>,
        prior: Prior,
        nodes: Vec<Node>,
        artifacts: Artifacts,
        warnings: Vec<String>,
    ) -> Plan {
        Plan {
            format_version: FORMAT_VERSION,
            shoot,
            provider,
            mode,
            prior,
            digest: String::new(),
            summary: Summary::of(&nodes),
            nodes,
            artifacts,
            warnings,
            source: None,
            record: Vec::new(),
            applied_artifacts: None,
            destroy: false,
            targets: Vec::new(),
        }
    }

    /// Records why applying changes the workspace ([`Plan::record`], counted in the summary) and the
    /// last applied artifacts when they differ from the plan's.
    pub fn set_record(&mut self, mut record: Vec<RecordReason>, applied_artifacts: Option<Artifacts>) {
        record.sort();
        record.dedup();
        self.summary.record = usize::from(!record.is_empty());
        self.record = record;
        self.applied_artifacts = applied_artifacts;
    }

    /// The summary the plan's nodes and record make ([`PlanSet::from_json`] refuses another).
    pub fn expected_summary(&self) -> Summary {
        Summary { record: usize::from(!self.record.is_empty()), ..Summary::of(&self.nodes) }
    }

    pub fn has_changes(&self) -> bool {
        self.summary.has_changes()
    }

    /// The provider and, when it has one, the mode, as the renderers print them: `azure, managed`,
    /// `domains`.
    pub fn provider_and_mode(&self) -> String {
        match self.mode {
            Some(mode) => format!("{}, {}", self.provider.as_str(), mode.as_str()),
            None => self.provider.as_str().to_string(),
        }
    }

    pub fn node(&self, address: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.address == address)
    }

    /// Computes the digest of a plan made by [`Plan::undigested`] (a digest already there is kept).
    pub fn fill_digest(&mut self) {
        if self.digest.is_empty() {
            self.digest = self.body_digest();
        }
    }

    /// The digest this plan's body has now (equal to `digest` unless the body was changed).
    pub fn body_digest(&self) -> String {
        targeted_body_digest(&self.nodes, &self.artifacts, &self.targets)
    }

    /// Whether this is a partial plan (`--target ADDRESS`): it holds only some of the shoot's nodes.
    pub fn is_partial(&self) -> bool {
        !self.targets.is_empty()
    }

    /// Restricts the plan to the nodes of `targets` (addresses of its nodes) and everything they depend
    /// on, transitively — and, for a replace, the managed resources holding the references it detaches —
    /// as Terraform's `-target` does; a destroy plan's dependencies run the other way (a resource is
    /// deleted after what depends on it), so there a target brings what depends on it. The plan
    /// records the targets (covered by the digest), records nothing beyond the resources of its nodes
    /// (`record` emptied: a partial apply leaves the artifacts and the provider state as they were) and
    /// warns that it may be incomplete. Returns the targets that are not addresses of this plan (the
    /// plan is left as it is when none is).
    pub fn restrict(&mut self, targets: &[String]) -> Vec<String> {
        let by_address: BTreeMap<&str, usize> =
            self.nodes.iter().enumerate().map(|(i, n)| (n.address.as_str(), i)).collect();
        let (found, missing): (Vec<&String>, Vec<&String>) =
            targets.iter().partition(|t| by_address.contains_key(t.as_str()));
        if found.is_empty() {
            return missing.into_iter().cloned().collect();
        }
        let mut keep = vec![false; self.nodes.len()];
        let mut stack: Vec<usize> = found.iter().map(|t| by_address[t.as_str()]).collect();
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut keep[i], true) {
                continue;
            }
            let node = &self.nodes[i];
            stack.extend(node.depends_on.iter().filter_map(|d| by_address.get(d.as_str()).copied()));
            // A replace writes the holders of the references it detaches: they come with it.
            for d in node.detach() {
                stack.extend(self.nodes.iter().enumerate().filter_map(|(j, n)| {
                    let holds = n.ownership() == Ownership::Managed
                        && n.id.as_deref().is_some_and(|id| id.eq_ignore_ascii_case(&d.id));
                    holds.then_some(j)
                }));
            }
        }
        let mut kept = keep.iter();
        self.nodes.retain(|_| *kept.next().unwrap_or(&false));
        let mut targets: Vec<String> = found.into_iter().cloned().collect();
        targets.sort();
        targets.dedup();
        self.targets = targets;
        self.summary = Summary::of(&self.nodes);
        self.record = Vec::new();
        self.applied_artifacts = None;
        self.digest = self.body_digest();
        let one = self.targets.len() == 1;
        let (what, records) = match self.destroy {
            false => (
                if one { "it depends on" } else { "they depend on" },
                "applying it records neither the artifacts nor the last-applied configuration",
            ),
            true => (
                if one { "must be deleted before it" } else { "must be deleted before them" },
                "applying it forgets only what it deletes from the workspace",
            ),
        };
        self.warnings.push(format!(
            "resource targeting is in effect (--target {}): this plan holds only {} and what {what}, so it may not represent every change the configuration asks for, and {records}; --target is for exceptional situations such as recovering from errors or mistakes, not for routine use",
            self.targets.join(", --target "),
            if one { "that resource" } else { "those resources" },
        ));
        missing.into_iter().cloned().collect()
    }
}

/// The first way in which `saved` (a plan read from a file) differs from `now` (what trellis plans now),
/// in words: `None` when their bodies — every node, field by field, and every artifact — are identical.
/// Used by `apply PLAN` to run only what trellis itself would plan.
pub fn first_difference(saved: &Plan, now: &Plan) -> Option<String> {
    if saved.shoot != now.shoot || saved.provider != now.provider || saved.mode != now.mode {
        return Some(format!(
            "the plan file is for {} ({}), trellis plans {} ({}) now",
            saved.shoot,
            saved.provider_and_mode(),
            now.shoot,
            now.provider_and_mode()
        ));
    }
    let by_address = |plan: &'_ Plan| -> BTreeMap<String, usize> {
        plan.nodes.iter().enumerate().map(|(i, n)| (n.address.clone(), i)).collect()
    };
    if saved.targets != now.targets {
        let shown = |t: &[String]| match t {
            [] => "none (a whole plan)".to_string(),
            t => t.join(", "),
        };
        return Some(format!(
            "the targets (--target) are {} in the plan file, {} now",
            shown(&saved.targets),
            shown(&now.targets)
        ));
    }
    let (in_saved, in_now) = (by_address(saved), by_address(now));
    if in_saved.len() != saved.nodes.len() {
        return Some("the plan file lists a node address twice".to_string());
    }
    for (address, &i) in &in_saved {
        let s = &saved.nodes[i];
        let Some(&j) = in_now.get(address) else {
            return Some(format!(
                "node {address} (`{}`) is in the plan file, but trellis does not plan it now",
                s.action().as_str()
            ));
        };
        if let Some(field) = node_difference(s, &now.nodes[j]) {
            return Some(format!("node {address}: {field}"));
        }
    }
    if let Some(n) = now.nodes.iter().find(|n| !in_saved.contains_key(&n.address)) {
        return Some(format!(
            "trellis now plans node {} (`{}`), which the plan file does not have",
            n.address,
            n.action().as_str()
        ));
    }
    artifacts_difference(&saved.artifacts, &now.artifacts).map(|a| format!("artifact {a} differs"))
}

/// The first field in which two nodes of the same address differ.
fn node_difference(saved: &Node, now: &Node) -> Option<String> {
    let words = |what: &str, s: String, n: String| Some(format!("{what} is {s} in the plan file, {n} now"));
    if saved.action() != now.action() {
        return words("the action", format!("`{}`", saved.action().as_str()), format!("`{}`", now.action().as_str()));
    }
    if saved.ownership() != now.ownership() {
        return words(
            "the ownership",
            format!("`{}`", saved.ownership().as_str()),
            format!("`{}`", now.ownership().as_str()),
        );
    }
    if saved.kind != now.kind {
        return words("the kind", saved.kind.as_str().to_string(), now.kind.as_str().to_string());
    }
    if saved.id != now.id {
        return words("the cloud id", json(&saved.id), json(&now.id));
    }
    if saved.name != now.name || saved.scope != now.scope {
        return words("the name", format!("{}/{}", saved.scope, saved.name), format!("{}/{}", now.scope, now.name));
    }
    if saved.patch() != now.patch() {
        return words("the patch", json(&saved.patch()), json(&now.patch()));
    }
    if saved.changes() != now.changes() {
        return words("the attribute changes", json(&saved.changes()), json(&now.changes()));
    }
    if saved.checks() != now.checks() {
        return words("the checks", json(&saved.checks()), json(&now.checks()));
    }
    if saved.detach() != now.detach() {
        return words("the references to detach", json(&saved.detach()), json(&now.detach()));
    }
    // `observed` is not compared: it is what discovery read, shown to reviewers; attributes trellis
    // does not manage (a CCM's route, an etag) may move without making the plan stale, and the executor
    // re-reads every resource right before it writes it.
    if saved.depends_on != now.depends_on {
        return words("the dependencies", json(&saved.depends_on), json(&now.depends_on));
    }
    // A plan file written before reasons had codes has none: only its words are compared.
    if saved.reason.code().is_some() && saved.reason.code() != now.reason.code() {
        let code = |r: &Reason| r.code().map_or_else(|| "none".to_string(), |c| format!("`{c}`"));
        return words("the reason code", code(&saved.reason), code(&now.reason));
    }
    if saved.reason.detail() != now.reason.detail() {
        return words("the reason", format!("{:?}", saved.reason.detail()), format!("{:?}", now.reason.detail()));
    }
    None
}

/// Compact JSON of a value for a one-line message, cut after 200 characters.
fn json<T: Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// The first artifact in which two plans differ, by name, as the plans show them ([`Artifacts::shown`]):
/// a plan file written with its artifacts under `named` and a fresh plan with the same artifacts at the
/// top level do not differ.
fn artifacts_difference(saved: &Artifacts, now: &Artifacts) -> Option<String> {
    let (saved, now) = (saved.shown(), now.shown());
    let find = Shown::find;
    saved
        .iter()
        .find(|s| !find(&now, s.name()).is_some_and(|n| same_artifact(s, &n)))
        .or_else(|| now.iter().find(|n| find(&saved, n.name()).is_none()))
        .map(|s| s.name().to_string())
}

/// Whether a saved artifact is the fresh one: equal, or a cloud-provider config from a plan file written
/// before plans recorded the file's name, with the same content.
fn same_artifact(saved: &Shown<'_>, now: &Shown<'_>) -> bool {
    match (saved, now) {
        (Shown::CloudProviderConfig(s), Shown::CloudProviderConfig(n)) if s.file_name.is_empty() => {
            s.format == n.format && s.values == n.values && s.content == n.content
        }
        _ => saved == now,
    }
}

/// sha256 (hex) of a plan body: its nodes and artifacts, as compact JSON (`{"nodes":[…],"artifacts":{…}}`,
/// keys in document order). The same body read back from a plan file gives the same digest.
pub fn body_digest(nodes: &[Node], artifacts: &Artifacts) -> String {
    targeted_body_digest(nodes, artifacts, &[])
}

/// [`body_digest`] of a partial plan ([`Plan::targets`]): the targets are part of the body
/// (`{"nodes":[…],"artifacts":{…},"targets":[…]}`), so a partial plan's digest is never a whole plan's;
/// without targets, the digest is [`body_digest`]'s.
pub fn targeted_body_digest(nodes: &[Node], artifacts: &Artifacts, targets: &[String]) -> String {
    use sha2::Digest;
    #[derive(Serialize)]
    struct Body<'a> {
        nodes: &'a [Node],
        artifacts: &'a Artifacts,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        targets: &'a [String],
    }
    // Rendered into memory and hashed at once: serde_json writes in pieces of a few bytes, and the
    // hasher's per-write buffering cost more than the copy.
    let mut json = Vec::with_capacity(8 << 10);
    serde_json::to_writer(&mut json, &Body { nodes, artifacts, targets }).expect("a plan body serialises to JSON");
    hex::encode(sha2::Sha256::digest(&json))
}

/// A plan file: one shoot, or a fleet of them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PlanSet {
    pub format_version: u32,
    pub plans: Vec<Plan>,
}

/// Why a plan file cannot be read. Each is one line: everything it quotes from the file (a value
/// serde's message repeats, an address, a shoot) or its path goes through [`escape::text`], so a
/// newline in a plan file cannot start a line of its own.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    /// Not JSON, or JSON of another shape. `at` is where in the document (a field path such as
    /// `plans[2].nodes[0].depends_on[1]`, and the node's address when the value is inside a node);
    /// empty when serde_json's message already says (a syntax error's line and column).
    #[error(
        "{}: not a trellis plan file: {}{}; a plan file is what `trellis plan --out` writes — re-run it",
        escape::text(path),
        escape::text(at),
        escape::text(&cause.to_string())
    )]
    Parse { path: String, at: String, cause: serde_json::Error },
    #[error("{}: plan format_version {found} is not supported by this trellis (supports {FORMAT_VERSION}); re-run `trellis plan` with this version", escape::text(path))]
    Version { path: String, found: u32 },
    #[error(
        "{}: node {}: {}; the plan file was edited or corrupted — re-run `trellis plan`",
        escape::text(path),
        escape::text(address),
        escape::text(problem)
    )]
    Invalid { path: String, address: String, problem: String },
    #[error("{}: plan of {}: its nodes and artifacts do not match its digest {}; the plan file was edited or corrupted after `trellis plan` wrote it — re-run `trellis plan --out`", escape::text(path), escape::text(shoot), escape::text(digest))]
    Edited { path: String, shoot: String, digest: String },
    /// The plan's `summary` is not the count of its nodes' actions (a plan, not a node: the summary
    /// is outside the digest, so an edit of it alone is found here).
    #[error("{}: plan of {}: its summary does not match its nodes; the plan file was edited or corrupted — re-run `trellis plan --out`", escape::text(path), escape::text(shoot))]
    Summary { path: String, shoot: String },
}

impl PlanSet {
    /// A plan file of `plans` gathered in no particular order, sorted by shoot (a shoot's plans — its
    /// infrastructure plan, then a derived one — keep their order): the same plans give the same bytes
    /// however they were gathered. `trellis plan` does not use it: it writes a fleet's plans in input
    /// order, as it prints them.
    pub fn new(mut plans: Vec<Plan>) -> PlanSet {
        plans.sort_by(|a, b| a.shoot.cmp(&b.shoot));
        PlanSet { format_version: FORMAT_VERSION, plans }
    }

    /// The counts of all plans together.
    pub fn summary(&self) -> Summary {
        Summary::total(&self.plans)
    }

    /// Stable JSON: a single plan is written as the plan object itself, a fleet as `{format_version, plans}`.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        self.write_json(&mut out).expect("writing to memory cannot fail");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// Streams the same bytes as [`PlanSet::to_json`] into `w`, without holding them in memory
    /// (a fleet plan of 10,000 shoots is about 200 MiB of JSON).
    pub fn write_json(&self, mut w: impl std::io::Write) -> std::io::Result<()> {
        if self.plans.len() == 1 {
            serde_json::to_writer_pretty(&mut w, &self.plans[0])?;
        } else {
            serde_json::to_writer_pretty(&mut w, self)?;
        }
        w.write_all(b"\n")
    }

    /// Reads a plan file written by [`PlanSet::to_json`] and checks that it is well formed:
    /// known version, and no node that would write to a resource trellis does not own.
    pub fn from_json(path: &str, text: &str) -> Result<PlanSet, PlanFileError> {
        let plans = match read_plans(path, text, false) {
            // A value of the wrong type: read the file again, tracking where each value sits, so the
            // error names it (tracking costs every file ~8 % of its read; only a refused one pays).
            Err(PlanFileError::Parse { cause, .. }) if cause.classify() == serde_json::error::Category::Data => {
                read_plans(path, text, true)?
            }
            read => read?,
        };
        let set = PlanSet { format_version: FORMAT_VERSION, plans };
        for plan in &set.plans {
            if plan.digest != plan.body_digest() {
                return Err(PlanFileError::Edited {
                    path: path.to_string(),
                    shoot: plan.shoot.clone(),
                    digest: plan.digest.clone(),
                });
            }
            if plan.summary != plan.expected_summary() {
                return Err(PlanFileError::Summary { path: path.to_string(), shoot: plan.shoot.clone() });
            }
            for node in &plan.nodes {
                if let Some(problem) = detach_problem(plan, node) {
                    return Err(PlanFileError::Invalid {
                        path: path.to_string(),
                        address: node.address.clone(),
                        problem,
                    });
                }
            }
        }
        Ok(set)
    }
}

/// The plans of a plan file, each read as a [`Plan`] (not checked yet). With `locate`, a value of the
/// wrong type is refused naming its field path ([`from_value_at`]).
fn read_plans(path: &str, text: &str, locate: bool) -> Result<Vec<Plan>, PlanFileError> {
    let mut value: Value = serde_json::from_str(text).map_err(|cause| PlanFileError::Parse {
        path: path.to_string(),
        at: String::new(),
        cause,
    })?;
    let found = value.get("format_version").and_then(Value::as_u64).unwrap_or(0) as u32;
    if found != FORMAT_VERSION {
        return Err(PlanFileError::Version { path: path.to_string(), found });
    }
    match value.get_mut("plans") {
        Some(plans) => from_value_at::<Vec<Value>>(path, locate, || "plans".to_string(), None, plans.take())?
            .into_iter()
            .enumerate()
            .map(|(i, plan)| plan_from_value(path, locate, &format!("plans[{i}]."), plan))
            .collect(),
        None => Ok(vec![plan_from_value(path, locate, "", value)?]),
    }
}

/// Reads one plan of a plan file. The nodes are read one by one, so that a node no plan could contain
/// (a write to a user-owned resource, a verify with a patch: [`NodeShapeError`]) is refused as
/// [`PlanFileError::Invalid`], naming its address.
/// `at` is where the plan sits in the file (`plans[2].`, or empty for a file of one plan).
fn plan_from_value(path: &str, locate: bool, at: &str, mut value: Value) -> Result<Plan, PlanFileError> {
    let nodes = match value.get_mut("nodes").map(Value::take) {
        Some(Value::Array(nodes)) => nodes
            .into_iter()
            .enumerate()
            .map(|(i, node)| {
                let address = locate.then(|| node.get("address").and_then(Value::as_str).map(str::to_string)).flatten();
                from_value_at::<NodeJsonOwned>(path, locate, || format!("{at}nodes[{i}]"), address.as_deref(), node)
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => from_value_at::<Vec<NodeJsonOwned>>(path, locate, || format!("{at}nodes"), None, other)?,
        None => Vec::new(),
    };
    if let Some(slot) = value.get_mut("nodes") {
        *slot = Value::Array(Vec::new());
    }
    let mut plan = from_value_at::<Plan>(path, locate, || at.trim_end_matches('.').to_string(), None, value)?;
    plan.nodes = nodes
        .into_iter()
        .map(Node::try_from)
        .collect::<Result<_, _>>()
        .map_err(|e| PlanFileError::Invalid { path: path.to_string(), address: e.address, problem: e.problem })?;
    Ok(plan)
}

/// `value` read as a `T`; a value of the wrong shape is [`PlanFileError::Parse`]. With `locate` it
/// names where: `at` (where `value` sits in the file, e.g. `plans[2].nodes[0]`) followed by the field
/// path inside it, and the node's `address` when `value` is one.
fn from_value_at<T: serde::de::DeserializeOwned>(
    path: &str,
    locate: bool,
    at: impl FnOnce() -> String,
    address: Option<&str>,
    value: Value,
) -> Result<T, PlanFileError> {
    if !locate {
        return serde_json::from_value(value).map_err(|cause| PlanFileError::Parse {
            path: path.to_string(),
            at: String::new(),
            cause,
        });
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let (at, inner) = (at(), e.path().to_string());
        let mut place = match (at.is_empty(), inner.as_str()) {
            (true, ".") => String::new(),
            (true, inner) => inner.to_string(),
            (false, ".") => at.to_string(),
            (false, inner) => format!("{at}.{inner}"),
        };
        if let Some(address) = address {
            place.push_str(&format!(" (node {address})"));
        }
        if !place.is_empty() {
            place.push_str(": ");
        }
        PlanFileError::Parse { path: path.to_string(), at: place, cause: e.into_inner() }
    })
}

/// A replace may only detach references held by managed resources of the same plan.
pub fn detach_problem(plan: &Plan, node: &Node) -> Option<String> {
    node.detach().iter().find_map(|d| {
        let managed = plan.nodes.iter().any(|n| {
            n.ownership() == Ownership::Managed && n.id.as_deref().is_some_and(|id| id.eq_ignore_ascii_case(&d.id))
        });
        (!managed)
            .then(|| format!("detaches a reference held by {}, which is not a managed resource of this plan", d.id))
    })
}

/// sha256 hex of a byte string; used for plan digests.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
