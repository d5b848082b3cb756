//! How a run reports progress: a fraction from 0 to 1 and a note, stored before the
//! call returns or posted (queued for its task, which commits it before anything else
//! the run asks), with or without a checkpoint.

use chrono::Utc;
use serde_json::{Value, json};

use super::SkillContext;
use crate::error::SkillError;
use crate::model::{Message, Part, TaskState, TaskStatus};
use crate::run_link::{PostedNote, Pushed, SkillCall};
use crate::telemetry;

impl SkillContext {
    /// Posts progress as a fraction from 0 to 1 with a note; the fraction travels in the
    /// status message's metadata as `progress`.
    pub async fn progress(&self, fraction: f64, text: impl Into<String>) -> Result<(), SkillError> {
        self.report_progress(fraction, text.into(), None).await
    }

    /// Posts progress and saves a checkpoint in one commit: after a restart the run
    /// resumes from exactly the step it last reported (neither repeated nor skipped).
    pub async fn progress_with_checkpoint(
        &self,
        fraction: f64,
        text: impl Into<String>,
        checkpoint: Value,
    ) -> Result<(), SkillError> {
        self.report_progress(fraction, text.into(), Some(checkpoint.clone()))
            .await?;
        self.remember(checkpoint);
        Ok(())
    }

    async fn report_progress(
        &self,
        fraction: f64,
        text: String,
        checkpoint: Option<Value>,
    ) -> Result<(), SkillError> {
        let message = self.progress_message(fraction, text);
        self.send(SkillCall::Status {
            message,
            checkpoint,
        })
        .await
        .map(drop)
    }

    /// Posts a progress note as [`SkillContext::progress`] does, without waiting for it
    /// to be stored: it returns once the note is queued for the task. Notes queued
    /// together are stored in one commit (a skill that posts faster than the store
    /// writes costs one write per batch, not per note) and published after it, in the
    /// order they were posted, and before anything the run does next through this
    /// context (a call, or its ending). A run with [`MAX_POSTED`] notes waiting waits
    /// for them to be stored before it queues another.
    ///
    /// If the notes cannot be stored, the task ends `failed` (the store refused a write
    /// it needed), so none is dropped unseen; a note posted as the task is canceled is
    /// dropped, as a call would be refused. [`SkillContext::settle`] covers posted notes.
    pub async fn post_progress(
        &self,
        fraction: f64,
        text: impl Into<String>,
    ) -> Result<(), SkillError> {
        self.post(fraction, text.into(), None).await
    }

    /// Posts progress and a checkpoint, stored in one commit as with
    /// [`SkillContext::progress_with_checkpoint`], without waiting (see
    /// [`SkillContext::post_progress`]). After a restart the run resumes from the last
    /// note that was stored; the notes after it were neither stored nor published, and
    /// the run reports them again.
    pub async fn post_progress_with_checkpoint(
        &self,
        fraction: f64,
        text: impl Into<String>,
        checkpoint: Value,
    ) -> Result<(), SkillError> {
        self.post(fraction, text.into(), Some(checkpoint.clone()))
            .await?;
        self.remember(checkpoint);
        Ok(())
    }

    async fn post(
        &self,
        fraction: f64,
        text: String,
        checkpoint: Option<Value>,
    ) -> Result<(), SkillError> {
        let message = self.progress_message(fraction, text);
        let mut note = PostedNote {
            status: TaskStatus {
                state: TaskState::Working,
                message: Some(message),
                timestamp: Utc::now(),
            },
            checkpoint,
        };
        loop {
            if self.cancel.is_cancelled() {
                return Err(SkillError::Canceled);
            }
            match self.posted.push(note) {
                Pushed::Queued => return Ok(()),
                // The note that makes the queue non-empty tells the actor, which takes
                // every note waiting when it gets to the message.
                Pushed::First => {
                    return match self.link.notes_posted() {
                        true => Ok(()),
                        false => Err(self.gone()),
                    };
                }
                Pushed::Full(back) => {
                    note = *back;
                    self.send(SkillCall::StorePosted).await?;
                }
            }
        }
    }

    /// A progress report's message (the fraction in its metadata), noted on the run's
    /// span.
    fn progress_message(&self, fraction: f64, text: String) -> Message {
        let fraction = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        // A span event per progress report (the run's span shows the skill's progress).
        tracing::debug!(
            target: telemetry::PROGRESS_TARGET,
            parent: &self.span,
            progress = fraction,
            status = %text,
            "progress"
        );
        let mut message = Message::agent(vec![Part::text(text)]);
        message.metadata = json!({ "progress": fraction }).as_object().cloned();
        message
    }
}
