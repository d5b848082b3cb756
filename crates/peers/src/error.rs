//! What can go wrong talking to a peer, classified by what the caller should do about it.

use std::time::Duration;

/// A failed call to a peer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PeerError {
    /// No peer has this name.
    #[error("no peer is named {name:?} (known peers: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names there are, or "none".
        known: String,
    },
    /// A peer's settings are wrong (the message names the field).
    #[error("{0}")]
    Invalid(String),
    /// The peer is in the config file, which wins over changes made at run time.
    #[error("peer {0} is set in the config file; change it there")]
    Configured(String),
    /// The store of the peers added at run time failed.
    #[error("the peers added at run time could not be kept: {0}")]
    Store(String),
    /// A method that is not passed on to peers.
    #[error("{method:?} is not a method fundi sends a peer; these are: {allowed}")]
    Method {
        /// The method asked for.
        method: String,
        /// The methods there are.
        allowed: String,
    },
    /// The peer refused fundi's credentials (HTTP 401). Not tried again: a person must
    /// fix the setting the message names.
    #[error(
        "peer {peer} refused fundi's credentials (HTTP 401: {said}); set peers.{peer}.token \
         (FUNDI__PEERS__{env}__TOKEN){user_token}"
    )]
    Unauthorized {
        /// The peer.
        peer: String,
        /// The peer's name in environment variables.
        env: String,
        /// What the peer said.
        said: String,
        /// A hint about the user token, for peers whose card asks for one.
        user_token: String,
    },
    /// The peer is busy (HTTP 429 or 503): try again, after `retry_after` when it said.
    #[error("peer {peer} is busy (HTTP {status}: {said})")]
    Busy {
        /// The peer.
        peer: String,
        /// 429 or 503.
        status: u16,
        /// What the peer said.
        said: String,
        /// Its `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// The peer could not be reached, or failed on its side (a 5xx, a broken
    /// connection): try again with backoff.
    #[error("peer {peer} could not be reached: {reason}")]
    Unreachable {
        /// The peer.
        peer: String,
        /// Why.
        reason: String,
    },
    /// The peer answered the call with an error of its own (an A2A error, a 4xx): trying
    /// again would get the same answer.
    #[error("peer {peer} refused the call: {message}")]
    Refused {
        /// The peer.
        peer: String,
        /// The peer's words.
        message: String,
        /// The JSON-RPC error code, when the binding has one.
        code: Option<i64>,
    },
    /// The peer's card cannot be used (unreadable, no interface fundi speaks, an
    /// endpoint on a host it may not name, not signed when it must be).
    #[error("peer {peer}'s agent card cannot be used: {reason}")]
    Card {
        /// The peer.
        peer: String,
        /// Why.
        reason: String,
    },
    /// The peer answered with something that is not what A2A says it should be.
    #[error("peer {peer} answered with something unexpected: {reason}")]
    Unexpected {
        /// The peer.
        peer: String,
        /// What.
        reason: String,
    },
}

impl PeerError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, PeerError::Busy { .. } | PeerError::Unreachable { .. })
    }

    /// How long the peer asked to be left alone, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            PeerError::Busy { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A peer's name as it appears in environment variable names (`FUNDI__PEERS__MY_PEER`).
pub(crate) fn env_name(peer: &str) -> String {
    peer.to_ascii_uppercase().replace('-', "_")
}
