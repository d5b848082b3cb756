//! Messages to a task whose skill's card says `interrupt`: each stored, then the run
//! stops and a new one starts from the message, without the old checkpoint; a run deaf
//! to the stop is aborted after the grace period; a cancel during an interrupt wins.

#[path = "support/listener.rs"]
mod listener;

use std::time::Duration;

use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Access, MessagePolicy, Runtime, RuntimeConfig, RuntimeError, RuntimeHandle, SubmitRequest,
    TaskState,
};
use serde_json::json;

use listener::*;

/// A runtime in memory that runs one task of `skill` at a time (a cancel's grace
/// period 300 ms, as `start`'s).
async fn one_run_at_a_time(skill: &Listener) -> RuntimeHandle {
    let mut config = RuntimeConfig::default();
    config.skill_concurrency = [(skill.id.into(), 1)].into();
    config.cancel_grace_ms = 300;
    Runtime::builder()
        .config(config)
        .skill(skill.clone())
        .start()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_interrupts_restarts_the_task_from_it_without_the_old_checkpoint() {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let node = start(&skill, None).await;
    let (rt, store) = (&node.0, &node.1);
    let task = begin(&node, &skill, "first", json!(null)).await;

    let acknowledged = tell(rt, &task.id, "second").await.unwrap();
    assert_eq!(acknowledged.status.state, TaskState::Working);
    let record = store.get(&task.id).await.unwrap().unwrap();
    let old = json!({"run": "first"});
    assert_ne!(
        record.checkpoint,
        Some(old),
        "the old run's checkpoint went with the message"
    );
    working(store.as_ref(), &task.id, &skill, 2).await;
    assert_eq!(
        skill.started()[1],
        Started {
            text: "second".into(),
            checkpoint: None,
            resumed: false
        }
    );
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "second + []");
    assert_eq!(user_texts(&done), ["first", "second"]);
    let notes = notes(rt, &task.id).await;
    assert!(
        notes.contains(
            &"working: interrupted by a new message: the skill starts again from it".into()
        ),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.starts_with("canceled")),
        "{notes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_task_waiting_for_a_slot_becomes_the_message_its_run_starts_from() {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let rt = one_run_at_a_time(&skill).await;
    let holder = rt.submit(SubmitRequest::new(message("holder", json!(null))));
    let holder = holder.await.unwrap().task;
    eventually(
        || "the holder did not start".into(),
        || skill.started().len() == 1,
    )
    .await;
    let waiting = rt.submit(SubmitRequest::new(message("first", json!(null))));
    let waiting = waiting.await.unwrap().task;
    tell(&rt, &waiting.id, "second").await.unwrap();

    skill.gate.add_permits(2);
    wait_for_state(&rt, &holder.id, TaskState::Completed).await;
    let done = wait_for_state(&rt, &waiting.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "second + []");
    let texts: Vec<String> = skill.started().into_iter().map(|s| s.text).collect();
    assert_eq!(
        texts,
        ["holder", "second"],
        "no run started from the first message"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_interrupts_a_run_whose_answer_waits_for_a_slot() {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let rt = one_run_at_a_time(&skill).await;
    let asking = message("asking", json!({"ask": true, "rounds": 0}));
    let asking = rt.submit(SubmitRequest::new(asking)).await.unwrap().task;
    wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    // The asking task's slot goes to another task; its answer then waits for a slot.
    let holder = rt.submit(SubmitRequest::new(message("holder", json!(null))));
    let holder = holder.await.unwrap().task;
    eventually(
        || "the holder did not start".into(),
        || skill.started().len() == 2,
    )
    .await;
    let answered = tell(&rt, &asking.id, "answer").await.unwrap();
    assert_eq!(answered.status.state, TaskState::Working);
    tell(&rt, &asking.id, "instead").await.unwrap();

    skill.gate.add_permits(1);
    wait_for_state(&rt, &holder.id, TaskState::Completed).await;
    // The new run starts from the message (and, as the task's first message says, asks).
    eventually(
        || format!("runs: {:?}", skill.started()),
        || skill.started().len() == 3,
    )
    .await;
    assert_eq!(skill.started()[2].text, "instead");
    let asked = wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    assert_eq!(user_texts(&asked), ["asking", "answer", "instead"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_deaf_to_the_interrupt_is_aborted_after_the_grace_period_and_the_last_message_starts_the_next()
 {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "first", json!({"stubborn": true})).await;
    tell(rt, &task.id, "second").await.unwrap();
    tell(rt, &task.id, "third").await.unwrap();
    eventually(
        || "no run started from the last message".into(),
        || skill.started().last().is_some_and(|s| s.text == "third"),
    )
    .await;
    // The new run is as deaf (its task's first message says so): a cancel ends it.
    let canceled = rt.cancel(&task.id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(user_texts(&canceled), ["first", "second", "third"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_an_interrupt_wins_and_messages_then_are_refused() {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "first", json!({"stubborn": true})).await;
    tell(rt, &task.id, "second").await.unwrap();
    let cancel = {
        let (rt, id) = (rt.clone(), task.id.clone());
        tokio::spawn(async move { rt.cancel(&id, Access::Any).await })
    };
    // The cancel waits out the stubborn run's grace period; a message meanwhile is
    // refused, once the cancel has reached the task.
    let refused = loop {
        match tell(rt, &task.id, "third").await {
            Err(error) => break error,
            Ok(_) => assert!(!cancel.is_finished(), "the cancel ended without refusing"),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(
        matches!(
            refused,
            RuntimeError::BeingCanceled { .. } | RuntimeError::TaskTerminal { .. }
        ),
        "{refused}"
    );
    let canceled = cancel.await.unwrap().unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(skill.started().len(), 1, "no run followed the cancel");
}
