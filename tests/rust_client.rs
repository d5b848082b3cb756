//! Interoperability with the official A2A Rust client (`a2a-client-lf`, from the
//! a2a-rs project): card resolution, transport negotiation, and every v1.0 task method
//! against the real binary, over JSON-RPC, HTTP+JSON and gRPC (its `a2a-grpc`
//! transport, dialling the address the card lists).

mod common;

use a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, TaskState,
};
use std::sync::Arc;

use a2a_client::A2AClientFactory;
use a2a_client::agent_card::AgentCardResolver;
use a2a_client::auth::AuthInterceptor;
use common::*;
use futures::StreamExt;
use serde_json::json;

fn send(
    text: &str,
    data: Option<serde_json::Value>,
    return_immediately: bool,
) -> SendMessageRequest {
    let mut parts = vec![Part::text(text)];
    if let Some(data) = data {
        parts.push(Part::data(data));
    }
    SendMessageRequest {
        message: Message::new(Role::User, parts),
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: None,
            history_length: None,
            return_immediately: Some(return_immediately),
        }),
        metadata: None,
        tenant: None,
    }
}

fn task_of(response: SendMessageResponse) -> a2a::Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("expected a task, got a message: {m:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_rust_client_drives_every_task_method_over_json_rpc() {
    drive_every_task_method("JSONRPC").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_rust_client_drives_every_task_method_over_http_json() {
    drive_every_task_method("HTTP+JSON").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_rust_client_drives_every_task_method_over_grpc() {
    drive_every_task_method("GRPC").await;
}

/// The official client for `server`'s `card`, with both credentials, speaking the
/// card's interface in `binding` (gRPC through `a2a-grpc`'s transport).
async fn client_for(
    server: &Server,
    card: &a2a::AgentCard,
    binding: &str,
) -> (
    a2a_client::A2AClient<Box<dyn a2a_client::Transport>>,
    a2a::AgentInterface,
) {
    A2AClientFactory::builder()
        .register(Arc::new(a2a_grpc::GrpcTransportFactory::new()))
        .preferred_bindings(vec![binding.to_owned()])
        .with_interceptor(Arc::new(AuthInterceptor::bearer(&server.token)))
        .with_interceptor(Arc::new(AuthInterceptor::custom(
            "X-Fundi-User-Token",
            &server.user_token,
        )))
        .build()
        .create_from_card_with_interface(card)
        .await
        .expect("a transport from the card")
}

/// Every task method through the client, which picks `binding` from the card.
async fn drive_every_task_method(binding: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let card = AgentCardResolver::new(None)
        .resolve(&server.url)
        .await
        .expect("card resolves");
    assert!(card.capabilities.streaming.unwrap_or(false));
    let (client, interface) = client_for(&server, &card, binding).await;
    assert_eq!(interface.protocol_binding, binding);
    assert_eq!(interface.protocol_version, "1.0");

    let done = task_of(
        client
            .send_message(&send("hello rust", None, false))
            .await
            .unwrap(),
    );
    assert_eq!(done.status.state, TaskState::Completed);
    let artifact = &done.artifacts.as_ref().unwrap()[0];
    assert_eq!(artifact.parts[0].as_text(), Some("hello rust"));

    let got = client
        .get_task(&GetTaskRequest {
            id: done.id.clone(),
            history_length: Some(1),
            tenant: None,
        })
        .await
        .unwrap();
    assert_eq!(got.history.unwrap().len(), 1);

    let mut stream = client
        .send_streaming_message(&send("streamed", Some(json!({"steps": 2})), false))
        .await
        .unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.expect("a well-formed event"));
    }
    assert!(
        matches!(events[0], StreamResponse::Task(_)),
        "{:?}",
        events[0]
    );
    match events.last().unwrap() {
        StreamResponse::StatusUpdate(update) => {
            assert_eq!(update.status.state, TaskState::Completed)
        }
        other => panic!("last event {other:?}"),
    }

    let running = task_of(
        client
            .send_message(&send(
                "watch",
                Some(json!({"steps": 5, "delayMs": 30})),
                true,
            ))
            .await
            .unwrap(),
    );
    let mut watched = client
        .subscribe_to_task(&SubscribeToTaskRequest {
            id: running.id.clone(),
            tenant: None,
        })
        .await
        .unwrap();
    let mut last = None;
    while let Some(event) = watched.next().await {
        last = Some(event.unwrap());
    }
    assert!(
        matches!(last, Some(StreamResponse::StatusUpdate(ref u)) if u.status.state == TaskState::Completed)
    );

    let slow = task_of(
        client
            .send_message(&send(
                "slow",
                Some(json!({"steps": 500, "delayMs": 50})),
                true,
            ))
            .await
            .unwrap(),
    );
    let canceled = client
        .cancel_task(&CancelTaskRequest {
            id: slow.id.clone(),
            metadata: None,
            tenant: None,
        })
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let again = client
        .cancel_task(&CancelTaskRequest {
            id: slow.id.clone(),
            metadata: None,
            tenant: None,
        })
        .await;
    assert!(again.is_err());

    let listed = client
        .list_tasks(&ListTasksRequest {
            context_id: Some(done.context_id.clone()),
            status: None,
            page_size: Some(10),
            page_token: None,
            history_length: None,
            status_timestamp_after: None,
            include_artifacts: None,
            tenant: None,
        })
        .await
        .unwrap();
    assert_eq!(listed.tasks.len(), 1);
    assert_eq!(listed.tasks[0].id, done.id);
    assert_eq!(listed.next_page_token, "");

    let missing = client
        .get_task(&GetTaskRequest {
            id: "no-such-task".into(),
            history_length: None,
            tenant: None,
        })
        .await;
    assert!(missing.is_err());
}

