//! How the routes beside A2A answer a refusal or a failure: the status, and a JSON body
//! `{"error": "<what is wrong>"}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The answer `status`, saying `message`.
pub(crate) fn admin_error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": message}))).into_response()
}
