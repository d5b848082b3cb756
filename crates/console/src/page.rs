//! The console's page shell and responses: one layout (skip link, navigation, a
//! `main` landmark), the security headers every console answer carries, and the
//! error page.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fundi_runtime::RuntimeError;
use maud::{DOCTYPE, Markup, html};

use crate::viewer::Viewer;
use fundi_gateway::ApiError;

/// The console's pages, for the navigation's current mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Tasks,
    Approvals,
    Access,
    Issues,
    DeadLetters,
    Schedules,
    Grants,
    None,
}

/// A whole page: `title` names it (the document title and the `h1`).
pub(crate) fn page(title: &str, viewer: Option<&Viewer>, section: Section, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · fundi" }
                link rel="stylesheet" href="/console/assets/console.css";
                script src="/console/assets/console.js" defer {}
            }
            body {
                a class="skip" href="#content" { "Skip to content" }
                header class="top" {
                    span class="brand" { "fundi" }
                    @if let Some(viewer) = viewer {
                        (navigation(viewer, section))
                    }
                }
                main id="content" tabindex="-1" {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

fn navigation(viewer: &Viewer, section: Section) -> Markup {
    let mut links = vec![("/console/tasks", "Tasks", Section::Tasks)];
    if viewer.may_approve_some() {
        links.push(("/console/approvals", "Approvals", Section::Approvals));
        links.push(("/console/access-requests", "Access", Section::Access));
    }
    if viewer.is_admin() {
        links.extend([
            ("/console/issues", "Issues", Section::Issues),
            (
                "/console/dead-letters",
                "Dead letters",
                Section::DeadLetters,
            ),
            ("/console/schedules", "Schedules", Section::Schedules),
            ("/console/grants", "Grants", Section::Grants),
        ]);
    }
    html! {
        nav aria-label="Console" {
            ul {
                @for (href, label, at) in links {
                    li {
                        @if at == section {
                            a href=(href) aria-current="page" { (label) }
                        } @else {
                            a href=(href) { (label) }
                        }
                    }
                }
            }
        }
        form class="who" method="post" action="/console/sign-out" {
            span { "Signed in as " strong { (viewer.person().user) } }
            input type="hidden" name="csrf" value=(viewer.csrf());
            button type="submit" { "Sign out" }
        }
    }
}

/// A page as a response (the console's headers are added to every answer by its
/// router).
pub(crate) fn respond(status: StatusCode, markup: Markup) -> Response {
    (status, markup).into_response()
}

/// Headers on every console answer: scripts, styles and images only from the console
/// itself, no framing (clickjacking), no referrer to other sites (an address may hold
/// a task id), nothing cached unless the answer says how (the assets). (`no-referrer`
/// would make browsers send `Origin: null` with the console's own forms, which the
/// origin check refuses.)
pub(crate) fn guard_headers(response: &mut Response) {
    let headers = response.headers_mut();
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// Why a console request was refused or failed, as a page.
#[derive(Debug)]
pub(crate) struct Problem {
    pub(crate) status: StatusCode,
    pub(crate) title: &'static str,
    pub(crate) detail: String,
    /// Where to go from here, and its words.
    pub(crate) next: Option<(&'static str, &'static str)>,
}

impl Problem {
    pub(crate) fn new(status: StatusCode, title: &'static str, detail: impl Into<String>) -> Self {
        Problem {
            status,
            title,
            detail: detail.into(),
            next: None,
        }
    }

    /// Not signed in; `provider`: an identity provider can sign people in.
    pub(crate) fn not_signed_in(provider: bool) -> Problem {
        let mut problem = Problem::new(
            StatusCode::UNAUTHORIZED,
            "Not signed in",
            "Sign in with a link from `fundi console` (or the one `fundi serve` printed at \
             its start); a link works once, for ten minutes.",
        );
        if provider {
            problem.next = Some((
                "/console/sign-in/provider",
                "Sign in with your identity provider",
            ));
        }
        problem
    }

    pub(crate) fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::FORBIDDEN, "Not allowed", detail)
    }

    pub(crate) fn bad_form(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "Not understood", detail)
    }
}

impl From<ApiError> for Problem {
    fn from(error: ApiError) -> Problem {
        let (status, _) = error.rest_status();
        let title = match status {
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::FORBIDDEN => "Not allowed",
            StatusCode::BAD_REQUEST | StatusCode::CONFLICT => "Not possible",
            StatusCode::SERVICE_UNAVAILABLE => "Try again later",
            _ => "Something went wrong",
        };
        Problem::new(status, title, error.message())
    }
}

impl From<RuntimeError> for Problem {
    fn from(error: RuntimeError) -> Problem {
        ApiError::from(error).into()
    }
}

impl From<fundi_runtime::StoreError> for Problem {
    fn from(error: fundi_runtime::StoreError) -> Problem {
        tracing::error!(%error, "the console's store failed");
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Something went wrong",
            "The console could not read or keep its sessions; see the server's log.",
        )
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = html! {
            p class="problem" role="alert" { (self.detail) }
            @if let Some((href, words)) = self.next { p { a href=(href) { (words) } } }
        };
        let mut response = respond(self.status, page(self.title, None, Section::None, body));
        if self.status == StatusCode::UNAUTHORIZED {
            // No challenge a browser would answer with a password prompt.
            response.headers_mut().remove(header::WWW_AUTHENTICATE);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fundi_runtime::{TaskId, TaskState};

    /// A runtime error answers a page with the status the gateway's one classification
    /// gives it (its own test lists each status).
    #[test]
    fn a_runtime_error_has_the_gateways_status_on_a_page() {
        let errors: [fn() -> RuntimeError; 4] = [
            || RuntimeError::TaskNotFound(TaskId::from("t")),
            || RuntimeError::NotAwaitingApproval {
                id: TaskId::from("t"),
                state: TaskState::Working,
            },
            || RuntimeError::InvalidInput("no text".into()),
            || RuntimeError::invariant("a task without its message"),
        ];
        for error in errors {
            let (status, _) = ApiError::from(error()).rest_status();
            assert_eq!(Problem::from(error()).status, status, "{}", error());
        }
    }
}
