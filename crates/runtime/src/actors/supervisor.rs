//! `Supervisor`: the registry of live task actors. It spawns task actors linked to
//! itself (handing each the skills' concurrency slots, see `slots`), and turns a task
//! actor's failure into a persisted `failed` status. A child's failure never stops it
//! (ractor's default supervision handler would).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::watch;

use super::journal::TaskJournal;
use super::slots::{Slot, Slots};
use super::supervisor_msg::{LiveCount, Routed, Spawn, SupervisorMsg};
use super::task_actor::{TaskActor, TaskArgs};
use super::task_msg::{StartMode, TaskMsg};
use crate::approval::{at_rest, awaits_approval};
use crate::config::RuntimeConfig;
use crate::cpu::CpuPool;
use crate::error::RuntimeError;
use crate::model::{SkillId, TaskId};
use crate::skill::{MessagePolicy, Skill};
use crate::store::{Holder, StoreError, TaskRecord, TaskStore};

pub(crate) struct Supervisor;

pub(crate) struct SupervisorArgs {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) skills: Arc<HashMap<SkillId, Arc<dyn Skill>>>,
    /// What each skill does with a message while a task works (from its card).
    pub(crate) policies: Arc<HashMap<SkillId, MessagePolicy>>,
    pub(crate) config: Arc<RuntimeConfig>,
    pub(crate) live_count: watch::Sender<LiveCount>,
    pub(crate) slots: Arc<Slots>,
    /// Where skills' CPU-heavy work runs.
    pub(crate) cpu: Arc<CpuPool>,
}

