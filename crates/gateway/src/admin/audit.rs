//! The audit log for operators (`GET /admin/audit?after=&limit=`), and the trail every
//! admin action records itself in ([`AuditTrail`], a sub-state a handler names).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRef, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use fundi_ops::audit::{AuditEntry, AuditLog};
use serde_json::{Value, json};

use super::{admin_error, page};
use crate::auth::Caller;
use crate::operator::{Admin, Operator};
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/admin/audit", get(read))
}

/// Where admin actions are recorded: the audit log, when one is kept, and the request's
/// span. A handler that records takes it as `State<AuditTrail>`.
#[derive(Clone)]
pub struct AuditTrail(Option<Arc<dyn AuditLog>>);

impl FromRef<AppState> for AuditTrail {
    fn from_ref(state: &AppState) -> AuditTrail {
        AuditTrail(state.operators.audit.clone())
    }
}

impl AuditTrail {
    /// Records what `caller` did, after it was done: in the audit log (when one is
    /// kept) and as an event of the request's span (`fundi::audit`), which
    /// OpenTelemetry exports with the trace. `Err` is the answer to give when the
    /// record could not be written.
    pub async fn record(
        &self,
        caller: &Caller,
        action: &str,
        target: &str,
        detail: Value,
    ) -> Result<(), Response> {
        tracing::info!(
            target: "fundi::audit",
            action,
            audit.target = target,
            user = %caller.user,
            client = %caller.client,
            detail = %detail,
            "audit"
        );
        let Some(log) = &self.0 else {
            return Ok(());
        };
        let entry = AuditEntry {
            user: caller.user.to_string(),
            client: caller.client.clone(),
            action: action.to_owned(),
            target: target.to_owned(),
            detail,
        };
        log.append(entry).await.map(drop).map_err(|error| {
            tracing::error!(%error, action, target, "writing the audit log");
            admin_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("{action} of {target} was done, but the audit log could not be written"),
            )
        })
    }
}

async fn read(
    State(AuditTrail(log)): State<AuditTrail>,
    _operator: Operator<Admin>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(log) = log else {
        return admin_error(StatusCode::NOT_FOUND, "no audit log is kept on this server");
    };
    let (after, limit) = match page(&query) {
        Ok(page) => page,
        Err(refused) => return refused,
    };
    match log.read(after, limit).await {
        Ok(records) => {
            let next = records.last().map_or(after, |r| r.seq);
            axum::Json(json!({"records": records, "next": next})).into_response()
        }
        Err(error) => {
            tracing::error!(%error, "reading the audit log");
            admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed")
        }
    }
}
