//! Routes and the HTTP side of the handlers.

use std::collections::HashMap;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_runtime::ADMIN_SCOPE;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::auth::Caller;
use crate::dialect::{Dialect, is_supported_version, normalize_version};
use crate::error::ApiError;
use crate::guard::check_single_host;
use crate::jsonrpc::{self, failure, success};
use crate::state::AppState;
use crate::{methods, streaming, telemetry};

/// The gateway's router: the agent card (public), health, and the JSON-RPC endpoint at
/// `/a2a` and `/` (the official SDKs' default path).
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/.well-known/agent.json", get(agent_card))
        .route("/health", get(health))
        .route("/a2a", post(rpc))
        .route("/", post(rpc))
        .route("/admin/push/dead-letters", get(dead_letters))
        .route("/admin/push/replay", post(replay))
        .route("/admin/issues", get(list_issues))
        .layer(axum::middleware::from_fn(single_host))
        .with_state(state)
}

/// Every route refuses a request with two `Host` headers (RFC 9112: 400), which
/// different readers could take for different hosts.
async fn single_host(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    match check_single_host(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => refusal(&Value::Null, &error, Dialect::V1),
    }
}

/// The checks every authenticated route makes, in order: Host and Origin, both
/// credentials, the caller's rate limit.
async fn admit(state: &AppState, headers: &HeaderMap, uri: &Uri) -> Result<Caller, ApiError> {
    state.guard.check(headers, uri)?;
    let caller = state
        .auth
        .authenticate(headers)
        .await
        .map_err(|e| ApiError::unauthenticated(&e))?;
    state
        .rate_limit
        .check(&caller.user)
        .map_err(ApiError::rate_limited)?;
    Ok(caller)
}

/// `admit`, then the admin scope.
async fn admit_admin(state: &AppState, headers: &HeaderMap, uri: &Uri) -> Result<Caller, Response> {
    let caller = admit(state, headers, uri)
        .await
        .map_err(|e| refusal(&Value::Null, &e, Dialect::V1))?;
    if !caller.grants.allows(Some(ADMIN_SCOPE)) {
        let error = ApiError::insufficient_scope("admin", ADMIN_SCOPE);
        return Err(refusal(&Value::Null, &error, Dialect::V1));
    }
    Ok(caller)
}

/// Push configs whose delivery was given up (operators; scope `fundi:admin`).
async fn dead_letters(State(state): State<AppState>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(refused) = admit_admin(&state, &headers, &uri).await {
        return refused;
    }
    let Some(push) = &state.push else {
        return admin_error(StatusCode::NOT_FOUND, "push notifications are disabled");
    };
    match push.dead_letters().await {
        Ok(entries) => {
            let letters: Vec<Value> = entries
                .iter()
                .filter_map(|entry| {
                    let dead = entry.cursor.dead.as_ref()?;
                    Some(json!({
                        "taskId": entry.config.task_id,
                        "configId": entry.config.id,
                        "url": entry.config.url,
                        "seq": dead.seq,
                        "attempts": dead.attempts,
                        "lastError": dead.last_error,
                        "firstFailure": dead.first_failure,
                        "deadAt": dead.dead_at,
                    }))
                })
                .collect();
            axum::Json(json!({"deadLetters": letters})).into_response()
        }
        Err(error) => {
            tracing::error!(%error, "listing dead letters");
            admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed")
        }
    }
}

/// Delivers a dead-lettered config again: `{"taskId": ..., "configId": ...}`.
async fn replay(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> Response {
    if let Err(refused) = admit_admin(&state, &headers, &uri).await {
        return refused;
    }
    let Some(push) = &state.push else {
        return admin_error(StatusCode::NOT_FOUND, "push notifications are disabled");
    };
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Target {
        task_id: String,
        config_id: String,
    }
    let target: Target = match serde_json::from_slice(&body) {
        Ok(target) => target,
        Err(e) => {
            return admin_error(
                StatusCode::BAD_REQUEST,
                &format!("expected {{\"taskId\": ..., \"configId\": ...}}: {e}"),
            );
        }
    };
    let task_id = fundi_runtime::TaskId::from(target.task_id);
    match push.replay(&task_id, &target.config_id).await {
        Ok(true) => axum::Json(json!({"replayed": true})).into_response(),
        Ok(false) => admin_error(
            StatusCode::NOT_FOUND,
            &format!(
                "no dead letter for config {:?} of task {task_id}",
                target.config_id
            ),
        ),
        Err(error) => {
            tracing::error!(%error, "replaying a dead letter");
            admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed")
        }
    }
}

/// The recorded issues (`?source=a11y-audit`, `?status=open`), newest first.
async fn list_issues(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Err(refused) = admit_admin(&state, &headers, &uri).await {
        return refused;
    }
    let Some(store) = &state.issues else {
        return admin_error(StatusCode::NOT_FOUND, "no issue store is configured");
    };
    let param = |name: &str| query.get(name).map(String::as_str);
    let status = match param("status") {
        None => None,
        Some("open") => Some(fundi_runtime::issues::IssueStatus::Open),
        Some("resolved") => Some(fundi_runtime::issues::IssueStatus::Resolved),
        Some(other) => {
            return admin_error(
                StatusCode::BAD_REQUEST,
                &format!("status must be open or resolved, got {other:?}"),
            );
        }
    };
    match store.issues(param("source")).await {
        Ok(mut issues) => {
            issues.retain(|i| status.is_none_or(|s| i.status == s));
            issues.sort_by_key(|i| std::cmp::Reverse(i.last_seen));
            axum::Json(json!({"issues": issues})).into_response()
        }
        Err(error) => {
            tracing::error!(%error, "listing issues");
            admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed")
        }
    }
}

fn admin_error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
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
    let span = telemetry::request_span(&headers);
    handle_rpc(state, headers, uri, body).instrument(span).await
}

