//! Idempotent submission: a message sent again (the same `messageId`, by the same
//! owner) gets the task it made or went into, never a second task nor a second
//! delivery; sequentially, concurrently, through every way of submitting, and across a
//! restart. Another owner's message with the same id is independent.

use std::future::IntoFuture;
use std::time::Duration;

use chrono::Utc;
use fundi_runtime::store::TaskStore;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::testing::store_contract::{created as created_event, record};
use fundi_runtime::{
    Message, Runtime, RuntimeConfig, RuntimeHandle, SubmitRequest, TaskId, TaskState,
};
use fundi_store_sled::testing::open_sled;
use serde_json::{Value, json};

/// A runtime with this skill and `config`, on a sled store in `dir` or in memory.
async fn start_with(
    skill: &Scripted,
    dir: Option<&std::path::Path>,
    config: RuntimeConfig,
) -> RuntimeHandle {
    let builder = Runtime::builder().skill(skill.clone()).config(config);
    let builder = match dir {
        Some(dir) => builder.store(open_sled(dir).await),
        None => builder,
    };
    builder.start().await.unwrap()
}

async fn start(skill: &Scripted, dir: Option<&std::path::Path>) -> RuntimeHandle {
    start_with(skill, dir, RuntimeConfig::default()).await
}

/// A request for `message` on behalf of `owner`.
fn from(owner: &str, message: &Message) -> SubmitRequest {
    let mut request = SubmitRequest::new(message.clone());
    request.owner = Some(owner.into());
    request
}

fn ask(text: &str) -> Message {
    message(text, json!({"ask": true}))
}

