//! `TaskActor`: one per live task. It owns the task's state; every change goes through
//! `transition` (applied in place to a copy of the task), is committed to the store, and
//! only then is published and acknowledged.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use chrono::Utc;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::fanout::{Fanout, LiveEvents};
use super::posted::PostedNotes;
use super::slots::{Slot, Slots};
use super::supervisor::{Spawn, SupervisorMsg};
use crate::config::RuntimeConfig;
use crate::context::{Cpu, SkillContext};
use crate::cpu::CpuPool;
use crate::error::RuntimeError;
use crate::model::limits::{self, InvalidField};
use crate::model::{
    Artifact, Message, Part, Role, Task, TaskEvent, TaskEventKind, TaskState, TaskStatus,
};
use crate::requests::TaskSnapshot;
use crate::skill::{Skill, SkillError, SkillInput, SkillOutput};
use crate::store::{StoreError, TaskRecord, TaskStore};
use crate::telemetry;
use crate::transition::{TransitionError, apply};

/// What a running skill asks of its task.
pub(crate) enum SkillCall {
    Status {
        message: Message,
        /// Saved in the same commit as the status (so a resumed run neither repeats nor
        /// skips the step it reports).
        checkpoint: Option<Value>,
    },
    Artifact {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    },
    RequestInput {
        prompt: Message,
    },
    Checkpoint(Value),
    /// Nothing more than every call does first: commit the notes posted before it.
    StorePosted,
}

/// How a skill run ended.
pub(crate) enum RunOutcome {
    Returned(Result<SkillOutput, SkillError>),
    Panicked(String),
    Aborted,
}

/// Reply to a skill call: `Some(message)` answers `RequestInput`.
pub(crate) type SkillReply = Result<Option<Message>, SkillError>;

pub(crate) enum TaskMsg {
    /// The task got a concurrency slot: start the pending run (or hand the waiting run
    /// its answer).
    Start(Slot),
    Skill(SkillCall, RpcReplyPort<SkillReply>),
    /// The run posted a note to an empty queue (`PostedNotes`): commit what waits.
    Posted,
    /// A user's follow-up message.
    Deliver(Message, RpcReplyPort<Result<TaskSnapshot, RuntimeError>>),
    Cancel(RpcReplyPort<Result<Task, RuntimeError>>),
    Subscribe(RpcReplyPort<LiveEvents>),
    /// A subscriber dropped its receiver: let go of its queue.
    SubscriberLeft,
    RunFinished {
        run: u64,
        outcome: RunOutcome,
    },
    GraceExpired {
        run: u64,
    },
}

/// Why the actor was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartMode {
    /// A new task: run it once a slot is free.
    Fresh,
    /// A task a restart interrupted while submitted or working: run it again.
    Resume,
    /// An interrupted task woken by a message or a cancel after a restart: no run yet.
    Wake,
}

pub(crate) struct TaskArgs {
    pub(crate) spawn: Spawn,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) skill: Arc<dyn Skill>,
    pub(crate) supervisor: ActorRef<SupervisorMsg>,
    pub(crate) config: Arc<RuntimeConfig>,
    pub(crate) slots: Arc<Slots>,
    pub(crate) cpu: Arc<CpuPool>,
}

pub(crate) struct TaskActor;

struct Run {
    id: u64,
    abort: AbortHandle,
    cancel: CancellationToken,
}

pub(crate) struct TaskActorState {
    record: TaskRecord,
    store: Arc<dyn TaskStore>,
    skill: Arc<dyn Skill>,
    supervisor: ActorRef<SupervisorMsg>,
    config: Arc<RuntimeConfig>,
    slots: Arc<Slots>,
    cpu: Arc<CpuPool>,
    /// Live events for subscribers.
    events: Fanout,
    /// Progress notes the run posted, to commit before anything else it asks.
    posted: Arc<PostedNotes>,
    run: Option<Run>,
    runs_started: u64,
    /// The run to start when a slot is granted: its input message and whether it resumes.
    pending: Option<(Message, bool)>,
    /// A new task's first events (created, working), not stored yet: its first commit
    /// carries them, with what its skill did in its first poll (see `start_run`).
    unwritten: Vec<TaskEvent>,
    /// The user's answer to hand to the waiting run once a slot is granted again (a run
    /// waiting for input gives its slot back).
    answer: Option<Message>,
    /// The concurrency slot this task holds (while its run goes on).
    slot: Option<Slot>,
    /// A wait for a slot, cast to the actor as `Start` once it has one.
    slot_wait: Option<AbortHandle>,
    canceling: bool,
    input_waiter: Option<RpcReplyPort<SkillReply>>,
    cancel_waiters: Vec<RpcReplyPort<Result<Task, RuntimeError>>>,
    span: tracing::Span,
}

