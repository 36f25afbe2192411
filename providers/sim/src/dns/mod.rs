//! The simulated DNS (GEP-0066 domains): zones and their records, the seeds' `DNSRecord` objects,
//! and the DNS extension's controller between them.
//!
//! [`DnsSim`] implements [`CloudRead`] / [`CloudWrite`] over [`trellis_planner::ids::DnsIds`] ids:
//! - `DNSRecord` objects (`/seeds/{seed}/namespaces/{namespace}/dnsrecords/{name}`,
//!   `extensions.gardener.cloud/v1alpha1`): what trellis writes. `create` refuses an existing one
//!   ([`CloudError::AlreadyExists`]); `update` replaces it under its version (`metadata.resourceVersion`,
//!   also answered as `etag`, which the write model's `Precondition::of` reads); `remove` deletes it.
//!   A body that is not a valid `DNSRecord` is 422 (every problem in one line); `spec.name` and
//!   `spec.recordType` are immutable (upstream's rule), so a new name is a new object.
//! - Zone records (`/dns/zones/{zone}/records/{fqdn}/{type}`, body `{name, type, ttl, values,
//!   owner?}`) and zones (`/dns/zones/{zone}`): read only (405 on a write). Lists: a namespace's
//!   `dnsrecords`, a zone's `records`, `/dns`'s `zones`.
//!
//! The DNS controller runs inside the write of a `DNSRecord`, atomically with it: the object's
//! record goes in `spec.zone` if set (a loaded zone that holds `spec.name`), else in the loaded zone
//! whose name is the longest suffix of `spec.name`; without one the write is refused ("no DNS zone
//! for …"). A record of that name and type owned by anyone else — declared in the world file, or
//! written for another `DNSRecord` — refuses the write (409, naming the owner): the controller never
//! overwrites a record it did not create. Deleting a `DNSRecord` removes the zone record it owns and
//! nothing else. A refused call changes nothing.
//!
//! Audit: every API call is a [`Call`] as for ARM and GCE; every zone-record write of the controller
//! follows its call in the log as a call of its own (`PUT` — created or changed — or `DELETE`, target
//! the record's id, op write), so the log says exactly which records were created and deleted. Faults
//! and latency are the core's (methods `GET`, `LIST`, `PUT`, `DELETE`). The store lives in memory
//! ([`DnsSim::in_memory`]) or in a sled tree ([`DnsSim::open`]; see `persist`), each call's changes
//! durable before it returns. The `dns:` world section is [`world`].

mod persist;
pub mod store;
pub mod world;

pub use store::{DnsId, RecordType, DEFAULT_TTL, DNSRECORD_API_VERSION, DNSRECORD_KIND};
pub use world::DnsWorld;

use crate::core::audit::AuditLog;
use crate::core::faults::{Fault, FaultState, FaultWording, Faults};
use crate::core::world::{SyncReport, WorldFile};
use crate::core::{latency, ApiError};
use crate::SimError;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use store::{ControllerWrite, DnsStore};
use trellis_planner::cloud::{Call, CloudError, CloudRead, CloudWrite, Op, Precondition};

struct DnsCore {
    store: DnsStore,
    audit: AuditLog,
    faults: FaultState,
    /// Where the store is kept (`None`: in memory only).
    persist: Option<persist::Persist>,
}

impl DnsCore {
    /// Writes the store's changes to its tree; the answer is the flush to wait for, outside the lock.
    fn write(&mut self) -> Result<Option<Arc<crate::core::persist::GroupFlush>>, SimError> {
        match &self.persist {
            Some(p) => p.write(&mut self.store),
            None => {
                self.store.dirty.clear();
                self.store.meta_dirty = false;
                Ok(None)
            }
        }
    }
}

/// The simulated DNS. Clones share it.
#[derive(Clone)]
pub struct DnsSim {
    inner: Arc<Mutex<DnsCore>>,
}

impl Default for DnsSim {
    fn default() -> DnsSim {
        DnsSim::in_memory()
    }
}

/// What one rule did: its answer, the HTTP status, and the DNS controller's writes.
type Outcome<T> = (T, u16, Vec<ControllerWrite>);

