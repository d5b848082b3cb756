//! `Supervisor`: the registry of live task actors. It spawns task actors linked to
//! itself (handing each the skills' concurrency slots, see `slots`), and turns a task
//! actor's failure into a persisted `failed` status. A child's failure never stops it
//! (ractor's default supervision handler would).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::watch;

use super::idle::IdleWakes;
use super::journal::TaskJournal;
use super::park::Parked;
use super::slot_queue::SlotQueue;
use super::slots::{Slot, Slots};
use super::supervisor_msg::{LiveCount, Routed, Spawn, SupervisorMsg};
use super::task_actor::{TaskActor, TaskArgs};
use super::task_msg::{StartMode, TaskMsg};
use crate::config::RuntimeConfig;
use crate::cpu::CpuPool;
use crate::error::RuntimeError;
use crate::model::{SkillId, TaskId};
use crate::skill::{MessagePolicy, Skill};
use crate::store::{StoreError, TaskStore};
use crate::wakes::Wakes;

mod elsewhere;
mod idle_wake;
mod unfinished;

pub(crate) struct Supervisor;

pub(crate) struct SupervisorArgs {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) skills: Arc<HashMap<SkillId, Arc<dyn Skill>>>,
    /// What each skill's card says of its tasks' actors.
    pub(crate) terms: Arc<HashMap<SkillId, CardTerms>>,
    pub(crate) config: Arc<RuntimeConfig>,
    pub(crate) live_count: watch::Sender<LiveCount>,
    pub(crate) slots: Arc<Slots>,
    /// Where skills' CPU-heavy work runs.
    pub(crate) cpu: Arc<CpuPool>,
    /// Told when a stored task gets an actor, or is failed without one.
    pub(crate) wakes: Arc<Wakes>,
}

/// What a skill's card says of its tasks' actors.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CardTerms {
    /// What a message does while a task works.
    pub(crate) while_working: MessagePolicy,
    /// Whether a run resumes from its checkpoint (so one waiting for input may stop).
    pub(crate) resumable: bool,
}

/// A task's live actor, and the flag it raises as it parks.
struct LiveActor {
    actor: ActorRef<TaskMsg>,
    parked: Parked,
}

