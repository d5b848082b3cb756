//! Issues in memory (tests, demos, `store.kind = "memory"`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{Issue, IssueStore, NewIssue, merge};
use fundi_runtime::store::StoreError;

/// Issues kept in memory, lost at exit.
#[derive(Debug, Default)]
pub struct MemoryIssueStore {
    issues: Mutex<BTreeMap<String, Issue>>,
}

impl MemoryIssueStore {
    /// An empty store.
    pub fn new() -> MemoryIssueStore {
        MemoryIssueStore::default()
    }
}

#[async_trait]
impl IssueStore for MemoryIssueStore {
    async fn record(&self, finding: NewIssue) -> Result<(Issue, bool), StoreError> {
        let mut issues = self.issues.lock().unwrap_or_else(|p| p.into_inner());
        let key = finding.fingerprint.clone();
        let (issue, new) = merge(issues.get(&key).cloned(), finding);
        issues.insert(key, issue.clone());
        Ok((issue, new))
    }

    async fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        let issues = self.issues.lock().unwrap_or_else(|p| p.into_inner());
        Ok(issues.get(id).cloned())
    }

    async fn issues(&self, source: Option<&str>) -> Result<Vec<Issue>, StoreError> {
        let issues = self.issues.lock().unwrap_or_else(|p| p.into_inner());
        Ok(issues
            .values()
            .filter(|i| source.is_none_or(|s| i.finding.source == s))
            .cloned()
            .collect())
    }

    async fn modify(
        &self,
        id: &str,
        change: &(dyn for<'i> Fn(&'i Issue) -> Option<Issue> + Send + Sync),
    ) -> Result<Option<Issue>, StoreError> {
        let mut issues = self.issues.lock().unwrap_or_else(|p| p.into_inner());
        let Some(issue) = issues.get_mut(id) else {
            return Ok(None);
        };
        if let Some(changed) = change(issue) {
            *issue = changed;
        }
        Ok(Some(issue.clone()))
    }
}
