//! `Runtime::builder()` and `RuntimeHandle`: the one door into the runtime, used alike by
//! the gateway and by embedders.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use ractor::{Actor, ActorRef, RpcReplyPort};
use tokio::sync::watch;

use crate::access::Grants;
use crate::actors::{
    LiveCount, LiveEvents, Slots, Spawn, StartMode, Supervisor, SupervisorArgs, SupervisorMsg,
    TaskMsg, call_actor, follower,
};
use crate::config::RuntimeConfig;
use crate::cpu::CpuPool;
use crate::error::RuntimeError;
use crate::model::{
    ContextId, Role, Task, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus,
};
use crate::recovery::RecoveryReport;
use crate::requests::{ListRequest, SubmitRequest, TaskPage, TaskSnapshot};
use crate::skill::{Skill, SkillCard};
use crate::store::{Cursor, ListQuery, MemoryStore, TaskRecord, TaskStore};
use crate::subscription::{Durable, EventStream, event_stream};
use crate::telemetry;
use crate::transition::apply;

/// Longest accepted context id, in bytes.
const MAX_CONTEXT_ID_LEN: usize = 256;

/// Entry point: `Runtime::builder()`.
#[derive(Debug)]
pub struct Runtime;

impl Runtime {
    /// A builder with no skills, an in-memory store and default settings.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            store: None,
            skills: Vec::new(),
            config: RuntimeConfig::default(),
        }
    }
}

/// Collects the store, skills and settings, then starts the runtime.
pub struct RuntimeBuilder {
    store: Option<Arc<dyn TaskStore>>,
    skills: Vec<Arc<dyn Skill>>,
    config: RuntimeConfig,
}

impl RuntimeBuilder {
    /// Where tasks are kept (default: a [`MemoryStore`]).
    pub fn store(mut self, store: impl TaskStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Like [`RuntimeBuilder::store`], for a store that is already shared.
    pub fn shared_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Registers a skill (ids must be unique).
    pub fn skill(mut self, skill: impl Skill) -> Self {
        self.skills.push(Arc::new(skill));
        self
    }

    /// Like [`RuntimeBuilder::skill`], for a skill that is already shared.
    pub fn shared_skill(mut self, skill: Arc<dyn Skill>) -> Self {
        self.skills.push(skill);
        self
    }

    /// Settings (default: [`RuntimeConfig::default`]).
    pub fn config(mut self, config: RuntimeConfig) -> Self {
        self.config = config;
        self
    }

    /// Starts the supervisor, recovers the tasks a previous run left unfinished, and
    /// returns the handle. New submissions are accepted once recovery has decided every
    /// stored non-terminal task (resumed runs go on in the background).
    pub async fn start(self) -> Result<RuntimeHandle, RuntimeError> {
        self.config.validate().map_err(RuntimeError::InvalidInput)?;
        let mut skills = HashMap::new();
        let mut cards = Vec::new();
        for skill in self.skills {
            let card = skill.card();
            if skills.insert(card.id.clone(), skill).is_some() {
                return Err(RuntimeError::InvalidInput(format!(
                    "two skills have the id {:?}",
                    card.id
                )));
            }
            cards.push(card);
        }
        if let Some(default) = &self.config.default_skill
            && !skills.contains_key(default)
        {
            return Err(RuntimeError::InvalidInput(format!(
                "runtime.default-skill {default:?} is not a registered skill"
            )));
        }
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(MemoryStore::new()) as Arc<dyn TaskStore>);
        let config = Arc::new(self.config);
        let skills = Arc::new(skills);
        let (live_count, live_watch) = watch::channel(LiveCount::default());
        let slots = Arc::new(Slots::new(&config, skills.keys()));
        let cpu = Arc::new(CpuPool::new(config.cpu_workers));
        let args = SupervisorArgs {
            store: store.clone(),
            skills: skills.clone(),
            config: config.clone(),
            live_count,
            slots: slots.clone(),
            cpu: cpu.clone(),
        };
        let (supervisor, _) = Actor::spawn(None, Supervisor, args)
            .await
            .map_err(|e| RuntimeError::Unavailable(format!("supervisor did not start: {e}")))?;
        let gauges = {
            let (live, slots, cpu) = (live_watch.clone(), slots.clone(), cpu.clone());
            telemetry::live_gauges(
                move || live.borrow().live,
                move || slots.waiting(),
                move || cpu.busy(),
            )
        };
        let inner = Inner {
            store,
            supervisor,
            skills,
            cards,
            config,
            accepting: AtomicBool::new(true),
            slots,
            cpu,
            live: live_watch,
            recovery: std::sync::OnceLock::new(),
            resumers: std::sync::Mutex::default(),
            _gauges: gauges,
        };
        let handle = RuntimeHandle {
            inner: Arc::new(inner),
        };
        let report = handle.recover().await?;
        tracing::info!(
            resumed = report.resumed,
            failed = report.failed,
            waiting = report.waiting_for_input,
            "recovery finished"
        );
        let _ = handle.inner.recovery.set(report);
        Ok(handle)
    }
}

