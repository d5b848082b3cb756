//! Scheduled runs for operators: `GET|POST /admin/schedules`, `GET|DELETE
//! /admin/schedules/{id}`, `POST /admin/schedules/{id}/pause` and `/resume`. A schedule
//! is created for the caller: its firings are the caller's tasks. Changes are recorded
//! in the audit log.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_ops::schedules::{Creator, NewSchedule, Scheduler};
use fundi_runtime::RuntimeError;
use serde_json::{Value, json};

use super::audit::AuditTrail;
use super::parse;
use crate::auth::Caller;
use crate::auth::grant_client;
use crate::operator::{Admin, Operator, Schedules};
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/schedules", get(list).post(create))
        .route("/admin/schedules/{id}", get(show).delete(delete))
        .route("/admin/schedules/{id}/pause", post(pause))
        .route("/admin/schedules/{id}/resume", post(resume))
}

async fn list(_operator: Operator<Admin>, Schedules(scheduler): Schedules) -> Response {
    answer(
        StatusCode::OK,
        scheduler.list().await.map(|s| json!({"schedules": s})),
    )
}

async fn create(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    Schedules(scheduler): Schedules,
    body: Bytes,
) -> Response {
    let expected = "{\"skill\": ..., \"cron\": ..., \"timeZone\"?: ..., \"data\"?: ..., \
                    \"text\"?: ...}";
    let new: NewSchedule = match parse(&body, expected) {
        Ok(new) => new,
        Err(refused) => return refused,
    };
    // A grant's schedules fire while the grant stands; a static client's while the
    // config lists it.
    let client = match &caller.grant {
        Some(id) => grant_client(id),
        None => caller.client.clone(),
    };
    let creator = Creator {
        owner: Some(caller.user.to_string()),
        client: Some(client),
        grants: caller.grants.clone(),
    };
    let created = scheduler.create(new, creator).await;
    if let Ok(schedule) = &created {
        let detail = json!({"skill": schedule.spec.skill, "cron": schedule.spec.cron,
                            "zone": schedule.zone});
        let recorded = audit.record(&caller, "schedule.create", &schedule.id, detail);
        if let Err(failed) = recorded.await {
            return failed;
        }
    }
    answer(StatusCode::CREATED, created.map(|s| json!(s)))
}

async fn show(
    _operator: Operator<Admin>,
    Schedules(scheduler): Schedules,
    Path(id): Path<String>,
) -> Response {
    answer(StatusCode::OK, scheduler.get(&id).await.map(|s| json!(s)))
}

async fn delete(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    Schedules(scheduler): Schedules,
    Path(id): Path<String>,
) -> Response {
    let deleted = scheduler.delete(&id).await;
    if deleted.is_ok()
        && let Err(failed) = audit
            .record(&caller, "schedule.delete", &id, Value::Null)
            .await
    {
        return failed;
    }
    answer(StatusCode::OK, deleted.map(|()| json!({"deleted": id})))
}

async fn pause(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    Schedules(scheduler): Schedules,
    Path(id): Path<String>,
) -> Response {
    set_paused(&audit, &caller, &scheduler, &id, true).await
}

async fn resume(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    Schedules(scheduler): Schedules,
    Path(id): Path<String>,
) -> Response {
    set_paused(&audit, &caller, &scheduler, &id, false).await
}

async fn set_paused(
    audit: &AuditTrail,
    caller: &Caller,
    scheduler: &Scheduler,
    id: &str,
    paused: bool,
) -> Response {
    let changed = scheduler.set_paused(id, paused).await;
    let action = match paused {
        true => "schedule.pause",
        false => "schedule.resume",
    };
    if changed.is_ok()
        && let Err(failed) = audit.record(caller, action, id, Value::Null).await
    {
        return failed;
    }
    answer(StatusCode::OK, changed.map(|s| json!(s)))
}

/// The body on success, or the error with the status that fits it.
fn answer(status: StatusCode, outcome: Result<serde_json::Value, RuntimeError>) -> Response {
    let error = match outcome {
        Ok(body) => return (status, axum::Json(body)).into_response(),
        Err(error) => error,
    };
    super::runtime_failure(error)
}
