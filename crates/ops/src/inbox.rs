//! The inbox: proposals other agents send to fundi that fundi never executes. A task of
//! an inbox skill waits here, in memory, for a local agent's answer (the task itself is
//! stored like any other, and its run waits here again after a restart); a local
//! agent lists what waits and answers one: done (with a text or data answer), a question
//! back (the task asks its sender for input), rejected, or failed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use fundi_runtime::model::{Message, TaskId};

/// The scope that lets a user answer proposals.
pub const INBOX_SCOPE: &str = "fundi:inbox";

/// A proposal waiting for an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    /// The task.
    pub task_id: TaskId,
    /// The user who sent it (another agent's user).
    pub from: Option<String>,
    /// What they sent last: the proposal, or their reply to a question back.
    pub message: Message,
    /// Since when it waits.
    pub since: DateTime<Utc>,
    /// When it is rejected if no one answers.
    pub expires_at: DateTime<Utc>,
}

/// A local agent's answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", tag = "action")]
pub enum Answer {
    /// Done: the task completes with this answer.
    Complete {
        /// The answer in words.
        #[serde(default)]
        text: Option<String>,
        /// The answer as data.
        #[serde(default)]
        data: Option<Value>,
    },
    /// A question back: the task asks its sender for input.
    Ask {
        /// The question.
        text: String,
    },
    /// Declined: the task ends `rejected`.
    Reject {
        /// Why.
        text: String,
    },
    /// Could not be done: the task ends `failed`.
    Fail {
        /// Why.
        text: String,
    },
}

/// An answer and who gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The answer.
    pub answer: Answer,
    /// The user who answered (recorded on the task).
    pub by: String,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InboxError {
    /// No proposal of that task waits (answered already, ended, or not an inbox task).
    #[error("no proposal of task {0} waits for an answer")]
    NotWaiting(TaskId),
    /// The answer is not usable.
    #[error("{0}")]
    Invalid(String),
}

/// Each waiting proposal, and where its answer goes.
type Waiting = HashMap<TaskId, (Proposal, oneshot::Sender<Response>)>;

/// The proposals waiting now. Cheap to clone.
#[derive(Clone, Default)]
pub struct Inbox {
    waiting: Arc<Mutex<Waiting>>,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("waiting", &self.lock().len())
            .finish()
    }
}

impl Inbox {
    /// An empty inbox.
    pub fn new() -> Inbox {
        Inbox::default()
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<TaskId, (Proposal, oneshot::Sender<Response>)>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts a proposal up for an answer; the answer comes through the receiver.
    pub fn offer(&self, proposal: Proposal) -> oneshot::Receiver<Response> {
        let (sender, receiver) = oneshot::channel();
        self.lock()
            .insert(proposal.task_id.clone(), (proposal, sender));
        receiver
    }

    /// Takes a proposal down (its run ended without an answer).
    pub fn withdraw(&self, task_id: &TaskId) {
        self.lock().remove(task_id);
    }

    /// The proposals waiting, oldest first.
    pub fn waiting(&self) -> Vec<Proposal> {
        let mut all: Vec<Proposal> = self.lock().values().map(|(p, _)| p.clone()).collect();
        all.sort_by_key(|p| p.since);
        all
    }

    /// Answers the proposal of `task_id`.
    pub fn respond(&self, task_id: &TaskId, response: Response) -> Result<(), InboxError> {
        if let Answer::Complete {
            text: None,
            data: None,
        } = &response.answer
        {
            return Err(InboxError::Invalid(
                "a completing answer needs text or data".into(),
            ));
        }
        let (_, sender) = self
            .lock()
            .remove(task_id)
            .ok_or_else(|| InboxError::NotWaiting(task_id.clone()))?;
        sender
            .send(response)
            .map_err(|_| InboxError::NotWaiting(task_id.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fundi_runtime::model::Part;

    fn proposal(id: &str) -> Proposal {
        Proposal {
            task_id: TaskId::from(id),
            from: Some("agent-a".into()),
            message: Message::user(vec![Part::text("please review PR 7")]),
            since: Utc::now(),
            expires_at: Utc::now(),
        }
    }

    #[tokio::test]
    async fn an_answer_reaches_the_waiting_run_once() {
        let inbox = Inbox::new();
        let answered = inbox.offer(proposal("t1"));
        assert_eq!(inbox.waiting().len(), 1);
        let done = Answer::Complete {
            text: Some("looks good".into()),
            data: None,
        };
        let response = Response {
            answer: done,
            by: "bob".into(),
        };
        inbox
            .respond(&TaskId::from("t1"), response.clone())
            .unwrap();
        assert_eq!(answered.await.unwrap(), response);
        assert_eq!(
            inbox.respond(&TaskId::from("t1"), response),
            Err(InboxError::NotWaiting(TaskId::from("t1")))
        );
        assert!(inbox.waiting().is_empty());
        let empty = Response {
            answer: Answer::Complete {
                text: None,
                data: None,
            },
            by: "bob".into(),
        };
        let _waiting = inbox.offer(proposal("t2"));
        assert!(matches!(
            inbox.respond(&TaskId::from("t2"), empty),
            Err(InboxError::Invalid(_))
        ));
    }
}
