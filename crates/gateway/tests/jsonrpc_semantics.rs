//! The JSON-RPC endpoint's semantics, method by method, through the real router.

mod common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use fundi_gateway::GatewayConfig;
use serde_json::{Value, json};

fn code(error: &Value) -> i64 {
    error["code"].as_i64().unwrap()
}

#[tokio::test]
async fn envelope_errors_are_http_200_with_the_right_code_and_id() {
    let gw = gateway().await;
    let cases: [(&str, i64, Value); 7] = [
        ("{oops", -32700, Value::Null),
        ("[]", -32600, Value::Null),
        (
            r#"{"jsonrpc":"1.0","id":"a","method":"GetTask"}"#,
            -32600,
            json!("a"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"GetTask"}"#,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"SendMessageXXX"}"#,
            -32601,
            json!(9),
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tasks/list"}"#,
            -32601,
            json!(9),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"p","method":"GetTask","params":"x"}"#,
            -32602,
            json!("p"),
        ),
    ];
    for (body, expected, id) in cases {
        let (status, response) = gw.post_raw(body).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(response["jsonrpc"], "2.0");
        assert_eq!(code(&response["error"]), expected, "{body}: {response}");
        assert_eq!(response["id"], id, "{body}");
    }
    // No id at all is still answered.
    let (_, response) = gw
        .post_raw(r#"{"jsonrpc":"2.0","method":"GetTask","params":{}}"#)
        .await;
    assert_eq!(code(&response["error"]), -32602);
    assert_eq!(response["id"], Value::Null);
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let gw = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.max_body_bytes = 1024;
        gateway_config
    })
    .await;
    let big = request(
        "SendMessage",
        json!({"message": message(&"x".repeat(2000), Value::Null)}),
    );
    let (status, response) = gw.post_raw(big.to_string()).await;
    assert_eq!(status, 413);
    assert_eq!(code(&response["error"]), -32600);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1024 bytes")
    );
    assert_eq!(
        gw.runtime.list(listing()).await.unwrap().total_size,
        0,
        "no task was created"
    );
}

fn listing() -> fundi_runtime::ListRequest {
    fundi_runtime::ListRequest::new(fundi_runtime::TaskOwner::Any).page_size(10)
}

#[tokio::test]
async fn unsupported_versions_are_refused_from_header_or_query() {
    let gw = gateway().await;
    let body = request("GetTask", json!({"id": "x"})).to_string();
    for (uri, header) in [("/a2a", Some("0.5")), ("/a2a?A2A-Version=2.0", None)] {
        let mut builder = gw.post(uri);
        if let Some(v) = header {
            builder = builder.header("A2A-Version", v);
        }
        let response = gw
            .send(builder.body(Body::from(body.clone())).unwrap())
            .await;
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        let response: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(code(&response["error"]), -32009, "{response}");
        assert_eq!(
            response["error"]["data"][0]["reason"],
            "VERSION_NOT_SUPPORTED"
        );
    }
    // Patch versions are ignored; 1.0 and 0.3 are served.
    for version in ["1.0.1", "0.3.0", "1.0"] {
        let request = gw
            .post("/a2a")
            .header("A2A-Version", version)
            .body(Body::from(body.clone()))
            .unwrap();
        let response = gw.send(request).await;
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        let response: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(code(&response["error"]), -32001, "{version}: {response}");
    }
}

