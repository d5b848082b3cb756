//! Peers an admin adds at run time (`fundi peers add`, `/admin/peers`), kept beside the
//! tasks so that a restart, and every node of a cluster, knows them. A peer's settings
//! are fundi-peers' to read: this store keeps them whole, tokens included, since fundi
//! must send them (the store's files and database are as secret as the config file).

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use fundi_runtime::store::StoreError;

/// A peer added at run time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredPeer {
    /// Its name, unique.
    pub name: String,
    /// Its settings, as fundi-peers writes them.
    pub settings: Value,
    /// The user who added it.
    pub added_by: String,
    /// When.
    pub added_at: DateTime<Utc>,
}

/// Where the peers added at run time are kept.
#[async_trait]
pub trait PeerStore: Send + Sync + 'static {
    /// Keeps `peer`, replacing one of the same name.
    async fn put(&self, peer: &StoredPeer) -> Result<(), StoreError>;

    /// Forgets the peer `name`; whether there was one.
    async fn remove(&self, name: &str) -> Result<bool, StoreError>;

    /// Every peer kept, by name.
    async fn list(&self) -> Result<Vec<StoredPeer>, StoreError>;
}

/// Peers in memory, for one process.
#[derive(Debug, Default)]
pub struct MemoryPeerStore {
    peers: Mutex<BTreeMap<String, StoredPeer>>,
}

impl MemoryPeerStore {
    /// An empty store.
    pub fn new() -> MemoryPeerStore {
        MemoryPeerStore::default()
    }

    fn peers(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, StoredPeer>> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl PeerStore for MemoryPeerStore {
    async fn put(&self, peer: &StoredPeer) -> Result<(), StoreError> {
        self.peers().insert(peer.name.clone(), peer.clone());
        Ok(())
    }

    async fn remove(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.peers().remove(name).is_some())
    }

    async fn list(&self) -> Result<Vec<StoredPeer>, StoreError> {
        Ok(self.peers().values().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        let store = super::MemoryPeerStore::new();
        crate::testing::records_contract::check_peer_store("memory", &store).await;
    }
}
