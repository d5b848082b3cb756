//! Progress notes a skill posts without waiting (`SkillContext::post_progress`): they are
//! stored, in order, before anything the run does next; notes posted together share a
//! commit; a run that posts more than `MAX_POSTED` waits and loses none; `settle` covers
//! them; and a note the store refuses ends the task `failed`, never dropped unseen.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use fundi_runtime::store::TaskRecord;
use fundi_runtime::store_with_own_writes;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    MAX_POSTED, MemoryStore, Runtime, RuntimeHandle, Skill, SkillCard, SkillContext, SkillError,
    SkillInput, SkillOutput, StoreError, SubmitRequest, TaskEvent, TaskEventKind, TaskId,
    TaskState, TaskStore,
};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

/// Posts `before` notes ("a0", "a1"... each with the checkpoint {"note": its text}) and
/// the note `note`, if given; then (with `call`) awaits a status "call", posts `after`
/// notes ("b0"...), then (with `settle`) settles and says so on `settled`, then (with
/// `gate`) waits for a permit of `gate`; and completes.
struct Poster {
    settled: mpsc::UnboundedSender<TaskId>,
    gate: Arc<Semaphore>,
}

#[async_trait]
impl Skill for Poster {
    fn card(&self) -> SkillCard {
        SkillCard::new("poster", "posts progress notes without waiting")
            .name("poster")
            .tags(["test"])
            .input_modes(["text/plain"])
            .output_modes(["text/plain"])
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let data = input.message.data().cloned().unwrap_or(Value::Null);
        let count = |key: &str| data.get(key).and_then(Value::as_u64).unwrap_or(0);
        let post = |prefix: &'static str, n: u64| {
            let ctx = ctx.clone();
            async move {
                for i in 0..n {
                    let text = format!("{prefix}{i}");
                    ctx.post_progress_with_checkpoint(0.5, &text, json!({ "note": text }))
                        .await?;
                }
                Ok::<_, SkillError>(())
            }
        };
        post("a", count("before")).await?;
        if let Some(text) = data["note"].as_str() {
            ctx.post_progress(0.5, text).await?;
        }
        if data["call"] == json!(true) {
            ctx.status("call").await?;
        }
        post("b", count("after")).await?;
        if data["settle"] == json!(true) {
            ctx.settle().await?;
            let _ = self.settled.send(input.task_id.clone());
        }
        if data["gate"] == json!(true) {
            tokio::select! {
                () = ctx.cancelled() => return Err(SkillError::Canceled),
                permit = self.gate.acquire() => permit.expect("gate open").forget(),
            }
        }
        Ok(SkillOutput::text("done"))
    }
}

/// A memory store that counts its writes, can take its time over writes that hold a
/// note (`slow`), and refuses any write holding the note "break".
struct Watched {
    inner: MemoryStore,
    writes: std::sync::Mutex<Vec<(TaskId, usize)>>,
    slow: AtomicBool,
}

store_with_own_writes!(Watched, inner, {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        let notes: Vec<String> = events.iter().filter_map(note_text).collect();
        if notes.iter().any(|n| n == "break") {
            let full = std::io::Error::other("no space left (the test's)");
            return Err(StoreError::io("writing", full));
        }
        if !notes.is_empty() && self.slow.load(Ordering::SeqCst) {
            // A slow disk: `settle` must still wait for this write, however long.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        self.inner.write(record, expected_version, events).await?;
        let mut writes = self.writes.lock().unwrap();
        writes.push((record.id().clone(), events.len()));
        Ok(())
    }
});

fn note_text(event: &TaskEvent) -> Option<String> {
    event.status()?.message.as_ref().map(|m| m.text())
}

struct Started {
    rt: RuntimeHandle,
    store: Arc<Watched>,
    settled: mpsc::UnboundedReceiver<TaskId>,
    gate: Arc<Semaphore>,
}

async fn start() -> Started {
    let store = Arc::new(Watched {
        inner: MemoryStore::default(),
        writes: std::sync::Mutex::new(Vec::new()),
        slow: AtomicBool::new(false),
    });
    let (settled_tx, settled) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let rt = Runtime::builder()
        .shared_store(store.clone())
        .skill(Poster {
            settled: settled_tx,
            gate: gate.clone(),
        })
        .start()
        .await
        .unwrap();
    Started {
        rt,
        store,
        settled,
        gate,
    }
}

fn request(data: Value) -> SubmitRequest {
    let mut request = SubmitRequest::new(message("go", data));
    request.skill = Some("poster".into());
    request
}

