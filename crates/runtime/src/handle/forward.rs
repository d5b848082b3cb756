//! Calls on a task's actor, wherever the task runs. On this node, the call goes to the
//! actor; when another node holds the task's lease (a store several nodes share, see
//! `store::Cluster`), it is handed to that node through the store, asked of the actor
//! there, settled there, and its answer carried back. Either way the caller gets the
//! same answers and the same errors.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use super::{RuntimeHandle, WeakRuntimeHandle};
use crate::actors::{NoAnswer, Routed, TaskMsg, call_actor};
use crate::approval::Decision;
use crate::error::RuntimeError;
use crate::model::{Message, Task, TaskId, TaskState};
use crate::requests::TaskSnapshot;
use crate::store::Incoming;

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
type Asked = (Result<Answer, RuntimeError>, Option<Outcome>);

/// Why a request asked of this node got no answer here.
enum NotHere {
    /// The actor stopped (or there was none, or it was busy beyond the timeout).
    Unanswered,
    /// Another node holds the task.
    Elsewhere,
}

/// What travels back from the node that runs the task.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Reply {
    Answered(Box<Answer>),
    Refused(Refusal),
    /// The actor stopped before it answered (the caller reads the store, as it does
    /// when an actor of its own stops).
    Unanswered,
}

/// A `RuntimeError` an actor answers with, carried between nodes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "camelCase")]
enum Refusal {
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

impl RuntimeHandle {
    /// Asks the task's actor, here or on the node that runs the task; `None` when the
    /// actor stopped (or there was none) before it answered.
    pub(crate) async fn ask(
        &self,
        task_id: &TaskId,
        request: TaskRequest,
        timeout: Duration,
    ) -> Option<Result<Answer, RuntimeError>> {
        let asked = self.ask_waited(task_id, request, false, timeout).await;
        asked.map(|(answer, _)| answer)
    }

    /// [`RuntimeHandle::ask`]; with `outcome`, an actor here that accepts the message
    /// answers the task's outcome too. A request handed to another node has none (the
    /// caller then follows the task's events instead).
    pub(crate) async fn ask_waited(
        &self,
        task_id: &TaskId,
        request: TaskRequest,
        outcome: bool,
        timeout: Duration,
    ) -> Option<Asked> {
        match self.ask_here(task_id, &request, outcome, timeout).await {
            Ok(asked) => Some(asked),
            Err(NotHere::Unanswered) => None,
            Err(NotHere::Elsewhere) => {
                let answer = self.forward(task_id, request, timeout).await?;
                Some((answer, None))
            }
        }
    }

    /// Asks the task's actor here, unless another node holds the task. An actor that
    /// parked (`actors::park`) after the route drops the request unanswered: it is asked
    /// once more, of the actor woken for it (a request it dropped was never applied).
    async fn ask_here(
        &self,
        task_id: &TaskId,
        request: &TaskRequest,
        outcome: bool,
        timeout: Duration,
    ) -> Result<Asked, NotHere> {
        for first in [true, false] {
            let actor = match self.route(task_id).await {
                Err(error) => return Ok((Err(error), None)),
                Ok(Routed::Elsewhere) => return Err(NotHere::Elsewhere),
                Ok(Routed::Here(None)) => return Err(NotHere::Unanswered),
                Ok(Routed::Here(Some(actor))) => actor,
            };
            let (waiter, answer) = outcome.then(oneshot::channel).unzip();
            let asked = match request.clone() {
                TaskRequest::Deliver { message } => {
                    let deliver = |r| TaskMsg::Deliver(message, r, waiter);
                    call_actor(&actor, deliver, timeout)
                        .await
                        .map(|r| r.map(Answer::Snapshot))
                }
                TaskRequest::Cancel => call_actor(&actor, TaskMsg::Cancel, timeout)
                    .await
                    .map(|r| r.map(Answer::Task)),
                TaskRequest::Decide { decision } => {
                    let decide = |r| TaskMsg::Decide(decision, r);
                    call_actor(&actor, decide, timeout)
                        .await
                        .map(|r| r.map(Answer::Task))
                }
            };
            match asked {
                Ok(result) => return Ok((result, answer)),
                Err(NoAnswer::Gone) if first => continue,
                Err(_) => return Err(NotHere::Unanswered),
            }
        }
        Err(NotHere::Unanswered)
    }

