//! Recovery at start, in process: tasks left unfinished are resumed, left waiting for
//! input, or failed "interrupted by restart". (The SIGKILL test of the real binary is in
//! the root package's tests.)

use fundi_runtime::Access;
use std::time::Duration;

use chrono::Utc;
use fundi_runtime::store::TaskRecord;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    ContextId, INTERRUPTED_BY_RESTART, RecoveryReport, Runtime, RuntimeConfig, RuntimeHandle,
    SubmitRequest, Task, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus, TaskStore,
};
use fundi_store_sled::testing::open_sled;
use fundi_store_sled::{Durability, SledStore};
use futures::StreamExt;
use serde_json::{Value, json};

async fn start(dir: &std::path::Path) -> (RuntimeHandle, Scripted, Scripted) {
    start_with(dir, RuntimeConfig::default()).await
}

async fn start_with(
    dir: &std::path::Path,
    config: RuntimeConfig,
) -> (RuntimeHandle, Scripted, Scripted) {
    let resumable = Scripted::new("resumable", true);
    let one_shot = Scripted::new("one-shot", false);
    let store = open_sled(dir).await;
    let rt = Runtime::builder()
        .store(store)
        .config(config)
        .skill(resumable.clone())
        .skill(one_shot.clone())
        .start()
        .await
        .unwrap();
    (rt, resumable, one_shot)
}

async fn submit_to(rt: &RuntimeHandle, skill: &str, text: &str, data: Value) -> Task {
    let mut req = SubmitRequest::new(message(text, data));
    req.skill = Some(skill.into());
    rt.submit(req).await.unwrap().task
}

/// Stores a `working` task of `skill` directly, as a run left it (no runtime involved).
async fn store_working(
    store: &SledStore,
    id: &TaskId,
    skill: &str,
    history: Vec<fundi_runtime::Message>,
    checkpoint: Option<Value>,
) {
    let task = Task {
        id: id.clone(),
        context_id: ContextId::from("c"),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: Utc::now(),
        },
        artifacts: vec![],
        history,
        metadata: None,
    };
    let mut record = TaskRecord::new(task.clone(), skill);
    record.checkpoint = checkpoint;
    let event = TaskEvent {
        seq: 1,
        task_id: id.clone(),
        context_id: task.context_id.clone(),
        kind: TaskEventKind::Created(task),
    };
    store.commit(&record, 0, &[event]).await.unwrap();
}

