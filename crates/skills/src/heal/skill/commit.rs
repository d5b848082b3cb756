//! Making the fix: the remediator's edit, re-checked with the rules that found the
//! issue, committed on the fix's branch from HEAD (a branch a heal that has ended left
//! behind is made again), with the diff that the approver reads.

use fundi_ops::issues::NewIssue;
use fundi_runtime::{SkillError, SkillInput, TaskId};

use super::HealIssueSkill;
use crate::heal::git::Git;
use crate::heal::input::HealRequest;
use crate::heal::proposed::{Proposed, failed, reject};
use crate::heal::remedy::{Remediator, RemedyError, Tree};

impl HealIssueSkill {
    #[allow(clippy::too_many_arguments)] // one step's inputs, each named
    pub(crate) async fn make(
        &self,
        git: &Git,
        base: &str,
        branch: &str,
        remediator: &dyn Remediator,
        finding: &NewIssue,
        request: &HealRequest,
        tree: &Tree,
        input: &SkillInput,
    ) -> Result<Proposed, SkillError> {
        let remedy = remediator
            .remediate(finding, &request.place, tree)
            .map_err(|e| match e {
                RemedyError::NeedsPerson(_)
                | RemedyError::NotHandled(_)
                | RemedyError::NoFile(_) => reject(e.to_string()),
            })?;
        let fixed = tree.applied(&remedy.writes);
        let still = remediator
            .still_found(finding, &request.place, &fixed)
            .map_err(|e| failed("re-checking the fix", e))?;
        if still {
            return Err(SkillError::Failed(format!(
                "the fix ({}) does not fix it: {} still finds {} — nothing was committed",
                remedy.summary, finding.source, finding.rule
            )));
        }
        let task = &input.task_id;
        // A branch this very task made before a restart is made again, and so is one
        // a heal that has ended left behind (canceled while it waited, say).
        if let Some(existing) = git
            .branch_commit(branch)
            .await
            .map_err(|e| failed("git", e))?
        {
            let message = git.message_of(&existing).await.unwrap_or_default();
            let maker = message
                .lines()
                .find_map(|l| l.strip_prefix("Fundi-Task: "))
                .map(|id| TaskId::from(id.trim()));
            let stale = match &maker {
                Some(maker) => maker == task || self.tasks.ended(maker).await,
                None => false,
            };
            if !stale {
                return Err(reject(format!(
                    "branch {branch} exists already and was not made by a heal that has ended: \
                     delete it, or let its heal finish, before healing this issue again"
                )));
            }
            git.delete_branch(branch, &existing)
                .await
                .map_err(|e| failed("git update-ref -d", e))?;
        }
        let asked = input.owner.as_deref().unwrap_or("an in-process caller");
        let message = format!(
            "{}\n\nFixes {} finding {} at {}{}.\nAsked by {asked}; proposed for a person's \
             approval, never merged by fundi.\n\nFundi-Issue: {}\nFundi-Task: {task}\n",
            remedy.summary,
            finding.source,
            finding.rule,
            finding.location,
            finding
                .target
                .as_ref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default(),
            finding.fingerprint,
        );
        let author = (
            self.config.author_name.as_str(),
            self.config.author_email.as_str(),
        );
        let commit = git
            .commit_on_new_branch(base, branch, &remedy.writes, &message, author)
            .await
            .map_err(|e| match e.command.as_str() {
                "update-ref" => reject(format!(
                    "another heal made branch {branch} first: {}",
                    e.message
                )),
                _ => failed("committing the fix", e),
            })?;
        let (diff, added, removed) = git
            .diff(base, &commit)
            .await
            .map_err(|e| failed("git diff", e))?;
        Ok(Proposed {
            finding: finding.clone(),
            stored: false,
            root: git.root.clone(),
            branch: branch.to_owned(),
            commit,
            base: base.to_owned(),
            summary: remedy.summary,
            files: remedy.writes.iter().map(|w| w.path.clone()).collect(),
            added,
            removed,
            notes: remedy.notes,
            requested_by: input.owner.clone(),
            diff,
        })
    }
}
