//! `Message`, `Artifact`, `TaskStatus`, `Task` and the two update events, in ProtoJSON shape:
//! lowerCamelCase out; lowerCamelCase or snake_case in; unknown fields ignored. Who
//! sent a user message, as the runtime recorded it, is `sender`.

mod sender;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::limits::{self, InvalidField};
use super::{ContextId, Part, Role, TaskId, TaskState};

pub use sender::SENDER_KEY;

/// JSON object metadata (`google.protobuf.Struct`).
pub type Metadata = Map<String, Value>;

/// One message of a conversation (`lf.a2a.v1.Message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Created by the message's author; unique per message.
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// The conversation this message belongs to.
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<ContextId>,
    /// The task this message belongs to, if a task exists.
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// Who sent it.
    pub role: Role,
    /// The content; at least one part.
    pub parts: Vec<Part>,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Extension URIs that apply to this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Related tasks (hints only).
    #[serde(
        default,
        alias = "reference_task_ids",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<TaskId>,
}

impl Message {
    /// A message from the user with these parts and a fresh id.
    pub fn user(parts: Vec<Part>) -> Message {
        Message::new(Role::User, parts)
    }

    /// A message from the agent with these parts and a fresh id.
    pub fn agent(parts: Vec<Part>) -> Message {
        Message::new(Role::Agent, parts)
    }

    fn new(role: Role, parts: Vec<Part>) -> Message {
        Message {
            message_id: uuid::Uuid::now_v7().to_string(),
            context_id: None,
            task_id: None,
            role,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// The text of all text parts, joined by newlines.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The first data part's value, if any.
    pub fn data(&self) -> Option<&Value> {
        self.parts.iter().find_map(Part::as_data)
    }

    /// Checks what serde cannot: a non-empty id within [`limits::MAX_ID_LEN`], at least
    /// one part, and JSON values within [`limits::MAX_VALUE_DEPTH`].
    pub fn validate(&self) -> Result<(), InvalidField> {
        if self.message_id.trim().is_empty() {
            return Err(InvalidField::new("message.messageId", "must not be empty"));
        }
        limits::check_id("message.messageId", &self.message_id)?;
        if self.parts.is_empty() {
            return Err(InvalidField::new(
                "message.parts",
                "must contain at least one part",
            ));
        }
        limits::check_message("message", self)
    }
}

/// An output of a task (`lf.a2a.v1.Artifact`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content; at least one part.
    pub parts: Vec<Part>,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Extension URIs that apply to this artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl Artifact {
    /// An artifact with this id, name and parts.
    pub fn new(artifact_id: impl Into<String>, name: impl Into<String>, parts: Vec<Part>) -> Self {
        Artifact {
            artifact_id: artifact_id.into(),
            name: Some(name.into()),
            description: None,
            parts,
            metadata: None,
            extensions: Vec::new(),
        }
    }
}

/// A task's state at a moment (`lf.a2a.v1.TaskStatus`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// An agent message explaining the state (a prompt, a progress note, an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the state was entered; always set by the runtime.
    #[serde(with = "timestamp")]
    pub timestamp: DateTime<Utc>,
}

/// A unit of work (`lf.a2a.v1.Task`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Server-generated id.
    pub id: TaskId,
    /// The conversation the task belongs to; always emitted.
    #[serde(alias = "context_id")]
    pub context_id: ContextId,
    /// The current status.
    pub status: TaskStatus,
    /// Outputs, in the order they were first produced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The conversation: user messages and the agent's prompts and final reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Task {
    /// A task in `state` as of now, with no history, artifacts or metadata yet.
    pub fn new(id: TaskId, context_id: ContextId, state: TaskState) -> Task {
        Task {
            id,
            context_id,
            status: TaskStatus {
                state,
                message: None,
                timestamp: Utc::now(),
            },
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
        }
    }

    /// Whether a user's message with this id is in the history (sent already).
    pub fn has_user_message(&self, message_id: &str) -> bool {
        self.history
            .iter()
            .any(|m| m.role == Role::User && m.message_id == message_id)
    }

    /// A copy with at most the `n` most recent history messages (`historyLength`).
    pub fn with_history_limit(mut self, n: Option<usize>) -> Task {
        self.limit_history(n);
        self
    }

    /// Keeps at most the `n` most recent history messages (`None`: all).
    pub fn limit_history(&mut self, n: Option<usize>) {
        if let Some(n) = n {
            let excess = self.history.len().saturating_sub(n);
            self.history.drain(..excess);
        }
    }
}

/// A status change of a task (`lf.a2a.v1.TaskStatusUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: TaskId,
    /// The task's context.
    #[serde(alias = "context_id")]
    pub context_id: ContextId,
    /// The new status.
    pub status: TaskStatus,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// An artifact produced or extended (`lf.a2a.v1.TaskArtifactUpdateEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: TaskId,
    /// The task's context.
    #[serde(alias = "context_id")]
    pub context_id: ContextId,
    /// The artifact, or the chunk of it this event adds.
    pub artifact: Artifact,
    /// True: add these parts to the artifact with the same id.
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    /// True: this is the artifact's final chunk.
    #[serde(default, alias = "last_chunk", skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// RFC 3339 timestamps: emitted as UTC with milliseconds and `Z`; accepted with 0 to 9
/// fractional digits and any offset.
pub mod timestamp {
    use super::*;

    /// Formats as `YYYY-MM-DDTHH:mm:ss.sssZ`.
    pub fn format(ts: &DateTime<Utc>) -> String {
        ts.to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    /// Parses any RFC 3339 timestamp into UTC.
    pub fn parse(s: &str) -> Result<DateTime<Utc>, String> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| format!("{s:?} is not an RFC 3339 timestamp: {e}"))
    }

    /// Serde serializer.
    pub fn serialize<S: Serializer>(ts: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(ts))
    }

    /// Serde deserializer.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let s = String::deserialize(d)?;
        parse(&s).map_err(serde::de::Error::custom)
    }
}
