//! The gRPC binding: every scenario sent through gRPC and JSON-RPC gives the same
//! results field by field (ids, times, and what protobuf cannot tell from a default
//! aside), errors carry the same `ErrorInfo` and `BadRequest`, and the gate (both
//! credentials, the rate limit, the size limit, the version) holds as it does on HTTP.

mod common;

use std::net::SocketAddr;

use a2a_pb::proto::a2a_service_client::A2aServiceClient;
use a2a_pb::{proto, protojson};
use common::*;
use fundi_gateway::GatewayConfig;
use futures::StreamExt;
use serde_json::{Value, json};
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// The metadata key of each update's event id.
const EVENT_ID: &str = "urn:fundi:event-id";

async fn client(address: SocketAddr) -> A2aServiceClient<Channel> {
    A2aServiceClient::connect(format!("http://{address}"))
        .await
        .expect("the gRPC client connects")
}

/// A JSON-RPC params object as the protobuf request `P`.
fn proto<P: prost::Message + Default, J: prost::Message + serde::de::DeserializeOwned>(
    json: Value,
) -> P {
    let twin: J = serde_json::from_value(json).unwrap();
    P::decode(twin.encode_to_vec().as_slice()).unwrap()
}

/// A protobuf answer as ProtoJSON, the way JSON-RPC would send it.
fn json_of<P: prost::Message, J: prost::Message + Default + serde::Serialize>(
    message: &P,
) -> Value {
    let twin = J::decode(message.encode_to_vec().as_slice()).unwrap();
    serde_json::to_value(twin).unwrap()
}

/// `comparable`, also without what protobuf cannot carry apart from a default (empty
/// arrays and objects, false, zero, "") and with every number as a float: a JSON-RPC
/// answer and a gRPC one are the same when these are.
fn canonical(value: &Value) -> Value {
    fn strip(value: &Value) -> Option<Value> {
        match value {
            Value::Object(object) => {
                let kept: serde_json::Map<String, Value> = object
                    .iter()
                    .filter(|(key, _)| key.as_str() != EVENT_ID)
                    .filter_map(|(key, value)| Some((key.clone(), strip(value)?)))
                    .collect();
                (!kept.is_empty()).then_some(Value::Object(kept))
            }
            Value::Array(items) => {
                let kept: Vec<Value> = items
                    .iter()
                    .map(|v| strip(v).unwrap_or(json!({})))
                    .collect();
                (!kept.is_empty()).then_some(Value::Array(kept))
            }
            Value::Bool(false) | Value::Null => None,
            Value::String(s) if s.is_empty() => None,
            Value::Number(n) if n.as_f64() == Some(0.0) => None,
            Value::Number(n) => Some(json!(n.as_f64().unwrap())),
            other => Some(other.clone()),
        }
    }
    strip(&comparable(value)).unwrap_or(Value::Null)
}

/// A JSON-RPC error and a gRPC status say the same thing.
fn same_error(rpc: &Value, status: &Status, code: Code) {
    assert_eq!(status.code(), code, "{status:?}");
    assert_eq!(
        comparable(&json!(status.message())),
        comparable(&rpc["message"])
    );
    for detail in rpc["data"].as_array().cloned().unwrap_or_default() {
        match detail["@type"].as_str().unwrap() {
            "type.googleapis.com/google.rpc.ErrorInfo" => {
                let info = status.get_details_error_info().expect("an ErrorInfo");
                assert_eq!(info.reason, detail["reason"].as_str().unwrap());
                assert_eq!(info.domain, "a2a-protocol.org");
                let metadata = comparable(&json!(info.metadata));
                assert_eq!(metadata, comparable(&detail["metadata"]));
            }
            "type.googleapis.com/google.rpc.BadRequest" => {
                let bad = status.get_details_bad_request().expect("a BadRequest");
                let field = &detail["fieldViolations"][0]["field"];
                assert_eq!(json!(bad.field_violations[0].field), *field);
            }
            other => panic!("an unexpected detail {other}"),
        }
    }
}

