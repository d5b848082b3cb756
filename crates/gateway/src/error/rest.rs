//! How each `ApiError` goes out on the HTTP+JSON binding: the HTTP status of the
//! specification's table (§5.4, §11.6) and a `google.rpc.Status` body. Its details are
//! the ones the JSON-RPC binding sends in v1.0 `data` (an `ErrorInfo` with the A2A
//! reason, a `BadRequest` naming the field), so a client of either binding learns the
//! same thing. JSON-RPC's own errors get the reasons the official SDKs map back to
//! their error types (`INVALID_PARAMS`, ...): REST has no codes of its own for them.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::ApiError;
use super::wire::{Wire, v1_data};

/// The HTTP status of `error` and its `google.rpc.Code` name.
pub(super) fn status(error: &ApiError) -> (StatusCode, &'static str) {
    use StatusCode as S;
    match error {
        ApiError::Parse(_)
        | ApiError::InvalidRequest(_)
        | ApiError::MalformedHttp(_)
        | ApiError::InvalidParams { .. } => (S::BAD_REQUEST, "INVALID_ARGUMENT"),
        ApiError::BodyTooLarge { .. } => (S::PAYLOAD_TOO_LARGE, "INVALID_ARGUMENT"),
        ApiError::BodyTimedOut { .. } => (S::REQUEST_TIMEOUT, "DEADLINE_EXCEEDED"),
        ApiError::BodiesBusy => (S::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
        ApiError::MethodNotFound(_)
        | ApiError::NoRoute { .. }
        | ApiError::TaskNotFound { .. }
        | ApiError::PushConfigNotFound { .. } => (S::NOT_FOUND, "NOT_FOUND"),
        ApiError::Internal => (S::INTERNAL_SERVER_ERROR, "INTERNAL"),
        ApiError::NotFound(_) => (S::NOT_FOUND, "NOT_FOUND"),
        ApiError::Conflict(_) => (S::CONFLICT, "ABORTED"),
        ApiError::Denied(_) => (S::FORBIDDEN, "PERMISSION_DENIED"),
        ApiError::Unavailable | ApiError::CutOff => (S::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
        ApiError::TimedOut(_) => (S::GATEWAY_TIMEOUT, "DEADLINE_EXCEEDED"),
        ApiError::TaskNotCancelable { .. }
        | ApiError::PushNotSupported
        | ApiError::ExtendedCardNotConfigured
        | ApiError::Unsupported { .. }
        | ApiError::VersionNotSupported { .. } => (S::BAD_REQUEST, "FAILED_PRECONDITION"),
        ApiError::Unauthenticated { .. } => (S::UNAUTHORIZED, "UNAUTHENTICATED"),
        ApiError::KeysUnavailable => (S::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
        ApiError::InsufficientScope { .. }
        | ApiError::RoleScope { .. }
        | ApiError::ForbiddenRequest(_) => (S::FORBIDDEN, "PERMISSION_DENIED"),
        ApiError::RateLimited { .. } | ApiError::TooManyOpen { .. } => {
            (S::TOO_MANY_REQUESTS, "RESOURCE_EXHAUSTED")
        }
        ApiError::McpSessionNotFound => (S::NOT_FOUND, "NOT_FOUND"),
    }
}

/// The `{"error": google.rpc.Status}` body of `error`.
pub(super) fn body(error: &ApiError) -> Value {
    let wire = Wire::with_reason(error);
    let (status, name) = status(error);
    json!({"error": {
        "code": status.as_u16(),
        "status": name,
        "message": wire.message,
        "details": v1_data(&wire).unwrap_or_else(|| json!([])),
    }})
}

/// The body of an HTTP 405: the path names an operation, but not with the HTTP method
/// used (`detail` says which it takes).
pub(crate) fn method_not_allowed_json(detail: &str) -> Value {
    json!({"error": {
        "code": StatusCode::METHOD_NOT_ALLOWED.as_u16(),
        "status": "UNIMPLEMENTED",
        "message": format!("Method not allowed: {detail}"),
        "details": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "METHOD_NOT_FOUND",
            "domain": "a2a-protocol.org",
            "metadata": {},
        }],
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a2a_errors_get_the_specifications_statuses_and_reasons() {
        let cases = [
            (ApiError::task_not_found("t"), 404, "TASK_NOT_FOUND"),
            (
                ApiError::TaskNotCancelable {
                    task_id: "t".into(),
                    state: "completed",
                },
                400,
                "TASK_NOT_CANCELABLE",
            ),
            (
                ApiError::push_not_supported(),
                400,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ),
            (ApiError::unsupported("no"), 400, "UNSUPPORTED_OPERATION"),
            (
                ApiError::version_not_supported("9.0"),
                400,
                "VERSION_NOT_SUPPORTED",
            ),
            (
                ApiError::invalid_params("message", "bad"),
                400,
                "INVALID_PARAMS",
            ),
            (ApiError::parse_error("eof"), 400, "INVALID_REQUEST"),
            (ApiError::method_not_found("/x"), 404, "METHOD_NOT_FOUND"),
            (ApiError::rate_limited(3), 429, "RATE_LIMITED"),
        ];
        for (error, status, reason) in cases {
            let body = error.to_rest_json();
            assert_eq!(body["error"]["code"], status, "{error}");
            assert_eq!(error.rest_status().0.as_u16(), status);
            let info = &body["error"]["details"][0];
            assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
            assert_eq!(info["reason"], reason, "{error}");
            assert_eq!(info["domain"], "a2a-protocol.org");
            assert_eq!(body["error"]["message"], error.message());
        }
        let body = ApiError::task_not_found("t-9").to_rest_json();
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(body["error"]["details"][0]["metadata"]["taskId"], "t-9");
        let body = ApiError::invalid_params("message.parts", "empty").to_rest_json();
        assert_eq!(
            body["error"]["details"][1]["fieldViolations"][0]["field"],
            "message.parts"
        );
    }
}
