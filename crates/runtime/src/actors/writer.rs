//! `Writer`: a task's one writer, as its actor holds it. The journal commits each change
//! before anyone is told (`journal`); beside it wait the progress notes the run posted
//! (committed before anything else the run asks) and the messages queued for the run
//! while it works (`MessagePolicy::Enqueue`: taken through its context, as the answer to
//! its next request for input, or to start the next run when it returns with some
//! waiting). Each step is a commit: a restart resumes with exactly the messages not
//! taken.

use std::sync::Arc;

use super::journal::{JournalError, TaskJournal, status, status_change};
use crate::error::RuntimeError;
use crate::model::{Message, Part, TaskEventKind, TaskState};
use crate::requests::TaskSnapshot;
use crate::run_link::{PostedNotes, QueuedMessages};
use crate::skill::{Skill, SkillError};
use crate::telemetry;

/// How many messages may wait for a task's run (`MessagePolicy::Enqueue`): one more is
/// refused until the run takes some, so that a client cannot grow a task without bound.
pub const MAX_QUEUED_MESSAGES: usize = 100;

/// The task's journal, and what waits to be written through it.
pub(super) struct Writer {
    pub(super) journal: TaskJournal,
    /// Progress notes the run posted, to commit before anything else it asks.
    posted: Arc<PostedNotes>,
    /// How many queued messages wait, for the run's contexts.
    queued: Arc<QueuedMessages>,
    span: tracing::Span,
}

impl Writer {
    /// The writer of `journal`'s task, whose span is `span` (the task's one handle on
    /// it beside the journal's: every clone of a span is a registry update).
    pub(super) fn new(journal: TaskJournal, span: tracing::Span) -> Writer {
        let writer = Writer {
            journal,
            posted: Arc::default(),
            queued: Arc::default(),
            span,
        };
        // A resumed run finds the messages its task had not taken.
        writer.sync_queued();
        writer
    }

    /// The task's span.
    #[inline]
    pub(super) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// What a new run's context shares with the actor: its queue of posted notes, and
    /// the count of queued messages.
    #[inline]
    pub(super) fn run_links(&self) -> (Arc<PostedNotes>, Arc<QueuedMessages>) {
        (self.posted.clone(), self.queued.clone())
    }

    /// A run started for a message that interrupted the last posts to a queue of its
    /// own (the old run's notes are dropped, as a canceled run's are).
    pub(super) fn drop_posted(&mut self) {
        self.posted = Arc::default();
    }

    /// Whether notes the run posted wait to be committed.
    #[inline]
    pub(super) fn has_unsettled_notes(&self) -> bool {
        self.posted.unsettled()
    }

    /// Commits the notes the run posted. Only a broken store fails this, and then the
    /// task ends `failed`: a note the run was told is posted is never dropped silently.
    /// A task being canceled (`canceling`), or ended, drops the notes, as it refuses the
    /// run's calls.
    pub(super) async fn store_posted(&mut self, canceling: bool) -> Result<(), JournalError> {
        self.commit_posted_then(Vec::new(), canceling, false).await
    }

    /// Commits the notes the run posted, in one commit, followed by `then` (the run's
    /// ending, say): what the run posted is stored before what it did next. A task not
    /// stored yet is stored by this commit even with nothing to add. A task being
    /// canceled, or ended, drops the notes. A commit that starts a new run (`new_run`)
    /// removes the task's checkpoint (the notes' checkpoints included).
    async fn commit_posted_then(
        &mut self,
        then: Vec<TaskEventKind>,
        canceling: bool,
        new_run: bool,
    ) -> Result<(), JournalError> {
        let notes = self.posted.take();
        let taken = notes.len();
        let dropped = canceling || self.journal.state().is_terminal();
        let mut checkpoint = None;
        let mut kinds: Vec<TaskEventKind> = notes
            .into_iter()
            .filter(|_| !dropped)
            .map(|note| {
                checkpoint = note.checkpoint.or(checkpoint.take());
                TaskEventKind::Status(note.status)
            })
            .collect();
        kinds.extend(then);
        let result = match kinds.is_empty() {
            true => Ok(()),
            false if new_run => self.journal.append_for_new_run(kinds).await,
            false => self.journal.append(kinds, checkpoint).await,
        };
        self.posted.committed(taken);
        result
    }

    pub(super) async fn set_status(
        &mut self,
        state: TaskState,
        text: Option<String>,
    ) -> Result<(), JournalError> {
        self.journal
            .append(vec![status_change(state, text)], None)
            .await
    }

    /// Ends the task `failed` when a change the runtime itself needed could not be made.
    pub(super) async fn fail_after(&mut self, what: &str, error: &JournalError) {
        if self.journal.is_fenced() {
            // Not a failure of the task: this node may not write it (cut off, or another
            // node holds it); the actor stops, and the holder carries the task on.
            tracing::warn!(parent: &self.span, %error, "{what}; this node may not write the task now");
            return;
        }
        tracing::error!(parent: &self.span, %error, "{what}");
        telemetry::metrics().failure("runtime");
        if let Err(error) = self
            .set_status(TaskState::Failed, Some(format!("{what}: {error}")))
            .await
        {
            tracing::error!(parent: &self.span, %error, "could not record the failure");
        }
    }

    /// Ends the task `canceled`, saying why.
    pub(super) async fn end_canceled(&mut self, text: &str) {
        if let Err(error) = self
            .set_status(TaskState::Canceled, Some(text.into()))
            .await
        {
            self.fail_after("could not record the cancel", &error).await;
        }
    }

