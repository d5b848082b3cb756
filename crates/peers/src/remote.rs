//! A peer's task and stream events, read leniently: what delegation mirrors (state,
//! status message, artifacts) must be there; anything else a peer sends is ignored.

use fundi_runtime::{Artifact, Message, TaskState};
use serde_json::Value;

/// A peer's task as delegation reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteTask {
    pub(crate) id: String,
    pub(crate) context_id: Option<String>,
    pub(crate) state: TaskState,
    /// The status message (a note, a question, the reply or the failure's words).
    pub(crate) message: Option<Message>,
    /// When the status was entered, as the peer wrote it.
    pub(crate) timestamp: Option<String>,
    pub(crate) artifacts: Vec<Artifact>,
}

impl RemoteTask {
    pub(crate) fn parse(json: &Value) -> Result<RemoteTask, String> {
        let id = json["id"]
            .as_str()
            .filter(|id| !id.is_empty())
            .ok_or("a task without an id")?
            .to_owned();
        let (state, message, timestamp) = status(&json["status"])?;
        let artifacts = match json.get("artifacts") {
            None | Some(Value::Null) => Vec::new(),
            Some(list) => serde_json::from_value(list.clone())
                .map_err(|e| format!("task {id}'s artifacts are unreadable: {e}"))?,
        };
        Ok(RemoteTask {
            id,
            context_id: json["contextId"].as_str().map(str::to_owned),
            state,
            message,
            timestamp,
            artifacts,
        })
    }

    /// What tells one status of the task from the next: its message's id, or its time.
    pub(crate) fn status_key(&self) -> String {
        match (&self.message, &self.timestamp) {
            (Some(message), _) => message.message_id.clone(),
            (None, Some(at)) => at.clone(),
            (None, None) => self.state.wire_name().to_owned(),
        }
    }
}

/// A status: its state, message and timestamp.
fn status(json: &Value) -> Result<(TaskState, Option<Message>, Option<String>), String> {
    let name = json["state"].as_str().ok_or("a status without a state")?;
    let state = TaskState::from_wire_name(name)
        .or_else(|| {
            TaskState::from_wire_name(&format!(
                "TASK_STATE_{}",
                name.to_ascii_uppercase().replace('-', "_")
            ))
        })
        .ok_or_else(|| format!("a status with the unknown state {name:?}"))?;
    let message = match json.get("message") {
        None | Some(Value::Null) => None,
        Some(message) => Some(
            serde_json::from_value(message.clone())
                .map_err(|e| format!("a status message is unreadable: {e}"))?,
        ),
    };
    Ok((
        state,
        message,
        json["timestamp"].as_str().map(str::to_owned),
    ))
}

/// One event of a peer's stream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RemoteEvent {
    /// The task as it stands (a subscription's first event).
    Task(RemoteTask),
    /// A new status.
    Status {
        state: TaskState,
        message: Option<Message>,
    },
    /// An artifact, whole or a chunk of one.
    Artifact {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    },
    /// A message instead of a task (a peer that answered without one).
    Message(Message),
}

impl RemoteEvent {
    /// A `StreamResponse` (`{"task": ...}`, `{"statusUpdate": ...}`...).
    pub(crate) fn parse(json: &Value) -> Result<RemoteEvent, String> {
        if let Some(task) = json.get("task") {
            return RemoteTask::parse(task).map(RemoteEvent::Task);
        }
        if let Some(update) = json.get("statusUpdate") {
            let (state, message, _) = status(&update["status"])?;
            return Ok(RemoteEvent::Status { state, message });
        }
        if let Some(update) = json.get("artifactUpdate") {
            let artifact = serde_json::from_value(update["artifact"].clone())
                .map_err(|e| format!("an artifact update is unreadable: {e}"))?;
            return Ok(RemoteEvent::Artifact {
                artifact,
                append: update["append"].as_bool() == Some(true),
                last_chunk: update["lastChunk"].as_bool() == Some(true),
            });
        }
        if let Some(message) = json.get("message") {
            return serde_json::from_value(message.clone())
                .map(RemoteEvent::Message)
                .map_err(|e| format!("a message is unreadable: {e}"));
        }
        Err(format!(
            "an event that is none of task, statusUpdate, artifactUpdate or message: {json}"
        ))
    }
}

/// What a peer answers a sent message with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Sent {
    /// The task the message made or went to.
    Task(RemoteTask),
    /// A reply without a task: the whole answer.
    Message(Message),
}

impl Sent {
    /// A `SendMessageResponse` (`{"task": ...}` or `{"message": ...}`).
    pub(crate) fn parse(json: &Value) -> Result<Sent, String> {
        match RemoteEvent::parse(json)? {
            RemoteEvent::Task(task) => Ok(Sent::Task(task)),
            RemoteEvent::Message(message) => Ok(Sent::Message(message)),
            _ => Err(format!(
                "a send answered with neither a task nor a message: {json}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tasks_and_events_are_read_in_either_spelling_of_the_state() {
        let task = RemoteTask::parse(&json!({"id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED",
                "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "which?"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "x"}]}]}))
        .unwrap();
        assert_eq!(task.state, TaskState::InputRequired);
        assert_eq!(task.status_key(), "m");
        assert_eq!(task.artifacts[0].artifact_id, "a");
        let event =
            RemoteEvent::parse(&json!({"statusUpdate": {"status": {"state": "completed"}}}))
                .unwrap();
        assert_eq!(
            event,
            RemoteEvent::Status {
                state: TaskState::Completed,
                message: None
            }
        );
        let error =
            RemoteTask::parse(&json!({"id": "t", "status": {"state": "dreaming"}})).unwrap_err();
        assert!(error.contains("dreaming"), "{error}");
        assert!(RemoteEvent::parse(&json!({"other": 1})).is_err());
    }
}
