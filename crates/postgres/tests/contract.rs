//! The `TaskStore` contract on a real PostgreSQL server: the machine's
//! (127.0.0.1:5432, database `test`) or `FUNDI_TEST_POSTGRES_URL`; each case in a schema
//! of its own, dropped after. A missing server fails the test: it never skips.

use std::sync::{Arc, Mutex};

use chrono::{TimeZone, Utc};
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{PostgresConfig, PostgresStore};
use fundi_runtime::store::{PushStore, StoreError, TaskStore};
use fundi_runtime::testing::store_contract::{
    advance, check_task_store, created, push_config, push_configs_are_kept_per_task, record,
    with_status,
};
use fundi_runtime::{TaskId, TaskState};

fn url() -> String {
    test_url()
}

fn config(schema: &str) -> PostgresConfig {
    test_config(schema)
}

#[tokio::test]
async fn the_task_store_contract_holds_on_postgres() {
    let made: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = made.clone();
    check_task_store("postgres", move || {
        let record = record.clone();
        async move {
            let schema = fresh_schema();
            record.lock().unwrap().push(schema.clone());
            let store = PostgresStore::open(&config(&schema))
                .await
                .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", url()));
            Arc::new(store) as Arc<dyn TaskStore>
        }
    })
    .await;
    let schemas = made.lock().unwrap().clone();
    drop_schemas(&schemas).await;
}

