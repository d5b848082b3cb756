//! Messages to a running task through the real binary, over JSON-RPC and HTTP+JSON:
//! echo queues them (its card says so), acknowledges each at once with the message in
//! the task's history, and echoes it before its next step; subscribers see the echo as
//! a status update, never the user's message itself.

mod common;

use common::*;
use serde_json::{Value, json};

/// A task slow enough (40 steps of 50 ms) that a message sent at once finds it working.
fn slow_echo(text: &str) -> Value {
    message(text, json!({"steps": 40, "delayMs": 50}))
}

/// The same message addressed to `task`.
fn to_task(task: &str, text: &str) -> Value {
    let mut message = message(text, Value::Null);
    message["taskId"] = json!(task);
    message
}

/// The texts of a stream's status updates, and whether any item is a message (the
/// items of a JSON-RPC stream are its responses' results; of a REST stream, bare).
fn status_texts(events: &[(Option<u64>, Value)]) -> (Vec<String>, bool) {
    let items: Vec<&Value> = events
        .iter()
        .map(|(_, e)| e.get("result").unwrap_or(e))
        .collect();
    let texts = items
        .iter()
        .filter_map(|e| e["statusUpdate"]["status"]["message"]["parts"][0]["text"].as_str())
        .map(str::to_owned)
        .collect();
    let messages = items.iter().any(|e| e.get("message").is_some());
    (texts, messages)
}

fn user_texts(task: &Value) -> Vec<&str> {
    task["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_takes_messages_while_it_works_over_json_rpc_and_its_card_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let card = agent_card(&server).await;
    let echo = card_skill(&card, "echo");
    let description = echo["description"].as_str().unwrap();
    assert!(description.contains("queued for it"), "{description}");

    let params =
        json!({"message": slow_echo("hello"), "configuration": {"returnImmediately": true}});
    let task = ok(&server, "SendMessage", params).await["task"].clone();
    let id = task["id"].as_str().unwrap().to_owned();
    let subscribe = server
        .post()
        .header("A2A-Version", "1.0")
        // From the creation on, whenever the stream connects.
        .header("Last-Event-ID", "1")
        .json(&request("SubscribeToTask", json!({"id": id})))
        .send();
    let stream = tokio::spawn(async move { read_sse(subscribe.await.unwrap()).await });

    let params =
        json!({"message": to_task(&id, "more"), "configuration": {"returnImmediately": true}});
    let acknowledged = ok(&server, "SendMessage", params).await["task"].clone();
    assert_eq!(state(&acknowledged), "TASK_STATE_WORKING");
    assert_eq!(
        user_texts(&acknowledged),
        ["hello", "more"],
        "stored before the answer"
    );

    let events = stream.await.unwrap();
    let (texts, messages) = status_texts(&events);
    assert!(texts.contains(&"echo: more".to_owned()), "{texts:?}");
    assert_eq!(texts.last().map(String::as_str), Some("hello"), "{texts:?}");
    assert!(!messages, "a user's message is not a stream item");
    let ids: Vec<u64> = events.iter().filter_map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids rise: {ids:?}");

    let done = ok(&server, "GetTask", json!({"id": id})).await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED");
    assert_eq!(user_texts(&done), ["hello", "more"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_takes_messages_while_it_works_over_http_json() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = reqwest::Client::new();
    let rest = |method: reqwest::Method, path: &str| {
        client
            .request(method, format!("{}{path}", server.url))
            .bearer_auth(&server.token)
            .header("X-Fundi-User-Token", &server.user_token)
            .header("A2A-Version", "1.0")
    };
    let send = |message: Value| {
        let mut message = message;
        message["metadata"] = json!({"skill": "echo"});
        rest(reqwest::Method::POST, "/message:send")
            .header("content-type", "application/a2a+json")
            .body(
                json!({"message": message, "configuration": {"returnImmediately": true}})
                    .to_string(),
            )
            .send()
    };
    let created: Value = send(slow_echo("hello"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["task"]["id"].as_str().unwrap().to_owned();
    let subscribe = rest(reqwest::Method::GET, &format!("/tasks/{id}:subscribe"))
        .header("Last-Event-ID", "1")
        .send();
    let stream = tokio::spawn(async move { read_sse(subscribe.await.unwrap()).await });

    let response = send(to_task(&id, "more")).await.unwrap();
    assert_eq!(response.status(), 200);
    let acknowledged: Value = response.json().await.unwrap();
    assert_eq!(user_texts(&acknowledged["task"]), ["hello", "more"]);

    let events = stream.await.unwrap();
    let (texts, messages) = status_texts(&events);
    assert!(texts.contains(&"echo: more".to_owned()), "{texts:?}");
    assert!(!messages, "a user's message is not a stream item");
    let done: Value = rest(reqwest::Method::GET, &format!("/tasks/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(state(&done), "TASK_STATE_COMPLETED");
}
