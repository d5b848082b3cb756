//! Durable task storage: the `TaskStore` and `PushStore` traits, the in-memory store,
//! and the listing query every store shares (the sled store is `fundi-store-sled`'s,
//! the PostgreSQL one `fundi-postgres`'s).

mod cluster;
mod creation;
mod cursor;
mod error;
pub mod index;
mod memory;
mod page_fill;
mod push;
mod record;
mod run_inputs;
mod unfinished;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::access::TaskOwner;
use crate::model::{ContextId, SkillId, TaskEvent, TaskId, TaskState};

pub use cluster::{Cluster, Holder, Incoming, Standing};
pub use creation::Creation;
pub use cursor::Cursor;
pub use error::StoreError;
pub use memory::MemoryStore;
pub use page_fill::PageFill;
pub use push::{
    DeadLetter, PushAuthentication, PushConfig, PushCursor, PushEntry, PushFormat, PushStore,
};
pub use record::{TaskRecord, first_message};
pub use run_inputs::RunInputs;
pub use unfinished::UnfinishedTask;

/// Which tasks to list: filters are ANDed; results come newest update first.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only tasks in this context.
    pub context_id: Option<ContextId>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks whose status timestamp is at or after this instant.
    pub updated_after: Option<DateTime<Utc>>,
    /// Whose tasks.
    pub owner: TaskOwner,
    /// Only tasks of this skill.
    pub skill: Option<SkillId>,
    /// At most this many tasks.
    pub limit: usize,
    /// Continue after this position (from a previous page).
    pub cursor: Option<Cursor>,
    /// Keep at most this many recent history messages of each task (`None`: all).
    pub history_length: Option<usize>,
    /// Leave each task's artifacts out.
    pub without_artifacts: bool,
    /// Most bytes of tasks in the page, as JSON once trimmed: the page ends before the
    /// task that would pass it, though it always holds one (`None`: no bound).
    pub max_bytes: Option<usize>,
}

/// One page of a listing.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The tasks of this page, newest update first.
    pub records: Vec<TaskRecord>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
    /// How many tasks match the filters, over all pages.
    pub total: usize,
}

