//! Proposing a fix: the issue found, the repository checked (inside a workspace, no
//! uncommitted changes), the issue held for this task, the fix made and re-checked,
//! and committed on its own branch from HEAD.

use std::sync::Arc;

use fundi_ops::issues::{HealClaim, HealLink, Issue, IssueStatus, NewIssue};
use fundi_runtime::{SkillError, SkillInput, TaskId};

use super::HealIssueSkill;
use crate::heal::git::Git;
use crate::heal::input::{HealRequest, IssueRef, inside_workspace};
use crate::heal::proposed::{Proposal, Proposed, branch_of, failed, reject};
use crate::heal::remedy::{Remediator, Tree};

impl HealIssueSkill {
    pub(crate) async fn propose(
        &self,
        request: &HealRequest,
        input: &SkillInput,
    ) -> Result<Proposal, SkillError> {
        let task = &input.task_id;
        let (finding, record) = self.finding(&request.issue).await?;
        let stored = record.is_some();
        let dir = inside_workspace(&request.repository, &self.config.workspaces).map_err(reject)?;
        let git = Git::open(&dir).await.map_err(|e| {
            reject(format!(
                "data.repository {} is not a git repository: {e}",
                dir.display()
            ))
        })?;
        // The repository's top too: a directory inside the workspace of a repository
        // that reaches outside it is not allowed.
        inside_workspace(&git.root, &self.config.workspaces).map_err(reject)?;
        let dirty = git
            .uncommitted()
            .await
            .map_err(|e| failed("git status", e))?;
        if !dirty.is_empty() {
            return Err(reject(format!(
                "the repository {} has uncommitted changes ({}): commit or stash them first",
                git.root.display(),
                dirty.join(", ")
            )));
        }
        let id = &finding.fingerprint;
        let name_safe = !id.is_empty()
            && id.len() <= 128
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !name_safe {
            return Err(reject(format!(
                "issue id {id:?} cannot name a branch: heal needs ids of letters, digits, - and _"
            )));
        }
        let remediator = self.remediator_for(&finding)?;
        let base = git
            .head()
            .await
            .map_err(|e| failed("git rev-parse HEAD", e))?;
        let tree = self
            .tree(&git, &base, remediator.as_ref(), &finding, request)
            .await?;
        let place = &request.place;
        // Fixed by an approved heal: its branch is re-checked, not HEAD (where the fix
        // may not be merged yet). A fix merged into HEAD that HEAD no longer has is a
        // regression, healed again below.
        let healed = record
            .filter(|issue| issue.status == IssueStatus::Fixed)
            .and_then(|issue| issue.heal)
            .and_then(|link| link.branch);
        if let Some(healed) = healed
            && let Some(commit) = git
                .branch_commit(&healed)
                .await
                .map_err(|e| failed("git", e))?
            && !git.is_ancestor(&commit, &base).await
        {
            let on_branch = self
                .tree(&git, &commit, remediator.as_ref(), &finding, request)
                .await?;
            let still = remediator
                .still_found(&finding, place, &on_branch)
                .map_err(|e| reject(e.to_string()))?;
            if !still {
                return Ok(Proposal::AlreadyFixed(format!(
                    "{} no longer finds {} at {} on branch {healed} (commit {}): the issue is \
                     fixed there, and merging the branch is a person's call",
                    finding.source,
                    finding.rule,
                    finding.location,
                    &commit[..commit.len().min(12)]
                )));
            }
        }
        let still = remediator
            .still_found(&finding, place, &tree)
            .map_err(|e| reject(e.to_string()))?;
        let branch = branch_of(&finding.fingerprint);
        if !still {
            if stored {
                self.set_status(&finding.fingerprint, IssueStatus::Fixed)
                    .await?;
            }
            return Ok(Proposal::AlreadyFixed(format!(
                "{} no longer finds {} at {} in {} (HEAD {}): the issue is fixed",
                finding.source,
                finding.rule,
                finding.location,
                git.root.display(),
                &base[..base.len().min(12)]
            )));
        }
        if stored {
            self.claim(&finding.fingerprint, task).await?;
        }
        let made = self
            .make(
                &git,
                &base,
                &branch,
                remediator.as_ref(),
                &finding,
                request,
                &tree,
                input,
            )
            .await;
        match made {
            Ok(proposed) => {
                if stored {
                    self.mark_proposed(&finding.fingerprint, task, &branch)
                        .await?;
                }
                Ok(Proposal::Made(Box::new(Proposed { stored, ..proposed })))
            }
            Err(error) => {
                if stored {
                    self.release(&finding.fingerprint, task).await;
                }
                Err(error)
            }
        }
    }

