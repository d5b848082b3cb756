//! Interoperability with the official A2A Rust client (`a2a-client-lf`, from the
//! a2a-rs project): card resolution, transport negotiation, and every v1.0 task method
//! against the real binary, over JSON-RPC and over HTTP+JSON.

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

/// Every task method through the client, which picks `binding` from the card.
async fn drive_every_task_method(binding: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let card = AgentCardResolver::new(None)
        .resolve(&server.url)
        .await
        .expect("card resolves");
    assert!(card.capabilities.streaming.unwrap_or(false));
    let (client, interface) = A2AClientFactory::builder()
        .preferred_bindings(vec![binding.to_owned()])
        .with_interceptor(Arc::new(AuthInterceptor::bearer(&server.token)))
        .with_interceptor(Arc::new(AuthInterceptor::custom(
            "X-Fundi-User-Token",
            &server.user_token,
        )))
        .build()
        .create_from_card_with_interface(&card)
        .await
        .expect("a transport from the card");
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
