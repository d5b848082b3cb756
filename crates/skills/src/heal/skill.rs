//! The heal-issue skill: an issue becomes a commit on a `fundi/heal-<issue>` branch,
//! shown as a diff, and waits in `input-required` for a person holding `fundi:heal`;
//! approval publishes the branch, rejection deletes it, nothing is merged. The skill's
//! steps are its own child modules: proposing (`proposal`), making the commit
//! (`commit`), and waiting for the decision and carrying it out (`approval`).

mod approval;
mod commit;
mod proposal;

use std::sync::Arc;

use async_trait::async_trait;
use fundi_ops::issues::IssueStore;
use fundi_runtime::{
    InputRefused, Message, MessagePolicy, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput,
};

use super::config::HealConfig;
use super::headers::HeadersRemediator;
use super::html::HtmlRemediator;
use super::input::parse;
use super::link::RuntimeLink;
use super::proposed::{Proposal, Proposed};
use super::remedy::Remediator;

/// The skill's id.
pub const SKILL_ID: &str = "heal-issue";
/// The scope a caller needs to start a heal, and to approve or reject one.
pub const SCOPE: &str = "fundi:heal";

/// The heal-issue skill.
pub struct HealIssueSkill {
    pub(crate) config: HealConfig,
    pub(crate) issues: Arc<dyn IssueStore>,
    pub(crate) remediators: Vec<Arc<dyn Remediator>>,
    pub(crate) tasks: RuntimeLink,
}

impl HealIssueSkill {
    /// The skill with its built-in remediators; `tasks` is set once the runtime runs.
    pub fn new(
        config: HealConfig,
        issues: Arc<dyn IssueStore>,
        tasks: RuntimeLink,
    ) -> Result<HealIssueSkill, String> {
        config.validate()?;
        let remediators = built_in(&config);
        Ok(HealIssueSkill {
            config,
            issues,
            remediators,
            tasks,
        })
    }

    /// Adds a remediator, asked before the built-in ones.
    pub fn with_remediator(mut self, remediator: impl Remediator) -> HealIssueSkill {
        self.remediators.insert(0, Arc::new(remediator));
        self
    }
}

/// The built-in remediators, as `config` sets them up.
pub(crate) fn built_in(config: &HealConfig) -> Vec<Arc<dyn Remediator>> {
    vec![
        Arc::new(HeadersRemediator::new(
            config.headers.clone(),
            config.cookie_flags.clone(),
        )),
        Arc::new(HtmlRemediator::new(config.default_lang.clone())),
    ]
}

#[async_trait]
impl Skill for HealIssueSkill {
    fn card(&self) -> SkillCard {
        SkillCard::new(
            SKILL_ID,
            "Turns a recorded issue (security headers, cookie flags, a page's lang, title, \
             decorative image or label) into a fix committed on a fundi/heal-<issue> branch \
             of an allowed git repository, shows the diff, and waits for a person holding \
             fundi:heal to answer \"approve\" (the branch is pushed) or \"reject <reason>\" \
             (it is deleted). Nothing is ever merged. Input: a data part {\"issue\": ID or \
             {source, rule, location, target, evidence}, \"repository\": PATH, \"file\"?, \
             \"site\"?, \"root\"?}.",
        )
        .name("Heal issue")
        .tag("remediation")
        .tag("git")
        .example(r#"{"issue": "4f0c...", "repository": "/srv/site"}"#)
        .input_modes(["application/json", "text/plain"])
        .output_modes(["text/plain", "text/x-diff", "application/json"])
        .scope(SCOPE)
        .resumable()
        .answered_by_scope()
        .while_working(MessagePolicy::Reject)
        .input_schema(crate::schemas::of(SKILL_ID).unwrap_or_default())
    }

    fn check(&self, message: &Message) -> Result<(), InputRefused> {
        crate::schemas::check(SKILL_ID, message)?;
        let request = parse(message, &fundi_runtime::TaskId::from("-"))?;
        super::input::inside_workspace(&request.repository, &self.config.workspaces)?;
        Ok(())
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let waiting: Option<Proposed> = input
            .checkpoint
            .clone()
            .and_then(|c| serde_json::from_value(c).ok());
        if let Some(proposed) = waiting.filter(|_| input.resumed) {
            // After a restart: the answer the task was woken by, or (a restart while
            // it worked on an answer) the task's first message, which answers nothing.
            let first = input
                .history
                .iter()
                .find(|m| m.role == fundi_runtime::Role::User);
            let answer = (first.map(|m| &m.message_id) != Some(&input.message.message_id))
                .then(|| input.message.clone());
            return self.decide(proposed, answer, &ctx).await;
        }
        let request = parse(&input.message, &input.task_id).map_err(SkillError::Rejected)?;
        ctx.status("checking the repository and the issue").await?;
        let proposed = match self.propose(&request, &input).await? {
            Proposal::AlreadyFixed(text) => return Ok(SkillOutput::text(text)),
            Proposal::Made(proposed) => *proposed,
        };
        ctx.artifact(proposed.diff_artifact()).await?;
        ctx.artifact(proposed.summary_artifact()).await?;
        let checkpoint = serde_json::to_value(&proposed)
            .map_err(|e| SkillError::Failed(format!("saving the proposal: {e}")))?;
        if let Err(error) = ctx.checkpoint(checkpoint).await {
            self.withdraw(&proposed, &input.task_id).await;
            return Err(error);
        }
        self.decide(proposed, None, &ctx).await
    }
}
