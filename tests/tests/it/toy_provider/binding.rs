//! The toy provider's cloud binding: a simulated object store kept in its own tree of the state's
//! database (`sim/toy`), every call audited; a `toy:` section of exported world files (what its plans
//! read, by id); no world-file section to read, no real client, no `trellis sim` commands (the
//! binding's defaults).

use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use trellis_engine::backend::Backend;
use trellis_engine::binding::{CloudBinding, ExportedSection, Read, SimTrees, Simulator, Tree};
use trellis_planner::cloud::{Call, CloudError, CloudRead, CloudWrite, Op, Precondition};
use trellis_sim::{AuditLog, Faults, SharedFlush, SimError, SyncReport, WorldFile};

/// The binding, as registered.
pub static TOY_BINDING: ToyBinding = ToyBinding;

pub struct ToyBinding;

#[async_trait::async_trait]
impl CloudBinding for ToyBinding {
    fn provider_type(&self) -> &'static str {
        super::stages::TYPE
    }

    fn sim_name(&self) -> &'static str {
        "toy"
    }

    fn trees(&self) -> SimTrees {
        SimTrees { cloud: "sim/toy", audit_file: "audit/toy.jsonl", legacy_audit: "sim/toy-audit" }
    }

    fn open_sim(&self, tree: Tree, _world: Option<&WorldFile>) -> Result<Arc<dyn Simulator>, SimError> {
        Ok(Arc::new(ToyCloud { tree, audit: Arc::new(Mutex::new(AuditLog::default())) }))
    }

    fn sim_account(&self, _sim: &dyn Simulator) -> String {
        "toy-account".to_string()
    }

    /// `toy: {account, buckets: [...]}`: each bucket read, by id (a bucket needs nothing besides).
    async fn export_world(
        &self,
        read: Vec<Read>,
        _cloud: &dyn CloudRead,
        account: &str,
    ) -> anyhow::Result<Vec<ExportedSection>> {
        let mut by_id = std::collections::BTreeMap::new();
        for r in read {
            if let Some(id) = r.value.get("id").and_then(Value::as_str) {
                by_id.insert(id.to_string(), r.value.clone());
            }
        }
        let mut body = serde_json::Map::new();
        body.insert("account".to_string(), Value::String(account.to_string()));
        let resources = by_id.len();
        body.insert("buckets".to_string(), Value::Array(by_id.into_values().collect()));
        Ok(vec![ExportedSection { key: "toy", body: Value::Object(body), resources }])
    }
}

/// Buckets as JSON by id in a sled tree; its writes are made durable by the state's flushes (the tree
/// is in the state's database). Calls are kept in the simulators' audit log ([`AuditLog`]), so
/// `trellis sim audit` reads them like any simulated cloud's.
#[derive(Clone)]
pub struct ToyCloud {
    tree: Tree,
    audit: Arc<Mutex<AuditLog>>,
}

fn storage(e: impl std::fmt::Display) -> CloudError {
    CloudError::Server {
        target: "toy".to_string(),
        status: 500,
        message: format!("the toy cloud could not use its storage: {e}"),
    }
}

impl ToyCloud {
    fn audit(&self, op: Op, method: &str, target: &str, status: u16) {
        let call = Call { op, method: method.to_string(), target: target.to_string(), status };
        self.audit.lock().unwrap_or_else(PoisonError::into_inner).push(call);
    }

    fn read(&self, id: &str) -> Result<Option<Value>, CloudError> {
        match self.tree.get(id).map_err(storage)? {
            Some(bytes) => Ok(Some(serde_json::from_slice(&bytes).map_err(storage)?)),
            None => Ok(None),
        }
    }

    fn write(&self, id: &str, mut body: Value) -> Result<Value, CloudError> {
        body["id"] = Value::String(id.to_string());
        self.tree.insert(id, serde_json::to_vec(&body).map_err(storage)?).map_err(storage)?;
        Ok(body)
    }

    /// Every bucket it holds.
    pub fn ids(&self) -> Vec<String> {
        self.tree.iter().keys().filter_map(Result::ok).map(|k| String::from_utf8_lossy(&k).into_owned()).collect()
    }
}

#[async_trait::async_trait]
impl CloudRead for ToyCloud {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let found = self.read(id)?;
        self.audit(Op::Read, "GET", id, if found.is_some() { 200 } else { 404 });
        Ok(found)
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.audit(Op::Read, "GET", &format!("{parent}/{rtype}"), 200);
        let prefix = format!("{parent}/");
        let mut out = Vec::new();
        for item in self.tree.scan_prefix(prefix.as_bytes()) {
            let (_, bytes) = item.map_err(storage)?;
            out.push(serde_json::from_slice(&bytes).map_err(storage)?);
        }
        Ok(out)
    }
}

#[async_trait::async_trait]
impl CloudWrite for ToyCloud {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        if self.read(id)?.is_some() {
            self.audit(Op::Write, "PUT", id, 409);
            return Err(CloudError::AlreadyExists { target: id.to_string(), status: 409 });
        }
        self.audit(Op::Write, "PUT", id, 201);
        self.write(id, body)
    }

    async fn update(&self, id: &str, body: Value, _pre: &Precondition) -> Result<Value, CloudError> {
        self.audit(Op::Write, "PUT", id, 200);
        self.write(id, body)
    }

    async fn remove(&self, id: &str, _pre: &Precondition) -> Result<(), CloudError> {
        self.audit(Op::Write, "DELETE", id, 200);
        self.tree.remove(id).map_err(storage)?;
        Ok(())
    }
}

impl Simulator for ToyCloud {
    fn cloud(&self) -> Arc<dyn CloudWrite> {
        Arc::new(self.clone())
    }

    /// Nothing to hand over: the tree is in the state's database, whose flushes make its writes durable.
    fn share_flush(&self, _flush: SharedFlush, _store: &Backend) -> Result<(), SimError> {
        Ok(())
    }

    fn sync_world(&self, _world: &WorldFile) -> Result<SyncReport, SimError> {
        Ok(SyncReport::default())
    }

    fn persist_audit(&self, file: &trellis_sim::AuditFile) -> Result<usize, SimError> {
        self.audit.lock().unwrap_or_else(PoisonError::into_inner).persist(file)
    }

    fn calls(&self) -> Vec<Call> {
        self.audit.lock().unwrap_or_else(PoisonError::into_inner).calls().to_vec()
    }

    fn get_now(&self, id: &str) -> Option<Value> {
        self.read(id).ok().flatten()
    }

    /// The toy cloud injects no faults.
    fn set_faults(&self, _faults: Faults) {}
}
