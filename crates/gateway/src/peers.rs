//! The peers this server delegates to (scope `fundi:delegate`, or `fundi:admin`):
//! `GET /peers` lists them with what their cached cards say (nothing is fetched);
//! `POST /peers/{name}/discover` reads one peer's card now (revalidated with
//! `If-None-Match`) and answers it; `POST /peers/{name}/call` sends the peer one A2A
//! call of a fixed list (`{"method": "GetTask", "params": {...}}`; reads, and cancels
//! and push configs) and answers its result. Tokens are never shown.

use axum::Router;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_peers::PeerError;
use serde_json::json;

use crate::admin::{admin_error as error, parse};
use crate::operator::{Delegator, Operator, Peers};
use crate::state::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/peers", get(list))
        .route("/peers/{name}/discover", post(discover))
        .route("/peers/{name}/call", post(call))
}

async fn list(_delegator: Operator<Delegator>, Peers(peers): Peers) -> Response {
    axum::Json(json!({"peers": peers.listing().await})).into_response()
}

/// What `POST /peers/{name}/call` takes.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerCall {
    method: String,
    #[serde(default)]
    params: serde_json::Value,
}

async fn call(
    _delegator: Operator<Delegator>,
    Peers(peers): Peers,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let expected = "{\"method\": \"GetTask\", \"params\": {\"id\": \"...\"}}";
    let asked: PeerCall = match parse(&body, expected) {
        Ok(asked) => asked,
        Err(refused) => return refused,
    };
    let params = match asked.params {
        serde_json::Value::Null => json!({}),
        params => params,
    };
    match peers.call(&name, &asked.method, params).await {
        Ok(result) => axum::Json(json!({"result": result})).into_response(),
        Err(failed) => peer_failure(&failed),
    }
}

async fn discover(
    _delegator: Operator<Delegator>,
    Peers(peers): Peers,
    Path(name): Path<String>,
) -> Response {
    match peers.discover(&name).await {
        Ok(card) => axum::Json(json!({"name": name, "card": *card})).into_response(),
        Err(failed) => peer_failure(&failed),
    }
}

/// A failed call to a peer: 404 for a peer not known, 400 for a method not passed on,
/// 502 for what the peer (or the way to it) did.
fn peer_failure(failed: &PeerError) -> Response {
    let status = match failed {
        PeerError::Unknown { .. } => StatusCode::NOT_FOUND,
        PeerError::Method { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::BAD_GATEWAY,
    };
    error(status, &failed.to_string())
}
