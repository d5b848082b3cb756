//! fundi's own client (`fundi-client`) against the real binary: a task sent, read and
//! canceled with the official A2A types, and a refused credential told apart from a
//! server that is not there.

mod common;

use common::*;
use fundi_client::a2a::TaskState;
use fundi_client::{Client, ClientError, Credentials, user_message};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_sends_reads_and_cancels_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let fundi = Client::new(&server.url, "the test's tokens");
    let me = Credentials::new(server.token.clone(), server.user_token.clone());

    let done = fundi
        .send_message(&me, &user_message("hello", None, Some("echo")), false)
        .await
        .unwrap();
    assert_eq!(done.status.state, TaskState::Completed);

    let slow = json!({"steps": 50, "delayMs": 200});
    let running = fundi
        .send_message(&me, &user_message("slow", Some(slow), Some("echo")), true)
        .await
        .unwrap();
    let read = fundi.get_task(&me, &running.id, Some(1)).await.unwrap();
    assert_eq!(read.id, running.id);
    assert!(read.history.unwrap_or_default().len() <= 1);
    let canceled = fundi.cancel_task(&me, &running.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);

    let missing = fundi.get_task(&me, "no-such-task", None).await.unwrap_err();
    assert!(
        matches!(
            missing,
            ClientError::Refused {
                code: Some(-32001),
                ..
            }
        ),
        "{missing}"
    );
    let stranger = Credentials::new("not-a-token", server.user_token.clone());
    let refused = fundi.get_task(&stranger, &done.id, None).await.unwrap_err();
    assert!(
        matches!(refused, ClientError::Unauthenticated(_)),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("the test's tokens"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_yields_each_result_in_order_to_the_end() {
    use futures::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let fundi = Client::new(&server.url, "the test's tokens");
    let me = Credentials::new(server.token.clone(), server.user_token.clone());
    let message = user_message("steps", Some(json!({"steps": 3})), Some("echo"));
    let params = json!({"message": message});
    let mut results = fundi
        .stream_call(&me, "SendStreamingMessage", params)
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(result) = results.next().await {
        seen.push(result.unwrap());
    }
    assert!(
        seen[0].get("task").is_some(),
        "the task first: {:?}",
        seen[0]
    );
    let last = &seen.last().unwrap()["statusUpdate"]["status"]["state"];
    assert_eq!(last, "TASK_STATE_COMPLETED", "{seen:?}");
    assert!(
        seen.len() >= 5,
        "created, working, three steps, done: {seen:?}"
    );

    // Refused before the stream opens, or as its first and last frame.
    let refused = match fundi
        .stream_call(&me, "SendStreamingMessage", json!({"message": {}}))
        .await
    {
        Err(refused) => refused,
        Ok(mut results) => {
            let first = results.next().await.expect("one frame");
            assert!(results.next().await.is_none(), "nothing after the error");
            first.expect_err("a message without parts is refused")
        }
    };
    assert!(
        matches!(
            refused,
            ClientError::Refused {
                code: Some(-32602),
                ..
            }
        ),
        "{refused}"
    );
}

#[test]
fn the_client_sends_the_user_token_where_the_server_reads_it_by_default() {
    assert_eq!(
        fundi_client::DEFAULT_USER_HEADER,
        fundi_gateway::DEFAULT_USER_HEADER
    );
}

#[tokio::test]
async fn a_server_that_is_not_there_is_unreachable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let fundi = Client::new(&format!("http://127.0.0.1:{port}"), "");
    let me = Credentials::new("t", "u");
    let error = fundi.get_task(&me, "t", None).await.unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Unreachable {
                answered: false,
                ..
            }
        ),
        "{error}"
    );
}
