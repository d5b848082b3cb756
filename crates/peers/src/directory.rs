//! The peers fundi knows: each with its HTTP client and its cached agent card. Nothing
//! else is ever contacted: a card is read only from the configured URL, and calls go
//! only to the interfaces that card lists, on its own host (or one the peer's
//! `interface-hosts` names), through the special-purpose address filter unless the peer
//! allows private networks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::card::PeerCard;
use crate::config::PeerConfig;
use crate::error::PeerError;
use crate::wire::Endpoint;
use fundi_ops::peers::PeerStore;

/// The A2A methods a caller may send a peer through [`PeerDirectory::call`], each with
/// whether it changes anything. Messages go through the `delegate` skill instead, which
/// keeps them durable.
pub const PEER_METHODS: [(&str, bool); 8] = [
    ("GetTask", false),
    ("ListTasks", false),
    ("GetExtendedAgentCard", false),
    ("GetTaskPushNotificationConfig", false),
    ("ListTaskPushNotificationConfigs", false),
    ("CancelTask", true),
    ("CreateTaskPushNotificationConfig", true),
    ("DeleteTaskPushNotificationConfig", true),
];

/// The largest agent card read.
const MAX_CARD_BYTES: usize = 1 << 20;

mod access;
mod fetch;
mod stored;

pub use access::AccessAsked;

/// The known peers: those of the config, and those an admin added at run time (kept in
/// the store, when there is one: see `stored`).
pub struct PeerDirectory {
    peers: RwLock<BTreeMap<String, Arc<Peer>>>,
    card_max_age: Duration,
    store: Option<Arc<dyn PeerStore>>,
    /// When the peers added at run time were last read from the store.
    refreshed: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for PeerDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let peers = self.peers.read().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("PeerDirectory")
            .field("peers", &peers.keys().collect::<Vec<_>>())
            .field("stored", &self.store.is_some())
            .finish()
    }
}

#[derive(Debug)]
struct Peer {
    name: String,
    config: PeerConfig,
    /// Who added it at run time, and when; `None` for a peer of the config.
    added: Option<(String, DateTime<Utc>)>,
    card_url: reqwest::Url,
    http: reqwest::Client,
    streaming: reqwest::Client,
    cache: Mutex<Option<Cached>>,
}

#[derive(Debug, Clone)]
struct Cached {
    card: Arc<PeerCard>,
    etag: Option<String>,
    checked: Instant,
    fetched_at: DateTime<Utc>,
}

/// A peer as listed: its settings (never its tokens) and what its cached card says.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerSummary {
    /// Its name.
    pub name: String,
    /// The configured URL.
    pub url: String,
    /// Whether a bearer token is configured for it.
    pub token_set: bool,
    /// Whether a user token is configured for it.
    pub user_token_set: bool,
    /// Whether it may be on a private network.
    pub allow_private_networks: bool,
    /// Whether its card must be signed.
    pub require_signed_card: bool,
    /// Other hosts its card's interfaces may point at.
    pub interface_hosts: Vec<String>,
    /// `config` (the config file) or `added` (by an admin, at run time).
    pub source: &'static str,
    /// Who added it, when an admin did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_by: Option<String>,
    /// When, when an admin did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_at: Option<DateTime<Utc>>,
    /// Its card as last read, if it has been.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card: Option<PeerCard>,
    /// When the card was last read from the peer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card_fetched_at: Option<DateTime<Utc>>,
}

impl PeerDirectory {
    /// The peers of the config, by name; the error names the setting that is wrong.
    /// A card is used for `card_max_age` before it is revalidated.
    pub fn new(
        peers: &BTreeMap<String, PeerConfig>,
        card_max_age: Duration,
    ) -> Result<PeerDirectory, String> {
        let directory = PeerDirectory {
            peers: RwLock::new(BTreeMap::new()),
            card_max_age,
            store: None,
            refreshed: Mutex::new(None),
        };
        for (name, config) in peers {
            directory.insert(name, config.clone(), None)?;
        }
        Ok(directory)
    }

