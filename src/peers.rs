//! The peers added at run time, read from the store every few seconds on a node of a
//! cluster (several nodes on one PostgreSQL schema), so that a peer an admin adds or
//! removes on another node is known to this one too (a delegation to it is checked
//! here, before anything is stored). A single process needs no reading: its peers change
//! only through its own directory.

use std::sync::Arc;
use std::time::Duration;

use fundi_peers::PeerDirectory;
use tokio_util::sync::CancellationToken;

/// How often the store is read.
const EVERY: Duration = Duration::from_secs(2);

/// Starts the reads; they stop with `stop`.
pub(crate) fn keep_fresh(peers: Arc<PeerDirectory>, stop: CancellationToken) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(EVERY) => {}
            }
            peers.listing().await;
        }
    });
}
