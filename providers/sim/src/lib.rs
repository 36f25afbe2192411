//! The simulated Azure cloud: an in-process, deterministic ARM simulator.
//!
//! [`ArmSim`] implements [`CloudRead`] and [`CloudWrite`] over resources kept in their ARM REST JSON
//! shape (what `az … show -o json` prints). It is a cheap handle (`Arc` inside), so the executor can
//! share it across tokio tasks.
//!
//! # Layout
//! `core` holds what every simulated cloud shares — the call pipeline, once (`core::sim::Sim` over
//! a cloud's `SimCloud`: fault → latency → the cloud's rule under the lock → write → audit → flush,
//! with one storage-failure policy), the audit log, faults, latency and writes in flight,
//! preconditions, the group flush of a sled tree, the world file's sections. Each cloud module
//! implements `SimCloud` (its store and where it is written, its fault wording, its refusals) and
//! keeps its ids and rules: [`arm`] (ids, its lazily read store and tree layout, rules, defaults, the
//! `azure:` world section, [`ArmSim`]'s call paths and the runtime writers), [`gce`] ([`GceSim`]:
//! compute v1 and IAM service accounts in their REST shape, GCE's rules, the `gce:` world section)
//! and [`dns`] ([`DnsSim`]: zones, zone records and the seeds' `DNSRecord` objects, with the DNS
//! extension's controller between them; the `dns:` world section).
//!
//! # ARM rules enforced
//! - Ids are case-insensitive: looked up in lowercase, returned with the casing they were created
//!   with (a nested resource takes its parent's casing); a resource created through the API gets ARM's
//!   canonical keywords and type casing (`/resourceGroups/…/providers/Microsoft.Network/virtualNetworks/`)
//!   whatever the request's casing, its names as the request spelled them.
//! - An NSG shows Azure's six `defaultSecurityRules`, computed on GET, never stored or written (a PUT
//!   body's are ignored; a PUT or DELETE of one is 405). [`ArmSim::patch_tags`] is Update Tags;
//!   [`ArmSim::list_resources`] the generic resource list; a subscription lists a top-level type of all
//!   its groups (List All).
//! - The network provider's refusals of a write (`arm::validate`): a security rule's priority outside
//!   100–4096 (`SecurityRuleInvalidPriority`), two rules with one priority and direction
//!   (`SecurityRuleConflict`), a rule's address prefix that is no address, CIDR, `*` or service tag
//!   (`SecurityRuleInvalidAddressPrefix`), a VNet prefix that is no CIDR (`InvalidAddressPrefixFormat`),
//!   a `VirtualAppliance` route without `nextHopIpAddress` (`MissingNextHopIpAddress`).
//! - GET of a missing resource: `Ok(None)` (404). DELETE of a missing resource: `Ok` (204).
//! - Containment: a PUT needs its resource group (404 `ResourceGroupNotFound`) and, for a nested
//!   resource, its parent (404 `ParentResourceNotFound`). DELETE removes everything nested: a resource
//!   group its resources, a VNet its subnets, an NSG its rules, a route table its routes.
//! - A resource-group DELETE is a long-running operation: refused at once if something outside the
//!   group uses what is in it; else the group shows `provisioningState: Deleting` (a PUT into it, or
//!   of it, is 409 `ResourceGroupBeingDeleted`), its resources go away one per step (users before
//!   what they use, the write latency spread over the steps), then the group. The blocking
//!   [`CloudWrite::delete`] waits for the end. An interrupted delete ([`Fault::Interrupted`], or a
//!   caller that stops waiting) leaves the group `Deleting` with resources left, persisted; a later
//!   DELETE resumes it.
//! - PUT replaces the whole resource. The simulator fills `id`, `name`, `type` (from the id), `etag`
//!   (`W/"<n>"`, none on resource groups), `properties.provisioningState: "Succeeded"`, and a public IP's
//!   `properties.ipAddress`, allocated as ARM does: a new public IP gets an address this simulated
//!   cloud never handed out before (`20.64.0.1`, `20.64.0.2`, … — a counter persisted with the store,
//!   so a deleted and re-created public IP gets a new address), an existing one keeps its own; an
//!   `ipAddress` in the body is ignored. (A world file declares an address as it is.) A PUT is not
//!   echoed: the location is stored in ARM's normal form (`westeurope`) and ARM's defaults fill what
//!   the body leaves out (see `arm::defaults::arm_defaults`). Tracked resources
//!   (resource group, VNet, route table, NSG, NAT gateway, public IP) need a `location`
//!   (400 `LocationRequired`) that cannot change (409 `InvalidResourceGroupLocation` /
//!   `InvalidResourceLocation`).
//! - References: a subnet's `routeTable`, `networkSecurityGroup`, `natGateway` (one `{id}` each; an
//!   array is 400 `InvalidRequestFormat`) and a NAT gateway's `publicIpAddresses` must point at
//!   existing resources of the right type (400 `InvalidResourceReference` / `LinkedInvalidPropertyId`).
//!   A resource that is still referenced cannot be deleted, alone or with its resource group
//!   (400 `InUseRouteTableCannotBeDeleted`, `InUseNetworkSecurityGroupCannotBeDeleted`,
//!   `InUseNatGatewayCannotBeDeleted`, `PublicIPAddressCannotBeDeleted`). So is a subnet an IP
//!   configuration of a NIC or load balancer sits in (`InUseSubnetCannotBeDeleted`), a public IP on
//!   one (`PublicIPAddressCannotBeDeleted`) and a NIC a VM uses (`NicInUse`); those uses are neither
//!   checked on PUT nor shown as back-references.
//! - Computed on GET, never stored: `properties.subnets` (`[{id}]`) of route tables, NSGs and NAT
//!   gateways, `properties.natGateway` of public IPs, and the child arrays — a VNet's `subnets`, a route
//!   table's `routes`, an NSG's `securityRules` (full objects, in creation order).
//! - Rules and routes are also resources of their own (`…/securityRules/{r}`, `…/routes/{r}`): GET,
//!   PUT and DELETE of one edit the parent's array. A PUT of a VNet, NSG or route table whose body
//!   has the child array (`subnets`, `securityRules`, `routes`; `null` = empty) makes the children
//!   exactly those: missing ones are deleted (a subnet in use is refused with
//!   `InUseSubnetCannotBeDeleted`), new ones created, changed ones rewritten, unchanged ones kept with
//!   their etag; a VNet's body subnets pass the subnet checks. Without the array an NSG or route table
//!   loses its rules or routes, a VNet keeps its subnets (ARM since api-version 2023-09-01).
//! - Etags: every write gives the resource (and the parent of a nested one) a new etag `W/"<n>"`.
//!   [`ArmSim::put_if`] / [`ArmSim::delete_if`] honour `If-Match` (`*` or an etag) and
//!   `If-None-Match: *` atomically with the write: a failed precondition is 412 `PreconditionFailed`
//!   and changes nothing.
//! - Conditions ([`CloudWrite`]'s write model): `create` of an existing resource is 412 (ARM's answer to
//!   `If-None-Match: *`, [`CloudError::AlreadyExists`]); `update` and `remove` under
//!   `Precondition::IfMatch(etag)` are 412 ([`CloudError::PreconditionFailed`]) when the resource's etag
//!   differs or it does not exist. A write to a nested resource changes its parent's etag, so a CCM
//!   route changes its route table's.
//! - list(parent, type): the direct children of that type, sorted by id; a subscription lists its
//!   resource groups; a missing resource group is 404 `ResourceGroupNotFound`.
//!
//! # Audit log, latency, faults
//! Every call, failed and faulted ones included, is recorded as a [`Call`] (for a list the target is
//! `<parent>/<type>`); see [`ArmSim::calls`]. [`Faults`] add latency and inject throttling, 5xx and
//! timeouts deterministically (see [`faults`]). A timeout that did not apply the request is recorded
//! with status 408.
//!
//! Writes take their simulated latency, and ARM serialises the writes within a VNet: while a PUT or
//! DELETE of a VNet or one of its subnets is in flight, another write in the same VNet is refused at
//! once with 409 `AnotherOperationInProgress` (ARM's message; audited, not applied). Without latency
//! writes are instant and never overlap.
//!
//! # Persistence
//! [`ArmSim::open`] loads the simulated cloud from a `sled::Tree` (the caller keeps it next to trellis'
//! state); every successful write is written to the tree (key: the lowercased id; value:
//! `{value, origin, seq}`) and flushed before the call returns. The flush runs after the cloud's lock
//! is let go, shared by the writes made meanwhile; [`ArmSim::share_flush`] hands it to the owner of the
//! database instead (trellis' state, whose commits then share the same flushes), and
//! [`ArmSim::leave_flushes_to_owner`] leaves it to the owner's next flush altogether (the CLI: the
//! state commit of the node that made the write): the writes then wait in memory ([`DeferredWrites`],
//! seen by every read) until the owner stores them — in the transaction of its next commit group
//! ([`DeferredWrites::pending`], then [`DeferredWrites::stored`]), or in one batch right before a flush
//! without commits ([`DeferredWrites::write`]). [`ArmSim::in_memory`]
//! keeps nothing. A write that cannot be persisted is the call's 500 (the one storage-failure policy
//! of every simulated cloud, in `core::sim`). The audit log lives in memory; [`ArmSim::persist_audit`] appends it to an
//! [`AuditFile`] (JSON lines beside the database, not in it), and [`ArmSim::keep_audit`] appends each
//! call's line as the call is made.
//!
//! # Runtime writers
//! [`runtime`] simulates the controllers that write into the cloud after apply — the CCM (Service
//! type=LoadBalancer, per-node routes) and the bastion controller — through [`CloudWrite`], so their
//! calls are audited like any other.
//!
//! # World file
//! [`WorldFile`] declares what existed before trellis ran; [`ArmSim::sync_world`] re-syncs exactly
//! those resources (origin World) and leaves resources created through the API alone. World writes
//! bypass the audit log and the faults.