impl DnsSim {
    /// An empty simulated DNS in memory.
    pub fn in_memory() -> DnsSim {
        DnsSim::from_parts(DnsStore::default(), None)
    }

    /// The simulated DNS kept in `tree` (the state dir's `sim/dns`): what earlier commands left
    /// there, and every change written back before the call that made it returns.
    pub fn open(tree: sled::Tree) -> Result<DnsSim, SimError> {
        let (persist, store) = persist::Persist::open(tree)?;
        Ok(DnsSim::from_parts(store, Some(persist)))
    }

    fn from_parts(store: DnsStore, persist: Option<persist::Persist>) -> DnsSim {
        let core = DnsCore { store, audit: AuditLog::default(), faults: FaultState::default(), persist };
        DnsSim { inner: Arc::new(Mutex::new(core)) }
    }

    /// Makes writes durable through `flush` (the database owner's grouped flush, as
    /// [`crate::ArmSim::share_flush`]) instead of flushing the tree itself.
    pub fn share_flush(&self, flush: crate::SharedFlush) {
        if let Some(p) = &self.lock().persist {
            p.share_flush(flush);
        }
    }

    fn lock(&self) -> MutexGuard<'_, DnsCore> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The same simulated DNS with `faults` installed.
    pub fn with_faults(self, faults: Faults) -> DnsSim {
        self.set_faults(faults);
        self
    }

    /// Installs `faults` (replacing the previous ones) and restarts their call counting.
    pub fn set_faults(&self, faults: Faults) {
        self.lock().faults = FaultState::new(faults);
    }

    /// Every call answered so far (the controller's zone-record writes included).
    pub fn calls(&self) -> Vec<Call> {
        self.lock().audit.calls().to_vec()
    }

    /// Appends the calls not persisted yet to `tree` (see [`crate::ArmSim::persist_audit`]).
    pub fn persist_audit(&self, tree: &sled::Tree) -> Result<usize, SimError> {
        self.lock().audit.persist(tree)
    }

    /// Re-syncs the zones and records the world file's `dns:` section declares (see [`world`]). Not
    /// audited, not faulted.
    pub fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        let Some(dns) = &world.dns else {
            return Ok(SyncReport::default());
        };
        let flush = {
            let mut st = self.lock();
            let report = world::sync(&mut st.store, dns);
            (st.write()?, report)
        };
        if let Some(f) = flush.0 {
            f.durable()?;
        }
        Ok(flush.1)
    }

    /// GET without audit, latency or faults (tests, `trellis sim` commands).
    pub fn get_now(&self, id: &str) -> Option<Value> {
        let parsed = id.parse::<DnsId>().ok()?;
        self.lock().store.get(&parsed, id)
    }

    /// Every zone record, sorted by id.
    pub fn records(&self) -> Vec<Value> {
        self.lock().store.records.values().map(|r| r.value.clone()).collect()
    }

    /// Every `DNSRecord` object, sorted by id.
    pub fn objects(&self) -> Vec<Value> {
        self.lock().store.objects.values().cloned().collect()
    }

    /// One call: fault decision and latency, then `apply` under the lock, then the audit entries
    /// (the call's, then the controller's writes). `sent` is the version a conditional write carried.
    async fn call<T>(
        &self,
        method: &'static str,
        target: &str,
        sent: Option<&str>,
        apply: impl FnOnce(&mut DnsStore) -> Result<Outcome<T>, ApiError>,
    ) -> Result<T, CloudError> {
        let op = if matches!(method, "GET" | "LIST") { Op::Read } else { Op::Write };
        let (fault, delay) = {
            let mut st = self.lock();
            let fault = st.faults.decide(method, target, op);
            (fault, latency::delay(st.faults.faults(), op))
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let mut st = self.lock();
        let mut controller = Vec::new();
        let (result, status) = match injected(fault.as_ref(), target) {
            Some((err, status)) => (Err(err), status),
            None => match apply(&mut st.store) {
                Ok((value, status, writes)) => {
                    controller = writes;
                    match fault {
                        Some(_) => (Err(CloudError::Timeout { target: target.to_string() }), status),
                        None => (Ok(value), status),
                    }
                }
                Err(e) => {
                    let status = e.status;
                    let err = match fault {
                        Some(_) => CloudError::Timeout { target: target.to_string() },
                        None => dns_error(target, e, sent),
                    };
                    (Err(err), status)
                }
            },
        };
        let flush = st.write();
        let status = if flush.is_err() { 500 } else { status };
        st.audit.push(Call { op, method: method.to_string(), target: target.to_string(), status });
        for w in controller {
            st.audit.push(Call { op: Op::Write, method: w.method.to_string(), target: w.target, status: w.status });
        }
        drop(st);
        match flush {
            Err(e) => Err(storage_error(target, e)),
            Ok(Some(flush)) => {
                flush.durable().map_err(|e| storage_error(target, e))?;
                result
            }
            Ok(None) => result,
        }
    }
}

