//! What can go wrong with a request for access, classified by what the caller should
//! do about it; `answer` turns it into the HTTP status and body.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fundi_runtime::StoreError;
use serde_json::json;

/// A refused or failed step of a request for access.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The body is not a request (400).
    #[error("{0}")]
    Malformed(String),
    /// The identity assertion proves nothing (401): not signed by a listed issuer,
    /// replayed, expired, for another audience...
    #[error("the assertion is refused: {0}")]
    Assertion(String),
    /// Too many requests, from this requester or from everyone (429).
    #[error("{reason}")]
    TooMany {
        /// Which limit.
        reason: String,
        /// When to try again.
        retry_after: Duration,
    },
    /// No such request, or the wrong continuation secret (404: the two are not told
    /// apart).
    #[error("no request for access {0} is known with this continuation secret")]
    Unknown(String),
    /// No such request (404), for a person deciding.
    #[error("no request for access is named {0}")]
    NoSuchRequest(String),
    /// The request is not in a state for this step (409).
    #[error("{0}")]
    Conflict(String),
    /// The request is over: collected, rejected or expired (410).
    #[error("{0}")]
    Gone(String),
    /// The approver may not give what the decision asks (403).
    #[error("{0}")]
    Forbidden(String),
    /// Something fundi depends on is unreachable (503): the provider's keys.
    #[error("{0}")]
    Unavailable(String),
    /// The store failed (500).
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
}

impl AccessError {
    /// The counter label of a refusal (`fundi.access_requests.refused`).
    pub(crate) fn label(&self) -> &'static str {
        match self {
            AccessError::Malformed(_) => "malformed",
            AccessError::Assertion(_) => "assertion",
            AccessError::TooMany { .. } => "rate-limited",
            AccessError::Unknown(_) | AccessError::NoSuchRequest(_) => "unknown",
            AccessError::Conflict(_) => "conflict",
            AccessError::Gone(_) => "gone",
            AccessError::Forbidden(_) => "forbidden",
            AccessError::Unavailable(_) => "unavailable",
            AccessError::Store(_) => "store",
        }
    }
}

impl AccessError {
    /// The HTTP status that answers it, on the routes and on the console's pages alike.
    pub fn status(&self) -> StatusCode {
        match self {
            AccessError::Malformed(_) => StatusCode::BAD_REQUEST,
            AccessError::Assertion(_) => StatusCode::UNAUTHORIZED,
            AccessError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            AccessError::Unknown(_) | AccessError::NoSuchRequest(_) => StatusCode::NOT_FOUND,
            AccessError::Conflict(_) => StatusCode::CONFLICT,
            AccessError::Gone(_) => StatusCode::GONE,
            AccessError::Forbidden(_) => StatusCode::FORBIDDEN,
            AccessError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            AccessError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// What it says to the one asking (a store's failure is logged, not told).
    pub fn told(&self) -> String {
        match self {
            AccessError::Store(error) => {
                tracing::error!(%error, "a request for access");
                "the store failed; try again".to_owned()
            }
            other => other.to_string(),
        }
    }
}

impl IntoResponse for AccessError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (status, axum::Json(json!({"error": self.told()}))).into_response();
        if let AccessError::TooMany { retry_after, .. } = &self {
            let seconds = retry_after.as_secs().max(1);
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        response
    }
}