pub mod arm;
mod core;
pub mod dns;
pub mod gce;

pub use crate::arm::persist::DeferredWrites;
pub use crate::arm::runtime;
pub use crate::arm::store::DEFAULT_SUBSCRIPTION;
pub use crate::arm::world::{AzureWorld, WorldResource};
pub use crate::core::audit::{AuditFile, AuditLog};
pub use crate::core::faults::{self, Fault, FaultRule, Faults, Matcher};
pub use crate::core::precondition::Precondition;
pub use crate::core::world::{builtin_sections, SyncReport, WorldFile, WorldSection};
pub use crate::core::Origin;
pub use crate::dns::{DnsSim, DnsWorld};
pub use crate::gce::world::GceWorld;
pub use crate::gce::{GceSim, ListQuery, Quotas};

use crate::arm::store::Store;
use crate::arm::Arm;
use crate::core::sim::Sim;
use async_trait::async_trait;
use serde_json::Value;
use trellis_planner::cloud::{self, Call, CloudError, CloudRead, CloudWrite, Sent};

impl From<sled::Error> for SimError {
    /// sled's own texts carry Debug output (`offset None backtrace ()`); say what happened and what to do.
    fn from(e: sled::Error) -> SimError {
        SimError::Storage(match e {
            sled::Error::Corruption { .. } => {
                "the stored data is corrupt; restore the state directory from a backup".to_string()
            }
            sled::Error::Io(io) => {
                format!("{io}; check that the state directory is writable and not in use by another trellis process")
            }
            other => format!("{other}; check that the state directory is intact"),
        })
    }
}

