//! Two `fundi serve` nodes on one PostgreSQL schema, tasks parking after 100 ms: a task
//! waiting for input with a push config parks on the node that runs it, its delivery
//! resting there (no worker, no actor); an answer sent to the other node reaches it,
//! wakes it, and the rest of its events are pushed, once each, in order. A task whose
//! run waits idle parks on its node too, and that node wakes it when the wait is over
//! (it still holds the task). Fails, never skips, when PostgreSQL is missing.

mod common;

use std::time::{Duration, Instant};

use common::*;
use fundi_postgres::testing::{drop_schemas, fresh_schema};
use serde_json::json;

fn node(dir: &std::path::Path, schema: &str, id: &str) -> Server {
    cluster_node(dir, schema, id, &[("FUNDI__RUNTIME__PARK_AFTER_MS", "100")])
}

/// Polls until `holds` is true; fails with `what` at the deadline.
async fn until(what: &str, mut holds: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !holds().await {
        assert!(Instant::now() < deadline, "{what}: never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_task_answered_through_another_node_pushes_the_rest_of_its_events() {
    let schema = fresh_schema();
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let n1 = node(dirs[0].path(), &schema, "n1");
    let n2 = node(dirs[1].path(), &schema, "n2");
    let (hook, hits) = webhook(Duration::ZERO).await;

    let sent = json!({"message": message("question", json!({"askInput": true})),
                      "configuration": {"returnImmediately": true,
                                        "taskPushNotificationConfig": {"url": hook, "id": "hook"}}});
    let task = ok(&n1, "SendMessage", sent).await;
    let id = task["task"]["id"].as_str().unwrap().to_owned();
    until(
        "the task parked on n1 with its delivery resting",
        async || {
            n1.gauge("fundi_task_actors_live").await == 0.0
                && n1.gauge("fundi_push_resting").await == 1.0
        },
    )
    .await;
    let asked = pushed_seqs(&hits, &id);
    assert!(
        !asked.is_empty(),
        "nothing was pushed before the task parked"
    );

    // The answer goes to n2, which hands it to n1, which holds the task.
    let mut answer = message("the answer", serde_json::Value::Null);
    answer["taskId"] = json!(id);
    ok(&n2, "SendMessage", json!({"message": answer})).await;
    let ended = |body: &serde_json::Value| {
        body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    };
    until("the task's end was pushed", async || {
        hits.lock()
            .unwrap()
            .iter()
            .any(|(_, body)| pushed_task(body) == id && ended(body))
    })
    .await;
    // Each event pushed once, in order (the answer itself, a user's message, is not).
    let pushed = pushed_seqs(&hits, &id);
    assert!(pushed.windows(2).all(|w| w[0] < w[1]), "{pushed:?}");
    assert!(pushed.starts_with(&asked), "{pushed:?} after {asked:?}");
    assert!(pushed.len() > asked.len());
    drop((n1, n2));
    drop_schemas(&[schema]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_parked_while_its_run_waits_idle_is_woken_by_its_node_and_ends() {
    let schema = fresh_schema();
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let n1 = node(dirs[0].path(), &schema, "n1");
    let n2 = node(dirs[1].path(), &schema, "n2");
    let (hook, hits) = webhook(Duration::ZERO).await;

    let sent = json!({"message": message("after a while", json!({"idleS": 2})),
                      "configuration": {"returnImmediately": true,
                                        "taskPushNotificationConfig": {"url": hook, "id": "hook"}}});
    let task = ok(&n1, "SendMessage", sent).await;
    let id = task["task"]["id"].as_str().unwrap().to_owned();
    until("the idle task parked on n1", async || {
        n1.gauge("fundi_task_actors_live").await == 0.0
    })
    .await;
    // Read through the other node meanwhile: still working, and nothing woke it.
    let read = ok(&n2, "GetTask", json!({"id": id})).await;
    assert_eq!(read["status"]["state"], "TASK_STATE_WORKING", "{read}");
    let completed = |body: &serde_json::Value| {
        body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    };
    until("the task's end was pushed", async || {
        hits.lock()
            .unwrap()
            .iter()
            .any(|(_, body)| pushed_task(body) == id && completed(body))
    })
    .await;
    let done = ok(&n2, "GetTask", json!({"id": id})).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"], "after a while",
        "{done}"
    );
    let pushed = pushed_seqs(&hits, &id);
    assert!(pushed.windows(2).all(|w| w[0] < w[1]), "{pushed:?}");
    drop((n1, n2));
    drop_schemas(&[schema]).await;
}
