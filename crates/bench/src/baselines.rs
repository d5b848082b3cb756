//! The limits fundi is measured against, served on loopback: a bare axum JSON-RPC echo
//! (the HTTP layer's ceiling) and sled insert + flush per request (the naive durable
//! floor); and the reference the goals name, the official Rust SDK's server in memory
//! (`rust_sdk`). Each runs in its own process (this binary, `--serve-baseline`), like
//! fundi: served from the load generator's own process and runtime, a baseline paid no
//! cross-process scheduling, and the load generator's threads never preempted it.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Answers a SendMessage with a completed task echoing the text, as fundi would, with no
/// task logic and no storage.
async fn echo(body: Bytes) -> axum::Json<Value> {
    axum::Json(answer(&body))
}

fn answer(body: &[u8]) -> Value {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let message = &request["params"]["message"];
    json!({"jsonrpc": "2.0", "id": request["id"], "result": {"task": {
        "id": uuid::Uuid::new_v4().to_string(), "contextId": uuid::Uuid::new_v4().to_string(),
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00.000Z",
                   "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": message["parts"]}},
        "artifacts": [{"artifactId": "echo", "name": "echo", "parts": message["parts"]}],
        "history": [message]}}})
}

/// sled and its log file: sled's flush alone is not durable (it ends with
/// `sync_file_range`), so a durable flush also `fdatasync`s the log, as fundi does.
struct Durable {
    db: sled::Db,
    log: std::fs::File,
}

/// The same answer after inserting the request into sled and flushing durably, once per
/// request.
async fn sled_flush(State(store): State<Arc<Durable>>, body: Bytes) -> axum::Json<Value> {
    let key = uuid::Uuid::new_v4();
    let stored = body.clone();
    tokio::task::spawn_blocking(move || {
        store
            .db
            .insert(key.as_bytes(), stored.as_ref())
            .expect("sled insert");
        store.db.flush().expect("sled flush");
        store.log.sync_data().expect("log sync");
    })
    .await
    .expect("flush task");
    axum::Json(answer(&body))
}

/// Which baseline a `--serve-baseline` process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Baseline {
    /// The bare axum echo.
    Axum,
    /// sled insert + durable flush per request.
    SledFlush,
    /// The official A2A Rust SDK's server with its in-memory store (`rust_sdk`).
    RustSdk,
    /// The same, over its gRPC binding (`a2a-grpc`).
    RustSdkGrpc,
}

/// Serves `baseline` (in `dir` for sled), prints `baseline listening on URL` and serves
/// until the process is killed.
pub(crate) async fn serve_forever(baseline: Baseline, dir: &std::path::Path) -> anyhow::Result<()> {
    let url = match baseline {
        Baseline::Axum => bare_axum().await?,
        Baseline::SledFlush => sled_per_request(dir).await?,
        Baseline::RustSdk => serve(crate::rust_sdk::router()).await?,
        Baseline::RustSdkGrpc => serve_grpc().await?,
    };
    println!("baseline listening on {url}");
    std::future::pending::<()>().await;
    Ok(())
}

/// Serves `router` on 127.0.0.1:0 (TCP_NODELAY, like fundi); returns the base URL.
async fn serve(router: Router) -> anyhow::Result<String> {
    use axum::serve::ListenerExt;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(url)
}

/// Serves the Rust SDK's gRPC service with tonic's own server (HTTP/2 without TLS,
/// TCP_NODELAY); returns the URL a channel dials.
async fn serve_grpc() -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let server = tonic::transport::Server::builder()
        .add_service(crate::rust_sdk::grpc_service())
        .serve_with_incoming(incoming);
    tokio::spawn(server);
    Ok(url)
}

async fn bare_axum() -> anyhow::Result<String> {
    serve(Router::new().route("/a2a", post(echo))).await
}

async fn sled_per_request(dir: &std::path::Path) -> anyhow::Result<String> {
    let db = sled::Config::new().path(dir).flush_every_ms(None).open()?;
    let log = std::fs::File::options()
        .read(true)
        .write(true)
        .open(dir.join("db"))?;
    let store = Arc::new(Durable { db, log });
    serve(
        Router::new()
            .route("/a2a", post(sled_flush))
            .with_state(store),
    )
    .await
}
