//! `SkillContext`: how a running skill reports to its task. Every call returns once the
//! change is stored and published, except the `post_` ones, which return once the note
//! is queued for its task; readers see a change once it is stored, and clients and
//! webhooks are told of it once it is durable. A skill that acts on the outside world on
//! the strength of a stored change (say, a checkpoint that records a step as done) calls
//! [`SkillContext::settle`] first. Progress reports are in `progress`; what a run hears
//! from its task's users is in `messages`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::cpu::{Budget, CpuPool};
use crate::error::{RuntimeError, SkillError};
use crate::model::{Artifact, ContextId, Message, Part, Task, TaskId};
use crate::run_link::{PostedNotes, QueuedMessages, SkillCall, TaskLink};
use crate::store::TaskStore;
use crate::telemetry;

pub use crate::run_link::MAX_POSTED;

mod messages;
mod progress;

/// The longest idle wait (`SkillContext::idle`): thirty years.
pub(crate) const FOREVER: Duration = Duration::from_secs(30 * 365 * 86_400);

/// A running skill's handle on its task. Cheap to clone.
#[derive(Clone)]
pub struct SkillContext {
    link: Arc<dyn TaskLink>,
    store: Arc<dyn TaskStore>,
    task_id: TaskId,
    context_id: ContextId,
    cancel: CancellationToken,
    checkpoint: Arc<Mutex<Option<Value>>>,
    /// Notes posted (`post_progress`) and not yet taken by the actor.
    posted: Arc<PostedNotes>,
    /// Messages queued for the run (`MessagePolicy::Enqueue`).
    queued: Arc<QueuedMessages>,
    span: tracing::Span,
    skill: Arc<str>,
    cpu: Cpu,
    /// Time this run's CPU work has spent on the pool.
    cpu_spent: Arc<Mutex<Duration>>,
}

/// The pool a run's CPU-heavy work runs on, its budget, and what it has spent so far.
#[derive(Clone)]
pub(crate) struct Cpu {
    pub(crate) pool: Arc<CpuPool>,
    pub(crate) budget: Duration,
}

impl std::fmt::Debug for SkillContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillContext")
            .field("task_id", &self.task_id)
            .finish_non_exhaustive()
    }
}

impl SkillContext {
    #[allow(clippy::too_many_arguments)] // one caller, the task actor
    pub(crate) fn new(
        link: Arc<dyn TaskLink>,
        store: Arc<dyn TaskStore>,
        task: &Task,
        cancel: CancellationToken,
        checkpoint: Option<Value>,
        posted: Arc<PostedNotes>,
        queued: Arc<QueuedMessages>,
        span: tracing::Span,
        skill: &str,
        cpu: Cpu,
    ) -> SkillContext {
        SkillContext {
            link,
            store,
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            cancel,
            checkpoint: Arc::new(Mutex::new(checkpoint)),
            posted,
            queued,
            span,
            skill: skill.into(),
            cpu,
            cpu_spent: Arc::new(Mutex::new(Duration::ZERO)),
        }
    }

