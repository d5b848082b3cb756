//! `TaskActorState`: what a task's actor holds (its writer, its runs, what it does at
//! rest), and what callers ask of a task through it: a user's follow-up message (the
//! answer a waiting run gets, or a run started again after a restart; a message while
//! the run works goes as the skill's policy says), a cancel (the run told to stop, then
//! aborted once its grace period is over), an approver's decision (approved, the task
//! runs once its skill has a slot, from the narrowed input if there is one; rejected or
//! expired, it ends `rejected`), and a cut-off from the database.

use std::time::Duration;

use ractor::{ActorRef, RpcReplyPort};
use tracing::Instrument;

use super::journal::status_change;
use super::phase::Phase;
use super::rest::Rest;
use super::skill_run::Runs;
use super::task_msg::{CUT_OFF, TaskMsg};
use super::writer::Writer;
use crate::approval::{self, Decision, Verdict};
use crate::error::RuntimeError;
use crate::model::{Message, Task, TaskEventKind, TaskState};
use crate::requests::TaskSnapshot;
use crate::skill::{MessagePolicy, SkillError};

/// The note a status carries when a message interrupts the run.
const INTERRUPTED: &str = "interrupted by a new message: the skill starts again from it";

pub(crate) struct TaskActorState {
    pub(super) writer: Writer,
    pub(super) runs: Runs,
    pub(super) rest: Rest,
}

impl TaskActorState {
    /// Tells the supervisor whether this task only waits for a user.
    #[inline]
    pub(super) fn tell_waiting(&self, waiting: bool) {
        let id = &self.writer.journal.task().id;
        self.rest.tell_waiting(id, waiting);
    }

    /// Whether the task may give up its actor now (see `Rest::parkable`).
    #[inline]
    pub(super) fn parkable(&self) -> bool {
        let waits_for_slot = self.runs.slot.is_waiting();
        let (phase, idle) = (&self.runs.phase, self.runs.idle());
        self.rest
            .parkable(phase, idle, &self.writer, waits_for_slot)
    }

    /// Starts the idle clock of a task that may park.
    #[inline]
    pub(super) fn arm_park(&mut self, myself: &ActorRef<TaskMsg>) {
        let parkable = self.parkable();
        self.rest.arm(myself, parkable);
    }

    /// Parks the task (see `Rest::park_now`): whether it did. One whose run waits idle
    /// first stores when its wait ends, so that a start leaves it parked until then; a
    /// write that fails leaves that in memory alone (a start then runs the task again at
    /// once, as any working task), and a task that something reached meanwhile stays.
    pub(super) async fn park_now(&mut self, myself: &ActorRef<TaskMsg>) -> bool {
        let idle = self.runs.idle();
        if let Some(idle) = idle {
            if let Err(error) = self.writer.journal.park_idle(idle.ends_at()).await {
                tracing::warn!(parent: self.writer.span(), %error, "could not store the end of an idle run's wait; the task parks with it in memory alone");
            }
            if self.writer.journal.is_fenced() || !self.parkable() {
                return false;
            }
        }
        let task_id = &self.writer.journal.task().id;
        let span = self.writer.span();
        self.rest
            .park_now(myself, &mut self.runs.phase, idle, task_id, span);
        true
    }

    /// Called once the task is terminal: answer whoever waits, free the slot, stop.
    pub(super) fn finish(&mut self, myself: &ActorRef<TaskMsg>) {
        self.runs.phase.end(self.writer.journal.task());
        // `stop` jumps ahead of queued messages; their callers see the actor gone and
        // fall back to the store, where the terminal state already is.
        myself.stop(None);
    }

