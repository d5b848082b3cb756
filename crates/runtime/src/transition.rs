//! The one pure function through which every task change goes.

use thiserror::Error;

use crate::model::{Message, Task, TaskEventKind, TaskState};

/// Why a change cannot be applied to a task.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TransitionError {
    /// Terminal tasks never change again.
    #[error("task is already {state} and cannot change")]
    Terminal {
        /// The terminal state.
        state: TaskState,
    },
    /// The status change is not in the lifecycle.
    #[error("a task cannot go from {from} to {to}")]
    InvalidStatus {
        /// Current state.
        from: TaskState,
        /// Requested state.
        to: TaskState,
    },
    /// Artifacts are produced only while the skill works.
    #[error("artifacts can only be added while the task is working, not {state}")]
    ArtifactWhileNotWorking {
        /// Current state.
        state: TaskState,
    },
    /// An append chunk names an artifact that was never started.
    #[error("cannot append to artifact {artifact_id:?}: no artifact with that id")]
    UnknownArtifact {
        /// The missing artifact id.
        artifact_id: String,
    },
    /// An artifact must have at least one part.
    #[error("artifact {artifact_id:?} has no parts")]
    EmptyArtifact {
        /// The empty artifact's id.
        artifact_id: String,
    },
    /// `Created` is only ever the first event.
    #[error("a task is created once")]
    AlreadyCreated,
}

/// Applies one change to a task and returns the changed task (the task itself is
/// left as it was).
///
/// Rules (A2A-DIGEST §3.1, decisions in docs/runtime-semantics.md):
/// - a terminal task never changes;
/// - status changes follow [`TaskState::can_transition_to`]; a `working` to `working`
///   change is a progress note;
/// - an agent message that interrupts or ends the task (a prompt, the final reply, the
///   failure reason) is also appended to the history; progress notes are not;
/// - artifacts are accepted while working: a new id is added, an existing id without
///   `append` is replaced, `append` adds parts to an open artifact;
/// - a message (a user's, queued or not, or a run's reply) is appended to the history,
///   stamped with the task and context ids; the run taking a queued message changes
///   nothing the client sees (the record's inputs, `RunInputs`).
pub fn transition(task: &Task, change: &TaskEventKind) -> Result<Task, TransitionError> {
    let mut next = task.clone();
    apply(&mut next, change)?;
    Ok(next)
}

/// [`transition`] in place, for a caller that owns the task: its history and
/// artifacts are not copied. An invalid change leaves the task as it was (every rule
/// is checked before anything changes).
pub(crate) fn apply(task: &mut Task, change: &TaskEventKind) -> Result<(), TransitionError> {
    check(task, change)?;
    replay(task, change);
    Ok(())
}

/// Whether `change` may be applied to `task` (the rules of [`transition`]).
fn check(task: &Task, change: &TaskEventKind) -> Result<(), TransitionError> {
    let state = task.status.state;
    if state.is_terminal() {
        return Err(TransitionError::Terminal { state });
    }
    match change {
        TaskEventKind::Created(_) => Err(TransitionError::AlreadyCreated),
        TaskEventKind::Status(status) if !state.can_transition_to(status.state) => {
            Err(TransitionError::InvalidStatus {
                from: state,
                to: status.state,
            })
        }
        TaskEventKind::Status(_)
        | TaskEventKind::Message(_)
        | TaskEventKind::Queued(_)
        | TaskEventKind::MessageTaken { .. } => Ok(()),
        TaskEventKind::Artifact { .. } if state != TaskState::Working => {
            Err(TransitionError::ArtifactWhileNotWorking { state })
        }
        TaskEventKind::Artifact {
            artifact, append, ..
        } => {
            let id = &artifact.artifact_id;
            let exists = task.artifacts.iter().any(|a| &a.artifact_id == id);
            match append {
                true if !exists => Err(TransitionError::UnknownArtifact {
                    artifact_id: id.clone(),
                }),
                false if artifact.parts.is_empty() => Err(TransitionError::EmptyArtifact {
                    artifact_id: id.clone(),
                }),
                _ => Ok(()),
            }
        }
    }
}

/// Makes a change that was checked when it was made: what `apply` does after its
/// checks, and what a store does to rebuild a task from an older snapshot and the
/// events committed since (where the rules were checked once already, and a change is
/// never refused: the event log is the truth).
pub fn replay(task: &mut Task, change: &TaskEventKind) {
    match change {
        TaskEventKind::Created(created) => *task = created.clone(),
        TaskEventKind::Status(status) => {
            if let Some(message) = &status.message
                && (status.state.is_interrupted() || status.state.is_terminal())
            {
                let message = stamped(task, message);
                task.history.push(message);
            }
            task.status = status.clone();
        }
        TaskEventKind::Artifact {
            artifact, append, ..
        } => {
            let existing = task
                .artifacts
                .iter_mut()
                .find(|a| a.artifact_id == artifact.artifact_id);
            match (existing, append) {
                (Some(existing), true) => existing.parts.extend(artifact.parts.iter().cloned()),
                (Some(existing), false) => *existing = artifact.clone(),
                (None, _) => task.artifacts.push(artifact.clone()),
            }
        }
        TaskEventKind::Message(message) | TaskEventKind::Queued(message) => {
            let message = stamped(task, message);
            task.history.push(message);
        }
        TaskEventKind::MessageTaken { .. } => {}
    }
}

fn stamped(task: &Task, message: &Message) -> Message {
    let mut message = message.clone();
    message.task_id = Some(task.id.clone());
    message.context_id = Some(task.context_id.clone());
    message
}

#[cfg(test)]
mod tests;
