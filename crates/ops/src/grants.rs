//! Grants: client credentials an operator vends from fundi itself. A grant names a
//! client and the scopes it holds; its token is shown once and kept only as a SHA-256
//! digest. A revoked or expired grant admits no request from then on. The gateway
//! checks them beside static tokens and JWTs (docs/security.md).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use fundi_runtime::store::StoreError;

mod in_memory;

pub use in_memory::MemoryGrantStore;

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
    /// The user its requests act for, when the grant stands for a person as well as a
    /// client (a grant vended by approving a request for access): its holder then needs
    /// no user token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acts_as: Option<String>,
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

/// A new secret (a grant's token after its prefix, a session, a sign-in link): 32 random
/// bytes from rand's thread generator, a CSPRNG seeded by the OS, in hex.
pub fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
    /// Stores a grant (new or changed). Its digest changes at most once: a grant vended
    /// by approving a request for access is stored with the digest of a token nobody
    /// holds, and gets its own when the requester collects it.
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
    use super::*;
    use crate::testing::records_contract::grant;

    #[tokio::test]
    async fn the_memory_store_keeps_the_grant_contract() {
        let store = MemoryGrantStore::new();
        crate::testing::records_contract::check_grant_store("memory", &store).await;
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
