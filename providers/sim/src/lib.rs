//! The simulated Azure cloud: an in-process, deterministic ARM simulator.
//!
//! [`ArmSim`] implements [`CloudRead`] and [`CloudWrite`] over resources kept in their ARM REST JSON
//! shape (what `az … show -o json` prints). It is a cheap handle (`Arc` inside), so the executor can
//! share it across tokio tasks.
//!
//! # ARM rules enforced
//! - Ids are case-insensitive: looked up in lowercase, returned with the casing they were created
//!   with (a nested resource takes its parent's casing).
//! - GET of a missing resource: `Ok(None)` (404). DELETE of a missing resource: `Ok` (204).
//! - Containment: a PUT needs its resource group (404 `ResourceGroupNotFound`) and, for a nested
//!   resource, its parent (404 `ParentResourceNotFound`). DELETE removes everything nested: a resource
//!   group its resources, a VNet its subnets, an NSG its rules, a route table its routes.
//! - PUT replaces the whole resource. The simulator fills `id`, `name`, `type` (from the id), `etag`
//!   (`W/"<n>"`, none on resource groups), `properties.provisioningState: "Succeeded"`, and a public IP's
//!   `properties.ipAddress`, allocated as ARM does: a new public IP gets an address this simulated
//!   cloud never handed out before (`20.64.0.1`, `20.64.0.2`, … — a counter persisted with the store,
//!   so a deleted and re-created public IP gets a new address), an existing one keeps its own; an
//!   `ipAddress` in the body is ignored. (A world file declares an address as it is.) A PUT is not
//!   echoed: the location is stored in ARM's normal form (`westeurope`) and ARM's defaults fill what
//!   the body leaves out (see `rules::arm_defaults`). Tracked resources
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
//!   PUT and DELETE of one edit the parent's array. A PUT of an NSG or route table replaces its rules
//!   or routes with the body's array. A PUT of a VNet does **not** touch its subnets (they are written
//!   as resources of their own); this is simpler than ARM, which would replace them.
//! - Conditions ([`CloudWrite`]'s write model): `create` of an existing resource is 412 (ARM's answer to
//!   `If-None-Match: *`, [`CloudError::AlreadyExists`]); `update` and `remove` under
//!   `Precondition::IfMatch(etag)` are 412 ([`CloudError::PreconditionFailed`]) when the resource's etag
//!   differs — an update also when it does not exist, a delete of a missing resource succeeds. A write
//!   to a nested resource changes its parent's etag, so a CCM route changes its route table's.
//! - list(parent, type): the direct children of that type, sorted by id; a subscription lists its
//!   resource groups; a missing resource group is 404 `ResourceGroupNotFound`.
//!
//! # Audit log, latency, faults
//! Every call, failed and faulted ones included, is recorded as a [`Call`] (for a list the target is
//! `<parent>/<type>`); see [`ArmSim::calls`]. [`Faults`] add latency and inject throttling, 5xx and
//! timeouts deterministically (see [`faults`]). A timeout that did not apply the request is recorded
//! with status 408.
//!
//! # Persistence
//! [`ArmSim::open`] loads the simulated cloud from a `sled::Tree` (the caller keeps it next to trellis'
//! state); every successful write is written to the tree and flushed before the call returns
//! (key: the lowercased id; value: `{value, origin, seq}`). [`ArmSim::in_memory`]
//! keeps nothing. The audit log lives in memory; [`ArmSim::persist_audit`] appends it to a tree.
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
pub mod faults;
mod rules;
pub mod runtime;
mod store;
pub mod world;

pub use faults::{Fault, FaultRule, Faults, Matcher};
pub use store::{Origin, DEFAULT_SUBSCRIPTION};
pub use world::{AzureWorld, SyncReport, WorldFile, WorldResource};

use async_trait::async_trait;
use faults::FaultState;
use rules::ArmError;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use store::Store;
use trellis_planner::cloud::{Call, CloudError, CloudRead, CloudWrite, Op, Precondition, Sent};

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
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("simulated cloud storage: {0}")]
    Storage(String),
    #[error("simulated cloud storage is damaged at key {key}: {detail}; remove the simulated cloud from the state directory and rebuild it with --world")]
    Corrupt { key: String, detail: String },
    /// A world file that is not valid YAML or has unknown keys or wrong types.
    #[error("{path}:{line}:{column}: {message}")]
    WorldParse { path: String, line: u64, column: u64, message: String },
    /// A world file whose resources are wrong; every problem, one per line.
    #[error("{}", problems.join("\n"))]
    WorldInvalid { path: String, problems: Vec<String> },
}

