//! The access desk: takes requests for access (proof checked, bounds kept, the
//! requester's card read), lets a person decide them, and hands an approved request's
//! token to its requester once. The routes (`public.rs`, `people.rs`) answer and
//! record; this is what they do. A person's decision, and the requester's collection
//! of its token, are `decision`.

mod decision;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use fundi_ops::access::{
    AccessRequest, AccessRequestStore, CONTINUATION_PREFIX, Requester, RequesterCard, Standing,
};
use fundi_ops::grants::{random_token, token_digest};
use fundi_peers::PeerDirectory;
use serde::Deserialize;
use tokio::sync::Mutex;

pub use decision::Approved;

use super::assertion::AssertionVerifier;
use super::config::FriendsConfig;
use super::error::AccessError;
use crate::admin::grant_desk::{GrantDesk, check_scopes};
use crate::rate_limit::UserRateLimit;

/// The longest reason kept, in characters.
const MAX_REASON_CHARS: usize = 2000;
/// The most scopes one request may ask for.
const MAX_SCOPES: usize = 32;

/// A request for access as an agent sends it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct NewRequest {
    /// The URL of the requesting agent's card.
    pub(crate) card: String,
    /// The scopes it asks for.
    pub(crate) scopes: Vec<String>,
    /// Why.
    pub(crate) reason: String,
    /// The identity assertion (a JWT).
    pub(crate) assertion: String,
    /// Where to say that the request was decided (on the card's origin).
    #[serde(default)]
    pub(crate) callback: Option<String>,
}

/// A request taken: what its requester needs to follow it.
pub(crate) struct Accepted {
    pub(crate) request: AccessRequest,
    /// The continuation secret (shown once, kept only as a digest).
    pub(crate) secret: String,
}

/// The desk.
pub struct AccessDesk {
    pub(crate) store: Arc<dyn AccessRequestStore>,
    pub(crate) grants: Arc<GrantDesk>,
    verifier: AssertionVerifier,
    config: FriendsConfig,
    pub(super) lifetime: chrono::Duration,
    everyone: UserRateLimit,
    per_requester: UserRateLimit,
    /// Held from a requester's quota check to its request's insertion (on this node).
    taking: Mutex<()>,
    /// For callbacks: the address filter unless private networks are allowed.
    pub(crate) callbacks: reqwest::Client,
}

impl AccessDesk {
    /// A desk for `config` (validated), accepting assertions for `public_url`.
    pub(crate) fn new(
        config: &FriendsConfig,
        public_url: &str,
        store: Arc<dyn AccessRequestStore>,
        grants: Arc<GrantDesk>,
    ) -> Result<AccessDesk, String> {
        let lifetime = chrono::Duration::from_std(config.lifetime()?)
            .map_err(|e| format!("friends.expires: {e}"))?;
        let callbacks =
            fundi_ops::resolver::guarded(reqwest::Client::builder(), config.allow_private_networks)
                .redirect(reqwest::redirect::Policy::none())
                .timeout(std::time::Duration::from_secs(10))
                .build()
                .map_err(|e| format!("friends: no HTTP client: {e}"))?;
        // An hour's allowance, spread: the bucket refills a request every 60/n minutes.
        let hourly = config.requests_per_hour;
        Ok(AccessDesk {
            verifier: AssertionVerifier::new(config, public_url)?,
            store,
            grants,
            lifetime,
            everyone: UserRateLimit::new(config.requests_per_minute, config.requests_per_minute),
            per_requester: UserRateLimit::per_hour(hourly, hourly),
            taking: Mutex::new(()),
            callbacks,
            config: config.clone(),
        })
    }

    /// Takes a request: pending, granting nothing, until a person decides.
    pub(crate) async fn submit(&self, new: NewRequest) -> Result<Accepted, AccessError> {
        self.everyone
            .check("everyone")
            .map_err(|seconds| AccessError::TooMany {
                reason: "this server takes no more requests for access just now".into(),
                retry_after: std::time::Duration::from_secs(seconds),
            })?;
        let card_url = check_new(&new)?;
        let vouched = self.verifier.verify(new.assertion.trim()).await?;
        let requester = Requester {
            provider: vouched.provider,
            issuer: vouched.issuer,
            subject: vouched.subject,
            assertion_id: vouched.jti,
        };
        let who = requester.user();
        self.per_requester
            .check(&format!("{}\n{}", requester.issuer, requester.subject))
            .map_err(|seconds| AccessError::TooMany {
                reason: format!(
                    "{who} made {} requests for access this hour (friends.requests-per-hour)",
                    self.config.requests_per_hour
                ),
                retry_after: std::time::Duration::from_secs(seconds),
            })?;
        let card = self.read_card(&card_url).await;
        let now = Utc::now();
        let secret = format!("{CONTINUATION_PREFIX}{}", random_token());
        let request = AccessRequest {
            id: format!("ar-{}", uuid::Uuid::now_v7()),
            version: 1,
            requester,
            card,
            callback: new.callback,
            scopes: dedup(new.scopes),
            reason: new.reason,
            created_at: now,
            expires_at: now + self.lifetime,
            secret_digest: token_digest(&secret),
            decision: None,
            collected_at: None,
        };
        let _taking = self.taking.lock().await;
        let (held, first_lapse) = self.pending_of(&request.requester, now).await?;
        if held >= self.config.pending_per_requester {
            let frees = first_lapse.map_or(3600, |at| (at - now).num_seconds().max(1) as u64);
            return Err(AccessError::TooMany {
                reason: format!(
                    "{who} has {held} requests for access pending, the most one requester \
                     may have (friends.pending-per-requester)"
                ),
                retry_after: std::time::Duration::from_secs(frees),
            });
        }
        if !self.store.insert(&request).await? {
            return Err(AccessError::Assertion(format!(
                "it was used before (jti {:?}): an assertion is accepted once",
                request.requester.assertion_id
            )));
        }
        Ok(Accepted { request, secret })
    }