#[tokio::test]
async fn console_sessions_keep_their_contract_on_postgres() {
    let schema = fresh_schema();
    let store = PostgresStore::open(&config(&schema))
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", url()));
    fundi_ops::testing::session_contract::check_session_store("postgres", &store).await;
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_schema_from_a_newer_fundi_is_refused_and_bad_schema_names_too() {
    let schema = fresh_schema();
    PostgresStore::open(&config(&schema)).await.unwrap();
    // Opened again: nothing to migrate.
    PostgresStore::open(&config(&schema)).await.unwrap();
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "INSERT INTO {schema}.fundi_migrations (version) VALUES (999)"
        ))
        .await
        .unwrap();
    let refused = PostgresStore::open(&config(&schema)).await.unwrap_err();
    assert!(
        matches!(refused, StoreError::NewerFormat { found: 999, .. }),
        "{refused:?}"
    );
    let bad = PostgresStore::open(&config("Robert'); DROP TABLE x;--"))
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("store.postgres.schema"), "{bad}");
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn push_configs_keep_their_contract_and_leave_with_their_task() {
    let schema = fresh_schema();
    let store = PostgresStore::open(&config(&schema)).await.unwrap();
    push_configs_are_kept_per_task("postgres", &store).await;

    let ended = record("ended", "c1", TaskState::Working, 1_000, "u");
    store.commit(&ended, 0, &[created(&ended)]).await.unwrap();
    advance(&store, "ended", TaskState::Completed, 1_000).await;
    store
        .put_config(&push_config("ended", "hook", "https://x/h"), 0)
        .await
        .unwrap();
    let cutoff = Utc.timestamp_millis_opt(3_000).unwrap();
    assert_eq!(store.remove_ended_before(cutoff, 10).await.unwrap(), 1);
    let gone = TaskId::from("ended");
    assert!(
        store.configs(&gone).await.unwrap().is_empty(),
        "removed with its task"
    );
    assert!(store.cursor(&gone, "hook").await.unwrap().is_none());
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn one_exclusive_store_at_a_time_holds_a_schema() {
    let schema = fresh_schema();
    let exclusive = {
        let mut postgres_config = config(&schema);
        postgres_config.exclusive = true;
        postgres_config
    };
    let first = PostgresStore::open(&exclusive).await.unwrap();
    let refused = PostgresStore::open(&exclusive).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("another fundi node is using schema"),
        "{refused}"
    );
    // Not exclusive (a tool reading the store): allowed beside it.
    PostgresStore::open(&config(&schema)).await.unwrap();
    drop(first);
    // Let go once its session ends (the server sees the connection close).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match PostgresStore::open(&exclusive).await {
            Ok(_) => break,
            Err(error) => {
                assert!(std::time::Instant::now() < deadline, "still held: {error}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn the_statement_timeout_holds_on_every_pooled_connection() {
    let schema = fresh_schema();
    let mut timed = config(&schema);
    timed.statement_timeout = Some(std::time::Duration::from_millis(1500));
    timed.pool_size = 2;
    let store = PostgresStore::open(&timed).await.unwrap();
    // Two connections at once: each says the timeout, and a slower statement is cut.
    let (a, b) = (store.testing_client().await, store.testing_client().await);
    for client in [&a, &b] {
        let shown: String = client
            .query_one("SHOW statement_timeout", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(shown, "1500ms");
    }
    let cut = a.query_one("SELECT pg_sleep(3)", &[]).await.unwrap_err();
    let said = cut.as_db_error().map(|e| e.message().to_owned());
    assert!(
        said.as_deref()
            .is_some_and(|m| m.contains("statement timeout")),
        "{cut:?}"
    );
    drop((a, b));
    let default = PostgresStore::open(&config(&schema)).await.unwrap();
    let shown: String = default
        .testing_client()
        .await
        .query_one("SHOW statement_timeout", &[])
        .await
        .unwrap()
        .get(0);
    assert_ne!(
        shown, "1500ms",
        "without a setting the server's own default holds"
    );
    drop_schemas(&[schema]).await;
}

/// The record column of `id` in `schema`: the version its JSON names, the row's version
/// and where its tail starts.
async fn stored_row(store: &PostgresStore, schema: &str, id: &str) -> (i64, i64, Option<i64>) {
    let client = store.testing_client().await;
    let row = client
        .query_one(
            &format!(
                "SELECT (record->>'version')::bigint, version, tail_after \
                 FROM {schema}.tasks WHERE id = $1"
            ),
            &[&id],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

#[tokio::test]
async fn a_working_tasks_commits_send_its_events_and_not_its_record() {
    let schema = fresh_schema();
    let store = PostgresStore::open(&config(&schema)).await.unwrap();
    let mut tasks = Vec::new();
    for n in 0..12 {
        let task = record(&format!("w{n}"), "ctx", TaskState::Working, 1_000, "ann");
        store.commit(&task, 0, &[created(&task)]).await.unwrap();
        tasks.push(task);
    }
    // Three rounds of progress, each task's commits sent at once (several to a
    // statement), then one more commit of the first task alone.
    for round in 0..3 {
        let commits = tasks.iter().map(|task| {
            let mut status = task.task.status.clone();
            status.timestamp = Utc.timestamp_millis_opt(2_000 + round).unwrap();
            with_status(task, status)
        });
        let commits: Vec<_> = commits.collect();
        let writes = commits
            .iter()
            .map(|(next, events)| store.commit(next, next.version - 1, events));
        for written in futures::future::join_all(writes).await {
            written.unwrap();
        }
        tasks = commits.into_iter().map(|(next, _)| next).collect();
    }
    assert!(store.most_commits_sent_at_once() > 1);
    let (mut alone, events) = with_status(&tasks[0], tasks[0].task.status.clone());
    alone.checkpoint = Some(serde_json::json!({"page": 3}));
    store.commit(&alone, 4, &events).await.unwrap();
    tasks[0] = alone;

    for task in &tasks {
        let id = task.id().as_str();
        let row = stored_row(&store, &schema, id).await;
        assert_eq!(
            row,
            (1, task.version as i64, Some(1)),
            "{id}: the record as created"
        );
        assert_eq!(
            store.get(task.id()).await.unwrap().as_ref(),
            Some(task),
            "{id}"
        );
    }
    // Coming to rest writes the record whole again.
    let mut status = tasks[0].task.status.clone();
    status.state = TaskState::InputRequired;
    let (resting, events) = with_status(&tasks[0], status);
    store.commit(&resting, 5, &events).await.unwrap();
    assert_eq!(stored_row(&store, &schema, "w0").await, (6, 6, None));
    assert_eq!(store.get(resting.id()).await.unwrap(), Some(resting));
    drop_schemas(&[schema]).await;
}