/// A task's actor and the subscriber queue it adopted as it started.
type Attached = (ActorRef<TaskMsg>, LiveEvents);

/// A task submitted by [`RuntimeHandle::submit_and_wait`], followed until its outcome.
pub struct Waiting {
    /// The task as accepted (not yet durable: tell only the outcome).
    pub accepted: TaskSnapshot,
    events: EventStream,
    handle: RuntimeHandle,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("accepted", &self.accepted)
            .finish_non_exhaustive()
    }
}

impl Waiting {
    /// Follows the task until one of its events matches `until`, and returns the task
    /// as it stood after that event, once durable; `None` if its event stream ended
    /// first (an error if the task was never stored). The task is rebuilt from the
    /// accepted snapshot and the events, the way its actor builds it, so the store is
    /// not read again.
    pub async fn outcome(
        mut self,
        until: impl Fn(&TaskEvent) -> bool,
    ) -> Result<Option<TaskSnapshot>, RuntimeError> {
        let mut task = self.accepted.task;
        while let Some(event) = self.events.next().await {
            let event = event?;
            apply(&mut task, &event.kind).map_err(|e| {
                RuntimeError::Unavailable(format!(
                    "event {} of task {} does not follow the task as followed: {e}",
                    event.seq, task.id
                ))
            })?;
            if until(&event) {
                self.handle.settle().await?;
                return Ok(Some(TaskSnapshot {
                    task,
                    seq: event.seq,
                }));
            }
        }
        // The task stopped being live first. One that was never stored (see
        // `SubmitRequest::store_with_first_step`) is not there to be read instead.
        if self.handle.inner.store.get(&task.id).await?.is_none() {
            return Err(RuntimeError::Unavailable(format!(
                "task {} ended before it could be stored (a store error or a shutdown; \
                 the server's log says which)",
                task.id
            )));
        }
        Ok(None)
    }
}

/// The handle on a running runtime. Cheap to clone.
#[derive(Clone)]
pub struct RuntimeHandle {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn TaskStore>,
    supervisor: ActorRef<SupervisorMsg>,
    skills: Arc<HashMap<String, Arc<dyn Skill>>>,
    cards: Vec<SkillCard>,
    config: Arc<RuntimeConfig>,
    accepting: AtomicBool,
    slots: Arc<Slots>,
    cpu: Arc<CpuPool>,
    live: watch::Receiver<LiveCount>,
    recovery: std::sync::OnceLock<RecoveryReport>,
    /// Recovery's queues of tasks to resume as slots free up (stopped at shutdown).
    resumers: std::sync::Mutex<Vec<tokio::task::AbortHandle>>,
    /// Observed while the runtime lives.
    _gauges: telemetry::LiveGauges,
}

impl std::fmt::Debug for RuntimeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeHandle").finish_non_exhaustive()
    }
}

