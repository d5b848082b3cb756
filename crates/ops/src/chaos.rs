//! The chaos-event log: every fault a chaos skill injected on purpose (time, phase,
//! connection, fault, direction), kept apart from observability events and genuine
//! failures, so that nobody mistakes an experiment for an outage or an outage for an
//! experiment. Records are numbered per task in the order they were written.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;

mod in_memory;

pub use in_memory::MemoryChaosLog;

/// A fault as it was injected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChaosEvent {
    /// When it was injected.
    pub at: DateTime<Utc>,
    /// The phase of the experiment's plan it belongs to.
    pub phase: String,
    /// The proxied connection it was injected on (numbered from 1 per run), or none
    /// for a fault of the whole proxy (its listener closed for a `down` phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<u64>,
    /// The fault (`latency`, `reset_peer`, `http_error`...).
    pub fault: String,
    /// `upstream` (client to target) or `downstream` (target to client), when the fault
    /// acts on one direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// The particulars (the delay drawn, the status injected...).
    #[serde(default)]
    pub detail: Value,
}

/// A record of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChaosRecord {
    /// The task whose run injected it.
    pub task_id: TaskId,
    /// Its place among the task's records: increasing, from 1.
    pub seq: u64,
    /// What was injected.
    #[serde(flatten)]
    pub event: ChaosEvent,
}

/// Where chaos events are kept.
#[async_trait]
pub trait ChaosLog: Send + Sync + 'static {
    /// Appends `events` to `task`'s records, in order (durably as the store's mode
    /// says), and returns how many the task has now.
    async fn append(&self, task: &TaskId, events: Vec<ChaosEvent>) -> Result<u64, StoreError>;

    /// Up to `limit` of `task`'s records with `seq > after`, in order.
    async fn read(
        &self,
        task: &TaskId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<ChaosRecord>, StoreError>;

    /// Removes `task`'s records (with the task, when retention removes it).
    async fn remove(&self, task: &TaskId) -> Result<(), StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_log_keeps_the_chaos_contract() {
        let log = MemoryChaosLog::new();
        crate::testing::records_contract::check_chaos_log("memory", &log).await;
    }
}
