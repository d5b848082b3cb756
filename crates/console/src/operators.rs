//! The operators' pages (scope `fundi:admin`): push deliveries given up (dead letters)
//! with a replay button, the schedules with pause and resume, and the grants with
//! revoke. Each change is recorded in the audit log, as through `/admin`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::actions::back_to;
use crate::gate::{Change, ConsoleAdmin, Csrf, CsrfOnly};
use crate::page::{Problem, Section, page, respond};
use crate::tasks::encode;
use crate::viewer::Viewer;
use crate::words::{clip, when};
use fundi_gateway::AppState;
use fundi_gateway::operations::AuditTrail;
use fundi_gateway::operations::Revoked;

fn not_kept(what: &str) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "Not kept",
        format!("{what} are not kept on this server."),
    )
}

fn store_failed(error: impl std::fmt::Display, doing: &str) -> Problem {
    tracing::error!(%error, "{doing} for the console");
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        format!("{doing} failed: see the server's log."),
    )
}

/// Checks an operator's change, then records it.
async fn recorded(
    audit: &AuditTrail,
    viewer: &Viewer,
    action: &str,
    target: &str,
    detail: Value,
) -> Result<(), Problem> {
    audit
        .record(&viewer.caller(), action, target, detail)
        .await
        .map_err(|_| {
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Not recorded",
                format!("{action} of {target} was done, but the audit log could not be written"),
            )
        })
}