#[tokio::test]
async fn send_message_blocks_until_done_or_returns_immediately() {
    let gw = gateway().await;
    let done = gw
        .ok(
            "SendMessage",
            json!({"message": message("hi", json!({"steps": 2}))}),
        )
        .await;
    let task = &done["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "done: hi");
    // The chunked artifact is stored reassembled.
    assert_eq!(
        task["artifacts"][0]["parts"],
        json!([{"text": "a"}, {"text": "b"}])
    );
    assert!(task["contextId"].is_string());

    let quick = gw
        .ok(
            "SendMessage",
            json!({"message": message("later", json!({"hold": true})),
                   "configuration": {"returnImmediately": true, "historyLength": 0}}),
        )
        .await;
    let state = quick["task"]["status"]["state"].as_str().unwrap();
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"].contains(&state),
        "{state}"
    );
    assert!(
        quick["task"].get("history").is_none(),
        "historyLength 0 omits history"
    );

    // snake_case params are accepted (ProtoJSON).
    let snake = gw
        .ok(
            "SendMessage",
            json!({"message": {"message_id": "s-1", "role": "ROLE_USER",
            "parts": [{"text": "snake"}]}, "configuration": {"return_immediately": false}}),
        )
        .await;
    assert_eq!(snake["task"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn send_message_validation_names_the_field() {
    let gw = gateway().await;
    let cases = [
        (json!({}), "message"),
        (
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
            "messageId",
        ),
        (
            json!({"message": {"messageId": "m", "parts": [{"text": "x"}]}}),
            "role",
        ),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
            "parts",
        ),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER",
            "parts": [{"text": "x", "url": "https://x"}]}}),
            "message.parts[0]",
        ),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}),
            "ROLE_USER",
        ),
        (
            json!({"message": message("x", Value::Null), "configuration": {"historyLength": -1}}),
            "historyLength",
        ),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}],
            "metadata": {"skill": "nope"}}}),
            "nope",
        ),
    ];
    for (params, needle) in cases {
        let error = gw.err("SendMessage", params.clone()).await;
        assert_eq!(code(&error), -32602, "{params}: {error}");
        let text = error["message"].as_str().unwrap();
        assert!(text.contains(needle), "{params}: {text}");
    }
    assert_eq!(
        gw.runtime.list(listing()).await.unwrap().total_size,
        0,
        "no task was created"
    );
}

