//! `TaskState` and `Role`: ProtoJSON enums (value names on output; names or numbers on input).

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The lifecycle state of a task (`lf.a2a.v1.TaskState`).
///
/// `TASK_STATE_UNSPECIFIED` is deliberately absent: the runtime never holds or emits it,
/// and a parser that meets it reports an error (filters that treat it as "any state" are
/// the gateway's business).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    /// Accepted, not yet started (waiting for a concurrency slot, for example).
    Submitted,
    /// The skill is running.
    Working,
    /// Finished successfully. Terminal.
    Completed,
    /// Finished with an error. Terminal.
    Failed,
    /// Canceled by a client. Terminal.
    Canceled,
    /// Waiting for the user's next message. Interrupted.
    InputRequired,
    /// Refused by the agent. Terminal.
    Rejected,
    /// Waiting for credentials. Interrupted.
    AuthRequired,
}

impl TaskState {
    /// Every state, in proto enum-number order.
    pub const ALL: [TaskState; 8] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::InputRequired,
        TaskState::Rejected,
        TaskState::AuthRequired,
    ];

    /// Terminal states never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Interrupted states wait for something from outside (input or credentials).
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Whether a status change from `self` to `to` is allowed (A2A-DIGEST §3.1):
    /// terminal states are final; `submitted` is only ever the first state; a task
    /// is interrupted or completed only while working; failed, canceled and rejected
    /// can end any non-terminal task.
    pub fn can_transition_to(self, to: TaskState) -> bool {
        if self.is_terminal() {
            return false;
        }
        match to {
            TaskState::Submitted => false,
            TaskState::Working => true,
            TaskState::InputRequired | TaskState::AuthRequired | TaskState::Completed => {
                self == TaskState::Working
            }
            TaskState::Failed | TaskState::Canceled | TaskState::Rejected => true,
        }
    }

    /// The ProtoJSON value name, e.g. `TASK_STATE_WORKING`.
    pub fn wire_name(self) -> &'static str {
        match self {
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// The proto enum number.
    pub fn number(self) -> u8 {
        match self {
            TaskState::Submitted => 1,
            TaskState::Working => 2,
            TaskState::Completed => 3,
            TaskState::Failed => 4,
            TaskState::Canceled => 5,
            TaskState::InputRequired => 6,
            TaskState::Rejected => 7,
            TaskState::AuthRequired => 8,
        }
    }

    /// The state with this proto enum number, if any (0, unspecified, is none).
    pub fn from_number(n: u64) -> Option<TaskState> {
        TaskState::ALL
            .into_iter()
            .find(|s| u64::from(s.number()) == n)
    }

    /// The state with this ProtoJSON value name, if any (unspecified is none).
    pub fn from_wire_name(name: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|s| s.wire_name() == name)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wire_name())
    }
}

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.wire_name())
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnumVisitor {
            expecting: "a TaskState name such as \"TASK_STATE_WORKING\" or its number 1..8",
            by_name: TaskState::from_wire_name,
            by_number: TaskState::from_number,
        })
    }
}

/// Who sent a message (`lf.a2a.v1.Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Client to server.
    User,
    /// Server to client.
    Agent,
}

impl Role {
    fn wire_name(self) -> &'static str {
        match self {
            Role::User => "ROLE_USER",
            Role::Agent => "ROLE_AGENT",
        }
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.wire_name())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnumVisitor {
            expecting: "a Role: \"ROLE_USER\" or \"ROLE_AGENT\" (or 1, 2)",
            by_name: |name| match name {
                "ROLE_USER" => Some(Role::User),
                "ROLE_AGENT" => Some(Role::Agent),
                _ => None,
            },
            by_number: |n| match n {
                1 => Some(Role::User),
                2 => Some(Role::Agent),
                _ => None,
            },
        })
    }
}

/// Accepts a ProtoJSON enum as its value name or its number; anything else is an
/// error that names what was expected.
struct EnumVisitor<T> {
    expecting: &'static str,
    by_name: fn(&str) -> Option<T>,
    by_number: fn(u64) -> Option<T>,
}

impl<T> Visitor<'_> for EnumVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.by_name)(v).ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        (self.by_number)(v).ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        u64::try_from(v)
            .ok()
            .and_then(self.by_number)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Signed(v), &self))
    }
}
