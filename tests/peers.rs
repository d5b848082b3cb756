//! Two real `fundi serve` processes, A delegating to B through the `delegate` skill:
//! B's task mirrored into A's to its end (followed over B's stream); A SIGKILLed while
//! it follows, restarted, and the mirror completing with B's artifact while B ran the
//! work once; a cancel of A's task reaching B's; B's question asked by A's task and the
//! answer sent on; and `/peers` listing B with its card.

mod common;
#[path = "web_console/support.rs"]
mod support;

use std::time::{Duration, Instant};

use common::{DEADLINE, Server, message, ok, poll_task, state};
use serde_json::{Value, json};

/// Starts B, then A knowing B as peer `b` (loopback allowed, B's credentials).
fn start_pair(a_dir: &std::path::Path, b_dir: &std::path::Path) -> (Server, Server) {
    let b = Server::start(b_dir, &[]);
    let a = start_a(a_dir, &b);
    (a, b)
}

fn start_a(dir: &std::path::Path, b: &Server) -> Server {
    Server::start(
        dir,
        &[
            ("FUNDI__PEERS__B__URL", b.url.as_str()),
            ("FUNDI__PEERS__B__TOKEN", b.token.as_str()),
            ("FUNDI__PEERS__B__USER_TOKEN", b.user_token.as_str()),
            ("FUNDI__PEERS__B__ALLOW_PRIVATE_NETWORKS", "true"),
            // B signs its card (by default), so A may require it.
            ("FUNDI__PEERS__B__REQUIRE_SIGNED_CARD", "true"),
        ],
    )
}

/// A's new delegate task sending `text` and echo's `data` to B; its id.
async fn delegate(a: &Server, text: &str, data: Value) -> String {
    let mut sent = message(text, json!({"peer": "b", "skill": "echo", "data": data}));
    sent["metadata"] = json!({"skill": "delegate"});
    let task = ok(
        a,
        "SendMessage",
        json!({"message": sent, "configuration": {"returnImmediately": true}}),
    )
    .await;
    task["task"]["id"].as_str().expect("a task id").to_owned()
}

/// Waits until A's task `id` follows B's: its note names B's task, or it mirrors B's.
async fn following(a: &Server, id: &str) {
    poll_task(a, id, |t| {
        let noted = &t["status"]["message"]["metadata"];
        noted.get("delegation").is_some() || noted.get("peerMessageId").is_some()
    })
    .await;
}

/// B's tasks (those of the user A delegates as).
async fn b_tasks(b: &Server) -> Vec<Value> {
    let listed = ok(b, "ListTasks", json!({})).await;
    listed["tasks"].as_array().cloned().unwrap_or_default()
}

