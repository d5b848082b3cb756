//! What a run hears from its task's users: the answer to its request for input, and
//! the messages sent while it works that its skill queues (`MessagePolicy::Enqueue`).

use super::SkillContext;
use crate::error::{RuntimeError, SkillError};
use crate::model::{Message, Part};
use crate::run_link::SkillCall;

impl SkillContext {
    /// Moves the task to `input-required` with this prompt and resolves with the user's
    /// next message for the task. When a message sent while the task worked waits for
    /// the run (see [`SkillContext::try_next_message`]), it is the answer at once (the
    /// prompt is stored and told all the same, then `working` again). Fails with
    /// [`SkillError::Canceled`] if the task is canceled while waiting.
    pub async fn request_input(&self, prompt: impl Into<String>) -> Result<Message, SkillError> {
        self.request_input_message(Message::agent(vec![Part::text(prompt)]))
            .await
    }

    /// [`SkillContext::request_input`] with a whole agent message as the prompt (parts
    /// and metadata as given: a peer's question mirrored).
    pub async fn request_input_message(&self, prompt: Message) -> Result<Message, SkillError> {
        match self.send(SkillCall::RequestInput { prompt }).await? {
            Some(message) => Ok(message),
            None => Err(SkillError::runtime(RuntimeError::invariant(
                "no message was delivered",
            ))),
        }
    }

    /// The oldest message sent to the task while it works and not taken yet (a skill
    /// whose card queues them, `MessagePolicy::Enqueue`), or `None` at once when none
    /// waits. Taking it is stored: after a restart, a resumed run gets only the messages
    /// its task had not taken. A run that never takes them gets the oldest as the answer
    /// to its next [`SkillContext::request_input`], and if it returns with some still
    /// waiting, the next run of the task starts from the oldest.
    pub async fn try_next_message(&self) -> Result<Option<Message>, SkillError> {
        if self.queued.waiting() == 0 {
            return match self.cancel.is_cancelled() {
                true => Err(SkillError::Canceled),
                false => Ok(None),
            };
        }
        self.send(SkillCall::TakeMessage).await
    }

    /// The oldest message sent to the task while it works and not taken yet, waiting
    /// for one if none waits (see [`SkillContext::try_next_message`]). Fails with
    /// [`SkillError::Canceled`] if the task is canceled meanwhile.
    pub async fn next_message(&self) -> Result<Message, SkillError> {
        loop {
            if let Some(message) = self.try_next_message().await? {
                return Ok(message);
            }
            tokio::select! {
                () = self.cancel.cancelled() => return Err(SkillError::Canceled),
                () = self.queued.arrived() => {}
            }
        }
    }
}
