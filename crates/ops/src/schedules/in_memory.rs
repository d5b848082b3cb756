//! Schedules in memory (tests, demos, `store.kind = "memory"`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{Schedule, ScheduleStore};
use fundi_runtime::store::StoreError;

/// Schedules kept in memory, lost at exit.
#[derive(Debug, Default)]
pub struct MemoryScheduleStore {
    schedules: Mutex<BTreeMap<String, Schedule>>,
}

impl MemoryScheduleStore {
    /// An empty store.
    pub fn new() -> MemoryScheduleStore {
        MemoryScheduleStore::default()
    }

    fn schedules(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Schedule>> {
        self.schedules.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl ScheduleStore for MemoryScheduleStore {
    async fn put(&self, schedule: &Schedule) -> Result<(), StoreError> {
        self.schedules()
            .insert(schedule.id.clone(), schedule.clone());
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<Schedule>, StoreError> {
        Ok(self.schedules().get(id).cloned())
    }

    async fn list(&self) -> Result<Vec<Schedule>, StoreError> {
        Ok(self.schedules().values().cloned().collect())
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.schedules().remove(id).is_some())
    }
}
