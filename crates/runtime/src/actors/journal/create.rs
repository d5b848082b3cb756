//! A new task's journal, made by its submitter with the task's first commit: refused,
//! with nothing written, when the task's first message created a task already (see
//! `TaskStore::create_task`).

use std::sync::Arc;
use std::time::Duration;

use super::{JournalError, TaskJournal, event_of, status};
use crate::actors::fanout::Follower;
use crate::model::{
    ContextId, Message, SkillId, Task, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus,
    UserId,
};
use crate::requests::TaskSnapshot;
use crate::store::{self, RunInputs, StoreError, TaskRecord, TaskStore};
use crate::telemetry;
use crate::transition::apply;

/// A task to create.
pub(crate) struct NewTask {
    /// The user's first message (its task and context ids are set here).
    pub(crate) message: Message,
    pub(crate) context_id: Option<ContextId>,
    pub(crate) skill: SkillId,
    pub(crate) owner: Option<UserId>,
    pub(crate) trace: Option<String>,
    /// Stored already working: its skill has a slot and runs at once.
    pub(crate) working: bool,
    /// The status of a task that waits for an approver (`approval::gate_status`).
    pub(crate) gate: Option<TaskStatus>,
    /// Refused when its first message created a task this long or less before it
    /// (`runtime.dedup-window-s`); `None`: never refused.
    pub(crate) dedup_window: Option<Duration>,
}

/// What a creation did.
pub(crate) enum Creation {
    /// Stored: the journal, the task as created, and the store slot taken.
    Stored(Box<(TaskJournal, TaskSnapshot, Option<u32>)>),
    /// Nothing stored: the first message created this task already (of this owner).
    Taken(TaskId, Option<UserId>),
}

impl TaskJournal {
    /// Creates a task (submitted, or working when `new.working`), its first commit
    /// written (readable at once, durable after the next settle, which the submitter
    /// makes before telling anyone), with `follower` subscribed from the start (it
    /// receives what comes after the created event). With `shared_slot`, the commit
    /// also takes one of that many run slots the nodes share; when none is free the
    /// task is stored submitted instead, to queue. Refused, with nothing stored, when
    /// its first message created a task within `new.dedup_window`.
    pub(crate) async fn create(
        store: Arc<dyn TaskStore>,
        new: NewTask,
        follower: Option<Follower>,
        subscriber_buffer: usize,
        shared_slot: Option<usize>,
    ) -> Result<Creation, JournalError> {
        let task_id = TaskId::generate();
        let context_id = new.context_id.unwrap_or_else(ContextId::generate);
        let mut message = new.message;
        message.task_id = Some(task_id.clone());
        message.context_id = Some(context_id.clone());
        let mut task = Task {
            history: vec![message],
            ..Task::new(task_id, context_id, TaskState::Submitted)
        };
        if let Some(gate) = new.gate {
            task.status = gate;
        }
        let created = TaskSnapshot {
            task: task.clone(),
            seq: 1,
        };
        let mut record = TaskRecord {
            task: task.clone(),
            version: 1,
            last_seq: 1,
            skill: new.skill,
            owner: new.owner,
            checkpoint: None,
            trace: new.trace,
            inputs: RunInputs::default(),
            idle_until: None,
        };
        let mut events = Vec::with_capacity(2);
        events.push(event_of(&record.task, 1, TaskEventKind::Created(task)));
        if new.working {
            let kind = TaskEventKind::Status(status(TaskState::Working, None));
            apply(&mut record.task, &kind)?;
            record.last_seq += 1;
            events.push(event_of(&record.task, record.last_seq, kind));
        }
        let window = new.dedup_window;
        let taken = match first_write(&*store, &record, &events, shared_slot, window).await? {
            store::Creation::Written(slot) => slot,
            store::Creation::Taken(id, _) => return Ok(Creation::Taken(id, record.owner)),
            store::Creation::NoSlot => {
                // Stored submitted after all, to queue.
                (record.task, record.last_seq) = (created.task.clone(), 1);
                events.truncate(1);
                match first_write(&*store, &record, &events, None, window).await? {
                    store::Creation::Taken(id, _) => return Ok(Creation::Taken(id, record.owner)),
                    _ => None,
                }
            }
        };
        let metrics = telemetry::metrics();
        metrics.submitted(&record.skill);
        if record.state() == TaskState::Working {
            let (from, to) = (TaskState::Submitted, TaskState::Working);
            metrics.state_changed(&record.skill, &record.task.id, from, to);
        }
        let mut journal = TaskJournal::stored(store, record, subscriber_buffer);
        if let Some(follower) = follower {
            journal.subscribers.adopt(follower);
        }
        // The follower's stream starts after the created event.
        for event in events.into_iter().skip(1) {
            journal.subscribers.publish(event);
        }
        Ok(Creation::Stored(Box::new((journal, created, taken))))
    }
}

/// A new task's first write, refused for a first message that created a task the store
/// holds. An index entry whose task is not there (kept from a task that a crash kept
/// from being stored, where a store indexes apart, or one set aside as unreadable)
/// refuses nothing: the task is written without the check.
async fn first_write(
    store: &dyn TaskStore,
    record: &TaskRecord,
    events: &[TaskEvent],
    run_slot: Option<usize>,
    window: Option<Duration>,
) -> Result<store::Creation, StoreError> {
    let written = store.create_task(record, events, run_slot, window).await?;
    let store::Creation::Taken(id, _) = &written else {
        return Ok(written);
    };
    match store.get(id).await {
        Ok(Some(_)) => Ok(written),
        Ok(None) | Err(StoreError::Codec { .. }) => {
            store.create_task(record, events, run_slot, None).await
        }
        Err(error) => Err(error),
    }
}
