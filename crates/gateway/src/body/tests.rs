use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::post;
use futures::StreamExt;
use tokio::sync::mpsc;
use tower::ServiceExt;

use super::*;
use crate::admission::read_body;

async fn echo_length(body: Body) -> Response {
    match read_body(body, 1 << 20).await {
        Ok(bytes) => axum::response::IntoResponse::into_response(bytes.len().to_string()),
        Err(error) => reply::rest_failure(&error),
    }
}

fn app(limits: Arc<BodyLimits>) -> Router {
    Router::new()
        .route("/", post(echo_length))
        .route("/refuse", post(|| async { StatusCode::UNAUTHORIZED }))
        .layer(GuardBodiesLayer(limits))
}

/// A body whose chunks the test sends when it likes.
fn streamed() -> (mpsc::Sender<Bytes>, Body) {
    let (tx, rx) = mpsc::channel::<Bytes>(8);
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx).map(Ok::<_, std::io::Error>);
    (tx, Body::from_stream(stream))
}

fn post_to(path: &str, body: Body) -> Request<Body> {
    Request::post(path).body(body).unwrap()
}

#[tokio::test]
async fn a_body_read_whole_in_time_gets_through_and_gives_its_budget_back() {
    let limits = Arc::new(BodyLimits::new(1000, Duration::from_secs(5)));
    let response = app(limits.clone())
        .oneshot(post_to("/", Body::from(vec![b'x'; 600])))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(limits.available(), 1000);
}

#[tokio::test]
async fn a_stalled_sender_is_cut_off_with_408_when_its_time_is_up() {
    let limits = Arc::new(BodyLimits::new(1000, Duration::from_millis(200)));
    let (tx, body) = streamed();
    tx.send(Bytes::from_static(b"{\"jsonrpc\"")).await.unwrap();
    let response = app(limits.clone())
        .oneshot(post_to("/", body))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(response.headers()[header::CONNECTION], "close");
    let text = axum::body::to_bytes(response.into_body(), 1 << 16)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&text);
    assert!(text.contains("gateway.body-read-timeout-ms"), "{text}");
    assert_eq!(limits.available(), 1000, "the budget is given back");
    drop(tx);
}

#[tokio::test]
async fn bodies_that_would_pass_the_shared_budget_get_503_until_it_is_given_back() {
    let limits = Arc::new(BodyLimits::new(1000, Duration::from_secs(30)));
    let app = app(limits.clone());
    // One sender holds 900 bytes of the budget and sends no more.
    let (tx, body) = streamed();
    tx.send(Bytes::from(vec![b'x'; 900])).await.unwrap();
    let holder = tokio::spawn(app.clone().oneshot(post_to("/", body)));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while limits.available() > 100 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the body was never read"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let refused = app
        .clone()
        .oneshot(post_to("/", Body::from(vec![b'y'; 200])))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
    // The holder finishes; its bytes go back, and the same body now gets through.
    drop(tx);
    assert_eq!(holder.await.unwrap().unwrap().status(), StatusCode::OK);
    assert_eq!(limits.available(), 1000);
    let accepted = app
        .oneshot(post_to("/", Body::from(vec![b'y'; 200])))
        .await
        .unwrap();
    assert_eq!(accepted.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_handler_that_does_not_read_the_body_takes_nothing_of_the_budget() {
    let limits = Arc::new(BodyLimits::new(1000, Duration::from_millis(100)));
    let (tx, body) = streamed();
    tx.send(Bytes::from(vec![b'x'; 900])).await.unwrap();
    let response = app(limits.clone())
        .oneshot(post_to("/refuse", body))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(limits.available(), 1000);
    drop(tx);
}