/// A change that could not be applied.
#[derive(Debug, thiserror::Error)]
enum ApplyError {
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Over a limit of what a task can hold (see `model::limits`): nothing was written.
    #[error("refused: {0}")]
    Refused(#[from] InvalidField),
}

impl Actor for TaskActor {
    type Msg = TaskMsg;
    type State = TaskActorState;
    type Arguments = TaskArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<TaskMsg>,
        args: TaskArgs,
    ) -> Result<TaskActorState, ActorProcessingErr> {
        let Spawn {
            record,
            mode,
            follower,
            slot,
            unpublished,
            unwritten,
        } = args.spawn;
        let task = &record.task;
        let span = crate::context_span!(
            record.trace.is_some(),
            "task",
            task_id = %task.id,
            context_id = %task.context_id,
            skill = %record.skill,
        );
        // The task's spans join the trace of the request that created it, in this
        // process or, after a restart, in the next.
        telemetry::set_parent(&span, record.trace.as_deref());
        let pending = match mode {
            StartMode::Fresh | StartMode::Resume => {
                let message = last_user_message(task).ok_or("task has no user message")?;
                Some((message, mode == StartMode::Resume))
            }
            StartMode::Wake => None,
        };
        let mut events = Fanout::new(args.config.subscriber_buffer);
        if let Some(follower) = follower {
            events.adopt(follower);
        }
        let mut state = TaskActorState {
            record,
            store: args.store,
            skill: args.skill,
            supervisor: args.supervisor,
            config: args.config,
            slots: args.slots,
            cpu: args.cpu,
            events,
            posted: Arc::default(),
            run: None,
            runs_started: 0,
            pending,
            unwritten,
            answer: None,
            slot: None,
            slot_wait: None,
            canceling: false,
            input_waiter: None,
            cancel_waiters: Vec::new(),
            span,
        };
        for event in unpublished {
            state.events.publish(event);
        }
        match slot {
            // Not stored yet, or resumed (its first commit says so): the run and that
            // commit happen on this actor's own task, not in the spawn (the supervisor
            // waits for `pre_start`).
            Some(slot) if !state.unwritten.is_empty() || mode == StartMode::Resume => {
                myself.cast(TaskMsg::Start(slot))?;
            }
            // Stored already working: run now.
            Some(slot) => state.on_start(&myself, slot).await,
            None if state.pending.is_some() => state.want_slot(&myself),
            None => {}
        }
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<TaskMsg>,
        message: TaskMsg,
        state: &mut TaskActorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            TaskMsg::Start(slot) => {
                state.slot_wait = None;
                state.on_start(&myself, slot).await;
            }
            TaskMsg::Skill(call, reply) => state.on_skill_call(call, reply).await,
            TaskMsg::Posted => {
                if let Err(error) = state.store_posted().await {
                    state
                        .fail_after("could not store posted progress", error)
                        .await;
                }
            }
            TaskMsg::Deliver(message, reply) => state.on_deliver(&myself, message, reply).await,
            TaskMsg::Cancel(reply) => state.on_cancel(&myself, reply).await,
            TaskMsg::Subscribe(reply) => {
                let _ = reply.send(state.events.subscribe());
            }
            TaskMsg::SubscriberLeft => state.events.prune(),
            TaskMsg::RunFinished { run, outcome } => state.on_run_finished(run, outcome).await,
            TaskMsg::GraceExpired { run } => state.on_grace_expired(run).await,
        }
        if state.record.state().is_terminal() {
            state.finish(&myself);
        } else if !state.unwritten.is_empty() && state.runs_started > 0 {
            // A new task whose first commit the store refused (the error is logged):
            // nobody outside knows it and nothing of it is stored, so it ends here; its
            // blocking caller learns that it could not be stored.
            myself.stop(Some("the new task could not be stored".into()));
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<TaskMsg>,
        state: &mut TaskActorState,
    ) -> Result<(), ActorProcessingErr> {
        // Stopped by shutdown (or after the terminal state): no run may outlive its actor,
        // nor a wait for a slot.
        if let Some(wait) = state.slot_wait.take() {
            wait.abort();
        }
        if let Some(run) = state.run.take() {
            run.cancel.cancel();
            run.abort.abort();
        }
        Ok(())
    }
}

