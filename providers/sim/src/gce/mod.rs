//! The simulated GCE cloud (compute v1, and IAM service accounts).
//!
//! [`GceSim`] keeps resources in GCE's REST JSON shape (`kind`, `id` as a decimal string, RFC 3339
//! `creationTimestamp`, base64 `fingerprint` where compute v1 has one (subnetworks, VMs), full-URL `selfLink` and references), addressed by
//! selfLink path ([`GcePath`]: `projects/P/global/networks/N`, `projects/P/regions/R/subnetworks/S`,
//! … and `projects/P/serviceAccounts/EMAIL`), compared case-sensitively. It answers two surfaces:
//!
//! - GCE's REST calls: [`GceSim::insert`] (POST to the collection), [`GceSim::patch`],
//!   [`GceSim::delete_resource`], [`GceSim::list_page`] (`filter`, `maxResults`, `pageToken`) and
//!   GET through [`CloudRead::get`] (operations too). Compute writes answer an `Operation`, status
//!   `DONE`; a write that fails after acceptance (over quota) answers 200 with an operation that
//!   carries `error.errors[]` and `httpErrorStatusCode`, as GCE does — clients must look.
//! - trellis' write model ([`CloudRead`] / [`CloudWrite`]): `create` = insert, `update` = PATCH
//!   (a subnetwork's under its fingerprint; a network's, router's or firewall's — which have none —
//!   after a GET that must show the content version the caller read), `remove` = delete; a failed operation becomes the error, and the resource is
//!   read back (an audited GET) as a client would.
//!
//! The rules are in `rules` (see the module list in ARCHITECTURE.md), the filter in [`filter`], the
//! `gce:` world section in [`world`], the runtime writers (CCM routes and Service firewall rules, the
//! bastion controller) in [`runtime`]. The store (`store`) lives in memory
//! ([`GceSim::in_memory`]) or in a sled tree ([`GceSim::open`], `persist`: every call's changes
//! durable before it returns); a Cloud NAT is a sub-resource of its router ([`nat`]).

pub mod filter;
pub mod nat;
pub mod path;
mod persist;
mod rules;
pub mod runtime;
mod store;
pub mod world;

pub use path::{Collection, CollectionPath, GcePath, Scope, COMPUTE_URL};
pub use rules::{ListQuery, AUTO_MODE_SUBNETS};
pub use store::Quotas;

use crate::core::faults::{FaultWording, Faults};
use crate::core::persist::GroupFlush;
use crate::core::sim::{Sim, SimCloud};
use crate::core::world::{SyncReport, WorldFile};
use crate::core::ApiError;
use crate::core::Origin;
use crate::SimError;
use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::{Arc, MutexGuard};
use store::GceStore;
use trellis_planner::cloud::{Call, CloudError, CloudRead, CloudWrite, ListFilter, Precondition};
use trellis_planner::ids::{GceIds, IdScheme};

/// GCE's part of the shared call pipeline ([`Sim`]).
pub(crate) struct Gce;

impl SimCloud for Gce {
    type Store = GceStore;
    /// Where the store is kept (`None`: in memory only).
    type Persist = Option<persist::Persist>;
    const FAULTS: FaultWording = FaultWording {
        server_status: 503,
        server_message: "backendError: injected fault",
        forbidden_code: "forbidden",
        forbidden_message: "Required permission is missing (injected fault)",
    };
    const SERVER_ERROR_CODE: &'static str = "internalError";

    fn write(store: &mut GceStore, persist: &Self::Persist) -> Result<Option<Arc<GroupFlush>>, SimError> {
        match persist {
            Some(p) => p.write(store),
            None => {
                store.dirty.clear();
                store.ops_dirty.clear();
                store.meta_dirty = false;
                Ok(None)
            }
        }
    }

    fn refusal(target: &str, e: ApiError, sent: Option<&str>) -> CloudError {
        gce_error(target, e, sent)
    }

    fn load(store: &mut GceStore, persist: &Self::Persist) -> Result<(), SimError> {
        persist.as_ref().map_or(Ok(()), |p| p.load(store))
    }
}

/// The simulated GCE cloud. Clones share the same cloud.
#[derive(Clone)]
pub struct GceSim {
    sim: Sim<Gce>,
}

impl Default for GceSim {
    fn default() -> GceSim {
        GceSim::in_memory()
    }
}

impl GceSim {
    /// An empty simulated GCE cloud in memory, with the default [`Quotas`].
    pub fn in_memory() -> GceSim {
        GceSim { sim: Sim::new(GceStore::default(), None) }
    }

