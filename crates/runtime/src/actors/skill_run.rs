//! A task's skill run, as its actor leads it: started once the task is stored (a
//! blocking send's first polled here, so that a run that ends at once needs no task of
//! its own), the skill's calls turned into commits, and its end (return, failure,
//! panic or abort) into the task's terminal state.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use ractor::rpc::CallResult;
use ractor::{ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::journal::{JournalError, status, status_change};
use super::phase::{Phase, Run};
use super::slots::Slot;
use super::task_actor::TaskActorState;
use super::task_msg::{RunOutcome, TaskMsg};
use super::while_working::reply_answered;
use crate::context::{Cpu, SkillContext};
use crate::error::RuntimeError;
use crate::model::{Message, Role, TaskEventKind, TaskState};
use crate::run_link::{SkillCall, SkillReply, TaskLink};
use crate::skill::{SkillError, SkillInput, SkillOutput};
use crate::store::StoreError;
use crate::telemetry;

/// A run's link to its task: calls and notices go to the task's actor, naming the run
/// (a run stopped for a message that interrupted it must not write into the next).
struct ActorLink {
    actor: ActorRef<TaskMsg>,
    run: u64,
}

#[async_trait]
impl TaskLink for ActorLink {
    async fn call(&self, call: SkillCall) -> Option<SkillReply> {
        let run = self.run;
        let sent = self
            .actor
            .call(|reply| TaskMsg::Skill(call, reply, run), None);
        match sent.await {
            Ok(CallResult::Success(reply)) => Some(reply),
            Ok(_) | Err(_) => None,
        }
    }

    fn notes_posted(&self) -> bool {
        self.actor.cast(TaskMsg::Posted).is_ok()
    }
}

/// A skill's run, as its actor drives it.
type SkillRun = Pin<Box<dyn Future<Output = Result<SkillOutput, SkillError>> + Send>>;

impl TaskActorState {
    /// Starts the skill's run in `slot` as a child task (its task is stored already: no
    /// skill runs for a task that is not). A blocking send's first run is polled once
    /// here first: one that ends at once is ended here, with no task of its own.
    pub(super) async fn start_run(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        slot: Slot,
        message: Message,
        resumed: bool,
    ) {
        self.runs_started += 1;
        let run_id = self.runs_started;
        let cancel = CancellationToken::new();
        let span = tracing::info_span!(parent: &self.span, "skill_run", run = run_id, resumed);
        let record = self.journal.record();
        let task = &record.task;
        let link = ActorLink {
            actor: myself.clone(),
            run: run_id,
        };
        let ctx = SkillContext::new(
            Arc::new(link),
            self.store.clone(),
            task,
            cancel.clone(),
            record.checkpoint.clone(),
            self.posted.clone(),
            self.queued.clone(),
            span.clone(),
            &record.skill,
            Cpu {
                pool: self.cpu.clone(),
                budget: self.config.cpu_budget(),
            },
        );
        let input = SkillInput {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            message,
            history: task.history.clone(),
            checkpoint: record.checkpoint.clone(),
            resumed,
            owner: record.owner.clone(),
        };
        let skill = self.skill.clone();
        let run = async move { skill.run(input, ctx).await }.instrument(span);
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
                    self.journal.free_run_slot(slot);
                    Box::pin(self.end_run(outcome, false)).await;
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

    pub(super) async fn on_skill_call(
        &mut self,
        call: SkillCall,
        reply: RpcReplyPort<SkillReply>,
        run: u64,
    ) {
        let stopped = self.phase.run().is_none_or(|current| current.id != run);
        if stopped || self.phase.is_canceling() || self.journal.state().is_terminal() {
            let _ = reply.send(Err(SkillError::Canceled));
            return;
        }
        // Notes the run posted before this call are stored before it.
        if let Err(error) = self.store_posted().await {
            self.fail_after("could not store posted progress", &error)
                .await;
            let _ = reply.send(Err(refusal(error)));
            return;
        }
        let call = match call {
            SkillCall::TakeMessage => {
                let _ = reply.send(self.take_message().await);
                return;
            }
            // A message queued for the run answers it at once.
            SkillCall::RequestInput { prompt }
                if !self.journal.record().inputs.queued.is_empty() =>
            {
                if let Some(answered) = self.answer_from_queue(prompt).await {
                    reply_answered(reply, answered);
                }
                return;
            }
            other => other,
        };
        let journal = &mut self.journal;
        let result = match call {
            SkillCall::Status {
                message,
                checkpoint,
            } => {
                let working = status(TaskState::Working, Some(message));
                journal
                    .append(vec![TaskEventKind::Status(working)], checkpoint)
                    .await
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
                journal.append(vec![kind], None).await
            }
            SkillCall::Checkpoint(value) => journal.save_checkpoint(value).await,
            SkillCall::StorePosted | SkillCall::TakeMessage => Ok(()),
            SkillCall::RequestInput { prompt } => {
                let asking = status(TaskState::InputRequired, Some(prompt));
                let asked = journal
                    .append(vec![TaskEventKind::Status(asking)], None)
                    .await;
                if asked.is_ok() {
                    // Answered when the user's message arrives (on_deliver) and a slot is
                    // free again: waiting for a person holds no slot.
                    return self.await_input(reply);
                }
                asked
            }
        };
        let _ = reply.send(result.map(|()| None).map_err(refusal));
    }

    /// The run waits for input: its slot is freed, and `reply` answered once the user's
    /// message arrives and a slot is free again.
    fn await_input(&mut self, reply: RpcReplyPort<SkillReply>) {
        self.phase = match std::mem::take(&mut self.phase) {
            Phase::Running { run, slot: _ }
            | Phase::AwaitingInput { run, .. }
            | Phase::Answered { run, .. } => Phase::AwaitingInput { run, waiter: reply },
            // No run to wait (a call from a run that ended): nobody will answer.
            other => {
                let _ = reply.send(Err(SkillError::Canceled));
                other
            }
        };
        if self.phase.is_awaiting_input() {
            self.tell_waiting(true);
        }
    }

    pub(super) async fn on_run_finished(
        &mut self,
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
            self.journal.fence();
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
                    return self.restart_from(myself, message);
                }
                true
            }
            _ => {
                if let Phase::Running { slot, .. } = std::mem::take(&mut self.phase) {
                    self.journal.free_run_slot(slot);
                }
                false
            }
        };
        if canceling {
            return self.end_canceled("canceled by request").await;
        }
        if let RunOutcome::Returned(Ok(output)) = outcome {
            // Messages queued for the run and not taken start the next run.
            if let Err(completion) = self.follow_with_queued(myself, completion(output)).await {
                self.record_ending(completion).await;
            }
            return;
        }
        self.end_run(outcome, false).await;
    }

    /// Records how the run ended (as canceled, when a cancel was asked for).
    async fn end_run(&mut self, outcome: RunOutcome, canceling: bool) {
        if canceling {
            return self.end_canceled("canceled by request").await;
        }
        let ending = match outcome {
            RunOutcome::Returned(Ok(output)) => completion(output),
            RunOutcome::Returned(Err(SkillError::Rejected(reason))) => {
                vec![status_change(TaskState::Rejected, Some(reason))]
            }
            RunOutcome::Returned(Err(SkillError::Canceled)) => {
                telemetry::metrics().failure("skill");
                let text = "the skill stopped as canceled, but no cancel was requested";
                vec![status_change(TaskState::Failed, Some(text.into()))]
            }
            RunOutcome::Returned(Err(error)) => {
                telemetry::metrics().failure("skill");
                vec![status_change(TaskState::Failed, Some(error.to_string()))]
            }
            RunOutcome::Panicked(text) => {
                telemetry::metrics().failure("panic");
                let text = format!("skill panicked: {text}");
                vec![status_change(TaskState::Failed, Some(text))]
            }
            RunOutcome::Aborted => {
                telemetry::metrics().failure("runtime");
                let text = "the skill run was aborted".into();
                vec![status_change(TaskState::Failed, Some(text))]
            }
        };
        self.record_ending(ending).await;
    }

    /// One commit: what the run posted last, then how it ended.
    async fn record_ending(&mut self, ending: Vec<TaskEventKind>) {
        if let Err(error) = self.apply_posted_then(ending).await {
            self.fail_after("could not record the skill's result", &error)
                .await;
        }
    }
}