impl RuntimeHandle {
    /// The registered skills' cards.
    pub fn skills(&self) -> &[SkillCard] {
        &self.inner.cards
    }

    /// What recovery did at start.
    pub fn recovery_report(&self) -> RecoveryReport {
        self.inner.recovery.get().cloned().unwrap_or_default()
    }

    /// Starts a new task, or delivers a follow-up message to the task the message names.
    /// Returns the task as stored once the message is durably accepted; the skill runs
    /// in the background (use [`RuntimeHandle::subscribe`] to follow it).
    pub async fn submit(&self, request: SubmitRequest) -> Result<TaskSnapshot, RuntimeError> {
        Ok(self.accept(request, false).await?.0)
    }

    /// Like [`RuntimeHandle::submit`], and follows the task: the stream yields its events
    /// after the returned snapshot, each durable, as `subscribe(id, snapshot.seq)` would.
    /// A new task's stream is attached to its actor as the actor starts, which costs
    /// less than subscribing afterwards.
    pub async fn submit_and_follow(
        &self,
        request: SubmitRequest,
    ) -> Result<(TaskSnapshot, EventStream), RuntimeError> {
        let request = SubmitRequest {
            store_with_first_step: false,
            ..request
        };
        let (accepted, attached) = self.accept(request, true).await?;
        let id = &accepted.task.id;
        let events = self.event_stream(id, accepted.seq, Durable::EachEvent, attached);
        Ok((accepted, events))
    }

    /// Submits for a caller that tells only the outcome (a blocking send): the
    /// submission does not wait for the disk, whatever `durable_on_return` says, and
    /// [`Waiting::outcome`] returns the task durable once it gets where the caller
    /// waits for. A new task may be stored only after this returns, with its skill's
    /// first step (see [`SubmitRequest::store_with_first_step`]).
    pub async fn submit_and_wait(&self, request: SubmitRequest) -> Result<Waiting, RuntimeError> {
        let request = SubmitRequest {
            durable_on_return: false,
            ..request
        };
        let (accepted, attached) = self.accept(request, true).await?;
        let id = &accepted.task.id;
        let events = self.event_stream(id, accepted.seq, Durable::CallerSettles, attached);
        Ok(Waiting {
            accepted,
            events,
            handle: self.clone(),
        })
    }

    /// Checks and submits; `attach`: a new task's actor starts with a subscriber, whose
    /// end comes back with the snapshot.
    async fn accept(
        &self,
        request: SubmitRequest,
        attach: bool,
    ) -> Result<(TaskSnapshot, Option<Attached>), RuntimeError> {
        if !self.inner.accepting.load(Ordering::Acquire) {
            return Err(RuntimeError::Unavailable(
                "the runtime is shutting down".into(),
            ));
        }
        let message = &request.message;
        message.validate()?;
        if message.role != Role::User {
            return Err(RuntimeError::InvalidInput(
                "message.role must be ROLE_USER for messages sent to the agent".into(),
            ));
        }
        if let Some(context) = &message.context_id {
            validate_context_id(context)?;
        }
        match message.task_id.clone() {
            Some(task_id) => Ok((self.follow_up(task_id, request).await?, None)),
            None => self.create(request, attach).await,
        }
    }

