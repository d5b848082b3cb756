//! Who is looking: the session a request's cookie opens, after the same Host check and
//! rate limit as the API's; and the checks of every state-changing form (its Origin is
//! this console's, its CSRF token is the session's).

use axum::Form;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri, header};
use axum::response::{IntoResponse, Response};
use fundi_runtime::ADMIN_SCOPE;
use serde::de::DeserializeOwned;

use crate::page::Problem;
use crate::sessions::{cookie_value, same_secret};
use crate::viewer::Viewer;
use fundi_gateway::AppState;

use crate::ConsoleState;

/// Refused unless the viewer is an operator (`fundi:admin`).
pub(crate) fn require_admin(viewer: &Viewer) -> Result<(), Problem> {
    match viewer.is_admin() {
        true => Ok(()),
        false => Err(Problem::forbidden(format!(
            "this page is for operators: it needs the scope {ADMIN_SCOPE}"
        ))),
    }
}

/// A form that carries nothing but its CSRF token (a button).
#[derive(Debug, serde::Deserialize)]
pub(crate) struct CsrfOnly {
    #[serde(default)]
    pub(crate) csrf: String,
}

impl Csrf for CsrfOnly {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// A state-changing form: it carries the session's CSRF token.
pub(crate) trait Csrf {
    /// The token the form was rendered with.
    fn csrf(&self) -> &str;
}

/// Who may send a state-changing form: someone signed in (`Viewer`) or an operator
/// (`ConsoleAdmin`).
pub(crate) trait Signed: FromRequestParts<ConsoleState, Rejection = Problem> {
    /// The person.
    fn viewer(&self) -> &Viewer;
}

impl FromRequestParts<ConsoleState> for Viewer {
    type Rejection = Problem;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ConsoleState,
    ) -> Result<Viewer, Problem> {
        viewer(state, &parts.headers, &parts.uri).await
    }
}

impl Signed for Viewer {
    fn viewer(&self) -> &Viewer {
        self
    }
}

/// A signed-in operator (`fundi:admin`): the operators' pages.
pub(crate) struct ConsoleAdmin(pub(crate) Viewer);

impl FromRequestParts<ConsoleState> for ConsoleAdmin {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &ConsoleState) -> Result<Self, Problem> {
        let viewer = Viewer::from_request_parts(parts, state).await?;
        require_admin(&viewer)?;
        Ok(ConsoleAdmin(viewer))
    }
}

impl Signed for ConsoleAdmin {
    fn viewer(&self) -> &Viewer {
        &self.0
    }
}

/// A state-changing form `F` from `W`: who sends it is checked first (signed in, and
/// an operator where `W` says so), then that it comes from this console's pages
/// (`check_origin`), then the form is read and its CSRF token compared with the
/// session's. A form that cannot be read is refused as axum refuses it.
pub(crate) struct Change<F, W = Viewer>(pub(crate) W, pub(crate) F);

impl<F, W> FromRequest<ConsoleState> for Change<F, W>
where
    F: DeserializeOwned + Csrf + Send,
    W: Signed + Send,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &ConsoleState) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let who = W::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        check_origin(&state.app, &parts.headers).map_err(IntoResponse::into_response)?;
        let request = Request::from_parts(parts, body);
        let Form(form) = Form::<F>::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        check_csrf(who.viewer(), form.csrf()).map_err(IntoResponse::into_response)?;
        Ok(Change(who, form))
    }
}

/// The signed-in person a request comes from.
pub(crate) async fn viewer(
    state: &ConsoleState,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Viewer, Problem> {
    state.app.check_host(headers, uri)?;
    let not_signed_in = || Problem::not_signed_in(state.provider.is_some());
    let id = cookie_value(headers).ok_or_else(not_signed_in)?;
    let session = state.sessions.find(id).await?.ok_or_else(not_signed_in)?;
    state.app.check_rate(&session.person.user)?;
    Ok(Viewer::new(id.to_owned(), session))
}

/// Refuses a form whose CSRF token is not the session's.
fn check_csrf(viewer: &Viewer, csrf: &str) -> Result<(), Problem> {
    if !same_secret(csrf, viewer.csrf()) {
        return Err(Problem::forbidden(
            "the form's CSRF token is missing or out of date: reload the page and try again",
        ));
    }
    Ok(())
}

/// Refuses a form that does not come from this console's own pages (its `Origin`).
pub(crate) fn check_origin(state: &AppState, headers: &HeaderMap) -> Result<(), Problem> {
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            Problem::forbidden(
                "the request has no Origin header: changes come from the console's own pages",
            )
        })?;
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !from_here(origin, host, state.public_url()) {
        return Err(Problem::forbidden(format!(
            "the request comes from {origin}, not from this console ({host}): refused"
        )));
    }
    Ok(())
}

/// Whether `origin` is this console's: the host the request was sent to, or the
/// origin (`scheme://host[:port]`) of `public_url`.
fn from_here(origin: &str, host: &str, public_url: &str) -> bool {
    let origin = origin.trim_end_matches('/');
    let sent_to = origin
        .split_once("://")
        .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host));
    let public = public_url
        .split_once("://")
        .map(|(scheme, rest)| format!("{scheme}://{}", rest.split('/').next().unwrap_or("")));
    sent_to || public.is_some_and(|public| public.eq_ignore_ascii_case(origin))
}

#[cfg(test)]
mod tests {
    use super::from_here;

    #[test]
    fn an_origin_is_here_when_it_names_the_host_or_the_public_url() {
        assert!(from_here(
            "http://127.0.0.1:8080",
            "127.0.0.1:8080",
            "http://127.0.0.1:8080"
        ));
        // Behind a proxy that sends its own Host.
        assert!(from_here(
            "https://fundi.example",
            "10.0.0.5:8080",
            "https://fundi.example/"
        ));
        assert!(from_here(
            "https://FUNDI.example",
            "10.0.0.5:8080",
            "https://fundi.example/a2a"
        ));
        assert!(!from_here(
            "https://evil.example",
            "10.0.0.5:8080",
            "https://fundi.example"
        ));
        assert!(!from_here(
            "null",
            "127.0.0.1:8080",
            "http://127.0.0.1:8080"
        ));
        assert!(!from_here(
            "http://127.0.0.1:9",
            "127.0.0.1:8080",
            "http://127.0.0.1:8080"
        ));
    }
}
