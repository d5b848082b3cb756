//! What callers ask of a task through its actor: a user's follow-up message (the
//! answer a waiting run gets, or a run started again after a restart) and a cancel
//! (the run told to stop, then aborted once its grace period is over).

use ractor::{ActorRef, RpcReplyPort};

use super::journal::status_change;
use super::phase::Phase;
use super::task_actor::{TaskActorState, TaskMsg};
use crate::error::RuntimeError;
use crate::model::{Message, Task, TaskEventKind, TaskState};
use crate::requests::TaskSnapshot;
use crate::skill::SkillError;

impl TaskActorState {
    pub(super) async fn on_deliver(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        message: Message,
        reply: RpcReplyPort<Result<TaskSnapshot, RuntimeError>>,
    ) {
        let state = self.journal.state();
        let id = self.journal.task().id.clone();
        let refused = if state.is_terminal() {
            Some(RuntimeError::TaskTerminal { id, state })
        } else if !state.is_interrupted() || self.phase.is_canceling() {
            Some(RuntimeError::NotAcceptingInput { id, state })
        } else {
            None
        };
        if let Some(error) = refused {
            let _ = reply.send(Err(error));
            return;
        }
        let accepted = self
            .journal
            .append(
                vec![
                    TaskEventKind::Message(message.clone()),
                    status_change(TaskState::Working, None),
                ],
                None,
            )
            .await;
        if let Err(error) = accepted {
            let _ = reply.send(Err(error.into()));
            return;
        }
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
            // A run that does not wait for input goes on as it was.
            other @ (Phase::Running { .. } | Phase::Canceling { .. }) => other,
        };
        self.want_slot(myself);
        let _ = reply.send(Ok(self.journal.snapshot()));
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
            Phase::Canceling {
                run,
                slot,
                mut waiters,
            } => {
                waiters.push(reply);
                self.phase = Phase::Canceling { run, slot, waiters };
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
        run.cancel.cancel();
        let run_id = run.id;
        myself.send_after(self.config.cancel_grace(), move || TaskMsg::GraceExpired {
            run: run_id,
        });
        self.phase = Phase::Canceling {
            run: Some(run),
            slot,
            waiters: vec![reply],
        };
    }

    pub(super) async fn on_grace_expired(&mut self, run: u64) {
        let Phase::Canceling {
            run: current, slot, ..
        } = &mut self.phase
        else {
            return;
        };
        let Some(current) = current.take_if(|r| r.id == run) else {
            return;
        };
        current.abort.abort();
        *slot = None;
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
}
