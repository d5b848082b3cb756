//! Approvals that never came: tasks of gated skills that waited longer than
//! `runtime.approval-timeout-s` are rejected in the background, at start and then every
//! quarter of the timeout (at most every minute, at least every 100 ms).

use std::time::Duration;

use fundi_runtime::RuntimeHandle;
use tokio_util::sync::CancellationToken;

/// Starts the sweeps; they stop with `stop`.
pub(crate) fn start(runtime: RuntimeHandle, timeout: Duration, stop: CancellationToken) {
    let every = (timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
    tokio::spawn(async move {
        loop {
            match runtime.expire_approvals(chrono::Utc::now()).await {
                Ok(0) => {}
                Ok(expired) => tracing::info!(expired, "approvals that never came: tasks rejected"),
                Err(error) => tracing::warn!(%error, "rejecting tasks whose approval expired"),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
        }
    });
}
