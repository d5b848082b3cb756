//! The peers an admin adds at run time: kept in the store (so that a restart, and every
//! node of a cluster, knows them) and read back into the directory. A node reads the
//! store again at most every [`REFRESH_EVERY`] when a peer is used, and at once when
//! peers are listed; so a peer added or removed on one node reaches the others within
//! that time. A peer of the config file cannot be replaced or removed at run time.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use chrono::Utc;
use fundi_ops::peers::{PeerStore, StoredPeer};

use super::{PeerDirectory, PeerSummary};
use crate::config::PeerConfig;
use crate::error::PeerError;

/// The longest a node uses the peers added at run time as it last read them.
const REFRESH_EVERY: Duration = Duration::from_secs(2);

impl PeerDirectory {
    /// The same directory keeping the peers added at run time in `store`; read them
    /// with [`PeerDirectory::listing`] (or any use of a peer).
    pub fn with_store(mut self, store: Arc<dyn PeerStore>) -> PeerDirectory {
        self.store = Some(store);
        self
    }

    /// Every peer, the peers added at run time read from the store first.
    pub async fn listing(&self) -> Vec<PeerSummary> {
        self.refresh(true).await;
        self.list()
    }

    /// Adds the peer `name` with `config` for good (replacing one added before), as
    /// `by`; refused for a name the config file holds, or settings that are wrong.
    pub async fn add_peer(
        &self,
        name: &str,
        config: PeerConfig,
        by: &str,
    ) -> Result<PeerSummary, PeerError> {
        config.validate(name).map_err(PeerError::Invalid)?;
        self.refresh(true).await;
        if self.is_configured(name) {
            return Err(PeerError::Configured(name.to_owned()));
        }
        let store = self.store()?;
        let settings = serde_json::to_value(&config)
            .map_err(|e| PeerError::Store(format!("the peer's settings: {e}")))?;
        let stored = StoredPeer {
            name: name.to_owned(),
            settings,
            added_by: by.to_owned(),
            added_at: Utc::now(),
        };
        store
            .put(&stored)
            .await
            .map_err(|e| PeerError::Store(e.to_string()))?;
        self.insert(name, config, Some((stored.added_by, stored.added_at)))
            .map_err(PeerError::Invalid)?;
        let listed = self.list().into_iter().find(|p| p.name == name);
        listed.ok_or_else(|| PeerError::Store(format!("peer {name} was not kept")))
    }

    /// Removes the peer `name` an admin added; whether there was one. Refused for a peer
    /// of the config file.
    pub async fn remove_peer(&self, name: &str) -> Result<bool, PeerError> {
        if self.is_configured(name) {
            return Err(PeerError::Configured(name.to_owned()));
        }
        let removed = self
            .store()?
            .remove(name)
            .await
            .map_err(|e| PeerError::Store(e.to_string()))?;
        self.peers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        Ok(removed)
    }

    fn store(&self) -> Result<&Arc<dyn PeerStore>, PeerError> {
        self.store
            .as_ref()
            .ok_or_else(|| PeerError::Store("this server keeps no peers added at run time".into()))
    }

    fn is_configured(&self, name: &str) -> bool {
        let peers = self.peers.read().unwrap_or_else(PoisonError::into_inner);
        peers.get(name).is_some_and(|p| p.added.is_none())
    }

    /// Reads the peers added at run time from the store into the directory, unless it
    /// did so less than [`REFRESH_EVERY`] ago (`force`: whatever the time). A store that
    /// cannot be read leaves the peers as they were.
    pub(crate) async fn refresh(&self, force: bool) {
        let Some(store) = &self.store else {
            return;
        };
        {
            let mut refreshed = self
                .refreshed
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !force && refreshed.is_some_and(|at| at.elapsed() < REFRESH_EVERY) {
                return;
            }
            *refreshed = Some(Instant::now());
        }
        let stored = match store.list().await {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(%error, "the peers added at run time could not be read");
                return;
            }
        };
        for peer in &stored {
            let config: PeerConfig = match serde_json::from_value(peer.settings.clone()) {
                Ok(config) => config,
                Err(error) => {
                    tracing::warn!(peer = peer.name, %error, "a stored peer's settings are unreadable");
                    continue;
                }
            };
            let known = {
                let peers = self.peers.read().unwrap_or_else(PoisonError::into_inner);
                peers
                    .get(&peer.name)
                    .map(|p| p.added.is_none() || p.config == config)
            };
            // The config file's peer wins; an unchanged one keeps its cached card.
            if known == Some(true) {
                continue;
            }
            let added = Some((peer.added_by.clone(), peer.added_at));
            if let Err(error) = self.insert(&peer.name, config, added) {
                tracing::warn!(peer = peer.name, %error, "a stored peer cannot be used");
            }
        }
        let mut peers = self.peers.write().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|name, peer| peer.added.is_none() || stored.iter().any(|s| &s.name == name));
    }
}
