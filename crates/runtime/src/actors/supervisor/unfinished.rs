//! Starting the actor of a stored unfinished task that has none (woken by a call, a
//! subscriber, a free slot, or the end of an idle wait): what it starts with follows
//! from where the task stands and how it came to have no actor.

use ractor::ActorRef;

use super::SupervisorState;
use crate::actors::journal::TaskJournal;
use crate::actors::slots::Slot;
use crate::actors::supervisor_msg::{Spawn, SupervisorMsg};
use crate::actors::task_msg::{StartMode, TaskMsg};
use crate::approval::at_rest;
use crate::error::RuntimeError;
use crate::model::TaskId;
use crate::store::TaskRecord;

impl SupervisorState {
    /// Starts the actor of a stored unfinished task that has none: one submitted or
    /// working runs again (with `slot`, at once; without, once it has one), one at rest
    /// (waiting for input or an approver, after a restart or parked) wakes with no run.
    /// `None` for a task that ended, or unknown, or when the store fails (logged).
    pub(super) async fn start_unfinished(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        task_id: &TaskId,
        slot: Option<Slot>,
    ) -> Option<ActorRef<TaskMsg>> {
        self.try_start_unfinished(myself, task_id, slot)
            .await
            .unwrap_or_else(|error| {
                tracing::error!(%task_id, %error, "could not start an unfinished task");
                None
            })
    }

    /// `start_unfinished`, with the store's error given back (a caller that tries again
    /// later: an idle task's wake).
    pub(super) async fn try_start_unfinished(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        task_id: &TaskId,
        slot: Option<Slot>,
    ) -> Result<Option<ActorRef<TaskMsg>>, RuntimeError> {
        match TaskJournal::read_or_set_aside(&self.args.store, task_id).await? {
            Some(record) if !record.state().is_terminal() => {
                let spawn = self.stored_unfinished(record, slot);
                self.spawn(myself, spawn).await
            }
            _ => Ok(None),
        }
    }

    /// What the actor of a stored unfinished task starts with: a task at rest wakes with
    /// no run (a slot, if any, is freed), a new one queued here runs for the first
    /// time, any other runs again (one parked idle, here or before a restart, says
    /// nothing of it).
    pub(super) fn stored_unfinished(&mut self, record: TaskRecord, slot: Option<Slot>) -> Spawn {
        let parked_idle = self.idle.remove(&record.task.id) | record.idle_until.is_some();
        if at_rest(&record.task.status) {
            return self.stored(record, StartMode::Wake, None);
        }
        if parked_idle {
            return self.stored(record, StartMode::IdleWake, slot);
        }
        match self.queue.holds(&record.task.id) {
            true => self.stored(record, StartMode::Queued, slot),
            false => self.stored(record, StartMode::Resume, slot),
        }
    }

    /// What the actor of a stored task starts with.
    fn stored(&self, record: TaskRecord, mode: StartMode, slot: Option<Slot>) -> Spawn {
        let buffer = self.args.config.subscriber_buffer;
        let journal = TaskJournal::stored(self.args.store.clone(), record, buffer);
        Spawn {
            journal,
            mode,
            slot,
            waiter: None,
        }
    }
}
