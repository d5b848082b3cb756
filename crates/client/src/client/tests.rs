//! The client against fake servers: what it tries again, and what it cannot read.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::StatusCode;
use axum::routing::post;

use super::*;

/// A fake fundi answering `/a2a` with `statuses` in turn (then 200), counting calls.
async fn fake(statuses: Vec<StatusCode>) -> (Client, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let router = axum::Router::new().route(
        "/a2a",
        post(move || {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let status = statuses.get(n).copied().unwrap_or(StatusCode::OK);
            async move {
                let body = match status {
                    StatusCode::OK => {
                        json!({"jsonrpc": "2.0", "id": 1, "result": {"fine": true}})
                    }
                    _ => json!({"error": {"message": "not now"}}),
                };
                (status, axum::Json(body))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (Client::new(&url, "set FUNDI_TOKEN"), calls)
}

fn credentials() -> Credentials {
    Credentials {
        token: "t".into(),
        user_token: "u".into(),
        user_header: "X-Fundi-User-Token".into(),
    }
}

#[tokio::test]
async fn busy_answers_are_tried_again_and_a_refused_credential_never_is() {
    let (fundi, calls) = fake(vec![
        StatusCode::SERVICE_UNAVAILABLE,
        StatusCode::TOO_MANY_REQUESTS,
    ])
    .await;
    let result = fundi
        .call(&credentials(), "GetTask", json!({}))
        .await
        .unwrap();
    assert_eq!(result, json!({"fine": true}));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "two tries again, with backoff"
    );

    let (fundi, calls) = fake(vec![StatusCode::UNAUTHORIZED; 5]).await;
    let refused = fundi
        .call(&credentials(), "GetTask", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(refused, ClientError::Unauthenticated(_)));
    assert!(refused.to_string().contains("set FUNDI_TOKEN"), "{refused}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a 401 is not tried again");

    let (fundi, calls) = fake(vec![StatusCode::BAD_GATEWAY; 5]).await;
    let down = fundi
        .call(&credentials(), "GetTask", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(down, ClientError::Unreachable { .. }), "{down}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_empty_success_is_null_and_a_page_that_is_not_json_says_so() {
    let router = axum::Router::new()
        .route(
            "/admin/empty",
            axum::routing::get(|| async { StatusCode::NO_CONTENT }),
        )
        .route(
            "/admin/page",
            axum::routing::get(|| async { (StatusCode::NOT_FOUND, "<html>no agent</html>") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    let client = Client::new(&url, "");
    let empty = client.get(&credentials(), "/admin/empty").await.unwrap();
    assert_eq!(empty, Value::Null);
    let page = client.get(&credentials(), "/admin/page").await.unwrap_err();
    assert!(matches!(page, ClientError::Unexpected(_)), "{page}");
    assert!(
        page.to_string()
            .contains("HTTP 404 Not Found with something that is not JSON"),
        "{page}"
    );
}
