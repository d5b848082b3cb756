//! Requests an attacker with an ordinary user's credentials can send, against the real
//! binary: each is refused with a clear error, or accepted and then always readable,
//! listable and restartable.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// JSON nested `levels` arrays deep around a number.
fn nested(levels: usize) -> Value {
    (0..levels).fold(json!(1), |inner, _| json!([inner]))
}

fn error_of(response: &Value) -> (i64, String) {
    let error = &response["error"];
    (
        error["code"].as_i64().unwrap_or_default(),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_or_oversized_fields_are_refused_and_what_is_accepted_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    // 121 levels: under the request parser's limit, over what a task holds.
    let deep = json!({"message": message("x", json!({"askInput": true, "x": nested(121)}))});
    let (code, text) = error_of(&rpc(&server, "SendMessage", deep).await);
    assert_eq!(code, -32602, "{text}");
    assert!(text.contains("message.parts[1].data"), "{text}");
    assert!(text.contains("at most 64"), "{text}");

    let mut long_id = message("x", Value::Null);
    long_id["messageId"] = json!("m".repeat(100_000));
    let (code, text) = error_of(&rpc(&server, "SendMessage", json!({"message": long_id})).await);
    assert_eq!(code, -32602, "{text}");
    assert!(text.contains("message.messageId"), "{text}");

    let listed = json!({"message": message("x", Value::Null), "configuration": []});
    let (code, text) = error_of(&rpc(&server, "SendMessage", listed).await);
    assert_eq!(code, -32602, "{text}");
    assert!(text.contains("configuration"), "{text}");

    // At the limit: accepted, stored, read back, listed, and still there after a kill.
    // (The data part's object is one level: the array inside it gets the other 63.)
    let at_limit = json!({"askInput": true, "x": nested(63)});
    let params = json!({"message": message("x", at_limit.clone())});
    let task = ok(&server, "SendMessage", params).await["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED");
    let id = task["id"].as_str().unwrap().to_owned();
    let got = ok(&server, "GetTask", json!({"id": id})).await;
    assert_eq!(got["history"][0]["parts"][1]["data"], at_limit);
    let listed = ok(&server, "ListTasks", json!({})).await;
    assert_eq!(listed["tasks"][0]["id"], json!(id));
    server.kill();

    let server = Server::start(dir.path(), &[]);
    let got = ok(&server, "GetTask", json!({"id": id})).await;
    assert_eq!(state(&got), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(got["history"][0]["parts"][1]["data"], at_limit);
    let mut answer = message("the answer", Value::Null);
    answer["taskId"] = json!(id);
    let done = ok(&server, "SendMessage", json!({"message": answer})).await["task"].clone();
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
}

/// Sends `request` as raw bytes and returns the response's status line.
fn raw_status(server: &Server, request: String) -> String {
    let address = server.url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let mut buffer = [0; 4096];
    // Up to the end of the status line is enough.
    while !response.contains(&b'\n') {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buffer[..n]),
        }
    }
    let text = String::from_utf8_lossy(&response);
    text.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_http_is_a_bad_request_and_foreign_targets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let host = server.url.trim_start_matches("http://").to_owned();
    let auth = format!(
        "Authorization: Bearer {}\r\nX-Fundi-User-Token: {}\r\n",
        server.token, server.user_token
    );
    let body = request("ListTasks", json!({})).to_string();

    let chunked = format!(
        "POST /a2a HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{body}\r\n0\r\n\r\n"
    );
    let status = raw_status(&server, chunked);
    assert!(status.contains(" 400 "), "malformed chunked: {status}");

    let two_hosts = format!(
        "POST /a2a HTTP/1.1\r\nHost: {host}\r\nHost: evil.example\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let status = raw_status(&server, two_hosts);
    assert!(status.contains(" 400 "), "two Host headers: {status}");

    let absolute = |target: &str| {
        format!(
            "POST {target} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let status = raw_status(&server, absolute("http://evil.example/a2a"));
    assert!(
        status.contains(" 403 "),
        "foreign absolute target: {status}"
    );
    let status = raw_status(&server, absolute(&format!("http://{host}/a2a")));
    assert!(status.contains(" 200 "), "own absolute target: {status}");
}

/// Writes a working task whose record no JSON reader can decode (nested past any
/// parser's limit), as damage or an older bug could leave one.
async fn store_an_unreadable_task(data: &std::path::Path, id: &str) {
    use fundi_runtime::store::TaskRecord;
    use fundi_runtime::{
        ContextId, Message, Part, Task, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus,
        TaskStore,
    };
    // The server that held it was killed: its lock is gone with its process.
    let store =
        fundi_store_sled::SledStore::open(data, fundi_store_sled::Durability::Sync).unwrap();
    let task = Task {
        id: TaskId::from(id),
        context_id: ContextId::from("ctx"),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: chrono::Utc::now(),
        },
        artifacts: vec![],
        history: vec![Message::user(vec![Part::text("x")])],
        metadata: None,
    };
    let mut record = TaskRecord::new(task.clone(), "echo");
    record.checkpoint = Some(nested(300));
    let event = TaskEvent {
        seq: 1,
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        kind: TaskEventKind::Created(task),
    };
    store.commit(&record, 0, &[event]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_stored_task_never_stops_the_server_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let asking = json!({"message": message("x", json!({"askInput": true}))});
    let waiting = ok(&server, "SendMessage", asking).await["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    server.kill();
    store_an_unreadable_task(&dir.path().join("data"), "unreadable").await;

    let server = Server::start(dir.path(), &[]);
    let waiting = ok(&server, "GetTask", json!({"id": waiting})).await;
    assert_eq!(state(&waiting), "TASK_STATE_INPUT_REQUIRED");
    // Owned by nobody the server knows: not visible over A2A, but listed by the doctor.
    let log = std::fs::read_to_string(&server.stderr).unwrap();
    assert!(log.contains("`fundi doctor` lists them"), "{log}");
    server.kill();

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_fundi"))
        .arg("doctor")
        .arg("--config")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/fundi.toml"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{out}");
    assert!(out.contains("1 tasks set aside"), "{out}");
    assert!(out.contains("unreadable"), "{out}");
    assert!(
        out.contains("ended failed: stored data could not be decoded"),
        "{out}"
    );
}

/// An answer never echoes client input whole: an over-long JSON-RPC id is refused
/// before it could be echoed, an over-long task id is refused naming the field, and
/// what is quoted back (a method's name, a wrong value) is cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_echo_no_more_than_a_few_hundred_bytes_of_input() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("FUNDI__GATEWAY__MAX_BODY_BYTES", "8000000")]);
    let big = "x".repeat(3_000_000);
    let send = |body: Value| {
        let post = server.post().json(&body).send();
        async move { post.await.unwrap().text().await.unwrap() }
    };
    let cases = [
        (
            json!({"jsonrpc": "2.0", "id": big, "method": "GetTask", "params": {"id": "t"}}),
            -32600,
            "id is 3000000 bytes",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": big, "params": {}}),
            -32601,
            "bytes in all",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t".repeat(100_000)}}),
            -32602,
            "id: is 100000 bytes; at most 256",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": "t".repeat(100_000)}}),
            -32602,
            "at most 256",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"status": big}}),
            -32602,
            "status",
        ),
    ];
    for (body, code, says) in cases {
        let answer = send(body).await;
        assert!(answer.len() < 4_000, "an answer of {} bytes", answer.len());
        let answer: Value = serde_json::from_str(&answer).unwrap();
        let (got, text) = error_of(&answer);
        assert_eq!(got, code, "{answer}");
        assert!(text.contains(says), "{text}");
    }
    // The same on the HTTP+JSON binding.
    let long_id = format!("/tasks/{}", "t".repeat(50_000));
    let rest = server.get(&long_id).send().await.unwrap();
    assert_eq!(rest.status(), 400);
    assert!(rest.text().await.unwrap().len() < 4_000);
}
