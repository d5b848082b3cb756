//! What a viewer can do about a task, as forms, and the handlers they post to: answer a
//! task that waits for input, cancel an unfinished one, approve (perhaps with a
//! narrower input) or reject one that waits for an approver. Every form carries the
//! session's CSRF token and is checked against its Origin; each handler then does what
//! the API would do for the same caller, and goes back to the page it came from.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use fundi_runtime::Access;
use fundi_runtime::approval::{Verdict, may_approve, pending};
use fundi_runtime::{Message, Part, SubmitRequest, Task, TaskId, TaskService, TaskState};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::gate::{Change, Csrf, CsrfOnly};
use crate::page::Problem;
use crate::tasks::encode;
use crate::viewer::Viewer;
use fundi_gateway::operations::fixes;
use fundi_gateway::operations::{Deciding, Undecided, decide_as};

/// The forms that apply to `task` for `viewer`.
pub(crate) fn for_task(viewer: &Viewer, task: &Task) -> Markup {
    let back = format!("/console/tasks/{}", encode(task.id.as_str()));
    let state = task.status.state;
    // A heal's proposal is decided with buttons, as approvals are (its free-text answer
    // stays for A2A clients).
    let fix = fixes::proposal(task).is_some() && may_approve(viewer.grants(), fixes::HEAL_SKILL);
    html! {
        @if let Some(request) = pending(task).filter(|r| may_approve(viewer.grants(), &r.skill)) {
            section aria-labelledby="decide-title" {
                h2 id="decide-title" { "Decide" }
                (approval_forms(viewer, task.id.as_str(), &back, Some(request.skill.as_str())))
            }
        }
        @if fix {
            section aria-labelledby="decide-title" {
                h2 id="decide-title" { "Decide on the proposed fix" }
                p { "Approving pushes the fix's branch (the diff is under Artifacts); rejecting deletes it. Nothing is merged." }
                (approval_forms(viewer, task.id.as_str(), &back, None))
            }
        } @else if state == TaskState::InputRequired {
            section aria-labelledby="answer-title" {
                h2 id="answer-title" { "Answer" }
                form method="post" action={ "/console/tasks/" (encode(task.id.as_str())) "/answer" } {
                    input type="hidden" name="csrf" value=(viewer.csrf());
                    label for="answer-text" { "Your answer" }
                    textarea id="answer-text" name="text" rows="3" required {}
                    button type="submit" { "Send answer" }
                }
            }
        }
        @if !state.is_terminal() {
            form class="inline" method="post" action={ "/console/tasks/" (encode(task.id.as_str())) "/cancel" } {
                input type="hidden" name="csrf" value=(viewer.csrf());
                button type="submit" class="danger" { "Cancel task" }
            }
        }
    }
}

/// Approve (with an optional narrower input for `narrowable`'s skill) and reject (with
/// a reason) for one task; `back` is where the decision returns to.
pub(crate) fn approval_forms(
    viewer: &Viewer,
    task: &str,
    back: &str,
    narrowable: Option<&str>,
) -> Markup {
    let path = format!("/console/approvals/{}", encode(task));
    let id = encode(task);
    html! {
        div class="decide" {
            form method="post" action={ (path) "/approve" } {
                input type="hidden" name="csrf" value=(viewer.csrf());
                input type="hidden" name="back" value=(back);
                @if let Some(skill) = narrowable {
                    label for={ "narrow-" (id) } { "Narrower input for " (skill) " (JSON, optional)" }
                    textarea id={ "narrow-" (id) } name="narrowed" rows="3" {}
                }
                button type="submit" { "Approve" }
            }
            form method="post" action={ (path) "/reject" } {
                input type="hidden" name="csrf" value=(viewer.csrf());
                input type="hidden" name="back" value=(back);
                label for={ "reason-" (id) } { "Reason for rejecting" }
                input id={ "reason-" (id) } name="reason" type="text" required;
                button type="submit" class="danger" { "Reject" }
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Answer {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    text: String,
}

impl Csrf for Answer {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn answer(
    State(runtime): State<Arc<dyn TaskService>>,
    Path(id): Path<String>,
    Change(viewer, form): Change<Answer>,
) -> Result<Response, Problem> {
    let text = form.text.trim();
    if text.is_empty() {
        return Err(Problem::bad_form("an answer needs some text"));
    }
    let mut message = Message::user(vec![Part::text(text)]);
    message.task_id = Some(TaskId::from(id.clone()));
    let caller = viewer.caller();
    let request = SubmitRequest::new(message)
        .owner(Some(caller.user))
        .client(Some(caller.client))
        .grants(caller.grants);
    runtime.submit(request).await?;
    Ok(back_to(&format!("/console/tasks/{}", encode(&id))))
}

pub(super) async fn cancel(
    State(runtime): State<Arc<dyn TaskService>>,
    Path(id): Path<String>,
    Change(viewer, _form): Change<CsrfOnly>,
) -> Result<Response, Problem> {
    let task_id = TaskId::from(id.clone());
    runtime
        .cancel(&task_id, Access::Owner(viewer.user()))
        .await?;
    Ok(back_to(&format!("/console/tasks/{}", encode(&id))))
}

#[derive(Deserialize)]
pub(super) struct Approval {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    back: String,
    #[serde(default)]
    narrowed: String,
}

impl Csrf for Approval {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn approve(
    State(deciding): State<Deciding>,
    Path(id): Path<String>,
    Change(viewer, form): Change<Approval>,
) -> Result<Response, Problem> {
    let narrowed = match form.narrowed.trim() {
        "" => None,
        text => Some(
            serde_json::from_str::<Value>(text)
                .map_err(|e| Problem::bad_form(format!("the narrower input is not JSON: {e}")))?,
        ),
    };
    let detail = json!({"narrowed": narrowed.is_some(), "through": "console"});
    decide(
        &deciding,
        &viewer,
        id,
        Verdict::Approve { narrowed },
        detail,
    )
    .await?;
    Ok(back_to(&form.back))
}

#[derive(Deserialize)]
pub(super) struct Rejection {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    back: String,
    #[serde(default)]
    reason: String,
}

impl Csrf for Rejection {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn reject(
    State(deciding): State<Deciding>,
    Path(id): Path<String>,
    Change(viewer, form): Change<Rejection>,
) -> Result<Response, Problem> {
    let reason = form.reason.trim().to_owned();
    if reason.is_empty() {
        return Err(Problem::bad_form("a rejection needs a reason"));
    }
    let detail = json!({"reason": reason, "through": "console"});
    decide(&deciding, &viewer, id, Verdict::Reject { reason }, detail).await?;
    Ok(back_to(&form.back))
}

async fn decide(
    deciding: &Deciding,
    viewer: &Viewer,
    id: String,
    verdict: Verdict,
    detail: Value,
) -> Result<(), Problem> {
    match decide_as(
        deciding,
        &viewer.caller(),
        TaskId::from(id),
        verdict,
        detail,
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(Undecided::Runtime(error)) => Err(error.into()),
        Err(Undecided::Scope(error) | Undecided::Refused(error)) => Err(error.into()),
        Err(Undecided::NotRecorded(_)) => Err(Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Not recorded",
            "The decision was made, but the audit log could not be written; see the server's log.",
        )),
    }
}

/// See Other, to a console page (a `back` that is not one goes to the tasks).
pub(super) fn back_to(back: &str) -> Response {
    let safe =
        back.starts_with("/console/") && !back.starts_with("/console//") && !back.contains('\\');
    let target = if safe { back } else { "/console/tasks" };
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, target.to_owned())],
    )
        .into_response()
}