pub(crate) struct SupervisorState {
    args: SupervisorArgs,
    live: HashMap<TaskId, LiveActor>,
    by_actor: HashMap<ActorId, TaskId>,
    waiting_for_input: HashSet<TaskId>,
    /// New tasks waiting for a slot with no actor.
    queue: SlotQueue,
    /// Parked tasks whose runs wait idle, and when each is to be woken.
    idle: IdleWakes,
    /// Wakes of those that failed and are not told yet.
    failed_wakes: idle_wake::FailedWakes,
    shutting_down: bool,
    /// The node is cut off from the database: no task actor starts.
    cut_off: bool,
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        Ok(SupervisorState {
            queue: SlotQueue::new(args.slots.clone()),
            args,
            live: HashMap::new(),
            by_actor: HashMap::new(),
            waiting_for_input: HashSet::new(),
            idle: IdleWakes::default(),
            failed_wakes: Default::default(),
            shutting_down: false,
            cut_off: false,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Spawn { spawn, reply } => {
                let _ = reply.send(state.spawn(&myself, *spawn).await);
            }
            SupervisorMsg::Route {
                task_id,
                to_cancel,
                reply,
            } => {
                let _ = reply.send(state.route(&myself, task_id, to_cancel).await);
            }
            SupervisorMsg::Live {
                task_id,
                wake,
                reply,
            } => {
                let _ = reply.send(state.follow(&myself, task_id, wake).await);
            }
            SupervisorMsg::Awake { task_id, reply } => {
                let _ = reply.send(state.live_actor(&task_id).is_some());
            }
            SupervisorMsg::Queue { task_id, skill } => {
                // Shutting down or cut off: the task stays stored, for the next start
                // or the re-claim after the cut-off.
                if !state.shutting_down && !state.cut_off {
                    state.queue.push(task_id, skill, &myself);
                }
            }
            SupervisorMsg::Resume { task_id, slot } => state.resume(&myself, task_id, slot).await,
            SupervisorMsg::ShuttingDown => {
                state.shutting_down = true;
                state.queue.stop_all();
            }
            SupervisorMsg::CutOff { stop_within } => {
                state.cut_off = true;
                state.queue.stop_all();
                for live in state.live.values() {
                    let _ = live.actor.cast(TaskMsg::CutOff { stop_within });
                }
            }
            SupervisorMsg::Regained => state.cut_off = false,
            SupervisorMsg::WaitingForInput { task_id, waiting } => {
                if waiting && state.live.contains_key(&task_id) {
                    state.waiting_for_input.insert(task_id);
                } else {
                    state.waiting_for_input.remove(&task_id);
                }
                state.publish_live_count();
            }
            SupervisorMsg::WakeAt { task_id, at } => state.wake_at(&myself, task_id, at),
            SupervisorMsg::WakeIdle => state.wake_idle(&myself).await,
            SupervisorMsg::StillIdle(tasks) => state.still_idle(&myself, tasks),
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                state.forget(cell.get_id());
            }
            SupervisionEvent::ActorFailed(cell, error) => {
                if let Some(task_id) = state.forget(cell.get_id()) {
                    let reason = format!("task actor failed: {error}");
                    tracing::error!(%task_id, %reason, "task actor failed");
                    if let Err(e) =
                        TaskJournal::fail_stored(&state.args.store, &task_id, &reason, "runtime")
                            .await
                    {
                        tracing::error!(%task_id, error = %e, "could not record the failure");
                    }
                    state.args.wakes.tell(&task_id);
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<SupervisorMsg>,
        _state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        // Shutdown: the task actors stop too, and their runs with them; what was not
        // finished is left to recovery at the next start.
        myself.stop_children(None);
        Ok(())
    }
}

impl SupervisorState {
    async fn spawn(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        spawn: Spawn,
    ) -> Result<Option<ActorRef<TaskMsg>>, RuntimeError> {
        let record = spawn.journal.record();
        let task_id = record.task.id.clone();
        if let Some(actor) = self.live_actor(&task_id) {
            return Ok(Some(actor));
        }
        let stored = spawn.mode != StartMode::Fresh;
        if self.cut_off {
            return Err(StoreError::CutOff.into());
        }
        let Some(skill) = self.args.skills.get(&record.skill).cloned() else {
            let reason = format!("skill {:?} is not registered", record.skill);
            TaskJournal::fail_stored(&self.args.store, &task_id, &reason, "runtime").await?;
            self.args.wakes.tell(&task_id);
            return Ok(None);
        };
        let terms = self.args.terms.get(&record.skill).copied();
        let terms = terms.unwrap_or_default();
        let parked = Parked::default();
        let args = TaskArgs {
            spawn,
            store: self.args.store.clone(),
            skill,
            policy: terms.while_working,
            resumable: terms.resumable,
            parked: parked.clone(),
            supervisor: myself.clone(),
            config: self.args.config.clone(),
            slots: self.args.slots.clone(),
            cpu: self.args.cpu.clone(),
        };
        match Actor::spawn_linked(None, TaskActor, args, myself.get_cell()).await {
            Ok((actor, _)) => {
                self.by_actor.insert(actor.get_id(), task_id.clone());
                let live = LiveActor {
                    actor: actor.clone(),
                    parked,
                };
                if stored {
                    self.args.wakes.tell(&task_id);
                }
                self.live.insert(task_id, live);
                self.publish_live_count();
                Ok(Some(actor))
            }
            Err(error) => {
                // A failure in pre_start comes back here, not as a supervision event.
                let reason = format!("task actor failed to start: {error}");
                tracing::error!(%task_id, %reason);
                TaskJournal::fail_stored(&self.args.store, &task_id, &reason, "runtime").await?;
                self.args.wakes.tell(&task_id);
                Ok(None)
            }
        }
    }

    async fn route(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        task_id: TaskId,
        to_cancel: bool,
    ) -> Result<Routed, RuntimeError> {
        if self.cut_off {
            return Err(StoreError::CutOff.into());
        }
        if let Some(actor) = self.live_actor(&task_id) {
            return Ok(match self.lost_while_resting(&task_id, &actor).await? {
                true => Routed::Elsewhere,
                false => Routed::Here(Some(actor)),
            });
        }
        let Some(record) = TaskJournal::read_or_set_aside(&self.args.store, &task_id).await? else {
            return Ok(Routed::Here(None));
        };
        if record.state().is_terminal() {
            return Ok(Routed::Here(None));
        }
        if self.held_elsewhere(&task_id).await? {
            return Ok(Routed::Elsewhere);
        }
        let mut spawn = self.stored_unfinished(record, None);
        if to_cancel && spawn.mode == StartMode::IdleWake {
            spawn.mode = StartMode::Wake;
        }
        self.spawn(myself, spawn).await.map(Routed::Here)
    }

    async fn resume(&mut self, myself: &ActorRef<SupervisorMsg>, task_id: TaskId, slot: Slot) {
        if !self.shutting_down && !self.cut_off {
            match self.live_actor(&task_id) {
                // Woken by a call or a subscriber meanwhile: its run starts in this slot
                // (one it asked for itself is given up), or the slot is freed if it
                // needs none any more.
                Some(actor) => {
                    let _ = actor.cast(TaskMsg::Start(slot));
                }
                // Not taken over by another node while it waited for its slot. On an
                // error the task is left stored as it is: the next start recovers it.
                None if matches!(self.held_elsewhere(&task_id).await, Ok(false)) => {
                    self.start_unfinished(myself, &task_id, Some(slot)).await;
                }
                None => {}
            }
        }
        self.queue.remove(&task_id);
    }

    /// The task's live actor; one that parked is forgotten here (its stop may not have
    /// reached this actor yet), so that the caller's task gets a new one.
    fn live_actor(&mut self, task_id: &TaskId) -> Option<ActorRef<TaskMsg>> {
        let live = self.live.get(task_id)?;
        if !live.parked.is_raised() {
            return Some(live.actor.clone());
        }
        // Parked idle, and its `WakeAt` may not have come yet: its start knows.
        if live.parked.while_idle() {
            (self.idle).insert_unless_known(task_id, tokio::time::Instant::now());
        }
        let id = live.actor.get_id();
        self.forget(id);
        None
    }

    /// Drops a stopped actor from the registry and frees what it held (nothing when it
    /// was forgotten already: it parked, and its task may have a new actor).
    fn forget(&mut self, actor: ActorId) -> Option<TaskId> {
        let task_id = self.by_actor.remove(&actor)?;
        self.live.remove(&task_id);
        self.waiting_for_input.remove(&task_id);
        self.publish_live_count();
        Some(task_id)
    }

    fn publish_live_count(&self) {
        let live = self.live.len();
        let busy = live - self.waiting_for_input.len();
        let count = LiveCount { live, busy };
        self.args.live_count.send_if_modified(|current| {
            let changed = *current != count;
            *current = count;
            changed
        });
    }
}
