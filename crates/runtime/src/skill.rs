//! The embedding API: what a skill is, what it gets, what it returns.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::SkillContext;
pub use crate::error::SkillError;

/// Why a skill refuses an input before anything runs ([`Skill::check`]) or an
/// approver's narrowed input ([`Skill::narrow`]): what is wrong, in words its sender can
/// act on. The caller gets it as invalid params.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct InputRefused {
    reason: String,
}

impl InputRefused {
    /// A refusal saying `reason`.
    pub fn new(reason: impl Into<String>) -> InputRefused {
        InputRefused {
            reason: reason.into(),
        }
    }

    /// What is wrong.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl From<String> for InputRefused {
    fn from(reason: String) -> InputRefused {
        InputRefused::new(reason)
    }
}

impl From<&str> for InputRefused {
    fn from(reason: &str) -> InputRefused {
        InputRefused::new(reason)
    }
}
use crate::model::{Artifact, ContextId, Message, Part, Scope, SkillId, TaskId, UserId};

/// What a skill tells the world about itself (it becomes an A2A `AgentSkill`). Made
/// with [`SkillCard::new`] and the methods after it, so that a field added later breaks
/// no skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SkillCard {
    /// Stable id; messages select the skill by it.
    pub id: SkillId,
    /// Human-readable name.
    pub name: String,
    /// What the skill does.
    pub description: String,
    /// Keywords.
    pub tags: Vec<String>,
    /// Example prompts.
    pub examples: Vec<String>,
    /// Media types the skill accepts.
    pub input_modes: Vec<String>,
    /// Media types the skill produces.
    pub output_modes: Vec<String>,
    /// The scope a caller needs to start the skill (e.g. `fundi:audit`), if any.
    pub required_scope: Option<Scope>,
    /// Whether an interrupted run may be started again with its last checkpoint after a
    /// restart. A non-resumable task that a restart interrupts ends `failed`. A
    /// resumable run waiting for input also stops when its task parks
    /// (`RuntimeConfig::park_after_ms`): the answer starts a run with its checkpoint.
    pub resumable: bool,
    /// What a user's message to a task that is `submitted` or `working` does (a message
    /// while the task asks for input is its answer, whatever the policy).
    #[serde(default)]
    pub while_working: MessagePolicy,
    /// Whether a task of this skill that waits for input may be answered by any caller
    /// holding the skill's scope, not only by its owner: work that someone other than
    /// the asker approves (heal-issue's fixes). The answer's sender is recorded in it
    /// (see [`Message::sender`]). While the task waits, such a caller may read it too
    /// (`RuntimeHandle::get_as`); listing, subscribing and cancelling stay the owner's.
    #[serde(default)]
    pub answered_by_scope: bool,
    /// The JSON Schema of the data part a task's first message carries, when the skill
    /// declares one: shown to clients on the agent card and by the MCP tools (the skill
    /// checks its input against it in [`Skill::check`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
}

/// What a user's message does when it arrives while a task's run works (the "double
/// texting" of chat agents). Messages are stored in the task's history before they are
/// acknowledged, whatever the policy that takes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessagePolicy {
    /// Queued for the run: it takes them with [`SkillContext::next_message`] (or
    /// `try_next_message`); its next request for input is answered by the oldest one at
    /// once; and a run that returns while some wait is followed, in the same task, by a
    /// run that starts from the oldest (its reply is kept in the history, and told as a
    /// `working` status).
    Enqueue,
    /// The run is canceled (with the grace period of a cancel: its calls are refused at
    /// once) and a new run starts from the message, in the same task, without the old
    /// run's checkpoint.
    Interrupt,
    /// Refused, as the task accepts a message only when it asks for input.
    #[default]
    Reject,
}

impl MessagePolicy {
    /// The policy as the card's skill description tells it to clients.
    pub fn describe(self) -> &'static str {
        match self {
            MessagePolicy::Enqueue => {
                "Messages sent to a task while it works are queued for it, and each is handled."
            }
            MessagePolicy::Interrupt => {
                "A message sent to a task while it works restarts the task from that message."
            }
            MessagePolicy::Reject => {
                "A task takes messages only when it asks for input; messages sent while it \
                 works are refused."
            }
        }
    }
}

