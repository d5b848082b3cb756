//! Push delivery of tasks that park: a task with a push config gives up its actor like
//! any other once it waits for a person, its delivery rests (no worker follows it),
//! and whatever wakes it (a message, a cancel) brings its delivery back, with every
//! event delivered once, in order. Across a restart, resuming the deliveries wakes no
//! task, and one left behind catches up before it rests. A real gateway on 127.0.0.1:0
//! and a real webhook receiver.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fundi_runtime::store::{PushConfig, PushCursor, PushEntry, PushStore};
use fundi_runtime::{MemoryStore, StoreError, TaskId};
use serde_json::{Value, json};

use common::push::{
    Fixture, Mode, Receiver, fixture_on, fixture_with_push_store, got_terminal, seqs, settings,
};
use common::{DEADLINE, message};

/// Tasks park after this long with nothing happening.
const PARK_AFTER_MS: u64 = 30;

/// Polls `holds` until it is true; fails with `what` at the deadline.
async fn until(what: &str, holds: impl Fn() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !holds() {
        assert!(Instant::now() < deadline, "{what}: never happened");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Starts a task that asks for input, with a push config to `receiver`; returns its id
/// once every event so far is delivered and the task parked with its delivery resting.
async fn ask_and_park(fx: &Fixture, receiver: &Receiver) -> String {
    let config = json!({"id": "hook", "url": receiver.url});
    let task = fx.send_with_push(json!({"ask": true}), config, false).await;
    let id = task["id"].as_str().unwrap().to_owned();
    delivered_so_far(fx, receiver, &id).await;
    parked_and_resting(fx).await;
    id
}

/// A first start on `store` whose task asks for input and parks with its delivery
/// resting (see `ask_and_park`), then stops: the task's id, for the next start.
async fn parked_before_a_restart(store: &Arc<MemoryStore>, receiver: &Receiver) -> String {
    let first = fixture_on(store.clone(), settings(), PARK_AFTER_MS).await;
    let id = ask_and_park(&first, receiver).await;
    first.runtime.shutdown(Duration::from_secs(1)).await;
    id
}

/// Waits until the receiver has every deliverable event of the task stored so far.
async fn delivered_so_far(fx: &Fixture, receiver: &Receiver, id: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let stored = fx.deliverable(id).await;
        if seqs(&receiver.hits()) == stored {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "delivered {:?}, stored {stored:?}",
            seqs(&receiver.hits())
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn parked_and_resting(fx: &Fixture) {
    until("the task parked", || fx.runtime.live_tasks() == 0).await;
    until("the delivery rested", || fx.push.resting_deliveries() == 1).await;
}

fn answer(id: &str) -> Value {
    let mut answer = message("later", Value::Null);
    answer["taskId"] = json!(id);
    answer
}

/// Waits for the terminal event; checks that every deliverable event arrived once, in
/// order, and that nothing rests any more.
async fn delivered_to_the_end(fx: &Fixture, receiver: &Receiver, id: &str) {
    let hits = receiver
        .wait_until("the terminal event", got_terminal)
        .await;
    assert_eq!(seqs(&hits), fx.deliverable(id).await);
    assert_eq!(seqs(&hits).len(), hits.len(), "an event was sent twice");
    until("nothing rests", || fx.push.resting_deliveries() == 0).await;
}

/// The states in the hits from `from` on.
fn states_from(receiver: &Receiver, from: usize) -> Vec<String> {
    receiver.hits()[from..]
        .iter()
        .map(|h| {
            h.body["statusUpdate"]["status"]["state"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_with_a_push_config_parks_and_whatever_wakes_it_brings_its_delivery_back() {
    let fx = fixture_on(Arc::new(MemoryStore::new()), settings(), PARK_AFTER_MS).await;
    let receiver = Receiver::start(Mode::Ok).await;
    let id = ask_and_park(&fx, &receiver).await;
    let asked = receiver.hits().len();
    assert_eq!(
        states_from(&receiver, asked - 1),
        ["TASK_STATE_INPUT_REQUIRED"]
    );

    // A message wakes it: its run starts again from its first message (the test skill
    // keeps no checkpoint) and asks again, and it parks again.
    fx.ok("SendMessage", json!({"message": answer(&id)})).await;
    delivered_so_far(&fx, &receiver, &id).await;
    parked_and_resting(&fx).await;
    delivered_so_far(&fx, &receiver, &id).await;
    assert_eq!(
        states_from(&receiver, asked),
        ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]
    );

    // A cancel wakes it again, and ends it.
    let answered = receiver.hits().len();
    fx.ok("CancelTask", json!({"id": id})).await;
    delivered_to_the_end(&fx, &receiver, &id).await;
    assert_eq!(states_from(&receiver, answered), ["TASK_STATE_CANCELED"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_deliveries_after_a_restart_wakes_no_task_and_a_cancel_is_delivered() {
    let store = Arc::new(MemoryStore::new());
    let receiver = Receiver::start(Mode::Ok).await;
    let id = parked_before_a_restart(&store, &receiver).await;

    // The next start resumes the unfinished delivery: it reads what is stored and
    // rests, and the task stays parked.
    let second = fixture_on(store, settings(), PARK_AFTER_MS).await;
    until("the delivery rested", || {
        second.push.resting_deliveries() == 1
    })
    .await;
    assert_eq!(
        second.runtime.live_tasks(),
        0,
        "resuming the delivery woke the task"
    );

    second.ok("CancelTask", json!({"id": id})).await;
    delivered_to_the_end(&second, &receiver, &id).await;
    let last = receiver.hits().last().unwrap().body.clone();
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_left_behind_catches_up_at_the_next_start_without_waking_its_task() {
    let store = Arc::new(MemoryStore::new());
    // The receiver refuses everything: the delivery stays at its first event.
    let receiver = Receiver::start(Mode::Status(503)).await;
    let first = fixture_on(store.clone(), settings(), PARK_AFTER_MS).await;
    let config = json!({"id": "hook", "url": receiver.url});
    let task = first
        .send_with_push(json!({"ask": true}), config, false)
        .await;
    let id = task["id"].as_str().unwrap().to_owned();
    receiver
        .wait_until("a first attempt", |hits| !hits.is_empty())
        .await;
    until("the task parked", || first.runtime.live_tasks() == 0).await;
    first.runtime.shutdown(Duration::from_secs(1)).await;
    drop(first);

    receiver.set(Mode::Ok);
    let second = fixture_on(store, settings(), PARK_AFTER_MS).await;
    delivered_so_far(&second, &receiver, &id).await;
    until("the delivery rested", || {
        second.push.resting_deliveries() == 1
    })
    .await;
    assert_eq!(second.runtime.live_tasks(), 0, "catching up woke the task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_replaced_while_its_task_is_parked_delivers_to_its_new_address() {
    let fx = fixture_on(Arc::new(MemoryStore::new()), settings(), PARK_AFTER_MS).await;
    let old = Receiver::start(Mode::Ok).await;
    let id = ask_and_park(&fx, &old).await;
    let new = Receiver::start(Mode::Ok).await;
    fx.ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "hook", "url": new.url}),
    )
    .await;
    until("the replacement rested", || {
        fx.push.resting_deliveries() == 1
    })
    .await;

    let before = old.hits().len();
    fx.ok("CancelTask", json!({"id": id})).await;
    let hits = new.wait_until("the terminal event", got_terminal).await;
    assert_eq!(
        hits.last().unwrap().body["statusUpdate"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
    assert_eq!(old.hits().len(), before, "the old address got more");
}

/// A push store whose first read of the unfinished deliveries fails and whose next
/// waits until `open` is told: a start's slow or failing read, on demand.
struct SlowToRead {
    inner: Arc<MemoryStore>,
    reads: AtomicUsize,
    open: tokio::sync::Semaphore,
}

#[async_trait::async_trait]
impl PushStore for SlowToRead {
    async fn put_config(&self, config: &PushConfig, start_after: u64) -> Result<(), StoreError> {
        self.inner.put_config(config, start_after).await
    }
    async fn config(&self, task: &TaskId, id: &str) -> Result<Option<PushConfig>, StoreError> {
        self.inner.config(task, id).await
    }
    async fn configs(&self, task: &TaskId) -> Result<Vec<PushConfig>, StoreError> {
        self.inner.configs(task).await
    }
    async fn delete_config(&self, task: &TaskId, id: &str) -> Result<bool, StoreError> {
        self.inner.delete_config(task, id).await
    }
    async fn cursor(&self, task: &TaskId, id: &str) -> Result<Option<PushCursor>, StoreError> {
        self.inner.cursor(task, id).await
    }
    async fn set_cursor(
        &self,
        task: &TaskId,
        id: &str,
        cursor: &PushCursor,
    ) -> Result<(), StoreError> {
        self.inner.set_cursor(task, id, cursor).await
    }
    async fn unfinished(&self) -> Result<Vec<PushEntry>, StoreError> {
        if self.reads.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(StoreError::engine(std::io::Error::other(
                "the disk said no",
            )));
        }
        let _open = self.open.acquire().await.unwrap();
        self.inner.unfinished().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_serves_while_it_reads_its_deliveries_and_a_failed_read_is_made_again() {
    let store = Arc::new(MemoryStore::new());
    let receiver = Receiver::start(Mode::Ok).await;
    let id = parked_before_a_restart(&store, &receiver).await;

    let slow = Arc::new(SlowToRead {
        inner: store.clone(),
        reads: AtomicUsize::new(0),
        open: tokio::sync::Semaphore::new(0),
    });
    let second = fixture_with_push_store(store, slow.clone(), settings(), PARK_AFTER_MS).await;
    // The first read failed and the second waits: the server answers all the same.
    until("the read made again", || {
        slow.reads.load(Ordering::SeqCst) == 2
    })
    .await;
    let task = second.ok("GetTask", json!({"id": id})).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(second.push.resting_deliveries(), 0, "nothing read yet");

    slow.open.add_permits(1);
    until("the delivery rested", || {
        second.push.resting_deliveries() == 1
    })
    .await;
    second.ok("CancelTask", json!({"id": id})).await;
    delivered_to_the_end(&second, &receiver, &id).await;
}
