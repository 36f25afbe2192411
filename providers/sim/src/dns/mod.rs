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

use crate::core::faults::{FaultWording, Faults};
use crate::core::persist::GroupFlush;
use crate::core::sim::{Sim, SimCloud};
use crate::core::world::{SyncReport, WorldFile};
use crate::core::ApiError;
use crate::SimError;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use store::{ControllerWrite, DnsStore};
use trellis_planner::cloud::{Call, CloudError, CloudRead, CloudWrite, Op, Precondition};

/// The DNS's part of the shared call pipeline ([`Sim`]).
pub(crate) struct Dns;

impl SimCloud for Dns {
    type Store = DnsStore;
    /// Where the store is kept (`None`: in memory only).
    type Persist = Option<persist::Persist>;
    const FAULTS: FaultWording = FaultWording {
        server_status: 500,
        server_message: "InternalError: injected fault",
        forbidden_code: "Forbidden",
        forbidden_message: "the caller may not write DNSRecords (injected fault)",
    };
    const SERVER_ERROR_CODE: &'static str = "InternalError";

    fn write(store: &mut DnsStore, persist: &Self::Persist) -> Result<Option<Arc<GroupFlush>>, SimError> {
        match persist {
            Some(p) => p.write(store),
            None => {
                store.dirty.clear();
                store.meta_dirty = false;
                Ok(None)
            }
        }
    }

    fn refusal(target: &str, e: ApiError, sent: Option<&str>) -> CloudError {
        dns_error(target, e, sent)
    }
}

/// The simulated DNS. Clones share it.
#[derive(Clone)]
pub struct DnsSim {
    sim: Sim<Dns>,
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
        DnsSim { sim: Sim::new(DnsStore::default(), None) }
    }

    /// The simulated DNS kept in `tree` (the state dir's `sim/dns`): what earlier commands left
    /// there, and every change written back before the call that made it returns.
    pub fn open(tree: sled::Tree) -> Result<DnsSim, SimError> {
        let (persist, store) = persist::Persist::open(tree)?;
        Ok(DnsSim { sim: Sim::new(store, Some(persist)) })
    }

    /// Makes writes durable through `flush` (the database owner's grouped flush, as
    /// [`crate::ArmSim::share_flush`]) instead of flushing the tree itself.
    pub fn share_flush(&self, flush: crate::SharedFlush) {
        if let Some(p) = &self.sim.lock().persist {
            p.share_flush(flush);
        }
    }

    /// The same simulated DNS with `faults` installed.
    pub fn with_faults(self, faults: Faults) -> DnsSim {
        self.set_faults(faults);
        self
    }

    /// Installs `faults` (replacing the previous ones) and restarts their call counting.
    pub fn set_faults(&self, faults: Faults) {
        self.sim.set_faults(faults);
    }

    /// Every call answered so far (the controller's zone-record writes included).
    pub fn calls(&self) -> Vec<Call> {
        self.sim.calls()
    }

    /// Appends the calls not persisted yet to `tree` (see [`crate::ArmSim::persist_audit`]).
    pub fn persist_audit(&self, tree: &sled::Tree) -> Result<usize, SimError> {
        self.sim.persist_audit(tree)
    }

    /// Keeps the audit log in `tree` as the calls are made (a served simulated DNS, `trellis sim
    /// serve`; see [`crate::ArmSim::keep_audit`]).
    pub fn keep_audit(&self, tree: sled::Tree) -> Result<usize, SimError> {
        self.sim.keep_audit(tree)
    }

    /// Re-syncs the zones and records the world file's `dns:` section declares (see [`world`]). Not
    /// audited, not faulted.
    pub fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        let Some(dns) = world::DnsWorld::of(world)? else {
            return Ok(SyncReport::default());
        };
        let report = world::sync(&mut self.sim.lock().store, &dns);
        self.sim.commit()?;
        Ok(report)
    }

    /// GET without audit, latency or faults (tests, `trellis sim` commands).
    pub fn get_now(&self, id: &str) -> Option<Value> {
        let parsed = id.parse::<DnsId>().ok()?;
        self.sim.lock().store.get(&parsed, id)
    }

    /// Every zone record, sorted by id.
    pub fn records(&self) -> Vec<Value> {
        self.sim.lock().store.records.values().map(|r| r.value.clone()).collect()
    }

    /// Every `DNSRecord` object, sorted by id.
    pub fn objects(&self) -> Vec<Value> {
        self.sim.lock().store.objects.values().cloned().collect()
    }

    /// One call through the shared pipeline; the DNS controller's writes are audited after it.
    /// `sent` is the version a conditional write carried.
    async fn call<T>(
        &self,
        method: &'static str,
        target: &str,
        sent: Option<&str>,
        apply: impl FnOnce(&mut DnsStore) -> Result<Outcome<T>, ApiError>,
    ) -> Result<T, CloudError> {
        self.sim
            .call_followed(method, target.to_string(), sent, None, |store| {
                let (value, status, writes) = apply(store)?;
                let writes = writes
                    .into_iter()
                    .map(|w| Call { op: Op::Write, method: w.method.to_string(), target: w.target, status: w.status })
                    .collect();
                Ok((value, status, writes))
            })
            .await
    }
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
