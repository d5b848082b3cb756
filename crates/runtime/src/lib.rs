//! fundi-runtime: durable, supervised A2A tasks.
//!
//! Every task is owned by an actor; every change goes through one pure
//! [`transition`] function and is committed to a [`TaskStore`] before anyone is told.
//! A panic, a crash or a restart ends a task `failed` (or resumes it), never lost.
//!
//! Embedders implement [`Skill`], build a runtime, and drive it through the
//! [`RuntimeHandle`]:
//!
//! ```
//! use fundi_runtime::{
//!     Access, Message, Part, Runtime, Skill, SkillCard, SkillContext, SkillError, SkillInput,
//!     SkillOutput, SubmitRequest, TaskState,
//! };
//! use futures::StreamExt;
//!
//! struct Shout;
//!
//! #[async_trait::async_trait]
//! impl Skill for Shout {
//!     fn card(&self) -> SkillCard {
//!         SkillCard::new("shout", "Upper-cases text").example("hello").resumable()
//!     }
//!
//!     async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
//!         ctx.progress(0.5, "thinking").await?;
//!         Ok(SkillOutput::text(input.message.text().to_uppercase()))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::builder().skill(Shout).start().await?;
//! let task = runtime
//!     .submit(SubmitRequest::new(Message::user(vec![Part::text("hello")])))
//!     .await?
//!     .task;
//! let mut events = runtime.subscribe(&task.id, 0, Access::Any).await?;
//! while let Some(event) = events.next().await {
//!     let _ = event?; // created, working, progress, completed
//! }
//! let done = runtime.get(&task.id, None, Access::Any).await?;
//! assert_eq!(done.status.state, TaskState::Completed);
//! assert_eq!(done.status.message.unwrap().text(), "HELLO");
//! # Ok(())
//! # }
//! ```

mod access;
mod actors;
pub mod approval;
mod config;
mod context;
pub mod cpu;
mod error;
mod handle;
pub mod model;
mod recovery;
mod recovery_plan;
mod requests;
mod run_link;
mod service;
mod skill;
pub mod store;
mod subscription;
pub mod telemetry;
#[cfg(feature = "test-util")]
pub mod testing;
mod transition;
mod wakes;

pub use access::{ADMIN_SCOPE, Access, Grants, TaskOwner};
pub use actors::MAX_QUEUED_MESSAGES;
pub use config::{ApprovalMode, RuntimeConfig};
pub use context::{MAX_POSTED, SkillContext};
pub use error::{RuntimeError, error_chain};
pub use handle::{
    Following, Runtime, RuntimeBuilder, RuntimeHandle, Submission, Waiting, WeakRuntimeHandle,
};
pub use model::{
    Artifact, ContextId, Message, Part, PartContent, Role, SENDER_KEY, Scope, SkillId, Task,
    TaskArtifactUpdateEvent, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus,
    TaskStatusUpdateEvent, TaskUpdate, UserId,
};
pub use recovery_plan::{INTERRUPTED_BY_RESTART, RecoveryReport};
pub use requests::{ListRequest, SubmitRequest, TaskPage, TaskSnapshot};
pub use service::{TaskService, Waited};
pub use skill::{
    InputRefused, MessagePolicy, Skill, SkillCard, SkillError, SkillInput, SkillOutput,
};
pub use store::{MemoryStore, StoreError, TaskStore};
pub use subscription::EventStream;
pub use transition::{TransitionError, replay, transition};
pub use wakes::{Presence, WakeHook};