    async fn create(
        &self,
        request: SubmitRequest,
        attach: bool,
    ) -> Result<(TaskSnapshot, Option<Attached>), RuntimeError> {
        let skill = self.select_skill(&request)?;
        self.authorize(&skill, &request.grants)?;
        let SubmitRequest {
            message,
            owner,
            durable_on_return,
            store_with_first_step,
            ..
        } = request;
        let task_id = TaskId::generate();
        let context_id = message
            .context_id
            .clone()
            .unwrap_or_else(ContextId::generate);
        let mut first = message;
        first.task_id = Some(task_id.clone());
        first.context_id = Some(context_id.clone());
        let task = Task {
            id: task_id.clone(),
            context_id: context_id.clone(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Utc::now(),
            },
            artifacts: Vec::new(),
            history: vec![first],
            metadata: None,
        };
        let mut record = TaskRecord {
            task: task.clone(),
            version: 1,
            last_seq: 1,
            skill,
            owner,
            checkpoint: None,
            trace: telemetry::current_traceparent(),
        };
        let mut events = vec![TaskEvent {
            seq: 1,
            task_id,
            context_id,
            kind: TaskEventKind::Created(task.clone()),
        }];
        // With a slot free, the task is stored already working, in the same commit: one
        // write fewer, and its actor runs it at once.
        let slot = self.inner.slots.try_take(&record.skill);
        if slot.is_some() {
            start_working(&mut record, &mut events)?;
        }
        // A caller that tells only the outcome (`submit_and_wait`) leaves the first
        // commit to the actor, which adds what the skill does in its first poll.
        let deferred = slot.is_some() && attach && !durable_on_return && store_with_first_step;
        // Otherwise stored before anyone is told: from here on, a crash leaves the task
        // to recovery.
        let store = &*self.inner.store;
        match (deferred, durable_on_return) {
            (true, _) => {}
            (false, true) => telemetry::commit(store, &record, 0, &events, None).await?,
            (false, false) => telemetry::write(store, &record, 0, &events, None).await?,
        }
        let metrics = telemetry::metrics();
        metrics.submitted(&record.skill);
        if slot.is_some() {
            let (from, to) = (Some(TaskState::Submitted), TaskState::Working);
            metrics.state_changed(&record.skill, &task.id, from, to);
        }
        let buffer = self.inner.config.subscriber_buffer;
        let (follower, receiver) = attach.then(|| follower(buffer)).unzip();
        // The snapshot told is the task as created; what came after is the follower's
        // (published by the actor once stored, when it stores it).
        let (unwritten, unpublished) = match deferred {
            true => (events, Vec::new()),
            false => (Vec::new(), events.split_off(1)),
        };
        let actor = self
            .spawn(Spawn {
                follower,
                slot,
                unpublished,
                unwritten,
                ..Spawn::new(record, StartMode::Fresh)
            })
            .await?;
        // No actor (the task failed to start): a stream subscribes the usual way.
        let attached = actor.zip(receiver);
        Ok((TaskSnapshot { task, seq: 1 }, attached))
    }

    async fn follow_up(
        &self,
        task_id: TaskId,
        request: SubmitRequest,
    ) -> Result<TaskSnapshot, RuntimeError> {
        let record = self
            .visible_record(&task_id, request.owner.as_deref())
            .await?;
        if let Some(given) = &request.message.context_id
            && given != &record.task.context_id
        {
            return Err(RuntimeError::ContextMismatch {
                task_id,
                given: given.clone(),
                actual: record.task.context_id,
            });
        }
        self.authorize(&record.skill, &request.grants)?;
        let state = record.state();
        if state.is_terminal() {
            return Err(RuntimeError::TaskTerminal { id: task_id, state });
        }
        let actor = self.route(&task_id).await?;
        let message = request.message;
        let timeout = self.inner.config.call_timeout();
        let delivered = match self
            .call(actor.as_ref(), |r| TaskMsg::Deliver(message, r), timeout)
            .await
        {
            Some(result) => result?,
            None => return Err(self.unanswered(&task_id).await),
        };
        if request.durable_on_return {
            self.settle().await?;
        }
        Ok(delivered)
    }

    /// Waits until every change written so far is durable: what is read afterwards can
    /// be told.
    async fn settle(&self) -> Result<(), RuntimeError> {
        Ok(telemetry::settle(&*self.inner.store).await?)
    }

