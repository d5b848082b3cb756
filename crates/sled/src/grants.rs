//! Grants in the sled store: the `grants` tree by id, and the `grant_digests` tree from
//! a token's digest to its grant's id.

use std::sync::Arc;

use async_trait::async_trait;

use fundi_ops::grants::{Grant, GrantStore};
use fundi_runtime::store::StoreError;

use crate::SledStore;

/// Grants kept in a [`SledStore`], beside its tasks (durable as the store's mode says).
#[derive(Debug, Clone)]
pub struct SledGrantStore {
    store: Arc<SledStore>,
}

impl SledGrantStore {
    /// The grants of `store`.
    pub fn new(store: Arc<SledStore>) -> SledGrantStore {
        SledGrantStore { store }
    }
}

#[async_trait]
impl GrantStore for SledGrantStore {
    async fn put(&self, grant: &Grant) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(grant)?;
        // The digest's entry first: a grant is never stored without a way to find it.
        self.store
            .grant_digests
            .insert(grant.token_digest.as_bytes(), grant.id.as_bytes())
            .map_err(StoreError::engine)?;
        self.store
            .grants
            .insert(grant.id.as_bytes(), bytes)
            .map_err(StoreError::engine)?;
        self.store.flush_if_sync().await
    }

    async fn get(&self, id: &str) -> Result<Option<Grant>, StoreError> {
        self.store
            .grants
            .get(id.as_bytes())
            .map_err(StoreError::engine)?
            .map(|bytes| Ok(serde_json::from_slice(&bytes)?))
            .transpose()
    }

    async fn by_digest(&self, digest: &str) -> Result<Option<Grant>, StoreError> {
        let Some(id) = self
            .store
            .grant_digests
            .get(digest.as_bytes())
            .map_err(StoreError::engine)?
        else {
            return Ok(None);
        };
        let id = String::from_utf8_lossy(&id).into_owned();
        Ok(self.get(&id).await?.filter(|g| g.token_digest == digest))
    }

    async fn list(&self) -> Result<Vec<Grant>, StoreError> {
        let mut all = Vec::new();
        for item in self.store.grants.iter() {
            let (_, bytes) = item.map_err(StoreError::engine)?;
            all.push(serde_json::from_slice(&bytes)?);
        }
        Ok(all)
    }
}
