//! Following a peer's task to its end, and mirroring it into the local task: its notes
//! as `working` notes, its artifacts by id, a question as the local task's question
//! (answered on the peer), and its outcome as the local outcome. A peer that streams is
//! followed with `SubscribeToTask` (read again with `GetTask` whenever the stream ends
//! or the state changes); one that does not is read with `GetTask`, with backoff.

use std::collections::HashMap;
use std::time::Duration;

use fundi_runtime::{Artifact, Message, Part, SkillError, SkillOutput, TaskState};
use futures::StreamExt;
use serde_json::json;

use super::call::Calls;
use super::{Progress, plan};
use crate::error::PeerError;
use crate::remote::{RemoteEvent, RemoteTask};

/// The first pause between two reads of a task followed by polling.
const FIRST_POLL: Duration = Duration::from_millis(200);

/// What has been mirrored already, so that each change is told once.
#[derive(Default)]
struct Mirror {
    artifacts: HashMap<String, Artifact>,
    note: Option<String>,
}

impl Mirror {
    /// Mirrors the artifacts that differ from those mirrored.
    async fn artifacts(
        &mut self,
        calls: &Calls<'_>,
        artifacts: &[Artifact],
    ) -> Result<(), SkillError> {
        for artifact in artifacts {
            if self.artifacts.get(&artifact.artifact_id) != Some(artifact) {
                calls.ctx.artifact(artifact.clone()).await?;
                self.artifacts
                    .insert(artifact.artifact_id.clone(), artifact.clone());
            }
        }
        Ok(())
    }

    /// Mirrors a working note, once.
    async fn note(
        &mut self,
        calls: &Calls<'_>,
        key: String,
        message: Option<&Message>,
    ) -> Result<(), SkillError> {
        let Some(message) = message else {
            return Ok(());
        };
        if self.note.as_deref() == Some(key.as_str()) {
            return Ok(());
        }
        calls
            .ctx
            .status_message(plan::mirrored(message), None)
            .await?;
        self.note = Some(key);
        Ok(())
    }
}

/// Follows the peer's task `progress.remote_task` until it ends.
pub(crate) async fn follow(
    calls: &Calls<'_>,
    progress: &mut Progress,
) -> Result<SkillOutput, SkillError> {
    let Some(id) = progress.remote_task.clone() else {
        return Err(SkillError::Failed(
            "delegate: no peer task to follow".into(),
        ));
    };
    let mut mirror = Mirror::default();
    let mut poll = FIRST_POLL;
    let mut stream = true;
    loop {
        let task = calls
            .retrying(|endpoint| {
                let id = id.clone();
                async move { endpoint.get_task(&id).await }
            })
            .await?;
        mirror.artifacts(calls, &task.artifacts).await?;
        match task.state {
            TaskState::Submitted | TaskState::Working => {
                mirror
                    .note(calls, task.status_key(), task.message.as_ref())
                    .await?;
            }
            TaskState::InputRequired => {
                let key = task.status_key();
                if progress.answered.as_deref() != Some(key.as_str()) {
                    ask(calls, progress, &task, key).await?;
                    poll = FIRST_POLL;
                    continue;
                }
                // Answered already: the peer has not taken the answer yet.
            }
            _ => return ended(calls.peer, task),
        }
        let streams = stream && matches!(task.state, TaskState::Submitted | TaskState::Working);
        if streams
            && calls
                .peers
                .endpoint(calls.peer)
                .await
                .is_ok_and(|(_, streams)| streams)
        {
            match watch(calls, &id, &mut mirror).await {
                // The state changed: read the task at once.
                Ok(true) => {
                    poll = FIRST_POLL;
                    continue;
                }
                // The stream ended with the task still working: subscribe again after a
                // pause, so that a peer that closes streams is not called in a loop.
                Ok(false) => {}
                // A peer that will not stream this task is polled instead.
                Err(error) if !error.is_transient() => stream = false,
                Err(_) => {}
            }
        }
        calls.pause(poll).await?;
        poll = (poll * 2).min(calls.poll_max);
    }
}

/// Asks the local user the peer's question, and sends the answer on.
async fn ask(
    calls: &Calls<'_>,
    progress: &mut Progress,
    task: &RemoteTask,
    key: String,
) -> Result<(), SkillError> {
    progress.asked = Some(key);
    calls.ctx.checkpoint(json!(progress)).await?;
    let prompt = match &task.message {
        Some(message) => plan::mirrored(message),
        None => Message::agent(vec![Part::text(format!(
            "Peer {} asks for input on its task {}.",
            calls.peer, task.id
        ))]),
    };
    let answer = calls.ctx.request_input_message(prompt).await?;
    calls.forward(&answer, progress).await
}

/// Reads the peer's stream of the task until its state leaves `working` (`true`) or the
/// stream ends (`false`); notes and artifact chunks are mirrored as they come.
async fn watch(calls: &Calls<'_>, id: &str, mirror: &mut Mirror) -> Result<bool, PeerError> {
    let (endpoint, _) = calls.peers.endpoint(calls.peer).await?;
    let mut events = endpoint.subscribe(id).await?;
    loop {
        let event = tokio::select! {
            () = calls.ctx.cancelled() => return Ok(true),
            event = events.next() => event,
        };
        let Some(event) = event else {
            return Ok(false);
        };
        let mirrored = match event? {
            RemoteEvent::Task(task) => {
                if !matches!(task.state, TaskState::Submitted | TaskState::Working) {
                    return Ok(true);
                }
                let key = task.status_key();
                mirror.note(calls, key, task.message.as_ref()).await
            }
            RemoteEvent::Status { state, message } => {
                if !matches!(state, TaskState::Submitted | TaskState::Working) {
                    return Ok(true);
                }
                let key = message
                    .as_ref()
                    .map(|m| m.message_id.clone())
                    .unwrap_or_default();
                mirror.note(calls, key, message.as_ref()).await
            }
            RemoteEvent::Artifact {
                artifact,
                append,
                last_chunk,
            } => {
                // Read whole again at the next `GetTask`.
                mirror.artifacts.remove(&artifact.artifact_id);
                calls.ctx.artifact_chunk(artifact, append, last_chunk).await
            }
            RemoteEvent::Message(_) => Ok(()),
        };
        if mirrored.is_err() {
            // The local task could not take it (canceled, stopping): the caller sees why.
            return Ok(true);
        }
    }
}

/// The local outcome of a peer's task that ended (or asks what delegation cannot give).
fn ended(peer: &str, task: RemoteTask) -> Result<SkillOutput, SkillError> {
    let words = task
        .message
        .as_ref()
        .map(Message::text)
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "no reason given".to_owned());
    let id = &task.id;
    match task.state {
        TaskState::Completed => Ok(SkillOutput {
            message: Some(match &task.message {
                Some(message) => plan::mirrored(message),
                None => Message::agent(vec![Part::text(format!(
                    "Peer {peer} completed its task {id}."
                ))]),
            }),
            artifacts: task.artifacts,
        }),
        TaskState::Rejected => Err(SkillError::Rejected(format!(
            "peer {peer} rejected its task {id}: {words}"
        ))),
        TaskState::Canceled => Err(SkillError::Failed(format!(
            "peer {peer} canceled its task {id}: {words}"
        ))),
        TaskState::AuthRequired => Err(SkillError::Failed(format!(
            "peer {peer}'s task {id} asks for authentication, which delegation cannot give: {words}"
        ))),
        _ => Err(SkillError::Failed(format!(
            "peer {peer}'s task {id} failed: {words}"
        ))),
    }
}
