//! `RuntimeHandle`: the one door into a running runtime, used alike by the gateway and
//! by embedders: submitting (`submit`), reading and listing tasks, canceling,
//! subscribing, and shutting down. Built by `Runtime::builder()` (`builder`).

mod approvals;
mod builder;
mod dedup;
mod intake;
mod outcome;
mod standing;
mod submit;
mod tasks;
mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

pub use builder::{Runtime, RuntimeBuilder};
pub use outcome::Waiting;
pub use submit::{Following, Submission};

use crate::access::{Access, Grants};
use crate::actors::{LiveCount, Slots, SupervisorMsg};
use crate::approval::{Decision, PendingApproval};
use crate::config::RuntimeConfig;
use crate::cpu::CpuPool;
use crate::error::RuntimeError;
use crate::model::{SkillId, Task, TaskId, UserId};
use crate::recovery::Resumer;
use crate::recovery_plan::RecoveryReport;
use crate::requests::{ListRequest, SubmitRequest, TaskPage, TaskSnapshot};
use crate::skill::SkillCard;
use crate::store::{Cursor, ListQuery, Standing, TaskRecord, TaskStore};
use crate::subscription::{EventStream, Listen};
use crate::telemetry;
use crate::wakes::{Presence, WakeHook, Wakes};
use intake::Intake;
use tasks::Tasks;
use wire::TaskRequest;

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

/// The runtime's parts, each owning one concern.
struct Inner {
    /// The tasks, read from the store and called on through their actors.
    tasks: Tasks,
    /// The skills, and what a submission is checked against.
    intake: Intake,
    /// First messages whose task is being created (idempotent submission).
    claims: Arc<dedup::Claims>,
    /// Resumes stored tasks as slots free up.
    resumer: Resumer,
    config: Arc<RuntimeConfig>,
    accepting: AtomicBool,
    slots: Arc<Slots>,
    cpu: Arc<CpuPool>,
    live: watch::Receiver<LiveCount>,
    recovery: std::sync::OnceLock<RecoveryReport>,
    /// Told when a stored task gets an actor (`on_wake`).
    wakes: Arc<Wakes>,
    /// Observed while the runtime lives.
    _gauges: telemetry::LiveGauges,
}

impl Inner {
    /// Another owner's task that this caller may answer all the same (see
    /// `Intake::answerable`). Any other is "not found", as the owner check says.
    async fn answerable_record(
        &self,
        task_id: &TaskId,
        grants: &Grants,
    ) -> Result<TaskRecord, RuntimeError> {
        let record = self.tasks.visible_record(task_id, Access::Any).await?;
        match self.intake.answerable(&record, grants) {
            true => Ok(record),
            false => Err(RuntimeError::TaskNotFound(task_id.clone())),
        }
    }
}

impl std::fmt::Debug for RuntimeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeHandle").finish_non_exhaustive()
    }
}

