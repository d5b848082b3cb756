//! Retention (`store.retention`): ended tasks whose last change is older than it are
//! removed in the background, in batches that yield to requests and tasks, at start and
//! then every half of it (at most every minute).

use std::time::Duration;

use fundi_runtime::RuntimeHandle;
use tokio_util::sync::CancellationToken;

/// Starts the sweeps; they stop with `stop`.
pub(crate) fn start(runtime: RuntimeHandle, kept: Duration, stop: CancellationToken) {
    let every = (kept / 2).clamp(Duration::from_millis(100), Duration::from_secs(60));
    tokio::spawn(async move {
        loop {
            match runtime.remove_ended(kept).await {
                Ok(0) => {}
                Ok(removed) => tracing::info!(removed, "ended tasks past store.retention removed"),
                Err(error) => tracing::warn!(%error, "removing ended tasks past store.retention"),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
        }
    });
}
