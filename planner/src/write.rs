//! How the executor writes: every create, update and delete of a node goes through a [`Writer`].
//!
//! - **Preconditions.** An update or delete is sent with the version the executor read right before
//!   ([`IdScheme::precondition`] of the re-read: ARM's `etag` as `If-Match`, GCE's `fingerprint`, or
//!   for the GCE kinds without one the version of their content, which the client compares with a
//!   GET right before its PATCH). If someone wrote the resource in
//!   between — the CCM adding a route to the route table, say — the cloud refuses (412) and the node
//!   fails with "changed since it was read (etag …); re-run `trellis plan`": the other writer's change
//!   is never overwritten with a body built from the older version (a lost update).
//!   The one exception: when the live resource already has every attribute of the node's patch, the
//!   refused attempt was a retry of one of ours that landed (a timeout after the cloud applied it),
//!   and the node is done. Without a patch (a detach), a refusal always fails.
//! - **Creates** are sent as creates ([`CloudWrite::create`], ARM `If-None-Match: *`). When the
//!   resource is already there ([`CloudError::AlreadyExists`] — typically a retried create whose first
//!   attempt landed), it is read back and taken as **ours** only if its managed attributes equal the
//!   node's patch (the patch describes exactly the attributes trellis manages, and plan JSON carries no
//!   ownership marker). Anything else is someone else's resource and the node fails naming it.
//! - **Serialised writes per scope.** ARM refuses two concurrent writes to children of one resource
//!   (`AnotherOperationInProgress` for two subnets of one VNet). [`WriteLocks`] holds an async mutex
//!   per [`IdScheme::write_scope`]; each write holds its scope's mutex for the duration of the call
//!   (retries included), so writes within a scope are made one at a time while other scopes proceed
//!   in parallel. The locks are shared by every plan of a fleet applied together (shoots may put
//!   subnets into one user VNet). As a second line of defence, [`CloudError::Conflict`] is transient:
//!   the retry policy backs off and tries again.

use crate::cloud::{CloudError, CloudWrite};
use crate::exec::NodeError;
use crate::ids::IdScheme;
use crate::json;
use crate::retry::RetryPolicy;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OwnedMutexGuard;

/// One async mutex per write scope; see the [module docs](self).
pub struct WriteLocks {
    ids: &'static dyn IdScheme,
    scopes: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl WriteLocks {
    /// Locks whose scopes are computed under `ids` (the provider's scheme, `Provider::ids`).
    pub fn new(ids: &'static dyn IdScheme) -> WriteLocks {
        WriteLocks { ids, scopes: Mutex::new(HashMap::new()) }
    }

    /// The id scheme the scopes are computed with.
    pub fn ids(&self) -> &dyn IdScheme {
        self.ids
    }

    /// Waits until no other write of `id`'s scope is in flight; the scope is held until the guard drops.
    pub async fn acquire(&self, id: &str) -> OwnedMutexGuard<()> {
        let scope = self.ids.write_scope(id);
        let lock = {
            let mut scopes = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(scopes.entry(scope).or_default())
        };
        lock.lock_owned().await
    }
}

impl std::fmt::Debug for WriteLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scopes = self.scopes.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("WriteLocks").field("scopes", &scopes).finish_non_exhaustive()
    }
}

/// The executor's writes: preconditions, "already exists", per-scope serialisation, retries.
pub struct Writer<'a> {
    pub cloud: &'a dyn CloudWrite,
    pub retry: &'a RetryPolicy,
    pub locks: &'a WriteLocks,
}

impl Writer<'_> {
    /// GET with retries.
    pub async fn get(&self, id: &str) -> Result<Option<Value>, NodeError> {
        Ok(self.retry.run(|| self.cloud.get(id)).await?)
    }

    /// Creates `id` with `body` (the node's `patch` applied to nothing). A resource found there is
    /// success only when it is ours: its attributes equal `patch`.
    pub async fn create(&self, id: &str, body: &Value, patch: &Value) -> Result<Value, NodeError> {
        let res = {
            let _scope = self.locks.acquire(id).await;
            self.retry.run(|| self.cloud.create(id, body.clone())).await
        };
        match res {
            Ok(live) => Ok(live),
            Err(CloudError::AlreadyExists { .. }) => match self.get(id).await? {
                Some(live) if json::changes_in(self.locks.ids(), Some(&live), patch).is_empty() => Ok(live),
                Some(live) => {
                    let differ: Vec<String> =
                        json::changes_in(self.locks.ids(), Some(&live), patch).into_iter().map(|c| c.path).collect();
                    Err(NodeError::NotOurs {
                        message: format!(
                            "{id} already exists and is not the one this plan creates (it differs at {}): someone else made it; remove or rename it, then re-run `trellis plan`",
                            differ.join(", ")
                        ),
                    })
                }
                // Gone again between the refusal and the read: nothing of ours is there.
                None => Err(NodeError::StaleSincePlan {
                    message: format!("{id} existed when it was created and is gone now; re-run `trellis plan`"),
                }),
            },
            Err(e) => Err(e.into()),
        }
    }

    /// Replaces `id` with `body`, under the version `read` carries. `patch` (the node's managed
    /// attributes, when the write is the node's own) tells a retried write that landed from another
    /// writer's change.
    pub async fn update(
        &self,
        id: &str,
        body: &Value,
        read: &Value,
        patch: Option<&Value>,
    ) -> Result<Value, NodeError> {
        let pre = self.locks.ids().precondition(read);
        let res = {
            let _scope = self.locks.acquire(id).await;
            self.retry.run(|| self.cloud.update(id, body.clone(), &pre)).await
        };
        match res {
            Ok(live) => Ok(live),
            Err(e @ CloudError::PreconditionFailed { .. }) => match (patch, self.get(id).await?) {
                (Some(patch), Some(live)) if json::changes_in(self.locks.ids(), Some(&live), patch).is_empty() => {
                    Ok(live)
                }
                _ => Err(e.into()),
            },
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes `id`, under the version `read` carries. A resource already gone is deleted.
    pub async fn delete(&self, id: &str, read: &Value) -> Result<(), NodeError> {
        let pre = self.locks.ids().precondition(read);
        let res = {
            let _scope = self.locks.acquire(id).await;
            self.retry.run(|| self.cloud.remove(id, &pre)).await
        };
        match res {
            Ok(()) => Ok(()),
            Err(e @ CloudError::PreconditionFailed { .. }) => match self.get(id).await? {
                None => Ok(()),
                Some(_) => Err(e.into()),
            },
            Err(e) => Err(e.into()),
        }
    }
}
