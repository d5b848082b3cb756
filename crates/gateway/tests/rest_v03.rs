//! v0.3's HTTP+JSON routes (`/v1/...`): v0.3 ProtoJSON in and out, answered by the v0.3
//! JSON-RPC methods (so v0.3 semantics hold: `blocking`, push bodies), and listed on
//! both cards only while `gateway.rest` is on.

mod common;

use axum::body::Body;
use axum::http::{Method, Request};
use common::*;
use fundi_gateway::{DEFAULT_USER_HEADER, GatewayConfig};
use http_body_util::BodyExt;
use serde_json::{Value, json};

async fn call(gw: &Gateway, method: Method, uri: &str, body: Option<Value>) -> (u16, String) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "agent.test:8080")
        .header("authorization", format!("Bearer {}", gw.identity.0))
        .header(DEFAULT_USER_HEADER, &gw.identity.1)
        .header("content-type", "application/json");
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let response = gw.send(request.body(body).unwrap()).await;
    let status = response.status().as_u16();
    let bytes = tokio::time::timeout(DEADLINE, response.into_body().collect())
        .await
        .expect("the answer ended")
        .unwrap()
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

async fn json_call(gw: &Gateway, method: Method, uri: &str, body: Option<Value>) -> (u16, Value) {
    let (status, text) = call(gw, method, uri, body).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn v03_message(text: &str, data: Value) -> Value {
    json!({"messageId": format!("m-{text}-{}", rand::random::<u64>()), "role": "ROLE_USER",
           "content": [{"text": text}, {"data": {"data": data}}]})
}

#[tokio::test]
async fn v03_routes_speak_v03_proto_json() {
    let gw = gateway().await;
    let send = json!({"message": v03_message("old", json!({"steps": 1})),
                      "configuration": {"blocking": true}});
    let (status, sent) = json_call(&gw, Method::POST, "/v1/message:send", Some(send)).await;
    assert_eq!(status, 200, "{sent}");
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    assert_eq!(task["history"][0]["content"][0]["text"], "old");
    assert_eq!(task["history"][0]["content"][1]["data"]["data"]["steps"], 1);
    assert!(task["history"][0].get("parts").is_none() && task.get("kind").is_none());
    let id = task["id"].as_str().unwrap().to_owned();

    // GetTask with historyLength, in the same form.
    let (status, got) = json_call(
        &gw,
        Method::GET,
        &format!("/v1/tasks/{id}?historyLength=1"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["history"].as_array().unwrap().len(), 1);

    // Without `blocking`, protobuf's false: the task comes back at once.
    let held = json!({"message": v03_message("held", json!({"hold": true}))});
    let (_, held) = json_call(&gw, Method::POST, "/v1/message:send", Some(held)).await;
    let held_id = held["task"]["id"].as_str().unwrap().to_owned();
    assert_ne!(held["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let (status, canceled) = json_call(
        &gw,
        Method::POST,
        &format!("/v1/tasks/{held_id}:cancel"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELLED");

    // A stream: v0.3 StreamResponses, the last a final status update.
    let stream = json!({"message": v03_message("flow", json!({"steps": 2}))});
    let (status, text) = call(&gw, Method::POST, "/v1/message:stream", Some(stream)).await;
    assert_eq!(status, 200);
    let events = parse_sse(&text);
    assert!(events[0].1.get("task").is_some(), "{text}");
    let last = &events.last().unwrap().1["statusUpdate"];
    assert_eq!(last["final"], true, "{text}");
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED");

    // Errors are HTTP statuses; the version must be 0.3 (or none).
    let (status, _) = json_call(&gw, Method::GET, "/v1/tasks/no-such-task", None).await;
    assert_eq!(status, 404);
    let (status, _) = json_call(
        &gw,
        Method::POST,
        "/v1/message:send",
        Some(json!({"message": {"messageId": "x", "content": []}})),
    )
    .await;
    assert_eq!(status, 400);

    // The extended card is v0.3's card.
    let (status, card) = json_call(&gw, Method::GET, "/v1/card", None).await;
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert!(
        card["capabilities"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["uri"] == "urn:fundi:caller:1")
    );
}

#[tokio::test]
async fn v03_routes_are_on_the_cards_only_with_rest() {
    let card = |gw: Gateway, version: &'static str| async move {
        let request = Request::get("/.well-known/agent-card.json")
            .header("host", "agent.test:8080")
            .header("a2a-version", version)
            .body(Body::empty())
            .unwrap();
        let bytes = gw
            .send(request)
            .await
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    };
    let on = gateway().await;
    let v03 = card(on, "0.3").await;
    assert_eq!(
        v03["additionalInterfaces"],
        json!([{"url": "http://agent.test:8080/a2a", "transport": "JSONRPC"},
               {"url": "http://agent.test:8080", "transport": "HTTP+JSON"}])
    );
    let off = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.rest = false;
        gateway_config
    })
    .await;
    let v03 = card(off, "0.3").await;
    assert_eq!(v03["additionalInterfaces"].as_array().unwrap().len(), 1);
}
