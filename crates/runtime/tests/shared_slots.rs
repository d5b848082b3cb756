//! Run slots that several nodes share (a store with a `Cluster`), as the runtime uses
//! them: a new task takes its store slot in its first commit and gives it back in the
//! commit that ends its run, so a run that neither queues nor waits asks the store
//! nothing of its own; a task that finds no store slot free is stored to queue, and
//! asks for one until another node frees it. (The statements themselves, on
//! PostgreSQL: `fundi-postgres`'s `run_slots.rs`.)

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use fundi_runtime::store::{Cluster, Holder, Incoming, Standing, StoreError, TaskRecord};
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Access, MemoryStore, Runtime, RuntimeConfig, RuntimeHandle, SubmitRequest, TaskEvent,
    TaskEventKind, TaskId, TaskState,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

/// The store's slots of the one skill, as another node would see them, and how often
/// the runtime asked for or gave back one on its own.
struct Nodes {
    taken: Mutex<Vec<bool>>,
    claims: AtomicUsize,
    releases: AtomicUsize,
    /// How many of the next releases fail.
    failing_releases: AtomicUsize,
    /// Another node waits for a slot.
    wanted: std::sync::atomic::AtomicBool,
    standing: watch::Sender<Standing>,
    signal: watch::Sender<()>,
}

impl Nodes {
    fn new() -> Arc<Nodes> {
        Arc::new(Nodes {
            taken: Mutex::default(),
            claims: AtomicUsize::new(0),
            releases: AtomicUsize::new(0),
            failing_releases: AtomicUsize::new(0),
            wanted: false.into(),
            standing: watch::channel(Standing::Holding).0,
            signal: watch::channel(()).0,
        })
    }

    /// Takes the first free slot below `limit`.
    fn take(&self, limit: usize) -> Option<u32> {
        let mut taken = self.taken.lock().unwrap();
        let len = taken.len().max(limit);
        taken.resize(len, false);
        let free = taken.iter().take(limit).position(|t| !t)?;
        taken[free] = true;
        Some(free as u32)
    }

    fn free(&self, slot: u32) {
        let mut taken = self.taken.lock().unwrap();
        assert!(taken[slot as usize], "slot {slot} given back twice");
        taken[slot as usize] = false;
    }

    fn taken(&self) -> usize {
        self.taken.lock().unwrap().iter().filter(|t| **t).count()
    }
}

#[async_trait]
impl Cluster for Nodes {
    async fn holder(&self, _id: &TaskId) -> Result<Holder, StoreError> {
        Ok(Holder::Here)
    }

    async fn forward(
        &self,
        _id: &TaskId,
        _request: Value,
        _timeout: std::time::Duration,
    ) -> Result<Value, StoreError> {
        Err(StoreError::database("every task is held here"))
    }

    fn incoming(&self) -> Option<mpsc::Receiver<Incoming>> {
        None
    }

    async fn claim_run_slot(&self, _skill: &str, limit: usize) -> Result<Option<u32>, StoreError> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        Ok(self.take(limit))
    }

    async fn release_run_slot(&self, _skill: &str, slot: u32) -> Result<(), StoreError> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        let failing = self.failing_releases.load(Ordering::SeqCst);
        if failing > 0 {
            self.failing_releases.store(failing - 1, Ordering::SeqCst);
            return Err(StoreError::Unreachable {
                what: "the database did not answer".into(),
                source: None,
            });
        }
        self.free(slot);
        Ok(())
    }

    fn run_slot_wanted_elsewhere(&self, _skill: &str) -> bool {
        self.wanted.load(Ordering::SeqCst)
    }

    async fn watch(&self, _id: &TaskId) -> Result<watch::Receiver<()>, StoreError> {
        Ok(self.signal.subscribe())
    }

    fn standing(&self) -> watch::Receiver<Standing> {
        self.standing.subscribe()
    }

    async fn check_held(&self, _id: &TaskId) -> Result<(), StoreError> {
        Ok(())
    }
}