    /// Delivers a user's follow-up message; the task after it was accepted.
    pub(super) async fn on_deliver(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        message: Message,
    ) -> Result<TaskSnapshot, RuntimeError> {
        let journal = &self.writer.journal;
        // Delivered already (a retry racing the first): the task as it stands.
        if journal.task().has_user_message(&message.message_id) {
            return Ok(journal.snapshot());
        }
        let state = journal.state();
        let id = journal.task().id.clone();
        if state.is_terminal() {
            return Err(RuntimeError::TaskTerminal { id, state });
        }
        if approval::awaits_approval(&journal.task().status) {
            return Err(RuntimeError::AwaitingApproval { id });
        }
        let phase = &self.runs.phase;
        if phase.is_canceling() && !phase.is_restarting() {
            return Err(RuntimeError::BeingCanceled { id });
        }
        if !state.is_interrupted() || phase.is_restarting() {
            // The run works (or has yet to start): the skill's policy decides.
            return match self.runs.settings.policy {
                MessagePolicy::Enqueue => self.writer.enqueue(message).await,
                MessagePolicy::Interrupt => self.interrupt(myself, message).await,
                MessagePolicy::Reject => Err(RuntimeError::NotAcceptingInput { id, state }),
            };
        }
        self.writer
            .journal
            .append(
                vec![
                    TaskEventKind::Message(message.clone()),
                    status_change(TaskState::Working, None),
                ],
                None,
            )
            .await?;
        self.runs.phase = match std::mem::take(&mut self.runs.phase) {
            // The waiting run gets the answer once its skill has a free slot.
            Phase::AwaitingInput { run, waiter } => {
                self.tell_waiting(false);
                Phase::Answered {
                    run,
                    waiter,
                    answer: message,
                }
            }
            Phase::Answered { run, waiter, .. } => Phase::Answered {
                run,
                waiter,
                answer: message,
            },
            // Woken after a restart: the skill runs again, resuming with this message.
            Phase::Idle | Phase::Queued { .. } => Phase::Queued {
                message,
                resumed: true,
            },
            // Not reached: a task that asks for input has a run that waits, or none.
            other @ (Phase::Running { .. } | Phase::Canceling { .. }) => other,
        };
        self.runs.want_slot(&self.writer, myself);
        Ok(self.writer.journal.snapshot())
    }

    /// Stores the message as the start of the task's next run (without the current
    /// run's checkpoint, so that a restart resumes the new run) with a `working` note
    /// that says why when a run goes on, then stops that run; the new run starts once
    /// it has stopped (`Runs::restart_from`). A second message before then replaces the
    /// first as the new run's start (both are in the history).
    async fn interrupt(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        message: Message,
    ) -> Result<TaskSnapshot, RuntimeError> {
        let mut kinds = vec![TaskEventKind::Message(message.clone())];
        if !matches!(self.runs.phase, Phase::Idle | Phase::Queued { .. }) {
            kinds.push(status_change(TaskState::Working, Some(INTERRUPTED.into())));
        }
        self.writer.journal.append_for_new_run(kinds).await?;
        let runs = &mut self.runs;
        match std::mem::take(&mut runs.phase) {
            // Not started yet (its slot is on the way): it starts from the new message.
            Phase::Queued { .. } => {
                runs.phase = Phase::Queued {
                    message,
                    resumed: false,
                };
            }
            Phase::Idle => runs.restart_from(&mut self.writer, myself, message),
            Phase::Running { run, slot } => {
                runs.stop_run(myself, run, Some(slot), vec![], Some(message))
            }
            Phase::AwaitingInput { run, waiter } | Phase::Answered { run, waiter, .. } => {
                let _ = waiter.send(Err(SkillError::Canceled));
                runs.stop_run(myself, run, None, vec![], Some(message));
            }
            Phase::Canceling {
                run,
                slot,
                waiters,
                restart: _,
            } => {
                runs.phase = Phase::Canceling {
                    run,
                    slot,
                    waiters,
                    restart: Some(message),
                };
            }
        }
        Ok(self.writer.journal.snapshot())
    }

    /// Cancels the task: at once when nothing runs, else once the run stopped (or its
    /// grace period is over).
    pub(super) async fn on_cancel(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        reply: RpcReplyPort<Result<Task, RuntimeError>>,
    ) {
        let state = self.writer.journal.state();
        if state.is_terminal() {
            let id = self.writer.journal.task().id.clone();
            let _ = reply.send(Err(RuntimeError::NotCancelable { id, state }));
            return;
        }
        let (run, slot) = match std::mem::take(&mut self.runs.phase) {
            // A cancel wins over a message that interrupted the run: no run follows.
            Phase::Canceling {
                run,
                slot,
                mut waiters,
                restart: _,
            } => {
                waiters.push(reply);
                self.runs.phase = Phase::Canceling {
                    run,
                    slot,
                    waiters,
                    restart: None,
                };
                return;
            }
            // Nothing running (waiting for a slot, or for input after a restart or a
            // park, or woken from an idle park for this cancel): the skill hears of it
            // afterwards.
            previous @ (Phase::Idle | Phase::Queued { .. }) => {
                let writer = &mut self.writer;
                let result = writer
                    .set_status(TaskState::Canceled, Some("canceled by request".into()))
                    .await
                    .map(|()| writer.journal.task().clone())
                    .map_err(RuntimeError::from);
                match (result.is_ok(), previous) {
                    (true, _) => {
                        self.runs.slot.stop();
                        self.tell_canceled_at_rest();
                    }
                    // Its wait for a slot goes on, in its place: a slot that came
                    // during the write is in the mailbox, and starts the run.
                    (false, queued @ Phase::Queued { .. }) => self.runs.phase = queued,
                    (false, _) => self.run_again(myself),
                }
                let _ = reply.send(result);
                return;
            }
            Phase::Running { run, slot } => (run, Some(slot)),
            // An answer queued for a slot is void now; the waiting run learns it is
            // canceled.
            Phase::AwaitingInput { run, waiter } | Phase::Answered { run, waiter, .. } => {
                let _ = waiter.send(Err(SkillError::Canceled));
                (run, None)
            }
        };
        self.runs.stop_run(myself, run, slot, vec![reply], None);
    }

