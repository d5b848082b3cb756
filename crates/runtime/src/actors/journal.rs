//! `TaskJournal`: the one writer of a task's record. It holds the record as stored (its
//! version and last event's sequence number), the first events of a new task not
//! stored yet, and the task's live subscribers. Every change is applied to a copy
//! (`transition`), checked against the limits of what a task can hold, written
//! (version-checked), and only then kept and published: a change the store refused
//! leaves the journal as it was.
//!
//! A new task's journal is made by its submitter (`TaskJournal::create`, which writes
//! its first commit), then owned by that actor; a
//! stored task's journal is made by whoever starts its actor, and by `fail_stored`
//! for a task with none.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::fanout::{Fanout, LiveEvents};
use super::slots::Slot;

mod create;
use crate::error::RuntimeError;
use crate::model::limits::{self, InvalidField};
use crate::model::{Message, Part, Task, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus};
use crate::requests::TaskSnapshot;
use crate::store::{StoreError, TaskRecord, TaskStore};
use crate::telemetry;
use crate::transition::{TransitionError, apply};
pub(crate) use create::{Creation, NewTask};

/// A change the journal could not make; the journal is as it was.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JournalError {
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Over a limit of what a task can hold (see `model::limits`): nothing was written.
    #[error("refused: {0}")]
    Refused(#[from] InvalidField),
}

impl From<JournalError> for RuntimeError {
    fn from(error: JournalError) -> RuntimeError {
        match error {
            JournalError::Store(e) => RuntimeError::Store(e),
            JournalError::Transition(e) => RuntimeError::broken("a change the task refused", e),
            JournalError::Refused(e) => RuntimeError::InvalidField(e),
        }
    }
}

/// What a commit does to the task's checkpoint.
enum Checkpoint {
    Keep,
    Save(Value),
    Remove,
}

pub(crate) struct TaskJournal {
    record: TaskRecord,
    store: Arc<dyn TaskStore>,
    /// Live events for subscribers, published once written.
    subscribers: Fanout,
    /// The task's span, parent of the store's spans for its writes.
    span: tracing::Span,
    /// A write was refused because another node holds the task now, or this node is
    /// cut off: nothing more may be written from here.
    fenced: bool,
    /// This node was cut off from the database (see `Standing`): nothing is written
    /// from here any more, even once the database answers again (the task is claimed
    /// and read back anew then).
    cut_off: bool,
    /// The slot of a run that ended, whose store slot (several nodes) the next commit
    /// gives back.
    ended_run_slot: Option<Slot>,
}

impl TaskJournal {
    /// The journal of a stored task.
    pub(crate) fn stored(
        store: Arc<dyn TaskStore>,
        record: TaskRecord,
        subscriber_buffer: usize,
    ) -> TaskJournal {
        TaskJournal {
            record,
            store,
            subscribers: Fanout::new(subscriber_buffer),
            span: tracing::Span::none(),
            fenced: false,
            cut_off: false,
            ended_run_slot: None,
        }
    }

    pub(crate) fn record(&self) -> &TaskRecord {
        &self.record
    }

    pub(crate) fn task(&self) -> &Task {
        &self.record.task
    }

    pub(crate) fn state(&self) -> TaskState {
        self.record.state()
    }

    /// The task and the sequence number of its last event.
    pub(crate) fn snapshot(&self) -> TaskSnapshot {
        TaskSnapshot {
            task: self.record.task.clone(),
            seq: self.record.last_seq,
        }
    }

    /// Whether a write was refused because another node holds the task now.
    /// Writes nothing more from here: the store said this node may not act on the task.
    pub(crate) fn fence(&mut self) {
        self.fenced = true;
    }

    /// Writes nothing more from here (the node is cut off from the database).
    pub(crate) fn cut_off(&mut self) {
        self.cut_off = true;
    }

    /// Refuses a write once the node is cut off, or once a write was fenced: nothing is
    /// written after that (not even the failure a caller would record next).
    fn refuse_if_cut_off(&mut self) -> Result<(), JournalError> {
        match self.cut_off || self.fenced {
            true => {
                self.fenced = true;
                Err(StoreError::CutOff.into())
            }
            false => Ok(()),
        }
    }

    pub(crate) fn is_fenced(&self) -> bool {
        self.fenced
    }

    /// The span the store's spans of later writes are children of.
    pub(crate) fn set_span(&mut self, span: tracing::Span) {
        self.span = span;
    }

