//! Grants in memory (tests, demos, `store.kind = "memory"`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{Grant, GrantStore};
use fundi_runtime::store::StoreError;

/// Grants kept in memory, lost at exit.
#[derive(Debug, Default)]
pub struct MemoryGrantStore {
    grants: Mutex<BTreeMap<String, Grant>>,
}

impl MemoryGrantStore {
    /// An empty store.
    pub fn new() -> MemoryGrantStore {
        MemoryGrantStore::default()
    }

    fn grants(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Grant>> {
        self.grants.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl GrantStore for MemoryGrantStore {
    async fn put(&self, grant: &Grant) -> Result<(), StoreError> {
        self.grants().insert(grant.id.clone(), grant.clone());
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<Grant>, StoreError> {
        Ok(self.grants().get(id).cloned())
    }

    async fn by_digest(&self, digest: &str) -> Result<Option<Grant>, StoreError> {
        let grants = self.grants();
        Ok(grants.values().find(|g| g.token_digest == digest).cloned())
    }

    async fn list(&self) -> Result<Vec<Grant>, StoreError> {
        Ok(self.grants().values().cloned().collect())
    }
}
