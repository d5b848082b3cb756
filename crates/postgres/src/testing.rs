//! For tests on a real PostgreSQL server (feature `test-util`): where it is, a fresh
//! schema for each test, and dropping it after.

/// The test server: `FUNDI_TEST_POSTGRES_URL`, else the machine's
/// (127.0.0.1:5432, database `test`).
pub fn test_url() -> String {
    std::env::var("FUNDI_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A store's settings on the test server in `schema`: a small pool, the server's own
/// statement timeout, plain connections, no lock, no leases (tests change what they
/// need with `..test_config(schema)`).
pub fn test_config(schema: &str) -> crate::PostgresConfig {
    crate::PostgresConfig {
        url: test_url(),
        ca_file: None,
        schema: schema.into(),
        pool_size: 4,
        statements_at_once: 2,
        statement_timeout: None,
        exclusive: false,
        lease: None,
    }
}

/// A schema name no other test uses.
pub fn fresh_schema() -> String {
    format!("fundi_test_{}", uuid::Uuid::now_v7().simple())
}

/// Drops these schemas and what they hold; panics if the server cannot be reached.
pub async fn drop_schemas(schemas: &[String]) {
    let (client, connection) = tokio_postgres::connect(&test_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()));
    tokio::spawn(connection);
    for schema in schemas {
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .await
            .unwrap_or_else(|e| panic!("dropping {schema}: {e}"));
    }
}

/// Creates `schema` on the test server at version `version` of the store's migrations,
/// as a build that knew only those left it.
pub async fn migrate_schema_to(schema: &str, version: i64) {
    let (mut client, connection) = tokio_postgres::connect(&test_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()));
    tokio::spawn(connection);
    crate::migrations::migrate_to(&mut client, schema, version)
        .await
        .unwrap_or_else(|e| panic!("migrating {schema} to version {version}: {e}"));
}
