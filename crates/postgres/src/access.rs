//! Requests for access on PostgreSQL: a document per row by id, its assertion (issuer
//! and `jti`) unique, and its version beside it for changes made one at a time.

use async_trait::async_trait;
use fundi_ops::access::{AccessRequest, AccessRequestStore};
use fundi_runtime::store::StoreError;

use crate::columns::decode_column;
use crate::errors::db;
use crate::store::PostgresStore;

#[async_trait]
impl AccessRequestStore for PostgresStore {
    async fn insert(&self, request: &AccessRequest) -> Result<bool, StoreError> {
        let client = self.db.client().await?;
        let stored = client
            .execute(
                &format!(
                    "INSERT INTO {} (id, assertion, version, request) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (assertion) DO NOTHING",
                    self.db.table("access_requests")
                ),
                &[
                    &request.id,
                    &request.assertion_key(),
                    &version(request)?,
                    &serde_json::to_value(request)?,
                ],
            )
            .await
            .map_err(db)?;
        Ok(stored > 0)
    }

    async fn get(&self, id: &str) -> Result<Option<AccessRequest>, StoreError> {
        let client = self.db.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT request FROM {} WHERE id = $1",
                    self.db.table("access_requests")
                ),
                &[&id],
            )
            .await
            .map_err(db)?;
        row.map(|row| decode_column(&row, 0)).transpose()
    }

    async fn replace(
        &self,
        current: &AccessRequest,
        next: &AccessRequest,
    ) -> Result<bool, StoreError> {
        let client = self.db.client().await?;
        let changed = client
            .execute(
                &format!(
                    "UPDATE {} SET version = $3, request = $4 WHERE id = $1 AND version = $2",
                    self.db.table("access_requests")
                ),
                &[
                    &current.id,
                    &version(current)?,
                    &version(next)?,
                    &serde_json::to_value(next)?,
                ],
            )
            .await
            .map_err(db)?;
        Ok(changed > 0)
    }

    async fn list(&self) -> Result<Vec<AccessRequest>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT request FROM {} ORDER BY id",
                    self.db.table("access_requests")
                ),
                &[],
            )
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }
}

fn version(request: &AccessRequest) -> Result<i64, StoreError> {
    i64::try_from(request.version).map_err(|_| StoreError::Codec {
        what: format!(
            "request {}: version {} is too large",
            request.id, request.version
        ),
        source: None,
    })
}