/// A storage failure as the cloud call's answer.
fn storage_error(target: &str, e: SimError) -> CloudError {
    CloudError::Server {
        target: target.to_string(),
        status: 500,
        message: format!("the simulated DNS could not store the change: {e}"),
    }
}

/// How this cloud words injected faults.
const DNS_FAULTS: FaultWording = FaultWording {
    server_status: 500,
    server_message: "InternalError: injected fault",
    forbidden_code: "Forbidden",
    forbidden_message: "the caller may not write DNSRecords (injected fault)",
};

/// The answer of a fault that keeps the request from being applied, with its audit status.
fn injected(fault: Option<&Fault>, target: &str) -> Option<(CloudError, u16)> {
    fault?.refusal(target, &DNS_FAULTS)
}

/// The simulator's refusal as the write model's error: 409 `AlreadyExists` on a create, 412 a
/// changed version, the rest [`CloudError::Rejected`].
fn dns_error(target: &str, e: ApiError, sent: Option<&str>) -> CloudError {
    let target = target.to_string();
    match e.status {
        409 if e.code == "AlreadyExists" => CloudError::AlreadyExists { target, status: 409 },
        412 => CloudError::PreconditionFailed { target, expected: sent.unwrap_or("none").to_string() },
        s if s >= 500 => CloudError::Server { target, status: s, message: format!("{}: {}", e.code, e.message) },
        status => CloudError::Rejected { target, status, code: e.code, message: e.message },
    }
}

#[async_trait]
impl CloudRead for DnsSim {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let parsed = store::parse_id(id);
        self.call("GET", id, None, move |store| {
            let found = store.get(&parsed?, id);
            let status = if found.is_some() { 200 } else { 404 };
            Ok((found, status, Vec::new()))
        })
        .await
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        let target = format!("{}/{rtype}", parent.trim_end_matches('/'));
        self.call("LIST", &target, None, |store| Ok((store.list(parent, rtype)?, 200, Vec::new()))).await
    }
}

#[async_trait]
impl CloudWrite for DnsSim {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let parsed = store::parse_id(id);
        self.call("PUT", id, None, move |store| {
            let (value, writes) = store.write_object(&parsed?, id, body, true, None)?;
            Ok((value, 201, writes))
        })
        .await
    }

    /// Replaces the object under `pre` (without one an absent object is created, as a PUT).
    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        let parsed = store::parse_id(id);
        let expected = match pre {
            Precondition::IfMatch(v) => Some(v.as_str()),
            Precondition::None => None,
        };
        self.call("PUT", id, expected, move |store| {
            let (value, writes) = store.write_object(&parsed?, id, body, false, expected)?;
            Ok((value, 200, writes))
        })
        .await
    }

    /// Deletes the object and the zone record it owns; an absent object is fine without a
    /// precondition, [`CloudError::PreconditionFailed`] with one.
    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        let parsed = store::parse_id(id);
        let expected = match pre {
            Precondition::IfMatch(v) => Some(v.as_str()),
            Precondition::None => None,
        };
        self.call("DELETE", id, expected, move |store| match store.delete_object(&parsed?, id, expected)? {
            Some(writes) => Ok(((), 200, writes)),
            None => Ok(((), 404, Vec::new())),
        })
        .await
    }
}

#[cfg(test)]
mod tests;