impl SkillCard {
    /// A card with this id and description, and defaults for the rest: named after its
    /// id, text in and out, no tags or examples, no scope required, not resumable,
    /// messages refused while a task works.
    /// Change them with the methods below:
    ///
    /// ```
    /// let card = fundi_runtime::SkillCard::new("shout", "Upper-cases text")
    ///     .example("hello")
    ///     .scope("demo:shout")
    ///     .resumable();
    /// assert_eq!((card.name.as_str(), card.resumable), ("shout", true));
    /// ```
    pub fn new(id: impl Into<SkillId>, description: impl Into<String>) -> SkillCard {
        let id = id.into();
        SkillCard {
            name: id.to_string(),
            id,
            description: description.into(),
            tags: Vec::new(),
            examples: Vec::new(),
            input_modes: vec!["text/plain".into()],
            output_modes: vec!["text/plain".into()],
            required_scope: None,
            resumable: false,
            while_working: MessagePolicy::Reject,
            answered_by_scope: false,
            input_schema: None,
        }
    }

    /// Declares the JSON Schema of the skill's data input.
    pub fn input_schema(mut self, schema: serde_json::Value) -> SkillCard {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the human-readable name.
    pub fn name(mut self, name: impl Into<String>) -> SkillCard {
        self.name = name.into();
        self
    }

    /// Adds a keyword.
    pub fn tag(mut self, tag: impl Into<String>) -> SkillCard {
        self.tags.push(tag.into());
        self
    }

    /// Keywords (in place of any added before).
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> SkillCard {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Example prompts (in place of any added before).
    pub fn examples<S: Into<String>>(mut self, examples: impl IntoIterator<Item = S>) -> SkillCard {
        self.examples = examples.into_iter().map(Into::into).collect();
        self
    }

    /// The scope a caller needs (`None`: any caller).
    pub fn required_scope(mut self, scope: Option<Scope>) -> SkillCard {
        self.required_scope = scope;
        self
    }

    /// Resumable when `resumable` holds (see [`SkillCard::resumable`]).
    pub fn resumable_if(mut self, resumable: bool) -> SkillCard {
        self.resumable = resumable;
        self
    }

    /// Answered by holders of its scope when `answered` holds (see
    /// [`SkillCard::answered_by_scope`]).
    pub fn answered_by_scope_if(mut self, answered: bool) -> SkillCard {
        self.answered_by_scope = answered;
        self
    }

    /// Adds an example prompt.
    pub fn example(mut self, example: impl Into<String>) -> SkillCard {
        self.examples.push(example.into());
        self
    }

    /// Sets the media types accepted (instead of `text/plain`).
    pub fn input_modes<S: Into<String>>(mut self, modes: impl IntoIterator<Item = S>) -> SkillCard {
        self.input_modes = modes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the media types produced (instead of `text/plain`).
    pub fn output_modes<S: Into<String>>(
        mut self,
        modes: impl IntoIterator<Item = S>,
    ) -> SkillCard {
        self.output_modes = modes.into_iter().map(Into::into).collect();
        self
    }

    /// Requires callers to hold `scope` to start the skill.
    pub fn scope(mut self, scope: impl Into<Scope>) -> SkillCard {
        self.required_scope = Some(scope.into());
        self
    }

    /// Declares the skill resumable: after a restart an interrupted run starts again
    /// from its last checkpoint instead of ending `failed`.
    pub fn resumable(mut self) -> SkillCard {
        self.resumable = true;
        self
    }

    /// Lets any caller holding the skill's scope answer a task's request for input,
    /// not only the task's owner (see [`SkillCard::answered_by_scope`]).
    pub fn answered_by_scope(mut self) -> SkillCard {
        self.answered_by_scope = true;
        self
    }

    /// Sets what a message to a task that works does (instead of refusing it).
    pub fn while_working(mut self, policy: MessagePolicy) -> SkillCard {
        self.while_working = policy;
        self
    }
}

/// What a run starts from.
#[derive(Debug, Clone)]
pub struct SkillInput {
    /// The task.
    pub task_id: TaskId,
    /// The task's context.
    pub context_id: ContextId,
    /// The user message that starts (or, after a restart, resumes) this run: the task's
    /// first, or the message that interrupted or followed an earlier run (see
    /// [`MessagePolicy`]), or after a restart the one the task's last run started from
    /// (or its last answer).
    pub message: Message,
    /// The task's history so far, oldest first (includes `message`).
    pub history: Vec<Message>,
    /// The last checkpoint the skill saved, when the run resumes one a restart
    /// interrupted (a run started by a message starts without one).
    pub checkpoint: Option<Value>,
    /// True when this run resumes a task interrupted by a restart.
    pub resumed: bool,
    /// The user who owns the task (who asked), when there is one.
    pub owner: Option<UserId>,
}

/// What a finished run produced. Artifacts are stored before the task completes.
#[derive(Debug, Clone, Default)]
pub struct SkillOutput {
    /// Final reply, kept as the completed status message (and in the history).
    pub message: Option<Message>,
    /// Artifacts to add as the task completes (skills may also stream them earlier).
    pub artifacts: Vec<Artifact>,
}

impl SkillOutput {
    /// An output whose final reply is this text.
    pub fn text(text: impl Into<String>) -> SkillOutput {
        SkillOutput {
            message: Some(Message::agent(vec![Part::text(text)])),
            artifacts: Vec::new(),
        }
    }

    /// Adds an artifact.
    pub fn with_artifact(mut self, artifact: Artifact) -> SkillOutput {
        self.artifacts.push(artifact);
        self
    }
}

/// A skill: the one trait embedders implement.
///
/// `run` is called once per run, on its own tokio task. A panic inside it ends the task
/// `failed` with the panic text and touches nothing else.
#[async_trait]
pub trait Skill: Send + Sync + 'static {
    /// The skill's card.
    fn card(&self) -> SkillCard;

    /// Does the work, reporting through `ctx`.
    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError>;

    /// Whether the skill moves its tasks to `working` itself (with a status or progress
    /// call) instead of the runtime doing it as each run starts: a task then stays
    /// `submitted` until the skill says that work has begun (the inbox's proposals wait
    /// `submitted` until a local agent picks one up). By default the runtime does it.
    fn sets_working(&self) -> bool {
        false
    }

    /// Called once a task of this skill is canceled while none of its runs is live to
    /// hear it (see [`SkillContext::cancelled`]): the task had parked (waiting for input,
    /// or idle, see [`SkillContext::idle`]) or waited to run again. `checkpoint` is the
    /// task's last, so that the skill can let go of what its runs started outside (the
    /// delegate skill cancels the peer's task). Called only for a task with a checkpoint,
    /// on a task of its own once the cancel is stored, once: not again after a restart.
    /// By default it does nothing.
    async fn canceled_at_rest(&self, task_id: &TaskId, checkpoint: Value) {
        let _ = (task_id, checkpoint);
    }

    /// Checks a new task's first message before anything is stored (before an approval
    /// gate too, so that no approver is asked about input the skill would refuse): the
    /// error says what is wrong, and the caller gets it as invalid params. A skill checks
    /// again in `run`, where it reads the input. By default every message passes.
    fn check(&self, message: &Message) -> Result<(), InputRefused> {
        let _ = message;
        Ok(())
    }

    /// Whether `narrowed` asks for no more than `original` (a task's first message) did:
    /// an approver may approve a gated task on such an input instead (a shorter plan,
    /// fewer pages). The error says what goes beyond. By default nothing is a narrowing.
    fn narrow(&self, original: &Message, narrowed: &serde_json::Value) -> Result<(), InputRefused> {
        let _ = (original, narrowed);
        Err(InputRefused::new(format!(
            "skill {} does not take a narrowed input: approve it as asked, or reject it",
            self.card().id
        )))
    }
}
