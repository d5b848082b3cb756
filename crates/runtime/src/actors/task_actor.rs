//! `TaskActor`: one per live task. Its state (`task_state`) holds the task's writer
//! (the journal, the one writer of its record), its runs (`skill_run`) and what it does
//! at rest (`rest`); the actor dispatches what arrives (a slot, the skill's calls, a
//! user's follow-up or cancel, a decision, a subscriber, the run's end) and, after each,
//! answers whoever waits for the task at rest, parks it, or stops once it ended.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::park::{ParkTimer, Parked};
use super::phase::Phase;
use super::rest::Rest;
use super::run_task::RunSettings;
use super::skill_run::Runs;
use super::slot_wait::SlotWait;
use super::slots::Slots;
use super::supervisor_msg::{Spawn, SupervisorMsg};
use super::task_msg::{CUT_OFF, StartMode, TaskMsg};
use super::task_state::TaskActorState;
use super::writer::Writer;
use crate::config::RuntimeConfig;
use crate::cpu::CpuPool;
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
            StartMode::Fresh | StartMode::Resume | StartMode::Queued | StartMode::IdleWake => {
                Phase::Queued {
                    message: record
                        .inputs
                        .run_message(task)
                        .cloned()
                        .ok_or("task has no user message")?,
                    resumed: matches!(mode, StartMode::Resume | StartMode::IdleWake),
                }
            }
            StartMode::Wake => Phase::Idle,
        };
        journal.set_span(span.clone());
        let settings = RunSettings {
            skill: args.skill,
            policy: args.policy,
            config: args.config.clone(),
            store: args.store,
            cpu: args.cpu,
        };
        let first_poll_here = waiter.is_some() && mode == StartMode::Fresh;
        let park = ParkTimer::new(args.config.park_after(), args.parked);
        let mut state = TaskActorState {
            writer: Writer::new(journal, span),
            runs: Runs::new(
                settings,
                phase,
                SlotWait::new(args.slots),
                mode == StartMode::Resume,
                first_poll_here,
            ),
            rest: Rest::new(park, waiter, args.resumable, args.supervisor),
        };
        // A task waiting for an approver only waits (a shutdown need not wait for it).
        if crate::approval::awaits_approval(&state.writer.journal.task().status) {
            state.tell_waiting(true);
        }
        match slot {
            // Resumed or dequeued (its first commit says so), or polled first here: the
            // run and its first commit happen on this actor's own task, not in the spawn
            // (the supervisor waits for `pre_start`).
            Some(slot)
                if matches!(mode, StartMode::Resume | StartMode::Queued)
                    || state.runs.first_poll_here =>
            {
                myself.cast(TaskMsg::Start(slot))?;
            }
            // Stored already working: run now.
            Some(slot) => state.runs.on_start(&mut state.writer, &myself, slot).await,
            // Woken while queued with no actor: its place in the queue brings the slot.
            None if mode == StartMode::Queued => {}
            None if matches!(state.runs.phase, Phase::Queued { .. }) => {
                state.runs.want_slot(&state.writer, &myself)
            }
            None => {}
        }
        state.rest.answer_waiters(&state.writer);
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
            state.rest.touch();
        }
        let TaskActorState {
            writer, runs, rest, ..
        } = state;
        match message {
            TaskMsg::Start(slot) => {
                // A slot handed over by the task's place in a queue: the task waits for
                // no other.
                runs.slot.stop();
                runs.on_start(writer, &myself, slot).await;
            }
            TaskMsg::Skill(call, reply, run) => {
                runs.on_skill_call(writer, rest, call, reply, run).await
            }
            TaskMsg::Posted => {
                if let Err(error) = writer.store_posted(runs.phase.is_canceling()).await {
                    writer
                        .fail_after("could not store posted progress", &error)
                        .await;
                }
            }
            TaskMsg::Deliver(message, reply, waiter) => {
                let delivered = state.on_deliver(&myself, message).await;
                if let (Ok(_), Some(waiter)) = (&delivered, waiter) {
                    state.rest.add_waiter(waiter);
                }
                let _ = reply.send(delivered);
            }
            TaskMsg::Cancel(reply) => state.on_cancel(&myself, reply).await,
            TaskMsg::Subscribe(reply) => {
                let _ = reply.send(writer.journal.subscribe());
            }
            TaskMsg::Watch(reply) => {
                let _ = reply.send(writer.journal.watch());
            }
            TaskMsg::SubscriberLeft => writer.journal.prune_subscribers(),
            TaskMsg::RunFinished { run, outcome } => {
                runs.on_run_finished(writer, &myself, run, outcome).await;
            }
            TaskMsg::GraceExpired { run } => runs.on_grace_expired(writer, &myself, run).await,
            TaskMsg::Decide(decision, reply) => state.on_decide(&myself, decision, reply).await,
            TaskMsg::CutOff { stop_within } => state.on_cut_off(&myself, stop_within),
            TaskMsg::CutOffExpired => myself.stop(Some(CUT_OFF.into())),
            TaskMsg::Park { activity } => {
                if state.rest.fired(activity) && state.parkable() && state.park_now(&myself).await {
                    return Ok(());
                }
            }
        }
        if state.writer.journal.is_fenced() {
            // Another node took the task over (this one's lease expired), or this node
            // is cut off: its run stops here (`post_stop`), without another write; the
            // holder carries it on (this node, once it holds the database again).
            tracing::warn!(parent: state.writer.span(), "the task's lease is held by another node now; its run here stops");
            // Its waiters are let go: they read the task where it is now.
            myself.stop(Some("the task is leased to another node".into()));
            return Ok(());
        }
        state.rest.answer_waiters(&state.writer);
        if state.writer.journal.state().is_terminal() {
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
        state.runs.slot.stop();
        state.runs.phase.abandon();
        Ok(())
    }
}