    /// Runs CPU-heavy `work` (parsing, matching, scoring) on the runtime's bounded pool
    /// (`runtime.cpu-workers`), never on the threads that serve requests and tasks. The
    /// work gets a [`Budget`] to check every few milliseconds: it runs out when the task
    /// is canceled (this call then returns [`SkillError::Canceled`] at once) or when the
    /// run has spent `runtime.cpu-budget-ms` on the pool (the work should then return
    /// `Err`, which the skill turns into its failure). A panic in `work` is the run's.
    pub async fn cpu<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Budget) -> T + Send + 'static,
    ) -> Result<T, SkillError> {
        let spent = *self.cpu_spent.lock().unwrap_or_else(|e| e.into_inner());
        let budget = Budget::for_run(self.cpu.budget, spent);
        if let Err(exhausted) = budget.check() {
            return Err(SkillError::Failed(exhausted.to_string()));
        }
        let stopper = budget.clone();
        let handle = tokio::select! {
            () = self.cancel.cancelled() => return Err(SkillError::Canceled),
            handle = self.cpu.pool.run(budget, work) => handle
                .ok_or_else(|| SkillError::runtime(RuntimeError::Unavailable("the runtime is stopping".into())))?,
        };
        let started = std::time::Instant::now();
        let joined = tokio::select! {
            () = self.cancel.cancelled() => {
                stopper.cancel();
                return Err(SkillError::Canceled);
            }
            joined = handle => joined,
        };
        *self.cpu_spent.lock().unwrap_or_else(|e| e.into_inner()) += started.elapsed();
        match joined {
            Ok(value) => Ok(value),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => Err(SkillError::runtime(error)),
        }
    }

    /// Records a fault the skill injected on purpose (a chaos experiment's latency,
    /// reset, error...): counted in `fundi.chaos.events`, never as a failure, and noted
    /// on the run's span (an event with `chaos = true`; debug, with the progress notes,
    /// so that a console at `info` shows no line per fault).
    pub fn chaos_event(&self, fault: &str, detail: &str) {
        tracing::debug!(target: telemetry::PROGRESS_TARGET, parent: &self.span, chaos = true, fault, detail, "chaos event");
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
        tracing::debug!(target: telemetry::PROGRESS_TARGET, parent: &self.span, status = %text, "status");
        self.send(SkillCall::Status {
            message: Message::agent(vec![Part::text(text)]),
            checkpoint: None,
        })
        .await
        .map(drop)
    }

    /// Posts a whole agent message as a progress note (parts and metadata as given: a
    /// peer's note mirrored, facts a client reads from the metadata), with a checkpoint
    /// saved in the same commit when one is given.
    pub async fn status_message(
        &self,
        message: Message,
        checkpoint: Option<Value>,
    ) -> Result<(), SkillError> {
        self.send(SkillCall::Status {
            message,
            checkpoint: checkpoint.clone(),
        })
        .await?;
        if let Some(checkpoint) = checkpoint {
            self.remember(checkpoint);
        }
        Ok(())
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

    /// Saves a checkpoint with the task; a resumed run gets the last one back.
    pub async fn checkpoint(&self, value: Value) -> Result<(), SkillError> {
        self.send(SkillCall::Checkpoint(value.clone())).await?;
        self.remember(value);
        Ok(())
    }

    /// The checkpoint `last_checkpoint` returns from now on.
    fn remember(&self, checkpoint: Value) {
        *self.checkpoint.lock().unwrap_or_else(|p| p.into_inner()) = Some(checkpoint);
    }

    /// Returns once every change stored so far (this run's included), and every note this
    /// run posted before the call, is durable: in sled `sync` mode, on disk. Changes are
    /// stored without waiting for the disk; call this before acting on the outside world
    /// on the strength of one, so that a crash cannot undo the record of a step whose
    /// effects remain.
    pub async fn settle(&self) -> Result<(), SkillError> {
        if self.posted.unsettled() {
            // Stored first: the call is answered once the notes posted before it are.
            self.send(SkillCall::StorePosted).await?;
        }
        self.store.settle().await.map_err(SkillError::runtime)
    }

    /// Waits `wait` with nothing for the run to do: it waits on something outside its
    /// task (a peer's task, a build, a deadline) and has no other way to hear of it than
    /// to look again later. Fails with [`SkillError::Canceled`] when the task is canceled
    /// first.
    ///
    /// A resumable skill's task gives up its actor during such a wait, as a task waiting
    /// for input does: it parks once nothing has happened to it for
    /// `runtime.park-after-ms` while the wait still has at least that long to go (so a
    /// wait of twice that or more), and nothing else keeps it live (a subscriber, a
    /// blocking send waiting for its outcome, a queued message). The run then stops
    /// inside this call (its future is dropped, so nothing after the call runs), and
    /// once `wait` is over, or sooner when a message, a subscriber, a cancel or a restart
    /// wakes the task, a new run starts from the last checkpoint with
    /// [`crate::SkillInput::resumed`] set. Checkpoint what the run needs to go on before
    /// a long wait; what a canceled parked task must let go of outside is
    /// [`crate::Skill::canceled_at_rest`]'s to do.
    ///
    /// Call it only when the whole run waits: a run that goes on working beside the
    /// wait (one branch of a `join!`, work on [`SkillContext::cpu`]) is stopped with it.
    pub async fn idle(&self, wait: Duration) -> Result<(), SkillError> {
        let now = tokio::time::Instant::now();
        // A wait past what the clock can say (`Duration::MAX`) is as good as forever.
        let until = now.checked_add(wait).unwrap_or(now + FOREVER);
        self.send(SkillCall::Idle { until }).await?;
        tokio::select! {
            () = self.cancel.cancelled() => Err(SkillError::Canceled),
            () = tokio::time::sleep_until(until) => Ok(()),
        }
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

    /// The fencing check before a side effect that must happen at most once (a push to
    /// a remote, a listener opened): with several nodes on one store, this node still
    /// holds the task's lease, asked of the database now, and is not cut off from it.
    /// An error means another node may run the task (or soon will): do not act; return
    /// the error, and the run stops here. With one node, always `Ok` once not canceled.
    pub async fn ensure_still_held(&self) -> Result<(), SkillError> {
        if self.cancel.is_cancelled() {
            return Err(SkillError::Canceled);
        }
        match self.store.cluster() {
            Some(cluster) => cluster
                .check_held(&self.task_id)
                .await
                .map_err(SkillError::runtime),
            None => Ok(()),
        }
    }

    async fn send(&self, call: SkillCall) -> Result<Option<Message>, SkillError> {
        if self.cancel.is_cancelled() {
            return Err(SkillError::Canceled);
        }
        match self.link.call(call).await {
            Some(reply) => reply,
            None => Err(self.gone()),
        }
    }

    /// Why the actor did not take a call: it stopped after a cancel, or otherwise.
    fn gone(&self) -> SkillError {
        match self.cancel.is_cancelled() {
            true => SkillError::Canceled,
            false => {
                SkillError::runtime(RuntimeError::Unavailable("the task actor is gone".into()))
            }
        }
    }
}