impl TaskActorState {
    /// Asks for a slot: `Start` comes once the task has one, at once if one is free.
    fn want_slot(&mut self, myself: &ActorRef<TaskMsg>) {
        let skill = &self.record.skill;
        if let Some(slot) = self.slots.try_take(skill) {
            let _ = myself.cast(TaskMsg::Start(slot));
            return;
        }
        let (slots, skill, me) = (self.slots.clone(), skill.clone(), myself.clone());
        let wait = tokio::spawn(async move {
            if let Some(slot) = slots.take(&skill).await {
                // Gone meanwhile: the slot is dropped with the message, and freed.
                let _ = me.cast(TaskMsg::Start(slot));
            }
        });
        if let Some(stale) = self.slot_wait.replace(wait.abort_handle()) {
            stale.abort();
        }
    }

    /// Tells the supervisor whether this task only waits for a user (so that a shutdown
    /// does not wait for it).
    fn tell_waiting(&self, waiting: bool) {
        let _ = self.supervisor.cast(SupervisorMsg::WaitingForInput {
            task_id: self.record.task.id.clone(),
            waiting,
        });
    }

    fn release_slot(&mut self) {
        self.slot = None;
    }

    /// Applies one change: transition, commit (version-checked), then publish.
    async fn apply(&mut self, kind: TaskEventKind) -> Result<(), ApplyError> {
        self.apply_all(vec![kind], None).await
    }

    /// Like `apply`, also saving a new checkpoint in the same commit.
    async fn apply_with(
        &mut self,
        kind: TaskEventKind,
        checkpoint: Option<Value>,
    ) -> Result<(), ApplyError> {
        self.apply_all(vec![kind], checkpoint).await
    }

    /// Applies several changes in order as one commit (one flush), then publishes each.
    async fn apply_all(
        &mut self,
        kinds: Vec<TaskEventKind>,
        checkpoint: Option<Value>,
    ) -> Result<(), ApplyError> {
        // The changes go to a copy (one per commit, whatever the number of events): the
        // record stays as it was if a change is refused or the store fails.
        let mut task = self.record.task.clone();
        let mut last_seq = self.record.last_seq;
        let mut events = Vec::with_capacity(kinds.len());
        if let Some(value) = &checkpoint {
            limits::check_depth(|| "checkpoint".into(), value)?;
        }
        for kind in kinds {
            limits::check_event(&kind)?;
            apply(&mut task, &kind)?;
            last_seq += 1;
            events.push(TaskEvent {
                seq: last_seq,
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                kind,
            });
        }
        // A task not stored yet is stored now, as it stands (its version 1), with these
        // changes; its first events wait for the next commit if this one fails.
        let held = self.unwritten.len();
        let stored = held == 0;
        if !stored {
            let mut first = std::mem::take(&mut self.unwritten);
            first.append(&mut events);
            events = first;
        }
        let current = &self.record;
        let (expected_version, version) = match stored {
            true => (current.version, current.version + 1),
            false => (0, current.version),
        };
        let next = TaskRecord {
            task,
            version,
            last_seq,
            skill: current.skill.clone(),
            owner: current.owner.clone(),
            checkpoint: checkpoint.or_else(|| current.checkpoint.clone()),
            trace: current.trace.clone(),
        };
        let written = telemetry::write(
            &*self.store,
            &next,
            expected_version,
            &events,
            Some(&self.span),
        )
        .await;
        if let Err(error) = written {
            events.truncate(held);
            self.unwritten = events;
            return Err(error.into());
        }
        let from = self.record.state();
        self.record = next;
        telemetry::metrics().state_changed(
            &self.record.skill,
            &self.record.task.id,
            Some(from),
            self.record.state(),
        );
        // Nobody listening is fine: subscribers read the store first. (The created
        // event, when this commit stored the task, is below every follower's start.)
        for event in events {
            self.events.publish(event);
        }
        Ok(())
    }