    /// Adds (or replaces) the peer `name`, added by `added` (`None`: the config).
    fn insert(
        &self,
        name: &str,
        config: PeerConfig,
        added: Option<(String, DateTime<Utc>)>,
    ) -> Result<(), String> {
        config.validate(name)?;
        let card_url = card_url(&config.url)?;
        let builder = || {
            fundi_ops::resolver::guarded(reqwest::Client::builder(), config.allow_private_networks)
                // A redirect could lead anywhere: a peer's answers are read where they are.
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(Duration::from_secs(10))
        };
        let http = builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("peers.{name}: no HTTP client: {e}"))?;
        let streaming = builder()
            .build()
            .map_err(|e| format!("peers.{name}: no HTTP client: {e}"))?;
        let peer = Peer {
            name: name.to_owned(),
            config,
            added,
            card_url,
            http,
            streaming,
            cache: Mutex::new(None),
        };
        self.peers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), Arc::new(peer));
        Ok(())
    }

    /// Reads the agent card at `url` once, as a peer's card is read (the special-purpose
    /// address filter unless `allow_private_networks`, no redirects, the size limit, its
    /// signature checked against keys on its own origin), and keeps nothing: how fundi
    /// reads the card of an agent that asks it for access.
    pub async fn read_card(url: &str, allow_private_networks: bool) -> Result<PeerCard, PeerError> {
        let mut config = PeerConfig::new(url);
        config.allow_private_networks = allow_private_networks;
        let once = PeerDirectory::new(
            &BTreeMap::from([("requester".to_owned(), config)]),
            Duration::ZERO,
        )
        .map_err(|reason| PeerError::Card {
            peer: "requester".into(),
            reason,
        })?;
        let card = once.discover("requester").await?;
        Ok(PeerCard::clone(&card))
    }

    /// The names of the peers known now (those added at run time as last read).
    pub fn names(&self) -> Vec<String> {
        let peers = self.peers.read().unwrap_or_else(PoisonError::into_inner);
        peers.keys().cloned().collect()
    }

    /// Every peer, with what its cached card says; nothing is fetched, and the peers
    /// added at run time are as last read from the store (see
    /// [`PeerDirectory::listing`]).
    pub fn list(&self) -> Vec<PeerSummary> {
        let peers = self.peers.read().unwrap_or_else(PoisonError::into_inner);
        peers
            .values()
            .map(|peer| {
                let cached = peer.cached();
                PeerSummary {
                    name: peer.name.clone(),
                    url: peer.config.url.clone(),
                    token_set: peer.config.token.is_some(),
                    user_token_set: peer.config.user_token.is_some(),
                    allow_private_networks: peer.config.allow_private_networks,
                    require_signed_card: peer.config.require_signed_card,
                    interface_hosts: peer.config.interface_hosts.clone(),
                    source: match peer.added {
                        Some(_) => "added",
                        None => "config",
                    },
                    added_by: peer.added.as_ref().map(|(by, _)| by.clone()),
                    added_at: peer.added.as_ref().map(|(_, at)| *at),
                    card: cached.as_ref().map(|c| PeerCard::clone(&c.card)),
                    card_fetched_at: cached.map(|c| c.fetched_at),
                }
            })
            .collect()
    }

    /// The peer `name`'s card, read from the peer now (a `304 Not Modified` keeps the
    /// cached one without reading it again).
    pub async fn discover(&self, name: &str) -> Result<Arc<PeerCard>, PeerError> {
        self.refresh(false).await;
        self.peer(name)?.fetch().await
    }

    /// The peer `name`'s card: the cached one while it is younger than the card's
    /// maximum age, else revalidated.
    pub async fn card(&self, name: &str) -> Result<Arc<PeerCard>, PeerError> {
        let peer = self.peer(name)?;
        match peer.cached() {
            Some(cached) if cached.checked.elapsed() < self.card_max_age => Ok(cached.card),
            _ => peer.fetch().await,
        }
    }

    /// One A2A call of [`PEER_METHODS`] on the peer `name`, tried once: its result.
    pub async fn call(&self, name: &str, method: &str, params: Value) -> Result<Value, PeerError> {
        if !PEER_METHODS.iter().any(|(m, _)| *m == method) {
            return Err(PeerError::Method {
                method: method.to_owned(),
                allowed: PEER_METHODS.map(|(m, _)| m).join(", "),
            });
        }
        let (endpoint, _) = self.endpoint(name).await?;
        endpoint.call(method, params).await
    }

    /// How to call the peer `name`: the interface its card prefers, with fundi's
    /// credentials for it; and whether it streams.
    pub(crate) async fn endpoint(&self, name: &str) -> Result<(Endpoint, bool), PeerError> {
        self.refresh(false).await;
        let peer = self.peer(name)?;
        let card = self.card(name).await?;
        let card_error = |reason: String| PeerError::Card {
            peer: name.to_owned(),
            reason,
        };
        let interface = card.preferred().map_err(card_error)?.clone();
        let url = reqwest::Url::parse(&interface.url).map_err(|e| card_error(e.to_string()))?;
        peer.check_literal(&url).map_err(card_error)?;
        let user = peer
            .config
            .user_token
            .clone()
            .map(|token| (Endpoint::user_header(card.user_header.as_deref()), token));
        let endpoint = Endpoint {
            peer: name.to_owned(),
            http: peer.http.clone(),
            streaming: peer.streaming.clone(),
            interface,
            token: peer.config.token.clone(),
            user,
        };
        Ok((endpoint, card.streaming))
    }

    fn peer(&self, name: &str) -> Result<Arc<Peer>, PeerError> {
        let peers = self.peers.read().unwrap_or_else(PoisonError::into_inner);
        peers.get(name).cloned().ok_or_else(|| PeerError::Unknown {
            name: name.to_owned(),
            known: match peers.is_empty() {
                true => "none; add one as [peers.<name>] in the config".to_owned(),
                false => peers.keys().cloned().collect::<Vec<_>>().join(", "),
            },
        })
    }
}

