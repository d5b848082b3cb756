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

impl crate::PostgresStore {
    /// Stops renewing this node's leases, as a node cut off from the database would:
    /// other nodes take its tasks over once the leases run out.
    pub fn pause_lease_renewal(&self) {
        if let Some(leases) = &self.leases {
            leases.stop_renewing();
        }
    }

    /// Renews this node's leases again after [`Self::pause_lease_renewal`], as a node
    /// that reaches the database again would.
    pub fn resume_lease_renewal(&self) {
        if let Some(leases) = &self.leases {
            leases.resume_renewing();
        }
    }

    /// The most commits of several tasks this store has sent in one statement.
    pub fn most_commits_sent_at_once(&self) -> usize {
        self.commits.most_sent_at_once()
    }

    /// The most first-message lookups this store has made in one statement.
    pub fn most_lookups_sent_at_once(&self) -> usize {
        self.first_messages.most_sent_at_once()
    }

    /// A connection from the store's own pool, to look at what its sessions see.
    pub async fn testing_client(&self) -> deadpool_postgres::Object {
        self.client()
            .await
            .unwrap_or_else(|e| panic!("a pooled connection: {e}"))
    }
}
