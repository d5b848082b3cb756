//! Push delivery across a crash: the real binary is SIGKILLed while it is delivering to
//! a slow webhook, then started again on the same data. Every event must arrive, in
//! order of first arrival; duplicates are allowed (at-least-once).

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

async fn wait_for(
    hits: &Mutex<Vec<(u64, Value)>>,
    what: &str,
    done: impl Fn(&[(u64, Value)]) -> bool,
) {
    let deadline = Instant::now() + DEADLINE;
    while !done(&hits.lock().unwrap()) {
        assert!(Instant::now() < deadline, "{what}: never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_delivery_loses_no_push_event() {
    let (url, hits) = webhook(Duration::from_millis(50)).await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]"),
        ("FUNDI__PUSH__INITIAL_BACKOFF_MS", "20"),
        ("FUNDI__PUSH__MAX_BACKOFF_MS", "200"),
    ];
    let server = Server::start(dir.path(), &env);
    let task = ok(
        &server,
        "SendMessage",
        json!({"message": message("pushed", json!({"steps": 20, "delayMs": 20})),
               "configuration": {"returnImmediately": true,
                                 "taskPushNotificationConfig": {"url": url, "id": "hook"}}}),
    )
    .await;
    let id = task["task"]["id"].as_str().unwrap().to_owned();
    wait_for(&hits, "three deliveries", |h| h.len() >= 3).await;
    server.kill();
    let before_restart = hits.lock().unwrap().len();

    let server = Server::start(dir.path(), &env);
    let terminal = |h: &[(u64, Value)]| {
        h.iter()
            .any(|(_, body)| body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED")
    };
    wait_for(&hits, "the terminal event", terminal).await;

    // Every event the task has, as SubscribeToTask replays them from the start.
    let expected: Vec<u64> = task_events(&server, &id, 0)
        .await
        .into_iter()
        .map(|(seq, _)| seq)
        .collect();
    let received: Vec<u64> = hits.lock().unwrap().iter().map(|(seq, _)| *seq).collect();
    let mut first_arrivals = Vec::new();
    for seq in &received {
        if !first_arrivals.contains(seq) {
            first_arrivals.push(*seq);
        }
    }
    assert_eq!(
        first_arrivals, expected,
        "every event, in order (received {received:?}; {before_restart} before the kill)"
    );
}
