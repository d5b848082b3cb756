//! New tasks queued for a slot: one that nobody follows waits with no actor, in line
//! with every task that waits for its skill's slot; a call or a subscriber that reaches
//! it starts its actor without losing its place; its run is a first run, not a resumed
//! one; a cancel that cannot be stored leaves it in line; a shutdown leaves it stored
//! for the next start.

#[path = "support/flaky_store.rs"]
mod flaky_store;

use std::sync::atomic::Ordering;
use std::time::Duration;

use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Access, Runtime, RuntimeConfig, RuntimeError, RuntimeHandle, SubmitRequest, TaskEventKind,
    TaskId, TaskState,
};
use fundi_store_sled::testing::open_sled;
use serde_json::{Value, json};

use flaky_store::FlakyStore;

/// A runtime over the sled store in `dir` that runs one task at a time.
async fn one_at_a_time(dir: &std::path::Path) -> (RuntimeHandle, Scripted) {
    let skill = Scripted::new("resumable", true);
    let mut config = RuntimeConfig::default();
    config.max_concurrent_runs = 1;
    let rt = Runtime::builder()
        .store(open_sled(dir).await)
        .config(config)
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    (rt, skill)
}

/// [`one_at_a_time`], its one slot held by a task at its gate ("t0").
async fn busy(dir: &std::path::Path) -> (RuntimeHandle, Scripted, TaskId) {
    let (rt, skill) = one_at_a_time(dir).await;
    let running = hold_the_slot(&rt).await;
    (rt, skill, running)
}

/// Submits "t0", which holds the one slot at its gate.
async fn hold_the_slot(rt: &RuntimeHandle) -> TaskId {
    let running = submit_to(rt, "t0", json!({"gate": true})).await;
    wait_for_state(rt, &running, TaskState::Working).await;
    running
}

async fn submit_to(rt: &RuntimeHandle, text: &str, data: Value) -> TaskId {
    let request = SubmitRequest::new(message(text, data));
    rt.submit(request).await.unwrap().task.id
}

async fn live_tasks_are(rt: &RuntimeHandle, n: usize) {
    let what = || format!("{} tasks have an actor, not {n}", rt.live_tasks());
    eventually(what, || rt.live_tasks() == n).await;
}