    /// How many requests `requester` has pending, and when the first of them lapses.
    async fn pending_of(
        &self,
        requester: &Requester,
        now: DateTime<Utc>,
    ) -> Result<(usize, Option<DateTime<Utc>>), AccessError> {
        let pending: Vec<DateTime<Utc>> = self
            .store
            .list()
            .await?
            .iter()
            .filter(|r| {
                r.requester.issuer == requester.issuer
                    && r.requester.subject == requester.subject
                    && r.standing(now) == Standing::Pending
            })
            .map(|r| r.expires_at)
            .collect();
        Ok((pending.len(), pending.into_iter().min()))
    }

    /// The requester's card as the approver will see it; a card that cannot be read is
    /// recorded as such (the person decides whether that matters).
    async fn read_card(&self, url: &str) -> RequesterCard {
        match PeerDirectory::read_card(url, self.config.allow_private_networks).await {
            Ok(card) => RequesterCard {
                url: url.to_owned(),
                name: Some(card.name),
                signature_verified: card.signature_verified,
                unreadable: None,
            },
            Err(error) => RequesterCard {
                url: url.to_owned(),
                name: None,
                signature_verified: false,
                unreadable: Some(error.to_string()),
            },
        }
    }

    /// The request `id`, if `secret` is its continuation secret.
    pub(crate) async fn find_with_secret(
        &self,
        id: &str,
        secret: &str,
    ) -> Result<AccessRequest, AccessError> {
        let request = self.store.get(id).await?;
        let digest = token_digest(secret.trim());
        request
            .filter(|r| constant_time_eq(r.secret_digest.as_bytes(), digest.as_bytes()))
            .ok_or_else(|| AccessError::Unknown(id.to_owned()))
    }

    /// Every request kept, oldest first, for people.
    pub async fn list(&self) -> Result<Vec<AccessRequest>, AccessError> {
        Ok(self.store.list().await?)
    }

    /// The request `id`, for a person.
    pub async fn find(&self, id: &str) -> Result<AccessRequest, AccessError> {
        self.store
            .get(id)
            .await?
            .ok_or_else(|| AccessError::NoSuchRequest(id.to_owned()))
    }
}

/// Checks what the request says before its proof is; the card's URL.
fn check_new(new: &NewRequest) -> Result<String, AccessError> {
    let malformed = |why: String| Err(AccessError::Malformed(why));
    let card = match reqwest::Url::parse(&new.card) {
        Ok(url) if matches!(url.scheme(), "https" | "http") && new.card.len() <= 2048 => url,
        _ => {
            return malformed(format!(
                "card must be the http(s) URL of the requesting agent's card, got {:?}",
                new.card
            ));
        }
    };
    check_scopes(&new.scopes).map_err(AccessError::Malformed)?;
    if new.scopes.len() > MAX_SCOPES {
        return malformed(format!("scopes may name at most {MAX_SCOPES} scopes"));
    }
    let reason = new.reason.trim();
    if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS || reason.contains('\0') {
        return malformed(format!(
            "reason must say why, in 1 to {MAX_REASON_CHARS} characters (no NUL)"
        ));
    }
    if let Some(callback) = &new.callback {
        let same_origin = reqwest::Url::parse(callback)
            .is_ok_and(|url| url.origin() == card.origin() && callback.len() <= 2048);
        if !same_origin {
            return malformed(format!(
                "callback must be a URL on the card's origin ({}), got {callback:?}",
                card.origin().ascii_serialization()
            ));
        }
    }
    Ok(new.card.clone())
}

fn dedup(scopes: Vec<String>) -> Vec<String> {
    let mut kept: Vec<String> = Vec::with_capacity(scopes.len());
    for scope in scopes {
        if !kept.contains(&scope) {
            kept.push(scope);
        }
    }
    kept
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
