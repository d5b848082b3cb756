//! Waiting for the approver of a proposed fix and carrying out the decision: approval
//! pushes exactly the fix's branch to the configured remote, rejection (or a cancel)
//! deletes it; either way the issue's status says what came of it.

use chrono::Utc;
use fundi_ops::issues::IssueStatus;
use fundi_runtime::{Artifact, Message, Part, SkillContext, SkillError, SkillOutput, TaskId};
use serde_json::json;

use super::HealIssueSkill;
use crate::heal::decision::{self, Decision};
use crate::heal::git::Git;
use crate::heal::proposed::{Proposed, branch_of};

impl HealIssueSkill {
    /// Asks for approval until an answer decides (an answer may already be given),
    /// then publishes or deletes the branch.
    pub(crate) async fn decide(
        &self,
        proposed: Proposed,
        mut answer: Option<Message>,
        ctx: &SkillContext,
    ) -> Result<SkillOutput, SkillError> {
        let mut prompt = proposed.prompt(&self.config.remote);
        loop {
            let message = match answer.take() {
                Some(message) => message,
                None => match ctx.request_input(prompt.clone()).await {
                    Ok(message) => message,
                    Err(error) => {
                        self.withdraw(&proposed, ctx.task_id()).await;
                        return Err(error);
                    }
                },
            };
            let by = message.sender().map(str::to_owned);
            let approver = by.as_deref().unwrap_or("an in-process caller");
            if self.config.require_distinct_approver
                && by.as_deref() == proposed.requested_by.as_deref()
            {
                prompt = format!(
                    "{approver} asked for this fix and cannot approve or reject it too: another \
                     person holding fundi:heal must. {}",
                    proposed.prompt(&self.config.remote)
                );
                continue;
            }
            match decision::read(&message) {
                Err(why) => prompt = format!("{why}. {}", proposed.prompt(&self.config.remote)),
                Ok(Decision::Approve) => return self.publish(&proposed, approver, ctx).await,
                Ok(Decision::Reject(reason)) => {
                    self.withdraw(&proposed, ctx.task_id()).await;
                    return Err(SkillError::Rejected(format!(
                        "rejected by {approver} at {}: {reason}; branch {} was deleted",
                        Utc::now().to_rfc3339(),
                        proposed.branch
                    )));
                }
            }
        }
    }

    async fn publish(
        &self,
        proposed: &Proposed,
        approver: &str,
        ctx: &SkillContext,
    ) -> Result<SkillOutput, SkillError> {
        let git = Git {
            root: proposed.root.clone(),
        };
        // Only the branch this task made, still where it made it, is ever pushed.
        let expected = branch_of(&proposed.finding.fingerprint);
        let at = git
            .branch_commit(&proposed.branch)
            .await
            .map_err(|e| SkillError::Failed(format!("git: {e}")))?;
        if proposed.branch != expected || at.as_deref() != Some(proposed.commit.as_str()) {
            self.withdraw(proposed, ctx.task_id()).await;
            return Err(SkillError::Failed(format!(
                "branch {} is no longer at the proposed commit {}: nothing was pushed",
                proposed.branch, proposed.commit
            )));
        }
        let current = git.current_branch().await.ok().flatten();
        if current.as_deref() == Some(proposed.branch.as_str()) {
            return Err(SkillError::Failed(format!(
                "branch {} is checked out: nothing was pushed",
                proposed.branch
            )));
        }
        ctx.status(format!(
            "approved by {approver}: pushing {}",
            proposed.branch
        ))
        .await?;
        // The push happens at most once: with several nodes, only while this one still
        // holds the task (a node cut off from the database, or one whose task another
        // node took, pushes nothing; the holder decides again).
        ctx.ensure_still_held().await?;
        if let Err(error) = git.push_branch(&self.config.remote, &proposed.branch).await {
            self.withdraw(proposed, ctx.task_id()).await;
            return Err(SkillError::Failed(format!(
                "approved by {approver}, but {} refused branch {}: {}; the branch was deleted and \
                 the issue is open again",
                self.config.remote, proposed.branch, error.message
            )));
        }
        if proposed.stored {
            self.set_status(&proposed.finding.fingerprint, IssueStatus::Fixed)
                .await?;
        }
        let decided = json!({
            "decision": "approved",
            "by": approver,
            "at": Utc::now(),
            "branch": proposed.branch,
            "commit": proposed.commit,
            "remote": self.config.remote,
        });
        Ok(SkillOutput::text(format!(
            "approved by {approver}: branch {} (commit {}) is pushed to {}; merging it is a \
             person's call, fundi never merges",
            proposed.branch,
            &proposed.commit[..proposed.commit.len().min(12)],
            self.config.remote
        ))
        .with_artifact(Artifact::new(
            "heal-decision",
            "heal-decision",
            vec![Part::data(decided)],
        )))
    }

    /// Takes the proposal back: its branch deleted, the issue let go and open again.
    pub(crate) async fn withdraw(&self, proposed: &Proposed, task: &TaskId) {
        let git = Git {
            root: proposed.root.clone(),
        };
        if let Err(error) = git.delete_branch(&proposed.branch, &proposed.commit).await {
            tracing::warn!(%error, branch = %proposed.branch, "deleting a heal's branch");
        }
        if proposed.stored {
            self.release(&proposed.finding.fingerprint, task).await;
        }
    }
}
