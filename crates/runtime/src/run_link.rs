//! Between a skill's run and its task's actor: what the run asks of its task
//! (`SkillCall`), the notes it posts without waiting (`posted`), the messages queued for
//! it (`queued`), and the link its context calls through (`TaskLink`, which the actors
//! implement), so that the context knows nothing of actors.

mod posted;
mod queued;

use async_trait::async_trait;
use serde_json::Value;

pub use posted::MAX_POSTED;
pub(crate) use posted::{PostedNote, PostedNotes, Pushed};
pub(crate) use queued::QueuedMessages;

use crate::error::SkillError;
use crate::model::{Artifact, Message};

/// What a running skill asks of its task.
pub(crate) enum SkillCall {
    Status {
        message: Message,
        /// Saved in the same commit as the status (so a resumed run neither repeats nor
        /// skips the step it reports).
        checkpoint: Option<Value>,
    },
    Artifact {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    },
    RequestInput {
        prompt: Message,
    },
    Checkpoint(Value),
    /// The oldest message queued for the run, if any (answered `Some(message)`).
    TakeMessage,
    /// Nothing more than every call does first: commit the notes posted before it.
    StorePosted,
    /// The run has nothing to do until `until` (it waits on something outside the task):
    /// a resumable task may park meanwhile (`SkillContext::idle`).
    Idle {
        until: tokio::time::Instant,
    },
}

/// The task's answer to a skill call: `Some(message)` answers `RequestInput` and
/// `TakeMessage`.
pub(crate) type SkillReply = Result<Option<Message>, SkillError>;

/// How a run's context reaches its task.
#[async_trait]
pub(crate) trait TaskLink: Send + Sync + 'static {
    /// Sends `call` and waits for the answer (no timeout: the call waits for the store,
    /// and for input, for a person); `None` when the task's actor is gone.
    async fn call(&self, call: SkillCall) -> Option<SkillReply>;

    /// Tells the task that notes wait in the queue; `false` when its actor is gone.
    fn notes_posted(&self) -> bool;
}