    /// One commit: what the run posted last, then how it ended. (A run that ends while
    /// its task is canceled ends it `canceled` instead: `end_canceled`.)
    pub(super) async fn record_ending(&mut self, ending: Vec<TaskEventKind>) {
        if let Err(error) = self.commit_posted_then(ending, false, false).await {
            self.fail_after("could not record the skill's result", &error)
                .await;
        }
    }

    /// Stores the message, queued for the run, and wakes a run waiting for one.
    pub(super) async fn enqueue(&mut self, message: Message) -> Result<TaskSnapshot, RuntimeError> {
        if self.journal.record().inputs.queued.len() >= MAX_QUEUED_MESSAGES {
            let id = self.journal.task().id.clone();
            return Err(RuntimeError::QueueFull {
                id,
                waiting: MAX_QUEUED_MESSAGES,
            });
        }
        self.journal
            .append(vec![TaskEventKind::Queued(message)], None)
            .await?;
        self.sync_queued();
        Ok(self.journal.snapshot())
    }

    /// Whether messages wait for the run.
    #[inline]
    pub(super) fn has_queued(&self) -> bool {
        !self.journal.record().inputs.queued.is_empty()
    }

    /// The run asks for the oldest queued message: taken (stored) and handed over, or
    /// `None` when none waits.
    pub(super) async fn take_message(&mut self) -> Result<Option<Message>, SkillError> {
        let Some(message) = self.oldest_queued() else {
            return Ok(None);
        };
        let taken = TaskEventKind::MessageTaken { starts_run: false };
        self.journal
            .append(vec![taken], None)
            .await
            .map_err(SkillError::runtime)?;
        self.sync_queued();
        Ok(Some(message))
    }

    /// The run asks for input while messages wait: the oldest answers it at once. The
    /// prompt is stored and told all the same (`input-required`, then `working` again),
    /// in one commit. `None` when no message waits.
    pub(super) async fn answer_from_queue(
        &mut self,
        prompt: Message,
    ) -> Option<Result<Message, JournalError>> {
        let message = self.oldest_queued()?;
        let kinds = vec![
            TaskEventKind::Status(status(TaskState::InputRequired, Some(prompt))),
            TaskEventKind::MessageTaken { starts_run: false },
            status_change(TaskState::Working, None),
        ];
        let answered = self.journal.append(kinds, None).await;
        self.sync_queued();
        Some(answered.map(|()| message))
    }

    /// A run returned while messages wait: its reply (kept in the history and told as
    /// a `working` status) and artifacts are stored with the oldest message taken, in
    /// the commit that starts the next run (`then` holds them, see `run_task::completion`).
    /// The message the next run starts from, or `None` when that commit failed (and the
    /// task with it); `Err(then)` when no message waits: the run's outcome stands.
    pub(super) async fn follow_with_queued(
        &mut self,
        then: Vec<TaskEventKind>,
    ) -> Result<Option<Message>, Vec<TaskEventKind>> {
        let Some(next) = self.oldest_queued() else {
            return Err(then);
        };
        let mut kinds = Vec::with_capacity(then.len() + 2);
        for kind in then {
            match kind {
                TaskEventKind::Status(completed) => {
                    if let Some(reply) = &completed.message {
                        kinds.push(TaskEventKind::Message(reply.clone()));
                    }
                    kinds.push(TaskEventKind::Status(status(
                        TaskState::Working,
                        completed.message,
                    )));
                }
                other => kinds.push(other),
            }
        }
        kinds.push(TaskEventKind::MessageTaken { starts_run: true });
        let followed = self.commit_posted_then(kinds, false, true).await;
        self.sync_queued();
        match followed {
            Ok(()) => Ok(Some(next)),
            Err(error) => {
                self.fail_after("could not start the run for a queued message", &error)
                    .await;
                Ok(None)
            }
        }
    }

    /// The oldest message queued for the run and not taken.
    fn oldest_queued(&self) -> Option<Message> {
        let record = self.journal.record();
        record.inputs.queued_messages(&record.task).next().cloned()
    }

    /// Tells the run's contexts how many queued messages wait, as the record says.
    fn sync_queued(&self) {
        self.queued.set(self.journal.record().inputs.queued.len());
    }

    /// The message the run starts from: the one that asked for it (the first user
    /// message, or the one a follow-up or interruption started the run from).
    pub(super) fn run_message(&self) -> Result<&Message, RuntimeError> {
        let record = self.journal.record();
        record
            .inputs
            .run_message(&record.task)
            .ok_or_else(|| RuntimeError::invariant("task has no user message"))
    }

    /// The message the run starts from when an approver narrows the input: the asking
    /// message's text and the narrowed data, once `skill` accepts it as a narrowing.
    pub(super) fn narrowed_message(
        &self,
        skill: &dyn Skill,
        data: &serde_json::Value,
    ) -> Result<Message, RuntimeError> {
        let task = self.journal.task();
        let original = self.run_message()?;
        skill
            .narrow(original, data)
            .map_err(|reason| RuntimeError::InvalidInput(format!("narrowed input: {reason}")))?;
        let mut parts: Vec<Part> = original
            .parts
            .iter()
            .filter(|part| part.as_data().is_none())
            .cloned()
            .collect();
        parts.push(Part::data(data.clone()));
        let mut message = Message::user(parts);
        message.task_id = Some(task.id.clone());
        message.context_id = Some(task.context_id.clone());
        message.metadata = original.metadata.clone();
        message.validate()?;
        Ok(message)
    }
}