    /// Hands the request to the node holding the task, through the store.
    async fn forward(
        &self,
        task_id: &TaskId,
        request: TaskRequest,
        timeout: Duration,
    ) -> Option<Result<Answer, RuntimeError>> {
        let Some(cluster) = self.store().cluster() else {
            return Some(Err(RuntimeError::Unavailable(format!(
                "task {task_id} is held by another node, and this store has no other"
            ))));
        };
        let reply = async {
            let request = serde_json::to_value(&request).map_err(crate::StoreError::from)?;
            let reply = cluster.forward(task_id, request, timeout).await?;
            serde_json::from_value::<Reply>(reply).map_err(|e| {
                RuntimeError::Unavailable(format!(
                    "task {task_id}'s node answered in a form this node cannot read \
                     (are the nodes on different versions?): {e}"
                ))
            })
        };
        let sent = std::time::Instant::now();
        let reply = reply.await;
        let outcome = match &reply {
            Ok(Reply::Answered(_)) => "answered",
            Ok(Reply::Refused(_)) => "refused",
            Ok(Reply::Unanswered) => "unanswered",
            Err(_) => "error",
        };
        crate::telemetry::metrics().forwarded(outcome, sent.elapsed().as_secs_f64());
        match reply {
            Ok(Reply::Answered(answer)) => Some(Ok(*answer)),
            Ok(Reply::Refused(refusal)) => Some(Err(refusal.into())),
            Ok(Reply::Unanswered) => None,
            Err(error) => Some(Err(error)),
        }
    }

    /// Answers a request another node handed to this one: asked of the task's actor
    /// here (never handed on again), settled before the answer leaves.
    async fn serve(&self, task_id: &TaskId, request: Value) -> Reply {
        let request: TaskRequest = match serde_json::from_value(request) {
            Ok(request) => request,
            Err(e) => {
                return Reply::Refused(Refusal::Unavailable {
                    message: format!(
                        "task {task_id}'s node could not read the request \
                         (are the nodes on different versions?): {e}"
                    ),
                });
            }
        };
        let timeout = self.inner.config.call_timeout() + self.inner.config.cancel_grace();
        let asked = match self.ask_here(task_id, &request, false, timeout).await {
            Ok((Ok(answer), _)) => self.settle().await.map(|()| answer),
            Ok((Err(error), _)) => Err(error),
            Err(NotHere::Unanswered) => return Reply::Unanswered,
            Err(NotHere::Elsewhere) => Err(RuntimeError::Unavailable(format!(
                "task {task_id} moved to another node as the request reached it; send it again"
            ))),
        };
        match asked {
            Ok(answer) => Reply::Answered(Box::new(answer)),
            Err(error) => Reply::Refused(error.into()),
        }
    }
}

/// Serves the requests other nodes hand to this one, each on its own, while the runtime
/// lives.
pub(super) fn serve_incoming(
    handle: WeakRuntimeHandle,
    mut incoming: tokio::sync::mpsc::Receiver<Incoming>,
) {
    tokio::spawn(async move {
        while let Some(Incoming {
            task_id,
            request,
            answer,
        }) = incoming.recv().await
        {
            let Some(runtime) = handle.upgrade() else {
                return;
            };
            tokio::spawn(async move {
                let reply = runtime.serve(&task_id, request).await;
                match serde_json::to_value(&reply) {
                    Ok(reply) => {
                        let _ = answer.send(reply);
                    }
                    Err(error) => {
                        tracing::error!(%task_id, %error, "could not encode an answer for another node")
                    }
                }
            });
        }
    });
}
