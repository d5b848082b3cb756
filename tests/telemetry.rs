//! Telemetry end to end: the real binary exports to an in-process OTLP/HTTP collector
//! (axum, decoding the OTLP protobuf messages), and serves /metrics.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use common::*;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{Value, json};

/// One metric data point: name, attributes, value (a sum, a gauge's value or a
/// histogram's count).
type Point = (String, Vec<(String, String)>, f64);

/// What the collector received.
#[derive(Clone, Default)]
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Span>>>,
    /// Resource attributes seen on traces.
    resource: Arc<Mutex<Vec<KeyValue>>>,
    /// Every metric data point received.
    points: Arc<Mutex<Vec<Point>>>,
}

async fn collector() -> Collector {
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

fn text_attrs(attributes: &[KeyValue]) -> Vec<(String, String)> {
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

fn data_points(data: Option<metric::Data>) -> Vec<(Vec<(String, String)>, f64)> {
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

fn attr(span: &Span, key: &str) -> Option<String> {
    text_attrs(&span.attributes)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Collector {
    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    async fn wait_for_spans(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
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
    fn latest(&self, name: &str, with: &[(&str, &str)]) -> Option<f64> {
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

    async fn wait_for_metric(&self, name: &str, with: &[(&str, &str)], done: impl Fn(f64) -> bool) {
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

fn env_for(collector_url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("FUNDI__TELEMETRY__OTLP_ENDPOINT", collector_url.to_owned()),
        ("FUNDI__TELEMETRY__TRACE_BATCH_DELAY_MS", "100".into()),
        ("FUNDI__TELEMETRY__METRICS_INTERVAL_MS", "200".into()),
        ("FUNDI__TELEMETRY__EXPORT_TIMEOUT_MS", "1000".into()),
        ("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]".into()),
    ]
}

fn start(dir: &std::path::Path, env: &[(&'static str, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start(dir, &env)
}

/// A collector, and a server exporting to it in a fresh data directory (kept alive
/// by the caller).
async fn start_exporting() -> (Collector, tempfile::TempDir, Server) {
    let collector = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &env_for(&collector.url));
    (collector, dir, server)
}

/// A server exporting nothing, allowed to deliver webhooks to loopback.
fn start_without_collector(dir: &std::path::Path) -> Server {
    start(
        dir,
        &[("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]".into())],
    )
}

/// A webhook that records the `traceparent` of each delivery.
async fn webhook() -> (String, Arc<Mutex<Vec<String>>>) {
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

/// A blocking echo of two steps, with a webhook, under a new caller trace; returns the
/// trace id and the caller's span id.
async fn send_traced(server: &Server, hook: &str) -> (String, String) {
    let trace = format!("{:032x}", rand_u128());
    let caller_span = format!("{:016x}", rand_u128() as u64 | 1);
    let response = server
        .post()
        .header("traceparent", format!("00-{trace}-{caller_span}-01"))
        .json(&request(
            "SendMessage",
            json!({"message": message("traced", json!({"steps": 2})),
                   "configuration": {"taskPushNotificationConfig": {"url": hook}}}),
        ))
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
    (trace, caller_span)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_spans_form_one_tree_under_the_callers_trace() {
    let (collector, _dir, server) = start_exporting().await;
    let (hook, traceparents) = webhook().await;
    let (trace, caller_span) = send_traced(&server, &hook).await;

    let in_trace = |spans: &[Span], name: &str| -> Vec<Span> {
        spans
            .iter()
            .filter(|s| s.name == name && hex(&s.trace_id) == trace)
            .cloned()
            .collect()
    };
    let spans = collector
        .wait_for_spans("the task's spans", |spans| {
            [
                "a2a.request",
                "task",
                "skill_run",
                "store.commit",
                "push.delivery",
            ]
            .iter()
            .all(|name| !in_trace(spans, name).is_empty())
                && in_trace(spans, "push.delivery").len() >= 4
        })
        .await;
    let request_span = &in_trace(&spans, "a2a.request")[0];
    assert_eq!(
        hex(&request_span.parent_span_id),
        caller_span,
        "the caller's span is the parent"
    );
    assert_eq!(
        attr(request_span, "rpc.method").as_deref(),
        Some("SendMessage")
    );
    let task = &in_trace(&spans, "task")[0];
    assert_eq!(
        task.parent_span_id, request_span.span_id,
        "task under the request"
    );
    assert_eq!(attr(task, "skill").as_deref(), Some("echo"));
    let run = &in_trace(&spans, "skill_run")[0];
    assert_eq!(run.parent_span_id, task.span_id, "the run under the task");
    let progress: Vec<_> = run.events.iter().filter(|e| e.name == "progress").collect();
    assert_eq!(
        progress.len(),
        2,
        "one span event per progress report: {:?}",
        run.events
    );
    let commits = in_trace(&spans, "store.commit");
    assert!(
        commits
            .iter()
            .any(|c| c.parent_span_id == request_span.span_id),
        "creation commit"
    );
    assert!(
        commits.iter().any(|c| c.parent_span_id == task.span_id),
        "the actor's commits"
    );
    for delivery in in_trace(&spans, "push.delivery") {
        assert_eq!(
            delivery.parent_span_id, request_span.span_id,
            "deliveries join the task's trace"
        );
    }
    // The webhook got the trace onward.
    let sent = traceparents.lock().unwrap().clone();
    assert!(!sent.is_empty());
    assert!(
        sent.iter()
            .all(|t| t.split('-').nth(1) == Some(trace.as_str())),
        "{sent:?}"
    );
    // The resource names the service, its version and this instance.
    let resource: Vec<String> = text_attrs(&collector.resource.lock().unwrap())
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    for key in ["service.name", "service.version", "service.instance.id"] {
        assert!(
            resource.iter().any(|k| k == key),
            "{key} missing from {resource:?}"
        );
    }
}

/// With nothing exported the server keeps only the spans that carry context, and the
/// caller's trace still reaches the webhooks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_collector_the_callers_trace_still_reaches_webhooks() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_without_collector(dir.path());
    let (hook, traceparents) = webhook().await;
    let (trace, caller_span) = send_traced(&server, &hook).await;
    // created, working, two progress notes, the artifact, completed
    let sent = deliveries(&traceparents, 6).await;
    assert!(
        sent.iter()
            .all(|t| t.split('-').nth(1) == Some(trace.as_str())
                && t.split('-').nth(2) != Some(caller_span.as_str())),
        "{sent:?}"
    );
}

/// A blocking echo of two steps with a webhook, sent without a `traceparent`; returns
/// the task's id.
async fn send_untraced(server: &Server, hook: &str) -> String {
    let body = ok(
        server,
        "SendMessage",
        json!({"message": message("untraced", json!({"steps": 2})),
               "configuration": {"taskPushNotificationConfig": {"url": hook}}}),
    )
    .await;
    assert_eq!(
        body["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
    body["task"]["id"].as_str().unwrap().to_owned()
}

/// Waits for `n` deliveries to the webhook and returns their `traceparent`s.
async fn deliveries(traceparents: &Mutex<Vec<String>>, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while traceparents.lock().unwrap().len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "deliveries: {:?}",
            traceparents.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    traceparents.lock().unwrap().clone()
}

/// With nothing exported, a request without a `traceparent` starts no trace: its task
/// stores none, and webhooks get the task's own id as trace id (the documented fallback
/// without OpenTelemetry), not a trace nobody recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_collector_an_untraced_request_starts_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_without_collector(dir.path());
    let (hook, traceparents) = webhook().await;
    let task_id = send_untraced(&server, &hook).await;
    let own = uuid::Uuid::parse_str(&task_id)
        .unwrap()
        .simple()
        .to_string();
    // created, working, two progress notes, the artifact, completed
    let sent = deliveries(&traceparents, 6).await;
    assert!(
        sent.iter()
            .all(|t| t.split('-').nth(1) == Some(own.as_str())),
        "{sent:?}"
    );
}

/// Exporting, a request without a `traceparent` is the root of its task's trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exporting_an_untraced_request_roots_its_tasks_trace() {
    let (collector, _dir, server) = start_exporting().await;
    let (hook, traceparents) = webhook().await;
    let task_id = send_untraced(&server, &hook).await;
    let is_task = |s: &Span| s.name == "task" && attr(s, "task_id").as_deref() == Some(&task_id);
    // The two spans may arrive in different export batches: wait for both.
    let task_and_request = |spans: &[Span]| {
        let task = spans.iter().find(|s| is_task(s))?;
        let request = spans
            .iter()
            .find(|s| s.name == "a2a.request" && s.span_id == task.parent_span_id)?;
        Some((task.clone(), request.clone()))
    };
    let spans = collector
        .wait_for_spans("the untraced task's span under its request", |spans| {
            task_and_request(spans).is_some()
        })
        .await;
    let (task, request) = task_and_request(&spans).unwrap();
    assert!(request.parent_span_id.is_empty(), "the request is a root");
    let trace = hex(&task.trace_id);
    let sent = deliveries(&traceparents, 6).await;
    assert!(
        sent.iter()
            .all(|t| t.split('-').nth(1) == Some(trace.as_str())),
        "webhooks get the exported trace: {sent:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_arrive_with_their_documented_names_and_values() {
    let (collector, _dir, server) = start_exporting().await;
    for text in ["one", "two"] {
        let done = ok(
            &server,
            "SendMessage",
            json!({"message": message(text, json!({"steps": 1}))}),
        )
        .await;
        assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    }
    let refused = rpc(
        &server,
        "SendMessage",
        json!({"message": {"messageId": "bad", "role": "ROLE_USER",
                           "parts": [{"text": "x"}, {"data": {"steps": -1}}]}}),
    )
    .await;
    // echo's input schema refuses a negative step count: no task is made.
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let echo = [("skill", "echo")];
    collector
        .wait_for_metric("fundi.task.submissions", &echo, |v| v == 2.0)
        .await;
    collector
        .wait_for_metric(
            "fundi.tasks.finished",
            &[("skill", "echo"), ("state", "completed")],
            |v| v == 2.0,
        )
        .await;
    collector
        .wait_for_metric(
            "fundi.task.duration",
            &[("outcome", "completed")],
            |count| count == 2.0,
        )
        .await;
    collector
        // Each send: stored before its run starts, then what its run did in the one
        // poll its actor gave it (the posted step with the completion), in one commit.
        .wait_for_metric("fundi.store.commit.duration", &[], |count| count == 4.0)
        .await;
    collector
        .wait_for_metric(
            "fundi.rpc.requests",
            &[("method", "SendMessage"), ("outcome", "ok")],
            |v| v == 2.0,
        )
        .await;
    collector
        .wait_for_metric(
            "fundi.rpc.requests",
            &[("method", "SendMessage"), ("outcome", "error")],
            |v| v == 1.0,
        )
        .await;
    collector
        .wait_for_metric("fundi.tasks.active", &[("state", "working")], |v| v == 0.0)
        .await;
    collector
        .wait_for_metric("fundi.task_actors.live", &[], |v| v == 0.0)
        .await;
    // Exported at zero from the start, and still zero: a refusal is not a failure.
    for source in ["skill", "panic", "runtime", "restart"] {
        assert_eq!(
            collector.latest("fundi.failures", &[("source", source)]),
            Some(0.0),
            "a refusal is not a failure ({source})"
        );
    }

    // The same, scraped in the Prometheus format.
    let text = reqwest::get(format!("{}/metrics", server.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for name in [
        "fundi_task_submissions_total",
        "fundi_tasks_finished_total",
        "fundi_task_duration_seconds_bucket",
        "fundi_store_commit_duration_seconds_count",
        "fundi_rpc_requests_total",
        "fundi_task_actors_live",
    ] {
        assert!(text.contains(name), "{name} missing from /metrics:\n{text}");
    }
    assert!(
        text.contains("fundi_task_submissions_total{otel_scope_name=\"fundi\",skill=\"echo\"} 2")
            || text.contains(
                "fundi_task_submissions_total{skill=\"echo\",otel_scope_name=\"fundi\"} 2"
            ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_task_continues_its_original_trace() {
    let collector = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let env = env_for(&collector.url);
    let server = start(dir.path(), &env);
    let trace = format!("{:032x}", rand_u128());
    let response = server
        .post()
        .header("traceparent", format!("00-{trace}-00000000000000aa-01"))
        .json(&request(
            "SendMessage",
            json!({"message": message("long", json!({"steps": 40, "delayMs": 25})),
                   "configuration": {"returnImmediately": true}}),
        ))
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    let id = body["result"]["task"]["id"].as_str().unwrap().to_owned();
    poll_task(&server, &id, |t| state(t) == "TASK_STATE_WORKING").await;
    server.kill();

    let server = start(dir.path(), &env);
    poll_task(&server, &id, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let spans = collector
        .wait_for_spans("the resumed run and its task", |spans| {
            let in_trace = |name: &str| {
                spans.iter().any(|s| {
                    s.name == name
                        && hex(&s.trace_id) == trace
                        && (name != "skill_run" || attr(s, "resumed").as_deref() == Some("true"))
                })
            };
            in_trace("skill_run") && in_trace("task")
        })
        .await;
    let task = spans
        .iter()
        .find(|s| s.name == "task" && hex(&s.trace_id) == trace)
        .expect("the recovered task's span in the original trace");
    assert_ne!(hex(&task.parent_span_id), "0000000000000000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_collector_down_tasks_run_and_the_server_stops_as_before() {
    // A port nobody listens on.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &env_for(&closed));
    for i in 0..5 {
        let done = ok(
            &server,
            "SendMessage",
            json!({"message": message(&format!("m{i}"), json!({"steps": 3}))}),
        )
        .await;
        assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    }
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_change_is_exported_as_an_audit_event_of_its_span() {
    let (collector, _dir, server) = start_exporting().await;
    let created = reqwest::Client::new()
        .post(format!("{}/admin/schedules", server.url))
        .bearer_auth(&server.token)
        .header("X-Fundi-User-Token", &server.user_token)
        .json(&json!({"skill": "echo", "cron": "0 3 * * *", "text": "nightly"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let schedule: Value = created.json().await.unwrap();
    let id = schedule["id"].as_str().unwrap().to_owned();
    let audited = |spans: &[Span]| {
        spans.iter().any(|s| {
            s.name == "admin.request"
                && s.events.iter().any(|e| {
                    let attrs = text_attrs(&e.attributes);
                    let has = |k: &str, v: &str| attrs.iter().any(|(ak, av)| ak == k && av == v);
                    e.name == "audit"
                        && has("action", "schedule.create")
                        && has("audit.target", &id)
                        && has("user", "local")
                })
        })
    };
    collector
        .wait_for_spans("the schedule's creation as an audit event", audited)
        .await;
}

fn rand_u128() -> u128 {
    let a = uuid_like();
    let b = uuid_like();
    (a << 64) | b
}

/// Randomness without another dependency: the clock and a counter through a hash.
fn uuid_like() -> u128 {
    use std::hash::{BuildHasher, RandomState};
    u128::from(RandomState::new().hash_one(std::time::SystemTime::now()))
}

#[test]
fn the_dashboard_uses_only_documented_metrics() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("config/dashboards/fundi.json")).unwrap(),
    )
    .unwrap();
    let docs = std::fs::read_to_string(root.join("docs/observability.md")).unwrap();
    let mut checked = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if let Some(name) = word.strip_prefix("fundi_") {
                    let base = name.trim_end_matches("_bucket");
                    assert!(
                        docs.contains(&format!("`fundi_{base}`")),
                        "fundi_{base} (in {:?}) is not documented",
                        panel["title"]
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 14, "only {checked} metric references found");
}