    /// A new subscriber, which receives the events written from now on.
    pub(crate) fn subscribe(&mut self) -> LiveEvents {
        self.subscribers.subscribe()
    }

    /// A new watcher: the events written from now on, without keeping the task from
    /// parking (see `Fanout::watch`).
    pub(crate) fn watch(&mut self) -> LiveEvents {
        self.subscribers.watch()
    }

    /// Lets go of subscribers that dropped their receiver.
    pub(crate) fn prune_subscribers(&mut self) {
        self.subscribers.prune();
    }

    /// Whether a subscriber listens to the task's live events.
    pub(crate) fn has_subscribers(&self) -> bool {
        !self.subscribers.is_empty()
    }

    /// Applies `kinds` in order as one commit, saving `checkpoint` (if any) in it too,
    /// then publishes each event. A task not stored yet is stored by this commit, as it
    /// stands, with these changes (its first events wait for the next commit if this
    /// one fails).
    pub(crate) async fn append(
        &mut self,
        kinds: Vec<TaskEventKind>,
        checkpoint: Option<Value>,
    ) -> Result<(), JournalError> {
        let checkpoint = match checkpoint {
            Some(value) => Checkpoint::Save(value),
            None => Checkpoint::Keep,
        };
        self.commit(kinds, checkpoint).await
    }

    /// Applies `kinds` as one commit that removes the task's checkpoint: they start a new
    /// run (a restart then resumes that run, not the one before it).
    pub(crate) async fn append_for_new_run(
        &mut self,
        kinds: Vec<TaskEventKind>,
    ) -> Result<(), JournalError> {
        self.commit(kinds, Checkpoint::Remove).await
    }

    /// Frees the slot of the run that just ended. With several nodes it is held until
    /// the next commit written (the one that records how the run ended, or starts the
    /// next from a queued message), which gives its store slot back in the same write
    /// or, once written, leaves it to this node's next run of the skill (`Slot::keep`);
    /// a write that fails frees it the usual way. With one node it is freed now.
    pub(crate) fn free_run_slot(&mut self, slot: Slot) {
        if slot.shared().is_some() {
            self.ended_run_slot = Some(slot);
        }
    }

    async fn commit(
        &mut self,
        kinds: Vec<TaskEventKind>,
        checkpoint: Checkpoint,
    ) -> Result<(), JournalError> {
        self.refuse_if_cut_off()?;
        if let Checkpoint::Save(value) = &checkpoint {
            limits::check_checkpoint(value)?;
        }
        // One copy per commit, whatever the number of events.
        let mut task = self.record.task.clone();
        let mut inputs = self.record.inputs.clone();
        let mut last_seq = self.record.last_seq;
        let mut events = Vec::with_capacity(kinds.len());
        for kind in kinds {
            limits::check_event(&kind)?;
            apply(&mut task, &kind)?;
            inputs.replay(&task, &kind);
            last_seq += 1;
            events.push(event_of(&task, last_seq, kind));
        }
        let (expected_version, version) = (self.record.version, self.record.version + 1);
        let current = &self.record;
        let next = TaskRecord {
            task,
            version,
            last_seq,
            skill: current.skill.clone(),
            owner: current.owner.clone(),
            checkpoint: match checkpoint {
                Checkpoint::Save(value) => Some(value),
                Checkpoint::Keep => current.checkpoint.clone(),
                Checkpoint::Remove => None,
            },
            trace: current.trace.clone(),
            inputs,
            // Whatever parked the task idle is over: this commit is its run's.
            idle_until: None,
        };
        // The run's store slot is given back with this commit, unless this node keeps
        // it for its next run of the skill.
        let ended = self.ended_run_slot.as_ref();
        let keeping = ended.is_some_and(Slot::keepable);
        let write = match ended.filter(|_| !keeping).and_then(Slot::shared) {
            Some(slot) => {
                (self.store).write_giving_back_run_slot(&next, expected_version, &events, slot)
            }
            None => self.store.write(&next, expected_version, &events),
        };
        let written = telemetry::under(&self.span, write).await;
        if let Err(error) = written {
            self.fenced |= matches!(error, StoreError::Fenced { .. } | StoreError::CutOff);
            // Freed the usual way: the commit that was to give the slot back is not
            // written.
            self.ended_run_slot = None;
            return Err(error.into());
        }
        if let Some(slot) = self.ended_run_slot.take() {
            match keeping {
                true => slot.keep(),
                false => slot.given_back(),
            }
        }
        let from = self.record.state();
        self.record = next;
        let (skill, id) = (&self.record.skill, &self.record.task.id);
        telemetry::metrics().state_changed(skill, id, from, self.record.state());
        // Nobody listening is fine: subscribers read the store first.
        for event in events {
            self.subscribers.publish(event);
        }
        Ok(())
    }

