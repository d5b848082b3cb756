//! Signing in and out. `POST /console/sign-in-links`, called with the API's two
//! credentials (`fundi console` does, and `fundi serve` at its start for the local
//! user), answers a one-time link that opens a session for that caller's user with that
//! caller's scopes; `GET /console/sign-in?token=...` shows whose account it opens and
//! asks to continue, `POST /console/sign-in` opens the session, `POST
//! /console/sign-out` ends it.

use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::gate::{Change, CsrfOnly, check_origin};
use crate::page::{Problem, Section, page, respond};
use crate::sessions::{LINK_LIFETIME, Person, SIGN_IN_COOKIE, named_cookie, same_secret};
use fundi_gateway::ApiError;
use fundi_gateway::AppState;
use fundi_gateway::Dialect;
use fundi_gateway::admit;
use fundi_gateway::refusal;
use fundi_ops::grants::random_token;
use std::sync::Arc;

use crate::sessions::Sessions;

/// Makes a sign-in link for the authenticated caller.
pub(super) async fn make_link(
    State(state): State<AppState>,
    State(sessions): State<Arc<Sessions>>,
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
        user: caller.user.to_string(),
        client: caller.client.clone(),
        grants: caller.grants.clone(),
    };
    let token = match sessions.link(&person).await {
        Ok(token) => token,
        Err(error) => {
            tracing::error!(%error, "keeping a console sign-in link");
            let error = ApiError::internal("the sign-in link could not be kept");
            return fundi_gateway::rest_failure(&error);
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

/// Opens a sign-in link: a page that names the account the link signs in to and asks
/// to continue. Opening a link never signs anyone in by itself, so that a link someone
/// else made cannot sign a person into that someone's account unawares (login CSRF).
/// The link is spent here; the page's form carries a new one-time token, and a CSRF
/// token this browser also holds as a cookie.
pub(super) async fn sign_in(
    State(state): State<AppState>,
    State(sessions): State<Arc<Sessions>>,
    headers: HeaderMap,
    uri: Uri,
    Query(query): Query<SignIn>,
) -> Response {
    if let Err(error) = state.check_host(&headers, &uri) {
        return Problem::from(error).into_response();
    }
    let confirmable = match sessions.confirmable(query.token.trim()).await {
        Ok(confirmable) => confirmable,
        Err(error) => return Problem::from(error).into_response(),
    };
    let Some((person, token)) = confirmable else {
        return link_not_valid().into_response();
    };
    let csrf = random_token();
    let body = html! {
        p { "This link signs you in to fundi's console as " strong { (person.user) } "." }
        p { "If you did not ask for it yourself, close this page: someone else's link would sign you in to their account." }
        form method="post" action="/console/sign-in" {
            input type="hidden" name="token" value=(token);
            input type="hidden" name="csrf" value=(csrf);
            button type="submit" { "Continue as " (person.user) }
        }
    };
    let mut response = respond(StatusCode::OK, page("Sign in", None, Section::None, body));
    if let Ok(cookie) = HeaderValue::from_str(&sessions.sign_in_cookie(&csrf)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

#[derive(Deserialize)]
pub(super) struct Confirmation {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
}

/// Signs in once the person who opened a link continues: from this console's own page
/// (its Origin), in the browser that was shown it (the CSRF cookie), with a confirmation
/// token not yet used.
pub(super) async fn confirm(
    State(state): State<AppState>,
    State(sessions): State<Arc<Sessions>>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<Confirmation>,
) -> Result<Response, Problem> {
    state.check_host(&headers, &uri)?;
    check_origin(&state, &headers)?;
    let held = named_cookie(&headers, SIGN_IN_COOKIE).unwrap_or_default();
    if form.csrf.is_empty() || !same_secret(&form.csrf, held) {
        return Err(Problem::forbidden(
            "this sign-in was not continued from the page that showed it: open the link again",
        ));
    }
    let Some((id, _)) = sessions.redeem(form.token.trim()).await? else {
        return Err(link_not_valid());
    };
    let mut response = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/console/tasks")],
    )
        .into_response();
    let cookies = [sessions.cookie(&id), sessions.sign_in_cookie("")];
    for cookie in cookies {
        if let Ok(cookie) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, cookie);
        }
    }
    Ok(response)
}

fn link_not_valid() -> Problem {
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "Sign-in link not valid",
        "This sign-in link is unknown, already used, or older than ten minutes: run \
         `fundi console` for a new one.",
    )
}

/// Ends the session.
pub(super) async fn sign_out(
    State(sessions): State<Arc<Sessions>>,
    Change(viewer, _form): Change<CsrfOnly>,
) -> Result<Response, Problem> {
    sessions.close(viewer.id()).await?;
    let body = html! {
        p { "You are signed out. Run " code { "fundi console" } " for a new sign-in link." }
    };
    let mut response = respond(
        StatusCode::OK,
        page("Signed out", None, Section::None, body),
    );
    if let Ok(cookie) = HeaderValue::from_str(&sessions.removed_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    Ok(response)
}