    /// Commits the notes the run posted, in one commit, followed by `then` (the run's
    /// ending, say): what the run posted is stored before what it did next. A task not
    /// stored yet is stored by this commit even with nothing to add. A task being
    /// canceled, or ended, drops the notes, as it refuses the run's calls.
    async fn apply_posted_then(&mut self, then: Vec<TaskEventKind>) -> Result<(), ApplyError> {
        let notes = self.posted.take();
        let taken = notes.len();
        let dropped = self.canceling || self.record.state().is_terminal();
        let mut checkpoint = None;
        let mut kinds: Vec<TaskEventKind> = notes
            .into_iter()
            .filter(|_| !dropped)
            .map(|note| {
                checkpoint = note.checkpoint.or(checkpoint.take());
                TaskEventKind::Status(note.status)
            })
            .collect();
        kinds.extend(then);
        let result = match kinds.is_empty() && self.unwritten.is_empty() {
            true => Ok(()),
            false => self.apply_all(kinds, checkpoint).await,
        };
        self.posted.committed(taken);
        result
    }

    /// Commits the notes the run posted. Only a broken store fails this, and then the
    /// task ends `failed`: a note the run was told is posted is never dropped silently.
    async fn store_posted(&mut self) -> Result<(), ApplyError> {
        self.apply_posted_then(Vec::new()).await
    }

    async fn set_status(
        &mut self,
        state: TaskState,
        text: Option<String>,
    ) -> Result<(), ApplyError> {
        self.apply(status_change(state, text)).await
    }

    /// Ends the task `failed` when a change the runtime itself needed could not be made.
    async fn fail_after(&mut self, what: &str, error: ApplyError) {
        tracing::error!(parent: &self.span, %error, "{what}");
        telemetry::metrics().failure("runtime");
        if let Err(error) = self
            .set_status(TaskState::Failed, Some(format!("{what}: {error}")))
            .await
        {
            tracing::error!(parent: &self.span, %error, "could not record the failure");
        }
    }

    async fn on_start(&mut self, myself: &ActorRef<TaskMsg>, slot: Slot) {
        self.slot = Some(slot);
        if let Some(answer) = self.answer.take() {
            // The run asked for input and has it now: it goes on, in this slot.
            match self.input_waiter.take() {
                Some(waiter) => {
                    let _ = waiter.send(Ok(Some(answer)));
                }
                None => self.release_slot(),
            }
            return;
        }
        let Some((message, resumed)) = self.pending.take() else {
            self.release_slot();
            return;
        };
        if self.record.state().is_terminal() {
            return;
        }
        // A fresh task goes to working here; a follow-up already put it there. A run
        // started again after a restart says so, so that watchers know why.
        let note = (resumed && self.runs_started == 0 && self.record.state() == TaskState::Working)
            .then(|| "resumed after a restart".to_owned());
        if self.record.state() != TaskState::Working || note.is_some() {
            if let Err(error) = self.set_status(TaskState::Working, note).await {
                return self.fail_after("could not start the task", error).await;
            }
        }
        self.start_run(myself, message, resumed).await;
    }

