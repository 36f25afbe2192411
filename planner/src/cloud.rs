//! The cloud as the engine sees it: REST resources as JSON, addressed by their cloud id.
//!
//! Architecture invariant: discovery, pre-flight and verify nodes only ever hold a `&dyn CloudRead`.
//! Only the executor's write path for managed resources holds a `&dyn CloudWrite`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Why a cloud call failed.
///
/// Which errors are **transient** ([`CloudError::is_transient`]: the engine's retry policy tries the
/// call again, with backoff): throttling (429), server errors (5xx), timeouts, an unreachable cloud, and
/// [`CloudError::Conflict`] — another operation on the same resource or its parent is running (ARM's
/// `AnotherOperationInProgress`); it ends by itself, so waiting and retrying is right, although ARM's own
/// SDKs treat it as final. Definitive, never retried: [`CloudError::Rejected`],
/// [`CloudError::PreconditionFailed`] (the resource changed since it was read: re-reading and
/// re-planning is the caller's decision) and [`CloudError::AlreadyExists`] (a create found the resource
/// there: whether that is success depends on whose it is, which only the caller can tell).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CloudError {
    #[error("{target}: throttled (HTTP 429){}", retry_hint(*.retry_after))]
    Throttled { target: String, retry_after: Option<Duration> },
    #[error("{target}: server error (HTTP {status}): {message}")]
    Server { target: String, status: u16, message: String },
    #[error("{target}: timed out")]
    Timeout { target: String },
    /// No HTTP answer at all (connection refused or reset, DNS): the cloud could not be reached.
    #[error("{target}: cannot reach the cloud: {message}")]
    Unreachable { target: String, message: String },
    /// A definitive refusal (4xx other than 429): retrying will not help.
    #[error("{target}: {code} (HTTP {status}): {message}")]
    Rejected { target: String, status: u16, code: String, message: String },
    /// An update or delete sent with [`Precondition::IfMatch`] found another version (ARM: 412 on
    /// `If-Match`; GCE: 412 on a stale fingerprint): someone wrote the resource since it was read.
    #[error("{target}: changed since it was read (etag {expected}); re-run `trellis plan`")]
    PreconditionFailed { target: String, expected: String },
    /// A create found the resource already there (ARM: 412 on `If-None-Match: *`; GCE: 409
    /// `alreadyExists`).
    #[error("{target}: already exists (HTTP {status})")]
    AlreadyExists { target: String, status: u16 },
    /// The cloud is busy with another operation on this resource or its parent (ARM: 409
    /// `AnotherOperationInProgress`, e.g. two subnet writes in one VNet). Transient.
    #[error("{target}: {code} (HTTP 409): {message}")]
    Conflict { target: String, code: String, message: String },
}

fn retry_hint(d: Option<Duration>) -> String {
    match d {
        Some(d) => format!(", retry after {} ms", d.as_millis()),
        None => String::new(),
    }
}

/// ARM's error code for a write refused because another one on the same resource (or its parent)
/// is still running.
pub const ANOTHER_OPERATION_IN_PROGRESS: &str = "AnotherOperationInProgress";

impl CloudError {
    /// Whether the call may succeed when tried again (429, 5xx, timeouts, [`CloudError::Conflict`]).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            CloudError::Throttled { .. }
                | CloudError::Server { .. }
                | CloudError::Timeout { .. }
                | CloudError::Unreachable { .. }
                | CloudError::Conflict { .. }
        )
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CloudError::Throttled { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Classifies ARM's refusal (a 4xx other than 429) of a request sent with `precondition`: 412 is
    /// [`CloudError::AlreadyExists`] for a create (`If-None-Match: *`) and
    /// [`CloudError::PreconditionFailed`] for an `If-Match`; 409 `AnotherOperationInProgress` is
    /// [`CloudError::Conflict`]; anything else [`CloudError::Rejected`]. The one place the ARM
    /// implementations (simulator, HTTP server, client) classify these.
    pub fn arm_refusal(target: &str, status: u16, code: String, message: String, sent: Sent) -> CloudError {
        let target = target.to_string();
        match (status, sent) {
            (412, Sent::IfNoneMatch) => CloudError::AlreadyExists { target, status },
            (412, Sent::IfMatch(expected)) => CloudError::PreconditionFailed { target, expected },
            (409, _) if code.eq_ignore_ascii_case(ANOTHER_OPERATION_IN_PROGRESS) => {
                CloudError::Conflict { target, code, message }
            }
            _ => CloudError::Rejected { target, status, code, message },
        }
    }
}

