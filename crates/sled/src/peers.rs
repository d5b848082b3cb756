//! Peers added at run time in the sled store: the `peers` tree, by name.

use std::sync::Arc;

use async_trait::async_trait;

use fundi_ops::peers::{PeerStore, StoredPeer};
use fundi_runtime::store::StoreError;

use crate::SledStore;

/// Peers kept in a [`SledStore`], beside its tasks (durable as the store's mode says).
#[derive(Debug, Clone)]
pub struct SledPeerStore {
    store: Arc<SledStore>,
}

impl SledPeerStore {
    /// The peers of `store`.
    pub fn new(store: Arc<SledStore>) -> SledPeerStore {
        SledPeerStore { store }
    }
}

#[async_trait]
impl PeerStore for SledPeerStore {
    async fn put(&self, peer: &StoredPeer) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(peer)?;
        self.store
            .peers
            .insert(peer.name.as_bytes(), bytes)
            .map_err(StoreError::engine)?;
        self.store.flush_if_sync().await
    }

    async fn remove(&self, name: &str) -> Result<bool, StoreError> {
        let removed = self
            .store
            .peers
            .remove(name.as_bytes())
            .map_err(StoreError::engine)?;
        self.store.flush_if_sync().await?;
        Ok(removed.is_some())
    }

    async fn list(&self) -> Result<Vec<StoredPeer>, StoreError> {
        let mut all = Vec::new();
        for item in self.store.peers.iter() {
            let (_, bytes) = item.map_err(StoreError::engine)?;
            all.push(serde_json::from_slice(&bytes)?);
        }
        Ok(all)
    }
}
