//! The approvals page: the tasks waiting for an approver whose skills the viewer's
//! scopes cover, each with what was asked in words, the input it would run on, and the
//! forms to approve it (perhaps on a narrower input) or reject it with a reason.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use fundi_runtime::approval::may_approve;
use maud::html;

use crate::actions::approval_forms;
use crate::artifacts::pretty;
use crate::diff::highlighted;
use crate::page::{Problem, Section, page, respond};
use crate::tasks::encode;
use crate::viewer::Viewer;
use crate::words::when;
use fundi_gateway::AppState;
use fundi_gateway::operations::fixes;

pub(super) async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Response, Problem> {
    if !viewer.may_approve_some() {
        return Err(Problem::forbidden(
            "this page is for approvers: it needs the scope fundi:approve (or fundi:approve:<skill>)",
        ));
    }
    let mut waiting = state.runtime().approvals().await?;
    waiting.retain(|p| may_approve(viewer.grants(), &p.request.skill));
    let proposed = match may_approve(viewer.grants(), fixes::HEAL_SKILL) {
        true => fixes::waiting(&**state.runtime()).await?,
        false => Vec::new(),
    };
    let body = html! {
        @if waiting.is_empty() && proposed.is_empty() {
            p { "No task waits for you to decide." }
        }
        @for pending in &waiting {
            @let id = pending.task_id.as_str();
            article class="approval" aria-labelledby={ "approval-" (id) } {
                h2 id={ "approval-" (id) } { (pending.request.skill) " asked by "
                    (pending.request.requested_by.as_deref().unwrap_or("an in-process caller")) }
                p class="words" { (pending.summary) }
                dl class="facts" {
                    dt { "Task" } dd { code { (id) } }
                    @if let Some(target) = &pending.request.target { dt { "Target" } dd { code { (target) } } }
                    @if let Some(reason) = &pending.request.reason { dt { "Reason" } dd { (reason) } }
                    dt { "Asked" } dd { (when(pending.since)) }
                    dt { "Rejected unless decided by" } dd { (when(pending.request.expires_at)) }
                }
                @if let Some(input) = &pending.input {
                    h3 { "Input" }
                    pre class="json" { (pretty(input)) }
                }
                (approval_forms(&viewer, id, "/console/approvals", Some(&pending.request.skill)))
            }
        }
        @for fix in &proposed {
            @let id = fix["taskId"].as_str().unwrap_or_default();
            article class="approval" aria-labelledby={ "approval-" (id) } {
                h2 id={ "approval-" (id) } { "A fix proposed by heal-issue, asked by "
                    (fix["requestedBy"].as_str().unwrap_or("an in-process caller")) }
                p class="words" { (fix["summary"].as_str().unwrap_or_default()) }
                dl class="facts" {
                    dt { "Task" } dd { a href={ "/console/tasks/" (encode(id)) } { code { (id) } } }
                    dt { "Branch" } dd { code { (fix["input"]["branch"].as_str().unwrap_or_default()) } }
                    dt { "Asked" } dd { (fix["since"].as_str().unwrap_or_default()) }
                }
                @if let Some(diff) = fix["diff"].as_str() {
                    h3 { "Diff" }
                    (highlighted(diff))
                }
                (approval_forms(&viewer, id, "/console/approvals", None))
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        page("Approvals", Some(&viewer), Section::Approvals, body),
    ))
}
