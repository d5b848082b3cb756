//! The issue store: findings of the auditing skills (a11y-audit, security-scan), kept
//! beside the tasks so that later work (heal-issue) can pick them up. Each issue has a
//! stable fingerprint made from what identifies it (skill, rule, place), so a re-run
//! that finds the same problem updates the issue instead of adding another.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::TaskId;
use crate::store::StoreError;

mod in_memory;
mod in_sled;

pub use in_memory::MemoryIssueStore;
pub use in_sled::SledIssueStore;

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
    /// Marked fixed (by heal-issue or an operator).
    Resolved,
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

    /// Sets an issue's status; false if there is no such issue.
    async fn set_status(&self, id: &str, status: IssueStatus) -> Result<bool, StoreError>;
}

/// The record that `finding` makes of `existing`.
pub(crate) fn merge(existing: Option<Issue>, finding: NewIssue) -> (Issue, bool) {
    let now = Utc::now();
    match existing {
        Some(mut issue) => {
            issue.finding = finding;
            issue.last_seen = now;
            issue.occurrences += 1;
            issue.status = IssueStatus::Open;
            (issue, false)
        }
        None => (
            Issue {
                finding,
                status: IssueStatus::Open,
                first_seen: now,
                last_seen: now,
                occurrences: 1,
            },
            true,
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::{Durability, SledStore};

    fn finding(rule: &str, place: &str) -> NewIssue {
        NewIssue {
            fingerprint: fingerprint(&["a11y-audit", rule, place]),
            source: "a11y-audit".into(),
            rule: rule.into(),
            severity: "critical".into(),
            title: "Images must have alternative text".into(),
            location: "https://site.test/".into(),
            target: Some(place.into()),
            evidence: "<img src=x>".into(),
            remediation: "Add alt".into(),
            tags: vec!["wcag111".into()],
            task_id: TaskId::from("t1"),
        }
    }

    #[tokio::test]
    async fn a_finding_seen_again_updates_its_issue_instead_of_adding_one() {
        let sled = SledStore::temporary(Durability::Sync).unwrap();
        let stores: Vec<(&str, Arc<dyn IssueStore>)> = vec![
            ("memory", Arc::new(MemoryIssueStore::new())),
            ("sled", Arc::new(SledIssueStore::new(Arc::new(sled)))),
        ];
        for (name, store) in stores {
            let (first, new) = store.record(finding("image-alt", "#logo")).await.unwrap();
            assert!(new, "{name}");
            let (again, new) = store.record(finding("image-alt", "#logo")).await.unwrap();
            assert!(!new, "{name}");
            assert_eq!(again.occurrences, 2);
            assert_eq!(again.first_seen, first.first_seen);
            store.record(finding("image-alt", "#hero")).await.unwrap();
            assert_eq!(
                store.issues(Some("a11y-audit")).await.unwrap().len(),
                2,
                "{name}"
            );
            assert!(
                store
                    .issues(Some("security-scan"))
                    .await
                    .unwrap()
                    .is_empty()
            );
            assert!(
                store
                    .set_status(first.id(), IssueStatus::Resolved)
                    .await
                    .unwrap()
            );
            let (reopened, _) = store.record(finding("image-alt", "#logo")).await.unwrap();
            assert_eq!(
                reopened.status,
                IssueStatus::Open,
                "{name}: seen again, open again"
            );
            assert!(
                !store
                    .set_status("nope", IssueStatus::Resolved)
                    .await
                    .unwrap()
            );
        }
    }
}
