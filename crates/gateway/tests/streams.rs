//! SSE: framing, ordering, resumption with Last-Event-ID, errors as SSE events,
//! keep-alives, and streams ending on shutdown.

mod common;

use std::time::Duration;

use axum::body::Body;
use common::*;
use fundi_gateway::GatewayConfig;
use http_body_util::BodyExt;
use serde_json::{Value, json};

fn result(data: &Value) -> &Value {
    &data["result"]
}

#[tokio::test]
async fn a_streamed_send_starts_with_the_task_and_ends_after_the_terminal_event() {
    let gw = gateway().await;
    let (content_type, events) = gw
        .stream(
            "SendStreamingMessage",
            json!({"message": message("s", json!({"steps": 3}))}),
            None,
        )
        .await;
    assert_eq!(content_type, "text/event-stream");
    assert!(
        events
            .iter()
            .all(|(_, e)| e["id"] == 42 && e["jsonrpc"] == "2.0")
    );
    let first = result(&events[0].1);
    assert_eq!(first["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let ids: Vec<u64> = events
        .iter()
        .map(|(id, _)| id.expect("every event has an id"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");
    let last = result(&events.last().unwrap().1);
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let chunks: Vec<&Value> = events
        .iter()
        .filter_map(|(_, e)| result(e).get("artifactUpdate"))
        .collect();
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[1]["append"], true);
    assert_eq!(chunks[1]["lastChunk"], true);
    assert!(
        events.iter().all(|(_, e)| result(e).get("kind").is_none()),
        "no v0.3 kind in v1.0"
    );
}

#[tokio::test]
async fn streams_end_at_input_required() {
    let gw = gateway().await;
    let (_, events) = gw
        .stream(
            "SendStreamingMessage",
            json!({"message": message("q", json!({"ask": true}))}),
            None,
        )
        .await;
    let last = result(&events.last().unwrap().1);
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
}

#[tokio::test]
async fn subscribe_starts_with_the_snapshot_and_last_event_id_resumes_without_gap_or_duplicate() {
    let gw = gateway().await;
    let held = gw
        .ok(
            "SendMessage",
            json!({"message": message("h", json!({"hold": true})),
            "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = held["task"]["id"].as_str().unwrap().to_owned();
    let subscriber = {
        let gw_router = gw.router.clone();
        let subscribe = gw.post("/a2a");
        let id = id.clone();
        tokio::spawn(async move {
            let body = request("SubscribeToTask", json!({"id": id})).to_string();
            let response =
                tower::ServiceExt::oneshot(gw_router, subscribe.body(Body::from(body)).unwrap())
                    .await
                    .unwrap();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            parse_sse(&String::from_utf8_lossy(&bytes))
        })
    };
    // Cancel once the task runs, which ends every stream.
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let task = gw.ok("GetTask", json!({"id": id})).await;
        if task["status"]["state"] == "TASK_STATE_WORKING" {
            break;
        }
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    gw.ok("CancelTask", json!({"id": id})).await;
    let live = tokio::time::timeout(DEADLINE, subscriber)
        .await
        .unwrap()
        .unwrap();
    assert!(result(&live[0].1).get("task").is_some(), "snapshot first");
    assert_eq!(
        result(&live.last().unwrap().1)["statusUpdate"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );

    // Replaying everything from the start, then from the middle: the same events.
    let (_, all) = gw
        .stream("SubscribeToTask", json!({"id": id}), Some(0))
        .await;
    let all_ids: Vec<u64> = all.iter().map(|(i, _)| i.unwrap()).collect();
    assert_eq!(all_ids, (1..=all_ids.len() as u64).collect::<Vec<_>>());
    let (_, tail) = gw
        .stream("SubscribeToTask", json!({"id": id}), Some(2))
        .await;
    assert_eq!(tail, all[2..].to_vec());

    // Without Last-Event-ID, a terminal task cannot be subscribed to: an SSE error event.
    let (content_type, events) = gw.stream("SubscribeToTask", json!({"id": id}), None).await;
    assert_eq!(content_type, "text/event-stream");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].1["error"]["code"], -32004);
    assert_eq!(events[0].1["id"], 42);
}

#[tokio::test]
async fn streaming_errors_arrive_as_one_sse_error_event() {
    let gw = gateway().await;
    let (content_type, events) = gw
        .stream("SubscribeToTask", json!({"id": "missing"}), None)
        .await;
    assert_eq!(content_type, "text/event-stream");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].1["error"]["code"], -32001);
    assert!(
        events[0].1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not found")
    );

    let (_, events) = gw
        .stream(
            "SendStreamingMessage",
            json!({"message": {"messageId": "m"}}),
            None,
        )
        .await;
    assert_eq!(events[0].1["error"]["code"], -32602);

    let (_, events) = gw
        .stream("tasks/resubscribe", json!({"id": "missing"}), None)
        .await;
    assert_eq!(events[0].1["error"]["code"], -32001);
    assert!(
        events[0].1["error"]["data"].is_object(),
        "v0.3 error data is an object"
    );
}

#[tokio::test]
async fn v03_streams_carry_kind_tagged_events_with_final() {
    let gw = gateway().await;
    let params = json!({"message": {"kind": "message", "messageId": "v", "role": "user",
        "parts": [{"kind": "text", "text": "old"}, {"kind": "data", "data": {"steps": 1}}]}});
    let (_, events) = gw.stream("message/stream", params, None).await;
    assert_eq!(result(&events[0].1)["kind"], "task");
    let last = result(&events.last().unwrap().1);
    assert_eq!(last["kind"], "status-update");
    assert_eq!(last["final"], true);
    assert_eq!(last["status"]["state"], "completed");
    let artifact = events
        .iter()
        .find(|(_, e)| result(e)["kind"] == "artifact-update")
        .unwrap();
    assert_eq!(result(&artifact.1)["artifact"]["parts"][0]["kind"], "text");
}

#[tokio::test]
async fn idle_streams_get_keep_alives_and_end_on_shutdown() {
    let gw = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.sse_keep_alive_ms = 20;
        gateway_config
    })
    .await;
    let body = request(
        "SendStreamingMessage",
        json!({"message": message("h", json!({"hold": true}))}),
    );
    let response = gw
        .send(gw.post("/a2a").body(Body::from(body.to_string())).unwrap())
        .await;
    let mut body = response.into_body();
    let mut seen = String::new();
    let found = tokio::time::timeout(DEADLINE, async {
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.unwrap().into_data() {
                seen.push_str(&String::from_utf8_lossy(&data));
            }
            if seen.contains(": keep-alive") {
                return;
            }
        }
    })
    .await;
    assert!(found.is_ok(), "no keep-alive in {seen:?}");

    // Shutdown ends the stream although the task is still running.
    gw.shutdown.cancel();
    let rest = tokio::time::timeout(DEADLINE, body.collect()).await;
    assert!(rest.is_ok(), "the stream did not end on shutdown");
}

