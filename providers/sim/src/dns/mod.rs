//! The simulated DNS (GEP-0066 domains): zones and their record sets, and the seeds' `DNSRecord`
//! objects — one store with one set of rules, read and written in process and served by `trellis sim
//! serve` in Azure DNS's and Cloud DNS's REST shapes.
//!
//! [`DnsSim`] implements [`CloudRead`] / [`CloudWrite`] over neutral [`trellis_planner::ids::DnsIds`]
//! ids (compared in lowercase; a DNS name without its trailing dot):
//! - **`DNSRecord` objects** (`/seeds/{seed}/namespaces/{namespace}/dnsrecords/{name}`,
//!   `extensions.gardener.cloud/v1alpha1`): `create` refuses an existing one
//!   ([`CloudError::AlreadyExists`]); `update` replaces it under its version
//!   (`metadata.resourceVersion`, also answered as `etag`, which the write model's
//!   `Precondition::of` reads); `remove` deletes it. A body that is not a valid `DNSRecord` is 422
//!   (every problem in one line); `spec.name` and `spec.recordType` are immutable (upstream's rule).
//!   Writing or deleting one changes nothing else: there is no DNS controller — the record sets the
//!   DNS provider extension writes for it are written through their own ids, below.
//! - **Record sets** (`/dns/zones/{zone}/records/{fqdn}/{TYPE}`, `TYPE` one of `A`, `AAAA`, `CNAME`,
//!   `TXT`). Body `{"name": "api.dev.example.com", "type": "A", "ttl": 120, "values":
//!   ["203.0.113.10"]}`; a GET or LIST answers it with the read-only `"etag"` (a new one on every
//!   write, the version `Precondition::IfMatch` names) and `"zone"` (the zone's name). In a write
//!   body `name` and `type` may be left out and must match the id when given; `etag`, `zone` and
//!   `id` are ignored; any other field is refused. `create` = only if absent (ARM `If-None-Match:
//!   *`); `update(…, IfMatch(etag))` = replace at that etag (`IfMatch("*")`: any etag, the set must
//!   exist; `update` without a precondition creates an absent set, as a PUT); `remove(…,
//!   IfMatch(etag))` likewise (an absent set without a
//!   precondition is fine, audited 404). The rules (both clouds'; a refused call changes nothing):
//!   the zone exists; the name is a DNS name inside the zone; a CNAME is the only record set at its
//!   name and not at the zone apex; `ttl` is required, `0..=`[`store::MAX_TTL`]; `values` a
//!   non-empty list, each valid for the type (IPv4 for `A`, IPv6 for `AAAA`, one host name for
//!   `CNAME`, a non-empty string for `TXT`).
//! - **Zones** (`/dns/zones/{zone}`, declared by the world file; 405 on a write): GET and LIST
//!   (`list("/dns", "zones")`) answer `{"id": "/dns/zones/example.com", "name": "example.com",
//!   "azure": {"subscription"?, "resourceGroup"}, "gcp": {"project"?, "managedZone"}}`, both blocks
//!   always (a zone that declares none: resource group [`store::DEFAULT_AZURE_RESOURCE_GROUP`],
//!   managed zone [`store::default_managed_zone`]; an absent subscription or project: the zone is
//!   served under every one). A zone's record sets: `list("/dns/zones/{zone}", "records")`, sorted
//!   by id.
//!
//! **Errors** (what the served REST shapes translate into their clouds' own): a missing zone is
//! [`CloudError::Rejected`] 404 code `NotFound` (a GET of a set in it is `Ok(None)`); a bad name or
//! body 400 `BadRequest` (every problem in one line, naming the id); a create of an existing set
//! [`CloudError::AlreadyExists`] (status 409); a CNAME beside another type 409 `Conflict` (Azure
//! DNS's words); a stale or absent set under `IfMatch` [`CloudError::PreconditionFailed`] (412); a
//! write to a zone 405 `MethodNotAllowed`; an id of no known shape 400 `Invalid`.
//!
//! **Public API for the served shapes:** [`DnsSim::zones`] (every zone object),
//! [`DnsSim::azure_zone`] (subscription, resource group, zone name → zone object) and
//! [`DnsSim::gcp_zone`] (project, managed zone → zone object), none audited; everything else through
//! [`CloudRead`] / [`CloudWrite`] with the neutral ids above, so the served simulator and the
//! in-process one answer alike.
//!
//! Audit: every API call is a [`Call`] as for ARM and GCE (a record-set write is one `PUT` or
//! `DELETE` of its id). Faults and latency are the core's (methods `GET`, `LIST`, `PUT`, `DELETE`).
//! The store lives in memory ([`DnsSim::in_memory`]) or in a sled tree ([`DnsSim::open`]; see
//! `persist`), each call's changes durable before it returns. The `dns:` world section is
//! [`world`]: its record sets are someone else's, and a sync never deletes a record set written
//! through the API.
//!
//! **Seeds** (`/seeds/{seed}`, the world file's `seeds:` section, see [`seeds`]): GET answers where
//! the seed's API-server records point, `{"name": "aws-eu1", "ingress": {"ip": "203.0.113.10"}}` (or
//! `{"hostname": "lb.example.net"}`), `Ok(None)` for a seed not declared; writes are 405.

