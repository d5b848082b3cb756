//! The "Requests for access" page, for approvers: each pending request with who asks
//! (the identity provider's verified subject), which agent (its card's name and URL,
//! whether its signature verified), why and what for; and the forms to approve it
//! (perhaps narrowed, perhaps expiring) or reject it with a reason. A decision here is
//! the same step as `fundi access approve/reject`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use fundi_ops::access::{AccessRequest, Standing};
use maud::{Markup, html};
use serde::Deserialize;

use crate::actions::back_to;
use crate::gate::{Change, Csrf};
use crate::page::{Problem, Section, page, respond};
use crate::tasks::encode;
use crate::viewer::Viewer;
use crate::words::when;
use fundi_gateway::AppState;
use fundi_gateway::operations::AccessDesk;
use fundi_gateway::operations::{AccessError, AuditTrail};
use fundi_gateway::operations::{UndecidedAccess as Undecided, approve_as, reject_as};

const BACK: &str = "/console/access-requests";

/// The desk, for a viewer who may decide.
fn desk_for(state: &AppState, viewer: &Viewer) -> Result<std::sync::Arc<AccessDesk>, Problem> {
    if !viewer.may_approve_some() {
        return Err(Problem::forbidden(
            "this page is for approvers: it needs the scope fundi:approve (or fundi:admin)",
        ));
    }
    state.access_requests().cloned().ok_or_else(|| {
        Problem::new(
            StatusCode::NOT_FOUND,
            "Not served",
            "Requests for access are not served here: list identity providers in \
             [friends.issuers] (docs/trust.md).",
        )
    })
}

pub(super) async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Response, Problem> {
    let desk = desk_for(&state, &viewer)?;
    let now = Utc::now();
    let mut pending: Vec<AccessRequest> = desk
        .list()
        .await?
        .into_iter()
        .filter(|r| r.standing(now) == Standing::Pending)
        .collect();
    pending.reverse();
    let body = html! {
        @if pending.is_empty() {
            p { "No request for access waits for you to decide." }
        }
        @for request in &pending {
            (one(&viewer, request))
        }
    };
    Ok(respond(
        StatusCode::OK,
        page("Requests for access", Some(&viewer), Section::Access, body),
    ))
}

fn one(viewer: &Viewer, request: &AccessRequest) -> Markup {
    let id = encode(&request.id);
    let card = &request.card;
    let agent = card.name.as_deref().unwrap_or("An unnamed agent");
    let who = &request.requester;
    let asked = request.scopes.join(",");
    html! {
        article class="approval" aria-labelledby={ "access-" (id) } {
            h2 id={ "access-" (id) } { (agent) " for " (who.subject) }
            dl class="facts" {
                dt { "Person" } dd { (who.subject) ", vouched for by " (who.provider) " (" code { (who.issuer) } ")" }
                dt { "Agent card" } dd { a href=(card.url) rel="noreferrer noopener" { (card.url) } }
                dt { "Card signature" } dd {
                    @match (&card.unreadable, card.signature_verified) {
                        (Some(why), _) => { "the card could not be read: " (why) }
                        (None, true) => "verified against keys on the card's own origin",
                        (None, false) => "not signed, or not verified",
                    }
                }
                dt { "Asks for" } dd { @for scope in &request.scopes { code { (scope) } " " } }
                dt { "Reason" } dd { (request.reason) }
                dt { "Asked" } dd { (when(request.created_at)) }
                dt { "Lapses" } dd { (when(request.expires_at)) }
                dt { "Request" } dd { code { (request.id) } }
            }
            div class="decide" {
                form method="post" action={ (BACK) "/" (id) "/approve" } {
                    input type="hidden" name="csrf" value=(viewer.csrf());
                    label for={ "scopes-" (id) } { "Scopes to grant (comma-separated; only those asked for)" }
                    input id={ "scopes-" (id) } name="scopes" type="text" value=(asked) required;
                    label for={ "expires-" (id) } { "Grant expires after (e.g. 30d; empty: until revoked)" }
                    input id={ "expires-" (id) } name="expires" type="text";
                    button type="submit" { "Approve" }
                }
                form method="post" action={ (BACK) "/" (id) "/reject" } {
                    input type="hidden" name="csrf" value=(viewer.csrf());
                    label for={ "reason-" (id) } { "Reason for rejecting" }
                    input id={ "reason-" (id) } name="reason" type="text" required;
                    button type="submit" class="danger" { "Reject" }
                }
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Approval {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    scopes: String,
    #[serde(default)]
    expires: String,
}

impl Csrf for Approval {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn approve(
    State(state): State<AppState>,
    State(audit): State<AuditTrail>,
    Path(id): Path<String>,
    Change(viewer, form): Change<Approval>,
) -> Result<Response, Problem> {
    let desk = desk_for(&state, &viewer)?;
    let scopes: Vec<String> = form
        .scopes
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if scopes.is_empty() {
        return Err(Problem::bad_form(
            "name at least one scope to grant, or reject the request",
        ));
    }
    let expires = Some(form.expires.trim()).filter(|e| !e.is_empty());
    let caller = viewer.caller();
    approve_as(
        &audit,
        &desk,
        &caller,
        &id,
        Some(scopes),
        expires,
        "console",
    )
    .await
    .map_err(problem)?;
    Ok(back_to(BACK))
}

#[derive(Deserialize)]
pub(super) struct Rejection {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
}

impl Csrf for Rejection {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn reject(
    State(state): State<AppState>,
    State(audit): State<AuditTrail>,
    Path(id): Path<String>,
    Change(viewer, form): Change<Rejection>,
) -> Result<Response, Problem> {
    let desk = desk_for(&state, &viewer)?;
    let reason = form.reason.trim().to_owned();
    if reason.is_empty() {
        return Err(Problem::bad_form("a rejection needs a reason"));
    }
    let caller = viewer.caller();
    reject_as(&audit, &desk, &caller, &id, Some(reason), "console")
        .await
        .map_err(problem)?;
    Ok(back_to(BACK))
}

fn problem(undecided: Undecided) -> Problem {
    match undecided {
        Undecided::Refused(error) => error.into(),
        Undecided::NotRecorded(_) => Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Not recorded",
            "The decision was made, but the audit log could not be written; see the server's log.",
        ),
    }
}

impl From<AccessError> for Problem {
    fn from(error: AccessError) -> Problem {
        let status = error.status();
        let title = match status {
            StatusCode::BAD_REQUEST => "Not understood",
            StatusCode::FORBIDDEN => "Not allowed",
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::CONFLICT | StatusCode::GONE => "Not possible",
            _ => "Something went wrong",
        };
        Problem::new(status, title, error.told())
    }
}