/// `gateway.grpc-bind`: gRPC on a port of its own, the one the card lists, where the
/// client follows it; the HTTP port then speaks HTTP/1.1 only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_rust_client_follows_grpc_to_a_port_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("FUNDI__GATEWAY__GRPC_BIND", "127.0.0.1:0")]);
    let card = AgentCardResolver::new(None)
        .resolve(&server.url)
        .await
        .expect("card resolves");
    let grpc = card
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == "GRPC")
        .expect("the card lists gRPC");
    let http_port = server.url.rsplit(':').next().unwrap();
    assert!(grpc.url.starts_with("127.0.0.1:"), "{}", grpc.url);
    assert_ne!(grpc.url.rsplit(':').next().unwrap(), http_port);
    let (client, interface) = client_for(&server, &card, "GRPC").await;
    assert_eq!(interface.url, grpc.url);
    let done = task_of(
        client
            .send_message(&send("over there", None, false))
            .await
            .unwrap(),
    );
    assert_eq!(done.status.state, TaskState::Completed);

    // The HTTP port no longer speaks HTTP/2: a gRPC client cannot call there.
    let elsewhere = a2a_grpc::GrpcTransport::connect(format!("127.0.0.1:{http_port}")).await;
    if let Ok(transport) = elsewhere {
        let call = a2a_client::transport::Transport::get_task(
            &transport,
            &Default::default(),
            &GetTaskRequest {
                id: done.id.clone(),
                history_length: None,
                tenant: None,
            },
        )
        .await;
        assert!(call.is_err(), "gRPC was answered on the HTTP port");
    }
}

/// `gateway.grpc = false`: the card lists no gRPC interface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_turned_off_leaves_the_card() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("FUNDI__GATEWAY__GRPC", "false")]);
    let card = AgentCardResolver::new(None)
        .resolve(&server.url)
        .await
        .expect("card resolves");
    let bindings: Vec<&str> = card
        .supported_interfaces
        .iter()
        .map(|i| i.protocol_binding.as_str())
        .collect();
    assert!(!bindings.contains(&"GRPC"), "{bindings:?}");
    assert!(bindings.contains(&"JSONRPC"));
}
