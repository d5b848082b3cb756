//! An in-memory `TaskStore`, for tests and for embedders that need no durability.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::index::{IndexEntry, plan_page};
use super::{ListPage, ListQuery, StoreError, TaskRecord, TaskStore};
use crate::model::{TaskEvent, TaskId};

/// Keeps everything in memory; loses everything when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    records: HashMap<TaskId, TaskRecord>,
    events: HashMap<TaskId, Vec<TaskEvent>>,
    /// Newest-first listing walks this in reverse.
    index: BTreeMap<(i64, TaskId), IndexEntry>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves plain maps that are still consistent
        // (every mutation below is a single insert/remove), so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn commit(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        event: Option<&TaskEvent>,
    ) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let id = record.id().clone();
        let found = inner.records.get(&id).map_or(0, |r| r.version);
        StoreError::check_version(&id, expected_version, found)?;
        if let Some(old) = inner.records.get(&id).map(IndexEntry::of) {
            inner.index.remove(&(old.ts_ms, id.clone()));
        }
        let entry = IndexEntry::of(record);
        inner.index.insert((entry.ts_ms, id.clone()), entry);
        if let Some(event) = event {
            inner
                .events
                .entry(id.clone())
                .or_default()
                .push(event.clone());
        }
        inner.records.insert(id, record.clone());
        Ok(())
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.lock().records.get(id).cloned())
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TaskEvent>, StoreError> {
        let inner = self.lock();
        Ok(inner.events.get(id).map_or_else(Vec::new, |events| {
            events
                .iter()
                .filter(|e| e.seq > after_seq)
                .take(limit)
                .cloned()
                .collect()
        }))
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let inner = self.lock();
        let plan = plan_page(inner.index.values().rev().cloned().map(Ok), query)?;
        let records = plan
            .ids
            .iter()
            .filter_map(|id| inner.records.get(id).cloned())
            .collect();
        Ok(ListPage {
            records,
            next: plan.next,
            total: plan.total,
        })
    }

    async fn active(&self) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(self
            .lock()
            .records
            .values()
            .filter(|r| !r.state().is_terminal())
            .cloned()
            .collect())
    }
}
