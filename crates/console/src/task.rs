//! A task's page: its status, what can be done about it, its artifacts as pictures and
//! tables, and its timeline, which grows as events arrive (`GET
//! /console/tasks/{id}/events`, an event stream of rendered fragments: `timeline`
//! entries to append; the `status` and `actions` blocks to replace when the status
//! changes, the `artifacts` block when an artifact does; `end`).

use fundi_runtime::Access;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use fundi_runtime::{RuntimeError, Task, TaskEvent, TaskEventKind, TaskId};
use futures::StreamExt;
use maud::html;
use serde::Deserialize;

use crate::actions;
use crate::artifacts;
use crate::page::{Problem, Section, page, respond};
use crate::tasks::encode;
use crate::timeline::{InStateSince, entry, status_block};
use crate::viewer::Viewer;
use fundi_gateway::AppState;
use fundi_gateway::last_event_id;
use std::sync::Arc;

use crate::sessions::Sessions;

/// Most timeline entries a page shows (the latest ones).
const MOST_ENTRIES: usize = 1000;
/// Longest the page waits for the stored events it shows.
const READ_LIMIT: Duration = Duration::from_secs(10);

pub(super) async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, Problem> {
    let (task, seq) = readable(&state, &viewer, &TaskId::from(id)).await?;
    let mut events = past_events(&state, &task.id, seq).await?;
    let delegation = delegation(&events);
    let mut since = InStateSince::default();
    events.iter().for_each(|event| since.see(event));
    let skill = state.runtime().skill_of(&task.id).await;
    let left_out = events.len().saturating_sub(MOST_ENTRIES);
    events.drain(..left_out);
    let stream = (!task.status.state.is_terminal()).then(|| {
        format!(
            "/console/tasks/{}/events?after={seq}",
            encode(task.id.as_str())
        )
    });
    let title = format!("Task {}", task.id);
    let body = html! {
        div data-events=[stream] {
            dl class="facts" {
                dt { "Task" } dd { code { (task.id.as_str()) } }
                @if let Some(skill) = &skill { dt { "Skill" } dd { (skill) } }
                dt { "Context" } dd { a href={ "/console/tasks?context=" (encode(task.context_id.as_str())) } { code { (task.context_id.as_str()) } } }
                @if let Some((peer, remote)) = &delegation {
                    dt { "Delegated to" } dd { "peer " strong { (peer) } ", as its task " code { (remote) } }
                }
            }
            section aria-labelledby="status-title" {
                h2 id="status-title" { "Status" }
                div id="status" aria-live="polite" { (status_block(&task, &since)) }
            }
            div id="actions" { (actions::for_task(&viewer, &task)) }
            section aria-labelledby="artifacts-title" {
                h2 id="artifacts-title" { "Artifacts" }
                div id="artifacts" { (artifacts::all(&task)) }
            }
            section aria-labelledby="timeline-title" {
                h2 id="timeline-title" { "Timeline" }
                @if left_out > 0 { p { (left_out) " earlier events are not shown." } }
                ol id="timeline" { @for event in &events { (entry(event)) } }
            }
        }
    };
    Ok(respond(
        StatusCode::OK,
        page(&title, Some(&viewer), Section::Tasks, body),
    ))
}

/// The task and its last event's seq, if the viewer may read it: their own, or (as the
/// API's GetTask) a waiting task of a skill whose waiting tasks their scopes answer.
pub(super) async fn readable(
    state: &AppState,
    viewer: &Viewer,
    id: &TaskId,
) -> Result<(Task, u64), Problem> {
    match state
        .runtime()
        .snapshot(id, None, Access::Owner(viewer.user()))
        .await
    {
        Ok(snapshot) => Ok((snapshot.task, snapshot.seq)),
        Err(RuntimeError::TaskNotFound(_)) => {
            let access = Access::Owner(viewer.user());
            state
                .runtime()
                .get_as(id, Some(0), access, viewer.grants())
                .await?;
            let snapshot = state.runtime().snapshot(id, None, Access::Any).await?;
            Ok((snapshot.task, snapshot.seq))
        }
        Err(error) => Err(error.into()),
    }
}

