//! What one user can hold open on the real server: event streams (per user and per
//! task) and MCP sessions (each tied to the credentials that opened it, bounded, and
//! forgotten when idle); and what client input reaches the log.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const OPS: &str = "ops-token-0123456789abcdef";
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";
const USER_HEADER: &str = "X-Fundi-User-Token";

fn start(dir: &std::path::Path, extra: &[(&str, &str)]) -> Server {
    let mut env = vec![
        ("FUNDI__AUTH__STATIC__CLIENTS__OPS__TOKEN", OPS),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", ALICE),
        ("FUNDI__AUTH__STATIC__USERS__BOB", BOB),
        ("FUNDI__GATEWAY__RATE_LIMIT_PER_MINUTE", "0"),
    ];
    env.extend_from_slice(extra);
    Server::start(dir, &env)
}

/// A long echo task of `user`'s (a step a second).
async fn long_task(server: &Server, user: &str) -> String {
    let params = json!({
        "message": message("slow", json!({"steps": 1000, "delayMs": 1000})),
        "configuration": {"returnImmediately": true},
    });
    let answer = rpc_with(server, OPS, user, "SendMessage", params).await;
    answer["result"]["task"]["id"].as_str().unwrap().to_owned()
}

/// A SubscribeToTask stream as `user`: the response (kept open while held).
async fn subscribe(server: &Server, user: &str, task: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(server.rpc_url())
        .bearer_auth(OPS)
        .header(USER_HEADER, user)
        .json(&request("SubscribeToTask", json!({"id": task})))
        .send()
        .await
        .unwrap()
}

async fn refused_for(response: reqwest::Response, setting: &str) {
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(setting), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_holds_a_bounded_number_of_streams_and_a_task_too() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        dir.path(),
        &[
            ("FUNDI__GATEWAY__MAX_STREAMS_PER_USER", "4"),
            ("FUNDI__GATEWAY__MAX_STREAMS_PER_TASK", "3"),
        ],
    );
    let a = long_task(&server, ALICE).await;
    let b = long_task(&server, ALICE).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let stream = subscribe(&server, ALICE, &a).await;
        assert_eq!(stream.status(), 200);
        held.push(stream);
    }
    refused_for(
        subscribe(&server, ALICE, &a).await,
        "gateway.max-streams-per-task",
    )
    .await;
    held.push(subscribe(&server, ALICE, &b).await);
    assert_eq!(held[3].status(), 200);
    let descriptors = server.open_descriptors();
    for _ in 0..40 {
        refused_for(
            subscribe(&server, ALICE, &b).await,
            "gateway.max-streams-per-user",
        )
        .await;
    }
    // Refused streams hold nothing: no descriptor is left behind for them.
    assert!(
        server.open_descriptors() <= descriptors + 8,
        "{} descriptors, {descriptors} before",
        server.open_descriptors()
    );
    // Another user is not counted, and /health answers.
    let bobs = long_task(&server, BOB).await;
    assert_eq!(subscribe(&server, BOB, &bobs).await.status(), 200);
    let health = reqwest::get(format!("{}/health", server.url))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    // A closed stream gives its slots back (noticed at the stream's next event).
    drop(held.remove(0));
    let deadline = Instant::now() + DEADLINE;
    loop {
        let stream = subscribe(&server, ALICE, &b).await;
        if stream.status() == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the slot was never given back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A POST to `/mcp` as `user`, within `session` when given.
async fn mcp(server: &Server, user: &str, session: Option<&str>, body: Value) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{}/mcp", server.url))
        .bearer_auth(OPS)
        .header(USER_HEADER, user)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request.send().await.unwrap()
}

fn initialize(client_name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": client_name, "version": "1"},
    }})
}

/// Opens an MCP session as `user`: its id.
async fn open_session(server: &Server, user: &str, client_name: &str) -> String {
    let response = mcp(server, user, None, initialize(client_name)).await;
    assert_eq!(response.status(), 200);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = mcp(server, user, Some(&id), initialized).await;
    assert_eq!(answer.status(), 202);
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_session_serves_only_its_owner_and_a_user_holds_a_bounded_number() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[("FUNDI__MCP__MAX_SESSIONS_PER_USER", "3")]);
    let huge_name = format!("client-{}", "n".repeat(200_000));
    let alices = open_session(&server, ALICE, &huge_name).await;

    // Bob cannot end, follow or use Alice's session: 404, as for no session at all.
    let client = reqwest::Client::new();
    let as_bob = |method: reqwest::Method| {
        client
            .request(method, format!("{}/mcp", server.url))
            .bearer_auth(OPS)
            .header(USER_HEADER, BOB)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &alices)
    };
    assert_eq!(
        as_bob(reqwest::Method::DELETE)
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        as_bob(reqwest::Method::GET).send().await.unwrap().status(),
        404
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(
        mcp(&server, BOB, Some(&alices), list.clone())
            .await
            .status(),
        404
    );
    // Hers still works.
    assert_eq!(mcp(&server, ALICE, Some(&alices), list).await.status(), 200);

    // Three sessions each; a fourth is refused, Bob's are his own count.
    open_session(&server, ALICE, "second").await;
    open_session(&server, ALICE, "third").await;
    refused_for(
        mcp(&server, ALICE, None, initialize("fourth")).await,
        "mcp.max-sessions-per-user",
    )
    .await;
    open_session(&server, BOB, "bobs").await;
    // Closing one makes room.
    let closed = client
        .delete(format!("{}/mcp", server.url))
        .bearer_auth(OPS)
        .header(USER_HEADER, ALICE)
        .header("mcp-session-id", &alices)
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    open_session(&server, ALICE, "fourth").await;

    // Neither the client's name nor a session id reaches the log.
    let log = std::fs::read_to_string(&server.stderr).unwrap();
    assert!(
        !log.contains("nnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"),
        "the client's name was logged"
    );
    assert!(!log.contains(&alices), "a session id was logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_mcp_session_is_closed_and_no_longer_counts() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        dir.path(),
        &[
            ("FUNDI__MCP__MAX_SESSIONS_PER_USER", "1"),
            ("FUNDI__MCP__SESSION_IDLE_TIMEOUT_S", "1"),
        ],
    );
    let first = open_session(&server, ALICE, "first").await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let deadline = Instant::now() + DEADLINE;
    // Polled rather than slept: the session ends once it has been idle a second.
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let opened = mcp(&server, ALICE, None, initialize("again")).await;
        if opened.status() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the idle session was never closed"
        );
    }
    assert_eq!(mcp(&server, ALICE, Some(&first), list).await.status(), 404);
}
