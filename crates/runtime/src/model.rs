//! The A2A v1.0 task model, owned here rather than taken from `a2a-lf`: that crate does not
//! accept snake_case field names or numeric enums, and accepts a part with two content
//! members, all of which ProtoJSON requires (see `tests/proto_shapes.rs`).

mod enums;
mod event;
mod ids;
pub mod limits;
mod part;
mod storable;
mod task;
pub mod v03;

pub use enums::{Role, TaskState};
pub use event::{TaskEvent, TaskEventKind, TaskUpdate};
pub use ids::{ContextId, Scope, SkillId, TaskId, UserId};
pub use part::{Part, PartContent};
pub use task::SENDER_KEY;
pub use task::{
    Artifact, Message, Metadata, Task, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
    timestamp,
};