/// The response body of a stream that nobody polls: the task must still run to the end,
/// and the stream, read later, must still carry every event in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_nobody_reads_holds_up_nothing_and_loses_nothing() {
    let gw = gateway().await;
    let body = request(
        "SendStreamingMessage",
        json!({"message": message("flood", json!({"steps": 3000}))}),
    );
    let response = gw
        .send(gw.post("/a2a").body(Body::from(body.to_string())).unwrap())
        .await;
    // Not polled: nothing pulls events through this stream while the task runs.
    let unread = response.into_body();

    let id = {
        let deadline = std::time::Instant::now() + DEADLINE;
        loop {
            let list = gw.ok("ListTasks", json!({})).await;
            if let Some(id) = list["tasks"][0]["id"].as_str() {
                break id.to_owned();
            }
            assert!(std::time::Instant::now() < deadline, "no task");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let task = gw.ok("GetTask", json!({"id": id})).await;
        if task["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the task was held up: {}",
            task["status"]
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Other clients were served meanwhile (the ListTasks and GetTask calls above), and
    // the late reader still gets everything, in order.
    let bytes = tokio::time::timeout(DEADLINE, unread.collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    let events = parse_sse(&String::from_utf8_lossy(&bytes));
    let ids: Vec<u64> = events.iter().map(|(id, _)| id.unwrap()).collect();
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "gap or duplicate in {} events",
        ids.len()
    );
    assert!(events.len() > 3000);
    assert_eq!(
        result(&events.last().unwrap().1)["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}