/// What can go wrong outside a cloud call: storage, and world files.
#[derive(Clone, Debug, thiserror::Error)]
pub enum SimError {
    #[error("simulated cloud storage: {0}")]
    Storage(String),
    #[error("simulated cloud storage is damaged at key {key}: {detail}; remove the simulated cloud from the state directory and rebuild it with --world")]
    Corrupt { key: String, detail: String },
    /// A world file that is not valid YAML or has unknown keys or wrong types.
    #[error("world file {path}:{line}:{column}: {message}")]
    WorldParse { path: String, line: u64, column: u64, message: String },
    /// A world file whose resources are wrong; every problem, one per line.
    #[error("{}", problems.join("\n"))]
    WorldInvalid { path: String, problems: Vec<String> },
}

/// A flush that makes everything written to a database durable (see [`ArmSim::share_flush`]).
pub type SharedFlush = std::sync::Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The simulated ARM cloud. Clones share the same cloud.
#[derive(Clone)]
pub struct ArmSim {
    core: Sim<Arm>,
}

impl ArmSim {
    /// A simulated cloud that lives in memory only (tests, benchmarks).
    pub fn in_memory(subscription: &str) -> ArmSim {
        ArmSim::from_store(Store::in_memory(subscription))
    }

    /// Loads the simulated cloud from `tree`; every successful write is persisted there. The
    /// subscription is taken from `subscription` when given (and stored), else from the tree, else
    /// [`DEFAULT_SUBSCRIPTION`].
    pub fn open(tree: sled::Tree, subscription: Option<String>) -> Result<ArmSim, SimError> {
        Ok(ArmSim::from_store(Store::open(tree, subscription)?))
    }

    /// Makes writes durable through `flush` (which must make everything written to the tree's
    /// database before the call durable, e.g. the state's grouped flush) instead of flushing the tree
    /// itself. Calls of `flush` from several threads should share one flush; that is the point.
    pub fn share_flush(&self, flush: SharedFlush) {
        self.core.lock().store.share_flush(flush);
    }

