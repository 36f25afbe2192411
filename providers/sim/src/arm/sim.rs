//! [`ArmSim`]'s ARM side: ARM's part of the shared call pipeline ([`Arm`]), the call paths behind
//! `CloudRead` / `CloudWrite`, and the unaudited views.

use crate::arm::store::Store;
use crate::arm::{rules, world, ArmId, Kind};
use crate::core::faults::FaultWording;
use crate::core::persist::GroupFlush;
use crate::core::precondition::Precondition;
use crate::core::sim::SimCloud;
use crate::core::world::{SyncReport, WorldFile};
use crate::core::ApiError;
use crate::core::Origin;
use crate::{ArmSim, SimError};
use serde_json::Value;
use std::sync::Arc;
use trellis_planner::cloud::CloudError;

/// ARM's part of the shared call pipeline ([`crate::core::sim::Sim`]).
pub(crate) struct Arm;

impl SimCloud for Arm {
    type Store = Store;
    /// ARM's store writes itself (its tree, read lazily, is inside it).
    type Persist = ();
    const FAULTS: FaultWording = FaultWording {
        server_status: 500,
        server_message: "InternalServerError: injected fault",
        forbidden_code: "AuthorizationFailed",
        forbidden_message: "the client does not have authorization to perform this action (injected fault)",
    };
    const SERVER_ERROR_CODE: &'static str = "InternalServerError";

    /// Refuses (and forgets) what was decided on a damaged read.
    fn write(store: &mut Store, _: &()) -> Result<Option<Arc<GroupFlush>>, SimError> {
        store.write()
    }

    /// 5xx are server errors (`<code>: <message>`), the rest rejections; the write model's
    /// classification by condition is [`ArmSim`]'s (`arm_refusal`).
    fn refusal(target: &str, e: ApiError, _sent: Option<&str>) -> CloudError {
        if e.status >= 500 {
            CloudError::Server {
                target: target.to_string(),
                status: e.status,
                message: format!("{}: {}", e.code, e.message),
            }
        } else {
            CloudError::Rejected { target: target.to_string(), status: e.status, code: e.code, message: e.message }
        }
    }

    /// A damaged resource an unaudited view read is not this call's.
    fn before_rule(store: &mut Store) {
        let _ = store.take_damage();
    }

    fn after_call(store: &mut Store) {
        store.trim();
    }
}

impl ArmSim {
    /// Re-syncs the resources `world` declares; see the `arm::world` module. Not audited, not faulted.
    pub fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        world::sync(&mut self.core.lock().store, world)
    }

    /// Every resource as a GET returns it, sorted by id (nested resources included on their own).
    pub fn snapshot(&self) -> Vec<Value> {
        let st = self.core.lock();
        st.store.entries().map(|e| rules::render(&st.store, e)).collect()
    }

    /// GET without audit, latency or faults (tests, `trellis sim` commands).
    pub fn get_now(&self, id: &str) -> Option<Value> {
        rules::get(&self.core.lock().store, id).ok().flatten()
    }

    /// Who brought the resource into the simulated cloud.
    pub fn origin(&self, id: &str) -> Option<Origin> {
        let key = ArmId::parse(id).ok()?.key();
        self.core.lock().store.get(&key).map(|e| e.origin)
    }

    /// PUT with a precondition, checked when the write is applied (after its latency), atomically with
    /// it: a failed one is 412 `PreconditionFailed` and changes nothing. Every write gives the resource
    /// a new etag.
    pub async fn put_if(&self, id: &str, body: Value, precondition: &Precondition) -> Result<Value, CloudError> {
        self.core
            .call_in("PUT", id.to_string(), rules::write_scope(id), |store| {
                rules::check_precondition(store, id, precondition)?;
                rules::put(store, id, body)
            })
            .await
    }

    /// DELETE with a precondition (`If-Match`), checked as in [`ArmSim::put_if`].
    pub async fn delete_if(&self, id: &str, precondition: &Precondition) -> Result<(), CloudError> {
        self.delete_with(id, precondition).await
    }

    /// PATCH of a resource's tags (ARM's Update Tags; see `rules::patch_tags`), with a precondition
    /// as [`ArmSim::put_if`]: the body's `tags` replace the resource's; answers the resource.
    pub async fn patch_tags(&self, id: &str, body: Value, precondition: &Precondition) -> Result<Value, CloudError> {
        self.core
            .call_in("PATCH", id.to_string(), rules::write_scope(id), |store| {
                rules::check_precondition(store, id, precondition)?;
                rules::patch_tags(store, id, &body)
            })
            .await
    }

    /// The resources of a resource group or subscription (`scope`) as ARM's generic list shows them
    /// (`GET {scope}/resources`; see `rules::resources`). Audited as a LIST of `{scope}/resources`.
    pub async fn list_resources(&self, scope: &str) -> Result<Vec<Value>, CloudError> {
        self.core
            .call("LIST", format!("{scope}/resources"), None, |store| Ok((rules::resources(store, scope)?, 200)))
            .await
    }

    pub(crate) async fn arm_get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        self.core
            .call("GET", id.to_string(), None, |store| {
                let found = rules::get(store, id)?;
                let status = if found.is_some() { 200 } else { 404 };
                Ok((found, status))
            })
            .await
    }

    pub(crate) async fn arm_list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        self.core
            .call("LIST", format!("{parent}/{rtype}"), None, |store| Ok((rules::list(store, parent, rtype)?, 200)))
            .await
    }

    /// DELETE; a resource group's is a long-running operation (see
    /// `rules::resource_group_delete_accept`) that this call waits for.
    async fn delete_with(&self, id: &str, precondition: &Precondition) -> Result<(), CloudError> {
        if let Some(rg) = ArmId::parse(id).ok().filter(|p| p.kind() == Kind::ResourceGroup) {
            return self
                .core
                .call_lro(
                    "DELETE",
                    id.to_string(),
                    |store| {
                        rules::check_precondition(store, id, precondition)?;
                        rules::resource_group_delete_accept(store, &rg)
                    },
                    |store| rules::resource_group_delete_step(store, &rg),
                    |store| rules::resource_group_delete_abort(store, &rg),
                )
                .await;
        }
        self.core
            .call_in("DELETE", id.to_string(), rules::write_scope(id), |store| {
                rules::check_precondition(store, id, precondition)?;
                Ok(((), rules::delete(store, id)?))
            })
            .await
    }
}
