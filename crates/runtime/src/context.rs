//! `SkillContext`: how a running skill reports to its task. Every call returns once the
//! change is stored and published; readers see it at once, and clients and webhooks are
//! told of it once it is durable. A skill that acts on the outside world on the strength
//! of a stored change (say, a checkpoint that records a step as done) calls
//! [`SkillContext::settle`] first.

use std::sync::{Arc, Mutex};

use ractor::rpc::CallResult;
use ractor::{ActorRef, RpcReplyPort};
use serde_json::{Value, json};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::actors::{SkillCall, TaskMsg};
use crate::model::{Artifact, ContextId, Message, Part, Task, TaskId};
use crate::skill::SkillError;
use crate::store::TaskStore;
use crate::telemetry;

/// A running skill's handle on its task. Cheap to clone.
#[derive(Clone)]
pub struct SkillContext {
    actor: ActorRef<TaskMsg>,
    store: Arc<dyn TaskStore>,
    task_id: TaskId,
    context_id: ContextId,
    cancel: CancellationToken,
    checkpoint: Arc<Mutex<Option<Value>>>,
    span: tracing::Span,
    skill: Arc<str>,
}

impl std::fmt::Debug for SkillContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillContext")
            .field("task_id", &self.task_id)
            .finish_non_exhaustive()
    }
}

impl SkillContext {
    pub(crate) fn new(
        actor: ActorRef<TaskMsg>,
        store: Arc<dyn TaskStore>,
        task: &Task,
        cancel: CancellationToken,
        checkpoint: Option<Value>,
        span: tracing::Span,
        skill: &str,
    ) -> SkillContext {
        SkillContext {
            actor,
            store,
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            cancel,
            checkpoint: Arc::new(Mutex::new(checkpoint)),
            span,
            skill: skill.into(),
        }
    }

    /// Records a fault the skill injected on purpose (a chaos experiment's latency,
    /// reset, error...): counted in `fundi.chaos.events`, never as a failure, and noted
    /// on the run's span.
    pub fn chaos_event(&self, fault: &str, detail: &str) {
        tracing::info!(parent: &self.span, fault, detail, "chaos event");
        telemetry::metrics().chaos_event(&self.skill, fault);
    }

    /// The task this run belongs to.
    pub fn task_id(&self) -> &TaskId {
        &self.task_id
    }

    /// The task's context.
    pub fn context_id(&self) -> &ContextId {
        &self.context_id
    }

    /// The run's tracing span (a child of the task's span).
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Posts a progress note (the task stays `working`).
    pub async fn status(&self, text: impl Into<String>) -> Result<(), SkillError> {
        let text = text.into();
        tracing::info!(parent: &self.span, status = %text, "status");
        self.send(SkillCall::Status {
            message: Message::agent(vec![Part::text(text)]),
            checkpoint: None,
        })
        .await
        .map(drop)
    }

    /// Posts progress as a fraction from 0 to 1 with a note; the fraction travels in the
    /// status message's metadata as `progress`.
    pub async fn progress(&self, fraction: f64, text: impl Into<String>) -> Result<(), SkillError> {
        self.report_progress(fraction, text.into(), None).await
    }

    /// Posts progress and saves a checkpoint in one commit: after a restart the run
    /// resumes from exactly the step it last reported (neither repeated nor skipped).
    pub async fn progress_with_checkpoint(
        &self,
        fraction: f64,
        text: impl Into<String>,
        checkpoint: Value,
    ) -> Result<(), SkillError> {
        self.report_progress(fraction, text.into(), Some(checkpoint.clone()))
            .await?;
        *self.checkpoint.lock().unwrap_or_else(|p| p.into_inner()) = Some(checkpoint);
        Ok(())
    }

    async fn report_progress(
        &self,
        fraction: f64,
        text: String,
        checkpoint: Option<Value>,
    ) -> Result<(), SkillError> {
        let fraction = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        // A span event per progress report (the run's span shows the skill's progress).
        tracing::info!(parent: &self.span, progress = fraction, status = %text, "progress");
        let mut message = Message::agent(vec![Part::text(text)]);
        message.metadata = json!({ "progress": fraction }).as_object().cloned();
        self.send(SkillCall::Status {
            message,
            checkpoint,
        })
        .await
        .map(drop)
    }

    /// Adds (or replaces, by id) a whole artifact.
    pub async fn artifact(&self, artifact: Artifact) -> Result<(), SkillError> {
        self.send(SkillCall::Artifact {
            artifact,
            append: false,
            last_chunk: false,
        })
        .await
        .map(drop)
    }

    /// Streams an artifact in chunks: the first chunk with `append` false starts it, later
    /// chunks with `append` true add parts, `last_chunk` closes it.
    pub async fn artifact_chunk(
        &self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), SkillError> {
        self.send(SkillCall::Artifact {
            artifact,
            append,
            last_chunk,
        })
        .await
        .map(drop)
    }

    /// Moves the task to `input-required` with this prompt and resolves with the user's
    /// next message for the task. Fails with [`SkillError::Canceled`] if the task is
    /// canceled while waiting.
    pub async fn request_input(&self, prompt: impl Into<String>) -> Result<Message, SkillError> {
        let prompt = Message::agent(vec![Part::text(prompt)]);
        match self.send(SkillCall::RequestInput { prompt }).await? {
            Some(message) => Ok(message),
            None => Err(SkillError::Runtime("no message was delivered".into())),
        }
    }

    /// Saves a checkpoint with the task; a resumed run gets the last one back.
    pub async fn checkpoint(&self, value: Value) -> Result<(), SkillError> {
        self.send(SkillCall::Checkpoint(value.clone())).await?;
        *self.checkpoint.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
        Ok(())
    }

    /// Returns once every change stored so far (this run's included) is durable: in sled
    /// `sync` mode, on disk. Changes are stored without waiting for the disk; call this
    /// before acting on the outside world on the strength of one, so that a crash cannot
    /// undo the record of a step whose effects remain.
    pub async fn settle(&self) -> Result<(), SkillError> {
        telemetry::settle(&*self.store)
            .await
            .map_err(|e| SkillError::Runtime(e.to_string()))
    }

    /// The last checkpoint saved (by this run, or by the run it resumes).
    pub fn last_checkpoint(&self) -> Option<Value> {
        self.checkpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Resolves when the task is canceled; select on it in long loops.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Whether the task has been canceled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    async fn send(&self, call: SkillCall) -> Result<Option<Message>, SkillError> {
        if self.cancel.is_cancelled() {
            return Err(SkillError::Canceled);
        }
        // No timeout: the call waits for the store (and, for input, for a human).
        match self
            .actor
            .call(|reply: RpcReplyPort<_>| TaskMsg::Skill(call, reply), None)
            .await
        {
            Ok(CallResult::Success(result)) => result,
            Ok(_) | Err(_) if self.cancel.is_cancelled() => Err(SkillError::Canceled),
            Ok(_) | Err(_) => Err(SkillError::Runtime("the task actor is gone".into())),
        }
    }
}
