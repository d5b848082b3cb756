//! `PushStore` on PostgreSQL: each config with its delivery cursor in one row, removed
//! with its task by retention.

use async_trait::async_trait;
use fundi_runtime::TaskId;
use fundi_runtime::store::{PushConfig, PushCursor, PushEntry, PushStore, StoreError};

use crate::columns::decode_column;
use crate::errors::db;
use crate::lease::lapsed_nodes;
use crate::store::PostgresStore;

#[async_trait]
impl PushStore for PostgresStore {
    async fn put_config(&self, config: &PushConfig, start_after: u64) -> Result<(), StoreError> {
        let cursor = PushCursor {
            delivered_seq: start_after,
            ..PushCursor::default()
        };
        let client = self.db.client().await?;
        // A replaced config keeps where its delivery stands.
        client
            .execute(
                &format!(
                    "INSERT INTO {} (task_id, id, config, cursor) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (task_id, id) DO UPDATE SET config = EXCLUDED.config",
                    self.db.table("push_configs")
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
        let client = self.db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT config FROM {} WHERE task_id = $1 AND id = $2",
                    self.db.table("push_configs")
                ),
                &[&task.as_str(), &id],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn configs(&self, task: &TaskId) -> Result<Vec<PushConfig>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT config FROM {} WHERE task_id = $1 ORDER BY id",
                    self.db.table("push_configs")
                ),
                &[&task.as_str()],
            )
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }

    async fn delete_config(&self, task: &TaskId, id: &str) -> Result<bool, StoreError> {
        let client = self.db.client().await?;
        let deleted = client
            .execute(
                &format!(
                    "DELETE FROM {} WHERE task_id = $1 AND id = $2",
                    self.db.table("push_configs")
                ),
                &[&task.as_str(), &id],
            )
            .await
            .map_err(db)?;
        Ok(deleted > 0)
    }

    async fn cursor(&self, task: &TaskId, id: &str) -> Result<Option<PushCursor>, StoreError> {
        let client = self.db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT cursor FROM {} WHERE task_id = $1 AND id = $2",
                    self.db.table("push_configs")
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
        if let Some(leases) = &self.leases {
            leases.ensure_fresh()?;
        }
        let client = self.db.client().await?;
        let node = self.leases.as_ref().map(|l| l.config.node.as_str());
        // A config deleted meanwhile stays deleted: no row, nothing updated. With
        // several nodes, only the node holding the delivery moves its cursor.
        let row = client
            .query_one(
                &format!(
                    "WITH moved AS (
                        UPDATE {configs} SET cursor = $3, finished = $4
                        WHERE task_id = $1 AND id = $2 AND ($5::text IS NULL OR lease_node = $5)
                        RETURNING 1
                     )
                     SELECT (SELECT count(*) FROM moved),
                            (SELECT coalesce(lease_node, '') FROM {configs}
                             WHERE task_id = $1 AND id = $2)",
                    configs = self.db.table("push_configs")
                ),
                &[
                    &task.as_str(),
                    &id,
                    &serde_json::to_value(cursor)?,
                    &cursor.finished,
                    &node,
                ],
            )
            .await
            .map_err(db)?;
        let (moved, holder): (i64, Option<String>) = (row.get(0), row.get(1));
        if moved == 0
            && node.is_some()
            && let Some(holder) = holder
        {
            return Err(StoreError::Fenced {
                task_id: task.clone(),
                holder: match holder.is_empty() {
                    true => "none".into(),
                    false => holder,
                },
            });
        }
        Ok(())
    }

    async fn unfinished(&self) -> Result<Vec<PushEntry>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT config, cursor FROM {} WHERE NOT finished ORDER BY task_id, id",
                    self.db.table("push_configs")
                ),
                &[],
            )
            .await
            .map_err(db)?;
        entries(rows)
    }

    async fn claim_delivery(&self, task: &TaskId, id: &str) -> Result<bool, StoreError> {
        let Some(leases) = &self.leases else {
            return Ok(true);
        };
        leases.ensure_fresh()?;
        let client = self.db.client().await?;
        let claimed = client
            .execute(
                &format!(
                    "UPDATE {} SET lease_node = $3
                     WHERE task_id = $1 AND id = $2 AND (lease_node IS NULL OR lease_node = $3
                        OR lease_node IN ({lapsed}))",
                    self.db.table("push_configs"),
                    lapsed = lapsed_nodes(&self.db.table("node_leases"))
                ),
                &[&task.as_str(), &id, &leases.config.node],
            )
            .await
            .map_err(db)?;
        Ok(claimed > 0)
    }

    async fn release_delivery(&self, task: &TaskId, id: &str) -> Result<(), StoreError> {
        let Some(leases) = &self.leases else {
            return Ok(());
        };
        let client = self.db.client().await?;
        client
            .execute(
                &format!(
                    "UPDATE {} SET lease_node = NULL
                     WHERE task_id = $1 AND id = $2 AND lease_node = $3",
                    self.db.table("push_configs")
                ),
                &[&task.as_str(), &id, &leases.config.node],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn orphaned(&self) -> Result<Vec<PushEntry>, StoreError> {
        if self.leases.is_none() {
            return Ok(Vec::new());
        }
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT config, cursor FROM {} WHERE NOT finished
                        AND coalesce(cursor -> 'dead', 'null'::jsonb) = 'null'::jsonb
                        AND (lease_node IS NULL OR lease_node IN ({lapsed}))
                     ORDER BY task_id, id",
                    self.db.table("push_configs"),
                    lapsed = lapsed_nodes(&self.db.table("node_leases"))
                ),
                &[],
            )
            .await
            .map_err(db)?;
        entries(rows)
    }

    fn orphan_interval(&self) -> Option<std::time::Duration> {
        self.leases.as_ref().map(|l| l.config.ttl / 2)
    }
}

/// Rows of (config, cursor) as entries.
fn entries(rows: Vec<tokio_postgres::Row>) -> Result<Vec<PushEntry>, StoreError> {
    rows.into_iter()
        .map(|row| {
            Ok(PushEntry {
                config: decode_column(&row, 0)?,
                cursor: decode_column(&row, 1)?,
            })
        })
        .collect()
}