/// The condition a write was sent with, as far as classifying its refusal needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// No condition (a read, or an unconditional write).
    Nothing,
    /// `If-None-Match: *` (a create).
    IfNoneMatch,
    /// `If-Match: <etag>`.
    IfMatch(String),
}

impl Sent {
    /// What an update or delete with `pre` sends.
    pub fn of(pre: &Precondition) -> Sent {
        match pre {
            Precondition::None => Sent::Nothing,
            Precondition::IfMatch(e) => Sent::IfMatch(e.clone()),
        }
    }
}

/// The condition an update or delete is made under.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Precondition {
    /// Whatever version is there (ARM: no `If-Match`).
    None,
    /// Only the version read earlier: ARM's `etag` (sent as `If-Match`), GCE's `fingerprint`. Another
    /// version is [`CloudError::PreconditionFailed`].
    IfMatch(String),
}

impl Precondition {
    /// `IfMatch` with the resource's version as read (ARM `etag`, GCE `fingerprint`), `None` when it
    /// carries none (ARM resource groups have no etag).
    pub fn of(resource: &Value) -> Precondition {
        ["etag", "fingerprint"]
            .iter()
            .find_map(|k| resource.get(*k).and_then(Value::as_str))
            .filter(|v| !v.is_empty())
            .map_or(Precondition::None, |v| Precondition::IfMatch(v.to_string()))
    }
}

/// A list narrowed to the items whose `field` refers to a resource named `name`: its value (a URL or
/// a path) ends in `/<name>`. GCE's firewall rules and routes of one network: `network` ending in
/// `/<vpc>`, which GCE's list `filter` selects on the server ([`ListFilter::gce_expression`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListFilter {
    pub field: &'static str,
    pub name: String,
}

impl ListFilter {
    pub fn new(field: &'static str, name: impl Into<String>) -> ListFilter {
        ListFilter { field, name: name.into() }
    }

    /// Whether `item` passes, as the cloud's filter decides it.
    pub fn matches(&self, item: &Value) -> bool {
        item.get(self.field)
            .and_then(Value::as_str)
            .and_then(|v| v.strip_suffix(self.name.as_str()))
            .is_some_and(|head| head.ends_with('/'))
    }

    /// GCE's list `filter` for it, in the regular-expression form (`network eq ".*/vpc"`: RE2, matched
    /// against the whole value).
    pub fn gce_expression(&self) -> String {
        let mut name = String::with_capacity(self.name.len());
        for c in self.name.chars() {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                name.push('\\');
            }
            name.push(c);
        }
        format!("{} eq \".*/{name}\"", self.field)
    }
}

/// Reading the cloud. Every implementation records each call in its audit log.
#[async_trait]
pub trait CloudRead: Send + Sync {
    /// GET one resource by id; `Ok(None)` on 404.
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError>;
    /// List the direct children of `parent` of the given REST type
    /// (Azure: `parent` = resource group or VNet id, `rtype` = e.g. `Microsoft.Network/natGateways`).
    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError>;

    /// [`CloudRead::list`] narrowed by `filter`: on the server where the cloud's list takes a filter
    /// (GCE), else the whole list narrowed here (the default).
    async fn list_where(&self, parent: &str, rtype: &str, filter: &ListFilter) -> Result<Vec<Value>, CloudError> {
        let mut items = self.list(parent, rtype).await?;
        items.retain(|item| filter.matches(item));
        Ok(items)
    }

    /// Whether a call costs a round trip (a cloud over the network, or a simulated one with
    /// latency): what makes one wide list of an account cheaper than many calls
    /// ([`crate::wide::FleetReads`]). A cloud in this process answering at once says no: read as
    /// asked, it costs less than holding an account's lists. Default: yes.
    fn round_trips(&self) -> bool {
        true
    }
}

