//! `Runs`: a task's skill runs, as its actor leads them. A run starts once the task
//! is stored and has a slot (a blocking send's is polled here first, so that a run that
//! ends at once needs no task of its own); its calls become commits; it waits for input
//! holding no slot; a cancel or an interrupting message stops it within the grace
//! period; its end (return, failure, panic or abort) becomes the task's terminal state,
//! or the next run when messages wait for it.

use ractor::{ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;

use super::idle::IdleRun;
use super::journal::status;
use super::phase::{Phase, Run};
use super::rest::Rest;
use super::run_task::{
    ActorLink, RunSettings, SkillRun, completion, ending, panic_text, poll_once, refusal,
    stopped_by_lease,
};
use super::slot_wait::SlotWait;
use super::slots::Slot;
use super::task_msg::{RunOutcome, TaskMsg};
use super::writer::Writer;
use crate::model::{Message, TaskEventKind, TaskState};
use crate::run_link::{SkillCall, SkillReply};
use crate::skill::SkillError;

mod stop;

/// Where the task's run stands, and what a run is started with.
pub(super) struct Runs {
    pub(super) phase: Phase,
    /// The task's wait for a slot, if any.
    pub(super) slot: SlotWait,
    /// What its runs are started with.
    pub(super) settings: RunSettings,
    /// Runs started so far (the current run's id).
    runs_started: u64,
    /// Started to run its task again after a restart (its first run says so; a task
    /// woken at rest, after a restart or a park, says nothing).
    restarted: bool,
    /// The next run's first poll is made here (a new task spawned with a waiter).
    pub(super) first_poll_here: bool,
    /// The wait the run said it is in, until its next call (`SkillCall::Idle`).
    idle: Option<IdleRun>,
}

impl Runs {
    /// The runs of a task in `phase`: `restarted` after a restart, its first run's first
    /// poll made here when `first_poll_here`.
    pub(super) fn new(
        settings: RunSettings,
        phase: Phase,
        slot: SlotWait,
        restarted: bool,
        first_poll_here: bool,
    ) -> Runs {
        Runs {
            phase,
            slot,
            settings,
            runs_started: 0,
            restarted,
            first_poll_here,
            idle: None,
        }
    }

    /// The wait the current run is in, if it said so and has made no call since.
    pub(super) fn idle(&self) -> Option<IdleRun> {
        let idle = self.idle?;
        match &self.phase {
            Phase::Running { run, .. } if run.id == idle.run => Some(idle),
            _ => None,
        }
    }

    /// Asks for a slot for the task: `Start` comes once it has one.
    pub(super) fn want_slot(&mut self, writer: &Writer, myself: &ActorRef<TaskMsg>) {
        self.slot.want(myself, &writer.journal.record().skill);
    }

    /// The task has a slot: the queued run starts in it, or the waiting run gets its
    /// answer and goes on in it.
    pub(super) async fn on_start(
        &mut self,
        writer: &mut Writer,
        myself: &ActorRef<TaskMsg>,
        slot: Slot,
    ) {
        match std::mem::take(&mut self.phase) {
            // The run asked for input and has it now: it goes on, in this slot.
            Phase::Answered {
                run,
                waiter,
                answer,
            } => {
                let _ = waiter.send(Ok(Some(answer)));
                self.phase = Phase::Running { run, slot };
            }
            Phase::Queued { message, resumed } => {
                self.start_queued(writer, myself, slot, message, resumed)
                    .await;
            }
            // Nothing to start any more (canceled meanwhile, say): the slot is freed.
            other => self.phase = other,
        }
    }

    /// Moves the task to working (a fresh task; a follow-up already put it there) and
    /// starts its run in `slot`. A run started again after a restart says so, so that
    /// watchers know why.
    async fn start_queued(
        &mut self,
        writer: &mut Writer,
        myself: &ActorRef<TaskMsg>,
        slot: Slot,
        message: Message,
        resumed: bool,
    ) {
        let state = writer.journal.state();
        if state.is_terminal() {
            return;
        }
        let note = (self.restarted && self.runs_started == 0 && state == TaskState::Working)
            .then(|| "resumed after a restart".to_owned());
        // A skill that says when work begins leaves a submitted task submitted.
        let leave_submitted = state == TaskState::Submitted && self.settings.skill.sets_working();
        if (state != TaskState::Working && !leave_submitted) || note.is_some() {
            if let Err(error) = writer.set_status(TaskState::Working, note).await {
                return writer.fail_after("could not start the task", &error).await;
            }
        }
        self.start_run(writer, myself, slot, message, resumed).await;
    }

    /// Starts the skill's run in `slot` as a child task (its task is stored already: no
    /// skill runs for a task that is not). A blocking send's first run is polled once
    /// here first: one that ends at once is ended here, with no task of its own.
    async fn start_run(
        &mut self,
        writer: &mut Writer,
        myself: &ActorRef<TaskMsg>,
        slot: Slot,
        message: Message,
        resumed: bool,
    ) {
        self.runs_started += 1;
        let run_id = self.runs_started;
        let cancel = CancellationToken::new();
        let span = tracing::info_span!(parent: writer.span(), "skill_run", run = run_id, resumed);
        let link = ActorLink {
            actor: myself.clone(),
            run: run_id,
        };
        let run = self
            .settings
            .run(writer, link, message, resumed, cancel.clone(), span);
        // The run is a child this actor supervises: its own tokio task, watched by a
        // monitor that turns its end (return, panic or abort) into a message back here.
        let run = match std::mem::take(&mut self.first_poll_here) {
            // Spawned as it is: boxed, a waiting run costs about 1 KiB more.
            false => tokio::spawn(run),
            // Boxed, so that every actor's future stays the size it was (an actor's task
            // holds room for its largest state, waiting or not).
            true => {
                let mut run: SkillRun = Box::pin(run);
                if let Some(outcome) = poll_once(&mut run) {
                    // As for a run that ends later.
                    writer.journal.free_run_slot(slot);
                    Box::pin(writer.record_ending(ending(outcome))).await;
                    cancel.cancel();
                    return;
                }
                tokio::spawn(run)
            }
        };
        let abort = run.abort_handle();
        let me = myself.clone();
        tokio::spawn(async move {
            let outcome = match run.await {
                Ok(result) => RunOutcome::Returned(result),
                Err(e) if e.is_panic() => RunOutcome::Panicked(panic_text(e.into_panic())),
                Err(_) => RunOutcome::Aborted,
            };
            // The actor may be gone (stopped after cancel): then nobody needs the outcome.
            let _ = me.cast(TaskMsg::RunFinished {
                run: run_id,
                outcome,
            });
        });
        let run = Run {
            id: run_id,
            abort,
            cancel,
        };
        self.phase = Phase::Running { run, slot };
    }

    /// A call of run `run`: refused once that run is stopped (or being canceled, or the
    /// task ended); otherwise answered after the notes the run posted before it.
    pub(super) async fn on_skill_call(
        &mut self,
        writer: &mut Writer,
        rest: &Rest,
        call: SkillCall,
        reply: RpcReplyPort<SkillReply>,
        run: u64,
    ) {
        let stopped = self.phase.run().is_none_or(|current| current.id != run);
        if stopped || self.phase.is_canceling() || writer.journal.state().is_terminal() {
            let _ = reply.send(Err(SkillError::Canceled));
            return;
        }
        // A call ends any wait the run was in.
        self.idle = None;
        // Notes the run posted before this call are stored before it.
        // (Not canceling: a call then is refused above.)
        if let Err(error) = writer.store_posted(false).await {
            writer
                .fail_after("could not store posted progress", &error)
                .await;
            let _ = reply.send(Err(refusal(error)));
            return;
        }
        let result = match call {
            SkillCall::TakeMessage => {
                let _ = reply.send(writer.take_message().await);
                return;
            }
            // A message queued for the run answers it at once.
            SkillCall::RequestInput { prompt } if writer.has_queued() => {
                if let Some(answered) = writer.answer_from_queue(prompt).await {
                    let _ = reply.send(answered.map(Some).map_err(SkillError::runtime));
                }
                return;
            }
            SkillCall::RequestInput { prompt } => {
                let asking = status(TaskState::InputRequired, Some(prompt));
                let asked = writer
                    .journal
                    .append(vec![TaskEventKind::Status(asking)], None)
                    .await;
                if asked.is_ok() {
                    // Answered when the user's message arrives (on_deliver) and a slot is
                    // free again: waiting for a person holds no slot.
                    return self.await_input(writer, rest, reply);
                }
                asked
            }
            // Applied here, not in a helper of the writer's: a step of a stream that
            // stores each step takes this path, and a future nested once more costs it
            // a copy of the call.
            SkillCall::Status {
                message,
                checkpoint,
            } => {
                let working = status(TaskState::Working, Some(message));
                let kinds = vec![TaskEventKind::Status(working)];
                writer.journal.append(kinds, checkpoint).await
            }
            SkillCall::Artifact {
                artifact,
                append,
                last_chunk,
            } => {
                let kind = TaskEventKind::Artifact {
                    artifact,
                    append,
                    last_chunk,
                };
                writer.journal.append(vec![kind], None).await
            }
            SkillCall::Checkpoint(value) => writer.journal.save_checkpoint(value).await,
            SkillCall::StorePosted => Ok(()),
            SkillCall::Idle { until } => {
                self.idle = Some(IdleRun { run, until });
                Ok(())
            }
        };
        let _ = reply.send(result.map(|()| None).map_err(refusal));
    }

    /// The run waits for input: its slot is freed, and `reply` answered once the user's
    /// message arrives and a slot is free again.
    fn await_input(&mut self, writer: &Writer, rest: &Rest, reply: RpcReplyPort<SkillReply>) {
        if self.phase.await_input(reply) {
            rest.tell_waiting(&writer.journal.task().id, true);
        }
    }

    /// Run `run` ended: the task records how (canceled, when a cancel was asked for), or
    /// a run starts from the message that interrupted it or from the oldest one queued.
    pub(super) async fn on_run_finished(
        &mut self,
        writer: &mut Writer,
        myself: &ActorRef<TaskMsg>,
        run: u64,
        outcome: RunOutcome,
    ) {
        if self.phase.run().is_none_or(|r| r.id != run) {
            return;
        }
        if stopped_by_lease(&outcome) {
            // The run stopped because this node may no longer act on the task (cut off
            // from the database, or another node holds it): nothing is written, and the
            // actor stops; the holder resumes the task from what is stored.
            self.phase = Phase::Idle;
            writer.journal.fence();
            return;
        }
        // The run is gone, and the slot it held with it.
        let canceling = match &mut self.phase {
            Phase::Canceling {
                run, slot, restart, ..
            } => {
                *run = None;
                *slot = None;
                if let Some(message) = restart.take() {
                    return self.restart_from(writer, myself, message);
                }
                true
            }
            _ => {
                if let Phase::Running { slot, .. } = std::mem::take(&mut self.phase) {
                    writer.journal.free_run_slot(slot);
                }
                false
            }
        };
        if canceling {
            return writer.end_canceled("canceled by request").await;
        }
        if let RunOutcome::Returned(Ok(output)) = outcome {
            // Messages queued for the run and not taken start the next run.
            match writer.follow_with_queued(completion(output)).await {
                Ok(Some(next)) => self.restart_from(writer, myself, next),
                Ok(None) => {}
                Err(completion) => writer.record_ending(completion).await,
            }
            return;
        }
        writer.record_ending(ending(outcome)).await;
    }

    /// The interrupted run has stopped: the next starts from `message` once the task has
    /// a slot. It posts to a queue of its own (the old run's notes are dropped, as
    /// a canceled run's are).
    pub(super) fn restart_from(
        &mut self,
        writer: &mut Writer,
        myself: &ActorRef<TaskMsg>,
        message: Message,
    ) {
        writer.drop_posted();
        self.phase = Phase::Queued {
            message,
            resumed: false,
        };
        self.want_slot(writer, myself);
    }
}
