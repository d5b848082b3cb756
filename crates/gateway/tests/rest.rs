//! The HTTP+JSON binding: every scenario sent through both bindings gives the same
//! results field by field (ids and times aside), and what only REST has (statuses,
//! `google.rpc.Status` bodies, routes, tenants, versions, media types) holds.

mod common;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request};
use common::*;
use fundi_gateway::{DEFAULT_USER_HEADER, GatewayConfig};
use http_body_util::BodyExt;
use serde_json::{Value, json};

/// An HTTP+JSON answer: status, headers, JSON body (or the SSE events' data).
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Value,
}

async fn rest(gw: &Gateway, method: Method, uri: &str, body: Option<Value>) -> Answer {
    rest_with(gw, method, uri, body, &[]).await
}

async fn rest_with(
    gw: &Gateway,
    method: Method,
    uri: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "agent.test:8080")
        .header("authorization", format!("Bearer {}", gw.identity.0))
        .header(DEFAULT_USER_HEADER, &gw.identity.1);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = match body {
        Some(body) => {
            request = request.header("content-type", "application/a2a+json");
            Body::from(body.to_string())
        }
        None => Body::empty(),
    };
    let response = gw.send(request.body(body).unwrap()).await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = tokio::time::timeout(DEADLINE, response.into_body().collect())
        .await
        .expect("the answer did not end")
        .unwrap()
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    let body = match headers.get("content-type").map(|v| v.to_str().unwrap()) {
        Some(t) if t.starts_with("text/event-stream") => Value::Array(
            parse_sse(&text)
                .into_iter()
                .map(|(id, data)| json!({"id": id, "data": data}))
                .collect(),
        ),
        _ => serde_json::from_str(&text).unwrap_or(Value::Null),
    };
    Answer {
        status,
        headers,
        body,
    }
}

/// A JSON-RPC error and an HTTP+JSON error say the same thing.
fn same_error(rpc: &Value, rest: &Answer, status: u16) {
    assert_eq!(rest.status, status, "{}", rest.body);
    assert_eq!(rest.headers["content-type"], "application/a2a+json");
    let error = &rest.body["error"];
    assert_eq!(error["code"], status);
    assert_eq!(comparable(&error["message"]), comparable(&rpc["message"]));
    // Every detail JSON-RPC sends, REST sends too.
    let details = comparable(&error["details"]);
    for detail in rpc["data"].as_array().cloned().unwrap_or_default() {
        assert!(
            details.as_array().unwrap().contains(&comparable(&detail)),
            "{detail} not in {details}"
        );
    }
}

