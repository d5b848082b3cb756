//! Schedules in the sled store's `schedules` tree, by id.

use std::sync::Arc;

use async_trait::async_trait;

use fundi_ops::schedules::{Schedule, ScheduleStore};
use fundi_runtime::store::StoreError;

use crate::SledStore;

/// Schedules kept in a [`SledStore`], beside its tasks (durable as the store's mode
/// says).
#[derive(Debug, Clone)]
pub struct SledScheduleStore {
    store: Arc<SledStore>,
}

impl SledScheduleStore {
    /// The schedules of `store`.
    pub fn new(store: Arc<SledStore>) -> SledScheduleStore {
        SledScheduleStore { store }
    }
}

#[async_trait]
impl ScheduleStore for SledScheduleStore {
    async fn put(&self, schedule: &Schedule) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(schedule)?;
        self.store
            .schedules
            .insert(schedule.id.as_bytes(), bytes)
            .map_err(StoreError::engine)?;
        self.store.flush_if_sync().await
    }

    async fn get(&self, id: &str) -> Result<Option<Schedule>, StoreError> {
        self.store
            .schedules
            .get(id.as_bytes())
            .map_err(StoreError::engine)?
            .map(|bytes| Ok(serde_json::from_slice(&bytes)?))
            .transpose()
    }

    async fn list(&self) -> Result<Vec<Schedule>, StoreError> {
        let mut all = Vec::new();
        for item in self.store.schedules.iter() {
            let (_, bytes) = item.map_err(StoreError::engine)?;
            all.push(serde_json::from_slice(&bytes)?);
        }
        Ok(all)
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let removed = self
            .store
            .schedules
            .remove(id.as_bytes())
            .map_err(StoreError::engine)?
            .is_some();
        self.store.flush_if_sync().await?;
        Ok(removed)
    }
}