/// What a skill is told when its task could not take what it asked.
fn refusal(error: JournalError) -> SkillError {
    SkillError::runtime(error)
}

/// A run's output as changes: its artifacts, then the completed status.
fn completion(output: SkillOutput) -> Vec<TaskEventKind> {
    let mut kinds: Vec<TaskEventKind> = output
        .artifacts
        .into_iter()
        .map(|artifact| TaskEventKind::Artifact {
            artifact,
            append: false,
            last_chunk: true,
        })
        .collect();
    let message = output.message.map(|mut m| {
        m.role = Role::Agent;
        m
    });
    kinds.push(TaskEventKind::Status(status(TaskState::Completed, message)));
    kinds
}

/// Polls `run` once; its outcome if it ended (returned or panicked). A run still going
/// is then spawned as a task of its own, whose first poll registers the waker that
/// counts (this one wakes nothing).
fn poll_once(run: &mut SkillRun) -> Option<RunOutcome> {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    match std::panic::catch_unwind(AssertUnwindSafe(|| run.as_mut().poll(&mut cx))) {
        Ok(Poll::Ready(result)) => Some(RunOutcome::Returned(result)),
        Ok(Poll::Pending) => None,
        Err(payload) => Some(RunOutcome::Panicked(panic_text(payload))),
    }
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(panic payload is not text)".to_owned()
    }
}

/// Whether the run ended on the store's word that this node may not act on the task.
fn stopped_by_lease(outcome: &RunOutcome) -> bool {
    let RunOutcome::Returned(Err(SkillError::Runtime(error))) = outcome else {
        return false;
    };
    matches!(
        **error,
        RuntimeError::Store(StoreError::CutOff | StoreError::Fenced { .. })
    )
}
