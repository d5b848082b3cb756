//! What proposing a fix comes to (`Proposal`), the fix waiting for its approver
//! (`Proposed`, the task's checkpoint), its branch's name, and the errors proposing ends
//! with.

use fundi_ops::issues::NewIssue;
use fundi_runtime::SkillError;
use serde::{Deserialize, Serialize};

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
