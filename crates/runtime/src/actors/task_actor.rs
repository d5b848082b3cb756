//! `TaskActor`: one per live task. It owns the task's journal (the one writer of its
//! record, see `journal`) and its run's phase (`phase`); it dispatches what arrives (a
//! slot, the skill's calls, a user's follow-up or cancel, a subscriber, the run's end)
//! and leads the run through its lifecycle (`skill_run`; a follow-up and a cancel:
//! `task_calls`).

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::AbortHandle;

use super::journal::{JournalError, TaskJournal, status_change};
use super::park::{PARKED, ParkTimer, Parked};
use super::phase::Phase;
use super::slots::{Slot, Slots};
use super::supervisor_msg::{Spawn, SupervisorMsg};
use super::task_msg::{CUT_OFF, StartMode, TaskMsg, Waiter};
use crate::config::RuntimeConfig;
use crate::cpu::CpuPool;
use crate::model::{Message, TaskEventKind, TaskState};
use crate::run_link::{PostedNotes, QueuedMessages};
use crate::skill::{MessagePolicy, Skill};
use crate::store::TaskStore;
use crate::telemetry;

pub(crate) struct TaskArgs {
    pub(crate) spawn: Spawn,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) skill: Arc<dyn Skill>,
    pub(crate) policy: MessagePolicy,
    /// Whether the skill's runs resume from their checkpoint (a run waiting for input
    /// may then be stopped, and its task parked).
    pub(crate) resumable: bool,
    /// Raised as the actor parks.
    pub(crate) parked: Parked,
    pub(crate) supervisor: ActorRef<SupervisorMsg>,
    pub(crate) config: Arc<RuntimeConfig>,
    pub(crate) slots: Arc<Slots>,
    pub(crate) cpu: Arc<CpuPool>,
}

pub(crate) struct TaskActor;

