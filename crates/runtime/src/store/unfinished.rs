//! An unfinished task as recovery decides it: its id, skill and state, whether it
//! waits for an approver, and when the idle wait it parked in ends. A store that keeps these at hand answers recovery without
//! reading each task whole (`TaskStore::unfinished_tasks`).

use chrono::{DateTime, Utc};

use crate::approval::awaits_approval;
use crate::model::{SkillId, TaskId, TaskState};

use super::TaskRecord;

/// What recovery needs of an unfinished task to decide it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnfinishedTask {
    /// The task.
    pub id: TaskId,
    /// Its skill.
    pub skill: SkillId,
    /// Its state (never terminal).
    pub state: TaskState,
    /// Whether it waits for an approver (submitted, with an approval request).
    pub awaits_approval: bool,
    /// When the wait ends of the run it parked idle in (`TaskRecord::idle_until`).
    pub idle_until: Option<DateTime<Utc>>,
}

impl UnfinishedTask {
    /// The task waiting for a person's input (input- or auth-required): never one that
    /// waits for an approver, which is submitted.
    pub fn waiting_for_input(id: TaskId, skill: SkillId, state: TaskState) -> UnfinishedTask {
        UnfinishedTask {
            id,
            skill,
            state,
            awaits_approval: false,
            idle_until: None,
        }
    }

    /// The task in `state` whose run parked idle until `until` (a store that knows so
    /// without reading the record).
    pub fn idle(
        id: TaskId,
        skill: SkillId,
        state: TaskState,
        until: DateTime<Utc>,
    ) -> UnfinishedTask {
        UnfinishedTask {
            id,
            skill,
            state,
            awaits_approval: false,
            idle_until: Some(until),
        }
    }

    /// The task submitted and waiting for an approver (a store that knows so without
    /// reading the record).
    pub fn awaiting_approval(id: TaskId, skill: SkillId) -> UnfinishedTask {
        UnfinishedTask {
            id,
            skill,
            state: TaskState::Submitted,
            awaits_approval: true,
            idle_until: None,
        }
    }

    /// The task submitted and waiting for a slot of its skill, with no approver to
    /// wait for (a store that knows so without reading the record).
    pub fn queued(id: TaskId, skill: SkillId) -> UnfinishedTask {
        UnfinishedTask {
            id,
            skill,
            state: TaskState::Submitted,
            awaits_approval: false,
            idle_until: None,
        }
    }

    /// `record`, as recovery decides it.
    pub fn of(record: &TaskRecord) -> UnfinishedTask {
        UnfinishedTask {
            id: record.task.id.clone(),
            skill: record.skill.clone(),
            state: record.state(),
            awaits_approval: awaits_approval(&record.task.status),
            idle_until: record.idle_until,
        }
    }
}
