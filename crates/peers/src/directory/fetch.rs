//! Reading a peer's card: from the configured URL only, revalidated with
//! `If-None-Match`, its interfaces held to its own host, and its signature checked
//! against the keys its own origin publishes (required with `require-signed-card`).

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use chrono::Utc;
use fundi_ops::addresses::special_purpose;
use serde_json::Value;

use super::{Cached, MAX_CARD_BYTES, Peer};
use crate::card::{PeerCard, check_hosts};
use crate::error::PeerError;
use crate::signature;
use fundi_runtime::error_chain;

impl Peer {
    pub(super) fn cached(&self) -> Option<Cached> {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn card_error(&self, reason: impl Into<String>) -> PeerError {
        PeerError::Card {
            peer: self.name.clone(),
            reason: reason.into(),
        }
    }

    /// Refuses a URL whose host is a special-purpose IP literal (the resolver, which
    /// guards names, is not asked about those), unless private networks are allowed.
    pub(super) fn check_literal(&self, url: &reqwest::Url) -> Result<(), String> {
        if self.config.allow_private_networks {
            return Ok(());
        }
        let host = url.host_str().unwrap_or_default();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse().ok().and_then(special_purpose) {
            Some(kind) => Err(format!(
                "{host} is {kind} address; set peers.{}.allow-private-networks to reach it",
                self.name
            )),
            None => Ok(()),
        }
    }

    /// The key id that signed `card` (its JSON), checked against the JWKS its signature
    /// names, which must be on the card's own origin (scheme, host and port): keys are
    /// pinned to the peer, never taken from wherever a card points.
    async fn verify_signature(&self, card: &Value) -> Result<String, String> {
        let origin = self.card_url.origin();
        let jku = signature::jkus(card)
            .into_iter()
            .find(|jku| reqwest::Url::parse(jku).is_ok_and(|url| url.origin() == origin))
            .ok_or_else(|| {
                format!(
                    "no signature names a key set (jku) on {}, where the card is served",
                    origin.ascii_serialization()
                )
            })?;
        let mut response = self
            .http
            .get(&jku)
            .send()
            .await
            .map_err(|e| format!("its key set at {jku}: {}", error_chain(&e)))?;
        if !response.status().is_success() {
            return Err(format!(
                "its key set at {jku} answered HTTP {}",
                response.status()
            ));
        }
        let body = read_limited(&mut response)
            .await
            .map_err(|e| format!("its key set at {jku}: {}", error_chain(&e)))?
            .ok_or_else(|| format!("its key set at {jku} is larger than {MAX_CARD_BYTES} bytes"))?;
        let jwks: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("its key set at {jku} is not JSON: {e}"))?;
        signature::verify(card, &jwks).map(|signer| signer.kid)
    }

    /// Reads the card, revalidating the cached one.
    pub(super) async fn fetch(&self) -> Result<Arc<PeerCard>, PeerError> {
        self.check_literal(&self.card_url)
            .map_err(|reason| self.card_error(reason))?;
        let cached = self.cached();
        let mut request = self
            .http
            .get(self.card_url.clone())
            .header("A2A-Version", "1.0")
            .header("Accept", "application/json");
        if let Some(etag) = cached.as_ref().and_then(|c| c.etag.as_deref()) {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        let unreachable = |reason: String| PeerError::Unreachable {
            peer: self.name.clone(),
            reason,
        };
        let mut response = request.send().await.map_err(|e| {
            unreachable(format!(
                "its agent card at {}: {}",
                self.card_url,
                error_chain(&e)
            ))
        })?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_MODIFIED
            && let Some(mut cached) = cached
        {
            cached.checked = Instant::now();
            let card = cached.card.clone();
            *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = Some(cached);
            return Ok(card);
        }
        if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(unreachable(format!(
                "its agent card at {} answered HTTP {status}",
                self.card_url
            )));
        }
        if !status.is_success() {
            return Err(self.card_error(format!("{} answered HTTP {status}", self.card_url)));
        }
        let etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = read_limited(&mut response)
            .await
            .map_err(|e| unreachable(error_chain(&e)))?
            .ok_or_else(|| self.card_error(format!("it is larger than {MAX_CARD_BYTES} bytes")))?;
        let json: Value = serde_json::from_slice(&body)
            .map_err(|e| self.card_error(format!("{} is not JSON: {e}", self.card_url)))?;
        let card = PeerCard::parse(&json).map_err(|reason| self.card_error(reason))?;
        check_hosts(&card, &self.card_url, &self.config.interface_hosts)
            .map_err(|reason| self.card_error(reason))?;
        let mut card = card;
        let verified = match card.signed {
            true => self.verify_signature(&json).await,
            false => Err("it is not signed".to_owned()),
        };
        match &verified {
            Ok(kid) => tracing::debug!(peer = self.name, kid, "the peer's card signature verifies"),
            Err(reason) if self.config.require_signed_card => {
                // Fail closed: a card whose signature does not verify is not used.
                return Err(self.card_error(format!(
                    "its signature does not verify ({reason}), and the peer's \
                     require-signed-card is set"
                )));
            }
            Err(reason) if card.signed => {
                tracing::warn!(peer = self.name, %reason, "the peer's card signature does not verify");
            }
            Err(_) => {}
        }
        card.signature_verified = verified.is_ok();
        let card = Arc::new(card);
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = Some(Cached {
            card: card.clone(),
            etag,
            checked: Instant::now(),
            fetched_at: Utc::now(),
        });
        Ok(card)
    }
}

/// The body of `response`, or `None` when it is larger than [`MAX_CARD_BYTES`].
async fn read_limited(response: &mut reqwest::Response) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_CARD_BYTES {
            return Ok(None);
        }
    }
    Ok(Some(body))
}