    /// A task woken with no run whose cancel could not be stored: if its run is not at
    /// rest (it was woken from an idle park for the cancel), the run starts again once
    /// it has a slot, as the wake would have started it.
    fn run_again(&mut self, myself: &ActorRef<TaskMsg>) {
        let journal = &self.writer.journal;
        if approval::at_rest(&journal.task().status) {
            return;
        }
        let Some(message) = journal.record().inputs.run_message(journal.task()).cloned() else {
            return;
        };
        self.runs.phase = Phase::Queued {
            message,
            resumed: true,
        };
        self.runs.want_slot(&self.writer, myself);
    }

    /// Tells the skill that its task was canceled with no run live, when a run left a
    /// checkpoint (`Skill::canceled_at_rest`).
    fn tell_canceled_at_rest(&self) {
        let record = self.writer.journal.record();
        let Some(checkpoint) = record.checkpoint.clone() else {
            return;
        };
        let skill = self.runs.settings.skill.clone();
        let task_id = record.task.id.clone();
        let span = self.writer.span().clone();
        tokio::spawn(
            async move { skill.canceled_at_rest(&task_id, checkpoint).await }.instrument(span),
        );
    }

    /// An approver's decision on a task that waits for one (`approval`): approved, the
    /// task moves to working (with the narrowed input as a new message, when there is
    /// one) and runs once its skill has a slot; rejected or expired, it ends `rejected`
    /// with the reason. Nothing of the skill has run before.
    pub(super) async fn on_decide(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        decision: Decision,
        reply: RpcReplyPort<Result<Task, RuntimeError>>,
    ) {
        let _ = reply.send(self.decide(myself, decision).await);
    }

    async fn decide(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        decision: Decision,
    ) -> Result<Task, RuntimeError> {
        let task = self.writer.journal.task();
        let id = task.id.clone();
        let Some(request) = approval::pending(task) else {
            let state = self.writer.journal.state();
            return Err(RuntimeError::NotAwaitingApproval { id, state });
        };
        let config = &self.runs.settings.config;
        let by_requester = request.requested_by.as_deref() == Some(decision.by.as_str());
        if config.approver_must_differ
            && by_requester
            && !matches!(decision.verdict, Verdict::Expire)
        {
            return Err(RuntimeError::ApproverIsRequester {
                id,
                user: decision.by,
            });
        }
        let narrowed = match &decision.verdict {
            Verdict::Approve {
                narrowed: Some(data),
            } => Some(
                self.writer
                    .narrowed_message(self.runs.settings.skill.as_ref(), data)?,
            ),
            _ => None,
        };
        let status = approval::decided_status(&decision, config.approval_timeout());
        let approved = matches!(decision.verdict, Verdict::Approve { .. });
        let mut kinds = Vec::new();
        if let Some(message) = &narrowed {
            kinds.push(TaskEventKind::Message(message.clone()));
        }
        kinds.push(TaskEventKind::Status(status));
        self.writer.journal.append(kinds, None).await?;
        tracing::info!(
            parent: self.writer.span(),
            by = %decision.by,
            approved,
            narrowed = narrowed.is_some(),
            "approval decided"
        );
        if approved {
            // The run starts from the narrowed input, else from the message that asked.
            let message = match narrowed {
                Some(message) => message,
                None => self.writer.run_message()?.clone(),
            };
            self.tell_waiting(false);
            self.runs.phase = Phase::Queued {
                message,
                resumed: false,
            };
            self.runs.want_slot(&self.writer, myself);
        }
        Ok(self.writer.journal.task().clone())
    }

    /// The node is cut off from the database: nothing more is written from here; the
    /// run is told to stop and has `stop_within` (a write it makes meanwhile is refused,
    /// which stops the actor and aborts the run at once); without a run the actor stops
    /// now.
    pub(super) fn on_cut_off(&mut self, myself: &ActorRef<TaskMsg>, stop_within: Duration) {
        self.writer.journal.cut_off();
        match self.runs.phase.run() {
            Some(run) => {
                run.cancel.cancel();
                myself.send_after(stop_within, || TaskMsg::CutOffExpired);
            }
            None => myself.stop(Some(CUT_OFF.into())),
        }
    }
}
