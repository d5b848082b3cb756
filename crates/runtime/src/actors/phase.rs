//! Where a task's run stands, as its actor sees it: one state at a time, each holding
//! what only that state has (the run, the slot, whoever waits for an answer).

use ractor::RpcReplyPort;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::slots::Slot;
use crate::error::RuntimeError;
use crate::model::{Message, Task};
use crate::run_link::SkillReply;
use crate::skill::SkillError;

/// A caller waiting for a cancel to end the task.
pub(super) type CancelWaiter = RpcReplyPort<Result<Task, RuntimeError>>;

/// A skill run: a tokio task of its own, which the actor supervises.
pub(super) struct Run {
    /// Which of the task's runs (a follow-up after a restart starts another).
    pub(super) id: u64,
    pub(super) abort: AbortHandle,
    /// Tells the skill to stop (`SkillContext::cancelled`).
    pub(super) cancel: CancellationToken,
}

impl Run {
    /// Signals the skill and aborts its task: no run outlives its actor.
    pub(super) fn stop(self) {
        self.cancel.cancel();
        self.abort.abort();
    }
}

#[derive(Default)]
pub(super) enum Phase {
    /// No run, none to start: a task woken after a restart that waits for a user's
    /// message, or one that has ended.
    #[default]
    Idle,
    /// A run to start once the task has a slot of its skill: its input message, and
    /// whether it runs again after a restart.
    Queued { message: Message, resumed: bool },
    /// The run goes on, in this slot.
    Running { run: Run, slot: Slot },
    /// The run asked for input and waits, holding no slot (tasks waiting for a person
    /// never starve the skill's other tasks).
    AwaitingInput {
        run: Run,
        waiter: RpcReplyPort<SkillReply>,
    },
    /// The user answered: the run gets the answer once the task has a slot again.
    Answered {
        run: Run,
        waiter: RpcReplyPort<SkillReply>,
        answer: Message,
    },
    /// A cancel was asked for, or a message interrupts the run: the run (until it ends,
    /// or its grace period does) was told to stop; then the task is canceled, and the
    /// waiters get it, or a run starts from the interrupting message (`restart`; none
    /// when a cancel was asked for, which wins).
    Canceling {
        run: Option<Run>,
        slot: Option<Slot>,
        waiters: Vec<CancelWaiter>,
        restart: Option<Message>,
    },
}

impl Phase {
    /// The run going on, if any.
    pub(super) fn run(&self) -> Option<&Run> {
        match self {
            Phase::Running { run, .. }
            | Phase::AwaitingInput { run, .. }
            | Phase::Answered { run, .. }
            | Phase::Canceling { run: Some(run), .. } => Some(run),
            Phase::Idle | Phase::Queued { .. } | Phase::Canceling { run: None, .. } => None,
        }
    }

    pub(super) fn is_canceling(&self) -> bool {
        matches!(self, Phase::Canceling { .. })
    }

    /// Whether the run is being stopped for a message that interrupts it (and no cancel
    /// was asked for since).
    pub(super) fn is_restarting(&self) -> bool {
        matches!(
            self,
            Phase::Canceling {
                restart: Some(_),
                ..
            }
        )
    }

    /// The run asks for input: it waits for `reply`'s answer, holding no slot (the one
    /// it had is freed, its store slot kept for the node's next run if it may be).
    /// `false` when there is no run to wait (a call from a run that ended): nobody will
    /// answer, and `reply` is told so.
    pub(super) fn await_input(&mut self, reply: RpcReplyPort<SkillReply>) -> bool {
        let run = match std::mem::take(self) {
            Phase::Running { run, slot } => {
                slot.keep();
                run
            }
            Phase::AwaitingInput { run, .. } | Phase::Answered { run, .. } => run,
            other => {
                *self = other;
                let _ = reply.send(Err(SkillError::Canceled));
                return false;
            }
        };
        *self = Phase::AwaitingInput { run, waiter: reply };
        true
    }

    /// Stops the run (if any) and frees the slot; cancel waiters get the task as it
    /// is and a waiting run is told it is canceled. Leaves the phase `Idle`.
    pub(super) fn end(&mut self, task: &Task) {
        match std::mem::take(self) {
            Phase::Idle | Phase::Queued { .. } => {}
            Phase::Running { run, slot: _ } => run.stop(),
            Phase::AwaitingInput { run, waiter } | Phase::Answered { run, waiter, .. } => {
                let _ = waiter.send(Err(SkillError::Canceled));
                run.stop();
            }
            Phase::Canceling {
                run,
                slot: _,
                waiters,
                restart: _,
            } => {
                if let Some(run) = run {
                    run.stop();
                }
                for waiter in waiters {
                    let _ = waiter.send(Ok(task.clone()));
                }
            }
        }
    }

    /// Stops the run (if any) and lets go of everything else, answering nobody: the
    /// actor stops before its task ended (a shutdown), and its callers fall back to
    /// the store.
    pub(super) fn abandon(&mut self) {
        if let Some(run) = std::mem::take(self).into_run() {
            run.stop();
        }
    }

    fn into_run(self) -> Option<Run> {
        match self {
            Phase::Running { run, .. }
            | Phase::AwaitingInput { run, .. }
            | Phase::Answered { run, .. } => Some(run),
            Phase::Canceling { run, .. } => run,
            Phase::Idle | Phase::Queued { .. } => None,
        }
    }
}
