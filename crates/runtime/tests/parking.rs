//! Parking: a task that waits for a person gives up its actor after
//! `runtime.park-after-ms` with nothing happening, and whatever reaches it next (a
//! message, a cancel, a decision, a subscriber) wakes it from the store, with the same
//! answers and the same events as a task that kept its actor; across a restart too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fundi_runtime::approval::{Decision, Verdict};
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Access, ApprovalMode, Presence, Runtime, RuntimeConfig, RuntimeHandle, SubmitRequest,
    TaskEvent, TaskEventKind, TaskId, TaskState,
};
use fundi_store_sled::testing::open_sled;
use futures::StreamExt;
use serde_json::{Value, json};

fn parking_after(ms: u64) -> RuntimeConfig {
    let mut config = RuntimeConfig::default();
    config.park_after_ms = ms;
    config
}

async fn start(config: RuntimeConfig, dir: Option<&std::path::Path>) -> RuntimeHandle {
    let builder = Runtime::builder()
        .config(config)
        .skill(Scripted::new("resumable", true))
        .skill(Scripted::new("one-shot", false));
    let builder = match dir {
        Some(dir) => builder.store(open_sled(dir).await),
        None => builder,
    };
    builder.start().await.unwrap()
}

async fn ask(rt: &RuntimeHandle, skill: &str) -> TaskId {
    let request = SubmitRequest::new(message("question", json!({"ask": true})));
    let task = rt
        .submit(request.skill(Some(skill.into())))
        .await
        .unwrap()
        .task;
    wait_for_state(rt, &task.id, TaskState::InputRequired).await;
    task.id
}

fn answer(task: &TaskId, text: &str) -> SubmitRequest {
    let mut answer = message(text, Value::Null);
    answer.task_id = Some(task.clone());
    SubmitRequest::new(answer)
}

/// Waits until `live` tasks have an actor.
async fn live_tasks_fall_to(rt: &RuntimeHandle, live: usize) {
    eventually(
        || format!("{} tasks have an actor, not {live}", rt.live_tasks()),
        || rt.live_tasks() == live,
    )
    .await;
}

