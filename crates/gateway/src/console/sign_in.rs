//! Signing in and out. `POST /console/sign-in-links`, called with the API's two
//! credentials (`fundi console` does, and `fundi serve` at its start for the local
//! user), answers a one-time link that opens a session for that caller's user with that
//! caller's scopes; `GET /console/sign-in?token=...` opens it, `POST /console/sign-out`
//! ends it.

use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use serde_json::{Value, json};

use super::gate::{CsrfOnly, check_change, viewer};
use super::page::{Problem, Section, guard_headers, page, respond};
use super::sessions::{LINK_LIFETIME, Person};
use crate::admission::admit;
use crate::dialect::Dialect;
use crate::error::ApiError;
use crate::reply::refusal;
use crate::state::AppState;

/// Makes a sign-in link for the authenticated caller.
pub(super) async fn make_link(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let caller = match admit(&state, &headers, &uri).await {
        Ok(caller) => caller,
        Err(error) => return refusal(&Value::Null, &error, Dialect::V1),
    };
    if let Some(grant) = &caller.grant {
        // Grants admit agents, which a person may revoke; a person signs in as themself.
        let error = ApiError::forbidden_request(format!(
            "grant {grant} admits an agent, not a person: sign in with a user's own client token"
        ));
        return refusal(&Value::Null, &error, Dialect::V1);
    }
    let person = Person {
        user: caller.user.clone(),
        client: caller.client.clone(),
        grants: caller.grants.clone(),
    };
    let token = match state.console.link(&person).await {
        Ok(token) => token,
        Err(error) => {
            tracing::error!(%error, "keeping a console sign-in link");
            let error = ApiError::internal("the sign-in link could not be kept");
            return crate::reply::rest_failure(&error);
        }
    };
    let url = format!(
        "{}/console/sign-in?token={token}",
        state.public_url().trim_end_matches('/')
    );
    let expires = chrono::Utc::now()
        + chrono::Duration::from_std(LINK_LIFETIME).unwrap_or_else(|_| chrono::Duration::zero());
    let body = json!({"url": url, "user": caller.user, "expiresAt": expires});
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

#[derive(Deserialize)]
pub(super) struct SignIn {
    #[serde(default)]
    token: String,
}

/// Opens the session a link stands for, and goes to the tasks.
pub(super) async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    Query(query): Query<SignIn>,
) -> Response {
    if let Err(error) = state.guard.check_host(&headers, &uri) {
        return Problem::from(error).into_response();
    }
    let redeemed = match state.console.redeem(query.token.trim()).await {
        Ok(redeemed) => redeemed,
        Err(error) => return Problem::from(error).into_response(),
    };
    let Some((id, _)) = redeemed else {
        return Problem::new(
            StatusCode::UNAUTHORIZED,
            "Sign-in link not valid",
            "This sign-in link is unknown, already used, or older than ten minutes: run \
             `fundi console` for a new one.",
        )
        .into_response();
    };
    let mut response = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/console/tasks")],
    )
        .into_response();
    guard_headers(&mut response);
    if let Ok(cookie) = HeaderValue::from_str(&state.console.cookie(&id)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// Ends the session.
pub(super) async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, Problem> {
    let viewer = viewer(&state, &headers, &uri).await?;
    check_change(&state, &headers, &viewer, &form.csrf)?;
    state.console.close(viewer.id()).await?;
    let body = html! {
        p { "You are signed out. Run " code { "fundi console" } " for a new sign-in link." }
    };
    let mut response = respond(
        StatusCode::OK,
        page("Signed out", None, Section::None, body),
    );
    if let Ok(cookie) = HeaderValue::from_str(&state.console.removed_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    Ok(response)
}
