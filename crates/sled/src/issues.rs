//! Issues in the sled store's `issues` tree, by fingerprint.

use std::sync::Arc;

use async_trait::async_trait;

use fundi_ops::issues::{Issue, IssueStore, NewIssue, merge};
use fundi_runtime::store::StoreError;

use crate::SledStore;

/// Issues kept in a [`SledStore`], beside its tasks (durable as the store's mode says).
#[derive(Debug, Clone)]
pub struct SledIssueStore {
    store: Arc<SledStore>,
}

impl SledIssueStore {
    /// The issues of `store`.
    pub fn new(store: Arc<SledStore>) -> SledIssueStore {
        SledIssueStore { store }
    }
}

#[async_trait]
impl IssueStore for SledIssueStore {
    async fn record(&self, finding: NewIssue) -> Result<(Issue, bool), StoreError> {
        // Read, merge, compare-and-swap: concurrent runs finding the same issue both count.
        loop {
            let key = finding.fingerprint.as_bytes().to_vec();
            let old = self.store.issues.get(&key).map_err(StoreError::engine)?;
            let existing: Option<Issue> = old
                .as_ref()
                .map(|bytes| serde_json::from_slice(bytes))
                .transpose()?;
            let (issue, new) = merge(existing, finding.clone());
            let bytes = serde_json::to_vec(&issue)?;
            if self
                .store
                .issues
                .compare_and_swap(&key, old, Some(bytes))
                .map_err(StoreError::engine)?
                .is_ok()
            {
                self.store.flush_if_sync().await?;
                return Ok((issue, new));
            }
        }
    }

    async fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        self.store
            .issues
            .get(id.as_bytes())
            .map_err(StoreError::engine)?
            .map(|bytes| Ok(serde_json::from_slice(&bytes)?))
            .transpose()
    }

    async fn issues(&self, source: Option<&str>) -> Result<Vec<Issue>, StoreError> {
        let mut all = Vec::new();
        for item in self.store.issues.iter() {
            let (_, bytes) = item.map_err(StoreError::engine)?;
            let issue: Issue = serde_json::from_slice(&bytes)?;
            if source.is_none_or(|s| issue.finding.source == s) {
                all.push(issue);
            }
        }
        Ok(all)
    }

    async fn modify(
        &self,
        id: &str,
        change: &(dyn for<'i> Fn(&'i Issue) -> Option<Issue> + Send + Sync),
    ) -> Result<Option<Issue>, StoreError> {
        // Compare-and-swap: a change races a run recording the issue, or another change.
        loop {
            let Some(old) = self
                .store
                .issues
                .get(id.as_bytes())
                .map_err(StoreError::engine)?
            else {
                return Ok(None);
            };
            let issue: Issue = serde_json::from_slice(&old)?;
            let Some(changed) = change(&issue) else {
                return Ok(Some(issue));
            };
            let bytes = serde_json::to_vec(&changed)?;
            if self
                .store
                .issues
                .compare_and_swap(id.as_bytes(), Some(old), Some(bytes))
                .map_err(StoreError::engine)?
                .is_ok()
            {
                self.store.flush_if_sync().await?;
                return Ok(Some(changed));
            }
        }
    }
}
