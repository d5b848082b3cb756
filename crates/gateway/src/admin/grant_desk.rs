//! The grants desk: the grant store, and the lock that keeps grant changes one at a time.

use std::sync::Arc;

use chrono::Utc;
use fundi_ops::grants::{Grant, GrantStore};
use fundi_runtime::StoreError;
use tokio::sync::Mutex;

/// The grants, and the lock that keeps their changes one at a time (so that a narrowing
/// read before a revocation cannot write the grant back unrevoked).
pub(crate) struct GrantDesk {
    pub(crate) store: Arc<dyn GrantStore>,
    /// Held while a grant changes.
    pub(crate) changing: Mutex<()>,
}

impl GrantDesk {
    pub(crate) fn new(store: Arc<dyn GrantStore>) -> GrantDesk {
        GrantDesk {
            store,
            changing: Mutex::new(()),
        }
    }
}

/// What a revocation came to.
pub(crate) enum Revoked {
    /// Revoked now (to be recorded in the audit log).
    Now(Grant),
    /// It was revoked before.
    Already(Grant),
    /// There is no such grant.
    NoSuchGrant,
}

impl GrantDesk {
    /// Revokes a grant, one change at a time.
    pub(crate) async fn revoke(&self, id: &str) -> Result<Revoked, StoreError> {
        let _changing = self.changing.lock().await;
        let Some(mut grant) = self.store.get(id).await? else {
            return Ok(Revoked::NoSuchGrant);
        };
        if grant.revoked_at.is_some() {
            return Ok(Revoked::Already(grant));
        }
        grant.revoked_at = Some(Utc::now());
        self.store.put(&grant).await?;
        Ok(Revoked::Now(grant))
    }

    /// Every grant, as shown to operators.
    pub(crate) async fn list(&self) -> Result<Vec<Grant>, StoreError> {
        Ok(self.store.list().await?.iter().map(Grant::shown).collect())
    }
}