/// Waits until B has one task in `wanted` state; that task.
async fn b_task_in(b: &Server, wanted: &str) -> Value {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let tasks = b_tasks(b).await;
        if let Some(task) = tasks.iter().find(|t| state(t) == wanted) {
            return task.clone();
        }
        assert!(
            Instant::now() < deadline,
            "B has no {wanted} task: {tasks:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn artifact_text(task: &Value) -> String {
    task["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_delegation_survives_a_sigkill_of_the_delegator_and_the_peer_runs_once() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = start_pair(a_dir.path(), b_dir.path());
    let id = delegate(&a, "hello peer", json!({"steps": 15, "delayMs": 200})).await;
    // A follows B's working task; A dies mid-follow.
    b_task_in(&b, "TASK_STATE_WORKING").await;
    following(&a, &id).await;
    a.kill();
    let a = start_a(a_dir.path(), &b);
    let done = poll_task(&a, &id, |t| {
        state(t) == "TASK_STATE_COMPLETED" || state(t) == "TASK_STATE_FAILED"
    })
    .await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(artifact_text(&done), "hello peer");
    let tasks = b_tasks(&b).await;
    assert_eq!(tasks.len(), 1, "B ran the work more than once: {tasks:?}");
    assert_eq!(state(&tasks[0]), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn canceling_a_delegated_task_cancels_the_peers() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = start_pair(a_dir.path(), b_dir.path());
    let id = delegate(&a, "long", json!({"steps": 500, "delayMs": 100})).await;
    let remote = b_task_in(&b, "TASK_STATE_WORKING").await;
    following(&a, &id).await;
    ok(&a, "CancelTask", json!({"id": id})).await;
    let local = poll_task(&a, &id, |t| state(t) == "TASK_STATE_CANCELED").await;
    assert_eq!(state(&local), "TASK_STATE_CANCELED");
    let remote_id = remote["id"].as_str().unwrap();
    let remote = poll_task(&b, remote_id, |t| state(t) == "TASK_STATE_CANCELED").await;
    assert_eq!(state(&remote), "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn a_peers_question_is_asked_locally_and_the_answer_sent_on() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = start_pair(a_dir.path(), b_dir.path());
    let id = delegate(&a, "ignored", json!({"askInput": true})).await;
    let asked = poll_task(&a, &id, |t| state(t) == "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(
        asked["status"]["message"]["parts"][0]["text"], "What should I echo?",
        "{asked}"
    );
    let mut answer = message("pong", Value::Null);
    answer["taskId"] = json!(id);
    ok(
        &a,
        "SendMessage",
        json!({"message": answer, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let done = poll_task(&a, &id, |t| {
        t["status"]["state"]
            .as_str()
            .is_some_and(|s| s == "TASK_STATE_COMPLETED" || s == "TASK_STATE_FAILED")
    })
    .await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(artifact_text(&done), "pong");
    let listed = &b_tasks(&b).await[0];
    let remote = ok(&b, "GetTask", json!({"id": listed["id"]})).await;
    assert_eq!(state(&remote), "TASK_STATE_COMPLETED");
    assert_eq!(artifact_text(&remote), "pong");
}

#[tokio::test]
async fn peers_are_listed_with_their_cards_and_never_their_tokens() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = start_pair(a_dir.path(), b_dir.path());
    let listed: Value = a.get("/peers").send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["peers"][0]["name"], "b", "{listed}");
    assert!(
        listed["peers"][0].get("card").is_none(),
        "a card before any was read: {listed}"
    );
    let found = reqwest::Client::new()
        .post(format!("{}/peers/b/discover", a.url))
        .bearer_auth(&a.token)
        .header("X-Fundi-User-Token", &a.user_token)
        .send()
        .await
        .unwrap();
    assert_eq!(found.status(), 200);
    let found: Value = found.json().await.unwrap();
    assert!(
        found["card"]["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "echo"),
        "{found}"
    );
    let listed: Value = a.get("/peers").send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["peers"][0]["card"]["name"], "fundi", "{listed}");
    assert_eq!(listed["peers"][0]["tokenSet"], true);
    assert!(!listed.to_string().contains(&b.token), "a token was shown");
    let unknown = reqwest::Client::new()
        .post(format!("{}/peers/c/discover", a.url))
        .bearer_auth(&a.token)
        .header("X-Fundi-User-Token", &a.user_token)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn the_cli_lists_peers_reads_a_card_and_sends_to_a_peer() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = start_pair(a_dir.path(), b_dir.path());
    let (fine, said) = common::cli(&a, &["peers"]);
    assert!(
        fine && said.contains("card not read yet (fundi peers discover b)"),
        "{said}"
    );
    let (fine, said) = common::cli(&a, &["peers", "discover", "b"]);
    assert!(
        fine && said.contains("skills: echo")
            && said.contains("JSONRPC 1.0")
            && said.contains("card signature verified against the peer's own keys"),
        "{said}"
    );
    let (fine, said) = common::cli(
        &a,
        &["send", "from the cli", "--peer", "b", "--skill", "echo"],
    );
    assert!(
        fine && said.contains("completed") && said.contains("from the cli"),
        "{said}"
    );
    let tasks = b_tasks(&b).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let (fine, said) = common::cli(&a, &["send", "x", "--peer", "nobody"]);
    assert!(
        !fine && said.contains("no peer is named \"nobody\" (known peers: b)"),
        "{said}"
    );
}

/// `fundi peers add` on `on`, of `peer` named `name`.
fn add_peer(on: &Server, name: &str, peer: &Server) -> (bool, String) {
    common::cli(
        on,
        &[
            "peers",
            "add",
            name,
            "--peer-url",
            &peer.url,
            "--peer-token",
            &peer.token,
            "--peer-user-token",
            &peer.user_token,
            "--allow-private-networks",
        ],
    )
}

#[tokio::test]
async fn peers_added_at_run_time_delegate_both_ways_and_outlive_a_restart() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Server::start(a_dir.path(), &[]);
    let b = Server::start(b_dir.path(), &[]);
    let (fine, said) = add_peer(&a, "b", &b);
    assert!(fine && said.contains("peer b added"), "{said}");
    let (fine, said) = add_peer(&b, "a", &a);
    assert!(fine, "{said}");
    // A hands B work, and B hands A work.
    let (fine, said) = common::cli(&a, &["send", "a to b", "--peer", "b", "--skill", "echo"]);
    assert!(fine && said.contains("a to b"), "{said}");
    let (fine, said) = common::cli(&b, &["send", "b to a", "--peer", "a", "--skill", "echo"]);
    assert!(fine && said.contains("b to a"), "{said}");
    // The change is in the audit log, without the token.
    let audit: Value = a
        .get("/admin/audit")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = audit.to_string();
    assert!(
        text.contains("peer.add") && !text.contains(&b.token),
        "{text}"
    );

    let a = {
        a.terminate();
        Server::start(a_dir.path(), &[])
    };
    let (fine, said) = common::cli(&a, &["peers"]);
    assert!(
        fine && said.contains("b http://127.0.0.1") && said.contains("added by local"),
        "{said}"
    );
    let (fine, said) = common::cli(&a, &["send", "again", "--peer", "b", "--skill", "echo"]);
    assert!(fine && said.contains("again"), "{said}");
    let (fine, said) = common::cli(&a, &["peers", "remove", "b"]);
    assert!(fine, "{said}");
    let (fine, said) = common::cli(&a, &["send", "x", "--peer", "b"]);
    assert!(!fine && said.contains("no peer is named \"b\""), "{said}");
    let (fine, said) = common::cli(&a, &["peers", "remove", "b"]);
    assert!(
        !fine && said.contains("no peer named \"b\" was added at run time"),
        "{said}"
    );
}

#[tokio::test]
async fn a_peer_of_the_config_file_is_changed_only_there() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = start_pair(a_dir.path(), b_dir.path());
    let (fine, said) = add_peer(&a, "b", &b);
    assert!(
        !fine && said.contains("peer b is set in the config file"),
        "{said}"
    );
    let (fine, said) = common::cli(&a, &["peers", "remove", "b"]);
    assert!(!fine && said.contains("set in the config file"), "{said}");
    let (fine, said) = common::cli(&a, &["peers", "add", "Bad Name", "--peer-url", "http://x"]);
    assert!(!fine && said.contains("peer name \"Bad Name\""), "{said}");
}

#[tokio::test]
async fn a_question_waiting_across_a_restart_of_the_delegator_is_answered_on_the_peer() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = start_pair(a_dir.path(), b_dir.path());
    let id = delegate(&a, "ignored", json!({"askInput": true})).await;
    poll_task(&a, &id, |t| state(t) == "TASK_STATE_INPUT_REQUIRED").await;
    a.kill();
    let a = start_a(a_dir.path(), &b);
    let waiting = poll_task(&a, &id, |t| !state(t).is_empty()).await;
    assert_eq!(state(&waiting), "TASK_STATE_INPUT_REQUIRED", "{waiting}");
    let mut answer = message("after the restart", Value::Null);
    answer["taskId"] = json!(id);
    ok(
        &a,
        "SendMessage",
        json!({"message": answer, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let done = poll_task(&a, &id, |t| {
        ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED"].contains(&state(t))
    })
    .await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(artifact_text(&done), "after the restart");
    let tasks = b_tasks(&b).await;
    assert_eq!(tasks.len(), 1, "B ran the work more than once: {tasks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_lists_a_delegated_task_with_its_peer() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, _b) = start_pair(a_dir.path(), b_dir.path());
    let id = delegate(&a, "listed", json!({})).await;
    poll_task(&a, &id, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let (signed, said) = common::cli(&a, &["console"]);
    assert!(signed, "{said}");
    let cookie = support::open_link(said.lines().next().unwrap().trim()).await;
    let listed = support::page(&a, &cookie, "/console/tasks").await;
    let row = &listed[listed.find(&id).expect("the task listed")..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains("delegate to peer <strong>b</strong>"), "{row}");
}
