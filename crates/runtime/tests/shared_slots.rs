//! Run slots that several nodes share (a store with a `Cluster`), as the runtime uses
//! them: a new task takes its store slot in its first commit and gives it back in the
//! commit that ends its run, so a run that neither queues nor waits asks the store
//! nothing of its own; a task that finds no store slot free is stored to queue, and
//! asks for one until another node frees it. (The statements themselves, on
//! PostgreSQL: `fundi-postgres`'s `run_slots.rs`; slots a node keeps between its runs:
//! `kept_slots.rs`.)

#[path = "support/shared_nodes.rs"]
mod shared_nodes;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use fundi_runtime::store::{Cluster, StoreError, TaskRecord};
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{Access, MemoryStore, SubmitRequest, TaskEvent, TaskState};
use serde_json::json;

use shared_nodes::*;

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
