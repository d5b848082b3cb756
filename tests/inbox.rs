//! The inbox skill through the real binary: a proposal waits (across a restart) until a
//! user holding fundi:inbox answers it; a question back goes to the sender and their
//! reply waits in turn; a proposal nobody answers expires; the answer and who gave it
//! are on the task.

mod common;

use std::time::Instant;

use common::*;
use serde_json::{Value, json};

const SENDER: &str = "sender-token-0123456789";
const LOCAL: &str = "local-agent-token-0123456789";
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";

fn env(expires_s: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("FUNDI__AUTH__STATIC__CLIENTS__SENDER__TOKEN", SENDER),
        ("FUNDI__AUTH__STATIC__CLIENTS__SENDER__SCOPES", "[]"),
        ("FUNDI__AUTH__STATIC__CLIENTS__LOCAL__TOKEN", LOCAL),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__LOCAL__SCOPES",
            "[\"fundi:inbox\"]",
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", ALICE),
        ("FUNDI__AUTH__STATIC__USERS__BOB", BOB),
        ("FUNDI__SKILLS__ENABLED", "[\"echo\", \"inbox\"]"),
        ("FUNDI__SKILLS__INBOX__EXPIRES_AFTER_S", expires_s),
    ]
}

fn as_sender(server: &mut Server) {
    server.token = SENDER.into();
    server.user_token = ALICE.into();
}

/// A call of the inbox routes with `token` for bob.
async fn inbox(
    server: &Server,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", server.url))
        .bearer_auth(token)
        .header("X-Fundi-User-Token", BOB);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The proposals waiting, once `count` of them wait.
async fn waiting(server: &Server, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (status, listed) = inbox(server, LOCAL, reqwest::Method::GET, "/inbox", None).await;
        assert_eq!(status, 200, "{listed}");
        let proposals = listed["proposals"].as_array().cloned().unwrap_or_default();
        if proposals.len() == count {
            return proposals;
        }
        assert!(
            Instant::now() < deadline,
            "{count} proposal(s) never waited: {listed}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn propose(server: &Server, text: &str) -> String {
    let mut message = message(text, json!({"pr": 42}));
    message["metadata"] = json!({"skill": "inbox"});
    let params = json!({"message": message, "configuration": {"returnImmediately": true}});
    ok(server, "SendMessage", params).await["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_waits_across_a_restart_for_an_answer_and_a_question_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &env("3600"));
    as_sender(&mut server);
    let id = propose(&server, "please review the 2.1 notes").await;
    let proposals = waiting(&server, 1).await;
    assert_eq!(proposals[0]["taskId"], id.as_str());
    assert_eq!(proposals[0]["from"], "alice");
    let task = ok(&server, "GetTask", json!({"id": id})).await;
    assert_eq!(
        state(&task),
        "TASK_STATE_SUBMITTED",
        "nobody has picked it up"
    );

    // Only holders of fundi:inbox see or answer proposals.
    let (status, _) = inbox(&server, SENDER, reqwest::Method::GET, "/inbox", None).await;
    assert_eq!(status, 403);
    assert!(server.terminate().success());

    let mut server = Server::start(dir.path(), &env("3600"));
    as_sender(&mut server);
    let proposals = waiting(&server, 1).await;
    assert_eq!(
        proposals[0]["taskId"],
        id.as_str(),
        "it waits again after the restart"
    );
    let task = ok(&server, "GetTask", json!({"id": id})).await;
    assert_eq!(state(&task), "TASK_STATE_SUBMITTED");

    // A question back: the sender is asked, and their reply waits for an answer.
    let path = format!("/inbox/{id}/respond");
    let ask = json!({"action": "ask", "text": "which notes?"});
    let (status, body) = inbox(&server, LOCAL, reqwest::Method::POST, &path, Some(ask)).await;
    assert_eq!(status, 200, "{body}");
    let asked = poll_task(&server, &id, |t| state(t) == "TASK_STATE_INPUT_REQUIRED").await;
    let question = asked["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(question, "which notes? (asked by bob)");
    let mut reply = message("the ones in docs/", Value::Null);
    reply["taskId"] = json!(id);
    ok(
        &server,
        "SendMessage",
        json!({"message": reply, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let proposals = waiting(&server, 1).await;
    assert_eq!(
        proposals[0]["message"]["parts"][0]["text"],
        "the ones in docs/"
    );

    let done = json!({"action": "complete", "text": "reviewed: fine", "data": {"ok": true}});
    let (status, _) = inbox(&server, LOCAL, reqwest::Method::POST, &path, Some(done)).await;
    assert_eq!(status, 200);
    let completed = poll_task(&server, &id, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let answer = &completed["status"]["message"];
    assert_eq!(answer["parts"][0]["text"], "reviewed: fine");
    assert_eq!(answer["metadata"]["answeredBy"], "bob");
    assert_eq!(
        completed["artifacts"][0]["parts"][0]["data"],
        json!({"ok": true})
    );
    let again = json!({"action": "reject", "text": "too late"});
    let (status, _) = inbox(&server, LOCAL, reqwest::Method::POST, &path, Some(again)).await;
    assert_eq!(status, 404, "answered already");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_nobody_answers_expires_and_a_rejection_says_who() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &env("1"));
    as_sender(&mut server);
    let expiring = propose(&server, "anyone?").await;
    let rejected = poll_task(&server, &expiring, |t| state(t) == "TASK_STATE_REJECTED").await;
    let reason = rejected["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("no local agent answered within 1s"),
        "{reason}"
    );

    drop(server);
    let other = tempfile::tempdir().unwrap();
    let mut server = Server::start(other.path(), &env("3600"));
    as_sender(&mut server);
    let declined = propose(&server, "deploy to prod").await;
    waiting(&server, 1).await;
    let path = format!("/inbox/{declined}/respond");
    let empty = json!({"action": "complete"});
    let (status, body) = inbox(&server, LOCAL, reqwest::Method::POST, &path, Some(empty)).await;
    assert_eq!(status, 400, "{body}");
    let no = json!({"action": "reject", "text": "not from an agent"});
    let (status, _) = inbox(&server, LOCAL, reqwest::Method::POST, &path, Some(no)).await;
    assert_eq!(status, 200);
    let ended = poll_task(&server, &declined, |t| state(t) == "TASK_STATE_REJECTED").await;
    let reason = ended["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(reason, "not from an agent (answered by bob)");
}