    /// The simulated GCE cloud kept in `tree` (the state dir's `sim/gce`): what earlier commands left
    /// there, and every change written back before the call that made it returns.
    pub fn open(tree: sled::Tree) -> Result<GceSim, SimError> {
        let (persist, store) = persist::Persist::open(tree)?;
        Ok(GceSim { sim: Sim::unread(store, Some(persist)) })
    }

    /// Makes writes durable through `flush` (the database owner's grouped flush, as
    /// [`crate::ArmSim::share_flush`]) instead of flushing the tree itself.
    pub fn share_flush(&self, flush: crate::SharedFlush) {
        if let Some(p) = &self.sim.lock_unread().persist {
            p.share_flush(flush);
        }
    }

    fn lock(&self) -> MutexGuard<'_, crate::core::sim::Core<Gce>> {
        self.sim.lock()
    }

    /// The same simulated cloud with `faults` installed.
    pub fn with_faults(self, faults: Faults) -> GceSim {
        self.set_faults(faults);
        self
    }

    /// Installs `faults` (replacing the previous ones) and restarts their call counting. Methods are
    /// GCE's: `GET`, `LIST`, `POST` (insert), `PATCH`, `DELETE`.
    pub fn set_faults(&self, faults: Faults) {
        self.sim.set_faults(faults);
    }

    /// How many faults were injected since the faults were installed.
    pub fn faults_fired(&self) -> usize {
        self.sim.faults_fired()
    }

    /// Every call answered so far, failed and faulted ones included.
    pub fn calls(&self) -> Vec<Call> {
        self.sim.calls()
    }

    /// Appends the calls not persisted yet to `file` (as [`crate::ArmSim::persist_audit`] does), so
    /// that the audit log of a command outlives its process; returns how many were written.
    pub fn persist_audit(&self, file: &crate::AuditFile) -> Result<usize, SimError> {
        self.sim.persist_audit(file)
    }

    /// Keeps the audit log in `file` as the calls are made (as [`crate::ArmSim::keep_audit`] does).
    pub fn keep_audit(&self, file: crate::AuditFile) -> Result<usize, SimError> {
        self.sim.keep_audit(file)
    }

    /// The project the last world file named (`gcp.project`), if any: the shoots' project unless
    /// `--project` names another.
    pub fn project(&self) -> Option<String> {
        self.sim.lock_unread().store.project.clone()
    }

    /// The quotas in force.
    pub fn quotas(&self) -> Quotas {
        self.sim.lock_unread().store.quotas
    }

    /// Sets the quotas (a world file's `gce.quotas` does the same).
    pub fn set_quotas(&self, quotas: Quotas) -> Result<(), SimError> {
        {
            let mut st = self.lock();
            st.store.quotas = quotas;
            st.store.meta_dirty = true;
        }
        self.sim.commit()
    }

    /// Re-syncs the resources the world file's `gcp:` (or `gce:`) section declares and its project
    /// (see [`world`]). Not audited, not faulted.
    pub fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        let report = world::sync(&mut self.lock().store, world)?;
        self.sim.commit()?;
        Ok(report)
    }

    /// Every resource as a GET returns it, sorted by selfLink path.
    pub fn snapshot(&self) -> Vec<Value> {
        let st = self.lock();
        st.store
            .entries
            .keys()
            .filter_map(|k| GcePath::parse(k).ok())
            .filter_map(|p| rules::render(&st.store, &p))
            .collect()
    }

    /// GET without audit, latency or faults (tests, `trellis sim` commands).
    pub fn get_now(&self, id: &str) -> Option<Value> {
        let path = GcePath::parse(id).ok()?;
        if path.collection() == Collection::Operations {
            self.read_operations(id).ok()?;
        }
        rules::render(&self.lock().store, &path)
    }

    /// Who brought the resource into the simulated cloud.
    pub fn origin(&self, id: &str) -> Option<Origin> {
        let path = GcePath::parse(id).ok()?;
        self.lock().store.entries.get(&path.key()).map(|e| e.origin)
    }

    /// POST to a collection (`projects/P/global/networks`, …): creates the resource named by the
    /// body's `name` (service accounts: `{accountId, serviceAccount}`). Answers the Operation (IAM:
    /// the account); a duplicate name is 409 `alreadyExists`, an invalid one 400 `invalid`.
    pub async fn insert(&self, collection: &str, body: Value) -> Result<Value, CloudError> {
        let coll = CollectionPath::parse(collection);
        let target = match (&coll, body.get("name").or_else(|| body.get("accountId")).and_then(Value::as_str)) {
            (Ok(c), Some(n)) => format!("{}/{n}", c.path()),
            _ => collection.to_string(),
        };
        self.call("POST", target, None, move |store| {
            let coll = coll.map_err(rules::invalid)?;
            rules::insert(store, &coll, body, Origin::Api)
        })
        .await
    }

    /// PATCH a resource: the body's fields replace the stored ones. A subnetwork's body must carry its
    /// current `fingerprint` (400 `required` without, 412 `conditionNotMet` when stale; a service
    /// account's `etag`, if sent, must be current); networks, routers and firewalls have none.
    /// Answers the Operation.
    pub async fn patch(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let sent = body.get("fingerprint").or_else(|| body.get("etag")).and_then(Value::as_str).map(str::to_string);
        let path = GcePath::parse(id);
        self.call("PATCH", id.to_string(), sent, move |store| {
            let path = path.map_err(rules::invalid)?;
            rules::patch(store, &path, body)
        })
        .await
    }

    /// DELETE a resource: 404 `notFound` when missing, 400 `resourceInUseByAnotherResource` while
    /// something uses it. Answers the Operation.
    pub async fn delete_resource(&self, id: &str) -> Result<Value, CloudError> {
        self.delete_checked(id, None).await
    }

    /// DELETE under a fingerprint, checked atomically with the delete (GCE's delete takes none; a
    /// client checks it with a GET first — the simulator checks both at once).
    async fn delete_checked(&self, id: &str, expected: Option<String>) -> Result<Value, CloudError> {
        let path = GcePath::parse(id);
        self.call("DELETE", id.to_string(), expected.clone(), move |store| {
            let path = path.map_err(rules::invalid)?;
            if let Some(expected) = &expected {
                match rules::version_of(store, &path) {
                    Some(have) if have == *expected => {}
                    _ => return Err(ApiError::new(412, "conditionNotMet", "Precondition check failed.")),
                }
            }
            rules::delete(store, &path)
        })
        .await
    }

    /// One page of a collection, in GCE's list shape, with `filter` and paging.
    pub async fn list_page(&self, collection: &str, query: &ListQuery) -> Result<Value, CloudError> {
        let coll = CollectionPath::parse(collection);
        if coll.as_ref().is_ok_and(|c| c.collection == Collection::Operations) {
            self.read_operations(collection)?;
        }
        let q = query.clone();
        self.call_read("LIST", collection.to_string(), move |store| {
            let coll = coll.map_err(rules::invalid)?;
            Ok((rules::list(store, &coll, &q)?, 200))
        })
        .await
    }

    /// One page of an aggregated list (`projects/P/aggregated/subnetworks`, `…/routers`,
    /// `…/addresses`): `items` keyed `regions/R` as GCE answers it (see `rules::aggregated_list`).
    pub async fn aggregated_list_page(
        &self,
        project: &str,
        collection: &str,
        query: &ListQuery,
    ) -> Result<Value, CloudError> {
        let (project, collection, q) = (project.to_string(), collection.to_string(), query.clone());
        let target = format!("projects/{project}/aggregated/{collection}");
        self.call_read("LIST", target, move |store| {
            Ok((rules::aggregated_list(store, &project, &collection, &q)?, 200))
        })
        .await
    }

    async fn call_read<T>(
        &self,
        method: &'static str,
        target: String,
        apply: impl FnOnce(&GceStore) -> Result<(T, u16), ApiError>,
    ) -> Result<T, CloudError> {
        self.call(method, target, None, |store| apply(store)).await
    }

    /// One call through the shared pipeline ([`Sim::call`]). `sent` is the fingerprint a conditional
    /// write carried (for a 412's message).
    async fn call<T>(
        &self,
        method: &'static str,
        target: String,
        sent: Option<String>,
        apply: impl FnOnce(&mut GceStore) -> Result<(T, u16), ApiError>,
    ) -> Result<T, CloudError> {
        self.sim.call(method, target, sent.as_deref(), apply).await
    }

    /// Reads the operations of earlier sessions into the store, before the first call that asks for
    /// one (`target`: the operation or the list); a stored operation that does not read back is that
    /// call's 500, naming its key.
    fn read_operations(&self, target: &str) -> Result<(), CloudError> {
        let mut core = self.sim.lock();
        let core = &mut *core;
        match &core.persist {
            Some(p) if core.store.operations_unread => {
                p.load_operations(&mut core.store).map_err(|e| crate::core::sim::storage_failure::<Gce>(target, e))
            }
            _ => Ok(()),
        }
    }

    /// GET, audited: `Ok(None)` on 404.
    async fn get_audited(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let path = GcePath::parse(id);
        if path.as_ref().is_ok_and(|p| p.collection() == Collection::Operations) {
            self.read_operations(id)?;
        }
        self.call("GET", id.to_string(), None, move |store| {
            let path = path.map_err(rules::invalid)?;
            let found = rules::render(store, &path);
            let status = if found.is_some() { 200 } else { 404 };
            Ok((found, status))
        })
        .await
    }
}