/// Stops every actor without letting anything finish, as a crash would.
async fn crash(rt: RuntimeHandle) {
    rt.shutdown(Duration::ZERO).await;
    drop(rt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_tasks_are_resumed_waiting_or_failed_never_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, _, _) = start(dir.path()).await;
    let resumable = submit_to(
        &rt,
        "resumable",
        "long",
        json!({"checkpoint": true, "gate": true}),
    )
    .await;
    wait_for_note(&rt, &resumable.id, "checkpointed").await;
    let one_shot = submit_to(&rt, "one-shot", "fragile", json!({"gate": true})).await;
    wait_for_state(&rt, &one_shot.id, TaskState::Working).await;
    let asking = submit_to(&rt, "resumable", "question", json!({"ask": true})).await;
    wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    let done = submit_to(&rt, "resumable", "finished", Value::Null).await;
    wait_for_state(&rt, &done.id, TaskState::Completed).await;
    crash(rt).await;

    let (rt, _, _) = start(dir.path()).await;
    assert_eq!(
        rt.recovery_report(),
        RecoveryReport {
            resumed: 1,
            failed: 1,
            waiting_for_input: 1,
            idle: 0,
            quarantined: 0,
        }
    );
    // The resumable task runs again from its checkpoint.
    let resumed = wait_for_state(&rt, &resumable.id, TaskState::Completed).await;
    assert_eq!(
        status_text(&resumed),
        r#"resumed from {"at":"gate","text":"long"}"#
    );
    let notes: Vec<String> = collect_events(&rt, &resumable.id, 0)
        .await
        .iter()
        .filter_map(|e| e.status()?.message.as_ref().map(|m| m.text()))
        .collect();
    assert!(
        notes.iter().any(|n| n == "resumed after a restart"),
        "{notes:?}"
    );
    // The one-shot task ended failed, saying why.
    let failed = rt.get(&one_shot.id, None, Access::Any).await.unwrap();
    assert_eq!(failed.status.state, TaskState::Failed);
    assert_eq!(status_text(&failed), INTERRUPTED_BY_RESTART);
    // The finished task is untouched.
    assert_eq!(
        rt.get(&done.id, None, Access::Any)
            .await
            .unwrap()
            .status
            .state,
        TaskState::Completed
    );
    // The asking task waits again, without an actor, until its answer arrives.
    let waiting = rt.get(&asking.id, None, Access::Any).await.unwrap();
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    assert_eq!(
        rt.live_tasks(),
        0,
        "no actor is kept for tasks that only wait"
    );
    let mut answer = message("forty-two", Value::Null);
    answer.task_id = Some(asking.id.clone());
    rt.submit(SubmitRequest::new(answer)).await.unwrap();
    let answered = wait_for_state(&rt, &asking.id, TaskState::Completed).await;
    assert_eq!(status_text(&answered), "done: forty-two");

    // Every event log is still gap-free across the restart.
    for id in [&resumable.id, &one_shot.id, &asking.id, &done.id] {
        let events = collect_events(&rt, id, 0).await;
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>(), "{id}");
        assert!(events.last().unwrap().is_terminal(), "{id}");
    }
}

