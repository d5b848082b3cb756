//! The chaos-event log for operators: `GET /admin/chaos-events?task=&after=&limit=`, every
//! fault a chaos run injected into a task's traffic, in the order it was injected.

use std::collections::HashMap;

use axum::Router;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use fundi_runtime::TaskId;
use serde_json::json;

use super::{admin_error, page};
use crate::operator::{Admin, ChaosEvents, Operator};
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/admin/chaos-events", get(read))
}

async fn read(
    _operator: Operator<Admin>,
    ChaosEvents(log): ChaosEvents,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(task) = query.get("task").filter(|t| !t.is_empty()) else {
        return admin_error(
            StatusCode::BAD_REQUEST,
            "task is missing: GET /admin/chaos-events?task=<task id>",
        );
    };
    let (after, limit) = match page(&query) {
        Ok(page) => page,
        Err(refused) => return refused,
    };
    let task = TaskId::from(task.as_str());
    match log.read(&task, after, limit).await {
        Ok(records) => {
            let next = records.last().map_or(after, |r| r.seq);
            axum::Json(json!({"taskId": task, "events": records, "next": next})).into_response()
        }
        Err(error) => {
            tracing::error!(%error, "reading the chaos-event log");
            admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed")
        }
    }
}
