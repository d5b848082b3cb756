//! The `inbox` skill: proposals from other agents, which fundi never executes. A task
//! sent to it waits `submitted` (durably: after a restart it waits again) until a local
//! agent with scope `fundi:inbox` answers it (`fundi_respond_to_task` over MCP, or
//! `POST /inbox/{task}/respond`): done with an answer, a question back to its sender
//! (the task asks for input, and the sender's reply waits for an answer in turn, the
//! task `working`), rejected, or failed. One that nobody answers in `skills.inbox.expires-after-s` ends
//! `rejected`, saying so.

use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use fundi_ops::inbox::{Answer, Inbox, Proposal, Response};
use fundi_runtime::{
    Artifact, Message, MessagePolicy, Part, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput,
};
use serde::{Deserialize, Serialize};

/// The skill's id.
pub const SKILL_ID: &str = "inbox";

/// `[skills.inbox]` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
#[non_exhaustive]
pub struct InboxConfig {
    /// How long a proposal (or a sender's reply) waits for an answer, in seconds, before
    /// its task is rejected. Default: 86400 (24 h).
    pub expires_after_s: u64,
}

impl Default for InboxConfig {
    fn default() -> Self {
        InboxConfig {
            expires_after_s: 86_400,
        }
    }
}

/// The `inbox` skill, answering through `inbox`.
#[derive(Debug, Clone)]
pub struct InboxSkill {
    config: InboxConfig,
    inbox: Inbox,
}

impl InboxSkill {
    /// The skill, whose proposals wait in `inbox`.
    pub fn new(config: InboxConfig, inbox: Inbox) -> Result<InboxSkill, String> {
        if config.expires_after_s == 0 {
            return Err("skills.inbox.expires-after-s must be at least 1".into());
        }
        Ok(InboxSkill { config, inbox })
    }
}

#[async_trait]
impl Skill for InboxSkill {
    fn card(&self) -> SkillCard {
        SkillCard::new(
            SKILL_ID,
            "Proposals for the agents working beside this server: fundi never executes \
             them; a local agent answers (done, a question back, rejected or failed). Send \
             text, and data if any.",
        )
        .name("Inbox")
        .tag("inbox")
        .tag("agents")
        .input_modes(["text/plain", "application/json"])
        .output_modes(["text/plain", "application/json"])
        .resumable()
        .while_working(MessagePolicy::Reject)
    }

    /// A proposal stays `submitted` until a local agent answers it.
    fn sets_working(&self) -> bool {
        true
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let lasts = Duration::from_secs(self.config.expires_after_s);
        let mut latest = input.message;
        loop {
            let since = Utc::now();
            let expires_at =
                since + chrono::Duration::from_std(lasts).unwrap_or(chrono::Duration::MAX);
            let answer = self.inbox.offer(Proposal {
                task_id: ctx.task_id().clone(),
                from: input.owner.as_ref().map(ToString::to_string),
                message: latest.clone(),
                since,
                expires_at,
            });
            let response = tokio::select! {
                answered = answer => answered.ok(),
                () = ctx.cancelled() => {
                    self.inbox.withdraw(ctx.task_id());
                    return Err(SkillError::Canceled);
                }
                () = tokio::time::sleep(lasts) => None,
            };
            let Some(Response { answer, by }) = response else {
                self.inbox.withdraw(ctx.task_id());
                return Err(SkillError::Rejected(format!(
                    "no local agent answered within {}",
                    humantime::format_duration(lasts)
                )));
            };
            match answer {
                Answer::Complete { text, data } => {
                    ctx.status(format!("answered by {by}")).await?;
                    return Ok(output(text, data, &by));
                }
                Answer::Ask { text } => {
                    ctx.status(format!("{by} asks a question back")).await?;
                    latest = ctx.request_input(format!("{text} (asked by {by})")).await?;
                }
                Answer::Reject { text } => {
                    return Err(SkillError::Rejected(format!("{text} (answered by {by})")));
                }
                Answer::Fail { text } => {
                    return Err(SkillError::Failed(format!("{text} (answered by {by})")));
                }
            }
        }
    }
}

/// The answer as the completed task carries it: the text as its reply, the data as an
/// artifact, each saying who answered.
fn output(text: Option<String>, data: Option<serde_json::Value>, by: &str) -> SkillOutput {
    let reply = text.unwrap_or_else(|| "answered with data".into());
    let mut message = Message::agent(vec![Part::text(reply)]);
    message.metadata = serde_json::json!({"answeredBy": by}).as_object().cloned();
    let mut output = SkillOutput {
        message: Some(message),
        artifacts: Vec::new(),
    };
    if let Some(data) = data {
        output = output.with_artifact(Artifact::new("answer", "answer", vec![Part::data(data)]));
    }
    output
}
