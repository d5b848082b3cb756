//! The store contract's case about tasks with many commits: a store may keep a task as
//! an older snapshot and the commits after it, and every read must still give the task
//! as its last commit left it.

use serde_json::json;

use crate::model::{Artifact, Message, Part, TaskEventKind, TaskId, TaskState, TaskStatus};
use crate::store::{ListQuery, TaskRecord, TaskStore, UnfinishedTask};

use super::store_contract::{created, next_commit, record};

/// How many commits the case makes: past a few snapshots of every store.
const COMMITS: usize = 100;

/// A task committed many times (progress notes, artifacts made and extended, queued
/// messages taken, checkpoints set, changed and cleared, commits with no event, rests
/// for input, parks while its run waits idle) reads back as its last commit after each
/// one: by id, in a listing, among the unfinished tasks and as recovery decides it; and
/// so once it ends.
pub async fn a_long_running_task_reads_back_at_every_commit(name: &str, store: &dyn TaskStore) {
    let first = record("long", "c-long", TaskState::Working, 1_000, "u");
    store.commit(&first, 0, &[created(&first)]).await.unwrap();
    let mut task = first;
    for step in 0..COMMITS {
        let next = match step_of(step) {
            (kinds, checkpoint) if step % 10 != 8 => {
                committed(store, &task, kinds, checkpoint).await
            }
            _ => parked_idle(store, &task, step).await,
        };
        assert_reads_back(name, store, &next, &format!("after commit {step}")).await;
        task = next;
    }
    let done = TaskEventKind::Status(status(TaskState::Completed, 1_000 + COMMITS as i64 + 1));
    let ended = committed(store, &task, vec![done], None).await;
    let stored = store.get(ended.id()).await.unwrap();
    assert_eq!(stored.as_ref(), Some(&ended), "{name}: once ended");
    assert!(
        store.active().await.unwrap().is_empty(),
        "{name}: once ended"
    );
}

/// What commit `step` does: its events, and the checkpoint it sets (`Some(None)`:
/// cleared; `None`: left as it was).
#[allow(clippy::type_complexity)]
fn step_of(step: usize) -> (Vec<TaskEventKind>, Option<Option<serde_json::Value>>) {
    let at = 1_000 + step as i64;
    let text = |t: String| Message::user(vec![Part::text(t)]);
    let artifact = |n: usize, t: String| Artifact {
        artifact_id: format!("a{n}"),
        name: None,
        description: None,
        parts: vec![Part::text(t)],
        metadata: None,
        extensions: Vec::new(),
    };
    match step % 10 {
        0 => (
            vec![TaskEventKind::Status(status(TaskState::Working, at))],
            Some(Some(json!({ "step": step }))),
        ),
        1 => (
            vec![TaskEventKind::Artifact {
                artifact: artifact(step, format!("made at {step}")),
                append: false,
                last_chunk: false,
            }],
            None,
        ),
        2 => (
            vec![TaskEventKind::Artifact {
                artifact: artifact(step - 1, format!("added at {step}")),
                append: true,
                last_chunk: true,
            }],
            None,
        ),
        3 => (vec![], Some(Some(json!({ "step": step, "alone": true })))),
        4 => (
            vec![
                TaskEventKind::Queued(text(format!("queued at {step}"))),
                TaskEventKind::Queued(text(format!("and at {step}"))),
            ],
            None,
        ),
        5 => (
            vec![TaskEventKind::MessageTaken { starts_run: false }],
            None,
        ),
        6 => (
            vec![TaskEventKind::Status(status(TaskState::InputRequired, at))],
            None,
        ),
        7 => (
            vec![
                TaskEventKind::Message(text(format!("answer at {step}"))),
                TaskEventKind::Status(status(TaskState::Working, at)),
            ],
            Some(None),
        ),
        // Parks idle (`parked_idle`): a commit with no event.
        8 => (vec![], None),
        _ => (
            vec![TaskEventKind::Status(status(TaskState::Working, at))],
            None,
        ),
    }
}

fn status(state: TaskState, at_ms: i64) -> TaskStatus {
    use chrono::TimeZone;
    TaskStatus {
        state,
        message: None,
        timestamp: chrono::Utc.timestamp_millis_opt(at_ms).unwrap(),
    }
}

/// `task`'s next commit with `kinds` (applied as the task actor applies them), stored.
async fn committed(
    store: &dyn TaskStore,
    task: &TaskRecord,
    kinds: Vec<TaskEventKind>,
    checkpoint: Option<Option<serde_json::Value>>,
) -> TaskRecord {
    let (next, events) = next_commit(task, kinds, checkpoint);
    store.commit(&next, task.version, &events).await.unwrap();
    next
}

/// `task` parked while its run waits idle, stored: a commit with no event that holds
/// when the wait ends (the next commit clears it).
async fn parked_idle(store: &dyn TaskStore, task: &TaskRecord, step: usize) -> TaskRecord {
    use chrono::TimeZone;
    let mut next = task.clone();
    next.version += 1;
    let until = chrono::Utc.timestamp_millis_opt(1_000_000 + step as i64);
    next.idle_until = Some(until.unwrap());
    store.commit(&next, task.version, &[]).await.unwrap();
    next
}

async fn assert_reads_back(name: &str, store: &dyn TaskStore, expected: &TaskRecord, when: &str) {
    let id = TaskId::from("long");
    let stored = store.get(&id).await.unwrap();
    assert_eq!(stored.as_ref(), Some(expected), "{name}: read {when}");
    let query = ListQuery {
        context_id: Some(expected.task.context_id.clone()),
        limit: 10,
        ..ListQuery::default()
    };
    let listed = store.list(&query).await.unwrap().records;
    assert_eq!(
        listed,
        std::slice::from_ref(expected),
        "{name}: listed {when}"
    );
    let active = store.active().await.unwrap();
    assert_eq!(
        active,
        std::slice::from_ref(expected),
        "{name}: unfinished {when}"
    );
    let recovered = store.unfinished_tasks().await.unwrap();
    assert_eq!(
        recovered,
        [UnfinishedTask::of(expected)],
        "{name}: as recovery decides it {when}"
    );
}
