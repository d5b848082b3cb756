//! One classification of runtime errors, the same on every surface.

use super::*;

#[test]
fn a_node_that_did_not_answer_is_a_timeout_the_caller_may_retry_not_an_internal_error() {
    let unanswered = RuntimeError::Store(fundi_runtime::StoreError::Unanswered {
        task_id: fundi_runtime::TaskId::from("t"),
        holder: "node-a".into(),
        waited: Duration::from_millis(1_500),
    });
    assert!(matches!(
        ApiError::from(unanswered),
        ApiError::TimedOut(waited) if waited == Duration::from_millis(1_500)
    ));
    let broken = RuntimeError::Store(fundi_runtime::StoreError::database("down"));
    assert!(matches!(ApiError::from(broken), ApiError::Internal));
    let slow = RuntimeError::Store(fundi_runtime::StoreError::Unreachable {
        what: "canceling statement due to statement timeout (57014)".into(),
        source: None,
    });
    assert!(matches!(ApiError::from(slow), ApiError::Unavailable));
}

/// The A2A bindings and the admin routes answer a runtime error from this one
/// classification (the console's pages too: `fundi-console`'s `Problem`).
#[test]
fn each_runtime_error_has_one_status_on_every_surface() {
    let id = fundi_runtime::TaskId::from("t");
    let cases = [
        (
            RuntimeError::TaskNotFound(id.clone()),
            StatusCode::NOT_FOUND,
        ),
        (
            RuntimeError::ScheduleNotFound("sch-1".into()),
            StatusCode::NOT_FOUND,
        ),
        (
            RuntimeError::NotAwaitingApproval {
                id: id.clone(),
                state: fundi_runtime::TaskState::Working,
            },
            StatusCode::CONFLICT,
        ),
        (
            RuntimeError::ApproverIsRequester {
                id: id.clone(),
                user: "ann".into(),
            },
            StatusCode::FORBIDDEN,
        ),
        (
            RuntimeError::InvalidInput("no text".into()),
            StatusCode::BAD_REQUEST,
        ),
        (
            RuntimeError::Unavailable("stopping".into()),
            StatusCode::SERVICE_UNAVAILABLE,
        ),
        (
            RuntimeError::invariant("a task without its message"),
            StatusCode::INTERNAL_SERVER_ERROR,
        ),
    ];
    for (error, status) in cases {
        let said = error.to_string();
        let api = ApiError::from(error);
        assert_eq!(api.rest_status().0, status, "{said}");
    }
}

/// A node cut off from the database says so on every binding, with when to retry.
#[test]
fn a_node_cut_off_answers_unavailable_with_retry_after_on_every_binding() {
    let api = ApiError::from(RuntimeError::Store(fundi_runtime::StoreError::CutOff));
    assert!(matches!(api, ApiError::CutOff));
    assert_eq!(
        api.rest_status(),
        (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE")
    );
    let refusal = api.http_refusal().expect("refused at the HTTP layer");
    assert_eq!(
        (refusal.status, refusal.retry_after_secs),
        (StatusCode::SERVICE_UNAVAILABLE, Some(1))
    );
    let wire = Wire::of(&api);
    assert!(
        wire.message.contains("lost the database"),
        "{}",
        wire.message
    );
    let grpc = api.to_grpc_status();
    assert_eq!(grpc.code(), tonic::Code::Unavailable);
    assert_eq!(grpc.metadata().get("retry-after").unwrap(), "1");
}
