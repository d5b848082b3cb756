//! What callers ask of a task through its actor: a user's follow-up message (the
//! answer a waiting run gets, or a run started again after a restart; a message while
//! the run works goes as the skill's policy says, `while_working`) and a cancel (the
//! run told to stop, then aborted once its grace period is over).

use std::time::Duration;

use ractor::{ActorRef, RpcReplyPort};

use super::journal::status_change;
use super::phase::{CancelWaiter, Phase, Run};
use super::slots::Slot;
use super::task_actor::TaskActorState;
use super::task_msg::{CUT_OFF, TaskMsg};
use crate::error::RuntimeError;
use crate::model::{Message, Task, TaskEventKind, TaskState};
use crate::requests::TaskSnapshot;
use crate::skill::{MessagePolicy, SkillError};

impl TaskActorState {
    /// Delivers a user's follow-up message; the task after it was accepted.
    pub(super) async fn on_deliver(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        message: Message,
    ) -> Result<TaskSnapshot, RuntimeError> {
        // Delivered already (a retry racing the first): the task as it stands.
        if self.journal.task().has_user_message(&message.message_id) {
            return Ok(self.journal.snapshot());
        }
        let state = self.journal.state();
        let id = self.journal.task().id.clone();
        if state.is_terminal() {
            return Err(RuntimeError::TaskTerminal { id, state });
        }
        if crate::approval::awaits_approval(&self.journal.task().status) {
            return Err(RuntimeError::AwaitingApproval { id });
        }
        if self.phase.is_canceling() && !self.phase.is_restarting() {
            return Err(RuntimeError::BeingCanceled { id });
        }
        if !state.is_interrupted() || self.phase.is_restarting() {
            // The run works (or has yet to start): the skill's policy decides.
            return match self.policy {
                MessagePolicy::Enqueue => self.enqueue(message).await,
                MessagePolicy::Interrupt => self.interrupt(myself, message).await,
                MessagePolicy::Reject => Err(RuntimeError::NotAcceptingInput { id, state }),
            };
        }
        self.journal
            .append(
                vec![
                    TaskEventKind::Message(message.clone()),
                    status_change(TaskState::Working, None),
                ],
                None,
            )
            .await?;
        self.phase = match std::mem::take(&mut self.phase) {
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
        self.want_slot(myself);
        Ok(self.journal.snapshot())
    }

    pub(super) async fn on_cancel(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        reply: RpcReplyPort<Result<Task, RuntimeError>>,
    ) {
        let state = self.journal.state();
        if state.is_terminal() {
            let id = self.journal.task().id.clone();
            let _ = reply.send(Err(RuntimeError::NotCancelable { id, state }));
            return;
        }
        let (run, slot) = match std::mem::take(&mut self.phase) {
            // A cancel wins over a message that interrupted the run: no run follows.
            Phase::Canceling {
                run,
                slot,
                mut waiters,
                restart: _,
            } => {
                waiters.push(reply);
                self.phase = Phase::Canceling {
                    run,
                    slot,
                    waiters,
                    restart: None,
                };
                return;
            }
            // Nothing running (waiting for a slot, or for input after a restart).
            Phase::Idle | Phase::Queued { .. } => {
                if let Some(wait) = self.slot_wait.take() {
                    wait.abort();
                }
                let result = self
                    .set_status(TaskState::Canceled, Some("canceled by request".into()))
                    .await
                    .map(|()| self.journal.task().clone())
                    .map_err(RuntimeError::from);
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
        self.stop_run(myself, run, slot, vec![reply], None);
    }

    /// Tells `run` to stop and gives it the grace period; then the task is canceled (or
    /// a run starts from `restart`).
    pub(super) fn stop_run(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        run: Run,
        slot: Option<Slot>,
        waiters: Vec<CancelWaiter>,
        restart: Option<Message>,
    ) {
        run.cancel.cancel();
        let run_id = run.id;
        myself.send_after(self.config.cancel_grace(), move || TaskMsg::GraceExpired {
            run: run_id,
        });
        self.phase = Phase::Canceling {
            run: Some(run),
            slot,
            waiters,
            restart,
        };
    }

    pub(super) async fn on_grace_expired(&mut self, myself: &ActorRef<TaskMsg>, run: u64) {
        let Phase::Canceling {
            run: current,
            slot,
            restart,
            ..
        } = &mut self.phase
        else {
            return;
        };
        let Some(current) = current.take_if(|r| r.id == run) else {
            return;
        };
        current.abort.abort();
        *slot = None;
        if let Some(message) = restart.take() {
            return self.restart_from(myself, message);
        }
        self.end_canceled(
            "canceled by request; the skill did not stop within the grace period and was aborted",
        )
        .await;
    }

    pub(super) async fn end_canceled(&mut self, text: &str) {
        if let Err(error) = self
            .set_status(TaskState::Canceled, Some(text.into()))
            .await
        {
            self.fail_after("could not record the cancel", &error).await;
        }
    }

    /// The node is cut off from the database: nothing more is written from here; the
    /// run is told to stop and has `stop_within` (a write it makes meanwhile is refused,
    /// which stops the actor and aborts the run at once); without a run the actor stops
    /// now.
    pub(super) fn on_cut_off(&mut self, myself: &ActorRef<TaskMsg>, stop_within: Duration) {
        self.journal.cut_off();
        match self.phase.run() {
            Some(run) => {
                run.cancel.cancel();
                myself.send_after(stop_within, || TaskMsg::CutOffExpired);
            }
            None => myself.stop(Some(CUT_OFF.into())),
        }
    }
}
