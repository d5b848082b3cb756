//! Telemetry end to end: the real binary exports to an in-process OTLP/HTTP collector
//! (axum, decoding the OTLP protobuf messages), and serves /metrics.

#[path = "telemetry/collector.rs"]
mod collector;
mod common;

use std::sync::Mutex;
use std::time::Duration;

use collector::*;
use common::*;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{Value, json};

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
    let (hook, traceparents) = traceparent_webhook().await;
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
    let (hook, traceparents) = traceparent_webhook().await;
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
    let (hook, traceparents) = traceparent_webhook().await;
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
    let (hook, traceparents) = traceparent_webhook().await;
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
    let text = server.metrics().await;
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
                    // A histogram's series: its buckets, count and sum.
                    let base = ["_bucket", "_count", "_sum"]
                        .iter()
                        .find_map(|suffix| name.strip_suffix(suffix))
                        .unwrap_or(name);
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