async fn handle_rpc(state: AppState, headers: HeaderMap, uri: Uri, body: Body) -> Response {
    let limit = state.config.max_body_bytes;
    let metrics = telemetry::metrics();
    // Refusals come before the body is looked at (beyond echoing its id).
    let caller = match admit(&state, &headers, &uri).await {
        Ok(caller) => caller,
        Err(error) => {
            metrics.request("unknown", "refused");
            return refuse(&error, body, limit).await;
        }
    };
    tracing::Span::current().record("user", caller.user.as_str());
    let bytes: Bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(error) if is_over_limit(&error) => {
            metrics.request("unknown", "refused");
            let error =
                ApiError::invalid_request(format!("the request body is larger than {limit} bytes"));
            let body = failure(&Value::Null, &error, Dialect::V1);
            return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response();
        }
        Err(error) => {
            metrics.request("unknown", "refused");
            let error =
                ApiError::malformed_http(format!("the request body could not be read: {error}"));
            return refusal(&Value::Null, &error, Dialect::V1);
        }
    };
    let request = match jsonrpc::parse(&bytes) {
        Ok(request) => request,
        Err(e) => {
            metrics.request("unknown", "error");
            return json(failure(&e.id, &e.error, Dialect::V1));
        }
    };
    let method = request.method.name();
    tracing::Span::current().record("rpc.method", method);
    let refused = requested_version(&headers, &uri)
        .filter(|v| !v.is_empty() && !is_supported_version(v))
        .map(|v| ApiError::version_not_supported(&v));
    if request.method.is_streaming() {
        let last_event_id = headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        return streaming::respond(state, caller, request, last_event_id, refused).await;
    }
    let (id, dialect) = (request.id.clone(), request.dialect);
    let outcome = match refused {
        Some(error) => Err(error),
        None => methods::call(&state, &caller, request).await,
    };
    match outcome {
        Ok(result) => {
            metrics.request(method, "ok");
            let body = success(&id, &result);
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Err(error) if error.http_refusal().is_some() => {
            metrics.request(method, "refused");
            refusal(&id, &error, dialect)
        }
        Err(error) => {
            metrics.request(method, "error");
            json(failure(&id, &error, dialect))
        }
    }
}

/// Whether reading a body failed on the size limit (rather than on its framing: a
/// malformed chunked encoding, a connection closed early).
fn is_over_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = source {
        if error.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = error.source();
    }
    false
}

/// A refusal made before the request was decoded; the body is read (within the limit)
/// only to echo the request's id.
async fn refuse(error: &ApiError, body: Body, limit: usize) -> Response {
    let (id, dialect) = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => match jsonrpc::parse(&bytes) {
            Ok(request) => (request.id, request.dialect),
            Err(e) => (e.id, Dialect::V1),
        },
        Err(_) => (Value::Null, Dialect::V1),
    };
    refusal(&id, error, dialect)
}

/// A 401, 403, 429 or 503 with its headers and a JSON-RPC error body.
pub(crate) fn refusal(id: &Value, error: &ApiError, dialect: Dialect) -> Response {
    let mut response = axum::Json(failure(id, error, dialect)).into_response();
    if let Some(http) = error.http_refusal() {
        *response.status_mut() = http.status;
        let headers = response.headers_mut();
        if let Some(challenge) = http
            .www_authenticate
            .as_deref()
            .and_then(|c| HeaderValue::from_str(c).ok())
        {
            headers.insert(header::WWW_AUTHENTICATE, challenge);
        }
        if let Some(secs) = http.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
    }
    response
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