#[tokio::test]
async fn every_scenario_answers_the_same_over_both_bindings() {
    let gw = gateway().await;
    // The same message, with its own id for each binding (one sent again is a retry).
    let send = || json!({"message": message("both", json!({"steps": 2}))});

    // SendMessage, blocking.
    let rpc = gw.ok("SendMessage", send()).await;
    let rest_sent = rest(&gw, Method::POST, "/message:send", Some(send())).await;
    assert_eq!(rest_sent.status, 200, "{}", rest_sent.body);
    assert_eq!(rest_sent.headers["content-type"], "application/a2a+json");
    assert_eq!(comparable(&rest_sent.body), comparable(&rpc));
    assert_eq!(
        rest_sent.body["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let rest_id = rest_sent.body["task"]["id"].as_str().unwrap().to_owned();
    let rpc_id = rpc["task"]["id"].as_str().unwrap().to_owned();

    // GetTask, with historyLength.
    let rpc = gw
        .ok("GetTask", json!({"id": rpc_id, "historyLength": 1}))
        .await;
    let got = rest(
        &gw,
        Method::GET,
        &format!("/tasks/{rest_id}?historyLength=1"),
        None,
    )
    .await;
    assert_eq!(got.status, 200);
    assert_eq!(comparable(&got.body), comparable(&rpc));
    assert_eq!(got.body["history"].as_array().unwrap().len(), 1);

    // ListTasks, filtered by context, one per page.
    let context = got.body["contextId"].as_str().unwrap().to_owned();
    let rpc_context = rpc["contextId"].as_str().unwrap().to_owned();
    let rpc = gw
        .ok(
            "ListTasks",
            json!({"contextId": rpc_context, "pageSize": 1, "includeArtifacts": true}),
        )
        .await;
    let listed = rest(
        &gw,
        Method::GET,
        &format!("/tasks?contextId={context}&pageSize=1&includeArtifacts=true"),
        None,
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(comparable(&listed.body), comparable(&rpc));
    assert_eq!(listed.body["tasks"][0]["id"], rest_id.as_str());

    // SendStreamingMessage: the same events, bare.
    let stream = || json!({"message": message("streamed", json!({"steps": 3}))});
    let (_, rpc_events) = gw.stream("SendStreamingMessage", stream(), None).await;
    let rest_events = rest(&gw, Method::POST, "/message:stream", Some(stream())).await;
    assert_eq!(rest_events.status, 200);
    let rest_events = rest_events.body.as_array().unwrap().clone();
    assert_eq!(rest_events.len(), rpc_events.len());
    for ((rpc_seq, rpc_event), rest_event) in rpc_events.iter().zip(&rest_events) {
        assert_eq!(json!(rpc_seq), rest_event["id"]);
        assert_eq!(
            comparable(&rest_event["data"]),
            comparable(&rpc_event["result"])
        );
    }
    let streamed_id = rest_events[0]["data"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // SubscribeToTask from an event on (Last-Event-ID), both verbs.
    let rpc_streamed_id = rpc_events[0].1["result"]["task"]["id"].clone();
    let (_, rpc_replay) = gw
        .stream("SubscribeToTask", json!({"id": rpc_streamed_id}), Some(2))
        .await;
    for method in [Method::POST, Method::GET] {
        let replay = rest_with(
            &gw,
            method,
            &format!("/tasks/{streamed_id}:subscribe"),
            None,
            &[("last-event-id", "2")],
        )
        .await;
        let replay = replay.body.as_array().unwrap().clone();
        assert_eq!(replay.len(), rpc_replay.len());
        assert!(!replay.is_empty());
        for ((_, rpc_event), rest_event) in rpc_replay.iter().zip(&replay) {
            assert_eq!(
                comparable(&rest_event["data"]),
                comparable(&rpc_event["result"])
            );
        }
    }

    // A terminal task cannot be subscribed to: an HTTP error, not an event.
    let rpc = gw
        .stream("SubscribeToTask", json!({"id": rpc_streamed_id}), None)
        .await;
    let rest_refused = rest(
        &gw,
        Method::POST,
        &format!("/tasks/{streamed_id}:subscribe"),
        None,
    )
    .await;
    same_error(&rpc.1[0].1["error"], &rest_refused, 400);

    // CancelTask of a running task, then again.
    let held = || {
        json!({"message": message("held", json!({"hold": true})),
               "configuration": {"returnImmediately": true}})
    };
    let rpc_held = gw.ok("SendMessage", held()).await;
    let rest_held = rest(&gw, Method::POST, "/message:send", Some(held())).await;
    assert_eq!(comparable(&rest_held.body), comparable(&rpc_held));
    let held_id = rest_held.body["task"]["id"].as_str().unwrap().to_owned();
    let rpc = gw
        .ok("CancelTask", json!({"id": rpc_held["task"]["id"]}))
        .await;
    let canceled = rest(&gw, Method::POST, &format!("/tasks/{held_id}:cancel"), None).await;
    assert_eq!(canceled.status, 200);
    assert_eq!(comparable(&canceled.body), comparable(&rpc));
    assert_eq!(canceled.body["status"]["state"], "TASK_STATE_CANCELED");
    let rpc = gw
        .err("CancelTask", json!({"id": rpc_held["task"]["id"]}))
        .await;
    let again = rest(&gw, Method::POST, &format!("/tasks/{held_id}:cancel"), None).await;
    same_error(&rpc, &again, 400);
    assert_eq!(
        again.body["error"]["details"][0]["reason"],
        "TASK_NOT_CANCELABLE"
    );

    // Errors: an unknown task, bad params, push without a push service.
    let rpc = gw.err("GetTask", json!({"id": "no-such-task"})).await;
    let missing = rest(&gw, Method::GET, "/tasks/no-such-task", None).await;
    same_error(&rpc, &missing, 404);
    assert_eq!(missing.body["error"]["status"], "NOT_FOUND");
    let rpc = gw
        .err("SendMessage", json!({"message": {"role": "ROLE_USER"}}))
        .await;
    let bad = rest(
        &gw,
        Method::POST,
        "/message:send",
        Some(json!({"message": {"role": "ROLE_USER"}})),
    )
    .await;
    same_error(&rpc, &bad, 400);
    assert_eq!(bad.body["error"]["details"][0]["reason"], "INVALID_PARAMS");
    let rpc = gw.err("ListTasks", json!({"pageSize": 500})).await;
    let bad_page = rest(&gw, Method::GET, "/tasks?pageSize=500", None).await;
    same_error(&rpc, &bad_page, 400);
    let rpc = gw
        .err(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": rest_id}),
        )
        .await;
    let no_push = rest(
        &gw,
        Method::GET,
        &format!("/tasks/{rest_id}/pushNotificationConfigs"),
        None,
    )
    .await;
    same_error(&rpc, &no_push, 400);
}

#[tokio::test]
async fn rest_refusals_carry_http_statuses_and_their_headers() {
    let gw = gateway().await;
    // No credentials: 401 with a challenge, in the binding's error shape.
    let anonymous = gw
        .send(
            Request::get("/tasks")
                .header("host", "agent.test:8080")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(anonymous.status(), 401);
    assert!(
        anonymous.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let bytes = anonymous.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED");

    // A skill whose scope the caller lacks: 403.
    let auditor = gw.as_identity(&gw.credentials.audit_token, &gw.credentials.alice);
    let mut chaos = message("x", Value::Null);
    chaos["metadata"] = json!({"skill": "chaos"});
    let refused = rest(
        &auditor,
        Method::POST,
        "/message:send",
        Some(json!({"message": chaos})),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["status"], "PERMISSION_DENIED");

    // Another user's task is not found.
    let sent = rest(
        &gw,
        Method::POST,
        "/message:send",
        Some(json!({"message": message("mine", json!({"steps": 0}))})),
    )
    .await;
    let id = sent.body["task"]["id"].as_str().unwrap().to_owned();
    let bob = gw.as_identity(&gw.credentials.admin_token, &gw.credentials.bob);
    assert_eq!(
        rest(&bob, Method::GET, &format!("/tasks/{id}"), None)
            .await
            .status,
        404
    );
    // Under a tenant prefix: refused, naming the tenant (fundi serves none).
    let tenant = rest(&gw, Method::GET, &format!("/acme/tasks/{id}"), None).await;
    assert_eq!(tenant.status, 400, "{}", tenant.body);
    let message = tenant.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"acme\" is not served here"), "{message}");
}

#[tokio::test]
async fn paths_versions_media_types_and_sizes_are_checked() {
    let gw = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.max_body_bytes = 4096;
        gateway_config
    })
    .await;
    // Nothing there: 404 without asking for credentials.
    let nothing = rest(&gw, Method::POST, "/no/such/path", Some(json!({}))).await;
    assert_eq!(nothing.status, 404);
    // ...saying where the A2A endpoints are.
    let said = nothing.body["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.contains("POST /no/such/path")
            && said.contains("POST /a2a")
            && said.contains("/message:send"),
        "{said}"
    );
    // The wrong method: 405 with Allow.
    let wrong = rest(&gw, Method::GET, "/message:send", None).await;
    assert_eq!(wrong.status, 405);
    assert_eq!(wrong.headers["allow"], "POST");
    assert_eq!(wrong.body["error"]["code"], 405);
    // This binding speaks v1.0.
    let old = rest_with(&gw, Method::GET, "/tasks", None, &[("a2a-version", "0.3")]).await;
    assert_eq!(old.status, 400);
    assert_eq!(
        old.body["error"]["details"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
    assert!(
        old.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("supported: 1.0")
    );
    let current = rest_with(&gw, Method::GET, "/tasks", None, &[("a2a-version", "1.0")]).await;
    assert_eq!(current.status, 200);
    // A body that is not JSON, or not an object, or too large.
    let text = gw
        .send(
            gw.post("/message:send")
                .header("content-type", "text/plain")
                .body(Body::from("hello"))
                .unwrap(),
        )
        .await;
    assert_eq!(text.status(), 400);
    let array = rest(&gw, Method::POST, "/message:send", Some(json!([1]))).await;
    assert_eq!(array.status, 400);
    assert_eq!(
        array.body["error"]["details"][0]["reason"],
        "INVALID_REQUEST"
    );
    let large = json!({"message": message(&"x".repeat(5000), Value::Null)});
    let too_large = rest(&gw, Method::POST, "/message:send", Some(large)).await;
    assert_eq!(too_large.status, 413);
    assert!(
        too_large.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gateway.max-body-bytes")
    );
    // A query value of the wrong type names the field.
    let bad = rest(&gw, Method::GET, "/tasks?pageSize=ten", None).await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.body["error"]["details"][1]["fieldViolations"][0]["field"],
        "pageSize"
    );
    // A push config whose task the path contradicts.
    let contradicted = rest(
        &gw,
        Method::POST,
        "/tasks/a/pushNotificationConfigs",
        Some(json!({"taskId": "b", "url": "http://127.0.0.1:1/"})),
    )
    .await;
    assert_eq!(contradicted.status, 400);
}

#[tokio::test]
async fn the_binding_can_be_turned_off() {
    let gw = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.rest = false;
        gateway_config
    })
    .await;
    let off = rest(&gw, Method::GET, "/tasks", None).await;
    assert_eq!(off.status, 404);
    let said = off.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("POST /a2a") && said.contains("gateway.rest"),
        "{said}"
    );
    let card = gw
        .send(
            Request::get("/.well-known/agent-card.json")
                .header("a2a-version", "1.0")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    let bytes = card.into_body().collect().await.unwrap().to_bytes();
    let card: Value = serde_json::from_slice(&bytes).unwrap();
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    assert!(
        interfaces
            .iter()
            .all(|i| i["protocolBinding"] != "HTTP+JSON")
    );
    // JSON-RPC is unaffected.
    gw.ok("ListTasks", json!({})).await;
}
