//! `fundi watch ID` against a real server: a task's progress shown live to its end, the
//! stream resumed with `Last-Event-ID` when the server restarts under it, and a task
//! that already ended shown as it stands.

mod common;

use std::process::{Command, Stdio};

use common::*;
use serde_json::json;

fn watch(server: &Server, id: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(["watch", id])
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_TOKEN", &server.token)
        .env("FUNDI_USER_TOKEN", &server.user_token)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fundi watch")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_follows_a_task_to_its_end_across_a_server_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let sent = ok(
        &server,
        "SendMessage",
        json!({"message": message("watched", json!({"steps": 30, "delayMs": 100})),
               "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let watching = watch(&server, &id);
    poll_task(&server, &id, |t| {
        let note = t["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or("");
        note.starts_with("step ") && !note.starts_with("step 1 ") && !note.starts_with("step 2 ")
    })
    .await;

    // The server stops under the open stream and comes back at the same address.
    let bind = server.url.trim_start_matches("http://").to_owned();
    assert!(server.terminate().success());
    let server = Server::start_bound(dir.path(), &bind, &[]);

    let waited = tokio::task::spawn_blocking(move || watching.wait_with_output());
    let output = tokio::time::timeout(DEADLINE, waited)
        .await
        .expect("fundi watch ends within the deadline")
        .unwrap()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{out}\n{err}");
    assert!(err.contains("resuming"), "{err}");
    assert!(out.contains("step 30 of 30"), "{out}");
    assert!(
        out.lines().last().unwrap_or("").contains("completed"),
        "{out}"
    );
    let ended = ok(&server, "GetTask", json!({"id": id})).await;
    assert_eq!(state(&ended), "TASK_STATE_COMPLETED");

    // A task that has ended is shown as it stands, at once.
    let again = watch(&server, &id).wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success() && out.contains(": completed"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_working_task_returns_once_stored_and_a_short_wait_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &[("FUNDI__GATEWAY__REQUEST_TIMEOUT_MS", "1000")],
    );
    let sent = ok(
        &server,
        "SendMessage",
        json!({"message": message("first", json!({"steps": 20, "delayMs": 100})),
               "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let (fine, said) = cli(&server, &["send", "more", "--task", &id]);
    assert!(fine, "{said}");
    assert!(
        said.contains(": working") && said.contains("fundi watch"),
        "{said}"
    );
    let ended = poll_task(&server, &id, |t| state(t) == "TASK_STATE_COMPLETED").await;
    assert!(
        ended.to_string().contains("more"),
        "the run took the message: {ended}"
    );

    // A blocking send whose wait ends first says the task is still working.
    let (fine, said) = cli(
        &server,
        &["send", "slow", "--data", r#"{"steps": 50, "delayMs": 100}"#],
    );
    assert!(!fine, "{said}");
    assert!(
        said.contains("still working after the server's wait"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_artifact_is_summarised_with_how_to_get_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let long = "word ".repeat(2000);
    let sent = ok(
        &server,
        "SendMessage",
        json!({"message": message(&long, json!(null))}),
    )
    .await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let (fine, said) = cli(&server, &["get", &id]);
    assert!(fine, "{said}");
    assert!(said.len() < long.len(), "{said}");
    assert!(
        said.contains(&format!("`fundi get {id} --json` shows it whole")),
        "{said}"
    );
    let (_, whole) = cli(&server, &["get", &id, "--json"]);
    assert!(whole.contains(long.trim_end()), "the JSON form is whole");
}
