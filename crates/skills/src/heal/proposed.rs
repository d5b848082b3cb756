//! What proposing a fix comes to (`Proposal`), the fix waiting for its approver
//! (`Proposed`, the task's checkpoint, and how it is shown: its artifacts and the
//! request for approval), its branch's name, and the errors proposing ends with.

use fundi_ops::issues::NewIssue;
use fundi_runtime::{Artifact, Part, SkillError};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A fix waiting for its approver: the task's checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Proposed {
    /// The issue.
    pub(crate) finding: NewIssue,
    /// Whether it is in the issue store (an inline issue is not).
    pub(crate) stored: bool,
    /// The repository's top.
    pub(crate) root: std::path::PathBuf,
    /// The fix's branch and commit, and the commit it starts from.
    pub(crate) branch: String,
    pub(crate) commit: String,
    pub(crate) base: String,
    /// What it does, the files it changes, lines added and removed.
    pub(crate) summary: String,
    pub(crate) files: Vec<String>,
    pub(crate) added: u64,
    pub(crate) removed: u64,
    /// What the approver should look at.
    pub(crate) notes: Vec<String>,
    /// Who asked.
    pub(crate) requested_by: Option<fundi_runtime::UserId>,
    /// The diff.
    pub(crate) diff: String,
}

/// What proposing came to.
pub(crate) enum Proposal {
    /// A fix waits on its branch.
    Made(Box<Proposed>),
    /// Nothing to do: the issue is fixed already (the text says where).
    AlreadyFixed(String),
}

pub(crate) fn reject(message: impl Into<String>) -> SkillError {
    SkillError::Rejected(message.into())
}

pub(crate) fn failed(what: &str, error: impl std::fmt::Display) -> SkillError {
    SkillError::Failed(format!("{what}: {error}"))
}

/// The branch a fix of `issue` is made on.
pub(crate) fn branch_of(issue_id: &str) -> String {
    format!("fundi/heal-{issue_id}")
}

impl Proposed {
    /// The diff, as the `heal-diff` artifact.
    pub(crate) fn diff_artifact(&self) -> Artifact {
        Artifact::new(
            "heal-diff",
            "heal-diff",
            vec![Part::text(self.diff.clone()).with_media_type("text/x-diff")],
        )
    }

    /// What is proposed, as the `heal-proposal` artifact.
    pub(crate) fn summary_artifact(&self) -> Artifact {
        let value = json!({
            "issue": self.finding.fingerprint,
            "source": self.finding.source,
            "rule": self.finding.rule,
            "location": self.finding.location,
            "repository": self.root,
            "branch": self.branch,
            "commit": self.commit,
            "base": self.base,
            "files": self.files,
            "linesAdded": self.added,
            "linesRemoved": self.removed,
            "requestedBy": self.requested_by,
            "summary": self.summary,
            "notes": self.notes,
        });
        Artifact::new("heal-proposal", "heal-proposal", vec![Part::data(value)])
    }

    /// The request for approval, in words.
    pub(crate) fn prompt(&self, remote: &str) -> String {
        let who = self
            .requested_by
            .as_deref()
            .unwrap_or("an in-process caller");
        let notes = match self.notes.is_empty() {
            true => String::new(),
            false => format!(" Check before approving: {}.", self.notes.join("; ")),
        };
        format!(
            "Proposed fix of issue {} ({} {} on {}), asked by {who}: {}. Branch {} (commit {}) \
             changes {} (+{} -{}).{notes} Answer \"approve\" to push the branch to {remote}, \
             or \"reject <reason>\" to delete it; nothing is merged.",
            self.finding.fingerprint,
            self.finding.source,
            self.finding.rule,
            self.finding.location,
            self.summary,
            self.branch,
            &self.commit[..self.commit.len().min(12)],
            self.files.join(", "),
            self.added,
            self.removed,
        )
    }
}
