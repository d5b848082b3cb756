//! What a caller, with or without credentials, can make the real server hold: request
//! bodies (refused before they are read, cut off when slow, bounded all together),
//! measured as the server's resident memory and open descriptors; and the process
//! settings the server makes for itself.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

const MIB: u64 = 1024 * 1024;

/// A connection that sent a request head announcing `length` body bytes and then
/// `sent` of them, and stalls there.
fn stalled_post(server: &Server, credentials: bool, length: usize, sent: usize) -> TcpStream {
    let address = server.url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    let auth = match credentials {
        true => format!(
            "Authorization: Bearer {}\r\nX-Fundi-User-Token: {}\r\n",
            server.token, server.user_token
        ),
        false => String::new(),
    };
    let head = format!(
        "POST /a2a HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         {auth}Content-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    // A server that reads nothing leaves the rest in the kernel's buffers: stop writing
    // when they are full (or the server has closed the connection).
    stream
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let chunk = vec![b' '; 64 * 1024];
    let mut left = sent;
    while left > 0 {
        match stream.write(&chunk[..left.min(chunk.len())]) {
            Ok(n) => left -= n,
            Err(_) => break,
        }
    }
    stream
}

/// The status line of the answer on `stream`, read within the deadline.
fn status_line(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buffer[..n]),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    text.lines().next().unwrap_or_default().to_owned()
}

