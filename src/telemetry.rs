//! Logging and OpenTelemetry for `fundi serve`. The libraries only use `tracing` and the
//! OpenTelemetry API; this installs the SDK: a tracer provider (always, so that a
//! caller's trace context reaches stored tasks and webhooks; exporting over OTLP/HTTP
//! when `telemetry.otlp-endpoint` is set), a meter provider with a Prometheus reader for
//! `/metrics` and an OTLP reader, and the W3C trace-context propagator.

use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use serde::{Deserialize, Serialize};
use tracing_subscriber::filter::{self, FilterExt};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// `[telemetry]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Base URL of an OTLP/HTTP collector (`/v1/traces` and `/v1/metrics` are added).
    /// Unset: nothing is exported over OTLP. Default: unset.
    pub otlp_endpoint: Option<String>,
    /// How often metrics are pushed over OTLP, in ms. Default: 10000.
    pub metrics_interval_ms: u64,
    /// Longest spans wait before a batch is exported, in ms. Default: 2000.
    pub trace_batch_delay_ms: u64,
    /// Longest one OTLP export may take, in ms. Default: 5000.
    pub export_timeout_ms: u64,
    /// Which spans are exported (a tracing filter). Default: `info`, and the runs'
    /// progress events (`fundi_runtime::progress=debug`).
    pub trace_filter: String,
    /// Serve Prometheus metrics at `/metrics`. Default: true.
    pub prometheus: bool,
    /// `service.name` of the resource. Default: fundi.
    pub service_name: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            metrics_interval_ms: 10_000,
            trace_batch_delay_ms: 2_000,
            export_timeout_ms: 5_000,
            // A run's progress events are debug (no console line per step), yet kept on
            // its exported span.
            trace_filter: format!("info,{}=debug", fundi_runtime::telemetry::PROGRESS_TARGET),
            prometheus: true,
            service_name: "fundi".into(),
        }
    }
}

impl TelemetryConfig {
    /// Checks what serde cannot, naming the field.
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(url) = &self.otlp_endpoint
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            anyhow::bail!("telemetry.otlp-endpoint must be an http(s) URL, got {url:?}");
        }
        for (name, value) in [
            ("metrics-interval-ms", self.metrics_interval_ms),
            ("trace-batch-delay-ms", self.trace_batch_delay_ms),
            ("export-timeout-ms", self.export_timeout_ms),
        ] {
            if value == 0 {
                anyhow::bail!("telemetry.{name} must be at least 1");
            }
        }
        EnvFilter::try_new(&self.trace_filter).context("telemetry.trace-filter")?;
        Ok(())
    }
}

/// How log lines are written (`log.format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines, coloured only when stderr is a terminal.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Third-party log lines that mislead an operator or carry client input, kept out
/// unless the log filter names their target: html5ever warns "foster parenting not
/// implemented" on every table with stray content in a page an audit parses (the audit
/// handles such pages); the MCP SDK logs every client's whole `clientInfo` (a megabyte
/// name is a megabyte of log) and every session id at INFO.
const QUIETED: [&str; 2] = ["html5ever=error", "rmcp=warn"];

/// A filter of `directives`, with the [`QUIETED`] targets they do not name kept quiet.
fn quieted(directives: &str) -> anyhow::Result<EnvFilter> {
    let mut filter = EnvFilter::try_new(directives)?;
    for quieted in QUIETED {
        let target = quieted.split('=').next().unwrap_or_default();
        if !directives.contains(target) {
            filter = filter.add_directive(quieted.parse().context("a quieted target")?);
        }
    }
    Ok(filter)
}

/// The installed providers, to flush and stop at exit.
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
    registry: Option<prometheus::Registry>,
    logs: Logs,
}

/// The log writer's thread: dropping this writes the lines still queued and ends it, so
/// it is dropped last (lines logged after that are lost).
pub struct Logs {
    _writer: tracing_appender::non_blocking::WorkerGuard,
}

/// Installs logging (`log_filter`, or `RUST_LOG`) and OpenTelemetry. Runs on the
/// blocking pool: the OTLP exporters build blocking HTTP clients.
pub async fn init(
    config: TelemetryConfig,
    log_filter: String,
    log_format: LogFormat,
) -> anyhow::Result<Telemetry> {
    tokio::task::spawn_blocking(move || install(&config, &log_filter, log_format))
        .await
        .context("installing telemetry")?
}

/// The spans that carry trace context: the request (it adopts the caller's
/// `traceparent`, which the task stores), the task, and webhook deliveries (they send a
/// `traceparent` onward).
const CONTEXT_SPANS: [&str; 3] = ["a2a.request", "task", "push.delivery"];

