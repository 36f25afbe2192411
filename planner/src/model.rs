//! Desired resources, typed by ownership.
//!
//! Architecture invariant: there is no way to express a write to a user-owned resource. A provider says
//! what it wants through [`Desired`]; the user-owned variants carry no patch, so the diff can only turn
//! them into `verify`, `read` or `skip` nodes. Runtime-owned resources are reported, and deleted only
//! through [`Desired::DeleteRuntime`], which names the spec rule that allows it.

use serde_json::Value;
use trellis_plans::{Check, Kind, Ownership, Reason};

/// What identifies a resource in a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// Stable, unique, human-readable id; plans are sorted by it.
    pub address: String,
    pub kind: Kind,
    pub name: String,
    /// Azure: the resource group; GCP: project/region.
    pub scope: String,
    /// The cloud id.
    pub id: String,
}

/// A resource trellis creates and keeps in shape.
#[derive(Clone, Debug)]
pub struct ManagedSpec {
    pub res: Resource,
    /// The attributes trellis manages, as a JSON merge patch over the live resource. Attributes not in
    /// the patch (routes the CCM wrote, rules on an NSG) are left as they are.
    pub patch: Value,
    /// JSON pointers of attributes that cannot change in place (ForceNew): a change replaces the resource.
    pub force_new: Vec<&'static str>,
    /// Addresses this resource must wait for.
    pub depends_on: Vec<String>,
    /// The rule behind the resource, e.g. "managed mode: upstream task `ensure route table`". The
    /// diff adds what it found and the code that goes with it (`absent`, `differs`, `force-new`, `in-sync`).
    pub why: String,
    /// Other managed resources that reference this one; a replace detaches and re-attaches them.
    pub referrers: Vec<trellis_plans::Detach>,
}

/// A user-owned resource that must exist and satisfy invariants. Read only.
#[derive(Clone, Debug)]
pub struct VerifySpec {
    pub res: Resource,
    pub checks: Vec<Check>,
    pub depends_on: Vec<String>,
    pub why: Reason,
}

/// A resource whose values are read (e.g. a user's managed identity, a user public IP). Read only.
#[derive(Clone, Debug)]
pub struct ReadSpec {
    pub res: Resource,
    pub ownership: ReadOwnership,
    pub depends_on: Vec<String>,
    pub why: Reason,
}

/// Who owns a resource that is only read: the plan's own type, so a read node carries it as it is.
pub use trellis_plans::ReadOwnership;

/// A resource the configuration gates out: shown in the plan with the reason, never touched.
#[derive(Clone, Debug)]
pub struct SkipSpec {
    pub address: String,
    pub kind: Kind,
    pub name: String,
    pub scope: String,
    /// The id, when the resource has one the reviewer should see.
    pub id: Option<String>,
    pub ownership: Ownership,
    pub why: Reason,
}

/// One thing the provider wants the plan to say about a resource, with the reason the node gets: a
/// [`Reason`] (code and words) for every variant but [`Desired::Managed`], whose code the diff decides.
#[derive(Clone, Debug)]
pub enum Desired {
    Managed(ManagedSpec),
    Verify(VerifySpec),
    Read(ReadSpec),
    Skip(SkipSpec),
    /// A managed resource that is no longer desired (or must go before a replacement).
    DeleteManaged {
        res: Resource,
        depends_on: Vec<String>,
        why: Reason,
    },
    /// A runtime-owned resource deleted because a spec rule says so (e.g. the GCP BYO delete safety net).
    DeleteRuntime {
        res: Resource,
        depends_on: Vec<String>,
        rule: Reason,
    },
}

impl Desired {
    pub fn address(&self) -> &str {
        match self {
            Desired::Managed(m) => &m.res.address,
            Desired::Verify(v) => &v.res.address,
            Desired::Read(r) => &r.res.address,
            Desired::Skip(s) => &s.address,
            Desired::DeleteManaged { res, .. } | Desired::DeleteRuntime { res, .. } => &res.address,
        }
    }

    /// The cloud id, when the resource has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Desired::Managed(m) => Some(&m.res.id),
            Desired::Verify(v) => Some(&v.res.id),
            Desired::Read(r) => Some(&r.res.id),
            Desired::Skip(s) => s.id.as_deref(),
            Desired::DeleteManaged { res, .. } | Desired::DeleteRuntime { res, .. } => Some(&res.id),
        }
    }
}
