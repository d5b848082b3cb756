//! The routes of a sign-in through the identity provider (`provider`):
//! `GET /console/sign-in/provider` starts it, `GET /console/sign-in/callback` finishes it.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use crate::ConsoleState;
use crate::page::{Problem, Section, page, respond};
use crate::provider::ProviderError;

fn not_configured() -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        "Not configured",
        "No identity provider signs people in here (gateway.console-oidc): use a link from `fundi console`.",
    )
}

fn failed(error: &ProviderError) -> Problem {
    tracing::warn!(%error, "a console sign-in through the identity provider failed");
    Problem::new(StatusCode::BAD_GATEWAY, "Sign-in failed", error.to_string())
}

/// Sends the browser to the provider.
pub(super) async fn start(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, Problem> {
    state.app.check_host(&headers, &uri)?;
    let provider = state.provider.as_ref().ok_or_else(not_configured)?;
    let url = provider
        .start(&state.sessions)
        .await
        .map_err(|e| failed(&e))?;
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, url)]).into_response())
}

#[derive(Deserialize)]
pub(super) struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// Finishes a sign-in. The answer is a page that goes on to the tasks itself: the
/// session cookie is `SameSite=Strict`, and a browser does not send it on a redirect
/// that began at the provider's site.
pub(super) async fn callback(
    State(state): State<ConsoleState>,
    headers: HeaderMap,
    uri: Uri,
    Query(query): Query<Callback>,
) -> Result<Response, Problem> {
    state.app.check_host(&headers, &uri)?;
    let provider = state.provider.as_ref().ok_or_else(not_configured)?;
    if let Some(error) = query.error {
        let detail = query
            .error_description
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(Problem::new(
            StatusCode::UNAUTHORIZED,
            "Sign-in refused",
            format!("the identity provider said {error}{detail}"),
        ));
    }
    let code = query
        .code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Problem::bad_form("the identity provider sent no code"))?;
    let person = provider
        .finish(&state.sessions, code, &query.state)
        .await
        .map_err(|e| failed(&e))?
        .ok_or_else(|| Problem::new(StatusCode::UNAUTHORIZED, "Sign-in not valid",
            "This sign-in was not started here, was already finished, or took longer than ten minutes: start again."))?;
    let (id, _) = state.sessions.open(person).await?;
    let body = html! {
        meta http-equiv="refresh" content="0; url=/console/tasks";
        p { "You are signed in. " a href="/console/tasks" { "Go to your tasks" } "." }
    };
    let mut response = respond(StatusCode::OK, page("Signed in", None, Section::None, body));
    if let Ok(cookie) = HeaderValue::from_str(&state.sessions.cookie(&id)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    Ok(response)
}