fn install(
    config: &TelemetryConfig,
    log_filter: &str,
    log_format: LogFormat,
) -> anyhow::Result<Telemetry> {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .with_attributes([
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("service.instance.id", uuid::Uuid::new_v4().to_string()),
        ])
        .build();
    let timeout = Duration::from_millis(config.export_timeout_ms);
    let endpoint = config
        .otlp_endpoint
        .as_deref()
        .map(|e| e.trim_end_matches('/').to_owned());

    let mut tracer = SdkTracerProvider::builder().with_resource(resource.clone());
    if endpoint.is_none() {
        // Nothing is exported: record spans only when a caller's sampled trace asks for
        // it, and otherwise just carry trace ids (to stored tasks and webhooks) cheaply.
        tracer = tracer.with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOff)));
    }
    if let Some(endpoint) = &endpoint {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(format!("{endpoint}/v1/traces"))
            .with_timeout(timeout)
            .build()
            .context("telemetry: the OTLP span exporter")?;
        let batch = BatchConfigBuilder::default()
            .with_scheduled_delay(Duration::from_millis(config.trace_batch_delay_ms))
            .build();
        tracer = tracer.with_span_processor(
            BatchSpanProcessor::builder(exporter)
                .with_batch_config(batch)
                .build(),
        );
    }
    let tracer = tracer.build();
    opentelemetry::global::set_tracer_provider(tracer.clone());

    let mut meter = SdkMeterProvider::builder().with_resource(resource);
    let registry = config.prometheus.then(prometheus::Registry::new);
    if let Some(registry) = &registry {
        let exporter = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
            .context("telemetry: the Prometheus exporter")?;
        meter = meter.with_reader(exporter);
    }
    if let Some(endpoint) = &endpoint {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_endpoint(format!("{endpoint}/v1/metrics"))
            .with_timeout(timeout)
            .build()
            .context("telemetry: the OTLP metric exporter")?;
        let reader = PeriodicReader::builder(exporter)
            .with_interval(Duration::from_millis(config.metrics_interval_ms))
            .build();
        meter = meter.with_reader(reader);
    }
    let meter = meter.build();
    opentelemetry::global::set_meter_provider(meter.clone());

    let (directives, what) = match std::env::var("RUST_LOG") {
        Ok(from_env) => (from_env, "RUST_LOG"),
        Err(_) => (log_filter.to_owned(), "log.filter"),
    };
    let log_filter = quieted(&directives).context(what)?;
    // Not lossy: when the queue is full (a stderr far behind), loggers wait rather than
    // lines being dropped.
    let (stderr, logs_guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("fundi-log")
        .finish(std::io::stderr());
    let logs = match log_format {
        LogFormat::Text => {
            use std::io::IsTerminal;
            let colour = std::io::stderr().is_terminal();
            let layer = tracing_subscriber::fmt::layer().with_ansi(colour);
            layer.with_writer(stderr).with_filter(log_filter).boxed()
        }
        LogFormat::Json => {
            let layer = tracing_subscriber::fmt::layer().json();
            layer.with_writer(stderr).with_filter(log_filter).boxed()
        }
    };
    let exported = quieted(&config.trace_filter).context("telemetry.trace-filter")?;
    // With nothing exported, only the spans that carry a trace onward (from the caller
    // to the stored task and on to webhooks) are worth their cost: the others (store
    // commits, skill runs) cost about a fifth of a short task's CPU time, and so do
    // carriers with no trace to carry (a request without a `traceparent`, and its task
    // and deliveries: see `fundi_runtime::context_span!`), about a tenth.
    let exporting = endpoint.is_some();
    // The hint keeps the combined filter's level hint (`log` records from sled are
    // dropped at the `log` macro only while the hint is known).
    let carriers = filter::filter_fn(move |meta| {
        exporting
            || !meta.is_span()
            || (CONTEXT_SPANS.contains(&meta.name())
                && !meta
                    .target()
                    .ends_with(fundi_runtime::telemetry::UNTRACED_TARGET_SUFFIX))
    })
    .with_max_level_hint(filter::LevelFilter::TRACE);
    let spans = tracing_opentelemetry::layer()
        .with_tracer(tracer.tracer("fundi"))
        .with_filter(exported.and(carriers));
    tracing_subscriber::registry()
        .with(logs)
        .with(spans)
        .try_init()
        .map_err(|e| anyhow::anyhow!("logging: {e}"))?;
    Ok(Telemetry {
        tracer,
        meter,
        registry,
        logs: Logs {
            _writer: logs_guard,
        },
    })
}

impl Telemetry {
    /// `/metrics` in the Prometheus text format, when enabled (public, like `/health`).
    pub fn routes(&self) -> Router {
        let Some(registry) = self.registry.clone() else {
            return Router::new();
        };
        Router::new().route(
            "/metrics",
            get(move || {
                let registry = registry.clone();
                async move {
                    let text = prometheus::TextEncoder::new()
                        .encode_to_string(&registry.gather())
                        .unwrap_or_default();
                    ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response()
                }
            }),
        )
    }

    /// Exports what is pending and stops the providers, within `limit`; returns the log
    /// writer, for the caller to drop last.
    pub async fn shutdown(self, limit: Duration) -> Logs {
        let Telemetry {
            tracer,
            meter,
            logs,
            ..
        } = self;
        let stop = tokio::task::spawn_blocking(move || {
            if let Err(error) = tracer.shutdown_with_timeout(limit) {
                tracing::debug!(%error, "tracer provider shutdown");
            }
            if let Err(error) = meter.shutdown_with_timeout(limit) {
                tracing::debug!(%error, "meter provider shutdown");
            }
        });
        if tokio::time::timeout(limit + Duration::from_secs(1), stop)
            .await
            .is_err()
        {
            tracing::warn!("telemetry did not stop in time");
        }
        logs
    }
}
