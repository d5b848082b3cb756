//! Results in the request's dialect: v1.0 ProtoJSON wrappers, or v0.3 kind-tagged objects.

use fundi_runtime::{Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent, TaskUpdate};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::dialect::Dialect;
use crate::v03;

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    // The model's Serialize impls write only strings, numbers and maps: they cannot fail.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A method's result as JSON text. The hot results (a task, a stream item in v1.0) are
/// written straight from the model: building a `Value` first, copying it into the
/// envelope, then writing it out, was about a tenth of the server's time in a profile of
/// short blocking sends.
pub(crate) type Encoded = Box<RawValue>;

pub(crate) fn raw<T: Serialize + ?Sized>(value: &T) -> Encoded {
    // As for `to_value`: the model and `Value`s cannot fail to serialize.
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// The v1.0 `StreamResponse` (and `SendMessageResponse`): one key naming what it holds.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum V1Update<'a> {
    Task(&'a Task),
    Message(&'a Message),
    StatusUpdate(&'a TaskStatusUpdateEvent),
    ArtifactUpdate(&'a TaskArtifactUpdateEvent),
}

impl<'a> From<&'a TaskUpdate> for V1Update<'a> {
    fn from(update: &'a TaskUpdate) -> Self {
        match update {
            TaskUpdate::Task(t) => V1Update::Task(t),
            TaskUpdate::Message(m) => V1Update::Message(m),
            TaskUpdate::Status(s) => V1Update::StatusUpdate(s),
            TaskUpdate::Artifact(a) => V1Update::ArtifactUpdate(a),
        }
    }
}

/// A bare task (GetTask, CancelTask), encoded.
pub(crate) fn task_result(task: &Task, dialect: Dialect) -> Encoded {
    match dialect {
        Dialect::V1 => raw(task),
        Dialect::V03 => raw(&v03::task(to_value(task))),
    }
}

/// The result of SendMessage: `{"task": …}` in v1.0, the bare task in v0.3.
pub(crate) fn send_result(task: &Task, dialect: Dialect) -> Encoded {
    match dialect {
        Dialect::V1 => raw(&V1Update::Task(task)),
        Dialect::V03 => task_result(task, dialect),
    }
}

/// A stream item, encoded (see `update_value`).
pub(crate) fn update_result(update: &TaskUpdate, dialect: Dialect) -> Encoded {
    match dialect {
        Dialect::V1 => raw(&V1Update::from(update)),
        Dialect::V03 => raw(&update_value(update, dialect)),
    }
}

/// A bare task, as a `Value` (listings, webhooks).
pub(crate) fn task(task: &Task, dialect: Dialect) -> Value {
    match dialect {
        Dialect::V1 => to_value(task),
        Dialect::V03 => v03::task(to_value(task)),
    }
}

/// A stream item: a v1.0 `StreamResponse`, or the v0.3 kind-tagged object.
pub(crate) fn update_value(update: &TaskUpdate, dialect: Dialect) -> Value {
    let v1 = to_value(&V1Update::from(update));
    match dialect {
        Dialect::V1 => v1,
        Dialect::V03 => v03::stream_item(v1),
    }
}

#[cfg(test)]
mod tests {
    use fundi_runtime::{Artifact, ContextId, Part, TaskEvent, TaskEventKind, TaskId, TaskStatus};
    use serde_json::json;

    use super::*;

    fn events() -> Vec<TaskEvent> {
        let task: Task = serde_json::from_value(json!({
            "id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-11-30T00:00:00Z"},
            "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}],
        }))
        .unwrap();
        let message = Message::user(vec![Part::text("more")]);
        let artifact = Artifact::new("a1", "out", vec![Part::text("x")]);
        let status = TaskStatus {
            state: fundi_runtime::TaskState::Completed,
            ..task.status.clone()
        };
        [
            TaskEventKind::Created(task),
            TaskEventKind::Message(message),
            TaskEventKind::Status(status),
            TaskEventKind::Artifact {
                artifact,
                append: true,
                last_chunk: false,
            },
        ]
        .into_iter()
        .enumerate()
        .map(|(i, kind)| TaskEvent {
            seq: i as u64 + 1,
            task_id: TaskId::from("t1"),
            context_id: ContextId::from("c1"),
            kind,
        })
        .collect()
    }

    fn parsed(encoded: &Encoded) -> Value {
        serde_json::from_str(encoded.get()).unwrap()
    }

    /// The results written straight from the model say what the `Value`s built field by
    /// field say, in both dialects.
    #[test]
    fn encoded_results_match_the_values() {
        let keys = ["task", "message", "statusUpdate", "artifactUpdate"];
        for (event, key) in events().iter().zip(keys) {
            let update = event.to_update().unwrap();
            let v1 = parsed(&update_result(&update, Dialect::V1));
            assert_eq!(v1.as_object().unwrap().keys().collect::<Vec<_>>(), [key]);
            assert_eq!(v1, update_value(&update, Dialect::V1));
            assert_eq!(
                parsed(&update_result(&update, Dialect::V03)),
                update_value(&update, Dialect::V03)
            );
        }
        let Some(TaskUpdate::Task(task)) = events()[0].to_update() else {
            unreachable!()
        };
        assert_eq!(
            parsed(&send_result(&task, Dialect::V1)),
            json!({"task": serde_json::to_value(&task).unwrap()})
        );
        assert_eq!(parsed(&send_result(&task, Dialect::V03))["kind"], "task");
        assert_eq!(
            parsed(&task_result(&task, Dialect::V1)),
            serde_json::to_value(&task).unwrap()
        );
    }
}
