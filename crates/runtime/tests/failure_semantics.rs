//! The runtime's promises under failure, cancel, follow-ups and limits.

use fundi_runtime::Access;
use std::collections::HashMap;

use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    ContextId, EventStream, Runtime, RuntimeConfig, RuntimeError, RuntimeHandle, SubmitRequest,
    TaskEventKind, TaskId, TaskState,
};
use futures::StreamExt;
use serde_json::{Value, json};

fn config() -> RuntimeConfig {
    let mut runtime_config = RuntimeConfig::default();
    runtime_config.cancel_grace_ms = 200;
    runtime_config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_runs_through_an_ordered_gap_free_event_log() {
    let skill = Scripted::new("s", true);
    let rt = Runtime::builder().skill(skill).start().await.unwrap();
    let task = submit(&rt, "hi", json!({"steps": 3})).await;
    assert_eq!(task.status.state, TaskState::Submitted);
    assert_eq!(task.history.len(), 1);
    assert_eq!(task.history[0].task_id.as_ref(), Some(&task.id));

    let events = collect_events(&rt, &task.id, 0).await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    assert!(matches!(events[0].kind, TaskEventKind::Created(_)));
    let states: Vec<TaskState> = events
        .iter()
        .filter_map(|e| e.status())
        .map(|s| s.state)
        .collect();
    assert_eq!(
        states,
        [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Working,
            TaskState::Working,
            TaskState::Working,
            TaskState::Completed
        ]
    );
    // Resuming from the middle gives exactly the rest.
    let tail = collect_events(&rt, &task.id, 3).await;
    assert_eq!(tail, events[3..]);

    let done = rt.get(&task.id, None, Access::Any).await.unwrap();
    assert_eq!(status_text(&done), "done: hi");
    assert_eq!(done.history.len(), 2, "user message and final reply");
    assert_eq!(
        rt.get(&task.id, Some(1), Access::Any)
            .await
            .unwrap()
            .history
            .len(),
        1
    );
    assert_eq!(
        rt.get(&task.id, Some(0), Access::Any)
            .await
            .unwrap()
            .history
            .len(),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_skill_fails_its_task_only() {
    let skill = Scripted::new("s", true);
    let rt = Runtime::builder()
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    let bystander = submit(&rt, "bystander", json!({"gate": true})).await;
    wait_for_state(&rt, &bystander.id, TaskState::Working).await;

    let doomed = submit(&rt, "doomed", json!({"panic": "kaboom in the skill"})).await;
    let failed = wait_for_state(&rt, &doomed.id, TaskState::Failed).await;
    assert_eq!(status_text(&failed), "skill panicked: kaboom in the skill");

    // The other task is still running and still finishes normally.
    assert_eq!(
        rt.get(&bystander.id, None, Access::Any)
            .await
            .unwrap()
            .status
            .state,
        TaskState::Working
    );
    skill.gate.add_permits(1);
    let done = wait_for_state(&rt, &bystander.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "done: bystander");
    // And the runtime still takes new work.
    let after = submit(&rt, "after", Value::Null).await;
    wait_for_state(&rt, &after.id, TaskState::Completed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skill_errors_fail_and_refusals_reject_with_their_text() {
    let rt = Runtime::builder()
        .skill(Scripted::new("s", true))
        .start()
        .await
        .unwrap();
    let t = submit(&rt, "x", json!({"fail": "upstream said 503"})).await;
    let t = wait_for_state(&rt, &t.id, TaskState::Failed).await;
    assert_eq!(status_text(&t), "upstream said 503");
    let t = submit(&rt, "x", json!({"reject": "not my job"})).await;
    let t = wait_for_state(&rt, &t.id, TaskState::Rejected).await;
    assert_eq!(status_text(&t), "not my job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_running_tasks_canceled_even_when_the_skill_ignores_it() {
    let rt = Runtime::builder()
        .skill(Scripted::new("s", true))
        .config(config())
        .start()
        .await
        .unwrap();

    let polite = submit(&rt, "polite", json!({"gate": true})).await;
    wait_for_state(&rt, &polite.id, TaskState::Working).await;
    let canceled = rt.cancel(&polite.id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(status_text(&canceled), "canceled by request");

    let deaf = submit(&rt, "deaf", json!({"ignoreCancel": true})).await;
    wait_for_state(&rt, &deaf.id, TaskState::Working).await;
    let canceled = rt.cancel(&deaf.id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert!(
        status_text(&canceled).contains("aborted"),
        "{}",
        status_text(&canceled)
    );
    assert_eq!(
        rt.get(&deaf.id, None, Access::Any)
            .await
            .unwrap()
            .status
            .state,
        TaskState::Canceled
    );

    // Canceling a terminal task is refused, naming the state.
    match rt.cancel(&deaf.id, Access::Any).await {
        Err(RuntimeError::NotCancelable { state, .. }) => assert_eq!(state, TaskState::Canceled),
        other => panic!("{other:?}"),
    }
    let done = submit(&rt, "quick", Value::Null).await;
    wait_for_state(&rt, &done.id, TaskState::Completed).await;
    assert!(matches!(
        rt.cancel(&done.id, Access::Any).await,
        Err(RuntimeError::NotCancelable {
            state: TaskState::Completed,
            ..
        })
    ));
    assert!(matches!(
        rt.cancel(&TaskId::from("no-such-task"), Access::Any).await,
        Err(RuntimeError::TaskNotFound(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_resolves_with_the_users_next_message() {
    let rt = Runtime::builder()
        .skill(Scripted::new("s", true))
        .start()
        .await
        .unwrap();
    let task = submit(&rt, "start", json!({"ask": true})).await;
    let waiting = wait_for_state(&rt, &task.id, TaskState::InputRequired).await;
    assert_eq!(status_text(&waiting), "more?");

    // A follow-up with the wrong context is refused.
    let mut wrong = message("answer", Value::Null);
    wrong.task_id = Some(task.id.clone());
    wrong.context_id = Some(ContextId::from("another-context"));
    assert!(matches!(
        rt.submit(SubmitRequest::new(wrong)).await,
        Err(RuntimeError::ContextMismatch { .. })
    ));

    let mut answer = message("the answer", Value::Null);
    answer.task_id = Some(task.id.clone());
    let accepted = rt.submit(SubmitRequest::new(answer)).await.unwrap().task;
    assert_eq!(accepted.status.state, TaskState::Working);
    let done = wait_for_state(&rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "done: the answer");
    let texts: Vec<String> = done.history.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["start", "more?", "the answer", "done: the answer"]);

    // Follow-ups to a terminal task are refused with the state named.
    let mut late = message("too late", Value::Null);
    late.task_id = Some(task.id.clone());
    match rt.submit(SubmitRequest::new(late)).await {
        Err(e @ RuntimeError::TaskTerminal { .. }) => {
            assert!(e.to_string().contains("TASK_STATE_COMPLETED"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_ups_to_working_tasks_and_unknown_tasks_are_refused() {
    let skill = Scripted::new("s", true);
    let rt = Runtime::builder()
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    let task = submit(&rt, "busy", json!({"gate": true})).await;
    wait_for_state(&rt, &task.id, TaskState::Working).await;
    let mut extra = message("extra", Value::Null);
    extra.task_id = Some(task.id.clone());
    assert!(matches!(
        rt.submit(SubmitRequest::new(extra.clone())).await,
        Err(RuntimeError::NotAcceptingInput {
            state: TaskState::Working,
            ..
        })
    ));
    extra.task_id = Some(TaskId::from("nope"));
    assert!(matches!(
        rt.submit(SubmitRequest::new(extra)).await,
        Err(RuntimeError::TaskNotFound(_))
    ));
    skill.gate.add_permits(1);
    wait_for_state(&rt, &task.id, TaskState::Completed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_limit_keeps_extra_tasks_submitted_and_starts_them_in_order() {
    let skill = Scripted::new("s", true);
    let rt = Runtime::builder()
        .skill(skill.clone())
        .config({
            let mut runtime_config = config();
            runtime_config.skill_concurrency = HashMap::from([("s".into(), 1)]);
            runtime_config
        })
        .start()
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for name in ["first", "second", "third", "fourth"] {
        tasks.push(submit(&rt, name, json!({"gate": true})).await);
    }
    wait_for_state(&rt, &tasks[0].id, TaskState::Working).await;
    for waiting in &tasks[1..] {
        let t = rt.get(&waiting.id, None, Access::Any).await.unwrap();
        assert_eq!(
            t.status.state,
            TaskState::Submitted,
            "{}",
            t.history[0].text()
        );
    }
    // Canceling a waiting task frees nothing and removes it from the queue.
    let canceled = rt.cancel(&tasks[2].id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);

    for i in [0, 1, 3] {
        wait_for_state(&rt, &tasks[i].id, TaskState::Working).await;
        skill.gate.add_permits(1);
        wait_for_state(&rt, &tasks[i].id, TaskState::Completed).await;
    }
    assert_eq!(skill.started(), ["first", "second", "fourth"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_for_input_holds_no_slot() {
    let skill = Scripted::new("s", true);
    let rt = Runtime::builder()
        .skill(skill.clone())
        .config({
            let mut runtime_config = config();
            runtime_config.skill_concurrency = HashMap::from([("s".into(), 1)]);
            runtime_config
        })
        .start()
        .await
        .unwrap();
    let asking = submit(&rt, "asking", json!({"ask": true})).await;
    wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    // With one slot, another task still runs while the first waits for a person.
    let busy = submit(&rt, "busy", json!({"gate": true})).await;
    wait_for_state(&rt, &busy.id, TaskState::Working).await;
    // The answer arrives while the slot is taken: the task is working again, and its
    // run gets the answer when the slot frees.
    let answer = fundi_runtime::SubmitRequest::new(fundi_runtime::Message {
        task_id: Some(asking.id.clone()),
        ..message("the answer", serde_json::Value::Null)
    });
    let answered = rt.submit(answer).await.unwrap();
    assert_eq!(answered.task.status.state, TaskState::Working);
    assert_eq!(
        rt.get(&asking.id, None, Access::Any)
            .await
            .unwrap()
            .status
            .state,
        TaskState::Working
    );
    skill.gate.add_permits(1);
    wait_for_state(&rt, &busy.id, TaskState::Completed).await;
    let done = wait_for_state(&rt, &asking.id, TaskState::Completed).await;
    assert_eq!(
        done.status.message.as_ref().unwrap().text(),
        "done: the answer",
        "{done:?}"
    );
}

/// A runtime whose subscribers are let go two events behind.
async fn small_buffer_runtime() -> (Scripted, RuntimeHandle) {
    let skill = Scripted::new("s", true);
    let rt = Runtime::builder()
        .skill(skill.clone())
        .config({
            let mut runtime_config = config();
            runtime_config.subscriber_buffer = 2;
            runtime_config
        })
        .start()
        .await
        .unwrap();
    (skill, rt)
}

/// Reads the rest of a stream that stopped reading after event 1: every later event
/// comes once, in order, up to the terminal one.
async fn assert_the_rest_arrives_whole(events: EventStream) {
    let rest: Vec<_> = events.map(|e| e.unwrap()).collect().await;
    let seqs: Vec<u64> = rest.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (2..=rest.len() as u64 + 1).collect::<Vec<_>>());
    assert!(rest.len() > 200, "{} events", rest.len());
    assert!(rest.last().unwrap().is_terminal());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_subscriber_never_blocks_the_task_and_misses_nothing() {
    let (skill, rt) = small_buffer_runtime().await;
    let task = submit(&rt, "many", json!({"steps": 200, "gate": true})).await;
    wait_for_state(&rt, &task.id, TaskState::Working).await;
    let mut events = rt.subscribe(&task.id, 0, Access::Any).await.unwrap();
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.seq, 1);

    // The task runs to the end while this subscriber reads nothing.
    skill.gate.add_permits(1);
    wait_for_state(&rt, &task.id, TaskState::Completed).await;
    assert_the_rest_arrives_whole(events).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_follower_of_its_own_submission_misses_nothing() {
    let (skill, rt) = small_buffer_runtime().await;
    let submission = SubmitRequest::new(message("many", json!({"steps": 200, "gate": true})));
    let following = rt.submit(submission).follow().await.unwrap();
    let (accepted, events) = (following.accepted, following.events);
    assert_eq!(accepted.seq, 1);

    // The stream attached as the actor started falls behind at once and is let go;
    // it catches up from the store.
    skill.gate.add_permits(1);
    wait_for_state(&rt, &accepted.task.id, TaskState::Completed).await;
    assert_the_rest_arrives_whole(events).await;
}

#[tokio::test]
async fn submissions_are_validated_with_clear_errors() {
    let rt = Runtime::builder()
        .skill(Scripted::new("a", true))
        .skill(Scripted::new("b", true))
        .start()
        .await
        .unwrap();
    let no_skill = rt
        .submit(SubmitRequest::new(message("x", Value::Null)))
        .await;
    match no_skill {
        Err(e @ RuntimeError::NoSkillSelected { .. }) => {
            assert!(e.to_string().contains("[\"a\", \"b\"]"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let mut unknown = SubmitRequest::new(message("x", Value::Null));
    unknown.skill = Some("zzz".into());
    assert!(
        matches!(rt.submit(unknown).await, Err(RuntimeError::UnknownSkill { id, available }) if id == "zzz" && !available.is_empty())
    );

    let mut empty = message("x", Value::Null);
    empty.parts.clear();
    match rt.submit(SubmitRequest::new(empty)).await {
        Err(RuntimeError::InvalidField(invalid)) => assert_eq!(invalid.field, "message.parts"),
        other => panic!("{other:?}"),
    }
    // Nested past the limit: refused with the field's path, nothing created.
    let deep = (0..=fundi_runtime::model::limits::MAX_VALUE_DEPTH)
        .fold(json!(1), |inner, _| json!([inner]));
    match rt.submit(SubmitRequest::new(message("x", deep))).await {
        Err(RuntimeError::InvalidField(invalid)) => {
            assert_eq!(invalid.field, "message.parts[1].data")
        }
        other => panic!("{other:?}"),
    }
    let mut long_id = message("x", Value::Null);
    long_id.message_id = "m".repeat(1 << 20);
    match rt.submit(SubmitRequest::new(long_id)).await {
        Err(RuntimeError::InvalidField(invalid)) => {
            assert_eq!(invalid.field, "message.messageId")
        }
        other => panic!("{other:?}"),
    }
    let mut by_metadata = message("x", Value::Null);
    by_metadata.metadata = json!({"skill": "b"}).as_object().cloned();
    let task = rt
        .submit(SubmitRequest::new(by_metadata))
        .await
        .unwrap()
        .task;
    assert_eq!(task.status.state, TaskState::Submitted);

    let mut bad_context = message("x", Value::Null);
    bad_context.context_id = Some(ContextId::from("a\u{0}b"));
    let mut req = SubmitRequest::new(bad_context);
    req.skill = Some("a".into());
    assert!(matches!(
        rt.submit(req).await,
        Err(RuntimeError::InvalidInput(_))
    ));
}

#[tokio::test]
async fn other_owners_tasks_are_not_found() {
    let rt = Runtime::builder()
        .skill(Scripted::new("s", true))
        .start()
        .await
        .unwrap();
    let mut req = SubmitRequest::new(message("mine", Value::Null));
    req.owner = Some("alice".into());
    let task = rt.submit(req).await.unwrap().task;
    assert!(rt.get(&task.id, None, Access::Owner("alice")).await.is_ok());
    assert!(matches!(
        rt.get(&task.id, None, Access::Owner("bob")).await,
        Err(RuntimeError::TaskNotFound(_))
    ));
    assert!(matches!(
        rt.cancel(&task.id, Access::Owner("bob")).await,
        Err(RuntimeError::TaskNotFound(_))
    ));
    assert!(
        rt.subscribe(&task.id, 0, Access::Owner("bob"))
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_busy_tasks_finish_but_does_not_wait_for_tasks_awaiting_input() {
    let skill = Scripted::new("s", true);
    let rt = Runtime::builder()
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    let asking = submit(&rt, "ask", json!({"ask": true})).await;
    wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    let busy = submit(&rt, "busy", json!({"gate": true})).await;
    wait_for_state(&rt, &busy.id, TaskState::Working).await;

    // A long grace: shutdown returns when the busy task is done, not when it runs out.
    let stopping = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.shutdown(std::time::Duration::from_secs(3600)).await })
    };
    // New work is refused while stopping.
    let refused = loop {
        match rt
            .submit(SubmitRequest::new(message("late", Value::Null)))
            .await
        {
            Err(RuntimeError::Unavailable(text)) => break text,
            Ok(_) => tokio::task::yield_now().await,
            Err(other) => panic!("{other:?}"),
        }
    };
    assert!(refused.contains("shutting down"), "{refused}");
    skill.gate.add_permits(1);
    tokio::time::timeout(DEADLINE, stopping)
        .await
        .expect("shutdown waited for the task that only waits for input")
        .unwrap();
    // The busy task finished; the waiting one is left as it was, for recovery.
    let store_view = |id| {
        let rt = rt.clone();
        async move { rt.get(&id, None, Access::Any).await.unwrap().status.state }
    };
    assert_eq!(store_view(busy.id.clone()).await, TaskState::Completed);
    assert_eq!(
        store_view(asking.id.clone()).await,
        TaskState::InputRequired
    );
}
