//! The gateway's metrics (through the global meter provider) and the request span.

use std::collections::HashMap;
use std::sync::OnceLock;

use axum::http::HeaderMap;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, UpDownCounter};
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub(crate) struct Metrics {
    requests: Counter<u64>,
    sse_subscribers: UpDownCounter<i64>,
    push_attempts: Counter<u64>,
    push_dead_letters: Counter<u64>,
    push_resting: UpDownCounter<i64>,
}

pub(crate) fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let meter = opentelemetry::global::meter(fundi_runtime::telemetry::METER_NAME);
        Metrics {
            requests: meter
                .u64_counter("fundi.rpc.requests")
                .with_description("JSON-RPC requests, by method and outcome")
                .with_unit("{request}")
                .build(),
            sse_subscribers: meter
                .i64_up_down_counter("fundi.sse.subscribers")
                .with_description("Open SSE streams")
                .with_unit("{stream}")
                .build(),
            push_attempts: meter
                .u64_counter("fundi.push.attempts")
                .with_description("Webhook delivery attempts, by outcome (delivered, failed)")
                .with_unit("{attempt}")
                .build(),
            push_dead_letters: meter
                .u64_counter("fundi.push.dead_letters")
                .with_description("Push configs whose delivery was given up")
                .with_unit("{config}")
                .build(),
            push_resting: meter
                .i64_up_down_counter("fundi.push.resting")
                .with_description(
                    "Push deliveries resting until their parked task wakes (no worker follows them)",
                )
                .with_unit("{config}")
                .build(),
        }
    })
}

impl Metrics {
    /// Exports the counters a dashboard reads as zero from the start, rather than as
    /// absent until their first event: push attempts by outcome, dead letters, resting
    /// deliveries and open SSE streams.
    pub(crate) fn announce(&self) {
        for outcome in ["delivered", "failed"] {
            self.push_attempts
                .add(0, &[KeyValue::new("outcome", outcome)]);
        }
        self.push_dead_letters.add(0, &[]);
        self.push_resting.add(0, &[]);
        self.sse_subscribers.add(0, &[]);
    }

    /// `change` more deliveries rest (fewer, when negative).
    pub(crate) fn push_resting(&self, change: i64) {
        if change != 0 {
            self.push_resting.add(change, &[]);
        }
    }

    /// `outcome`: `ok`, `error` (a JSON-RPC error) or `refused` (401/403/429...).
    pub(crate) fn request(&self, method: &'static str, outcome: &'static str) {
        self.requests.add(
            1,
            &[
                KeyValue::new("method", method),
                KeyValue::new("outcome", outcome),
            ],
        );
    }

    pub(crate) fn push_attempt(&self, delivered: bool) {
        let outcome = if delivered { "delivered" } else { "failed" };
        self.push_attempts
            .add(1, &[KeyValue::new("outcome", outcome)]);
    }

    pub(crate) fn push_dead_letter(&self) {
        self.push_dead_letters.add(1, &[]);
    }

    /// Counts an open SSE stream until the guard is dropped.
    pub(crate) fn sse_open(&self) -> SseGuard {
        self.sse_subscribers.add(1, &[]);
        SseGuard
    }
}

/// Held by an open SSE stream.
pub(crate) struct SseGuard;

impl Drop for SseGuard {
    fn drop(&mut self) {
        metrics().sse_subscribers.add(-1, &[]);
    }
}

/// The span of an admin request: always traced (its audit records are span events that
/// must reach the collector), under the caller's `traceparent` when it sends one.
pub(crate) fn admin_span(headers: &HeaderMap, path: &str) -> tracing::Span {
    let span = tracing::info_span!("admin.request", otel.kind = "server", url.path = path,);
    let carrier = trace_carrier(headers);
    if !carrier.is_empty() {
        let context = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
        let _ = span.set_parent(context);
    }
    span
}

/// The W3C trace context headers the caller sent.
fn trace_carrier(headers: &HeaderMap) -> HashMap<String, String> {
    ["traceparent", "tracestate"]
        .iter()
        .filter_map(|name| {
            let value = headers.get(*name)?.to_str().ok()?;
            Some(((*name).to_owned(), value.to_owned()))
        })
        .collect()
}

/// The span of one A2A request over `system` (`jsonrpc`, `http`, `grpc`): a child of the caller's W3C `traceparent` when it
/// sends one (ignored unless OpenTelemetry tracing is installed), untraced when it does
/// not (see `fundi_runtime::context_span!`).
pub(crate) fn request_span(headers: &HeaderMap, system: &'static str) -> tracing::Span {
    let carrier = trace_carrier(headers);
    let span = fundi_runtime::context_span!(
        carrier.contains_key("traceparent"),
        "a2a.request",
        otel.kind = "server",
        rpc.system = system,
        rpc.method = tracing::field::Empty,
        user = tracing::field::Empty,
    );
    if !carrier.is_empty() {
        let context = opentelemetry::global::get_text_map_propagator(|p| p.extract(&carrier));
        let _ = span.set_parent(context);
    }
    span
}