/// The texts of the task's status notes.
async fn notes(rt: &RuntimeHandle, id: &TaskId) -> Vec<String> {
    let events = collect_events(rt, id, 0).await;
    let status_text = |kind: &TaskEventKind| match kind {
        TaskEventKind::Status(status) => status.message.as_ref().map(|m| m.text()),
        _ => None,
    };
    events.iter().filter_map(|e| status_text(&e.kind)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_tasks_hold_no_actor_and_run_in_turn_a_woken_one_keeps_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, skill, running) = busy(dir.path()).await;
    let mut queued = Vec::new();
    for i in 1..=4 {
        queued.push(submit_to(&rt, &format!("t{i}"), json!({"gate": true})).await);
    }
    // Asks for input in a first run; a run told it resumes would answer at once.
    let asking = submit_to(&rt, "t5", json!({"ask": true})).await;
    // Only the running one: a submission spawns any actor before it returns.
    live_tasks_are(&rt, 1).await;
    for id in queued.iter().chain([&asking]) {
        let task = rt.snapshot(id, None, Access::Any).await.unwrap().task;
        assert_eq!(task.status.state, TaskState::Submitted, "{id}");
    }

    // A subscriber wakes t3, a cancel wakes and ends t2.
    let follower = {
        let (rt, id) = (rt.clone(), queued[2].clone());
        tokio::spawn(async move { collect_events(&rt, &id, 0).await })
    };
    live_tasks_are(&rt, 2).await;
    let canceled = rt.cancel(&queued[1], Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);

    skill.gate.add_permits(4);
    for id in [&running, &queued[0], &queued[2], &queued[3]] {
        let done = wait_for_state(&rt, id, TaskState::Completed).await;
        assert!(status_text(&done).starts_with("done: t"), "{done:?}");
    }
    let asked = wait_for_state(&rt, &asking, TaskState::InputRequired).await;
    assert_eq!(status_text(&asked), "more?");
    // One run at a time, in the order submitted: the woken t3 kept its place, the
    // canceled t2 never ran.
    assert_eq!(skill.started(), ["t0", "t1", "t3", "t4", "t5"]);
    let followed = follower.await.unwrap();
    let last = followed.last().and_then(|e| e.status()).map(|s| s.state);
    assert_eq!(last, Some(TaskState::Completed), "{followed:?}");
    for id in &queued {
        let notes = notes(&rt, id).await;
        assert!(
            !notes.iter().any(|n| n.contains("restart")),
            "{id}: {notes:?}"
        );
    }
    // Only the task waiting for input keeps an actor (until it parks).
    live_tasks_are(&rt, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_task_woken_by_a_refused_message_runs_in_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, skill, running) = busy(dir.path()).await;
    let queued = submit_to(&rt, "t1", json!({"ask": true})).await;
    live_tasks_are(&rt, 1).await;
    // Sent while it waits for its slot: the skill takes no message until it asks, as
    // with a task that kept its actor; the actor it woke stays in line.
    let mut more = message("more", Value::Null);
    more.task_id = Some(queued.clone());
    let refused = rt.submit(SubmitRequest::new(more)).await.unwrap_err();
    assert!(
        matches!(refused, RuntimeError::NotAcceptingInput { .. }),
        "{refused:?}"
    );
    live_tasks_are(&rt, 2).await;
    skill.gate.add_permits(1);
    wait_for_state(&rt, &running, TaskState::Completed).await;
    // Its first run asks for input: it was not told it resumes.
    let asked = wait_for_state(&rt, &queued, TaskState::InputRequired).await;
    assert_eq!(status_text(&asked), "more?");
    assert_eq!(skill.started(), ["t0", "t1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_tasks_stay_stored_through_a_shutdown_and_run_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, _, running) = busy(dir.path()).await;
    let queued = [
        submit_to(&rt, "t1", Value::Null).await,
        submit_to(&rt, "t2", Value::Null).await,
    ];
    live_tasks_are(&rt, 1).await;
    rt.shutdown(Duration::ZERO).await;
    drop(rt);

    let (rt, skill) = one_at_a_time(dir.path()).await;
    assert_eq!(rt.recovery_report().resumed, 3);
    skill.gate.add_permits(1);
    for id in queued.iter().chain([&running]) {
        wait_for_state(&rt, id, TaskState::Completed).await;
    }
    live_tasks_are(&rt, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_task_whose_cancel_cannot_be_stored_keeps_its_place() {
    let store = FlakyStore::new();
    let skill = Scripted::new("resumable", true);
    let mut config = RuntimeConfig::default();
    config.max_concurrent_runs = 1;
    let rt = Runtime::builder()
        .shared_store(store.clone())
        .config(config)
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    let running = hold_the_slot(&rt).await;
    let queued = [
        submit_to(&rt, "t1", json!({"gate": true})).await,
        submit_to(&rt, "t2", json!({"gate": true})).await,
    ];
    live_tasks_are(&rt, 1).await;

    store.refusing_cancels.store(true, Ordering::SeqCst);
    let refused = rt.cancel(&queued[0], Access::Any).await.unwrap_err();
    assert!(refused.to_string().contains("disk is full"), "{refused}");
    store.refusing_cancels.store(false, Ordering::SeqCst);

    // The cancel woke t1 and was refused: it still waits for its slot, ahead of t2.
    skill.gate.add_permits(3);
    for id in queued.iter().chain([&running]) {
        wait_for_state(&rt, id, TaskState::Completed).await;
    }
    assert_eq!(skill.started(), ["t0", "t1", "t2"]);
}
