//! Requests for access in memory (tests, demos, `store.kind = "memory"`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use async_trait::async_trait;

use super::{AccessRequest, AccessRequestStore};
use fundi_runtime::store::StoreError;

/// Requests kept in memory, lost at exit.
#[derive(Debug, Default)]
pub struct MemoryAccessRequestStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    requests: BTreeMap<String, AccessRequest>,
    assertions: BTreeSet<String>,
}

impl MemoryAccessRequestStore {
    /// An empty store.
    pub fn new() -> MemoryAccessRequestStore {
        MemoryAccessRequestStore::default()
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl AccessRequestStore for MemoryAccessRequestStore {
    async fn insert(&self, request: &AccessRequest) -> Result<bool, StoreError> {
        let mut inner = self.inner();
        if !inner.assertions.insert(request.assertion_key()) {
            return Ok(false);
        }
        inner.requests.insert(request.id.clone(), request.clone());
        Ok(true)
    }

    async fn get(&self, id: &str) -> Result<Option<AccessRequest>, StoreError> {
        Ok(self.inner().requests.get(id).cloned())
    }

    async fn replace(
        &self,
        current: &AccessRequest,
        next: &AccessRequest,
    ) -> Result<bool, StoreError> {
        let mut inner = self.inner();
        match inner.requests.get_mut(&current.id) {
            Some(stored) if stored.version == current.version => {
                *stored = next.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn list(&self) -> Result<Vec<AccessRequest>, StoreError> {
        Ok(self.inner().requests.values().cloned().collect())
    }
}
