//! Error responses of both bindings, with the headers a refusal carries
//! (`WWW-Authenticate`, `Retry-After`): JSON-RPC answers with an error object (HTTP 200
//! unless the request was refused at the HTTP layer), HTTP+JSON with the error's own
//! status and a `google.rpc.Status` body.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::dialect::Dialect;
use crate::error::ApiError;
use crate::jsonrpc::failure;

/// The media type of HTTP+JSON bodies (spec §11.1).
pub(crate) const A2A_JSON: &str = "application/a2a+json";

/// A 401, 403, 429 or 503 with its headers and a JSON-RPC error body.
pub fn refusal(id: &Value, error: &ApiError, dialect: Dialect) -> Response {
    let mut response = axum::Json(failure(id, error, dialect)).into_response();
    if let Some(http) = error.http_refusal() {
        *response.status_mut() = http.status;
    }
    refusal_headers(error, response)
}

/// Any error on the HTTP+JSON binding: its status, headers and `google.rpc.Status`.
pub fn rest_failure(error: &ApiError) -> Response {
    let (status, _) = error.rest_status();
    let body = error.to_rest_json().to_string();
    let response = (status, [(header::CONTENT_TYPE, A2A_JSON)], body).into_response();
    refusal_headers(error, response)
}

fn refusal_headers(error: &ApiError, mut response: Response) -> Response {
    if let Some(http) = error.http_refusal() {
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