/// Waits (up to the deadline) until `rt` has `n` live actors.
async fn live_actors(rt: &RuntimeHandle, n: usize) {
    let what = || format!("{} live actors, not {n}", rt.live_tasks());
    eventually(what, || rt.live_tasks() == n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_resumed_after_a_restart_get_actors_only_as_slots_free_up() {
    let dir = tempfile::tempdir().unwrap();
    let one_at_a_time = || {
        let mut runtime_config = RuntimeConfig::default();
        runtime_config.max_concurrent_runs = 1;
        runtime_config
    };
    let (rt, _, _) = start_with(dir.path(), one_at_a_time()).await;
    let mut ids = Vec::new();
    for i in 0..4 {
        let text = format!("t{i}");
        ids.push(
            submit_to(&rt, "resumable", &text, json!({"gate": true}))
                .await
                .id,
        );
    }
    wait_for_state(&rt, &ids[0], TaskState::Working).await;
    crash(rt).await;

    let (rt, resumable, _) = start_with(dir.path(), one_at_a_time()).await;
    assert_eq!(rt.recovery_report().resumed, 4);
    // One runs again (at its gate); the other three wait for the slot with no actor.
    let what = || "nothing resumed".to_owned();
    eventually(what, || !resumable.started().is_empty()).await;
    live_actors(&rt, 1).await;
    assert_eq!(resumable.started().len(), 1, "{:?}", resumable.started());

    // A subscriber to a queued task follows it to its end; a cancel ends one at once.
    let follower = {
        let (rt, id) = (rt.clone(), ids[3].clone());
        tokio::spawn(async move { collect_events(&rt, &id, 0).await })
    };
    let canceled = rt.cancel(&ids[2], Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    resumable.gate.add_permits(3);
    for (i, id) in ids.iter().enumerate() {
        let state = if i == 2 {
            TaskState::Canceled
        } else {
            TaskState::Completed
        };
        let task = wait_for_state(&rt, id, state).await;
        let events = collect_events(&rt, id, 0).await;
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>(), "{id}");
        assert_eq!(task.status.state, state);
    }
    let followed = follower.await.unwrap();
    assert_eq!(
        followed.last().and_then(|e| e.status()).map(|s| s.state),
        Some(TaskState::Completed),
        "{followed:?}"
    );
    // Each ran once, the canceled one never.
    let mut started = resumable.started();
    started.sort();
    assert_eq!(started, ["t0", "t1", "t3"]);
    live_actors(&rt, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_waiting_task_can_be_canceled_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, _, _) = start(dir.path()).await;
    let asking = submit_to(&rt, "resumable", "question", json!({"ask": true})).await;
    wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    crash(rt).await;

    let (rt, _, _) = start(dir.path()).await;
    let canceled = rt.cancel(&asking.id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
}

/// A stored task the actor cannot start from (no user message): pre_start fails, and
/// the failure must end the task, not vanish at the spawn site.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_actor_that_fails_to_start_fails_its_task() {
    let dir = tempfile::tempdir().unwrap();
    let broken = TaskId::from("broken");
    let orphan = TaskId::from("orphan");
    {
        let store = SledStore::open(dir.path(), Durability::Sync).unwrap();
        store_working(&store, &broken, "resumable", vec![], None).await;
        let history = vec![message("x", Value::Null)];
        store_working(&store, &orphan, "retired-skill", history, None).await;
    }
    let (rt, _, _) = start(dir.path()).await;
    // Its actor starts once it has a slot, after the start returned.
    let t = wait_for_state(&rt, &broken, TaskState::Failed).await;
    assert!(
        status_text(&t).starts_with("task actor failed to start"),
        "{}",
        status_text(&t)
    );
    let t = rt.get(&orphan, None, Access::Any).await.unwrap();
    assert_eq!(t.status.state, TaskState::Failed);
    assert_eq!(
        status_text(&t),
        "interrupted by restart; skill \"retired-skill\" is no longer registered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_does_not_restart_a_task_the_shutdown_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, resumable, _) = start(dir.path()).await;
    let task = submit_to(&rt, "resumable", "long", json!({"gate": true})).await;
    wait_for_state(&rt, &task.id, TaskState::Working).await;
    // Subscribed (its live queue is there once the first event is read) before the
    // shutdown.
    let mut stream = rt.subscribe(&task.id, 0, Access::Any).await.unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first.kind, TaskEventKind::Created(_)));
    // Read on while the shutdown goes on: its actor stops under it.
    let rest = tokio::spawn(tokio::time::timeout(
        DEADLINE,
        stream.map(|e| e.unwrap()).collect::<Vec<_>>(),
    ));
    rt.shutdown(Duration::ZERO).await;
    // The stream ends with the task as stored: working, run once.
    let events = rest.await.unwrap().expect("the stream ends");
    assert_eq!(
        events.last().and_then(|e| e.status()).map(|s| s.state),
        Some(TaskState::Working),
        "{events:?}"
    );
    assert_eq!(resumable.started(), ["long"]);
    drop(rt);
    let store = open_sled(dir.path()).await;
    let stored = store.get(&task.id).await.unwrap().unwrap();
    assert_eq!(stored.state(), TaskState::Working);
    assert_eq!(stored.last_seq, 2, "nothing was written after the shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_task_that_cannot_be_read_never_stops_the_runtime_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, _, _) = start(dir.path()).await;
    let fine = submit_to(&rt, "resumable", "fine", json!({"ask": true})).await;
    wait_for_state(&rt, &fine.id, TaskState::InputRequired).await;
    crash(rt).await;
    {
        // Stored behind the runtime's back: a checkpoint nested deeper than a JSON
        // reader goes (the runtime itself refuses such a value).
        let store = open_sled(dir.path()).await;
        let deep = (0..200).fold(json!(1), |inner, _| json!([inner]));
        let history = vec![message("x", Value::Null)];
        let id = TaskId::from("unreadable");
        store_working(&store, &id, "resumable", history, Some(deep)).await;
    }
    let (rt, _, _) = start(dir.path()).await;
    let report = rt.recovery_report();
    assert_eq!((report.quarantined, report.waiting_for_input), (1, 1));
    let t = wait_for_state(&rt, &TaskId::from("unreadable"), TaskState::Failed).await;
    assert!(status_text(&t).contains("set aside"), "{}", status_text(&t));
    // Every other task is served: the waiting one takes its answer.
    rt.submit(SubmitRequest::new({
        let mut m = message("answer", Value::Null);
        m.task_id = Some(fine.id.clone());
        m
    }))
    .await
    .unwrap();
    wait_for_state(&rt, &fine.id, TaskState::Completed).await;
}

/// Stores a task of `skill` in `state`, whose checkpoint no reader can read back (nested
/// deeper than a JSON reader goes; the runtime itself refuses such a value).
async fn store_unreadable(store: &SledStore, id: &str, skill: &str, state: TaskState) {
    let mut task = Task::new(TaskId::from(id), ContextId::from("c"), state);
    task.history = vec![message(id, Value::Null)];
    let mut record = TaskRecord::new(task.clone(), skill);
    record.checkpoint = Some((0..200).fold(json!(1), |inner, _| json!([inner])));
    let event = TaskEvent {
        seq: 1,
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        kind: TaskEventKind::Created(task),
    };
    store.commit(&record, 0, &[event]).await.unwrap();
}

/// Polls until task `id` reads back failed, set aside; fails at the deadline.
async fn set_aside_in_time(rt: &RuntimeHandle, id: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(t) = rt.snapshot(&TaskId::from(id), Some(0), Access::Any).await {
            assert_eq!(t.task.status.state, TaskState::Failed, "{id}");
            assert!(status_text(&t.task).contains("set aside"), "{id}");
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{id} never set aside");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A store that knows its tasks at rest without reading them (sled's rest index) starts
/// without reading a task queued for a slot or waiting for input: one that cannot be
/// read is set aside when it is woken (its turn for a slot, a message), as a start
/// that read it would have, and the caller gets an error, never a hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_at_rest_that_cannot_be_read_is_set_aside_when_it_wakes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_sled(dir.path()).await;
        store_unreadable(&store, "queued", "resumable", TaskState::Submitted).await;
        store_unreadable(&store, "waiting", "resumable", TaskState::InputRequired).await;
    }
    let (rt, resumable, _) = start(dir.path()).await;
    let report = rt.recovery_report();
    assert_eq!(
        (report.quarantined, report.resumed, report.waiting_for_input),
        (0, 1, 1),
        "decided from the index, unread"
    );
    set_aside_in_time(&rt, "queued").await;
    assert!(
        resumable.started().is_empty(),
        "no run of an unreadable task"
    );

    let mut answer = message("answer", Value::Null);
    answer.task_id = Some(TaskId::from("waiting"));
    assert!(rt.submit(SubmitRequest::new(answer)).await.is_err());
    set_aside_in_time(&rt, "waiting").await;
    crash(rt).await;
    let store = open_sled(dir.path()).await;
    assert_eq!(store.quarantined().await.unwrap().len(), 2);
}

/// A task at rest that a start fails unread (its skill does not resume, or is gone) and
/// that cannot be read is set aside, and the start goes on: one damaged task never
/// keeps the others from starting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_at_rest_a_start_fails_that_cannot_be_read_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_sled(dir.path()).await;
        store_unreadable(&store, "queued", "one-shot", TaskState::Submitted).await;
        store_unreadable(&store, "waiting", "one-shot", TaskState::InputRequired).await;
        store_unreadable(&store, "orphan", "gone", TaskState::InputRequired).await;
    }
    let (rt, _, _) = start(dir.path()).await;
    for id in ["queued", "waiting", "orphan"] {
        set_aside_in_time(&rt, id).await;
    }
    assert_eq!(rt.recovery_report().failed, 0, "none failed as if read");
}