/// The notes among a task's stored events, in order.
async fn stored_notes(store: &Watched, id: &TaskId) -> Vec<String> {
    let events = store.events(id, 0, 10_000).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    events.iter().filter_map(note_text).collect()
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posted_notes_are_stored_in_order_before_what_the_run_does_next() {
    let Started { rt, store, .. } = start().await;
    // More than a queue holds before the call, so that posting waits on the way.
    let before = MAX_POSTED * 2 + 5;
    let data = json!({"before": before, "call": true, "after": 3});
    let task = rt.submit(request(data)).await.unwrap().task;
    let done = wait_for_state(&rt, &task.id, TaskState::Completed).await;

    let mut expected = names("a", before);
    expected.push("call".into());
    expected.extend(names("b", 3));
    expected.push("done".into());
    assert_eq!(stored_notes(&store, &task.id).await, expected);
    // Published as stored: a subscriber from the start sees the same notes.
    let published: Vec<String> = collect_events(&rt, &task.id, 0)
        .await
        .iter()
        .filter_map(note_text)
        .collect();
    assert_eq!(published, expected);
    // The checkpoint is the last posted note's.
    let record = store.get(&task.id).await.unwrap().unwrap();
    assert_eq!(record.checkpoint, Some(json!({"note": "b2"})));
    assert_eq!(status_text(&done), "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_posted_at_once_follow_the_stored_task_in_order() {
    let Started { rt, store, .. } = start().await;
    let waiting = rt
        .submit(request(json!({"before": 20})))
        .wait()
        .await
        .unwrap();
    let id = waiting.accepted().task.id.clone();
    let reached = waiting.outcome(DEADLINE).await.unwrap();
    assert_eq!(reached.task.status.state, TaskState::Completed);
    // The task first (created, working), then its 20 notes and completion, together
    // as they came (one commit each at most).
    let writes: Vec<usize> = store
        .writes
        .lock()
        .unwrap()
        .iter()
        .filter(|(written, _)| written == &id)
        .map(|(_, events)| *events)
        .collect();
    assert_eq!(writes[0], 2, "{writes:?}");
    assert_eq!(writes.iter().sum::<usize>(), 23, "{writes:?}");
    assert!(
        writes.len() < 23,
        "notes posted together share commits: {writes:?}"
    );
    let mut expected = names("a", 20);
    expected.push("done".into());
    assert_eq!(stored_notes(&store, &id).await, expected);
    let events = store.events(&id, 0, 100).await.unwrap();
    assert!(matches!(events[0].kind, TaskEventKind::Created(_)));
    assert_eq!(
        events[22].status().map(|s| s.state),
        Some(TaskState::Completed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_returns_once_the_notes_posted_before_it_are_stored() {
    let Started {
        rt,
        store,
        mut settled,
        gate,
    } = start().await;
    store.slow.store(true, Ordering::SeqCst);
    let task = rt
        .submit(request(json!({"before": 3, "settle": true, "gate": true})))
        .await
        .unwrap()
        .task;
    let id = tokio::time::timeout(DEADLINE, settled.recv())
        .await
        .expect("settled in time")
        .expect("the skill lives");
    assert_eq!(id, task.id);
    // Read from the store itself, not through the actor (which would wait its turn).
    assert_eq!(stored_notes(&store, &id).await, names("a", 3));
    store.slow.store(false, Ordering::SeqCst);
    gate.add_permits(1);
    wait_for_state(&rt, &id, TaskState::Completed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_note_the_store_refuses_ends_the_task_failed() {
    let Started { rt, store, .. } = start().await;
    // The run waits at the gate after posting: nothing it does next would tell it.
    let data = json!({"before": 2, "note": "break", "gate": true});
    let task = rt.submit(request(data)).await.unwrap().task;
    let failed = wait_for_state(&rt, &task.id, TaskState::Failed).await;
    let text = status_text(&failed);
    assert!(
        text.contains("could not store posted progress") && text.contains("no space left"),
        "{text}"
    );
    // The refused commit held every note waiting with it: none of those is stored (the
    // notes a commit before it took may be: how the run's posts are grouped depends on
    // when the actor takes them), and the failure says why.
    let notes = stored_notes(&store, &task.id).await;
    let (failure, before) = notes.split_last().expect("the failure is stored");
    assert_eq!(failure, &text);
    assert!(
        names("a", 2).starts_with(before) && !before.contains(&"break".to_owned()),
        "{notes:?}"
    );
}