/// The simulated ARM cloud. Clones share the same cloud.
#[derive(Clone)]
pub struct ArmSim {
    inner: Arc<Mutex<State>>,
}

struct State {
    store: Store,
    audit: Vec<Call>,
    /// How much of `audit` [`ArmSim::persist_audit`] has written.
    audit_persisted: usize,
    faults: FaultState,
}

const AUDIT_PREFIX: &str = "audit/";

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

    fn from_store(store: Store) -> ArmSim {
        let state = State { store, audit: Vec::new(), audit_persisted: 0, faults: FaultState::default() };
        ArmSim { inner: Arc::new(Mutex::new(state)) }
    }

    /// The same simulated cloud with `faults` installed.
    pub fn with_faults(self, faults: Faults) -> ArmSim {
        self.set_faults(faults);
        self
    }

    /// Installs `faults` (replacing the previous ones) and restarts their call counting.
    pub fn set_faults(&self, faults: Faults) {
        self.lock().faults = FaultState::new(faults);
    }

    /// The faults installed now.
    pub fn faults(&self) -> Faults {
        self.lock().faults.faults().clone()
    }

    /// How many faults were injected since the faults were installed.
    pub fn faults_fired(&self) -> usize {
        self.lock().faults.fired()
    }

    /// The subscription the simulated cloud belongs to.
    pub fn subscription(&self) -> String {
        self.lock().store.subscription().to_string()
    }

    /// Every call since this `ArmSim` was created (or opened).
    pub fn calls(&self) -> Vec<Call> {
        self.lock().audit.clone()
    }

    /// The calls made after [`ArmSim::mark`] returned `mark`.
    pub fn calls_since(&self, mark: usize) -> Vec<Call> {
        self.lock().audit.get(mark..).map(<[Call]>::to_vec).unwrap_or_default()
    }

    /// A position in the audit log, for [`ArmSim::calls_since`].
    pub fn mark(&self) -> usize {
        self.lock().audit.len()
    }

    /// Appends the calls not persisted yet to `tree` (keys `audit/<20-digit sequence>`, values the
    /// [`Call`] as JSON) in one batch, and flushes it. Returns how many calls were written.
    pub fn persist_audit(&self, tree: &sled::Tree) -> Result<usize, SimError> {
        let mut st = self.lock();
        let calls = &st.audit[st.audit_persisted..];
        if calls.is_empty() {
            return Ok(0);
        }
        let next = match tree.scan_prefix(AUDIT_PREFIX).keys().next_back().transpose()? {
            Some(k) => {
                let text = String::from_utf8_lossy(&k[AUDIT_PREFIX.len()..]).into_owned();
                text.parse::<u64>().map_err(|e| SimError::Corrupt {
                    key: String::from_utf8_lossy(&k).into_owned(),
                    detail: format!("not an audit sequence number: {e}"),
                })? + 1
            }
            None => 0,
        };
        let mut batch = sled::Batch::default();
        for (i, call) in calls.iter().enumerate() {
            let key = format!("{AUDIT_PREFIX}{:020}", next + i as u64);
            batch.insert(key.as_bytes(), serde_json::to_vec(call).expect("a call serialises"));
        }
        tree.apply_batch(batch)?;
        tree.flush()?;
        let n = calls.len();
        st.audit_persisted += n;
        Ok(n)
    }

    /// Re-syncs the resources `world` declares; see [`world`]. Not audited, not faulted.
    pub fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        world::sync(&mut self.lock().store, world)
    }

    /// Every resource as a GET returns it, sorted by id (nested resources included on their own).
    pub fn snapshot(&self) -> Vec<Value> {
        let st = self.lock();
        st.store.entries().map(|e| rules::render(&st.store, e)).collect()
    }

    /// GET without audit, latency or faults (tests, `trellis sim` commands).
    pub fn get_now(&self, id: &str) -> Option<Value> {
        rules::get(&self.lock().store, id).ok().flatten()
    }

    /// Who brought the resource into the simulated cloud.
    pub fn origin(&self, id: &str) -> Option<Origin> {
        let key = arm::ArmId::parse(id).ok()?.key();
        self.lock().store.get(&key).map(|e| e.origin)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One cloud call: fault decision and latency, then `apply` under the lock, then the audit entry.
    async fn call<T>(
        &self,
        method: &'static str,
        target: String,
        apply: impl FnOnce(&mut Store) -> Result<(T, u16), ArmError>,
    ) -> Result<T, CloudError> {
        let op = if matches!(method, "GET" | "LIST") { Op::Read } else { Op::Write };
        let (fault, latency) = {
            let mut st = self.lock();
            let fault = st.faults.decide(method, &target, op);
            (fault, st.faults.latency(op))
        };
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let mut st = self.lock();
        let (result, status) = match fault {
            Some(Fault::Throttle { retry_after }) => {
                (Err(CloudError::Throttled { target: target.clone(), retry_after: Some(retry_after) }), 429)
            }
            Some(Fault::ServerError) => (
                Err(CloudError::Server {
                    target: target.clone(),
                    status: 500,
                    message: "InternalServerError: injected fault".into(),
                }),
                500,
            ),
            Some(Fault::Forbidden) => (
                Err(CloudError::Rejected {
                    target: target.clone(),
                    status: 403,
                    code: "AuthorizationFailed".into(),
                    message: "the client does not have authorization to perform this action (injected fault)".into(),
                }),
                403,
            ),
            Some(Fault::Timeout) => (Err(CloudError::Timeout { target: target.clone() }), 408),
            None | Some(Fault::TimeoutAfterApply) => {
                let applied = apply(&mut st.store).and_then(|ok| match st.store.commit() {
                    Ok(()) => Ok(ok),
                    Err(e) => Err(ArmError::new(
                        500,
                        "InternalServerError",
                        format!("the simulated cloud could not persist the change: {e}"),
                    )),
                });
                match applied {
                    Ok((_, status)) if fault.is_some() => (Err(CloudError::Timeout { target: target.clone() }), status),
                    Ok((value, status)) => (Ok(value), status),
                    Err(e) => {
                        let status = e.status;
                        let err = if fault.is_some() {
                            CloudError::Timeout { target: target.clone() }
                        } else if status >= 500 {
                            CloudError::Server {
                                target: target.clone(),
                                status,
                                message: format!("{}: {}", e.code, e.message),
                            }
                        } else {
                            CloudError::Rejected { target: target.clone(), status, code: e.code, message: e.message }
                        };
                        (Err(err), status)
                    }
                }
            }
        };
        st.audit.push(Call { op, method: method.to_string(), target, status });
        result
    }
}

