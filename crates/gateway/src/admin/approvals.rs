//! Approvals for approvers (scope `fundi:approve`, `fundi:approve:<skill>` for one
//! skill, or `fundi:admin`): `GET /admin/approvals` lists the tasks waiting for one,
//! `POST /admin/approvals/{task}/approve` (optionally `{"data": ...}`, a narrower input)
//! and `POST /admin/approvals/{task}/reject` (`{"reason": ...}`) decide. Each decision
//! is recorded in the audit log.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_runtime::Access;
use fundi_runtime::approval::{APPROVE_SCOPE, Decision, Verdict, may_approve, pending};
use fundi_runtime::{RuntimeError, TaskId, TaskService};
use serde::Deserialize;
use serde_json::{Value, json};

use super::audit::AuditTrail;
use super::fixes;
use super::{admin_error, parse, parse_or_default, runtime_failure};
use crate::auth::Caller;
use crate::dialect::Dialect;
use crate::error::ApiError;
use crate::operator::{Approver, Operator};
use crate::reply::refusal;
use crate::state::AppState;
use std::sync::Arc;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/approvals", get(list))
        .route("/admin/approvals/{task}/approve", post(approve))
        .route("/admin/approvals/{task}/reject", post(reject))
}

async fn list(
    State(runtime): State<Arc<dyn TaskService>>,
    Operator(caller, _): Operator<Approver>,
) -> Response {
    let mut approvals = match runtime.approvals().await {
        Ok(approvals) => approvals,
        Err(error) => return runtime_failure(error),
    };
    approvals.retain(|p| may_approve(&caller.grants, &p.request.skill));
    let mut listed: Vec<Value> = approvals
        .iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .collect();
    // Proposed fixes wait for the same kind of decision.
    if may_approve(&caller.grants, fixes::HEAL_SKILL) {
        match fixes::waiting(&*runtime).await {
            Ok(waiting) => listed.extend(waiting),
            Err(error) => return runtime_failure(error),
        }
    }
    axum::Json(json!({"approvals": listed})).into_response()
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Approval {
    /// A narrower input for the skill, instead of the one asked for.
    #[serde(default)]
    data: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rejection {
    reason: String,
}

async fn approve(
    State(deciding): State<Deciding>,
    Operator(caller, _): Operator<Approver>,
    Path(task): Path<String>,
    body: Bytes,
) -> Response {
    let expected = "no body, or {\"data\": <a narrower input>}";
    let approval: Approval = match parse_or_default(&body, expected) {
        Ok(approval) => approval,
        Err(refused) => return refused,
    };
    let narrowed = approval.data.is_some();
    let verdict = Verdict::Approve {
        narrowed: approval.data,
    };
    decide(
        &deciding,
        &caller,
        task,
        verdict,
        json!({"narrowed": narrowed}),
    )
    .await
}

async fn reject(
    State(deciding): State<Deciding>,
    Operator(caller, _): Operator<Approver>,
    Path(task): Path<String>,
    body: Bytes,
) -> Response {
    let rejection: Rejection = match parse(&body, "{\"reason\": ...}") {
        Ok(rejection) => rejection,
        Err(refused) => return refused,
    };
    let reason = rejection.reason.trim().to_owned();
    if reason.is_empty() {
        return admin_error(StatusCode::BAD_REQUEST, "a rejection needs a reason");
    }
    let detail = json!({"reason": reason});
    decide(&deciding, &caller, task, Verdict::Reject { reason }, detail).await
}

async fn decide(
    deciding: &Deciding,
    caller: &Caller,
    task: String,
    verdict: Verdict,
    detail: Value,
) -> Response {
    match decide_as(deciding, caller, TaskId::from(task), verdict, detail).await {
        Ok(task) => {
            axum::Json(json!({"task": crate::encode::task(&task, Dialect::V1)})).into_response()
        }
        Err(Undecided::Runtime(error)) => runtime_failure(error),
        Err(Undecided::Scope(error) | Undecided::Refused(error)) => {
            refusal(&Value::Null, &error, Dialect::V1)
        }
        Err(Undecided::NotRecorded(failed)) => failed,
    }
}

/// What a decision on a waiting task needs: the runtime that decides, and the trail
/// that records it. A sub-state of the gateway's (and the console's) state.
#[derive(Clone)]
pub struct Deciding {
    runtime: Arc<dyn TaskService>,
    audit: AuditTrail,
}

impl Deciding {
    /// Decisions made on `runtime`, recorded in `audit`.
    pub fn new(runtime: Arc<dyn TaskService>, audit: AuditTrail) -> Deciding {
        Deciding { runtime, audit }
    }
}

impl axum::extract::FromRef<AppState> for Deciding {
    fn from_ref(state: &AppState) -> Deciding {
        Deciding::new(state.runtime.clone(), AuditTrail::from_ref(state))
    }
}

/// Why a decision was not made, or not recorded.
pub enum Undecided {
    /// The runtime refused it (no such task, not waiting, the approver is the asker).
    Runtime(RuntimeError),
    /// The caller may not approve this skill's tasks.
    Scope(ApiError),
    /// The decision cannot be made as asked (a fix approved on another input).
    Refused(ApiError),
    /// Made, but the audit log could not be written (the answer says so).
    NotRecorded(Response),
}

/// Decides on the fix a heal task proposes, as `caller` (who must hold an approving
/// scope for the heal skill), and records the decision.
async fn decide_fix(
    deciding: &Deciding,
    caller: &Caller,
    task_id: TaskId,
    verdict: Verdict,
    mut detail: Value,
) -> Result<fundi_runtime::Task, Undecided> {
    if !may_approve(&caller.grants, fixes::HEAL_SKILL) {
        let scope = format!("{APPROVE_SCOPE}:{}", fixes::HEAL_SKILL);
        return Err(Undecided::Scope(ApiError::insufficient_scope(
            fixes::HEAL_SKILL,
            &scope,
        )));
    }
    let task = fixes::decide(&*deciding.runtime, caller, &task_id, &verdict)
        .await
        .map_err(Undecided::Refused)?;
    let action = match verdict {
        Verdict::Approve { .. } => "approval.approve",
        _ => "approval.reject",
    };
    detail["skill"] = json!(fixes::HEAL_SKILL);
    detail["kind"] = json!("fix");
    deciding
        .audit
        .record(caller, action, task_id.as_str(), detail)
        .await
        .map_err(Undecided::NotRecorded)?;
    Ok(task)
}

/// Decides on a waiting task as `caller` (who must hold an approving scope for its
/// skill) and records the decision in the audit log; the web console decides through
/// this too.
pub async fn decide_as(
    deciding: &Deciding,
    caller: &Caller,
    task_id: TaskId,
    verdict: Verdict,
    mut detail: Value,
) -> Result<fundi_runtime::Task, Undecided> {
    // The skill decides who may approve: read it before deciding.
    let waiting = deciding
        .runtime
        .snapshot(&task_id, Some(0), Access::Any)
        .await
        .map_err(Undecided::Runtime)?
        .task;
    let Some(request) = pending(&waiting) else {
        if fixes::proposal(&waiting).is_some() {
            return decide_fix(deciding, caller, task_id, verdict, detail).await;
        }
        return Err(Undecided::Runtime(RuntimeError::NotAwaitingApproval {
            id: task_id,
            state: waiting.status.state,
        }));
    };
    if !may_approve(&caller.grants, &request.skill) {
        let scope = format!("{APPROVE_SCOPE}:{}", request.skill);
        return Err(Undecided::Scope(ApiError::insufficient_scope(
            &request.skill,
            &scope,
        )));
    }
    let action = match verdict {
        Verdict::Approve { .. } => "approval.approve",
        _ => "approval.reject",
    };
    let decision = Decision {
        verdict,
        by: caller.user.to_string(),
        client: Some(caller.client.clone()),
    };
    let task = deciding
        .runtime
        .decide(&task_id, decision)
        .await
        .map_err(Undecided::Runtime)?;
    detail["skill"] = json!(request.skill);
    detail["requestedBy"] = json!(request.requested_by);
    deciding
        .audit
        .record(caller, action, task_id.as_str(), detail)
        .await
        .map_err(Undecided::NotRecorded)?;
    Ok(task)
}
