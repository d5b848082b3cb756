//! Retention (`store.retention`) on the real binary: an ended task older than it is
//! removed in the background (not found, not listed, counted in the metrics) and stays
//! removed after a restart; an unfinished task is kept whatever its age.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_tasks_past_retention_are_removed_and_stay_removed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("FUNDI__STORE__RETENTION", "1s")]);
    let done = ok(
        &server,
        "SendMessage",
        json!({"message": message("old", Value::Null)}),
    )
    .await;
    let done = done["task"]["id"].as_str().unwrap().to_owned();
    let asking = json!({"message": message("ask", json!({"askInput": true}))});
    let asking = ok(&server, "SendMessage", asking).await;
    assert_eq!(state(&asking["task"]), "TASK_STATE_INPUT_REQUIRED");
    let asking = asking["task"]["id"].as_str().unwrap().to_owned();

    // Removed within a few sweeps (every half second).
    let deadline = Instant::now() + DEADLINE;
    loop {
        let answer = rpc(&server, "GetTask", json!({"id": done})).await;
        if answer["error"]["code"] == -32001 {
            break;
        }
        assert!(Instant::now() < deadline, "never removed: {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let kept = ok(&server, "GetTask", json!({"id": asking})).await;
    assert_eq!(
        state(&kept),
        "TASK_STATE_INPUT_REQUIRED",
        "an unfinished task stays"
    );
    let listed = ok(&server, "ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 1, "{listed}");
    let metrics = server.metrics().await;
    let removed = metrics
        .lines()
        .find(|l| l.starts_with("fundi_tasks_removed_total"))
        .unwrap_or_else(|| panic!("no removal counter: {metrics}"));
    assert!(!removed.ends_with(" 0"), "{removed}");
    assert_eq!(server.terminate().code(), Some(0));

    // Restarted without retention: still gone, the other still there.
    let server = Server::start(dir.path(), &[]);
    let answer = rpc(&server, "GetTask", json!({"id": done})).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    ok(&server, "GetTask", json!({"id": asking})).await;
    let listed = ok(&server, "ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], 1, "{listed}");
}

#[test]
fn a_retention_that_is_not_a_duration_is_refused_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("FUNDI__STORE__RETENTION", "for ever")];
    let (status, stderr) = start_failing(dir.path(), &["--bind", "127.0.0.1:0"], &env);
    assert!(!status.success());
    assert!(
        stderr.contains("store.retention must be a duration"),
        "{stderr}"
    );
}
