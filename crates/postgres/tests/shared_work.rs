//! Work beside tasks that several nodes on one schema share, on a real PostgreSQL
//! server: a push config is delivered by one node at a time (its delivery leased, its
//! cursor fenced, a dead node's delivery adopted), and a schedule's firing is taken by
//! one node.

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use fundi_ops::schedules::{Schedule, ScheduleStore};
use fundi_ops::testing::schedule;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{LeaseConfig, PostgresStore};
use fundi_runtime::store::{PushCursor, PushStore, StoreError, TaskStore};
use fundi_runtime::testing::store_contract::{created, push_config, record};
use fundi_runtime::{TaskId, TaskState};

const DEADLINE: Duration = Duration::from_secs(30);

async fn open(schema: &str, node: &str) -> PostgresStore {
    let mut config = test_config(schema);
    config.lease = Some(LeaseConfig::new(node, Duration::from_millis(1_000)));
    PostgresStore::open(&config)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()))
}

fn cursor(seq: u64) -> PushCursor {
    PushCursor {
        delivered_seq: seq,
        ..PushCursor::default()
    }
}

#[tokio::test]
async fn a_push_delivery_is_leased_to_one_node_and_adopted_when_its_node_dies() {
    let schema = fresh_schema();
    let a = open(&schema, "node-a").await;
    let b = open(&schema, "node-b").await;
    let task = record("t", "ctx", TaskState::Working, 1, "ann");
    a.commit(&task, 0, &[created(&task)]).await.unwrap();
    a.put_config(&push_config("t", "hook", "https://example.com/h"), 0)
        .await
        .unwrap();
    let t = TaskId::from("t");

    assert!(a.claim_delivery(&t, "hook").await.unwrap());
    assert!(!b.claim_delivery(&t, "hook").await.unwrap(), "held by a");
    assert!(b.orphaned().await.unwrap().is_empty(), "a renews it");
    a.set_cursor(&t, "hook", &cursor(1)).await.unwrap();
    let fenced = b.set_cursor(&t, "hook", &cursor(5)).await.unwrap_err();
    assert!(
        matches!(&fenced, StoreError::Fenced { holder, .. } if holder == "node-a"),
        "{fenced}"
    );
    assert_eq!(b.cursor(&t, "hook").await.unwrap(), Some(cursor(1)));

    // a stops renewing (it died): once the lease runs out, b finds the delivery
    // orphaned, takes it from where a's cursor stands, and a's cursor moves no more.
    a.pause_lease_renewal();
    let deadline = Instant::now() + DEADLINE;
    let orphaned = loop {
        let orphaned = b.orphaned().await.unwrap();
        if !orphaned.is_empty() {
            break orphaned;
        }
        assert!(Instant::now() < deadline, "a's delivery was never orphaned");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(orphaned.len(), 1);
    assert_eq!(orphaned[0].cursor, cursor(1));
    assert!(b.claim_delivery(&t, "hook").await.unwrap());
    // a cut itself off before its lease ran out: its cursor moves no more.
    assert!(matches!(
        a.set_cursor(&t, "hook", &cursor(2)).await,
        Err(StoreError::CutOff)
    ));
    b.set_cursor(&t, "hook", &cursor(2)).await.unwrap();

    // Let go once delivered, it is anybody's again (a's once it holds the database
    // again); a finished one is nobody's work.
    b.release_delivery(&t, "hook").await.unwrap();
    assert!(matches!(
        a.claim_delivery(&t, "hook").await,
        Err(StoreError::CutOff)
    ));
    a.resume_lease_renewal();
    let mut standing = a.cluster().unwrap().standing();
    tokio::time::timeout(
        DEADLINE,
        standing.wait_for(|s| *s == fundi_runtime::store::Standing::Holding),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(a.claim_delivery(&t, "hook").await.unwrap());
    let done = PushCursor {
        finished: true,
        ..cursor(3)
    };
    a.set_cursor(&t, "hook", &done).await.unwrap();
    a.release_delivery(&t, "hook").await.unwrap();
    assert!(b.orphaned().await.unwrap().is_empty());
    drop_schemas(&[schema]).await;
}

fn nightly(next_fire: chrono::DateTime<Utc>) -> Schedule {
    schedule("nightly", next_fire)
}

#[tokio::test]
async fn a_schedules_firing_is_taken_by_one_node() {
    let schema = fresh_schema();
    let a = open(&schema, "node-a").await;
    let b = open(&schema, "node-b").await;
    let due = Utc.with_ymd_and_hms(2026, 12, 3, 3, 0, 0).unwrap();
    let schedule = nightly(due);
    ScheduleStore::put(&a, &schedule).await.unwrap();

    assert!(a.claim_firing(&schedule).await.unwrap());
    assert!(!b.claim_firing(&schedule).await.unwrap(), "a is firing it");
    // a records the firing: the schedule moves on, and the old firing is nobody's.
    let moved = Schedule {
        next_fire: due + chrono::Duration::days(1),
        fired: 1,
        ..schedule.clone()
    };
    ScheduleStore::put(&a, &moved).await.unwrap();
    assert!(!b.claim_firing(&schedule).await.unwrap(), "fired already");

    // A claim whose node died before recording the firing lapses with its lease time.
    assert!(b.claim_firing(&moved).await.unwrap());
    assert!(!a.claim_firing(&moved).await.unwrap());
    let deadline = Instant::now() + DEADLINE;
    while !a.claim_firing(&moved).await.unwrap() {
        assert!(Instant::now() < deadline, "b's claim never lapsed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop_schemas(&[schema]).await;
}

/// Notifications on the schema's channel, as another node's listening session hears them.
struct Listener {
    client: tokio_postgres::Client,
    channel: String,
    heard: tokio::sync::mpsc::UnboundedReceiver<String>,
}

async fn listen(schema: &str) -> Listener {
    use futures::StreamExt;
    let (client, mut connection) = tokio_postgres::connect(&test_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()));
    let (sender, heard) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message {
                let _ = sender.send(n.payload().to_owned());
            }
        }
    });
    let channel = format!("fundi_{schema}");
    client
        .batch_execute(&format!("LISTEN {channel}"))
        .await
        .unwrap();
    Listener {
        client,
        channel,
        heard,
    }
}