pub(super) async fn dead_letters(
    State(state): State<AppState>,
    ConsoleAdmin(viewer): ConsoleAdmin,
) -> Result<Response, Problem> {
    let Some(push) = state.push() else {
        return Err(not_kept("Push notifications"));
    };
    let entries = push
        .dead_letters()
        .await
        .map_err(|e| store_failed(e, "Listing dead letters"))?;
    let body = html! {
        @if entries.is_empty() { p { "No delivery was given up." } }
        @else {
            table class="report" {
                thead { tr { th scope="col" { "Task" } th scope="col" { "Webhook" } th scope="col" { "Given up" }
                             th scope="col" { "Last error" } th scope="col" { "Replay" } } }
                tbody {
                    @for entry in &entries {
                        @if let Some(dead) = &entry.cursor.dead {
                            tr {
                                td { a href={ "/console/tasks/" (encode(entry.config.task_id.as_str())) } { code { (entry.config.task_id.as_str()) } } }
                                td { code { (clip(&entry.config.url, 80)) } }
                                td { "event " (dead.seq) " after " (dead.attempts) " attempts, " (when(dead.dead_at)) }
                                td { (clip(&dead.last_error, 200)) }
                                td {
                                    form method="post" action="/console/dead-letters/replay" {
                                        input type="hidden" name="csrf" value=(viewer.csrf());
                                        input type="hidden" name="task" value=(entry.config.task_id.as_str());
                                        input type="hidden" name="config" value=(entry.config.id);
                                        button type="submit" aria-label={ "Replay the deliveries of task " (entry.config.task_id.as_str()) " to " (entry.config.url) } { "Replay" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        page("Dead letters", Some(&viewer), Section::DeadLetters, body),
    ))
}

#[derive(Deserialize)]
pub(super) struct Replay {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    task: String,
    #[serde(default)]
    config: String,
}

impl Csrf for Replay {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn replay(
    State(state): State<AppState>,
    State(audit): State<AuditTrail>,
    Change(ConsoleAdmin(viewer), form): Change<Replay, ConsoleAdmin>,
) -> Result<Response, Problem> {
    let Some(push) = state.push() else {
        return Err(not_kept("Push notifications"));
    };
    let task_id = fundi_runtime::TaskId::from(form.task.clone());
    let replayed = push
        .replay(&task_id, &form.config)
        .await
        .map_err(|e| store_failed(e, "Replaying"))?;
    if !replayed {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            "Not found",
            format!(
                "no dead letter for config {:?} of task {}",
                form.config, form.task
            ),
        ));
    }
    recorded(
        &audit,
        &viewer,
        "push.replay",
        &format!("{}/{}", form.task, form.config),
        json!({"through": "console"}),
    )
    .await?;
    Ok(back_to("/console/dead-letters"))
}

pub(super) async fn schedules(
    State(state): State<AppState>,
    ConsoleAdmin(viewer): ConsoleAdmin,
) -> Result<Response, Problem> {
    let Some(scheduler) = state.schedules() else {
        return Err(not_kept("Schedules"));
    };
    let schedules = scheduler.list().await?;
    let body = html! {
        @if schedules.is_empty() { p { "No schedule." } }
        @else {
            table class="report" {
                thead { tr { th scope="col" { "Schedule" } th scope="col" { "Skill" } th scope="col" { "When" }
                             th scope="col" { "Next" } th scope="col" { "Fired" } th scope="col" { "Pause or resume" } } }
                tbody {
                    @for schedule in &schedules {
                        tr {
                            td { code { (schedule.id) } br; "for " (schedule.owner.as_deref().unwrap_or("nobody")) }
                            td { (schedule.spec.skill) }
                            td { code { (schedule.spec.cron) } " (" (schedule.zone) ")" }
                            td { @if schedule.paused { "paused" } @else { (when(schedule.next_fire)) } }
                            td { (schedule.fired) " times" @if schedule.skipped > 0 { ", " (schedule.skipped) " missed" } }
                            td {
                                form method="post" action={ "/console/schedules/" (encode(&schedule.id)) "/" (if schedule.paused { "resume" } else { "pause" }) } {
                                    input type="hidden" name="csrf" value=(viewer.csrf());
                                    button type="submit" aria-label={ (if schedule.paused { "Resume " } else { "Pause " }) (schedule.id) } {
                                        (if schedule.paused { "Resume" } else { "Pause" })
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        page("Schedules", Some(&viewer), Section::Schedules, body),
    ))
}

pub(super) async fn set_paused(
    State(state): State<AppState>,
    State(audit): State<AuditTrail>,
    Path((id, change)): Path<(String, String)>,
    Change(ConsoleAdmin(viewer), _form): Change<CsrfOnly, ConsoleAdmin>,
) -> Result<Response, Problem> {
    let Some(scheduler) = state.schedules() else {
        return Err(not_kept("Schedules"));
    };
    let paused = match change.as_str() {
        "pause" => true,
        "resume" => false,
        other => {
            return Err(Problem::bad_form(format!(
                "a schedule can be paused or resumed, not {other:?}"
            )));
        }
    };
    scheduler.set_paused(&id, paused).await?;
    recorded(
        &audit,
        &viewer,
        &format!("schedule.{change}"),
        &id,
        json!({"through": "console"}),
    )
    .await?;
    Ok(back_to("/console/schedules"))
}

pub(super) async fn grants(
    State(state): State<AppState>,
    ConsoleAdmin(viewer): ConsoleAdmin,
) -> Result<Response, Problem> {
    let Some(desk) = state.grants() else {
        return Err(not_kept("Grants"));
    };
    let grants = desk
        .list()
        .await
        .map_err(|e| store_failed(e, "Listing grants"))?;
    let now = chrono::Utc::now();
    let body = html! {
        @if grants.is_empty() { p { "No grant." } }
        @else {
            table class="report" {
                thead { tr { th scope="col" { "Grant" } th scope="col" { "Client" } th scope="col" { "Scopes" }
                             th scope="col" { "Made" } th scope="col" { "Admits" } th scope="col" { "Revoke" } } }
                tbody {
                    @for grant in &grants {
                        tr {
                            td { code { (grant.id) } }
                            td { (grant.client) }
                            td { @for scope in &grant.scopes { code { (scope) } " " } }
                            td { "by " (grant.created_by) ", " (when(grant.created_at)) }
                            td { @match grant.refusal(now) { Some(why) => (why), None => "yes" } }
                            td {
                                @if grant.revoked_at.is_none() {
                                    form method="post" action={ "/console/grants/" (encode(&grant.id)) "/revoke" } {
                                        input type="hidden" name="csrf" value=(viewer.csrf());
                                        button type="submit" class="danger" aria-label={ "Revoke " (grant.id) " of " (grant.client) } { "Revoke" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        page("Grants", Some(&viewer), Section::Grants, body),
    ))
}

pub(super) async fn revoke(
    State(state): State<AppState>,
    State(audit): State<AuditTrail>,
    Path(id): Path<String>,
    Change(ConsoleAdmin(viewer), _form): Change<CsrfOnly, ConsoleAdmin>,
) -> Result<Response, Problem> {
    let Some(desk) = state.grants() else {
        return Err(not_kept("Grants"));
    };
    match desk
        .revoke(&id)
        .await
        .map_err(|e| store_failed(e, "Revoking"))?
    {
        Revoked::Now(grant) => {
            recorded(
                &audit,
                &viewer,
                "grant.revoke",
                &grant.id,
                json!({"client": grant.client, "through": "console"}),
            )
            .await?;
        }
        Revoked::Already(_) => {}
        Revoked::NoSuchGrant => {
            return Err(Problem::new(
                StatusCode::NOT_FOUND,
                "Not found",
                format!("grant {id} not found"),
            ));
        }
    }
    Ok(back_to("/console/grants"))
}
