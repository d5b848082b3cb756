//! A task as stored ([`TaskRecord`]), and the first message by which the stores index a
//! new task.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RunInputs;
use crate::model::{SkillId, Task, TaskEvent, TaskId, TaskState, UserId};

/// A new task's first message, as the stores index it (see [`TaskStore::created_by`]):
/// its owner and message id, and when the task was created; `None` for a write that does
/// not create a task.
pub fn first_message<'a>(
    record: &'a TaskRecord,
    events: &'a [TaskEvent],
) -> Option<(Option<&'a str>, &'a str, DateTime<Utc>)> {
    events.iter().find_map(|event| match &event.kind {
        crate::model::TaskEventKind::Created(task) => {
            let first = task.history.first()?;
            Some((
                record.owner.as_deref(),
                first.message_id.as_str(),
                task.status.timestamp,
            ))
        }
        _ => None,
    })
}

/// A task as stored: the A2A task plus what the runtime needs to run and recover it.
/// Made by [`TaskRecord::new`] (or read from a store); the other fields are set on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task, as clients see it.
    pub task: Task,
    /// Bumped by every write; writers name the version they read (no lost updates).
    pub version: u64,
    /// Sequence number of the task's last event.
    pub last_seq: u64,
    /// The skill that runs the task.
    pub skill: SkillId,
    /// Who created the task (the authenticated end user), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<UserId>,
    /// The skill's last checkpoint, handed back when the task is resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Value>,
    /// W3C `traceparent` of the span the task was created under: its spans join that
    /// trace, after a restart too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Which history messages the run started from and which wait for it.
    #[serde(default, skip_serializing_if = "RunInputs::is_empty")]
    pub inputs: RunInputs,
    /// When the wait of a run that parked idle ends (`SkillContext::idle`): set by the
    /// commit that parks the task, cleared by its next. A start leaves such a task
    /// parked and wakes it then, as if no restart had come between.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_until: Option<DateTime<Utc>>,
}

impl TaskRecord {
    /// `task` as first stored for `skill`: version 1, its creation the last event, no
    /// owner, checkpoint, trace, run inputs or idle wait.
    pub fn new(task: Task, skill: impl Into<SkillId>) -> TaskRecord {
        TaskRecord {
            task,
            version: 1,
            last_seq: 1,
            skill: skill.into(),
            owner: None,
            checkpoint: None,
            trace: None,
            inputs: RunInputs::default(),
            idle_until: None,
        }
    }

    /// The task's id.
    pub fn id(&self) -> &TaskId {
        &self.task.id
    }

    /// The task's state.
    pub fn state(&self) -> TaskState {
        self.task.status.state
    }
}
