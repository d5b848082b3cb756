//! Grants: client credentials an operator vends from fundi itself. A grant names a
//! client and the scopes it holds; its token is shown once and kept only as a SHA-256
//! digest. A revoked or expired grant admits no request from then on. The gateway
//! checks them beside static tokens and JWTs (docs/security.md).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::store::StoreError;

mod in_memory;
mod in_sled;

pub use in_memory::MemoryGrantStore;
pub use in_sled::SledGrantStore;

/// What every grant token starts with, so that the gateway knows to look it up (and a
/// leaked one is recognisable to secret scanners).
pub const GRANT_TOKEN_PREFIX: &str = "fundi_grant_";

/// A stored grant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// Its id (`gr-` and a UUID): what operators name it by.
    pub id: String,
    /// The client it admits, as its requests are attributed.
    pub client: String,
    /// The scopes it holds.
    pub scopes: Vec<String>,
    /// The operator who vended it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
    /// When it stops admitting requests, if ever.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
    /// The digest of its token (hex SHA-256); never shown.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub token_digest: String,
}

impl Grant {
    /// Why it admits no request at `now`, if it does not.
    pub fn refusal(&self, now: DateTime<Utc>) -> Option<String> {
        if let Some(at) = self.revoked_at {
            return Some(format!(
                "grant {} was revoked at {}",
                self.id,
                at.to_rfc3339()
            ));
        }
        match self.expires_at {
            Some(at) if at <= now => {
                Some(format!("grant {} expired at {}", self.id, at.to_rfc3339()))
            }
            _ => None,
        }
    }

    /// The grant as shown to operators: everything but the token's digest.
    pub fn shown(&self) -> Grant {
        Grant {
            token_digest: String::new(),
            ..self.clone()
        }
    }
}

/// The digest a token is stored and looked up by (hex SHA-256).
pub fn token_digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where grants are kept.
#[async_trait]
pub trait GrantStore: Send + Sync + 'static {
    /// Stores a grant (new or changed); its digest never changes.
    async fn put(&self, grant: &Grant) -> Result<(), StoreError>;

    /// One grant by id.
    async fn get(&self, id: &str) -> Result<Option<Grant>, StoreError>;

    /// The grant whose token has this digest.
    async fn by_digest(&self, digest: &str) -> Result<Option<Grant>, StoreError>;

    /// Every grant, by id.
    async fn list(&self) -> Result<Vec<Grant>, StoreError>;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::{Durability, SledStore};

    fn grant(id: &str, token: &str) -> Grant {
        Grant {
            id: id.into(),
            client: "ci".into(),
            scopes: vec!["fundi:audit".into()],
            created_by: "ops".into(),
            created_at: Utc::now(),
            expires_at: None,
            revoked_at: None,
            token_digest: token_digest(token),
        }
    }

    #[tokio::test]
    async fn grants_are_found_by_id_and_by_their_token_digest_only() {
        let dir = tempfile::tempdir().unwrap();
        let sled = Arc::new(SledStore::open(dir.path(), Durability::Sync).unwrap());
        let stores: Vec<(&str, Arc<dyn GrantStore>)> = vec![
            ("memory", Arc::new(MemoryGrantStore::new())),
            ("sled", Arc::new(SledGrantStore::new(sled))),
        ];
        for (name, store) in stores {
            let mut first = grant("gr-1", "fundi_grant_one");
            store.put(&first).await.unwrap();
            store.put(&grant("gr-2", "fundi_grant_two")).await.unwrap();
            let found = store
                .by_digest(&token_digest("fundi_grant_one"))
                .await
                .unwrap();
            assert_eq!(found.as_ref(), Some(&first), "{name}");
            assert_eq!(
                store
                    .by_digest(&token_digest("fundi_grant_x"))
                    .await
                    .unwrap(),
                None
            );
            first.revoked_at = Some(Utc::now());
            store.put(&first).await.unwrap();
            let found = store.by_digest(&first.token_digest).await.unwrap().unwrap();
            assert!(
                found.refusal(Utc::now()).unwrap().contains("revoked"),
                "{name}"
            );
            assert_eq!(store.get("gr-2").await.unwrap().unwrap().id, "gr-2");
            let ids: Vec<String> = store
                .list()
                .await
                .unwrap()
                .into_iter()
                .map(|g| g.id)
                .collect();
            assert_eq!(ids, ["gr-1", "gr-2"], "{name}");
        }
    }

    #[test]
    fn an_expired_grant_says_when_and_a_shown_one_hides_its_digest() {
        let mut g = grant("gr-1", "t");
        assert_eq!(g.refusal(Utc::now()), None);
        g.expires_at = Some(Utc::now() - chrono::Duration::seconds(1));
        assert!(g.refusal(Utc::now()).unwrap().contains("expired"));
        let shown = serde_json::to_value(g.shown()).unwrap();
        assert!(shown.get("tokenDigest").is_none(), "{shown}");
    }
}
