//! A task's artifacts as people read them: the reports of fundi's own skills as tables
//! and charts (`reports.rs`, `charts.rs`), the heal diff highlighted (`diff.rs`), and
//! anything else as its text or its JSON.

use fundi_runtime::{Artifact, PartContent, Task};
use maud::{Markup, html};
use serde_json::Value;

use crate::words::link;
use crate::{charts, diff, reports};

/// Every artifact of the task, each in its own section.
pub(crate) fn all(task: &Task) -> Markup {
    html! {
        @if task.artifacts.is_empty() {
            p { "None yet." }
        }
        @for artifact in &task.artifacts {
            section class="artifact" id={ "artifact-" (artifact.artifact_id) } aria-labelledby={ "artifact-title-" (artifact.artifact_id) } {
                h3 id={ "artifact-title-" (artifact.artifact_id) } { (artifact.name.as_deref().unwrap_or(&artifact.artifact_id)) }
                (one(artifact))
            }
        }
    }
}

fn one(artifact: &Artifact) -> Markup {
    let data = artifact.parts.iter().find_map(|p| match &p.content {
        PartContent::Data(value) => Some(value),
        _ => None,
    });
    match (artifact.artifact_id.as_str(), data) {
        ("a11y-report", Some(report)) => reports::accessibility(report),
        ("security-report", Some(report)) => reports::security(report),
        ("chaos-report", Some(report)) => charts::chaos(report),
        ("heal-diff", _) => diff::highlighted(&texts(artifact)),
        _ => plain(artifact),
    }
}

fn texts(artifact: &Artifact) -> String {
    artifact
        .parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each part as it is: text, JSON, a link, or the size of inline bytes.
fn plain(artifact: &Artifact) -> Markup {
    html! {
        @for part in &artifact.parts {
            @match &part.content {
                PartContent::Text(text) => pre class="text" { (text) },
                PartContent::Data(value) => pre class="json" { (pretty(value)) },
                PartContent::Url(url) => p { (link(url)) },
                PartContent::Raw(bytes) => p { (bytes.len()) " bytes"
                    @if let Some(name) = &part.filename { " (" (name) ")" } },
            }
        }
    }
}

pub(crate) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}