pub(crate) struct TaskActorState {
    pub(super) journal: TaskJournal,
    pub(super) phase: Phase,
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) skill: Arc<dyn Skill>,
    /// What a message does while the run works (the skill's card).
    pub(super) policy: MessagePolicy,
    resumable: bool,
    park: ParkTimer,
    supervisor: ActorRef<SupervisorMsg>,
    pub(super) config: Arc<RuntimeConfig>,
    slots: Arc<Slots>,
    pub(super) cpu: Arc<CpuPool>,
    /// Progress notes the run posted, to commit before anything else it asks.
    pub(super) posted: Arc<PostedNotes>,
    /// How many queued messages wait, for the run's contexts.
    pub(super) queued: Arc<QueuedMessages>,
    /// Runs started so far (the current run's id).
    pub(super) runs_started: u64,
    /// Started to run its task again after a restart (its first run says so; a task
    /// woken at rest, after a restart or a park, says nothing).
    restarted: bool,
    /// The next run's first poll is made here (a new task spawned with a waiter).
    pub(super) first_poll_here: bool,
    /// Submitters that tell only the task's outcome, answered once it is at rest.
    waiters: Vec<Waiter>,
    /// A wait for a slot, cast to the actor as `Start` once it has one.
    pub(super) slot_wait: Option<AbortHandle>,
    pub(super) span: tracing::Span,
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
            mut journal,
            mode,
            slot,
            waiter,
        } = args.spawn;
        let record = journal.record();
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
        let phase = match mode {
            StartMode::Fresh | StartMode::Resume | StartMode::Queued => Phase::Queued {
                message: record
                    .inputs
                    .run_message(task)
                    .cloned()
                    .ok_or("task has no user message")?,
                resumed: mode == StartMode::Resume,
            },
            StartMode::Wake => Phase::Idle,
        };
        journal.set_span(span.clone());
        let mut state = TaskActorState {
            journal,
            phase,
            store: args.store,
            skill: args.skill,
            policy: args.policy,
            resumable: args.resumable,
            park: ParkTimer::new(args.config.park_after(), args.parked),
            supervisor: args.supervisor,
            config: args.config,
            slots: args.slots,
            cpu: args.cpu,
            posted: Arc::default(),
            queued: Arc::default(),
            runs_started: 0,
            restarted: mode == StartMode::Resume,
            first_poll_here: waiter.is_some() && mode == StartMode::Fresh,
            waiters: Vec::from_iter(waiter),
            slot_wait: None,
            span,
        };
        // A resumed run finds the messages its task had not taken.
        state.sync_queued();
        // A task waiting for an approver only waits (a shutdown need not wait for it).
        if crate::approval::awaits_approval(&state.journal.task().status) {
            state.tell_waiting(true);
        }
        match slot {
            // Resumed or dequeued (its first commit says so), or polled first here: the
            // run and its first commit happen on this actor's own task, not in the spawn
            // (the supervisor waits for `pre_start`).
            Some(slot)
                if matches!(mode, StartMode::Resume | StartMode::Queued)
                    || state.first_poll_here =>
            {
                myself.cast(TaskMsg::Start(slot))?;
            }
            // Stored already working: run now.
            Some(slot) => state.on_start(&myself, slot).await,
            // Woken while queued with no actor: its place in the queue brings the slot.
            None if mode == StartMode::Queued => {}
            None if matches!(state.phase, Phase::Queued { .. }) => state.want_slot(&myself),
            None => {}
        }
        state.answer_waiters();
        state.arm_park(&myself);
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<TaskMsg>,
        message: TaskMsg,
        state: &mut TaskActorState,
    ) -> Result<(), ActorProcessingErr> {
        if !matches!(message, TaskMsg::Park { .. }) {
            state.park.touch();
        }
        match message {
            TaskMsg::Start(slot) => {
                // A slot handed over by the task's place in a queue: the task waits for
                // no other.
                if let Some(wait) = state.slot_wait.take() {
                    wait.abort();
                }
                state.on_start(&myself, slot).await;
            }
            TaskMsg::Skill(call, reply, run) => state.on_skill_call(call, reply, run).await,
            TaskMsg::Posted => {
                if let Err(error) = state.store_posted().await {
                    state
                        .fail_after("could not store posted progress", &error)
                        .await;
                }
            }
            TaskMsg::Deliver(message, reply, waiter) => {
                let delivered = state.on_deliver(&myself, message).await;
                if let (Ok(_), Some(waiter)) = (&delivered, waiter) {
                    state.waiters.push(waiter);
                }
                let _ = reply.send(delivered);
            }
            TaskMsg::Cancel(reply) => state.on_cancel(&myself, reply).await,
            TaskMsg::Subscribe(reply) => {
                let _ = reply.send(state.journal.subscribe());
            }
            TaskMsg::Watch(reply) => {
                let _ = reply.send(state.journal.watch());
            }
            TaskMsg::SubscriberLeft => state.journal.prune_subscribers(),
            TaskMsg::RunFinished { run, outcome } => {
                state.on_run_finished(&myself, run, outcome).await;
            }
            TaskMsg::GraceExpired { run } => state.on_grace_expired(&myself, run).await,
            TaskMsg::Decide(decision, reply) => state.on_decide(&myself, decision, reply).await,
            TaskMsg::CutOff { stop_within } => state.on_cut_off(&myself, stop_within),
            TaskMsg::CutOffExpired => myself.stop(Some(CUT_OFF.into())),
            TaskMsg::Park { activity } => {
                if state.park.fired(activity) && state.parkable() {
                    state.park_now(&myself);
                    return Ok(());
                }
            }
        }
        if state.journal.is_fenced() {
            // Another node took the task over (this one's lease expired), or this node
            // is cut off: its run stops here (`post_stop`), without another write; the
            // holder carries it on (this node, once it holds the database again).
            tracing::warn!(parent: &state.span, "the task's lease is held by another node now; its run here stops");
            // Its waiters are let go: they read the task where it is now.
            myself.stop(Some("the task is leased to another node".into()));
            return Ok(());
        }
        state.answer_waiters();
        if state.journal.state().is_terminal() {
            state.finish(&myself);
        } else {
            state.arm_park(&myself);
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
        state.phase.abandon();
        Ok(())
    }
}

