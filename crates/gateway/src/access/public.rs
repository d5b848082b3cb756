//! The requester's routes, public like the card: `POST /access-requests` asks for
//! access, `POST /access-requests/{id}/collect` (the continuation secret as its bearer
//! token) says where the request stands and, once it is approved, hands out its token
//! once. A refused request is counted (`fundi.access_requests.refused`) and recorded
//! nowhere else.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use fundi_runtime::Grants;
use serde_json::json;

use super::desk::NewRequest;
use super::error::AccessError;
use super::{AccessDeskOf, counted};
use crate::admin::audit::AuditTrail;
use crate::auth::{Caller, bearer_token};
use crate::state::{AppState, PublicUrl};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/access-requests", post(submit))
        .route("/access-requests/{id}/collect", post(collect))
}

async fn submit(
    State(audit): State<AuditTrail>,
    State(PublicUrl(public_url)): State<PublicUrl>,
    AccessDeskOf(desk): AccessDeskOf,
    body: Bytes,
) -> Response {
    let new: NewRequest = match serde_json::from_slice(&body) {
        Ok(new) => new,
        Err(e) => {
            let expected = "{\"card\": \"<your agent card's URL>\", \"scopes\": [...], \
                            \"reason\": \"...\", \"assertion\": \"<JWT>\", \"callback\"?: \"<URL>\"}";
            return counted(AccessError::Malformed(format!("expected {expected}: {e}")));
        }
    };
    let accepted = match desk.submit(new).await {
        Ok(accepted) => accepted,
        Err(refused) => return counted(refused),
    };
    let request = &accepted.request;
    let detail = json!({
        "issuer": request.requester.issuer,
        "subject": request.requester.subject,
        "card": request.card.url,
        "cardName": request.card.name,
        "signatureVerified": request.card.signature_verified,
        "scopes": request.scopes,
    });
    let who = requester(request);
    if let Err(failed) = audit
        .record(&who, "access.request", &request.id, detail)
        .await
    {
        return failed;
    }
    let base = public_url.trim_end_matches('/');
    let body = json!({
        "id": request.id,
        "status": "pending",
        "continuation": accepted.secret,
        "collect": format!("{base}/access-requests/{}/collect", request.id),
        "expiresAt": request.expires_at,
    });
    (StatusCode::ACCEPTED, axum::Json(body)).into_response()
}

async fn collect(
    State(audit): State<AuditTrail>,
    AccessDeskOf(desk): AccessDeskOf,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(secret) = bearer_token(&headers) else {
        return counted(AccessError::Malformed(
            "send the continuation secret as the bearer token (Authorization: Bearer \
             fundi_continue_...)"
                .into(),
        ));
    };
    let request = match desk.find_with_secret(&id, secret).await {
        Ok(request) => request,
        Err(refused) => return counted(refused),
    };
    let who = requester(&request);
    match desk.collect(request.clone()).await {
        Ok(None) => {
            let body = json!({"id": id, "status": "pending", "expiresAt": request.expires_at});
            (StatusCode::ACCEPTED, axum::Json(body)).into_response()
        }
        Ok(Some(collected)) => {
            let grant = &collected.grant;
            let detail = json!({"grant": grant.id, "scopes": grant.scopes});
            if let Err(failed) = audit.record(&who, "access.collect", &id, detail).await {
                return failed;
            }
            let body = json!({
                "id": id,
                "status": "collected",
                "token": collected.token,
                "grant": grant.id,
                "scopes": grant.scopes,
                "user": grant.acts_as,
                "expiresAt": grant.expires_at,
            });
            axum::Json(body).into_response()
        }
        Err(refused) => counted(refused),
    }
}

/// The requester as the audit log names it: its verified identity, the request as its
/// client.
fn requester(request: &fundi_ops::access::AccessRequest) -> Caller {
    Caller {
        user: request.requester.user().into(),
        client: request.id.clone(),
        grants: Grants::scopes(Vec::<String>::new()),
        grant: None,
    }
}
