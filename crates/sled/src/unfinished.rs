//! Recovery's view of a sled store's unfinished tasks (`TaskStore::unfinished_tasks`),
//! decided from their listing entries in memory where those say enough.

use chrono::{LocalResult, TimeZone, Utc};

use crate::commit::TaskTable;
use crate::rest::Rest;
use fundi_runtime::model::{TaskId, TaskState};
use fundi_runtime::store::UnfinishedTask;

/// The unfinished tasks decided from their entries: waiting for input (the entry's
/// state says so), for an approver or for a slot (submitted, and indexed at rest as
/// which: see `resting`), parked idle (indexed so, with its wait's end); and the ids of
/// the others, which recovery reads whole.
pub(crate) fn decide(tasks: &TaskTable) -> (Vec<UnfinishedTask>, Vec<TaskId>) {
    let (mut decided, mut to_read, mut others) = (Vec::new(), Vec::new(), Vec::new());
    tasks.live.each(|entry| {
        let id = entry.task_id.clone();
        match (TaskState::from_number(entry.state.into()), &entry.skill) {
            (Some(state), Some(skill)) if state.is_interrupted() => {
                decided.push(UnfinishedTask::waiting_for_input(id, skill.clone(), state));
            }
            (Some(state), Some(skill)) => others.push((id, skill.clone(), state)),
            // Or an entry written before entries named their skill.
            _ => to_read.push(id),
        }
    });
    // After the entries' lock, not under it: positions have a lock of their own.
    for (id, skill, state) in others {
        let rest = tasks.positions.get(&id).and_then(|at| at.rest);
        match (rest, state) {
            (Some(Rest::Idle { until_ms }), _) => match Utc.timestamp_millis_opt(until_ms) {
                LocalResult::Single(until) => {
                    decided.push(UnfinishedTask::idle(id, skill, state, until))
                }
                _ => to_read.push(id),
            },
            (Some(Rest::Queued), TaskState::Submitted) => {
                decided.push(UnfinishedTask::queued(id, skill))
            }
            (Some(Rest::Waiting), TaskState::Submitted) => {
                decided.push(UnfinishedTask::awaiting_approval(id, skill))
            }
            _ => to_read.push(id),
        }
    }
    (decided, to_read)
}