/// Classifies GCE's refusal: 409 `alreadyExists` is [`CloudError::AlreadyExists`], 412
/// `conditionNotMet` [`CloudError::PreconditionFailed`], 429 throttling, 5xx server errors, the rest
/// [`CloudError::Rejected`].
pub fn gce_error_of(
    target: &str,
    status: u16,
    code: &str,
    message: &str,
    sent_fingerprint: Option<&str>,
) -> CloudError {
    gce_error(target, ApiError::new(status, code, message), sent_fingerprint)
}

fn gce_error(target: &str, e: ApiError, sent: Option<&str>) -> CloudError {
    let target = target.to_string();
    match e.status {
        409 if e.code == "alreadyExists" => CloudError::AlreadyExists { target, status: 409 },
        412 => CloudError::PreconditionFailed { target, expected: sent.unwrap_or("none").to_string() },
        429 => CloudError::Throttled { target, retry_after: None },
        s if s >= 500 => CloudError::Server { target, status: s, message: format!("{}: {}", e.code, e.message) },
        status => CloudError::Rejected { target, status, code: e.code, message: e.message },
    }
}

/// The error a failed (DONE, with `error.errors[]`) operation stands for, if it failed.
pub fn operation_error(target: &str, operation: &Value) -> Option<CloudError> {
    let first = operation.get("error")?.get("errors")?.as_array()?.first()?;
    let status =
        operation.get("httpErrorStatusCode").and_then(Value::as_u64).and_then(|s| u16::try_from(s).ok()).unwrap_or(400);
    let code = first.get("code").and_then(Value::as_str).unwrap_or("UNKNOWN");
    let message = first.get("message").and_then(Value::as_str).unwrap_or("the operation failed");
    Some(gce_error_of(target, status, code, message, None))
}