    async fn finding(&self, issue: &IssueRef) -> Result<(NewIssue, Option<Issue>), SkillError> {
        match issue {
            IssueRef::Inline(finding) => Ok(((**finding).clone(), None)),
            IssueRef::Stored(id) => match self.issues.issue(id).await {
                Ok(Some(issue)) => Ok((issue.finding.clone(), Some(issue))),
                Ok(None) => Err(reject(format!(
                    "data.issue: no issue {id:?} in the issue store"
                ))),
                Err(e) => Err(failed("reading the issue store", e)),
            },
        }
    }

    fn remediator_for(&self, finding: &NewIssue) -> Result<Arc<dyn Remediator>, SkillError> {
        self.remediators
            .iter()
            .find(|r| r.handles(finding))
            .cloned()
            .ok_or_else(|| {
                reject(format!(
                    "no remediator handles {} issues of rule {} (built in: security headers, \
                     cookie flags when configured, rel=noopener, and a11y html-has-lang, \
                     document-title, image-alt on decorative images, label)",
                    finding.source, finding.rule
                ))
            })
    }

    async fn tree(
        &self,
        git: &Git,
        rev: &str,
        remediator: &dyn Remediator,
        finding: &NewIssue,
        request: &HealRequest,
    ) -> Result<Tree, SkillError> {
        let paths = git.tracked().await.map_err(|e| failed("git ls-tree", e))?;
        let mut tree = Tree::new(paths);
        let files = remediator
            .files(finding, &request.place, &tree)
            .map_err(|e| reject(e.to_string()))?;
        for path in files {
            let content = git
                .read_at(rev, &path)
                .await
                .map_err(|e| failed("git cat-file", e))?;
            if let Some(content) = content {
                tree = tree.with_file(path, content);
            }
        }
        Ok(tree)
    }

    async fn claim(&self, id: &str, task: &TaskId) -> Result<(), SkillError> {
        // A holder that ended (failed, or gone) no longer holds the issue.
        let holder = match self.issues.issue(id).await {
            Ok(issue) => issue.and_then(|i| i.heal).map(|l| l.task_id),
            Err(e) => return Err(failed("reading the issue store", e)),
        };
        let mut ended = None;
        if let Some(holder) = holder.filter(|h| h != task) {
            ended = Some((holder.clone(), self.tasks.ended(&holder).await));
        }
        let taken_over = move |h: &TaskId| ended.as_ref().is_some_and(|(e, over)| e == h && *over);
        match self.issues.claim_heal(id, task, &taken_over).await {
            Ok(HealClaim::Claimed(_)) => Ok(()),
            Ok(HealClaim::HeldBy(other)) => Err(reject(format!(
                "another heal (task {other}) holds issue {id}: it proposes the fix"
            ))),
            Ok(HealClaim::NoSuchIssue) => Err(reject(format!("data.issue: no issue {id:?}"))),
            Err(e) => Err(failed("claiming the issue", e)),
        }
    }

    pub(crate) async fn set_status(&self, id: &str, status: IssueStatus) -> Result<(), SkillError> {
        self.issues
            .set_status(id, status)
            .await
            .map(drop)
            .map_err(|e| failed("updating the issue", e))
    }

    async fn mark_proposed(&self, id: &str, task: &TaskId, branch: &str) -> Result<(), SkillError> {
        let link = HealLink {
            task_id: task.clone(),
            branch: Some(branch.to_owned()),
        };
        self.issues
            .modify(id, &|issue| {
                let mut issue = issue.clone();
                issue.status = IssueStatus::FixProposed;
                issue.heal = Some(link.clone());
                Some(issue)
            })
            .await
            .map(drop)
            .map_err(|e| failed("updating the issue", e))
    }

    /// Lets go of the issue, open again; a failure to is logged (the next heal of the
    /// issue takes it over once this task has ended).
    pub(crate) async fn release(&self, id: &str, task: &TaskId) {
        if let Err(error) = self.issues.release_heal(id, task, IssueStatus::Open).await {
            tracing::warn!(%error, issue = id, "letting go of the issue");
        }
    }
}
