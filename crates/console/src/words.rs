//! Small pieces every console page shows the same way: a state, a time, a badge, a link.

use chrono::{DateTime, Utc};
use fundi_runtime::TaskState;
use maud::{Markup, html};

/// A state in words: `input required`.
pub(crate) fn state_words(state: TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "input required",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "auth required",
    }
}

/// A state as the console's forms and addresses name it: `input-required`.
pub(crate) fn state_key(state: TaskState) -> String {
    state_words(state).replace(' ', "-")
}

/// The state a form or address names.
pub(crate) fn parse_state(key: &str) -> Option<TaskState> {
    TaskState::ALL.into_iter().find(|s| state_key(*s) == key)
}

/// A state as a badge; its words carry the meaning, the colour only repeats it.
pub(crate) fn badge(state: TaskState) -> Markup {
    html! { span class={ "badge " (state_key(state)) } { (state_words(state)) } }
}

/// A time, readable and machine-readable.
pub(crate) fn when(at: DateTime<Utc>) -> Markup {
    html! { time datetime=(at.to_rfc3339()) { (at.format("%Y-%m-%d %H:%M:%S UTC")) } }
}

/// At most `most` characters of `text`, with an ellipsis when cut.
pub(crate) fn clip(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A link to a web address; any other kind of address (`javascript:`) as plain text.
pub(crate) fn link(url: &str) -> Markup {
    let lower = url.to_ascii_lowercase();
    html! {
        @if lower.starts_with("https://") || lower.starts_with("http://") {
            a href=(url) rel="noopener noreferrer" { (url) }
        } @else {
            code { (url) }
        }
    }
}
