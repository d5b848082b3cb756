//! Requests for access: an agent that holds no credential of fundi's asks for scopes,
//! with an identity assertion naming the person behind it, and a person decides. A
//! pending request grants nothing; approving one vends a grant (see [`crate::grants`])
//! whose token the requester collects once with the continuation secret it was given.
//! docs/trust.md has the whole model.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use fundi_runtime::store::StoreError;

mod in_memory;

pub use in_memory::MemoryAccessRequestStore;

/// What every continuation secret starts with (recognisable to secret scanners).
pub const CONTINUATION_PREFIX: &str = "fundi_continue_";

/// A request for access, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessRequest {
    /// Its id (`ar-` and a UUID).
    pub id: String,
    /// Bumped by every change; a change applies only to the version it was made from.
    pub version: u64,
    /// The person behind the requesting agent, as the identity provider vouched.
    pub requester: Requester,
    /// The requesting agent's card, as fundi read it.
    pub card: RequesterCard,
    /// Where the requester asked to be told of the decision (on its card's origin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback: Option<String>,
    /// The scopes asked for.
    pub scopes: Vec<String>,
    /// Why, in the requester's words.
    pub reason: String,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// When it lapses if not decided, or (once approved) if not collected.
    pub expires_at: DateTime<Utc>,
    /// The digest (hex SHA-256) of the continuation secret; never shown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub secret_digest: String,
    /// The person's decision, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// When the requester collected its token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collected_at: Option<DateTime<Utc>>,
}

/// Who stands behind a request: the verified issuer and subject of its assertion.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requester {
    /// The configured name of the identity provider (`[friends.issuers.<name>]`).
    pub provider: String,
    /// Its `iss`.
    pub issuer: String,
    /// The assertion's `sub`.
    pub subject: String,
    /// The assertion's `jti`: each is accepted once.
    pub assertion_id: String,
}

impl Requester {
    /// The user a grant for this requester acts as: `<provider>:<subject>`.
    pub fn user(&self) -> String {
        format!("{}:{}", self.provider, self.subject)
    }
}

/// The requesting agent's card, as read when the request arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequesterCard {
    /// Where it is served.
    pub url: String,
    /// Its name, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether its signature verified against keys on its own origin.
    pub signature_verified: bool,
    /// Why it could not be read, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// A person's decision on a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// Approved (a grant vended) or rejected.
    pub approved: bool,
    /// The person who decided.
    pub by: String,
    /// When.
    pub at: DateTime<Utc>,
    /// The scopes granted (empty when rejected).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The grant vended, when approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// Why, when rejected with a reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Waiting for a person.
    Pending,
    /// Approved; its token not yet collected.
    Approved,
    /// Approved and its token collected.
    Collected,
    /// Rejected.
    Rejected,
    /// Not decided, or not collected, in time.
    Expired,
}

impl Standing {
    /// Its name, as answers and listings spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Pending => "pending",
            Standing::Approved => "approved",
            Standing::Collected => "collected",
            Standing::Rejected => "rejected",
            Standing::Expired => "expired",
        }
    }
}

impl AccessRequest {
    /// Where it stands at `now`.
    pub fn standing(&self, now: DateTime<Utc>) -> Standing {
        match (&self.decision, self.collected_at) {
            (_, Some(_)) => Standing::Collected,
            (Some(decision), None) if !decision.approved => Standing::Rejected,
            _ if self.expires_at <= now => Standing::Expired,
            (Some(_), None) => Standing::Approved,
            (None, None) => Standing::Pending,
        }
    }

    /// The key that makes its assertion usable once: issuer and `jti`.
    pub fn assertion_key(&self) -> String {
        format!("{}\n{}", self.requester.issuer, self.requester.assertion_id)
    }

    /// The request as shown to people: everything but the secret's digest.
    pub fn shown(&self) -> AccessRequest {
        AccessRequest {
            secret_digest: String::new(),
            ..self.clone()
        }
    }
}

/// Where requests for access are kept.
#[async_trait]
pub trait AccessRequestStore: Send + Sync + 'static {
    /// Stores a new request, unless a request with the same assertion (issuer and `jti`)
    /// was stored before: whether it was stored.
    async fn insert(&self, request: &AccessRequest) -> Result<bool, StoreError>;

    /// One request by id.
    async fn get(&self, id: &str) -> Result<Option<AccessRequest>, StoreError>;

    /// Stores `next` (whose version is one more than `current`'s) only if the stored
    /// request is still at `current.version`: whether it did (another change came first
    /// when not).
    async fn replace(
        &self,
        current: &AccessRequest,
        next: &AccessRequest,
    ) -> Result<bool, StoreError>;

    /// Every request, oldest first.
    async fn list(&self) -> Result<Vec<AccessRequest>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::access_contract::{check_access_request_store, request};

    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        check_access_request_store("memory", &MemoryAccessRequestStore::new()).await;
    }

    #[test]
    fn a_request_stands_where_its_decision_collection_and_expiry_put_it() {
        let now = Utc::now();
        let mut r = request("ar-1", "j1");
        assert_eq!(r.standing(now), Standing::Pending);
        r.expires_at = now;
        assert_eq!(r.standing(now), Standing::Expired);
        r.decision = Some(Decision {
            approved: false,
            by: "ann".into(),
            at: now,
            scopes: vec![],
            grant: None,
            reason: None,
        });
        assert_eq!(r.standing(now), Standing::Rejected, "a rejection stays one");
        r.decision.as_mut().unwrap().approved = true;
        assert_eq!(r.standing(now), Standing::Expired, "not collected in time");
        r.expires_at = now + chrono::Duration::hours(1);
        assert_eq!(r.standing(now), Standing::Approved);
        r.collected_at = Some(now);
        assert_eq!(r.standing(now), Standing::Collected);
        let shown = serde_json::to_value(r.shown()).unwrap();
        assert!(shown.get("secretDigest").is_none(), "{shown}");
        assert_eq!(r.requester.user(), "idp:alice");
    }
}