fn limits_env<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![("FUNDI__GATEWAY__RATE_LIMIT_PER_MINUTE", "0")];
    env.extend_from_slice(extra);
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_without_credentials_cannot_make_the_server_hold_their_bodies() {
    let dir = tempfile::tempdir().unwrap();
    // The server inherits a low soft limit on descriptors (where the hard one allows).
    let (_, hard) = rlimit::Resource::NOFILE.get().unwrap();
    rlimit::Resource::NOFILE.set(hard.min(4096), hard).unwrap();
    let server = Server::start(
        dir.path(),
        &limits_env(&[("FUNDI__GATEWAY__MAX_BODY_BYTES", "8000000")]),
    );
    // It was raised to the hard limit at start.
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.pid())).unwrap();
    let files: Vec<&str> = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(files[3], files[4], "soft and hard limits: {files:?}");
    let before = server.rss_bytes();
    // 80 connections announce 7 MB bodies, send 4 MB each, and stall: read, that would
    // be 320 MB.
    let stalled: Vec<TcpStream> = (0..80)
        .map(|_| stalled_post(&server, false, 7_000_000, 4_000_000))
        .collect();
    let grown = server.rss_bytes().saturating_sub(before);
    assert!(
        grown < 48 * MIB,
        "the server grew by {} MiB holding refused bodies",
        grown / MIB
    );
    // Each was answered 401 without waiting for its body.
    for mut stream in stalled.into_iter().take(3) {
        assert!(status_line(&mut stream).contains(" 401 "));
    }
    // A small refused body still has its id echoed.
    let refused = reqwest::Client::new()
        .post(server.rpc_url())
        .json(&request("GetTask", serde_json::json!({"id": "x"})))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["id"], serde_json::json!("req-1"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_sender_is_cut_off_with_408_and_bodies_being_read_share_one_budget() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &limits_env(&[
            ("FUNDI__GATEWAY__MAX_BODY_BYTES", "4000000"),
            ("FUNDI__GATEWAY__MAX_BUFFERED_BODY_BYTES", "16000000"),
            ("FUNDI__GATEWAY__BODY_READ_TIMEOUT_MS", "1500"),
        ]),
    );
    let before = server.rss_bytes();
    // 64 callers with credentials send 3 MB of 4 MB bodies and stall: without a shared
    // budget the server would hold 192 MB (183 MiB); with it, at most 16 MB, and the rest
    // are refused at once. The bound leaves room for what RSS counts beside the bodies
    // (connection buffers, the allocator's caches), which varies from run to run.
    let started = Instant::now();
    let mut stalled: Vec<TcpStream> = (0..64)
        .map(|_| stalled_post(&server, true, 4_000_000, 3_000_000))
        .collect();
    let grown = server.rss_bytes().saturating_sub(before);
    assert!(
        grown < 100 * MIB,
        "the server grew by {} MiB holding bodies",
        grown / MIB
    );
    let statuses: Vec<String> = stalled.iter_mut().map(status_line).collect();
    let busy = statuses.iter().filter(|s| s.contains(" 503 ")).count();
    let slow = statuses.iter().filter(|s| s.contains(" 408 ")).count();
    assert!(busy > 0, "{statuses:?}");
    assert!(slow > 0, "{statuses:?}");
    assert_eq!(busy + slow, 64, "{statuses:?}");
    assert!(started.elapsed() < DEADLINE);
    // The budget is back: a whole request gets through.
    let answer = ok(&server, "ListTasks", serde_json::json!({})).await;
    assert!(answer["tasks"].is_array(), "{answer}");
    // Closed connections give their descriptors back.
    drop(stalled);
    let deadline = Instant::now() + DEADLINE;
    while server.open_descriptors() > 200 {
        assert!(Instant::now() < deadline, "descriptors were not given back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_answers_end_at_their_byte_bound_on_both_bindings() {
    let dir = tempfile::tempdir().unwrap();
    let bound = 600_000;
    let server = Server::start(
        dir.path(),
        &limits_env(&[("FUNDI__GATEWAY__MAX_LIST_BYTES", "600000")]),
    );
    let text = "x".repeat(200_000);
    let mut ids = Vec::new();
    for _ in 0..8 {
        let sent = ok(
            &server,
            "SendMessage",
            serde_json::json!({"message": message(&text, serde_json::Value::Null)}),
        )
        .await;
        ids.push(sent["task"]["id"].as_str().unwrap().to_owned());
    }
    ids.reverse();

    // JSON-RPC: every page within the bound (one task of ~200-400 KB may pass the rest
    // of it), every task once, newest first.
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let params = serde_json::json!({"pageSize": 100, "pageToken": token});
        let answer = server
            .post()
            .json(&request("ListTasks", params))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(answer.len() < bound + 450_000, "{} bytes", answer.len());
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        let page = &answer["result"];
        assert_eq!(page["totalSize"], serde_json::json!(8), "{page}");
        assert_eq!(
            page["pageSize"].as_u64().unwrap() as usize,
            page["tasks"].as_array().unwrap().len()
        );
        seen.extend(
            page["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_owned()),
        );
        pages += 1;
        token = page["nextPageToken"].as_str().unwrap().to_owned();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(seen, ids);
    assert!(pages > 2, "{pages} pages");

    // Trimmed as asked: no history, no artifacts.
    let trimmed = ok(
        &server,
        "ListTasks",
        serde_json::json!({"historyLength": 0, "includeArtifacts": false}),
    )
    .await;
    for task in trimmed["tasks"].as_array().unwrap() {
        assert!(
            task.get("history")
                .is_none_or(|h| h == &serde_json::json!([]))
        );
        assert!(task.get("artifacts").is_none(), "{task}");
    }

    // REST: the same bound.
    let rest = server.get("/tasks?pageSize=100").send().await.unwrap();
    assert_eq!(rest.status(), 200);
    let body = rest.text().await.unwrap();
    assert!(body.len() < bound + 450_000, "{} bytes", body.len());
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        !body["nextPageToken"].as_str().unwrap().is_empty(),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_wait_unaccepted_and_hold_no_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    // No console: its sign-in link printed at start is a request of the server's own,
    // whose descriptors would come and go while this counts.
    let server = Server::start(
        dir.path(),
        &limits_env(&[
            ("FUNDI__GATEWAY__MAX_CONNECTIONS", "20"),
            ("FUNDI__GATEWAY__CONSOLE", "false"),
        ]),
    );
    let before = server.open_descriptors();
    let address = server.url.trim_start_matches("http://").to_owned();
    // 60 connections that send nothing: 20 are accepted, the rest wait in the backlog.
    let idle: Vec<TcpStream> = (0..60)
        .map(|_| TcpStream::connect(&address).unwrap())
        .collect();
    let deadline = Instant::now() + DEADLINE;
    // (A few descriptors of the server's own may close meanwhile.)
    while server.open_descriptors() < before + 16 {
        assert!(
            Instant::now() < deadline,
            "the first 20 were never accepted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        server.open_descriptors() < before + 30,
        "{} descriptors, {before} before",
        server.open_descriptors()
    );
    // Once they close, the server answers again.
    drop(idle);
    let health = reqwest::get(format!("{}/health", server.url))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

/// The server turns transparent huge pages off for itself (they cost its slowest
/// answers: `src/huge_pages.rs`), whatever the machine's setting; the kernel says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_runs_without_transparent_huge_pages() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &limits_env(&[]));
    assert_eq!(server.proc_status("THP_enabled"), "0");
    // The test process itself keeps the kernel's setting (a process of its own).
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    assert!(own.contains("THP_enabled:\t1"), "{own}");
}
