//! The chaos-event log: every fault a chaos skill injected on purpose (time, phase,
//! connection, fault, direction), kept apart from observability events and genuine
//! failures, so that nobody mistakes an experiment for an outage or an outage for an
//! experiment. Records are numbered per task in the order they were written.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::TaskId;
use crate::store::StoreError;

mod in_memory;
mod in_sled;

pub use in_memory::MemoryChaosLog;
pub use in_sled::SledChaosLog;

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
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::store::{Durability, SledStore};

    fn event(fault: &str, connection: u64) -> ChaosEvent {
        ChaosEvent {
            at: Utc::now(),
            phase: "fault".into(),
            connection: Some(connection),
            fault: fault.into(),
            direction: Some("downstream".into()),
            detail: json!({"delayMs": 120}),
        }
    }

    #[tokio::test]
    async fn records_are_kept_per_task_in_order_and_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let sled = Arc::new(SledStore::open(dir.path(), Durability::Sync).unwrap());
        let (one, two) = (TaskId::from("t-1"), TaskId::from("t-10"));
        let logs: Vec<(&str, Arc<dyn ChaosLog>)> = vec![
            ("memory", Arc::new(MemoryChaosLog::new())),
            ("sled", Arc::new(SledChaosLog::new(sled.clone()))),
        ];
        for (name, log) in logs {
            let batch = vec![event("latency", 1), event("reset_peer", 2)];
            assert_eq!(log.append(&one, batch).await.unwrap(), 2, "{name}");
            assert_eq!(log.append(&two, vec![event("down", 1)]).await.unwrap(), 1);
            assert_eq!(log.append(&one, vec![event("slicer", 3)]).await.unwrap(), 3);
            let all = log.read(&one, 0, 10).await.unwrap();
            let faults: Vec<&str> = all.iter().map(|r| r.event.fault.as_str()).collect();
            assert_eq!(faults, ["latency", "reset_peer", "slicer"], "{name}");
            assert_eq!(
                all.iter().map(|r| r.seq).collect::<Vec<_>>(),
                [1, 2, 3],
                "{name}"
            );
            assert!(
                all.iter().all(|r| r.task_id == one),
                "{name}: t-10 kept apart"
            );
            let page = log.read(&one, 1, 1).await.unwrap();
            assert_eq!(page[0].seq, 2, "{name}: paged after a seq");
            log.remove(&two).await.unwrap();
            assert!(log.read(&two, 0, 10).await.unwrap().is_empty(), "{name}");
            assert_eq!(log.read(&one, 0, 10).await.unwrap().len(), 3, "{name}");
        }
        drop(sled);
        let sled = crate::testing::open_sled(dir.path()).await;
        let log = SledChaosLog::new(Arc::new(sled));
        assert_eq!(log.read(&one, 0, 10).await.unwrap().len(), 3, "kept");
        assert_eq!(
            log.append(&one, vec![event("latency", 4)]).await.unwrap(),
            4,
            "numbered after what was there"
        );
    }
}
