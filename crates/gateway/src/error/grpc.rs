//! How each `ApiError` goes out on gRPC: the status code of the specification's table
//! (§5.4, the one HTTP+JSON names), the message, and as `google.rpc.Status` details the
//! same `ErrorInfo` and `BadRequest` the other bindings send. A refusal's `Retry-After`
//! and `WWW-Authenticate` go in the trailers.

use tonic::metadata::MetadataValue;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use super::ApiError;
use super::wire::Wire;

/// The domain of every A2A `ErrorInfo`.
const DOMAIN: &str = "a2a-protocol.org";

/// The gRPC status of `error`.
pub(super) fn status(error: &ApiError) -> Status {
    let wire = Wire::with_reason(error);
    let (_, name) = super::rest::status(error);
    let mut details = ErrorDetails::new();
    if let Some(reason) = wire.reason {
        let metadata: std::collections::HashMap<String, String> = wire
            .metadata
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        details.set_error_info(reason, DOMAIN, metadata);
    }
    if let Some((field, description)) = &wire.violation {
        details.add_bad_request_violation(field, description);
    }
    let mut status = Status::with_error_details(code(name), wire.message, details);
    if let Some(refusal) = wire.http {
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
        let status = ApiError::task_not_found("t-404").to_grpc_status();
        assert_eq!(status.code(), Code::NotFound);
        assert!(status.message().contains("t-404"), "{}", status.message());
        let info = status.get_details_error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, "TASK_NOT_FOUND");
        assert_eq!(info.domain, "a2a-protocol.org");
        assert_eq!(info.metadata["taskId"], "t-404");
    }

    #[test]
    fn bad_params_name_the_field() {
        let status =
            ApiError::invalid_params("message.parts", "must not be empty").to_grpc_status();
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
