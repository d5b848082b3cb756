//! The audit log and the chaos-event log on PostgreSQL: rows appended in order.

use async_trait::async_trait;
use chrono::Utc;
use fundi_ops::audit::{AuditEntry, AuditLog, AuditRecord};
use fundi_ops::chaos::{ChaosEvent, ChaosLog, ChaosRecord};
use fundi_runtime::TaskId;
use fundi_runtime::store::StoreError;

use crate::columns::decode_column;
use crate::errors::db;
use crate::store::PostgresStore;

#[async_trait]
impl AuditLog for PostgresStore {
    async fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        let client = self.db.client().await?;
        let at = Utc::now();
        let row = client
            .query_one(
                &format!(
                    "INSERT INTO {} (at, entry) VALUES ($1, $2) RETURNING seq",
                    self.db.table("audit")
                ),
                &[&at, &serde_json::to_value(&entry)?],
            )
            .await
            .map_err(db)?;
        Ok(AuditRecord {
            seq: row.get::<_, i64>(0) as u64,
            at,
            entry,
        })
    }

    async fn read(&self, after: u64, limit: usize) -> Result<Vec<AuditRecord>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT seq, at, entry FROM {} WHERE seq > $1 ORDER BY seq LIMIT $2",
                    self.db.table("audit")
                ),
                &[&(after as i64), &(limit as i64)],
            )
            .await
            .map_err(db)?;
        rows.into_iter()
            .map(|row| {
                Ok(AuditRecord {
                    seq: row.get::<_, i64>(0) as u64,
                    at: row.get(1),
                    entry: decode_column(&row, 2)?,
                })
            })
            .collect()
    }
}

#[async_trait]
impl ChaosLog for PostgresStore {
    async fn append(&self, task: &TaskId, events: Vec<ChaosEvent>) -> Result<u64, StoreError> {
        let mut client = self.db.client().await?;
        let tx = client.transaction().await.map_err(db)?;
        let table = self.db.table("chaos_events");
        // One run writes a task's events; the key refuses a second writer's clash.
        let last: i64 = tx
            .query_one(
                &format!("SELECT coalesce(max(seq), 0) FROM {table} WHERE task_id = $1"),
                &[&task.as_str()],
            )
            .await
            .map_err(db)?
            .get(0);
        let mut seq = last as u64;
        let insert = format!("INSERT INTO {table} (task_id, seq, record) VALUES ($1, $2, $3)");
        for event in events {
            seq += 1;
            let record = ChaosRecord {
                task_id: task.clone(),
                seq,
                event,
            };
            tx.execute(
                &insert,
                &[
                    &task.as_str(),
                    &(seq as i64),
                    &serde_json::to_value(&record)?,
                ],
            )
            .await
            .map_err(db)?;
        }
        tx.commit().await.map_err(db)?;
        Ok(seq)
    }

    async fn read(
        &self,
        task: &TaskId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<ChaosRecord>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT record FROM {} WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                    self.db.table("chaos_events")
                ),
                &[&task.as_str(), &(after as i64), &(limit as i64)],
            )
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }

    async fn remove(&self, task: &TaskId) -> Result<(), StoreError> {
        let client = self.db.client().await?;
        client
            .execute(
                &format!(
                    "DELETE FROM {} WHERE task_id = $1",
                    self.db.table("chaos_events")
                ),
                &[&task.as_str()],
            )
            .await
            .map_err(db)?;
        Ok(())
    }
}
