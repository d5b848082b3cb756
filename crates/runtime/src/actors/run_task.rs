//! A skill run as the tokio task of its own that its actor supervises: what it is
//! started with (its context and input), its link back to the actor, its first poll
//! (made in the actor for a blocking send), and how its end (return, failure, panic or
//! abort) reads as the task's last changes.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::journal::{JournalError, status, status_change};
use super::task_msg::{RunOutcome, TaskMsg};
use super::writer::Writer;
use crate::config::RuntimeConfig;
use crate::context::{Cpu, SkillContext};
use crate::cpu::CpuPool;
use crate::error::RuntimeError;
use crate::model::{Message, Role, TaskEventKind, TaskState};
use crate::run_link::{SkillCall, SkillReply, TaskLink};
use crate::skill::{MessagePolicy, Skill, SkillError, SkillInput, SkillOutput};
use crate::store::{StoreError, TaskStore};
use crate::telemetry;

/// What a task's runs are started with.
pub(super) struct RunSettings {
    pub(super) skill: Arc<dyn Skill>,
    /// What a message does while the run works (the skill's card).
    pub(super) policy: MessagePolicy,
    pub(super) config: Arc<RuntimeConfig>,
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) cpu: Arc<CpuPool>,
}

impl RunSettings {
    /// The skill's run of the task `writer` holds, from `message`: its context linked
    /// to the actor through `link`, told to stop by `cancel`, traced in `span`.
    pub(super) fn run(
        &self,
        writer: &Writer,
        link: ActorLink,
        message: Message,
        resumed: bool,
        cancel: CancellationToken,
        span: tracing::Span,
    ) -> impl Future<Output = Result<SkillOutput, SkillError>> + Send + 'static {
        let record = writer.journal.record();
        let task = &record.task;
        let (posted, queued) = writer.run_links();
        let ctx = SkillContext::new(
            Arc::new(link),
            self.store.clone(),
            task,
            cancel,
            record.checkpoint.clone(),
            posted,
            queued,
            span.clone(),
            &record.skill,
            Cpu {
                pool: self.cpu.clone(),
                budget: self.config.cpu_budget(),
            },
        );
        let input = SkillInput {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            message,
            history: task.history.clone(),
            checkpoint: record.checkpoint.clone(),
            resumed,
            owner: record.owner.clone(),
        };
        let skill = self.skill.clone();
        async move { skill.run(input, ctx).await }.instrument(span)
    }
}

/// A run's link to its task: calls and notices go to the task's actor, naming the run
/// (a run stopped for a message that interrupted it must not write into the next).
pub(super) struct ActorLink {
    pub(super) actor: ActorRef<TaskMsg>,
    pub(super) run: u64,
}

#[async_trait]
impl TaskLink for ActorLink {
    async fn call(&self, call: SkillCall) -> Option<SkillReply> {
        let run = self.run;
        let sent = self
            .actor
            .call(|reply| TaskMsg::Skill(call, reply, run), None);
        match sent.await {
            Ok(CallResult::Success(reply)) => Some(reply),
            Ok(_) | Err(_) => None,
        }
    }

    fn notes_posted(&self) -> bool {
        self.actor.cast(TaskMsg::Posted).is_ok()
    }
}

/// A skill's run, as its actor drives it.
pub(super) type SkillRun = Pin<Box<dyn Future<Output = Result<SkillOutput, SkillError>> + Send>>;

/// Polls `run` once; its outcome if it ended (returned or panicked). A run still going
/// is then spawned as a task of its own, whose first poll registers the waker that
/// counts (this one wakes nothing).
pub(super) fn poll_once(run: &mut SkillRun) -> Option<RunOutcome> {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    match std::panic::catch_unwind(AssertUnwindSafe(|| run.as_mut().poll(&mut cx))) {
        Ok(Poll::Ready(result)) => Some(RunOutcome::Returned(result)),
        Ok(Poll::Pending) => None,
        Err(payload) => Some(RunOutcome::Panicked(panic_text(payload))),
    }
}

pub(super) fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(panic payload is not text)".to_owned()
    }
}

/// What a skill is told when its task could not take what it asked.
pub(super) fn refusal(error: JournalError) -> SkillError {
    SkillError::runtime(error)
}

/// A run's output as changes: its artifacts, then the completed status.
pub(super) fn completion(output: SkillOutput) -> Vec<TaskEventKind> {
    let mut kinds: Vec<TaskEventKind> = output
        .artifacts
        .into_iter()
        .map(|artifact| TaskEventKind::Artifact {
            artifact,
            append: false,
            last_chunk: true,
        })
        .collect();
    let message = output.message.map(|mut m| {
        m.role = Role::Agent;
        m
    });
    kinds.push(TaskEventKind::Status(status(TaskState::Completed, message)));
    kinds
}

/// How the run's end reads as the task's last changes (counted as a failure where it
/// is one).
pub(super) fn ending(outcome: RunOutcome) -> Vec<TaskEventKind> {
    match outcome {
        RunOutcome::Returned(Ok(output)) => completion(output),
        RunOutcome::Returned(Err(SkillError::Rejected(reason))) => {
            vec![status_change(TaskState::Rejected, Some(reason))]
        }
        RunOutcome::Returned(Err(SkillError::Canceled)) => {
            telemetry::metrics().failure("skill");
            let text = "the skill stopped as canceled, but no cancel was requested";
            vec![status_change(TaskState::Failed, Some(text.into()))]
        }
        RunOutcome::Returned(Err(error)) => {
            telemetry::metrics().failure("skill");
            vec![status_change(TaskState::Failed, Some(error.to_string()))]
        }
        RunOutcome::Panicked(text) => {
            telemetry::metrics().failure("panic");
            let text = format!("skill panicked: {text}");
            vec![status_change(TaskState::Failed, Some(text))]
        }
        RunOutcome::Aborted => {
            telemetry::metrics().failure("runtime");
            let text = "the skill run was aborted".into();
            vec![status_change(TaskState::Failed, Some(text))]
        }
    }
}

/// Whether the run ended on the store's word that this node may not act on the task.
pub(super) fn stopped_by_lease(outcome: &RunOutcome) -> bool {
    let RunOutcome::Returned(Err(SkillError::Runtime(error))) = outcome else {
        return false;
    };
    matches!(
        **error,
        RuntimeError::Store(StoreError::CutOff | StoreError::Fenced { .. })
    )
}
