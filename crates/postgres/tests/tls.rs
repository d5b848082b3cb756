//! TLS to the database, on the test server's own certificate (its `ssl_cert_file`,
//! self-signed for `localhost`, as Debian's PostgreSQL makes it): with `sslmode=require`
//! the store connects over TLS only when the certificate is trusted (the CA file named)
//! and names the host it was asked for; without it, the connection is plain.

use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{PostgresConfig, PostgresStore};

/// The server's certificate file, as the server says (readable on this machine).
async fn server_certificate() -> std::path::PathBuf {
    let (client, connection) = tokio_postgres::connect(&test_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()));
    tokio::spawn(connection);
    let row = client.query_one("SHOW ssl_cert_file", &[]).await.unwrap();
    let path: String = row.get(0);
    assert!(std::path::Path::new(&path).exists(), "{path}");
    path.into()
}

/// The test URL's database and user, reached at 127.0.0.1 under the name `host`.
fn url_as(host: &str, extra: &str) -> String {
    let parsed: tokio_postgres::Config = test_url().parse().unwrap();
    let user = parsed.get_user().unwrap_or("postgres");
    let database = parsed.get_dbname().unwrap_or("test");
    let port = parsed.get_ports().first().copied().unwrap_or(5432);
    format!("host={host} hostaddr=127.0.0.1 port={port} user={user} dbname={database} {extra}")
}

fn config(url: String, ca_file: Option<std::path::PathBuf>, schema: &str) -> PostgresConfig {
    let mut postgres_config = test_config(schema);
    postgres_config.url = url;
    postgres_config.ca_file = ca_file;
    postgres_config.pool_size = 2;
    postgres_config
}

/// Whether the store's own connections are encrypted.
async fn encrypted(store: &PostgresStore) -> bool {
    store
        .testing_client()
        .await
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn tls_is_verified_and_used_only_when_the_url_asks_for_it() {
    let schema = fresh_schema();
    let ca = server_certificate().await;

    let verified = PostgresStore::open(&config(
        url_as("localhost", "sslmode=require"),
        Some(ca.clone()),
        &schema,
    ))
    .await
    .unwrap();
    assert!(encrypted(&verified).await, "sslmode=require is TLS");

    // A name the certificate does not hold, and a CA nobody named: refused.
    let wrong_name = PostgresStore::open(&config(
        url_as("127.0.0.1", "sslmode=require"),
        Some(ca.clone()),
        &schema,
    ))
    .await
    .unwrap_err();
    assert!(
        wrong_name
            .to_string()
            .to_lowercase()
            .contains("certificate"),
        "{wrong_name}"
    );
    let untrusted = PostgresStore::open(&config(
        url_as("localhost", "sslmode=require"),
        None,
        &schema,
    ))
    .await
    .unwrap_err();
    assert!(
        untrusted.to_string().to_lowercase().contains("certificate"),
        "{untrusted}"
    );

    // Plain without it; and a CA file without sslmode=require is a mistake, said so.
    let plain = PostgresStore::open(&config(url_as("localhost", ""), None, &schema))
        .await
        .unwrap();
    assert!(!encrypted(&plain).await);
    let mistaken = PostgresStore::open(&config(url_as("localhost", ""), Some(ca), &schema))
        .await
        .unwrap_err();
    assert!(
        mistaken.to_string().contains("add sslmode=require"),
        "{mistaken}"
    );
    drop_schemas(&[schema]).await;
}