mod persist;
pub mod seeds;
pub mod store;
pub mod world;

pub use store::{
    default_managed_zone, record_id, AzureZone, DnsId, GcpZone, RecordType, DEFAULT_AZURE_RESOURCE_GROUP, DEFAULT_TTL,
    DNSRECORD_API_VERSION, DNSRECORD_KIND, MAX_TTL,
};
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
use store::{DnsStore, SetWrite};
use trellis_planner::cloud::{Call, CloudError, CloudRead, CloudWrite, Precondition};

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

    fn load(store: &mut DnsStore, persist: &Self::Persist) -> Result<(), SimError> {
        persist.as_ref().map_or(Ok(()), |p| p.load(store))
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

impl DnsSim {
    /// An empty simulated DNS in memory.
    pub fn in_memory() -> DnsSim {
        DnsSim { sim: Sim::new(DnsStore::default(), None) }
    }

    /// The simulated DNS kept in `tree` (the state dir's `sim/dns`): what earlier commands left
    /// there, and every change written back before the call that made it returns.
    pub fn open(tree: sled::Tree) -> Result<DnsSim, SimError> {
        let (persist, store) = persist::Persist::open(tree)?;
        Ok(DnsSim { sim: Sim::unread(store, Some(persist)) })
    }

    /// Makes writes durable through `flush` (the database owner's grouped flush, as
    /// [`crate::ArmSim::share_flush`]) instead of flushing the tree itself.
    pub fn share_flush(&self, flush: crate::SharedFlush) {
        if let Some(p) = &self.sim.lock_unread().persist {
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

    /// Every call answered so far.
    pub fn calls(&self) -> Vec<Call> {
        self.sim.calls()
    }

    /// Appends the calls not persisted yet to `file` (see [`crate::ArmSim::persist_audit`]).
    pub fn persist_audit(&self, file: &crate::AuditFile) -> Result<usize, SimError> {
        self.sim.persist_audit(file)
    }

    /// Keeps the audit log in `file` as the calls are made (a served simulated DNS, `trellis sim
    /// serve`; see [`crate::ArmSim::keep_audit`]).
    pub fn keep_audit(&self, file: crate::AuditFile) -> Result<usize, SimError> {
        self.sim.keep_audit(file)
    }

    /// Re-syncs the zones and record sets the world file's `dns:` section declares (see [`world`])
    /// and the seeds its `seeds:` section declares (see [`seeds`]); a section the file does not have
    /// leaves its part as it is. Not audited, not faulted.
    pub fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        let dns = world::DnsWorld::of(world)?;
        if let Some(dns) = &dns {
            dns.declared(&world.path)?;
        }
        let declared_seeds = seeds::of(world)?;
        if let Some(list) = &declared_seeds {
            seeds::declared(list, &world.path)?;
        }
        if dns.is_none() && declared_seeds.is_none() {
            return Ok(SyncReport::default());
        }
        let mut report = SyncReport::default();
        {
            let mut st = self.sim.lock();
            if let Some(dns) = &dns {
                world::clashes(&st.store, dns, &world.path)?;
                report.extend(world::sync(&mut st.store, dns));
            }
            if let Some(list) = &declared_seeds {
                report.extend(seeds::sync(&mut st.store, list));
            }
        }
        self.sim.commit()?;
        Ok(report)
    }

    /// GET without audit, latency or faults (tests, `trellis sim` commands).
    pub fn get_now(&self, id: &str) -> Option<Value> {
        let parsed = id.parse::<DnsId>().ok()?;
        self.sim.lock().store.get(&parsed, id)
    }

    /// Every record set as a GET answers it, sorted by id.
    pub fn records(&self) -> Vec<Value> {
        let st = self.sim.lock();
        st.store
            .records
            .iter()
            .map(|(k, r)| r.render(k.strip_prefix("/dns/zones/").and_then(|z| z.split('/').next()).unwrap_or_default()))
            .collect()
    }

    /// Every `DNSRecord` object, sorted by id.
    pub fn objects(&self) -> Vec<Value> {
        self.sim.lock().store.objects.values().cloned().collect()
    }

    /// Every zone object (`{"id", "name", "azure", "gcp"}`, see the module doc), sorted by name.
    /// Not audited: what the served REST shapes read to map their own zone ids to neutral ones.
    pub fn zones(&self) -> Vec<Value> {
        self.sim.lock().store.zones.values().map(store::Zone::object).collect()
    }

    /// The zone object of the Azure DNS zone `zone` (its DNS name, any spelling) in resource group
    /// `resource_group` of `subscription` (both compared case-insensitively, as ARM does): a zone of
    /// that name whose `azure` block (declared or default) names that resource group and that
    /// subscription or none. Not audited.
    pub fn azure_zone(&self, subscription: &str, resource_group: &str, zone: &str) -> Option<Value> {
        let st = self.sim.lock();
        let found = st.store.zones.get(&store::normal_name(zone))?;
        let azure = found.azure();
        let subscription_ok = azure.subscription.as_deref().is_none_or(|s| s.eq_ignore_ascii_case(subscription));
        (subscription_ok && azure.resource_group.eq_ignore_ascii_case(resource_group)).then(|| found.object())
    }

    /// The zone object of the Cloud DNS managed zone `managed_zone` of `project` (both compared
    /// exactly, as Cloud DNS does): the zone whose `gcp` block (declared or default) names that
    /// managed zone and that project or none. Not audited.
    pub fn gcp_zone(&self, project: &str, managed_zone: &str) -> Option<Value> {
        let st = self.sim.lock();
        st.store
            .zones
            .values()
            .find(|z| {
                let gcp = z.gcp();
                gcp.managed_zone == managed_zone && gcp.project.as_deref().is_none_or(|p| p == project)
            })
            .map(store::Zone::object)
    }

    /// One call through the shared pipeline. `sent` is the version a conditional write carried.
    async fn call<T>(
        &self,
        method: &'static str,
        target: &str,
        sent: Option<&str>,
        apply: impl FnOnce(&mut DnsStore) -> Result<(T, u16), ApiError>,
    ) -> Result<T, CloudError> {
        self.sim.call(method, target.to_string(), sent, apply).await
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

/// The version a precondition carries.
fn expected(pre: &Precondition) -> Option<&str> {
    match pre {
        Precondition::IfMatch(v) => Some(v.as_str()),
        Precondition::None => None,
    }
}

#[async_trait]
impl CloudRead for DnsSim {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let parsed = store::parse_id(id);
        self.call("GET", id, None, move |store| {
            let found = store.get(&parsed?, id);
            let status = if found.is_some() { 200 } else { 404 };
            Ok((found, status))
        })
        .await
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        let target = format!("{}/{rtype}", parent.trim_end_matches('/'));
        self.call("LIST", &target, None, |store| Ok((store.list(parent, rtype)?, 200))).await
    }
}

#[async_trait]
impl CloudWrite for DnsSim {
    /// Creates the object or record set; [`CloudError::AlreadyExists`] when it exists.
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let parsed = store::parse_id(id);
        self.call("PUT", id, None, move |store| store.write(&parsed?, id, body, SetWrite::Create)).await
    }

    /// Replaces the object or record set under `pre` (without one an absent one is created, as a
    /// PUT).
    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        let parsed = store::parse_id(id);
        let expected = expected(pre);
        self.call("PUT", id, expected, move |store| store.write(&parsed?, id, body, SetWrite::Update(expected))).await
    }

    /// Deletes the object or record set, and nothing else; an absent one is fine without a
    /// precondition (audited as 404), [`CloudError::PreconditionFailed`] with one.
    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        let parsed = store::parse_id(id);
        let expected = expected(pre);
        self.call("DELETE", id, expected, move |store| {
            let deleted = store.delete(&parsed?, id, expected)?;
            Ok(((), if deleted { 200 } else { 404 }))
        })
        .await
    }
}

#[cfg(test)]
mod tests;
