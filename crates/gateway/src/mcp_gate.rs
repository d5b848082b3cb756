//! The gate in front of `/mcp`: it admits what `/a2a` admits (Host, Origin, both
//! credentials, the rate limit), and ties each MCP session to the caller that opened
//! it ([`McpSessions`]). The MCP tools then call `/a2a` with the same credentials.

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;

use crate::admission::admit;
use crate::dialect::Dialect;
use crate::error::ApiError;
use crate::mcp_sessions::{SESSION_HEADER, SessionRefusal};
use crate::reply::refusal;
use crate::state::AppState;

/// Admits a request to `/mcp`, and keeps each session its opener's.
pub(crate) async fn mcp_gate(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let caller = match admit(&state, request.headers(), request.uri()).await {
        Ok(caller) => caller,
        Err(error) => return refusal(&Value::Null, &error, Dialect::V1),
    };
    let Some(endpoint) = state.operators.mcp.as_ref() else {
        return refusal(&Value::Null, &ApiError::McpSessionNotFound, Dialect::V1);
    };
    let sessions = &endpoint.sessions;
    let named = request
        .headers()
        .get(SESSION_HEADER)
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    let user = caller.user.as_str();
    let checked = match &named {
        Some(id) => sessions.use_session(id, user),
        // Only a request without a session opens one (an `initialize`).
        None if request.method() == Method::POST => sessions.may_open(user),
        None => Ok(()),
    };
    if let Err(why) = checked {
        let error = match why {
            SessionRefusal::NotFound => ApiError::McpSessionNotFound,
            SessionRefusal::TooMany(limit) => ApiError::TooManyOpen {
                what: "MCP sessions of this user",
                limit,
                setting: "mcp.max-sessions-per-user",
            },
        };
        return refusal(&Value::Null, &error, Dialect::V1);
    }
    let closing = request.method() == Method::DELETE;
    let response = next.run(request).await;
    match &named {
        None => {
            let opened = response.headers().get(SESSION_HEADER);
            if let Some(id) = opened.and_then(|v| v.to_str().ok()) {
                sessions.opened(id, user);
            }
        }
        Some(id) if closing && response.status().is_success() => sessions.closed(id),
        Some(_) => {}
    }
    response
}
