//! A task's events as timeline entries, and its status as a block: the same markup on
//! the page and in the live stream that extends it.

use chrono::{DateTime, Utc};
use fundi_runtime::approval::pending;
use fundi_runtime::{Message, Task, TaskEvent, TaskEventKind, TaskState, TaskStatus};
use maud::{Markup, html};

use crate::words::{badge, clip, when};

/// Longest text an entry shows of a message.
const ENTRY_TEXT: usize = 600;

/// One event as a timeline entry.
pub(crate) fn entry(event: &TaskEvent) -> Markup {
    let (what, detail): (&str, Markup) = match &event.kind {
        TaskEventKind::Created(task) => ("created", html! { (badge(task.status.state)) }),
        TaskEventKind::Status(status) => ("status", status_line(status)),
        TaskEventKind::Artifact {
            artifact,
            append,
            last_chunk,
        } => {
            let name = artifact.name.as_deref().unwrap_or(&artifact.artifact_id);
            let how = match (append, last_chunk) {
                (true, true) => "last chunk of",
                (true, false) => "chunk of",
                (false, _) => "produced",
            };
            (
                "artifact",
                html! { (how) " " a href={ "#artifact-" (artifact.artifact_id) } { (name) } },
            )
        }
        TaskEventKind::Message(message) => ("message", message_line(message)),
        TaskEventKind::Queued(message) => ("queued", message_line(message)),
        TaskEventKind::MessageTaken { starts_run } => (
            "taken",
            html! { @if *starts_run { "the next run starts from the queued message" }
            @else { "the run took the queued message" } },
        ),
    };
    html! {
        li id={ "event-" (event.seq) } {
            span class="seq" { "#" (event.seq) }
            " "
            span class="kind" { (what) }
            " "
            (detail)
        }
    }
}

fn status_line(status: &TaskStatus) -> Markup {
    let text = status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default();
    html! {
        (badge(status.state)) " " (when(status.timestamp))
        @if !text.is_empty() { " " span class="words" { (clip(&text, ENTRY_TEXT)) } }
    }
}

fn message_line(message: &Message) -> Markup {
    let who = match message.role {
        fundi_runtime::Role::User => "from the user",
        _ => "from the agent",
    };
    html! { (who) ": " span class="words" { (clip(&message.text(), ENTRY_TEXT)) } }
}

/// Since when a task has been in its state: the first status of the latest run of
/// statuses in that state (a working task's progress notes do not move it).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct InStateSince {
    state: Option<TaskState>,
    at: Option<DateTime<Utc>>,
}

impl InStateSince {
    /// Takes `event` into account.
    pub(crate) fn see(&mut self, event: &TaskEvent) {
        let status = match &event.kind {
            TaskEventKind::Created(task) => &task.status,
            TaskEventKind::Status(status) => status,
            _ => return,
        };
        if self.state != Some(status.state) {
            self.state = Some(status.state);
            self.at = Some(status.timestamp);
        }
    }

    /// Since when a task in `status` has been in its state.
    fn of(&self, status: &TaskStatus) -> DateTime<Utc> {
        match self.state == Some(status.state) {
            true => self.at.unwrap_or(status.timestamp),
            false => status.timestamp,
        }
    }
}

/// The task's status as the page's status block; `since` says when its state began.
pub(crate) fn status_block(task: &Task, since: &InStateSince) -> Markup {
    let status = &task.status;
    let text = status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default();
    html! {
        p { (badge(status.state)) " since " (when(since.of(status))) }
        @if let Some(request) = pending(task) {
            p class="note" { "Waiting for an approver: " (request.skill) " was asked for"
                @if let Some(by) = &request.requested_by { " by " strong { (by) } }
                @if let Some(target) = &request.target { " on " code { (target) } }
                "." }
        }
        @if !text.is_empty() {
            p class="words" { (text) }
        }
    }
}