/// Writing the cloud: create, update under a precondition, delete under a precondition.
///
/// The model fits ARM (PUT with `If-None-Match: *` / `If-Match: <etag>`, DELETE with `If-Match`) and
/// GCE (insert; update/patch/delete with the `fingerprint` read). Every method returns when the
/// cloud's operation has **ended**: a long-running operation (ARM's `Azure-AsyncOperation` or
/// `Location` on 201/202, a GCE operation) is polled to its end by the implementation, and a failed
/// operation is an error. Ids are the cloud's own ([`crate::ids::IdScheme`] says how they compare).
#[async_trait]
pub trait CloudWrite: CloudRead {
    /// Creates the resource; [`CloudError::AlreadyExists`] when it is there already (ARM: PUT with
    /// `If-None-Match: *`). Returns the resource as the cloud answers it.
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError>;
    /// Replaces the resource with `body` under `pre` ([`CloudError::PreconditionFailed`] when the
    /// version differs). With [`Precondition::None`] an ARM update of a missing resource creates it
    /// (PUT is an upsert); callers that must not create use [`CloudWrite::create`].
    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError>;
    /// Deletes the resource (and its children) under `pre`. Deleting a resource that does not exist
    /// succeeds (ARM answers 204).
    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError>;

    /// An unconditional write — an update without precondition — as the simulated runtime writers
    /// (the CCM, the bastion controller) and tests make them.
    async fn put(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        self.update(id, body, &Precondition::None).await
    }

    /// An unconditional delete.
    async fn delete(&self, id: &str) -> Result<(), CloudError> {
        self.remove(id, &Precondition::None).await
    }
}

/// Whether a call reads or writes.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Read,
    Write,
}

/// One cloud call, as the audit log and `apply --output json` report it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub op: Op,
    /// HTTP method: GET, PUT, DELETE.
    pub method: String,
    /// The resource id (for a list: the parent id followed by `/<type>`).
    pub target: String,
    /// HTTP status the cloud answered.
    pub status: u16,
}

/// Wraps a cloud and records every call it makes: the report's `calls[]`.
pub struct Audited {
    inner: std::sync::Arc<dyn CloudWrite>,
    log: std::sync::Mutex<Vec<Call>>,
}

impl Audited {
    pub fn new(inner: std::sync::Arc<dyn CloudWrite>) -> Audited {
        Audited { inner, log: std::sync::Mutex::new(Vec::new()) }
    }

    /// The calls made so far, in the order they completed.
    pub fn calls(&self) -> Vec<Call> {
        self.log.lock().expect("audit log lock").clone()
    }

    fn record<T>(&self, op: Op, method: &str, target: String, res: &Result<T, CloudError>, ok_status: u16) {
        let status = match res {
            Ok(_) => ok_status,
            Err(e) => e.status(),
        };
        self.log.lock().expect("audit log lock").push(Call { op, method: method.to_string(), target, status });
    }
}

impl CloudError {
    /// The HTTP status this error stands for (408 for a client-side timeout, 0 for no answer at all).
    pub fn status(&self) -> u16 {
        match self {
            CloudError::Unreachable { .. } => 0,
            CloudError::Throttled { .. } => 429,
            CloudError::Server { status, .. } | CloudError::Rejected { status, .. } => *status,
            CloudError::Timeout { .. } => 408,
            CloudError::PreconditionFailed { .. } => 412,
            CloudError::AlreadyExists { status, .. } => *status,
            CloudError::Conflict { .. } => 409,
        }
    }
}

#[async_trait]
impl CloudRead for Audited {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let res = self.inner.get(id).await;
        let status = match &res {
            Ok(None) => 404,
            _ => 200,
        };
        self.record(Op::Read, "GET", id.to_string(), &res, status);
        res
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        let res = self.inner.list(parent, rtype).await;
        self.record(Op::Read, "LIST", format!("{parent}/{rtype}"), &res, 200);
        res
    }

    async fn list_where(&self, parent: &str, rtype: &str, filter: &ListFilter) -> Result<Vec<Value>, CloudError> {
        let res = self.inner.list_where(parent, rtype, filter).await;
        self.record(Op::Read, "LIST", format!("{parent}/{rtype}"), &res, 200);
        res
    }

    fn round_trips(&self) -> bool {
        self.inner.round_trips()
    }
}

#[async_trait]
impl CloudWrite for Audited {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let res = self.inner.create(id, body).await;
        self.record(Op::Write, "PUT", id.to_string(), &res, 200);
        res
    }

    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        let res = self.inner.update(id, body, pre).await;
        self.record(Op::Write, "PUT", id.to_string(), &res, 200);
        res
    }

    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        let res = self.inner.remove(id, pre).await;
        self.record(Op::Write, "DELETE", id.to_string(), &res, 200);
        res
    }
}
