//! The chaos-event log in the sled store's `chaos` tree, keyed by task id, a 0 byte
//! (which no task id contains), and the record's number (u64 big endian), so that a
//! task's records sort together and in the order they were written.

use std::sync::Arc;

use async_trait::async_trait;

use fundi_ops::chaos::{ChaosEvent, ChaosLog, ChaosRecord};
use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;

use crate::SledStore;

/// The chaos-event log of a [`SledStore`] (durable as the store's mode says).
#[derive(Debug, Clone)]
pub struct SledChaosLog {
    store: Arc<SledStore>,
    /// Held from reading a task's last number to writing the batch after it, so that
    /// two appends to one task never take the same numbers.
    appending: Arc<std::sync::Mutex<()>>,
}

impl SledChaosLog {
    /// The chaos-event log of `store`.
    pub fn new(store: Arc<SledStore>) -> SledChaosLog {
        SledChaosLog {
            store,
            appending: Arc::default(),
        }
    }
}

/// Where a task's chaos events start in the `chaos` tree: its id and a 0 byte, which
/// no task id contains.
fn prefix(task: &TaskId) -> Vec<u8> {
    [task.as_str().as_bytes(), &[0]].concat()
}

/// Removes a task's chaos events (retention).
pub(crate) fn remove_of(tree: &sled::Tree, task: &TaskId) -> Result<(), StoreError> {
    for key in tree.scan_prefix(prefix(task)).keys() {
        tree.remove(key.map_err(StoreError::engine)?)
            .map_err(StoreError::engine)?;
    }
    Ok(())
}

fn key(task: &TaskId, seq: u64) -> Vec<u8> {
    let mut key = prefix(task);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

#[async_trait]
impl ChaosLog for SledChaosLog {
    async fn append(&self, task: &TaskId, events: Vec<ChaosEvent>) -> Result<u64, StoreError> {
        let tree = &self.store.chaos;
        let last = {
            let _appending = self.appending.lock().unwrap_or_else(|p| p.into_inner());
            let mut last = match tree.scan_prefix(prefix(task)).next_back() {
                Some(item) => {
                    let (_, bytes) = item.map_err(StoreError::engine)?;
                    serde_json::from_slice::<ChaosRecord>(&bytes)?.seq
                }
                None => 0,
            };
            let mut batch = sled::Batch::default();
            for event in events {
                last += 1;
                let record = ChaosRecord {
                    task_id: task.clone(),
                    seq: last,
                    event,
                };
                batch.insert(key(task, last), serde_json::to_vec(&record)?);
            }
            tree.apply_batch(batch).map_err(StoreError::engine)?;
            last
        };
        self.store.flush_if_sync().await?;
        Ok(last)
    }

    async fn read(
        &self,
        task: &TaskId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<ChaosRecord>, StoreError> {
        let mut end = prefix(task);
        *end.last_mut().expect("the prefix ends with its 0 byte") = 1;
        let from = key(task, after.saturating_add(1));
        let mut records = Vec::new();
        for item in self.store.chaos.range(from..end).take(limit) {
            let (_, bytes) = item.map_err(StoreError::engine)?;
            records.push(serde_json::from_slice(&bytes)?);
        }
        Ok(records)
    }

    async fn remove(&self, task: &TaskId) -> Result<(), StoreError> {
        remove_of(&self.store.chaos, task)?;
        self.store.flush_if_sync().await
    }
}
