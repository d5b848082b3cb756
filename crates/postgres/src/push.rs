//! `PushStore` on PostgreSQL: each config with its delivery cursor in one row, removed
//! with its task by retention.

use async_trait::async_trait;
use fundi_runtime::TaskId;
use fundi_runtime::store::{PushConfig, PushCursor, PushEntry, PushStore, StoreError};

use crate::store::{PostgresStore, db, decode_column};

#[async_trait]
impl PushStore for PostgresStore {
    async fn put_config(&self, config: &PushConfig, start_after: u64) -> Result<(), StoreError> {
        let cursor = PushCursor {
            delivered_seq: start_after,
            ..PushCursor::default()
        };
        let client = self.client().await?;
        // A replaced config keeps where its delivery stands.
        client
            .execute(
                &format!(
                    "INSERT INTO {} (task_id, id, config, cursor) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (task_id, id) DO UPDATE SET config = EXCLUDED.config",
                    self.table("push_configs")
                ),
                &[
                    &config.task_id.as_str(),
                    &config.id,
                    &serde_json::to_value(config)?,
                    &serde_json::to_value(&cursor)?,
                ],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn config(&self, task: &TaskId, id: &str) -> Result<Option<PushConfig>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT config FROM {} WHERE task_id = $1 AND id = $2",
                    self.table("push_configs")
                ),
                &[&task.as_str(), &id],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn configs(&self, task: &TaskId) -> Result<Vec<PushConfig>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT config FROM {} WHERE task_id = $1 ORDER BY id",
                    self.table("push_configs")
                ),
                &[&task.as_str()],
            )
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }

    async fn delete_config(&self, task: &TaskId, id: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let deleted = client
            .execute(
                &format!(
                    "DELETE FROM {} WHERE task_id = $1 AND id = $2",
                    self.table("push_configs")
                ),
                &[&task.as_str(), &id],
            )
            .await
            .map_err(db)?;
        Ok(deleted > 0)
    }

    async fn cursor(&self, task: &TaskId, id: &str) -> Result<Option<PushCursor>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT cursor FROM {} WHERE task_id = $1 AND id = $2",
                    self.table("push_configs")
                ),
                &[&task.as_str(), &id],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn set_cursor(
        &self,
        task: &TaskId,
        id: &str,
        cursor: &PushCursor,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        // A config deleted meanwhile stays deleted: no row, nothing updated.
        client
            .execute(
                &format!(
                    "UPDATE {} SET cursor = $3, finished = $4 WHERE task_id = $1 AND id = $2",
                    self.table("push_configs")
                ),
                &[
                    &task.as_str(),
                    &id,
                    &serde_json::to_value(cursor)?,
                    &cursor.finished,
                ],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn unfinished(&self) -> Result<Vec<PushEntry>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT config, cursor FROM {} WHERE NOT finished ORDER BY task_id, id",
                    self.table("push_configs")
                ),
                &[],
            )
            .await
            .map_err(db)?;
        rows.into_iter()
            .map(|row| {
                Ok(PushEntry {
                    config: decode_column(&row, 0)?,
                    cursor: decode_column(&row, 1)?,
                })
            })
            .collect()
    }
}
