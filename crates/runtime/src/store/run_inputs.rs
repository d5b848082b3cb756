//! Which messages of a task's history its run started from and which wait for it: kept
//! in the task's record, moved by the events that move them (`RunInputs::replay`, as
//! the runtime applies them and as a store rebuilds a record), so that a restart
//! resumes the run from the message it started from, with the messages it had not
//! taken.

use serde::{Deserialize, Serialize};

use crate::model::{Message, Role, Task, TaskEventKind};

/// Where in a task's history its run's inputs are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInputs {
    /// The message the current run started from; `None`: the last user message (kept
    /// only once that is not it, so that most records carry none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_from: Option<usize>,
    /// The messages queued for the run and not taken yet, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued: Vec<usize>,
}

impl RunInputs {
    /// Whether there is nothing to keep (the run started from the last user message,
    /// and none waits).
    pub fn is_empty(&self) -> bool {
        self.started_from.is_none() && self.queued.is_empty()
    }

    /// Moves the inputs as `change` (already replayed into `task`) does: a user's
    /// message (an answer, one that interrupts) starts the run from it, which needs no
    /// record while it is the last user message; a queued one joins the queue (and
    /// first pins the run's message, which is no longer the last); the run taking one
    /// leaves the queue, and starts the next run from it when the change says so.
    pub fn replay(&mut self, task: &Task, change: &TaskEventKind) {
        match change {
            TaskEventKind::Created(_) => *self = RunInputs::default(),
            TaskEventKind::Message(message) if message.role == Role::User => {
                self.started_from = None;
            }
            TaskEventKind::Queued(_) => {
                let Some(at) = task.history.len().checked_sub(1) else {
                    return;
                };
                if self.started_from.is_none() {
                    self.started_from = last_user_message(&task.history[..at]);
                }
                self.queued.push(at);
            }
            TaskEventKind::MessageTaken { starts_run } if !self.queued.is_empty() => {
                let taken = self.queued.remove(0);
                if *starts_run {
                    self.started_from = Some(taken);
                }
            }
            _ => {}
        }
    }

    /// The message the task's current run started from.
    pub fn run_message<'a>(&self, task: &'a Task) -> Option<&'a Message> {
        match self.started_from {
            Some(at) => task.history.get(at),
            None => last_user_message(&task.history).and_then(|at| task.history.get(at)),
        }
    }

    /// The messages queued for the run and not taken yet, oldest first.
    pub fn queued_messages<'a>(&'a self, task: &'a Task) -> impl Iterator<Item = &'a Message> {
        self.queued.iter().filter_map(|at| task.history.get(*at))
    }
}

fn last_user_message(history: &[Message]) -> Option<usize> {
    history.iter().rposition(|m| m.role == Role::User)
}
