//! The per-task event log: every change to a task is one numbered event.

use serde::{Deserialize, Serialize};

use super::{
    Artifact, ContextId, Message, Task, TaskArtifactUpdateEvent, TaskId, TaskStatus,
    TaskStatusUpdateEvent,
};

/// What changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskEventKind {
    /// The task was created; always event 1. Carries the task as first stored.
    Created(Task),
    /// The status changed (or a progress note was posted while working).
    Status(TaskStatus),
    /// An artifact was produced, replaced, or extended by a chunk.
    #[serde(rename_all = "camelCase")]
    Artifact {
        /// The artifact, or the chunk of parts to add to it.
        artifact: Artifact,
        /// Add the parts to the artifact with the same id.
        append: bool,
        /// This is the final chunk of the artifact.
        last_chunk: bool,
    },
    /// A message joined the task's history: a user's answer to the task's request for
    /// input, the message that starts the task's next run, or the reply of a run that a
    /// queued message follows. Not told to streams and webhooks (the sender has it; a
    /// run's reply is told by the status that carries it).
    Message(Message),
    /// A user's message arrived while the task's run works, for a skill that queues them
    /// (`MessagePolicy::Enqueue`): in the history, and waiting for the run to take it.
    /// Not told to streams and webhooks.
    Queued(Message),
    /// The run took the oldest queued message (`SkillContext::next_message`, or as the
    /// answer to its request for input), or the next run starts from it. Not told to
    /// streams and webhooks.
    #[serde(rename_all = "camelCase")]
    MessageTaken {
        /// The next run starts from it.
        starts_run: bool,
    },
}

/// One entry of a task's event log. `seq` starts at 1 and has no gaps; it is the SSE `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskEvent {
    /// Position in the task's log, from 1, gap-free.
    pub seq: u64,
    /// The task.
    pub task_id: TaskId,
    /// The task's context.
    pub context_id: ContextId,
    /// What changed.
    pub kind: TaskEventKind,
}

/// An event as a client sees it: the payload of an A2A `StreamResponse`.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskUpdate {
    /// A whole task.
    Task(Task),
    /// A message.
    Message(Message),
    /// A status update.
    Status(TaskStatusUpdateEvent),
    /// An artifact update.
    Artifact(TaskArtifactUpdateEvent),
}

impl TaskEvent {
    /// True when this event puts the task in a terminal state (the log's last event).
    pub fn is_terminal(&self) -> bool {
        self.status().is_some_and(|s| s.state.is_terminal())
    }

    /// The status this event sets, if it sets one.
    pub fn status(&self) -> Option<&TaskStatus> {
        match &self.kind {
            TaskEventKind::Created(task) => Some(&task.status),
            TaskEventKind::Status(status) => Some(status),
            _ => None,
        }
    }

    /// Whether streams and webhooks tell this event: a change of the task's status or
    /// artifacts, not a message joining its history nor the run taking one.
    pub fn is_told(&self) -> bool {
        !matches!(
            self.kind,
            TaskEventKind::Message(_)
                | TaskEventKind::Queued(_)
                | TaskEventKind::MessageTaken { .. }
        )
    }

    /// The event as a `StreamResponse` payload; `None` for the run taking a queued
    /// message, which has none.
    pub fn to_update(&self) -> Option<TaskUpdate> {
        Some(match &self.kind {
            TaskEventKind::Created(task) => TaskUpdate::Task(task.clone()),
            TaskEventKind::Message(message) | TaskEventKind::Queued(message) => {
                TaskUpdate::Message(message.clone())
            }
            TaskEventKind::MessageTaken { .. } => return None,
            TaskEventKind::Status(status) => TaskUpdate::Status(TaskStatusUpdateEvent {
                task_id: self.task_id.clone(),
                context_id: self.context_id.clone(),
                status: status.clone(),
                metadata: None,
            }),
            TaskEventKind::Artifact {
                artifact,
                append,
                last_chunk,
            } => TaskUpdate::Artifact(TaskArtifactUpdateEvent {
                task_id: self.task_id.clone(),
                context_id: self.context_id.clone(),
                artifact: artifact.clone(),
                append: *append,
                last_chunk: *last_chunk,
                metadata: None,
            }),
        })
    }
}
