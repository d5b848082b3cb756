//! The audit log: an append-only record of what operators and approvers did (grants
//! vended, narrowed and revoked, schedules created and changed, dead letters replayed):
//! who, from which client, what, on what, and when. Records are numbered in the order
//! they were written and never changed.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use fundi_runtime::store::StoreError;

mod in_memory;

pub use in_memory::MemoryAuditLog;

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
    use super::*;

    #[tokio::test]
    async fn the_memory_log_keeps_the_audit_contract() {
        let log = MemoryAuditLog::new();
        crate::testing::records_contract::check_audit_log("memory", &log).await;
    }
}
