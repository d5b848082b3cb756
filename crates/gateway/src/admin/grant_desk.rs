//! The grants desk: the grant store, the lock that keeps grant changes one at a time,
//! and what vending a grant needs (its token, its expiry, its scopes checked), shared by
//! the grants routes and the approval of requests for access.

use std::sync::Arc;

use chrono::Utc;
use fundi_ops::grants::{Grant, GrantStore};
use fundi_runtime::StoreError;
use tokio::sync::Mutex;

/// The grants, and the lock that keeps their changes one at a time (so that a narrowing
/// read before a revocation cannot write the grant back unrevoked).
pub struct GrantDesk {
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
pub enum Revoked {
    /// Revoked now (to be recorded in the audit log).
    Now(Grant),
    /// It was revoked before.
    Already(Grant),
    /// There is no such grant.
    NoSuchGrant,
}

impl GrantDesk {
    /// Revokes a grant, one change at a time.
    pub async fn revoke(&self, id: &str) -> Result<Revoked, StoreError> {
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
    pub async fn list(&self) -> Result<Vec<Grant>, StoreError> {
        Ok(self.store.list().await?.iter().map(Grant::shown).collect())
    }
}

/// When a grant made at `now` lasting `text` ("30d") expires.
pub(crate) fn expiry(
    now: chrono::DateTime<Utc>,
    text: &str,
) -> Result<chrono::DateTime<Utc>, String> {
    let lasts = humantime::parse_duration(text)
        .map_err(|e| format!("expires must be a duration such as \"30d\" or \"12h\": {e}"))?;
    chrono::Duration::from_std(lasts)
        .ok()
        .filter(|lasts| !lasts.is_zero())
        .and_then(|lasts| now.checked_add_signed(lasts))
        .ok_or_else(|| {
            format!("expires must be more than nothing and less than for ever, got {text:?}")
        })
}

/// Checks scope names a grant may hold: at least one, each a short name without spaces.
pub(crate) fn check_scopes(scopes: &[String]) -> Result<(), String> {
    if scopes.is_empty() {
        return Err("scopes must name at least one scope (e.g. \"fundi:audit\")".into());
    }
    match scopes.iter().find(|s| {
        s.is_empty() || s.len() > 128 || s.chars().any(|c| c.is_whitespace() || c.is_control())
    }) {
        Some(bad) => Err(format!("scopes: {bad:?} is not a scope name")),
        None => Ok(()),
    }
}
