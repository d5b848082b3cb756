//! A fake A2A peer on loopback speaking JSON-RPC v1.0, scripted per test: its card
//! (with an ETag, answered 304 when it has not changed), the calls it was sent, and how
//! it answers them.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_peers::signature::CardKey;
use serde_json::{Value, json};

/// How the peer answers.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// Answer every A2A call 401.
    pub unauthorized: bool,
    /// Answer this many A2A calls 429 with `Retry-After: 1` first.
    pub busy: usize,
    /// The host the card's interface names instead of the peer's own.
    pub interface_host: Option<String>,
    /// How many `GetTask` calls see the task working before it completes.
    pub working_reads: usize,
    /// The key that signs the card (its JWKS at `/jwks.json`).
    pub signing_key: Option<CardKey>,
    /// Change the card after signing it.
    pub tamper: bool,
    /// Name a key set on another origin (`localhost` for `127.0.0.1`).
    pub jku_elsewhere: bool,
    /// Answer every A2A call 500.
    pub failing: bool,
    /// When set, `GetTask` sees the task working until it is raised (in place of
    /// `working_reads`).
    pub done: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// What the peer saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Each A2A call: its method, params and when it came.
    pub calls: Vec<(String, Value, Instant)>,
    /// Reads of the card.
    pub card_reads: usize,
    /// Reads answered 304 Not Modified.
    pub not_modified: usize,
}

#[derive(Clone)]
struct Peer {
    script: Script,
    seen: Arc<Mutex<Seen>>,
    addr: SocketAddr,
}

/// Starts a peer; its address and what it sees.
pub async fn start(script: Script) -> (SocketAddr, Arc<Mutex<Seen>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let peer = Peer {
        script,
        seen: seen.clone(),
        addr,
    };
    let app = Router::new()
        .route("/.well-known/agent-card.json", get(card))
        .route("/a2a", post(rpc))
        .route("/jwks.json", get(jwks))
        .with_state(peer);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, seen)
}

async fn card(State(peer): State<Peer>, headers: HeaderMap) -> Response {
    let mut seen = peer.seen.lock().unwrap();
    seen.card_reads += 1;
    if headers.get("if-none-match").and_then(|v| v.to_str().ok()) == Some("\"v1\"") {
        seen.not_modified += 1;
        return StatusCode::NOT_MODIFIED.into_response();
    }
    let host = peer
        .script
        .interface_host
        .clone()
        .unwrap_or_else(|| "127.0.0.1".into());
    let mut card = json!({
        "name": "fake peer", "description": "scripted",
        "supportedInterfaces": [{"url": format!("http://{host}:{}/a2a", peer.addr.port()),
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
        "skills": [{"id": "work", "name": "Work", "description": "works"}],
    });
    if let Some(key) = &peer.script.signing_key {
        let host = match peer.script.jku_elsewhere {
            true => "localhost",
            false => "127.0.0.1",
        };
        let jku = format!("http://{host}:{}/jwks.json", peer.addr.port());
        card["signatures"] = json!([key.sign(&card, &jku).unwrap()]);
        if peer.script.tamper {
            card["description"] = json!("scripted!");
        }
    }
    ([("etag", "\"v1\"")], axum::Json(card)).into_response()
}

async fn jwks(State(peer): State<Peer>) -> Response {
    match &peer.script.signing_key {
        Some(key) => axum::Json(json!({"keys": [key.public_jwk()]})).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn rpc(State(peer): State<Peer>, axum::Json(body): axum::Json<Value>) -> Response {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let params = body["params"].clone();
    let calls = {
        let mut seen = peer.seen.lock().unwrap();
        seen.calls
            .push((method.clone(), params.clone(), Instant::now()));
        seen.calls.len()
    };
    if peer.script.unauthorized {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": {"message": "who are you?"}})),
        )
            .into_response();
    }
    if peer.script.failing {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the peer broke").into_response();
    }
    if calls <= peer.script.busy {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            "slow down",
        )
            .into_response();
    }
    let reads = peer
        .seen
        .lock()
        .unwrap()
        .calls
        .iter()
        .filter(|c| c.0 == "GetTask")
        .count();
    let done = match &peer.script.done {
        Some(done) => done.load(std::sync::atomic::Ordering::SeqCst),
        None => reads > peer.script.working_reads,
    };
    let result = match method.as_str() {
        "SendMessage" => json!({"task": task("working", None)}),
        "GetTask" if done => json!(task(
            "TASK_STATE_COMPLETED",
            Some(
                json!([{"artifactId": "out", "name": "out", "parts": [{"text": "done by the peer"}]}])
            )
        )),
        // A peer whose task waits on `done` notes that it works, once.
        "GetTask" if peer.script.done.is_some() => {
            let mut working = task("TASK_STATE_WORKING", None);
            working["status"]["message"] = json!({"messageId": "note-1", "role": "ROLE_AGENT",
                "parts": [{"text": "still at it"}]});
            working
        }
        "GetTask" => json!(task("TASK_STATE_WORKING", None)),
        "CancelTask" => json!(task("TASK_STATE_CANCELED", None)),
        _ => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": body["id"],
            "error": {"code": -32601, "message": "no such method"}}))
            .into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result})).into_response()
}

fn task(state: &str, artifacts: Option<Value>) -> Value {
    let mut task = json!({"id": "remote-1", "contextId": "remote-ctx",
        "status": {"state": state, "timestamp": "2026-12-04T00:00:00Z"}});
    if let Some(artifacts) = artifacts {
        task["artifacts"] = artifacts;
    }
    task
}
