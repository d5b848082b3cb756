//! `RuntimeHandle`: the one door into a running runtime, used alike by the gateway and
//! by embedders: submitting (`submit`), reading and listing tasks, canceling,
//! subscribing, and shutting down. Built by `Runtime::builder()` (`builder`).

mod approvals;
mod builder;
mod dedup;
mod forward;
mod intake;
mod outcome;
mod standing;
mod submit;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use ractor::ActorRef;
use tokio::sync::watch;

pub use builder::{Runtime, RuntimeBuilder};
pub use outcome::Waiting;
pub use submit::{Following, Submission};

use crate::access::Access;
use crate::actors::{
    LiveCount, LiveEvents, Routed, Slots, Spawn, SupervisorMsg, TaskMsg, call_actor,
};
use crate::config::RuntimeConfig;
use crate::cpu::CpuPool;
use crate::error::RuntimeError;
use crate::model::{SkillId, Task, TaskId, UserId};
use crate::recovery_plan::RecoveryReport;
use crate::requests::{ListRequest, TaskPage, TaskSnapshot};
use crate::skill::{Skill, SkillCard};
use crate::store::{Cursor, Holder, ListQuery, TaskRecord, TaskStore};
use crate::subscription::{EventStream, Listen, event_stream};
use crate::telemetry;
use crate::wakes::{Presence, WakeHook, Wakes};
use forward::TaskRequest;

/// A task's actor and the subscriber queue it adopted as it started.
type Attached = (ActorRef<TaskMsg>, LiveEvents);

/// The handle on a running runtime. Cheap to clone.
#[derive(Clone)]
pub struct RuntimeHandle {
    inner: Arc<Inner>,
}

/// A handle that does not keep the runtime alive: for a skill that calls its own
/// runtime (a handle it held would be a cycle, and the runtime would never be freed).
#[derive(Clone)]
pub struct WeakRuntimeHandle {
    inner: std::sync::Weak<Inner>,
}

impl WeakRuntimeHandle {
    /// The runtime, while it is alive.
    pub fn upgrade(&self) -> Option<RuntimeHandle> {
        self.inner.upgrade().map(|inner| RuntimeHandle { inner })
    }
}

impl RuntimeHandle {
    /// A handle that does not keep the runtime alive.
    pub fn downgrade(&self) -> WeakRuntimeHandle {
        WeakRuntimeHandle {
            inner: Arc::downgrade(&self.inner),
        }
    }
}

struct Inner {
    store: Arc<dyn TaskStore>,
    supervisor: ActorRef<SupervisorMsg>,
    skills: Arc<HashMap<SkillId, Arc<dyn Skill>>>,
    cards: Vec<SkillCard>,
    config: Arc<RuntimeConfig>,
    accepting: AtomicBool,
    /// Cut off from the database (see `standing`): no work is taken.
    cut_off: AtomicBool,
    slots: Arc<Slots>,
    cpu: Arc<CpuPool>,
    live: watch::Receiver<LiveCount>,
    recovery: std::sync::OnceLock<RecoveryReport>,
    /// First messages whose task is being created (idempotent submission).
    claims: Arc<dedup::Claims>,
    /// Told when a stored task gets an actor (`on_wake`).
    wakes: Arc<Wakes>,
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

    /// Waits until every change written so far is durable: what is read afterwards can
    /// be told.
    async fn settle(&self) -> Result<(), RuntimeError> {
        Ok(self.inner.store.settle().await?)
    }

    fn is_accepting(&self) -> bool {
        self.inner.accepting.load(Ordering::Acquire)
    }

    /// The task and the sequence number of its last event, read together: subscribing
    /// after that number continues exactly where the snapshot stands.
    pub async fn snapshot(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
    ) -> Result<TaskSnapshot, RuntimeError> {
        let record = self.visible_record(task_id, access).await?;
        self.settle().await?;
        Ok(TaskSnapshot {
            task: record.task.with_history_limit(history_length),
            seq: record.last_seq,
        })
    }

    /// The task as `get` reads it for `owner`, or, when it is another owner's task that
    /// waits for input and whose skill's card lets holders of its scope answer it, for a
    /// caller holding that scope in `grants` (the approver of another user's change must
    /// read what they approve). Any other is "not found".
    pub async fn get_as(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
        grants: &crate::access::Grants,
    ) -> Result<Task, RuntimeError> {
        let record = match self.visible_record(task_id, access).await {
            Err(RuntimeError::TaskNotFound(_)) => self.answerable_record(task_id, grants).await?,
            found => found?,
        };
        self.settle().await?;
        Ok(record.task.with_history_limit(history_length))
    }

