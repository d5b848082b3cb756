//! A new task's first write, refused when its first message created a task already
//! (idempotent submission, `TaskStore::create_task`): what it did, and how a store that
//! cannot check and write in one step does it (ask, then write).

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{StoreError, TaskRecord, TaskStore, first_message};
use crate::model::{TaskEvent, TaskId};

/// What a new task's first write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Creation {
    /// Written, with the run slot it took when it was to take one.
    Written(Option<u32>),
    /// Nothing written: it was to take a run slot and none was free.
    NoSlot,
    /// Nothing written: the owner's first message with the same id created this task,
    /// at this time, within the window.
    Taken(TaskId, DateTime<Utc>),
}

/// `TaskStore::create_task` as two steps: the first message looked up, then the task
/// written (taking a run slot when `run_slot` names the limit). Two writers of the same
/// first message could both pass the lookup; within a process the runtime keeps them
/// apart, and a store shared by several processes checks in its write instead.
pub(super) async fn look_up_then_write<S: TaskStore + ?Sized>(
    store: &S,
    record: &TaskRecord,
    events: &[TaskEvent],
    run_slot: Option<usize>,
    window: Option<Duration>,
) -> Result<Creation, StoreError> {
    if let (Some(window), Some((owner, message_id, created))) =
        (window, first_message(record, events))
        && let Some((task, at)) = store.created_by(owner, message_id).await?
        && within(at, created, window)
    {
        return Ok(Creation::Taken(task, at));
    }
    match run_slot {
        None => {
            store.write(record, 0, events).await?;
            Ok(Creation::Written(None))
        }
        Some(limit) => match store.create_with_run_slot(record, events, limit).await? {
            Some(slot) => Ok(Creation::Written(Some(slot))),
            None => Ok(Creation::NoSlot),
        },
    }
}

/// Whether a first message's task created at `at` is one that a task created at
/// `created` with the same first message must give way to.
fn within(at: DateTime<Utc>, created: DateTime<Utc>, window: Duration) -> bool {
    let age = created
        .signed_duration_since(at)
        .to_std()
        .unwrap_or_default();
    age <= window
}
