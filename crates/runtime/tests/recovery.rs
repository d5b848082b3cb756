//! Recovery at start, in process: tasks left unfinished are resumed, left waiting for
//! input, or failed "interrupted by restart". (The SIGKILL test of the real binary is in
//! the root package's tests.)

mod common;

use std::time::Duration;

use chrono::Utc;
use common::*;
use fundi_runtime::store::TaskRecord;
use fundi_runtime::testing::open_sled;
use fundi_runtime::{
    ContextId, Durability, INTERRUPTED_BY_RESTART, RecoveryReport, Runtime, RuntimeHandle,
    SledStore, SubmitRequest, Task, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus,
    TaskStore,
};
use serde_json::{Value, json};

async fn start(dir: &std::path::Path) -> (RuntimeHandle, Scripted, Scripted) {
    let resumable = Scripted::new("resumable", true);
    let one_shot = Scripted::new("one-shot", false);
    let store = open_sled(dir).await;
    let rt = Runtime::builder()
        .store(store)
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
            waiting_for_input: 1
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
    let failed = rt.get(&one_shot.id, None, None).await.unwrap();
    assert_eq!(failed.status.state, TaskState::Failed);
    assert_eq!(status_text(&failed), INTERRUPTED_BY_RESTART);
    // The finished task is untouched.
    assert_eq!(
        rt.get(&done.id, None, None).await.unwrap().status.state,
        TaskState::Completed
    );
    // The asking task waits again, without an actor, until its answer arrives.
    let waiting = rt.get(&asking.id, None, None).await.unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_waiting_task_can_be_canceled_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, _, _) = start(dir.path()).await;
    let asking = submit_to(&rt, "resumable", "question", json!({"ask": true})).await;
    wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    crash(rt).await;

    let (rt, _, _) = start(dir.path()).await;
    let canceled = rt.cancel(&asking.id, None).await.unwrap();
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
        for (id, skill) in [(&broken, "resumable"), (&orphan, "retired-skill")] {
            let task = Task {
                id: id.clone(),
                context_id: ContextId::from("c"),
                status: TaskStatus {
                    state: TaskState::Working,
                    message: None,
                    timestamp: Utc::now(),
                },
                artifacts: vec![],
                history: if skill == "resumable" {
                    vec![]
                } else {
                    vec![message("x", Value::Null)]
                },
                metadata: None,
            };
            let record = TaskRecord {
                task: task.clone(),
                version: 1,
                last_seq: 1,
                skill: skill.into(),
                owner: None,
                checkpoint: None,
                trace: None,
            };
            let event = TaskEvent {
                seq: 1,
                task_id: id.clone(),
                context_id: task.context_id.clone(),
                kind: TaskEventKind::Created(task),
            };
            store
                .commit(&record, 0, std::slice::from_ref(&event))
                .await
                .unwrap();
        }
    }
    let (rt, _, _) = start(dir.path()).await;
    let t = rt.get(&broken, None, None).await.unwrap();
    assert_eq!(t.status.state, TaskState::Failed);
    assert!(
        status_text(&t).starts_with("task actor failed to start"),
        "{}",
        status_text(&t)
    );
    let t = rt.get(&orphan, None, None).await.unwrap();
    assert_eq!(t.status.state, TaskState::Failed);
    assert_eq!(
        status_text(&t),
        "interrupted by restart; skill \"retired-skill\" is no longer registered"
    );
}
