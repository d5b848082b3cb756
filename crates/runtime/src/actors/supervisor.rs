//! `Supervisor`: the registry of live task actors and the per-skill concurrency slots.
//! It spawns task actors linked to itself, and turns a task actor's failure into a
//! persisted `failed` status. A child's failure never stops it (ractor's default
//! supervision handler would).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::watch;

use super::fail::fail_stored_task;
use super::fanout::Follower;
use super::task_actor::{StartMode, TaskActor, TaskArgs, TaskMsg};
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::model::TaskId;
use crate::skill::Skill;
use crate::store::{TaskRecord, TaskStore};

pub(crate) enum SupervisorMsg {
    /// Start an actor for a stored task; `follower` subscribes to its events from the
    /// start. Answers with the task's actor (one already live, if any; `None` when
    /// none could start, and the task was failed).
    Spawn {
        record: Box<TaskRecord>,
        mode: StartMode,
        follower: Option<Follower>,
        reply: RpcReplyPort<Result<Option<ActorRef<TaskMsg>>, RuntimeError>>,
    },
    /// The live actor of a task, starting one for a non-terminal task that has none
    /// (an interrupted task after a restart). `None`: the task is terminal or unknown.
    Route {
        task_id: TaskId,
        reply: RpcReplyPort<Result<Option<ActorRef<TaskMsg>>, RuntimeError>>,
    },
    /// The live actor of a task, if there is one (no waking).
    Live {
        task_id: TaskId,
        reply: RpcReplyPort<Option<ActorRef<TaskMsg>>>,
    },
    /// A task wants to run; it gets `TaskMsg::Start` when its skill has a free slot.
    WantSlot { task_id: TaskId, skill: String },
    /// A task's run ended; its slot goes to the next waiting task.
    SlotFreed { task_id: TaskId, skill: String },
    /// A task started (true) or stopped (false) waiting for a user's input.
    WaitingForInput { task_id: TaskId, waiting: bool },
}

/// How many tasks have a live actor, and how many of those are busy (not just waiting
/// for a user's input).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LiveCount {
    pub(crate) live: usize,
    pub(crate) busy: usize,
    /// Tasks waiting for a concurrency slot (all skills).
    pub(crate) waiting_for_slot: usize,
}

pub(crate) struct Supervisor;

pub(crate) struct SupervisorArgs {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) skills: Arc<HashMap<String, Arc<dyn Skill>>>,
    pub(crate) config: Arc<RuntimeConfig>,
    pub(crate) live_count: watch::Sender<LiveCount>,
}

#[derive(Default)]
struct Slots {
    running: HashSet<TaskId>,
    waiting: VecDeque<TaskId>,
}

pub(crate) struct SupervisorState {
    args: SupervisorArgs,
    live: HashMap<TaskId, ActorRef<TaskMsg>>,
    by_actor: HashMap<ActorId, TaskId>,
    slots: HashMap<String, Slots>,
    waiting_for_input: HashSet<TaskId>,
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
            slots: HashMap::new(),
            waiting_for_input: HashSet::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Spawn {
                record,
                mode,
                follower,
                reply,
            } => {
                let result = state.spawn(&myself, *record, mode, follower).await;
                let _ = reply.send(result);
            }
            SupervisorMsg::Route { task_id, reply } => {
                let _ = reply.send(state.route(&myself, task_id).await);
            }
            SupervisorMsg::Live { task_id, reply } => {
                let _ = reply.send(state.live.get(&task_id).cloned());
            }
            SupervisorMsg::WantSlot { task_id, skill } => {
                state.want_slot(task_id, skill);
                state.publish_live_count();
            }
            SupervisorMsg::SlotFreed { task_id, skill } => {
                state.free_slot(&task_id, &skill);
                state.publish_live_count();
            }
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
                        fail_stored_task(&*state.args.store, &task_id, &reason, "runtime").await
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
        record: TaskRecord,
        mode: StartMode,
        follower: Option<Follower>,
    ) -> Result<Option<ActorRef<TaskMsg>>, RuntimeError> {
        let task_id = record.task.id.clone();
        if let Some(actor) = self.live.get(&task_id) {
            return Ok(Some(actor.clone()));
        }
        let Some(skill) = self.args.skills.get(&record.skill).cloned() else {
            let reason = format!("skill {:?} is not registered", record.skill);
            fail_stored_task(&*self.args.store, &task_id, &reason, "runtime").await?;
            return Ok(None);
        };
        let args = TaskArgs {
            record,
            store: self.args.store.clone(),
            skill,
            supervisor: myself.clone(),
            config: self.args.config.clone(),
            mode,
            follower,
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
                fail_stored_task(&*self.args.store, &task_id, &reason, "runtime").await?;
                Ok(None)
            }
        }
    }

    async fn route(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        task_id: TaskId,
    ) -> Result<Option<ActorRef<TaskMsg>>, RuntimeError> {
        if let Some(actor) = self.live.get(&task_id) {
            return Ok(Some(actor.clone()));
        }
        let Some(record) = self.args.store.get(&task_id).await? else {
            return Ok(None);
        };
        if record.state().is_terminal() {
            return Ok(None);
        }
        let mode = if record.state().is_interrupted() {
            StartMode::Wake
        } else {
            StartMode::Resume
        };
        self.spawn(myself, record, mode, None).await
    }

    fn want_slot(&mut self, task_id: TaskId, skill: String) {
        self.slots
            .entry(skill.clone())
            .or_default()
            .waiting
            .push_back(task_id);
        self.grant(&skill);
    }

    fn free_slot(&mut self, task_id: &TaskId, skill: &str) {
        if let Some(slots) = self.slots.get_mut(skill) {
            slots.running.remove(task_id);
        }
        self.grant(skill);
    }

    /// Starts waiting tasks, first come first served, while the skill has free slots.
    fn grant(&mut self, skill: &str) {
        let limit = self.args.config.concurrency_of(skill);
        let Some(slots) = self.slots.get_mut(skill) else {
            return;
        };
        while slots.running.len() < limit {
            let Some(task_id) = slots.waiting.pop_front() else {
                break;
            };
            let started = self
                .live
                .get(&task_id)
                .is_some_and(|actor| actor.cast(TaskMsg::Start).is_ok());
            if started {
                slots.running.insert(task_id);
            }
        }
    }

    /// Drops a stopped actor from the registry and frees what it held.
    fn forget(&mut self, actor: ActorId) -> Option<TaskId> {
        let task_id = self.by_actor.remove(&actor)?;
        self.live.remove(&task_id);
        self.waiting_for_input.remove(&task_id);
        let mut freed = Vec::new();
        for (skill, slots) in &mut self.slots {
            slots.waiting.retain(|t| t != &task_id);
            if slots.running.remove(&task_id) {
                freed.push(skill.clone());
            }
        }
        for skill in freed {
            self.grant(&skill);
        }
        self.publish_live_count();
        Some(task_id)
    }

    fn publish_live_count(&self) {
        let live = self.live.len();
        let busy = live - self.waiting_for_input.len();
        let waiting_for_slot = self.slots.values().map(|s| s.waiting.len()).sum();
        let count = LiveCount {
            live,
            busy,
            waiting_for_slot,
        };
        self.args.live_count.send_if_modified(|current| {
            let changed = *current != count;
            *current = count;
            changed
        });
    }
}