    /// The task, with at most `history_length` recent history messages.
    pub async fn get(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
    ) -> Result<Task, RuntimeError> {
        Ok(self.snapshot(task_id, history_length, access).await?.task)
    }

    /// The user who owns a task (`None`: it has none), for trusted in-process callers
    /// acting on a task's behalf (the heal loop submits a fix for the user whose audit
    /// found the issue).
    pub async fn owner_of(&self, task_id: &TaskId) -> Result<Option<UserId>, RuntimeError> {
        Ok(self.visible_record(task_id, Access::Any).await?.owner)
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
            skill: request.skill,
            limit: request.page_size,
            cursor,
            history_length: request.history_length,
            without_artifacts: !request.include_artifacts,
            max_bytes: request.max_bytes,
        };
        let page = self.inner.store.list(&query).await?;
        self.settle().await?;
        let (tasks, skills) = page.records.into_iter().map(|r| (r.task, r.skill)).unzip();
        Ok(TaskPage {
            tasks,
            skills,
            next_page_token: page.next.map(|c| c.encode()),
            total_size: page.total,
        })
    }

    /// Cancels a task and returns it `canceled`. A running skill is signalled and given
    /// the configured grace period before it is aborted.
    pub async fn cancel(&self, task_id: &TaskId, access: Access<'_>) -> Result<Task, RuntimeError> {
        let record = self.visible_record(task_id, access).await?;
        let state = record.state();
        if state.is_terminal() {
            return Err(RuntimeError::NotCancelable {
                id: task_id.clone(),
                state,
            });
        }
        let timeout = self.inner.config.cancel_grace() + self.inner.config.call_timeout();
        let canceled = match self.ask(task_id, TaskRequest::Cancel, timeout).await {
            Some(result) => result?.task()?,
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
        access: Access<'_>,
    ) -> Result<EventStream, RuntimeError> {
        self.visible_record(task_id, access).await?;
        Ok(self.event_stream(task_id, after_seq, None, Listen::Subscribe))
    }

    /// The task's events with `seq > after_seq`, as `subscribe` yields them, while the
    /// task has an actor on this node: it neither wakes a parked task nor keeps one from
    /// parking, and ends (after what the store holds) once the task has no actor here.
    /// (A task another node runs is followed through the store, as `subscribe` does.)
    /// For a follower that holds nothing per waiting task: it waits for a wake hook
    /// ([`RuntimeHandle::on_wake`]) and watches again.
    pub async fn watch(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        access: Access<'_>,
    ) -> Result<EventStream, RuntimeError> {
        self.visible_record(task_id, access).await?;
        Ok(self.event_stream(task_id, after_seq, None, Listen::Watch))
    }

    /// Where the task's live events would come from now: its actor here, nowhere (it
    /// rests: a wake here calls the hooks), or another node. Unanswered or unreadable,
    /// `Elsewhere`: a follower then keeps following through the store.
    pub async fn presence(&self, task_id: &TaskId) -> Presence {
        let ask = |reply| SupervisorMsg::Awake {
            task_id: task_id.clone(),
            reply,
        };
        let timeout = self.inner.config.call_timeout();
        match call_actor(&self.inner.supervisor, ask, timeout).await {
            Ok(true) => return Presence::Here,
            Ok(false) => {}
            Err(_) => return Presence::Elsewhere,
        }
        let Some(cluster) = self.inner.store.cluster() else {
            return Presence::Resting;
        };
        match cluster.holder(task_id).await {
            Ok(Holder::Here) => Presence::Resting,
            Ok(Holder::Elsewhere) | Err(_) => Presence::Elsewhere,
        }
    }

    /// Registers `hook`, called with a task's id whenever a stored task gets an actor
    /// on this node or is failed without one (see [`crate::WakeHook`]).
    pub fn on_wake(&self, hook: WakeHook) {
        self.inner.wakes.add(hook);
    }

    /// The events after `after_seq`, from the subscriber attached to the task's actor if
    /// there is one (see `event_stream`).
    fn event_stream(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        attached: Option<Attached>,
        listen: Listen,
    ) -> EventStream {
        event_stream(
            self.inner.store.clone(),
            self.inner.supervisor.clone(),
            task_id.clone(),
            after_seq,
            self.inner.config.call_timeout(),
            attached,
            listen,
        )
    }

    /// The W3C `traceparent` the task was created under (see [`crate::telemetry`]).
    pub async fn traceparent(&self, task_id: &TaskId) -> Option<String> {
        self.inner.store.get(task_id).await.ok().flatten()?.trace
    }

    /// The skill that runs the task, if it is stored (no access check).
    pub async fn skill_of(&self, task_id: &TaskId) -> Option<SkillId> {
        Some(self.inner.store.get(task_id).await.ok().flatten()?.skill)
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
        self.abort_resumers();
        let mut live = self.inner.live.clone();
        let _ = tokio::time::timeout(grace, live.wait_for(|n| n.busy == 0)).await;
        // Task actors first (they abort their runs as they stop), then the supervisor;
        // once both have stopped, nothing but this handle holds the store.
        let timeout = Some(self.inner.config.call_timeout());
        let supervisor = &self.inner.supervisor;
        supervisor.stop_children_and_wait(None, timeout).await;
        let _ = supervisor.stop_and_wait(None, timeout).await;
        // Nothing runs here any more: with several nodes, the others carry on at once.
        if let Err(error) = self.inner.store.hand_back().await {
            tracing::warn!(%error, "could not hand this node's work back; the other nodes take it over once its leases run out");
        }
    }

    /// Stops recovery's queues of tasks waiting to resume (what they hold stays stored).
    fn abort_resumers(&self) {
        let mut resumers = self
            .inner
            .resumers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for resumer in resumers.drain(..) {
            resumer.abort();
        }
    }

    pub(crate) fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    /// Resumes these submitted or working tasks of `skill`, in order, each once it has a
    /// slot: its actor starts then (see `SupervisorMsg::Resume`), so a backlog of tasks
    /// waiting for slots after a restart holds no actors. Up to the skill's concurrency
    /// wait for a slot at once, queued with the tasks submitted since.
    pub(crate) fn resume_in_turn(&self, skill: SkillId, ids: Vec<TaskId>) {
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

    /// Queues a new task, stored submitted, for a slot of `skill` with no actor: its
    /// actor starts once it has one (`SupervisorMsg::Queue`). With the supervisor gone
    /// (the runtime stopped), the task stays stored for the next start.
    pub(crate) fn queue_for_slot(&self, task_id: TaskId, skill: SkillId) {
        let _ = self
            .inner
            .supervisor
            .cast(SupervisorMsg::Queue { task_id, skill });
    }

    /// A registered skill's card, as built at start.
    pub(crate) fn skill_card(&self, id: &str) -> Option<&SkillCard> {
        self.inner.cards.iter().find(|card| card.id == id)
    }

    /// Starts an actor for a stored task: the task's actor, or `None` when none could
    /// start (and the task was failed).
    pub(crate) async fn spawn(
        &self,
        spawn: Spawn,
    ) -> Result<Option<ActorRef<TaskMsg>>, RuntimeError> {
        let task_id = spawn.journal.task().id.clone();
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

    /// Removes the ended tasks last updated more than `older_than` ago (retention), in
    /// batches, yielding between them so that requests and tasks go on; returns how
    /// many it removed. A removed task is not found.
    pub async fn remove_ended(&self, older_than: Duration) -> Result<usize, RuntimeError> {
        const BATCH: usize = 256;
        let older_than = chrono::Duration::from_std(older_than)
            .map_err(|_| RuntimeError::InvalidInput("retention is too long".into()))?;
        let before = chrono::Utc::now() - older_than;
        let mut removed = 0;
        loop {
            let batch = self.inner.store.remove_ended_before(before, BATCH).await?;
            removed += batch;
            telemetry::metrics().removed(batch);
            if batch < BATCH {
                return Ok(removed);
            }
            tokio::task::yield_now().await;
        }
    }

    async fn visible_record(
        &self,
        task_id: &TaskId,
        access: Access<'_>,
    ) -> Result<TaskRecord, RuntimeError> {
        match self.inner.store.get(task_id).await? {
            // Another user's task is "not found": its existence is not revealed.
            Some(record) if access.sees(record.owner.as_deref()) => Ok(record),
            _ => Err(RuntimeError::TaskNotFound(task_id.clone())),
        }
    }

    /// Where the task's calls go: its actor here (started if need be), or the node that
    /// holds it.
    async fn route(&self, task_id: &TaskId) -> Result<Routed, RuntimeError> {
        self.refuse_if_cut_off()?;
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
        match self.visible_record(task_id, Access::Any).await {
            Ok(record) if record.state().is_terminal() => RuntimeError::TaskTerminal {
                id: task_id.clone(),
                state: record.state(),
            },
            Ok(_) => RuntimeError::Unavailable(format!("task {task_id} did not answer in time")),
            Err(e) => e,
        }
    }
}