    /// Hands the durability of writes to the owner of the tree's database (trellis' state): like
    /// [`ArmSim::share_flush`], but a call's write returns without waiting for a flush, and without
    /// writing to the tree: its changes are kept in the answer, [`DeferredWrites`], which the owner
    /// must store before each of its flushes — in the transaction of its commit group
    /// ([`DeferredWrites::pending`] and [`DeferredWrites::stored`]) or with [`DeferredWrites::write`] —
    /// so the owner's next flush makes the write durable, and a whole group of calls' writes costs no
    /// sled batch of its own. Reads
    /// see every write meanwhile. The owner must flush (through its own flushes; `flush` makes
    /// everything written so far durable) before it acknowledges anything that depends on the call:
    /// the CLI's executor commits the node's state — a flush of the same database, begun after the
    /// write — before the node counts as done, so a write the executor was told succeeded is durable
    /// before its node is acknowledged, and a kill before that loses the write and the node's commit
    /// together. The owner also writes them before it closes the database. Commits outside calls (a
    /// long-running operation's steps) still wait for `flush`. Changes made before this call are
    /// written to the tree first; calling it again answers the same [`DeferredWrites`].
    pub fn leave_flushes_to_owner(&self, flush: SharedFlush) -> Result<std::sync::Arc<DeferredWrites>, SimError> {
        self.core.lock().store.leave_flushes_to_owner(flush)
    }

    fn from_store(store: Store) -> ArmSim {
        ArmSim { core: Sim::new(store, ()) }
    }

    /// The same simulated cloud with `faults` installed.
    pub fn with_faults(self, faults: Faults) -> ArmSim {
        self.set_faults(faults);
        self
    }

    /// Installs `faults` (replacing the previous ones) and restarts their call counting.
    pub fn set_faults(&self, faults: Faults) {
        self.core.set_faults(faults);
    }

    /// The faults installed now.
    pub fn faults(&self) -> Faults {
        self.core.faults()
    }

    /// How many faults were injected since the faults were installed.
    pub fn faults_fired(&self) -> usize {
        self.core.faults_fired()
    }

    /// The subscription the simulated cloud belongs to.
    pub fn subscription(&self) -> String {
        self.core.lock().store.subscription().to_string()
    }

    /// Every call since this `ArmSim` was created (or opened).
    pub fn calls(&self) -> Vec<Call> {
        self.core.calls()
    }

    /// The calls made after [`ArmSim::mark`] returned `mark`.
    pub fn calls_since(&self, mark: usize) -> Vec<Call> {
        self.core.calls_since(mark)
    }

    /// A position in the audit log, for [`ArmSim::calls_since`].
    pub fn mark(&self) -> usize {
        self.core.mark()
    }

    /// Appends the calls not persisted yet to `file` (one JSON line per [`Call`]), and
    /// syncs it. Returns how many calls were written.
    pub fn persist_audit(&self, file: &AuditFile) -> Result<usize, SimError> {
        self.core.persist_audit(file)
    }

    /// Keeps the audit log in `file` as the calls are made, for a process that answers calls until
    /// it is stopped (`trellis sim serve`): the calls not persisted yet are written now, and every
    /// later call's line is appended when the call is recorded, before it is answered (one `write`:
    /// a killed process loses none). Nothing is synced here; [`ArmSim::persist_audit`] syncs.
    /// Returns how many calls were written now.
    pub fn keep_audit(&self, file: AuditFile) -> Result<usize, SimError> {
        self.core.keep_audit(file)
    }
}

#[async_trait]
impl CloudRead for ArmSim {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        self.arm_get(id).await
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.arm_list(parent, rtype).await
    }

    /// Only with injected latency: in process, a call costs no round trip.
    fn round_trips(&self) -> bool {
        !self.faults().latency.is_zero()
    }
}

#[async_trait]
impl CloudWrite for ArmSim {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let pre = Precondition::if_none_match_any();
        self.put_if(id, body, &pre).await.map_err(|e| arm_refusal(e, Sent::IfNoneMatch))
    }

    async fn update(&self, id: &str, body: Value, pre: &cloud::Precondition) -> Result<Value, CloudError> {
        self.put_if(id, body, &condition(pre)).await.map_err(|e| arm_refusal(e, Sent::of(pre)))
    }

    async fn remove(&self, id: &str, pre: &cloud::Precondition) -> Result<(), CloudError> {
        self.delete_if(id, &condition(pre)).await.map_err(|e| arm_refusal(e, Sent::of(pre)))
    }
}

/// The engine's precondition as the simulator's `If-Match` header.
fn condition(pre: &cloud::Precondition) -> Precondition {
    match pre {
        cloud::Precondition::None => Precondition::none(),
        cloud::Precondition::IfMatch(etag) => Precondition::if_match(etag),
    }
}

/// ARM's refusals of a write, classified by the condition it was sent with.
fn arm_refusal(e: CloudError, sent: Sent) -> CloudError {
    match e {
        CloudError::Rejected { target, status, code, message } => {
            CloudError::arm_refusal(&target, status, code, message, sent)
        }
        other => other,
    }
}
