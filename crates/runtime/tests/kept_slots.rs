//! Run slots a node keeps between its runs (`runtime.hold-run-slots-ms`), on a store
//! whose slots several nodes share: the commit that ends a run leaves its slot to the
//! node's next run of the skill, a slot nobody takes goes back once idle, none is kept
//! while another node waits for one, and a change of standing forgets them all.

#[path = "support/shared_nodes.rs"]
mod shared_nodes;

use std::sync::atomic::Ordering;

use fundi_runtime::store::Standing;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{SubmitRequest, TaskState};
use serde_json::json;

use shared_nodes::*;

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
