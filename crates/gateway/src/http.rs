//! Routes and the HTTP side of the handlers.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::dialect::{Dialect, is_supported_version, normalize_version};
use crate::error::ApiError;
use crate::jsonrpc::{self, failure, success};
use crate::state::AppState;
use crate::{methods, streaming};

/// The gateway's router: the agent card (public), health, and the JSON-RPC endpoint at
/// `/a2a` and `/` (the official SDKs' default path).
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/.well-known/agent.json", get(agent_card))
        .route("/health", get(health))
        .route("/a2a", post(rpc))
        .route("/", post(rpc))
        .with_state(state)
}

async fn health() -> Response {
    axum::Json(json!({"status": "ok"})).into_response()
}

async fn agent_card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let card = &state.card;
    let max_age = format!("public, max-age={}", state.config.card_max_age_secs);
    let cache = [
        (header::CACHE_CONTROL, max_age),
        (header::ETAG, card.etag.clone()),
    ];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .any(|t| t.trim() == card.etag || t.trim() == "*")
        });
    if fresh {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    let mut response = (cache, card.json.clone()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

async fn rpc(State(state): State<AppState>, headers: HeaderMap, uri: Uri, body: Body) -> Response {
    let limit = state.config.max_body_bytes;
    let bytes: Bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(_) => {
            let error =
                ApiError::invalid_request(format!("the request body is larger than {limit} bytes"));
            let body = failure(&Value::Null, &error, Dialect::V1);
            return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response();
        }
    };
    let request = match jsonrpc::parse(&bytes) {
        Ok(request) => request,
        Err(e) => return json(failure(&e.id, &e.error, Dialect::V1)),
    };
    let refused = requested_version(&headers, &uri)
        .filter(|v| !v.is_empty() && !is_supported_version(v))
        .map(|v| ApiError::version_not_supported(&v));
    if request.method.is_streaming() {
        let last_event_id = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        return streaming::respond(state, request, last_event_id, refused).await;
    }
    let (id, dialect) = (request.id.clone(), request.dialect);
    let outcome = match refused {
        Some(error) => Err(error),
        None => methods::call(&state, request).await,
    };
    json(match outcome {
        Ok(result) => success(&id, result),
        Err(error) => failure(&id, &error, dialect),
    })
}

/// JSON-RPC answers are HTTP 200 whatever they say (A2A-DIGEST §6.1).
fn json(body: Value) -> Response {
    axum::Json(body).into_response()
}

/// `A2A-Version` from the header, or else the query parameter, normalized.
fn requested_version(headers: &HeaderMap, uri: &Uri) -> Option<String> {
    if let Some(value) = headers.get("a2a-version").and_then(|v| v.to_str().ok()) {
        return Some(normalize_version(value));
    }
    uri.query()?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| key.eq_ignore_ascii_case("A2A-Version"))
        .map(|(_, value)| normalize_version(value))
}
