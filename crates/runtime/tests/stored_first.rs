//! Every new task is stored before its skill runs, however it was submitted (awaited,
//! followed, or waited on for its outcome as a blocking send is): a task the store
//! refuses is refused to its sender and its skill never runs. Whatever the run then
//! does (return, fail, reject, panic, or wait), the task ends up stored with every
//! event, in order, its versions following one another.

use fundi_runtime::Access;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fundi_runtime::store::TaskRecord;
use fundi_runtime::store_with_own_writes;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    MemoryStore, Runtime, RuntimeError, RuntimeHandle, StoreError, SubmitRequest, TaskEvent,
    TaskEventKind, TaskId, TaskState, TaskStore, Waiting,
};
use serde_json::{Value, json};
use tokio::sync::watch;

/// One write as the store saw it.
#[derive(Debug, Clone)]
struct Write {
    id: TaskId,
    expected_version: u64,
    version: u64,
    seqs: Vec<u64>,
    state: TaskState,
}

/// A memory store that records every write and counts them on a watch; it refuses
/// every write while `refusing`.
struct Recording {
    inner: MemoryStore,
    writes: Mutex<Vec<Write>>,
    count: watch::Sender<usize>,
    refusing: AtomicBool,
}

impl Recording {
    fn new() -> Recording {
        Recording {
            inner: MemoryStore::default(),
            writes: Mutex::new(Vec::new()),
            count: watch::channel(0).0,
            refusing: AtomicBool::new(false),
        }
    }

    fn writes_of(&self, id: &TaskId) -> Vec<Write> {
        let writes = self.writes.lock().unwrap();
        writes.iter().filter(|w| &w.id == id).cloned().collect()
    }

    /// Waits (up to the deadline) until `id` has been written `n` times.
    async fn written(&self, id: &TaskId, n: usize) -> Vec<Write> {
        let mut count = self.count.subscribe();
        let wait = count.wait_for(|_| self.writes_of(id).len() >= n);
        tokio::time::timeout(DEADLINE, wait)
            .await
            .unwrap_or_else(|_| panic!("task {id} was not written {n} times in time"))
            .expect("the store lives");
        self.writes_of(id)
    }
}

store_with_own_writes!(Recording, inner, {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        if self.refusing.load(Ordering::SeqCst) {
            let full = std::io::Error::other("no space left (the test's)");
            return Err(StoreError::io("writing", full));
        }
        self.inner.write(record, expected_version, events).await?;
        self.writes.lock().unwrap().push(Write {
            id: record.id().clone(),
            expected_version,
            version: record.version,
            seqs: events.iter().map(|e| e.seq).collect(),
            state: record.state(),
        });
        self.count.send_modify(|n| *n += 1);
        Ok(())
    }
});

async fn start() -> (RuntimeHandle, Arc<Recording>, Scripted) {
    let store = Arc::new(Recording::new());
    let scripted = Scripted::new("scripted", false);
    let rt = Runtime::builder()
        .shared_store(store.clone())
        .skill(scripted.clone())
        .start()
        .await
        .unwrap();
    (rt, store, scripted)
}

fn request(data: Value) -> SubmitRequest {
    let mut request = SubmitRequest::new(message("go", data));
    request.skill = Some("scripted".into());
    request
}

/// The state of a submitted task once at rest (or as it stands after the deadline).
async fn terminal_state(waiting: Waiting) -> TaskState {
    let reached = waiting.outcome(DEADLINE).await.unwrap();
    reached.task.status.state
}

/// Submits as a blocking send does and waits for a terminal state; returns the id and
/// that state.
async fn send_blocking(rt: &RuntimeHandle, request: SubmitRequest) -> (TaskId, TaskState) {
    let waiting = rt.submit(request).wait().await.unwrap();
    let id = waiting.accepted().task.id.clone();
    (id, terminal_state(waiting).await)
}

/// The stored events of `id` are 1, 2, ... with no gap, starting with its creation and
/// working; returns them.
async fn stored_events(store: &Recording, id: &TaskId) -> Vec<TaskEvent> {
    let events = store.events(id, 0, 1000).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    assert!(matches!(events[0].kind, TaskEventKind::Created(_)));
    assert_eq!(
        events[1].status().map(|s| s.state),
        Some(TaskState::Working)
    );
    events
}