/// Every update of a stream, each with the event id its metadata carries.
async fn read_stream(
    stream: tonic::Response<tonic::codec::Streaming<proto::StreamResponse>>,
) -> Vec<(Option<u64>, Value)> {
    let mut stream = stream.into_inner();
    let mut updates = Vec::new();
    let read = async {
        while let Some(update) = stream.next().await {
            let json = json_of::<_, protojson::StreamResponse>(&update.unwrap());
            let event = json
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(|e| e["metadata"][EVENT_ID].as_str())
                .map(|id| id.parse().unwrap());
            updates.push((event, json));
        }
    };
    tokio::time::timeout(DEADLINE, read)
        .await
        .expect("the stream did not end");
    updates
}

#[tokio::test]
async fn every_scenario_answers_the_same_over_grpc_and_json_rpc() {
    let gw = gateway().await;
    let mut grpc = client(serve_on_loopback(&gw).await).await;
    let send = || json!({"message": message("both", json!({"steps": 2}))});
    let send_proto = || proto::<proto::SendMessageRequest, protojson::SendMessageRequest>(send());

    // SendMessage, blocking.
    let rpc = gw.ok("SendMessage", send()).await;
    let sent = grpc
        .send_message(grpc_call(&gw, send_proto()))
        .await
        .unwrap()
        .into_inner();
    let sent = json_of::<_, protojson::SendMessageResponse>(&sent);
    assert_eq!(canonical(&sent), canonical(&rpc));
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let rpc_id = rpc["task"]["id"].as_str().unwrap().to_owned();

    // GetTask, with historyLength.
    let rpc = gw
        .ok("GetTask", json!({"id": rpc_id, "historyLength": 1}))
        .await;
    let request = proto::GetTaskRequest {
        id: id.clone(),
        history_length: Some(1),
        ..Default::default()
    };
    let got = grpc
        .get_task(grpc_call(&gw, request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.history.len(), 1);
    assert_eq!(
        canonical(&json_of::<_, protojson::Task>(&got)),
        canonical(&rpc)
    );

    // ListTasks, filtered by context, one per page.
    let rpc = gw
        .ok(
            "ListTasks",
            json!({"contextId": rpc["contextId"], "pageSize": 1, "includeArtifacts": true}),
        )
        .await;
    let request = proto::ListTasksRequest {
        context_id: got.context_id.clone(),
        page_size: Some(1),
        include_artifacts: Some(true),
        ..Default::default()
    };
    let listed = grpc
        .list_tasks(grpc_call(&gw, request))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.tasks[0].id, id);
    let listed = json_of::<_, protojson::ListTasksResponse>(&listed);
    assert_eq!(canonical(&listed), canonical(&rpc));

    // SendStreamingMessage: the same events, each with its event id.
    let stream = || json!({"message": message("streamed", json!({"steps": 3}))});
    let (_, rpc_events) = gw.stream("SendStreamingMessage", stream(), None).await;
    let request = proto::<proto::SendMessageRequest, protojson::SendMessageRequest>(stream());
    let events = read_stream(
        grpc.send_streaming_message(grpc_call(&gw, request))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(events.len(), rpc_events.len());
    for ((rpc_seq, rpc_event), (seq, event)) in rpc_events.iter().zip(&events).skip(1) {
        assert_eq!(seq, rpc_seq, "each update carries its event id");
        assert_eq!(canonical(event), canonical(&rpc_event["result"]));
    }
    assert_eq!(
        canonical(&events[0].1),
        canonical(&rpc_events[0].1["result"])
    );
    let streamed = events[0].1["task"]["id"].as_str().unwrap().to_owned();

    // SubscribeToTask after an event id (the `last-event-id` metadata): the rest.
    let rpc_streamed = rpc_events[0].1["result"]["task"]["id"].clone();
    let (_, rpc_replay) = gw
        .stream("SubscribeToTask", json!({"id": rpc_streamed}), Some(2))
        .await;
    let mut resume = grpc_call(
        &gw,
        proto::SubscribeToTaskRequest {
            id: streamed.clone(),
            ..Default::default()
        },
    );
    resume
        .metadata_mut()
        .insert("last-event-id", "2".parse().unwrap());
    let replay = read_stream(grpc.subscribe_to_task(resume).await.unwrap()).await;
    assert!(!replay.is_empty());
    assert_eq!(replay.len(), rpc_replay.len());
    assert!(replay.iter().all(|(seq, _)| seq.unwrap() > 2));
    for ((_, rpc_event), (_, event)) in rpc_replay.iter().zip(&replay) {
        assert_eq!(canonical(event), canonical(&rpc_event["result"]));
    }

    // A terminal task cannot be subscribed to: a status, not an update.
    let rpc = gw
        .stream("SubscribeToTask", json!({"id": rpc_streamed}), None)
        .await;
    let request = proto::SubscribeToTaskRequest {
        id: streamed,
        ..Default::default()
    };
    let refused = grpc
        .subscribe_to_task(grpc_call(&gw, request))
        .await
        .unwrap_err();
    same_error(&rpc.1[0].1["error"], &refused, Code::FailedPrecondition);

    // CancelTask of a running task, then again.
    let held = || {
        json!({"message": message("held", json!({"hold": true})),
               "configuration": {"returnImmediately": true}})
    };
    let rpc_held = gw.ok("SendMessage", held()).await;
    let request = proto::<proto::SendMessageRequest, protojson::SendMessageRequest>(held());
    let grpc_held = grpc
        .send_message(grpc_call(&gw, request))
        .await
        .unwrap()
        .into_inner();
    let grpc_held = json_of::<_, protojson::SendMessageResponse>(&grpc_held);
    assert_eq!(canonical(&grpc_held), canonical(&rpc_held));
    let cancel = || proto::CancelTaskRequest {
        id: grpc_held["task"]["id"].as_str().unwrap().to_owned(),
        ..Default::default()
    };
    let rpc = gw
        .ok("CancelTask", json!({"id": rpc_held["task"]["id"]}))
        .await;
    let canceled = grpc
        .cancel_task(grpc_call(&gw, cancel()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        canceled.status.as_ref().unwrap().state,
        proto::TaskState::Canceled as i32
    );
    assert_eq!(
        canonical(&json_of::<_, protojson::Task>(&canceled)),
        canonical(&rpc)
    );
    let rpc = gw
        .err("CancelTask", json!({"id": rpc_held["task"]["id"]}))
        .await;
    let again = grpc
        .cancel_task(grpc_call(&gw, cancel()))
        .await
        .unwrap_err();
    same_error(&rpc, &again, Code::FailedPrecondition);
    assert_eq!(
        again.get_details_error_info().unwrap().reason,
        "TASK_NOT_CANCELABLE"
    );

    // Errors: an unknown task, bad params, push without a push service.
    let rpc = gw.err("GetTask", json!({"id": "no-such-task"})).await;
    let request = proto::GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    };
    let missing = grpc.get_task(grpc_call(&gw, request)).await.unwrap_err();
    same_error(&rpc, &missing, Code::NotFound);
    let rpc = gw
        .err("SendMessage", json!({"message": {"role": "ROLE_USER"}}))
        .await;
    let request = proto::<proto::SendMessageRequest, protojson::SendMessageRequest>(
        json!({"message": {"role": "ROLE_USER"}}),
    );
    let bad = grpc
        .send_message(grpc_call(&gw, request))
        .await
        .unwrap_err();
    same_error(&rpc, &bad, Code::InvalidArgument);
    let rpc = gw
        .err(
            "GetTaskPushNotificationConfig",
            json!({"taskId": rpc_id, "id": "x"}),
        )
        .await;
    let request = proto::GetTaskPushNotificationConfigRequest {
        task_id: id,
        id: "x".into(),
        ..Default::default()
    };
    let no_push = grpc
        .get_task_push_notification_config(grpc_call(&gw, request))
        .await
        .unwrap_err();
    same_error(&rpc, &no_push, Code::FailedPrecondition);
    assert_eq!(
        no_push.get_details_error_info().unwrap().reason,
        "PUSH_NOTIFICATION_NOT_SUPPORTED"
    );
}

#[tokio::test]
async fn the_gate_holds_on_grpc_as_on_http() {
    let gw = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.max_body_bytes = 4096;
        gateway_config.rate_limit_per_minute = 1;
        gateway_config.rate_limit_burst = 3;
        gateway_config
    })
    .await;
    let mut grpc = client(serve_on_loopback(&gw).await).await;
    let get = || proto::GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    };

    // No credentials: UNAUTHENTICATED, with the challenge HTTP would send.
    let anonymous = grpc.get_task(tonic::Request::new(get())).await.unwrap_err();
    assert_eq!(anonymous.code(), Code::Unauthenticated, "{anonymous:?}");
    let challenge = anonymous.metadata().get("www-authenticate").unwrap();
    assert!(challenge.to_str().unwrap().starts_with("Bearer"));
    // The bearer token alone is not enough either.
    let mut half = tonic::Request::new(get());
    let bearer = format!("Bearer {}", gw.identity.0);
    half.metadata_mut()
        .insert("authorization", bearer.parse().unwrap());
    let half = grpc.get_task(half).await.unwrap_err();
    assert_eq!(half.code(), Code::Unauthenticated);

    // A version this binding does not speak.
    let mut older = grpc_call(&gw, get());
    older
        .metadata_mut()
        .insert("a2a-version", "0.3".parse().unwrap());
    let older = grpc.get_task(older).await.unwrap_err();
    assert_eq!(older.code(), Code::FailedPrecondition);
    assert_eq!(
        older.get_details_error_info().unwrap().reason,
        "VERSION_NOT_SUPPORTED"
    );

    // A message above gateway.max-body-bytes is refused before it is decoded.
    let large = json!({"message": message(&"x".repeat(8192), Value::Null)});
    let large = proto::<proto::SendMessageRequest, protojson::SendMessageRequest>(large);
    let refused = grpc.send_message(grpc_call(&gw, large)).await.unwrap_err();
    assert_eq!(refused.code(), Code::OutOfRange, "{refused:?}");

    // The rate limit: past the burst, RESOURCE_EXHAUSTED with Retry-After.
    let limited = loop {
        match grpc.get_task(grpc_call(&gw, get())).await {
            Err(status) if status.code() == Code::ResourceExhausted => break status,
            Err(status) => assert_eq!(status.code(), Code::NotFound, "{status:?}"),
            Ok(task) => panic!("an unknown task was found: {task:?}"),
        }
    };
    let retry: u64 = limited
        .metadata()
        .get("retry-after")
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    assert_eq!(
        limited.get_details_error_info().unwrap().reason,
        "RATE_LIMITED"
    );
}