fn to_task(task: &TaskId, text: &str) -> Message {
    let mut message = message(text, Value::Null);
    message.task_id = Some(task.clone());
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_message_sent_again_gets_its_task_and_runs_nothing_twice() {
    let skill = Scripted::new("scripted", false);
    let rt = start(&skill, None).await;
    let first = ask("once");
    let task = rt.submit(from("ann", &first)).await.unwrap().task;
    let asked = wait_for_state(&rt, &task.id, TaskState::InputRequired).await;

    let again = rt.submit(from("ann", &first)).await.unwrap();
    assert_eq!(again.task.id, task.id, "the same task");
    assert_eq!(again.task.status.state, TaskState::InputRequired);
    assert_eq!(
        again.task.history.len(),
        asked.history.len(),
        "nothing added"
    );
    let followed = rt.submit(from("ann", &first)).follow().await.unwrap();
    assert_eq!(
        followed.accepted.task.id, task.id,
        "a stream attaches to it"
    );

    // Another owner's message with the same id is theirs alone.
    let bob = rt.submit(from("bob", &first)).await.unwrap().task;
    assert_ne!(bob.id, task.id);
    wait_for_state(&rt, &bob.id, TaskState::InputRequired).await;
    assert_eq!(skill.started(), ["once", "once"], "one run each");

    // The answer, sent twice: delivered once, the task as it stands the second time.
    let answer = to_task(&task.id, "yes");
    let waited = rt.submit(from("ann", &answer)).wait().await.unwrap();
    let done = waited.outcome(DEADLINE).await.unwrap().task;
    assert_eq!(status_text(&done), "done: yes");
    let again = rt.submit(from("ann", &answer)).await.unwrap().task;
    assert_eq!(
        again.status.state,
        TaskState::Completed,
        "not refused as ended"
    );
    assert_eq!(again.history.len(), done.history.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_sent_at_once_make_exactly_one_task_whichever_way_they_are_sent() {
    let skill = Scripted::new("scripted", false);
    let rt = start(&skill, None).await;
    let first = message("burst", json!({"gate": true}));
    let sends: Vec<_> = (0..24)
        .map(|i| {
            let (rt, request) = (rt.clone(), from("ann", &first));
            tokio::spawn(async move {
                match i % 3 {
                    0 => rt.submit(request).await.map(|s| s.task.id),
                    1 => rt
                        .submit(request)
                        .follow()
                        .await
                        .map(|f| f.accepted.task.id),
                    _ => {
                        let waiting = rt.submit(request).wait().await?;
                        Ok(waiting.accepted().task.id.clone())
                    }
                }
            })
        })
        .collect();
    let mut ids = Vec::new();
    for send in sends {
        ids.push(send.await.unwrap().unwrap());
    }
    ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    ids.dedup();
    assert_eq!(ids.len(), 1, "one task: {ids:?}");
    skill.gate.add_permits(1);
    wait_for_state(&rt, &ids[0], TaskState::Completed).await;
    assert_eq!(skill.started(), ["burst"], "one run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_copies_of_a_message_to_a_task_are_delivered_once() {
    let skill = Scripted::new("scripted", false);
    let rt = start(&skill, None).await;
    let task = rt.submit(from("ann", &ask("q"))).await.unwrap().task;
    wait_for_state(&rt, &task.id, TaskState::InputRequired).await;
    let answer = to_task(&task.id, "a");
    let sends: Vec<_> = (0..12)
        .map(|_| {
            let (rt, request) = (rt.clone(), from("ann", &answer));
            tokio::spawn(async move { rt.submit(request).await.map(drop) })
        })
        .collect();
    for send in sends {
        send.await.unwrap().unwrap();
    }
    let done = wait_for_state(&rt, &task.id, TaskState::Completed).await;
    let answers = done.history.iter().filter(|m| m.text() == "a").count();
    assert_eq!(answers, 1, "{:?}", done.history);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_message_is_remembered_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let skill = Scripted::new("scripted", false);
    let rt = start(&skill, Some(dir.path())).await;
    let first = message("durable", Value::Null);
    let task = rt.submit(from("ann", &first)).await.unwrap().task;
    wait_for_state(&rt, &task.id, TaskState::Completed).await;
    rt.shutdown(Duration::from_secs(5)).await;
    drop(rt);

    let skill = Scripted::new("scripted", false);
    let rt = start(&skill, Some(dir.path())).await;
    let again = rt.submit(from("ann", &first)).await.unwrap().task;
    assert_eq!(again.id, task.id);
    assert_eq!(again.status.state, TaskState::Completed);
    assert!(skill.started().is_empty(), "nothing ran again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_message_older_than_the_window_or_with_the_window_off_makes_a_new_task() {
    let dir = tempfile::tempdir().unwrap();
    let first = message("old", Value::Null);
    {
        // A task this owner created with that message two days ago.
        let store = open_sled(dir.path()).await;
        let created = Utc::now() - chrono::Duration::days(2);
        let mut record = record(
            "old-task",
            "c",
            TaskState::Completed,
            created.timestamp_millis(),
            "ann",
        );
        record.skill = "scripted".into();
        record.task.history = vec![first.clone()];
        let event = created_event(&record);
        store.commit(&record, 0, &[event]).await.unwrap();
        let found = store
            .created_by(Some("ann"), &first.message_id)
            .await
            .unwrap();
        assert_eq!(found.map(|(id, _)| id), Some(TaskId::from("old-task")));
    }
    let skill = Scripted::new("scripted", false);
    let rt = start(&skill, Some(dir.path())).await;
    let fresh = rt.submit(from("ann", &first)).await.unwrap().task;
    assert_ne!(
        fresh.id,
        TaskId::from("old-task"),
        "past the window: a new task"
    );
    rt.shutdown(Duration::ZERO).await;

    let mut config = RuntimeConfig::default();
    config.dedup_window_s = 0;
    let rt = start_with(&skill, None, config).await;
    let first = message("twice", Value::Null);
    let one = rt.submit(from("ann", &first)).await.unwrap().task;
    let two = rt.submit(from("ann", &first)).await.unwrap().task;
    assert_ne!(one.id, two.id, "deduplication off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_of_a_blocking_send_gets_its_task_while_the_first_still_waits() {
    let skill = Scripted::new("scripted", false);
    let rt = start(&skill, None).await;
    let first = message("held", json!({"gate": true}));
    let waiting = rt.submit(from("ann", &first)).wait().await.unwrap();
    let id = waiting.accepted().task.id.clone();
    let outcome = tokio::spawn(waiting.outcome(DEADLINE));

    // The first send still waits for its outcome (the skill holds at its gate).
    let retry = tokio::time::timeout(DEADLINE, rt.submit(from("ann", &first)).into_future());
    let retried = retry
        .await
        .expect("the retry waited for the first's outcome");
    assert_eq!(retried.unwrap().task.id, id);
    assert!(!outcome.is_finished());

    skill.gate.add_permits(1);
    let done = outcome.await.unwrap().unwrap();
    assert_eq!(done.task.status.state, TaskState::Completed);
    assert_eq!(skill.started(), ["held"], "one run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_on_a_retry_whose_task_got_there_already_returns_at_once() {
    let skill = Scripted::new("scripted", false);
    let rt = start(&skill, None).await;
    let first = ask("at rest");
    let task = rt.submit(from("ann", &first)).await.unwrap().task;
    wait_for_state(&rt, &task.id, TaskState::InputRequired).await;
    // No event will come: the task waits for a person.
    let retry = rt.submit(from("ann", &first)).wait().await.unwrap();
    // Its own deadline is past the test's: a wait for an event that cannot come fails.
    let reached = tokio::time::timeout(DEADLINE, retry.outcome(DEADLINE * 4)).await;
    let reached = reached.expect("waited for an event that cannot come");
    let reached = reached.unwrap();
    assert_eq!(reached.task.id, task.id);
    assert_eq!(reached.task.status.state, TaskState::InputRequired);
}

/// A store whose index names, for every first message, a task that is not there (as a
/// crash between the entry and the task's commit point can leave sled's): each first
/// write with a window is refused, naming that task.
#[derive(Default)]
struct Dangling {
    inner: fundi_runtime::store::MemoryStore,
}

fundi_runtime::store_with_own_writes!(Dangling, inner, {
    async fn write(
        &self,
        record: &fundi_runtime::store::TaskRecord,
        expected_version: u64,
        events: &[fundi_runtime::TaskEvent],
    ) -> Result<(), fundi_runtime::store::StoreError> {
        self.inner.write(record, expected_version, events).await
    }

    async fn create_task(
        &self,
        record: &fundi_runtime::store::TaskRecord,
        events: &[fundi_runtime::TaskEvent],
        run_slot: Option<usize>,
        window: Option<Duration>,
    ) -> Result<fundi_runtime::store::Creation, fundi_runtime::store::StoreError> {
        match window {
            Some(_) => Ok(fundi_runtime::store::Creation::Taken(
                TaskId::from("gone"),
                Utc::now(),
            )),
            None => self.inner.create_task(record, events, run_slot, None).await,
        }
    }
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_message_whose_entry_names_no_stored_task_makes_its_task() {
    let skill = Scripted::new("scripted", false);
    let store = std::sync::Arc::new(Dangling::default());
    let rt = Runtime::builder()
        .skill(skill.clone())
        .shared_store(store.clone())
        .start()
        .await
        .unwrap();
    let first = message("after a crash", Value::Null);
    let task = rt.submit(from("ann", &first)).await.unwrap().task;
    assert_ne!(task.id, TaskId::from("gone"));
    let stored = store.get(&task.id).await.unwrap();
    assert_eq!(
        stored.map(|r| r.task.history[0].message_id.clone()),
        Some(first.message_id)
    );
    rt.shutdown(Duration::ZERO).await;
}
