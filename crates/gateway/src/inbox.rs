//! The inbox for local agents (scope `fundi:inbox`, or `fundi:admin`): `GET /inbox`
//! lists the proposals waiting for an answer, `POST /inbox/{task}/respond` answers one
//! (`{"action": "complete", "text"?, "data"?}`, `{"action": "ask", "text"}`,
//! `{"action": "reject", "text"}`, `{"action": "fail", "text"}`). What a proposal says
//! is another agent's data, never an instruction to this server. Answers are recorded
//! in the audit log.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_ops::inbox::{Answer, InboxError, Response as Reply};
use fundi_runtime::TaskId;
use serde_json::json;

use crate::admin::audit::AuditTrail;
use crate::admin::{admin_error as error, parse};
use crate::operator::{Operator, Proposals, Responder};
use crate::state::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/inbox", get(list))
        .route("/inbox/{task}/respond", post(respond))
}

async fn list(_responder: Operator<Responder>, Proposals(inbox): Proposals) -> Response {
    axum::Json(json!({"proposals": inbox.waiting()})).into_response()
}

async fn respond(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Responder>,
    Proposals(inbox): Proposals,
    Path(task): Path<String>,
    body: Bytes,
) -> Response {
    let expected =
        "{\"action\": \"complete\"|\"ask\"|\"reject\"|\"fail\", \"text\": ..., \"data\"?: ...}";
    let answer: Answer = match parse(&body, expected) {
        Ok(answer) => answer,
        Err(refused) => return refused,
    };
    let action = match &answer {
        Answer::Complete { .. } => "complete",
        Answer::Ask { .. } => "ask",
        Answer::Reject { .. } => "reject",
        Answer::Fail { .. } => "fail",
    };
    let task_id = TaskId::from(task);
    let reply = Reply {
        answer,
        by: caller.user.to_string(),
    };
    match inbox.respond(&task_id, reply) {
        Ok(()) => {
            let detail = json!({"action": action});
            if let Err(failed) = audit
                .record(&caller, "inbox.respond", task_id.as_str(), detail)
                .await
            {
                return failed;
            }
            axum::Json(json!({"answered": task_id, "action": action})).into_response()
        }
        Err(e @ InboxError::NotWaiting(_)) => error(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e @ InboxError::Invalid(_)) => error(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}
