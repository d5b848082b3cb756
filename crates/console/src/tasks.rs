//! The tasks page: the viewer's tasks, newest first, filtered by state, skill and
//! context, with a count per state (in the context, of every skill) that stays current
//! (`GET /console/tasks/counts`, an event stream).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use fundi_runtime::{Access, ListRequest, TaskOwner, TaskPage, TaskService, TaskState};
use maud::{Markup, html};
use serde::Deserialize;

use crate::page::{Problem, Section, page, respond};
use crate::viewer::Viewer;
use crate::words::{badge, clip, parse_state, state_key, state_words, when};
use fundi_gateway::AppState;
use std::sync::Arc;

use crate::sessions::Sessions;
use fundi_peers::DELEGATE_SKILL;

/// Tasks per page.
const PAGE_SIZE: usize = 50;
/// How often the live counts are read again.
const COUNTS_EVERY: Duration = Duration::from_secs(2);

#[derive(Debug, Default, Deserialize)]
pub(super) struct Filter {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    skill: Option<String>,
    #[serde(default)]
    page: Option<String>,
}

/// A form field as given: trimmed, and `None` when left empty.
fn given(field: &Option<String>) -> Option<&str> {
    field.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl Filter {
    fn state(&self) -> Result<Option<TaskState>, Problem> {
        match given(&self.state) {
            None => Ok(None),
            Some(key) => parse_state(key)
                .map(Some)
                .ok_or_else(|| Problem::bad_form(format!("there is no task state {key:?}"))),
        }
    }

    /// The skill asked for, if it is one of the runtime's.
    fn skill(&self, skills: &[String]) -> Result<Option<String>, Problem> {
        match given(&self.skill) {
            None => Ok(None),
            Some(skill) if skills.iter().any(|s| s == skill) => Ok(Some(skill.to_owned())),
            Some(skill) => Err(Problem::bad_form(format!(
                "there is no skill {skill:?}: {}",
                skills.join(", ")
            ))),
        }
    }

    fn context(&self) -> Option<String> {
        given(&self.context).map(str::to_owned)
    }
}

pub(super) async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(filter): Query<Filter>,
) -> Result<Response, Problem> {
    let wanted = filter.state()?;
    let skills: Vec<String> = state
        .runtime()
        .skills()
        .iter()
        .map(|c| c.id.to_string())
        .collect();
    let skill = filter.skill(&skills)?;
    let context = filter.context();
    let page_of_tasks = state
        .runtime()
        .list(
            ListRequest::new(TaskOwner::user(viewer.user()))
                .context(context.clone().map(Into::into))
                .state(wanted)
                .skill(skill.clone().map(Into::into))
                .page_size(PAGE_SIZE)
                .page_token(filter.page.clone().filter(|p| !p.is_empty()))
                .history_length(Some(0))
                .max_bytes(Some(state.config().max_list_bytes)),
        )
        .await?;
    let peers = delegated_to(&state, &viewer, &page_of_tasks).await;
    let counts = counts(&**state.runtime(), viewer.user(), context.as_deref()).await?;
    let counts_url = match &context {
        Some(c) => format!("/console/tasks/counts?context={}", encode(c)),
        None => "/console/tasks/counts".to_owned(),
    };
    let next = page_of_tasks.next_page_token.as_ref().map(|token| {
        let mut query = vec![format!("page={}", encode(token))];
        if let Some(s) = wanted {
            query.push(format!("state={}", state_key(s)));
        }
        if let Some(c) = &context {
            query.push(format!("context={}", encode(c)));
        }
        if let Some(k) = &skill {
            query.push(format!("skill={}", encode(k)));
        }
        format!("/console/tasks?{}", query.join("&"))
    });
    let body = html! {
        section aria-labelledby="counts-title" data-counts=(counts_url) {
            h2 id="counts-title" { "By state" }
            (count_list(&counts, context.as_deref()))
        }
        section aria-labelledby="list-title" {
            h2 id="list-title" { "List" }
            (filter_form(wanted, skill.as_deref(), &skills, context.as_deref()))
            p { (page_of_tasks.total_size) " tasks match." }
            @if page_of_tasks.tasks.is_empty() {
                p { "No task matches." }
            } @else {
                table {
                    caption class="visually-hidden" { "Your tasks, most recently updated first" }
                    thead { tr { th scope="col" { "Task" } th scope="col" { "Skill" } th scope="col" { "State" }
                                 th scope="col" { "Updated" } th scope="col" { "Latest word" }
                                 th scope="col" { "Context" } } }
                    tbody {
                        @for ((task, skill), peer) in page_of_tasks.tasks.iter().zip(&page_of_tasks.skills).zip(&peers) {
                            tr {
                                td { a href={ "/console/tasks/" (encode(task.id.as_str())) } { code { (task.id.as_str()) } } }
                                td { (skill) @if let Some(peer) = peer { " to peer " strong { (peer) } } }
                                td { (badge(task.status.state)) }
                                td { (when(task.status.timestamp)) }
                                td { (clip(&task.status.message.as_ref().map(|m| m.text()).unwrap_or_default(), 120)) }
                                td { a href={ "/console/tasks?context=" (encode(task.context_id.as_str())) } { code { (clip(task.context_id.as_str(), 13)) } } }
                            }
                        }
                    }
                }
            }
            @if let Some(next) = next {
                p { a href=(next) { "Older tasks" } }
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        page("Tasks", Some(&viewer), Section::Tasks, body),
    ))
}

/// The peer each delegated task of the page was handed to (its first message names it),
/// in the page's order; `None` for the rest. Only delegated tasks are read again.
async fn delegated_to(state: &AppState, viewer: &Viewer, page: &TaskPage) -> Vec<Option<String>> {
    let mut peers = Vec::with_capacity(page.tasks.len());
    for (task, skill) in page.tasks.iter().zip(&page.skills) {
        let peer = match skill.as_str() {
            DELEGATE_SKILL => state
                .runtime()
                .snapshot(&task.id, None, Access::Owner(viewer.user()))
                .await
                .ok()
                .and_then(|s| {
                    let first = s.task.history.into_iter().next()?;
                    first.data()?.get("peer")?.as_str().map(str::to_owned)
                }),
            _ => None,
        };
        peers.push(peer);
    }
    peers
}

fn filter_form(
    wanted: Option<TaskState>,
    skill: Option<&str>,
    skills: &[String],
    context: Option<&str>,
) -> Markup {
    html! {
        form class="filters" method="get" action="/console/tasks" {
            label for="state" { "State" }
            select id="state" name="state" {
                option value="" selected[wanted.is_none()] { "any" }
                @for s in TaskState::ALL {
                    option value=(state_key(s)) selected[wanted == Some(s)] { (state_words(s)) }
                }
            }
            label for="skill" { "Skill" }
            select id="skill" name="skill" {
                option value="" selected[skill.is_none()] { "any" }
                @for s in skills {
                    option value=(s) selected[skill == Some(s.as_str())] { (s) }
                }
            }
            label for="context" { "Context" }
            input id="context" name="context" type="text" value=(context.unwrap_or_default());
            button type="submit" { "Filter" }
        }
    }
}

fn count_list(counts: &BTreeMap<String, usize>, context: Option<&str>) -> Markup {
    let context = context
        .map(|c| format!("&context={}", encode(c)))
        .unwrap_or_default();
    html! {
        ul class="counts" {
            @for s in TaskState::ALL {
                @let key = state_key(s);
                li {
                    a href={ "/console/tasks?state=" (key) (context) } {
                        span class="count" data-count=(key) { (counts.get(&key).copied().unwrap_or(0)) }
                        " " (state_words(s))
                    }
                }
            }
        }
    }
}

/// How many of the user's tasks are in each state.
async fn counts(
    runtime: &dyn TaskService,
    user: &str,
    context: Option<&str>,
) -> Result<BTreeMap<String, usize>, Problem> {
    let mut counts = BTreeMap::new();
    for s in TaskState::ALL {
        let page = runtime
            .list(
                ListRequest::new(TaskOwner::user(user))
                    .context(context.map(Into::into))
                    .state(Some(s))
                    .page_size(1)
                    .history_length(Some(0)),
            )
            .await?;
        counts.insert(state_key(s), page.total_size);
    }
    Ok(counts)
}

/// The counts as an event stream: an event `counts` (JSON, state to count) at once and
/// whenever they change.
pub(super) async fn live_counts(
    State(state): State<AppState>,
    State(sessions): State<Arc<Sessions>>,
    viewer: Viewer,
    Query(filter): Query<Filter>,
) -> Result<Response, Problem> {
    let context = filter.context();
    let user = viewer.user().to_owned();
    let slot = state.stream_of_user(&user)?;
    let stop = state.shutdown().clone();
    let stream = async_stream::stream! {
        // Held while the stream lives.
        let _slot = slot;
        let mut last = None;
        // Signing out ends the stream too.
        while matches!(sessions.find(viewer.id()).await, Ok(Some(_))) {
            match counts(&**state.runtime(), &user, context.as_deref()).await {
                Ok(now) if last.as_ref() != Some(&now) => {
                    let json = serde_json::to_string(&now).unwrap_or_default();
                    yield Ok::<Event, Infallible>(Event::default().event("counts").data(json));
                    last = Some(now);
                }
                Ok(_) => {}
                Err(problem) => {
                    tracing::warn!(detail = %problem.detail, "console counts could not be read");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(COUNTS_EVERY) => {}
                () = stop.cancelled() => break,
            }
        }
    };
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// What a path segment or query value keeps as it is: RFC 3986's unreserved characters.
const KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A value as a query-string or path component.
pub(crate) fn encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, KEPT).to_string()
}
