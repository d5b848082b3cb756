//! Messages to a task whose run works, as its skill's card says: queued for the run
//! (`enqueue`) or refused (`reject`); stored before they are acknowledged, and after a
//! restart handed to the resumed run exactly when it had not taken them. Messages that
//! restart the run (`interrupt`): `while_working_interrupts.rs`.

#[path = "support/listener.rs"]
mod listener;

use fundi_runtime::testing::scripted::*;
use fundi_runtime::{MAX_QUEUED_MESSAGES, Message, MessagePolicy, Role, RuntimeError, TaskState};
use serde_json::json;

use listener::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueued_messages_are_stored_at_once_and_taken_by_the_run_in_order() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!(null)).await;

    let acknowledged = tell(rt, &task.id, "one").await.unwrap();
    assert_eq!(acknowledged.status.state, TaskState::Working);
    assert_eq!(
        user_texts(&acknowledged),
        ["start", "one"],
        "in the history at once"
    );
    tell(rt, &task.id, "two").await.unwrap();

    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "start + [one, two]");
    assert_eq!(
        skill.started().len(),
        1,
        "the run took them; no run followed"
    );
    let notes = notes(rt, &task.id).await;
    let expected = [
        "working: took one",
        "working: took two",
        "completed: start + [one, two]",
    ];
    assert!(notes.ends_with(&expected.map(String::from)), "{notes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_messages_are_each_taken_once_in_the_order_they_were_stored() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!(null)).await;

    let sends: Vec<_> = (0..24)
        .map(|i| {
            let (rt, id) = (rt.clone(), task.id.clone());
            tokio::spawn(async move { tell(&rt, &id, &format!("m{i}")).await.map(drop) })
        })
        .collect();
    for send in sends {
        send.await.unwrap().unwrap();
    }
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    let stored: Vec<String> = user_texts(&done).into_iter().skip(1).collect();
    assert_eq!(
        stored.len(),
        24,
        "every acknowledged message is in the history"
    );
    let expected = format!("start + [{}]", stored.join(", "));
    assert_eq!(status_text(&done), expected, "taken once each, as stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_beyond_the_queues_bound_is_refused_until_the_run_takes_some() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!({"rounds": 2})).await;
    for i in 0..MAX_QUEUED_MESSAGES {
        tell(rt, &task.id, &format!("m{i}")).await.unwrap();
    }
    let refused = tell(rt, &task.id, "one too many").await.unwrap_err();
    assert!(
        matches!(refused, RuntimeError::QueueFull { .. }),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .contains("send more once it has taken some"),
        "{refused}"
    );
    skill.gate.add_permits(1);
    wait_for_note(rt, &task.id, &format!("took m{}", MAX_QUEUED_MESSAGES - 1)).await;
    tell(rt, &task.id, "now").await.unwrap();
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert!(
        status_text(&done).ends_with(", now]"),
        "{}",
        status_text(&done)
    );
    assert!(
        !user_texts(&done).contains(&"one too many".to_owned()),
        "nothing stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_a_message_wakes_when_one_arrives() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!({"wait": true})).await;
    skill.gate.add_permits(1);
    tell(rt, &task.id, "late").await.unwrap();
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "start + [late]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_message_answers_the_runs_next_request_for_input_at_once() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let data = json!({"deaf": true, "ask": true});
    let task = begin(&node, &skill, "start", data).await;
    tell(rt, &task.id, "early").await.unwrap();
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "start + [answer early]");
    let notes = notes(rt, &task.id).await;
    let asked = notes.iter().position(|n| n == "input-required: more?");
    let asked = asked.unwrap_or_else(|| panic!("the prompt is told all the same: {notes:?}"));
    assert_eq!(notes[asked + 1], "working: ", "{notes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_returns_with_messages_waiting_is_followed_by_a_run_for_each() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!({"deaf": true})).await;
    tell(rt, &task.id, "a").await.unwrap();
    tell(rt, &task.id, "b").await.unwrap();
    skill.gate.add_permits(3);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "b + []");
    let runs: Vec<_> = skill
        .started()
        .into_iter()
        .map(|s| (s.text, s.checkpoint, s.resumed))
        .collect();
    assert_eq!(
        runs,
        [
            ("start".into(), None, false),
            ("a".into(), None, false),
            ("b".into(), None, false)
        ],
        "each run starts from its message, without the checkpoint of the run before"
    );
    let notes = notes(rt, &task.id).await;
    let expected = [
        "working: start + []",
        "working: a + []",
        "completed: b + []",
    ];
    assert!(notes.ends_with(&expected.map(String::from)), "{notes:?}");
    let replies: Vec<String> = done
        .history
        .iter()
        .filter(|m| m.role == Role::Agent)
        .map(Message::text)
        .collect();
    assert_eq!(
        replies,
        ["start + []", "a + []", "b + []"],
        "every reply is kept in the history"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_that_rejects_refuses_a_message_while_it_works_and_stores_nothing() {
    let skill = Listener::new("strict", MessagePolicy::Reject);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "first", json!(null)).await;
    let refused = tell(rt, &task.id, "second").await.unwrap_err();
    assert!(
        matches!(refused, RuntimeError::NotAcceptingInput { .. }),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .contains("refuses messages while it works"),
        "{refused}"
    );
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(user_texts(&done), ["first"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_resumed_run_gets_exactly_the_messages_it_had_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let skill = Listener::new("listener", MessagePolicy::Enqueue);
    let node = start(&skill, Some(dir.path())).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!({"rounds": 2})).await;
    tell(rt, &task.id, "a").await.unwrap();
    skill.gate.add_permits(1);
    wait_for_note(rt, &task.id, "took a").await;
    tell(rt, &task.id, "b").await.unwrap();

    let (node, skill) = restart(node, dir.path(), &task.id, "start").await;
    skill.gate.add_permits(2);
    let done = wait_for_state(&node.0, &task.id, TaskState::Completed).await;
    let taken = status_text(&done);
    assert_eq!(taken, "start + [b]", "a was taken before the restart");
    assert_eq!(user_texts(&done), ["start", "a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_an_interrupted_task_resumes_the_run_its_message_started() {
    let dir = tempfile::tempdir().unwrap();
    let skill = Listener::new("listener", MessagePolicy::Interrupt);
    let node = start(&skill, Some(dir.path())).await;
    let task = begin(&node, &skill, "first", json!(null)).await;
    tell(&node.0, &task.id, "second").await.unwrap();
    working(node.1.as_ref(), &task.id, &skill, 2).await;

    let (node, skill) = restart(node, dir.path(), &task.id, "second").await;
    skill.gate.add_permits(1);
    let done = wait_for_state(&node.0, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "second + []");
}
