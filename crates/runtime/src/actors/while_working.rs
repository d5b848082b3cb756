//! Messages that arrive while a task's run works, as its skill's card says
//! (`MessagePolicy`): queued for the run (taken through its context, as the answer to
//! its next request for input, or to start the next run when it returns with some
//! waiting), or interrupting it (the run stopped, a new one started from the message).
//! Each step is a commit: a restart resumes with exactly the messages not taken.

use std::sync::Arc;

use ractor::{ActorRef, RpcReplyPort};

use super::journal::{JournalError, status, status_change};
use super::phase::Phase;
use super::task_actor::TaskActorState;
use super::task_msg::TaskMsg;
use crate::error::RuntimeError;
use crate::model::{Message, TaskEventKind, TaskState};
use crate::requests::TaskSnapshot;
use crate::run_link::SkillReply;
use crate::skill::SkillError;

/// How many messages may wait for a task's run (`MessagePolicy::Enqueue`): one more is
/// refused until the run takes some, so that a client cannot grow a task without bound.
pub const MAX_QUEUED_MESSAGES: usize = 100;

/// The note a status carries when a message interrupts the run.
const INTERRUPTED: &str = "interrupted by a new message: the skill starts again from it";

impl TaskActorState {
    /// Stores the message, queued for the run, and wakes a run waiting for one.
    pub(super) async fn enqueue(&mut self, message: Message) -> Result<TaskSnapshot, RuntimeError> {
        if self.journal.record().inputs.queued.len() >= MAX_QUEUED_MESSAGES {
            let id = self.journal.task().id.clone();
            return Err(RuntimeError::QueueFull {
                id,
                waiting: MAX_QUEUED_MESSAGES,
            });
        }
        self.journal
            .append(vec![TaskEventKind::Queued(message)], None)
            .await?;
        self.sync_queued();
        Ok(self.journal.snapshot())
    }

    /// Stores the message as the start of the task's next run (without the current
    /// run's checkpoint, so that a restart resumes the new run) with a `working` note
    /// that says why when a run goes on, then stops that run; the new run starts once
    /// it has stopped (`restart_from`). A second message before then replaces the first as
    /// the new run's start (both are in the history).
    pub(super) async fn interrupt(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        message: Message,
    ) -> Result<TaskSnapshot, RuntimeError> {
        let mut kinds = vec![TaskEventKind::Message(message.clone())];
        if !matches!(self.phase, Phase::Idle | Phase::Queued { .. }) {
            kinds.push(status_change(TaskState::Working, Some(INTERRUPTED.into())));
        }
        self.journal.append_for_new_run(kinds).await?;
        match std::mem::take(&mut self.phase) {
            // Not started yet (its slot is on the way): it starts from the new message.
            Phase::Queued { .. } => {
                self.phase = Phase::Queued {
                    message,
                    resumed: false,
                };
            }
            Phase::Idle => self.restart_from(myself, message),
            Phase::Running { run, slot } => {
                self.stop_run(myself, run, Some(slot), vec![], Some(message))
            }
            Phase::AwaitingInput { run, waiter } | Phase::Answered { run, waiter, .. } => {
                let _ = waiter.send(Err(SkillError::Canceled));
                self.stop_run(myself, run, None, vec![], Some(message));
            }
            Phase::Canceling {
                run,
                slot,
                waiters,
                restart: _,
            } => {
                self.phase = Phase::Canceling {
                    run,
                    slot,
                    waiters,
                    restart: Some(message),
                };
            }
        }
        Ok(self.journal.snapshot())
    }

    /// The interrupted run has stopped: the next starts from `message` once the task has
    /// a slot. It posts to a queue of its own (the old run's notes are dropped, as
    /// a canceled run's are).
    pub(super) fn restart_from(&mut self, myself: &ActorRef<TaskMsg>, message: Message) {
        self.posted = Arc::default();
        self.phase = Phase::Queued {
            message,
            resumed: false,
        };
        self.want_slot(myself);
    }

    /// The run asks for the oldest queued message: taken (stored) and handed over, or
    /// `None` when none waits.
    pub(super) async fn take_message(&mut self) -> SkillReply {
        let Some(message) = self.oldest_queued() else {
            return Ok(None);
        };
        let taken = TaskEventKind::MessageTaken { starts_run: false };
        self.journal
            .append(vec![taken], None)
            .await
            .map_err(SkillError::runtime)?;
        self.sync_queued();
        Ok(Some(message))
    }

    /// The run asks for input while messages wait: the oldest answers it at once. The
    /// prompt is stored and told all the same (`input-required`, then `working` again),
    /// in one commit. `None` when no message waits.
    pub(super) async fn answer_from_queue(
        &mut self,
        prompt: Message,
    ) -> Option<Result<Message, JournalError>> {
        let message = self.oldest_queued()?;
        let kinds = vec![
            TaskEventKind::Status(status(TaskState::InputRequired, Some(prompt))),
            TaskEventKind::MessageTaken { starts_run: false },
            status_change(TaskState::Working, None),
        ];
        let answered = self.journal.append(kinds, None).await;
        self.sync_queued();
        Some(answered.map(|()| message))
    }

    /// A run returned while messages wait: its reply (kept in the history and told as
    /// a `working` status) and artifacts are stored with the oldest message taken, in
    /// the commit that starts the next run (`then` holds them, from `completion`); the
    /// next run starts from that message once the task has a slot. `Err(then)` when no
    /// message waits: the run's outcome stands.
    pub(super) async fn follow_with_queued(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        then: Vec<TaskEventKind>,
    ) -> Result<(), Vec<TaskEventKind>> {
        let Some(next) = self.oldest_queued() else {
            return Err(then);
        };
        let mut kinds = Vec::with_capacity(then.len() + 2);
        for kind in then {
            match kind {
                TaskEventKind::Status(completed) => {
                    if let Some(reply) = &completed.message {
                        kinds.push(TaskEventKind::Message(reply.clone()));
                    }
                    kinds.push(TaskEventKind::Status(status(
                        TaskState::Working,
                        completed.message,
                    )));
                }
                other => kinds.push(other),
            }
        }
        kinds.push(TaskEventKind::MessageTaken { starts_run: true });
        let followed = self.apply_posted_then_new_run(kinds).await;
        self.sync_queued();
        match followed {
            Ok(()) => self.restart_from(myself, next),
            Err(error) => {
                self.fail_after("could not start the run for a queued message", &error)
                    .await;
            }
        }
        Ok(())
    }

    /// The oldest message queued for the run and not taken.
    fn oldest_queued(&self) -> Option<Message> {
        let record = self.journal.record();
        record.inputs.queued_messages(&record.task).next().cloned()
    }

    /// Tells the run's contexts how many queued messages wait, as the record says.
    pub(super) fn sync_queued(&self) {
        self.queued.set(self.journal.record().inputs.queued.len());
    }
}

/// Answers a skill's call with what `answer_from_queue` gave.
pub(super) fn reply_answered(
    reply: RpcReplyPort<SkillReply>,
    answered: Result<Message, JournalError>,
) {
    let _ = reply.send(answered.map(Some).map_err(SkillError::runtime));
}
