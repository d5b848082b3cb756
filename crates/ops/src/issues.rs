//! The issue store: findings of the auditing skills (a11y-audit, security-scan), kept
//! beside the tasks so that later work (heal-issue) can pick them up. Each issue has a
//! stable fingerprint made from what identifies it (skill, rule, place), so a re-run
//! that finds the same problem updates the issue instead of adding another.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;

mod in_memory;

pub use in_memory::MemoryIssueStore;

/// A finding as a skill reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewIssue {
    /// From [`fingerprint`]: equal for the same problem in the same place.
    pub fingerprint: String,
    /// The skill that found it (`a11y-audit`, `security-scan`).
    pub source: String,
    /// The rule or check id (`image-alt`, `csp-unsafe-inline`).
    pub rule: String,
    /// As the source grades it (`critical`/`serious`/... or `high`/`medium`/...).
    pub severity: String,
    /// One line saying what is wrong.
    pub title: String,
    /// Where: a page URL (or `inline:<name>`).
    pub location: String,
    /// Where on the page, when it applies (a CSS selector, a header name).
    pub target: Option<String>,
    /// What was seen (an HTML snippet, a header value).
    pub evidence: String,
    /// How to fix it.
    pub remediation: String,
    /// Classification (WCAG criteria, CWE ids).
    pub tags: Vec<String>,
    /// The task that found it.
    pub task_id: TaskId,
}

/// Whether an issue is still a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IssueStatus {
    /// Found and not fixed.
    Open,
    /// A fix waits on a branch for a person's approval (heal-issue).
    FixProposed,
    /// A fix was approved and published on a branch (heal-issue); merging it is a
    /// person's job.
    Fixed,
    /// Closed by an operator.
    Resolved,
}

impl IssueStatus {
    /// The status as written on the wire and in the store (`fix-proposed`).
    pub fn as_str(self) -> &'static str {
        match self {
            IssueStatus::Open => "open",
            IssueStatus::FixProposed => "fix-proposed",
            IssueStatus::Fixed => "fixed",
            IssueStatus::Resolved => "resolved",
        }
    }

    /// The status named `name`, if any.
    pub fn parse(name: &str) -> Option<IssueStatus> {
        [
            IssueStatus::Open,
            IssueStatus::FixProposed,
            IssueStatus::Fixed,
            IssueStatus::Resolved,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// The heal task that holds an issue: one at a time, so that two heals of one issue
/// do not both propose a fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealLink {
    /// The task.
    pub task_id: TaskId,
    /// The branch it made, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

/// What a claim of an issue by a heal task came to.
#[derive(Debug, Clone, PartialEq)]
pub enum HealClaim {
    /// The task holds the issue now (or held it already).
    Claimed(Box<Issue>),
    /// Another task holds it.
    HeldBy(TaskId),
    /// There is no such issue.
    NoSuchIssue,
}

/// A stored issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Issue {
    /// The latest report of it.
    #[serde(flatten)]
    pub finding: NewIssue,
    /// Open or resolved.
    pub status: IssueStatus,
    /// When it was first found.
    pub first_seen: DateTime<Utc>,
    /// When it was last found.
    pub last_seen: DateTime<Utc>,
    /// How many runs found it.
    pub occurrences: u64,
    /// The heal task that holds it, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal: Option<HealLink>,
}

impl Issue {
    /// The issue's id: its fingerprint.
    pub fn id(&self) -> &str {
        &self.finding.fingerprint
    }
}

/// A stable fingerprint of the parts that identify a finding (hex SHA-256, shortened
/// to 32 digits).
pub fn fingerprint(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0x1f]);
    }
    hasher
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where issues are kept.
#[async_trait]
pub trait IssueStore: Send + Sync + 'static {
    /// Records a finding: a new issue (true), or an update of the one with the same
    /// fingerprint (false: `last_seen` and `occurrences` move, a resolved issue opens
    /// again).
    async fn record(&self, finding: NewIssue) -> Result<(Issue, bool), StoreError>;

    /// One issue by id.
    async fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError>;

    /// Every issue, optionally only those of one source, by id.
    async fn issues(&self, source: Option<&str>) -> Result<Vec<Issue>, StoreError>;

    /// Changes one issue atomically: `change` gets the stored issue and returns the
    /// new one, or `None` to leave it as it is (it may be called more than once when
    /// writers race). Returns the issue as it stands after, `None` if there is none.
    async fn modify(
        &self,
        id: &str,
        change: &(dyn for<'i> Fn(&'i Issue) -> Option<Issue> + Send + Sync),
    ) -> Result<Option<Issue>, StoreError>;

    /// Sets an issue's status; false if there is no such issue.
    async fn set_status(&self, id: &str, status: IssueStatus) -> Result<bool, StoreError> {
        let changed = self
            .modify(id, &|issue| {
                let mut issue = issue.clone();
                issue.status = status;
                Some(issue)
            })
            .await?;
        Ok(changed.is_some())
    }

    /// Lets `task` hold the issue, unless another task does and `taken_over` (asked
    /// with the holder) says it may not be taken from it.
    async fn claim_heal(
        &self,
        id: &str,
        task: &TaskId,
        taken_over: &(dyn for<'t> Fn(&'t TaskId) -> bool + Send + Sync),
    ) -> Result<HealClaim, StoreError> {
        let after = self
            .modify(id, &|issue| match &issue.heal {
                Some(link) if &link.task_id == task => None,
                Some(link) if !taken_over(&link.task_id) => None,
                _ => {
                    let mut issue = issue.clone();
                    issue.heal = Some(HealLink {
                        task_id: task.clone(),
                        branch: None,
                    });
                    Some(issue)
                }
            })
            .await?;
        Ok(match after {
            None => HealClaim::NoSuchIssue,
            Some(issue) => match &issue.heal {
                Some(link) if &link.task_id == task => HealClaim::Claimed(Box::new(issue)),
                Some(link) => HealClaim::HeldBy(link.task_id.clone()),
                None => HealClaim::NoSuchIssue,
            },
        })
    }

    /// Lets go of the issue if `task` holds it, setting its status back to `status`.
    async fn release_heal(
        &self,
        id: &str,
        task: &TaskId,
        status: IssueStatus,
    ) -> Result<(), StoreError> {
        self.modify(id, &|issue| {
            let held = issue.heal.as_ref().is_some_and(|l| &l.task_id == task);
            held.then(|| {
                let mut issue = issue.clone();
                issue.heal = None;
                issue.status = status;
                issue
            })
        })
        .await?;
        Ok(())
    }
}

/// The record that `finding` makes of `existing` (for every store: the same rules of
/// what a re-sighting changes), and whether it is new.
pub fn merge(existing: Option<Issue>, finding: NewIssue) -> (Issue, bool) {
    let now = Utc::now();
    match existing {
        Some(mut issue) => {
            issue.finding = finding;
            issue.last_seen = now;
            issue.occurrences += 1;
            // A fix in someone's hands (proposed, or published and not yet deployed)
            // keeps its status; one an operator closed is a problem again.
            if issue.status == IssueStatus::Resolved {
                issue.status = IssueStatus::Open;
            }
            (issue, false)
        }
        None => (
            Issue {
                finding,
                status: IssueStatus::Open,
                first_seen: now,
                last_seen: now,
                occurrences: 1,
                heal: None,
            },
            true,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_store_keeps_the_issue_contract() {
        let store = MemoryIssueStore::new();
        crate::testing::records_contract::check_issue_store("memory", &store).await;
    }
}
