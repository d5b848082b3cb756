//! The audit log: an append-only record of what operators and approvers did (grants
//! vended, narrowed and revoked, schedules created and changed, dead letters replayed):
//! who, from which client, what, on what, and when. Records are numbered in the order
//! they were written and never changed.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::StoreError;

mod in_memory;
mod in_sled;

pub use in_memory::MemoryAuditLog;
pub use in_sled::SledAuditLog;

/// What happened, as the one who did it asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// The end user who did it.
    pub user: String,
    /// The client application they acted through.
    pub client: String,
    /// What was done (`grant.create`, `schedule.pause`...).
    pub action: String,
    /// What it was done to (a grant, schedule or task id).
    pub target: String,
    /// The particulars (scopes, a reason...).
    #[serde(default)]
    pub detail: Value,
}

/// A record of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// Its place in the log: increasing, in the order records were written.
    pub seq: u64,
    /// When it was written.
    pub at: DateTime<Utc>,
    /// What it records.
    #[serde(flatten)]
    pub entry: AuditEntry,
}

/// Where the audit log is kept.
#[async_trait]
pub trait AuditLog: Send + Sync + 'static {
    /// Appends a record (durably as the store's mode says) and returns it.
    async fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError>;

    /// Up to `limit` records with `seq > after`, in order.
    async fn read(&self, after: u64, limit: usize) -> Result<Vec<AuditRecord>, StoreError>;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::store::{Durability, SledStore};

    fn entry(action: &str) -> AuditEntry {
        AuditEntry {
            user: "ops".into(),
            client: "console".into(),
            action: action.into(),
            target: "gr-1".into(),
            detail: json!({"scopes": ["fundi:audit"]}),
        }
    }

    #[tokio::test]
    async fn records_read_back_in_the_order_they_were_written_and_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let sled = Arc::new(SledStore::open(dir.path(), Durability::Sync).unwrap());
        let logs: Vec<(&str, Arc<dyn AuditLog>)> = vec![
            ("memory", Arc::new(MemoryAuditLog::new())),
            ("sled", Arc::new(SledAuditLog::new(sled.clone()))),
        ];
        for (name, log) in logs {
            let mut seqs = Vec::new();
            for action in ["grant.create", "grant.narrow", "grant.revoke"] {
                seqs.push(log.append(entry(action)).await.unwrap().seq);
            }
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{name}: {seqs:?}");
            let all = log.read(0, 10).await.unwrap();
            let actions: Vec<&str> = all.iter().map(|r| r.entry.action.as_str()).collect();
            assert_eq!(
                actions,
                ["grant.create", "grant.narrow", "grant.revoke"],
                "{name}"
            );
            let rest = log.read(seqs[0], 1).await.unwrap();
            assert_eq!(rest.len(), 1);
            assert_eq!(rest[0].seq, seqs[1], "{name}: paged after a seq");
        }
        drop(sled);
        let sled = crate::testing::open_sled(dir.path()).await;
        let log = SledAuditLog::new(Arc::new(sled));
        let after = log.append(entry("schedule.create")).await.unwrap();
        let all = log.read(0, 10).await.unwrap();
        assert_eq!(all.len(), 4, "kept across a reopen");
        assert_eq!(
            all.last().unwrap(),
            &after,
            "and numbered after what was there"
        );
    }
}