/// The card's URL: the configured one when it names a JSON document, else the
/// well-known path under it.
fn card_url(configured: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(configured).map_err(|e| format!("{configured:?}: {e}"))?;
    if url.path().ends_with(".json") {
        return Ok(url);
    }
    let base = configured.trim_end_matches('/');
    reqwest::Url::parse(&format!("{base}/.well-known/agent-card.json"))
        .map_err(|e| format!("{configured:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_reads_the_well_known_card() {
        assert_eq!(
            card_url("http://b:1/").unwrap().as_str(),
            "http://b:1/.well-known/agent-card.json"
        );
        assert_eq!(
            card_url("http://b:1/agents/x/card.json").unwrap().as_str(),
            "http://b:1/agents/x/card.json"
        );
    }

    #[tokio::test]
    async fn an_unknown_peer_is_named_with_the_known_ones() {
        let directory = PeerDirectory::new(
            &[("b".to_owned(), PeerConfig::new("http://b.example"))].into(),
            Duration::from_secs(60),
        )
        .unwrap();
        let error = directory.discover("c").await.unwrap_err().to_string();
        assert!(
            error.contains("\"c\"") && error.contains("known peers: b"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_loopback_peer_needs_private_networks_allowed() {
        let directory = PeerDirectory::new(
            &[("b".to_owned(), PeerConfig::new("http://127.0.0.1:9"))].into(),
            Duration::from_secs(60),
        )
        .unwrap();
        let error = directory.discover("b").await.unwrap_err().to_string();
        assert!(
            error.contains("a loopback") && error.contains("peers.b.allow-private-networks"),
            "{error}"
        );
    }
}
