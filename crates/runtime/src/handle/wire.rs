//! What a call on a task's actor asks and answers, in the form it travels in between
//! nodes (a store several nodes share hands a call to the node holding the task, see
//! `tasks`): an actor's refusal crosses as a `Refusal` and comes back as the same
//! `RuntimeError`.

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::approval::Decision;
use crate::error::RuntimeError;
use crate::model::{Message, Task, TaskId, TaskState};
use crate::requests::TaskSnapshot;

/// What a caller asks of a task's actor.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum TaskRequest {
    /// A user's follow-up message.
    Deliver { message: Message },
    /// Cancel the task.
    Cancel,
    /// An approver's decision.
    Decide { decision: Decision },
}

/// An actor's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Answer {
    /// The task as it stands (a cancel, a decision).
    Task(Task),
    /// The task after the message was accepted.
    Snapshot(TaskSnapshot),
}

impl Answer {
    pub(crate) fn task(self) -> Result<Task, RuntimeError> {
        match self {
            Answer::Task(task) => Ok(task),
            Answer::Snapshot(snapshot) => Ok(snapshot.task),
        }
    }

    pub(crate) fn snapshot(self) -> Result<TaskSnapshot, RuntimeError> {
        match self {
            Answer::Snapshot(snapshot) => Ok(snapshot),
            Answer::Task(_) => Err(RuntimeError::Unavailable(
                "a task's node answered a message with no snapshot".into(),
            )),
        }
    }
}

/// The task's outcome, as its actor here answers a submitter that waits for it.
pub(crate) type Outcome = oneshot::Receiver<TaskSnapshot>;

/// The answer of the task's actor here, with the outcome to come when it was asked for.
pub(super) type Asked = (Result<Answer, RuntimeError>, Option<Outcome>);

/// Why a request asked of this node got no answer here.
pub(super) enum NotHere {
    /// The actor stopped (or there was none, or it was busy beyond the timeout).
    Unanswered,
    /// Another node holds the task.
    Elsewhere,
}

/// What travels back from the node that runs the task.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum Reply {
    Answered(Box<Answer>),
    Refused(Refusal),
    /// The actor stopped before it answered (the caller reads the store, as it does
    /// when an actor of its own stops).
    Unanswered,
}

/// A `RuntimeError` an actor answers with, carried between nodes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "camelCase")]
pub(super) enum Refusal {
    TaskNotFound {
        id: TaskId,
    },
    NotCancelable {
        id: TaskId,
        state: TaskState,
    },
    TaskTerminal {
        id: TaskId,
        state: TaskState,
    },
    NotAcceptingInput {
        id: TaskId,
        state: TaskState,
    },
    QueueFull {
        id: TaskId,
        waiting: usize,
    },
    BeingCanceled {
        id: TaskId,
    },
    AwaitingApproval {
        id: TaskId,
    },
    NotAwaitingApproval {
        id: TaskId,
        state: TaskState,
    },
    InvalidInput {
        message: String,
    },
    /// Anything else, as its text (store failures, a runtime shutting down).
    Unavailable {
        message: String,
    },
}

impl From<RuntimeError> for Refusal {
    fn from(error: RuntimeError) -> Refusal {
        match error {
            RuntimeError::TaskNotFound(id) => Refusal::TaskNotFound { id },
            RuntimeError::NotCancelable { id, state } => Refusal::NotCancelable { id, state },
            RuntimeError::TaskTerminal { id, state } => Refusal::TaskTerminal { id, state },
            RuntimeError::NotAcceptingInput { id, state } => {
                Refusal::NotAcceptingInput { id, state }
            }
            RuntimeError::QueueFull { id, waiting } => Refusal::QueueFull { id, waiting },
            RuntimeError::BeingCanceled { id } => Refusal::BeingCanceled { id },
            RuntimeError::AwaitingApproval { id } => Refusal::AwaitingApproval { id },
            RuntimeError::NotAwaitingApproval { id, state } => {
                Refusal::NotAwaitingApproval { id, state }
            }
            RuntimeError::InvalidInput(message) => Refusal::InvalidInput { message },
            RuntimeError::InvalidField(field) => Refusal::InvalidInput {
                message: field.to_string(),
            },
            other => Refusal::Unavailable {
                message: other.to_string(),
            },
        }
    }
}

impl From<Refusal> for RuntimeError {
    fn from(refusal: Refusal) -> RuntimeError {
        match refusal {
            Refusal::TaskNotFound { id } => RuntimeError::TaskNotFound(id),
            Refusal::NotCancelable { id, state } => RuntimeError::NotCancelable { id, state },
            Refusal::TaskTerminal { id, state } => RuntimeError::TaskTerminal { id, state },
            Refusal::NotAcceptingInput { id, state } => {
                RuntimeError::NotAcceptingInput { id, state }
            }
            Refusal::QueueFull { id, waiting } => RuntimeError::QueueFull { id, waiting },
            Refusal::BeingCanceled { id } => RuntimeError::BeingCanceled { id },
            Refusal::AwaitingApproval { id } => RuntimeError::AwaitingApproval { id },
            Refusal::NotAwaitingApproval { id, state } => {
                RuntimeError::NotAwaitingApproval { id, state }
            }
            Refusal::InvalidInput { message } => RuntimeError::InvalidInput(message),
            Refusal::Unavailable { message } => RuntimeError::Unavailable(message),
        }
    }
}
