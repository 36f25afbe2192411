//! The cloud as the engine sees it: REST resources as JSON, addressed by their cloud id.
//!
//! Architecture invariant: discovery, pre-flight and verify nodes only ever hold a `&dyn CloudRead`.
//! Only the executor's write path for managed resources holds a `&dyn CloudWrite`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Why a cloud call failed.
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
}

fn retry_hint(d: Option<Duration>) -> String {
    match d {
        Some(d) => format!(", retry after {} ms", d.as_millis()),
        None => String::new(),
    }
}

impl CloudError {
    /// Whether the call may succeed when tried again (429, 5xx, timeouts).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            CloudError::Throttled { .. }
                | CloudError::Server { .. }
                | CloudError::Timeout { .. }
                | CloudError::Unreachable { .. }
        )
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CloudError::Throttled { retry_after, .. } => *retry_after,
            _ => None,
        }
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
}

/// Writing the cloud: PUT replaces the whole resource; DELETE removes it (and its children).
#[async_trait]
pub trait CloudWrite: CloudRead {
    async fn put(&self, id: &str, body: Value) -> Result<Value, CloudError>;
    /// Deleting a resource that does not exist succeeds (ARM answers 204).
    async fn delete(&self, id: &str) -> Result<(), CloudError>;
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
}

#[async_trait]
impl CloudWrite for Audited {
    async fn put(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let res = self.inner.put(id, body).await;
        self.record(Op::Write, "PUT", id.to_string(), &res, 200);
        res
    }

    async fn delete(&self, id: &str) -> Result<(), CloudError> {
        let res = self.inner.delete(id).await;
        self.record(Op::Write, "DELETE", id.to_string(), &res, 200);
        res
    }
}
