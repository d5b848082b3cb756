//! `Database`: the connection pool and the schema a store's tables are in, which is
//! all that most of its queries need.

use deadpool_postgres::Pool;
use fundi_runtime::store::StoreError;

use crate::errors::pool_error;

/// A pool of connections to the database, and the schema of the store's tables.
#[derive(Clone)]
pub(crate) struct Database {
    pool: Pool,
    schema: String,
}

impl Database {
    pub(crate) fn new(pool: Pool, schema: String) -> Database {
        Database { pool, schema }
    }

    pub(crate) fn schema(&self) -> &str {
        &self.schema
    }

    /// The table `name`, qualified with the schema.
    pub(crate) fn table(&self, name: &str) -> String {
        format!("{}.{name}", self.schema)
    }

    /// A connection from the pool.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }
}