impl RuntimeHandle {
    /// A handle that does not keep the runtime alive.
    pub fn downgrade(&self) -> WeakRuntimeHandle {
        WeakRuntimeHandle {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// The registered skills' cards.
    pub fn skills(&self) -> &[SkillCard] {
        self.inner.intake.cards()
    }

    /// What recovery did at start.
    pub fn recovery_report(&self) -> RecoveryReport {
        self.inner.recovery.get().cloned().unwrap_or_default()
    }

    /// Starts a new task, or delivers a follow-up message to the task the message names;
    /// see [`Submission`] for how to use what it returns.
    pub fn submit(&self, request: SubmitRequest) -> Submission {
        Submission::new(self.clone(), request)
    }

    /// Whether a caller holding `grants` may start `skill`: the error says why not (no
    /// such skill, or a scope it lacks).
    pub fn check_skill(&self, skill: &str, grants: &Grants) -> Result<(), RuntimeError> {
        self.inner.intake.check_skill(skill, grants)
    }

    /// The task and the sequence number of its last event, read together: subscribing
    /// after that number continues exactly where the snapshot stands.
    pub async fn snapshot(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
    ) -> Result<TaskSnapshot, RuntimeError> {
        let tasks = &self.inner.tasks;
        let record = tasks.visible_record(task_id, access).await?;
        tasks.settle().await?;
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
        grants: &Grants,
    ) -> Result<Task, RuntimeError> {
        let tasks = &self.inner.tasks;
        let record = match tasks.visible_record(task_id, access).await {
            Err(RuntimeError::TaskNotFound(_)) => {
                self.inner.answerable_record(task_id, grants).await?
            }
            found => found?,
        };
        tasks.settle().await?;
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
        let tasks = &self.inner.tasks;
        Ok(tasks.visible_record(task_id, Access::Any).await?.owner)
    }

    /// The task `owner` created with the first message `message_id`, if the store holds
    /// it (whatever `runtime.dedup-window-s` says).
    pub async fn task_created_by(
        &self,
        owner: Option<&str>,
        message_id: &str,
    ) -> Result<Option<TaskId>, RuntimeError> {
        let found = self.store().created_by(owner, message_id).await?;
        Ok(found.map(|(id, _)| id))
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
        let page = self.store().list(&query).await?;
        self.inner.tasks.settle().await?;
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
        let tasks = &self.inner.tasks;
        let record = tasks.visible_record(task_id, access).await?;
        let state = record.state();
        if state.is_terminal() {
            return Err(RuntimeError::NotCancelable {
                id: task_id.clone(),
                state,
            });
        }
        let timeout = self.inner.config.cancel_grace() + self.inner.config.call_timeout();
        let canceled = match tasks.ask(task_id, TaskRequest::Cancel, timeout).await {
            Some(result) => result?.task()?,
            None => {
                return Err(match tasks.unanswered(task_id).await {
                    RuntimeError::TaskTerminal { id, state } => {
                        RuntimeError::NotCancelable { id, state }
                    }
                    other => other,
                });
            }
        };
        tasks.settle().await?;
        Ok(canceled)
    }

    /// Every task waiting for an approver, oldest request first (whoever owns it).
    pub async fn approvals(&self) -> Result<Vec<PendingApproval>, RuntimeError> {
        approvals::pending(&self.inner.tasks).await
    }

    /// Decides on a task waiting for an approver (the caller checked that the approver
    /// may): approved, it runs; rejected, it ends `rejected`. Returns the task as
    /// decided.
    pub async fn decide(&self, task_id: &TaskId, decision: Decision) -> Result<Task, RuntimeError> {
        let timeout = self.inner.config.call_timeout();
        approvals::decide(&self.inner.tasks, task_id, decision, timeout).await
    }

    /// Rejects the tasks whose approval expired by `now`; returns how many.
    pub async fn expire_approvals(&self, now: DateTime<Utc>) -> Result<usize, RuntimeError> {
        let timeout = self.inner.config.call_timeout();
        approvals::expire(&self.inner.tasks, now, timeout).await
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
        let tasks = &self.inner.tasks;
        tasks.visible_record(task_id, access).await?;
        Ok(tasks.event_stream(task_id, after_seq, None, Listen::Subscribe))
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
        let tasks = &self.inner.tasks;
        tasks.visible_record(task_id, access).await?;
        Ok(tasks.event_stream(task_id, after_seq, None, Listen::Watch))
    }

    /// Where the task's live events would come from now: its actor here, nowhere (it
    /// rests: a wake here calls the hooks), or another node. Unanswered or unreadable,
    /// `Elsewhere`: a follower then keeps following through the store.
    pub async fn presence(&self, task_id: &TaskId) -> Presence {
        self.inner.tasks.presence(task_id).await
    }

    /// Registers `hook`, called with a task's id whenever a stored task gets an actor
    /// on this node or is failed without one (see [`crate::WakeHook`]).
    pub fn on_wake(&self, hook: WakeHook) {
        self.inner.wakes.add(hook);
    }

    /// The W3C `traceparent` the task was created under (see [`crate::telemetry`]).
    pub async fn traceparent(&self, task_id: &TaskId) -> Option<String> {
        self.store().get(task_id).await.ok().flatten()?.trace
    }

    /// The skill that runs the task, if it is stored (no access check).
    pub async fn skill_of(&self, task_id: &TaskId) -> Option<SkillId> {
        Some(self.store().get(task_id).await.ok().flatten()?.skill)
    }

    /// The number of tasks that have a live actor.
    pub fn live_tasks(&self) -> usize {
        self.inner.live.borrow().live
    }

    /// The workers of the CPU pool (`runtime.cpu-workers`) busy with skills' work now.
    pub fn cpu_busy(&self) -> usize {
        self.inner.cpu.busy()
    }

    /// Whether this node is cut off from the database (a store several nodes share):
    /// it takes no work and answers no request until it holds the database again.
    pub fn is_cut_off(&self) -> bool {
        self.inner.tasks.is_cut_off()
    }

    /// This node's standing among the nodes sharing the store, as it changes; `None`:
    /// the store's only node.
    pub fn standing(&self) -> Option<watch::Receiver<Standing>> {
        self.store().cluster().map(|cluster| cluster.standing())
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
            let batch = self.store().remove_ended_before(before, BATCH).await?;
            removed += batch;
            telemetry::metrics().removed(batch);
            if batch < BATCH {
                return Ok(removed);
            }
            tokio::task::yield_now().await;
        }
    }

    /// Stops accepting submissions, gives busy tasks up to `grace` to finish (tasks that
    /// only wait for a user's input are not waited for), then stops every actor. Tasks
    /// still unfinished stay stored as they are, for recovery.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.accepting.store(false, Ordering::Release);
        // Tasks still queued to resume stay stored, working, for the next start; a
        // subscriber whose task's actor stops does not start another.
        let supervisor = self.inner.tasks.supervisor();
        let _ = supervisor.cast(SupervisorMsg::ShuttingDown);
        self.inner.resumer.abort();
        let mut live = self.inner.live.clone();
        let _ = tokio::time::timeout(grace, live.wait_for(|n| n.busy == 0)).await;
        // Task actors first (they abort their runs as they stop), then the supervisor;
        // once both have stopped, nothing but this handle holds the store.
        let timeout = Some(self.inner.config.call_timeout());
        supervisor.stop_children_and_wait(None, timeout).await;
        let _ = supervisor.stop_and_wait(None, timeout).await;
        // Nothing runs here any more: with several nodes, the others carry on at once.
        if let Err(error) = self.store().hand_back().await {
            tracing::warn!(%error, "could not hand this node's work back; the other nodes take it over once its leases run out");
        }
    }

    fn is_accepting(&self) -> bool {
        self.inner.accepting.load(Ordering::Acquire)
    }

    fn store(&self) -> &Arc<dyn TaskStore> {
        self.inner.tasks.store()
    }
}
