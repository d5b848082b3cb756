//! `TaskService`: what a front end (the A2A gateway, an embedder's own API) asks of the
//! runtime, as a trait, so that the front end only decodes, calls and encodes, and its
//! tests can put a fake behind it where a real runtime is not the point.
//! `RuntimeHandle` implements it.

use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;

use crate::access::{Access, Grants};
use crate::approval::{Decision, PendingApproval};
use crate::error::RuntimeError;
use crate::handle::{Following, RuntimeHandle};
use crate::model::{SkillId, Task, TaskId};
use crate::requests::{ListRequest, SubmitRequest, TaskPage, TaskSnapshot};
use crate::skill::SkillCard;
use crate::subscription::EventStream;
use crate::wakes::{Presence, WakeHook};

/// A task submitted for its outcome (see [`TaskService::wait`]).
pub struct Waited {
    /// The task as accepted: stored, not durable yet (tell only its id; a push config
    /// may be attached to it).
    pub accepted: TaskSnapshot,
    /// The task once it is at rest, or as it stands at the deadline; durable
    /// (`Waiting::outcome`).
    pub outcome: BoxFuture<'static, Result<TaskSnapshot, RuntimeError>>,
}

impl std::fmt::Debug for Waited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waited")
            .field("accepted", &self.accepted)
            .finish_non_exhaustive()
    }
}

/// The runtime's operations on tasks, on behalf of a caller whose [`Access`] says whose
/// tasks it may see: a user's own (`Access::Owner`), or every task (`Access::Any`).
#[async_trait]
pub trait TaskService: Send + Sync + 'static {
    /// The registered skills' cards.
    fn skills(&self) -> &[SkillCard];

    /// Whether this node is cut off from the database (a store several nodes share):
    /// it answers no request until it holds the database again. Default: never.
    fn is_cut_off(&self) -> bool {
        false
    }

    /// Starts a task or continues one; the task as stored, durable
    /// (`RuntimeHandle::submit` awaited).
    async fn submit(&self, request: SubmitRequest) -> Result<TaskSnapshot, RuntimeError>;

    /// Submits and follows the task's events, each durable (`Submission::follow`).
    async fn follow(&self, request: SubmitRequest) -> Result<Following, RuntimeError>;

    /// Submits for a caller that tells only the outcome (`Submission::wait`), which
    /// comes at the latest after `deadline`.
    async fn wait(
        &self,
        request: SubmitRequest,
        deadline: Duration,
    ) -> Result<Waited, RuntimeError>;

    /// The task and the sequence number of its last event.
    async fn snapshot(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
    ) -> Result<TaskSnapshot, RuntimeError>;

    /// The task, with at most `history_length` recent history messages.
    async fn get(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
    ) -> Result<Task, RuntimeError> {
        Ok(self.snapshot(task_id, history_length, access).await?.task)
    }

    /// The task as `get` reads it for `owner`, or for a holder of the scope of a skill
    /// whose waiting tasks holders may answer (`RuntimeHandle::get_as`). By default,
    /// only as `get` reads it.
    async fn get_as(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
        grants: &Grants,
    ) -> Result<Task, RuntimeError> {
        let _ = grants;
        self.get(task_id, history_length, access).await
    }

    /// A page of tasks.
    async fn list(&self, request: ListRequest) -> Result<TaskPage, RuntimeError>;

    /// Cancels a task; the task, canceled.
    async fn cancel(&self, task_id: &TaskId, access: Access<'_>) -> Result<Task, RuntimeError>;

    /// The task's events after `after_seq`, each durable.
    async fn subscribe(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        access: Access<'_>,
    ) -> Result<EventStream, RuntimeError>;

    /// The task's events after `after_seq` while it has an actor on this node, without
    /// waking a parked task or keeping one from parking (`RuntimeHandle::watch`). By
    /// default, as `subscribe`.
    async fn watch(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        access: Access<'_>,
    ) -> Result<EventStream, RuntimeError> {
        self.subscribe(task_id, after_seq, access).await
    }

    /// Where the task's live events would come from now (`RuntimeHandle::presence`).
    /// By default, its actor here: a service without parking never lets a task go.
    async fn presence(&self, task_id: &TaskId) -> Presence {
        let _ = task_id;
        Presence::Here
    }

    /// Registers a hook told when a task that a watcher let go of has something to
    /// follow again (`RuntimeHandle::on_wake`). By default, none is ever told.
    fn on_wake(&self, hook: WakeHook) {
        let _ = hook;
    }

    /// The W3C `traceparent` the task was created under.
    async fn traceparent(&self, task_id: &TaskId) -> Option<String>;

    /// The skill that runs the task, if the service knows the task (no access check:
    /// ask only about a task the caller was shown).
    async fn skill_of(&self, task_id: &TaskId) -> Option<SkillId> {
        let _ = task_id;
        None
    }

    /// The tasks waiting for an approver (`RuntimeHandle::approvals`). A service
    /// without approval gates has none.
    async fn approvals(&self) -> Result<Vec<PendingApproval>, RuntimeError> {
        Ok(Vec::new())
    }

    /// Decides on a task waiting for an approver (`RuntimeHandle::decide`).
    async fn decide(&self, task_id: &TaskId, decision: Decision) -> Result<Task, RuntimeError> {
        let _ = decision;
        let state = self
            .snapshot(task_id, Some(0), Access::Any)
            .await?
            .task
            .status
            .state;
        Err(RuntimeError::NotAwaitingApproval {
            id: task_id.clone(),
            state,
        })
    }
}

