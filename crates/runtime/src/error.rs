//! The runtime's error types: what an embedder (or the gateway) can be told
//! (`RuntimeError`), and how a skill's run can fail (`SkillError`).

use std::sync::Arc;

use thiserror::Error;

use crate::model::limits::InvalidField;
use crate::model::{ContextId, TaskId, TaskState};
use crate::store::StoreError;

/// Why a runtime operation failed.
#[derive(Debug, Error)]
pub enum RuntimeError {
    /// No such task (or not visible to the caller).
    #[error("task {0} not found")]
    TaskNotFound(TaskId),
    /// Cancel of a task that has already ended.
    #[error("task {id} cannot be canceled: it is already {state}")]
    NotCancelable {
        /// The task.
        id: TaskId,
        /// Its terminal state.
        state: TaskState,
    },
    /// A message for a task that has ended; start a new task in the same context instead.
    #[error("task {id} is {state} and accepts no more messages; start a new task in its context")]
    TaskTerminal {
        /// The task.
        id: TaskId,
        /// Its terminal state.
        state: TaskState,
    },
    /// A message for a task that is not waiting for input, whose skill refuses messages
    /// while it works (`MessagePolicy::Reject`).
    #[error(
        "task {id} is {state} and its skill refuses messages while it works; send one when \
         the task is input-required or auth-required"
    )]
    NotAcceptingInput {
        /// The task.
        id: TaskId,
        /// Its current state.
        state: TaskState,
    },
    /// A message for a task whose run has `MAX_QUEUED_MESSAGES` waiting already.
    #[error(
        "task {id} has {waiting} messages waiting for its run already; send more once it \
         has taken some"
    )]
    QueueFull {
        /// The task.
        id: TaskId,
        /// How many wait.
        waiting: usize,
    },
    /// A message for a task whose cancel is under way.
    #[error("task {id} is being canceled and accepts no more messages")]
    BeingCanceled {
        /// The task.
        id: TaskId,
    },
    /// The message names a task and a different context than the task's.
    #[error("message contextId {given} does not match task {task_id}'s contextId {actual}")]
    ContextMismatch {
        /// The task.
        task_id: TaskId,
        /// The context the message names.
        given: ContextId,
        /// The task's context.
        actual: ContextId,
    },
    /// The message selects a skill that is not registered.
    #[error("unknown skill {id:?}; the skills are {available:?}")]
    UnknownSkill {
        /// The skill asked for.
        id: String,
        /// The registered skill ids.
        available: Vec<String>,
    },
    /// The message selects no skill and there is no default.
    #[error(
        "no skill selected: set message metadata \"skill\" to one of {available:?} (no default is configured)"
    )]
    NoSkillSelected {
        /// The registered skill ids.
        available: Vec<String>,
    },
    /// The caller lacks the scope the skill requires; nothing was created or changed.
    #[error("skill {skill:?} requires the scope {scope:?}, which the caller does not hold")]
    Forbidden {
        /// The skill asked for.
        skill: String,
        /// The scope it requires.
        scope: String,
    },
    /// A message for a task that waits for an approver: nothing can be added until it
    /// is approved or rejected.
    #[error("task {id} waits for an approver and accepts no messages until it is approved")]
    AwaitingApproval {
        /// The task.
        id: TaskId,
    },
    /// A decision on a task that does not wait for an approver.
    #[error("task {id} does not wait for an approver (it is {state})")]
    NotAwaitingApproval {
        /// The task.
        id: TaskId,
        /// Its state.
        state: TaskState,
    },
    /// The approver is the user who asked, and `runtime.approver-must-differ` is set.
    #[error("task {id} was asked for by {user}, who may not approve it: another approver must")]
    ApproverIsRequester {
        /// The task.
        id: TaskId,
        /// The user.
        user: String,
    },
    /// No schedule has this id.
    #[error("schedule {0} not found")]
    ScheduleNotFound(String),
    /// The request is malformed; the text names what is wrong.
    #[error("invalid request: {0}")]
    InvalidInput(String),
    /// A field of the request is not acceptable (too long, nested too deeply, ...).
    #[error("invalid request: {0}")]
    InvalidField(#[from] InvalidField),
    /// The runtime is shutting down or an internal component did not answer: trying
    /// again later may succeed.
    #[error("runtime unavailable: {0}")]
    Unavailable(String),
    /// Something the runtime relies on did not hold (a stored task its own events do
    /// not replay onto, a task without its first message): a bug or damaged data, never
    /// the caller's doing, and not worth trying again.
    #[error("an invariant of the runtime broke: {what}")]
    Invariant {
        /// What did not hold, and where.
        what: String,
        /// The error that showed it, when one did.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Work the runtime ran on a task of its own (a skill's CPU work) stopped before it
    /// finished.
    #[error("runtime work stopped: {0}")]
    Worker(#[from] tokio::task::JoinError),
}

/// How a run can fail.
#[derive(Debug, Clone, Error)]
pub enum SkillError {
    /// The run failed; the text becomes the failed status message.
    #[error("{0}")]
    Failed(String),
    /// The skill refuses the task (bad input, out of policy): the task ends `rejected`.
    #[error("{0}")]
    Rejected(String),
    /// The task was canceled; return this (or anything) promptly once `cancelled()` fires.
    #[error("the task was canceled")]
    Canceled,
    /// The runtime could not do what the skill asked for (the store failed, the change
    /// was over a limit, the runtime is stopping...). Shared, so that the error stays
    /// cloneable with its source.
    #[error("runtime error: {0}")]
    Runtime(#[source] Arc<RuntimeError>),
}

impl SkillError {
    /// A runtime failure, as a skill's run sees it.
    pub fn runtime(error: impl Into<RuntimeError>) -> SkillError {
        SkillError::Runtime(Arc::new(error.into()))
    }
}

/// Runtime failures compare by what they say (their sources are not comparable).
impl PartialEq for SkillError {
    fn eq(&self, other: &SkillError) -> bool {
        match (self, other) {
            (SkillError::Failed(a), SkillError::Failed(b))
            | (SkillError::Rejected(a), SkillError::Rejected(b)) => a == b,
            (SkillError::Canceled, SkillError::Canceled) => true,
            (SkillError::Runtime(a), SkillError::Runtime(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}
impl RuntimeError {
    /// An invariant that did not hold: `what` says which, and where.
    pub fn invariant(what: impl Into<String>) -> RuntimeError {
        RuntimeError::Invariant {
            what: what.into(),
            source: None,
        }
    }

    /// An invariant that `source` showed did not hold.
    pub fn broken(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> RuntimeError {
        RuntimeError::Invariant {
            what: what.into(),
            source: Some(Box::new(source)),
        }
    }
}

/// An error and its causes in one line (`a: b: c`), a cause left out where the text
/// before it already quotes it: what many errors say only in their sources (the refused
/// connection, the certificate that did not verify, the database's own words).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}
