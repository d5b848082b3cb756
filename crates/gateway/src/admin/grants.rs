//! Grants for operators: `POST /admin/grants` vends one (its token is in that answer and
//! nowhere else), `GET /admin/grants[/{id}]`, `POST /admin/grants/{id}/narrow` and
//! `/revoke`. A grant admits its client at the next request after it is made, and
//! refuses it at the next request after it is revoked or narrowed.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::Utc;
use fundi_ops::grants::{GRANT_TOKEN_PREFIX, Grant, random_token, token_digest};
use serde::Deserialize;
use serde_json::json;

use super::audit::AuditTrail;
use super::grant_desk::{GrantDesk, Revoked, check_scopes, expiry};
use super::{admin_error, parse};
use crate::operator::{Admin, GrantsDesk, Operator};
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/grants", get(list).post(create))
        .route("/admin/grants/{id}", get(show))
        .route("/admin/grants/{id}/narrow", post(narrow))
        .route("/admin/grants/{id}/revoke", post(revoke))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NewGrant {
    client: String,
    scopes: Vec<String>,
    /// How long it admits requests ("30d", "12h"); for ever when absent.
    #[serde(default)]
    expires: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Narrowing {
    scopes: Vec<String>,
}

async fn create(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    GrantsDesk(desk): GrantsDesk,
    body: Bytes,
) -> Response {
    let expected = "{\"client\": ..., \"scopes\": [...], \"expires\"?: \"30d\"}";
    let new: NewGrant = match parse(&body, expected) {
        Ok(new) => new,
        Err(refused) => return refused,
    };
    if let Err(problem) = check_client(&new.client).and_then(|()| check_scopes(&new.scopes)) {
        return admin_error(StatusCode::BAD_REQUEST, &problem);
    }
    let now = Utc::now();
    let expires_at = match new
        .expires
        .as_deref()
        .map(|text| expiry(now, text))
        .transpose()
    {
        Ok(at) => at,
        Err(problem) => return admin_error(StatusCode::BAD_REQUEST, &problem),
    };
    let token = format!("{GRANT_TOKEN_PREFIX}{}", random_token());
    let grant = Grant {
        id: format!("gr-{}", uuid::Uuid::now_v7()),
        client: new.client,
        scopes: new.scopes,
        created_by: caller.user.to_string(),
        created_at: now,
        expires_at,
        revoked_at: None,
        acts_as: None,
        token_digest: token_digest(&token),
    };
    if let Err(error) = desk.store.put(&grant).await {
        tracing::error!(%error, "storing a grant");
        return admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed");
    }
    let detail =
        json!({"client": grant.client, "scopes": grant.scopes, "expiresAt": grant.expires_at});
    if let Err(failed) = audit
        .record(&caller, "grant.create", &grant.id, detail)
        .await
    {
        return failed;
    }
    let body = json!({"grant": grant.shown(), "token": token});
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

async fn list(_operator: Operator<Admin>, GrantsDesk(desk): GrantsDesk) -> Response {
    match desk.store.list().await {
        Ok(grants) => {
            let shown: Vec<Grant> = grants.iter().map(Grant::shown).collect();
            axum::Json(json!({"grants": shown})).into_response()
        }
        Err(error) => {
            tracing::error!(%error, "listing grants");
            admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed")
        }
    }
}

async fn show(
    _operator: Operator<Admin>,
    GrantsDesk(desk): GrantsDesk,
    Path(id): Path<String>,
) -> Response {
    match find(&desk, &id).await {
        Ok(grant) => axum::Json(grant.shown()).into_response(),
        Err(refused) => refused,
    }
}

async fn narrow(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    GrantsDesk(desk): GrantsDesk,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let narrowing: Narrowing = match parse(&body, "{\"scopes\": [...]}") {
        Ok(narrowing) => narrowing,
        Err(refused) => return refused,
    };
    if let Err(problem) = check_scopes(&narrowing.scopes) {
        return admin_error(StatusCode::BAD_REQUEST, &problem);
    }
    let _changing = desk.changing.lock().await;
    let mut grant = match find(&desk, &id).await {
        Ok(grant) => grant,
        Err(refused) => return refused,
    };
    let widened: Vec<&String> = narrowing
        .scopes
        .iter()
        .filter(|s| !grant.scopes.contains(s))
        .collect();
    if !widened.is_empty() {
        return admin_error(
            StatusCode::BAD_REQUEST,
            &format!(
                "a grant can only be narrowed: it does not hold {widened:?} (it holds {:?}); vend a new grant for more",
                grant.scopes
            ),
        );
    }
    let before = std::mem::replace(&mut grant.scopes, narrowing.scopes);
    if let Err(error) = desk.store.put(&grant).await {
        tracing::error!(%error, "narrowing a grant");
        return admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed");
    }
    let detail = json!({"from": before, "to": grant.scopes});
    if let Err(failed) = audit
        .record(&caller, "grant.narrow", &grant.id, detail)
        .await
    {
        return failed;
    }
    axum::Json(grant.shown()).into_response()
}

async fn revoke(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    GrantsDesk(desk): GrantsDesk,
    Path(id): Path<String>,
) -> Response {
    match desk.revoke(&id).await {
        Ok(Revoked::Now(grant)) => {
            let detail = json!({"client": grant.client});
            if let Err(failed) = audit
                .record(&caller, "grant.revoke", &grant.id, detail)
                .await
            {
                return failed;
            }
            axum::Json(grant.shown()).into_response()
        }
        Ok(Revoked::Already(grant)) => axum::Json(grant.shown()).into_response(),
        Ok(Revoked::NoSuchGrant) => {
            admin_error(StatusCode::NOT_FOUND, &format!("grant {id} not found"))
        }
        Err(error) => {
            tracing::error!(%error, "revoking a grant");
            admin_error(StatusCode::INTERNAL_SERVER_ERROR, "the store failed")
        }
    }
}

async fn find(desk: &GrantDesk, id: &str) -> Result<Grant, Response> {
    match desk.store.get(id).await {
        Ok(Some(grant)) => Ok(grant),
        Ok(None) => Err(admin_error(
            StatusCode::NOT_FOUND,
            &format!("grant {id} not found"),
        )),
        Err(error) => {
            tracing::error!(%error, "reading a grant");
            Err(admin_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the store failed",
            ))
        }
    }
}

fn check_client(client: &str) -> Result<(), String> {
    let fine = !client.is_empty()
        && client.len() <= 128
        && client
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
    match fine {
        true => Ok(()),
        false => Err(format!(
            "client must be 1 to 128 letters, digits or -_.@, got {client:?}"
        )),
    }
}
