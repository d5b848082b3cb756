//! Push workers started outside a request: for deliveries another node left (its
//! leases ran out), and again for this node's own once it holds the database after a
//! cut-off.

use std::sync::Arc;

use super::{Shared, Workers};

/// Resumes every unfinished delivery that is not dead-lettered (each is taken before
/// anything is sent, so another node's stay there; see `Workers::resume`).
pub(super) async fn restart_unfinished(shared: &Arc<Shared>, workers: &Workers) {
    match super::unfinished(shared, false).await {
        Ok(entries) => workers.resume(shared, entries),
        // The deliveries left are adopted as orphans once their leases run out.
        Err(error) => tracing::warn!(%error, "could not restart push deliveries"),
    }
}

/// Every `every`, starts workers for the deliveries no node holds (their node died),
/// until shutdown; each worker takes its delivery before it sends anything.
pub(super) fn adopt_every(shared: Arc<Shared>, workers: Workers, every: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = workers.shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            match shared.store.orphaned().await {
                Ok(orphaned) => {
                    for entry in orphaned {
                        let config = entry.config;
                        if !workers.is_running(&config.task_id, &config.id) {
                            tracing::info!(task_id = %config.task_id, config = %config.id, "taking over a push delivery another node left");
                            workers.start(&shared, config);
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "could not look for push deliveries other nodes left")
                }
            }
        }
    });
}
