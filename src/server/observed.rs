//! Serving with logging and telemetry installed from the config, as `fundi serve` does:
//! one builder call for an embedder ([`ServerBuilder::with_telemetry`]).

use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{ServerBuilder, ServerError};
use crate::telemetry;

/// How long the last spans, metrics and log lines get to leave at the end.
const FLUSH: Duration = Duration::from_secs(3);

impl ServerBuilder {
    /// Installs, when serving, what `fundi serve` installs from the config: log lines on
    /// stderr (`[log]` filter and format), OpenTelemetry traces and metrics over OTLP
    /// (`[telemetry] otlp-endpoint`), and Prometheus text at `/metrics`
    /// (`telemetry.prometheus`); flushed when serving ends. It sets the process's global
    /// log subscriber and meter provider, so a process calls it for one server only.
    pub fn with_telemetry(mut self) -> Self {
        self.telemetry = true;
        self
    }

    /// Serves A2A on `listener` until `shutdown` is canceled; then stops taking
    /// requests, gives running tasks `server.shutdown-grace-ms`, leaves the rest stored
    /// for recovery, and flushes the store (and, with [`ServerBuilder::with_telemetry`],
    /// the telemetry).
    pub async fn serve(
        mut self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> Result<(), ServerError> {
        if !self.telemetry {
            return self.serve_configured(listener, shutdown).await;
        }
        let config = &self.config;
        let installed = telemetry::init(
            config.telemetry.clone(),
            config.log.filter.clone(),
            config.log.format,
        )
        .await
        .map_err(|e| ServerError::Config(format!("telemetry: {e:#}")))?;
        self.routes = self.routes.merge(installed.routes());
        let served = self.serve_configured(listener, shutdown).await;
        drop(installed.shutdown(FLUSH).await);
        served
    }
}