/// The peer and the peer's task of a delegated task, from the note its run stored when
/// the peer took the message (`metadata.delegation`).
fn delegation(events: &[TaskEvent]) -> Option<(String, String)> {
    events.iter().find_map(|event| {
        let TaskEventKind::Status(status) = &event.kind else {
            return None;
        };
        let delegation = status
            .message
            .as_ref()?
            .metadata
            .as_ref()?
            .get("delegation")?;
        Some((
            delegation["peer"].as_str()?.to_owned(),
            delegation["taskId"].as_str()?.to_owned(),
        ))
    })
}

/// The task's stored events up to `seq`.
async fn past_events(state: &AppState, id: &TaskId, seq: u64) -> Result<Vec<TaskEvent>, Problem> {
    let mut events = Vec::new();
    if seq == 0 {
        return Ok(events);
    }
    let mut stream = state.runtime().subscribe(id, 0, Access::Any).await?;
    while let Ok(Some(next)) = tokio::time::timeout(READ_LIMIT, stream.next()).await {
        let event = next?;
        let at = event.seq;
        events.push(event);
        if at >= seq {
            break;
        }
    }
    Ok(events)
}

/// Markup as an event's data: a carriage return (which a task's text may hold) cannot
/// travel in an event stream's line, so it goes as a character reference; and an empty
/// block goes as a comment, since browsers drop an event whose data is empty.
fn fragment(markup: maud::Markup) -> String {
    let html = markup.into_string().replace('\r', "&#13;");
    match html.is_empty() {
        true => "<!-- nothing -->".to_owned(),
        false => html,
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct After {
    #[serde(default)]
    after: u64,
}

/// The task's events after `after` (or the `Last-Event-ID` a reconnecting browser
/// sends), as rendered fragments.
pub(super) async fn live(
    State(state): State<AppState>,
    State(sessions): State<Arc<Sessions>>,
    viewer: Viewer,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<After>,
) -> Result<Response, Problem> {
    let id = TaskId::from(id);
    readable(&state, &viewer, &id).await?;
    let after = last_event_id(&headers).unwrap_or(query.after);
    let slots = [
        state.stream_of_user(viewer.user())?,
        state.stream_of_task(id.as_str())?,
    ];
    // Since when the task is in its state, as of the event the page last had.
    let mut since = InStateSince::default();
    past_events(&state, &id, after)
        .await?
        .iter()
        .for_each(|event| since.see(event));
    let mut events = state.runtime().subscribe(&id, after, Access::Any).await?;
    let stop = state.shutdown().clone();
    let stream = async_stream::stream! {
        // Held while the stream lives.
        let _slots = slots;
        loop {
            let next = tokio::select! {
                next = events.next() => next,
                () = stop.cancelled() => break,
            };
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(error)) => {
                    tracing::warn!(%error, "a console event stream ended early");
                    break;
                }
                None => break,
            };
            // Signing out ends the stream too.
            if !matches!(sessions.find(viewer.id()).await, Ok(Some(_))) {
                break;
            }
            since.see(&event);
            let seq = event.seq.to_string();
            yield Ok::<Event, Infallible>(Event::default().event("timeline").id(seq).data(fragment(entry(&event))));
            // Access was checked when the stream opened: read the task as it stands now.
            let (status, artifact) = match &event.kind {
                TaskEventKind::Status(_) => (true, false),
                TaskEventKind::Artifact { .. } => (false, true),
                _ => (false, false),
            };
            if status || artifact {
                if let Ok(now) = state.runtime().snapshot(&id, Some(0), Access::Any).await {
                    let task = now.task;
                    if status {
                        yield Ok(Event::default().event("status").data(fragment(status_block(&task, &since))));
                        yield Ok(Event::default().event("actions").data(fragment(actions::for_task(&viewer, &task))));
                    }
                    if artifact {
                        yield Ok(Event::default().event("artifacts").data(fragment(artifacts::all(&task))));
                    }
                }
            }
            if event.is_terminal() {
                yield Ok(Event::default().event("end").data("ended"));
                break;
            }
        }
    };
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
