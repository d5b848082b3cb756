//! `delegate`: hands a message on to a peer and follows the peer's task to its end,
//! mirroring it into the local task. Durable: the outgoing message's id is checkpointed
//! (and on disk) before it is sent, and the peer's task id right after, so a restarted
//! run follows the same remote task again, or sends the same message again (which a
//! peer that deduplicates by message id, as fundi does, answers with the same task); it
//! never sends a second, different message.

mod call;
mod follow;
mod plan;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use fundi_runtime::{
    InputRefused, Message, Part, Role, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput, TaskId,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::DelegateConfig;
use crate::directory::PeerDirectory;
use crate::remote::Sent;
use call::Calls;
use plan::Plan;

/// The scope a caller needs to delegate.
pub const DELEGATE_SCOPE: &str = "fundi:delegate";

/// The delegate skill's id.
pub const DELEGATE_SKILL: &str = "delegate";

/// The `delegate` skill.
#[derive(Debug, Clone)]
pub struct DelegateSkill {
    peers: Arc<PeerDirectory>,
    config: DelegateConfig,
}

impl DelegateSkill {
    /// Delegates to the peers of `peers`.
    pub fn new(peers: Arc<PeerDirectory>, config: DelegateConfig) -> DelegateSkill {
        DelegateSkill { peers, config }
    }
}

/// How far a delegation has got, saved as the checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Progress {
    /// The id of the message sent to the peer, chosen (and stored) before it is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message_id: Option<String>,
    /// The peer's task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remote_task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remote_context: Option<String>,
    /// The peer's question (its status key) that the local task asked its user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked: Option<String>,
    /// The peer's question last answered: asked again only once the peer asks anew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answered: Option<String>,
    /// The peer, so that a cancel of a parked task reaches it (`canceled_at_rest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    peer: Option<String>,
    /// What has been mirrored of the peer's task.
    #[serde(default, skip_serializing_if = "follow::Mirrored::is_empty")]
    mirrored: follow::Mirrored,
    /// The peer's task is followed quietly (it showed no change for `quiet-poll-s`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    quiet: bool,
}

#[async_trait]
impl Skill for DelegateSkill {
    fn card(&self) -> SkillCard {
        SkillCard::new(
            DELEGATE_SKILL,
            "Hands work on to another A2A agent that this fundi knows (a peer) and follows \
             the peer's task to its end: its notes, questions, artifacts and outcome show \
             in this task. The message's data part names the peer, and optionally the \
             peer's skill and a data part for it: {\"peer\": \"b\", \"skill\": \"echo\", \
             \"data\": {...}}; its text parts are sent as they are. Canceling this task \
             cancels the peer's; a question the peer asks is asked here, and the answer \
             sent on.",
        )
        .name("Delegate")
        .tags(["delegate", "peers", "a2a"])
        .examples(["{\"peer\": \"b\", \"skill\": \"echo\"} with the text to send"])
        .input_modes(["text/plain", "application/json"])
        .output_modes(["text/plain", "application/json"])
        .scope(DELEGATE_SCOPE)
        .resumable()
    }

    fn check(&self, message: &Message) -> Result<(), InputRefused> {
        let plan = Plan::of(message)?;
        let known = self.peers.names();
        if !known.contains(&plan.peer) {
            return Err(format!(
                "delegate: no peer is named {:?} (known peers: {})",
                plan.peer,
                match known.is_empty() {
                    true => "none; an operator adds them as [peers.<name>]".to_owned(),
                    false => known.join(", "),
                }
            )
            .into());
        }
        Ok(())
    }

    /// A task canceled while parked (following its peer's task quietly, or asking its
    /// user the peer's question): the peer's task is canceled too, as a run would.
    async fn canceled_at_rest(&self, task_id: &TaskId, checkpoint: Value) {
        let Ok(progress) = serde_json::from_value::<Progress>(checkpoint) else {
            tracing::warn!(%task_id, "delegate: unreadable checkpoint; the peer's task is left as it is");
            return;
        };
        if let (Some(peer), Some(task)) = (&progress.peer, &progress.remote_task) {
            call::cancel_remote(&self.peers, peer, task).await;
        }
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let first = input
            .history
            .iter()
            .find(|m| m.role == Role::User)
            .unwrap_or(&input.message);
        let plan = Plan::of(first).map_err(|e| SkillError::Rejected(e.to_string()))?;
        let mut progress: Progress = match &input.checkpoint {
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|e| SkillError::Failed(format!("delegate: unreadable checkpoint: {e}")))?,
            None => Progress::default(),
        };
        let calls = Calls {
            peers: &self.peers,
            peer: &plan.peer,
            ctx: &ctx,
            give_up_after: Duration::from_secs(self.config.give_up_after_s),
            poll_max: Duration::from_millis(self.config.poll_max_ms),
            quiet_poll: Duration::from_secs(self.config.quiet_poll_s),
        };
        // A restart while the local task asked its user: this run starts from the answer.
        let answer = (input.resumed
            && progress.asked.is_some()
            && input.message.message_id != first.message_id)
            .then(|| input.message.clone());
        let outcome = delegate(&calls, &plan, &mut progress, answer).await;
        if ctx.is_cancelled()
            && let Some(task) = &progress.remote_task
        {
            calls.cancel_remote(task).await;
        }
        outcome
    }
}

/// Sends the message unless the peer has it, then follows the peer's task.
async fn delegate(
    calls: &Calls<'_>,
    plan: &Plan,
    progress: &mut Progress,
    answer: Option<Message>,
) -> Result<SkillOutput, SkillError> {
    if progress.remote_task.is_none() {
        let message_id = match &progress.message_id {
            Some(id) => id.clone(),
            None => {
                let id = uuid::Uuid::now_v7().to_string();
                progress.message_id = Some(id.clone());
                calls.ctx.checkpoint(json!(progress)).await?;
                // On disk before the peer hears of it.
                calls.ctx.settle().await?;
                id
            }
        };
        let message = &plan.message(&message_id);
        match calls
            .retrying(|endpoint| async move { endpoint.send(message).await })
            .await?
        {
            Sent::Message(reply) => {
                return Ok(SkillOutput {
                    message: Some(plan::mirrored(&reply)),
                    artifacts: Vec::new(),
                });
            }
            Sent::Task(task) => {
                progress.remote_task = Some(task.id.clone());
                progress.peer = Some(plan.peer.clone());
                progress.remote_context = task.context_id.clone();
                let mut note = Message::agent(vec![Part::text(format!(
                    "Delegated to peer {} as its task {}.",
                    plan.peer, task.id
                ))]);
                note.metadata = json!({"delegation": {
                    "peer": plan.peer, "taskId": task.id, "contextId": task.context_id,
                }})
                .as_object()
                .cloned();
                calls
                    .ctx
                    .status_message(note, Some(json!(progress)))
                    .await?;
            }
        }
    }
    if let Some(answer) = answer {
        calls.forward(&answer, progress).await?;
    }
    follow::follow(calls, progress).await
}
