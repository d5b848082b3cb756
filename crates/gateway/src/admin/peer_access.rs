//! This server asking a peer for access (docs/trust.md), for admins:
//! `POST /admin/peers/{name}/access-requests` (`{"scopes", "reason", "assertion"}`: the
//! assertion proves the person asking, for the peer's audience) sends the request to
//! where the peer's card offers them, as the agent of this server's card; the answer
//! carries the continuation secret, once. `POST /admin/peers/{name}/access-requests/{id}/collect`
//! (`{"continuation"}`) collects the token once a person at the peer approved, and keeps
//! it as the peer's token. Both are in the audit log (never the secret nor the token).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use fundi_peers::PeerError;
use serde::Deserialize;
use serde_json::json;

use super::audit::AuditTrail;
use super::{admin_error, parse};
use crate::operator::{Admin, Operator, Peers};
use crate::state::{AppState, PublicUrl};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/peers/{name}/access-requests", post(ask))
        .route(
            "/admin/peers/{name}/access-requests/{id}/collect",
            post(collect),
        )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Asking {
    scopes: Vec<String>,
    reason: String,
    assertion: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Collecting {
    continuation: String,
}

async fn ask(
    State(audit): State<AuditTrail>,
    State(PublicUrl(public_url)): State<PublicUrl>,
    Operator(caller, _): Operator<Admin>,
    Peers(peers): Peers,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let expected = "{\"scopes\": [...], \"reason\": \"...\", \"assertion\": \"<JWT>\"}";
    let asking: Asking = match parse(&body, expected) {
        Ok(asking) => asking,
        Err(refused) => return refused,
    };
    let own_card = format!(
        "{}/.well-known/agent-card.json",
        public_url.trim_end_matches('/')
    );
    let asked = peers
        .ask_access(
            &name,
            &own_card,
            &asking.scopes,
            &asking.reason,
            &asking.assertion,
        )
        .await;
    match asked {
        Ok(asked) => {
            let detail = json!({"request": asked.id, "scopes": asking.scopes});
            let action = "peer.access-request";
            if let Err(failed) = audit.record(&caller, action, &name, detail).await {
                return failed;
            }
            let body = json!({"peer": name, "request": asked});
            (StatusCode::ACCEPTED, axum::Json(body)).into_response()
        }
        Err(failed) => refusal(&failed),
    }
}

async fn collect(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    Peers(peers): Peers,
    Path((name, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let collecting: Collecting = match parse(&body, "{\"continuation\": \"fundi_continue_...\"}") {
        Ok(collecting) => collecting,
        Err(refused) => return refused,
    };
    match peers
        .collect_access(&name, &id, &collecting.continuation)
        .await
    {
        Ok(None) => {
            let body = json!({"peer": name, "request": id, "status": "pending"});
            (StatusCode::ACCEPTED, axum::Json(body)).into_response()
        }
        Ok(Some(scopes)) => {
            let detail = json!({"request": id, "scopes": scopes});
            let action = "peer.access-collect";
            if let Err(failed) = audit.record(&caller, action, &name, detail).await {
                return failed;
            }
            let body =
                json!({"peer": name, "request": id, "status": "collected", "scopes": scopes});
            axum::Json(body).into_response()
        }
        Err(failed) => refusal(&failed),
    }
}

/// 404 for a peer not known, 400 for a request this server will not send, 409 for the
/// peer's own refusal, 502 for a peer that failed or is out of reach.
fn refusal(failed: &PeerError) -> Response {
    let status = match failed {
        PeerError::Unknown { .. } => StatusCode::NOT_FOUND,
        PeerError::Invalid(_) | PeerError::Card { .. } => StatusCode::BAD_REQUEST,
        PeerError::Refused { .. } => StatusCode::CONFLICT,
        _ => StatusCode::BAD_GATEWAY,
    };
    admin_error(status, &failed.to_string())
}