    /// Starts the skill's run as a child task. A task not stored yet first polls its run
    /// once, here: a skill that finishes at once (or fails, or panics) is stored with its
    /// outcome in one commit, with no run task; otherwise the task is stored as it stands
    /// and the run goes on as a child.
    async fn start_run(&mut self, myself: &ActorRef<TaskMsg>, message: Message, resumed: bool) {
        self.runs_started += 1;
        let run_id = self.runs_started;
        let cancel = CancellationToken::new();
        let span = tracing::info_span!(parent: &self.span, "skill_run", run = run_id, resumed);
        let task = &self.record.task;
        let ctx = SkillContext::new(
            myself.clone(),
            self.store.clone(),
            task,
            cancel.clone(),
            self.record.checkpoint.clone(),
            self.posted.clone(),
            span.clone(),
            &self.record.skill,
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
            checkpoint: self.record.checkpoint.clone(),
            resumed,
        };
        let skill = self.skill.clone();
        let run = async move { skill.run(input, ctx).await }.instrument(span);
        // The run is a child this actor supervises: its own tokio task, watched by a
        // monitor that turns its end (return, panic or abort) into a message back here.
        let run = match self.unwritten.is_empty() {
            // Spawned as it is: boxed, a waiting run costs about 1 KiB more.
            true => tokio::spawn(run),
            // Boxed, so that every actor's future stays the size it was (an actor's task
            // holds room for its largest state, waiting or not).
            false => match Box::pin(self.first_step(Box::pin(run))).await {
                Some(run) => tokio::spawn(run),
                None => {
                    cancel.cancel();
                    return;
                }
            },
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
        self.run = Some(Run {
            id: run_id,
            abort,
            cancel,
        });
    }

    /// A task not stored yet: polls its run once, and stores the task with what that
    /// poll did. The run, if it goes on (stored working); `None` if it ended (stored
    /// with its outcome) or the task could not be stored.
    async fn first_step(&mut self, mut run: SkillRun) -> Option<SkillRun> {
        if let Some(outcome) = poll_once(&mut run) {
            self.end_run(outcome).await;
            return None;
        }
        // What the run posted in that poll is stored with the task.
        if let Err(error) = self.apply_posted_then(Vec::new()).await {
            self.fail_after("could not store the task", error).await;
            return None;
        }
        Some(run)
    }

    async fn on_skill_call(&mut self, call: SkillCall, reply: RpcReplyPort<SkillReply>) {
        if self.canceling || self.record.state().is_terminal() {
            let _ = reply.send(Err(SkillError::Canceled));
            return;
        }
        // Notes the run posted before this call are stored before it.
        if let Err(error) = self.store_posted().await {
            let text = format!("could not store posted progress: {error}");
            self.fail_after("could not store posted progress", error)
                .await;
            let _ = reply.send(Err(SkillError::Runtime(text)));
            return;
        }
        let result = match call {
            SkillCall::Status {
                message,
                checkpoint,
            } => {
                self.apply_with(
                    TaskEventKind::Status(status(TaskState::Working, Some(message))),
                    checkpoint,
                )
                .await
            }
            SkillCall::Artifact {
                artifact,
                append,
                last_chunk,
            } => {
                self.apply(TaskEventKind::Artifact {
                    artifact,
                    append,
                    last_chunk,
                })
                .await
            }
            SkillCall::Checkpoint(value) => self.save_checkpoint(value).await,
            SkillCall::StorePosted => Ok(()),
            SkillCall::RequestInput { prompt } => {
                let asked = self
                    .apply(TaskEventKind::Status(status(
                        TaskState::InputRequired,
                        Some(prompt),
                    )))
                    .await;
                if asked.is_ok() {
                    // Answered when the user's message arrives (on_deliver) and a slot is
                    // free again: waiting for a person holds no slot, so tasks waiting for
                    // input never starve the skill's other tasks.
                    self.input_waiter = Some(reply);
                    self.tell_waiting(true);
                    self.release_slot();
                    return;
                }
                asked
            }
        };
        let _ = reply.send(
            result
                .map(|()| None)
                .map_err(|e| SkillError::Runtime(e.to_string())),
        );
    }

    async fn save_checkpoint(&mut self, value: Value) -> Result<(), ApplyError> {
        limits::check_depth(|| "checkpoint".into(), &value)?;
        let mut next = self.record.clone();
        next.checkpoint = Some(value);
        next.version += 1;
        telemetry::write(
            &*self.store,
            &next,
            self.record.version,
            &[],
            Some(&self.span),
        )
        .await?;
        self.record = next;
        Ok(())
    }

    async fn on_deliver(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        message: Message,
        reply: RpcReplyPort<Result<TaskSnapshot, RuntimeError>>,
    ) {
        let state = self.record.state();
        let id = self.record.task.id.clone();
        let refused = if state.is_terminal() {
            Some(RuntimeError::TaskTerminal { id, state })
        } else if !state.is_interrupted() || self.canceling {
            Some(RuntimeError::NotAcceptingInput { id, state })
        } else {
            None
        };
        if let Some(error) = refused {
            let _ = reply.send(Err(error));
            return;
        }
        let accepted = match self.apply(TaskEventKind::Message(message.clone())).await {
            Ok(()) => self.set_status(TaskState::Working, None).await,
            Err(e) => Err(e),
        };
        if let Err(error) = accepted {
            let _ = reply.send(Err(apply_to_runtime(error)));
            return;
        }
        match &self.input_waiter {
            Some(_) => {
                // The waiting run gets the answer once its skill has a free slot.
                self.tell_waiting(false);
                self.answer = Some(message);
                self.want_slot(myself);
            }
            None => {
                // Woken after a restart: the skill runs again, resuming with this message.
                self.pending = Some((message, true));
                self.want_slot(myself);
            }
        }
        let _ = reply.send(Ok(TaskSnapshot {
            task: self.record.task.clone(),
            seq: self.record.last_seq,
        }));
    }

    async fn on_cancel(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        reply: RpcReplyPort<Result<Task, RuntimeError>>,
    ) {
        let state = self.record.state();
        if state.is_terminal() {
            let id = self.record.task.id.clone();
            let _ = reply.send(Err(RuntimeError::NotCancelable { id, state }));
            return;
        }
        // An answer queued for a slot is void now.
        self.answer = None;
        let Some(run) = &self.run else {
            // Nothing running (waiting for a slot, or for input after a restart).
            self.pending = None;
            let result = self
                .set_status(TaskState::Canceled, Some("canceled by request".into()))
                .await
                .map(|()| self.record.task.clone())
                .map_err(apply_to_runtime);
            let _ = reply.send(result);
            return;
        };
        self.cancel_waiters.push(reply);
        if !self.canceling {
            self.canceling = true;
            run.cancel.cancel();
            let run_id = run.id;
            if let Some(waiter) = self.input_waiter.take() {
                let _ = waiter.send(Err(SkillError::Canceled));
            }
            myself.send_after(self.config.cancel_grace(), move || TaskMsg::GraceExpired {
                run: run_id,
            });
        }
    }

    async fn on_run_finished(&mut self, run: u64, outcome: RunOutcome) {
        if self.run.as_ref().is_none_or(|r| r.id != run) {
            return;
        }
        self.run = None;
        self.end_run(outcome).await;
    }

    /// Records how the run ended.
    async fn end_run(&mut self, outcome: RunOutcome) {
        self.release_slot();
        if self.canceling {
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
        // One commit: what the run posted last, then how it ended.
        if let Err(error) = self.apply_posted_then(ending).await {
            self.fail_after("could not record the skill's result", error)
                .await;
        }
    }

    async fn on_grace_expired(&mut self, run: u64) {
        let Some(current) = self.run.take_if(|r| r.id == run) else {
            return;
        };
        current.abort.abort();
        self.release_slot();
        self.end_canceled(
            "canceled by request; the skill did not stop within the grace period and was aborted",
        )
        .await;
    }

    async fn end_canceled(&mut self, text: &str) {
        if let Err(error) = self
            .set_status(TaskState::Canceled, Some(text.into()))
            .await
        {
            self.fail_after("could not record the cancel", error).await;
        }
    }

    /// Called once the task is terminal: answer whoever waits, free the slot, stop.
    fn finish(&mut self, myself: &ActorRef<TaskMsg>) {
        if let Some(run) = self.run.take() {
            run.cancel.cancel();
            run.abort.abort();
        }
        self.release_slot();
        for waiter in self.cancel_waiters.drain(..) {
            let _ = waiter.send(Ok(self.record.task.clone()));
        }
        if let Some(waiter) = self.input_waiter.take() {
            let _ = waiter.send(Err(SkillError::Canceled));
        }
        // `stop` jumps ahead of queued messages; their callers see the actor gone and
        // fall back to the store, where the terminal state already is.
        myself.stop(None);
    }
}

fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus {
        state,
        message,
        timestamp: Utc::now(),
    }
}

/// A status change the runtime makes, with its note, if any.
fn status_change(state: TaskState, text: Option<String>) -> TaskEventKind {
    let message = text.map(|t| Message::agent(vec![Part::text(t)]));
    TaskEventKind::Status(status(state, message))
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

fn last_user_message(task: &Task) -> Option<Message> {
    task.history
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .cloned()
}

fn apply_to_runtime(error: ApplyError) -> RuntimeError {
    match error {
        ApplyError::Store(e) => RuntimeError::Store(e),
        ApplyError::Transition(e) => RuntimeError::Unavailable(e.to_string()),
        ApplyError::Refused(e) => RuntimeError::InvalidField(e),
    }
}

/// A skill's run, as its actor drives it.
type SkillRun = Pin<Box<dyn Future<Output = Result<SkillOutput, SkillError>> + Send>>;

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
