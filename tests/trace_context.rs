//! W3C Trace Context across agents: a `traceparent` arriving on any binding (JSON-RPC is
//! in telemetry.rs; here HTTP+JSON and gRPC) is the parent of the request's span and so
//! of its task's, and a task that delegates to a peer sends its own `traceparent`, so
//! the peer's spans join the same trace.

#[path = "telemetry/collector.rs"]
mod collector;
mod common;

use a2a::{Message, Part, Role, SendMessageRequest, SendMessageResponse};
use a2a_client::transport::{ServiceParams, Transport};
use collector::*;
use common::*;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{Value, json};

/// The spans named `name` in trace `trace`.
fn in_trace(spans: &[Span], trace: &str, name: &str) -> Vec<Span> {
    spans
        .iter()
        .filter(|s| s.name == name && hex(&s.trace_id) == trace)
        .cloned()
        .collect()
}

/// The request span of `trace` under `caller`, and the task span under it.
async fn request_and_task(collector: &Collector, trace: &str, caller: &str) -> Span {
    let spans = collector
        .wait_for_spans("the request and its task", |spans| {
            let requests = in_trace(spans, trace, "a2a.request");
            requests.iter().any(|r| {
                hex(&r.parent_span_id) == caller
                    && in_trace(spans, trace, "task")
                        .iter()
                        .any(|t| t.parent_span_id == r.span_id)
            })
        })
        .await;
    in_trace(&spans, trace, "a2a.request")
        .into_iter()
        .find(|r| hex(&r.parent_span_id) == caller)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traceparent_on_http_json_or_grpc_parents_the_request_and_its_task() {
    let collector = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &env_for(&collector.url));

    // HTTP+JSON.
    let (trace, caller, traceparent) = caller_trace();
    let sent: Value = server
        .post_to("/message:send")
        .header("traceparent", traceparent)
        .json(&json!({"message": message("over rest", Value::Null)}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        sent["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    let request = request_and_task(&collector, &trace, &caller).await;
    assert_eq!(attr(&request, "rpc.system").as_deref(), Some("http"));
    assert_eq!(attr(&request, "rpc.method").as_deref(), Some("SendMessage"));

    // gRPC, through the official Rust client's transport: `traceparent` as metadata.
    let (trace, caller, traceparent) = caller_trace();
    let address = server.url.trim_start_matches("http://");
    let grpc = a2a_grpc::GrpcTransport::connect(address).await.unwrap();
    let mut params = ServiceParams::new();
    params.insert(
        "authorization".into(),
        vec![format!("Bearer {}", server.token)],
    );
    params.insert("x-fundi-user-token".into(), vec![server.user_token.clone()]);
    params.insert("traceparent".into(), vec![traceparent]);
    let request = SendMessageRequest {
        message: Message::new(Role::User, vec![Part::text("over grpc")]),
        configuration: None,
        metadata: None,
        tenant: None,
    };
    let answered = grpc.send_message(&params, &request).await.unwrap();
    assert!(
        matches!(answered, SendMessageResponse::Task(_)),
        "{answered:?}"
    );
    let request = request_and_task(&collector, &trace, &caller).await;
    assert_eq!(attr(&request, "rpc.system").as_deref(), Some("grpc"));
    assert_eq!(attr(&request, "rpc.method").as_deref(), Some("SendMessage"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegated_task_carries_its_trace_to_the_peer() {
    let collector = collector().await;
    let (b_dir, a_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let env = env_for(&collector.url);
    let b = start(b_dir.path(), &env);
    let mut a_env = env.clone();
    a_env.extend([
        ("FUNDI__PEERS__B__URL", b.url.clone()),
        ("FUNDI__PEERS__B__TOKEN", b.token.clone()),
        ("FUNDI__PEERS__B__USER_TOKEN", b.user_token.clone()),
        ("FUNDI__PEERS__B__ALLOW_PRIVATE_NETWORKS", "true".into()),
    ]);
    let a = start(a_dir.path(), &a_env);

    let (trace, caller, traceparent) = caller_trace();
    let mut sent = message(
        "traced",
        json!({"peer": "b", "skill": "echo", "data": {"steps": 1}}),
    );
    sent["metadata"] = json!({"skill": "delegate"});
    let answer: Value = a
        .post()
        .header("traceparent", traceparent)
        .json(&request("SendMessage", json!({"message": sent})))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answer}"
    );

    // A's request under the caller; B's request in the same trace, under one of A's
    // spans; B's task under B's request.
    let spans = collector
        .wait_for_spans("the peer's request in the delegator's trace", |spans| {
            let requests = in_trace(spans, &trace, "a2a.request");
            let a_spans: Vec<&Span> = spans.iter().filter(|s| hex(&s.trace_id) == trace).collect();
            requests.iter().any(|r| hex(&r.parent_span_id) == caller)
                && requests.iter().any(|r| {
                    hex(&r.parent_span_id) != caller
                        && a_spans.iter().any(|s| s.span_id == r.parent_span_id)
                        && in_trace(spans, &trace, "task")
                            .iter()
                            .any(|t| t.parent_span_id == r.span_id)
                })
        })
        .await;
    let requests = in_trace(&spans, &trace, "a2a.request");
    let on_b = requests
        .iter()
        .find(|r| hex(&r.parent_span_id) != caller)
        .unwrap();
    let parent = spans
        .iter()
        .find(|s| s.span_id == on_b.parent_span_id)
        .unwrap();
    assert_eq!(
        parent.name, "skill_run",
        "the delegating run is the peer call's parent"
    );
}
