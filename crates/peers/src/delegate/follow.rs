//! Following a peer's task to its end, and mirroring it into the local task: its notes
//! as `working` notes, its artifacts by id, a question as the local task's question
//! (answered on the peer), and its outcome as the local outcome. A peer that streams is
//! followed with `SubscribeToTask` (read again with `GetTask` whenever the stream ends
//! or the state changes); one that does not is read with `GetTask`, with backoff. A
//! task that shows no change for `quiet-poll-s` is followed quietly: read once every
//! `quiet-poll-s`, the local run idle between reads (`SkillContext::idle`), so that its
//! task parks; what was mirrored is in the checkpoint, so that the run the wake starts
//! tells nothing twice.

use std::collections::BTreeMap;
use std::time::Duration;

use fundi_runtime::{Artifact, Message, Part, SkillError, SkillOutput, TaskState};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::time::Instant;

use super::call::Calls;
use super::{Progress, plan};
use crate::error::PeerError;
use crate::remote::{RemoteEvent, RemoteTask};

/// The first pause between two reads of a task followed by polling.
const FIRST_POLL: Duration = Duration::from_millis(200);

/// What has been mirrored already, so that each change is told once (kept in the
/// checkpoint, so that a resumed run tells it once too).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Mirrored {
    /// The peer's last note mirrored (its status key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    /// Each artifact mirrored whole: its id, and the SHA-256 of its JSON (hex).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    artifacts: BTreeMap<String, String>,
}

impl Mirrored {
    pub(crate) fn is_empty(&self) -> bool {
        self.note.is_none() && self.artifacts.is_empty()
    }

    /// Mirrors the artifacts that differ from those mirrored; whether any did.
    async fn artifacts(
        &mut self,
        calls: &Calls<'_>,
        artifacts: &[Artifact],
    ) -> Result<bool, SkillError> {
        let mut changed = false;
        for artifact in artifacts {
            let fingerprint = fingerprint(artifact);
            if self.artifacts.get(&artifact.artifact_id) != Some(&fingerprint) {
                calls.ctx.artifact(artifact.clone()).await?;
                self.artifacts
                    .insert(artifact.artifact_id.clone(), fingerprint);
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Mirrors a working note, once; whether it did.
    async fn note(
        &mut self,
        calls: &Calls<'_>,
        key: String,
        message: Option<&Message>,
    ) -> Result<bool, SkillError> {
        let Some(message) = message else {
            return Ok(false);
        };
        if self.note.as_deref() == Some(key.as_str()) {
            return Ok(false);
        }
        calls
            .ctx
            .status_message(plan::mirrored(message), None)
            .await?;
        self.note = Some(key);
        Ok(true)
    }
}

/// An artifact's fingerprint: the hex SHA-256 of its JSON (the digest fundi keeps of a
/// token, `fundi_ops::grants::token_digest`).
fn fingerprint(artifact: &Artifact) -> String {
    let json = serde_json::to_string(artifact).unwrap_or_default();
    fundi_ops::grants::token_digest(&json)
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
    let mut poll = FIRST_POLL;
    let mut stream = true;
    let mut last_change = Instant::now();
    loop {
        let task = calls
            .retrying(|endpoint| {
                let id = id.clone();
                async move { endpoint.get_task(&id).await }
            })
            .await?;
        let mut changed = progress.mirrored.artifacts(calls, &task.artifacts).await?;
        match task.state {
            TaskState::Submitted | TaskState::Working => {
                let key = task.status_key();
                changed |= progress
                    .mirrored
                    .note(calls, key, task.message.as_ref())
                    .await?;
            }
            TaskState::InputRequired => {
                let key = task.status_key();
                if progress.answered.as_deref() != Some(key.as_str()) {
                    progress.quiet = false;
                    ask(calls, progress, &task, key).await?;
                    poll = FIRST_POLL;
                    last_change = Instant::now();
                    continue;
                }
                // Answered already: the peer has not taken the answer yet.
            }
            _ => return ended(calls.peer, task),
        }
        if changed {
            last_change = Instant::now();
            progress.quiet = false;
        }
        if quiet(calls, progress, last_change) {
            // What was mirrored is stored before the run may stop for the wait.
            if !progress.quiet || changed {
                progress.quiet = true;
                calls.ctx.checkpoint(json!(progress)).await?;
            }
            calls.ctx.idle(calls.quiet_poll).await?;
            continue;
        }
        let streams = stream && matches!(task.state, TaskState::Submitted | TaskState::Working);
        if streams
            && calls
                .peers
                .endpoint(calls.peer)
                .await
                .is_ok_and(|(_, streams)| streams)
        {
            match watch(calls, &id, &mut progress.mirrored, &mut last_change).await {
                // The state changed: read the task at once.
                Ok(true) => {
                    poll = FIRST_POLL;
                    last_change = Instant::now();
                    continue;
                }
                // The stream ended with the task still working (or was quiet for
                // `quiet-poll-s`): subscribe again after a pause, so that a peer that
                // closes streams is not called in a loop.
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

/// Whether the peer's task is followed quietly now: it has shown no change for
/// `quiet-poll-s` (in this run, or in the one before, which was quiet when it stopped).
fn quiet(calls: &Calls<'_>, progress: &Progress, last_change: Instant) -> bool {
    !calls.quiet_poll.is_zero() && (progress.quiet || last_change.elapsed() >= calls.quiet_poll)
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
/// stream ends, or nothing new comes for `quiet-poll-s` after `last_change` (`false`);
/// notes and artifact chunks are mirrored as they come, and move `last_change`.
async fn watch(
    calls: &Calls<'_>,
    id: &str,
    mirror: &mut Mirrored,
    last_change: &mut Instant,
) -> Result<bool, PeerError> {
    let (endpoint, _) = calls.peers.endpoint(calls.peer).await?;
    let mut events = endpoint.subscribe(id).await?;
    let quiet_poll = calls.quiet_poll;
    loop {
        let event = tokio::select! {
            () = calls.ctx.cancelled() => return Ok(true),
            () = tokio::time::sleep_until(*last_change + quiet_poll), if !quiet_poll.is_zero() => {
                return Ok(false);
            }
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
                let chunk = calls.ctx.artifact_chunk(artifact, append, last_chunk);
                chunk.await.map(|()| true)
            }
            RemoteEvent::Message(_) => Ok(false),
        };
        match mirrored {
            Ok(true) => *last_change = Instant::now(),
            Ok(false) => {}
            // The local task could not take it (canceled, stopping): the caller sees why.
            Err(_) => return Ok(true),
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
            // Mirrored already, as each was read (`Mirrored::artifacts`), the last of
            // them from this very read: told again, each would be a second event.
            artifacts: Vec::new(),
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
