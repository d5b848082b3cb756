//! Peers added at run time on PostgreSQL: a document per row by name, read by every node.

use async_trait::async_trait;
use fundi_ops::peers::{PeerStore, StoredPeer};
use fundi_runtime::store::StoreError;

use crate::columns::decode_column;
use crate::errors::db;
use crate::store::PostgresStore;

#[async_trait]
impl PeerStore for PostgresStore {
    async fn put(&self, peer: &StoredPeer) -> Result<(), StoreError> {
        let client = self.db.client().await?;
        client
            .execute(
                &format!(
                    "INSERT INTO {} (name, peer) VALUES ($1, $2) \
                     ON CONFLICT (name) DO UPDATE SET peer = EXCLUDED.peer",
                    self.db.table("peers")
                ),
                &[&peer.name, &serde_json::to_value(peer)?],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn remove(&self, name: &str) -> Result<bool, StoreError> {
        let client = self.db.client().await?;
        let removed = client
            .execute(
                &format!("DELETE FROM {} WHERE name = $1", self.db.table("peers")),
                &[&name],
            )
            .await
            .map_err(db)?;
        Ok(removed > 0)
    }

    async fn list(&self) -> Result<Vec<StoredPeer>, StoreError> {
        let client = self.db.client().await?;
        let rows = client
            .query(
                &format!("SELECT peer FROM {} ORDER BY name", self.db.table("peers")),
                &[],
            )
            .await
            .map_err(db)?;
        rows.into_iter().map(|row| decode_column(&row, 0)).collect()
    }
}
