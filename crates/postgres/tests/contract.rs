//! The `TaskStore` contract on a real PostgreSQL server: the machine's
//! (127.0.0.1:5432, database `test`) or `FUNDI_TEST_POSTGRES_URL`; each case in a schema
//! of its own, dropped after. A missing server fails the test: it never skips.

use std::sync::{Arc, Mutex};

use fundi_postgres::{PostgresConfig, PostgresStore};
use fundi_runtime::store::{StoreError, TaskStore};
use fundi_runtime::testing::store_contract::check_task_store;

fn url() -> String {
    std::env::var("FUNDI_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

fn config(schema: &str) -> PostgresConfig {
    PostgresConfig {
        url: url(),
        schema: schema.into(),
        pool_size: 4,
    }
}

fn fresh_schema() -> String {
    format!("fundi_test_{}", uuid::Uuid::now_v7().simple())
}

async fn drop_schemas(schemas: &[String]) {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .expect("PostgreSQL at FUNDI_TEST_POSTGRES_URL (or 127.0.0.1:5432/test)");
    tokio::spawn(connection);
    for schema in schemas {
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .await
            .unwrap();
    }
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