#[async_trait]
impl TaskService for RuntimeHandle {
    fn skills(&self) -> &[SkillCard] {
        RuntimeHandle::skills(self)
    }

    fn is_cut_off(&self) -> bool {
        RuntimeHandle::is_cut_off(self)
    }

    async fn submit(&self, request: SubmitRequest) -> Result<TaskSnapshot, RuntimeError> {
        RuntimeHandle::submit(self, request).await
    }

    async fn follow(&self, request: SubmitRequest) -> Result<Following, RuntimeError> {
        RuntimeHandle::submit(self, request).follow().await
    }

    async fn wait(
        &self,
        request: SubmitRequest,
        deadline: Duration,
    ) -> Result<Waited, RuntimeError> {
        let waiting = RuntimeHandle::submit(self, request).wait().await?;
        Ok(Waited {
            accepted: waiting.accepted().clone(),
            outcome: waiting.outcome(deadline).boxed(),
        })
    }

    async fn get_as(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
        grants: &Grants,
    ) -> Result<Task, RuntimeError> {
        RuntimeHandle::get_as(self, task_id, history_length, access, grants).await
    }

    async fn snapshot(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
    ) -> Result<TaskSnapshot, RuntimeError> {
        RuntimeHandle::snapshot(self, task_id, history_length, access).await
    }

    async fn list(&self, request: ListRequest) -> Result<TaskPage, RuntimeError> {
        RuntimeHandle::list(self, request).await
    }

    async fn cancel(&self, task_id: &TaskId, access: Access<'_>) -> Result<Task, RuntimeError> {
        RuntimeHandle::cancel(self, task_id, access).await
    }

    async fn subscribe(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        access: Access<'_>,
    ) -> Result<EventStream, RuntimeError> {
        RuntimeHandle::subscribe(self, task_id, after_seq, access).await
    }

    async fn watch(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        access: Access<'_>,
    ) -> Result<EventStream, RuntimeError> {
        RuntimeHandle::watch(self, task_id, after_seq, access).await
    }

    async fn presence(&self, task_id: &TaskId) -> Presence {
        RuntimeHandle::presence(self, task_id).await
    }

    fn on_wake(&self, hook: WakeHook) {
        RuntimeHandle::on_wake(self, hook);
    }

    async fn traceparent(&self, task_id: &TaskId) -> Option<String> {
        RuntimeHandle::traceparent(self, task_id).await
    }

    async fn skill_of(&self, task_id: &TaskId) -> Option<SkillId> {
        RuntimeHandle::skill_of(self, task_id).await
    }

    async fn approvals(&self) -> Result<Vec<PendingApproval>, RuntimeError> {
        RuntimeHandle::approvals(self).await
    }

    async fn decide(&self, task_id: &TaskId, decision: Decision) -> Result<Task, RuntimeError> {
        RuntimeHandle::decide(self, task_id, decision).await
    }
}