/// Commits an event of `record`, and says whether the commit notified: a marker sent
/// after it arrives after its notification, if there was one (notifications arrive in
/// commit order), so nobody waits for a notification that may not come.
async fn commit_notifies(
    store: &PostgresStore,
    record: &mut fundi_runtime::store::TaskRecord,
    listener: &mut Listener,
) -> bool {
    let mut next = record.clone();
    next.version += 1;
    next.last_seq += 1;
    let event = fundi_runtime::TaskEvent {
        seq: next.last_seq,
        task_id: next.task.id.clone(),
        context_id: next.task.context_id.clone(),
        kind: fundi_runtime::TaskEventKind::Status(next.task.status.clone()),
    };
    store.commit(&next, record.version, &[event]).await.unwrap();
    *record = next;
    let marker = format!("marker {}", record.version);
    listener
        .client
        .execute("SELECT pg_notify($1, $2)", &[&listener.channel, &marker])
        .await
        .unwrap();
    let mut notified = false;
    loop {
        let heard = tokio::time::timeout(DEADLINE, listener.heard.recv())
            .await
            .expect("the marker never came")
            .unwrap();
        if heard == marker {
            return notified;
        }
        notified |= heard == "e:t";
    }
}

#[tokio::test]
async fn a_commit_notifies_only_while_another_node_follows_the_task() {
    let schema = fresh_schema();
    let a = open(&schema, "node-a").await;
    let b = open(&schema, "node-b").await;
    let mut listener = listen(&schema).await;
    let mut task = record("t", "ctx", TaskState::Working, 1, "ann");
    a.commit(&task, 0, &[created(&task)]).await.unwrap();

    assert!(
        !commit_notifies(&a, &mut task, &mut listener).await,
        "nobody follows it"
    );
    let cluster = b.cluster().expect("leased stores are a cluster");
    let following = cluster.watch(&TaskId::from("t")).await.unwrap();
    assert!(
        commit_notifies(&a, &mut task, &mut listener).await,
        "b follows it"
    );

    // Followed no more: b lets the registration go at its next renewal.
    drop(following);
    let deadline = Instant::now() + DEADLINE;
    while commit_notifies(&a, &mut task, &mut listener).await {
        assert!(Instant::now() < deadline, "b never stopped following");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop_schemas(&[schema]).await;
}
