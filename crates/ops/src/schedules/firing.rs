//! One firing: the message a schedule sends, and its submission as the creator.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::{Firing, NewSchedule, Schedule, ScopeAuthority};
use fundi_runtime::RuntimeError;
use fundi_runtime::RuntimeHandle;
use fundi_runtime::SubmitRequest;
use fundi_runtime::model::{Message, Part, UserId};

/// The message of the firing due at `due`. Its id is made of the schedule and the due
/// time, so that submitting the same firing again (after a crash kept it from being
/// recorded) finds the task it made.
pub(super) fn message(schedule_id: &str, spec: &NewSchedule, due: DateTime<Utc>) -> Message {
    let mut parts = Vec::new();
    if let Some(text) = &spec.text {
        parts.push(Part::text(text.clone()));
    }
    if let Some(data) = &spec.data {
        parts.push(Part::data(data.clone()));
    }
    let mut message = Message::user(parts);
    message.message_id = format!("{schedule_id}-{}", due.timestamp());
    message.metadata = Some(
        json!({
            "skill": spec.skill,
            "schedule": {"id": schedule_id, "due": due.to_rfc3339()},
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
    );
    message
}

/// Submits the firing due at `schedule.next_fire` as the schedule's creator. `Ok` is
/// what to record (a task, or why there is none and will be none); `Err` is a failure
/// of the store or the runtime, after which the firing is tried again.
pub(super) async fn fire(
    runtime: &RuntimeHandle,
    authority: &dyn ScopeAuthority,
    schedule: &Schedule,
    now: DateTime<Utc>,
) -> Result<Firing, RuntimeError> {
    let due = schedule.next_fire;
    let message = message(&schedule.id, &schedule.spec, due);
    let record = |outcome: Result<fundi_runtime::model::TaskId, String>| {
        let (task_id, error) = match outcome {
            Ok(id) => (Some(id), None),
            Err(reason) => (None, Some(reason)),
        };
        Firing {
            due,
            at: now,
            task_id,
            error,
        }
    };
    let owner = schedule.owner.as_deref();
    if let Some(id) = runtime.task_created_by(owner, &message.message_id).await? {
        return Ok(record(Ok(id)));
    }
    let grants = match schedule.grants_now(authority).await {
        Ok(grants) => grants,
        Err(reason) => return Ok(record(Err(reason))),
    };
    let request = SubmitRequest::new(message)
        .skill(Some(schedule.spec.skill.clone()))
        .owner(schedule.owner.clone().map(UserId::from))
        .client(schedule.client.clone())
        .grants(grants);
    match runtime.submit(request).await {
        Ok(accepted) => Ok(record(Ok(accepted.task.id))),
        Err(
            error @ (RuntimeError::Store(_)
            | RuntimeError::Unavailable(_)
            | RuntimeError::Worker(_)),
        ) => Err(error),
        Err(refused) => Ok(record(Err(refused.to_string()))),
    }
}