    /// Refuses a caller without the scope `skill` requires.
    fn authorize(&self, skill: &str, grants: &Grants) -> Result<(), RuntimeError> {
        let required = self
            .inner
            .cards
            .iter()
            .find(|card| card.id == skill)
            .and_then(|card| card.required_scope.as_deref());
        match required {
            Some(scope) if !grants.allows(Some(scope)) => Err(RuntimeError::Forbidden {
                skill: skill.to_owned(),
                scope: scope.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    fn select_skill(&self, request: &SubmitRequest) -> Result<String, RuntimeError> {
        let from_metadata = request
            .message
            .metadata
            .as_ref()
            .and_then(|m| m.get("skill"))
            .map(|v| {
                v.as_str().map(str::to_owned).ok_or_else(|| {
                    RuntimeError::InvalidInput("message.metadata.skill must be a string".into())
                })
            })
            .transpose()?;
        let only = (self.inner.skills.len() == 1)
            .then(|| self.inner.skills.keys().next().cloned())
            .flatten();
        let chosen = request
            .skill
            .clone()
            .or(from_metadata)
            .or_else(|| self.inner.config.default_skill.clone())
            .or(only);
        match chosen {
            Some(id) if self.inner.skills.contains_key(&id) => Ok(id),
            Some(id) => Err(RuntimeError::UnknownSkill(id)),
            None => {
                let mut available: Vec<String> = self.inner.skills.keys().cloned().collect();
                available.sort();
                Err(RuntimeError::NoSkillSelected { available })
            }
        }
    }

    /// The task and the sequence number of its last event, read together: subscribing
    /// after that number continues exactly where the snapshot stands.
    pub async fn snapshot(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        owner: Option<&str>,
    ) -> Result<TaskSnapshot, RuntimeError> {
        let record = self.visible_record(task_id, owner).await?;
        self.settle().await?;
        Ok(TaskSnapshot {
            task: record.task.with_history_limit(history_length),
            seq: record.last_seq,
        })
    }

    /// The task, with at most `history_length` recent history messages.
    pub async fn get(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        owner: Option<&str>,
    ) -> Result<Task, RuntimeError> {
        Ok(self.snapshot(task_id, history_length, owner).await?.task)
    }

    /// A page of tasks.
    pub async fn list(&self, request: ListRequest) -> Result<TaskPage, RuntimeError> {
        if request.page_size == 0 {
            return Err(RuntimeError::InvalidInput(
                "page size must be at least 1".into(),
            ));
        }
        let cursor = request
            .page_token
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(Cursor::decode)
            .transpose()
            .map_err(RuntimeError::InvalidInput)?;
        let query = ListQuery {
            context_id: request.context_id,
            state: request.state,
            updated_after: request.updated_after,
            owner: request.owner,
            limit: request.page_size,
            cursor,
        };
        let page = self.inner.store.list(&query).await?;
        self.settle().await?;
        let tasks = page
            .records
            .into_iter()
            .map(|r| {
                let mut task = r.task.with_history_limit(request.history_length);
                if !request.include_artifacts {
                    task.artifacts.clear();
                }
                task
            })
            .collect();
        Ok(TaskPage {
            tasks,
            next_page_token: page.next.map(|c| c.encode()),
            total_size: page.total,
        })
    }

    /// Cancels a task and returns it `canceled`. A running skill is signalled and given
    /// the configured grace period before it is aborted.
    pub async fn cancel(
        &self,
        task_id: &TaskId,
        owner: Option<&str>,
    ) -> Result<Task, RuntimeError> {
        let record = self.visible_record(task_id, owner).await?;
        let state = record.state();
        if state.is_terminal() {
            return Err(RuntimeError::NotCancelable {
                id: task_id.clone(),
                state,
            });
        }
        let actor = self.route(task_id).await?;
        let timeout = self.inner.config.cancel_grace() + self.inner.config.call_timeout();
        let canceled = match self.call(actor.as_ref(), TaskMsg::Cancel, timeout).await {
            Some(result) => result?,
            None => {
                return Err(match self.unanswered(task_id).await {
                    RuntimeError::TaskTerminal { id, state } => {
                        RuntimeError::NotCancelable { id, state }
                    }
                    other => other,
                });
            }
        };
        self.settle().await?;
        Ok(canceled)
    }

    /// The task's events with `seq > after_seq`: stored ones first, then live ones, with
    /// no gap and no duplicate. `after_seq` 0 starts from the task's creation. Each event
    /// is durable when it is yielded.
    pub async fn subscribe(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        owner: Option<&str>,
    ) -> Result<EventStream, RuntimeError> {
        self.visible_record(task_id, owner).await?;
        Ok(self.events(task_id, after_seq, Durable::EachEvent))
    }

    fn events(&self, task_id: &TaskId, after_seq: u64, durable: Durable) -> EventStream {
        self.event_stream(task_id, after_seq, durable, None)
    }

    /// The events after `after_seq`, from the subscriber attached to the task's actor if
    /// there is one (see `event_stream`).
    fn event_stream(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        durable: Durable,
        attached: Option<Attached>,
    ) -> EventStream {
        event_stream(
            self.inner.store.clone(),
            self.inner.supervisor.clone(),
            task_id.clone(),
            after_seq,
            self.inner.config.call_timeout(),
            durable,
            attached,
        )
    }

    /// The W3C `traceparent` the task was created under (see [`crate::telemetry`]).
    pub async fn traceparent(&self, task_id: &TaskId) -> Option<String> {
        self.inner.store.get(task_id).await.ok().flatten()?.trace
    }

    /// The number of tasks that have a live actor.
    pub fn live_tasks(&self) -> usize {
        self.inner.live.borrow().live
    }

    /// The workers of the CPU pool (`runtime.cpu-workers`) busy with skills' work now.
    pub fn cpu_busy(&self) -> usize {
        self.inner.cpu.busy()
    }

    /// Stops accepting submissions, gives busy tasks up to `grace` to finish (tasks that
    /// only wait for a user's input are not waited for), then stops every actor. Tasks
    /// still unfinished stay stored as they are, for recovery.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.accepting.store(false, Ordering::Release);
        // Tasks still queued to resume stay stored, working, for the next start; a
        // subscriber whose task's actor stops does not start another.
        let _ = self.inner.supervisor.cast(SupervisorMsg::ShuttingDown);
        for resumer in self
            .inner
            .resumers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            resumer.abort();
        }
        let mut live = self.inner.live.clone();
        let _ = tokio::time::timeout(grace, live.wait_for(|n| n.busy == 0)).await;
        // Task actors first (they abort their runs as they stop), then the supervisor;
        // once both have stopped, nothing but this handle holds the store.
        let timeout = Some(self.inner.config.call_timeout());
        let supervisor = &self.inner.supervisor;
        supervisor.stop_children_and_wait(None, timeout).await;
        let _ = supervisor.stop_and_wait(None, timeout).await;
    }

    pub(crate) fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    /// Resumes these submitted or working tasks of `skill`, in order, each once it has a
    /// slot: its actor starts then (see `SupervisorMsg::Resume`), so a backlog of tasks
    /// waiting for slots after a restart holds no actors. Up to the skill's concurrency
    /// wait for a slot at once, queued with the tasks submitted since.
    pub(crate) fn resume_in_turn(&self, skill: String, ids: Vec<TaskId>) {
        let slots = self.inner.slots.clone();
        let supervisor = self.inner.supervisor.clone();
        let at_once = self.inner.config.concurrency_of(&skill).max(1);
        let resumer = tokio::spawn(async move {
            let mut backlog = slots.backlog(ids.len());
            let asks = ids.into_iter().map(|task_id| {
                backlog.asking();
                let (slots, skill, supervisor) = (slots.clone(), skill.clone(), supervisor.clone());
                async move {
                    if let Some(slot) = slots.take(&skill).await {
                        let _ = supervisor.cast(SupervisorMsg::Resume { task_id, slot });
                    }
                }
            });
            futures::stream::iter(asks)
                .buffered(at_once)
                .for_each(|()| async {})
                .await;
        });
        let mut resumers = self
            .inner
            .resumers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        resumers.retain(|r| !r.is_finished());
        resumers.push(resumer.abort_handle());
    }

    pub(crate) fn skill_card(&self, id: &str) -> Option<SkillCard> {
        self.inner.skills.get(id).map(|s| s.card())
    }

    /// Starts an actor for a stored task: the task's actor, or `None` when none could
    /// start (and the task was failed).
    pub(crate) async fn spawn(
        &self,
        spawn: Spawn,
    ) -> Result<Option<ActorRef<TaskMsg>>, RuntimeError> {
        let task_id = spawn.record.task.id.clone();
        let timeout = self.inner.config.call_timeout();
        let spawn = |reply| SupervisorMsg::Spawn {
            spawn: Box::new(spawn),
            reply,
        };
        match call_actor(&self.inner.supervisor, spawn, timeout).await {
            Ok(result) => result,
            Err(_) => Err(RuntimeError::Unavailable(format!(
                "task {task_id} is stored but could not be started now; it will be recovered"
            ))),
        }
    }

    async fn visible_record(
        &self,
        task_id: &TaskId,
        owner: Option<&str>,
    ) -> Result<TaskRecord, RuntimeError> {
        match self.inner.store.get(task_id).await? {
            // Another user's task is "not found": its existence is not revealed.
            Some(record) if owner.is_none_or(|o| record.owner.as_deref() == Some(o)) => Ok(record),
            _ => Err(RuntimeError::TaskNotFound(task_id.clone())),
        }
    }

    async fn route(&self, task_id: &TaskId) -> Result<Option<ActorRef<TaskMsg>>, RuntimeError> {
        let timeout = self.inner.config.call_timeout();
        let task_id = task_id.clone();
        let route = |reply| SupervisorMsg::Route { task_id, reply };
        match call_actor(&self.inner.supervisor, route, timeout).await {
            Ok(result) => result,
            Err(_) => Err(RuntimeError::Unavailable(
                "the supervisor did not answer".into(),
            )),
        }
    }

    /// The error for a task actor that did not answer: it ended meanwhile (the store
    /// has its terminal state), or it is busy beyond the call timeout.
    async fn unanswered(&self, task_id: &TaskId) -> RuntimeError {
        match self.visible_record(task_id, None).await {
            Ok(record) if record.state().is_terminal() => RuntimeError::TaskTerminal {
                id: task_id.clone(),
                state: record.state(),
            },
            Ok(_) => RuntimeError::Unavailable(format!("task {task_id} did not answer in time")),
            Err(e) => e,
        }
    }

    /// Calls a task actor; `None` when there is none or it stopped before answering.
    async fn call<T: Send + 'static>(
        &self,
        actor: Option<&ActorRef<TaskMsg>>,
        build: impl FnOnce(RpcReplyPort<T>) -> TaskMsg,
        timeout: Duration,
    ) -> Option<T> {
        call_actor(actor?, build, timeout).await.ok()
    }
}

/// Moves a record about to be created to `working`, with the event that says so.
fn start_working(record: &mut TaskRecord, events: &mut Vec<TaskEvent>) -> Result<(), RuntimeError> {
    let working = TaskEventKind::Status(TaskStatus {
        state: TaskState::Working,
        message: None,
        timestamp: Utc::now(),
    });
    apply(&mut record.task, &working).map_err(|e| RuntimeError::Unavailable(e.to_string()))?;
    record.last_seq += 1;
    events.push(TaskEvent {
        seq: record.last_seq,
        task_id: record.task.id.clone(),
        context_id: record.task.context_id.clone(),
        kind: working,
    });
    Ok(())
}

fn validate_context_id(context: &ContextId) -> Result<(), RuntimeError> {
    let s = context.as_str();
    if s.is_empty() || s.len() > MAX_CONTEXT_ID_LEN || s.chars().any(char::is_control) {
        return Err(RuntimeError::InvalidInput(format!(
            "message.contextId must be 1 to {MAX_CONTEXT_ID_LEN} bytes without control characters"
        )));
    }
    Ok(())
}
