//! A node's lease on a real PostgreSQL server: one row per node, whatever the node
//! holds. Renewing it writes no task's row, and the tasks of nodes that held a lease
//! per task (as an earlier build did) stay with them until the last of those leases
//! runs out, and are taken over after. (Fencing and takeovers: `leases.rs`.)

use std::time::{Duration, Instant};

use chrono::Utc;
use fundi_postgres::testing::{
    drop_schemas, fresh_schema, migrate_schema_to, test_config, test_url,
};
use fundi_postgres::{LeaseConfig, PostgresStore};
use fundi_runtime::TaskState;
use fundi_runtime::store::{TaskRecord, TaskStore};
use fundi_runtime::testing::store_contract::{created, record};
use tokio_postgres::types::Json;

const DEADLINE: Duration = Duration::from_secs(30);

async fn open(schema: &str, node: &str, ttl_ms: u64) -> PostgresStore {
    let mut config = test_config(schema);
    config.lease = Some(LeaseConfig::new(node, Duration::from_millis(ttl_ms)));
    PostgresStore::open(&config)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()))
}

fn working(id: &str) -> TaskRecord {
    record(
        id,
        "ctx",
        TaskState::Working,
        Utc::now().timestamp_millis(),
        "ann",
    )
}

/// Each task's row version (`xmin`: the transaction that wrote it last), by id.
async fn row_versions(store: &PostgresStore, schema: &str) -> Vec<(String, String)> {
    let rows = store
        .testing_client()
        .await
        .query(
            &format!("SELECT id, xmin::text FROM {schema}.tasks ORDER BY id"),
            &[],
        )
        .await
        .unwrap();
    rows.iter().map(|row| (row.get(0), row.get(1))).collect()
}

/// When `node`'s lease runs out, by the database's clock.
async fn node_expiry(store: &PostgresStore, schema: &str, node: &str) -> chrono::DateTime<Utc> {
    store
        .testing_client()
        .await
        .query_one(
            &format!("SELECT expires FROM {schema}.node_leases WHERE node = $1"),
            &[&node],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_renewal_writes_the_nodes_lease_and_no_task_row() {
    let schema = fresh_schema();
    let a = open(&schema, "node-a", 600).await;
    for n in 0..20 {
        let task = working(&format!("t{n:02}"));
        a.commit(&task, 0, &[created(&task)]).await.unwrap();
    }
    let before = row_versions(&a, &schema).await;
    assert_eq!(before.len(), 20);

    // Two renewals (one every 200 ms) move the node's lease on...
    let mut last = node_expiry(&a, &schema, "node-a").await;
    let deadline = Instant::now() + DEADLINE;
    for _ in 0..2 {
        loop {
            let now = node_expiry(&a, &schema, "node-a").await;
            if now > last {
                last = now;
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the node's lease was never renewed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // ...and leave every task's row as its commit wrote it, still held.
    assert_eq!(row_versions(&a, &schema).await, before);
    let b = open(&schema, "node-b", 600).await;
    assert!(b.take_over().await.unwrap().is_empty());
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn tasks_leased_one_by_one_by_an_earlier_build_stay_with_their_node_until_its_leases_run_out()
{
    let schema = fresh_schema();
    // The schema as the build before node leases left it: a task of a node whose lease
    // runs for three more seconds, and one of a node whose lease ran out.
    migrate_schema_to(&schema, 11).await;
    let (client, connection) = tokio_postgres::connect(&test_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    for (id, node, expires_in_ms) in [("live", "node-old", 3_000i64), ("gone", "node-gone", -1)] {
        let task = working(id);
        client
            .execute(
                &format!(
                    "INSERT INTO {schema}.tasks (id, version, record, context_id, state, \
                     terminal, owner, updated_ms, lease_node, lease_epoch, lease_expires) \
                     VALUES ($1, 1, $2, 'ctx', $3, false, 'ann', 0, $4, 1, \
                     clock_timestamp() + $5::bigint * interval '1 millisecond')"
                ),
                &[
                    &id,
                    &Json(&task),
                    &TaskState::Working.wire_name(),
                    &node,
                    &expires_in_ms,
                ],
            )
            .await
            .unwrap();
    }

    // A node of this build migrates the schema: each former holder's lease lasts as
    // long as the last of its tasks' did.
    let b = open(&schema, "node-b", 2_000).await;
    let holders = b.node_leases().await.unwrap();
    let holder = |node: &str| {
        holders
            .iter()
            .find(|h| h.node.as_deref() == Some(node))
            .unwrap_or_else(|| panic!("{node} holds nothing: {holders:?}"))
    };
    assert_eq!(
        (holder("node-old").tasks, holder("node-old").expired),
        (1, false)
    );
    assert_eq!(
        (holder("node-gone").tasks, holder("node-gone").expired),
        (1, true)
    );

    // The task whose lease had run out is taken over at once; the other once its
    // node's lease runs out, one epoch up.
    let claimed = b.take_over().await.unwrap();
    assert_eq!(ids(&claimed), ["gone"]);
    let deadline = Instant::now() + DEADLINE;
    let claimed = loop {
        let claimed = b.take_over().await.unwrap();
        if !claimed.is_empty() {
            break claimed;
        }
        assert!(Instant::now() < deadline, "the task was never taken over");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(ids(&claimed), ["live"]);
    let row = client
        .query_one(
            &format!(
                "SELECT t.lease_node, t.lease_epoch, n.expires < clock_timestamp() \
                 FROM {schema}.tasks t, {schema}.node_leases n \
                 WHERE t.id = 'live' AND n.node = 'node-old'"
            ),
            &[],
        )
        .await
        .unwrap();
    let (node, epoch, lapsed): (String, i64, bool) = (row.get(0), row.get(1), row.get(2));
    assert_eq!((node.as_str(), epoch, lapsed), ("node-b", 2, true));
    drop_schemas(&[schema]).await;
}

fn ids(records: &[TaskRecord]) -> Vec<&str> {
    records.iter().map(|r| r.id().as_str()).collect()
}
