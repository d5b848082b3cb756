//! The sled store's `TaskStore` face: each operation, on the store's parts (committing
//! in `commit`, reading in `read`, the bytes in `layout`).

use async_trait::async_trait;

use crate::SledStore;
use crate::active_set::active_ids;
use crate::encoded::Encoded;
use crate::layout::{
    Header, context_prefix, created_key, decode_created, decode_entry, decode_events,
    encode_created, event_key, task_key,
};
use crate::{read, retention, unfinished};
use fundi_runtime::model::{TaskEvent, TaskId};
use fundi_runtime::store::index::{merge_newest_first, plan_page};
use fundi_runtime::store::{
    ListPage, ListQuery, PageFill, QuarantinedTask, StoreError, TaskRecord, TaskStore,
    UnfinishedTask, first_message,
};

#[async_trait]
impl TaskStore for SledStore {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        let encoded = Encoded::new(record, events)?;
        let _writing = self.begin_write();
        let _turn = self.tasks.writers.turn(record.id());
        // Before the commit point: an entry without its task is read as none.
        if let Some((owner, message_id, at)) = first_message(record, events) {
            let value = encode_created(record.id(), at);
            self.db
                .insert(created_key(owner, message_id), value)
                .map_err(StoreError::engine)?;
        }
        let applied = self.tasks.apply(&encoded, expected_version);
        if applied.is_err() {
            // A write may have failed after the commit point: read the position from
            // sled next time.
            self.tasks.positions.forget(record.id());
        }
        applied
    }

    async fn settle(&self) -> Result<(), StoreError> {
        self.settle_writes().await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        read::task(&self.db, &self.tasks.positions, id)
    }

    async fn remove_ended_before(
        &self,
        before: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        let _writing = self.begin_write();
        retention::remove_ended(
            &self.tasks,
            &self.push,
            &self.chaos,
            before.timestamp_millis(),
            limit,
        )
    }

    async fn created_by(
        &self,
        owner: Option<&str>,
        message_id: &str,
    ) -> Result<Option<(TaskId, chrono::DateTime<chrono::Utc>)>, StoreError> {
        let entry = self
            .db
            .get(created_key(owner, message_id))
            .map_err(StoreError::engine)?;
        entry.map(|bytes| decode_created(&bytes)).transpose()
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TaskEvent>, StoreError> {
        let Some(bytes) = self.db.get(task_key(id)).map_err(StoreError::engine)? else {
            return Ok(Vec::new());
        };
        let header = Header::read(&bytes)?;
        let mut events = Vec::new();
        if after_seq < header.inline_through {
            let inline = header.inline(&bytes).decode()?.into_iter();
            events.extend(inline.filter(|e| e.seq > after_seq).take(limit));
        }
        // Values at or below the snapshot's own events are copies a crash left.
        let after_seq = after_seq.max(header.inline_through);
        if events.len() >= limit {
            return Ok(events);
        }
        // The value holding event `after_seq + 1` is keyed by its commit's first event,
        // which may come before it.
        let wanted = event_key(id, after_seq + 1);
        let start = match self.db.range(event_key(id, 0)..=wanted.clone()).next_back() {
            Some(item) => item.map_err(StoreError::engine)?.0.to_vec(),
            None => wanted,
        };
        // Every value is a commit's: one is written whole, at its commit point.
        for item in self.db.range(start..=event_key(id, u64::MAX)) {
            let (_, bytes) = item.map_err(StoreError::engine)?;
            let fresh = decode_events(&bytes)?
                .into_iter()
                .filter(|e| e.seq > after_seq);
            events.extend(fresh);
            if events.len() >= limit {
                events.truncate(limit);
                break;
            }
        }
        Ok(events)
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        // Terminal tasks are listed from sled, unfinished ones from memory; a state filter
        // needs only one of them.
        let terminal = query.state.map(|s| s.is_terminal());
        let prefix = match &query.context_id {
            Some(context) => context_prefix(context),
            None => b"U".to_vec(),
        };
        let persisted = match terminal {
            Some(false) => None,
            _ => Some(self.db.scan_prefix(prefix).rev().map(decode_entry)),
        };
        let live = match terminal {
            Some(true) => None,
            _ => Some(self.tasks.live.newest_first(query.context_id.as_ref())),
        };
        let entries =
            merge_newest_first(persisted.into_iter().flatten(), live.into_iter().flatten());
        // The counts are kept by owner and state only.
        let total = match (&query.context_id, query.updated_after, &query.skill) {
            (None, None, None) => Some(
                self.tasks
                    .counts
                    .get(query.owner.as_user(), query.state.map(|s| s.number()))
                    as usize,
            ),
            _ => None,
        };
        let skill_of = |id: &TaskId| {
            Ok(read::task(&self.db, &self.tasks.positions, id)?.map(|record| record.skill))
        };
        let plan = plan_page(entries, query, total, &skill_of)?;
        let mut page = PageFill::new(query);
        for position in plan.ids {
            // The index is written after the snapshot, so a listed id has a snapshot,
            // unless retention removed the task meanwhile (left out, as is one that
            // cannot be read: not the page).
            let id = position.task_id().clone();
            match self.get(&id).await {
                Ok(Some(record)) => {
                    if !page.push(position, record) {
                        break;
                    }
                }
                Ok(None) => {}
                Err(error @ StoreError::Codec { .. }) => {
                    tracing::error!(task_id = %id, %error, "a stored task cannot be read: left out of a listing");
                }
                Err(error) => return Err(error),
            }
        }
        Ok(page.finish(plan.next, plan.total))
    }

    async fn active(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let mut records = Vec::new();
        for id in active_set(self)? {
            if let Some(record) = read_unfinished(self, &id).await? {
                records.push(record);
            }
        }
        Ok(records)
    }

    async fn unfinished_tasks(&self) -> Result<Vec<UnfinishedTask>, StoreError> {
        // Every unfinished task has its listing entry in memory (listings rely on it
        // too): a million at rest are decided from theirs, with no scan of the active set.
        let (mut tasks, to_read) = unfinished::decide(&self.tasks);
        for id in to_read {
            if let Some(record) = read_unfinished(self, &id).await? {
                tasks.push(UnfinishedTask::of(&record));
            }
        }
        // In id order, as `active` lists them.
        tasks.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        Ok(tasks)
    }

    async fn quarantined(&self) -> Result<Vec<QuarantinedTask>, StoreError> {
        self.quarantine.tasks()
    }

    async fn set_aside(&self, id: &TaskId, error: &StoreError) -> Result<(), StoreError> {
        let _writing = self.begin_write();
        self.quarantine.set_aside(&self.tasks, id, error).map(drop)
    }
}

/// The active set's ids, in order, with those whose key the sweep has not written yet.
fn active_set(store: &SledStore) -> Result<Vec<TaskId>, StoreError> {
    // Read in order already: the few unmarked ones are sorted in (a sort that finds
    // the run already sorted), not a million tree inserts.
    let mut ids = active_ids(&store.db)?;
    ids.extend(store.tasks.active.unmarked());
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The task, read whole, if it is unfinished. A task joins the active set just before
/// its first commit and leaves it just after its last, so the set can name a task that
/// is not (or no longer) unfinished. One that cannot be decoded is set aside.
async fn read_unfinished(store: &SledStore, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
    match store.get(id).await {
        Ok(Some(record)) if !record.state().is_terminal() => Ok(Some(record)),
        Ok(_) => Ok(None),
        Err(error @ StoreError::Codec { .. }) => {
            store.quarantine.set_aside(&store.tasks, id, &error)?;
            Ok(None)
        }
        Err(error) => Err(error),
    }
}