pub(crate) struct SupervisorState {
    args: SupervisorArgs,
    live: HashMap<TaskId, ActorRef<TaskMsg>>,
    by_actor: HashMap<ActorId, TaskId>,
    waiting_for_input: HashSet<TaskId>,
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
            args,
            live: HashMap::new(),
            by_actor: HashMap::new(),
            waiting_for_input: HashSet::new(),
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
            SupervisorMsg::Route { task_id, reply } => {
                let _ = reply.send(state.route(&myself, task_id).await);
            }
            SupervisorMsg::Live { task_id, reply } => {
                let _ = reply.send(state.follow(&myself, task_id).await);
            }
            SupervisorMsg::Resume { task_id, slot } => state.resume(&myself, task_id, slot).await,
            SupervisorMsg::ShuttingDown => state.shutting_down = true,
            SupervisorMsg::CutOff { stop_within } => {
                state.cut_off = true;
                for actor in state.live.values() {
                    let _ = actor.cast(TaskMsg::CutOff { stop_within });
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
        if let Some(actor) = self.live.get(&task_id) {
            return Ok(Some(actor.clone()));
        }
        if self.cut_off {
            return Err(StoreError::CutOff.into());
        }
        let Some(skill) = self.args.skills.get(&record.skill).cloned() else {
            let reason = format!("skill {:?} is not registered", record.skill);
            TaskJournal::fail_stored(&self.args.store, &task_id, &reason, "runtime").await?;
            return Ok(None);
        };
        let policy = self.args.policies.get(&record.skill).copied();
        let args = TaskArgs {
            spawn,
            store: self.args.store.clone(),
            skill,
            policy: policy.unwrap_or_default(),
            supervisor: myself.clone(),
            config: self.args.config.clone(),
            slots: self.args.slots.clone(),
            cpu: self.args.cpu.clone(),
        };
        match Actor::spawn_linked(None, TaskActor, args, myself.get_cell()).await {
            Ok((actor, _)) => {
                self.by_actor.insert(actor.get_id(), task_id.clone());
                self.live.insert(task_id, actor.clone());
                self.publish_live_count();
                Ok(Some(actor))
            }
            Err(error) => {
                // A failure in pre_start comes back here, not as a supervision event.
                let reason = format!("task actor failed to start: {error}");
                tracing::error!(%task_id, %reason);
                TaskJournal::fail_stored(&self.args.store, &task_id, &reason, "runtime").await?;
                Ok(None)
            }
        }
    }

    async fn route(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        task_id: TaskId,
    ) -> Result<Routed, RuntimeError> {
        if self.cut_off {
            return Err(StoreError::CutOff.into());
        }
        if let Some(actor) = self.live.get(&task_id) {
            return Ok(match self.lost_while_resting(&task_id, actor).await? {
                true => Routed::Elsewhere,
                false => Routed::Here(Some(actor.clone())),
            });
        }
        let Some(record) = self.args.store.get(&task_id).await? else {
            return Ok(Routed::Here(None));
        };
        if record.state().is_terminal() {
            return Ok(Routed::Here(None));
        }
        if self.held_elsewhere(&task_id).await? {
            return Ok(Routed::Elsewhere);
        }
        // Not terminal (above): at rest is waiting for someone, woken without a run.
        let mode = if at_rest(&record.task.status) {
            StartMode::Wake
        } else {
            StartMode::Resume
        };
        let spawn = self.stored(record, mode, None);
        self.spawn(myself, spawn).await.map(Routed::Here)
    }

    /// Whether the task's actor here rests (waits for a user) on a lease another node
    /// has taken over; such an actor is stopped. A resting task writes nothing, so its
    /// actor cannot learn of the takeover itself; stopping it runs and writes nothing.
    async fn lost_while_resting(
        &self,
        task_id: &TaskId,
        actor: &ActorRef<TaskMsg>,
    ) -> Result<bool, RuntimeError> {
        if !self.waiting_for_input.contains(task_id) || !self.held_elsewhere(task_id).await? {
            return Ok(false);
        }
        actor.stop(Some("its task is held by another node now".into()));
        Ok(true)
    }

    /// Whether another node holds the task's lease (a store several nodes share), so
    /// that no actor may start for it here.
    async fn held_elsewhere(&self, task_id: &TaskId) -> Result<bool, RuntimeError> {
        let Some(cluster) = self.args.store.cluster() else {
            return Ok(false);
        };
        Ok(cluster.holder(task_id).await? != Holder::Here)
    }

    /// The live actor of a task; one started for a submitted or working task that has
    /// none (see `SupervisorMsg::Live`).
    async fn follow(&mut self, myself: &ActorRef<SupervisorMsg>, task_id: TaskId) -> Routed {
        if let Some(actor) = self.live.get(&task_id) {
            return match self.lost_while_resting(&task_id, actor).await {
                Ok(true) => Routed::Elsewhere,
                Ok(false) | Err(_) => Routed::Here(Some(actor.clone())),
            };
        }
        if self.shutting_down || self.cut_off {
            return Routed::Here(None);
        }
        match self.held_elsewhere(&task_id).await {
            Ok(true) => return Routed::Elsewhere,
            Ok(false) => {}
            // The subscriber reads the store instead, and learns of the error there.
            Err(_) => return Routed::Here(None),
        }
        Routed::Here(self.start_unfinished(myself, &task_id, None).await)
    }

    async fn resume(&mut self, myself: &ActorRef<SupervisorMsg>, task_id: TaskId, slot: Slot) {
        if self.shutting_down || self.cut_off || self.live.contains_key(&task_id) {
            return;
        }
        // Taken over by another node while it waited for its slot.
        if !matches!(self.held_elsewhere(&task_id).await, Ok(false)) {
            return;
        }
        // On an error the task is left stored as it is: the next start recovers it.
        self.start_unfinished(myself, &task_id, Some(slot)).await;
    }

    /// Starts the actor of a stored task that is submitted or working and has none, to
    /// run it again (with `slot`, at once; without, once it has one). `None` for a task
    /// in any other state, or unknown, or when the store fails (logged).
    async fn start_unfinished(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        task_id: &TaskId,
        slot: Option<Slot>,
    ) -> Option<ActorRef<TaskMsg>> {
        let started = match self.args.store.get(task_id).await {
            // Waiting for an approver: followed, never run (a slot, if any, is freed).
            Ok(Some(record)) if awaits_approval(&record.task.status) => {
                let spawn = self.stored(record, StartMode::Wake, None);
                self.spawn(myself, spawn).await
            }
            Ok(Some(record))
                if !record.state().is_terminal() && !record.state().is_interrupted() =>
            {
                let spawn = self.stored(record, StartMode::Resume, slot);
                self.spawn(myself, spawn).await
            }
            Ok(_) => return None,
            Err(error) => Err(error.into()),
        };
        started.unwrap_or_else(|error| {
            tracing::error!(%task_id, %error, "could not start an unfinished task");
            None
        })
    }

    /// What the actor of a stored task starts with.
    fn stored(&self, record: TaskRecord, mode: StartMode, slot: Option<Slot>) -> Spawn {
        let buffer = self.args.config.subscriber_buffer;
        let journal = TaskJournal::stored(self.args.store.clone(), record, buffer);
        Spawn {
            journal,
            mode,
            slot,
            waiter: None,
        }
    }

    /// Drops a stopped actor from the registry and frees what it held.
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