impl TaskActorState {
    /// Asks for a slot: `Start` comes once the task has one, at once if one is free.
    pub(super) fn want_slot(&mut self, myself: &ActorRef<TaskMsg>) {
        let skill = &self.journal.record().skill;
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

    /// Starts the idle clock of a task that may park.
    fn arm_park(&mut self, myself: &ActorRef<TaskMsg>) {
        if self.parkable() {
            self.park.arm(myself);
        }
    }

    /// Whether the task may give up its actor now: it waits for a person, and nothing
    /// lives here that the store does not hold (no subscriber, no waiter, no note to
    /// store, and no run, or one waiting for input that resumes from its checkpoint).
    fn parkable(&self) -> bool {
        let status = &self.journal.task().status;
        let resting = match &self.phase {
            Phase::Idle => true,
            Phase::AwaitingInput { .. } => self.resumable,
            _ => false,
        };
        resting
            && !status.state.is_terminal()
            && crate::approval::at_rest(status)
            && self.waiters.is_empty()
            && self.slot_wait.is_none()
            && !self.journal.has_subscribers()
            && !self.journal.is_fenced()
            && !self.posted.unsettled()
    }

    /// Parks the task: its run waiting for input stops (the actor woken for the task
    /// resumes it from its checkpoint, with the answer), and the actor stops.
    fn park_now(&mut self, myself: &ActorRef<TaskMsg>) {
        self.park.park();
        tracing::debug!(parent: &self.span, "{PARKED}");
        telemetry::metrics().parked();
        self.phase.abandon();
        myself.stop(Some(PARKED.into()));
    }

    /// Answers the submitters waiting for the task's outcome, if the task is at rest:
    /// with the task as it stands (written; each settles before telling it).
    fn answer_waiters(&mut self) {
        if self.waiters.is_empty() || !crate::approval::at_rest(&self.journal.task().status) {
            return;
        }
        let snapshot = self.journal.snapshot();
        for waiter in self.waiters.drain(..) {
            let _ = waiter.send(snapshot.clone());
        }
    }

    /// Tells the supervisor whether this task only waits for a user (so that a shutdown
    /// does not wait for it).
    pub(super) fn tell_waiting(&self, waiting: bool) {
        let _ = self.supervisor.cast(SupervisorMsg::WaitingForInput {
            task_id: self.journal.task().id.clone(),
            waiting,
        });
    }

    /// Commits the notes the run posted, in one commit, followed by `then` (the run's
    /// ending, say): what the run posted is stored before what it did next. A task not
    /// stored yet is stored by this commit even with nothing to add. A task being
    /// canceled, or ended, drops the notes, as it refuses the run's calls.
    pub(super) async fn apply_posted_then(
        &mut self,
        then: Vec<TaskEventKind>,
    ) -> Result<(), JournalError> {
        self.commit_posted_then(then, false).await
    }

    /// `apply_posted_then` in a commit that starts a new run: it removes the task's
    /// checkpoint (the notes' checkpoints included).
    pub(super) async fn apply_posted_then_new_run(
        &mut self,
        then: Vec<TaskEventKind>,
    ) -> Result<(), JournalError> {
        self.commit_posted_then(then, true).await
    }

    async fn commit_posted_then(
        &mut self,
        then: Vec<TaskEventKind>,
        new_run: bool,
    ) -> Result<(), JournalError> {
        let notes = self.posted.take();
        let taken = notes.len();
        let dropped = self.phase.is_canceling() || self.journal.state().is_terminal();
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
        let result = match kinds.is_empty() {
            true => Ok(()),
            false if new_run => self.journal.append_for_new_run(kinds).await,
            false => self.journal.append(kinds, checkpoint).await,
        };
        self.posted.committed(taken);
        result
    }

    /// Commits the notes the run posted. Only a broken store fails this, and then the
    /// task ends `failed`: a note the run was told is posted is never dropped silently.
    pub(super) async fn store_posted(&mut self) -> Result<(), JournalError> {
        self.apply_posted_then(Vec::new()).await
    }

    pub(super) async fn set_status(
        &mut self,
        state: TaskState,
        text: Option<String>,
    ) -> Result<(), JournalError> {
        self.journal
            .append(vec![status_change(state, text)], None)
            .await
    }

    /// Ends the task `failed` when a change the runtime itself needed could not be made.
    pub(super) async fn fail_after(&mut self, what: &str, error: &JournalError) {
        if self.journal.is_fenced() {
            // Not a failure of the task: this node may not write it (cut off, or another
            // node holds it); the actor stops, and the holder carries the task on.
            tracing::warn!(parent: &self.span, %error, "{what}; this node may not write the task now");
            return;
        }
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
                self.start_queued(myself, slot, message, resumed).await;
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
        myself: &ActorRef<TaskMsg>,
        slot: Slot,
        message: Message,
        resumed: bool,
    ) {
        let state = self.journal.state();
        if state.is_terminal() {
            return;
        }
        let note = (self.restarted && self.runs_started == 0 && state == TaskState::Working)
            .then(|| "resumed after a restart".to_owned());
        // A skill that says when work begins leaves a submitted task submitted.
        let leave_submitted = state == TaskState::Submitted && self.skill.sets_working();
        if (state != TaskState::Working && !leave_submitted) || note.is_some() {
            if let Err(error) = self.set_status(TaskState::Working, note).await {
                return self.fail_after("could not start the task", &error).await;
            }
        }
        self.start_run(myself, slot, message, resumed).await;
    }

    /// Called once the task is terminal: answer whoever waits, free the slot, stop.
    fn finish(&mut self, myself: &ActorRef<TaskMsg>) {
        self.phase.end(self.journal.task());
        // `stop` jumps ahead of queued messages; their callers see the actor gone and
        // fall back to the store, where the terminal state already is.
        myself.stop(None);
    }
}
