//! Asking a peer for access, as any agent asks fundi (docs/trust.md): the request goes
//! to where the peer's card offers requests for access (on the card's own origin only),
//! carrying this server's card URL and an identity assertion of the person asking; once
//! a person at the peer approved it, the token collected with the continuation secret
//! becomes the peer's token, kept in the store for delegation. Only a peer added at run
//! time can keep one (the config file's peers change only there).

use serde::Serialize;
use serde_json::{Value, json};

use super::{Peer, PeerDirectory};
use crate::error::PeerError;
use fundi_runtime::error_chain;

/// A request for access a peer took, pending there.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessAsked {
    /// The request's id at the peer.
    pub id: String,
    /// The continuation secret that collects its token (shown once).
    pub continuation: String,
    /// When the request lapses at the peer, as it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

impl PeerDirectory {
    /// Asks the peer `name` for `scopes`, as the agent whose card is at `own_card`, with
    /// `assertion` proving who asks.
    pub async fn ask_access(
        &self,
        name: &str,
        own_card: &str,
        scopes: &[String],
        reason: &str,
        assertion: &str,
    ) -> Result<AccessAsked, PeerError> {
        self.refresh(true).await;
        let peer = self.keeping(name)?;
        let url = self.access_url(&peer).await?;
        let body =
            json!({"card": own_card, "scopes": scopes, "reason": reason, "assertion": assertion});
        let answer = send(&peer, peer.http.post(url.clone()).json(&body)).await?;
        let text = |key: &str| answer[key].as_str().map(str::to_owned);
        match (text("id"), text("continuation")) {
            (Some(id), Some(continuation)) => Ok(AccessAsked {
                id,
                continuation,
                expires_at: text("expiresAt"),
            }),
            _ => Err(PeerError::Unexpected {
                peer: name.to_owned(),
                reason: format!("{url} answered without an id and a continuation secret"),
            }),
        }
    }

    /// Collects the token of request `id` at the peer `name` with `continuation`, and
    /// keeps it as the peer's token: the scopes granted, or `None` while the request is
    /// still pending there.
    pub async fn collect_access(
        &self,
        name: &str,
        id: &str,
        continuation: &str,
    ) -> Result<Option<Vec<String>>, PeerError> {
        self.refresh(true).await;
        let peer = self.keeping(name)?;
        let url = self.access_url(&peer).await?;
        if !id.starts_with("ar-") || id.contains(['/', '?', '#']) {
            return Err(PeerError::Invalid(format!(
                "{id:?} is not a request id (ar-...)"
            )));
        }
        let collect = format!("{}/{id}/collect", url.as_str().trim_end_matches('/'));
        let answer = send(&peer, peer.http.post(&collect).bearer_auth(continuation)).await?;
        if answer["status"] == "pending" {
            return Ok(None);
        }
        let token = answer["token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| PeerError::Unexpected {
                peer: name.to_owned(),
                reason: format!("{collect} answered with no token"),
            })?;
        let mut config = peer.config.clone();
        config.token = Some(token.to_owned());
        // The grant acts as the person who asked: no user token goes with it.
        config.user_token = None;
        let added_by = peer
            .added
            .as_ref()
            .map(|(by, _)| by.clone())
            .unwrap_or_default();
        self.add_peer(name, config, &added_by).await?;
        let scopes = answer["scopes"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(scopes))
    }

    /// The peer `name`, if it can keep a collected token (one added at run time).
    fn keeping(&self, name: &str) -> Result<std::sync::Arc<Peer>, PeerError> {
        let peer = self.peer(name)?;
        match peer.added {
            Some(_) => Ok(peer),
            None => Err(PeerError::Invalid(format!(
                "peer {name} is set in the config file, where a collected token cannot be \
                 kept; add it at run time (fundi peers add) to ask it for access"
            ))),
        }
    }

    /// Where the peer takes requests for access: its card's offer, on the card's origin.
    async fn access_url(&self, peer: &Peer) -> Result<reqwest::Url, PeerError> {
        let card = peer.fetch().await?;
        let offered = card.access_requests.as_deref().ok_or_else(|| {
            peer.card_error("it offers no requests for access (no access-requests extension)")
        })?;
        let url = reqwest::Url::parse(offered)
            .map_err(|e| peer.card_error(format!("its access-requests URL {offered:?}: {e}")))?;
        if url.origin() != peer.card_url.origin() {
            return Err(peer.card_error(format!(
                "its access-requests URL {url} is not on the card's origin ({})",
                peer.card_url.origin().ascii_serialization()
            )));
        }
        Ok(url)
    }
}

/// Sends `request` to `peer`: the JSON answer of a 2xx; the peer's error otherwise.
async fn send(peer: &Peer, request: reqwest::RequestBuilder) -> Result<Value, PeerError> {
    let response = request.send().await.map_err(|e| PeerError::Unreachable {
        peer: peer.name.clone(),
        reason: error_chain(&e),
    })?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .map(std::time::Duration::from_secs);
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let said = body["error"]
        .as_str()
        .unwrap_or("no reason given")
        .to_owned();
    match status.as_u16() {
        200..=299 => Ok(body),
        429 | 503 => Err(PeerError::Busy {
            peer: peer.name.clone(),
            status: status.as_u16(),
            said,
            retry_after,
        }),
        500.. => Err(PeerError::Unreachable {
            peer: peer.name.clone(),
            reason: format!("HTTP {status}: {said}"),
        }),
        _ => Err(PeerError::Refused {
            peer: peer.name.clone(),
            message: format!("HTTP {status}: {said}"),
            code: None,
        }),
    }
}
