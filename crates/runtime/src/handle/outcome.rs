//! `Waiting`: a submission whose submitter tells only the task's outcome (a blocking
//! send). The task's actor answers it with the task as it stands once the task is at
//! rest; where no actor here can (another node runs the task, or its actor stopped
//! first), the task's events say when, and the store has the task.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::oneshot;

use super::RuntimeHandle;
use crate::access::Access;
use crate::approval::at_rest;
use crate::error::RuntimeError;
use crate::requests::TaskSnapshot;
use crate::subscription::Listen;

/// A task submitted by [`crate::Submission::wait`], until its outcome.
pub struct Waiting {
    accepted: TaskSnapshot,
    handle: RuntimeHandle,
    /// The actor's answer, when the task's actor is on this node.
    answer: Option<oneshot::Receiver<TaskSnapshot>>,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("accepted", &self.accepted)
            .finish_non_exhaustive()
    }
}

impl Waiting {
    /// The wait for `accepted`, answered through `answer` by the task's actor here.
    pub(super) fn new(
        handle: RuntimeHandle,
        accepted: TaskSnapshot,
        answer: Option<oneshot::Receiver<TaskSnapshot>>,
    ) -> Waiting {
        Waiting {
            accepted,
            handle,
            answer,
        }
    }

    /// The task as accepted: stored (readable), not durable yet. Tell only its id; a
    /// push config may be attached to it (push deliveries settle before they send).
    pub fn accepted(&self) -> &TaskSnapshot {
        &self.accepted
    }

    /// The task once it is at rest (ended, or waiting for someone: a user's input, an
    /// approver), or as it stands when `deadline` passes first (a skill may keep a task
    /// working for long), durable. An error if the task ended before it could be stored
    /// (a store error or a shutdown).
    pub async fn outcome(mut self, deadline: Duration) -> Result<TaskSnapshot, RuntimeError> {
        let reached = match at_rest(&self.accepted.task.status) {
            // Accepted at rest (ended, or waiting: a message sent again, whose task got
            // there already): nothing more may come.
            true => Some(self.accepted.clone()),
            // (A deadline too far to represent never passes.)
            false => match tokio::time::timeout(deadline, self.reached()).await {
                Ok(reached) => reached?,
                Err(_) => None,
            },
        };
        let reached = match reached {
            Some(reached) => reached,
            None => self.as_it_stands().await?,
        };
        self.handle.inner.tasks.settle().await?;
        Ok(reached)
    }

    /// The task at rest, as its actor here answers; `None` when the store has it as it
    /// is to be told: the task's events came to a status at rest, or ended, first.
    async fn reached(&mut self) -> Result<Option<TaskSnapshot>, RuntimeError> {
        if let Some(answer) = self.answer.take()
            && let Ok(reached) = answer.await
        {
            return Ok(Some(reached));
        }
        let (id, seq) = (&self.accepted.task.id, self.accepted.seq);
        let mut events = self
            .handle
            .inner
            .tasks
            .event_stream(id, seq, None, Listen::Subscribe);
        while let Some(event) = events.next().await {
            if event?.status().is_some_and(at_rest) {
                break;
            }
        }
        Ok(None)
    }

    /// The task as the store has it now. The waiter was let in when it submitted, so
    /// the task is read for anyone.
    async fn as_it_stands(&self) -> Result<TaskSnapshot, RuntimeError> {
        let id = &self.accepted.task.id;
        match self
            .handle
            .inner
            .tasks
            .visible_record(id, Access::Any)
            .await
        {
            Ok(record) => Ok(TaskSnapshot {
                seq: record.last_seq,
                task: record.task,
            }),
            // Never durably stored (a memory store's write, or one lost to a shutdown).
            Err(RuntimeError::TaskNotFound(_)) => Err(RuntimeError::Unavailable(format!(
                "task {id} ended before it could be stored (a store error or a shutdown; \
                 the server's log says which)"
            ))),
            Err(error) => Err(error),
        }
    }
}
