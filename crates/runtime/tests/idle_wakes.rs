//! Waking parked idle tasks: many whose waits end together are all woken, a few at a
//! time; a wake the store could not read for is tried again; a cancel the store could
//! not write leaves the task running on.

#[path = "support/flaky_store.rs"]
mod flaky_store;
#[path = "support/poller.rs"]
mod poller;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use fundi_runtime::testing::scripted::*;
use fundi_runtime::{Access, Runtime, RuntimeConfig, RuntimeHandle, TaskId, TaskState};

use flaky_store::FlakyStore;
use poller::*;

/// More tasks than one wake check wakes, parked with waits that end together.
const TOGETHER: usize = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_waits_ending_together_wake_every_task() {
    // Long enough for all of them to be submitted and parked before the first wakes.
    let poller = Poller::new("poller", true, Duration::from_secs(5));
    let rt = start(50, &poller, None).await;
    let mut ids: Vec<TaskId> = Vec::new();
    for n in 0..TOGETHER {
        ids.push(submit_to(&rt, &poller, &format!("watch {n}")).await);
    }
    runs_reach(&poller, TOGETHER).await;
    parked(&rt, &ids[0]).await;
    poller.ready.store(true, Ordering::SeqCst);
    // Nothing but the waits' end wakes them (reads wake no task).
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let mut left = 0;
        for id in &ids {
            let task = rt.get(id, None, Access::Any).await.unwrap();
            left += usize::from(task.status.state != TaskState::Completed);
        }
        if left == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{left} of {TOGETHER} tasks not woken"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(poller.runs() >= 2 * TOGETHER, "{} runs", poller.runs());
}

/// A runtime with the poller on `store`, parking after 50 ms.
async fn start_on(store: &Arc<FlakyStore>, poller: &Poller) -> RuntimeHandle {
    let mut config = RuntimeConfig::default();
    config.park_after_ms = 50;
    Runtime::builder()
        .config(config)
        .shared_store(store.clone())
        .skill(poller.clone())
        .start()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_idle_task_whose_cancel_cannot_be_stored_runs_on() {
    let poller = Poller::new("poller", true, Duration::from_secs(3600));
    let store = FlakyStore::new();
    let rt = start_on(&store, &poller).await;
    let id = poll(&rt, &poller).await;
    parked(&rt, &id).await;
    store.refusing_cancels.store(true, Ordering::SeqCst);
    let refused = rt.cancel(&id, Access::Any).await.unwrap_err();
    assert!(refused.to_string().contains("disk is full"), "{refused}");
    // Woken with no run for the cancel, it runs again as its wake would have, and
    // parks again.
    runs_reach(&poller, 2).await;
    parked(&rt, &id).await;
    let task = rt.get(&id, None, Access::Any).await.unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    assert_eq!(poller.looks(), 2, "the run went on from its checkpoint");
    store.refusing_cancels.store(false, Ordering::SeqCst);
    let canceled = rt.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_the_store_could_not_read_for_is_tried_again() {
    let poller = Poller::new("poller", true, Duration::from_millis(300));
    let store = FlakyStore::new();
    let rt = start_on(&store, &poller).await;
    let id = poll(&rt, &poller).await;
    parked(&rt, &id).await;
    store.failing.store(true, Ordering::SeqCst);
    // The wait's end comes, and the wake's read of the task fails.
    eventually(
        || "the wake did not read the task".into(),
        || store.failed.load(Ordering::SeqCst) > 0,
    )
    .await;
    store.failing.store(false, Ordering::SeqCst);
    // Tried again, it wakes the task: a second run.
    runs_reach(&poller, 2).await;
}
