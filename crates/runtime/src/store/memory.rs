//! An in-memory `TaskStore`, for tests and for embedders that need no durability.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::index::{IndexEntry, plan_page};
use super::push::{PushConfig, PushCursor, PushEntry, PushStore};
use super::{ListPage, ListQuery, PageFill, StoreError, TaskRecord, TaskStore, first_message};
use crate::model::{TaskEvent, TaskId};

/// Keeps everything in memory; loses everything when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    push: Mutex<BTreeMap<(TaskId, String), (PushConfig, PushCursor)>>,
}

#[derive(Debug, Default)]
struct Inner {
    // B-trees, not hash maps: a hash map doubles by moving every entry at once, and at
    // about 900,000 tasks that move (records are large) held this store's lock for
    // seconds, stalling every task (found by an in-process probe of W1).
    records: BTreeMap<TaskId, TaskRecord>,
    events: BTreeMap<TaskId, Vec<TaskEvent>>,
    /// Newest-first listing walks this in reverse.
    index: BTreeMap<(i64, TaskId), IndexEntry>,
    /// Tasks by their first message's id, then owner (`TaskStore::created_by`; keyed by
    /// the id alone, so that a lookup allocates no key).
    created: BTreeMap<String, Vec<CreatedBy>>,
}

/// A task's owner, id and creation time, under its first message's id.
type CreatedBy = (Option<String>, TaskId, DateTime<Utc>);

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
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
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
        inner
            .events
            .entry(id.clone())
            .or_default()
            .extend(events.iter().cloned());
        if let Some((owner, message_id, at)) = first_message(record, events) {
            let owners = inner.created.entry(message_id.to_owned()).or_default();
            owners.retain(|(o, _, _)| o.as_deref() != owner);
            owners.push((owner.map(str::to_owned), id.clone(), at));
        }
        inner.records.insert(id, record.clone());
        Ok(())
    }

    async fn created_by(
        &self,
        owner: Option<&str>,
        message_id: &str,
    ) -> Result<Option<(TaskId, DateTime<Utc>)>, StoreError> {
        let inner = self.lock();
        let owners = inner.created.get(message_id).into_iter().flatten();
        let found = owners.into_iter().find(|(o, _, _)| o.as_deref() == owner);
        Ok(found.map(|(_, id, at)| (id.clone(), *at)))
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
        let skill_of = |id: &TaskId| Ok(inner.records.get(id).map(|r| r.skill.clone()));
        let entries = inner.index.values().rev().cloned().map(Ok);
        let plan = plan_page(entries, query, None, &skill_of)?;
        let mut page = PageFill::new(query);
        for position in plan.ids {
            if let Some(record) = inner.records.get(&position.task_id)
                && !page.push(position.clone(), record.clone())
            {
                break;
            }
        }
        Ok(page.finish(plan.next, plan.total))
    }

    async fn remove_ended_before(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let before_ms = before.timestamp_millis();
        let removed: Vec<TaskId> = {
            let mut inner = self.lock();
            let ended: Vec<(i64, TaskId)> = inner
                .index
                .iter()
                .take_while(|((ts, _), _)| *ts < before_ms)
                .filter(|(_, entry)| entry.state().is_some_and(|s| s.is_terminal()))
                .map(|(key, _)| key.clone())
                .take(limit)
                .collect();
            for key in &ended {
                let id = &key.1;
                inner.index.remove(key);
                inner.events.remove(id);
                if let Some(record) = inner.records.remove(id)
                    && let Some(first) = record.task.history.first()
                    && let Some(owners) = inner.created.get_mut(&first.message_id)
                {
                    owners.retain(|(_, task, _)| task != id);
                }
            }
            ended.into_iter().map(|(_, id)| id).collect()
        };
        let mut push = self.push();
        push.retain(|(task, _), _| !removed.contains(task));
        Ok(removed.len())
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

impl MemoryStore {
    fn push(&self) -> MutexGuard<'_, BTreeMap<(TaskId, String), (PushConfig, PushCursor)>> {
        self.push.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl PushStore for MemoryStore {
    async fn put_config(&self, config: &PushConfig, start_after: u64) -> Result<(), StoreError> {
        let mut push = self.push();
        let key = (config.task_id.clone(), config.id.clone());
        let cursor = push.get(&key).map_or(
            PushCursor {
                delivered_seq: start_after,
                ..PushCursor::default()
            },
            |(_, cursor)| cursor.clone(),
        );
        push.insert(key, (config.clone(), cursor));
        Ok(())
    }

    async fn config(&self, task: &TaskId, id: &str) -> Result<Option<PushConfig>, StoreError> {
        let key = (task.clone(), id.to_owned());
        Ok(self.push().get(&key).map(|(config, _)| config.clone()))
    }

    async fn configs(&self, task: &TaskId) -> Result<Vec<PushConfig>, StoreError> {
        Ok(self
            .push()
            .range((task.clone(), String::new())..)
            .take_while(|((t, _), _)| t == task)
            .map(|(_, (config, _))| config.clone())
            .collect())
    }

    async fn delete_config(&self, task: &TaskId, id: &str) -> Result<bool, StoreError> {
        let key = (task.clone(), id.to_owned());
        Ok(self.push().remove(&key).is_some())
    }

    async fn cursor(&self, task: &TaskId, id: &str) -> Result<Option<PushCursor>, StoreError> {
        let key = (task.clone(), id.to_owned());
        Ok(self.push().get(&key).map(|(_, cursor)| cursor.clone()))
    }

    async fn set_cursor(
        &self,
        task: &TaskId,
        id: &str,
        cursor: &PushCursor,
    ) -> Result<(), StoreError> {
        let key = (task.clone(), id.to_owned());
        if let Some((_, stored)) = self.push().get_mut(&key) {
            *stored = cursor.clone();
        }
        Ok(())
    }

    async fn unfinished(&self) -> Result<Vec<PushEntry>, StoreError> {
        Ok(self
            .push()
            .values()
            .filter(|(_, cursor)| !cursor.finished)
            .map(|(config, cursor)| PushEntry {
                config: config.clone(),
                cursor: cursor.clone(),
            })
            .collect())
    }
}
