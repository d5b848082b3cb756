//! Requests for access in the sled store: the `access_requests` tree by id, and the
//! `access_assertions` tree from an assertion's issuer and `jti` to the request that
//! used it (so that an assertion is accepted once).

use std::sync::Arc;

use async_trait::async_trait;

use fundi_ops::access::{AccessRequest, AccessRequestStore};
use fundi_runtime::store::StoreError;

use crate::SledStore;

/// Requests kept in a [`SledStore`], beside its tasks (durable as the store's mode says).
#[derive(Debug, Clone)]
pub struct SledAccessRequestStore {
    store: Arc<SledStore>,
    requests: sled::Tree,
    assertions: sled::Tree,
}

impl SledAccessRequestStore {
    /// The requests of `store`.
    pub fn new(store: Arc<SledStore>) -> Result<SledAccessRequestStore, StoreError> {
        let requests = store
            .db
            .open_tree("access_requests")
            .map_err(StoreError::engine)?;
        let assertions = store
            .db
            .open_tree("access_assertions")
            .map_err(StoreError::engine)?;
        Ok(SledAccessRequestStore {
            store,
            requests,
            assertions,
        })
    }
}

#[async_trait]
impl AccessRequestStore for SledAccessRequestStore {
    async fn insert(&self, request: &AccessRequest) -> Result<bool, StoreError> {
        let bytes = serde_json::to_vec(request)?;
        // The assertion's entry first, claimed atomically: of two requests with one
        // assertion, one is stored.
        let claimed = self
            .assertions
            .compare_and_swap(
                request.assertion_key().as_bytes(),
                None::<&[u8]>,
                Some(request.id.as_bytes()),
            )
            .map_err(StoreError::engine)?;
        if claimed.is_err() {
            return Ok(false);
        }
        self.requests
            .insert(request.id.as_bytes(), bytes)
            .map_err(StoreError::engine)?;
        self.store.flush_if_sync().await?;
        Ok(true)
    }

    async fn get(&self, id: &str) -> Result<Option<AccessRequest>, StoreError> {
        self.requests
            .get(id.as_bytes())
            .map_err(StoreError::engine)?
            .map(|bytes| Ok(serde_json::from_slice(&bytes)?))
            .transpose()
    }

    async fn replace(
        &self,
        current: &AccessRequest,
        next: &AccessRequest,
    ) -> Result<bool, StoreError> {
        let Some(stored) = self
            .requests
            .get(current.id.as_bytes())
            .map_err(StoreError::engine)?
        else {
            return Ok(false);
        };
        let read: AccessRequest = serde_json::from_slice(&stored)?;
        if read.version != current.version {
            return Ok(false);
        }
        // Swapped only if the bytes are still those read: a change in between wins.
        let swapped = self
            .requests
            .compare_and_swap(
                current.id.as_bytes(),
                Some(stored),
                Some(serde_json::to_vec(next)?),
            )
            .map_err(StoreError::engine)?;
        if swapped.is_err() {
            return Ok(false);
        }
        self.store.flush_if_sync().await?;
        Ok(true)
    }

    async fn list(&self) -> Result<Vec<AccessRequest>, StoreError> {
        let mut all = Vec::new();
        for item in self.requests.iter() {
            let (_, bytes) = item.map_err(StoreError::engine)?;
            all.push(serde_json::from_slice(&bytes)?);
        }
        Ok(all)
    }
}
