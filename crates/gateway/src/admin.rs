//! The operators' routes under `/admin` (scope `fundi:admin`): dead letters and their
//! replay, the recorded issues, scheduled runs (`admin/schedules.rs`), grants
//! (`admin/grants.rs`), the audit log (`admin/audit.rs`) and the chaos-event log
//! (`admin/chaos.rs`); and approvals
//! (`admin/approvals.rs`), for approvers rather than admins. Every change is recorded
//! in the audit log.

use fundi_runtime::{Access, TaskService};
use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

pub(crate) use answer::admin_error;

use crate::error::ApiError;
use crate::operator::{Admin, Issues, Operator, Pushing};
use crate::state::AppState;

pub(crate) mod answer;
pub(crate) mod approvals;
pub(crate) mod audit;
mod chaos;
pub mod fixes;
pub(crate) mod grant_desk;
mod grants;
mod peer_access;
mod peers;
mod schedules;

/// The admin routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/push/dead-letters", get(dead_letters))
        .route("/admin/push/replay", post(replay))
        .route("/admin/issues", get(list_issues))
        .merge(schedules::routes())
        .merge(grants::routes())
        .merge(peers::routes())
        .merge(peer_access::routes())
        .merge(audit::routes())
        .merge(chaos::routes())
        .merge(approvals::routes())
        .layer(axum::middleware::from_fn(in_admin_span))
}

/// Runs an admin request in its span (`telemetry::admin_span`).
async fn in_admin_span(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let span = crate::telemetry::admin_span(request.headers(), request.uri().path());
    tracing::Instrument::instrument(next.run(request), span).await
}

/// A JSON body as `T`; refused, a 400 saying what was `expected` and what is wrong.
// The refusal is the handler's whole answer, returned once: its size costs nothing.
#[allow(clippy::result_large_err)]
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    body: &[u8],
    expected: &str,
) -> Result<T, Response> {
    serde_json::from_slice(body).map_err(|e| {
        admin_error(
            StatusCode::BAD_REQUEST,
            &format!("expected {expected}: {e}"),
        )
    })
}

/// A JSON body as `T`, or `T::default()` when there is none (all its fields optional).
#[allow(clippy::result_large_err)]
pub(crate) fn parse_or_default<T: serde::de::DeserializeOwned + Default>(
    body: &[u8],
    expected: &str,
) -> Result<T, Response> {
    match body.is_empty() {
        true => Ok(T::default()),
        false => parse(body, expected),
    }
}

/// Push configs whose delivery was given up (operators; scope `fundi:admin`).
async fn dead_letters(_operator: Operator<Admin>, Pushing(push): Pushing) -> Response {
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
    State(audit): State<audit::AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    Pushing(push): Pushing,
    body: Bytes,
) -> Response {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Target {
        task_id: String,
        config_id: String,
    }
    let target: Target = match parse(&body, "{\"taskId\": ..., \"configId\": ...}") {
        Ok(target) => target,
        Err(refused) => return refused,
    };
    let task_id = fundi_runtime::TaskId::from(target.task_id);
    match push.replay(&task_id, &target.config_id).await {
        Ok(true) => {
            let target = format!("{task_id}/{}", target.config_id);
            match audit
                .record(&caller, "push.replay", &target, Value::Null)
                .await
            {
                Ok(()) => axum::Json(json!({"replayed": true})).into_response(),
                Err(failed) => failed,
            }
        }
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
    State(runtime): State<Arc<dyn TaskService>>,
    _operator: Operator<Admin>,
    Issues(store): Issues,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let param = |name: &str| query.get(name).map(String::as_str);
    let status = match param("status") {
        None => None,
        Some(name) => match fundi_ops::issues::IssueStatus::parse(name) {
            Some(status) => Some(status),
            None => {
                return admin_error(
                    StatusCode::BAD_REQUEST,
                    &format!("status must be open, fix-proposed, fixed or resolved, got {name:?}"),
                );
            }
        },
    };
    match store.issues(param("source")).await {
        Ok(mut issues) => {
            issues.retain(|i| status.is_none_or(|s| i.status == s));
            issues.sort_by_key(|i| std::cmp::Reverse(i.last_seen));
            let mut listed = Vec::with_capacity(issues.len());
            for issue in issues {
                listed.push(with_heal_state(&*runtime, issue).await);
            }
            axum::Json(json!({"issues": listed})).into_response()
        }
        Err(error) => {
            tracing::error!(%error, "listing issues");
            admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed")
        }
    }
}

/// An issue as listed: with the state of the heal task that holds it, if one does
/// (`heal.state`; `null` once the task is gone).
async fn with_heal_state(runtime: &dyn TaskService, issue: fundi_ops::issues::Issue) -> Value {
    let task = issue.heal.as_ref().map(|link| link.task_id.clone());
    let mut listed = serde_json::to_value(issue).unwrap_or_default();
    if let Some(task) = task {
        let task_state = match runtime.get(&task, Some(0), Access::Any).await {
            Ok(task) => json!(task.status.state.wire_name()),
            Err(_) => Value::Null,
        };
        listed["heal"]["state"] = task_state;
    }
    listed
}

/// Records read at most per request of a log (`limit`).
const MAX_PAGE: usize = 1000;

/// A log's page as asked (`?after=SEQ&limit=N`, defaults 0 and 100, the limit held to
/// 1 to 1000); refused, a 400 naming the parameter.
#[allow(clippy::result_large_err)] // the refusal is the handler's whole answer
fn page(query: &HashMap<String, String>) -> Result<(u64, usize), Response> {
    let number = |name: &str, default: u64| match query.get(name) {
        None => Ok(default),
        Some(text) => text.parse::<u64>().map_err(|_| {
            admin_error(
                StatusCode::BAD_REQUEST,
                &format!("{name} must be a whole number, got {text:?}"),
            )
        }),
    };
    let after = number("after", 0)?;
    let limit = number("limit", 100)?;
    Ok((after, (limit as usize).clamp(1, MAX_PAGE)))
}

/// A runtime error as an admin answer: its status and text as every surface classifies
/// it (`ApiError::from`), an internal failure logged there and answered without detail.
pub(crate) fn runtime_failure(error: fundi_runtime::RuntimeError) -> Response {
    let error = ApiError::from(error);
    admin_error(error.rest_status().0, &error.message())
}