#[async_trait]
impl CloudRead for ArmSim {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        self.call("GET", id.to_string(), |store| {
            let found = rules::get(store, id)?;
            let status = if found.is_some() { 200 } else { 404 };
            Ok((found, status))
        })
        .await
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.call("LIST", format!("{parent}/{rtype}"), |store| Ok((rules::list(store, parent, rtype)?, 200))).await
    }
}

#[async_trait]
impl CloudWrite for ArmSim {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        self.call("PUT", id.to_string(), |store| {
            if_none_match(store, id)?;
            rules::put(store, id, body)
        })
        .await
        .map_err(|e| arm_refusal(e, Sent::IfNoneMatch))
    }

    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        self.call("PUT", id.to_string(), |store| {
            if_match(store, id, pre, true)?;
            rules::put(store, id, body)
        })
        .await
        .map_err(|e| arm_refusal(e, Sent::of(pre)))
    }

    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        self.call("DELETE", id.to_string(), |store| {
            if_match(store, id, pre, false)?;
            Ok(((), rules::delete(store, id)?))
        })
        .await
        .map_err(|e| arm_refusal(e, Sent::of(pre)))
    }
}

/// `If-None-Match: *`: ARM answers 412 when the resource exists.
fn if_none_match(store: &Store, id: &str) -> Result<(), ArmError> {
    if rules::get(store, id)?.is_some() {
        return Err(ArmError::new(
            412,
            "PreconditionFailed",
            format!("The resource '{id}' already exists; the condition If-None-Match: * was not met."),
        ));
    }
    Ok(())
}

/// `If-Match: <etag>`: ARM answers 412 when the resource's etag differs — or, for a PUT, when it
/// does not exist; a DELETE of a missing resource succeeds as without a condition.
fn if_match(store: &Store, id: &str, pre: &Precondition, put: bool) -> Result<(), ArmError> {
    let Precondition::IfMatch(expected) = pre else { return Ok(()) };
    let etag = match rules::get(store, id)? {
        Some(live) => live.get("etag").and_then(Value::as_str).map(str::to_string),
        None if put => None,
        None => return Ok(()),
    };
    if etag.as_deref() != Some(expected.as_str()) {
        let now = etag.unwrap_or_else(|| "none: it does not exist".to_string());
        return Err(ArmError::new(
            412,
            "PreconditionFailed",
            format!("The condition If-Match: {expected} was not met for '{id}' (its etag is {now})."),
        ));
    }
    Ok(())
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