/// What a watcher sees of each event: its number, kind, state and text.
fn seen(events: &[TaskEvent]) -> Vec<(u64, String)> {
    let shape = |kind: &TaskEventKind| match kind {
        TaskEventKind::Status(status) => {
            let text = status.message.as_ref().map(|m| m.text());
            format!("status {:?} {text:?}", status.state)
        }
        TaskEventKind::Created(_) => "created".into(),
        other => format!("{other:?}").chars().take(40).collect(),
    };
    events.iter().map(|e| (e.seq, shape(&e.kind))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_task_answers_a_message_as_a_task_that_kept_its_actor() {
    let parking = start(parking_after(20), None).await;
    let keeping = start(parking_after(0), None).await;
    let parked = ask(&parking, "resumable").await;
    let kept = ask(&keeping, "resumable").await;
    // A one-shot skill's waiting run has no checkpoint to resume from: it stays.
    let one_shot = ask(&parking, "one-shot").await;
    live_tasks_fall_to(&parking, 1).await;
    assert_eq!(keeping.live_tasks(), 1);

    for (rt, id) in [
        (&parking, &parked),
        (&keeping, &kept),
        (&parking, &one_shot),
    ] {
        let accepted = rt.submit(answer(id, "yes")).await.unwrap().task;
        assert_eq!(accepted.status.state, TaskState::Working);
        let done = wait_for_state(rt, id, TaskState::Completed).await;
        assert_eq!(status_text(&done), "done: yes");
    }
    let parked_events = collect_events(&parking, &parked, 0).await;
    let kept_events = collect_events(&keeping, &kept, 0).await;
    assert_eq!(seen(&parked_events), seen(&kept_events));
    live_tasks_fall_to(&parking, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_wakes_a_parked_task_and_follows_it_to_its_end() {
    let rt = start(parking_after(20), None).await;
    let id = ask(&rt, "resumable").await;
    live_tasks_fall_to(&rt, 0).await;
    // From where it stands (read, which wakes nothing): the stream stays open for
    // what comes next.
    let asked = rt.snapshot(&id, None, Access::Any).await.unwrap();
    assert_eq!(rt.live_tasks(), 0);
    let mut events = rt.subscribe(&id, asked.seq, Access::Any).await.unwrap();
    let follow = tokio::spawn(async move {
        let mut states = Vec::new();
        while let Some(event) = events.next().await {
            if let Some(status) = event.unwrap().status() {
                states.push(status.state);
            }
        }
        states
    });
    live_tasks_fall_to(&rt, 1).await;
    rt.submit(answer(&id, "later")).await.unwrap();
    let states = tokio::time::timeout(DEADLINE, follow)
        .await
        .expect("the stream ended")
        .unwrap();
    assert_eq!(states, [TaskState::Working, TaskState::Completed]);
    assert_eq!(asked.task.status.state, TaskState::InputRequired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_lets_its_task_park_wakes_none_and_hears_of_the_wake() {
    let rt = start(parking_after(200), None).await;
    let woken = Arc::new(Mutex::new(Vec::new()));
    let told = woken.clone();
    rt.on_wake(Arc::new(move |id: &TaskId| {
        told.lock().unwrap().push(id.clone())
    }));
    let id = ask(&rt, "resumable").await;
    assert_eq!(rt.presence(&id).await, Presence::Here);
    // Watched while it rests: it parks all the same, and the watch ends with what
    // the store holds.
    let watch = rt.watch(&id, 0, Access::Any).await.unwrap();
    let watched = tokio::time::timeout(DEADLINE, watch.map(|e| e.unwrap()).collect::<Vec<_>>())
        .await
        .expect("the watch kept the task from parking");
    live_tasks_fall_to(&rt, 0).await;
    assert_eq!(rt.presence(&id).await, Presence::Resting);
    let asked = rt.snapshot(&id, None, Access::Any).await.unwrap();
    assert_eq!(watched.last().unwrap().seq, asked.seq);
    assert_eq!(
        watched.last().unwrap().status().unwrap().state,
        TaskState::InputRequired
    );

    // Watching a parked task wakes nothing.
    let watch = rt.watch(&id, asked.seq, Access::Any).await.unwrap();
    let nothing = tokio::time::timeout(DEADLINE, watch.collect::<Vec<_>>()).await;
    assert!(
        nothing
            .expect("the watch of a parked task did not end")
            .is_empty()
    );
    assert_eq!(rt.live_tasks(), 0);
    // A new task's first actor is no wake.
    assert!(woken.lock().unwrap().is_empty());

    rt.submit(answer(&id, "yes")).await.unwrap();
    wait_for_state(&rt, &id, TaskState::Completed).await;
    assert_eq!(*woken.lock().unwrap(), [id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_racing_a_park_are_answered_by_the_woken_task() {
    // Parked as soon as it rests: each call races the park.
    let rt = start(parking_after(1), None).await;
    for round in 0..60 {
        let id = ask(&rt, "resumable").await;
        // Spread over the park's moment (a millisecond after the stream above let go):
        // some calls reach the actor as it parks.
        tokio::time::sleep(Duration::from_micros(50 * (round % 40))).await;
        match round % 2 {
            0 => {
                let canceled = rt.cancel(&id, Access::Any).await.unwrap();
                assert_eq!(canceled.status.state, TaskState::Canceled, "round {round}");
            }
            _ => {
                let text = format!("answer {round}");
                let accepted = rt.submit(answer(&id, &text)).await.unwrap().task;
                assert_eq!(accepted.status.state, TaskState::Working, "round {round}");
                let done = wait_for_state(&rt, &id, TaskState::Completed).await;
                assert_eq!(status_text(&done), format!("done: {text}"));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_parked_across_a_restart_wakes_with_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let rt = start(parking_after(20), Some(dir.path())).await;
    let id = ask(&rt, "resumable").await;
    live_tasks_fall_to(&rt, 0).await;
    rt.shutdown(Duration::from_secs(5)).await;
    drop(rt);

    let rt = start(parking_after(20), Some(dir.path())).await;
    assert_eq!(rt.recovery_report().waiting_for_input, 1);
    rt.submit(answer(&id, "after")).await.unwrap();
    let done = wait_for_state(&rt, &id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "done: after");
    let notes: Vec<String> = collect_events(&rt, &id, 0)
        .await
        .iter()
        .filter_map(|e| e.status()?.message.as_ref().map(|m| m.text()))
        .collect();
    // Woken at rest: the run goes on from the answer, with no restart announced.
    assert_eq!(notes, ["more?", "done: after"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_for_an_approver_parks_and_a_decision_wakes_it() {
    let rt = start(gated(parking_after(20)), None).await;
    // A blocking send: the task's actor answers it, then rests and parks.
    let request = SubmitRequest::new(message("gated", Value::Null));
    let waiting = rt.submit(request.skill(Some("resumable".into())));
    let task = waiting
        .wait()
        .await
        .unwrap()
        .outcome(DEADLINE)
        .await
        .unwrap()
        .task;
    live_tasks_fall_to(&rt, 0).await;
    assert_eq!(rt.approvals().await.unwrap().len(), 1);
    let decided = rt.decide(&task.id, approved()).await.unwrap();
    assert_eq!(decided.status.state, TaskState::Working);
    let done = wait_for_state(&rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "done: gated");
}

/// `config` with the resumable skill gated by an approval.
fn gated(mut config: RuntimeConfig) -> RuntimeConfig {
    config.approvals = HashMap::from([("resumable".to_owned(), ApprovalMode::Required)]);
    config
}

/// An approver's approval, unnarrowed.
fn approved() -> Decision {
    Decision {
        verdict: Verdict::Approve { narrowed: None },
        by: "approver".into(),
        client: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gated_tasks_nobody_follows_are_parked_from_the_start() {
    // Parking on (after a minute): no actor starts at all; parking off: one does.
    for (after, live) in [(60_000, 0), (0, 1)] {
        let rt = start(gated(parking_after(after)), None).await;
        let request = SubmitRequest::new(message("gated", Value::Null));
        let request = request.skill(Some("resumable".into()));
        let task = rt.submit(request).await.unwrap().task;
        assert_eq!(task.status.state, TaskState::Submitted);
        // A submission spawns any actor before it returns.
        live_tasks_fall_to(&rt, live).await;
        assert_eq!(rt.approvals().await.unwrap().len(), 1);
        rt.decide(&task.id, approved()).await.unwrap();
        let done = wait_for_state(&rt, &task.id, TaskState::Completed).await;
        assert_eq!(status_text(&done), "done: gated");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_arriving_while_a_message_wakes_a_parked_task_see_every_event_once() {
    let rt = start(parking_after(20), None).await;
    for round in 0..20 {
        let id = ask(&rt, "resumable").await;
        live_tasks_fall_to(&rt, 0).await;
        // Two subscribers and the answer race for the actor the wake builds.
        let follow = |after| {
            let (rt, id) = (rt.clone(), id.clone());
            tokio::spawn(async move { collect_events(&rt, &id, after).await })
        };
        let (early, late) = (follow(0), follow(1));
        let text = format!("answer {round}");
        let accepted = rt.submit(answer(&id, &text)).await.unwrap().task;
        assert_eq!(accepted.status.state, TaskState::Working, "round {round}");
        let (early, late) = (early.await.unwrap(), late.await.unwrap());
        let all = collect_events(&rt, &id, 0).await;
        let seqs = |events: &[TaskEvent]| events.iter().map(|e| e.seq).collect::<Vec<_>>();
        let every: Vec<u64> = (1..=all.len() as u64).collect();
        assert_eq!(seqs(&all), every, "round {round}: the stored log has a gap");
        assert_eq!(seen(&early), seen(&all), "round {round}: from the start");
        assert_eq!(
            seen(&late),
            seen(&all[1..]),
            "round {round}: after the first"
        );
        let done = all.last().and_then(|e| e.status()).map(|s| s.state);
        assert_eq!(done, Some(TaskState::Completed), "round {round}");
    }
}
