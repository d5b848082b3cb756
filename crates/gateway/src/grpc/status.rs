//! How an `ApiError` goes out on gRPC: the status code of the specification's table
//! (§5.4), the message, and as `google.rpc.Status` details the same `ErrorInfo` and
//! `BadRequest` the HTTP+JSON binding sends, so a client of any binding learns the same
//! thing. A refusal's `Retry-After` and `WWW-Authenticate` go in the trailers.

use std::collections::HashMap;

use serde_json::Value;
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::error::ApiError;

/// The gRPC status of `error`.
pub(crate) fn status(error: &ApiError) -> Status {
    let (_, name) = error.rest_status();
    let body = error.to_rest_json();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    let mut details = ErrorDetails::new();
    for detail in body["error"]["details"].as_array().into_iter().flatten() {
        add_detail(&mut details, detail);
    }
    let mut status = Status::with_error_details(code(name), message, details);
    if let Some(refusal) = error.http_refusal() {
        let trailers = status.metadata_mut();
        if let Some(seconds) = refusal.retry_after_secs {
            trailers.insert("retry-after", MetadataValue::from(seconds));
        }
        if let Some(challenge) = refusal
            .www_authenticate
            .and_then(|c| MetadataValue::try_from(c.as_str()).ok())
        {
            trailers.insert("www-authenticate", challenge);
        }
    }
    status
}

/// One `google.rpc` detail of the HTTP+JSON body, as its typed detail.
fn add_detail(details: &mut ErrorDetails, detail: &Value) {
    let text = |key: &str| detail[key].as_str().unwrap_or_default().to_owned();
    match detail["@type"].as_str() {
        Some("type.googleapis.com/google.rpc.ErrorInfo") => {
            let metadata: HashMap<String, String> = detail["metadata"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect();
            details.set_error_info(text("reason"), text("domain"), metadata);
        }
        Some("type.googleapis.com/google.rpc.BadRequest") => {
            for violation in detail["fieldViolations"].as_array().into_iter().flatten() {
                let field = violation["field"].as_str().unwrap_or_default();
                let description = violation["description"].as_str().unwrap_or_default();
                details.add_bad_request_violation(field, description);
            }
        }
        _ => {}
    }
}

/// The `google.rpc.Code` named `name`.
fn code(name: &str) -> Code {
    match name {
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
        "NOT_FOUND" => Code::NotFound,
        "ABORTED" => Code::Aborted,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "UNAVAILABLE" => Code::Unavailable,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "UNIMPLEMENTED" => Code::Unimplemented,
        _ => Code::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_a2a_error_carries_its_reason_as_the_other_bindings_do() {
        let status = status(&ApiError::task_not_found("t-404"));
        assert_eq!(status.code(), Code::NotFound);
        assert!(status.message().contains("t-404"), "{}", status.message());
        let info = status.get_details_error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, "TASK_NOT_FOUND");
        assert_eq!(info.domain, "a2a-protocol.org");
        assert_eq!(info.metadata["taskId"], "t-404");
    }

    #[test]
    fn bad_params_name_the_field() {
        let status = status(&ApiError::invalid_params(
            "message.parts",
            "must not be empty",
        ));
        assert_eq!(status.code(), Code::InvalidArgument);
        let bad = status.get_details_bad_request().expect("a BadRequest");
        assert_eq!(bad.field_violations[0].field, "message.parts");
        assert_eq!(
            status.get_details_error_info().unwrap().reason,
            "INVALID_PARAMS"
        );
    }

    #[test]
    fn every_name_of_the_rest_table_has_its_code() {
        for name in [
            "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND",
            "ABORTED",
            "PERMISSION_DENIED",
            "UNAVAILABLE",
            "FAILED_PRECONDITION",
            "UNAUTHENTICATED",
            "RESOURCE_EXHAUSTED",
            "UNIMPLEMENTED",
        ] {
            assert_ne!(code(name), Code::Internal, "{name}");
        }
        assert_eq!(code("INTERNAL"), Code::Internal);
    }
}
