//! The signals that stop a server: what `fundi serve` waits on, public so that an
//! embedder stops the same way.

/// A future that resolves when the process is asked to stop: SIGTERM or SIGINT on Unix
/// (Ctrl-C elsewhere). Cancel the `CancellationToken` given to
/// [`crate::ServerBuilder::serve`] when it does, for a graceful stop.
pub fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}
