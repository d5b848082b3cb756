//! Results in the request's dialect: v1.0 ProtoJSON wrappers, or v0.3 kind-tagged objects.

use fundi_runtime::{Task, TaskUpdate};
use serde_json::{Value, json};

use crate::dialect::Dialect;
use crate::v03;

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    // The model's Serialize impls write only strings, numbers and maps: they cannot fail.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A bare task (GetTask, CancelTask).
pub(crate) fn task(task: &Task, dialect: Dialect) -> Value {
    match dialect {
        Dialect::V1 => to_value(task),
        Dialect::V03 => v03::task(to_value(task)),
    }
}

/// The result of SendMessage: `{"task": …}` in v1.0, the bare task in v0.3.
pub(crate) fn send_result(task: &Task, dialect: Dialect) -> Value {
    match dialect {
        Dialect::V1 => json!({"task": to_value(task)}),
        Dialect::V03 => v03::task(to_value(task)),
    }
}

/// A stream item: a v1.0 `StreamResponse`, or the v0.3 kind-tagged object.
pub(crate) fn update(update: &TaskUpdate, dialect: Dialect) -> Value {
    let v1 = match update {
        TaskUpdate::Task(t) => json!({"task": to_value(t)}),
        TaskUpdate::Message(m) => json!({"message": to_value(m)}),
        TaskUpdate::Status(s) => json!({"statusUpdate": to_value(s)}),
        TaskUpdate::Artifact(a) => json!({"artifactUpdate": to_value(a)}),
    };
    match dialect {
        Dialect::V1 => v1,
        Dialect::V03 => v03::stream_item(v1),
    }
}