#[tokio::test]
async fn follow_ups_continue_interrupted_tasks_and_are_refused_otherwise() {
    let gw = gateway().await;
    let asked = gw
        .ok(
            "SendMessage",
            json!({"message": message("q", json!({"ask": true}))}),
        )
        .await;
    let task = &asked["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = task["id"].as_str().unwrap();

    let mut wrong = message("a", Value::Null);
    wrong["taskId"] = json!(id);
    wrong["contextId"] = json!("other");
    assert_eq!(
        code(&gw.err("SendMessage", json!({"message": wrong})).await),
        -32602
    );

    let mut answer = message("answer", Value::Null);
    answer["taskId"] = json!(id);
    let done = gw
        .ok("SendMessage", json!({"message": answer.clone()}))
        .await;
    assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        done["task"]["status"]["message"]["parts"][0]["text"],
        "done: answer"
    );

    // The answer sent again (a retry) gets the task; a new message is refused.
    let again = gw.ok("SendMessage", json!({"message": answer})).await;
    assert_eq!(again["task"], done["task"]);
    let mut later = message("later", Value::Null);
    later["taskId"] = json!(id);
    let error = gw.err("SendMessage", json!({"message": later})).await;
    assert_eq!(code(&error), -32004);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("TASK_STATE_COMPLETED")
    );

    let mut unknown = message("x", Value::Null);
    unknown["taskId"] = json!("no-such-task");
    let error = gw.err("SendMessage", json!({"message": unknown})).await;
    assert_eq!(code(&error), -32001);
    assert_eq!(error["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(error["data"][0]["metadata"]["taskId"], "no-such-task");
}

#[tokio::test]
async fn get_and_cancel_follow_the_spec() {
    let gw = gateway().await;
    let held = gw
        .ok(
            "SendMessage",
            json!({"message": message("hold", json!({"hold": true})),
            "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = held["task"]["id"].as_str().unwrap().to_owned();
    let task = gw
        .ok("GetTask", json!({"id": id, "historyLength": 1}))
        .await;
    assert_eq!(task["id"], json!(id));
    assert_eq!(task["history"].as_array().unwrap().len(), 1);
    assert_eq!(
        code(
            &gw.err("GetTask", json!({"id": id, "historyLength": -2}))
                .await
        ),
        -32602
    );
    assert_eq!(code(&gw.err("GetTask", json!({})).await), -32602);

    // The test skill's card refuses messages while a task works, and the error says so.
    let mut more = message("more", Value::Null);
    more["taskId"] = json!(id);
    let refused = gw.err("SendMessage", json!({"message": more})).await;
    assert_eq!(code(&refused), -32004);
    let text = refused["message"].as_str().unwrap();
    assert!(text.contains("refuses messages while it works"), "{text}");
    assert_eq!(
        refused["data"][0]["metadata"]["taskId"],
        json!(id),
        "{refused}"
    );

    let canceled = gw.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let again = gw.err("CancelTask", json!({"id": id})).await;
    assert_eq!(code(&again), -32002);
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("TASK_STATE_CANCELED")
    );
    assert_eq!(
        code(&gw.err("CancelTask", json!({"id": "nope"})).await),
        -32001
    );
}

#[tokio::test]
async fn list_tasks_filters_pages_and_validates() {
    let gw = gateway().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut m = message(&format!("t{i}"), Value::Null);
        m["contextId"] = json!(if i % 2 == 0 { "even" } else { "odd" });
        ids.push(gw.ok("SendMessage", json!({"message": m})).await["task"]["id"].clone());
    }
    let all = gw.ok("ListTasks", json!({})).await;
    assert_eq!(all["totalSize"], 5);
    assert_eq!(all["pageSize"], 5);
    assert_eq!(all["nextPageToken"], "");
    let listed: Vec<Value> = all["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(listed, newest_first);
    assert!(
        all["tasks"][0].get("artifacts").is_none(),
        "artifacts left out by default"
    );
    let with = gw
        .ok(
            "ListTasks",
            json!({"includeArtifacts": true, "pageSize": 1}),
        )
        .await;
    assert!(with["tasks"][0]["artifacts"].is_array());

    let even = gw
        .ok(
            "ListTasks",
            json!({"contextId": "even", "status": "TASK_STATE_COMPLETED"}),
        )
        .await;
    assert_eq!(even["totalSize"], 3);
    let none = gw
        .ok("ListTasks", json!({"status": "TASK_STATE_WORKING"}))
        .await;
    assert_eq!(
        none,
        json!({"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0})
    );
    let unspecified = gw
        .ok("ListTasks", json!({"status": "TASK_STATE_UNSPECIFIED"}))
        .await;
    assert_eq!(unspecified["totalSize"], 5);
    let future = gw
        .ok(
            "ListTasks",
            json!({"statusTimestampAfter": "2999-01-01T00:00:00+00:00"}),
        )
        .await;
    assert_eq!(future["totalSize"], 0);

    let first = gw.ok("ListTasks", json!({"pageSize": 2})).await;
    let token = first["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let second = gw
        .ok("ListTasks", json!({"pageSize": 2, "pageToken": token}))
        .await;
    assert_eq!(second["tasks"][0]["id"], newest_first[2]);

    for (params, field) in [
        (json!({"pageSize": 0}), "pageSize"),
        (json!({"pageSize": 101}), "pageSize"),
        (json!({"pageToken": "invalid-token-xyz"}), "pageToken"),
        (json!({"status": "INVALID_STATUS"}), "status"),
        (
            json!({"statusTimestampAfter": "-1"}),
            "statusTimestampAfter",
        ),
        (json!({"historyLength": -1}), "historyLength"),
    ] {
        let error = gw.err("ListTasks", params.clone()).await;
        assert_eq!(code(&error), -32602, "{params}");
        assert!(
            error["message"].as_str().unwrap().contains(field),
            "{params}: {error}"
        );
        assert_eq!(
            error["data"][0]["fieldViolations"][0]["field"], field,
            "{error}"
        );
    }
}

#[tokio::test]
async fn push_methods_say_they_are_not_supported() {
    let gw = gateway().await;
    for method in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/set",
    ] {
        let error = gw.err(method, json!({"taskId": "t", "id": "c"})).await;
        assert_eq!(code(&error), -32003, "{method}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("push notification is not supported")
        );
    }
    let error = gw
        .err(
            "SendMessage",
            json!({"message": message("x", Value::Null),
            "configuration": {"taskPushNotificationConfig": {"url": "https://x"}}}),
        )
        .await;
    assert_eq!(code(&error), -32003);
}

#[tokio::test]
async fn v03_methods_speak_v03_shapes() {
    let gw = gateway().await;
    let sent = gw
        .ok(
            "message/send",
            json!({"message": {"kind": "message", "messageId": "m1", "role": "user",
            "parts": [{"kind": "text", "text": "old"}, {"kind": "data", "data": {"steps": 1}}]}}),
        )
        .await;
    assert_eq!(sent["kind"], "task");
    assert_eq!(sent["status"]["state"], "completed");
    assert_eq!(sent["history"][0]["role"], "user");
    assert_eq!(
        sent["history"][0]["parts"][0],
        json!({"kind": "text", "text": "old"})
    );
    let id = sent["id"].as_str().unwrap();
    let got = gw
        .ok("tasks/get", json!({"id": id, "historyLength": 1}))
        .await;
    assert_eq!(got["kind"], "task");
    assert_eq!(got["history"].as_array().unwrap().len(), 1);
    let error = gw.err("tasks/cancel", json!({"id": id})).await;
    assert_eq!(code(&error), -32002);
    assert_eq!(
        error["data"]["reason"], "TASK_NOT_CANCELABLE",
        "v0.3 data is an object"
    );
    let error = gw.err("tasks/get", json!({"id": "nope"})).await;
    assert_eq!(code(&error), -32001);
}

#[tokio::test]
async fn health_answers() {
    let gw = gateway().await;
    let response = gw
        .send(Request::get("/health").body(Body::empty()).unwrap())
        .await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_blocking_send_that_outlives_the_request_timeout_returns_the_task_as_it_stands() {
    let gw = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.request_timeout_ms = 300;
        gateway_config
    })
    .await;
    let sent = gw
        .ok(
            "SendMessage",
            json!({"message": message("parked", json!({"hold": true}))}),
        )
        .await;
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_WORKING");
    // The task goes on; the call did not cancel it.
    let id = sent["task"]["id"].clone();
    let task = gw.ok("GetTask", json!({"id": id})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING");
}

#[tokio::test]
async fn a_message_sent_again_gets_the_task_it_made_for_its_user_only() {
    let gw = gateway().await;
    let first = message("retry me", json!({"ask": true}));
    let made = gw
        .ok("SendMessage", json!({"message": first.clone()}))
        .await;
    let id = made["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(made["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");

    let again = gw
        .ok("SendMessage", json!({"message": first.clone()}))
        .await;
    assert_eq!(again["task"]["id"], json!(id), "a retry gets the same task");
    let (_, events) = gw
        .stream(
            "SendStreamingMessage",
            json!({"message": first.clone()}),
            None,
        )
        .await;
    assert_eq!(events[0].1["result"]["task"]["id"], json!(id), "{events:?}");

    let bob = gw.as_identity(&gw.credentials.admin_token, &gw.credentials.bob);
    let theirs = bob.ok("SendMessage", json!({"message": first})).await;
    assert_ne!(
        theirs["task"]["id"],
        json!(id),
        "another user's message is theirs"
    );

    let tasks = gw.ok("ListTasks", json!({})).await;
    let alices: Vec<&Value> = tasks["tasks"].as_array().unwrap().iter().collect();
    assert_eq!(alices.len(), 1, "one task for alice: {tasks}");
}