/// Where tasks and their event logs live.
///
/// Every write goes through [`TaskStore::write`], which writes the task's snapshot and
/// its new events atomically, after checking the version the writer read. A write is
/// readable at once; it is durable (as the store's mode promises) once a later
/// [`TaskStore::settle`] returns. The runtime settles before it tells anyone outside
/// about a change, so writers never wait for the disk and concurrent writers share it.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Writes `record` and `events` (in order, possibly none) atomically, if the stored
    /// version is `expected_version` (0: the task must not exist yet). Readable when
    /// this returns; durable after the next [`TaskStore::settle`].
    ///
    /// `record` is the stored record with `events` applied (as the runtime applies them,
    /// `transition`, and its inputs with `RunInputs::replay`), its version one more, its last
    /// seq that of the last event, and its checkpoint possibly replaced or removed; its
    /// skill, owner and trace never change. A store
    /// may rely on this and keep a commit as its events and checkpoint alone, rebuilding
    /// the record from an older one when it is read (the sled store does).
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError>;

    /// [`TaskStore::write`] of a new task (expected version 0) that also takes one of
    /// the `limit` run slots of its skill that the nodes share (see
    /// [`Cluster::claim_run_slot`]), as one write: `Some(slot)` when both were done,
    /// `None` when no slot was free and nothing was written. Called only on a store
    /// with a [`TaskStore::cluster`]. The default takes the slot through it, then
    /// writes (giving the slot back if the write fails).
    async fn create_with_run_slot(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        limit: usize,
    ) -> Result<Option<u32>, StoreError> {
        let cluster = self.cluster().ok_or_else(StoreError::no_shared_slots)?;
        let Some(slot) = cluster.claim_run_slot(&record.skill, limit).await? else {
            return Ok(None);
        };
        if let Err(error) = self.write(record, 0, events).await {
            if let Err(release) = cluster.release_run_slot(&record.skill, slot).await {
                tracing::warn!(skill = %record.skill, slot, error = %release, "a run slot was not given back; it is free once this node stops");
            }
            return Err(error);
        }
        Ok(Some(slot))
    }

    /// The first write of a new task (`write` with expected version 0, or
    /// `create_with_run_slot` when `run_slot` names the limit), refused when the
    /// owner's first message with the same id created a task `window` or less before
    /// this one (`None`: never refused; see `created_by`). A refused write writes
    /// nothing and names the task that was created. The default looks the message up,
    /// then writes; a store shared by several processes checks and writes in one step
    /// (PostgreSQL does, a statement fewer per new task).
    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        run_slot: Option<usize>,
        window: Option<std::time::Duration>,
    ) -> Result<Creation, StoreError> {
        creation::look_up_then_write(self, record, events, run_slot, window).await
    }

    /// [`TaskStore::write`] that also gives back run slot `slot` of the task's skill,
    /// which this node took for the run this commit ends, as one write: the slot is
    /// given back only if the commit is written. Called only on a store with a
    /// [`TaskStore::cluster`]. The default writes, then gives the slot back through it
    /// (a slot it fails to give back stays taken until this node stops; the commit
    /// stands).
    async fn write_giving_back_run_slot(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: u32,
    ) -> Result<(), StoreError> {
        let cluster = self.cluster().ok_or_else(StoreError::no_shared_slots)?;
        self.write(record, expected_version, events).await?;
        if let Err(error) = cluster.release_run_slot(&record.skill, slot).await {
            tracing::warn!(skill = %record.skill, slot, %error, "a run slot was not given back; it is free once this node stops");
        }
        Ok(())
    }

    /// Returns once everything written before the call is as durable as the store's
    /// mode promises. Free when nothing is pending (and for stores that are durable at
    /// once, or never).
    async fn settle(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// [`TaskStore::write`], then [`TaskStore::settle`].
    async fn commit(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        self.write(record, expected_version, events).await?;
        self.settle().await
    }

    /// The stored task, if any.
    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError>;

    /// The task `owner` created with a first message whose id is `message_id`, and
    /// when (its creation's timestamp): a store indexes every new task's first message
    /// by its owner (the write whose events hold `Created`), for idempotent submission.
    /// An entry may outlive a task that a crash kept from being stored; the runtime
    /// reads the task before it trusts the entry.
    async fn created_by(
        &self,
        owner: Option<&str>,
        message_id: &str,
    ) -> Result<Option<(TaskId, DateTime<Utc>)>, StoreError>;

    /// Up to `limit` events of the task with `seq > after_seq`, in order.
    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TaskEvent>, StoreError>;

    /// Tasks matching the query, newest update first, one page at a time.
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError>;

    /// Removes up to `limit` terminal tasks last updated before `before`, oldest first,
    /// each whole: its record and events, its listing entries and counts, its first
    /// message's entry (`created_by`), its push configs and cursors. A removed task is
    /// not found. Returns how many were removed (fewer than `limit`: none is left).
    async fn remove_ended_before(
        &self,
        before: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize, StoreError>;

    /// Every task not in a terminal state (for recovery at start). A task whose stored
    /// data cannot be decoded is not among them: the store sets it aside (ending it
    /// `failed` where it can) and lists it in [`TaskStore::quarantined`].
    async fn active(&self) -> Result<Vec<TaskRecord>, StoreError>;

    /// The unfinished tasks as recovery decides them, in the order `active` lists them;
    /// what `active` sets aside, this does too. By default read whole through `active`;
    /// a store that keeps its unfinished tasks' states at hand reads whole only those
    /// that are not waiting for input, so that a restart with many of them waiting is
    /// quick.
    async fn unfinished_tasks(&self) -> Result<Vec<UnfinishedTask>, StoreError> {
        let records = self.active().await?;
        Ok(records.iter().map(UnfinishedTask::of).collect())
    }

    /// Unfinished tasks whose holder stopped renewing its lease, now leased to this
    /// store's node (a store several nodes share): the runtime resumes, re-waits or
    /// fails them as at a start. A store only one node uses has none.
    async fn take_over(&self) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }

    /// After this node got the database back from a cut-off ([`Standing::CutOff`]):
    /// the unfinished tasks still leased to it (nobody took them meanwhile), each with a
    /// new epoch, for the runtime to resume as at a start; those another node took stay
    /// with it. A store only one node uses has none.
    async fn reclaim(&self) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }

    /// How often the runtime asks [`TaskStore::take_over`]; `None` (the default): never.
    fn takeover_interval(&self) -> Option<std::time::Duration> {
        None
    }

    /// Called once as the runtime stops, after its task actors stopped: a store several
    /// nodes share lets go of what this node holds (its task leases, push deliveries,
    /// run slots), so that the other nodes take its unfinished work over at once
    /// instead of after the lease time. A store with one node has nothing to do.
    async fn hand_back(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The other nodes sharing this store, to hand them requests and hear of their
    /// tasks' events (see [`Cluster`]); `None` (the default): this node is the store's
    /// only one.
    fn cluster(&self) -> Option<std::sync::Arc<dyn Cluster>> {
        None
    }

    /// The tasks set aside because their stored data could not be decoded, oldest
    /// first. A store whose data is never decoded (the memory store) has none.
    async fn quarantined(&self) -> Result<Vec<QuarantinedTask>, StoreError> {
        Ok(Vec::new())
    }

    /// Sets aside the unfinished task `id`, which reading failed to decode with `error`
    /// (`StoreError::Codec`), as recovery does: its data kept for an operator, the task
    /// ended `failed` with the reason where its header can be read. Asked by the
    /// runtime when it cannot wake a task that a start did not read (a store that
    /// decides tasks at rest without reading them). A store whose data is never decoded
    /// (the memory store) has nothing to do.
    async fn set_aside(&self, id: &TaskId, error: &StoreError) -> Result<(), StoreError> {
        let _ = (id, error);
        Ok(())
    }
}

/// A task set aside because its stored data could not be decoded (its raw values are
/// kept for an operator; `fundi doctor` lists them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuarantinedTask {
    /// The task.
    pub task_id: TaskId,
    /// Why it could not be read.
    pub reason: String,
    /// When it was set aside.
    pub at: DateTime<Utc>,
    /// Whether it was ended `failed` with the reason (its header could be read), or
    /// removed from the tasks (it could not).
    pub failed: bool,
}
