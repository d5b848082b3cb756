//! The approvers' routes (`fundi:approve` or `fundi:admin`): `GET /admin/access-requests`
//! (`?status=pending`), `GET /admin/access-requests/{id}`, `POST .../{id}/approve`
//! (`{"scopes"?: [...], "expires"?: "30d"}`: approval is the vend, never wider than asked
//! nor than the approver may give) and `POST .../{id}/reject` (`{"reason"?: "..."}`).
//! Every decision is recorded in the audit log.

use std::collections::HashMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::Utc;
use fundi_ops::access::AccessRequest;
use serde::Deserialize;
use serde_json::{Value, json};

use super::AccessDeskOf;
use super::steps::{Undecided, approve_as, reject_as};
use crate::admin::audit::AuditTrail;
use crate::admin::{admin_error, parse_or_default};
use crate::operator::{Approver, Operator};
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/access-requests", get(list))
        .route("/admin/access-requests/{id}", get(show))
        .route("/admin/access-requests/{id}/approve", post(approve))
        .route("/admin/access-requests/{id}/reject", post(reject))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Approval {
    #[serde(default)]
    scopes: Option<Vec<String>>,
    /// How long the grant admits requests ("30d"); until revoked when absent.
    #[serde(default)]
    expires: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Rejection {
    #[serde(default)]
    reason: Option<String>,
}

/// A request as people see it: its standing now, never its secret's digest.
pub(crate) fn shown(request: &AccessRequest) -> Value {
    let mut value = serde_json::to_value(request.shown()).unwrap_or(Value::Null);
    value["status"] = json!(request.standing(Utc::now()).as_str());
    value
}

async fn list(
    _approver: Operator<Approver>,
    AccessDeskOf(desk): AccessDeskOf,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let wanted = query.get("status").map(String::as_str);
    let known = ["pending", "approved", "collected", "rejected", "expired"];
    if let Some(status) = wanted
        && !known.contains(&status)
    {
        return admin_error(
            StatusCode::BAD_REQUEST,
            &format!("status must be one of {known:?}, got {status:?}"),
        );
    }
    match desk.list().await {
        Ok(all) => {
            let now = Utc::now();
            let shown: Vec<Value> = all
                .iter()
                .rev()
                .filter(|r| wanted.is_none_or(|s| r.standing(now).as_str() == s))
                .map(shown)
                .collect();
            axum::Json(json!({"requests": shown})).into_response()
        }
        Err(error) => error.into_response(),
    }
}

async fn show(
    _approver: Operator<Approver>,
    AccessDeskOf(desk): AccessDeskOf,
    Path(id): Path<String>,
) -> Response {
    match desk.find(&id).await {
        Ok(request) => axum::Json(shown(&request)).into_response(),
        Err(error) => error.into_response(),
    }
}

async fn approve(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Approver>,
    AccessDeskOf(desk): AccessDeskOf,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let expected = "{\"scopes\"?: [...], \"expires\"?: \"30d\"}";
    let approval: Approval = match parse_or_default(&body, expected) {
        Ok(approval) => approval,
        Err(refused) => return refused,
    };
    let expires = approval.expires.as_deref();
    match approve_as(&audit, &desk, &caller, &id, approval.scopes, expires, "api").await {
        Ok(approved) => {
            let mut body = shown(&approved.request);
            body["withheld"] = json!(approved.withheld);
            axum::Json(body).into_response()
        }
        Err(undecided) => answer(undecided),
    }
}

async fn reject(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Approver>,
    AccessDeskOf(desk): AccessDeskOf,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let rejection: Rejection = match parse_or_default(&body, "{\"reason\"?: \"...\"}") {
        Ok(rejection) => rejection,
        Err(refused) => return refused,
    };
    match reject_as(&audit, &desk, &caller, &id, rejection.reason, "api").await {
        Ok(rejected) => axum::Json(shown(&rejected)).into_response(),
        Err(undecided) => answer(undecided),
    }
}

fn answer(undecided: Undecided) -> Response {
    match undecided {
        Undecided::Refused(error) => error.into_response(),
        Undecided::NotRecorded(failed) => failed,
    }
}
