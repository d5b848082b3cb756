//! The audit log in memory (tests, demos, `store.kind = "memory"`).

use std::sync::Mutex;

use async_trait::async_trait;
use chrono::Utc;

use super::{AuditEntry, AuditLog, AuditRecord};
use fundi_runtime::store::StoreError;

/// Audit records kept in memory, lost at exit.
#[derive(Debug, Default)]
pub struct MemoryAuditLog {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemoryAuditLog {
    /// An empty log.
    pub fn new() -> MemoryAuditLog {
        MemoryAuditLog::default()
    }
}

#[async_trait]
impl AuditLog for MemoryAuditLog {
    async fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let record = AuditRecord {
            seq: records.len() as u64 + 1,
            at: Utc::now(),
            entry,
        };
        records.push(record.clone());
        Ok(record)
    }

    async fn read(&self, after: u64, limit: usize) -> Result<Vec<AuditRecord>, StoreError> {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        Ok(records
            .iter()
            .filter(|r| r.seq > after)
            .take(limit)
            .cloned()
            .collect())
    }
}
