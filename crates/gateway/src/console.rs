//! The web console at `/console`, for the people in fundi's loop: the tasks (live), a
//! task's timeline and its artifacts as tables and charts, approvals, and for
//! operators the issues, dead letters, schedules and grants. Pages are rendered here
//! (maud); one small script (`assets/console.js`) extends them live from event streams,
//! and everything works without it but the live parts. Assets are in the binary.
//!
//! People sign in with a one-time link (`sign_in.rs`): a session acts with the user and
//! scopes of the API caller that asked for the link, and sees what that caller would;
//! or through an OpenID Connect identity provider (`provider.rs`).
//! The console is off with `gateway.console = false`. See docs/console.md.

mod access;
mod actions;
mod approvals;
mod artifacts;
mod assets;
mod charts;
mod diff;
mod gate;
mod heal;
mod issues;
mod operators;
pub(crate) mod page;
pub(crate) mod provider;
mod reports;
pub(crate) mod sessions;
mod sign_in;
mod sign_in_provider;
mod task;
mod tasks;
mod timeline;
mod viewer;
mod words;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::state::AppState;

/// The console's routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/console", get(home))
        .route("/console/", get(home))
        .route("/console/assets/{name}", get(assets::serve))
        .route("/console/sign-in-links", post(sign_in::make_link))
        .route(
            "/console/sign-in",
            get(sign_in::sign_in).post(sign_in::confirm),
        )
        .route("/console/sign-in/provider", get(sign_in_provider::start))
        .route("/console/sign-in/callback", get(sign_in_provider::callback))
        .route("/console/sign-out", post(sign_in::sign_out))
        .route("/console/tasks", get(tasks::list))
        .route("/console/tasks/counts", get(tasks::live_counts))
        .route("/console/tasks/{id}", get(task::show))
        .route("/console/tasks/{id}/events", get(task::live))
        .route("/console/tasks/{id}/answer", post(actions::answer))
        .route("/console/tasks/{id}/cancel", post(actions::cancel))
        .route("/console/approvals", get(approvals::list))
        .route("/console/approvals/{id}/approve", post(actions::approve))
        .route("/console/approvals/{id}/reject", post(actions::reject))
        .route("/console/access-requests", get(access::list))
        .route(
            "/console/access-requests/{id}/approve",
            post(access::approve),
        )
        .route("/console/access-requests/{id}/reject", post(access::reject))
        .route("/console/issues", get(issues::list))
        .route("/console/issues/{id}/heal", post(heal::heal))
        .route("/console/dead-letters", get(operators::dead_letters))
        .route("/console/dead-letters/replay", post(operators::replay))
        .route("/console/schedules", get(operators::schedules))
        .route(
            "/console/schedules/{id}/{change}",
            post(operators::set_paused),
        )
        .route("/console/grants", get(operators::grants))
        .route("/console/grants/{id}/revoke", post(operators::revoke))
        // Every console answer, axum's own refusals (405, 415, 422) included.
        .layer(axum::middleware::map_response(guarded))
}

async fn guarded(mut response: Response) -> Response {
    page::guard_headers(&mut response);
    response
}

async fn home() -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/console/tasks")],
    )
        .into_response()
}
