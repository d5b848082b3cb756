//! The chaos-event log in memory (tests, demos, `store.kind = "memory"`).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{ChaosEvent, ChaosLog, ChaosRecord};
use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;

/// Chaos events kept in memory, lost at exit.
#[derive(Debug, Default)]
pub struct MemoryChaosLog {
    records: Mutex<HashMap<TaskId, Vec<ChaosRecord>>>,
}

impl MemoryChaosLog {
    /// An empty log.
    pub fn new() -> MemoryChaosLog {
        MemoryChaosLog::default()
    }
}

#[async_trait]
impl ChaosLog for MemoryChaosLog {
    async fn append(&self, task: &TaskId, events: Vec<ChaosEvent>) -> Result<u64, StoreError> {
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let kept = records.entry(task.clone()).or_default();
        for event in events {
            let seq = kept.len() as u64 + 1;
            kept.push(ChaosRecord {
                task_id: task.clone(),
                seq,
                event,
            });
        }
        Ok(kept.len() as u64)
    }

    async fn read(
        &self,
        task: &TaskId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<ChaosRecord>, StoreError> {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        Ok(records
            .get(task)
            .map(|kept| {
                kept.iter()
                    .filter(|r| r.seq > after)
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn remove(&self, task: &TaskId) -> Result<(), StoreError> {
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records.remove(task);
        Ok(())
    }
}
