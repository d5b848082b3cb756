//! Extractors of the routes beside A2A (`/admin`, `/inbox`): the caller, admitted as
//! every authenticated route admits (Host and Origin, both credentials, the rate limit)
//! and holding what the route's role needs ([`Operator`]); and the service a route
//! works on, where this server keeps it ([`GrantsDesk`], [`Schedules`], [`Proposals`],
//! [`Peers`], [`Pushing`], [`Issues`], [`ChaosEvents`]).
//! A handler's signature says what it needs; a refusal is the whole answer, before the
//! body is read: 401 or 403 for the caller, then 404 for a service this server lacks.

use std::marker::PhantomData;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;
use fundi_ops::chaos::ChaosLog;
use fundi_ops::inbox::{INBOX_SCOPE, Inbox};
use fundi_ops::issues::IssueStore;
use fundi_ops::schedules::Scheduler;
use fundi_peers::{DELEGATE_SCOPE, PeerDirectory};
use fundi_runtime::approval::APPROVE_SCOPE;
use fundi_runtime::{ADMIN_SCOPE, Grants};
use serde_json::Value;

use crate::admin::answer::admin_error;
use crate::admin::grant_desk::GrantDesk;
use crate::admission::admit;
use crate::auth::Caller;
use crate::dialect::Dialect;
use crate::error::ApiError;
use crate::push::PushService;
use crate::reply::refusal;
use crate::state::AppState;

/// What a route's caller must hold beyond being admitted.
pub(crate) trait Role: Send + Sync + 'static {
    /// The routes the role opens, as a refusal names them.
    const WHAT: &'static str;
    /// The scope a refusal names.
    const SCOPE: &'static str;
    /// Whether `grants` hold the role.
    fn held_by(grants: &Grants) -> bool;
}

/// An operator: `fundi:admin`.
pub(crate) struct Admin;

impl Role for Admin {
    const WHAT: &'static str = "the admin routes (/admin/...)";
    const SCOPE: &'static str = ADMIN_SCOPE;
    fn held_by(grants: &Grants) -> bool {
        grants.allows(Some(ADMIN_SCOPE))
    }
}

/// An approver: some approving scope (which skills it covers is checked per task), or
/// `fundi:admin`.
pub(crate) struct Approver;

impl Role for Approver {
    const WHAT: &'static str =
        "approvals and requests for access (/admin/approvals, /admin/access-requests)";
    const SCOPE: &'static str = APPROVE_SCOPE;
    fn held_by(grants: &Grants) -> bool {
        grants.list().is_none_or(|held| {
            held.iter()
                .any(|s| *s == ADMIN_SCOPE || s.starts_with(APPROVE_SCOPE))
        })
    }
}

/// A local agent answering the inbox: `fundi:inbox` (or `fundi:admin`).
pub(crate) struct Responder;

impl Role for Responder {
    const WHAT: &'static str = "the inbox (/inbox)";
    const SCOPE: &'static str = INBOX_SCOPE;
    fn held_by(grants: &Grants) -> bool {
        grants.allows(Some(INBOX_SCOPE))
    }
}

/// A caller delegating to peers: `fundi:delegate` (or `fundi:admin`).
pub(crate) struct Delegator;

impl Role for Delegator {
    const WHAT: &'static str = "the peers (/peers)";
    const SCOPE: &'static str = DELEGATE_SCOPE;
    fn held_by(grants: &Grants) -> bool {
        grants.allows(Some(DELEGATE_SCOPE))
    }
}

/// The caller, admitted and holding `R`.
pub(crate) struct Operator<R: Role>(pub(crate) Caller, pub(crate) PhantomData<R>);

impl<R: Role> FromRequestParts<AppState> for Operator<R> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let caller = admit(state, &parts.headers, &parts.uri)
            .await
            .map_err(|e| refusal(&Value::Null, &e, Dialect::V1))?;
        if !R::held_by(&caller.grants) {
            let error = ApiError::role_scope(R::WHAT, R::SCOPE);
            return Err(refusal(&Value::Null, &error, Dialect::V1));
        }
        Ok(Operator(caller, PhantomData))
    }
}

/// An extractor of a service a route works on, taken from the state where this server
/// keeps it, and refused with a 404 that says `$missing` where it does not.
macro_rules! served {
    ($(#[$doc:meta])* $name:ident($service:ty) = |$state:ident| $get:expr, $missing:expr) => {
        $(#[$doc])*
        pub(crate) struct $name(pub(crate) $service);

        impl FromRequestParts<AppState> for $name {
            type Rejection = Response;

            async fn from_request_parts(_: &mut Parts, $state: &AppState) -> Result<Self, Response> {
                $get.clone().map($name).ok_or_else(|| missing($missing))
            }
        }
    };
}

served!(
    /// The grants desk.
    GrantsDesk(Arc<GrantDesk>) = |state| state.operators.grants,
    "grants are not kept on this server"
);

served!(
    /// The scheduler.
    Schedules(Scheduler) = |state| state.operators.schedules,
    "scheduled runs are not available on this server"
);

served!(
    /// The inbox of proposals (the inbox skill).
    Proposals(Inbox) = |state| state.operators.inbox,
    "the inbox skill is not enabled on this server"
);

served!(
    /// The peers this server delegates to.
    Peers(Arc<PeerDirectory>) = |state| state.operators.peers,
    "no peers are configured on this server ([peers.<name>])"
);

served!(
    /// Push notifications' deliveries and dead letters.
    Pushing(Arc<PushService>) = |state| state.push,
    "push notifications are disabled"
);

served!(
    /// The findings of the auditing skills.
    Issues(Arc<dyn IssueStore>) = |state| state.operators.issues,
    "no issue store is configured"
);

served!(
    /// The faults chaos runs injected.
    ChaosEvents(Arc<dyn ChaosLog>) = |state| state.operators.chaos,
    "no chaos-event log is kept on this server"
);

fn missing(what: &str) -> Response {
    admin_error(StatusCode::NOT_FOUND, what)
}