#[tokio::test]
async fn grpc_off_is_neither_served_nor_on_the_card() {
    let card = |gw: Gateway| async move {
        let response = gw
            .send(
                axum::http::Request::get("/.well-known/agent-card.json")
                    .header("host", "agent.test:8080")
                    .header("a2a-version", "1.0")
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await;
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        let card: Value = serde_json::from_slice(&bytes).unwrap();
        card["supportedInterfaces"].as_array().unwrap().clone()
    };
    let listed = card(gateway().await).await;
    let grpc = listed
        .iter()
        .find(|i| i["protocolBinding"] == "GRPC")
        .unwrap();
    assert_eq!(grpc["url"], "agent.test:8080");
    assert_eq!(grpc["protocolVersion"], "1.0");

    let off = gateway_with({
        let mut gateway_config = GatewayConfig::default();
        gateway_config.grpc = false;
        gateway_config
    })
    .await;
    let mut grpc = client(serve_on_loopback(&off).await).await;
    let request = proto::GetTaskRequest {
        id: "t".into(),
        ..Default::default()
    };
    let refused = grpc.get_task(grpc_call(&off, request)).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unimplemented, "{refused:?}");
    assert!(refused.message().contains("gateway.grpc"), "{refused:?}");
    assert!(
        card(off)
            .await
            .iter()
            .all(|i| i["protocolBinding"] != "GRPC")
    );
}