/// The writes of `id`: the first stores the task working (its created and working
/// events) before its skill runs; versions follow one another.
fn stored_first(writes: &[Write]) {
    let first = &writes[0];
    assert_eq!((first.expected_version, first.version), (0, 1));
    assert_eq!(
        (first.seqs.clone(), first.state),
        (vec![1, 2], TaskState::Working)
    );
    let versions: Vec<(u64, u64)> = writes
        .iter()
        .map(|w| (w.expected_version, w.version))
        .collect();
    let expected: Vec<(u64, u64)> = (0..versions.len() as u64).map(|v| (v, v + 1)).collect();
    assert_eq!(versions, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_sends_task_is_stored_before_its_skill_runs() {
    let (rt, store, _) = start().await;
    let (id, state) = send_blocking(&rt, request(Value::Null)).await;
    assert_eq!(state, TaskState::Completed);
    let writes = store.writes_of(&id);
    assert_eq!(writes.len(), 2, "{writes:?}");
    stored_first(&writes);
    assert_eq!(writes[1].state, TaskState::Completed);
    let events = stored_events(&store, &id).await;
    let written: Vec<u64> = writes.iter().flat_map(|w| w.seqs.clone()).collect();
    assert_eq!(written, events.iter().map(|e| e.seq).collect::<Vec<_>>());
    let task = rt.get(&id, None, Access::Any).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "done: go");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fails_rejects_or_panics_at_once_is_stored_with_its_outcome() {
    let (rt, store, _) = start().await;
    for (data, state, text) in [
        (json!({"fail": "no disk"}), TaskState::Failed, "no disk"),
        (
            json!({"reject": "not mine"}),
            TaskState::Rejected,
            "not mine",
        ),
        (
            json!({"panic": "boom"}),
            TaskState::Failed,
            "skill panicked: boom",
        ),
    ] {
        let (id, reached) = send_blocking(&rt, request(data.clone())).await;
        assert_eq!(reached, state, "{data}");
        let writes = store.writes_of(&id);
        assert_eq!(writes.len(), 2, "{data}: {writes:?}");
        stored_first(&writes);
        assert_eq!(writes[1].state, state, "{data}");
        stored_events(&store, &id).await;
        let task = rt.get(&id, None, Access::Any).await.unwrap();
        assert_eq!(task.status.state, state, "{data}");
        assert!(status_text(&task).contains(text), "{data}: {task:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_finds_its_task_stored_and_readable() {
    let (rt, store, scripted) = start().await;
    let waiting = rt
        .submit(request(json!({"gate": true, "steps": 2})))
        .wait()
        .await
        .unwrap();
    let id = waiting.accepted().task.id.clone();
    // The run waits at the gate: the task is stored, working, and readable.
    let writes = store.written(&id, 1).await;
    stored_first(&writes);
    let task = rt.get(&id, None, Access::Any).await.unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    scripted.gate.add_permits(1);
    assert_eq!(terminal_state(waiting).await, TaskState::Completed);
    let events = stored_events(&store, &id).await;
    let notes: Vec<String> = events
        .iter()
        .filter_map(|e| e.status()?.message.as_ref().map(|m| m.text()))
        .collect();
    assert_eq!(notes, ["step 0", "step 1", "done: go"]);
    stored_first(&store.writes_of(&id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_task_is_stored_before_follow_returns() {
    let (rt, store, scripted) = start().await;
    let following = rt
        .submit(request(json!({"gate": true})))
        .follow()
        .await
        .unwrap();
    let id = following.accepted.task.id.clone();
    // Stored already, before the skill has run at all.
    let writes = store.writes_of(&id);
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(
        (writes[0].seqs.clone(), writes[0].state),
        (vec![1, 2], TaskState::Working)
    );
    scripted.gate.add_permits(1);
    use futures::StreamExt;
    let mut events = following.events;
    let last = tokio::time::timeout(DEADLINE, async {
        let mut last = None;
        while let Some(event) = events.next().await {
            last = Some(event.unwrap());
        }
        last
    })
    .await
    .expect("the stream ended in time")
    .expect("the task had events");
    assert_eq!(
        last.status().map(|s| s.state),
        Some(TaskState::Completed),
        "{last:?}"
    );
    assert_eq!(store.writes_of(&id).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_submit_still_stores_the_task_before_it_returns() {
    let (rt, store, scripted) = start().await;
    let accepted = rt.submit(request(json!({"gate": true}))).await.unwrap();
    let writes = store.writes_of(&accepted.task.id);
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].expected_version, 0);
    scripted.gate.add_permits(1);
    let task = wait_for_state(&rt, &accepted.task.id, TaskState::Completed).await;
    assert_eq!(status_text(&task), "done: go");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_task_the_store_refuses_is_refused_and_its_skill_never_runs() {
    let (rt, store, scripted) = start().await;
    store.refusing.store(true, Ordering::SeqCst);
    // However it is submitted: waited on (a blocking send), followed, or awaited.
    let waited = rt.submit(request(Value::Null)).wait().await;
    assert!(
        matches!(waited, Err(RuntimeError::Store(_))),
        "{:?}",
        waited.err()
    );
    let followed = rt.submit(request(Value::Null)).follow().await;
    assert!(
        matches!(followed, Err(RuntimeError::Store(_))),
        "{:?}",
        followed.err()
    );
    let awaited = rt.submit(request(Value::Null)).await;
    assert!(
        matches!(awaited, Err(RuntimeError::Store(_))),
        "{awaited:?}"
    );
    assert!(
        scripted.started().is_empty(),
        "a skill ran for a task not stored"
    );
    let listed = rt
        .list(fundi_runtime::ListRequest::new(fundi_runtime::TaskOwner::Any).page_size(10))
        .await
        .unwrap();
    assert_eq!(listed.total_size, 0);
    // The store is back: the next send is stored and answered.
    store.refusing.store(false, Ordering::SeqCst);
    let (_, state) = send_blocking(&rt, request(Value::Null)).await;
    assert_eq!(state, TaskState::Completed);
    assert_eq!(scripted.started().len(), 1);
}
