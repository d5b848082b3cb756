//! Each task runs inside a `task` span (task id, context id, skill) and each run inside a
//! `skill_run` span, its child; events a skill logs belong to its run, an injected fault
//! among them, marked as chaos.

use std::sync::{Arc, Mutex};

use fundi_runtime::testing::scripted::*;
use fundi_runtime::{Runtime, TaskState};
use serde_json::json;
use tracing::span::{Attributes, Id};
use tracing::{Subscriber, field::Field, field::Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span as seen when it was created: its name, its parent's name, its fields.
type SeenSpan = (String, Option<String>, String);

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<SeenSpan>>>, Arc<Mutex<Vec<SeenSpan>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields(String::new());
        attrs.record(&mut fields);
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.name().to_owned());
        self.0
            .lock()
            .unwrap()
            .push((attrs.metadata().name().to_owned(), parent, fields.0));
    }

    /// Events, as (their message and fields, the span they belong to, "").
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        let span = ctx.event_span(event).map(|s| s.name().to_owned());
        self.1.lock().unwrap().push((fields.0, span, String::new()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_and_runs_have_spans_with_their_ids() {
    let spans = Spans::default();
    // Global: the runtime's actors and runs live on the worker threads. (This is the
    // only test in this binary, so nothing else sets it.)
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans.clone()))
        .unwrap();

    let rt = Runtime::builder()
        .skill(Scripted::new("s", true))
        .start()
        .await
        .unwrap();
    let task = submit(&rt, "traced", json!({"steps": 1, "chaos": ["latency"]})).await;
    wait_for_state(&rt, &task.id, TaskState::Completed).await;

    let events = spans.1.lock().unwrap().clone();
    let spans = spans.0.lock().unwrap().clone();
    let task_span = spans
        .iter()
        .find(|(name, _, fields)| name == "task" && fields.contains(task.id.as_str()))
        .unwrap_or_else(|| panic!("no task span in {spans:?}"));
    assert!(
        task_span
            .2
            .contains(&format!("context_id={}", task.context_id)),
        "{task_span:?}"
    );
    assert!(task_span.2.contains("skill=s"), "{task_span:?}");
    assert!(
        spans
            .iter()
            .any(|(name, parent, _)| name == "skill_run" && parent.as_deref() == Some("task")),
        "{spans:?}"
    );
    let chaos = events
        .iter()
        .find(|(fields, _, _)| fields.contains("chaos event"))
        .unwrap_or_else(|| panic!("no chaos event in {events:?}"));
    assert!(chaos.0.contains("chaos=true"), "{chaos:?}");
    assert!(chaos.0.contains("fault=\"latency\""), "{chaos:?}");
    assert_eq!(chaos.1.as_deref(), Some("skill_run"), "{chaos:?}");
}
