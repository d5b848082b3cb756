//! Progress notes a skill posts without waiting for them to be stored
//! (`SkillContext::post_progress`). They wait here, shared by the run's contexts and its
//! actor, which commits every note waiting in one commit, in the order they were posted.

use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use crate::model::TaskStatus;

/// Progress notes a run may have waiting to be stored
/// ([`SkillContext::post_progress`](crate::SkillContext::post_progress)). A skill that
/// posts faster than its notes are stored waits, at this many, for them to be stored
/// before it queues another: the queue stays bounded, and one commit stores at most this
/// many notes.
pub const MAX_POSTED: usize = 256;

/// One posted progress note: a `working` status (stamped when it was posted), and the
/// checkpoint saved with it, if any.
pub(crate) struct PostedNote {
    pub(crate) status: TaskStatus,
    pub(crate) checkpoint: Option<Value>,
}

/// What `PostedNotes::push` did with a note.
pub(crate) enum Pushed {
    /// Queued behind others: the actor has been told of the queue already.
    Queued,
    /// Queued first: the actor must be told.
    First,
    /// Not queued: `MAX_POSTED` notes wait already. The note comes back (boxed: this is
    /// the rare case).
    Full(Box<PostedNote>),
}

/// A run's posted notes, from posting until their commit is over.
#[derive(Default)]
pub(crate) struct PostedNotes {
    inner: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<PostedNote>,
    /// Notes taken by the actor whose commit is not over yet.
    committing: usize,
}

impl PostedNotes {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn push(&self, note: PostedNote) -> Pushed {
        let mut queue = self.lock();
        if queue.waiting.len() >= MAX_POSTED {
            return Pushed::Full(Box::new(note));
        }
        queue.waiting.push(note);
        match queue.waiting.len() {
            1 => Pushed::First,
            _ => Pushed::Queued,
        }
    }

    /// Whether some note is posted and its commit not over (waiting or being committed).
    pub(crate) fn unsettled(&self) -> bool {
        let queue = self.lock();
        !queue.waiting.is_empty() || queue.committing > 0
    }

    /// The actor takes every waiting note, to commit them; `committed` says the commit is
    /// over (stored or not).
    pub(crate) fn take(&self) -> Vec<PostedNote> {
        let mut queue = self.lock();
        let notes = std::mem::take(&mut queue.waiting);
        queue.committing += notes.len();
        notes
    }

    pub(crate) fn committed(&self, notes: usize) {
        if notes == 0 {
            // Every call of a run that posts nothing comes by here: no second lock.
            return;
        }
        let mut queue = self.lock();
        queue.committing = queue.committing.saturating_sub(notes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, Part, TaskState};

    fn note(text: &str) -> PostedNote {
        PostedNote {
            status: TaskStatus {
                state: TaskState::Working,
                message: Some(Message::agent(vec![Part::text(text)])),
                timestamp: chrono::Utc::now(),
            },
            checkpoint: None,
        }
    }

    fn text(note: &PostedNote) -> String {
        note.status.message.as_ref().unwrap().text()
    }

    #[test]
    fn the_first_note_tells_the_actor_and_a_full_queue_gives_the_note_back() {
        let notes = PostedNotes::default();
        assert!(!notes.unsettled());
        assert!(matches!(notes.push(note("0")), Pushed::First));
        for i in 1..MAX_POSTED {
            assert!(matches!(notes.push(note(&i.to_string())), Pushed::Queued));
        }
        match notes.push(note("one too many")) {
            Pushed::Full(back) => assert_eq!(text(&back), "one too many"),
            _ => panic!("a full queue took the note"),
        }

        let taken = notes.take();
        assert_eq!(taken.len(), MAX_POSTED);
        assert_eq!(text(&taken[7]), "7", "notes keep their order");
        assert!(
            notes.unsettled(),
            "taken notes are unsettled until committed"
        );
        // A note posted while the others are committed tells the actor again.
        assert!(matches!(notes.push(note("next")), Pushed::First));
        notes.committed(taken.len());
        assert!(notes.unsettled());
        notes.committed(notes.take().len());
        assert!(!notes.unsettled());
    }
}
