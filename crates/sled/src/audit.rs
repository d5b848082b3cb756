//! The audit log in the sled store's `audit` tree, keyed by sequence number (u64 big
//! endian, so that keys sort in the order records were written).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;

use fundi_ops::audit::{AuditEntry, AuditLog, AuditRecord};
use fundi_runtime::store::StoreError;

use crate::SledStore;

/// The audit log of a [`SledStore`] (durable as the store's mode says).
#[derive(Debug, Clone)]
pub struct SledAuditLog {
    store: Arc<SledStore>,
    /// Held from a record's number to its write, so that no reader sees a later record
    /// before an earlier one.
    appending: Arc<std::sync::Mutex<()>>,
}

impl SledAuditLog {
    /// The audit log of `store`.
    pub fn new(store: Arc<SledStore>) -> SledAuditLog {
        SledAuditLog {
            store,
            appending: Arc::default(),
        }
    }
}

#[async_trait]
impl AuditLog for SledAuditLog {
    async fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        let record = {
            let _appending = self.appending.lock().unwrap_or_else(|p| p.into_inner());
            // sled's ids increase across restarts (skipping ahead after a crash), so
            // the log's order is the order of appends.
            let seq = self.store.db.generate_id().map_err(StoreError::engine)? + 1;
            let record = AuditRecord {
                seq,
                at: Utc::now(),
                entry,
            };
            let bytes = serde_json::to_vec(&record)?;
            self.store
                .audit
                .insert(seq.to_be_bytes(), bytes)
                .map_err(StoreError::engine)?;
            record
        };
        self.store.flush_if_sync().await?;
        Ok(record)
    }

    async fn read(&self, after: u64, limit: usize) -> Result<Vec<AuditRecord>, StoreError> {
        let mut records = Vec::new();
        let from = after.saturating_add(1).to_be_bytes();
        for item in self.store.audit.range(from..).take(limit) {
            let (_, bytes) = item.map_err(StoreError::engine)?;
            records.push(serde_json::from_slice(&bytes)?);
        }
        Ok(records)
    }
}
