//! Idle runs: a resumable run that waits on something outside its task
//! (`SkillContext::idle`) parks its task once nothing has happened to it for
//! `runtime.park-after-ms` and the wait has as long still to go; the task is woken
//! when the wait is over (or by a message, a subscriber or a cancel) and its run starts
//! again from its checkpoint, with the same events as a task that kept its actor; a
//! restart leaves it parked until then. A cancel of a parked task reaches the skill through `canceled_at_rest`.

#[path = "support/poller.rs"]
mod poller;

use std::sync::atomic::Ordering;
use std::time::Duration;

use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Access, Presence, Runtime, RuntimeConfig, RuntimeHandle, SubmitRequest, TaskEventKind, TaskId,
    TaskState,
};
use fundi_store_sled::testing::open_sled;
use futures::StreamExt;
use serde_json::{Value, json};

use poller::*;

/// The statuses the task's events tell, in order.
async fn statuses(rt: &RuntimeHandle, id: &TaskId) -> Vec<(TaskState, Option<String>)> {
    collect_events(rt, id, 0)
        .await
        .iter()
        .filter_map(|e| match &e.kind {
            TaskEventKind::Status(status) => {
                Some((status.state, status.message.as_ref().map(|m| m.text())))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_idle_wait_parks_its_task_and_the_wait_s_end_wakes_it() {
    let poller = Poller::new("poller", true, Duration::from_millis(300));
    let rt = start(50, &poller, None).await;
    let kept = Poller::new("poller", true, Duration::from_millis(300));
    let keeping = start(0, &kept, None).await;
    let id = poll(&rt, &poller).await;
    let kept_id = poll(&keeping, &kept).await;
    parked(&rt, &id).await;
    let task = rt.get(&id, None, Access::Any).await.unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    // Woken by the end of its wait: a run started again from the checkpoint, and it
    // looked once more.
    runs_reach(&poller, 3).await;
    assert_eq!(
        keeping.live_tasks(),
        1,
        "a task that may not park keeps its actor"
    );
    assert_eq!(kept.runs(), 1);
    poller.ready.store(true, Ordering::SeqCst);
    kept.ready.store(true, Ordering::SeqCst);
    let done = wait_for_state(&rt, &id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "ready");
    wait_for_state(&keeping, &kept_id, TaskState::Completed).await;
    // The wakes said nothing: the same statuses as the task that kept its actor.
    assert_eq!(statuses(&rt, &id).await, statuses(&keeping, &kept_id).await);
    assert_eq!(
        statuses(&rt, &id).await,
        [
            (TaskState::Working, None),
            (TaskState::Completed, Some("ready".into())),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_shorter_than_the_idle_clock_keeps_the_actor() {
    let poller = Poller::new("poller", true, Duration::from_millis(10));
    let rt = start(30, &poller, None).await;
    let id = poll(&rt, &poller).await;
    // Many looks, one run: it never parked (each wait is shorter than the idle clock).
    eventually(
        || format!("the poller looked {} times", poller.looks()),
        || poller.looks() >= 20,
    )
    .await;
    assert_eq!(poller.runs(), 1);
    assert_eq!(rt.presence(&id).await, Presence::Here);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_that_does_not_resume_keeps_its_actor_through_a_long_wait() {
    let one_shot = Poller::new("one-shot", false, Duration::from_secs(3600));
    let poller = Poller::new("poller", true, Duration::from_secs(3600));
    let mut config = RuntimeConfig::default();
    config.park_after_ms = 10;
    let rt = Runtime::builder()
        .config(config)
        .skill(one_shot.clone())
        .skill(poller.clone())
        .start()
        .await
        .unwrap();
    let id = poll(&rt, &one_shot).await;
    runs_reach(&one_shot, 1).await;
    eventually(
        || "the one-shot run did not look".into(),
        || one_shot.looks() == 1,
    )
    .await;
    // The resumable task, idle as long, parks; the other keeps its actor, and a cancel
    // reaches its run.
    let parking = poll(&rt, &poller).await;
    eventually(
        || "the resumable task did not park".into(),
        || rt.live_tasks() == 1,
    )
    .await;
    assert_eq!(rt.presence(&parking).await, Presence::Resting);
    assert_eq!(rt.presence(&id).await, Presence::Here);
    let canceled = rt.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let heard = one_shot.let_go.lock().unwrap().clone();
    assert_eq!(heard, [(id, Value::Null)], "its run heard the cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_of_forever_parks_and_a_cancel_ends_it() {
    let poller = Poller::new("poller", true, Duration::MAX);
    let rt = start(20, &poller, None).await;
    let id = poll(&rt, &poller).await;
    parked(&rt, &id).await;
    let canceled = rt.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_wakes_a_parked_idle_task_and_it_parks_again_once_left_alone() {
    let poller = Poller::new("poller", true, Duration::from_secs(3600));
    let rt = start(20, &poller, None).await;
    let id = poll(&rt, &poller).await;
    parked(&rt, &id).await;
    assert_eq!(poller.runs(), 1);
    let mut events = rt.subscribe(&id, 0, Access::Any).await.unwrap();
    let follower = tokio::spawn(async move { while events.next().await.is_some() {} });
    // Woken: its run starts again, and stays while someone follows the task.
    runs_reach(&poller, 2).await;
    assert_eq!(rt.live_tasks(), 1);
    follower.abort();
    parked(&rt, &id).await;
    // Each run went on from the last one's checkpoint (a run that parked before the
    // subscriber came is woken again by it).
    assert_eq!(poller.looks(), poller.runs());
    let task = rt.get(&id, None, Access::Any).await.unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    assert!(task.status.message.is_none(), "a wake adds no note");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_of_a_parked_idle_task_is_heard_once() {
    let poller = Poller::new("poller", true, Duration::from_secs(3600));
    let rt = start(20, &poller, None).await;
    let id = poll(&rt, &poller).await;
    parked(&rt, &id).await;
    let canceled = rt.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // The cancel woke it with no run: `canceled_at_rest` tells the skill, with the
    // checkpoint the parked run left.
    eventually(
        || "the skill did not hear the cancel".into(),
        || !poller.let_go.lock().unwrap().is_empty(),
    )
    .await;
    assert_eq!(*poller.let_go.lock().unwrap(), [(id, json!({"looks": 1}))]);
    assert_eq!(poller.runs(), 1, "the cancel started no run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_of_a_task_parked_waiting_for_input_tells_the_skill_its_checkpoint() {
    let poller = Poller::new("poller", true, Duration::from_secs(3600));
    let rt = start(20, &poller, None).await;
    let id = submit_to(&rt, &poller, "ask").await;
    wait_for_state(&rt, &id, TaskState::InputRequired).await;
    parked(&rt, &id).await;
    let canceled = rt.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    eventually(
        || "canceled_at_rest was not called".into(),
        || !poller.let_go.lock().unwrap().is_empty(),
    )
    .await;
    assert_eq!(*poller.let_go.lock().unwrap(), [(id, json!({"looks": 0}))]);
    assert_eq!(poller.runs(), 1, "the cancel started no run");
}

/// A runtime on the sled store in `dir` with both skills.
async fn start_on_sled(dir: &std::path::Path, skills: [&Poller; 2]) -> RuntimeHandle {
    let mut config = RuntimeConfig::default();
    config.park_after_ms = 20;
    let builder = Runtime::builder()
        .config(config)
        .store(open_sled(dir).await);
    let builder = skills.into_iter().fold(builder, |b, s| b.skill(s.clone()));
    builder.start().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_parked_idle_across_a_restart_stays_parked_until_its_wait_ends() {
    let dir = tempfile::tempdir().unwrap();
    let later = Poller::new("later", true, Duration::from_secs(3600));
    let soon = Poller::new("soon", true, Duration::from_secs(2));
    let rt = start_on_sled(dir.path(), [&later, &soon]).await;
    let later_id = poll(&rt, &later).await;
    let soon_id = poll(&rt, &soon).await;
    parked(&rt, &later_id).await;
    assert_eq!(rt.presence(&soon_id).await, Presence::Resting);
    rt.shutdown(Duration::from_secs(5)).await;
    drop(rt);
    soon.ready.store(true, Ordering::SeqCst);

    let rt = start_on_sled(dir.path(), [&later, &soon]).await;
    let report = rt.recovery_report();
    assert_eq!((report.idle, report.resumed), (2, 0), "{report:?}");
    // The shorter wait ends: its task wakes as it would have with no restart between
    // (nothing else wakes it: no subscriber, no message), and its run goes on from its
    // checkpoint.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let done = loop {
        let task = rt.get(&soon_id, None, Access::Any).await.unwrap();
        if task.status.state == TaskState::Completed {
            break task;
        }
        assert!(tokio::time::Instant::now() < deadline, "not woken in time");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(status_text(&done), "ready");
    assert_eq!((soon.runs(), soon.looks()), (2, 2));
    assert_eq!(
        statuses(&rt, &soon_id).await,
        [
            (TaskState::Working, None),
            (TaskState::Completed, Some("ready".into())),
        ],
        "no note of a restart"
    );
    // The longer one still waits, with no actor and no run started again.
    assert_eq!(later.runs(), 1);
    assert_eq!(rt.presence(&later_id).await, Presence::Resting);
    let canceled = rt.cancel(&later_id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    eventually(
        || "the skill did not hear of the cancel".into(),
        || !later.let_go.lock().unwrap().is_empty(),
    )
    .await;
    assert_eq!(
        *later.let_go.lock().unwrap(),
        [(later_id, json!({"looks": 1}))]
    );
    assert_eq!(later.runs(), 1, "the cancel started no run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_the_skill_refuses_wakes_a_parked_idle_task_and_is_refused() {
    let poller = Poller::new("poller", true, Duration::from_secs(3600));
    let rt = start(20, &poller, None).await;
    let id = poll(&rt, &poller).await;
    parked(&rt, &id).await;
    // The skill takes no messages while it works: the woken task refuses it as the
    // live one would, and the wake runs the skill again.
    let mut follow_up = message("and this?", Value::Null);
    follow_up.task_id = Some(id.clone());
    let refused = rt.submit(SubmitRequest::new(follow_up)).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("refuses messages while it works"),
        "unexpected refusal: {refused}"
    );
    runs_reach(&poller, 2).await;
    parked(&rt, &id).await;
    assert_eq!(
        poller.looks(),
        poller.runs(),
        "each run went on from its checkpoint"
    );
    let canceled = rt.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
}
