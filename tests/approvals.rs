//! Approval gates through the real binary: a gated skill's task waits `submitted` with
//! a summary, runs only once an approver (not the requester, as configured) approves it
//! (narrowed), ends `rejected` when rejected or when no one decides in time; a
//! subscriber sees every step and the audit log records every decision.

mod common;

use std::process::Command;
use std::time::Instant;

use common::*;
use serde_json::{Value, json};

const CI: &str = "ci-token-0123456789abcdef";
const APPROVER: &str = "approver-token-0123456789";
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";

fn env(timeout_s: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("FUNDI__AUTH__STATIC__CLIENTS__CI__TOKEN", CI),
        ("FUNDI__AUTH__STATIC__CLIENTS__CI__SCOPES", "[]"),
        ("FUNDI__AUTH__STATIC__CLIENTS__CONSOLE__TOKEN", APPROVER),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__CONSOLE__SCOPES",
            "[\"fundi:approve\"]",
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", ALICE),
        ("FUNDI__AUTH__STATIC__USERS__BOB", BOB),
        ("FUNDI__RUNTIME__APPROVALS__ECHO", "required"),
        ("FUNDI__RUNTIME__APPROVER_MUST_DIFFER", "true"),
        ("FUNDI__RUNTIME__APPROVAL_TIMEOUT_S", timeout_s),
    ]
}