#[async_trait]
impl CloudRead for GceSim {
    /// A Cloud NAT (`<router>/nats/<name>`) answers its router's entry ([`nat`]).
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        match nat::split_nat_id(id) {
            Some((router, name)) => self.get_nat(&router, &name).await,
            None => self.get_audited(id).await,
        }
    }

    /// Lists `parent/rtype` (`projects/P/global` + `firewalls`, `projects/P/regions/R` +
    /// `subnetworks`, `projects/P` + `serviceAccounts`), following `nextPageToken`: one audited
    /// LIST per page.
    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.list_all(parent, rtype, ListQuery::default()).await
    }

    /// GCE's list `filter` ([`ListFilter::gce_expression`]): only what passes is read.
    async fn list_where(&self, parent: &str, rtype: &str, filter: &ListFilter) -> Result<Vec<Value>, CloudError> {
        let query = ListQuery { filter: Some(filter.gce_expression()), ..ListQuery::default() };
        self.list_all(parent, rtype, query).await
    }

    /// Only with injected latency: in process, a call costs no round trip.
    fn round_trips(&self) -> bool {
        !self.sim.faults().latency.is_zero()
    }
}

impl GceSim {
    /// Every page of `parent/rtype` under `query`, following `nextPageToken`: one audited LIST per page.
    async fn list_all(&self, parent: &str, rtype: &str, mut query: ListQuery) -> Result<Vec<Value>, CloudError> {
        let collection = format!("{}/{rtype}", parent.trim_end_matches('/'));
        let mut items = Vec::new();
        loop {
            let mut page = self.list_page(&collection, &query).await?;
            let field = if rtype == "serviceAccounts" { "accounts" } else { "items" };
            if let Some(Value::Array(page_items)) = page.get_mut(field).map(Value::take) {
                items.extend(page_items);
            }
            match page.get("nextPageToken").and_then(Value::as_str) {
                Some(t) => query.page_token = Some(t.to_string()),
                None => return Ok(items),
            }
        }
    }
}