/// A memory store that shares its slots with `Nodes`, counting the commits that take
/// or give back one.
struct SharedStore {
    inner: MemoryStore,
    nodes: Arc<Nodes>,
    created_with_slot: AtomicUsize,
    gave_back: AtomicUsize,
}

fundi_runtime::store_with_own_writes!(SharedStore, inner, {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        self.inner.write(record, expected_version, events).await
    }

    async fn create_with_run_slot(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        limit: usize,
    ) -> Result<Option<u32>, StoreError> {
        self.created_with_slot.fetch_add(1, Ordering::SeqCst);
        let Some(slot) = self.nodes.take(limit) else {
            return Ok(None);
        };
        self.inner.write(record, 0, events).await?;
        Ok(Some(slot))
    }

    async fn write_giving_back_run_slot(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: u32,
    ) -> Result<(), StoreError> {
        self.inner.write(record, expected_version, events).await?;
        self.gave_back.fetch_add(1, Ordering::SeqCst);
        self.nodes.free(slot);
        Ok(())
    }

    fn cluster(&self) -> Option<Arc<dyn Cluster>> {
        Some(self.nodes.clone())
    }
});

/// A node whose runs each give their slot back as they end.
async fn node(limit: usize) -> (RuntimeHandle, Arc<SharedStore>, Scripted) {
    node_holding(limit, 0).await
}

/// A node that keeps a store slot for its next runs for up to `hold_ms`.
async fn node_holding(limit: usize, hold_ms: u64) -> (RuntimeHandle, Arc<SharedStore>, Scripted) {
    let store = Arc::new(SharedStore {
        inner: MemoryStore::new(),
        nodes: Nodes::new(),
        created_with_slot: AtomicUsize::new(0),
        gave_back: AtomicUsize::new(0),
    });
    let skill = Scripted::new("s", false);
    let runtime = Runtime::builder()
        .shared_store(store.clone())
        .config({
            let mut config = RuntimeConfig::default();
            config.max_concurrent_runs = limit;
            config.hold_run_slots_ms = hold_ms;
            config
        })
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    (runtime, store, skill)
}

/// One run took its store slot in its first commit and gave it back in its last, and
/// asked the store nothing of its own.
fn slot_taken_and_given_back_only_with_commits(store: &SharedStore) {
    assert_eq!(store.created_with_slot.load(Ordering::SeqCst), 1);
    assert_eq!(store.gave_back.load(Ordering::SeqCst), 1);
    let nodes = &store.nodes;
    assert_eq!(nodes.claims.load(Ordering::SeqCst), 0, "asked on its own");
    assert_eq!(
        nodes.releases.load(Ordering::SeqCst),
        0,
        "gave back on its own"
    );
    assert_eq!(nodes.taken(), 0);
}

/// The states the task's events put it in, in order.
async fn states(runtime: &RuntimeHandle, id: &TaskId) -> Vec<TaskState> {
    let events = collect_events(runtime, id, 0).await;
    let states = events.iter().filter_map(|event| match &event.kind {
        TaskEventKind::Created(task) => Some(task.status.state),
        TaskEventKind::Status(status) => Some(status.state),
        _ => None,
    });
    states.collect()
}

