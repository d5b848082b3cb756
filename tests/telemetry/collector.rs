//! An in-process OTLP/HTTP collector (axum, decoding the OTLP protobuf messages) that
//! the real binary exports to, and servers started to export there.
#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use crate::common::{DEADLINE, Server};

/// One metric data point: name, attributes, value (a sum, a gauge's value or a
/// histogram's count).
pub type Point = (String, Vec<(String, String)>, f64);

/// What the collector received.
#[derive(Clone, Default)]
pub struct Collector {
    pub url: String,
    pub spans: Arc<Mutex<Vec<Span>>>,
    /// Resource attributes seen on traces.
    pub resource: Arc<Mutex<Vec<KeyValue>>>,
    /// Every metric data point received.
    pub points: Arc<Mutex<Vec<Point>>>,
}

pub async fn collector() -> Collector {
    let mut collector = Collector::default();
    let traces = collector.clone();
    let metrics = collector.clone();
    let router = Router::new()
        .route(
            "/v1/traces",
            post(move |body: Bytes| {
                let c = traces.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body).expect("OTLP traces");
                    for resource_spans in request.resource_spans {
                        if let Some(resource) = resource_spans.resource {
                            *c.resource.lock().unwrap() = resource.attributes;
                        }
                        for scope in resource_spans.scope_spans {
                            c.spans.lock().unwrap().extend(scope.spans);
                        }
                    }
                    ""
                }
            }),
        )
        .route(
            "/v1/metrics",
            post(move |body: Bytes| {
                let c = metrics.clone();
                async move {
                    let request = ExportMetricsServiceRequest::decode(body).expect("OTLP metrics");
                    let mut points = c.points.lock().unwrap();
                    for resource in request.resource_metrics {
                        for scope in resource.scope_metrics {
                            for m in scope.metrics {
                                for (attrs, value) in data_points(m.data) {
                                    points.push((m.name.clone(), attrs, value));
                                }
                            }
                        }
                    }
                    ""
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    collector.url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    collector
}

pub fn text_attrs(attributes: &[KeyValue]) -> Vec<(String, String)> {
    attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::DoubleValue(d)) => d.to_string(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                _ => String::new(),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

pub fn data_points(data: Option<metric::Data>) -> Vec<(Vec<(String, String)>, f64)> {
    let number = |v: Option<number_data_point::Value>| match v {
        Some(number_data_point::Value::AsInt(i)) => i as f64,
        Some(number_data_point::Value::AsDouble(d)) => d,
        None => 0.0,
    };
    match data {
        Some(metric::Data::Sum(sum)) => sum
            .data_points
            .into_iter()
            .map(|p| (text_attrs(&p.attributes), number(p.value)))
            .collect(),
        Some(metric::Data::Gauge(gauge)) => gauge
            .data_points
            .into_iter()
            .map(|p| (text_attrs(&p.attributes), number(p.value)))
            .collect(),
        Some(metric::Data::Histogram(h)) => h
            .data_points
            .into_iter()
            .map(|p| (text_attrs(&p.attributes), p.count as f64))
            .collect(),
        _ => Vec::new(),
    }
}

pub fn attr(span: &Span, key: &str) -> Option<String> {
    text_attrs(&span.attributes)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Collector {
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    pub async fn wait_for_spans(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
            assert!(
                Instant::now() < deadline,
                "{what}: never exported; got {names:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The latest value of `name` whose attributes include `with`.
    pub fn latest(&self, name: &str, with: &[(&str, &str)]) -> Option<f64> {
        self.points
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(n, attrs, _)| {
                n == name
                    && with
                        .iter()
                        .all(|(k, v)| attrs.iter().any(|(ak, av)| ak == k && av == v))
            })
            .map(|(_, _, value)| *value)
    }

    pub async fn wait_for_metric(
        &self,
        name: &str,
        with: &[(&str, &str)],
        done: impl Fn(f64) -> bool,
    ) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if self.latest(name, with).is_some_and(&done) {
                return;
            }
            let value = self.latest(name, with);
            assert!(
                Instant::now() < deadline,
                "metric {name} {with:?}: latest {value:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

pub fn env_for(collector_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("FUNDI__TELEMETRY__OTLP_ENDPOINT", collector_url.to_owned()),
        ("FUNDI__TELEMETRY__TRACE_BATCH_DELAY_MS", "100".into()),
        ("FUNDI__TELEMETRY__METRICS_INTERVAL_MS", "200".into()),
        ("FUNDI__TELEMETRY__EXPORT_TIMEOUT_MS", "1000".into()),
        ("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]".into()),
    ]
}

pub fn start(dir: &std::path::Path, env: &[(&'static str, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start(dir, &env)
}

/// A collector, and a server exporting to it in a fresh data directory (kept alive
/// by the caller).
pub async fn start_exporting() -> (Collector, tempfile::TempDir, Server) {
    let collector = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &env_for(&collector.url));
    (collector, dir, server)
}

/// A server exporting nothing, allowed to deliver webhooks to loopback.
pub fn start_without_collector(dir: &std::path::Path) -> Server {
    start(
        dir,
        &[("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]".into())],
    )
}

/// A webhook that records the `traceparent` of each delivery.
pub async fn traceparent_webhook() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let router = Router::new().route(
        "/hook",
        post(move |headers: axum::http::HeaderMap| {
            let record = record.clone();
            async move {
                let parent = headers
                    .get("traceparent")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                record.lock().unwrap().push(parent);
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, seen)
}

pub fn rand_u128() -> u128 {
    let a = uuid_like();
    let b = uuid_like();
    (a << 64) | b
}

/// Randomness without another dependency: the clock and a counter through a hash.
pub fn uuid_like() -> u128 {
    use std::hash::{BuildHasher, RandomState};
    u128::from(RandomState::new().hash_one(std::time::SystemTime::now()))
}

/// A new caller trace: its trace id, the caller's span id, and the `traceparent` naming
/// both.
pub fn caller_trace() -> (String, String, String) {
    let trace = format!("{:032x}", rand_u128());
    let span = format!("{:016x}", rand_u128() as u64 | 1);
    let header = format!("00-{trace}-{span}-01");
    (trace, span, header)
}