/// A write's name and collection from its id.
fn split(id: &str) -> Result<GcePath, CloudError> {
    GcePath::parse(id).map_err(|e| CloudError::Rejected {
        target: id.to_string(),
        status: 400,
        code: "invalid".into(),
        message: e,
    })
}

#[async_trait]
impl CloudWrite for GceSim {
    /// Insert, then GET. The body's `name` (if any) must be the id's.
    /// A Cloud NAT is written into its router's `nats[]` ([`nat`]).
    async fn create(&self, id: &str, mut body: Value) -> Result<Value, CloudError> {
        if let Some(nat) = nat::split_nat_id(id) {
            return self.write_nat(id, nat, body, &Precondition::None, true).await;
        }
        let path = split(id)?;
        let rejected = |message: String| CloudError::Rejected {
            target: id.to_string(),
            status: 400,
            code: "invalid".into(),
            message,
        };
        if !body.is_object() {
            return Err(rejected("the request body must be a JSON object".into()));
        }
        let body = if path.collection() == Collection::ServiceAccounts {
            let suffix = format!("@{}.iam.gserviceaccount.com", path.project());
            let Some(account_id) = path.name.strip_suffix(&suffix) else {
                return Err(rejected(format!(
                    "a service account of project '{}' is named <id>{suffix}",
                    path.project()
                )));
            };
            json!({"accountId": account_id, "serviceAccount": body})
        } else {
            match body.get("name").and_then(Value::as_str) {
                Some(n) if n != path.name => {
                    return Err(rejected(format!("the body's name '{n}' is not the id's '{}'", path.name)))
                }
                _ => body["name"] = json!(path.name),
            }
            body
        };
        let answer = self.insert(&path.parent.path(), body).await?;
        if let Some(e) = operation_error(id, &answer) {
            return Err(e);
        }
        self.get_audited(id).await?.ok_or_else(|| CloudError::Server {
            target: id.to_string(),
            status: 500,
            message: "the created resource is gone".into(),
        })
    }

    /// A subnetwork (or service account): PATCH with the fingerprint (`etag`) of `pre` (without one:
    /// the current one, read first; a missing resource is then created), then GET. A kind without a
    /// fingerprint on GCE (network, router, firewall): GET right before the PATCH, refused as
    /// [`CloudError::PreconditionFailed`] when its [`GceIds::content_version`] is not the one `pre`
    /// names, then a PATCH without a fingerprint, as a real client sends it (the audit shows both).
    async fn update(&self, id: &str, mut body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        if let Some(nat) = nat::split_nat_id(id) {
            return self.write_nat(id, nat, body, pre, false).await;
        }
        let path = split(id)?;
        match rules::version_field(path.collection()) {
            Some(field) => {
                let version = match pre {
                    Precondition::IfMatch(v) => v.clone(),
                    Precondition::None => match self.get_audited(id).await? {
                        Some(current) => current.get(field).and_then(Value::as_str).unwrap_or_default().to_string(),
                        None => return self.create(id, body).await,
                    },
                };
                if let Some(obj) = body.as_object_mut() {
                    obj.insert(field.to_string(), json!(version));
                }
            }
            None => {
                let current = self.get_audited(id).await?;
                let stale = |expected: &str| CloudError::PreconditionFailed {
                    target: id.to_string(),
                    expected: expected.to_string(),
                };
                match (current, pre) {
                    (None, Precondition::IfMatch(v)) => return Err(stale(v)),
                    (None, Precondition::None) => return self.create(id, body).await,
                    (Some(current), Precondition::IfMatch(v)) if GceIds.precondition(&current) != *pre => {
                        return Err(stale(v))
                    }
                    (Some(_), _) => {}
                }
                if let Some(obj) = body.as_object_mut() {
                    obj.remove("fingerprint");
                }
            }
        }
        let answer = self.patch(id, body).await?;
        if let Some(e) = operation_error(id, &answer) {
            return Err(e);
        }
        self.get_audited(id).await?.ok_or_else(|| CloudError::Server {
            target: id.to_string(),
            status: 500,
            message: "the patched resource is gone".into(),
        })
    }

    /// Delete; a missing resource is fine without a precondition, 412 with one.
    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        if let Some(nat) = nat::split_nat_id(id) {
            return self.remove_nat(id, nat, pre).await;
        }
        let expected = match pre {
            Precondition::IfMatch(v) => Some(v.clone()),
            Precondition::None => None,
        };
        match self.delete_checked(id, expected).await {
            Ok(answer) => operation_error(id, &answer).map_or(Ok(()), Err),
            Err(CloudError::Rejected { status: 404, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
