//! fundi-peers: the other A2A agents fundi knows, and the `delegate` skill that hands
//! them work as durable tasks.
//!
//! - [`PeerConfig`]: one peer as an operator configures it (`[peers.<name>]`).
//! - [`PeerDirectory`]: the known peers, each with its HTTP client (special-purpose
//!   addresses refused unless the peer allows private networks, no redirects) and its
//!   cached agent card, revalidated with `If-None-Match`. Nothing but these cards and the
//!   endpoints they list is ever contacted.
//! - [`DelegateSkill`]: sends a message to a peer over the binding its card prefers,
//!   follows the peer's task and mirrors it into the local one; its checkpoint lets a
//!   restarted run follow the same remote task again.
//!
//! The wire is fundi's own (JSON-RPC and HTTP+JSON, A2A v1.0) rather than the official
//! Rust client's: delegation must tell a 401 from a 429 or a 503 and honour
//! `Retry-After`, which that client's errors do not carry.

mod card;
mod config;
mod delegate;
mod directory;
mod error;
mod remote;
pub mod signature;
mod wire;

pub use card::{ACCESS_REQUESTS_EXTENSION, CardSkill, Interface, PeerCard};
pub use config::{DelegateConfig, PeerConfig};
pub use delegate::{DELEGATE_SCOPE, DELEGATE_SKILL, DelegateSkill};
pub use directory::{AccessAsked, PEER_METHODS, PeerDirectory, PeerSummary};
pub use error::PeerError;
