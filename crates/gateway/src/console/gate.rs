//! Who is looking: the session a request's cookie opens, after the same Host check and
//! rate limit as the API's; and the checks of every state-changing form (its Origin is
//! this console's, its CSRF token is the session's).

use axum::http::{HeaderMap, Uri, header};
use fundi_runtime::ADMIN_SCOPE;

use super::page::Problem;
use super::sessions::{cookie_value, same_secret};
use super::viewer::Viewer;
use crate::error::ApiError;
use crate::state::AppState;

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

/// The signed-in person a request comes from.
pub(crate) async fn viewer(
    state: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Viewer, Problem> {
    state.guard.check_host(headers, uri)?;
    let not_signed_in = || Problem::not_signed_in(state.console_provider.is_some());
    let id = cookie_value(headers).ok_or_else(not_signed_in)?;
    let session = state.console.find(id).await?.ok_or_else(not_signed_in)?;
    state
        .rate_limit
        .check(&session.person.user)
        .map_err(ApiError::rate_limited)?;
    Ok(Viewer::new(id.to_owned(), session))
}

/// Checks a state-changing request: it comes from a page of this console (its `Origin`
/// names the host the request was sent to, which the Host check admitted, or the origin
/// of `gateway.public-url`, as behind a proxy that rewrites `Host`) and carries the
/// session's CSRF token.
pub(crate) fn check_change(
    state: &AppState,
    headers: &HeaderMap,
    viewer: &Viewer,
    csrf: &str,
) -> Result<(), Problem> {
    check_origin(state, headers)?;
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
