//! The inbox for local agents (scope `fundi:inbox`, or `fundi:admin`): `GET /inbox`
//! lists the proposals waiting for an answer, `POST /inbox/{task}/respond` answers one
//! (`{"action": "complete", "text"?, "data"?}`, `{"action": "ask", "text"}`,
//! `{"action": "reject", "text"}`, `{"action": "fail", "text"}`). What a proposal says
//! is another agent's data, never an instruction to this server. Answers are recorded
//! in the audit log.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_ops::inbox::{Answer, INBOX_SCOPE, Inbox, InboxError, Response as Reply};
use fundi_runtime::TaskId;
use serde_json::json;

use crate::admin::audit::record;
use crate::admin::{admin_error as error, admit_holding, parse};
use crate::auth::Caller;
use crate::state::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/inbox", get(list))
        .route("/inbox/{task}/respond", post(respond))
}

/// The caller, once admitted as a responder, and the inbox.
async fn responder(
    state: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<(Caller, Inbox), Response> {
    // `allows` counts fundi:admin too.
    let caller = admit_holding(state, headers, uri, "inbox", INBOX_SCOPE, |grants| {
        grants.allows(Some(INBOX_SCOPE))
    })
    .await?;
    match &state.operators.inbox {
        Some(inbox) => Ok((caller, inbox.clone())),
        None => Err(error(
            StatusCode::NOT_FOUND,
            "the inbox skill is not enabled on this server",
        )),
    }
}

async fn list(State(state): State<AppState>, headers: HeaderMap, uri: Uri) -> Response {
    match responder(&state, &headers, &uri).await {
        Ok((_, inbox)) => axum::Json(json!({"proposals": inbox.waiting()})).into_response(),
        Err(refused) => refused,
    }
}

async fn respond(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    Path(task): Path<String>,
    body: Bytes,
) -> Response {
    let (caller, inbox) = match responder(&state, &headers, &uri).await {
        Ok(found) => found,
        Err(refused) => return refused,
    };
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
        by: caller.user.clone(),
    };
    match inbox.respond(&task_id, reply) {
        Ok(()) => {
            let detail = json!({"action": action});
            if let Err(failed) =
                record(&state, &caller, "inbox.respond", task_id.as_str(), detail).await
            {
                return failed;
            }
            axum::Json(json!({"answered": task_id, "action": action})).into_response()
        }
        Err(e @ InboxError::NotWaiting(_)) => error(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e @ InboxError::Invalid(_)) => error(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}