    /// Saves a checkpoint alone (no event).
    pub(crate) async fn save_checkpoint(&mut self, value: Value) -> Result<(), JournalError> {
        self.refuse_if_cut_off()?;
        limits::check_checkpoint(&value)?;
        let mut next = self.record.clone();
        next.checkpoint = Some(value);
        next.idle_until = None;
        self.write_alone(next).await
    }

    /// Stores that the task parks while its run waits idle until `until` (no event): a
    /// start finds it parked and wakes it then, and its next commit clears it.
    pub(crate) async fn park_idle(&mut self, until: DateTime<Utc>) -> Result<(), JournalError> {
        self.refuse_if_cut_off()?;
        let mut next = self.record.clone();
        next.idle_until = Some(until);
        self.write_alone(next).await
    }

    /// Writes `next`, the task's record with no event, as its next version.
    async fn write_alone(&mut self, mut next: TaskRecord) -> Result<(), JournalError> {
        next.version = self.record.version + 1;
        let write = self.store.write(&next, self.record.version, &[]);
        if let Err(error) = telemetry::under(&self.span, write).await {
            self.fenced |= matches!(error, StoreError::Fenced { .. } | StoreError::CutOff);
            return Err(error.into());
        }
        self.record = next;
        Ok(())
    }

    /// The stored task `id`, read by the runtime outside its actor (to start one, or to
    /// fail it). One that cannot be decoded was not read at start (a store that knows
    /// tasks at rest without reading them): it is set aside now, as the start would
    /// have, and the decoding error returned; a set-aside that fails is logged and its
    /// error returned instead.
    pub(crate) async fn read_or_set_aside(
        store: &Arc<dyn TaskStore>,
        id: &TaskId,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let read = store.get(id).await;
        if let Err(error @ StoreError::Codec { .. }) = &read
            && let Err(failed) = store.set_aside(id, error).await
        {
            tracing::error!(task_id = %id, error = %failed, "could not set an unreadable task aside");
            return Err(failed);
        }
        read
    }

    /// Ends the stored task `failed` with `reason` as its status message, from outside
    /// its actor (the actor died or never started, or a restart interrupted a task that
    /// cannot resume), durably. Returns whether it changed the task (not when it is
    /// already terminal, or unknown). `source` labels the failure's metric. A task that
    /// cannot be decoded (a start that knows tasks at rest without reading them never
    /// found out) is set aside instead, as a start that read it would have: one
    /// damaged task never fails whoever asked, a whole start included.
    pub(crate) async fn fail_stored(
        store: &Arc<dyn TaskStore>,
        id: &TaskId,
        reason: &str,
        source: &'static str,
    ) -> Result<bool, RuntimeError> {
        // Someone else may write between the read and the commit (the version check
        // catches it): read again and retry a few times.
        for _ in 0..3 {
            let record = match Self::read_or_set_aside(store, id).await {
                Ok(Some(record)) => record,
                Ok(None) | Err(StoreError::Codec { .. }) => return Ok(false),
                Err(error) => return Err(error.into()),
            };
            if record.state().is_terminal() {
                return Ok(false);
            }
            let mut journal = TaskJournal::stored(store.clone(), record, 1);
            let failed = status_change(TaskState::Failed, Some(reason.to_owned()));
            match journal.append(vec![failed], None).await {
                Ok(()) => {
                    store.settle().await?;
                    telemetry::metrics().failure(source);
                    return Ok(true);
                }
                Err(JournalError::Store(StoreError::Conflict { .. })) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(RuntimeError::Unavailable(format!(
            "task {id} kept changing while it was being failed"
        )))
    }
}

fn event_of(task: &Task, seq: u64, kind: TaskEventKind) -> TaskEvent {
    TaskEvent {
        seq,
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        kind,
    }
}

pub(crate) fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus {
        state,
        message,
        timestamp: Utc::now(),
    }
}

/// A status change the runtime makes, with its note, if any.
pub(crate) fn status_change(state: TaskState, text: Option<String>) -> TaskEventKind {
    let message = text.map(|t| Message::agent(vec![Part::text(t)]));
    TaskEventKind::Status(status(state, message))
}
