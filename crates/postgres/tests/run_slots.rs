//! Run slots taken and given back within a task's commits, on a real PostgreSQL server
//! with two nodes on one schema: a new task's first commit takes one of its skill's
//! slots or writes nothing, and the commit that ends a run gives the slot back only if
//! it is written. (The runtime's use of them: `routing.rs`'s concurrency limit across
//! the nodes, and the runtime's `shared_slots.rs`.)

use std::time::Duration;

use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{LeaseConfig, PostgresStore};
use fundi_runtime::store::{StoreError, TaskRecord, TaskStore};
use fundi_runtime::testing::store_contract::{created, record, with_status};
use fundi_runtime::{TaskEvent, TaskState};

async fn node(schema: &str, name: &str) -> PostgresStore {
    node_leased_for(schema, name, Duration::from_secs(10)).await
}

/// A node whose leases last `ttl` (renewed every third of it).
async fn node_leased_for(schema: &str, name: &str, ttl: Duration) -> PostgresStore {
    let mut config = test_config(schema);
    config.lease = Some(LeaseConfig::new(name, ttl));
    PostgresStore::open(&config)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()))
}

/// A new working task `id` of skill echo, and its first events.
fn new_task(id: &str) -> (TaskRecord, Vec<TaskEvent>) {
    let task = record(id, "ctx", TaskState::Working, 1, "ann");
    let events = vec![created(&task)];
    (task, events)
}

/// `record` ended completed: its next version, with the event.
fn completed(record: &TaskRecord) -> (TaskRecord, Vec<TaskEvent>) {
    let mut status = record.task.status.clone();
    status.state = TaskState::Completed;
    with_status(record, status)
}

/// The node holding each of the skill's slots, in slot order.
async fn holders(store: &PostgresStore, schema: &str) -> Vec<Option<String>> {
    let rows = store
        .testing_client()
        .await
        .query(
            &format!("SELECT node FROM {schema}.run_slots WHERE skill = 'echo' ORDER BY slot"),
            &[],
        )
        .await
        .unwrap();
    rows.iter().map(|row| row.get(0)).collect()
}

