//! Crash and restart of the real binary: SIGKILL mid-run, restart on the same data
//! directory, and every acknowledged task is there, resumed or finished; none lost,
//! none stuck in working. Also graceful shutdown on SIGTERM.

mod common;

use common::*;
use serde_json::{Value, json};

const SLOW: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_run_loses_no_acknowledged_task() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // Slow tasks: 40 steps of 50 ms, so they are mid-run when the process dies.
    let mut slow = Vec::new();
    for i in 0..SLOW {
        let params = json!({
            "message": message(&format!("slow {i}"), json!({"steps": 40, "delayMs": 50})),
            "configuration": {"returnImmediately": true},
        });
        let task = ok(&server, "SendMessage", params).await["task"].clone();
        slow.push(task["id"].as_str().unwrap().to_owned());
    }
    let asking = ok(
        &server,
        "SendMessage",
        json!({"message": message("ask me", json!({"askInput": true}))}),
    )
    .await["task"]
        .clone();
    assert_eq!(state(&asking), "TASK_STATE_INPUT_REQUIRED");
    let asking = asking["id"].as_str().unwrap().to_owned();
    let quick = ok(
        &server,
        "SendMessage",
        json!({"message": message("quick", Value::Null)}),
    )
    .await["task"]
        .clone();
    assert_eq!(state(&quick), "TASK_STATE_COMPLETED");

    // Wait until every slow task has reported some progress, then kill the process.
    for id in &slow {
        poll_task(&server, id, |t| {
            t["status"]["message"]["metadata"]["progress"]
                .as_f64()
                .is_some()
        })
        .await;
    }
    server.kill();

    let server = Server::start(dir.path(), &[]);
    for (i, id) in slow.iter().enumerate() {
        let done = poll_task(&server, id, |t| state(t).ends_with("COMPLETED")).await;
        assert_eq!(
            done["artifacts"][0]["parts"][0]["text"],
            json!(format!("slow {i}"))
        );
        // Resumed from its checkpoint: no step was started over from the beginning.
        let events = replay(&server, id).await;
        let steps: Vec<u64> = events
            .iter()
            .filter_map(|e| {
                e["result"]["statusUpdate"]["status"]["message"]["parts"][0]["text"].as_str()
            })
            .filter_map(|t| t.strip_prefix("step ")?.split(' ').next()?.parse().ok())
            .collect();
        assert_eq!(
            steps.iter().filter(|s| **s == 1).count(),
            1,
            "{id}: {steps:?}"
        );
        assert_eq!(*steps.last().unwrap(), 40, "{id}: {steps:?}");
        let ids: Vec<u64> = events.iter().map(|e| e["_seq"].as_u64().unwrap()).collect();
        assert_eq!(
            ids,
            (1..=ids.len() as u64).collect::<Vec<_>>(),
            "gap-free log for {id}"
        );
    }
    // The input-required task waits again, and finishes once answered.
    let waiting = ok(&server, "GetTask", json!({"id": asking})).await;
    assert_eq!(state(&waiting), "TASK_STATE_INPUT_REQUIRED");
    let mut answer = message("the answer", Value::Null);
    answer["taskId"] = json!(asking);
    let answered = ok(&server, "SendMessage", json!({"message": answer})).await["task"].clone();
    assert_eq!(state(&answered), "TASK_STATE_COMPLETED");
    assert_eq!(
        answered["status"]["message"]["parts"][0]["text"],
        "the answer"
    );
    // Nothing is left working.
    let working = ok(
        &server,
        "ListTasks",
        json!({"status": "TASK_STATE_WORKING"}),
    )
    .await;
    assert_eq!(working["totalSize"], 0, "{working}");
    let all = ok(&server, "ListTasks", json!({})).await;
    assert_eq!(all["totalSize"], json!(SLOW + 2));
}

/// Every stored event of a task, through SubscribeToTask with `Last-Event-ID: 0`; each
/// JSON-RPC response gets its SSE id under `_seq`.
async fn replay(server: &Server, id: &str) -> Vec<Value> {
    task_events(server, id, 0)
        .await
        .into_iter()
        .map(|(seq, mut data)| {
            data["_seq"] = json!(seq);
            data
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_open_streams_and_exits_cleanly_leaving_the_rest_to_recovery() {
    let dir = tempfile::tempdir().unwrap();
    // A short grace period, so that a long task is still running when it ends.
    let env = [("FUNDI__SERVER__SHUTDOWN_GRACE_MS", "300")];
    let server = Server::start(dir.path(), &env);
    let body = request(
        "SendStreamingMessage",
        json!({"message": message("long", json!({"steps": 100, "delayMs": 50}))}),
    );
    let stream = server.post().json(&body).send().await.unwrap();
    let reader = tokio::spawn(read_sse(stream));
    // The first event (the task) has been sent once the task exists.
    let listed = poll_list(&server).await;
    let id = listed["tasks"][0]["id"].as_str().unwrap().to_owned();
    poll_task(&server, &id, |t| state(t) == "TASK_STATE_WORKING").await;

    let status = server.terminate();
    assert!(status.success(), "exit status {status}");
    // The open stream ended (it did not hold the shutdown up).
    let events = reader.await.unwrap();
    assert_eq!(events[0].1["result"]["task"]["id"], json!(id));

    // The interrupted task resumes at the next start and completes.
    let server = Server::start(dir.path(), &[]);
    poll_task(&server, &id, |t| state(t) == "TASK_STATE_COMPLETED").await;
}

/// A SIGTERM sent as soon as the server says it is listening (as a supervisor's stop
/// can be) is a graceful stop, never a kill by the signal's default action; the log,
/// written on a thread of its own, is complete to its last line.
#[tokio::test]
async fn sigterm_as_soon_as_listening_is_a_graceful_stop() {
    for attempt in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &[]);
        let log = server.stderr.clone();
        let status = server.terminate();
        assert!(status.success(), "attempt {attempt}: exit status {status}");
        let log = std::fs::read_to_string(log).unwrap();
        let last = log.lines().last().unwrap_or_default();
        assert!(last.contains("stopped"), "attempt {attempt}: {log}");
    }
}

async fn poll_list(server: &Server) -> Value {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let list = ok(server, "ListTasks", json!({})).await;
        if list["totalSize"] == 1 {
            return list;
        }
        assert!(std::time::Instant::now() < deadline, "no task appeared");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
