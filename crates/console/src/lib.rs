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
//!
//! The pages sit beside the A2A bindings: [`Console::router`] is merged into the
//! gateway's own (`fundi_gateway::app_with`), behind the same guards, and acts through
//! the gateway's [`fundi_gateway::operations`], so that a decision taken here is the
//! same step, with the same audit record, as one taken through `/admin`.

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

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRef;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_gateway::AppState;
use fundi_gateway::operations::{AuditTrail, Deciding};
use fundi_ops::sessions::SessionStore;
use fundi_runtime::TaskService;

use crate::provider::Provider;
use crate::sessions::Sessions;

/// The web console of one gateway: its pages, its sign-in links and sessions, and the
/// identity provider that signs people in when `gateway.console-oidc` names one.
pub struct Console {
    state: ConsoleState,
}

/// What the console's handlers share: the gateway's state, and the console's own.
#[derive(Clone)]
pub(crate) struct ConsoleState {
    pub(crate) app: AppState,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) provider: Option<Arc<Provider>>,
}

impl FromRef<ConsoleState> for AppState {
    fn from_ref(state: &ConsoleState) -> AppState {
        state.app.clone()
    }
}

impl FromRef<ConsoleState> for Arc<dyn TaskService> {
    fn from_ref(state: &ConsoleState) -> Arc<dyn TaskService> {
        state.app.runtime().clone()
    }
}

impl FromRef<ConsoleState> for AuditTrail {
    fn from_ref(state: &ConsoleState) -> AuditTrail {
        AuditTrail::from_ref(&state.app)
    }
}

impl FromRef<ConsoleState> for Deciding {
    fn from_ref(state: &ConsoleState) -> Deciding {
        Deciding::from_ref(&state.app)
    }
}

impl FromRef<ConsoleState> for Arc<Sessions> {
    fn from_ref(state: &ConsoleState) -> Arc<Sessions> {
        state.sessions.clone()
    }
}

impl Console {
    /// The console of the gateway `app` serves, keeping its sign-in links and sessions
    /// in this process's memory.
    pub fn new(app: AppState) -> Console {
        // The settings were checked (`GatewayConfig::validate`); what is left to fail is
        // the machine's (an HTTP client), and the console then says no provider is set.
        let provider = app.config().console_oidc.clone().and_then(|settings| {
            Provider::new(settings, app.public_url())
                .map(Arc::new)
                .inspect_err(|error| tracing::error!(%error, "the console's identity provider"))
                .ok()
        });
        Console {
            state: ConsoleState {
                sessions: Arc::new(Sessions::new(app.public_url())),
                provider,
                app,
            },
        }
    }

    /// The same console keeping its sign-in links and sessions in `store`: a store the
    /// nodes of a cluster share signs a person in on all of them.
    pub fn with_sessions(mut self, store: Arc<dyn SessionStore>) -> Console {
        let public_url = self.state.app.public_url();
        self.state.sessions = Arc::new(Sessions::in_store(store, public_url));
        self
    }

    /// The console's routes under `/console`, for `fundi_gateway::app_with`.
    pub fn router(self) -> Router {
        routes().with_state(self.state)
    }
}

/// The console's routes.
fn routes() -> Router<ConsoleState> {
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