#[tokio::test]
async fn a_run_takes_its_slot_in_its_first_commit_and_gives_it_back_in_its_last() {
    let (runtime, store, _skill) = node(2).await;
    let task = submit(&runtime, "one", json!({})).await;
    wait_for_state(&runtime, &task.id, TaskState::Completed).await;
    assert_eq!(
        states(&runtime, &task.id).await,
        [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed
        ]
    );
    slot_taken_and_given_back_only_with_commits(&store);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_run_whose_caller_waits_for_its_outcome_gives_its_slot_back_in_its_last_commit() {
    let (runtime, store, _skill) = node(2).await;
    let waiting = runtime
        .submit(SubmitRequest::new(message("one", json!({}))))
        .wait()
        .await
        .unwrap();
    let task = waiting.outcome(DEADLINE).await.unwrap().task;
    assert_eq!(task.status.state, TaskState::Completed);
    slot_taken_and_given_back_only_with_commits(&store);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_task_that_finds_every_store_slot_taken_queues_until_one_is_freed() {
    let (runtime, store, skill) = node(1).await;
    // Another node runs the skill's only slot.
    let elsewhere = store.nodes.take(1).unwrap();
    let task = submit(&runtime, "queued", json!({})).await;
    let stored = runtime.get(&task.id, None, Access::Any).await.unwrap();
    assert_eq!(stored.status.state, TaskState::Submitted, "stored to queue");
    let nodes = store.nodes.clone();
    eventually(
        || "the queued task never asked the store for a slot".into(),
        || nodes.claims.load(Ordering::SeqCst) > 0,
    )
    .await;
    assert!(skill.started().is_empty(), "ran without a slot");
    // The other node's run ends: the queued task gets the slot, runs, and gives it back
    // with its last commit.
    store.nodes.free(elsewhere);
    wait_for_state(&runtime, &task.id, TaskState::Completed).await;
    assert_eq!(skill.started(), ["queued"]);
    assert_eq!(store.gave_back.load(Ordering::SeqCst), 1);
    assert_eq!(store.nodes.releases.load(Ordering::SeqCst), 0);
    assert_eq!(store.nodes.taken(), 0);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_run_that_waits_for_input_gives_its_slot_back_though_the_store_fails_at_first() {
    let (runtime, store, _skill) = node(1).await;
    // The store fails the first two times the slot is given back: it is given back
    // all the same.
    store.nodes.failing_releases.store(2, Ordering::SeqCst);
    let task = submit(&runtime, "ask", json!({"ask": true})).await;
    wait_for_state(&runtime, &task.id, TaskState::InputRequired).await;
    let nodes = store.nodes.clone();
    eventually(
        || "the waiting run kept its store slot".into(),
        || nodes.taken() == 0,
    )
    .await;
    assert_eq!(
        nodes.releases.load(Ordering::SeqCst),
        3,
        "two failed, then given back"
    );
    // Another task runs meanwhile, in the freed slot.
    let other = submit(&runtime, "other", json!({})).await;
    wait_for_state(&runtime, &other.id, TaskState::Completed).await;
    assert_eq!(store.nodes.taken(), 0);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_node_keeps_a_run_slot_for_its_next_run_and_gives_it_back_once_idle() {
    // Given back after a second with no run.
    let (runtime, store, skill) = node_holding(2, 10_000).await;
    let first = submit(&runtime, "first", json!({})).await;
    wait_for_state(&runtime, &first.id, TaskState::Completed).await;
    // The next run takes the slot the first ended with: neither its first commit nor
    // its last touches a store slot.
    let second = submit(&runtime, "second", json!({})).await;
    wait_for_state(&runtime, &second.id, TaskState::Completed).await;
    assert_eq!(skill.started(), ["first", "second"]);
    assert_eq!(store.created_with_slot.load(Ordering::SeqCst), 1);
    assert_eq!(store.gave_back.load(Ordering::SeqCst), 0);
    // No run takes it: it goes back to the store on its own.
    let nodes = store.nodes.clone();
    eventually(
        || "the idle slot was never given back".into(),
        || nodes.taken() == 0,
    )
    .await;
    assert_eq!(nodes.releases.load(Ordering::SeqCst), 1);
    assert_eq!(nodes.claims.load(Ordering::SeqCst), 0);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_kept_slot_handed_to_a_message_sent_again_is_kept_for_the_next_run() {
    let (runtime, store, skill) = node_holding(2, 10_000).await;
    let once = message("once", json!({}));
    let first = runtime.submit(SubmitRequest::new(once.clone())).await;
    let first = first.unwrap().task;
    wait_for_state(&runtime, &first.id, TaskState::Completed).await;
    // The same message again: its task, and the kept slot it was handed stays kept.
    let again = runtime.submit(SubmitRequest::new(once)).await.unwrap().task;
    assert_eq!(again.id, first.id);
    let next = submit(&runtime, "next", json!({})).await;
    wait_for_state(&runtime, &next.id, TaskState::Completed).await;
    assert_eq!(skill.started(), ["once", "next"]);
    assert_eq!(store.created_with_slot.load(Ordering::SeqCst), 1);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_run_that_waits_for_input_leaves_its_slot_to_the_nodes_next_run() {
    let (runtime, store, skill) = node_holding(1, 10_000).await;
    let asking = submit(&runtime, "ask", json!({"ask": true})).await;
    wait_for_state(&runtime, &asking.id, TaskState::InputRequired).await;
    let next = submit(&runtime, "next", json!({})).await;
    wait_for_state(&runtime, &next.id, TaskState::Completed).await;
    assert_eq!(skill.started(), ["ask", "next"]);
    assert_eq!(store.created_with_slot.load(Ordering::SeqCst), 1);
    assert_eq!(store.nodes.releases.load(Ordering::SeqCst), 0);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_queued_task_takes_a_slot_the_node_kept() {
    let (runtime, store, skill) = node_holding(1, 10_000).await;
    let running = submit(&runtime, "running", json!({"gate": true})).await;
    wait_for_state(&runtime, &running.id, TaskState::Working).await;
    let queued = submit(&runtime, "queued", json!({})).await;
    assert_eq!(queued.status.state, TaskState::Submitted, "stored to queue");
    let nodes = store.nodes.clone();
    skill.gate.add_permits(1);
    wait_for_state(&runtime, &queued.id, TaskState::Completed).await;
    assert_eq!(skill.started(), ["running", "queued"]);
    // The first run's slot went to the queued task, not back to the store.
    assert_eq!(store.gave_back.load(Ordering::SeqCst), 0);
    eventually(|| "the slot stayed taken".into(), || nodes.taken() == 0).await;
    assert_eq!(nodes.releases.load(Ordering::SeqCst), 1);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_run_that_ends_after_the_hold_time_gives_its_slot_back_in_its_last_commit() {
    let hold = std::time::Duration::from_millis(200);
    let (runtime, store, skill) = node_holding(1, hold.as_millis() as u64).await;
    let task = submit(&runtime, "long", json!({"gate": true})).await;
    wait_for_state(&runtime, &task.id, TaskState::Working).await;
    // The run outlasts the hold time (a lower bound on it, whatever the machine does).
    tokio::time::sleep(hold).await;
    skill.gate.add_permits(1);
    wait_for_state(&runtime, &task.id, TaskState::Completed).await;
    assert_eq!(store.gave_back.load(Ordering::SeqCst), 1);
    assert_eq!(store.nodes.releases.load(Ordering::SeqCst), 0);
    assert_eq!(store.nodes.taken(), 0);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_node_keeps_no_slot_of_a_skill_another_node_waits_for() {
    let (runtime, store, _skill) = node_holding(2, 60_000).await;
    let first = submit(&runtime, "first", json!({})).await;
    wait_for_state(&runtime, &first.id, TaskState::Completed).await;
    assert_eq!(store.nodes.taken(), 1, "kept");
    // Another node finds no slot free: the kept one goes back at once, not after a
    // tenth of the hold time, and the next run gives its own back as it ends.
    store.nodes.wanted.store(true, Ordering::SeqCst);
    let nodes = store.nodes.clone();
    eventually(
        || "the kept slot stayed taken".into(),
        || nodes.taken() == 0,
    )
    .await;
    let second = submit(&runtime, "second", json!({})).await;
    wait_for_state(&runtime, &second.id, TaskState::Completed).await;
    assert_eq!(store.created_with_slot.load(Ordering::SeqCst), 2);
    assert_eq!(store.gave_back.load(Ordering::SeqCst), 1);
    assert_eq!(nodes.releases.load(Ordering::SeqCst), 1);
    assert_eq!(nodes.taken(), 0);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_change_of_standing_drops_the_kept_slots_without_giving_them_back() {
    let (runtime, store, _skill) = node_holding(1, 60_000).await;
    let first = submit(&runtime, "first", json!({})).await;
    wait_for_state(&runtime, &first.id, TaskState::Completed).await;
    assert_eq!(store.nodes.taken(), 1, "kept");
    // Cut off and back: the node let go of every slot it held in the store.
    let nodes = &store.nodes;
    nodes.standing.send_replace(Standing::CutOff {
        stop_within: std::time::Duration::from_secs(1),
    });
    eventually(|| "never cut off".into(), || runtime.is_cut_off()).await;
    nodes.taken.lock().unwrap().fill(false);
    nodes.standing.send_replace(Standing::Holding);
    eventually(|| "never held again".into(), || !runtime.is_cut_off()).await;
    // The next run takes a slot from the store, not the one kept before, and the
    // node keeps that one (the test's store panics at a slot given back twice).
    let second = submit(&runtime, "second", json!({})).await;
    wait_for_state(&runtime, &second.id, TaskState::Completed).await;
    assert_eq!(store.created_with_slot.load(Ordering::SeqCst), 2);
    assert_eq!(store.gave_back.load(Ordering::SeqCst), 0);
    assert_eq!(store.nodes.releases.load(Ordering::SeqCst), 0);
    assert_eq!(store.nodes.taken(), 1);
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
}

/// A store that shares its slots with `Nodes` through the trait's own defaults (it
/// writes, and names its cluster, nothing more); `refusing`: its writes fail.
struct ByDefault {
    inner: MemoryStore,
    nodes: Arc<Nodes>,
    refusing: std::sync::atomic::AtomicBool,
}

fundi_runtime::store_with_own_writes!(ByDefault, inner, {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        if self.refusing.load(Ordering::SeqCst) {
            return Err(StoreError::database("refused by the test"));
        }
        self.inner.write(record, expected_version, events).await
    }

    fn cluster(&self) -> Option<Arc<dyn Cluster>> {
        Some(self.nodes.clone())
    }
});

fn second_task() -> TaskRecord {
    fundi_runtime::testing::store_contract::record("second", "ctx", TaskState::Working, 1, "ann")
}

#[tokio::test]
async fn the_stores_default_takes_the_slot_then_writes_and_writes_then_gives_it_back() {
    use fundi_runtime::store::TaskStore;
    use fundi_runtime::testing::store_contract::{created, record, with_status};
    let store = ByDefault {
        inner: MemoryStore::new(),
        nodes: Nodes::new(),
        refusing: false.into(),
    };
    let first = record("first", "ctx", TaskState::Working, 1, "ann");
    let (first_events, second_events) = ([created(&first)], [created(&second_task())]);
    let slot = store.create_with_run_slot(&first, &first_events, 1);
    assert_eq!(slot.await.unwrap(), Some(0));
    assert!(store.get(first.id()).await.unwrap().is_some());
    // No slot free: nothing written.
    let second = second_task();
    let none = store.create_with_run_slot(&second, &second_events, 1);
    assert_eq!(none.await.unwrap(), None);
    assert!(store.get(second.id()).await.unwrap().is_none());

    let mut status = first.task.status.clone();
    status.state = TaskState::Completed;
    let (ended, events) = with_status(&first, status);
    store
        .write_giving_back_run_slot(&ended, first.version, &events, 0)
        .await
        .unwrap();
    assert_eq!(store.nodes.taken(), 0);
    assert_eq!(store.nodes.releases.load(Ordering::SeqCst), 1);

    // A write that fails gives back the slot it took.
    store.refusing.store(true, Ordering::SeqCst);
    let refused = store.create_with_run_slot(&second, &second_events, 1);
    assert!(refused.await.is_err());
    assert_eq!(
        store.nodes.taken(),
        0,
        "the slot of a refused write stays taken"
    );
    assert_eq!(store.nodes.claims.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_store_no_other_node_shares_refuses_a_shared_slot() {
    use fundi_runtime::store::TaskStore;
    use fundi_runtime::testing::store_contract::{created, record};
    let store = MemoryStore::new();
    let task = record("t", "ctx", TaskState::Working, 1, "ann");
    let refused = store
        .create_with_run_slot(&task, &[created(&task)], 1)
        .await;
    let error = refused.unwrap_err().to_string();
    assert!(error.contains("no other node shares"), "{error}");
    assert!(store.get(task.id()).await.unwrap().is_none());
}
