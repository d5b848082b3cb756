//! Recovery at start: every stored task that is not terminal is resumed, left waiting
//! for input or for the end of the idle wait it parked in, or ended `failed` with the
//! reason "interrupted by restart". This module
//! decides (`plan`, a pure function of the stored tasks and the registered skills); the
//! runtime's start carries the plan out (`RuntimeHandle::recover`).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::model::{SkillId, TaskId, TaskState};
use crate::store::UnfinishedTask;

/// The status message of a task that a restart interrupted and that cannot resume.
pub const INTERRUPTED_BY_RESTART: &str = "interrupted by restart";

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Submitted or working tasks of resumable skills, run again from their checkpoint
    /// (each once it has a slot of its skill: queued until then, with no actor).
    pub resumed: usize,
    /// Tasks ended `failed` (their skill is not resumable, or no longer registered).
    pub failed: usize,
    /// Input- or auth-required tasks of resumable skills, waiting again (no actor until
    /// a message or a cancel arrives).
    pub waiting_for_input: usize,
    /// Tasks of resumable skills whose runs had parked idle (`SkillContext::idle`),
    /// parked again until their wait ends (no actor until then, or until a message, a
    /// subscriber or a cancel wakes them).
    pub idle: usize,
    /// Tasks the store holds set aside because their data could not be decoded (this
    /// start's and earlier ones': see `TaskStore::quarantined`).
    pub quarantined: usize,
}

/// What to do with each unfinished task.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct RecoveryPlan {
    /// Tasks to run again, by skill, in the order read: each once it has a slot.
    pub(crate) resume: HashMap<SkillId, Vec<TaskId>>,
    /// Tasks to end `failed`, with the reason.
    pub(crate) fail: Vec<(TaskId, String)>,
    /// Tasks that wait again for input, with no actor.
    pub(crate) waiting: Vec<TaskId>,
    /// Tasks parked idle again, each until its wait ends, with no actor.
    pub(crate) idle: Vec<(TaskId, DateTime<Utc>)>,
    /// How many tasks were read, by skill and state (counted afresh in this process).
    pub(crate) found: HashMap<(SkillId, TaskState), usize>,
}

/// Decides the fate of each unfinished task, given whether each registered skill
/// resumes (`None`: not registered).
pub(crate) fn plan(
    tasks: Vec<UnfinishedTask>,
    resumes: impl Fn(&str) -> Option<bool>,
) -> RecoveryPlan {
    let mut plan = RecoveryPlan::default();
    for task in tasks {
        let id = task.id;
        *plan
            .found
            .entry((task.skill.clone(), task.state))
            .or_default() += 1;
        match (resumes(&task.skill), task.idle_until) {
            (None, _) => plan.fail.push((
                id,
                format!(
                    "{INTERRUPTED_BY_RESTART}; skill {:?} is no longer registered",
                    task.skill
                ),
            )),
            // Nothing of it ran: it waits for its approver again, resumable or not.
            (Some(_), _) if task.awaits_approval => plan.waiting.push(id),
            (Some(false), _) => plan.fail.push((id, INTERRUPTED_BY_RESTART.into())),
            // Its run waits on something outside until then, as it did before the stop.
            (Some(true), Some(until)) => plan.idle.push((id, until)),
            (Some(true), None) if task.state.is_interrupted() => plan.waiting.push(id),
            (Some(true), None) => plan.resume.entry(task.skill).or_default().push(id),
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContextId, Task};
    use crate::store::TaskRecord;

    fn record(id: &str, skill: &str, state: TaskState) -> UnfinishedTask {
        UnfinishedTask::of(&TaskRecord::new(
            Task::new(TaskId::from(id), ContextId::from("c"), state),
            skill,
        ))
    }

    #[test]
    fn each_unfinished_task_is_resumed_left_waiting_or_failed() {
        let resumes = |skill: &str| match skill {
            "again" => Some(true),
            "once" => Some(false),
            _ => None,
        };
        let at = Utc::now();
        let plan = plan(
            vec![
                record("a", "again", TaskState::Working),
                record("b", "again", TaskState::InputRequired),
                record("c", "once", TaskState::Working),
                record("d", "gone", TaskState::Submitted),
                record("e", "again", TaskState::Submitted),
                UnfinishedTask::idle("f".into(), "again".into(), TaskState::Working, at),
                UnfinishedTask::idle("g".into(), "once".into(), TaskState::Working, at),
            ],
            resumes,
        );
        let ids = |ids: &[TaskId]| {
            ids.iter()
                .map(|i| i.as_str().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&plan.resume["again"]), ["a", "e"]);
        assert_eq!(ids(&plan.waiting), ["b"]);
        assert_eq!(plan.idle, [(TaskId::from("f"), at)]);
        let failed: Vec<(&str, &str)> = plan
            .fail
            .iter()
            .map(|(id, why)| (id.as_str(), why.as_str()))
            .collect();
        assert_eq!(failed[0], ("c", INTERRUPTED_BY_RESTART));
        assert_eq!(failed[1].0, "d");
        assert!(failed[1].1.contains("\"gone\" is no longer registered"));
        // Not resumable: it cannot have parked idle, and fails as any of its tasks.
        assert_eq!(failed[2], ("g", INTERRUPTED_BY_RESTART));
        assert_eq!(plan.found.values().sum::<usize>(), 7);
    }
}
