//! Ending a stored task `failed` from outside its actor (the actor died, never started,
//! or a restart interrupted a task that cannot resume).

use chrono::Utc;

use crate::error::RuntimeError;
use crate::model::{Message, Part, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus};
use crate::store::{StoreError, TaskStore};
use crate::telemetry;
use crate::transition::apply;

/// Moves the stored task to `failed` with `reason` as its status message, unless it is
/// already terminal. Returns whether it changed the task.
pub(crate) async fn fail_stored_task(
    store: &dyn TaskStore,
    id: &TaskId,
    reason: &str,
    source: &'static str,
) -> Result<bool, RuntimeError> {
    // Someone else may write between our read and our commit (the version check
    // catches it): read again and retry a few times.
    for _ in 0..3 {
        let Some(record) = store.get(id).await? else {
            return Ok(false);
        };
        if record.state().is_terminal() {
            return Ok(false);
        }
        let kind = TaskEventKind::Status(TaskStatus {
            state: TaskState::Failed,
            message: Some(Message::agent(vec![Part::text(reason)])),
            timestamp: Utc::now(),
        });
        let mut next = record.clone();
        apply(&mut next.task, &kind).map_err(|e| RuntimeError::Unavailable(e.to_string()))?;
        next.version += 1;
        next.last_seq += 1;
        let event = TaskEvent {
            seq: next.last_seq,
            task_id: id.clone(),
            context_id: next.task.context_id.clone(),
            kind,
        };
        match telemetry::commit(
            store,
            &next,
            record.version,
            std::slice::from_ref(&event),
            None,
        )
        .await
        {
            Ok(()) => {
                let metrics = telemetry::metrics();
                metrics.failure(source);
                metrics.state_changed(&record.skill, id, Some(record.state()), TaskState::Failed);
                return Ok(true);
            }
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(RuntimeError::Unavailable(format!(
        "task {id} kept changing while it was being failed"
    )))
}
