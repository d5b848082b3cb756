//! Leases on a real PostgreSQL server, for several nodes on one schema, at the store: a
//! task is written only by the node holding its lease's epoch; a lease left to expire
//! is taken over by another node; a node that cannot renew cuts itself off before its
//! leases run out, and once back claims anew only what is still its own. (Runs handed
//! between runtimes: `handover.rs`.)

use std::time::{Duration, Instant};

use chrono::Utc;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{LeaseConfig, PostgresConfig, PostgresStore};
use fundi_runtime::store::{Standing, StoreError, TaskRecord, TaskStore};
use fundi_runtime::testing::store_contract::{created, record, with_status};
use fundi_runtime::{Message, Part, TaskEvent, TaskId, TaskState, TaskStatus};

const DEADLINE: Duration = Duration::from_secs(30);

fn config(schema: &str, node: &str, ttl_ms: u64) -> PostgresConfig {
    let mut postgres_config = test_config(schema);
    postgres_config.lease = Some(LeaseConfig::new(node, Duration::from_millis(ttl_ms)));
    postgres_config
}

async fn open(schema: &str, node: &str, ttl_ms: u64) -> PostgresStore {
    PostgresStore::open(&config(schema, node, ttl_ms))
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()))
}

/// The task's lease as stored: holder and epoch.
async fn lease_of(store: &PostgresStore, schema: &str, id: &str) -> (Option<String>, i64) {
    let row = store
        .testing_client()
        .await
        .query_one(
            &format!("SELECT lease_node, lease_epoch FROM {schema}.tasks WHERE id = $1"),
            &[&id],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// The task one status note on: its next version, with the event.
fn advance(record: &TaskRecord, note: &str) -> (TaskRecord, Vec<TaskEvent>) {
    let status = TaskStatus {
        state: TaskState::Working,
        message: Some(Message::agent(vec![Part::text(note)])),
        timestamp: Utc::now(),
    };
    with_status(record, status)
}

/// When the lease of task `t` runs out: its node's.
async fn expiry(store: &PostgresStore, schema: &str) -> chrono::DateTime<Utc> {
    store
        .testing_client()
        .await
        .query_one(
            &format!(
                "SELECT n.expires FROM {schema}.tasks t \
                 JOIN {schema}.node_leases n ON n.node = t.lease_node WHERE t.id = 't'"
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// Polls `take_over` until it claims something, within the deadline.
async fn taken_over(store: &PostgresStore) -> Vec<TaskRecord> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let claimed = store.take_over().await.unwrap();
        if !claimed.is_empty() {
            return claimed;
        }
        assert!(Instant::now() < deadline, "nothing was taken over");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn writes_are_fenced_by_the_lease_and_an_expired_lease_is_taken_over() {
    let schema = fresh_schema();
    let a = open(&schema, "node-a", 2_000).await;
    let b = open(&schema, "node-b", 2_000).await;
    let task = record(
        "t",
        "ctx",
        TaskState::Working,
        Utc::now().timestamp_millis(),
        "ann",
    );
    a.commit(&task, 0, &[created(&task)]).await.unwrap();
    assert_eq!(lease_of(&a, &schema, "t").await, (Some("node-a".into()), 1));

    // The holder renews the lease (its expiry moves on), and a renewed lease is
    // neither taken over nor claimed by a starting node.
    let first = expiry(&a, &schema).await;
    let deadline = Instant::now() + DEADLINE;
    while expiry(&a, &schema).await <= first {
        assert!(Instant::now() < deadline, "the lease was never renewed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(b.take_over().await.unwrap().is_empty());
    assert!(b.active().await.unwrap().is_empty());
    let (task, events) = advance(&task, "step 1");
    a.commit(&task, task.version - 1, &events).await.unwrap();

    // Not renewed, it runs out and the other node takes the task, one epoch up.
    a.pause_lease_renewal();
    let claimed = taken_over(&b).await;
    assert_eq!(
        claimed.iter().map(|r| r.id().as_str()).collect::<Vec<_>>(),
        ["t"]
    );
    assert_eq!(
        (claimed[0].version, claimed[0].last_seq),
        (task.version, task.last_seq)
    );
    assert_eq!(lease_of(&a, &schema, "t").await, (Some("node-b".into()), 2));
    assert!(b.take_over().await.unwrap().is_empty(), "taken once");

    // The former holder cut itself off before its lease ran out: its write is refused
    // without reaching the database, and its check before a side effect fails too.
    let standing = a.cluster().unwrap().standing();
    assert!(
        matches!(*standing.borrow(), Standing::CutOff { .. }),
        "{:?}",
        *standing.borrow()
    );
    let (stale, stale_events) = advance(&task, "step 2 from a");
    let fenced = a
        .commit(&stale, task.version, &stale_events)
        .await
        .unwrap_err();
    assert!(matches!(fenced, StoreError::CutOff), "{fenced}");
    let id = TaskId::from("t");
    let held = a.cluster().unwrap().check_held(&id).await.unwrap_err();
    assert!(matches!(held, StoreError::CutOff), "{held}");
    match b.cluster().unwrap().check_held(&id).await {
        Ok(()) => {}
        Err(other) => panic!("the new holder holds it: {other}"),
    }
    let (next, next_events) = advance(&task, "step 2 from b");
    b.commit(&next, task.version, &next_events).await.unwrap();
    let stored = b.get(&TaskId::from("t")).await.unwrap().unwrap();
    assert_eq!(
        (stored.version, stored.last_seq),
        (next.version, next.last_seq)
    );
    // A version conflict stays a conflict, whoever writes.
    let conflict = b
        .commit(&next, task.version, &next_events)
        .await
        .unwrap_err();
    assert!(
        matches!(conflict, StoreError::Conflict { .. }),
        "{conflict}"
    );

    // A terminal task holds no lease.
    let mut done = next.clone();
    done.task.status.state = TaskState::Completed;
    done.version += 1;
    b.commit(&done, next.version, &[]).await.unwrap();
    assert_eq!(lease_of(&b, &schema, "t").await, (None, 2));
    drop_schemas(&[schema]).await;
}

/// Waits until `store`'s standing is what `wanted` accepts.
async fn standing_becomes(store: &PostgresStore, wanted: impl Fn(&Standing) -> bool) {
    let mut standing = store.cluster().unwrap().standing();
    tokio::time::timeout(DEADLINE, standing.wait_for(|s| wanted(s)))
        .await
        .expect("the standing never changed")
        .unwrap();
}

#[tokio::test]
async fn a_node_cut_off_writes_nothing_and_reclaims_what_is_still_its_own_once_back() {
    let schema = fresh_schema();
    let a = PostgresStore::open(&{
        let mut c = test_config(&schema);
        c.lease = Some(
            LeaseConfig::new("node-a", Duration::from_millis(1_500))
                .with_renew_deadline(Duration::from_millis(600)),
        );
        c
    })
    .await
    .unwrap();
    let now = Utc::now().timestamp_millis();
    let kept = record("kept", "ctx", TaskState::Working, now, "ann");
    let lost = record("lost", "ctx", TaskState::Working, now, "ann");
    for task in [&kept, &lost] {
        a.commit(task, 0, &[created(task)]).await.unwrap();
    }

    // Cut off at the renew deadline, well before the lease would run out.
    a.pause_lease_renewal();
    let cut = Instant::now();
    standing_becomes(&a, |s| matches!(s, Standing::CutOff { .. })).await;
    let mut standing = a.cluster().unwrap().standing();
    let Standing::CutOff { stop_within } = *standing.borrow_and_update() else {
        unreachable!()
    };
    assert!(
        stop_within <= Duration::from_millis(900),
        "runs stop before the lease can run out: {stop_within:?}"
    );
    let (next, events) = advance(&kept, "while cut off");
    assert!(matches!(
        a.commit(&next, kept.version, &events).await,
        Err(StoreError::CutOff)
    ));
    assert!(
        cut.elapsed() < Duration::from_millis(1_500),
        "the node noticed before its lease ran out"
    );

    // Meanwhile another node took one of its tasks.
    a.testing_client()
        .await
        .execute(
            &format!(
                "UPDATE {schema}.tasks SET lease_node = 'node-b', lease_epoch = lease_epoch + 1 \
                 WHERE id = 'lost'"
            ),
            &[],
        )
        .await
        .unwrap();

    // Back: it holds the database again, and claims anew only what is still its own.
    a.resume_lease_renewal();
    standing_becomes(&a, |s| *s == Standing::Holding).await;
    let reclaimed = a.reclaim().await.unwrap();
    assert_eq!(
        reclaimed
            .iter()
            .map(|r| r.id().as_str())
            .collect::<Vec<_>>(),
        ["kept"]
    );
    assert_eq!(
        lease_of(&a, &schema, "kept").await,
        (Some("node-a".into()), 2)
    );
    assert_eq!(
        lease_of(&a, &schema, "lost").await,
        (Some("node-b".into()), 2)
    );
    a.commit(&next, kept.version, &events).await.unwrap();
    let (stale, stale_events) = advance(&lost, "from the former holder");
    assert!(matches!(
        a.commit(&stale, lost.version, &stale_events).await,
        Err(StoreError::Fenced { .. })
    ));
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_restarted_node_takes_its_own_tasks_back_at_once_and_fences_its_former_self() {
    let schema = fresh_schema();
    let before = open(&schema, "node-a", 60_000).await;
    let task = record(
        "t",
        "ctx",
        TaskState::Working,
        Utc::now().timestamp_millis(),
        "ann",
    );
    before.commit(&task, 0, &[created(&task)]).await.unwrap();
    let other = open(&schema, "node-b", 60_000).await;
    assert!(
        other.active().await.unwrap().is_empty(),
        "another node's live lease"
    );

    // The same node id again, long before the lease would run out.
    let after = open(&schema, "node-a", 60_000).await;
    let active = after.active().await.unwrap();
    let found: Vec<(&str, u64)> = active
        .iter()
        .map(|r| (r.id().as_str(), r.version))
        .collect();
    assert_eq!(found, [("t", task.version)]);
    assert_eq!(
        lease_of(&after, &schema, "t").await,
        (Some("node-a".into()), 2)
    );
    let (stale, events) = advance(&task, "from the former process");
    let fenced = before
        .commit(&stale, task.version, &events)
        .await
        .unwrap_err();
    assert!(matches!(fenced, StoreError::Fenced { .. }), "{fenced}");
    after.commit(&stale, task.version, &events).await.unwrap();

    // One process per node id when a node holds its schema.
    let exclusive = {
        let mut postgres_config = config(&schema, "node-c", 60_000);
        postgres_config.exclusive = true;
        postgres_config
    };
    let _first = PostgresStore::open(&exclusive).await.unwrap();
    let refused = PostgresStore::open(&exclusive).await.unwrap_err();
    assert!(refused.to_string().contains("node \"node-c\""), "{refused}");
    drop_schemas(&[schema]).await;
}