#[tokio::test]
async fn a_new_task_is_written_with_a_free_run_slot_or_not_at_all() {
    let schema = fresh_schema();
    let (a, b) = (node(&schema, "node-a").await, node(&schema, "node-b").await);
    let (first, first_events) = new_task("first");
    let slot = a.create_with_run_slot(&first, &first_events, 1).await;
    assert_eq!(slot.unwrap(), Some(0), "the only slot, free");
    assert!(a.get(first.id()).await.unwrap().is_some());
    assert_eq!(holders(&a, &schema).await, [Some("node-a".to_owned())]);

    // Every slot taken, on this node or another: nothing is written.
    let (second, second_events) = new_task("second");
    for store in [&a, &b] {
        let slot = store.create_with_run_slot(&second, &second_events, 1).await;
        assert_eq!(slot.unwrap(), None, "no slot is free");
        assert!(store.get(second.id()).await.unwrap().is_none());
        assert!(store.events(second.id(), 0, 10).await.unwrap().is_empty());
    }
    // A larger limit has a free slot for the other node.
    let slot = b.create_with_run_slot(&second, &second_events, 2).await;
    assert_eq!(slot.unwrap(), Some(1));
    assert_eq!(
        holders(&a, &schema).await,
        [Some("node-a".to_owned()), Some("node-b".to_owned())]
    );
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn the_commit_that_ends_a_run_gives_its_slot_back_only_if_it_is_written() {
    let schema = fresh_schema();
    let (a, b) = (node(&schema, "node-a").await, node(&schema, "node-b").await);
    let (first, first_events) = new_task("first");
    assert_eq!(
        a.create_with_run_slot(&first, &first_events, 1)
            .await
            .unwrap(),
        Some(0)
    );
    let (ended, ended_events) = completed(&first);

    // A commit refused (a stale version) gives nothing back.
    let stale = a
        .write_giving_back_run_slot(&ended, 5, &ended_events, 0)
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    // Nor does one from a node that does not hold the task (fenced).
    let fenced = b
        .write_giving_back_run_slot(&ended, first.version, &ended_events, 0)
        .await;
    assert!(
        matches!(fenced, Err(StoreError::Fenced { .. })),
        "{fenced:?}"
    );
    assert_eq!(holders(&a, &schema).await, [Some("node-a".to_owned())]);

    // Written: the slot is free, for either node.
    a.write_giving_back_run_slot(&ended, first.version, &ended_events, 0)
        .await
        .unwrap();
    let stored = a.get(first.id()).await.unwrap().unwrap();
    assert_eq!(stored.state(), TaskState::Completed);
    assert_eq!(holders(&a, &schema).await, [None]);
    let (second, second_events) = new_task("second");
    let slot = b.create_with_run_slot(&second, &second_events, 1).await;
    assert_eq!(slot.unwrap(), Some(0));
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_store_no_other_node_shares_has_no_run_slots_to_take() {
    let schema = fresh_schema();
    let alone = PostgresStore::open(&test_config(&schema)).await.unwrap();
    let (task, events) = new_task("t");
    let refused = alone.create_with_run_slot(&task, &events, 1).await;
    let error = refused.unwrap_err().to_string();
    assert!(error.contains("no other node shares"), "{error}");
    assert!(alone.get(task.id()).await.unwrap().is_none());
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_commit_rolled_back_to_break_a_deadlock_is_sent_again() {
    let schema = fresh_schema();
    let a = node(&schema, "node-a").await;
    let (task, events) = new_task("t");
    assert_eq!(
        a.create_with_run_slot(&task, &events, 1).await.unwrap(),
        Some(0)
    );
    // Another transaction holds the slot's row, so the commit that ends the run takes
    // its task's row and waits for the slot's...
    let other = a.testing_client().await;
    other
        .batch_execute(&format!(
            "BEGIN; SET LOCAL deadlock_timeout = '10s';
             SELECT * FROM {schema}.run_slots WHERE slot = 0 FOR UPDATE"
        ))
        .await
        .unwrap();
    let (ended, ended_events) = completed(&task);
    let committing = {
        let a = a.clone();
        tokio::spawn(async move {
            a.write_giving_back_run_slot(&ended, 1, &ended_events, 0)
                .await
        })
    };
    let watcher = a.testing_client().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE wait_event_type = 'Lock' AND query LIKE '%freed AS%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the commit never waited"
        );
        tokio::task::yield_now().await;
    }
    // ... while that transaction now wants the task's row: PostgreSQL breaks the
    // deadlock by rolling back the commit, which looks for deadlocks first (after the
    // server's deadlock_timeout; the other transaction looks only after 10 s).
    other
        .execute(
            &format!("UPDATE {schema}.tasks SET updated_ms = updated_ms WHERE id = 't'"),
            &[],
        )
        .await
        .expect("the other transaction, once the commit was rolled back");
    other.batch_execute("ROLLBACK").await.unwrap();
    committing.await.unwrap().expect("the commit, sent again");
    let stored = a.get(task.id()).await.unwrap().unwrap();
    assert_eq!(stored.state(), TaskState::Completed);
    assert_eq!(holders(&a, &schema).await, [None]);
    drop_schemas(&[schema]).await;
}

/// Polls `done` every 20 ms until it holds, failing the test after 20 s.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_node_that_finds_no_slot_free_is_known_to_want_one_until_it_stops_asking() {
    let schema = fresh_schema();
    let ttl = Duration::from_millis(600);
    let a = node_leased_for(&schema, "node-a", ttl).await;
    let b = node_leased_for(&schema, "node-b", ttl).await;
    let (a, b) = (a.cluster().unwrap(), b.cluster().unwrap());
    assert_eq!(a.claim_run_slot("echo", 1).await.unwrap(), Some(0));
    assert!(!a.run_slot_wanted_elsewhere("echo"));
    // B finds none free: A learns it at its next renewal, for that skill alone.
    assert_eq!(b.claim_run_slot("echo", 1).await.unwrap(), None);
    until("node-a never learned that node-b waits", || {
        a.run_slot_wanted_elsewhere("echo")
    })
    .await;
    assert!(!a.run_slot_wanted_elsewhere("other"));
    assert!(!b.run_slot_wanted_elsewhere("echo"), "its own want");
    // B asks no more: its want lapses a lease time after its last ask.
    until("node-b's want never lapsed", || {
        !a.run_slot_wanted_elsewhere("echo")
    })
    .await;
    drop_schemas(&[schema]).await;
}
