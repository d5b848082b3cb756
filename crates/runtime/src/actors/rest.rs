//! `Rest`: what a task actor does once its task comes to rest (ended, or waiting for
//! a person): the submitters waiting for its outcome are answered, the supervisor is
//! told whether it only waits (a shutdown does not wait for it), and, with nothing
//! left here that the store does not hold, the idle clock may park it (`park`); so it
//! may a task whose run waits idle (`idle`) with at least the clock's time still to go.

use ractor::ActorRef;

use super::idle::IdleRun;
use super::park::{PARKED, ParkTimer};
use super::phase::Phase;
use super::supervisor_msg::SupervisorMsg;
use super::task_msg::{TaskMsg, Waiter};
use super::writer::Writer;
use crate::model::TaskId;
use crate::telemetry;

/// The task's waiters and idle clock.
pub(super) struct Rest {
    park: ParkTimer,
    /// Submitters that tell only the task's outcome, answered once it is at rest.
    waiters: Vec<Waiter>,
    /// Whether the skill's runs resume from their checkpoint (a run waiting for input
    /// may then be stopped, and its task parked).
    resumable: bool,
    supervisor: ActorRef<SupervisorMsg>,
}

impl Rest {
    pub(super) fn new(
        park: ParkTimer,
        waiter: Option<Waiter>,
        resumable: bool,
        supervisor: ActorRef<SupervisorMsg>,
    ) -> Rest {
        Rest {
            park,
            waiters: Vec::from_iter(waiter),
            resumable,
            supervisor,
        }
    }

    /// Something happened to the task: the idle clock starts again.
    #[inline]
    pub(super) fn touch(&mut self) {
        self.park.touch();
    }

    /// A `Park` check sent when `activity` messages had been handled arrived: whether
    /// nothing happened since.
    #[inline]
    pub(super) fn fired(&mut self, activity: u64) -> bool {
        self.park.fired(activity)
    }

    /// One more submitter waits for the task's outcome.
    pub(super) fn add_waiter(&mut self, waiter: Waiter) {
        self.waiters.push(waiter);
    }

    /// Whether the task may give up its actor now: it waits for a person, or its run
    /// waits idle (`idle`) with at least the idle clock's time to go, and nothing lives here
    /// that the store does not hold (no subscriber, no waiter, no note to store, no wait
    /// for a slot, and no run, or one waiting for input, or idle, that resumes from its
    /// checkpoint).
    #[inline]
    pub(super) fn parkable(
        &self,
        phase: &Phase,
        idle: Option<IdleRun>,
        writer: &Writer,
        waits_for_slot: bool,
    ) -> bool {
        let journal = &writer.journal;
        let status = &journal.task().status;
        let waits = match phase {
            Phase::Idle => crate::approval::at_rest(status),
            Phase::AwaitingInput { .. } => self.resumable && crate::approval::at_rest(status),
            Phase::Running { .. } => {
                self.resumable
                    && idle.is_some_and(|idle| idle.long_enough(self.park.after()))
                    && !writer.has_queued()
            }
            _ => false,
        };
        waits
            && !status.state.is_terminal()
            && self.waiters.is_empty()
            && !waits_for_slot
            && !journal.has_subscribers()
            && !journal.is_fenced()
            && !writer.has_unsettled_notes()
    }

    /// Starts the idle clock of a task that may park.
    #[inline]
    pub(super) fn arm(&mut self, myself: &ActorRef<TaskMsg>, parkable: bool) {
        if parkable {
            self.park.arm(myself);
        }
    }

    /// Parks the task: its run waiting for input, or idle, stops (the actor woken for
    /// the task resumes it from its checkpoint, with the answer), and the actor stops.
    /// An idle run's task is woken when its wait is over: the supervisor is told when.
    pub(super) fn park_now(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        phase: &mut Phase,
        idle: Option<IdleRun>,
        task_id: &TaskId,
        span: &tracing::Span,
    ) {
        self.park.park(idle.is_some());
        tracing::debug!(parent: span, "{PARKED}");
        telemetry::metrics().parked();
        if let Some(idle) = idle {
            let _ = self.supervisor.cast(SupervisorMsg::WakeAt {
                task_id: task_id.clone(),
                at: idle.until,
            });
        }
        phase.abandon();
        myself.stop(Some(PARKED.into()));
    }

    /// Answers the submitters waiting for the task's outcome, if the task is at rest:
    /// with the task as it stands (written; each settles before telling it).
    #[inline]
    pub(super) fn answer_waiters(&mut self, writer: &Writer) {
        let journal = &writer.journal;
        if self.waiters.is_empty() || !crate::approval::at_rest(&journal.task().status) {
            return;
        }
        let snapshot = journal.snapshot();
        for waiter in self.waiters.drain(..) {
            let _ = waiter.send(snapshot.clone());
        }
    }

    /// Tells the supervisor whether this task only waits for a user (so that a shutdown
    /// does not wait for it).
    #[inline]
    pub(super) fn tell_waiting(&self, task_id: &TaskId, waiting: bool) {
        let _ = self.supervisor.cast(SupervisorMsg::WaitingForInput {
            task_id: task_id.clone(),
            waiting,
        });
    }
}