/// Runs the CLI with the console client for `user`.
fn fundi(server: &Server, user: &str, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(args)
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_TOKEN", APPROVER)
        .env("FUNDI_USER_TOKEN", user)
        .output()
        .expect("run fundi");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Alice asks, through the ci client, for echo's steps.
async fn ask(server: &Server, steps: u64) -> Value {
    let mut message = message("deploy check", json!({"steps": steps}));
    message["metadata"] = json!({"skill": "echo", "reason": "release 2.1"});
    let answer = ok(server, "SendMessage", json!({"message": message})).await;
    answer["task"].clone()
}

fn as_alice(server: &mut Server) {
    server.token = CI.into();
    server.user_token = ALICE.into();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_task_runs_only_once_another_user_approves_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &env("3600"));
    as_alice(&mut server);

    // A blocking send answers at once: the task waits, saying for what.
    let task = ask(&server, 3).await;
    let id = task["id"].as_str().unwrap().to_owned();
    assert_eq!(state(&task), "TASK_STATE_SUBMITTED", "{task}");
    let summary = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    for part in ["alice", "through ci", "echo", "release 2.1"] {
        assert!(summary.contains(part), "{part}: {summary}");
    }
    let watch = server
        .post()
        .json(&request("SubscribeToTask", json!({"id": id})))
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);

    // Alice's messages wait too; her client cannot see approvals.
    let mut more = message("and this", Value::Null);
    more["taskId"] = json!(id);
    let refused = rpc(&server, "SendMessage", json!({"message": more})).await;
    let text = refused["error"]["message"].as_str().unwrap_or("");
    assert!(text.contains("waits for an approver"), "{refused}");
    let listing = reqwest::Client::new()
        .get(format!("{}/admin/approvals", server.url))
        .bearer_auth(CI)
        .header("X-Fundi-User-Token", ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(listing.status(), 403);

    // Approvers see it; the requester may not approve it; a widening is refused.
    let (ok_, out, err) = fundi(&server, BOB, &["approvals"]);
    assert!(
        ok_ && out.contains(&id) && out.contains("asked to run echo"),
        "{out}{err}"
    );
    assert!(out.contains(r#"input: {"steps":3}"#), "{out}");
    let (ok_, _, err) = fundi(&server, ALICE, &["approve", &id]);
    assert!(
        !ok_ && err.contains("may not approve") && err.contains("403"),
        "{err}"
    );
    let (ok_, _, err) = fundi(&server, BOB, &["approve", &id, "--data", r#"{"steps": 9}"#]);
    assert!(!ok_ && err.contains("more than the 3 asked"), "{err}");
    assert_eq!(
        state(&ok(&server, "GetTask", json!({"id": id})).await),
        "TASK_STATE_SUBMITTED"
    );

    let (ok_, out, err) = fundi(&server, BOB, &["approve", &id, "--data", r#"{"steps": 1}"#]);
    assert!(ok_, "{err}");
    assert!(out.contains(&id), "{out}");
    let done = poll_task(&server, &id, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let history = done["history"].as_array().unwrap();
    assert!(
        history
            .iter()
            .any(|m| m["parts"][1]["data"] == json!({"steps": 1})),
        "the narrowed input is in the history: {done}"
    );

    // The subscriber saw every step.
    let states: Vec<(String, String)> = read_sse(watch)
        .await
        .iter()
        .map(|(_, item)| {
            let result = &item["result"];
            let status = match result.get("task") {
                Some(task) => &task["status"],
                None => &result["statusUpdate"]["status"],
            };
            let text = status["message"]["parts"][0]["text"].as_str().unwrap_or("");
            (
                status["state"].as_str().unwrap_or("").to_owned(),
                text.to_owned(),
            )
        })
        .filter(|(state, _)| !state.is_empty())
        .collect();
    assert_eq!(states[0].0, "TASK_STATE_SUBMITTED", "{states:?}");
    assert!(
        states[0].1.contains("waiting for an approver"),
        "{states:?}"
    );
    assert_eq!(
        states[1],
        (
            "TASK_STATE_WORKING".into(),
            "approved by bob, with a narrowed input".into()
        )
    );
    assert_eq!(
        states.last().unwrap().0,
        "TASK_STATE_COMPLETED",
        "{states:?}"
    );

    // Rejected with a reason.
    let second = ask(&server, 1).await;
    let second = second["id"].as_str().unwrap().to_owned();
    let (ok_, out, err) = fundi(
        &server,
        BOB,
        &["reject", &second, "--reason", "freeze week"],
    );
    assert!(ok_ && out.contains("rejected"), "{out}{err}");
    let rejected = ok(&server, "GetTask", json!({"id": second})).await;
    assert_eq!(state(&rejected), "TASK_STATE_REJECTED");
    let reason = rejected["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(reason, "rejected by bob: freeze week");

    // Every decision is in the audit log.
    let (ok_, out, _) = fundi(&server, BOB, &["approvals"]);
    assert!(ok_ && out.contains("no tasks wait"), "{out}");
    server.token = APPROVER.into();
    server.user_token = BOB.into();
    let audit = reqwest::Client::new()
        .get(format!("{}/admin/audit", server.url))
        .bearer_auth(APPROVER)
        .header("X-Fundi-User-Token", BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(audit.status(), 403, "the audit log is for admins");
    drop(server);
    let mut admin_env = env("3600");
    admin_env.push((
        "FUNDI__AUTH__STATIC__CLIENTS__OPS__TOKEN",
        "operator-token-0123456789",
    ));
    admin_env.push((
        "FUNDI__AUTH__STATIC__CLIENTS__OPS__SCOPES",
        "[\"fundi:admin\"]",
    ));
    let server = Server::start(dir.path(), &admin_env);
    let log: Value = reqwest::Client::new()
        .get(format!("{}/admin/audit", server.url))
        .bearer_auth("operator-token-0123456789")
        .header("X-Fundi-User-Token", BOB)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let decisions: Vec<(String, String, String)> = log["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let field = |name: &str| r[name].as_str().unwrap_or("").to_owned();
            (field("action"), field("target"), field("user"))
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("approval.approve".to_owned(), id.clone(), "bob".to_owned()),
            (
                "approval.reject".to_owned(),
                second.clone(),
                "bob".to_owned()
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_that_never_comes_rejects_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &env("1"));
    as_alice(&mut server);
    let task = ask(&server, 1).await;
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + DEADLINE;
    let ended = loop {
        let task = ok(&server, "GetTask", json!({"id": id})).await;
        if state(&task) != "TASK_STATE_SUBMITTED" {
            break task;
        }
        assert!(Instant::now() < deadline, "the approval never expired");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(state(&ended), "TASK_STATE_REJECTED", "{ended}");
    let text = ended["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("no approver decided within 1s"), "{text}");
}

/// A webhook receiver on loopback that keeps the bodies it is sent.
async fn receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::routing::post;
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let record = seen.clone();
    let router = axum::Router::new().route(
        "/hook",
        post(move |axum::Json(body): axum::Json<Value>| {
            let record = record.clone();
            async move {
                record.lock().unwrap().push(body);
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_receivers_are_told_each_step_of_a_gated_task() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = env("3600");
    env.push(("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]"));
    let mut server = Server::start(dir.path(), &env);
    as_alice(&mut server);
    let (hook, seen) = receiver().await;
    let mut asked = message("with a hook", json!({"steps": 1}));
    asked["metadata"] = json!({"skill": "echo"});
    let params = json!({"message": asked,
                        "configuration": {"taskPushNotificationConfig": {"url": hook}}});
    let task = ok(&server, "SendMessage", params).await["task"].clone();
    let id = task["id"].as_str().unwrap().to_owned();
    let (approved, _, err) = fundi(&server, BOB, &["approve", &id]);
    assert!(approved, "{err}");

    let deadline = Instant::now() + DEADLINE;
    let states = loop {
        let states: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|body| {
                let status = body
                    .get("task")
                    .map(|t| &t["status"])
                    .or_else(|| body.get("statusUpdate").map(|u| &u["status"]))?;
                let text = status["message"]["parts"][0]["text"].as_str().unwrap_or("");
                Some(format!("{} {text}", status["state"].as_str().unwrap_or("")))
            })
            .collect();
        if states
            .last()
            .is_some_and(|s| s.starts_with("TASK_STATE_COMPLETED"))
        {
            break states;
        }
        assert!(Instant::now() < deadline, "deliveries so far: {states:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(
        states[0].starts_with("TASK_STATE_SUBMITTED waiting for an approver"),
        "{states:?}"
    );
    assert_eq!(
        states[1], "TASK_STATE_WORKING approved by bob",
        "{states:?}"
    );
}
